/*
 * test_sqlcap_gen: generated columns in WAL mode (the default
 * source.sqlite.mode), end to end: `tributary run` with sink=stdout appending
 * to a file, a writer in a separate process, and the output read as a table
 * (the last value per topic and key) compared with `SELECT *` on the source,
 * generated values included (the helpers are those of test_sqlcap_trig).
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

#include "sqlcap_test_util.h"

#define TRIBUTARY_BIN TB_BINARY_DIR "/app/tributary"

static char dir[64];
static char dbp[128], outp[128], cfgp[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb-sqgen-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbp, sizeof dbp, "%s/app.db", dir);
    snprintf(outp, sizeof outp, "%s/out.jsonl", dir);
    snprintf(cfgp, sizeof cfgp, "%s/tb.properties", dir);
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f, "source.type=sqlite\nsource.path=%s\nsource.sqlite.poll.ms=10\n"
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

TestSuite(sqlcap_gen, .init = setup, .fini = teardown);

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
            case SQLITE_FLOAT: {
                /* as the JSON topic writes a REAL: a whole number without a fraction */
                double d = sqlite3_column_double(st, i);
                v = d == (double)(long long)d && d > -9e15 && d < 9e15 ? json_integer((long long)d) : json_real(d);
                break;
            }
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

static int rnd_n(uint64_t *x, int n)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (int)(*x % (uint64_t)n);
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

static unsigned long long test_seed(void)
{
    const char *e = getenv("SQLCAP_SEED");
    return e ? strtoull(e, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
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
