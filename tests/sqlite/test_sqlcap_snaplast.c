/*
 * test_sqlcap_snaplast: the end of a SQLite snapshot is always marked
 * (source.snapshot "last", which the reconcile step and `run`'s snapshot
 * state wait for), whichever tables are empty: `tributary run` (sink=stdout,
 * the harness sqlcap_stdout.h) on databases whose last tables (in the order
 * the snapshot reads them) have no rows, WAL and trigger capture. The oracle
 * is the source read with SQL: the snapshot's events are exactly its rows,
 * exactly one of them is marked "last", and it is the last one.
 *
 *   wal_empty_tables_last        tables after the last non-empty one are empty
 *   wal_one_row                  a single row before empty tables
 *   trigger_empty_tables_last    the same in trigger mode, the first table
 *                                holding exactly one batch (1000 rows) of its
 *                                snapshot reader
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlcap_stdout.h"

TestSuite(sqlcap_snaplast, .fini = sqs_teardown);

static long long source_count(const char *const *tables, size_t n)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(dbp, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long long total = 0;
    for (size_t i = 0; i < n; i++) {
        char *q = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", tables[i]);
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        total += sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_free(q);
    }
    sqlite3_close(h);
    return total;
}

static void run_case(const char *tag, const char *mode_line, const char *init_sql, const char *const *tables,
                     size_t ntables)
{
    sqs_setup(tag, mode_line);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, init_sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    pid_t p = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 30000);
    stop_run(p);

    long long rows = source_count(tables, ntables), snap = 0, last_at = -1, lasts = 0;
    char *b = slurp(outp);
    cr_assert_not_null(b);
    for (char *line = b, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        json_t *o = json_loadb(line, (size_t)(nl - line), 0, NULL);
        cr_assert_not_null(o);
        json_t *v = json_object_get(o, "value");
        const char *op = json_is_object(v) ? json_string_value(json_object_get(v, "op")) : NULL;
        const char *sf = op ? json_string_value(json_object_get(json_object_get(v, "source"), "snapshot")) : NULL;
        if (op && strcmp(op, "r") == 0 && sf && strcmp(sf, "false") != 0) {
            snap++;
            if (strcmp(sf, "last") == 0) {
                lasts++;
                last_at = snap;
            }
        }
        json_decref(o);
    }
    free(b);
    cr_expect_eq(snap, rows, "the snapshot sent %lld rows, the source holds %lld", snap, rows);
    cr_expect_eq(lasts, 1, "%lld snapshot events marked last", lasts);
    cr_expect_eq(last_at, snap, "the event marked last is snapshot event %lld of %lld", last_at, snap);
}

#define EMPTY_AFTER                                                                                                  \
    "CREATE TABLE z1(id INTEGER PRIMARY KEY, v); CREATE TABLE z2(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"             \
    "CREATE TABLE z3(a, b);"

static const char *const kTables[] = {"a", "b", "z1", "z2", "z3"};

Test(sqlcap_snaplast, wal_empty_tables_last)
{
    run_case("sqlast", "",
             "PRAGMA journal_mode=WAL; CREATE TABLE a(id INTEGER PRIMARY KEY, v);"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500) "
             "INSERT INTO a SELECT i, hex(randomblob(20)) FROM n;"
             "CREATE TABLE b(id INTEGER PRIMARY KEY, v); INSERT INTO b VALUES(1, 'x'), (2, 'y');" EMPTY_AFTER,
             kTables, 5);
}

Test(sqlcap_snaplast, wal_one_row)
{
    run_case("sqlast1", "",
             "PRAGMA journal_mode=WAL; CREATE TABLE a(id INTEGER PRIMARY KEY, v); CREATE TABLE b(id INTEGER PRIMARY "
             "KEY, v); INSERT INTO b VALUES(1, 'x');" EMPTY_AFTER,
             kTables, 5);
}

Test(sqlcap_snaplast, trigger_empty_tables_last)
{
    run_case("sqlastt", "source.sqlite.mode=trigger\n",
             "CREATE TABLE a(id INTEGER PRIMARY KEY, v);"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
             "INSERT INTO a SELECT i, hex(randomblob(20)) FROM n;"
             "CREATE TABLE b(id INTEGER PRIMARY KEY, v);" EMPTY_AFTER,
             kTables, 5);
}
