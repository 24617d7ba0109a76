/*
 * sqlcap_tree: page views, b-tree walks, cells and records (fileformat2 1.5-2.6).
 *
 * B-TREE PAGE: header at offset 0 (100 on page 1), 8 bytes on leaves, 12 on
 * interior pages: 0 type (2 index interior, 5 table interior, 10 index leaf,
 * 13 table leaf), 1 first freeblock, 3 cell count, 5 content start, 7
 * fragmented bytes, 8 right-most child (interior). Then u16 cell pointers.
 * CELLS: table leaf: varint size, varint rowid, payload, [u32 overflow];
 * table interior: u32 child, varint rowid; index leaf: varint size, payload,
 * [u32 overflow]; index interior: u32 child, varint size, payload, [overflow].
 * Local payload: X = U-35 (table leaf) or ((U-12)*64/255)-23 (index);
 * M = ((U-12)*32/255)-23; K = M+((P-M)%(U-4)); local = P<=X ? P : K<=X ? K : M.
 * Overflow page: u32 next, then U-4 bytes.
 * RECORD: varint header size, serial types, values (0 NULL, 1-6 BE ints of
 * 1,2,3,4,6,8 bytes, 7 BE double, 8 int 0, 9 int 1, even>=12 blob, odd>=13 text).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlcap_int.h"

/* ---------------------------------------------------------------- views */

static tb_code sqlcap_pread_page(int fd, uint32_t pgsz, uint32_t pgno, uint8_t *buf, const char *what,
                                 tb_error *err)
{
    off_t off = (off_t)(pgno - 1) * pgsz;
    size_t got = 0;
    while (got < pgsz) {
        ssize_t r = pread(fd, buf + got, pgsz - got, off + (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return tb_error_set(err, TB_ERR_IO, true, "%s: read page %u: %s", what, pgno, strerror(errno));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got < pgsz)
        memset(buf + got, 0, pgsz - got);
    return TB_OK;
}

tb_code sqlcap_view_read(const sqlcap_view *v, uint32_t pgno, uint8_t *buf, tb_error *err)
{
    const sqlcap_pages *pg = v->pg;
    uint64_t src;
    if (pgno == 0 || pgno > v->npages) {
        memset(buf, 0, pg->pgsz);
        return TB_OK;
    }
    if (v->txn && sqlcap_map_get(v->txn, pgno, &src)) {
        if (src == SQLCAP_FROM_DB)
            return sqlcap_pread_page(pg->dbfd, pg->pgsz, pgno, buf, "database", err);
        return sqlcap_wal_read_page(pg->walfd, pg->pgsz, (uint32_t)src, buf, err);
    }
    if (pg->overlay && sqlcap_map_get(pg->overlay, pgno, &src)) {
        if (pg->overlay_images) {
            memcpy(buf, (const void *)(uintptr_t)src, pg->pgsz);
            return TB_OK;
        }
        return sqlcap_wal_read_page(pg->walfd, pg->pgsz, (uint32_t)src, buf, err);
    }
    return sqlcap_pread_page(pg->basefd, pg->pgsz, pgno, buf, pg->basefd == pg->dbfd ? "database" : "shadow", err);
}

/* ---------------------------------------------------------------- varints */

static size_t sqlcap_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 9; i++) {
        if (p + i >= end)
            return 0;
        if (i == 8) {
            v = (v << 8) | p[i];
            *out = v;
            return 9;
        }
        v = (v << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

static uint64_t sqlcap_fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Cheap hash of a cell: its length and first 24 bytes (collisions are resolved by memcmp). */
static uint64_t sqlcap_cellhash(const uint8_t *p, size_t n)
{
    return sqlcap_fnv(p, n < 24 ? n : 24) ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
}

/* ---------------------------------------------------------------- tree walk */

static bool sqlcap_is_leaf(uint8_t t) { return t == 10 || t == 13; }
static bool sqlcap_is_inner(uint8_t t) { return t == 2 || t == 5; }

tb_code sqlcap_tree_pages(const sqlcap_view *v, uint32_t root, sqlcap_u32s *inner, sqlcap_u32s *leaves,
                          tb_error *err)
{
    tb_code rc = TB_OK;
    uint32_t pgsz = v->pg->pgsz;
    uint8_t *buf = malloc(pgsz);
    sqlcap_u32s level = {0}, next = {0};
    if (!buf || sqlcap_u32s_push(&level, root) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
        goto out;
    }
    for (int depth = 0; level.n > 0; depth++) {
        if (depth > 40) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "b-tree at root %u: deeper than 40 levels", root);
            goto out;
        }
        if ((rc = sqlcap_view_read(v, level.v[0], buf, err)) != TB_OK)
            goto out;
        uint8_t t0 = buf[level.v[0] == 1 ? 100 : 0];
        if (sqlcap_is_leaf(t0)) {
            for (size_t i = 0; i < level.n; i++)
                if (sqlcap_u32s_push(leaves, level.v[i]) != TB_OK) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                    goto out;
                }
            break;
        }
        next.n = 0;
        for (size_t i = 0; i < level.n; i++) {
            uint32_t p = level.v[i];
            if (i > 0 && (rc = sqlcap_view_read(v, p, buf, err)) != TB_OK)
                goto out;
            size_t h = p == 1 ? 100 : 0;
            if (!sqlcap_is_inner(buf[h])) {
                rc = tb_error_set(err, TB_ERR_CORRUPT, false, "b-tree at root %u: page %u has type %u, expected interior",
                                  root, p, buf[h]);
                goto out;
            }
            if (sqlcap_u32s_push(inner, p) != TB_OK) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                goto out;
            }
            unsigned n = sqlcap_be16(buf + h + 3);
            for (unsigned c = 0; c < n; c++) {
                unsigned off = sqlcap_be16(buf + h + 12 + 2 * c);
                if (off + 4 > pgsz) {
                    rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: cell %u offset %u out of range", p, c, off);
                    goto out;
                }
                if (sqlcap_u32s_push(&next, sqlcap_be32(buf + off)) != TB_OK) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                    goto out;
                }
            }
            if (sqlcap_u32s_push(&next, sqlcap_be32(buf + h + 8)) != TB_OK) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                goto out;
            }
        }
        sqlcap_u32s tmp = level;
        level = next;
        next = tmp;
    }
out:
    free(buf);
    sqlcap_u32s_free(&level);
    sqlcap_u32s_free(&next);
    return rc;
}

/* ---------------------------------------------------------------- cells */

tb_code sqlcap_page_rows(const sqlcap_view *v, uint32_t pgno, sqlcap_cell_fn fn, void *opaque, tb_error *err)
{
    return sqlcap_page_rows_skip(v, pgno, NULL, 0, fn, opaque, err);
}

tb_code sqlcap_page_rows_skip(const sqlcap_view *v, uint32_t pgno, const uint8_t *skip, size_t nskip, sqlcap_cell_fn fn,
                              void *opaque, tb_error *err)
{
    return sqlcap_page_rows_img(v, pgno, NULL, skip, nskip, fn, opaque, err);
}

tb_code sqlcap_page_rows_img(const sqlcap_view *v, uint32_t pgno, const uint8_t *img, const uint8_t *skip, size_t nskip,
                             sqlcap_cell_fn fn, void *opaque, tb_error *err)
{
    tb_code rc = TB_OK;
    uint32_t pgsz = v->pg->pgsz, U = v->pg->usable;
    uint8_t *buf = malloc(pgsz), *ov = malloc(pgsz);
    tb_buf pay;
    sqlcap_u32s ovfl = {0};
    tb_buf_init(&pay, 0);
    if (!buf || !ov) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
        goto out;
    }
    if (img)
        memcpy(buf, img, pgsz);
    else if ((rc = sqlcap_view_read(v, pgno, buf, err)) != TB_OK)
        goto out;
    size_t h = pgno == 1 ? 100 : 0;
    uint8_t type = buf[h];
    if (type == 5)
        goto out; /* table interior: no rows */
    if (type != 2 && type != 10 && type != 13) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: not a b-tree page (type %u)", pgno, type);
        goto out;
    }
    unsigned n = sqlcap_be16(buf + h + 3);
    size_t ptrs = h + (type == 2 ? 12 : 8);
    const uint8_t *end = buf + U;
    for (unsigned c = 0; c < n; c++) {
        if (skip && c < nskip && skip[c])
            continue;
        unsigned off = sqlcap_be16(buf + ptrs + 2 * c);
        if (off >= U) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: cell %u offset %u out of range", pgno, c, off);
            goto out;
        }
        const uint8_t *p = buf + off;
        if (type == 2)
            p += 4;
        uint64_t P = 0, rowid = 0;
        size_t k = sqlcap_varint(p, end, &P);
        if (!k)
            goto bad;
        p += k;
        if (type == 13) {
            k = sqlcap_varint(p, end, &rowid);
            if (!k)
                goto bad;
            p += k;
        }
        size_t X = type == 13 ? U - 35 : ((U - 12) * 64 / 255) - 23;
        size_t M = ((U - 12) * 32 / 255) - 23;
        size_t local;
        if (P <= X) {
            local = (size_t)P;
        } else {
            size_t K = M + (size_t)((P - M) % (U - 4));
            local = K <= X ? K : M;
        }
        if (p + local > end || P > (1u << 31))
            goto bad;
        tb_buf_reset(&pay);
        ovfl.n = 0;
        if (tb_buf_append(&pay, p, local) != TB_OK) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
            goto out;
        }
        if (local < P) {
            if (p + local + 4 > end)
                goto bad;
            uint32_t next = sqlcap_be32(p + local);
            while (pay.len < P) {
                if (next == 0 || next > v->npages || ovfl.n > v->npages)
                    goto bad;
                if (sqlcap_u32s_push(&ovfl, next) != TB_OK) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
                    goto out;
                }
                if ((rc = sqlcap_view_read(v, next, ov, err)) != TB_OK)
                    goto out;
                size_t take = (size_t)P - pay.len;
                if (take > U - 4)
                    take = U - 4;
                if (tb_buf_append(&pay, ov + 4, take) != TB_OK) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
                    goto out;
                }
                next = sqlcap_be32(ov);
            }
        }
        if ((rc = fn(opaque, pgno, (int64_t)rowid, (const uint8_t *)pay.data, pay.len, &ovfl, err)) != TB_OK)
            goto out;
        continue;
    bad:
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: malformed cell %u", pgno, c);
        goto out;
    }
out:
    free(buf);
    free(ov);
    tb_buf_free(&pay);
    sqlcap_u32s_free(&ovfl);
    return rc;
}

/* ---------------------------------------------------------------- records */

tb_code sqlcap_record(const uint8_t *payload, size_t len, sqlcap_val *vals, size_t ncols_max, size_t *ncols)
{
    const uint8_t *end = payload + len;
    uint64_t hsz;
    size_t k = sqlcap_varint(payload, end, &hsz);
    if (!k || hsz > len)
        return TB_ERR_CORRUPT;
    const uint8_t *hp = payload + k, *hend = payload + hsz, *dp = hend;
    size_t i = 0;
    while (hp < hend) {
        uint64_t st;
        k = sqlcap_varint(hp, hend, &st);
        if (!k)
            return TB_ERR_CORRUPT;
        hp += k;
        sqlcap_val v = {0};
        size_t sz = 0;
        switch (st) {
        case 0: v.type = SQLCAP_NULL; break;
        case 1: case 2: case 3: case 4: case 5: case 6: {
            static const size_t w[] = {0, 1, 2, 3, 4, 6, 8};
            sz = w[st];
            if (dp + sz > end)
                return TB_ERR_CORRUPT;
            uint64_t u = (dp[0] & 0x80) ? ~(uint64_t)0 : 0;
            for (size_t b = 0; b < sz; b++)
                u = (u << 8) | dp[b];
            v.type = SQLCAP_INT;
            v.i = (int64_t)u;
            break;
        }
        case 7: {
            sz = 8;
            if (dp + sz > end)
                return TB_ERR_CORRUPT;
            uint64_t u = 0;
            for (size_t b = 0; b < 8; b++)
                u = (u << 8) | dp[b];
            v.type = SQLCAP_REAL;
            memcpy(&v.d, &u, 8);
            break;
        }
        case 8: v.type = SQLCAP_INT; v.i = 0; break;
        case 9: v.type = SQLCAP_INT; v.i = 1; break;
        case 10: case 11: return TB_ERR_CORRUPT;
        default:
            sz = (size_t)((st - 12) / 2);
            if (dp + sz > end)
                return TB_ERR_CORRUPT;
            v.type = (st & 1) ? SQLCAP_TEXT : SQLCAP_BLOB;
            v.p = dp;
            v.n = sz;
            break;
        }
        dp += sz;
        if (i < ncols_max)
            vals[i] = v;
        i++;
    }
    *ncols = i < ncols_max ? i : ncols_max;
    return TB_OK;
}

tb_code sqlcap_row_decode(const sqlcap_tbl *t, int64_t rowid, const uint8_t *payload, size_t len,
                          sqlcap_val *vals, tb_error *err)
{
    size_t nst = t->without_rowid ? t->nstore : t->ncols;
    sqlcap_val tmp[64], *rec = nst <= 64 ? tmp : malloc(nst * sizeof *rec);
    size_t got = 0;
    tb_code rc = TB_OK;
    if (!rec)
        return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
    if (sqlcap_record(payload, len, rec, nst, &got) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "table %s: malformed record (rowid %lld, %zu bytes)", t->name,
                          (long long)rowid, len);
        goto out;
    }
    for (size_t c = 0; c < t->ncols; c++)
        vals[c] = t->dflt[c];
    for (size_t s = 0; s < got; s++) {
        size_t c = t->without_rowid ? t->store[s] : s;
        if (c < t->ncols)
            vals[c] = rec[s];
    }
    if (!t->without_rowid) {
        if (t->ipk >= 0) {
            vals[t->ipk].type = SQLCAP_INT;
            vals[t->ipk].i = rowid;
        } else if (t->synth_rowid) {
            /* synthetic trailing rowid column */
            vals[t->ncols - 1].type = SQLCAP_INT;
            vals[t->ncols - 1].i = rowid;
        }
    }
    for (size_t c = 0; c < t->ncols; c++)
        if (t->affinity[c] == 'R' && vals[c].type == SQLCAP_INT) {
            vals[c].type = SQLCAP_REAL;
            vals[c].d = (double)vals[c].i;
        }
out:
    if (rec != tmp)
        free(rec);
    return rc;
}

/* ---------------------------------------------------------------- same cells */

/* Extent of every row cell's local bytes; ovfl[c] when the cell spills. */
static tb_code sqlcap_cells(const uint8_t *buf, uint32_t pgno, size_t U, unsigned *n, uint16_t *off, uint16_t *len,
                            uint8_t *ovfl)
{
    size_t h = pgno == 1 ? 100 : 0;
    uint8_t type = buf[h];
    *n = 0;
    if (type != 2 && type != 10 && type != 13)
        return TB_OK;
    unsigned cnt = sqlcap_be16(buf + h + 3);
    size_t ptrs = h + (type == 2 ? 12 : 8);
    const uint8_t *end = buf + U;
    for (unsigned c = 0; c < cnt; c++) {
        unsigned o = sqlcap_be16(buf + ptrs + 2 * c);
        if (o >= U)
            return TB_ERR_CORRUPT;
        const uint8_t *p = buf + o + (type == 2 ? 4 : 0);
        uint64_t P = 0, rowid = 0;
        size_t k = sqlcap_varint(p, end, &P);
        if (!k)
            return TB_ERR_CORRUPT;
        p += k;
        if (type == 13) {
            k = sqlcap_varint(p, end, &rowid);
            if (!k)
                return TB_ERR_CORRUPT;
            p += k;
        }
        size_t X = type == 13 ? U - 35 : ((U - 12) * 64 / 255) - 23;
        size_t M = ((U - 12) * 32 / 255) - 23, local;
        if (P <= X) {
            local = (size_t)P;
        } else {
            size_t K = M + (size_t)((P - M) % (U - 4));
            local = K <= X ? K : M;
        }
        if (p + local > end)
            return TB_ERR_CORRUPT;
        /* index interior cells carry a child pointer that may differ: compare from the payload on */
        size_t start = o + (type == 2 ? 4 : 0);
        off[c] = (uint16_t)start;
        len[c] = (uint16_t)((size_t)(p - buf) + local - start);
        ovfl[c] = local < P;
    }
    *n = cnt;
    return TB_OK;
}

tb_code sqlcap_page_same_cells(const sqlcap_view *v0, const sqlcap_view *v1, uint32_t pgno, uint8_t *a, uint8_t *b,
                               uint8_t *skip0, size_t *n0, uint8_t *skip1, size_t *n1, tb_error *err)
{
    uint32_t pgsz = v0->pg->pgsz;
    size_t U = v0->pg->usable, cap = pgsz / 4 + 1;
    uint8_t *oa = malloc(cap), *ob = malloc(cap);
    uint16_t *offa = malloc(cap * 2), *lena = malloc(cap * 2), *offb = malloc(cap * 2), *lenb = malloc(cap * 2);
    size_t hcap = 1;
    while (hcap < cap * 2)
        hcap <<= 1;
    int32_t *ht = malloc(hcap * sizeof *ht); /* sized for the worst case, used for 2 x cells */
    unsigned na = 0, nb = 0;
    tb_code rc = TB_OK;
    *n0 = *n1 = 0;
    if (!oa || !ob || !offa || !lena || !offb || !lenb || !ht) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
        goto out;
    }
    if ((rc = sqlcap_view_read(v0, pgno, a, err)) != TB_OK || (rc = sqlcap_view_read(v1, pgno, b, err)) != TB_OK)
        goto out;
    if (sqlcap_cells(a, pgno, U, &na, offa, lena, oa) != TB_OK || sqlcap_cells(b, pgno, U, &nb, offb, lenb, ob) != TB_OK ||
        a[pgno == 1 ? 100 : 0] != b[pgno == 1 ? 100 : 0])
        goto out; /* no filtering: decode everything */
    hcap = 16;
    while (hcap < (size_t)na * 2)
        hcap <<= 1;
    for (size_t i = 0; i < hcap; i++)
        ht[i] = -1;
    for (unsigned c = 0; c < na; c++) {
        if (oa[c])
            continue;
        size_t hsh = (size_t)sqlcap_cellhash(a + offa[c], lena[c]) & (hcap - 1);
        while (ht[hsh] >= 0)
            hsh = (hsh + 1) & (hcap - 1);
        ht[hsh] = (int32_t)c;
    }
    memset(skip0, 0, na);
    memset(skip1, 0, nb);
    for (unsigned c = 0; c < nb; c++) {
        if (ob[c])
            continue;
        size_t hsh = (size_t)sqlcap_cellhash(b + offb[c], lenb[c]) & (hcap - 1);
        while (ht[hsh] >= 0) {
            unsigned o = (unsigned)ht[hsh];
            if (!skip0[o] && lena[o] == lenb[c] && memcmp(a + offa[o], b + offb[c], lenb[c]) == 0) {
                skip0[o] = 1;
                skip1[c] = 1;
                break;
            }
            hsh = (hsh + 1) & (hcap - 1);
        }
    }
    *n0 = na;
    *n1 = nb;
out:
    free(oa), free(ob), free(offa), free(lena), free(offb), free(lenb), free(ht);
    return rc;
}
