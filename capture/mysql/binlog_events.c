/*
 * binlog_events: the non-row events of the decoder (see the layouts atop
 * binlog_dec.c): FORMAT_DESCRIPTION, QUERY, the GTID family, PREVIOUS_GTIDS,
 * GTID_LIST and TRANSACTION_PAYLOAD.
 */
#include "binlog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* ------------------------------------------------------------ other events */

static bool version_at_least(const char *v, int a, int b, int c)
{
    int x = 0, y = 0, z = 0;
    sscanf(v, "%d.%d.%d", &x, &y, &z);
    if (x != a)
        return x > a;
    if (y != b)
        return y > b;
    return z >= c;
}

tb_code bl_on_fde(binlog_dec *d, const uint8_t *ev, size_t len, tb_error *err)
{
    const uint8_t *body = ev + BL_HEADER_LEN;
    size_t blen = len - BL_HEADER_LEN;
    if (blen < 57)
        return FAIL(err, TB_ERR_CORRUPT, "FORMAT_DESCRIPTION truncated");
    memcpy(d->version, body + 2, 50);
    d->version[50] = '\0';
    d->mariadb = strstr(d->version, "MariaDB") != NULL;
    bool capable = d->mariadb ? version_at_least(d->version, 5, 3, 0) : version_at_least(d->version, 5, 6, 1);
    size_t nph = blen - 57;
    uint8_t alg = 0;
    if (capable) {
        if (nph < 5)
            return FAIL(err, TB_ERR_CORRUPT, "FORMAT_DESCRIPTION too short for its checksum fields");
        nph -= 5;
        alg = body[blen - 5];
        if (alg == 1 && d->o.verify_checksum) {
            uint8_t h[BL_HEADER_LEN];
            memcpy(h, ev, BL_HEADER_LEN);
            h[17] &= (uint8_t)~BL_FLAG_IN_USE;
            uint32_t crc = bl_crc32(0, h, BL_HEADER_LEN);
            crc = bl_crc32(crc, body, blen - 4);
            if (crc != bl_u32(ev + len - 4))
                return FAIL(err, TB_ERR_CORRUPT, "FORMAT_DESCRIPTION checksum mismatch");
        }
    }
    memset(d->ph, 0, sizeof(d->ph));
    memcpy(d->ph, body + 57, nph > 255 ? 255 : nph);
    d->checksum = alg == 1;
    d->have_fde = true;
    d->pos.mariadb = d->mariadb;
    return TB_OK;
}

tb_code bl_on_query(binlog_dec *d, int type, const uint8_t *hdr, const uint8_t *body, size_t len,
                        tb_error *err)
{
    unsigned ph = d->ph[BL_QUERY - 1] ? d->ph[BL_QUERY - 1] : 13;
    if (ph < 11 || len < ph)
        return FAIL(err, TB_ERR_CORRUPT, "QUERY truncated");
    size_t dblen = body[8];
    size_t svlen = ph >= 13 ? bl_u16(body + 11) : 0;
    if (len < ph + svlen + dblen + 1)
        return FAIL(err, TB_ERR_CORRUPT, "QUERY truncated");
    const char *db = (const char *)body + ph + svlen;
    const char *q = db + dblen + 1;
    size_t qlen = len - (ph + svlen + dblen + 1);
    if (type == BL_MARIA_QUERY_COMPRESSED) {
        if (bl_unzip_mariadb((const uint8_t *)q, qlen, &d->unz) != TB_OK)
            return FAIL(err, TB_ERR_CORRUPT, "compressed QUERY does not decompress");
        q = d->unz.data ? d->unz.data : "";
        qlen = d->unz.len;
    }
    binlog_stmt *st = &d->stmt;
    if (binlog_stmt_classify(st, q, qlen, db, dblen) != TB_OK)
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    switch (st->kind) {
    case BINLOG_STMT_BEGIN:
        bl_dec_tx_begin(d, hdr);
        if (strcmp(st->verb, "XA START") == 0 && bl_xa_start(d) != TB_OK)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        return TB_OK;
    case BINLOG_STMT_XA_COMMIT: case BINLOG_STMT_XA_ROLLBACK:
        return bl_xa_on_end(d, st->kind == BINLOG_STMT_XA_COMMIT, hdr, q, qlen, err);
    case BINLOG_STMT_COMMIT:
        return bl_dec_commit(d, hdr) == TB_OK ? TB_OK : FAIL(err, TB_ERR_NOMEM, "out of memory");
    case BINLOG_STMT_TX_OTHER:
        return TB_OK;
    default:
        break;
    }
    /* DDL or a statement: the cached table maps may be stale now */
    bl_dec_drop_maps(d);
    bool standalone = !d->in_tx, skip = d->tx_skip;
    int gt_kind = d->gt_kind;
    if (standalone) { /* a transaction of its own: committed here, so the callback knows where it ends */
        bl_dec_tx_begin(d, hdr);
        if (bl_dec_commit(d, hdr) != TB_OK)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    if (d->o.stmt_fn && !skip) {
        st->text = q;
        st->text_len = qlen;
        st->file = d->file;
        st->pos = d->ev_off;
        st->end_pos = d->ev_end;
        st->gtid = gt_kind ? d->txid : NULL;
        st->in_tx = !standalone;
        st->after = standalone ? bl_xa_commit_pos(d) : NULL;
        st->ts_ms = d->tx_ts_ms;
        return d->o.stmt_fn(d->o.stmt_opaque, st, err);
    }
    return TB_OK;
}

/* A MySQL GTID event announces the next transaction: its id and commit time.
 * It does not open it: BEGIN does (DML), or the DDL query is the whole
 * transaction and commits it. */
static void gtid_starts_tx(binlog_dec *d, const uint8_t *hdr, int64_t commit_us)
{
    d->in_tx = false;
    d->tx_ts_ms = commit_us > 0 ? commit_us / 1000 : (int64_t)bl_u32(hdr) * 1000;
    d->tx_ts_set = true;
    d->tx_skip = d->skip_executed && d->gt_kind == 1 &&
                 bl_gtids_contains_mysql(d->gtids, d->gt_uuid, d->gt_tag, d->gt_gno);
    d->tx_skipped += d->tx_skip;
}

/* The transaction id of a MySQL GTID: its own text form ("uuid[:tag]:gno"). */
static tb_code mysql_gtid_txid(binlog_dec *d, tb_error *err)
{
    if (d->gt_gno < 1 || d->gt_gno > BL_GNO_MAX)
        return FAIL(err, TB_ERR_CORRUPT, "GTID event: transaction number %lld out of range (1 to 2^63-2)",
                    (long long)d->gt_gno);
    tb_buf_reset(&d->tmp);
    bl_gtids *one = bl_gtids_new();
    if (!one || bl_gtids_add_mysql(one, d->gt_uuid, d->gt_tag, d->gt_gno, d->gt_gno + 1) != TB_OK ||
        bl_gtids_format(one, false, &d->tmp) != TB_OK) {
        bl_gtids_free(one);
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    bl_gtids_free(one);
    snprintf(d->txid, sizeof(d->txid), "%s", tb_buf_cstr(&d->tmp));
    return TB_OK;
}

/* MySQL 8.3 serialization varlen integer. */
static bool svar(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (*p >= end)
        return false;
    uint8_t b = **p;
    unsigned n = 1;
    while (n < 9 && ((b >> (n - 1)) & 1))
        n++;
    if ((size_t)(end - *p) < n)
        return false;
    if (n == 9) {
        *v = bl_u64(*p + 1);
    } else {
        uint64_t raw = bl_uN(*p, n);
        *v = raw >> n;
    }
    *p += n;
    return true;
}

tb_code bl_on_gtid_tagged(binlog_dec *d, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err)
{
    const uint8_t *p = body, *end = body + len;
    uint64_t ver, size, lastid, fid, v;
    bool have_uuid = false, have_gno = false;
    d->gt_tag[0] = '\0';
    if (!svar(&p, end, &ver) || !svar(&p, end, &size) || !svar(&p, end, &lastid))
        return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG header truncated");
    if (size < len)
        end = body + size;
    int64_t commit_us = -1;
    while (p < end) {
        if (!svar(&p, end, &fid))
            return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG field truncated");
        if (fid == 1) {
            for (int i = 0; i < 16; i++) {
                if (!svar(&p, end, &v))
                    return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG uuid truncated");
                d->gt_uuid[i] = (uint8_t)v;
            }
            have_uuid = true;
        } else if (fid == 3) {
            if (!svar(&p, end, &v) || v >= sizeof(d->gt_tag) || v > (uint64_t)(end - p))
                return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG tag malformed");
            memcpy(d->gt_tag, p, v);
            d->gt_tag[v] = '\0';
            p += v;
        } else if (fid <= 11) {
            if (!svar(&p, end, &v))
                return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG field %llu truncated", (unsigned long long)fid);
            if (fid == 2) {
                d->gt_gno = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
                have_gno = true;
            } else if (fid == 6) {
                commit_us = (int64_t)v;
            }
        } else {
            break; /* a newer field we cannot size: everything we need came before it */
        }
    }
    if (!have_uuid || !have_gno)
        return FAIL(err, TB_ERR_CORRUPT, "GTID_TAGGED_LOG without uuid or gno");
    d->gt_kind = 1;
    tb_code rc = mysql_gtid_txid(d, err);
    if (rc != TB_OK)
        return rc;
    gtid_starts_tx(d, hdr, commit_us);
    return TB_OK;
}

tb_code bl_on_gtid(binlog_dec *d, int type, const uint8_t *hdr, const uint8_t *body, size_t len,
                       tb_error *err)
{
    if (len < 25)
        return FAIL(err, TB_ERR_CORRUPT, "GTID event truncated");
    int64_t commit_us = -1;
    if (len >= 42 + 7) {
        uint64_t ts = bl_uN(body + 42, 7);
        commit_us = (int64_t)(ts & ~(1ull << 55));
    }
    if (type == BL_ANONYMOUS_GTID) {
        d->gt_kind = 0;
        snprintf(d->txid, sizeof(d->txid), "%s:%llu", d->file, (unsigned long long)d->ev_off);
    } else {
        d->gt_kind = 1;
        memcpy(d->gt_uuid, body + 1, 16);
        d->gt_tag[0] = '\0';
        d->gt_gno = (int64_t)bl_u64(body + 17);
        tb_code rc = mysql_gtid_txid(d, err);
        if (rc != TB_OK)
            return rc;
    }
    gtid_starts_tx(d, hdr, commit_us);
    return TB_OK;
}

tb_code bl_on_previous_gtids(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err)
{
    if (!bl_gtids_empty(d->gtids))
        return TB_OK; /* we know better where we are */
    const uint8_t *p = body, *end = body + len;
    if (len < 8)
        return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS truncated");
    uint64_t n = bl_u64(p);
    bool tagged = p[7] == 1;
    if (tagged)
        n = (n >> 8) & 0xFFFFFFFFFFFFull;
    p += 8;
    for (uint64_t i = 0; i < n; i++) {
        char tag[40] = "";
        if ((size_t)(end - p) < 16)
            return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS truncated");
        const uint8_t *uuid = p;
        p += 16;
        if (tagged) {
            uint64_t tl;
            if (!svar(&p, end, &tl) || tl >= sizeof(tag) || tl > (uint64_t)(end - p))
                return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS tag malformed");
            memcpy(tag, p, tl);
            tag[tl] = '\0';
            p += tl;
        }
        if ((size_t)(end - p) < 8)
            return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS truncated");
        uint64_t ni = bl_u64(p);
        p += 8;
        if (ni > (uint64_t)(end - p) / 16)
            return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS interval count too large");
        for (uint64_t k = 0; k < ni; k++, p += 16) {
            int64_t a = (int64_t)bl_u64(p), b = (int64_t)bl_u64(p + 8);
            if (b > a && bl_gtids_add_mysql(d->gtids, uuid, tag, a, b) != TB_OK)
                return FAIL(err, TB_ERR_CORRUPT, "PREVIOUS_GTIDS interval malformed");
        }
    }
    return TB_OK;
}

tb_code bl_on_maria_gtid_list(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err)
{
    if (len < 4)
        return FAIL(err, TB_ERR_CORRUPT, "GTID_LIST truncated");
    uint32_t n = bl_u32(body) & 0x0FFFFFFF;
    if ((len - 4) / 16 < n)
        return FAIL(err, TB_ERR_CORRUPT, "GTID_LIST truncated");
    if (!bl_gtids_empty(d->gtids))
        return TB_OK;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = body + 4 + 16 * i;
        if (bl_gtids_set_mariadb(d->gtids, bl_u32(e), bl_u32(e + 4), bl_u64(e + 8)) != TB_OK)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    return TB_OK;
}

tb_code bl_on_payload(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err)
{
    const uint8_t *p = body, *end = body + len;
    uint64_t comp = 0, usize = 0, psize = 0;
    bool have_usize = false;
    for (;;) {
        uint64_t t, l, v;
        if (!bl_lenenc(&p, end, &t))
            return FAIL(err, TB_ERR_CORRUPT, "TRANSACTION_PAYLOAD header truncated");
        if (t == 0)
            break;
        if (!bl_lenenc(&p, end, &l) || l > (uint64_t)(end - p))
            return FAIL(err, TB_ERR_CORRUPT, "TRANSACTION_PAYLOAD header truncated");
        const uint8_t *q = p;
        p += l;
        if (!bl_lenenc(&q, p, &v))
            v = 0;
        if (t == 1) psize = v;
        else if (t == 2) comp = v;
        else if (t == 3) { usize = v; have_usize = true; }
    }
    size_t avail = (size_t)(end - p);
    if (psize && psize < avail)
        avail = (size_t)psize;
    tb_buf_reset(&d->payload);
    if (comp == 255) {
        if (tb_buf_append(&d->payload, p, avail) != TB_OK)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
    } else if (comp == 0) {
        unsigned long long fsz = ZSTD_getFrameContentSize(p, avail);
        if (!have_usize && fsz != ZSTD_CONTENTSIZE_UNKNOWN && fsz != ZSTD_CONTENTSIZE_ERROR)
            usize = fsz;
        if (usize > ((uint64_t)1 << 32))
            return FAIL(err, TB_ERR_UNSUPPORTED, "TRANSACTION_PAYLOAD of %llu bytes is too large",
                        (unsigned long long)usize);
        /* stream: the declared size may be absent or wrong */
        ZSTD_DStream *zs = ZSTD_createDStream();
        if (!zs)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        ZSTD_initDStream(zs);
        ZSTD_inBuffer in = {p, avail, 0};
        tb_code rc = TB_OK;
        size_t zr = 1;
        while (rc == TB_OK) {
            /* the declared size is a hint from the bytes, not trusted with an allocation: room
             * grows with what decompresses (at most doubling), up to what was declared */
            size_t room = d->payload.len > 65536 ? d->payload.len : 65536;
            if (usize > d->payload.len && usize - d->payload.len < room)
                room = (size_t)(usize - d->payload.len) + 1;
            if (d->payload.len > ((uint64_t)1 << 32)) {
                rc = FAIL(err, TB_ERR_UNSUPPORTED, "TRANSACTION_PAYLOAD of more than %llu bytes is too large",
                          (unsigned long long)1 << 32);
                break;
            }
            if (tb_buf_reserve(&d->payload, room) != TB_OK) {
                rc = FAIL(err, TB_ERR_NOMEM, "TRANSACTION_PAYLOAD too large to decompress");
                break;
            }
            ZSTD_outBuffer o = {d->payload.data, d->payload.cap - 1, d->payload.len};
            zr = ZSTD_decompressStream(zs, &o, &in);
            d->payload.len = o.pos;
            if (ZSTD_isError(zr)) {
                rc = FAIL(err, TB_ERR_CORRUPT, "TRANSACTION_PAYLOAD does not decompress: %s", ZSTD_getErrorName(zr));
                break;
            }
            if (zr == 0 || (in.pos == in.size && o.pos < o.size))
                break;
        }
        ZSTD_freeDStream(zs);
        if (rc != TB_OK)
            return rc;
        if (zr != 0)
            return FAIL(err, TB_ERR_CORRUPT, "TRANSACTION_PAYLOAD compressed stream is truncated");
    } else {
        return FAIL(err, TB_ERR_UNSUPPORTED, "TRANSACTION_PAYLOAD compression type %llu", (unsigned long long)comp);
    }
    d->pay_pos = 0;
    d->pay_active = d->payload.len > 0;
    return TB_OK;
}

