/*
 * test_cache_keys: a table keyed by one integer column holds every key value a
 * message can carry, as a row of its own, not a failure of the cache file.
 * SQLite makes a column declared INTEGER PRIMARY KEY its rowid, which holds
 * only 64-bit integers (and turns NULL into a new rowid), so the cache declares
 * such a key INT: the same affinity, an ordinary key. Keys of other values (a
 * number beyond 64 bits, text, a fraction, NULL) are each a key of their own,
 * upserted and deleted like any other; a cache file written when the key was
 * the rowid refuses them naming the rebuild. SQLite's catalogue and rows are
 * the oracle, through cache_apply_schema and cache_apply_msg.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_tmp.h"
#include "cache_apply.h"
#include "tb_log.h"

static char path[64];

static cache_store *open_store(void)
{
    cache_store *s = NULL;
    tb_error err;
    tb_log_set_level(TB_LOG_ERROR);
    cache_tmp_path(path, sizeof path, "test_cache_keys");
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    return s;
}

static void close_store(cache_store *s)
{
    tb_error err;
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    cache_tmp_rm(path);
}

static tb_code schema(cache_store *s, const char *type, tb_error *err)
{
    char v[512];
    snprintf(v, sizeof v,
             "{\"db\":\"d\",\"table\":\"t\",\"version\":1,\"names_known\":true,\"columns\":[{\"name\":\"id\","
             "\"type\":\"%s\"},{\"name\":\"v\",\"type\":\"varchar\"}],\"primary_key\":[\"id\"]}",
             type);
    return cache_apply_schema(s, "p", "{\"db\":\"d\",\"table\":\"t\"}", 24, v, strlen(v), NULL, NULL, err);
}

/* An upsert (v non-NULL) or a delete (v NULL: a tombstone) of key id (JSON text), flushed. */
static tb_code msg(cache_store *s, const char *id, const char *v, tb_error *err)
{
    char key[128], val[256];
    snprintf(key, sizeof key, "{\"id\":%s}", id);
    if (v)
        snprintf(val, sizeof val, "{\"id\":%s,\"v\":\"%s\"}", id, v);
    tb_code rc = cache_apply_msg(s, "p.d.t", "p", 0, key, strlen(key), v ? val : NULL, v ? strlen(val) : 0, err);
    if (rc == TB_OK)
        rc = cache_store_flush(s, err);
    cache_store_release(s);
    return rc;
}

/* The rows of d.t as "typeof(id):id=v;" in key order: the oracle's view. */
static const char *rows_of(cache_store *s)
{
    static char out[1024];
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(s->db,
                                    "SELECT typeof(id), quote(id), v FROM \"d.t\" ORDER BY typeof(id), id", -1,
                                    &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(s->db));
    size_t n = 0;
    out[0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s:%s=%s;", (const char *)sqlite3_column_text(st, 0),
                              (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    return out;
}

static void every_key_value(const char *type)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(schema(s, type, &err), TB_OK, "%s", err.msg);
    static const char *const ups[][2] = {
        {"1", "one"},     {"20000000000000000000", "big"}, {"\"abc\"", "text"}, {"2.5", "frac"},
        {"null", "n1"},   {"null", "n2"},                  {"1", "one2"},       {"-9223372036854775808", "min"},
        {"\"abc\"", "t2"}, {"20000000000000000000", "big2"},
    };
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++)
        cr_assert_eq(msg(s, ups[i][0], ups[i][1], &err), TB_OK, "key %s: %s", ups[i][0], err.msg);
    cr_expect_str_eq(rows_of(s), "integer:-9223372036854775808=min;integer:1=one2;null:NULL=n2;"
                                 "real:2.5=frac;real:2.0e+19=big2;text:'abc'=t2;");
    cr_assert_eq(msg(s, "null", NULL, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(msg(s, "\"abc\"", NULL, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(msg(s, "20000000000000000000", NULL, &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(rows_of(s), "integer:-9223372036854775808=min;integer:1=one2;real:2.5=frac;");
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(s->db, "SELECT sql FROM sqlite_master WHERE name='d.t'", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_not_null(strstr((const char *)sqlite3_column_text(st, 0), "\"id\" INT,"), "%s",
                       (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    close_store(s);
}

Test(cache_keys, int_key_holds_every_value) { every_key_value("int"); }
Test(cache_keys, bigint_key_holds_every_value) { every_key_value("bigint"); }
Test(cache_keys, sqlite_integer_key_holds_every_value) { every_key_value("sqlite_integer"); }

/* A cache file whose key column is the rowid (written before it was declared INT): a key the
 * rowid cannot hold is an error of the file naming the rebuild, and the rows before it stay. */
Test(cache_keys, rowid_key_of_an_older_file_names_the_rebuild)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(schema(s, "int", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(msg(s, "1", "one", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(sqlite3_exec(s->db,
                              "CREATE TABLE old(\"id\" INTEGER, \"v\" TEXT, \"_partition\" INTEGER, PRIMARY KEY(\"id\"));"
                              "INSERT INTO old SELECT * FROM \"d.t\"; DROP TABLE \"d.t\";"
                              "ALTER TABLE old RENAME TO \"d.t\"",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(s->db));
    cr_assert_eq(msg(s, "2", "two", &err), TB_OK, "%s", err.msg);
    tb_code rc = msg(s, "\"abc\"", "text", &err);
    cr_expect_eq(rc, TB_ERR_IO, "%d %s", (int)rc, err.msg);
    cr_expect_not_null(strstr(err.msg, "INTEGER PRIMARY KEY"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "start it again to rebuild it"), "%s", err.msg);
    cr_expect_str_eq(rows_of(s), "integer:1=one;integer:2=two;");
    close_store(s);
}
