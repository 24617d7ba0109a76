/*
 * test_cache_names: the names of cache tables (DESIGN 9, docs/cache.md
 * "Table names"): from the source names a schema record carries, not the
 * sanitized topic names; two source tables whose names SQLite cannot hold
 * apart (it compares table names without case) both cached, under the
 * documented mapping, whichever arrives first. Checked with SQLite's own
 * catalogue and rows (the oracle), through cache_apply_schema and
 * cache_apply_msg.
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
    cache_tmp_path(path, sizeof path, "test_cache_names");
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    return s;
}

static void close_store(cache_store *s, bool remove)
{
    tb_error err;
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    if (remove)
        cache_tmp_rm(path);
}

static tb_code schema(cache_store *s, const char *db, const char *table, tb_error *err)
{
    char v[512];
    snprintf(v, sizeof v,
             "{\"db\":\"%s\",\"table\":\"%s\",\"version\":1,\"names_known\":true,\"columns\":[{\"name\":\"id\","
             "\"type\":\"int\"},{\"name\":\"v\",\"type\":\"varchar\"}],\"primary_key\":[\"id\"]}",
             db, table);
    return cache_apply_schema(s, "p", "{}", 2, v, strlen(v), NULL, NULL, err);
}

static tb_code row(cache_store *s, const char *topic, int id, const char *v, tb_error *err)
{
    char key[64], val[128];
    snprintf(key, sizeof key, "{\"id\":%d}", id);
    snprintf(val, sizeof val, "{\"id\":%d,\"v\":\"%s\"}", id, v);
    tb_code rc = cache_apply_msg(s, topic, "p", 0, key, strlen(key), val, strlen(val), err);
    tb_error e2;
    if (rc == TB_OK)
        rc = cache_store_flush(s, &e2);
    cache_store_release(s);
    return rc;
}

/* The v of row id in table `name` (NULL: no such row or table). */
static char *value_of(cache_store *s, const char *name, int id)
{
    static char out[128];
    char sql[256];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT v FROM \"%s\" WHERE id=%d", name, id);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    char *r = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
        r = out;
    }
    sqlite3_finalize(st);
    return r;
}

/* How many user tables SQLite holds (the cache's own start with _tributary_). */
static int tables(cache_store *s)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(s->db,
                                    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                                    "'\\_tributary\\_%' ESCAPE '\\'",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

Test(cache_names, source_names_not_topic_names)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(schema(s, "s5 space", "my table", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.s5_space.my_table", 1, "a", &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(value_of(s, "s5 space.my table", 1), "a");
    cr_assert_null(value_of(s, "s5_space.my_table", 1));
    cr_assert_eq(tables(s), 1);
    close_store(s, true);
}

/* A row before its schema record (another partition, or a schema topic read late): the inferred
 * table takes the source name once the record arrives. */
Test(cache_names, source_names_after_inferred)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(row(s, "p.s5_space.my_table", 1, "a", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(schema(s, "s5 space", "my table", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.s5_space.my_table", 2, "b", &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(value_of(s, "s5 space.my table", 2), "b");
    cr_assert_eq(tables(s), 1);
    close_store(s, true);
}

static void case_variants(bool rows_first)
{
    cache_store *s = open_store();
    tb_error err;
    if (!rows_first) {
        cr_assert_eq(schema(s, "r7", "Orders", &err), TB_OK, "%s", err.msg);
        cr_assert_eq(schema(s, "r7", "orders", &err), TB_OK, "%s", err.msg);
        cr_assert_eq(schema(s, "r7", "other", &err), TB_OK, "%s", err.msg);
    }
    cr_assert_eq(row(s, "p.r7.Orders", 1, "upper", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.r7.orders", 1, "lower", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.r7.other", 1, "o", &err), TB_OK, "%s", err.msg);
    if (rows_first) { /* the inferred tables are rebuilt: the run replays their topics */
        cr_assert_eq(schema(s, "r7", "Orders", &err), TB_OK, "%s", err.msg);
        cr_assert_eq(schema(s, "r7", "orders", &err), TB_OK, "%s", err.msg);
        cr_assert_eq(row(s, "p.r7.Orders", 1, "upper", &err), TB_OK, "%s", err.msg);
        cr_assert_eq(row(s, "p.r7.orders", 1, "lower", &err), TB_OK, "%s", err.msg);
    }
    cr_assert_eq(tables(s), 3);
    /* the first keeps its name; the second is "<name>~<16 hex digits of FNV-1a 64 of the name>" */
    cr_assert_str_eq(value_of(s, "r7.Orders", 1), "upper");
    cr_assert_str_eq(value_of(s, "r7.orders~762889a3fec57539", 1), "lower");
    cr_assert_str_eq(value_of(s, "r7.other", 1), "o");
    /* the recorded topic names which is which */
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(s->db, "SELECT tbl FROM _tributary_tables WHERE topic='p.r7.orders'", -1, &st,
                                    NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "r7.orders~762889a3fec57539");
    sqlite3_finalize(st);
    close_store(s, false);
    /* and a restart finds both again */
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    cr_assert_eq(row(s, "p.r7.orders", 2, "lower2", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.r7.Orders", 2, "upper2", &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(value_of(s, "r7.orders~762889a3fec57539", 2), "lower2");
    cr_assert_str_eq(value_of(s, "r7.Orders", 2), "upper2");
    close_store(s, true);
}

Test(cache_names, case_variants_typed) { case_variants(false); }
Test(cache_names, case_variants_inferred) { case_variants(true); }

/* A schema record whose db or table is not a name: an error saying so (the policy applies), not
 * "out of memory". */
Test(cache_names, bad_names_in_a_schema_record)
{
    cache_store *s = open_store();
    tb_error err;
    const char *bad[][2] = {{"a\\u0000b", "db"}, {"t\\u0000", "table"}};
    for (int i = 0; i < 2; i++) {
        char v[512];
        snprintf(v, sizeof v,
                 "{\"db\":\"%s\",\"table\":\"%s\",\"version\":1,\"columns\":[{\"name\":\"id\",\"type\":\"int\"}],"
                 "\"primary_key\":[\"id\"]}",
                 i == 0 ? bad[i][0] : "d", i == 1 ? bad[i][0] : "t");
        cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, v, strlen(v), NULL, NULL, &err), TB_ERR_INVALID, "%s", v);
        cr_expect_null(strstr(err.msg, "out of memory"), "%s", err.msg);
        char want[64];
        snprintf(want, sizeof want, "its %s holds a NUL character", bad[i][1]);
        cr_expect_not_null(strstr(err.msg, want), "%s", err.msg);
        /* the same in a dropped record */
        snprintf(v, sizeof v, "{\"db\":\"%s\",\"table\":\"%s\",\"dropped\":true}", i == 0 ? bad[i][0] : "d",
                 i == 1 ? bad[i][0] : "t");
        cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, v, strlen(v), NULL, NULL, &err), TB_ERR_INVALID, "%s", v);
        cr_expect_not_null(strstr(err.msg, want), "%s", err.msg);
    }
    cr_assert_eq(tables(s), 0);
    close_store(s, true);
}

/* A source RENAME replayed from scratch: the schema topic first (the old name's record, then the
 * new name's with renamed_from), then the old topic's rows and deletes, then the new topic's rows.
 * The old name leaves no (inferred, empty) table behind, so every table is typed and `cache
 * publish` takes them all. */
Test(cache_names, rename_replayed_from_scratch)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(schema(s, "d", "a", &err), TB_OK, "%s", err.msg);
    const char *rec = "{\"db\":\"d\",\"table\":\"b\",\"version\":2,\"names_known\":true,\"columns\":[{\"name\":"
                      "\"id\",\"type\":\"int\"},{\"name\":\"v\",\"type\":\"varchar\"}],\"primary_key\":[\"id\"],"
                      "\"renamed_from\":{\"db\":\"d\",\"table\":\"a\"}}";
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_OK, "%s", err.msg);
    for (int id = 1; id <= 2; id++)
        cr_assert_eq(row(s, "p.d.a", id, "old", &err), TB_OK, "%s", err.msg);
    for (int id = 1; id <= 2; id++) {
        char key[32];
        snprintf(key, sizeof key, "{\"id\":%d}", id);
        cr_assert_eq(cache_apply_msg(s, "p.d.a", "p", 0, key, strlen(key), NULL, 0, &err), TB_OK, "%s", err.msg);
    }
    for (int id = 1; id <= 2; id++)
        cr_assert_eq(row(s, "p.d.b", id, "new", &err), TB_OK, "%s", err.msg);
    cr_expect_eq(tables(s), 1);
    cr_expect_str_eq(value_of(s, "d.b", 2), "new");
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(s->db, "SELECT count(*) FROM _tributary_tables WHERE inferred != 0", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_eq(sqlite3_column_int(st, 0), 0, "an inferred table is left (cache publish refuses it)");
    sqlite3_finalize(st);
    /* the old name created again at the source: its topic applies again */
    cr_assert_eq(schema(s, "d", "a", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.d.a", 7, "again", &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(value_of(s, "d.a", 7), "again");
    close_store(s, true);
}

/* A source RENAME read live: the rename record is applied before the old topic's last message
 * (a delete the source made before the RENAME; schema records come first in each batch), which
 * the old name's mark then leaves unapplied. The renamed table holds what the new name's topic
 * holds (the connector's resnapshot), not a row kept from the old table that the source had
 * deleted. */
Test(cache_names, rename_live_keeps_no_row_deleted_before_it)
{
    cache_store *s = open_store();
    tb_error err;
    cr_assert_eq(schema(s, "d", "a", &err), TB_OK, "%s", err.msg);
    for (int id = 1; id <= 3; id++)
        cr_assert_eq(row(s, "p.d.a", id, "old", &err), TB_OK, "%s", err.msg);
    const char *rec = "{\"db\":\"d\",\"table\":\"b\",\"version\":2,\"names_known\":true,\"columns\":[{\"name\":"
                      "\"id\",\"type\":\"int\"},{\"name\":\"v\",\"type\":\"varchar\"}],\"primary_key\":[\"id\"],"
                      "\"renamed_from\":{\"db\":\"d\",\"table\":\"a\"}}";
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_OK, "%s", err.msg);
    const char *key = "{\"id\":2}"; /* the delete made before the RENAME, read after its record */
    cr_assert_eq(cache_apply_msg(s, "p.d.a", "p", 0, key, strlen(key), NULL, 0, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.d.b", 1, "new", &err), TB_OK, "%s", err.msg); /* the resnapshot's reads */
    cr_assert_eq(row(s, "p.d.b", 3, "new", &err), TB_OK, "%s", err.msg);
    cr_expect_eq(tables(s), 1);
    cr_expect_str_eq(value_of(s, "d.b", 1), "new");
    cr_expect_null(value_of(s, "d.b", 2), "row 2, deleted before the RENAME, is in the renamed table");
    cr_expect_str_eq(value_of(s, "d.b", 3), "new");
    close_store(s, true);
}

/* Column names that differ only in case (SQLite cannot hold both): the record or message naming
 * them is refused as bad input (cache.error.policy), never as a failure of the cache file. */
Test(cache_names, column_case_variants_refused_as_input)
{
    cache_store *s = open_store();
    tb_error err;
    const char *rec = "{\"db\":\"d\",\"table\":\"c\",\"version\":1,\"columns\":[{\"name\":\"id\",\"type\":\"int\"},"
                      "{\"name\":\"v\",\"type\":\"int\"},{\"name\":\"V\",\"type\":\"int\"}],\"primary_key\":[\"id\"]}";
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_ERR_INVALID);
    cr_expect_not_null(strstr(err.msg, "columns \"v\" and \"V\" differ only in case"), "%s", err.msg);
    cr_assert_eq(schema(s, "d", "t", &err), TB_OK, "%s", err.msg);
    const char *key = "{\"id\":1}", *val = "{\"id\":1,\"v\":\"a\",\"V\":\"b\"}";
    cr_assert_eq(cache_apply_msg(s, "p.d.t", "p", 0, key, strlen(key), val, strlen(val), &err), TB_ERR_INVALID);
    cr_expect_not_null(strstr(err.msg, "differ only in case"), "%s", err.msg);
    cache_store_discard(s);
    cache_store_release(s);
    cr_assert_eq(row(s, "p.d.t", 2, "ok", &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(value_of(s, "d.t", 2), "ok");
    close_store(s, true);
}

/* A schema record of n columns id, c1.. (int) for d.w, version ver. */
static char *wide_record(int n, int ver)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_buf_printf(&b, "{\"db\":\"d\",\"table\":\"w\",\"version\":%d,\"columns\":[{\"name\":\"id\",\"type\":"
                      "\"int\"}", ver);
    for (int i = 1; i < n; i++)
        tb_buf_printf(&b, ",{\"name\":\"c%d\",\"type\":\"int\"}", i);
    tb_buf_puts(&b, "],\"primary_key\":[\"id\"]}");
    return (char *)b.data;
}

/* A table wider than SQLite holds (SQLITE_LIMIT_COLUMN: 2000 with the cache's own _partition):
 * its record, the record adding the column past the limit, and a message with more fields than
 * the limit are refused as the cache's own column is (TB_ERR_UNSUPPORTED: the cache stops,
 * naming the table, the limit and the fix), never as a failure of the cache file. */
Test(cache_names, table_wider_than_sqlite_refused)
{
    cache_store *s = open_store();
    tb_error err;
    int max = sqlite3_limit(s->db, SQLITE_LIMIT_COLUMN, -1);
    char *rec = wide_record(max, 1);
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_ERR_UNSUPPORTED);
    cr_expect_not_null(strstr(err.msg, "table \"d.w\": "), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "SQLite holds at most"), "%s", err.msg);
    free(rec);
    cache_store_discard(s);
    cache_store_release(s);
    rec = wide_record(max - 1, 1);
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_OK, "%s", err.msg);
    free(rec);
    const char *key = "{\"id\":1}", *val = "{\"id\":1,\"c1\":5}";
    cr_assert_eq(cache_apply_msg(s, "p.d.w", "p", 0, key, strlen(key), val, strlen(val), &err), TB_OK, "%s",
                 err.msg);
    cr_assert_eq(cache_store_flush(s, &err), TB_OK, "%s", err.msg);
    cache_store_release(s);
    rec = wide_record(max, 2); /* one more column */
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_ERR_UNSUPPORTED);
    cr_expect_not_null(strstr(err.msg, "SQLite holds at most"), "%s", err.msg);
    free(rec);
    cache_store_discard(s);
    cache_store_release(s);
    /* a table without a schema record, its columns from a message's fields */
    tb_buf v;
    tb_buf_init(&v, 0);
    tb_buf_puts(&v, "{\"id\":1");
    for (int i = 1; i < max; i++)
        tb_buf_printf(&v, ",\"f%d\":%d", i, i);
    tb_buf_putc(&v, '}');
    tb_code rc = cache_apply_msg(s, "p.d.inferred", "p", 0, key, strlen(key), v.data, v.len, &err);
    cr_expect(rc == TB_ERR_UNSUPPORTED, "code %d: %s", (int)rc, err.msg);
    tb_buf_free(&v);
    cache_store_discard(s);
    cache_store_release(s);
    cr_assert_eq(schema(s, "d", "t", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(row(s, "p.d.t", 2, "ok", &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(value_of(s, "d.t", 2), "ok");
    close_store(s, true);
}

static char warned[2048];

static void warn_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)opaque;
    if (level == TB_LOG_WARN && !*warned)
        snprintf(warned, sizeof warned, "%s", line);
}

/* A table of tributary's encoding (an envelope without ts_us, or a row) whose schema record was
 * not read: a WARN naming the table, its topic and the fix (an INFO before). */
Test(cache_names, inferred_tributary_table_warns)
{
    cache_store *s = open_store();
    tb_error err;
    tb_log_set_sink(warn_sink, NULL);
    const char *key = "{\"id\":1}",
               *val = "{\"before\":null,\"after\":{\"id\":1,\"b\":\"AP8=\"},\"source\":{},\"op\":\"c\"}";
    cr_assert_eq(cache_apply_msg(s, "p.shop.items", "p", 0, key, strlen(key), val, strlen(val), &err), TB_OK, "%s",
                 err.msg);
    tb_log_set_sink(NULL, NULL);
    cr_expect_not_null(strstr(warned, "table \"shop.items\": no schema record for topic p.shop.items was read"),
                       "%s", warned);
    cr_expect_not_null(strstr(warned, "<prefix>.schema"), "%s", warned);
    cache_store_flush(s, &err);
    cache_store_release(s);
    close_store(s, true);
}
