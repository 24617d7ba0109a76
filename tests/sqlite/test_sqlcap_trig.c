/*
 * test_sqlcap_trig: trigger mode (source.sqlite.mode=trigger) end to end, on
 * rollback-journal (DELETE) databases: `tributary run` with sink=stdout
 * appending to a file, a writer in a separate process, and the output read as
 * a table (the last value per topic and key; a tombstone or a delete removes
 * the key) compared with the source table queried directly.
 *
 *   snapshot_stream_kill9   existing rows snapshotted while a writer inserts,
 *                           updates, deletes and replaces (INSERT/UPDATE OR
 *                           REPLACE through UNIQUE conflicts, OR IGNORE,
 *                           upserts); the connector killed with SIGKILL and
 *                           restarted three times; then `tributary sqlite
 *                           uninstall` leaves no tributary object and an
 *                           integrity_check of ok
 *   replace_conflicts       each REPLACE case of lang_conflict.html by itself
 *                           (one or two rows replaced, NULLs never conflicting,
 *                           a NOCASE unique index, a WITHOUT ROWID table, a
 *                           constraint declared ON CONFLICT REPLACE, the
 *                           writer's recursive_triggers on); then uninstall,
 *                           changes while uninstalled and a start with
 *                           snapshot.mode=when_needed (the stored position
 *                           cannot be resumed: snapshot again); STORED and
 *                           VIRTUAL generated columns (SELECT * on the
 *                           source includes their values), one UNIQUE
 *                           through which a REPLACE deletes
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap_stdout.h"

static void setup(void)
{
    sqs_setup("sqtrig", "source.sqlite.mode=trigger\n");
}

TestSuite(sqlcap_trig, .init = setup, .fini = sqs_teardown);

/* No tributary object left in the database, and integrity_check ok. */
static void expect_uninstalled(bool had_sequence)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "'%s' sqlite uninstall --config '%s' >> '%s/uninstall.log' 2>&1", TRIBUTARY_BIN, cfgp, dir);
    cr_assert_eq(system(cmd), 0, "tributary sqlite uninstall failed (see %s/uninstall.log)", dir);
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT group_concat(name) FROM sqlite_master WHERE name LIKE '\\_cdc%' ESCAPE '\\' "
                                       "OR name = 'sqlite_sequence'", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    const char *left = (const char *)sqlite3_column_text(st, 0);
    if (had_sequence)
        cr_expect_str_eq(left ? left : "", "sqlite_sequence", "uninstall left tributary objects: %s", left);
    else
        cr_expect_null(left, "uninstall left objects in the application's database: %s", left);
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "delete", "journal mode changed");
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* ------------------------------------------------------------ the writer */

static const char *const kTables[] = {"t", "c", "marker"};

static void init_db(int nt, int nc)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    char *sql = sqlite3_mprintf(
        "PRAGMA journal_mode=DELETE;"
        "CREATE TABLE t(id INTEGER PRIMARY KEY, u TEXT UNIQUE, v INTEGER, w TEXT);"
        "CREATE UNIQUE INDEX t_w ON t(w COLLATE NOCASE);"
        "CREATE TABLE c(a TEXT, b INTEGER, x TEXT UNIQUE, n INTEGER, PRIMARY KEY(a, b)) WITHOUT ROWID;"
        "CREATE TABLE marker(id INTEGER PRIMARY KEY, note TEXT);"
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
        "INSERT INTO t SELECT i, 'u' || i, i * 7, 'w' || i FROM s;"
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
        "INSERT INTO c SELECT 'k' || (i %% 13), i, 'x' || i, i FROM s;",
        nt, nc);
    cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_free(sql);
    sqlite3_close(h);
}


/* The writer process: ntx transactions of 1-4 random statements, then the
 * marker row (id mark). Exits 0, or 1 on an SQLite error. */
static void writer_main(unsigned long long seed, int ntx, int mark)
{
    sqlite3 *h;
    if (sqlite3_open(dbp, &h) != SQLITE_OK)
        _exit(1);
    sqlite3_busy_timeout(h, 60000);
    uint64_t x = seed * 2654435761u + 1;
#define RND(n) rnd_n(&x, (n))
    for (int i = 0; i < ntx; i++) {
        sqlite3_str *s = sqlite3_str_new(NULL);
        sqlite3_str_appendall(s, "BEGIN IMMEDIATE;");
        int nst = 1 + RND(4);
        for (int k = 0; k < nst; k++) {
            int id = 1 + RND(400), u = 1 + RND(400), v = RND(100000);
            switch (RND(10)) {
            case 0: sqlite3_str_appendf(s, "INSERT INTO t(u, v, w) VALUES('n%d-%d', %d, 'wn%d-%d');", i, k, v, i, k); break;
            case 1: sqlite3_str_appendf(s, "INSERT OR REPLACE INTO t(u, v, w) VALUES('u%d', %d, 'r%d-%d');", u, v, i, k); break;
            case 2: sqlite3_str_appendf(s, "UPDATE OR REPLACE t SET u = 'u%d', v = %d WHERE id = %d;", u, v, id); break;
            case 3: sqlite3_str_appendf(s, "UPDATE t SET v = %d WHERE id = %d;", v, id); break;
            case 4: sqlite3_str_appendf(s, "DELETE FROM t WHERE id = %d;", id); break;
            case 5: sqlite3_str_appendf(s, "INSERT OR IGNORE INTO t(u, v) VALUES('u%d', %d);", u, v); break;
            case 6:
                sqlite3_str_appendf(s, "INSERT INTO t(u, v) VALUES('u%d', %d) ON CONFLICT(u) DO UPDATE SET v = "
                                       "excluded.v;", u, v);
                break;
            case 7: /* the NOCASE index: 'W5' conflicts with 'w5' */
                sqlite3_str_appendf(s, "INSERT OR REPLACE INTO t(id, u, v, w) VALUES(%d, 'z%d-%d', %d, 'W%d');",
                                    1000 + i * 4 + k, i, k, v, u);
                break;
            case 8:
                sqlite3_str_appendf(s, "INSERT OR REPLACE INTO c VALUES('k%d', %d, 'x%d', %d);", RND(13), RND(300), u, v);
                break;
            default: sqlite3_str_appendf(s, "UPDATE OR REPLACE c SET x = 'x%d', n = %d WHERE b = %d;", u, v, id); break;
            }
        }
        sqlite3_str_appendall(s, "COMMIT;");
        char *sql = sqlite3_str_finish(s);
        if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "writer: %s: %s\n", sqlite3_errmsg(h), sql);
            _exit(1);
        }
        sqlite3_free(sql);
        /* an application's pace (about 1000 commits/s at most), not a
         * synchronisation: back-to-back write locks on a rollback-journal
         * database starve every other connection's busy handler */
        usleep(500);
    }
#undef RND
    char *m = sqlite3_mprintf("INSERT INTO marker VALUES(%d, 'done')", mark);
    if (sqlite3_exec(h, m, NULL, NULL, NULL) != SQLITE_OK)
        _exit(1);
    sqlite3_free(m);
    sqlite3_close(h);
    _exit(0);
}

static pid_t spawn_writer(unsigned long long seed, int ntx, int mark)
{
    fflush(NULL);
    pid_t p = fork();
    cr_assert_geq(p, 0);
    if (p == 0)
        writer_main(seed, ntx, mark);
    return p;
}


/* ------------------------------------------------------------ tests */

Test(sqlcap_trig, snapshot_stream_kill9, .timeout = 600)
{
    unsigned long long seed = test_seed();
    fprintf(stderr, "sqlcap_trig snapshot_stream_kill9: seed %llu (SQLCAP_SEED=%llu to reproduce)\n", seed, seed);
    init_db(3000, 800);
    pid_t run = start_run(NULL);
    pid_t wr = spawn_writer(seed, 1500, 1);
    /* kill -9 three times, each once the output has grown since the last start */
    for (int kills = 0; kills < 3; kills++) {
        off_t base = file_size(outp);
        int64_t end = now_ms() + 120000;
        while (file_size(outp) < base + 20000 + (off_t)(seed % 7) * 9000) {
            cr_assert(now_ms() < end, "the output stopped growing (kill %d, see %s)", kills, dir);
            usleep(5000); /* polling interval of the condition above */
        }
        kill(run, SIGKILL);
        cr_assert_eq(sqlcap_test_wait(run), 128 + SIGKILL, "tributary run ended before it was killed (see %s)", dir);
        run = start_run(NULL);
    }
    cr_assert_eq(sqlcap_test_wait(wr), 0, "the writer failed");
    /* a row written after the last start: once it is out, so is everything before it */
    app_sql("INSERT INTO marker VALUES(2, 'last')", false);
    wait_for("\"topic\":\"tg.app.marker\",\"key\":{\"id\":2}", 180000);
    stop_run(run);
    char *out = slurp(outp);
    cr_expect_not_null(strstr(out, "\"snapshot\":\"last\""), "no snapshot in the output");
    cr_expect_not_null(strstr(out, "\"op\":\"d\""), "no delete in the output");
    free(out);
    expect_tables_equal(kTables, 3);
    expect_uninstalled(false);
}

/* How many times the output holds needle. */
static int count_of(const char *needle)
{
    char *b = slurp(outp);
    int n = 0;
    for (const char *p = b; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(b);
    return n;
}

Test(sqlcap_trig, replace_conflicts, .timeout = 300)
{
    init_db(10, 10);
    app_sql("CREATE TABLE p(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, UNIQUE(a, b));"
            "INSERT INTO p VALUES(1, NULL, 1), (2, NULL, 1), (3, 5, 5);"
            "CREATE TABLE q(id TEXT PRIMARY KEY, z INTEGER UNIQUE ON CONFLICT REPLACE);"
            "INSERT INTO q VALUES('a', 1), ('b', 2);"
            "CREATE TABLE g(id INTEGER PRIMARY KEY, v INTEGER, s INTEGER AS (v * 2) STORED, vv AS (v + 1) VIRTUAL, "
            "k TEXT AS ('k' || v) STORED UNIQUE);"
            "INSERT INTO g(id, v) VALUES(1, 1), (2, 2), (3, 3);", false);
    pid_t run = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);
    /* one row replaced through UNIQUE(u): t id 1 goes */
    app_sql("INSERT OR REPLACE INTO t(u, v) VALUES('u1', 100)", false);
    /* two rows at once: u2 (id 2) through u, w3 (id 3) through the NOCASE index on w */
    app_sql("INSERT OR REPLACE INTO t(u, v, w) VALUES('u2', 200, 'W3')", false);
    /* UPDATE OR REPLACE: id 4 takes u5, id 5 goes */
    app_sql("UPDATE OR REPLACE t SET u = 'u5' WHERE id = 4", false);
    /* the primary key: the same key, an update of it (no delete); a WITHOUT ROWID table through UNIQUE(x) */
    app_sql("INSERT OR REPLACE INTO t(id, u, v, w) VALUES(6, 'u6', 600, 'w6');"
            "INSERT OR REPLACE INTO c VALUES('new', 1, 'x3', 0)", false);
    /* NULLs never conflict: nothing replaced in p */
    app_sql("INSERT OR REPLACE INTO p(a, b) VALUES(NULL, 1)", false);
    /* UNIQUE(a, b) conflict: p id 3 goes */
    app_sql("INSERT OR REPLACE INTO p(a, b) VALUES(5, 5)", false);
    /* a constraint declared ON CONFLICT REPLACE, by a plain INSERT: q 'a' goes */
    app_sql("INSERT INTO q VALUES('c', 1)", false);
    /* nothing replaced: OR IGNORE, upserts, a failing INSERT */
    app_sql("INSERT OR IGNORE INTO t(u, v) VALUES('u7', 1);"
            "INSERT INTO t(u, v) VALUES('u8', 1) ON CONFLICT(u) DO NOTHING;"
            "INSERT INTO t(u, v) VALUES('u9', 1) ON CONFLICT(u) DO UPDATE SET v = 999;", false);
    cr_expect_neq(sqlcap_test_sql_child(dbp, "INSERT INTO t(u, v) VALUES('u10', 1)", 1), 0, "a conflict must fail");
    /* the writer's recursive_triggers on: SQLite fires the DELETE trigger itself; one delete still */
    app_sql("INSERT OR REPLACE INTO t(u, v) VALUES('u7', 700)", true);
    /* generated columns: their values in the stream as in the snapshot; a REPLACE through a
     * UNIQUE generated column (k = 'k2': g id 2 goes) */
    app_sql("UPDATE g SET v = 10 WHERE id = 1; INSERT INTO g(id, v) VALUES(4, 4); "
            "INSERT OR REPLACE INTO g(id, v) VALUES(5, 2)", false);
    app_sql("INSERT INTO marker VALUES(1, 'done')", false);
    wait_for("\"topic\":\"tg.app.marker\",\"key\":{\"id\":1}", 60000);
    const char *const tabs[] = {"t", "c", "p", "q", "g", "marker"};
    expect_tables_equal(tabs, 6);
    /* exactly the replaced rows were deleted, once each */
    const char *gone[] = {"\"topic\":\"tg.app.t\",\"key\":{\"id\":1},\"value\":null",
                          "\"topic\":\"tg.app.t\",\"key\":{\"id\":2},\"value\":null",
                          "\"topic\":\"tg.app.t\",\"key\":{\"id\":3},\"value\":null",
                          "\"topic\":\"tg.app.t\",\"key\":{\"id\":5},\"value\":null",
                          "\"topic\":\"tg.app.t\",\"key\":{\"id\":7},\"value\":null",
                          "\"topic\":\"tg.app.p\",\"key\":{\"id\":3},\"value\":null",
                          "\"topic\":\"tg.app.q\",\"key\":{\"id\":\"a\"},\"value\":null",
                          "\"topic\":\"tg.app.g\",\"key\":{\"id\":2},\"value\":null"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        cr_expect_eq(count_of(gone[i]), 1, "%s: %d times", gone[i], count_of(gone[i]));
    cr_expect_eq(count_of("\"topic\":\"tg.app.t\",\"key\":{\"id\":6},\"value\":{\"before\":{\"id\":6"), 1,
                 "the row replaced under its own key is an update");
    cr_expect_eq(count_of("\"value\":null"), 9, "tombstones: %d (8 replaced rows and c's row)",
                 count_of("\"value\":null"));
    stop_run(run);
    /* removed for good; the application goes on; a start with the old position
     * cannot resume (the log is gone): when_needed snapshots again */
    expect_uninstalled(false);
    app_sql("UPDATE t SET v = v + 1; INSERT INTO t(u, v) VALUES('after', 1); INSERT INTO marker VALUES(2, 'again')",
            false);
    run = start_run(NULL);
    cr_expect_neq(sqlcap_test_wait(run), 0, "snapshot.mode=initial with a position it cannot resume must fail");
    run = start_run("snapshot.mode=when_needed");
    wait_for("\"topic\":\"tg.app.marker\",\"key\":{\"id\":2}", 60000);
    stop_run(run);
    expect_tables_equal(tabs, 6);
    expect_uninstalled(false);
}
