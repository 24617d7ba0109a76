/*
 * Parity (integration): for a table with every type of DESIGN 5, each row's
 * JSON from the snapshot equals its JSON from the binlog, and so does the
 * table's schema record. Insert rows, capture them from the binlog, snapshot
 * the table, compare evt_json_row of each key (op and source are not
 * compared) and evt_json_schema_value of both descriptors.
 * A table without a primary key and key.columns.<db>.<table>: the same key
 * bytes and schema record from both paths, no null key in the stream, a key
 * change seen as one (old and new key).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "binlog.h"
#include "evt_json.h"
#include "json_oracle.h"
#include "snap.h"
#include "snap_test_util.h"

static const char *const ddl =
    "CREATE TABLE snaptest_par.every ("
    " id INT NOT NULL PRIMARY KEY,"
    " ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,"
    " mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT DEFAULT -7, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,"
    " d1 DECIMAL(10,2) DEFAULT 1.5, d2 DECIMAL(40,12), d3 DECIMAL(5,0) UNSIGNED,"
    " f FLOAT, dbl DOUBLE,"
    " c CHAR(5) DEFAULT 'it''s', vc VARCHAR(50) DEFAULT 'a\\\\b', txt TEXT, lat VARCHAR(20) CHARACTER SET latin1, clat CHAR(4) CHARACTER SET latin1,"
    " bn BINARY(4), vb VARBINARY(20), bl BLOB,"
    " dd DATE DEFAULT '2024-02-29', dtm DATETIME DEFAULT CURRENT_TIMESTAMP, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL,"
    " ts6 TIMESTAMP(6) NULL DEFAULT NULL, tm TIME, tm2 TIME(2), y YEAR,"
    " e ENUM('small','medium','large') DEFAULT 'medium', st SET('a','b','c','d'), b1 BIT(1), b12 BIT(12), b64 BIT(64),"
    " j JSON, g GEOMETRY, pt POINT"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";

static const char *const rows[] = {
    "(1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12.5, 3.141592653589, 42, 1.5, 0.1,"
    " 'ab', 'hello', 'some text', 'caf\xc3\xa9', 'd\xc3\xa9j',"
    " 0x01020304, 0x00ff00, 0xdeadbeef,"
    " '2024-01-31', '2024-01-31 10:11:12', '2024-01-31 10:11:12.5', '2024-01-31 10:11:12.123456',"
    " '2024-01-31 10:11:12', '2024-01-31 10:11:12.000001', '12:34:56', '01:02:03.04', 2024,"
    " 'medium', 'a,c', b'1', b'101010101010', b'1000000000000000000000000000000000000000000000000000000000000001',"
    " '{\"a\": [1, 2.50, true, null], \"b\": {\"c\": \"x\"}}', ST_GeomFromText('LINESTRING(0 0, 1 1, 2 3)'),"
    " ST_GeomFromText('POINT(1.5 -2.25)', 4326))",
    "(2, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,"
    " -9223372036854775808, 18446744073709551615, -99999999.99, -1234567890123456789012345678.123456789012, 99999,"
    " -3.4028234e38, 1.7976931348623157e308,"
    " '', '\xf0\x9f\x98\x80 emoji', '', '', '',"
    " 0x00000000, '', '',"
    " '0000-00-00', '0000-00-00 00:00:00', '1000-01-01 00:00:00.001', '9999-12-31 23:59:59.999999',"
    " '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', '838:59:59', '-838:59:59.99', 0,"
    " '', '', b'0', b'0', b'0',"
    " '[]', ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))'), ST_GeomFromText('POINT(0 0)'))",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01, 0.000000000001, 0, 1.401298e-45, 5e-324,"
    " 'x y', 'tab\there \"quoted\" back\\\\slash', REPEAT('long ', 2000), 'a\xc3\xb1o', 'x',"
    " 0x61000000, 0x00, REPEAT(0xab, 70000),"
    " '2020-02-29', '2020-02-29 23:59:59', '2020-02-29 23:59:59.999', '2020-02-29 00:00:00.000000',"
    " '2020-02-29 23:59:59', '2020-02-29 12:00:00.5', '-00:00:01', '100:00:00.5', 1901,"
    " 'large', 'a,b,c,d', b'1', b'111111111111', b'1111111111111111111111111111111111111111111111111111111111111111',"
    " '\"just a string\"', ST_GeomFromText('MULTIPOINT(1 1, 2 2)', 3857), ST_GeomFromText('POINT(-1 1e10)', 0))",
};

/* Snapshot of db.table with the extra settings: rows into *out_rows (may be NULL)
 * and the schema record of its descriptor into schema. */
static void snapshot_of(const char *db, const char *table, const char *const *extra, st_map *out_rows, tb_buf *schema)
{
    char inc[512];
    snprintf(inc, sizeof(inc), "tables.include=^%s\\.%s$", db, table);
    const char *all[8] = {inc};
    size_t n = 1;
    for (size_t i = 0; extra && extra[i] && n < 7; i++)
        all[n++] = extra[i];
    all[n] = NULL;
    cfg *c = st_cfg(NULL, all);
    snap *s = NULL;
    tb_error err;
    cr_assert_eq(snap_open(c, &s, &err), TB_OK, "snap_open: %s", err.msg);
    for (;;) {
        evt_event *ev = NULL;
        cr_assert_eq(snap_next(s, &ev, &err), TB_OK, "snap_next: %s", err.msg);
        if (!ev)
            break;
        if (schema->len == 0)
            cr_assert_eq(evt_json_schema_value(evt_event_table(ev), schema), TB_OK);
        if (out_rows)
            st_map_apply(out_rows, ev);
    }
    snap_close(s);
    cfg_free(c);
}

/* Both schema records, key by key (cr_log_error names the first difference). */
static void assert_same_schema(const char *from_log, const char *from_snap)
{
    if (strcmp(from_log, from_snap) == 0)
        return;

    size_t i = 0;
    while (from_log[i] && from_log[i] == from_snap[i])
        i++;
    size_t back = i > 80 ? i - 80 : 0;
    cr_assert_fail("schema records differ at byte %zu:\nbinlog:   ...%.300s\nsnapshot: ...%.300s", i, from_log + back,
                   from_snap + back);
}

/* Column col of a schema record has the default want (NULL: none), an expression or not (Jansson reads it). */
static void assert_default(const char *record, const char *col, const char *want, bool expr)
{
    json_error_t je;
    json_t *root = json_loads(record, 0, &je);
    cr_assert_not_null(root, "schema record is not JSON: %s", je.text);
    json_t *cols = json_object_get(root, "columns");
    json_t *found = NULL;
    for (size_t i = 0; i < json_array_size(cols); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(cols, i), "name")), col) == 0)
            found = json_array_get(cols, i);
    cr_assert_not_null(found, "no column %s", col);
    json_t *d = json_object_get(found, "default");
    if (!want)
        cr_assert(json_is_null(d), "column %s: default should be null", col);
    else
        cr_assert_str_eq(json_string_value(d), want, "column %s", col);
    cr_assert_eq(json_is_true(json_object_get(found, "default_expr")), expr, "column %s: default_expr", col);
    cr_assert(json_is_false(json_object_get(root, "dropped")));
    cr_assert(json_is_null(json_object_get(root, "renamed_from")));
    json_decref(root);
}

Test(snapshot_parity, every_type_snapshot_equals_binlog, .timeout = 300)
{
    MYSQL *my = st_connect();
    st_sql(my, "DROP DATABASE IF EXISTS snaptest_par");
    st_sql(my, "CREATE DATABASE snaptest_par");
    st_sql(my, "%s", ddl);
    tb_position p0, p1;
    tb_position_init(&p0);
    tb_position_init(&p1);
    st_current_position(my, &p0);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        st_sql(my, "INSERT INTO snaptest_par.every VALUES %s", rows[i]);
    st_current_position(my, &p1);

    /* from the binlog */
    const char *extra[] = {NULL};
    cfg *c = st_cfg(NULL, extra);
    st_reader *r = st_reader_open(c, &p0);
    st_map *from_log = st_map_new();
    size_t events = 0;
    tb_buf log_schema, snap_schema;
    tb_buf_init(&log_schema, 0);
    tb_buf_init(&snap_schema, 0);
    for (int spins = 0; !st_pos_ge(st_reader_position(r), &p1); spins++) {
        cr_assert_lt(spins, 600, "binlog did not reach the end position");
        evt_event *ev = st_reader_next(r, 100);
        if (!ev || strcmp(evt_table_name(evt_event_table(ev)), "every") != 0 ||
            strcmp(evt_table_db(evt_event_table(ev)), "snaptest_par") != 0)
            continue;
        st_map_apply(from_log, ev);
        if (log_schema.len == 0)
            cr_assert_eq(evt_json_schema_value(evt_event_table(ev), &log_schema), TB_OK);
        events++;
    }
    st_reader_close(r);
    cr_assert_eq(events, sizeof(rows) / sizeof(rows[0]));

    /* from the snapshot */
    st_map *from_snap = st_map_from_snapshot("snaptest_par", "every");
    cr_assert_eq(st_map_size(from_snap), sizeof(rows) / sizeof(rows[0]));
    cr_assert_eq(st_map_diff(from_log, from_snap, "binlog vs snapshot"), 0, "rows differ (see the log)");
    snapshot_of("snaptest_par", "every", NULL, NULL, &snap_schema);
    assert_same_schema(tb_buf_cstr(&log_schema), tb_buf_cstr(&snap_schema));
    /* the defaults as the DDL declares them (the binlog's record takes them from the catalog) */
    assert_default(tb_buf_cstr(&log_schema), "i", "-7", false);
    assert_default(tb_buf_cstr(&log_schema), "d1", "1.50", false);
    assert_default(tb_buf_cstr(&log_schema), "c", "it's", false);
    assert_default(tb_buf_cstr(&log_schema), "vc", "a\\b", false);
    assert_default(tb_buf_cstr(&log_schema), "dd", "2024-02-29", false);
    assert_default(tb_buf_cstr(&log_schema), "dtm", "current_timestamp()", true);
    assert_default(tb_buf_cstr(&log_schema), "e", "medium", false);
    assert_default(tb_buf_cstr(&log_schema), "ti", NULL, false);
    assert_default(tb_buf_cstr(&log_schema), "id", NULL, false);

    tb_buf_free(&log_schema);
    tb_buf_free(&snap_schema);
    st_map_free(from_log);
    st_map_free(from_snap);
    tb_position_free(&p0);
    tb_position_free(&p1);
    cfg_free(c);
    mysql_close(my);
}

/* A table without a primary key, keyed by key.columns: the binlog path keys
 * it as the snapshot does (it used to write null keys and "primary_key":[]). */
Test(snapshot_parity, key_columns_without_primary_key, .timeout = 120)
{
    MYSQL *my = st_connect();
    st_sql(my, "DROP DATABASE IF EXISTS snaptest_nopk");
    st_sql(my, "CREATE DATABASE snaptest_nopk");
    st_sql(my, "CREATE TABLE snaptest_nopk.t (v INT NOT NULL, code VARCHAR(10) NOT NULL, note VARCHAR(20))");
    tb_position p0, p1;
    tb_position_init(&p0);
    tb_position_init(&p1);
    st_current_position(my, &p0);
    st_sql(my, "INSERT INTO snaptest_nopk.t VALUES (1, 'a', 'x'), (2, 'b', NULL), (3, 'c', 'y')");
    st_sql(my, "UPDATE snaptest_nopk.t SET v = 10 WHERE code = 'a'");
    st_sql(my, "UPDATE snaptest_nopk.t SET code = 'bb' WHERE code = 'b'");
    st_sql(my, "DELETE FROM snaptest_nopk.t WHERE code = 'c'");
    st_current_position(my, &p1);

    const char *keys[] = {"key.columns.snaptest_nopk.t=code", NULL};
    cfg *c = st_cfg(NULL, keys);
    st_reader *r = st_reader_open(c, &p0);
    st_map *from_log = st_map_new();
    tb_buf log_schema, snap_schema, k, seen;
    tb_buf_init(&log_schema, 0);
    tb_buf_init(&snap_schema, 0);
    tb_buf_init(&k, 0);
    tb_buf_init(&seen, 0);
    tb_error err;
    for (int spins = 0; !st_pos_ge(st_reader_position(r), &p1); spins++) {
        cr_assert_lt(spins, 600, "binlog did not reach the end position");
        evt_event *ev = st_reader_next(r, 100);
        if (!ev || strcmp(evt_table_db(evt_event_table(ev)), "snaptest_nopk") != 0)
            continue;
        st_map_apply(from_log, ev);
        if (log_schema.len == 0)
            cr_assert_eq(evt_json_schema_value(evt_event_table(ev), &log_schema), TB_OK);
        /* every key of the stream, as op:before-key>after-key */
        evt_op op = evt_event_op(ev);
        tb_buf_putc(&seen, "rcud"[op == EVT_OP_CREATE ? 1 : op == EVT_OP_UPDATE ? 2 : op == EVT_OP_DELETE ? 3 : 0]);
        tb_buf_putc(&seen, ':');
        if (op != EVT_OP_CREATE) {
            tb_buf_reset(&k);
            cr_assert_eq(evt_json_key(ev, EVT_BEFORE, &k, &err), TB_OK, "%s", err.msg);
            tb_buf_append(&seen, k.data, k.len);
        }
        tb_buf_putc(&seen, '>');
        if (op != EVT_OP_DELETE) {
            tb_buf_reset(&k);
            cr_assert_eq(evt_json_key(ev, EVT_AFTER, &k, &err), TB_OK, "%s", err.msg);
            tb_buf_append(&seen, k.data, k.len);
        }
        tb_buf_putc(&seen, ' ');
    }
    st_reader_close(r);
    cr_assert_str_eq(tb_buf_cstr(&seen),
                     "c:>{\"code\":\"a\"} c:>{\"code\":\"b\"} c:>{\"code\":\"c\"} "
                     "u:{\"code\":\"a\"}>{\"code\":\"a\"} u:{\"code\":\"b\"}>{\"code\":\"bb\"} "
                     "d:{\"code\":\"c\"}> ");
    cr_assert(jo_expect_text_at(log_schema.data, log_schema.len, JO_PATH("primary_key"), "[\"code\"]"));

    st_map *from_snap = st_map_new();
    snapshot_of("snaptest_nopk", "t", keys, from_snap, &snap_schema);
    cr_assert_eq(st_map_size(from_snap), 2);
    cr_assert_eq(st_map_diff(from_log, from_snap, "binlog vs snapshot"), 0, "rows or keys differ (see the log)");
    assert_same_schema(tb_buf_cstr(&log_schema), tb_buf_cstr(&snap_schema));

    /* a key column the table lacks stops the stream as a configuration error */
    const char *bad[] = {"key.columns.snaptest_nopk.t=nope", NULL};
    cfg *cb = st_cfg(NULL, bad);
    binlog_reader *br = NULL;
    cr_assert_eq(binlog_open(cb, &p0, &br, &err), TB_OK, "%s", err.msg);
    tb_code rc = TB_OK;
    for (int spins = 0; rc == TB_OK && spins < 600; spins++) {
        evt_event *ev = NULL;
        rc = binlog_next(br, 100, &ev, &err);
    }
    cr_assert_eq(rc, TB_ERR_CONFIG, "%s", err.msg);
    cr_assert(strstr(err.msg, "key.columns.snaptest_nopk.t names column 'nope'"), "%s", err.msg);
    binlog_close(br);
    cfg_free(cb);

    st_map_free(from_log);
    st_map_free(from_snap);
    tb_buf_free(&log_schema);
    tb_buf_free(&snap_schema);
    tb_buf_free(&k);
    tb_buf_free(&seen);
    tb_position_free(&p0);
    tb_position_free(&p1);
    cfg_free(c);
    mysql_close(my);
}
