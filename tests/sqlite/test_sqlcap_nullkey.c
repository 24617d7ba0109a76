/*
 * test_sqlcap_nullkey: a declared primary key that holds NULL (a rowid table
 * allows it: `k TEXT PRIMARY KEY`), end to end with `tributary run`
 * (sink=stdout, the harness sqlcap_stdout.h), WAL and trigger capture.
 *
 * Such a row's message key takes its rowid as well ({"k":null,"__rowid":7},
 * DESIGN 8 "Keys"), so the output read as a compacted topic (the last record
 * per message key; a tombstone or delete removes it) holds every row apart:
 * it equals the source's rows, each under the key the source gives it (its
 * key columns, and its rowid when one of them is NULL), read with SQL. Rows
 * whose key holds no NULL keep their key unchanged. The run logs one INFO for
 * the table, none for the tables whose key holds no NULL. Also checked: the
 * capture's events applied to a bag of rows (a create adds its after image, a
 * delete removes its before image, an update replaces one by the other) give
 * the source's rows, with several NULL-key rows changed in one transaction, a
 * key set to NULL and from NULL, a row given another rowid, and (WAL) a VACUUM.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlcap_stdout.h"

TestSuite(sqlcap_nullkey, .fini = sqs_teardown);

/* the rows of `table` as the events give them: a bag of canonical after images, sorted, one a line */
static char *event_bag(const char *table)
{
    char topic[128];
    snprintf(topic, sizeof topic, "tg.app.%s", table);
    sqlite3 *m;
    cr_assert_eq(sqlite3_open(":memory:", &m), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(m, "CREATE TABLE bag(r TEXT)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *add, *del;
    sqlite3_prepare_v2(m, "INSERT INTO bag VALUES(?)", -1, &add, NULL);
    sqlite3_prepare_v2(m, "DELETE FROM bag WHERE rowid = (SELECT min(rowid) FROM bag WHERE r = ?)", -1, &del, NULL);
    char *b = slurp(outp);
    cr_assert_not_null(b);
    for (char *line = b, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        json_t *o = json_loadb(line, (size_t)(nl - line), 0, NULL);
        cr_assert_not_null(o);
        json_t *v = json_object_get(o, "value");
        const char *t = json_string_value(json_object_get(o, "topic"));
        if (t && strcmp(t, topic) == 0 && json_is_object(v)) {
            json_t *bef = json_object_get(v, "before"), *aft = json_object_get(v, "after");
            if (json_is_object(bef)) {
                char *s = canon(bef);
                sqlite3_bind_text(del, 1, s, -1, SQLITE_TRANSIENT);
                cr_assert_eq(sqlite3_step(del), SQLITE_DONE);
                cr_assert_eq(sqlite3_changes(m), 1, "an event's before image %s is no row the events gave", s);
                sqlite3_reset(del);
                free(s);
            }
            if (json_is_object(aft)) {
                char *s = canon(aft);
                sqlite3_bind_text(add, 1, s, -1, SQLITE_TRANSIENT);
                cr_assert_eq(sqlite3_step(add), SQLITE_DONE);
                sqlite3_reset(add);
                free(s);
            }
        }
        json_decref(o);
    }
    free(b);
    sqlite3_finalize(add);
    sqlite3_finalize(del);
    return sqs_lines_close(m, "SELECT r FROM bag ORDER BY r");
}

/* lines of the run's log that hold needle */
static int log_count(const char *needle)
{
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    char *b = slurp(logp);
    cr_assert_not_null(b);
    int n = 0;
    for (char *p = b; (p = strstr(p, needle)); p++)
        n++;
    free(b);
    return n;
}

/* The source's rows of table (k, v) as canonical JSON, sorted, a line each; with_key: as
 * "key<TAB>row" (sqs_topic_rows), the key {"k":…} with "__rowid" the row's rowid when k is NULL. */
static char *source_rows_of(const char *table, bool with_key)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(dbp, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *q = sqlite3_mprintf("SELECT k, v, rowid FROM \"%w\"", table);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK);
    sqlite3_free(q);
    sqlite3 *m;
    cr_assert_eq(sqlite3_open(":memory:", &m), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(m, "CREATE TABLE bag(r TEXT)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *add;
    sqlite3_prepare_v2(m, "INSERT INTO bag VALUES(?)", -1, &add, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        bool null = sqlite3_column_type(st, 0) == SQLITE_NULL;
        json_t *row = json_object(), *key = json_object();
        json_t *k = null ? json_null() : json_string((const char *)sqlite3_column_text(st, 0));
        json_object_set(row, "k", k);
        json_object_set_new(key, "k", k);
        json_object_set_new(row, "v", json_integer(sqlite3_column_int64(st, 1)));
        if (null)
            json_object_set_new(key, "__rowid", json_integer(sqlite3_column_int64(st, 2)));
        char *ks = canon(key), *rs = canon(row);
        char *line = with_key ? sqlite3_mprintf("%s\t%s", ks, rs) : sqlite3_mprintf("%s", rs);
        sqlite3_bind_text(add, 1, line, -1, SQLITE_TRANSIENT);
        cr_assert_eq(sqlite3_step(add), SQLITE_DONE);
        sqlite3_reset(add);
        sqlite3_free(line);
        free(ks);
        free(rs);
        json_decref(row);
        json_decref(key);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    sqlite3_finalize(add);
    return sqs_lines_close(m, "SELECT r FROM bag ORDER BY r");
}

static void run_case(const char *tag, const char *mode_line, const char *journal, bool wal)
{
    sqs_setup(tag, mode_line);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    char *init = sqlite3_mprintf(
        "PRAGMA journal_mode=%s;"
        "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER);"      /* NULL keys */
        "CREATE TABLE plain(k TEXT PRIMARY KEY, v INTEGER);"  /* the common case: nullable, never NULL */
        "CREATE TABLE nn(k TEXT PRIMARY KEY NOT NULL, v INTEGER);"
        "CREATE TABLE marker(id INTEGER PRIMARY KEY, x);"
        "INSERT INTO t VALUES(NULL, 1), (NULL, 2), ('a', 3), (NULL, 5);"
        "INSERT INTO plain VALUES('p', 1); INSERT INTO nn VALUES('q', 1); INSERT INTO marker VALUES(0, 'start');",
        journal);
    cr_assert_eq(sqlite3_exec(h, init, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_free(init);
    sqlite3_close(h);

    pid_t p = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);
    /* one transaction: NULL-key rows inserted, updated, deleted and given a key together */
    app_sql("BEGIN; INSERT INTO t VALUES(NULL, 4); UPDATE t SET v = 20 WHERE v = 2; DELETE FROM t WHERE v = 1;"
            "UPDATE t SET k = 'b' WHERE v = 5; UPDATE t SET k = NULL WHERE k = 'a'; INSERT INTO plain VALUES('r', 2);"
            "COMMIT;",
            false);
    app_sql("INSERT INTO t VALUES(NULL, 6); DELETE FROM t WHERE v = 20; INSERT INTO t VALUES(NULL, 7), (NULL, 8);"
            "INSERT INTO marker VALUES(1, 'mid')", false);
    wait_for("\"x\":\"mid\"", 60000);
    if (wal) /* the rows move (a rowid table without INTEGER PRIMARY KEY may be renumbered) */
        app_sql("DELETE FROM t WHERE v = 6; VACUUM;", false);
    /* ... and one moves to another rowid (its key changes: a delete and a create) */
    app_sql("UPDATE t SET v = v + 100 WHERE k IS NULL AND v > 6; DELETE FROM t WHERE v = 107;"
            "UPDATE t SET rowid = 1000 WHERE v = 108; INSERT INTO marker VALUES(2, 'done')", false);
    wait_for("\"x\":\"done\"", 60000);
    stop_run(p);

    char *a = source_rows_of("t", false), *b = event_bag("t");
    cr_expect_str_eq(b, a, "table t: the events give\n%s\nthe source holds\n%s", b, a);
    free(a);
    free(b);
    a = source_rows_of("t", true);
    b = sqs_topic_rows("t", true);
    cr_expect_str_eq(b, a, "table t read as a compacted topic gives\n%s\nthe source holds\n%s(see %s)", b, a, dir);
    free(a);
    free(b);
    const char *others[] = {"plain", "nn"};
    expect_tables_equal(others, 2);
    char *out = slurp(outp);
    cr_expect_null(strstr(out, "\"topic\":\"tg.app.plain\",\"key\":{\"k\":\"p\",\"__rowid\""),
                   "a key without NULL is unchanged");
    free(out);
    cr_expect_eq(log_count("table t: a row whose primary key (k) holds NULL"), 1, "one INFO naming table t");
    cr_expect_eq(log_count("holds NULL"), 1, "none for the tables whose key holds no NULL (see %s)", dir);
    cr_expect_eq(log_count("WARN"), 0, "no WARN (see %s)", dir);
}

Test(sqlcap_nullkey, wal) { run_case("sqnullk", "", "WAL", true); }

Test(sqlcap_nullkey, trigger) { run_case("sqnullkt", "source.sqlite.mode=trigger\n", "DELETE", false); }
