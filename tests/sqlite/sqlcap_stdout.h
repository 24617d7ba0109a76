/*
 * sqlcap_stdout.h: the harness of the SQLite end-to-end tests that run `tributary run` with
 * sink=stdout appending to a file and a writer in a separate process (test_sqlcap_trig,
 * test_sqlcap_gen): a folder per test with the database and the run's properties, start and stop
 * of the run, the output read as a table (the last value per topic and key) and the source read
 * with SQL, compared. Header-only, for one Criterion executable.
 */
#ifndef SQLCAP_STDOUT_H
#define SQLCAP_STDOUT_H

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
#include "test_child.h"

#define TRIBUTARY_BIN TB_BINARY_DIR "/app/tributary"

/* source_rows gives a whole REAL as an integer, as the JSON topic writes it */
static bool sqs_whole_reals;

static char dir[64];
static char dbp[128], outp[128], cfgp[128];

/* A folder /tmp/tb-<tag>-XXXXXX with app.db, out.jsonl and the run's properties (mode_line: the
 * source.sqlite.mode line, or ""). */
static void sqs_setup(const char *tag, const char *mode_line)
{
    snprintf(dir, sizeof dir, "/tmp/tb-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbp, sizeof dbp, "%s/app.db", dir);
    snprintf(outp, sizeof outp, "%s/out.jsonl", dir);
    snprintf(cfgp, sizeof cfgp, "%s/tb.properties", dir);
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f, "source.type=sqlite\nsource.path=%s\n%ssource.sqlite.poll.ms=10\n"
               "sink=stdout\noffsets.storage=file\noffsets.file=%s/offsets\nname=tg\ntopic.prefix=tg\n",
            dbp, mode_line, dir);
    fclose(f);
}

static void sqs_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("TB_KEEP"))
        cr_assert_eq(system(cmd), 0);
}


static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline off_t file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* `tributary run --config cfgp [--set extra]`, stdout on ofd (-1: appended to outp), stderr
 * appended to run.log. */
static pid_t start_run_to(const char *extra, int ofd)
{
    char logp[160];
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (ofd < 0)
            ofd = open(outp, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int efd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
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

/* `tributary run --config cfgp [--set extra]`, stdout appended to outp. */
static pid_t start_run(const char *extra)
{
    return start_run_to(extra, -1);
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
static inline void app_sql(const char *sql, bool recursive)
{
    pid_t p = tb_test_fork();
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

/* The first column of each row of sql on m, a line each ("v\n"), malloc'd; m is closed. */
static inline char *sqs_lines_close(sqlite3 *m, const char *sql)
{
    sqlite3_str *s = sqlite3_str_new(NULL);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(m, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(m));
    while (sqlite3_step(st) == SQLITE_ROW)
        sqlite3_str_appendf(s, "%s\n", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(m);
    char *r = sqlite3_str_finish(s);
    char *out = strdup(r ? r : "");
    sqlite3_free(r);
    return out;
}

/* The rows of topic tg.app.<table> in the output: the last value per key, a
 * tombstone or a delete removing it; as canonical JSON of `after`, sorted,
 * one per line: the output read as a table, nothing else (rows an earlier,
 * killed snapshot sent and the table lost since are deleted by the run's
 * own reconcile step, which reads this file back, DESIGN 6a). with_key: each
 * line "key<TAB>after", the message key's canonical JSON first. */
static char *sqs_topic_rows(const char *table, bool with_key)
{
    char topic[128];
    snprintf(topic, sizeof topic, "tg.app.%s", table);
    sqlite3 *m;
    cr_assert_eq(sqlite3_open(":memory:", &m), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(m, "CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *up, *del;
    sqlite3_prepare_v2(m, with_key ? "INSERT OR REPLACE INTO kv VALUES(?1, ?1 || char(9) || ?2)"
                                   : "INSERT OR REPLACE INTO kv VALUES(?1, ?2)",
                       -1, &up, NULL);
    sqlite3_prepare_v2(m, "DELETE FROM kv WHERE k = ?", -1, &del, NULL);
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
        json_decref(o);
    }
    free(b);
    sqlite3_finalize(up);
    sqlite3_finalize(del);
    return sqs_lines_close(m, "SELECT v FROM kv ORDER BY v");
}

static char *topic_rows(const char *table) { return sqs_topic_rows(table, false); }

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
                double d = sqlite3_column_double(st, i);
                /* sqs_whole_reals: as the JSON topic writes a REAL, a whole number without a fraction */
                v = sqs_whole_reals && d == (double)(long long)d && d > -9e15 && d < 9e15 ? json_integer((long long)d)
                                                                                          : json_real(d);
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
    if (n > 1)
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
static inline void expect_tables_equal(const char *const *tables, size_t n)
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

static inline int rnd_n(uint64_t *x, int n)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (int)(*x % (uint64_t)n);
}

static inline unsigned long long test_seed(void)
{
    const char *e = getenv("SQLCAP_SEED");
    return e ? strtoull(e, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
}

#endif
