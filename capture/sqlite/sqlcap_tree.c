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
#include "tb_hmap.h"

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
        uint64_t img;
        if (pg->fcache && sqlcap_map_get(pg->fcache, (uint32_t)src, &img)) {
            memcpy(buf, (const void *)(uintptr_t)img, pg->pgsz);
            return TB_OK;
        }
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

tb_code sqlcap_view_ptr(const sqlcap_view *v, uint32_t pgno, uint8_t *buf, const uint8_t **out, tb_error *err)
{
    const sqlcap_pages *pg = v->pg;
    uint64_t src;
    *out = buf;
    if (pgno == 0 || pgno > v->npages)
        return sqlcap_view_read(v, pgno, buf, err);
    if (v->txn && sqlcap_map_get(v->txn, pgno, &src)) {
        uint64_t img;
        if (src != SQLCAP_FROM_DB && pg->fcache && sqlcap_map_get(pg->fcache, (uint32_t)src, &img)) {
            *out = (const uint8_t *)(uintptr_t)img;
            return TB_OK;
        }
        return sqlcap_view_read(v, pgno, buf, err);
    }
    if (pg->overlay && pg->overlay_images && sqlcap_map_get(pg->overlay, pgno, &src)) {
        *out = (const uint8_t *)(uintptr_t)src;
        return TB_OK;
    }
    return sqlcap_view_read(v, pgno, buf, err);
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

/* Cheap hash of a cell: its length and first 24 bytes (collisions are resolved by memcmp). */
static uint64_t sqlcap_cellhash(const uint8_t *p, size_t n)
{
    return tb_hash_bytes(p, n < 24 ? n : 24) ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
}

/* ---------------------------------------------------------------- tree walk */

static bool sqlcap_is_leaf(uint8_t t) { return t == 10 || t == 13; }
static bool sqlcap_is_inner(uint8_t t) { return t == 2 || t == 5; }

/* A child pointer of interior page p: a page of the database (1..npages), or
 * the tree is corrupt. Every page number the walk returns is so bounded, which
 * the callers' per-page maps (sized by npages) rely on, and so is a level's
 * length (a cycle would otherwise multiply it at each level). */
static tb_code sqlcap_tree_child(const sqlcap_view *v, uint32_t root, uint32_t p, uint32_t child, sqlcap_u32s *next,
                                 tb_error *err)
{
    if (child == 0 || child > v->npages)
        return tb_error_set(err, TB_ERR_CORRUPT, false,
                            "b-tree at root %u: page %u points to page %u, outside the database's %u pages", root, p,
                            child, v->npages);
    if (next->n >= v->npages) /* a level of a tree holds distinct pages: a cycle */
        return tb_error_set(err, TB_ERR_CORRUPT, false,
                            "b-tree at root %u: a level has more children than the database's %u pages", root,
                            v->npages);
    if (sqlcap_u32s_push(next, child) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
    return TB_OK;
}

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
            if (sqlcap_u32s_reserve(leaves, level.n) != TB_OK) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                goto out;
            }
            memcpy(leaves->v + leaves->n, level.v, level.n * sizeof *level.v);
            leaves->n += level.n;
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
            if (sqlcap_u32s_reserve(&next, (size_t)n + 1) != TB_OK) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "tree walk: out of memory");
                goto out;
            }
            for (unsigned c = 0; c < n; c++) {
                unsigned off = sqlcap_be16(buf + h + 12 + 2 * c);
                if (off + 4 > pgsz) {
                    rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: cell %u offset %u out of range", p, c, off);
                    goto out;
                }
                if ((rc = sqlcap_tree_child(v, root, p, sqlcap_be32(buf + off), &next, err)) != TB_OK)
                    goto out;
            }
            if ((rc = sqlcap_tree_child(v, root, p, sqlcap_be32(buf + h + 8), &next, err)) != TB_OK)
                goto out;
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
    uint8_t *rbuf = NULL, *ov = NULL; /* ov: overflow page, allocated on first use */
    const uint8_t *buf = img;
    tb_buf pay;
    sqlcap_u32s ovfl = {0};
    tb_buf_init(&pay, 0);
    if (!buf) {
        if (!(rbuf = malloc(pgsz))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
            goto out;
        }
        if ((rc = sqlcap_view_read(v, pgno, rbuf, err)) != TB_OK)
            goto out;
        buf = rbuf;
    }
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
    if (ptrs + 2 * (size_t)n > U) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "page %u: %u cells do not fit a %u-byte page", pgno, n, U);
        goto out;
    }
    const uint8_t *end = buf + U;
    size_t X = type == 13 ? U - 35 : ((U - 12) * 64 / 255) - 23;
    size_t M = ((U - 12) * 32 / 255) - 23;
    for (unsigned c = 0; c < n; c++) {
        if (skip && c < nskip && skip[c]) {
            /* most cells of a page changed in place are skipped: eight at a time */
            uint64_t w;
            while (c + 9 <= nskip && c + 9 <= n && (memcpy(&w, skip + c + 1, 8), w == 0x0101010101010101ull))
                c += 8;
            continue;
        }
        unsigned off = sqlcap_be16(buf + ptrs + 2 * c);
        if (off < ptrs + 2 * (size_t)n || off >= U || (type == 2 && off + 4 >= U)) {
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
        size_t local;
        if (P <= X) {
            local = (size_t)P;
        } else {
            size_t K = M + (size_t)((P - M) % (U - 4));
            local = K <= X ? K : M;
        }
        if (p + local > end || P > (1u << 31))
            goto bad;
        ovfl.n = 0;
        if (local == P) { /* the whole payload is on the page: no copy */
            if ((rc = fn(opaque, pgno, (int64_t)rowid, p, local, &ovfl, err)) != TB_OK)
                goto out;
            continue;
        }
        if (!ov && !(ov = malloc(pgsz))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "page %u: out of memory", pgno);
            goto out;
        }
        tb_buf_reset(&pay);
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
    free(rbuf);
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
    tb_code rc = sqlcap_row_decode_stored(t, rowid, payload, len, vals, err);
    if (rc == TB_OK && t->gv)
        rc = sqlcap_gen_eval(t, vals, err);
    return rc;
}

tb_code sqlcap_row_decode_stored(const sqlcap_tbl *t, int64_t rowid, const uint8_t *payload, size_t len,
                                 sqlcap_val *vals, tb_error *err)
{
    size_t nst = t->store ? t->nstore : t->ncols;
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
        size_t c = t->store ? t->store[s] : s;
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

/* The row cells of one page image, their extents computed on demand. */
typedef struct sqlcap_cellv {
    const uint8_t *buf;
    uint8_t type;
    unsigned n;
    size_t ptrs, U, X, M;
    uint16_t *off, *len; /* len 0: not computed yet */
    uint8_t *ovfl;
} sqlcap_cellv;

/* Set up the cell list of a page image (no cell is parsed yet). Returns false
 * when the page is not a row page or a cell pointer is out of range. */
static bool sqlcap_cellv_init(sqlcap_cellv *cv, const uint8_t *buf, uint32_t pgno, size_t U)
{
    size_t h = pgno == 1 ? 100 : 0;
    cv->buf = buf;
    cv->type = buf[h];
    cv->n = 0;
    if (cv->type != 2 && cv->type != 10 && cv->type != 13)
        return false;
    cv->U = U;
    cv->X = cv->type == 13 ? U - 35 : ((U - 12) * 64 / 255) - 23;
    cv->M = ((U - 12) * 32 / 255) - 23;
    cv->ptrs = h + (cv->type == 2 ? 12 : 8);
    unsigned cnt = sqlcap_be16(buf + h + 3);
    /* a cell takes at least 4 bytes besides its pointer: more than U / 4 cells
     * is a corrupt page, and the callers' arrays hold pgsz / 4 + 1 */
    if (cv->ptrs + 2 * (size_t)cnt > U || cnt > U / 4)
        return false;
    for (unsigned c = 0; c < cnt; c++) {
        unsigned o = sqlcap_be16(buf + cv->ptrs + 2 * c);
        if (o >= U || (cv->type == 2 && o + 4 >= U))
            return false;
        /* index interior cells carry a child pointer that may differ: compare from the payload on */
        cv->off[c] = (uint16_t)(o + (cv->type == 2 ? 4 : 0));
    }
    memset(cv->len, 0, cnt * sizeof *cv->len);
    cv->n = cnt;
    return true;
}

/* Extent of the local bytes of cell c (len[c], ovfl[c] when it spills); false when corrupt. */
static inline bool sqlcap_cellv_extent(sqlcap_cellv *cv, unsigned c)
{
    if (cv->len[c])
        return true;
    const uint8_t *buf = cv->buf, *end = buf + cv->U, *p = buf + cv->off[c];
    if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && cv->type == 13 && p[0] < 0x80 && end - p >= 9 + 128) {
        /* the common table-leaf cell: a one-byte payload size (< 128 <= X: it
         * does not spill), then the rowid varint, whose last byte is the first
         * one below 0x80 (the 9th at most) */
        uint64_t w;
        memcpy(&w, p + 1, 8);
        uint64_t stop = ~w & 0x8080808080808080ull;
        size_t k = stop ? (size_t)__builtin_ctzll(stop) / 8 + 1 : 9;
        cv->len[c] = (uint16_t)(1 + k + p[0]);
        cv->ovfl[c] = 0;
        return true;
    }
    uint64_t P = 0, rowid = 0;
    size_t k;
    if (p < end && p[0] < 0x80) { /* one-byte payload size: the common case */
        P = p[0];
        k = 1;
    } else if (!(k = sqlcap_varint(p, end, &P))) {
        return false;
    }
    p += k;
    if (cv->type == 13) {
        /* the rowid is skipped, not decoded: its bytes end at the first byte < 0x80 (9 at most) */
        size_t i = 0;
        while (i < 8 && p + i < end && (p[i] & 0x80))
            i++;
        if (p + i >= end)
            return false;
        (void)rowid;
        p += i + 1;
    }
    size_t local;
    if (P <= cv->X) {
        local = (size_t)P;
    } else {
        size_t K = cv->M + (size_t)((P - cv->M) % (cv->U - 4));
        local = K <= cv->X ? K : cv->M;
    }
    if (local > (size_t)(end - p))
        return false;
    cv->len[c] = (uint16_t)((size_t)(p - buf) + local - cv->off[c]);
    cv->ovfl[c] = local < P;
    return true;
}

/* Scratch layout: ht[hcap] int32, offa, lena, offb, lenb [cap] u16, oa, ob [cap] u8,
 * then (8-aligned) posa[pgsz] u16 (all zero between calls). */
static size_t sqlcap_sc_hcap(size_t cap)
{
    size_t hcap = 1;
    while (hcap < cap * 2)
        hcap <<= 1;
    return hcap;
}

size_t sqlcap_same_cells_scratch(uint32_t pgsz)
{
    size_t cap = pgsz / 4 + 1;
    return sqlcap_sc_hcap(cap) * sizeof(int32_t) + 4 * cap * sizeof(uint16_t) + 2 * cap + 8 +
           (size_t)pgsz * sizeof(uint16_t);
}

tb_code sqlcap_page_same_cells(const sqlcap_view *v0, const sqlcap_view *v1, uint32_t pgno, uint8_t *abuf, uint8_t *bbuf,
                               const uint8_t **pa, const uint8_t **pb, uint8_t *skip0, size_t *n0, uint8_t *skip1,
                               size_t *n1, void *scratch, tb_error *err)
{
    const uint8_t *a = abuf, *b = bbuf;
    uint32_t pgsz = v0->pg->pgsz;
    size_t U = v0->pg->usable, cap = pgsz / 4 + 1;
    size_t hcap = sqlcap_sc_hcap(cap); /* sized for the worst case, used for 2 x cells */
    int32_t *ht = scratch;
    uint16_t *offa = (uint16_t *)(ht + hcap), *lena = offa + cap, *offb = lena + cap, *lenb = offb + cap;
    uint8_t *oa = (uint8_t *)(lenb + cap), *ob = oa + cap;
    uint16_t *posa = (uint16_t *)(((uintptr_t)(ob + cap) + 7) & ~(uintptr_t)7); /* a's cell offset -> index + 1 */
    sqlcap_cellv A = {.off = offa, .len = lena, .ovfl = oa}, B = {.off = offb, .len = lenb, .ovfl = ob};
    tb_code rc = TB_OK;
    *n0 = *n1 = 0;
    *pa = abuf;
    *pb = bbuf;
    if ((rc = sqlcap_view_ptr(v0, pgno, abuf, pa, err)) != TB_OK || (rc = sqlcap_view_ptr(v1, pgno, bbuf, pb, err)) != TB_OK)
        goto out;
    a = *pa;
    b = *pb;
    if (!sqlcap_cellv_init(&A, a, pgno, U) || !sqlcap_cellv_init(&B, b, pgno, U) || A.type != B.type)
        goto out; /* no filtering: decode everything */
    unsigned na = A.n, nb = B.n;
    memset(skip0, 0, na);
    memset(skip1, 0, nb);
    /* fast pass: an unchanged cell usually keeps its place in the content area,
     * so each cell of b is compared byte for byte with the cell of a at the same
     * offset (if any; posa maps a's offsets to cells), parsed once (same bytes,
     * same extent). Identical bytes are the same row on both sides, whatever
     * the cells' order. */
    for (unsigned c = 0; c < na; c++)
        posa[offa[c]] = (uint16_t)(c + 1);
    for (unsigned c = 0; c < nb; c++) {
        unsigned o = posa[offb[c]];
        if (!o || skip0[o - 1])
            continue;
        o--;
        if (!sqlcap_cellv_extent(&A, o))
            goto clear;
        if (oa[o])
            continue; /* spills: its overflow pages may differ */
        if (memcmp(a + offa[o], b + offb[c], lena[o]) == 0) {
            skip0[o] = 1;
            skip1[c] = 1;
        }
    }
    for (unsigned c = 0; c < na; c++) /* leave posa empty for the next page */
        posa[offa[c]] = 0;
    unsigned left0 = 0, left1 = 0;
    for (unsigned c = 0; c < na; c++)
        left0 += !skip0[c];
    for (unsigned c = 0; c < nb; c++)
        left1 += !skip1[c];
    if (!left0 || !left1)
        goto done; /* nothing left to pair */
    /* the rest (cells that moved within the page): pair by hash */
    for (unsigned c = 0; c < na; c++)
        if (!skip0[c] && !sqlcap_cellv_extent(&A, c))
            goto out;
    for (unsigned c = 0; c < nb; c++)
        if (!skip1[c] && !sqlcap_cellv_extent(&B, c))
            goto out;
    hcap = 16;
    while (hcap < (size_t)na * 2)
        hcap <<= 1;
    for (size_t i = 0; i < hcap; i++)
        ht[i] = -1;
    for (unsigned c = 0; c < na; c++) {
        if (skip0[c] || oa[c])
            continue;
        size_t hsh = (size_t)sqlcap_cellhash(a + offa[c], lena[c]) & (hcap - 1);
        while (ht[hsh] >= 0)
            hsh = (hsh + 1) & (hcap - 1);
        ht[hsh] = (int32_t)c;
    }
    for (unsigned c = 0; c < nb; c++) {
        if (skip1[c] || ob[c])
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
done:
    *n0 = na;
    *n1 = nb;
out:
    return rc;
clear:
    for (unsigned c = 0; c < na; c++)
        posa[offa[c]] = 0;
    return rc;
}
