/* value.encoding=debezium (DESIGN 5a): each column type under each Debezium
 * option, against the values Debezium 3.6.1 wrote for the same source values
 * (tests/fixtures/debezium/MANIFEST.md, "Encoding per column"), compared as
 * JSON values with Jansson. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>

#include "test_util.h"
#include "cfg.h"

typedef struct col_spec {
    evt_type type;
    bool is_unsigned;
    uint32_t length, precision, scale;
} col_spec;

/* Set by a test for the dbz_after calls that follow: column v's source type (NULL: none), and
 * value.schemas=true, under which dbz_after returns v's Connect schema instead of its value. */
static const char *v_source_type;
static bool v_schema;
/* Column v's default as the source reports it (evt_table_set_default), NULL: none. */
static const char *v_default;
static bool v_default_expr;

/* The JSON text of column "v" of the after image of an event in Debezium's
 * encoding; snapshot: the event is a snapshot read. Returns a Jansson value. */
static json_t *dbz_after(col_spec cs, const evt_value *v, const evt_dbz_opts *d, bool snapshot, json_t **source)
{
    evt_table *t = evt_table_new("db", "t", 2);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_INT, "int", false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "v", cs.type, v_source_type, true, cs.is_unsigned), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 1, cs.length, cs.precision, cs.scale, NULL), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 1, v_default, v_default_expr), TB_OK);
    size_t pk = 0;
    cr_assert_eq(evt_table_set_pk(t, &pk, 1), TB_OK);
    evt_table_seal(t);
    evt_event *e = evt_event_new(snapshot ? EVT_OP_READ : EVT_OP_CREATE, t);
    evt_table_unref(t);
    evt_set_int(e, EVT_AFTER, 0, 7);
    evt_set_value(e, EVT_AFTER, 1, v);
    if (snapshot)
        evt_event_set_snapshot(e, EVT_SNAPSHOT_TRUE);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.mariadb = true;
    p.server_id = 1;
    p.pos = 1234;
    cr_assert_eq(tb_position_set_file(&p, "binlog.000001"), TB_OK);
    cr_assert_eq(tb_position_set_gtid(&p, "0-1-8"), TB_OK);
    evt_event_set_position(e, &p);
    tb_position_free(&p);
    evt_event_set_commit_ts_ms(e, 1700000000000);
    evt_codec_opts o = {.topic_prefix = "p", .name = "n", .now_ms = 1700000000123, .encoding = EVT_ENC_DEBEZIUM};
    if (d)
        o.dbz = *d;
    o.schemas = v_schema;
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    tb_code rc = evt_json_value(&o, e, &b, &err);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    json_error_t je;
    json_t *root = json_loads(tb_buf_cstr(&b), 0, &je);
    cr_assert_not_null(root, "%s: %s", je.text, tb_buf_cstr(&b));
    json_t *val = NULL;
    if (v_schema) { /* the "v" field of the after struct in the wrapper's schema */
        json_t *fields = json_object_get(json_object_get(root, "schema"), "fields"), *f, *g;
        size_t i, k;
        json_array_foreach(fields, i, f) if (strcmp(json_string_value(json_object_get(f, "field")), "after") == 0)
            json_array_foreach(json_object_get(f, "fields"), k, g) if (strcmp(json_string_value(json_object_get(g, "field")), "v") == 0)
                val = json_incref(g);
    } else {
        val = json_incref(json_object_get(json_object_get(root, "after"), "v"));
    }
    cr_assert_not_null(val, "%s", tb_buf_cstr(&b));
    if (source)
        *source = json_incref(root);
    json_decref(root);
    tb_buf_free(&b);
    evt_event_free(e);
    return val;
}

static void expect_opts(col_spec cs, const evt_value *v, const evt_dbz_opts *d, bool snapshot, const char *want)
{
    json_t *got = dbz_after(cs, v, d, snapshot, NULL);
    json_error_t je;
    json_t *w = json_loads(want, JSON_DECODE_ANY, &je);
    cr_assert_not_null(w, "bad expectation %s", want);
    char *gs = json_dumps(got, JSON_ENCODE_ANY);
    cr_expect(json_equal(got, w), "type %s: got %s want %s", evt_type_name(cs.type), gs, want);
    free(gs);
    json_decref(got);
    json_decref(w);
}

static void expect(col_spec cs, const evt_value *v, const char *want) { expect_opts(cs, v, NULL, false, want); }

static evt_value dec(const char *s) { return (evt_value){.kind = EVT_V_DECIMAL, .v.s = {s, strlen(s)}}; }
static evt_value ival(int64_t i) { return (evt_value){.kind = EVT_V_INT, .v.i = i}; }
static evt_value uval(uint64_t u) { return (evt_value){.kind = EVT_V_UINT, .v.u = u}; }

Test(dbz, integers_and_bigint_unsigned)
{
    evt_value v = ival(-128);
    expect((col_spec){EVT_T_TINYINT, false, 0, 0, 0}, &v, "-128");
    v = uval(4294967295u);
    expect((col_spec){EVT_T_INT, true, 0, 0, 0}, &v, "4294967295");
    v = ival(INT64_MIN);
    expect((col_spec){EVT_T_BIGINT, false, 0, 0, 0}, &v, "-9223372036854775808");
    /* long (default): wraps */
    col_spec bu = {EVT_T_BIGINT, true, 0, 20, 0};
    v = uval(UINT64_MAX);
    expect(bu, &v, "-1");
    v = uval(9223372036854775808ull);
    expect(bu, &v, "-9223372036854775808");
    v = uval(1);
    expect(bu, &v, "1");
    /* precise: Connect Decimal bytes, scale 0 */
    evt_dbz_opts d = {.bigint_precise = true};
    v = uval(UINT64_MAX);
    expect_opts(bu, &v, &d, false, "\"AP//////////\"");
    v = uval(0);
    expect_opts(bu, &v, &d, false, "\"AA==\"");
    v = uval(1);
    expect_opts(bu, &v, &d, false, "\"AQ==\"");
}

Test(dbz, decimal_modes)
{
    col_spec d10 = {EVT_T_DECIMAL, false, 0, 10, 2}, d65 = {EVT_T_DECIMAL, false, 0, 65, 30},
             d5 = {EVT_T_DECIMAL, false, 0, 5, 0};
    evt_value v = dec("-99999999.99");
    expect(d10, &v, "\"/av0HAE=\"");
    v = dec("99999999.99");
    expect(d10, &v, "\"AlQL4/8=\"");
    v = dec("-99999999999999999999999999999999999.999999999999999999999999999999");
    expect(d65, &v, "\"/wzp2OOAPG91dBC5sca6EIXayfYAAAAAAAAAAQ==\"");
    v = dec("99999999999999999999999999999999999.999999999999999999999999999999");
    expect(d65, &v, "\"APMWJxx/w5CKi+9GTjlF73olNgn//////////w==\"");
    v = dec("-99999");
    expect(d5, &v, "\"/nlh\"");
    v = dec("99999");
    expect(d5, &v, "\"AYaf\"");
    v = dec("0");
    expect(d5, &v, "\"AA==\"");
    v = dec("12.5"); /* fewer decimals than the scale: 1250 */
    expect(d10, &v, "\"BOI=\"");
    v = dec("-0.01"); /* -1 */
    expect(d10, &v, "\"/w==\"");
    v = dec("128"); /* 0x0080: a leading zero byte keeps it positive */
    expect(d5, &v, "\"AIA=\"");
    v = dec("-128"); /* 0x80 */
    expect(d5, &v, "\"gA==\"");
    evt_dbz_opts s = {.decimal = EVT_DBZ_DEC_STRING};
    v = dec("-99999999.99");
    expect_opts(d10, &v, &s, false, "\"-99999999.99\"");
    evt_dbz_opts dd = {.decimal = EVT_DBZ_DEC_DOUBLE};
    v = dec("12.50");
    expect_opts(d10, &v, &dd, false, "12.5");
}

Test(dbz, floats)
{
    evt_value v = {.kind = EVT_V_FLOAT, .v.f = -3.40282347e38f};
    col_spec f = {EVT_T_FLOAT, false, 0, 0, 0};
    expect(f, &v, "-3.4028235E38");
    expect_opts(f, &v, NULL, true, "-3.40282E38"); /* the snapshot reads the server's text */
    v.v.f = 3.14f;
    expect(f, &v, "3.14");
    evt_value dv = {.kind = EVT_V_DOUBLE, .v.d = 1.7976931348623157e308};
    expect((col_spec){EVT_T_DOUBLE, false, 0, 0, 0}, &dv, "1.7976931348623157E308");
    dv.v.d = 5e-324;
    expect((col_spec){EVT_T_DOUBLE, false, 0, 0, 0}, &dv, "4.9E-324");
}

static evt_value tv(evt_kind k, int y, int mo, int d, unsigned h, int mi, int s, unsigned us, int fsp, bool neg)
{
    evt_value v = {.kind = k};
    v.v.t = (evt_temporal){.year = y, .month = (uint8_t)mo, .day = (uint8_t)d, .hour = h, .minute = (uint8_t)mi,
                           .second = (uint8_t)s, .usec = us, .fsp = (uint8_t)fsp, .negative = neg};
    return v;
}

Test(dbz, temporal_adaptive)
{
    col_spec date = {EVT_T_DATE, false, 0, 0, 0};
    evt_value v = tv(EVT_V_DATE, 1000, 1, 1, 0, 0, 0, 0, 0, false);
    expect(date, &v, "-354285");
    v = tv(EVT_V_DATE, 9999, 12, 31, 0, 0, 0, 0, 0, false);
    expect(date, &v, "2932896");
    v = tv(EVT_V_DATE, 1969, 12, 31, 0, 0, 0, 0, 0, false);
    expect(date, &v, "-1");
    v = tv(EVT_V_DATE, 2024, 2, 29, 0, 0, 0, 0, 0, false);
    expect(date, &v, "19782");
    v = tv(EVT_V_DATE, 0, 0, 0, 0, 0, 0, 0, 0, false);
    expect(date, &v, "null");

    col_spec t0 = {EVT_T_TIME, false, 0, 0, 0}, t6 = {EVT_T_TIME, false, 0, 0, 6};
    v = tv(EVT_V_TIME, 0, 0, 0, 838, 59, 59, 0, 0, true);
    expect(t0, &v, "-3020399000000");
    v = tv(EVT_V_TIME, 0, 0, 0, 838, 59, 59, 999999, 6, false);
    expect(t6, &v, "3020399999999");
    v = tv(EVT_V_TIME, 0, 0, 0, 0, 0, 0, 1, 6, true);
    expect(t6, &v, "-1");

    col_spec dt0 = {EVT_T_DATETIME, false, 0, 0, 0}, dt3 = {EVT_T_DATETIME, false, 0, 0, 3},
             dt6 = {EVT_T_DATETIME, false, 0, 0, 6};
    v = tv(EVT_V_DATETIME, 1000, 1, 1, 0, 0, 0, 0, 0, false);
    expect(dt0, &v, "-30610224000000");
    v = tv(EVT_V_DATETIME, 9999, 12, 31, 23, 59, 59, 999000, 3, false);
    expect(dt3, &v, "253402300799999");
    v = tv(EVT_V_DATETIME, 9999, 12, 31, 23, 59, 59, 999999, 6, false);
    expect(dt6, &v, "253402300799999999");
    v = tv(EVT_V_DATETIME, 1969, 12, 31, 23, 59, 59, 999999, 6, false);
    expect(dt6, &v, "-1");

    col_spec ts0 = {EVT_T_TIMESTAMP, false, 0, 0, 0}, ts6 = {EVT_T_TIMESTAMP, false, 0, 0, 6};
    v = tv(EVT_V_TIMESTAMP, 1970, 1, 1, 0, 0, 1, 0, 0, false);
    expect(ts0, &v, "\"1970-01-01T00:00:01Z\"");
    v = tv(EVT_V_TIMESTAMP, 1970, 1, 1, 0, 0, 1, 0, 6, false);
    expect(ts6, &v, "\"1970-01-01T00:00:01.000000Z\"");
    expect_opts(ts6, &v, NULL, true, "\"1970-01-01T00:00:01Z\"");
    v = tv(EVT_V_TIMESTAMP, 1999, 12, 31, 23, 59, 59, 500000, 6, false);
    expect(ts6, &v, "\"1999-12-31T23:59:59.500000Z\"");
    expect_opts(ts6, &v, NULL, true, "\"1999-12-31T23:59:59.5Z\"");
    v = tv(EVT_V_TIMESTAMP, 2038, 1, 19, 3, 14, 7, 999999, 6, false);
    expect_opts(ts6, &v, NULL, true, "\"2038-01-19T03:14:07.999999Z\"");
}

Test(dbz, temporal_connect)
{
    evt_dbz_opts c = {.time_connect = true};
    col_spec t6 = {EVT_T_TIME, false, 0, 0, 6}, dt6 = {EVT_T_DATETIME, false, 0, 0, 6};
    evt_value v = tv(EVT_V_TIME, 0, 0, 0, 23, 59, 59, 999999, 6, false);
    expect_opts(t6, &v, &c, false, "86399999");
    v = tv(EVT_V_TIME, 0, 0, 0, 12, 34, 56, 789000, 3, false);
    expect_opts(t6, &v, &c, false, "45296789");
    v = tv(EVT_V_TIME, 0, 0, 0, 838, 59, 59, 0, 0, false); /* not a time of day */
    expect_opts(t6, &v, &c, false, "null");
    v = tv(EVT_V_TIME, 0, 0, 0, 0, 0, 1, 0, 0, true);
    expect_opts(t6, &v, &c, false, "null");
    v = tv(EVT_V_DATETIME, 9999, 12, 31, 23, 59, 59, 999999, 6, false);
    expect_opts(dt6, &v, &c, false, "253402300799999");
    v = tv(EVT_V_DATETIME, 1969, 12, 31, 23, 59, 59, 999999, 6, false);
    expect_opts(dt6, &v, &c, false, "-1");
}

Test(dbz, binary_modes_bits_sets)
{
    col_spec bin = {EVT_T_VARBINARY, false, 16, 0, 0};
    static const unsigned char bytes[] = {0x00, 0xff, 0x10, 0xfb, 0xef};
    evt_value v = {.kind = EVT_V_BYTES, .v.s = {(const char *)bytes, sizeof bytes}};
    expect(bin, &v, "\"AP8Q++8=\"");
    evt_dbz_opts b64 = {.binary = EVT_DBZ_BIN_BASE64}, url = {.binary = EVT_DBZ_BIN_BASE64_URL},
                 hex = {.binary = EVT_DBZ_BIN_HEX};
    expect_opts(bin, &v, &b64, false, "\"AP8Q++8=\"");
    expect_opts(bin, &v, &url, false, "\"AP8Q--8=\"");
    expect_opts(bin, &v, &hex, false, "\"00ff10fbef\"");
    evt_value empty = {.kind = EVT_V_BYTES, .v.s = {"", 0}};
    expect_opts(bin, &empty, &hex, false, "\"\"");

    evt_value b = {.kind = EVT_V_BOOL, .v.b = true};
    expect((col_spec){EVT_T_BIT, false, 1, 0, 0}, &b, "true");
    evt_value bits = uval(0x7f);
    expect((col_spec){EVT_T_BIT, false, 7, 0, 0}, &bits, "\"fw==\"");
    bits = uval(UINT64_MAX);
    expect((col_spec){EVT_T_BIT, false, 64, 0, 0}, &bits, "\"//////////8=\"");
    bits = uval(0x8000000000000001ull);
    expect((col_spec){EVT_T_BIT, false, 64, 0, 0}, &bits, "\"AQAAAAAAAIA=\"");
    expect_opts((col_spec){EVT_T_BIT, false, 64, 0, 0}, &bits, &hex, false, "\"AQAAAAAAAIA=\""); /* Bits, not binary */

    const char *items[] = {"a", "c"};
    size_t lens[] = {1, 1};
    evt_value set = {.kind = EVT_V_SET, .v.set = {items, lens, 2}};
    expect((col_spec){EVT_T_SET, false, 0, 0, 0}, &set, "\"a,c\"");
    evt_value none = {.kind = EVT_V_SET, .v.set = {items, lens, 0}};
    expect((col_spec){EVT_T_SET, false, 0, 0, 0}, &none, "\"\"");
    const char *doc = "{\"a\": [1, 2.5]}";
    evt_value js = {.kind = EVT_V_JSON, .v.s = {doc, strlen(doc)}};
    expect((col_spec){EVT_T_JSON, false, 0, 0, 0}, &js, "\"{\\\"a\\\": [1, 2.5]}\"");
}

Test(dbz, envelope_and_source)
{
    evt_value v = ival(1);
    json_t *root = NULL;
    json_t *val = dbz_after((col_spec){EVT_T_INT, false, 0, 0, 0}, &v, NULL, false, &root);
    json_decref(val);
    json_error_t je;
    json_t *want = json_loads("{\"before\":null,\"after\":{\"id\":7,\"v\":1},"
                              "\"source\":{\"version\":\"0.1.0\",\"connector\":\"mariadb\",\"name\":\"n\","
                              "\"ts_ms\":1700000000000,\"snapshot\":\"false\",\"db\":\"db\",\"sequence\":null,"
                              "\"ts_us\":1700000000000000,\"ts_ns\":1700000000000000000,\"table\":\"t\","
                              "\"server_id\":1,\"gtid\":\"0-1-8\",\"file\":\"binlog.000001\",\"pos\":1234,"
                              "\"row\":0,\"thread\":null,\"query\":null},"
                              "\"transaction\":null,\"op\":\"c\",\"ts_ms\":1700000000123,"
                              "\"ts_us\":1700000000123000,\"ts_ns\":1700000000123000000}",
                              0, &je);
    cr_assert_not_null(want, "%s", je.text);
    char *gs = json_dumps(root, JSON_COMPACT);
    cr_expect(json_equal(root, want), "got %s", gs);
    free(gs);
    json_decref(root);
    json_decref(want);
}

/* GEOMETRY as Debezium's io.debezium.data.geometry.Geometry {wkb, srid}, SRID 0 as null
 * (BinlogGeometry.fromBytes); a POINT column as io.debezium.data.geometry.Point, whose x and y
 * come from the WKB (Point.createValue), in its schema before wkb (now optional) and srid. */
Test(dbz, geometry_and_point)
{
    static const uint8_t pt[21] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /* x = 1.5 */
                                   0, 0, 0, 0, 0, 0, 0x04, 0xc0};              /* y = -2.5 */
    evt_value v = {.kind = EVT_V_GEOMETRY, .v.geo = {.srid = 4326, .wkb = pt, .len = sizeof pt}};
    col_spec geo = {EVT_T_GEOMETRY, false, 0, 0, 0};
    v_source_type = "geometry";
    expect(geo, &v, "{\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAATA\",\"srid\":4326}");
    v_source_type = "point";
    expect(geo, &v, "{\"x\":1.5,\"y\":-2.5,\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAATA\",\"srid\":4326}");
    v.v.geo.srid = 0;
    expect(geo, &v, "{\"x\":1.5,\"y\":-2.5,\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAATA\",\"srid\":null}");
    v_source_type = "geometry";
    expect(geo, &v, "{\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAATA\",\"srid\":null}");
    static const uint8_t be[21] = {0, 0, 0, 0, 1, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, /* big-endian WKB */
                                   0xc0, 0x04, 0, 0, 0, 0, 0, 0};
    v.v.geo.wkb = be;
    v_source_type = "POINT";
    expect(geo, &v, "{\"x\":1.5,\"y\":-2.5,\"wkb\":\"AAAAAAE/+AAAAAAAAMAEAAAAAAAA\",\"srid\":null}");

    v_schema = true;
    expect(geo, &v,
           "{\"type\":\"struct\",\"optional\":true,\"name\":\"io.debezium.data.geometry.Point\",\"version\":1,"
           "\"field\":\"v\",\"doc\":\"Geometry (POINT)\",\"fields\":[{\"type\":\"double\",\"optional\":false,"
           "\"field\":\"x\"},"
           "{\"type\":\"double\",\"optional\":false,\"field\":\"y\"},{\"type\":\"bytes\",\"optional\":true,"
           "\"field\":\"wkb\"},{\"type\":\"int32\",\"optional\":true,\"field\":\"srid\"}]}");
    v_source_type = "geometry";
    expect(geo, &v,
           "{\"type\":\"struct\",\"optional\":true,\"name\":\"io.debezium.data.geometry.Geometry\",\"version\":1,"
           "\"field\":\"v\",\"fields\":[{\"type\":\"bytes\",\"optional\":false,\"field\":\"wkb\"},"
           "{\"type\":\"int32\",\"optional\":true,\"field\":\"srid\"}]}");
    v_schema = false;
    v_source_type = NULL;
}

/* A NULL in a column with a default: the default (Kafka Connect's JsonConverter,
 * replace.null.with.default=true), in the value and as the schema's "default"; the
 * values are those Debezium 3.6.1 wrote (tests/fixtures/debezium/extra, table dflt). */
static void expect_null(col_spec cs, const char *dflt, bool expr, const evt_dbz_opts *d, const char *want,
                        const char *want_schema_default)
{
    evt_value null = {.kind = EVT_V_NULL};
    v_default = dflt;
    v_default_expr = expr;
    expect_opts(cs, &null, d, false, want);
    evt_dbz_opts keep = d ? *d : (evt_dbz_opts){0};
    keep.keep_null = true; /* debezium.replace.null.with.default=false */
    expect_opts(cs, &null, &keep, false, "null");
    v_schema = true;
    json_t *f = dbz_after(cs, &null, d, false, NULL);
    json_t *got = json_object_get(f, "default");
    if (!want_schema_default)
        cr_expect_null(got, "type %s default %s: the schema has a default", evt_type_name(cs.type), dflt);
    else {
        json_t *w = json_loads(want_schema_default, JSON_DECODE_ANY, NULL);
        cr_expect(got && json_equal(got, w), "type %s default %s: schema default differs", evt_type_name(cs.type),
                  dflt);
        json_decref(w);
    }
    json_decref(f);
    v_schema = false;
    v_default = NULL;
    v_default_expr = false;
}

Test(dbz, null_with_default)
{
    evt_dbz_opts precise = {.bigint_precise = true, .decimal = EVT_DBZ_DEC_STRING};
    evt_dbz_opts connect = {.time_connect = true};
    expect_null((col_spec){EVT_T_INT, false, 0, 0, 0}, "42", false, NULL, "42", "42");
    expect_null((col_spec){EVT_T_SMALLINT, false, 0, 0, 0}, "-7", false, NULL, "-7", "-7");
    /* BIGINT UNSIGNED: Debezium's long mode caps a default (a value wraps to -1) */
    expect_null((col_spec){EVT_T_BIGINT, true, 0, 0, 0}, "18446744073709551615", false, NULL,
                "9223372036854775807", "9223372036854775807");
    expect_null((col_spec){EVT_T_BIGINT, true, 0, 0, 0}, "18446744073709551615", false, &precise,
                "\"AP//////////\"", "\"AP//////////\"");
    expect_null((col_spec){EVT_T_DECIMAL, false, 0, 6, 2}, "1.50", false, NULL, "\"AJY=\"", "\"AJY=\"");
    expect_null((col_spec){EVT_T_DECIMAL, false, 0, 6, 2}, "1.5", false, &precise, "\"1.50\"", "\"1.50\"");
    expect_null((col_spec){EVT_T_FLOAT, false, 0, 0, 0}, "1.5", false, NULL, "1.5", "1.5");
    expect_null((col_spec){EVT_T_DOUBLE, false, 0, 0, 0}, "-2.25", false, NULL, "-2.25", "-2.25");
    expect_null((col_spec){EVT_T_VARCHAR, false, 8, 0, 0}, "dflt", false, NULL, "\"dflt\"", "\"dflt\"");
    expect_null((col_spec){EVT_T_SET, false, 0, 0, 0}, "x,z", false, NULL, "\"x,z\"", "\"x,z\"");
    expect_null((col_spec){EVT_T_DATE, false, 0, 0, 0}, "2020-02-29", false, NULL, "18321", "18321");
    expect_null((col_spec){EVT_T_TIME, false, 0, 0, 3}, "-01:02:03.250", false, NULL, "-3723250000", "-3723250000");
    /* connect: a TIME that is no time of day has no default (Debezium fails to convert it) */
    expect_null((col_spec){EVT_T_TIME, false, 0, 0, 3}, "-01:02:03.250", false, &connect, "null", NULL);
    expect_null((col_spec){EVT_T_DATETIME, false, 0, 0, 3}, "2001-02-03 04:05:06.789", false, NULL, "981173106789",
                "981173106789");
    expect_null((col_spec){EVT_T_DATETIME, false, 0, 0, 6}, "2001-02-03 04:05:06.123456", false, NULL,
                "981173106123456", "981173106123456");
    expect_null((col_spec){EVT_T_DATETIME, false, 0, 0, 6}, "2001-02-03 04:05:06.123456", false, &connect,
                "981173106123", "981173106123");
    expect_null((col_spec){EVT_T_TIMESTAMP, false, 0, 0, 0}, "2001-02-03 04:05:06", false, NULL,
                "\"2001-02-03T04:05:06Z\"", "\"2001-02-03T04:05:06Z\"");
    expect_null((col_spec){EVT_T_YEAR, false, 0, 0, 0}, "2024", false, NULL, "2024", "2024");
    expect_null((col_spec){EVT_T_BIT, false, 1, 0, 0}, "b'1'", true, NULL, "true", "true");
    expect_null((col_spec){EVT_T_BIT, false, 10, 0, 0}, "b'1000000001'", true, NULL, "\"AQI=\"", "\"AQI=\"");
    expect_null((col_spec){EVT_T_VARBINARY, false, 4, 0, 0}, "ab", false, NULL, "\"YWI=\"", "\"YWI=\"");
    /* CURRENT_TIMESTAMP: Debezium's DDL parser reads it as 1970-01-01 00:00:00 */
    expect_null((col_spec){EVT_T_DATETIME, false, 0, 0, 0}, "current_timestamp()", true, NULL, "0", "0");
    /* none: another expression, CURRENT_TIMESTAMP of a nullable TIMESTAMP, a zero date, a text
     * that is no value of the type */
    expect_null((col_spec){EVT_T_CHAR, false, 36, 0, 0}, "uuid()", true, NULL, "null", NULL);
    expect_null((col_spec){EVT_T_TIMESTAMP, false, 0, 0, 0}, "current_timestamp()", true, NULL, "null", NULL);
    expect_null((col_spec){EVT_T_DATE, false, 0, 0, 0}, "0000-00-00", false, NULL, "null", NULL);
    expect_null((col_spec){EVT_T_INT, false, 0, 0, 0}, "4x", false, NULL, "null", NULL);
    expect_null((col_spec){EVT_T_DATETIME, false, 0, 0, 0}, "2001-13-01 00:00:00", false, NULL, "null", NULL);
    /* a value is never replaced */
    v_default = "42";
    evt_value one = ival(1);
    expect((col_spec){EVT_T_INT, false, 0, 0, 0}, &one, "1");
    v_default = NULL;
}

/* FLOAT(M,D) is a double in Debezium's schema: the float's value widened; its snapshot
 * reads the server's text with D decimals (tests/fixtures/debezium/extra, table vals). */
Test(dbz, float_m_d)
{
    evt_value f = {.kind = EVT_V_FLOAT, .v.f = -9999.999f};
    col_spec fl = {EVT_T_FLOAT, false, 0, 0, 0};
    v_source_type = "float(7,3)";
    expect(fl, &f, "-9999.9990234375");
    expect_opts(fl, &f, NULL, true, "-9999.9990234375");
    f.v.f = 123.45f;
    v_source_type = "float(5,2)";
    expect(fl, &f, "123.44999694824219");
    v_schema = true;
    expect(fl, &f, "{\"type\":\"double\",\"optional\":true,\"field\":\"v\"}");
    v_source_type = "float";
    expect(fl, &f, "{\"type\":\"float\",\"optional\":true,\"field\":\"v\"}");
    v_schema = false;
    expect(fl, &f, "123.45");
    v_source_type = NULL;
}

/* MariaDB's UUID: a string named io.debezium.data.Uuid. */
Test(dbz, uuid_schema)
{
    evt_value u = {.kind = EVT_V_STRING, .v.s = {"123e4567-e89b-12d3-a456-426614174000", 36}};
    v_source_type = "uuid";
    expect((col_spec){EVT_T_CHAR, false, 0, 0, 0}, &u, "\"123e4567-e89b-12d3-a456-426614174000\"");
    v_schema = true;
    expect((col_spec){EVT_T_CHAR, false, 0, 0, 0}, &u,
           "{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.data.Uuid\",\"version\":1,\"field\":\"v\"}");
    v_schema = false;
    v_source_type = NULL;
}

/* The debezium.* keys reach the codec options (evt_codec_opts_encoding); the
 * null replacement is on unless debezium.replace.null.with.default=false. */
Test(dbz, options_from_config)
{
    cfg *c = cfg_new();
    cr_assert_not_null(c);
    tb_error err;
    evt_codec_opts o = {0};
    evt_codec_opts_encoding(&o, c);
    cr_expect_eq(o.encoding, EVT_ENC_TRIBUTARY);
    cr_expect(!o.dbz.keep_null, "replace.null.with.default is JsonConverter's default");
    cr_assert_eq(cfg_set(c, "value.encoding", "debezium", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "debezium.replace.null.with.default", "false", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "debezium.time.precision.mode", "connect", "t", &err), TB_OK);
    evt_codec_opts_encoding(&o, c);
    cr_expect_eq(o.encoding, EVT_ENC_DEBEZIUM);
    cr_expect(o.dbz.keep_null);
    cr_expect(o.dbz.time_connect);
    cfg_free(c);
}
