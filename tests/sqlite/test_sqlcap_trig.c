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

#include "sqlcap_test_util.h"

#define TRIBUTARY_BIN TB_BINARY_DIR "/app/tributary"

static char dir[64];
static char dbp[128], outp[128], cfgp[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb-sqtrig-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbp, sizeof dbp, "%s/app.db", dir);
    snprintf(outp, sizeof outp, "%s/out.jsonl", dir);
    snprintf(cfgp, sizeof cfgp, "%s/tb.properties", dir);
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f, "source.type=sqlite\nsource.path=%s\nsource.sqlite.mode=trigger\nsource.sqlite.poll.ms=10\n"
               "sink=stdout\noffsets.storage=file\noffsets.file=%s/offsets\nname=tg\ntopic.prefix=tg\n",
            dbp, dir);
    fclose(f);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("TB_KEEP"))
        cr_assert_eq(system(cmd), 0);
}

TestSuite(sqlcap_trig, .init = setup, .fini = teardown);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static off_t file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* `tributary run --config cfgp [--set extra]`, stdout appended to outp. */
static pid_t start_run(const char *extra)
{
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int ofd = open(outp, O_WRONLY | O_CREAT | O_APPEND, 0600), efd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (ofd < 0 || efd < 0)
            _exit(127);
        dup2(ofd, 1);
        dup2(efd, 2);
        if (extra)
            execl(TRIBUTARY_BIN, TRIBUTARY_BIN, "run", "--config", cfgp, "--set", extra, (char *)NULL);
        else
            execl(TRIBUTARY_BIN, TRIBUTARY_BIN, "run", "--config", cfgp, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop_run(pid_t p)
{
    kill(p, SIGTERM);
    cr_assert_eq(sqlcap_test_wait(p), 0, "tributary run did not stop cleanly (see %s/run.log)", dir);
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = 0;
    return b;
}

/* Wait until the output holds needle, or fail after deadline_ms. */
static void wait_for(const char *needle, int64_t deadline_ms)
{
    int64_t end = now_ms() + deadline_ms;
    for (;;) {
        char *b = slurp(outp);
        bool found = b && strstr(b, needle) != NULL;
        free(b);
        if (found)
            return;
        cr_assert(now_ms() < end, "the output never showed %s (see %s)", needle, dir);
        usleep(20000); /* polling interval of the condition above */
    }
}

/* Run sql in a separate process (an application connection); recursive: with recursive_triggers on. */
static void app_sql(const char *sql, bool recursive)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        sqlite3 *h;
        if (sqlite3_open(dbp, &h) != SQLITE_OK)
            _exit(1);
        sqlite3_busy_timeout(h, 60000);
        if (recursive)
            sqlite3_exec(h, "PRAGMA recursive_triggers=ON", NULL, NULL, NULL);
        if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "app_sql: %s: %s\n", sqlite3_errmsg(h), sql);
            _exit(1);
        }
        sqlite3_close(h);
        _exit(0);
    }
    cr_assert_eq(sqlcap_test_wait(p), 0, "application SQL failed: %s", sql);
}

/* ------------------------------------------------------------ the output as a table */

/* canonical JSON text (sorted keys, compact) of v */
static char *canon(const json_t *v) { return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY); }

/* The rows of topic tg.app.<table> in the output: the last value per key, a
 * tombstone or a delete removing it; as canonical JSON of `after`, sorted,
 * one per line. A snapshot that ends (snapshot "last") is followed by what
 * the reconcile step does on Kafka (DESIGN 6a; sink=stdout has no topics to
 * read back): the keys it did not read are deleted, so rows an earlier,
 * killed snapshot sent and the table lost since do not stay. */
static char *topic_rows(const char *table)
{
    char topic[128];
    snprintf(topic, sizeof topic, "tg.app.%s", table);
    sqlite3 *m;
    cr_assert_eq(sqlite3_open(":memory:", &m), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(m, "CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT); CREATE TABLE snap(k TEXT PRIMARY KEY)",
                              NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *up, *del, *seen;
    sqlite3_prepare_v2(m, "INSERT OR REPLACE INTO kv VALUES(?, ?)", -1, &up, NULL);
    sqlite3_prepare_v2(m, "DELETE FROM kv WHERE k = ?", -1, &del, NULL);
    sqlite3_prepare_v2(m, "INSERT OR IGNORE INTO snap VALUES(?)", -1, &seen, NULL);
    long long snap_seq = -1; /* the change-log sequence of the snapshot being read, -1: none */
    char *b = slurp(outp);
    cr_assert_not_null(b);
    for (char *line = b, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        if (!nl)
            break; /* a partial last line (a kill while writing): the next run drops it */
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)(nl - line), 0, &je);
        cr_assert_not_null(o, "output line does not parse: %s", je.text);
        const char *t = json_string_value(json_object_get(o, "topic"));
        json_t *ov = json_object_get(o, "value");
        json_t *src = json_is_object(ov) ? json_object_get(ov, "source") : NULL;
        const char *op = json_is_object(ov) ? json_string_value(json_object_get(ov, "op")) : NULL;
        const char *sf = src ? json_string_value(json_object_get(src, "snapshot")) : NULL;
        bool snap_row = op && strcmp(op, "r") == 0 && sf && strcmp(sf, "false") != 0;
        if (snap_row) {
            long long sq = json_integer_value(json_object_get(src, "seq"));
            if (sq != snap_seq) /* another snapshot (a run started again) */
                cr_assert_eq(sqlite3_exec(m, "DELETE FROM snap", NULL, NULL, NULL), SQLITE_OK);
            snap_seq = sq;
        }
        if (t && strcmp(t, topic) == 0 && snap_row) {
            char *k = canon(json_object_get(o, "key"));
            sqlite3_bind_text(seen, 1, k, -1, SQLITE_TRANSIENT);
            cr_assert_eq(sqlite3_step(seen), SQLITE_DONE);
            sqlite3_reset(seen);
            free(k);
        }
        if (t && strcmp(t, topic) == 0) {
            char *k = canon(json_object_get(o, "key"));
            json_t *val = json_object_get(o, "value"), *after = json_is_object(val) ? json_object_get(val, "after") : NULL;
            sqlite3_stmt *st = after && !json_is_null(after) ? up : del;
            sqlite3_bind_text(st, 1, k, -1, SQLITE_TRANSIENT);
            if (st == up) {
                char *a = canon(after);
                sqlite3_bind_text(st, 2, a, -1, SQLITE_TRANSIENT);
                free(a);
            }
            cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
            sqlite3_reset(st);
            free(k);
        }
        if (snap_row && strcmp(sf, "last") == 0) { /* the reconcile step */
            cr_assert_eq(sqlite3_exec(m, "DELETE FROM kv WHERE k NOT IN (SELECT k FROM snap); DELETE FROM snap", NULL,
                                      NULL, NULL), SQLITE_OK);
            snap_seq = -1;
        }
        json_decref(o);
    }
    free(b);
    sqlite3_finalize(up);
    sqlite3_finalize(del);
    sqlite3_finalize(seen);
    sqlite3_str *s = sqlite3_str_new(NULL);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(m, "SELECT v FROM kv ORDER BY v", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW)
        sqlite3_str_appendf(s, "%s\n", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(m);
    char *r = sqlite3_str_finish(s);
    char *out = strdup(r ? r : "");
    sqlite3_free(r);
    return out;
}

static int strcmp_ptr_(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The rows of the source table (SELECT *, so generated columns too), as the
 * same canonical JSON, sorted. Values are integers, reals, text or NULL. */
static char *source_rows(const char *table)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(dbp, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 60000);
    char *q = sqlite3_mprintf("SELECT * FROM \"%w\"", table);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_free(q);
    size_t n = 0, cap = 0;
    char **rows = NULL;
    bool rowid = true;
    {
        /* a table without a declared key is keyed by its rowid, which the events carry as a column */
        char *kq = sqlite3_mprintf("SELECT count(*) FROM pragma_table_info(%Q) WHERE pk > 0", table);
        sqlite3_stmt *ks;
        sqlite3_prepare_v2(h, kq, -1, &ks, NULL);
        sqlite3_step(ks);
        rowid = sqlite3_column_int(ks, 0) == 0;
        sqlite3_finalize(ks);
        sqlite3_free(kq);
    }
    cr_assert(!rowid, "source_rows: tables of these tests declare a key");
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            json_t *v;
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER: v = json_integer(sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: v = json_real(sqlite3_column_double(st, i)); break;
            case SQLITE_NULL: v = json_null(); break;
            default: v = json_string((const char *)sqlite3_column_text(st, i)); break;
            }
            json_object_set_new(o, sqlite3_column_name(st, i), v);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            rows = realloc(rows, cap * sizeof *rows);
            cr_assert_not_null(rows);
        }
        rows[n++] = canon(o);
        json_decref(o);
    }
    cr_assert_eq(r, SQLITE_DONE, "%s", sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
    qsort(rows, n, sizeof *rows, strcmp_ptr_);
    sqlite3_str *s = sqlite3_str_new(NULL);
    for (size_t i = 0; i < n; i++) {
        sqlite3_str_appendf(s, "%s\n", rows[i]);
        free(rows[i]);
    }
    free(rows);
    char *x = sqlite3_str_finish(s);
    char *out = strdup(x ? x : "");
    sqlite3_free(x);
    return out;
}

/* Every table's topic equals the table. */
static void expect_tables_equal(const char *const *tables, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *a = source_rows(tables[i]), *b = topic_rows(tables[i]);
        size_t rows = 0;
        for (const char *p = a; *p; p++)
            rows += *p == '\n';
        if (strcmp(a, b) != 0) {
            size_t k = 0;
            while (a[k] && a[k] == b[k])
                k++;
            while (k > 0 && a[k - 1] != '\n')
                k--;
            fprintf(stderr, "table %s differs from its topic; first difference:\n  source %.300s\n  topic  %.300s\n",
                    tables[i], a + k, b + k);
        }
        cr_expect_str_eq(a, b, "table %s (%zu rows) differs from its topic (output in %s)", tables[i], rows, dir);
        fprintf(stderr, "table %s: %zu rows, topic %s\n", tables[i], rows, strcmp(a, b) ? "DIFFERS" : "equal");
        free(a);
        free(b);
    }
}

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

static int rnd_n(uint64_t *x, int n)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (int)(*x % (uint64_t)n);
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

static unsigned long long test_seed(void)
{
    const char *e = getenv("SQLCAP_SEED");
    return e ? strtoull(e, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
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
