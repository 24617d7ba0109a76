/*
 * Unit tests of the value decoders: DECIMAL, temporals, charsets (evt_mysql),
 * binary JSON and JSON diffs (binlog_json.c), GTID sets (binlog_gtid.c).
 * Byte vectors are built here from the documented encodings.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "binlog_int.h"
#include "evt_json.h"
#include "evt_mysql.h"

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

Test(decimal, small_and_negative)
{
    uint8_t pos[5] = {0x80, 0x00, 0x03, 0x00, 0x00};
    char out[80];
    cr_assert_eq(evt_mysql_decimal_bin_size(10, 4), 5);
    size_t n = evt_mysql_decimal_text(pos, 5, 10, 4, out, sizeof(out));
    cr_assert_str_eq(out, "3.0000");
    cr_assert_eq(n, 6);
    uint8_t neg[5];
    for (int i = 0; i < 5; i++)
        neg[i] = (uint8_t)~pos[i];
    evt_mysql_decimal_text(neg, 5, 10, 4, out, sizeof(out));
    cr_assert_str_eq(out, "-3.0000");
    uint8_t zero[2] = {0x80, 0x00};
    evt_mysql_decimal_text(zero, 2, 4, 0, out, sizeof(out));
    cr_assert_str_eq(out, "0");
}

Test(decimal, precision_65_scale_30)
{
    /* 12345.5: int part 35 digits = one 8-digit group + 3 groups of 9; frac 30 = 3x9 + 3 */
    uint8_t b[30] = {0};
    cr_assert_eq(evt_mysql_decimal_bin_size(65, 30), 30);
    put_be(b + 12, 12345, 4);       /* last full integer group */
    put_be(b + 16, 500000000, 4);   /* first fraction group */
    b[0] ^= 0x80;
    char out[80];
    size_t n = evt_mysql_decimal_text(b, 30, 65, 30, out, sizeof(out));
    cr_assert_str_eq(out, "12345.500000000000000000000000000000");
    cr_assert_eq(n, strlen(out));
    /* malformed group (> 999999999) is refused */
    put_be(b + 20, 0xFFFFFFFF, 4);
    cr_assert_eq(evt_mysql_decimal_text(b, 30, 65, 30, out, sizeof(out)), 0);
}

Test(temporal, time2_extremes_and_fractions)
{
    uint8_t b[8];
    evt_temporal t;
    char out[48];
    /* -838:59:59, fsp 0 */
    int64_t hms = (838 << 12) | (59 << 6) | 59;
    put_be(b, (uint64_t)(0x800000 - hms), 3);
    evt_mysql_time2(b, 0, &t);
    out[evt_fmt_temporal(EVT_V_TIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "-838:59:59");
    /* -00:00:01.01, fsp 2 (int part -2, fraction byte 0xFF) */
    put_be(b, 0x800000 - 2, 3);
    b[3] = 0xFF;
    evt_mysql_time2(b, 2, &t);
    out[evt_fmt_temporal(EVT_V_TIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "-00:00:01.01");
    /* 25:02:03.500000, fsp 6 */
    int64_t packed = ((int64_t)((25 << 12) | (2 << 6) | 3) << 24) + 500000;
    put_be(b, (uint64_t)(0x800000000000LL + packed), 6);
    evt_mysql_time2(b, 6, &t);
    out[evt_fmt_temporal(EVT_V_TIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "25:02:03.500000");
    /* negative with fsp 6 */
    put_be(b, (uint64_t)(0x800000000000LL - packed), 6);
    evt_mysql_time2(b, 6, &t);
    out[evt_fmt_temporal(EVT_V_TIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "-25:02:03.500000");
}

Test(temporal, datetime2_and_timestamp2)
{
    uint8_t b[8];
    evt_temporal t;
    char out[48];
    uint64_t ym = 2024 * 13 + 1, ymd = (ym << 5) | 31, hms = (10 << 12) | (11 << 6) | 12;
    put_be(b, ((ymd << 17) | hms) + 0x8000000000ULL, 5);
    put_be(b + 5, 3450, 2);
    cr_assert_eq(evt_mysql_temporal2_size(EVT_MY_DATETIME2, 3), 7);
    evt_mysql_datetime2(b, 3, &t);
    out[evt_fmt_temporal(EVT_V_DATETIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "2024-01-31T10:11:12.345");
    /* zero datetime */
    put_be(b, 0x8000000000ULL, 5);
    evt_mysql_datetime2(b, 0, &t);
    out[evt_fmt_temporal(EVT_V_DATETIME, &t, out)] = '\0';
    cr_assert_str_eq(out, "0000-00-00T00:00:00");
    put_be(b, 1700000000, 4);
    put_be(b + 4, 123456, 3);
    evt_mysql_timestamp2(b, 6, &t);
    out[evt_fmt_temporal(EVT_V_TIMESTAMP, &t, out)] = '\0';
    cr_assert_str_eq(out, "2023-11-14T22:13:20.123456Z");
    evt_mysql_date_from_u24((2001u << 9) | (2 << 5) | 3, &t);
    out[evt_fmt_temporal(EVT_V_DATE, &t, out)] = '\0';
    cr_assert_str_eq(out, "2001-02-03");
}

Test(charset, collations_and_conversion)
{
    cr_assert_str_eq(evt_mysql_collation_charset(8), "latin1");
    cr_assert_str_eq(evt_mysql_collation_charset(45), "utf8mb4");
    cr_assert_str_eq(evt_mysql_collation_charset(255), "utf8mb4");
    cr_assert_str_eq(evt_mysql_collation_charset(63), "binary");
    cr_assert_str_eq(evt_mysql_collation_charset(33), "utf8mb3");
    cr_assert_eq(evt_mysql_charset_kind("binary"), EVT_CS_BINARY);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_mysql_to_utf8(NULL, "latin1", "\xe9\x80\x81", 3, &b), TB_OK);
    cr_assert_str_eq(b.data, "\xc3\xa9\xe2\x82\xac\xc2\x81");
    evt_mysql_conv *c = evt_mysql_conv_new();
    tb_buf_reset(&b);
    cr_assert_eq(evt_mysql_to_utf8(c, "cp1251", "\xcf\xf0\xe8", 3, &b), TB_OK);
    cr_assert_str_eq(b.data, "\xd0\x9f\xd1\x80\xd0\xb8"); /* При */
    tb_buf_reset(&b);
    cr_assert_eq(evt_mysql_to_utf8(c, "sjis", "\x82\xa0", 2, &b), TB_OK);
    cr_assert_str_eq(b.data, "\xe3\x81\x82"); /* あ */
    evt_mysql_conv_free(c);
    tb_buf_free(&b);
}

static const uint8_t obj_age25[] = {0x00, 0x01, 0x00, 0x0e, 0x00, 0x0b, 0x00, 0x03, 0x00,
                                    0x05, 0x19, 0x00, 'a', 'g', 'e'};

Test(json, binary_to_text)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(bl_json_to_text(obj_age25, sizeof(obj_age25), &b, NULL), TB_OK);
    cr_assert_str_eq(b.data, "{\"age\":25}");
    /* [1,"a",true,null,1.5] */
    uint8_t arr[30] = {0x02, 0x05, 0x00, 29, 0x00, 0x05, 0x01, 0x00, 0x0c, 19, 0x00, 0x04, 0x01, 0x00,
                       0x04, 0x00, 0x00, 0x0b, 21, 0x00, 0x01, 'a'};
    double d = 1.5;
    memcpy(arr + 22, &d, 8);
    tb_buf_reset(&b);
    tb_error e0;
    cr_assert_eq(bl_json_to_text(arr, sizeof(arr), &b, &e0), TB_OK, "%s", e0.msg);
    cr_assert_str_eq(b.data, "[1,\"a\",true,null,1.5]");
    /* opaque DECIMAL(4,2) 12.50 */
    uint8_t dec[] = {0x0f, 246, 4, 4, 2, 0x80 | 12, 50};
    tb_buf_reset(&b);
    cr_assert_eq(bl_json_to_text(dec, sizeof(dec), &b, NULL), TB_OK);
    cr_assert_str_eq(b.data, "12.50");
    /* uint64 max */
    uint8_t u64[9] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    tb_buf_reset(&b);
    cr_assert_eq(bl_json_to_text(u64, sizeof(u64), &b, NULL), TB_OK);
    cr_assert_str_eq(b.data, "18446744073709551615");
    /* truncated object is an error, not a crash */
    tb_error err;
    cr_assert_neq(bl_json_to_text(obj_age25, 9, &b, &err), TB_OK);
    tb_buf_free(&b);
}

Test(json, diffs_replace_insert_remove)
{
    /* the PARTIAL_UPDATE_ROWS diff of mysql-8.0.22-json-partial-update: REPLACE $.age 26 */
    const uint8_t diff1[] = {0x00, 0x05, '$', '.', 'a', 'g', 'e', 0x03, 0x05, 0x1a, 0x00};
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(bl_json_apply_diff(obj_age25, sizeof(obj_age25), diff1, sizeof(diff1), &b, &err), TB_OK, "%s",
                 err.msg);
    cr_assert_str_eq(b.data, "{\"age\":26}");
    /* INSERT $.b "x", then REMOVE $.age */
    const uint8_t diff2[] = {0x01, 0x03, '$', '.', 'b', 0x03, 0x0c, 0x01, 'x',
                             0x02, 0x05, '$', '.', 'a', 'g', 'e'};
    tb_buf_reset(&b);
    cr_assert_eq(bl_json_apply_diff(obj_age25, sizeof(obj_age25), diff2, sizeof(diff2), &b, &err), TB_OK, "%s",
                 err.msg);
    cr_assert_str_eq(b.data, "{\"b\":\"x\"}");
    /* REPLACE of a missing path is an error */
    const uint8_t diff3[] = {0x00, 0x03, '$', '.', 'z', 0x03, 0x05, 0x01, 0x00};
    cr_assert_neq(bl_json_apply_diff(obj_age25, sizeof(obj_age25), diff3, sizeof(diff3), &b, &err), TB_OK);
    tb_buf_free(&b);
}

Test(gtid, mysql_and_mariadb_sets)
{
    bl_gtids *g = bl_gtids_new();
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(bl_gtids_parse(g, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2", false, &err), TB_OK);
    uint8_t u[16] = {0x55, 0x77, 0x89, 0x04, 0x02, 0x99, 0x11, 0xf1, 0xb1, 0xb8, 0x4e, 0xf0, 0xc4, 0x95, 0x6f, 0xeb};
    cr_assert_eq(bl_gtids_add_mysql(g, u, "mytag", 3, 4), TB_OK);
    cr_assert_eq(bl_gtids_add_mysql(g, u, "", 15, 16), TB_OK);
    bl_gtids_format(g, false, &b);
    cr_assert_str_eq(b.data, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:15:mytag:1-3");
    cr_assert_eq(bl_gtids_add_mysql(g, u, "", 14, 15), TB_OK);
    tb_buf_reset(&b);
    bl_gtids_format(g, false, &b);
    cr_assert_str_eq(b.data, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-15:mytag:1-3");
    cr_assert_eq(bl_gtids_parse(g, "1-2-3,0-1-7", true, &err), TB_OK);
    bl_gtids_set_mariadb(g, 0, 1, 8);
    tb_buf_reset(&b);
    bl_gtids_format(g, true, &b);
    cr_assert_str_eq(b.data, "0-1-8,1-2-3");
    cr_assert_neq(bl_gtids_parse(g, "nonsense", true, &err), TB_OK);
    bl_gtids_free(g);
    tb_buf_free(&b);
}

/* Whether one GTID set holds another (verify's "the connector passed the read", a history that
 * diverged after a failover): MariaDB lists in any order of domains, several domains and another
 * server id in one; MySQL sets with holes and line breaks. */
Test(gtid, covers_in_every_domain)
{
    const char *have = "1-1-219,2-1-207,0-1-19479"; /* as @@gtid_binlog_pos lists domains */
    cr_assert_eq(binlog_gtid_covers(have, "0-1-19479,1-1-219,2-1-207", true), 1);
    cr_assert_eq(binlog_gtid_covers(have, "0-1-19000,2-1-1", true), 1);
    cr_assert_eq(binlog_gtid_covers(have, "0-2-19479", true), 1); /* another server, the same point */
    cr_assert_eq(binlog_gtid_covers(have, "0-1-19479,1-1-220", true), 0);
    cr_assert_eq(binlog_gtid_covers(have, "0-1-19479,3-1-1", true), 0); /* a domain have lacks */
    cr_assert_eq(binlog_gtid_covers("", "0-1-1", true), 0);
    cr_assert_eq(binlog_gtid_covers(have, "", true), 1);
    cr_assert_eq(binlog_gtid_covers(have, "0-1-x", true), -1);
    cr_assert_eq(binlog_gtid_covers("0-1", "0-1-1", true), -1);
    cr_assert_eq(binlog_gtid_covers(NULL, "0-1-1", true), -1);
    const char *u = "55778904-0299-11f1-b1b8-4ef0c4956feb";
    char h[160], w[160];
    snprintf(h, sizeof h, "%s:1-10:12-20,\n%s:mytag:1-3", u, u);
    snprintf(w, sizeof w, "%s:1-5:15", u);
    cr_assert_eq(binlog_gtid_covers(h, w, false), 1);
    snprintf(w, sizeof w, "%s:11", u); /* the hole */
    cr_assert_eq(binlog_gtid_covers(h, w, false), 0);
    snprintf(w, sizeof w, "%s:mytag:3,%s:20", u, u);
    cr_assert_eq(binlog_gtid_covers(h, w, false), 1);
    snprintf(w, sizeof w, "%s:mytag:4", u);
    cr_assert_eq(binlog_gtid_covers(h, w, false), 0);
    cr_assert_eq(binlog_gtid_covers(h, "0-1-5", false), -1);
}

/* A mistyped start position must stop the run (exit 2), never start from another place: each
 * of these was once read as a shorter or wrapped value. */
Test(gtid, malformed_sets_are_refused)
{
    static const char *const mysql_bad[] = {
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1-x",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1x",
        "55778904-0299-11f1-b1b8-4ef0c4956feb: 1",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:+1",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1--5",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:0-5",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:5-3",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1-9223372036854775807",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1-99999999999999999999",
        "55778904-0299-11f1-b1b8-4ef0c4956feb:-",
    };
    static const char *const mariadb_bad[] = {
        "0-1-7xyz", "0-1--5", "0-1", "0-1-", "-1-7", "0--7", "4294967296-1-7", "0-4294967296-7",
        "0-1-18446744073709551616", " 0-1-7x", "0-1-7-8", "a-1-7", "0 -1-7",
    };
    bl_gtids *g = bl_gtids_new();
    tb_error err;
    for (size_t i = 0; i < sizeof(mysql_bad) / sizeof(mysql_bad[0]); i++) {
        tb_error_clear(&err);
        cr_expect_eq(bl_gtids_parse(g, mysql_bad[i], false, &err), TB_ERR_CONFIG, "accepted '%s'", mysql_bad[i]);
        cr_expect(strstr(err.msg, "bad GTID") != NULL, "'%s': message '%s'", mysql_bad[i], err.msg);
    }
    for (size_t i = 0; i < sizeof(mariadb_bad) / sizeof(mariadb_bad[0]); i++) {
        tb_error_clear(&err);
        cr_expect_eq(bl_gtids_parse(g, mariadb_bad[i], true, &err), TB_ERR_CONFIG, "accepted '%s'", mariadb_bad[i]);
    }
    /* The limits themselves are accepted. */
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(bl_gtids_parse(g, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-9223372036854775806", false, &err), TB_OK,
                 "%s", err.msg);
    bl_gtids_format(g, false, &b);
    cr_expect_str_eq(b.data, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-9223372036854775806");
    cr_assert_eq(bl_gtids_parse(g, "4294967295-4294967295-18446744073709551615, 0-1-7", true, &err), TB_OK, "%s",
                 err.msg);
    tb_buf_reset(&b);
    bl_gtids_format(g, true, &b);
    cr_expect_str_eq(b.data, "0-1-7,4294967295-4294967295-18446744073709551615");
    bl_gtids_free(g);
    tb_buf_free(&b);
}

/* A Previous_gtids text that does not parse names the binlog, with err NULL or not. */
Test(gtid, start_file_with_bad_previous_gtids)
{
    const char *files[] = {"mysql-bin.000001"};
    const char *prev[] = {"55778904-0299-11f1-b1b8-4ef0c4956feb:1-x"};
    size_t pick = 99;
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(bl_gtid_start_file(files, prev, 1, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-3", &pick, &err),
                 TB_ERR_SOURCE);
    cr_expect(strstr(err.msg, "binlog mysql-bin.000001: Previous_gtids: bad GTID interval") == err.msg, "%s", err.msg);
    cr_assert_eq(bl_gtid_start_file(files, prev, 1, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-3", &pick, NULL),
                 TB_ERR_SOURCE);
    cr_expect_eq(pick, 99);
}

/* A bare event: 19-byte header (no FDE before it, so no checksum) + body. */
static size_t make_event(uint8_t *out, int type, uint16_t flags, const void *body, size_t blen)
{
    size_t len = 19 + blen;
    memset(out, 0, 19);
    out[4] = (uint8_t)type;
    out[5] = 1; /* server id 1 */
    out[9] = (uint8_t)len;
    out[10] = (uint8_t)(len >> 8);
    out[13] = (uint8_t)(len + 4);
    out[17] = (uint8_t)flags;
    out[18] = (uint8_t)(flags >> 8);
    memcpy(out + 19, body, blen);
    return len;
}

static tb_code feed_one(binlog_dec *d, const uint8_t *ev, size_t len, tb_error *err)
{
    tb_code rc = binlog_dec_feed(d, ev, len, 4, err);
    evt_event *e = NULL;
    while (rc == TB_OK) {
        rc = binlog_dec_next(d, &e, err);
        if (!e)
            break;
    }
    return rc;
}

Test(events, unknown_types_ignorable_incident)
{
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = "synthetic";
    binlog_dec *d = binlog_dec_new(&o);
    uint8_t ev[256];
    tb_error err;
    const char body[] = "xyz";
    size_t n = make_event(ev, 200, 0x0080, body, 3); /* unknown but LOG_EVENT_IGNORABLE_F */
    cr_assert_eq(feed_one(d, ev, n, &err), TB_OK, "%s", err.msg);
    n = make_event(ev, 201, 0, body, 3); /* unknown, not ignorable */
    cr_assert_eq(feed_one(d, ev, n, &err), TB_ERR_UNSUPPORTED);
    cr_assert(strstr(err.msg, "synthetic: byte offset 4") && strstr(err.msg, "unknown event type 201"), "%s", err.msg);
    binlog_dec_free(d);
    d = binlog_dec_new(&o);
    const uint8_t inc[] = {0x01, 0x00, 0x05, 'l', 'o', 's', 't', '!'};
    n = make_event(ev, 26, 0, inc, sizeof(inc));
    cr_assert_eq(feed_one(d, ev, n, &err), TB_ERR_SOURCE);
    cr_assert(strstr(err.msg, "INCIDENT") && strstr(err.msg, "'lost!'"), "%s", err.msg);
    binlog_dec_free(d);
    /* with incident_is_error off it is skipped */
    o.incident_is_error = false;
    d = binlog_dec_new(&o);
    cr_assert_eq(feed_one(d, ev, n, &err), TB_OK);
    /* an event whose size field disagrees with its length */
    ev[9] = 99;
    cr_assert_eq(feed_one(d, ev, n, &err), TB_ERR_CORRUPT);
    binlog_dec_free(d);
}

/* TABLE_MAP + WRITE_ROWS + XID built by hand: VECTOR (MySQL 9), GEOMETRY and
 * a large JSON document through the whole decoder. */
Test(events, vector_geometry_json_rows)
{
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    binlog_dec *d = binlog_dec_new(&o);
    uint8_t ev[512];
    tb_error err;
    const uint8_t tmap[] = {
        1, 0, 0, 0, 0, 0, 0, 0,           /* table_id 1, flags */
        1, 'd', 0, 1, 't', 0,             /* db, table */
        4, 0x03, 0xF2, 0xFF, 0xF5,        /* 4 columns: LONG, VECTOR, GEOMETRY, JSON */
        3, 4, 4, 4,                       /* metadata: length bytes of VECTOR, GEOMETRY, JSON */
        0x0E,                             /* nullable: all but id */
        4, 11, 2, 'i', 'd', 1, 'v', 1, 'g', 3, 'd', 'o', 'c', /* COLUMN_NAME */
        8, 1, 0,                          /* SIMPLE_PRIMARY_KEY: column 0 */
    };
    size_t n = make_event(ev, 19, 0, tmap, sizeof(tmap));
    cr_assert_eq(feed_one(d, ev, n, &err), TB_OK, "%s", err.msg);
    uint8_t rows[256];
    size_t k = 0;
    const uint8_t head[] = {1, 0, 0, 0, 0, 0, 1, 0, 4, 0x0F, 0x00, 7, 0, 0, 0};
    memcpy(rows, head, sizeof(head));
    k = sizeof(head);
    float f[3] = {1.0f, -2.5f, 0.125f};
    rows[k++] = 12, rows[k++] = 0, rows[k++] = 0, rows[k++] = 0;
    memcpy(rows + k, f, 12);
    k += 12;
    const uint8_t geo[] = {25, 0, 0, 0, 0xE6, 0x10, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F,
                           0, 0, 0, 0, 0, 0, 0x04, 0xC0};
    memcpy(rows + k, geo, sizeof(geo)); /* 4-byte length 25, SRID 4326, WKB POINT(1.5 -2.5) */
    k += sizeof(geo);
    rows[k++] = sizeof(obj_age25), rows[k++] = 0, rows[k++] = 0, rows[k++] = 0;
    memcpy(rows + k, obj_age25, sizeof(obj_age25));
    k += sizeof(obj_age25);
    n = make_event(ev, 23, 0, rows, k); /* WRITE_ROWS v1 */
    cr_assert_eq(binlog_dec_feed(d, ev, n, 100, &err), TB_OK);
    evt_event *e = NULL;
    cr_assert_eq(binlog_dec_next(d, &e, &err), TB_OK, "%s", err.msg);
    cr_assert_null(e, "held until the commit");
    const uint8_t xid[8] = {9};
    uint8_t xev[64];
    n = make_event(xev, 16, 0, xid, 8);
    cr_assert_eq(binlog_dec_feed(d, xev, n, 300, &err), TB_OK);
    cr_assert_eq(binlog_dec_next(d, &e, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(e);
    cr_assert(evt_event_last_in_tx(e));
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_row(e, EVT_AFTER, &b, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(b.data, "{\"id\":7,\"v\":[1,-2.5,0.125],\"g\":{\"srid\":4326,\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAATA\"},"
                             "\"doc\":{\"age\":25}}");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_key(e, EVT_AFTER, &b, &err), TB_OK);
    cr_assert_str_eq(b.data, "{\"id\":7}");
    cr_assert_eq(evt_event_position(e)->pos, 300 + n);
    tb_buf_free(&b);
    binlog_dec_free(d);
}

/* Regressions of fuzz findings. */
Test(fuzz_regressions, aliased_json_offsets_do_not_explode)
{
    /* a small array whose two entries both point back at the array itself */
    const uint8_t bomb[] = {0x02, 0x02, 0x00, 0x0a, 0x00, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00};
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_neq(bl_json_to_text(bomb, sizeof(bomb), &b, &err), TB_OK);
    tb_buf_free(&b);
}

Test(fuzz_regressions, rotate_shorter_than_its_position)
{
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    binlog_dec *d = binlog_dec_new(&o);
    uint8_t ev[256];
    tb_error err;
    /* an FDE (server 5.0: no checksum) claiming a 1-byte ROTATE post-header */
    uint8_t fde[57 + 40] = {4, 0, '5', '.', '0', '.', '9', '5'};
    fde[56] = 19;                 /* header length */
    memset(fde + 57, 0, 40);
    fde[57 + 4 - 1] = 1;          /* ROTATE (type 4) post-header: 1 byte */
    size_t n = make_event(ev, 15, 0, fde, sizeof(fde));
    cr_assert_eq(feed_one(d, ev, n, &err), TB_OK, "%s", err.msg);
    /* a 3-byte ROTATE: its 8-byte position must not be read past the event */
    const uint8_t rot[] = {4, 0, 'x'};
    n = make_event(ev, 4, 0, rot, sizeof(rot));
    uint8_t *exact = malloc(n); /* so that ASan sees a read past the event */
    memcpy(exact, ev, n);
    cr_assert_eq(feed_one(d, exact, n, &err), TB_ERR_CORRUPT);
    cr_assert(strstr(err.msg, "ROTATE truncated"), "%s", err.msg);
    free(exact);
    binlog_dec_free(d);
}

Test(fuzz_regressions, rows_without_columns_and_repeated_tlvs)
{
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    binlog_dec *d = binlog_dec_new(&o);
    uint8_t ev[256];
    tb_error err;
    /* COLUMN_NAME given twice: the second wins, nothing leaks */
    const uint8_t tmap[] = {2, 0, 0, 0, 0, 0, 0, 0, 1, 'd', 0, 1, 't', 0, 1, 0x03, 0, 0x00,
                            4, 2, 1, 'a', 4, 2, 1, 'b'};
    size_t n = make_event(ev, 19, 0, tmap, sizeof(tmap));
    cr_assert_eq(feed_one(d, ev, n, &err), TB_OK, "%s", err.msg);
    /* a WRITE_ROWS whose image has no column: must stop, not loop forever */
    const uint8_t rows[] = {2, 0, 0, 0, 0, 0, 1, 0, 1, 0x00, 0x00};
    n = make_event(ev, 23, 0, rows, sizeof(rows));
    cr_assert_eq(feed_one(d, ev, n, &err), TB_ERR_CORRUPT);
    cr_assert(strstr(err.msg, "no columns"), "%s", err.msg);
    binlog_dec_free(d);
    /* a MariaDB GTID set printed in MySQL form (and back) is always a C string */
    bl_gtids *g = bl_gtids_new();
    uint8_t u[16] = {1};
    bl_gtids_add_mysql(g, u, "", 1, 2);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(bl_gtids_format(g, true, &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "");
    tb_buf_free(&b);
    bl_gtids_free(g);
}

/* Opaque values inside a JSON document at the edges of their ranges: a
 * DECIMAL(65,30) (66 characters of text; it used to overflow a 48-byte buffer
 * and stop the stream as "bad opaque decimal") and a packed TIME of INT64_MIN
 * (its negation was undefined behaviour, which UBSan reports). */
Test(values, json_opaque_edges)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    const uint8_t dec65[] = {0x0f, 0xf6, 0x20, 0x41, 0x1e, 0x85, 0xf5, 0xe0, 0xff, 0x3b, 0x9a, 0xc9, 0xff, 0x3b,
                             0x9a, 0xc9, 0xff, 0x3b, 0x9a, 0xc9, 0xff, 0x3b, 0x9a, 0xc9, 0xff, 0x3b, 0x9a, 0xc9,
                             0xff, 0x3b, 0x9a, 0xc9, 0xff, 0x03, 0xe7};
    cr_assert_eq(bl_json_to_text(dec65, sizeof(dec65), &b, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(tb_buf_cstr(&b), "99999999999999999999999999999999999.999999999999999999999999999999");
    const uint8_t tmin[] = {0x0f, 11, 8, 0, 0, 0, 0, 0, 0, 0, 0x80};
    tb_buf_reset(&b);
    tb_code rc = bl_json_to_text(tmin, sizeof(tmin), &b, &err);
    cr_assert(rc == TB_OK || rc == TB_ERR_CORRUPT, "%d", rc);
    tb_buf_free(&b);
}
