/*
 * test_sqlcap_newtable: a table created while streaming (WAL capture) is
 * announced at once, as MySQL's CREATE TABLE is: its schema record (and, with
 * Kafka, its topic) comes in the transaction that created it, not with a first
 * row that may never come. `tributary run` with sink=stdout (the harness
 * sqlcap_stdout.h) streams an application that
 *   - creates an empty table,
 *   - creates a table, fills it and empties it in one transaction (no row
 *     survives, so no row event announces it),
 *   - renames that empty table,
 *   - creates a table with a row in the same transaction,
 *   - later writes a row into the first empty table,
 * each followed by a row into a marker table, so the output up to the marker
 * holds everything of that transaction. The oracle is the application's own
 * statements: each table's schema record is in the output before the marker
 * after its statement, once (the first row of a table announced empty brings
 * no second record), and the output read as a table equals every table.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap_stdout.h"

TestSuite(sqlcap_newtable, .fini = sqs_teardown);

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The output holds table's schema record exactly once, before the marker row id. */
static void expect_announced_before(const char *table, int marker)
{
    char rec[128], mark[128];
    snprintf(rec, sizeof rec, "\"topic\":\"tg.schema\",\"key\":{\"db\":\"app\",\"table\":\"%s\"}", table);
    snprintf(mark, sizeof mark, "\"topic\":\"tg.app.m\",\"key\":{\"id\":%d}", marker);
    wait_for(mark, 60000);
    char *out = slurp(outp);
    cr_assert_not_null(out);
    const char *r = strstr(out, rec), *m = strstr(out, mark);
    cr_expect_not_null(r, "no schema record of %s before marker %d (see %s)", table, marker, dir);
    cr_expect(r && m && r < m, "the schema record of %s comes after marker %d (see %s)", table, marker, dir);
    cr_expect_eq(count_of(out, rec), 1, "schema records of %s (see %s)", table, dir);
    free(out);
}

Test(sqlcap_newtable, wal_tables_announced_when_created, .timeout = 180)
{
    sqs_setup("ntw", "");
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h,
                              "PRAGMA journal_mode=WAL;"
                              "CREATE TABLE m(id INTEGER PRIMARY KEY, note TEXT);"
                              "INSERT INTO m VALUES (0, 'start');",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    pid_t p = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);

    app_sql("CREATE TABLE e(id INTEGER PRIMARY KEY, v TEXT)", false);
    app_sql("INSERT INTO m VALUES (1, 'after e')", false);
    expect_announced_before("e", 1);

    app_sql("BEGIN; CREATE TABLE f(k TEXT PRIMARY KEY NOT NULL, n INTEGER) WITHOUT ROWID;"
            "INSERT INTO f VALUES ('x', 1), ('y', 2); DELETE FROM f; COMMIT",
            false);
    app_sql("INSERT INTO m VALUES (2, 'after f')", false);
    expect_announced_before("f", 2);

    app_sql("ALTER TABLE f RENAME TO g", false);
    app_sql("INSERT INTO m VALUES (3, 'after g')", false);
    expect_announced_before("g", 3);

    app_sql("BEGIN; CREATE TABLE r(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO r VALUES (7, 'seven'); COMMIT",
            false);
    app_sql("INSERT INTO m VALUES (4, 'after r')", false);
    expect_announced_before("r", 4);

    app_sql("INSERT INTO e VALUES (1, 'e1'); INSERT INTO g VALUES ('z', 3)", false);
    app_sql("INSERT INTO m VALUES (5, 'after rows')", false);
    expect_announced_before("e", 5); /* still once: its first row brings no second record */
    expect_announced_before("g", 5);
    stop_run(p);

    static const char *const tables[] = {"e", "g", "m", "r"};
    expect_tables_equal(tables, 4);
    char *out = slurp(outp);
    cr_assert_not_null(out);
    cr_expect_eq(count_of(out, "\"topic\":\"tg.app.e\",\"key\":{\"id\":1}"), 1, "e's row (see %s)", dir);
    cr_expect_eq(count_of(out, "\"topic\":\"tg.app.r\",\"key\":{\"id\":7}"), 1, "r's row (see %s)", dir);
    free(out);
}
