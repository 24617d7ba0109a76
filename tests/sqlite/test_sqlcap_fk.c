/*
 * test_sqlcap_fk: SQLite's foreign key actions (ON DELETE / ON UPDATE CASCADE, SET NULL), end to
 * end with `tributary run` (sink=stdout, the harness sqlcap_stdout.h), WAL and trigger capture.
 *
 * MariaDB runs such actions inside the storage engine and logs no row of them (app/run_fk.c, a
 * snapshot of the child follows); SQLite writes the child rows to the same WAL frames as any
 * change and fires the child's triggers for them, so both capture modes see them as rows of the
 * transaction. Checked: after a parent DELETE (cascading to a child and, through it, to a
 * grandchild set to NULL) and a parent key UPDATE (cascading to the child's column), each table's
 * output read as a compacted topic equals the table, and the run logs no WARN.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlcap_stdout.h"

TestSuite(sqlcap_fk, .fini = sqs_teardown);

static void run_case(const char *tag, const char *mode_line, const char *journal)
{
    sqs_setup(tag, mode_line);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    char *init = sqlite3_mprintf(
        "PRAGMA journal_mode=%s; PRAGMA foreign_keys=ON;"
        "CREATE TABLE p(id INTEGER PRIMARY KEY, v TEXT);"
        "CREATE TABLE c(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE ON UPDATE CASCADE,"
        " v TEXT);"
        "CREATE TABLE g(id INTEGER PRIMARY KEY, cid INTEGER REFERENCES c(id) ON DELETE SET NULL, v TEXT);"
        "CREATE TABLE marker(id INTEGER PRIMARY KEY, x);"
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 40)"
        " INSERT INTO p SELECT n, 'p' || n FROM s WHERE n <= 10;"
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 40)"
        " INSERT INTO c SELECT n, n %% 10 + 1, 'c' || n FROM s;"
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 40)"
        " INSERT INTO g SELECT n, n, 'g' || n FROM s;"
        "INSERT INTO marker VALUES(0, 'start');",
        journal);
    cr_assert_eq(sqlite3_exec(h, init, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_free(init);
    sqlite3_close(h);

    pid_t p = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);
    /* foreign keys are a setting of each connection: on in this one */
    app_sql("PRAGMA foreign_keys=ON; BEGIN; DELETE FROM p WHERE id IN (1, 2); UPDATE p SET id = 103 WHERE id = 3;"
            "INSERT INTO marker VALUES(1, 'done'); COMMIT;",
            false);
    wait_for("\"x\":\"done\"", 60000);
    stop_run(p);
    h = NULL;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    sqlite3_stmt *st;
    const char *q = "SELECT (SELECT count(*) FROM c WHERE pid IN (1, 2, 3)),"
                    " (SELECT count(*) FROM g WHERE cid IS NULL), (SELECT count(*) FROM c WHERE pid = 103)";
    cr_assert_eq(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    /* the actions ran: the test would prove nothing otherwise */
    cr_assert_eq(sqlite3_column_int(st, 0), 0, "the child rows of the deleted and changed parents remain");
    cr_assert_eq(sqlite3_column_int(st, 1), 8, "SET NULL did not reach the grandchild");
    cr_assert_eq(sqlite3_column_int(st, 2), 4, "ON UPDATE CASCADE did not change the child's column");
    sqlite3_finalize(st);
    sqlite3_close(h);
    const char *tables[] = {"p", "c", "g"};
    expect_tables_equal(tables, 3);
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    char *log = slurp(logp);
    cr_assert_not_null(log);
    cr_expect_null(strstr(log, "WARN"), "a WARN in %s", logp);
    free(log);
}

Test(sqlcap_fk, wal) { run_case("sqfk", "", "WAL"); }

Test(sqlcap_fk, trigger) { run_case("sqfkt", "source.sqlite.mode=trigger\n", "DELETE"); }
