/*
 * Starting a MySQL stream from a GTID set without COM_BINLOG_DUMP_GTID
 * (binlog_live.c): the choice of the binlog file from the Previous_gtids
 * events, and the decoder skipping the transactions the set already holds,
 * checked on real MySQL binlogs from the fixtures (tests/fixtures/binlog).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binlog.h"
#include "binlog_int.h"

#define FIX TB_FIXTURES_DIR "/binlog/"

/* ------------------------------------------------------------ set operations */

static bl_gtids *set(const char *text)
{
    bl_gtids *g = bl_gtids_new();
    tb_error err;
    cr_assert_not_null(g);
    cr_assert_eq(bl_gtids_parse(g, text, false, &err), TB_OK, "%s: %s", text, err.msg);
    return g;
}

static const uint8_t U[16] = {0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62};
#define US "3e11fa47-71ca-11e1-9e33-c80aa9429562"
#define VS "4f22fb58-82db-22f2-af44-d91bba53a673"

Test(gtid_set, contains)
{
    bl_gtids *g = set(US ":1-10:20," US ":mytag:3");
    cr_assert(bl_gtids_contains_mysql(g, U, "", 1));
    cr_assert(bl_gtids_contains_mysql(g, U, "", 10), "the end of a text interval is inclusive");
    cr_assert_not(bl_gtids_contains_mysql(g, U, "", 11));
    cr_assert(bl_gtids_contains_mysql(g, U, "", 20));
    cr_assert_not(bl_gtids_contains_mysql(g, U, "", 19));
    cr_assert(bl_gtids_contains_mysql(g, U, "mytag", 3));
    cr_assert_not(bl_gtids_contains_mysql(g, U, "mytag", 1), "tags are separate sequences");
    cr_assert_not(bl_gtids_contains_mysql(g, U, "other", 3));
    cr_assert_not(bl_gtids_contains_mysql(NULL, U, "", 1));
    bl_gtids_free(g);
}

Test(gtid_set, subset)
{
    bl_gtids *a = set(US ":1-10"), *b = set(US ":1-20," VS ":1-3"), *c = set(US ":1-5:7-20");
    bl_gtids *empty = set(""), *tagged = set(US ":1-10:t:1-3"), *tagged2 = set(US ":1-10:t:1-2");
    cr_assert(bl_gtids_subset_mysql(a, b));
    cr_assert_not(bl_gtids_subset_mysql(b, a));
    cr_assert_not(bl_gtids_subset_mysql(a, c), "6 is missing from c");
    cr_assert(bl_gtids_subset_mysql(empty, a));
    cr_assert(bl_gtids_subset_mysql(tagged2, tagged));
    cr_assert_not(bl_gtids_subset_mysql(tagged, tagged2));
    cr_assert_not(bl_gtids_subset_mysql(tagged2, b), "b has no tagged GTIDs");
    bl_gtids_free(a);
    bl_gtids_free(b);
    bl_gtids_free(c);
    bl_gtids_free(empty);
    bl_gtids_free(tagged);
    bl_gtids_free(tagged2);
}

/* ------------------------------------------------------------ the start file */

static const char *const files[] = {"binlog.000007", "binlog.000008", "binlog.000009"};

static size_t pick_ok(const char *const *prev, const char *start)
{
    size_t pick = 99;
    tb_error err;
    cr_assert_eq(bl_gtid_start_file(files, prev, 3, start, &pick, &err), TB_OK, "%s: %s", start, err.msg);
    return pick;
}

Test(gtid_start, newest_file_inside_the_set)
{
    const char *const prev[] = {"", US ":1-10", US ":1-20\n," VS ":1-2"}; /* SHOW BINLOG EVENTS breaks lines */
    cr_assert_eq(pick_ok(prev, US ":1-15"), 1);
    cr_assert_eq(pick_ok(prev, US ":1-10"), 1, "a set equal to Previous_gtids starts in that file");
    cr_assert_eq(pick_ok(prev, US ":1-9"), 0);
    cr_assert_eq(pick_ok(prev, US ":1-25," VS ":1-2"), 2);
    cr_assert_eq(pick_ok(prev, US ":1-25"), 1, VS " is not in the set: its transactions are in 000008");
    const char *const none[] = {NULL, NULL, NULL}; /* gtid_mode was off: no Previous_gtids */
    cr_assert_eq(pick_ok(none, US ":1-3"), 2);
}

Test(gtid_start, purged)
{
    const char *const prev[] = {US ":1-10", US ":1-20", US ":1-30"};
    size_t pick = 99;
    tb_error err;
    cr_assert_eq(bl_gtid_start_file(files, prev, 3, US ":1-5", &pick, &err), TB_ERR_NOT_FOUND);
    cr_assert(strstr(err.msg, "binlog.000007") && strstr(err.msg, US ":1-5"), "%s", err.msg);
    cr_assert_eq(bl_gtid_start_file(files, prev, 0, US ":1-5", &pick, &err), TB_ERR_NOT_FOUND);
    cr_assert_eq(bl_gtid_start_file(files, prev, 3, "not-a-uuid:1", &pick, &err), TB_ERR_CONFIG);
    const char *const bad[] = {"", "garbage", US ":1-30"};
    cr_assert_eq(bl_gtid_start_file(files, bad, 3, US ":1-5", &pick, &err), TB_ERR_SOURCE);
    cr_assert(strstr(err.msg, "binlog.000008"), "names the file whose Previous_gtids is bad: %s", err.msg);
}

/* ------------------------------------------------------------ skipping, on fixtures */

typedef struct decoded {
    char txid[64][80];  /* per emitted event */
    char gtid_after[64][200]; /* position GTID set at last_in_tx events ("" otherwise) */
    size_t n;
    uint64_t skipped;
} decoded;

static char fix_path[512];
static uint8_t fix_buf[1 << 16];

/* The fixture name read whole into fix_buf (its length), and a decoder of it. */
static binlog_dec *fixture_dec(const char *name, bool verify_checksum, size_t *len)
{
    snprintf(fix_path, sizeof(fix_path), FIX "%s", name);
    FILE *f = fopen(fix_path, "rb");
    cr_assert_not_null(f, "%s", fix_path);
    *len = fread(fix_buf, 1, sizeof(fix_buf), f);
    fclose(f);
    cr_assert(*len > 4 && *len < sizeof(fix_buf), "%s: %zu bytes", fix_path, *len);
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = fix_path;
    o.file = name;
    o.verify_checksum = verify_checksum;
    binlog_dec *d = binlog_dec_new(&o);
    cr_assert_not_null(d);
    return d;
}

static void decode(const char *name, const char *start_set, bool skip, decoded *out)
{
    size_t len;
    binlog_dec *d = fixture_dec(name, true, &len);
    const uint8_t *buf = fix_buf;
    const char *path = fix_path;
    if (start_set) {
        tb_position p;
        tb_position_init(&p);
        p.kind = TB_POS_MYSQL;
        cr_assert_eq(tb_position_set_gtid(&p, start_set), TB_OK);
        cr_assert_eq(binlog_dec_set_position(d, &p), TB_OK);
        tb_position_free(&p);
    }
    binlog_dec_skip_executed(d, skip);
    memset(out, 0, sizeof(*out));
    tb_error err;
    evt_event *e;
    for (size_t off = 4; off + 19 <= len;) {
        size_t elen = bl_u32(buf + off + 9);
        cr_assert(elen >= 19 && off + elen <= len, "%s: event at %zu", path, off);
        cr_assert_eq(binlog_dec_feed(d, buf + off, elen, off, &err), TB_OK, "%s", err.msg);
        for (;;) {
            cr_assert_eq(binlog_dec_next(d, &e, &err), TB_OK, "%s", err.msg);
            if (!e)
                break;
            cr_assert_lt(out->n, 64);
            snprintf(out->txid[out->n], sizeof(out->txid[0]), "%s", evt_event_txid(e) ? evt_event_txid(e) : "");
            const tb_position *p = evt_event_position(e);
            if (evt_event_last_in_tx(e) && p->gtid_set)
                snprintf(out->gtid_after[out->n], sizeof(out->gtid_after[0]), "%s", p->gtid_set);
            out->n++;
        }
        off += elen;
    }
    out->skipped = binlog_dec_skipped(d);
    binlog_dec_free(d);
}

/* Events of full whose transaction is not in skipped[0..nskip) equal got
 * (and so do the positions after each transaction, when same_sets: the start
 * set was a prefix of the file's history). At least nskip transactions were
 * skipped (transactions without rows, DDL, count too). */
static void expect_without(const decoded *full, const char *const *skipped, size_t nskip, const decoded *got,
                           bool same_sets)
{
    size_t k = 0;
    for (size_t i = 0; i < full->n; i++) {
        bool drop = false;
        for (size_t s = 0; s < nskip; s++)
            drop |= strcmp(full->txid[i], skipped[s]) == 0;
        if (drop)
            continue;
        cr_assert_lt(k, got->n, "event %zu (%s) missing", i, full->txid[i]);
        cr_assert_str_eq(got->txid[k], full->txid[i], "event %zu", k);
        if (same_sets)
            cr_assert_str_eq(got->gtid_after[k], full->gtid_after[i], "position after event %zu", k);
        else
            cr_assert_eq(got->gtid_after[k][0] != 0, full->gtid_after[i][0] != 0, "last in its transaction: %zu", k);
        k++;
    }
    cr_assert_eq(k, got->n, "%zu events expected, %zu emitted", k, got->n);
    cr_assert_geq(got->skipped, nskip);
    if (nskip == 0)
        cr_assert_eq(got->skipped, 0);
}

static void skip_check(const char *name)
{
    decoded full, got;
    decode(name, NULL, false, &full);
    /* the distinct GTIDs, in order; the set after the first one is "uuid:1-g" */
    const char *tx[64];
    size_t ntx = 0;
    for (size_t i = 0; i < full.n; i++)
        if (ntx == 0 || strcmp(tx[ntx - 1], full.txid[i]) != 0)
            tx[ntx++] = full.txid[i];
    cr_assert_geq(ntx, 1, "%s: needs a GTID transaction", name);
    size_t last0 = 0; /* the last event of the first transaction */
    while (strcmp(full.txid[last0], tx[0]) == 0 && !full.gtid_after[last0][0])
        last0++;
    cr_assert_str_eq(full.txid[last0], tx[0]);

    char start[256];
    /* the set holds the first transaction: it is skipped, the rest comes */
    decode(name, full.gtid_after[last0], true, &got);
    expect_without(&full, tx, 1, &got, true);
    /* negative control: the same start without skipping repeats it */
    decode(name, full.gtid_after[last0], false, &got);
    expect_without(&full, tx, 0, &got, true);
    /* a set with a hole: the second transaction is in it, the first is not */
    if (ntx >= 2) { /* files with one untagged sequence: Previous_gtids is uuid:1-(g1 - 1) */
        const char *colon = strrchr(tx[0], ':');
        long g1 = atol(colon + 1);
        char uuid[64], want_after[128];
        snprintf(uuid, sizeof(uuid), "%.*s", (int)(colon - tx[0]), tx[0]);
        snprintf(want_after, sizeof(want_after), "%s:1-%ld", uuid, g1);
        cr_assert_str_eq(full.gtid_after[last0], want_after, "%s", name);
        snprintf(start, sizeof(start), "%s:1-%ld,%s", uuid, g1 - 1, tx[1]);
        decode(name, start, true, &got);
        expect_without(&full, tx + 1, 1, &got, false);
    }
    /* every transaction of the file: nothing comes */
    decode(name, full.gtid_after[full.n - 1], true, &got);
    expect_without(&full, tx, ntx, &got, true);
}

Test(gtid_skip, mysql_5_7_gtid_rows) { skip_check("mysql-5.7.40-gtid-rows-emoji.000080"); }
Test(gtid_skip, mysql_8_0_full_metadata) { skip_check("mysql-8.0.26-invisible-columns-full-metadata.000001"); }
Test(gtid_skip, mysql_9_6_tagged_gtids) { skip_check("mysql-9.6.0-gtid-tagged.000001"); }

/* ------------------------------------------------------------ a GTID's number, from the bytes */

/* A GTID event whose transaction number is outside MySQL's 1 to 2^63-2 (bytes of a damaged or
 * forged binlog) is a corrupt event naming the number, not a set that wraps; 2^63-2 itself is
 * decoded. The first GTID event of a real binlog, its number patched (checksums not verified). */
static tb_code feed_with_gno(const char *name, int64_t gno, tb_error *err)
{
    size_t len;
    binlog_dec *d = fixture_dec(name, false, &len);
    uint8_t *buf = fix_buf;
    tb_code rc = TB_OK;
    bool patched = false;
    for (size_t off = 4; rc == TB_OK && off + 19 <= len;) {
        size_t elen = bl_u32(buf + off + 9);
        cr_assert(elen >= 19 && off + elen <= len);
        if (!patched && buf[off + 4] == BL_GTID) {
            for (int i = 0; i < 8; i++) /* body + 17: the number, little-endian */
                buf[off + 19 + 17 + i] = (uint8_t)((uint64_t)gno >> (8 * i));
            patched = true;
        }
        rc = binlog_dec_feed(d, buf + off, elen, off, err);
        evt_event *e;
        while (rc == TB_OK && (rc = binlog_dec_next(d, &e, err)) == TB_OK && e)
            ;
        off += elen;
    }
    cr_assert(patched, "%s has a GTID event", name);
    binlog_dec_free(d);
    return rc;
}

Test(gtid_event, number_out_of_range_is_corrupt)
{
    const char *name = "mysql-5.7.40-gtid-rows-emoji.000080";
    const int64_t bad[] = {INT64_MAX, 0, -1, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb_error err;
        tb_error_clear(&err);
        tb_code rc = feed_with_gno(name, bad[i], &err);
        cr_expect_eq(rc, TB_ERR_CORRUPT, "number %lld: %d %s", (long long)bad[i], (int)rc, err.msg);
        cr_expect(strstr(err.msg, "out of range"), "number %lld: %s", (long long)bad[i], err.msg);
    }
    tb_error err;
    tb_error_clear(&err);
    cr_expect_eq(feed_with_gno(name, BL_GNO_MAX, &err), TB_OK, "%s", err.msg);
}

/* ------------------------------------------------------------ a payload's declared size, from the bytes */

/* The uncompressed size a TRANSACTION_PAYLOAD declares is a hint, not an allocation: the
 * payload event of a real MySQL 8.0 binlog (960 bytes uncompressed) made to declare 2^31 - 2
 * decodes to the same row, with room for what decompressed only. */
Test(payload_event, declared_size_not_trusted)
{
    size_t len;
    binlog_dec *d = fixture_dec("mysql-8.0.28-transaction-payload-zstd.000001", false, &len);
    static uint8_t out[1 << 16];
    size_t n = 0, rows = 0;
    for (size_t off = 4; off + 19 <= len;) {
        size_t elen = bl_u32(fix_buf + off + 9);
        cr_assert(elen >= 19 && off + elen <= len);
        const uint8_t *ev = fix_buf + off, *body = ev + 19;
        if (ev[4] == BL_TRANSACTION_PAYLOAD) {
            /* compression 0 (zstd), then the uncompressed size: type 3, 3 bytes, 0xfc + 2 bytes */
            static const uint8_t head[] = {0x02, 0x01, 0x00, 0x03, 0x03, 0xfc};
            cr_assert(memcmp(body, head, sizeof head) == 0, "the payload header the test expects");
            memcpy(out, ev, 19 + 3);
            static const uint8_t big[] = {0x03, 0x09, 0xfe, 0xfe, 0xff, 0xff, 0x7f, 0x00, 0x00, 0x00, 0x00};
            memcpy(out + 19 + 3, big, sizeof big);
            size_t rest = elen - 19 - 8; /* after the size field: the other fields, the frame, the checksum */
            memcpy(out + 19 + 3 + sizeof big, body + 8, rest);
            n = 19 + 3 + sizeof big + rest;
            out[9] = (uint8_t)n, out[10] = (uint8_t)(n >> 8), out[11] = 0, out[12] = 0;
            ev = out;
            elen = n;
        }
        tb_error err;
        cr_assert_eq(binlog_dec_feed(d, ev, elen, off, &err), TB_OK, "%s", err.msg);
        evt_event *e;
        while (binlog_dec_next(d, &e, &err) == TB_OK && e) {
            cr_expect_str_eq(evt_table_name(evt_event_table(e)), "movies");
            rows++;
        }
        off += bl_u32(fix_buf + off + 9);
    }
    cr_assert_gt(n, 0, "the fixture has a payload event");
    cr_expect_eq(rows, 1, "the update the payload holds");
    cr_expect_lt(d->payload.cap, (size_t)1 << 20, "room of %zu bytes for 960 decompressed", d->payload.cap);
    binlog_dec_free(d);
}
