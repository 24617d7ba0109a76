/*
 * Parity (integration): for a table with every type of DESIGN 5, each row's
 * JSON from the snapshot equals its JSON from the binlog.
 * Insert rows, capture them from the binlog, snapshot the table, compare
 * evt_json_row of each key (op and source are not compared).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <string.h>

#include "binlog.h"
#include "snap.h"
#include "snap_test_util.h"

static const char *const ddl =
    "CREATE TABLE snaptest_par.every ("
    " id INT NOT NULL PRIMARY KEY,"
    " ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,"
    " mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,"
    " d1 DECIMAL(10,2), d2 DECIMAL(40,12), d3 DECIMAL(5,0) UNSIGNED,"
    " f FLOAT, dbl DOUBLE,"
    " c CHAR(5), vc VARCHAR(50), txt TEXT, lat VARCHAR(20) CHARACTER SET latin1, clat CHAR(4) CHARACTER SET latin1,"
    " bn BINARY(4), vb VARBINARY(20), bl BLOB,"
    " dd DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL,"
    " ts6 TIMESTAMP(6) NULL DEFAULT NULL, tm TIME, tm2 TIME(2), y YEAR,"
    " e ENUM('small','medium','large'), st SET('a','b','c','d'), b1 BIT(1), b12 BIT(12), b64 BIT(64),"
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
    for (int spins = 0; !st_pos_ge(st_reader_position(r), &p1); spins++) {
        cr_assert_lt(spins, 600, "binlog did not reach the end position");
        evt_event *ev = st_reader_next(r, 100);
        if (!ev || strcmp(evt_table_name(evt_event_table(ev)), "every") != 0 ||
            strcmp(evt_table_db(evt_event_table(ev)), "snaptest_par") != 0)
            continue;
        st_map_apply(from_log, ev);
        events++;
    }
    st_reader_close(r);
    cr_assert_eq(events, sizeof(rows) / sizeof(rows[0]));

    /* from the snapshot */
    st_map *from_snap = st_map_from_snapshot("snaptest_par", "every");
    cr_assert_eq(st_map_size(from_snap), sizeof(rows) / sizeof(rows[0]));
    cr_assert_eq(st_map_diff(from_log, from_snap, "binlog vs snapshot"), 0, "rows differ (see the log)");

    st_map_free(from_log);
    st_map_free(from_snap);
    tb_position_free(&p0);
    tb_position_free(&p1);
    cfg_free(c);
    mysql_close(my);
}

/* snap_offset_available (snapshot.mode=when_needed) against the server's binlogs. */
Test(snapshot_parity, offset_available, .timeout = 60)
{
    MYSQL *my = st_connect();
    cfg *c = st_cfg(NULL, NULL);
    tb_position p;
    tb_position_init(&p);
    st_current_position(my, &p);
    tb_error err;
    bool ok = false;
    cr_assert_eq(snap_offset_available(c, &p, &ok, &err), TB_OK, "%s", err.msg);
    cr_assert(ok, "the current position is on the server");
    p.pos += 1u << 30;
    cr_assert_eq(snap_offset_available(c, &p, &ok, &err), TB_OK, "%s", err.msg);
    cr_assert_not(ok, "an offset past the end of the file");
    p.pos = 4;
    tb_position_set_file(&p, "no-such-binlog.000001");
    cr_assert_eq(snap_offset_available(c, &p, &ok, &err), TB_OK, "%s", err.msg);
    cr_assert_not(ok, "a file that is not on the server");
    tb_position_free(&p);
    cfg_free(c);
    mysql_close(my);
}
