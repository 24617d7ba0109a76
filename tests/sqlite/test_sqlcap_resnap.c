/*
 * test_sqlcap_resnap: with sink=stdout writing to a regular file, the file is
 * the changelog of every topic its lines name, and a snapshot taken again
 * ends with the reconcile step (DESIGN 6a): every key a table's lines hold
 * that the table lacks is deleted (delete event and tombstone). The state is
 * the one a kill -9 during the first snapshot leaves (its lines written, no
 * position stored): `tributary run` (the harness sqlcap_stdout.h) snapshots,
 * stops, its stored position is removed, rows are deleted, updated and added
 * (a rowid table, a WITHOUT ROWID table with a composite key emptied, a
 * table left alone); the next run snapshots again. The oracle is the source read with SQL: the
 * output read as a table equals each table, and the run WARNs the number of
 * keys it deleted. WAL and trigger capture.
 *
 *   wal_snapshot_again       WAL capture
 *   trigger_snapshot_again   trigger capture
 *   pipe_output_no_reconcile the output a pipe: nothing can be read back, so
 *                            the snapshot is sent without the step and the
 *                            run neither fails nor claims a reconcile
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

TestSuite(sqlcap_resnap, .fini = sqs_teardown);

static const char *const kTables[] = {"a", "b", "c", "m"};

static void init_db(void)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h,
                              "PRAGMA journal_mode=WAL;"
                              "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT);"
                              "CREATE TABLE b(k TEXT, n INTEGER, w TEXT, PRIMARY KEY(k, n)) WITHOUT ROWID;"
                              "CREATE TABLE c(id INTEGER PRIMARY KEY, v TEXT);"
                              "CREATE TABLE m(id INTEGER PRIMARY KEY, note TEXT);"
                              "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60) "
                              "INSERT INTO a SELECT i, 'a' || i FROM s;"
                              "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 12) "
                              "INSERT INTO b SELECT 'k' || (i % 3), i, 'w' || i FROM s;"
                              "INSERT INTO c VALUES (1, 'c1'), (2, 'c2');"
                              "INSERT INTO m VALUES (0, 'start');",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void snapshot_again(const char *tag, const char *mode_line)
{
    sqs_setup(tag, mode_line);
    init_db();
    pid_t p = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);
    stop_run(p);
    /* what a kill -9 in the first snapshot leaves: its lines, no position */
    char offp[160];
    snprintf(offp, sizeof offp, "%s/offsets", dir);
    cr_assert_eq(unlink(offp), 0, "no stored position at %s", offp);
    app_sql("DELETE FROM a WHERE id BETWEEN 5 AND 9 OR id = 60; UPDATE a SET v = 'new' WHERE id = 3;"
            "INSERT INTO a VALUES (61, 'a61'); DELETE FROM b;",
            false);

    p = start_run(NULL);
    /* a row written after the second snapshot: once it is out, so is the reconcile before it */
    app_sql("INSERT INTO m VALUES (1, 'after')", false);
    wait_for("\"topic\":\"tg.app.m\",\"key\":{\"id\":1}", 60000);
    stop_run(p);
    expect_tables_equal(kTables, 4);
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    char *log = slurp(logp), *out = slurp(outp);
    cr_assert_not_null(log);
    cr_assert_not_null(out);
    cr_expect_not_null(strstr(log, "app.a: reconcile after snapshot: 6 key(s)"), "a: no reconcile of 6 keys:\n%s", log);
    cr_expect_not_null(strstr(log, "app.b: reconcile after snapshot: 12 key(s)"), "b: no reconcile of 12 keys:\n%s",
                       log);
    /* the tombstones: each deleted key once */
    cr_expect_eq(count_of(out, "\"topic\":\"tg.app.a\",\"key\":{\"id\":7},\"value\":null"), 1, "a: id 7's tombstones");
    cr_expect_eq(count_of(out, "\"value\":null"), 6 + 12, "tombstones in the output:\n%s", log);
    free(log);
    free(out);
}

Test(sqlcap_resnap, wal_snapshot_again, .timeout = 180)
{
    snapshot_again("rsnw", "");
}

Test(sqlcap_resnap, trigger_snapshot_again, .timeout = 180)
{
    snapshot_again("rsnt", "source.sqlite.mode=trigger\n");
}

Test(sqlcap_resnap, pipe_output_no_reconcile, .timeout = 180)
{
    sqs_setup("rsnp", "");
    init_db();
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0); /* the child holds only the write end, on its stdout */
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    pid_t p = start_run_to(NULL, fds[1]);
    close(fds[1]);
    /* read the pipe until the snapshot's last row */
    FILE *in = fdopen(fds[0], "r");
    cr_assert_not_null(in);
    char *line = NULL;
    size_t cap = 0;
    int rows = 0;
    bool last = false;
    while (!last && getline(&line, &cap, in) > 0) {
        rows += strstr(line, "\"op\":\"r\"") != NULL;
        last = strstr(line, "\"snapshot\":\"last\"") != NULL;
    }
    free(line);
    cr_expect(last, "the pipe ended before the snapshot's last row (see %s)", dir);
    cr_expect_eq(rows, 60 + 12 + 2 + 1, "snapshot rows on the pipe");
    kill(p, SIGTERM);
    fclose(in); /* a write after this is a closed pipe: the run may report it */
    int st = sqlcap_test_wait(p);
    cr_expect(st == 0 || st == 1, "tributary run ended with %d (see %s)", st, dir);
    char *log = slurp(logp);
    cr_assert_not_null(log);
    cr_expect_null(strstr(log, "reconcile after"), "a reconcile claimed with a pipe output:\n%s", log);
    cr_expect_null(strstr(log, "ERROR"), "an error with a pipe output:\n%s", log);
    free(log);
}
