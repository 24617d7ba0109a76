/*
 * test_cache_rowid: rows of an SQLite source whose declared key holds NULL
 * arrive keyed with their rowid as well ({"k":null,"__rowid":7}, DESIGN 8
 * "Keys"); the cache keeps each as a row of its own, in a column "__rowid"
 * made when the first such key arrives, and finds it again by its key columns
 * and that column: upserts, updates and deletes of one NULL-key row leave the
 * others, keys without NULL are untouched (their "__rowid" stays NULL), a key
 * of an earlier build ({"k":null}, no rowid) is a row of its own too; the
 * same through Kafka Connect key schemas, with a table inferred from its
 * first message, across a schema version that adds a column (no rebuild),
 * and by `cache get` (cache_get) with the rowid in the key. SQLite's rows in
 * the cache file are the oracle, through cache_apply_schema and
 * cache_apply_msg.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_tmp.h"
#include "cache_apply.h"
#include "cache_read.h"
#include "tb_log.h"

static char path[64];

static cache_store *open_store(void)
{
    cache_store *s = NULL;
    tb_error err;
    tb_log_set_level(TB_LOG_ERROR);
    cache_tmp_path(path, sizeof path, "test_cache_rowid");
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    return s;
}

static void schema(cache_store *s, int version, bool extra_col)
{
    char v[512];
    tb_error err;
    snprintf(v, sizeof v,
             "{\"db\":\"d\",\"table\":\"t\",\"version\":%d,\"names_known\":true,\"columns\":[{\"name\":\"k\","
             "\"type\":\"sqlite_text\"},{\"name\":\"v\",\"type\":\"sqlite_text\"}%s],\"primary_key\":[\"k\"]}",
             version, extra_col ? ",{\"name\":\"w\",\"type\":\"sqlite_integer\"}" : "");
    cr_assert_eq(cache_apply_schema(s, "p", "{\"db\":\"d\",\"table\":\"t\"}", 24, v, strlen(v), NULL, NULL, &err),
                 TB_OK, "%s", err.msg);
}

/* An upsert of v (NULL: a tombstone) under key (JSON text), flushed. */
static void msg(cache_store *s, const char *topic, const char *key, const char *value)
{
    tb_error err;
    tb_code rc = cache_apply_msg(s, topic, "p", 0, key, strlen(key), value, value ? strlen(value) : 0, &err);
    if (rc == TB_OK)
        rc = cache_store_flush(s, &err);
    cr_assert_eq(rc, TB_OK, "%s -> %s: %s", key, value ? value : "(tombstone)", err.msg);
    cache_store_release(s);
}

/* The rows of table as "k,__rowid=v;" ordered, NULL as ~: the oracle's view. */
static const char *rows_of(cache_store *s, const char *table)
{
    static char out[2048];
    sqlite3_stmt *st = NULL;
    char *q = sqlite3_mprintf("SELECT coalesce(k,'~'), coalesce(\"__rowid\",'~'), v FROM \"%w\" ORDER BY 1, 2", table);
    cr_assert_eq(sqlite3_prepare_v2(s->db, q, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(s->db));
    sqlite3_free(q);
    size_t n = 0;
    out[0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s,%s=%s;", (const char *)sqlite3_column_text(st, 0),
                              (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    return out;
}

Test(cache_rowid, null_keys_apart)
{
    cache_store *s = open_store();
    schema(s, 1, false);
    msg(s, "p.d.t", "{\"k\":\"x\"}", "{\"k\":\"x\",\"v\":\"c\"}");
    cr_assert_lt(cache_rowid_col(cache_store_find(s, "d.t")), 0, "no rowid column before a key holding NULL");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":1}", "{\"k\":null,\"v\":\"a\"}");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":2}", "{\"k\":null,\"v\":\"b\"}");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":3}", "{\"k\":null,\"v\":\"e\"}");
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c;~,1=a;~,2=b;~,3=e;");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":1}", "{\"k\":null,\"v\":\"a2\"}"); /* an update of one */
    msg(s, "p.d.t", "{\"k\":\"x\"}", "{\"k\":\"x\",\"v\":\"c2\"}");
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c2;~,1=a2;~,2=b;~,3=e;");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":2}", NULL); /* a tombstone of one */
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":3}",
        "{\"before\":{\"k\":null,\"v\":\"e\"},\"after\":null,\"op\":\"d\",\"source\":{}}"); /* an envelope's delete */
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c2;~,1=a2;");
    /* a key of an earlier build (no rowid): a row of its own, deleted by the same key */
    msg(s, "p.d.t", "{\"k\":null}", "{\"k\":null,\"v\":\"old\"}");
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c2;~,1=a2;~,~=old;");
    msg(s, "p.d.t", "{\"k\":null}", NULL);
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c2;~,1=a2;");
    /* a schema version that adds a column keeps the table and its rows (no rebuild) */
    schema(s, 2, true);
    cr_expect_str_eq(rows_of(s, "d.t"), "x,~=c2;~,1=a2;");
    msg(s, "p.d.t", "{\"k\":null,\"__rowid\":4}", "{\"k\":null,\"v\":\"f\",\"w\":1}");
    msg(s, "p.d.t", "{\"k\":\"x\"}", NULL);
    cr_expect_str_eq(rows_of(s, "d.t"), "~,1=a2;~,4=f;");

    /* cache get: the rowid in the key finds the row; without it, the row keyed NULL without one */
    tb_error err;
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    cache_db *db = NULL;
    cr_assert_eq(cache_db_open(path, &db, &err), TB_OK, "%s", err.msg);
    tb_buf row;
    tb_buf_init(&row, 0);
    cr_assert_eq(cache_get(db, "d.t", "{\"k\":null,\"__rowid\":4}", &row, &err), TB_OK, "%s", err.msg);
    cr_expect(strstr(tb_buf_cstr(&row), "\"v\":\"f\"") != NULL, "%s", tb_buf_cstr(&row));
    tb_buf_reset(&row);
    cr_expect_eq(cache_get(db, "d.t", "{\"k\":null,\"__rowid\":2}", &row, &err), TB_ERR_NOT_FOUND);
    cr_expect_eq(cache_get(db, "d.t", "{\"k\":null}", &row, &err), TB_ERR_NOT_FOUND);
    tb_buf_free(&row);
    cache_db_close(db);
    cache_tmp_rm(path);
}

Test(cache_rowid, connect_schemas_and_inferred)
{
    cache_store *s = open_store();
    /* Kafka Connect key schemas: the key of a row whose key holds NULL has optional columns and
     * an optional int64 "__rowid"; the others the plain key schema */
#define KN                                                                                                   \
    "{\"schema\":{\"type\":\"struct\",\"optional\":false,\"name\":\"p.d.c.Key\",\"fields\":[{\"type\":\"string\","     \
    "\"optional\":true,\"field\":\"k\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"__rowid\"}]},\"payload\":{"   \
    "\"k\":null,\"__rowid\":%d}}"
#define KP                                                                                                   \
    "{\"schema\":{\"type\":\"struct\",\"optional\":false,\"name\":\"p.d.c.Key\",\"fields\":[{\"type\":\"string\","     \
    "\"optional\":false,\"field\":\"k\"}]},\"payload\":{\"k\":\"%s\"}}"
#define VAL                                                                                                  \
    "{\"schema\":{\"type\":\"struct\",\"optional\":false,\"name\":\"p.d.c.Value\",\"fields\":[{\"type\":\"string\","   \
    "\"optional\":true,\"field\":\"k\"},{\"type\":\"string\",\"optional\":true,\"field\":\"v\"}]},\"payload\":{"       \
    "\"k\":%s,\"v\":\"%s\"}}"
    char k[512], v[512];
    snprintf(k, sizeof k, KN, 5);
    snprintf(v, sizeof v, VAL, "null", "n5");
    msg(s, "p.d.c", k, v); /* the first message makes the table, keyed by k alone */
    snprintf(k, sizeof k, KP, "y");
    snprintf(v, sizeof v, VAL, "\"y\"", "y1");
    msg(s, "p.d.c", k, v);
    snprintf(k, sizeof k, KN, 6);
    snprintf(v, sizeof v, VAL, "null", "n6");
    msg(s, "p.d.c", k, v);
    cache_table *t = cache_store_find(s, "d.c");
    cr_assert_not_null(t);
    cr_expect_eq(t->npk, 1, "the rowid is not a key column of the cache table");
    cr_expect_str_eq(rows_of(s, "d.c"), "y,~=y1;~,5=n5;~,6=n6;");
    snprintf(k, sizeof k, KN, 5);
    msg(s, "p.d.c", k, NULL);
    cr_expect_str_eq(rows_of(s, "d.c"), "y,~=y1;~,6=n6;");

    /* no schema record, no Connect schema: the table inferred from its first message */
    msg(s, "p.d.i", "{\"k\":null,\"__rowid\":9}", "{\"k\":null,\"v\":\"i9\"}");
    msg(s, "p.d.i", "{\"k\":null,\"__rowid\":8}", "{\"k\":null,\"v\":\"i8\"}");
    msg(s, "p.d.i", "{\"k\":\"z\"}", "{\"k\":\"z\",\"v\":\"iz\"}");
    cr_expect_eq(cache_store_find(s, "d.i")->npk, 1);
    cr_expect_str_eq(rows_of(s, "d.i"), "z,~=iz;~,8=i8;~,9=i9;");
    msg(s, "p.d.i", "{\"k\":null,\"__rowid\":9}", NULL);
    cr_expect_str_eq(rows_of(s, "d.i"), "z,~=iz;~,8=i8;");
    tb_error err;
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    cache_tmp_rm(path);
}

/* A table's first message whose key names no column of the row (only a rowid,
 * or nothing) is refused, naming the table, on each path that makes a table
 * (inferred from the row; a Connect key over a plain row); with Connect
 * schemas for both, the key schema's "k" is the key column, and a key that
 * leaves it out is one under an earlier key of the table, passed over. The
 * cache file goes on: the next table is made and kept. */
Test(cache_rowid, key_without_columns_refused)
{
    cache_store *s = open_store();
    char k[512], v[512];
    const char *keys[] = {"{\"__rowid\":5}", "{}", k};
    snprintf(k, sizeof k,
             "{\"schema\":{\"type\":\"struct\",\"optional\":false,\"fields\":[{\"type\":\"string\",\"optional\":true,"
             "\"field\":\"k\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"__rowid\"}]},\"payload\":{"
             "\"__rowid\":5}}");
    snprintf(v, sizeof v, VAL, "null", "n");
    const char *vals[] = {"{\"k\":null,\"v\":\"n\"}", v};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++) {
            tb_error err;
            tb_error_clear(&err);
            char topic[32];
            snprintf(topic, sizeof topic, "p.d.x%zu%zu", i, j);
            tb_code rc = cache_apply_msg(s, topic, "p", 0, keys[i], strlen(keys[i]), vals[j], strlen(vals[j]), &err);
            if (rc == TB_OK)
                rc = cache_store_flush(s, &err);
            cache_store_release(s);
            if (i == 2 && j == 1) { /* keyed by the schema's "k" */
                cr_expect_eq(rc, TB_OK, "%s", err.msg);
                cr_assert_not_null(cache_store_find(s, topic + 2));
                cr_expect_eq(cache_store_find(s, topic + 2)->npk, 1);
                cr_expect_str_eq(rows_of(s, topic + 2), "");
                continue;
            }
            cr_expect_eq(rc, TB_ERR_INVALID, "key %s, value %s: %d %s", keys[i], vals[j], (int)rc, err.msg);
            cr_expect(i == 1 || strstr(err.msg, topic + 2) != NULL, "the error names the table: %s", err.msg);
            cr_expect_null(cache_store_find(s, topic + 2), "%s: no table made", topic);
        }
    msg(s, "p.d.i", "{\"k\":null,\"__rowid\":9}", "{\"k\":null,\"v\":\"i9\"}");
    cr_expect_str_eq(rows_of(s, "d.i"), "~,9=i9;");
    tb_error err;
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    cache_tmp_rm(path);
}
