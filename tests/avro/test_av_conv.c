/*
 * av_conv against avro-c: the Avro schemas derived from the codec's Connect
 * schemas parse in avro-c, and avro-c reads every body av_encode writes back
 * to the values of the event (compared with Jansson over avro-c's JSON form),
 * consuming exactly the bytes written.
 */
#include <criterion/criterion.h>
#include <avro.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "av_conv.h"
#include "av_dec.h"
#include "av_msg.h"
#include "evt.h"
#include "evt_json.h"

static void mysql_meta(evt_event *e)
{
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.server_id = 1;
    p.file = "binlog.000001";
    p.pos = 4;
    evt_event_set_position(e, &p);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    evt_event_set_commit_ts_ms(e, 1700000000000);
}

/* The wrapper's schema and payload, parsed (caller frees *root). */
static void split(const char *text, size_t len, evt_jv **root, const evt_jv **schema, const evt_jv **payload)
{
    tb_error err;
    cr_assert_eq(evt_jv_parse(text, len, root, &err), TB_OK, "%s", err.msg);
    *schema = evt_jv_get(*root, "schema");
    *payload = evt_jv_get(*root, "payload");
    cr_assert_not_null(*schema);
    cr_assert_not_null(*payload);
}

/* Encode payload under schema, read it back with avro-c; its JSON form (Jansson; caller decrefs). */
static json_t *round_trip(const evt_jv *cs, const evt_jv *payload, char **avsc_out)
{
    tb_buf avsc, bin;
    tb_buf_init(&avsc, 0);
    tb_buf_init(&bin, 0);
    tb_error err;
    cr_assert_eq(av_schema_from_connect(cs, &avsc, &err), TB_OK, "%s", err.msg);
    avro_schema_t s = NULL;
    cr_assert_eq(avro_schema_from_json_length(avsc.data, avsc.len, &s), 0, "avro-c refuses %s: %s", avsc.data,
                 avro_strerror());
    cr_assert_eq(av_encode(cs, payload, &bin, &err), TB_OK, "%s", err.msg);
    avro_value_iface_t *iface = avro_generic_class_from_schema(s);
    avro_value_t v;
    cr_assert_eq(avro_generic_value_new(iface, &v), 0);
    avro_reader_t rd = avro_reader_memory(bin.data, (int64_t)bin.len);
    cr_assert_eq(avro_value_read(rd, &v), 0, "avro-c cannot read the body: %s", avro_strerror());
    char extra;
    cr_assert_neq(avro_read(rd, &extra, 1), 0, "bytes left after the value");
    char *js = NULL;
    cr_assert_eq(avro_value_to_json(&v, 1, &js), 0);
    json_error_t je;
    json_t *j = json_loads(js, JSON_ALLOW_NUL, &je);
    cr_assert_not_null(j, "%s: %s", js, je.text);
    free(js);
    avro_reader_free(rd);
    avro_value_decref(&v);
    avro_value_iface_decref(iface);
    avro_schema_decref(s);
    if (avsc_out)
        *avsc_out = tb_buf_detach(&avsc, NULL);
    tb_buf_free(&avsc);
    tb_buf_free(&bin);
    return j;
}

/* avro-c's JSON of a union branch: {"type": value}; of a record: the object. */
static json_t *branch(json_t *u, const char *type)
{
    json_t *b = json_object_get(u, type);
    cr_assert_not_null(b, "no %s branch in %s", type, json_dumps(u, 0));
    return b;
}

/* avro-c writes bytes as a JSON string of code points U+0000..U+00FF, one per byte. */
static void expect_bytes(json_t *s, const char *want, size_t n)
{
    const unsigned char *p = (const unsigned char *)json_string_value(s);
    size_t len = json_string_length(s), k = 0;
    cr_assert_not_null(p);
    for (size_t i = 0; i < len; k++) {
        unsigned cp = p[i] < 0x80 ? p[i++] : (unsigned)(((p[i] & 0x1f) << 6) | (p[i + 1] & 0x3f));
        if (cp > 0x7f)
            i += 2;
        cr_assert_lt(k, n, "more bytes than expected");
        cr_expect_eq(cp, (unsigned char)want[k], "byte %zu", k);
    }
    cr_expect_eq(k, n);
}

static evt_table *every_type(void)
{
    static const struct {
        const char *name;
        evt_type t;
        bool u;
    } cols[] = {
        {"id", EVT_T_INT, false},       {"ti", EVT_T_TINYINT, false}, {"bu", EVT_T_BIGINT, true},
        {"d", EVT_T_DECIMAL, false},    {"f", EVT_T_FLOAT, false},    {"db", EVT_T_DOUBLE, false},
        {"s", EVT_T_VARCHAR, false},    {"b", EVT_T_BLOB, false},     {"dt", EVT_T_DATE, false},
        {"tm", EVT_T_TIME, false},      {"st", EVT_T_SET, false},     {"bit1", EVT_T_BIT, false},
        {"g", EVT_T_GEOMETRY, false},   {"n", EVT_T_INT, false},      {"odd-name", EVT_T_INT, false},
    };
    size_t n = sizeof cols / sizeof cols[0];
    evt_table *t = evt_table_new("shop", "every", n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(evt_table_set_column(t, i, cols[i].name, cols[i].t, NULL, i != 0, cols[i].u), TB_OK);
    evt_table_set_column_details(t, 3, 0, 65, 30, NULL);
    evt_table_set_column_details(t, 9, 0, 0, 0, NULL);
    evt_table_set_column_details(t, 11, 1, 0, 0, NULL);
    const char *labels[] = {"x", "y", "z"};
    evt_table_set_labels(t, 10, labels, 3);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);
    return t;
}

static evt_event *every_event(evt_table *t)
{
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    mysql_meta(e);
    evt_set_int(e, EVT_AFTER, 0, 42);
    evt_set_int(e, EVT_AFTER, 1, -128);
    evt_set_uint(e, EVT_AFTER, 2, UINT64_MAX);
    const char *dec = "-12345678901234567890123456789012345.123456789012345678901234567890";
    evt_set_decimal(e, EVT_AFTER, 3, dec, strlen(dec));
    evt_set_float(e, EVT_AFTER, 4, 1.5f);
    evt_set_double(e, EVT_AFTER, 5, -2.25);
    evt_set_string(e, EVT_AFTER, 6, "h\xc3\xa9llo", 6);
    evt_set_bytes(e, EVT_AFTER, 7, "\x01\xff\x10", 3);
    evt_temporal d = {.year = 2024, .month = 1, .day = 31};
    evt_set_temporal(e, EVT_AFTER, 8, EVT_V_DATE, &d);
    evt_temporal tm = {.hour = 838, .minute = 59, .second = 59, .negative = true};
    evt_set_temporal(e, EVT_AFTER, 9, EVT_V_TIME, &tm);
    const char *l[] = {"x", "z"};
    evt_set_set(e, EVT_AFTER, 10, l, NULL, 2);
    evt_set_bool(e, EVT_AFTER, 11, true);
    evt_set_geometry(e, EVT_AFTER, 12, 4326, "\x01\x02", 2);
    evt_set_null(e, EVT_AFTER, 13);
    evt_set_int(e, EVT_AFTER, 14, 7);
    cr_assert_null(evt_event_error(e));
    return e;
}

static json_t *value_round_trip(const evt_codec_opts *o, const evt_event *e, char **avsc)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    evt_codec_opts w = *o;
    w.schemas = true;
    cr_assert_eq(evt_json_value(&w, e, &b, &err), TB_OK, "%s", err.msg);
    evt_jv *root;
    const evt_jv *cs, *p;
    split(b.data, b.len, &root, &cs, &p);
    json_t *j = round_trip(cs, p, avsc);
    evt_jv_free(root);
    tb_buf_free(&b);
    return j;
}

/* tributary's own encoding: the lossless mapping (BIGINT UNSIGNED as decimal(20,0),
 * DECIMAL(65,30) and TIME beyond 24 h as their text, SET as an array). */
Test(av_conv, tributary_encoding_every_type)
{
    evt_table *t = every_type();
    evt_event *e = every_event(t);
    evt_codec_opts o = {.topic_prefix = "tb", .now_ms = 1700000000001};
    char *avsc = NULL;
    json_t *j = value_round_trip(&o, e, &avsc);
    json_t *after = branch(json_object_get(j, "after"), "Value");
    cr_expect_eq(json_integer_value(json_object_get(after, "id")), 42);
    cr_expect_eq(json_integer_value(branch(json_object_get(after, "ti"), "int")), -128);
    /* 2^64-1 as decimal(20,0) bytes: 00 ff ff ff ff ff ff ff ff (sign byte first) */
    /* avro-c's JSON form cuts bytes at a 0 byte: the sign byte of 2^64-1 (00 ff..ff) is checked
     * in decimal_numbers, here only its branch */
    cr_expect(json_is_string(branch(json_object_get(after, "bu"), "bytes")));
    expect_bytes(branch(json_object_get(after, "b"), "bytes"), "\x01\xff\x10", 3);
    cr_expect_str_eq(json_string_value(branch(json_object_get(after, "d"), "string")),
                     "-12345678901234567890123456789012345.123456789012345678901234567890");
    cr_expect_eq(json_real_value(branch(json_object_get(after, "f"), "float")), 1.5);
    cr_expect_eq(json_real_value(branch(json_object_get(after, "db"), "double")), -2.25);
    cr_expect_str_eq(json_string_value(branch(json_object_get(after, "s"), "string")), "h\xc3\xa9llo");
    cr_expect_str_eq(json_string_value(branch(json_object_get(after, "dt"), "string")), "2024-01-31");
    cr_expect_str_eq(json_string_value(branch(json_object_get(after, "tm"), "string")), "-838:59:59");
    json_t *set = branch(json_object_get(after, "st"), "array");
    cr_expect_eq(json_array_size(set), 2);
    cr_expect_str_eq(json_string_value(json_array_get(set, 1)), "z");
    cr_expect(json_is_true(branch(json_object_get(after, "bit1"), "boolean")));
    json_t *g = branch(json_object_get(after, "g"), "Geometry");
    cr_expect_eq(json_integer_value(branch(json_object_get(g, "srid"), "int")), 4326);
    cr_expect(json_is_null(json_object_get(after, "n")));
    cr_expect_eq(json_integer_value(branch(json_object_get(after, "odd_name"), "int")), 7, "name made Avro-safe");
    cr_expect(json_is_null(json_object_get(j, "before")));
    cr_expect_str_eq(json_string_value(json_object_get(j, "op")), "c");
    json_t *src = json_object_get(j, "source");
    cr_expect_str_eq(json_string_value(json_object_get(src, "db")), "shop");
    cr_expect_str_eq(json_string_value(json_object_get(src, "file")), "binlog.000001");
    cr_expect_eq(json_integer_value(branch(json_object_get(j, "ts_ms"), "long")), 1700000000001);
    /* the schema: record names and Connect annotations */
    json_t *s = json_loads(avsc, 0, NULL);
    cr_assert_not_null(s);
    cr_expect_str_eq(json_string_value(json_object_get(s, "name")), "Envelope");
    cr_expect_str_eq(json_string_value(json_object_get(s, "namespace")), "tb.shop.every");
    json_t *before = json_array_get(json_object_get(s, "fields"), 0);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(before, "type"), 0)), "null");
    cr_expect(json_is_null(json_object_get(before, "default")));
    json_t *after_f = json_array_get(json_object_get(s, "fields"), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(after_f, "type"), 1)), "tb.shop.every.Value",
                     "the second use of Value refers to it by name");
    free(avsc);
    json_decref(s);
    json_decref(j);
    evt_event_free(e);
    evt_table_unref(t);
}

/* value.encoding=debezium: Debezium's logical types (Decimal bytes, Date days,
 * MicroTime, EnumSet text), record names and the Source record. */
Test(av_conv, debezium_encoding_every_type)
{
    evt_table *t = every_type();
    evt_event *e = every_event(t);
    evt_codec_opts o = {.topic_prefix = "tb", .encoding = EVT_ENC_DEBEZIUM, .now_ms = 1700000000001};
    char *avsc = NULL;
    json_t *j = value_round_trip(&o, e, &avsc);
    json_t *after = branch(json_object_get(j, "after"), "Value");
    cr_expect_eq(json_integer_value(branch(json_object_get(after, "dt"), "int")), 19753, "days since 1970");
    cr_expect_eq(json_integer_value(branch(json_object_get(after, "tm"), "long")), -3020399000000LL);
    cr_expect_str_eq(json_string_value(branch(json_object_get(after, "st"), "string")), "x,z");
    cr_expect_eq(json_integer_value(branch(json_object_get(after, "bu"), "long")), -1, "long mode wraps");
    json_t *s = json_loads(avsc, 0, NULL);
    cr_assert_not_null(s);
    cr_expect_str_eq(json_string_value(json_object_get(s, "connect.name")), "tb.shop.every.Envelope");
    cr_expect_eq(json_integer_value(json_object_get(s, "connect.version")), 2);
    json_t *fields = json_object_get(s, "fields");
    json_t *src = json_array_get(fields, 2);
    json_t *srct = json_object_get(src, "type");
    cr_expect_str_eq(json_string_value(json_object_get(srct, "name")), "Source");
    cr_expect_str_eq(json_string_value(json_object_get(srct, "namespace")), "io.debezium.connector.mariadb");
    /* source.snapshot: an Enum with a default: [T,"null"], default "false" */
    json_t *snap = json_array_get(json_object_get(srct, "fields"), 4);
    cr_expect_str_eq(json_string_value(json_object_get(snap, "name")), "snapshot");
    cr_expect_str_eq(json_string_value(json_object_get(snap, "default")), "false");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(snap, "type"), 1)), "null");
    /* the Value record's decimal column */
    json_t *val = json_array_get(json_object_get(json_array_get(fields, 0), "type"), 1);
    json_t *dcol = json_array_get(json_object_get(val, "fields"), 3);
    json_t *dt = json_array_get(json_object_get(dcol, "type"), 1);
    cr_expect_str_eq(json_string_value(json_object_get(dt, "logicalType")), "decimal");
    cr_expect_eq(json_integer_value(json_object_get(dt, "precision")), 65);
    cr_expect_eq(json_integer_value(json_object_get(dt, "scale")), 30);
    cr_expect_str_eq(json_string_value(json_object_get(dt, "connect.name")), "org.apache.kafka.connect.data.Decimal");
    json_t *titype = json_array_get(json_object_get(json_array_get(json_object_get(val, "fields"), 1), "type"), 1);
    cr_expect_str_eq(json_string_value(json_object_get(titype, "connect.type")), "int16");
    free(avsc);
    json_decref(s);
    json_decref(j);
    evt_event_free(e);
    evt_table_unref(t);
}

/* Column defaults under value.encoding=debezium: Avro's field default in the
 * first branch ([T,"null"]), bytes (Decimal, Bits) as code points 0-255 (not
 * Connect's base64); a NULL written as the default, or kept null
 * (debezium.replace.null.with.default=false) in the "null" branch. */
static evt_table *dflt_table(void)
{
    evt_table *t = evt_table_new("shop", "dflt", 4);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_INT, NULL, false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "i", EVT_T_INT, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "d", EVT_T_DECIMAL, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 3, "b", EVT_T_BIT, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 2, 0, 6, 2, NULL), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 3, 10, 0, 0, NULL), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 1, "42", false), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 2, "3.21", false), TB_OK); /* no 0 byte: avro-c (Jansson) refuses \u0000 */
    cr_assert_eq(evt_table_set_default(t, 3, "b'1000000001'", true), TB_OK);
    size_t pk[] = {0};
    cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_OK);
    evt_table_seal(t);
    return t;
}

static evt_event *dflt_event(evt_table *t)
{
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    mysql_meta(e);
    evt_set_int(e, EVT_AFTER, 0, 1);
    for (size_t i = 1; i < 4; i++)
        evt_set_null(e, EVT_AFTER, i);
    return e;
}

Test(av_conv, debezium_defaults)
{
    evt_table *t = dflt_table();
    evt_event *e = dflt_event(t);
    for (int keep = 0; keep < 2; keep++) {
        evt_codec_opts o = {.topic_prefix = "tb", .encoding = EVT_ENC_DEBEZIUM, .now_ms = 1700000000001};
        o.dbz.keep_null = keep;
        char *avsc = NULL;
        json_t *j = value_round_trip(&o, e, &avsc);
        json_t *after = branch(json_object_get(j, "after"), "Value");
        if (keep) {
            cr_expect(json_is_null(json_object_get(after, "i")), "kept null");
            cr_expect(json_is_null(json_object_get(after, "d")));
        } else {
            cr_expect_eq(json_integer_value(branch(json_object_get(after, "i"), "int")), 42);
            expect_bytes(branch(json_object_get(after, "d"), "bytes"), "\x01\x41", 2);
            expect_bytes(branch(json_object_get(after, "b"), "bytes"), "\x01\x02", 2);
        }
        json_t *s = json_loads(avsc, 0, NULL);
        cr_assert_not_null(s);
        json_t *val = json_array_get(json_object_get(json_array_get(json_object_get(s, "fields"), 0), "type"), 1);
        json_t *fi = json_array_get(json_object_get(val, "fields"), 1);
        json_t *fd = json_array_get(json_object_get(val, "fields"), 2);
        json_t *fb = json_array_get(json_object_get(val, "fields"), 3);
        cr_expect_eq(json_integer_value(json_object_get(fi, "default")), 42);
        cr_expect_str_eq(json_string_value(json_array_get(json_object_get(fi, "type"), 1)), "null");
        expect_bytes(json_object_get(fd, "default"), "\x01\x41", 2);
        expect_bytes(json_object_get(fb, "default"), "\x01\x02", 2);
        free(avsc);
        json_decref(s);
        json_decref(j);
    }
    evt_event_free(e);
    evt_table_unref(t);
}

/* Decimal payloads as JSON numbers (BIGINT UNSIGNED in the tributary
 * encoding): the unscaled two's complement in the fewest bytes. */
Test(av_conv, decimal_numbers)
{
    static const struct {
        const char *num;
        const char *scale;
        const char *hex;
    } cases[] = {
        {"0", "0", "00"},          {"127", "0", "7f"},      {"128", "0", "0080"},  {"-1", "0", "ff"},
        {"-128", "0", "80"},       {"-129", "0", "ff7f"},   {"1.5", "2", "0096"},  {"-0.01", "2", "ff"},
        {"18446744073709551615", "0", "00ffffffffffffffff"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cs_text[256], p_text[64];
        snprintf(cs_text, sizeof cs_text,
                 "{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                 "\"parameters\":{\"scale\":\"%s\"}}",
                 cases[i].scale);
        snprintf(p_text, sizeof p_text, "%s", cases[i].num);
        evt_jv *cs, *p;
        tb_error err;
        cr_assert_eq(evt_jv_parse(cs_text, strlen(cs_text), &cs, &err), TB_OK);
        cr_assert_eq(evt_jv_parse(p_text, strlen(p_text), &p, &err), TB_OK);
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert_eq(av_encode(cs, p, &b, &err), TB_OK, "%s: %s", cases[i].num, err.msg);
        char hex[64] = "";
        size_t n = (size_t)(unsigned char)b.data[0] / 2; /* zig-zag length prefix, one byte here */
        cr_assert_eq(b.len, n + 1);
        for (size_t k = 0; k < n; k++)
            snprintf(hex + 2 * k, 3, "%02x", (unsigned char)b.data[1 + k]);
        cr_expect_str_eq(hex, cases[i].hex, "%s at scale %s", cases[i].num, cases[i].scale);
        tb_buf_free(&b);
        evt_jv_free(cs);
        evt_jv_free(p);
    }
}

/* A payload that does not fit its schema is refused, naming the field. */
Test(av_conv, refuses_misfits)
{
    const char *cs_text = "{\"type\":\"struct\",\"optional\":false,\"name\":\"a.K\",\"fields\":["
                          "{\"type\":\"int16\",\"optional\":false,\"field\":\"x\"}]}";
    const char *bad[] = {"{\"x\":40000}", "{}", "{\"x\":null}", "{\"x\":\"1\"}", "[1]"};
    evt_jv *cs;
    tb_error err;
    cr_assert_eq(evt_jv_parse(cs_text, strlen(cs_text), &cs, &err), TB_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        evt_jv *p;
        cr_assert_eq(evt_jv_parse(bad[i], strlen(bad[i]), &p, &err), TB_OK);
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_expect_eq(av_encode(cs, p, &b, &err), TB_ERR_INVALID, "%s accepted", bad[i]);
        tb_buf_free(&b);
        evt_jv_free(p);
    }
    evt_jv_free(cs);
}

/* Zig-zag varints (the Avro specification's examples). */
Test(av_conv, zigzag)
{
    static const struct {
        int64_t v;
        const char *bytes;
        size_t n;
    } cases[] = {{0, "\x00", 1}, {-1, "\x01", 1}, {1, "\x02", 1}, {-64, "\x7f", 1}, {64, "\x80\x01", 2},
                 {INT64_MIN, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert_eq(av_put_long(&b, cases[i].v), TB_OK);
        cr_expect_eq(b.len, cases[i].n);
        cr_expect_eq(memcmp(b.data, cases[i].bytes, cases[i].n), 0, "%lld", (long long)cases[i].v);
        tb_buf_free(&b);
    }
}

/* av_msg's Connect schema made back from the Avro schema is the Connect schema the Avro schema
 * was made from (av_conv.h's mapping inverted), for both encodings and for defaults. */
static void expect_connect_round_trip(const evt_codec_opts *o, const evt_event *e)
{
    tb_buf b, avsc, back;
    tb_buf_init(&b, 0);
    tb_buf_init(&avsc, 0);
    tb_buf_init(&back, 0);
    tb_error err;
    evt_codec_opts w = *o;
    w.schemas = true;
    cr_assert_eq(evt_json_value(&w, e, &b, &err), TB_OK, "%s", err.msg);
    evt_jv *root;
    const evt_jv *cs, *p;
    split(b.data, b.len, &root, &cs, &p);
    cr_assert_eq(av_schema_from_connect(cs, &avsc, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(av_msg_connect_schema(avsc.data, avsc.len, &back, &err), TB_OK, "%s", err.msg);
    tb_buf ct;
    tb_buf_init(&ct, 0);
    evt_jw jw;
    evt_jw_init(&jw, &ct);
    cr_assert_eq(evt_jv_write(cs, &jw), TB_OK);
    cr_assert_eq(evt_jw_finish(&jw), TB_OK);
    /* a field name outside Avro's rule comes back as Avro has it (av_msg.h) */
    for (char *q = strstr(ct.data, "\"odd-name\""); q; q = strstr(q, "\"odd-name\""))
        q[4] = '_';
    json_t *orig = json_loads(tb_buf_cstr(&ct), 0, NULL);
    json_t *got = json_loads(tb_buf_cstr(&back), 0, NULL);
    cr_assert_not_null(orig);
    cr_assert_not_null(got, "%s", tb_buf_cstr(&back));
    if (!json_equal(orig, got)) {
        FILE *f = fopen("/tmp/av_made_back.json", "w"), *g = fopen("/tmp/av_want.json", "w");
        if (f && g) {
            json_dumpf(got, f, JSON_SORT_KEYS | JSON_INDENT(1));
            json_dumpf(orig, g, JSON_SORT_KEYS | JSON_INDENT(1));
        }
        if (f)
            fclose(f);
        if (g)
            fclose(g);
    }
    cr_expect(json_equal(orig, got), "the Connect schema made back differs (written to /tmp/av_made_back.json and "
                                     "/tmp/av_want.json)");
    json_decref(got);
    json_decref(orig);
    tb_buf_free(&ct);
    evt_jv_free(root);
    tb_buf_free(&b);
    tb_buf_free(&avsc);
    tb_buf_free(&back);
}

Test(av_conv, connect_schema_made_back)
{
    evt_table *t = every_type();
    evt_event *e = every_event(t);
    evt_codec_opts trib = {.topic_prefix = "tb", .encoding = EVT_ENC_TRIBUTARY, .now_ms = 1700000000001};
    evt_codec_opts dbz = {.topic_prefix = "tb", .encoding = EVT_ENC_DEBEZIUM, .now_ms = 1700000000001};
    expect_connect_round_trip(&trib, e);
    expect_connect_round_trip(&dbz, e);
    evt_event_free(e);
    evt_table_unref(t);
    t = dflt_table(); /* defaults, bytes ones too */
    e = dflt_event(t);
    expect_connect_round_trip(&dbz, e);
    evt_event_free(e);
    evt_table_unref(t);
}

/* The tributary encoding's Avro schemas carry literal column defaults (schema_defaults, set by the
 * Kafka sink for Avro), so that ADD COLUMN ... NOT NULL DEFAULT is a BACKWARD-compatible version;
 * its JSON wrappers do not (JsonConverter would read a null as the default). */
Test(av_conv, tributary_defaults)
{
    evt_table *t = evt_table_new("shop", "td", 6);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_INT, NULL, false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "k", EVT_T_INT, NULL, false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "d", EVT_T_DECIMAL, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 3, "dt", EVT_T_DATE, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 4, "bu", EVT_T_BIGINT, NULL, true, true), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 5, "ts", EVT_T_DATETIME, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 2, 0, 6, 2, NULL), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 1, "5", false), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 2, "2.5", false), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 3, "2020-02-29", false), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 4, "18446744073709551615", false), TB_OK); /* none: a Decimal */
    cr_assert_eq(evt_table_set_default(t, 5, "current_timestamp()", true), TB_OK);  /* none: an expression */
    size_t pk[] = {0};
    cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_OK);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    mysql_meta(e);
    evt_set_int(e, EVT_AFTER, 0, 1);
    evt_set_int(e, EVT_AFTER, 1, 9);
    for (size_t i = 2; i < 6; i++)
        evt_set_null(e, EVT_AFTER, i);
    evt_codec_opts o = {.topic_prefix = "tb", .encoding = EVT_ENC_TRIBUTARY, .now_ms = 1700000000001,
                        .schema_defaults = true};
    char *avsc = NULL;
    json_t *j = value_round_trip(&o, e, &avsc);
    json_t *after = branch(json_object_get(j, "after"), "Value");
    cr_expect_eq(json_integer_value(json_object_get(after, "k")), 9);
    cr_expect(json_is_null(json_object_get(after, "d")), "a null stays null");
    json_t *s = json_loads(avsc, 0, NULL);
    cr_assert_not_null(s);
    json_t *val = json_array_get(json_object_get(json_array_get(json_object_get(s, "fields"), 0), "type"), 1);
    json_t *f = json_object_get(val, "fields");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(f, 1), "default")), 5);
    cr_expect(!json_is_array(json_object_get(json_array_get(f, 1), "type")), "NOT NULL: no union");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(f, 2), "default")), "2.50");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(f, 3), "default")), "2020-02-29");
    cr_expect(json_is_null(json_object_get(json_array_get(f, 4), "default")), "BIGINT UNSIGNED: none");
    cr_expect(json_is_null(json_object_get(json_array_get(f, 5), "default")), "an expression: none");
    free(avsc);
    json_decref(s);
    json_decref(j);
    /* the JSON wrapper (value.schemas=true) has none */
    o.schema_defaults = false;
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    o.schemas = true;
    cr_assert_eq(evt_json_value(&o, e, &b, &err), TB_OK, "%s", err.msg);
    cr_expect_null(strstr(tb_buf_cstr(&b), "\"default\""), "%s", tb_buf_cstr(&b));
    tb_buf_free(&b);
    evt_event_free(e);
    evt_table_unref(t);
}

/* SQLite REALs: a column of no class (sqlite_numeric, Connect "double") carries
 * a non-finite value as {"$real":"-Infinity"} and a whole real as 2.0; both
 * are Avro doubles (a REAL column's "Infinity" string too). avro-c's JSON form
 * cannot hold an infinity, so the body is read with avro-c's value API. */
Test(av_conv, sqlite_reals_of_a_column_of_no_class)
{
    evt_table *t = evt_table_new("app", "r", 3);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_SQLITE_INTEGER, NULL, false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "r", EVT_T_SQLITE_REAL, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "u", EVT_T_SQLITE_NUMERIC, NULL, true, false), TB_OK);
    size_t pk[] = {0};
    cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_OK);
    evt_table_seal(t);
    static const double rs[][2] = {{INFINITY, -INFINITY}, {2.0, 2.0}};
    for (size_t i = 0; i < 2; i++) {
        evt_event *e = evt_event_new(EVT_OP_CREATE, t);
        evt_set_int(e, EVT_AFTER, 0, 1);
        evt_set_double(e, EVT_AFTER, 1, rs[i][0]);
        evt_set_double(e, EVT_AFTER, 2, rs[i][1]);
        tb_buf b, avsc, bin;
        tb_buf_init(&b, 0);
        tb_buf_init(&avsc, 0);
        tb_buf_init(&bin, 0);
        tb_error err;
        evt_codec_opts o = {.topic_prefix = "tb", .now_ms = 1, .schemas = true};
        cr_assert_eq(evt_json_value(&o, e, &b, &err), TB_OK, "%s", err.msg);
        evt_jv *root;
        const evt_jv *cs, *p;
        split(b.data, b.len, &root, &cs, &p);
        cr_assert_eq(av_schema_from_connect(cs, &avsc, &err), TB_OK, "%s", err.msg);
        cr_assert_eq(av_encode(cs, p, &bin, &err), TB_OK, "%s (%s)", err.msg, b.data);
        avro_schema_t s = NULL;
        cr_assert_eq(avro_schema_from_json_length(avsc.data, avsc.len, &s), 0, "%s", avro_strerror());
        avro_value_iface_t *iface = avro_generic_class_from_schema(s);
        avro_value_t v, after, rec, col, br;
        cr_assert_eq(avro_generic_value_new(iface, &v), 0);
        avro_reader_t rd = avro_reader_memory(bin.data, (int64_t)bin.len);
        cr_assert_eq(avro_value_read(rd, &v), 0, "%s", avro_strerror());
        cr_assert_eq(avro_value_get_by_name(&v, "after", &after, NULL), 0);
        cr_assert_eq(avro_value_get_current_branch(&after, &rec), 0);
        for (int c = 0; c < 2; c++) {
            double got = 0;
            cr_assert_eq(avro_value_get_by_name(&rec, c ? "u" : "r", &col, NULL), 0);
            cr_assert_eq(avro_value_get_current_branch(&col, &br), 0);
            cr_assert_eq(avro_value_get_double(&br, &got), 0, "column %s is a double", c ? "u" : "r");
            cr_expect(got == rs[i][c], "column %s: %g, want %g", c ? "u" : "r", got, rs[i][c]);
        }
        avro_reader_free(rd);
        avro_value_decref(&v);
        avro_value_iface_decref(iface);
        avro_schema_decref(s);
        evt_jv_free(root);
        tb_buf_free(&b);
        tb_buf_free(&avsc);
        tb_buf_free(&bin);
        evt_event_free(e);
    }
    evt_table_unref(t);
}

/* A writer schema no value of which can exist (a record that holds itself through fields that
 * are records all the way round, directly or by name) is refused, not recursed into without
 * end; a record that holds itself through a union (a linked list) is read; a schema that names
 * the same record many times over (each record has two fields of the next) is walked once per
 * record. */
Test(av_conv, writer_schema_that_holds_itself)
{
    const char *bad[] = {
        "{\"type\":\"record\",\"name\":\"A\",\"fields\":[{\"name\":\"a\",\"type\":\"A\"}]}",
        "{\"type\":\"record\",\"name\":\"A\",\"fields\":[{\"name\":\"b\",\"type\":{\"type\":\"record\","
        "\"name\":\"B\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"},{\"name\":\"a\",\"type\":\"A\"}]}}]}",
    };
    tb_error err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        av_reader *r = NULL;
        cr_expect_eq(av_reader_new(bad[i], strlen(bad[i]), &r, &err), TB_ERR_CORRUPT, "%s accepted", bad[i]);
        cr_expect(strstr(err.msg, "holds itself"), "%s", err.msg);
        cr_expect_null(r);
    }
    const char *list = "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
                       "{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}";
    av_reader *r = NULL;
    cr_assert_eq(av_reader_new(list, strlen(list), &r, &err), TB_OK, "%s", err.msg);
    const uint8_t body[] = {0x02, 0x02, 0x04, 0x00}; /* v=1, next: branch 1 {v=2, next: null} */
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(av_reader_json(r, body, sizeof body, &out, &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(tb_buf_cstr(&out), "{\"v\":1,\"next\":{\"v\":2,\"next\":null}}");
    tb_buf_free(&out);
    av_reader_free(r);

    /* R0 {a: R1, b: R1}, R1 {a: R2, b: R2}, ... R12 {x: int}: 4096 paths to R12, 13 records */
    tb_buf dag;
    tb_buf_init(&dag, 0);
    for (int i = 0; i < 12; i++)
        tb_buf_printf(&dag, "{\"type\":\"record\",\"name\":\"R%d\",\"fields\":[{\"name\":\"a\",\"type\":", i);
    tb_buf_puts(&dag, "{\"type\":\"record\",\"name\":\"R12\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}");
    for (int i = 11; i >= 0; i--)
        tb_buf_printf(&dag, "},{\"name\":\"b\",\"type\":\"R%d\"}]}", i + 1);
    r = NULL;
    cr_expect_eq(av_reader_new(dag.data, dag.len, &r, &err), TB_OK, "%s", err.msg);
    av_reader_free(r);
    tb_buf_free(&dag);
}
