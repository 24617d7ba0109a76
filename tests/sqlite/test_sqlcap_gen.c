/*
 * test_sqlcap_gen: generated columns in WAL mode (the default
 * source.sqlite.mode), end to end: `tributary run` with sink=stdout appending
 * to a file, a writer in a separate process, and the output read as a table
 * (the last value per topic and key) compared with `SELECT *` on the source,
 * generated values included (the harness is sqlcap_stdout.h, with test_sqlcap_trig).
 *
 *   stream_kill9      tables with STORED and VIRTUAL generated columns
 *                     (rowid and WITHOUT ROWID, an affinity, a NOCASE
 *                     collation and other generated columns in the
 *                     expressions) snapshotted while a writer inserts,
 *                     updates and deletes; while it runs a table with
 *                     generated columns is created and a VIRTUAL column is
 *                     added by ALTER TABLE (rows sent again, ddl.alter.policy
 *                     =resnapshot); the connector killed with SIGKILL and
 *                     restarted twice; one schema record per table version
 *                     (the snapshot's is the stream's)
 *   values_exact      single statements, each checked at once: a VIRTUAL
 *                     column's type as SQLite gives it (REAL affinity over an
 *                     integer expression, NULL, text), rows written before an
 *                     ADD COLUMN ... VIRTUAL read with the computed value
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
    sqs_whole_reals = true;
    sqs_setup("sqgen", "");
}

TestSuite(sqlcap_gen, .init = setup, .fini = sqs_teardown);


/* ------------------------------------------------------------ the writer */

static const char *const kTables[] = {"g1", "g2", "g3", "marker"};

static void init_db(int n1, int n2)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(dbp, &h), SQLITE_OK);
    char *sql = sqlite3_mprintf(
        "PRAGMA journal_mode=WAL;"
        "CREATE TABLE g1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT COLLATE NOCASE, "
        "s INTEGER AS (a * 2) STORED, v TEXT AS (upper(b) || ':' || a) VIRTUAL, vr REAL AS (a / 4) VIRTUAL, "
        "vc INT AS (b = 'ABC') VIRTUAL, d REAL, s2 AS (s + length(v)) STORED);"
        "CREATE TABLE g2(k TEXT, n INTEGER, v AS (k || '/' || n) VIRTUAL, w TEXT, s INTEGER AS (n %% 7) STORED, "
        "PRIMARY KEY(k, n)) WITHOUT ROWID;"
        /* a row in the last table: the snapshot's last event (snapshot "last") is one of its rows */
        "CREATE TABLE marker(id INTEGER PRIMARY KEY, note TEXT); INSERT INTO marker VALUES(0, 'start');"
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
        "INSERT INTO g1(id, a, b, d) SELECT i, i * 3, CASE WHEN i %% 5 = 0 THEN 'abc' ELSE 'b' || i END, i / 2.0 FROM s;"
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
        "INSERT INTO g2(k, n, w) SELECT 'k' || (i %% 11), i, 'w' || i FROM s;",
        n1, n2);
    cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_free(sql);
    sqlite3_close(h);
}


/* The writer process: ntx transactions of 1-4 random statements; at a third
 * CREATE TABLE g3 (generated columns), at half ALTER TABLE g1 ADD COLUMN z
 * VIRTUAL; then the marker row (id mark). Exits 0, or 1 on an SQLite error. */
static void writer_main(unsigned long long seed, int ntx, int mark)
{
    sqlite3 *h;
    if (sqlite3_open(dbp, &h) != SQLITE_OK)
        _exit(1);
    sqlite3_busy_timeout(h, 60000);
    uint64_t x = seed * 2654435761u + 1;
    bool g3 = false;
#define RND(n) rnd_n(&x, (n))
    for (int i = 0; i < ntx; i++) {
        sqlite3_str *s = sqlite3_str_new(NULL);
        sqlite3_str_appendall(s, "BEGIN IMMEDIATE;");
        if (i == ntx / 3) {
            sqlite3_str_appendall(s, "CREATE TABLE g3(id INTEGER PRIMARY KEY, a TEXT, s AS (a || 's') STORED, "
                                     "v INTEGER AS (length(a)) VIRTUAL);"
                                     "INSERT INTO g3(id, a) VALUES(1, 'one'), (2, 'two');");
            g3 = true;
        }
        if (i == ntx / 2)
            sqlite3_str_appendall(s, "ALTER TABLE g1 ADD COLUMN z AS (coalesce(a, 0) + length(b) + vc) VIRTUAL;");
        int nst = 1 + RND(4);
        for (int k = 0; k < nst; k++) {
            int id = 1 + RND(600), a = RND(100000) - 50000;
            switch (RND(g3 ? 10 : 8)) {
            case 0: sqlite3_str_appendf(s, "INSERT INTO g1(a, b, d) VALUES(%d, 'n%d-%d', %d.25);", a, i, k, a); break;
            case 1: sqlite3_str_appendf(s, "UPDATE g1 SET a = %d WHERE id = %d;", a, id); break;
            case 2: sqlite3_str_appendf(s, "UPDATE g1 SET b = '%s' WHERE id = %d;", RND(2) ? "ABC" : "aBc", id); break;
            case 3: sqlite3_str_appendf(s, "DELETE FROM g1 WHERE id = %d;", id); break;
            case 4: sqlite3_str_appendf(s, "UPDATE g1 SET a = NULL, d = %d WHERE id = %d;", a, id); break;
            case 5:
                sqlite3_str_appendf(s, "INSERT OR REPLACE INTO g2(k, n, w) VALUES('k%d', %d, 'r%d');", RND(11), id, a);
                break;
            case 6: sqlite3_str_appendf(s, "UPDATE g2 SET w = 'u%d' WHERE n = %d;", a, id); break;
            case 7: sqlite3_str_appendf(s, "DELETE FROM g2 WHERE n = %d;", id); break;
            case 8: sqlite3_str_appendf(s, "INSERT OR REPLACE INTO g3(id, a) VALUES(%d, 'x%d');", id % 50, a); break;
            default: sqlite3_str_appendf(s, "DELETE FROM g3 WHERE id = %d;", id % 50); break;
            }
        }
        sqlite3_str_appendall(s, "COMMIT;");
        char *sql = sqlite3_str_finish(s);
        if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "writer: %s: %s\n", sqlite3_errmsg(h), sql);
            _exit(1);
        }
        sqlite3_free(sql);
        usleep(500); /* an application's pace, not a synchronisation */
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


/* The distinct schema records of table (topic tg.schema, canonical JSON)
 * into out (up to max): how many there are. */
static int schema_records(const char *table, char **out, int max)
{
    char *b = slurp(outp);
    int n = 0;
    cr_assert_not_null(b);
    for (char *line = b, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        json_t *o = json_loadb(line, (size_t)(nl - line), 0, NULL);
        if (!o)
            continue;
        const char *t = json_string_value(json_object_get(o, "topic"));
        json_t *v = json_object_get(o, "value");
        const char *tn = json_is_object(v) ? json_string_value(json_object_get(v, "table")) : NULL;
        if (t && strcmp(t, "tg.schema") == 0 && tn && strcmp(tn, table) == 0) {
            char *c = canon(v);
            bool seen = false;
            for (int i = 0; i < n && !seen; i++)
                seen = strcmp(out[i], c) == 0;
            if (!seen && n < max)
                out[n++] = c;
            else
                free(c);
        }
        json_decref(o);
    }
    free(b);
    return n;
}

/* ------------------------------------------------------------ tests */

Test(sqlcap_gen, stream_kill9, .timeout = 600)
{
    unsigned long long seed = test_seed();
    fprintf(stderr, "sqlcap_gen stream_kill9: seed %llu (SQLCAP_SEED=%llu to reproduce)\n", seed, seed);
    init_db(600, 600);
    pid_t run = start_run(NULL);
    pid_t wr = spawn_writer(seed, 1500, 1);
    /* kill -9 twice, each once the output has grown since the last start */
    for (int kills = 0; kills < 2; kills++) {
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
    cr_expect_null(strstr(out, "not supported"), "a table refused");
    free(out);
    expect_tables_equal(kTables, 4);
    /* one schema record per table version, the same before and after each restart: g2 one
     * (snapshot and stream), g1 two (before and after the ALTER, z its last column) */
    char *rec[8];
    int n = schema_records("g2", rec, 8);
    cr_expect_eq(n, 1, "g2: %d different schema records", n);
    cr_expect_not_null(strstr(rec[0], "\"name\":\"v\""), "g2's schema record lacks v: %s", rec[0]);
    for (int i = 0; i < n; i++)
        free(rec[i]);
    n = schema_records("g1", rec, 8);
    cr_expect_eq(n, 2, "g1: %d different schema records", n);
    if (n == 2)
        cr_expect(strstr(rec[0], "\"name\":\"z\"") == NULL && strstr(rec[1], "\"name\":\"z\"") != NULL,
                  "g1's schema records: %s / %s", rec[0], rec[1]);
    for (int i = 0; i < n; i++)
        free(rec[i]);
}

/* The after image of the newest event of topic tg.app.<table> (canonical JSON). */
static char *last_after(const char *table)
{
    char topic[128];
    snprintf(topic, sizeof topic, "\"topic\":\"tg.app.%s\"", table);
    char *b = slurp(outp), *res = NULL;
    cr_assert_not_null(b);
    for (char *line = b, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        *nl = 0;
        if (!strstr(line, topic))
            continue;
        json_t *o = json_loads(line, 0, NULL);
        cr_assert_not_null(o);
        json_t *ov = json_object_get(o, "value");
        json_t *pay = json_is_object(ov) && json_object_get(ov, "payload") ? json_object_get(ov, "payload") : ov;
        free(res);
        res = canon(json_object_get(pay, "after"));
        json_decref(o);
    }
    free(b);
    return res;
}

Test(sqlcap_gen, values_exact, .timeout = 300)
{
    init_db(0, 0);
    app_sql("CREATE TABLE e(id INTEGER PRIMARY KEY, a INTEGER, t TEXT, r REAL AS (a) VIRTUAL, "
            "n INTEGER AS (nullif(a, 7)) VIRTUAL, s TEXT AS (t || a) STORED);"
            "INSERT INTO e(id, a, t) VALUES(1, 7, 'x');", false);
    pid_t run = start_run(NULL);
    wait_for("\"snapshot\":\"last\"", 60000);
    char *a = last_after("e");
    cr_expect_str_eq(a, "{\"a\":7,\"id\":1,\"n\":null,\"r\":7,\"s\":\"x7\",\"t\":\"x\"}");
    free(a);
    app_sql("UPDATE e SET a = 8 WHERE id = 1", false);
    wait_for("\"a\":8", 60000);
    a = last_after("e");
    cr_expect_str_eq(a, "{\"a\":8,\"id\":1,\"n\":8,\"r\":8,\"s\":\"x8\",\"t\":\"x\"}");
    free(a);
    /* a VIRTUAL column added: the row written before reads with its value */
    app_sql("ALTER TABLE e ADD COLUMN z TEXT AS (upper(t) || (a + 1)) VIRTUAL", false);
    wait_for("\"z\":\"X9\"", 60000);
    a = last_after("e");
    cr_expect_str_eq(a, "{\"a\":8,\"id\":1,\"n\":8,\"r\":8,\"s\":\"x8\",\"t\":\"x\",\"z\":\"X9\"}");
    free(a);
    app_sql("INSERT INTO e(id, a, t) VALUES(2, NULL, 'y')", false);
    wait_for("\"id\":2", 60000);
    a = last_after("e");
    cr_expect_str_eq(a, "{\"a\":null,\"id\":2,\"n\":null,\"r\":null,\"s\":null,\"t\":\"y\",\"z\":null}");
    free(a);
    stop_run(run);
    const char *const tb[] = {"e"};
    expect_tables_equal(tb, 1);
}
