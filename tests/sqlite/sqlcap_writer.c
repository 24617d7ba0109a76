/*
 * sqlcap_writer: the separate writer process of the SQLite capture tests.
 *
 *   sqlcap_writer init DB PAGESIZE JOURNAL          create tables + initial rows
 *   sqlcap_writer run DB SEED NTX LOG [plain]       random workload
 *
 * SQLCAP_WRITER_STEADY=US (run): an application's steady writer: one commit
 * every US microseconds, busy timeout 5 s, deferred transactions whose first
 * statement writes (as Python's sqlite3 issues them), one in ten with a value
 * of 3-20 KB.
 * SQLCAP_WRITER_UNPACED=1 (run): the unpaced application writer: no pause,
 * BEGIN IMMEDIATE transactions of 1-8 statements, values up to 29 kB,
 * wal_autocheckpoint=300, busy timeout 5 s.
 * SQLCAP_WRITER_HOLD_READ=MS (run): from a quarter of the workload on, a
 * second connection of the writer holds a read transaction for MS ms (an
 * application reader that pins the WAL), then ends it.
 *
 * Tables: t_ipk (INTEGER PRIMARY KEY), t_comp (composite TEXT key),
 * t_wr (WITHOUT ROWID), later t_new (CREATE TABLE mid-stream) and column e of
 * t_ipk (ALTER TABLE ADD COLUMN); one VACUUM. Values overflow pages now and
 * then; bulk inserts/deletes split and merge pages; savepoints are rolled back.
 * The last transaction sets t_ipk id=-1 a=424242 (the end marker). Then it
 * prints "done" and keeps the database open until its stdin is closed.
 *
 * LOG: for every commit with a net row change: "TX n" then one line
 * "<table> <c|u|d> <key>" per changed row (sorted), then "END". The net change
 * is computed from pre-images of every key touched in the transaction.
 * "plain": no specials (ALTER/CREATE/VACUUM), for trigger mode.
 * Exit status 0 ok, 1 SQLite error (message on stderr).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqlcap_test_util.h"

static sqlite3 *db;
static uint64_t rng;
static long steady_us; /* SQLCAP_WRITER_STEADY */
static int unpaced;     /* SQLCAP_WRITER_UNPACED */

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int rnd_n(int n) { return (int)(rnd() % (uint64_t)n); }

static void die(const char *what)
{
    fprintf(stderr, "sqlcap_writer: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(sql);
}

/* touched keys of the current transaction with their pre-images */
typedef struct touched {
    char table[16];
    char *key;   /* key text */
    char *pre;   /* row text before the transaction, NULL = absent */
    char *where; /* SQL WHERE clause */
} touched;
static touched *tk;
static size_t ntk, captk;

static char *row_text(const char *table, const char *where)
{
    char *sql = sqlite3_mprintf("SELECT * FROM %s WHERE %s", table, where);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die(sql);
    sqlite3_free(sql);
    char *out = NULL;
    if (sqlite3_step(st) == SQLITE_ROW)
        out = sqlcap_test_row_text(st);
    sqlite3_finalize(st);
    return out;
}

static void touch(const char *table, const char *key, const char *where)
{
    for (size_t i = 0; i < ntk; i++)
        if (strcmp(tk[i].table, table) == 0 && strcmp(tk[i].key, key) == 0)
            return;
    if (ntk == captk) {
        captk = captk ? captk * 2 : 64;
        tk = realloc(tk, captk * sizeof *tk);
    }
    snprintf(tk[ntk].table, sizeof tk[ntk].table, "%s", table);
    tk[ntk].key = strdup(key);
    tk[ntk].where = strdup(where);
    tk[ntk].pre = row_text(table, where);
    ntk++;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void commit_and_log(FILE *log, int txno)
{
    exec("COMMIT");
    char **lines = calloc(ntk + 1, sizeof *lines);
    size_t nl = 0;
    for (size_t i = 0; i < ntk; i++) {
        char *post = row_text(tk[i].table, tk[i].where);
        char op = 0;
        if (!tk[i].pre && post)
            op = 'c';
        else if (tk[i].pre && !post)
            op = 'd';
        else if (tk[i].pre && post && strcmp(tk[i].pre, post) != 0)
            op = 'u';
        if (op) {
            size_t n = strlen(tk[i].table) + strlen(tk[i].key) + 8;
            lines[nl] = malloc(n);
            snprintf(lines[nl++], n, "%s %c %s", tk[i].table, op, tk[i].key);
        }
        sqlite3_free(post);
        free(tk[i].key);
        free(tk[i].where);
        sqlite3_free(tk[i].pre);
    }
    ntk = 0;
    if (nl) {
        qsort(lines, nl, sizeof *lines, cmp_str);
        fprintf(log, "TX %d\n", txno);
        for (size_t i = 0; i < nl; i++)
            fprintf(log, "%s\n", lines[i]);
        fprintf(log, "END\n");
        fflush(log);
    }
    for (size_t i = 0; i < nl; i++)
        free(lines[i]);
    free(lines);
}

static char *rand_text(int maxlen)
{
    int n = 1 + rnd_n(maxlen);
    char *s = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++)
        s[i] = (char)('a' + rnd_n(26));
    s[n] = 0;
    return s;
}

static int pgsz;
static int have_e, have_new;

/* one random row operation */
static void op_ipk(int bulk_insert)
{
    long long id = bulk_insert ? 100000 + (long long)(rnd() % 900000) : 1 + rnd_n(600);
    char key[32], where[64];
    snprintf(key, sizeof key, "i:%lld", id);
    snprintf(where, sizeof where, "id=%lld", id);
    touch("t_ipk", key, where);
    int kind = bulk_insert ? 0 : rnd_n(10);
    char *sql;
    if (kind < 5) {
        int big = rnd_n(12) == 0;
        int blen = big ? pgsz * (1 + rnd_n(3)) + rnd_n(100) : rnd_n(40);
        char *b = rand_text(30);
        sql = sqlite3_mprintf("INSERT OR REPLACE INTO t_ipk(id,a,b,c,d) VALUES(%lld,%lld,%Q,%.17g,randomblob(%d))", id,
                              (long long)(rnd() % 2000000000) - 1000000000, b, (double)rnd_n(100000) / 7.0, blen);
        free(b);
    } else if (kind < 8) {
        if (have_e && rnd_n(3) == 0)
            sql = sqlite3_mprintf("UPDATE t_ipk SET e=%Q WHERE id=%lld", rnd_n(2) ? "y" : "x", id);
        else if (rnd_n(4) == 0)
            sql = sqlite3_mprintf("UPDATE t_ipk SET d=randomblob(length(d)) WHERE id=%lld", id); /* same size */
        else
            sql = sqlite3_mprintf("UPDATE t_ipk SET a=a+1, c=%d WHERE id=%lld", rnd_n(1000), id);
    } else {
        sql = sqlite3_mprintf("DELETE FROM t_ipk WHERE id=%lld", id);
    }
    exec(sql);
    sqlite3_free(sql);
}

static void op_comp(void)
{
    char k1[8], k2[8], key[64], where[96];
    snprintf(k1, sizeof k1, "k%d", rnd_n(20));
    snprintf(k2, sizeof k2, "x%d", rnd_n(30));
    snprintf(key, sizeof key, "t:%s,t:%s", k1, k2);
    snprintf(where, sizeof where, "k1='%s' AND k2='%s'", k1, k2);
    touch("t_comp", key, where);
    int kind = rnd_n(10);
    char *sql;
    char *v = rand_text(kind == 0 ? pgsz * 2 : 50);
    if (kind < 5)
        sql = sqlite3_mprintf("INSERT OR REPLACE INTO t_comp VALUES(%Q,%Q,%Q,%d)", k1, k2, v, rnd_n(100));
    else if (kind < 8)
        sql = sqlite3_mprintf("UPDATE t_comp SET v=%Q, n=n+1 WHERE %s", v, where);
    else
        sql = sqlite3_mprintf("DELETE FROM t_comp WHERE %s", where);
    free(v);
    exec(sql);
    sqlite3_free(sql);
}

static void op_wr(void)
{
    char k[16], key[64], where[64];
    snprintf(k, sizeof k, "w%04d", rnd_n(800));
    snprintf(key, sizeof key, "t:%s", k);
    snprintf(where, sizeof where, "k='%s'", k);
    touch("t_wr", key, where);
    int kind = rnd_n(10);
    char *sql;
    int blen = rnd_n(15) == 0 ? pgsz + rnd_n(pgsz) : rnd_n(60);
    if (steady_us && rnd_n(10) == 0)
        blen = 3000 + rnd_n(17000);
    if (unpaced && rnd_n(4) == 0)
        blen = rnd_n(29000);
    if (kind < 6)
        sql = sqlite3_mprintf("INSERT OR REPLACE INTO t_wr VALUES(%Q,randomblob(%d),%d)", k, blen, rnd_n(1000));
    else if (kind < 8)
        sql = sqlite3_mprintf("UPDATE t_wr SET n=n+0.5 WHERE %s", where);
    else
        sql = sqlite3_mprintf("DELETE FROM t_wr WHERE %s", where);
    exec(sql);
    sqlite3_free(sql);
}

static void op_new(void)
{
    long long id = 1 + rnd_n(200);
    char key[32], where[32];
    snprintf(key, sizeof key, "i:%lld", id);
    snprintf(where, sizeof where, "id=%lld", id);
    touch("t_new", key, where);
    char *v = rand_text(20);
    char *sql = rnd_n(4) ? sqlite3_mprintf("INSERT OR REPLACE INTO t_new VALUES(%lld,%Q)", id, v)
                         : sqlite3_mprintf("DELETE FROM t_new WHERE id=%lld", id);
    free(v);
    exec(sql);
    sqlite3_free(sql);
}

static void random_op(void)
{
    int r = rnd_n(have_new ? 10 : 9);
    if (r < 4)
        op_ipk(0);
    else if (r < 6)
        op_comp();
    else if (r < 9)
        op_wr();
    else
        op_new();
}

static void bulk_delete_ipk(void)
{
    /* delete a range of bulk-inserted rows: page merges */
    long long lo = 100000 + (long long)(rnd() % 900000), hi = lo + 200000;
    char *sql = sqlite3_mprintf("SELECT id FROM t_ipk WHERE id BETWEEN %lld AND %lld", lo, hi);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die(sql);
    sqlite3_free(sql);
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(st, 0);
        char key[32], where[64];
        snprintf(key, sizeof key, "i:%lld", id);
        snprintf(where, sizeof where, "id=%lld", id);
        touch("t_ipk", key, where);
    }
    sqlite3_finalize(st);
    sql = sqlite3_mprintf("DELETE FROM t_ipk WHERE id BETWEEN %lld AND %lld", lo, hi);
    exec(sql);
    sqlite3_free(sql);
}

static int cmd_init(const char *path, int pagesize, const char *journal)
{
    remove(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die("open");
    char *sql = sqlite3_mprintf("PRAGMA page_size=%d; PRAGMA journal_mode=%s;", pagesize, journal);
    exec(sql);
    sqlite3_free(sql);
    exec("CREATE TABLE t_ipk(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d BLOB);"
         "CREATE TABLE t_comp(k1 TEXT, k2 TEXT, v TEXT, n INTEGER, PRIMARY KEY(k1,k2));"
         "CREATE TABLE t_wr(k TEXT PRIMARY KEY, v BLOB, n REAL) WITHOUT ROWID;"
         "CREATE INDEX t_ipk_a ON t_ipk(a);");
    exec("BEGIN");
    exec("INSERT INTO t_ipk VALUES(-1, 0, 'marker', 0.5, x'00')");
    for (int i = 1; i <= 200; i++) {
        sql = sqlite3_mprintf("INSERT INTO t_ipk VALUES(%d,%d,'row%d',%d.25,randomblob(%d));"
                              "INSERT OR IGNORE INTO t_comp VALUES('k%d','x%d','v%d',%d);"
                              "INSERT OR IGNORE INTO t_wr VALUES('w%04d',randomblob(%d),%d);",
                              i, i * 3, i, i, i % 50, i % 20, i % 30, i, i, i * 4, i % 70, i);
        exec(sql);
        sqlite3_free(sql);
    }
    exec("COMMIT");
    if (sqlite3_close(db) != SQLITE_OK)
        die("close");
    return 0;
}

static int cmd_run(const char *path, unsigned long long seed, int ntx, const char *logpath, int plain)
{
    FILE *log = fopen(logpath, "w");
    if (!log || sqlite3_open(path, &db) != SQLITE_OK)
        die("open");
    steady_us = getenv("SQLCAP_WRITER_STEADY") ? atol(getenv("SQLCAP_WRITER_STEADY")) : 0;
    unpaced = getenv("SQLCAP_WRITER_UNPACED") != NULL;
    long hold_ms = getenv("SQLCAP_WRITER_HOLD_READ") ? atol(getenv("SQLCAP_WRITER_HOLD_READ")) : 0;
    sqlite3 *holder = NULL;
    struct timespec hold_t0 = {0};
    sqlite3_busy_timeout(db, steady_us || unpaced ? 5000 : 60000);
    rng = seed * 2654435761ull + 88172645463325252ull;
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL);
    sqlite3_step(st);
    pgsz = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    exec(unpaced ? "PRAGMA wal_autocheckpoint=300; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-256"
                 : "PRAGMA wal_autocheckpoint=1000; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-256");
    for (int t = 1; t <= ntx; t++) {
        if (hold_ms && t == ntx / 4 && !holder) {
            /* an application reader of the same process: its read transaction pins the WAL */
            if (sqlite3_open(path, &holder) != SQLITE_OK ||
                sqlite3_exec(holder, "BEGIN; SELECT count(*) FROM t_ipk", NULL, NULL, NULL) != SQLITE_OK)
                die("holder");
            clock_gettime(CLOCK_MONOTONIC, &hold_t0);
        }
        if (holder) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - hold_t0.tv_sec) * 1000L + (now.tv_nsec - hold_t0.tv_nsec) / 1000000L >= hold_ms) {
                sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL);
                sqlite3_close(holder);
                holder = NULL;
                hold_ms = 0;
            }
        }
        if (!plain && t == ntx / 3) {
            exec("ALTER TABLE t_ipk ADD COLUMN e TEXT DEFAULT 'x'");
            have_e = 1;
            continue;
        }
        if (!plain && t == ntx / 2) {
            exec("CREATE TABLE t_new(id INTEGER PRIMARY KEY, v TEXT)");
            have_new = 1;
            continue;
        }
        if (!plain && t == (2 * ntx) / 3) {
            exec("VACUUM");
            continue;
        }
        if (steady_us) {
            struct timespec ts = {steady_us / 1000000, (steady_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
            /* deferred: the write lock is taken (with the busy handler) by the first statement */
            exec("BEGIN; UPDATE t_ipk SET a=a WHERE id=-2");
        } else {
            exec("BEGIN IMMEDIATE");
        }
        int shape = unpaced ? 2 : rnd_n(20);
        if (unpaced) {
            int n = 1 + rnd_n(8);
            for (int i = 0; i < n; i++)
                random_op();
        } else if (shape == 0) {
            int n = 50 + rnd_n(150); /* page splits */
            for (int i = 0; i < n; i++)
                op_ipk(1);
        } else if (shape == 1) {
            bulk_delete_ipk(); /* merges */
        } else {
            int n = 1 + rnd_n(12);
            for (int i = 0; i < n; i++) {
                if (rnd_n(8) == 0) {
                    exec("SAVEPOINT sp");
                    int m = 1 + rnd_n(6);
                    for (int k = 0; k < m; k++)
                        random_op();
                    exec(rnd_n(2) ? "ROLLBACK TO sp; RELEASE sp" : "RELEASE sp");
                } else {
                    random_op();
                }
            }
        }
        commit_and_log(log, t);
    }
    if (holder) {
        sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(holder);
    }
    exec("BEGIN IMMEDIATE");
    touch("t_ipk", "i:-1", "id=-1");
    exec("UPDATE t_ipk SET a=424242 WHERE id=-1");
    commit_and_log(log, ntx + 1);
    fclose(log);
    /* Keep the connection (and so the wal-index) alive until stdin closes: on
     * SQLite 3.40.1 a later recovery from the WAL alone can drop committed
     * transactions (sqlite-wal.md 1.9), so the test compares while we live. */
    printf("done\n");
    fflush(stdout);
    char buf[64];
    while (fread(buf, 1, sizeof buf, stdin) > 0)
        ;
    sqlite3_close(db);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "init") == 0)
        return cmd_init(argv[2], atoi(argv[3]), argv[4]);
    if (argc >= 6 && strcmp(argv[1], "run") == 0)
        return cmd_run(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), argv[5], argc > 6 && strcmp(argv[6], "plain") == 0);
    fprintf(stderr, "usage: sqlcap_writer init DB PAGESIZE JOURNAL | run DB SEED NTX LOG [plain]\n");
    return 2;
}
