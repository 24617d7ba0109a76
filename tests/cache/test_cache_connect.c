/*
 * test_cache_connect: every Debezium and Kafka Connect logical type of a
 * Connect JSON message, applied with cache_apply_msg to a cache file and read
 * back with SQLite, against the value the tributary encoding stores for the
 * column (DESIGN 5), written out by hand per type (the golden fixtures of
 * test_cache_debezium cover MariaDB's types; these are the others: NanoTime,
 * NanoTimestamp, io.debezium.time.Time, Json, geometry, Decimal as a JSON
 * number, BIGINT UNSIGNED under precise as a key, the placeholder in a bytes
 * column, negative epochs).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_tmp.h"
#include "cache_apply.h"

#define F(type, name, field, params) \
    "{\"type\":\"" type "\",\"optional\":true" name params ",\"field\":\"" field "\"}"
#define N(n) ",\"name\":\"" n "\""
#define ROW                                                                                                            \
    "[{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":"       \
    "{\"scale\":\"0\",\"connect.decimal.precision\":\"20\"},\"field\":\"k\"},"                                        \
    F("bytes", N("org.apache.kafka.connect.data.Decimal"), "d3", ",\"parameters\":{\"scale\":\"3\"}") ","             \
    F("bytes", N("org.apache.kafka.connect.data.Decimal"), "dn", ",\"parameters\":{\"scale\":\"2\"}") ","             \
    F("int32", N("io.debezium.time.Date"), "dt", "") "," F("int64", N("io.debezium.time.NanoTime"), "tn", "") ","     \
    F("int32", N("io.debezium.time.Time"), "tm", "") "," F("int64", N("io.debezium.time.MicroTime"), "tu", "") ","    \
    F("int64", N("io.debezium.time.NanoTimestamp"), "tsn", "") ","                                                    \
    F("int64", N("io.debezium.time.Timestamp"), "tsm", "") ","                                                        \
    F("int64", N("io.debezium.time.MicroTimestamp"), "tsu",                                                           \
      ",\"parameters\":{\"__debezium.source.column.scale\":\"4\"}") ","                                               \
    F("string", N("io.debezium.data.EnumSet"), "st", "") "," F("bytes", N("io.debezium.data.Bits"), "bt", "") ","    \
    F("string", N("io.debezium.data.Json"), "js", "") ","                                                             \
    "{\"type\":\"struct\",\"optional\":true,\"name\":\"io.debezium.data.geometry.Geometry\",\"fields\":[{\"type\":"   \
    "\"bytes\",\"optional\":false,\"field\":\"wkb\"},{\"type\":\"int32\",\"optional\":true,\"field\":\"srid\"}],"      \
    "\"field\":\"g\"}," F("float", "", "f", "") "," F("bytes", "", "b", "") "]"
#define VSCHEMA                                                                                                        \
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":" ROW ",\"optional\":true,\"field\":\"before\"},"  \
    "{\"type\":\"struct\",\"fields\":" ROW ",\"optional\":true,\"field\":\"after\"},{\"type\":\"struct\",\"fields\":[],"  \
    "\"optional\":false,\"field\":\"source\"},{\"type\":\"string\",\"optional\":false,\"field\":\"op\"}],"              \
    "\"optional\":false,\"name\":\"t.Envelope\"}"
#define KEY(k)                                                                                                         \
    "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"bytes\",\"optional\":false,\"name\":"                  \
    "\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"0\",\"connect.decimal.precision\":"        \
    "\"20\"},\"field\":\"k\"}],\"optional\":false,\"name\":\"t.Key\"},\"payload\":{\"k\":\"" k "\"}}"
/* A Connect-wrapped envelope (one buffer, reused). */
static const char *MSG(const char *op, const char *after)
{
    static char buf[16384];
    snprintf(buf, sizeof buf, "{\"schema\":%s,\"payload\":{\"before\":null,\"after\":%s,\"source\":{},\"op\":\"%s\"}}",
             VSCHEMA, after, op);
    return buf;
}

static char path[64];

static cache_store *open_store(void)
{
    cache_store *s = NULL;
    tb_error err;
    cache_tmp_path(path, sizeof path, "test_cache_connect");
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    return s;
}

static tb_code apply(cache_store *s, const char *key, const char *value, tb_error *err)
{
    tb_code rc = cache_apply_msg(s, "p.db.t", "p", 0, key, strlen(key), value, value ? strlen(value) : 0, err);
    tb_error e2;
    if (rc == TB_OK)
        rc = cache_store_flush(s, &e2);
    cache_store_release(s);
    return rc;
}

/* "typeof:value|..." of one row of the cache table. */
static char *row_text(cache_store *s, const char *where)
{
    char sql[256];
    static char out[4096];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT * FROM \"db.t\" WHERE %s", where);
    cr_assert_eq(sqlite3_prepare_v2(s->db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(s->db));
    out[0] = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            if (strcmp(sqlite3_column_name(st, i), "_partition") == 0)
                continue;
            char cell[512];
            int ty = sqlite3_column_type(st, i);
            if (ty == SQLITE_BLOB) {
                const unsigned char *b = sqlite3_column_blob(st, i);
                size_t o = (size_t)snprintf(cell, sizeof cell, "%s=x'", sqlite3_column_name(st, i));
                for (int k = 0; k < sqlite3_column_bytes(st, i); k++)
                    o += (size_t)snprintf(cell + o, sizeof cell - o, "%02x", b[k]);
                snprintf(cell + o, sizeof cell - o, "'");
            } else if (ty == SQLITE_FLOAT) {
                snprintf(cell, sizeof cell, "%s=%.17g", sqlite3_column_name(st, i), sqlite3_column_double(st, i));
            } else {
                const char *v = (const char *)sqlite3_column_text(st, i);
                const char *q = ty == SQLITE_TEXT ? "'" : "";
                snprintf(cell, sizeof cell, "%s=%s%s%s", sqlite3_column_name(st, i), q, v ? v : "NULL", q);
            }
            strcat(out, *out ? " " : "");
            strcat(out, cell);
        }
    sqlite3_finalize(st);
    return out;
}

Test(cache_connect, logical_types)
{
    cache_store *s = open_store();
    tb_error err;
    /* k: 2^64-1 (BIGINT UNSIGNED, precise); d3: -0.123; dn: 12.5 as a number; dt: -1 day; tn: -1.5 us;
     * tm: 1 ms; tu: 24 h; tsn: 1 s + 1 ns; tsm: -1 ms; tsu: fsp 4 from the propagated scale */
    const char *after =
        "{\"k\":\"AP//////////\",\"d3\":\"/4U=\",\"dn\":12.5,\"dt\":-1,\"tn\":-1500,\"tm\":1,\"tu\":86400000000,"
        "\"tsn\":1000000001,\"tsm\":-1,\"tsu\":1500000,\"st\":\"b,c\",\"bt\":\"AQI=\","
        "\"js\":\"{\\\"a\\\": [1, 2.50], \\\"u\\\": \\\"\\\\uD83D\\\\uDE00\\\"}\","
        "\"g\":{\"wkb\":\"AQEAAAAAAAAAAADwPwAAAAAAAABA\",\"srid\":4326},\"f\":3.4028235E38,\"b\":\"AP8=\"}";
    cr_assert_eq(apply(s, KEY("AP//////////"), MSG("c", after), &err), TB_OK, "%s", err.msg);
    const char *want =
        "k='18446744073709551615' d3='-0.123' dn='12.50' dt='1969-12-31' tn='-00:00:00.000001' tm='00:00:00.001' "
        "tu='24:00:00' tsn='1970-01-01T00:00:01' tsm='1969-12-31T23:59:59.999' tsu='1970-01-01T00:00:01.5000' "
        "st='[\"b\",\"c\"]' bt=513 js='{\"a\":[1,2.50],\"u\":\"\xF0\x9F\x98\x80\"}' "
        "g='{\"srid\":4326,\"wkb\":\"AQEAAAAAAAAAAADwPwAAAAAAAABA\"}' f=3.4028234999999999e+38 b=x'00ff'";
    cr_assert_str_eq(row_text(s, "1"), want);
    /* the placeholder in a bytes column leaves the value; zero and a scale above the digits */
    cr_assert_eq(apply(s, KEY("AP//////////"),
                       MSG("u", "{\"k\":\"AP//////////\",\"d3\":\"AA==\",\"b\":\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\"}"),
                       &err),
                 TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(row_text(s, "1"), "d3='0.000'"), "%s", row_text(s, "1"));
    cr_assert_not_null(strstr(row_text(s, "1"), "b=x'00ff'"), "%s", row_text(s, "1"));
    /* a tombstone of the Connect key deletes the row by its decoded key */
    cr_assert_eq(apply(s, KEY("AP//////////"), NULL, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(row_text(s, "1"), "");
    /* bad values name the column */
    cr_assert_eq(apply(s, KEY("AQ=="), MSG("c", "{\"k\":\"AQ==\",\"dt\":99999999}"), &err), TB_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "column \"dt\""), "%s", err.msg);
    cr_assert_eq(apply(s, KEY("AQ=="), MSG("c", "{\"k\":\"AQ==\",\"bt\":\"AQIDBAUGBwgJ\"}"), &err), TB_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "column \"bt\""), "%s", err.msg);
    cache_store_rollback(s);
    cache_store_close(s);
    cache_tmp_rm(path);
}

/* Two Connect schemas of one table, as Debezium writes them before and after ALTER TABLE ... ADD
 * COLUMN: the key schema stays byte for byte, the value schema gains a field (and the reverse: the
 * value schema stays, the key schema's bytes change). The table is retyped from spans that point
 * into the schemas it remembers. */
#define SK(name) \
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"}],\"optional\":false," \
    "\"name\":\"" name "\"}"
#define SV1 \
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},{\"type\":\"string\"," \
    "\"optional\":true,\"field\":\"a\"}],\"optional\":false,\"name\":\"t.Value\"}"
#define SV2 \
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},{\"type\":\"string\"," \
    "\"optional\":true,\"field\":\"a\"},{\"type\":\"bytes\",\"optional\":true,\"field\":\"b\"}],\"optional\":false," \
    "\"name\":\"t.Value\"}"
#define WRAP(schema, payload) "{\"schema\":" schema ",\"payload\":" payload "}"

Test(cache_connect, schema_change_between_messages)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(apply(s, WRAP(SK("t.Key"), "{\"id\":1}"), WRAP(SV1, "{\"id\":1,\"a\":\"x\"}"), &err), TB_OK, "%s",
                 err.msg);
    /* the key schema as before, the value schema with a new column */
    cr_assert_eq(apply(s, WRAP(SK("t.Key"), "{\"id\":2}"), WRAP(SV2, "{\"id\":2,\"a\":\"y\",\"b\":\"AP8=\"}"), &err),
                 TB_OK, "%s", err.msg);
    cr_assert_str_eq(row_text(s, "id=2"), "id=2 a='y' b=x'00ff'");
    /* the value schema as before, the key schema's bytes changed */
    cr_assert_eq(apply(s, WRAP(SK("t.Key2"), "{\"id\":3}"), WRAP(SV2, "{\"id\":3,\"a\":\"z\",\"b\":\"AQ==\"}"), &err),
                 TB_OK, "%s", err.msg);
    cr_assert_str_eq(row_text(s, "id=3"), "id=3 a='z' b=x'01'");
    /* and both once more, back and forth */
    cr_assert_eq(apply(s, WRAP(SK("t.Key2"), "{\"id\":4}"), WRAP(SV1, "{\"id\":4,\"a\":\"w\"}"), &err), TB_OK, "%s",
                 err.msg);
    cr_assert_eq(apply(s, WRAP(SK("t.Key"), "{\"id\":4}"), WRAP(SV1, "{\"id\":4,\"a\":\"v\"}"), &err), TB_OK, "%s",
                 err.msg);
    cr_assert_str_eq(row_text(s, "id=4"), "id=4 a='v' b=NULL");
    cache_store_rollback(s);
    cache_store_close(s);
    cache_tmp_rm(path);
}

/* Epoch numbers at the ends of int64 in every temporal type: an error naming the column, never an
 * overflow (UBSan aborts on one). */
Test(cache_connect, temporal_extremes)
{
    static const char *const names[] = {
        "io.debezium.time.Date",      "org.apache.kafka.connect.data.Date", "io.debezium.time.Time",
        "io.debezium.time.MicroTime", "io.debezium.time.NanoTime",          "io.debezium.time.Timestamp",
        "io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTimestamp", "org.apache.kafka.connect.data.Timestamp",
    };
    static const char *const nums[] = {"9223372036854775807", "-9223372036854775808", "9223372036854775806",
                                       "-9223372036854775807", "4611686018427387904", "-4611686018427387904",
                                       "2147483647", "-2147483648"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cache_store *s = open_store();
        tb_error err;
        char key[512], val[1024];
        const char *ks = SK("t.Key");
        snprintf(key, sizeof key, "{\"schema\":%s,\"payload\":{\"id\":1}}", ks);
        for (size_t j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
            snprintf(val, sizeof val,
                     "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":"
                     "\"id\"},{\"type\":\"int64\",\"optional\":true,\"name\":\"%s\",\"field\":\"v\"}],\"optional\":"
                     "false,\"name\":\"t.Value\"},\"payload\":{\"id\":1,\"v\":%s}}",
                     names[i], nums[j]);
            tb_code rc = apply(s, key, val, &err);
            cr_assert(rc == TB_OK || (rc == TB_ERR_INVALID && strstr(err.msg, "column \"v\"")), "%s %s: %s", names[i],
                      nums[j], rc == TB_OK ? "ok" : err.msg);
        }
        cache_store_rollback(s);
        cache_store_close(s);
        cache_tmp_rm(path);
    }
}

/* A DATETIME(6) key from a MicroTimestamp without the column's fsp: the text tributary's own
 * encoding writes for it (six digits), so the row has one key whoever wrote the topic. */
Test(cache_connect, micro_timestamp_key_as_tributary_writes_it)
{
    cache_store *s = open_store();
    tb_error err;
    const char *ks = "{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,\"name\":"
                     "\"io.debezium.time.MicroTimestamp\",\"field\":\"ts\"}],\"optional\":false,\"name\":\"t.Key\"}";
    const char *vs = "{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,\"name\":"
                     "\"io.debezium.time.MicroTimestamp\",\"field\":\"ts\"},{\"type\":\"int32\",\"optional\":true,"
                     "\"field\":\"v\"}],\"optional\":false,\"name\":\"t.Value\"}";
    char key[512], val[768];
    snprintf(key, sizeof key, "{\"schema\":%s,\"payload\":{\"ts\":946684800000000}}", ks);
    snprintf(val, sizeof val, "{\"schema\":%s,\"payload\":{\"ts\":946684800000000,\"v\":1}}", vs);
    cr_assert_eq(apply(s, key, val, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(row_text(s, "1"), "ts='2000-01-01T00:00:00.000000' v=1");
    snprintf(key, sizeof key, "{\"schema\":%s,\"payload\":{\"ts\":946684800500000}}", ks);
    snprintf(val, sizeof val, "{\"schema\":%s,\"payload\":{\"ts\":946684800500000,\"v\":2}}", vs);
    cr_assert_eq(apply(s, key, val, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(row_text(s, "v=2"), "ts='2000-01-01T00:00:00.500000' v=2");
    cache_store_rollback(s);
    cache_store_close(s);
    cache_tmp_rm(path);
}

/* cache_history (Debezium's schema history records): the precision of temporal columns, absent
 * "length" as fsp 0, quoted ids, the state whose columns are a schema's fields, DROP, bad records. */
#include "cache_int.h"

static const char *HREC_CREATE =
    "{\"databaseName\":\"d\",\"ddl\":\"CREATE TABLE ...\",\"tableChanges\":[{\"type\":\"CREATE\","
    "\"id\":\"\\\"d\\\".\\\"t\\\"\",\"table\":{\"columns\":[{\"name\":\"id\",\"typeName\":\"INT\",\"length\":11},"
    "{\"name\":\"a\",\"typeName\":\"DATETIME\"},{\"name\":\"b\",\"typeName\":\"DATETIME\",\"length\":1},"
    "{\"name\":\"c\",\"typeName\":\"TIME\",\"length\":6},{\"name\":\"z\",\"typeName\":\"TIMESTAMP\",\"length\":3}]}}]}";
static const char *HREC_ALTER =
    "{\"databaseName\":\"d\",\"tableChanges\":[{\"type\":\"ALTER\",\"id\":\"\\\"d\\\".\\\"t\\\"\",\"table\":"
    "{\"columns\":[{\"name\":\"id\",\"typeName\":\"INT\"},{\"name\":\"a\",\"typeName\":\"DATETIME\"},"
    "{\"name\":\"b\",\"typeName\":\"DATETIME\",\"length\":3},{\"name\":\"c\",\"typeName\":\"TIME\",\"length\":6},"
    "{\"name\":\"z\",\"typeName\":\"TIMESTAMP\",\"length\":3},{\"name\":\"n\",\"typeName\":\"DATETIME\",\"length\":5}]}}]}";

Test(cache_connect, schema_history_fsp)
{
    cache_history *h = cache_history_new();
    tb_error err;
    const char *set = "{\"ddl\":\"SET character_set_server=utf8mb4\"}";
    cr_assert_eq(cache_history_add(h, set, strlen(set), &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_history_add(h, HREC_CREATE, strlen(HREC_CREATE), &err), TB_OK, "%s", err.msg);
    const char *before[] = {"id", "a", "b", "c", "z"}, *after[] = {"id", "a", "b", "c", "z", "n"};
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "a"), 0, "no length: declared without a precision");
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "b"), 1);
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "c"), 6);
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "z"), 3);
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "id"), -1, "not a temporal");
    cr_expect_eq(cache_history_fsp(h, "d.u", before, 5, "a"), -1, "another table");
    cr_assert_eq(cache_history_add(h, HREC_ALTER, strlen(HREC_ALTER), &err), TB_OK, "%s", err.msg);
    cr_expect_eq(cache_history_fsp(h, "d.t", after, 6, "b"), 3, "the state after the ALTER");
    cr_expect_eq(cache_history_fsp(h, "d.t", after, 6, "n"), 5);
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "b"), 1, "a schema of the columns before the ALTER");
    const char *other[] = {"id", "q"};
    cr_expect_eq(cache_history_fsp(h, "d.t", other, 2, "b"), 3, "no state matches: the latest");
    /* quotes doubled inside a part of the id; a dot in a name */
    const char *odd = "{\"tableChanges\":[{\"type\":\"CREATE\",\"id\":\"\\\"d.x\\\".\\\"t\\\"\\\"q\\\"\",\"table\":"
                      "{\"columns\":[{\"name\":\"w\",\"typeName\":\"TIME\",\"length\":2}]}}]}";
    cr_assert_eq(cache_history_add(h, odd, strlen(odd), &err), TB_OK, "%s", err.msg);
    const char *w[] = {"w"};
    cr_expect_eq(cache_history_fsp(h, "d.x.t\"q", w, 1, "w"), 2);
    /* DROP keeps no state; the earlier ones stay */
    const char *drop = "{\"tableChanges\":[{\"type\":\"DROP\",\"id\":\"\\\"d\\\".\\\"t\\\"\"}]}";
    cr_assert_eq(cache_history_add(h, drop, strlen(drop), &err), TB_OK, "%s", err.msg);
    cr_expect_eq(cache_history_fsp(h, "d.t", after, 6, "n"), 5);
    /* refused: not JSON, not an object, a bad id, a precision outside 0..6 */
    const char *bad[] = {"{\"tableChanges\":", "[1]", "{\"tableChanges\":{}}",
                         "{\"tableChanges\":[{\"type\":\"CREATE\",\"id\":\"d.t\",\"table\":{\"columns\":[]}}]}",
                         "{\"tableChanges\":[{\"type\":\"CREATE\",\"id\":\"\\\"d\\\".\\\"t\\\"\",\"table\":{\"columns\":"
                         "[{\"name\":\"a\",\"typeName\":\"TIME\",\"length\":7}]}}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(cache_history_add(h, bad[i], strlen(bad[i]), &err), TB_ERR_INVALID, "%s", bad[i]);
    cr_expect_eq(cache_history_fsp(h, "d.t", before, 5, "b"), 1, "the states read before stay");
    cr_expect_eq(cache_history_records(h), 5 + 3, "records read (three of the refused ones are objects)");
    cache_history_free(h);
}
