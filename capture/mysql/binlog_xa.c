/*
 * binlog_xa: XA transactions in the binlog (see binlog_dec.c for the event
 * layouts, docs/statements.md "XA" for what the connector sends).
 *
 * HOW THE SERVERS LOG THEM. XA START ... XA END; XA PREPARE writes the
 * transaction's rows as a group of their own, ended by an XA_PREPARE event
 * (38: one_phase 1, formatID 4, gtrid_length 4, bqual_length 4, gtrid and
 * bqual bytes); MariaDB opens that group with a GTID event flagged
 * FL_PREPARED_XA (0x40), MySQL with a QUERY "XA START X'..',X'..',n". The
 * XA COMMIT or XA ROLLBACK that ends it is a later group of its own (MariaDB:
 * GTID flagged FL_COMPLETED_XA, 0x80), holding only the QUERY
 * "XA COMMIT X'gtrid',X'bqual',formatID" or "XA ROLLBACK ...". Other
 * transactions may come in between, and the two groups may be in different
 * binlog files. XA COMMIT ... ONE PHASE is logged as an ordinary transaction
 * (MariaDB) or as one group ended by XA_PREPARE with one_phase set (MySQL).
 *
 * WHAT THE DECODER DOES. The rows of a transaction are sent when it commits:
 * the prepared group's TABLE_MAP and rows events are kept, as bytes, under
 * the transaction's XID (not decoded, nothing is emitted); the XA COMMIT
 * group replays them (binlog_dec_next) and its rows become events of that
 * group, with its GTID, commit time and resume position, each row keeping
 * the offset of the rows event that held it; XA ROLLBACK drops them. While
 * a prepared transaction is pending, the position a consumer may commit
 * (bl_xa_commit_pos, binlog_position()) stays at the resume position before
 * the oldest pending prepared group, so a restart reads that group again:
 * the rows between it and the restart point are sent again (at-least-once),
 * the XA rows only at their XA COMMIT. The decoder's own position
 * (binlog_dec_position, where a reconnect resumes) moves on: the kept groups
 * stay in memory across a reconnect. An XA COMMIT of a transaction the
 * decoder never saw prepared (prepared before the start position) is a WARN.
 */
#include "binlog_int.h"
#include "tb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void bl_xa_init(binlog_dec *d)
{
    tb_buf_init(&d->xa_cur, 0);
    tb_position_init(&d->xa_cur_before);
    d->xa_replay = -1;
}

static void xa_entry_free(bl_xa *x)
{
    free(x->xid);
    tb_buf_free(&x->evs);
    tb_position_free(&x->before);
}

void bl_xa_free(binlog_dec *d)
{
    for (size_t i = 0; i < d->nxa; i++)
        xa_entry_free(&d->xa[i]);
    free(d->xa);
    d->xa = NULL;
    d->nxa = d->capxa = 0;
    tb_buf_free(&d->xa_cur);
    tb_position_free(&d->xa_cur_before);
}

const tb_position *bl_xa_commit_pos(const binlog_dec *d)
{
    return d->nxa > 0 ? &d->xa[0].before : &d->pos;
}

tb_code bl_xa_start(binlog_dec *d)
{
    d->xa_collect = true;
    tb_buf_reset(&d->xa_cur);
    return tb_position_copy(&d->xa_cur_before, &d->pos);
}

tb_code bl_xa_keep(binlog_dec *d, const uint8_t *ev, size_t len, bool strip, uint64_t off)
{
    if (strip) {
        if (len < BL_HEADER_LEN + 4)
            return TB_ERR_CORRUPT;
        len -= 4;
    }
    uint8_t frame[12], size[4];
    for (int i = 0; i < 8; i++)
        frame[i] = (uint8_t)(off >> (8 * i));
    for (int i = 0; i < 4; i++)
        frame[8 + i] = size[i] = (uint8_t)(len >> (8 * i));
    if (tb_buf_append(&d->xa_cur, frame, sizeof frame) != TB_OK ||
        tb_buf_append(&d->xa_cur, ev, 9) != TB_OK || tb_buf_append(&d->xa_cur, size, 4) != TB_OK ||
        tb_buf_append(&d->xa_cur, ev + 13, len - 13) != TB_OK)
        return TB_ERR_NOMEM;
    return TB_OK;
}

static const char hexd[] = "0123456789abcdef";

static tb_code hex_append(tb_buf *b, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char h[2] = {hexd[p[i] >> 4], hexd[p[i] & 15]};
        if (tb_buf_append(b, h, 2) != TB_OK)
            return TB_ERR_NOMEM;
    }
    return TB_OK;
}

static long find_xa(const binlog_dec *d, const char *xid)
{
    for (size_t i = 0; i < d->nxa; i++)
        if (strcmp(d->xa[i].xid, xid) == 0)
            return (long)i;
    return -1;
}

/* A new entry for the group collected so far under xid (moved into it). */
static tb_code push_xa(binlog_dec *d, const char *xid, tb_error *err)
{
    if (d->nxa == d->capxa) {
        size_t cap = d->capxa ? d->capxa * 2 : 4;
        bl_xa *n = realloc(d->xa, cap * sizeof(*n));
        if (!n)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        d->xa = n;
        d->capxa = cap;
    }
    bl_xa *x = &d->xa[d->nxa];
    memset(x, 0, sizeof(*x));
    x->xid = strdup(xid);
    x->evs = d->xa_cur;
    tb_buf_init(&d->xa_cur, 0);
    x->before = d->xa_cur_before;
    tb_position_init(&d->xa_cur_before);
    if (!x->xid) {
        xa_entry_free(x);
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    d->nxa++;
    return TB_OK;
}

static void start_replay(binlog_dec *d, long i, const uint8_t *hdr)
{
    d->xa_replay = i;
    d->xa_rpos = 0;
    memcpy(d->xa_hdr, hdr, BL_HEADER_LEN);
    d->xa_off = d->ev_off;
    d->xa_end = d->ev_end;
    bl_dec_tx_begin(d, hdr);
}

void bl_xa_replayed(binlog_dec *d)
{
    long i = d->xa_replay;
    d->xa_replay = -1;
    if (i < 0 || (size_t)i >= d->nxa)
        return;
    xa_entry_free(&d->xa[i]);
    memmove(&d->xa[i], &d->xa[i + 1], (d->nxa - (size_t)i - 1) * sizeof(*d->xa));
    d->nxa--;
}

tb_code bl_xa_on_prepare(binlog_dec *d, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err)
{
    if (!d->xa_collect) /* a group the decoder did not see start (it started mid-group) */
        return bl_dec_commit(d, hdr) == TB_OK ? TB_OK : FAIL(err, TB_ERR_NOMEM, "out of memory");
    if (len < 13)
        return FAIL(err, TB_ERR_CORRUPT, "XA_PREPARE truncated");
    bool one_phase = body[0] != 0;
    int32_t fmt = (int32_t)bl_u32(body + 1);
    uint32_t gl = bl_u32(body + 5), bl = bl_u32(body + 9);
    if (gl > 64 || bl > 64 || len - 13 < (size_t)gl + bl)
        return FAIL(err, TB_ERR_CORRUPT, "XA_PREPARE: XID lengths %u and %u do not fit", gl, bl);
    tb_buf key;
    tb_buf_init(&key, 0);
    char tail[16];
    snprintf(tail, sizeof tail, ",%d", fmt);
    tb_code rc = TB_OK;
    if (hex_append(&key, body + 13, gl) != TB_OK || tb_buf_append(&key, ",", 1) != TB_OK ||
        hex_append(&key, body + 13 + gl, bl) != TB_OK || tb_buf_append(&key, tail, strlen(tail)) != TB_OK)
        rc = FAIL(err, TB_ERR_NOMEM, "out of memory");
    d->xa_collect = false;
    long again = rc == TB_OK ? find_xa(d, tb_buf_cstr(&key)) : -1;
    if (again >= 0) { /* the same group read again (a reconnect before it ended): keep the new copy */
        d->xa_replay = again;
        bl_xa_replayed(d);
    }
    if (rc == TB_OK)
        rc = push_xa(d, tb_buf_cstr(&key), err);

    tb_buf_free(&key);
    if (rc != TB_OK)
        return rc;
    if (one_phase) { /* MySQL's XA COMMIT ... ONE PHASE: the group commits itself */
        start_replay(d, (long)d->nxa - 1, hdr);
        return TB_OK;
    }
    return bl_dec_commit(d, hdr) == TB_OK ? TB_OK : FAIL(err, TB_ERR_NOMEM, "out of memory");
}

/* The canonical XID of "XA COMMIT|ROLLBACK xid ...": X'hex' or 'text' parts,
 * then formatID (default 1), into key. false when the text has no XID. */
static bool parse_xid(const char *q, size_t n, tb_buf *key)
{
    const char *p = q, *end = q + n;
    for (int words = 0; words < 2; words++) { /* XA, COMMIT|ROLLBACK */
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
            p++;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
    }
    int part = 0;
    long fmt = 1;
    while (p < end && part < 3) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
            p++;
        if (p >= end)
            break;
        if (part < 2) {
            bool hex = (*p == 'X' || *p == 'x') && p + 1 < end && p[1] == '\'';
            if (hex)
                p++;
            if (*p != '\'' && *p != '"')
                break;
            char quote = *p++;
            const char *s = p;
            while (p < end && *p != quote)
                p++;
            if (p >= end)
                return false;
            if (part == 1 && tb_buf_append(key, ",", 1) != TB_OK)
                return false;
            for (const char *c = s; c < p; c++) {
                char lc = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
                if (hex ? tb_buf_append(key, &lc, 1) != TB_OK
                        : hex_append(key, (const uint8_t *)c, 1) != TB_OK)
                    return false;
            }
            p++;
        } else {
            bool neg = *p == '-'; /* the text is not NUL-terminated: no strtol */
            if (neg)
                p++;
            long v = 0;
            const char *digits = p;
            while (p < end && *p >= '0' && *p <= '9' && v < 1000000000L)
                v = v * 10 + (*p++ - '0');
            fmt = p == digits ? 1 : neg ? -v : v;
        }
        part++;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
            p++;
        if (p < end && *p == ',')
            p++;
        else
            break;
    }
    if (part == 0)
        return false;
    if (part == 1 && tb_buf_append(key, ",", 1) != TB_OK)
        return false;
    char tail[24];
    snprintf(tail, sizeof tail, ",%ld", fmt);
    return tb_buf_append(key, tail, strlen(tail)) == TB_OK;
}

tb_code bl_xa_on_end(binlog_dec *d, bool commit, const uint8_t *hdr, const char *q, size_t n, tb_error *err)
{
    tb_buf key;
    tb_buf_init(&key, 0);
    long i = parse_xid(q, n, &key) ? find_xa(d, tb_buf_cstr(&key)) : -1;
    bool one_phase = false;
    for (size_t k = 0; k + 9 <= n; k++)
        if (strncasecmp(q + k, "ONE PHASE", 9) == 0)
            one_phase = true;
    if (commit && i >= 0) {
        tb_buf_free(&key);
        start_replay(d, i, hdr);
        return TB_OK;
    }
    if (commit && !one_phase)
        TB_WARN("binlog", "%s: %.*s at %s:%llu: the decoder did not see this transaction prepared (it was "
                "prepared before the position the stream started from), so its rows are not in the stream; "
                "snapshot the tables it wrote again (tributary snapshot --incremental --table db.t)",
                d->label, (int)(n > 200 ? 200 : n), q, d->file, (unsigned long long)d->ev_off);
    if (!commit && i >= 0) {
        d->xa_replay = i;
        bl_xa_replayed(d);
    }
    tb_buf_free(&key);
    bl_dec_tx_begin(d, hdr);
    return bl_dec_commit(d, hdr) == TB_OK ? TB_OK : FAIL(err, TB_ERR_NOMEM, "out of memory");
}
