/*
 * Torture: a randomized, seeded workload against the real MariaDB (and a
 * SQLite database in WAL mode, test torture/sqlite), with
 * faults, and after every round the source database as the oracle (queried
 * with plain SQL, independently of tributary's code): each table's topic read
 * as a KTable (Jansson, tests/e2e/e2e_tables.h) and its cache table must hold
 * exactly the source's rows.
 *
 * A round is a list of transactions drawn from the seed: single-row and
 * range inserts, updates and deletes, primary-key changes, large
 * transactions (INSERT ... SELECT from the sequence engine), multi-table
 * transactions, savepoints rolled back to, whole transactions rolled back,
 * XA transactions committed or rolled back, TRUNCATE, ALTER TABLE ADD and DROP
 * COLUMN; in some rounds `tributary run` or `tributary cache` is killed with
 * SIGKILL halfway and started again. Every statement of a round is written to
 * <dir>/round-N.sql; a round whose check fails prints the seed, the round
 * and its statements, and the folder is kept.
 *
 *   TB_TORTURE_SECONDS  how long to run rounds (default 120: two thirds MariaDB, one
 *                       third SQLite)
 *   TB_TORTURE_SEED     the seed (default: from the clock; always printed)
 *
 * Statement kinds that wait for a defect to be fixed are listed in
 * torture_disabled[] with the defect they wait for (none today).
 */
#include <inttypes.h>

#include "../e2e/e2e_tables.h"

#define NTABLES 3
#define MAXCOLS 12

typedef enum tk_kind {
    TK_INSERT, TK_UPDATE, TK_DELETE, TK_PK_CHANGE, TK_BIG, TK_MULTI, TK_SAVEPOINT, TK_ROLLBACK, TK_XA,
    TK_TRUNCATE, TK_ADD_COLUMN, TK_DROP_COLUMN, TK_NKINDS
} tk_kind;

static const char *const tk_names[TK_NKINDS] = {"insert", "update", "delete", "pk_change", "big", "multi",
                                                "savepoint", "rollback", "xa", "truncate", "add_column",
                                                "drop_column"};

/* Kinds left out of the workload, each with the defect it waits for. */
static const struct {
    tk_kind kind;
    const char *waits_for;
} torture_disabled[] = {{TK_NKINDS, NULL}};

typedef struct tt_table {
    char name[16];
    char cols[MAXCOLS][16]; /* cols[0] = "id" */
    size_t ncols;
} tt_table;

typedef struct tt {
    st_run r;
    MYSQL *m;
    unsigned long long seed;
    unsigned rnd;
    tt_table t[NTABLES];
    tb_buf log;             /* the round's statements */
    int round, xa, added;
    pid_t cache;
    char clog[400];
} tt;

static unsigned rnd(tt *x, unsigned n)
{
    /* xorshift32: the same sequence for the same seed on every machine */
    unsigned v = x->rnd;
    v ^= v << 13;
    v ^= v >> 17;
    v ^= v << 5;
    x->rnd = v;
    return n ? v % n : v;
}

static bool disabled(tk_kind k)
{
    for (size_t i = 0; i < sizeof torture_disabled / sizeof torture_disabled[0]; i++)
        if (torture_disabled[i].kind == k)
            return true;
    return false;
}

/* Run one statement; an error (a duplicate key, say) is logged, not fatal. */
static void exec(tt *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void exec(tt *x, const char *fmt, ...)
{
    char q[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    tb_buf_printf(&x->log, "%s;\n", q);
    if (mysql_query(x->m, q) != 0)
        tb_buf_printf(&x->log, "-- error %u: %s\n", mysql_errno(x->m), mysql_error(x->m));
}

static void value_list(tt *x, const tt_table *t, int id, tb_buf *cols, tb_buf *vals)
{
    static const char *const words[] = {"alpha", "beta", "gamma", "delta", "it's", "x y", "", "zeta"};
    tb_buf_reset(cols);
    tb_buf_reset(vals);
    for (size_t c = 0; c < t->ncols; c++) {
        if (c) {
            tb_buf_putc(cols, ',');
            tb_buf_putc(vals, ',');
        }
        tb_buf_puts(cols, t->cols[c]);
        const char *n = t->cols[c];
        bool null = c > 0 && rnd(x, 8) == 0;
        if (c == 0)
            tb_buf_printf(vals, "%d", id);
        else if (null)
            tb_buf_puts(vals, "NULL");
        else if (strcmp(n, "v") == 0) {
            const char *w = words[rnd(x, 8)];
            tb_buf_printf(vals, "'%s%u'", strcmp(w, "it's") == 0 ? "it''s" : w, rnd(x, 1000));
        }
        else if (strcmp(n, "n") == 0)
            tb_buf_printf(vals, "%lld", rnd(x, 4) == 0 ? (rnd(x, 2) ? 9223372036854775807LL : -9223372036854775807LL)
                                                       : (long long)rnd(x, 2000000) - 1000000);
        else if (strcmp(n, "d") == 0)
            tb_buf_printf(vals, "%d.%02u", (int)rnd(x, 200000) - 100000, rnd(x, 100));
        else if (strcmp(n, "dt") == 0)
            tb_buf_printf(vals, "'%04u-%02u-%02u'", 1970 + rnd(x, 80), 1 + rnd(x, 12), 1 + rnd(x, 28));
        else
            tb_buf_printf(vals, "%u", rnd(x, 100000));
    }
}

/* One data statement on table t (no DDL): kind TK_INSERT..TK_PK_CHANGE, or
 * TK_NKINDS for one drawn at random (range deletes of the large rows too). */
static void data_stmt_kind(tt *x, tt_table *t, tk_kind kind)
{
    tb_buf cols, vals;
    tb_buf_init(&cols, 0);
    tb_buf_init(&vals, 0);
    int id = 1 + (int)rnd(x, 300), k = (int)rnd(x, 6);
    static const unsigned pick[] = {0, 4, 6, 8};
    switch (kind < TK_BIG ? pick[kind] : rnd(x, 10)) {
    case 0: case 1: case 2: case 3:
        value_list(x, t, id, &cols, &vals);
        exec(x, "INSERT INTO %s (%s) VALUES (%s) ON DUPLICATE KEY UPDATE %s=VALUES(%s)", t->name, cols.data,
             vals.data, t->ncols > 1 ? t->cols[1] : "id", t->ncols > 1 ? t->cols[1] : "id");
        break;
    case 4: case 5:
        exec(x, "UPDATE %s SET v=CONCAT(IFNULL(v,''),'u'), n=IFNULL(n,0) DIV 2 + %d WHERE id BETWEEN %d AND %d",
             t->name, k, id, id + k);
        break;
    case 6: case 7:
        exec(x, "DELETE FROM %s WHERE id BETWEEN %d AND %d", t->name, id, id + k / 2);
        break;
    case 8:
        if (!disabled(TK_PK_CHANGE)) {
            exec(x, "UPDATE IGNORE %s SET id=%d WHERE id=%d", t->name, 1 + (int)rnd(x, 300), id);
            break;
        }
        /* fall through */
    default:
        exec(x, "DELETE FROM %s WHERE id >= 5000 AND id < %d", t->name, 5000 + (int)rnd(x, 3000));
        break;
    }
    tb_buf_free(&cols);
    tb_buf_free(&vals);
}

static void data_stmt(tt *x, tt_table *t) { data_stmt_kind(x, t, TK_NKINDS); }

static tt_table *table(tt *x) { return &x->t[rnd(x, NTABLES)]; }

static void one_transaction(tt *x)
{
    tk_kind k;
    do
        k = (tk_kind)rnd(x, TK_NKINDS);
    while (disabled(k) || ((k == TK_TRUNCATE || k == TK_ADD_COLUMN || k == TK_DROP_COLUMN) && rnd(x, 4) != 0));
    tt_table *t = table(x);
    tb_buf_printf(&x->log, "-- %s\n", tk_names[k]);
    switch (k) {
    case TK_INSERT: case TK_UPDATE: case TK_DELETE: case TK_PK_CHANGE:
        data_stmt_kind(x, t, k);
        break;
    case TK_BIG: {
        unsigned lo = 5000 + rnd(x, 1000), n = 500 + rnd(x, 1500);
        exec(x, "INSERT IGNORE INTO %s (id, v, n) SELECT seq, CONCAT('big', seq), seq FROM seq_%u_to_%u", t->name,
             lo, lo + n);
        break;
    }
    case TK_MULTI:
        exec(x, "BEGIN");
        for (unsigned i = 0, n = 2 + rnd(x, 6); i < n; i++)
            data_stmt(x, table(x));
        exec(x, "COMMIT");
        break;
    case TK_SAVEPOINT:
        exec(x, "BEGIN");
        data_stmt(x, table(x));
        exec(x, "SAVEPOINT s1");
        for (unsigned i = 0, n = 1 + rnd(x, 4); i < n; i++)
            data_stmt(x, table(x));
        exec(x, "ROLLBACK TO SAVEPOINT s1");
        data_stmt(x, table(x));
        exec(x, "COMMIT");
        break;
    case TK_ROLLBACK:
        exec(x, "BEGIN");
        for (unsigned i = 0, n = 1 + rnd(x, 5); i < n; i++)
            data_stmt(x, table(x));
        exec(x, "ROLLBACK");
        break;
    case TK_XA: {
        int id = ++x->xa;
        exec(x, "XA START 'tx%d'", id);
        for (unsigned i = 0, n = 1 + rnd(x, 4); i < n; i++)
            data_stmt(x, table(x));
        exec(x, "XA END 'tx%d'", id);
        exec(x, "XA PREPARE 'tx%d'", id);
        exec(x, rnd(x, 3) ? "XA COMMIT 'tx%d'" : "XA ROLLBACK 'tx%d'", id);
        break;
    }
    case TK_TRUNCATE:
        exec(x, "TRUNCATE TABLE %s", t->name);
        break;
    case TK_ADD_COLUMN:
        if (t->ncols < MAXCOLS) {
            snprintf(t->cols[t->ncols], sizeof t->cols[0], "x%d", ++x->added);
            exec(x, "ALTER TABLE %s ADD COLUMN %s INT NULL", t->name, t->cols[t->ncols]);
            t->ncols++;
        }
        break;
    case TK_DROP_COLUMN:
        if (t->ncols > 5) { /* only added columns */
            exec(x, "ALTER TABLE %s DROP COLUMN %s", t->name, t->cols[t->ncols - 1]);
            t->ncols--;
        }
        break;
    default:
        break;
    }
}

static void start_cache(tt *x)
{
    const char *args[] = {"cache", "--config", x->r.cfg, NULL};
    x->cache = e2e_spawn(args, x->clog);
}

static void kill9(pid_t pid)
{
    kill(pid, SIGKILL);
    e2e_wait(pid, 30000);
}

/* The round's statements on stderr (a failing round's reproduction). */
static void print_round(const tt *x, const char *what)
{
    fprintf(stderr, "torture: FAILED round %d (seed %llu, folder %s): %s\nstatements of the round:\n%s\n", x->round,
            x->seed, x->r.dir, what, tb_buf_cstr(&x->log));
}

/* Rows of a cache table as "c1|c2|..\n" ordered by id. A column the cache
 * table lacks reads as NULL: under ddl.alter.policy=warn an added column
 * reaches the schema record (and the cache) with the table's next row event,
 * and until then every row holds NULL in it at the source too. */
static void tt_cache_rows(const char *path, const char *table, const tt_table *t, tb_buf *out)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    tb_buf sel;
    tb_buf_init(&sel, 0);
    for (size_t c = 0; c < t->ncols; c++) {
        char q[600];
        snprintf(q, sizeof q, "SELECT 1 FROM pragma_table_info('%s') WHERE name='%s'", table, t->cols[c]);
        sqlite3_stmt *st = NULL;
        cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s: %s", q, sqlite3_errmsg(db));
        bool has = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        tb_buf_printf(&sel, "%s%s", c ? "," : "", has ? t->cols[c] : "NULL");
    }
    sqlite3_close(db);
    st_cache_rows(path, table, sel.data, out);
    tb_buf_free(&sel);
}

/* Source, topic as a KTable and cache hold the same rows of every table. */
static bool check(tt *x)
{
    bool ok = true;
    for (int i = 0; i < NTABLES; i++) {
        tt_table *t = &x->t[i];
        const char *cols[MAXCOLS + 1];
        tb_buf colsql, src, top, cache;
        tb_buf_init(&colsql, 0);
        tb_buf_init(&src, 0);
        tb_buf_init(&top, 0);
        tb_buf_init(&cache, 0);
        for (size_t c = 0; c < t->ncols; c++) {
            cols[c] = t->cols[c];
            tb_buf_printf(&colsql, "%s%s", c ? "," : "", t->cols[c]);
        }
        cols[t->ncols] = NULL;
        char topic[300], ctable[300];
        snprintf(topic, sizeof topic, "%s.%s.%s", x->r.db, x->r.db, t->name);
        snprintf(ctable, sizeof ctable, "%s.%s", x->r.db, t->name);
        st_source_rows(x->m, x->r.db, t->name, colsql.data, &src);
        st_topic_table(topic, cols, &top);
        tt_cache_rows(x->r.cache, ctable, t, &cache);
        const char *bad = strcmp(src.data, top.data) != 0 ? "the topic read as a table differs from the source"
                          : strcmp(src.data, cache.data) != 0 ? "the cache differs from the source"
                                                              : NULL;
        if (bad) {
            char path[400];
            snprintf(path, sizeof path, "%s/%s.round-%d.diff", x->r.dir, t->name, x->round);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "== source\n%s== topic\n%s== cache\n%s", src.data, top.data, cache.data);
                fclose(f);
            }
            char what[700];
            snprintf(what, sizeof what, "table %s: %s (source, topic and cache rows in %s)", t->name, bad, path);
            print_round(x, what);
            ok = false;
        }
        tb_buf_free(&colsql);
        tb_buf_free(&src);
        tb_buf_free(&top);
        tb_buf_free(&cache);
    }
    return ok;
}

static void tt_fini(void) { e2e_kill_children(); }

Test(torture, mariadb, .fini = tt_fini, .timeout = 0)
{
    tt x;
    memset(&x, 0, sizeof(x));
    const char *s = getenv("TB_TORTURE_SECONDS"), *sd = getenv("TB_TORTURE_SEED");
    long long seconds = (s && *s ? atoll(s) : 120) * 2 / 3; /* the SQLite test takes the rest */
    x.seed = sd && *sd ? strtoull(sd, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    x.rnd = (unsigned)(x.seed ^ (x.seed >> 32)) | 1u;
    tb_buf_init(&x.log, 0);
    st_setup(&x.r, "e2e_torture", "ddl.alter.policy=warn\nha.enabled=false\n");
    fprintf(stderr, "torture: seed %llu, %lld s, folder %s (TB_TORTURE_SEED=%llu reproduces it)\n", x.seed, seconds,
            x.r.dir, x.seed);
    snprintf(x.clog, sizeof x.clog, "%s/cache.log", x.r.dir);
    x.m = e2e_mysql();
    e2e_sql(x.m, "CREATE DATABASE %s", x.r.db);
    cr_assert_eq(mysql_select_db(x.m, x.r.db), 0);
    for (int i = 0; i < NTABLES; i++) {
        tt_table *t = &x.t[i];
        snprintf(t->name, sizeof t->name, "t%d", i);
        const char *base[] = {"id", "v", "n", "d", "dt"};
        for (size_t c = 0; c < 5; c++)
            snprintf(t->cols[c], sizeof t->cols[0], "%s", base[c]);
        t->ncols = 5;
        e2e_sql(x.m, "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(10,2), dt DATE)",
                t->name);
        e2e_sql(x.m, "INSERT INTO %s (id, v, n, d, dt) SELECT seq, CONCAT('s', seq), seq * 3, seq / 4, "
                     "'2020-01-01' + INTERVAL seq DAY FROM seq_1_to_200", t->name);
    }
    st_start(&x.r);
    wait_caught_up(x.m, x.r.status, x.r.pid, x.r.log); /* the snapshot made every table's topic */
    start_cache(&x);
    long long end = tb_itest_now_ms() + seconds * 1000;
    uint64_t kills_run = 0, kills_cache = 0;
    bool ok = true;
    while (ok && (x.round == 0 || tb_itest_now_ms() < end)) {
        x.round++;
        tb_buf_reset(&x.log);
        tb_buf_printf(&x.log, "-- round %d, seed %llu\n", x.round, x.seed);
        unsigned n = 6 + rnd(&x, 14), fault = rnd(&x, 4);
        for (unsigned i = 0; i < n; i++) {
            if (i == n / 2 && fault == 1) { /* kill -9 of the connector, then start it again */
                tb_buf_printf(&x.log, "-- kill -9 tributary run\n");
                kill9(x.r.pid);
                kills_run++;
                st_start(&x.r);
            } else if (i == n / 2 && fault == 2) {
                tb_buf_printf(&x.log, "-- kill -9 tributary cache\n");
                kill9(x.cache);
                kills_cache++;
                start_cache(&x);
            }
            one_transaction(&x);
        }
        char path[400];
        snprintf(path, sizeof path, "%s/round-%d.sql", x.r.dir, x.round);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(tb_buf_cstr(&x.log), f);
            fclose(f);
        }
        wait_caught_up(x.m, x.r.status, x.r.pid, x.r.log);
        kill(x.cache, SIGTERM);
        cr_assert_neq(e2e_wait(x.cache, 60000), -2, "tributary cache did not stop; see %s", x.clog);
        st_cache_build(&x.r);
        ok = check(&x);
        start_cache(&x);
    }
    fprintf(stderr, "torture: %d round(s), %" PRIu64 " kill -9 of run, %" PRIu64 " of cache, seed %llu: %s\n",
            x.round, kills_run, kills_cache, x.seed, ok ? "source, topics and cache equal" : "FAILED");
    cr_assert(ok, "torture round %d failed (seed %llu); see stderr and %s", x.round, x.seed, x.r.dir);
    kill(x.cache, SIGTERM);
    e2e_wait(x.cache, 60000);
    kill(x.r.pid, SIGTERM);
    e2e_wait(x.r.pid, 60000);
    e2e_assert_clean_log(x.r.log);
    e2e_assert_clean_log(x.clog);
    mysql_close(x.m);
    tb_buf_free(&x.log);
    e2e_rmtree(x.r.dir);
}

/* ------------------------------------------------------------ SQLite */

/* The SQLite workload: the same kinds as far as SQLite has them (no XA; DELETE
 * of every row for TRUNCATE), on tables of INTEGER and TEXT columns, through
 * the application's own connection. */
typedef struct sq {
    sqlite3 *db;
    tt x;              /* the generator's state and the run (x.m unused) */
    char src[400];
} sq;

static void sq_exec(sq *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sq_exec(sq *q, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tb_buf_printf(&q->x.log, "%s;\n", text);
    char *msg = NULL;
    for (int tries = 0; sqlite3_exec(q->db, text, NULL, NULL, &msg) != SQLITE_OK; tries++) {
        bool busy = sqlite3_errcode(q->db) == SQLITE_BUSY && tries < 200;
        if (!busy) {
            tb_buf_printf(&q->x.log, "-- error: %s\n", msg ? msg : "?");
            break;
        }
        sqlite3_free(msg);
        msg = NULL;
        usleep(10000);
    }
    sqlite3_free(msg);
}

static void sq_data(sq *q, tt_table *t, int which)
{
    tt *x = &q->x;
    int id = 1 + (int)rnd(x, 300), k = (int)rnd(x, 6);
    switch (which >= 0 ? which : (int)rnd(x, 9)) {
    case 0: case 1: case 2: case 3: {
        tb_buf cols, vals;
        tb_buf_init(&cols, 0);
        tb_buf_init(&vals, 0);
        for (size_t c = 0; c < t->ncols; c++) {
            tb_buf_printf(&cols, "%s%s", c ? "," : "", t->cols[c]);
            if (c == 0)
                tb_buf_printf(&vals, "%d", id);
            else if (rnd(x, 8) == 0)
                tb_buf_puts(&vals, ",NULL");
            else if (strcmp(t->cols[c], "v") == 0)
                tb_buf_printf(&vals, ",'w''%u'", rnd(x, 1000));
            else
                tb_buf_printf(&vals, ",%lld", (long long)rnd(x, 2000000) - 1000000);
        }
        sq_exec(q, "INSERT INTO %s (%s) VALUES (%s) ON CONFLICT(id) DO UPDATE SET v=excluded.v", t->name, cols.data,
                vals.data);
        tb_buf_free(&cols);
        tb_buf_free(&vals);
        break;
    }
    case 4: case 5:
        sq_exec(q, "UPDATE %s SET v=IFNULL(v,'')||'u', n=IFNULL(n,0)/2+%d WHERE id BETWEEN %d AND %d", t->name, k, id,
                id + k);
        break;
    case 6:
        sq_exec(q, "DELETE FROM %s WHERE id BETWEEN %d AND %d", t->name, id, id + k / 2);
        break;
    case 7:
        sq_exec(q, "UPDATE OR IGNORE %s SET id=%d WHERE id=%d", t->name, 1 + (int)rnd(x, 300), id);
        break;
    default:
        sq_exec(q, "DELETE FROM %s WHERE id >= 5000 AND id < %d", t->name, 5000 + (int)rnd(x, 3000));
        break;
    }
}

static void sq_transaction(sq *q)
{
    tt *x = &q->x;
    tk_kind k;
    do
        k = (tk_kind)rnd(x, TK_NKINDS);
    while (disabled(k) || k == TK_XA ||
           ((k == TK_TRUNCATE || k == TK_ADD_COLUMN || k == TK_DROP_COLUMN) && rnd(x, 4) != 0));
    tt_table *t = table(x);
    tb_buf_printf(&x->log, "-- %s\n", tk_names[k]);
    switch (k) {
    case TK_INSERT: case TK_UPDATE: case TK_DELETE: case TK_PK_CHANGE: {
        static const int pick[] = {0, 4, 6, 7};
        sq_data(q, t, pick[k]);
        break;
    }
    case TK_BIG: {
        unsigned lo = 5000 + rnd(x, 1000), n = 500 + rnd(x, 1500);
        sq_exec(q, "WITH RECURSIVE s(i) AS (SELECT %u UNION ALL SELECT i+1 FROM s WHERE i < %u) "
                   "INSERT OR IGNORE INTO %s (id, v, n) SELECT i, 'big'||i, i FROM s", lo, lo + n, t->name);
        break;
    }
    case TK_MULTI:
        sq_exec(q, "BEGIN");
        for (unsigned i = 0, n = 2 + rnd(x, 6); i < n; i++)
            sq_data(q, table(x), -1);
        sq_exec(q, "COMMIT");
        break;
    case TK_SAVEPOINT:
        sq_exec(q, "BEGIN");
        sq_data(q, table(x), -1);
        sq_exec(q, "SAVEPOINT s1");
        for (unsigned i = 0, n = 1 + rnd(x, 4); i < n; i++)
            sq_data(q, table(x), -1);
        sq_exec(q, "ROLLBACK TO s1");
        sq_exec(q, "RELEASE s1");
        sq_data(q, table(x), -1);
        sq_exec(q, "COMMIT");
        break;
    case TK_ROLLBACK:
        sq_exec(q, "BEGIN");
        for (unsigned i = 0, n = 1 + rnd(x, 5); i < n; i++)
            sq_data(q, table(x), -1);
        sq_exec(q, "ROLLBACK");
        break;
    case TK_TRUNCATE:
        sq_exec(q, "DELETE FROM %s", t->name);
        break;
    case TK_ADD_COLUMN:
        if (t->ncols < MAXCOLS) {
            snprintf(t->cols[t->ncols], sizeof t->cols[0], "x%d", ++x->added);
            sq_exec(q, "ALTER TABLE %s ADD COLUMN %s INTEGER", t->name, t->cols[t->ncols]);
            t->ncols++;
        }
        break;
    case TK_DROP_COLUMN:
        if (t->ncols > 3) {
            sq_exec(q, "ALTER TABLE %s DROP COLUMN %s", t->name, t->cols[t->ncols - 1]);
            t->ncols--;
        }
        break;
    default:
        break;
    }
}

/* Rows of a SQLite table as "c1|c2|..\n" ordered by id. */
static void sq_rows(const char *path, const char *table, const char *cols, tb_buf *out)
{
    st_cache_rows(path, table, cols, out); /* plain SQL over a SQLite file, as for the cache */
}

/* Source, topic and cache equal; with until_ms, the topic check is repeated
 * until it holds or the deadline passes (the connector catching up). */
static bool sq_check(sq *q, long long until_ms, bool report)
{
    tt *x = &q->x;
    bool ok = true;
    for (int i = 0; i < NTABLES && ok; i++) {
        tt_table *t = &x->t[i];
        const char *cols[MAXCOLS + 1];
        tb_buf colsql, src, top, cache;
        tb_buf_init(&colsql, 0);
        tb_buf_init(&src, 0);
        tb_buf_init(&top, 0);
        tb_buf_init(&cache, 0);
        for (size_t c = 0; c < t->ncols; c++) {
            cols[c] = t->cols[c];
            tb_buf_printf(&colsql, "%s%s", c ? "," : "", t->cols[c]);
        }
        cols[t->ncols] = NULL;
        char topic[300], ctable[300];
        snprintf(topic, sizeof topic, "%s.%s.%s", x->r.db, x->r.db, t->name);
        snprintf(ctable, sizeof ctable, "%s.%s", x->r.db, t->name);
        sq_rows(q->src, t->name, colsql.data, &src);
        const char *bad = NULL;
        do {
            tb_buf_reset(&top);
            st_topic_table(topic, cols, &top);
            bad = strcmp(src.data, top.data) != 0 ? "the topic read as a table differs from the source" : NULL;
        } while (bad && until_ms && tb_itest_now_ms() < until_ms && (usleep(300000), true));
        if (!bad && report) {
            tt_cache_rows(x->r.cache, ctable, t, &cache);
            bad = strcmp(src.data, cache.data) != 0 ? "the cache differs from the source" : NULL;
        }
        if (bad && report) {
            char path[400], what[700];
            snprintf(path, sizeof path, "%s/%s.round-%d.diff", x->r.dir, t->name, x->round);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "== source\n%s== topic\n%s== cache\n%s", src.data, top.data, cache.data);
                fclose(f);
            }
            snprintf(what, sizeof what, "table %s: %s (source, topic and cache rows in %s)", t->name, bad, path);
            print_round(x, what);
        }
        ok = !bad;
        tb_buf_free(&colsql);
        tb_buf_free(&src);
        tb_buf_free(&top);
        tb_buf_free(&cache);
    }
    return ok;
}

Test(torture, sqlite, .fini = tt_fini, .timeout = 0)
{
    sq q;
    memset(&q, 0, sizeof(q));
    tt *x = &q.x;
    const char *s = getenv("TB_TORTURE_SECONDS"), *sd = getenv("TB_TORTURE_SEED");
    long long seconds = (s && *s ? atoll(s) : 120) / 3;
    x->seed = sd && *sd ? strtoull(sd, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    x->rnd = (unsigned)(x->seed ^ (x->seed >> 32)) | 1u;
    tb_buf_init(&x->log, 0);
    /* st_setup writes a MariaDB configuration; this one replaces it */
    st_setup(&x->r, "e2e_tortsq", NULL);
    snprintf(q.src, sizeof q.src, "%s/src.db", x->r.dir);
    snprintf(x->clog, sizeof x->clog, "%s/cache.log", x->r.dir);
    FILE *f = fopen(x->r.cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=%s\nsource.sqlite.shadow.path=%s/"
            "shadow.db\nsource.sqlite.poll.ms=20\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=100\nstatus.file=%s\ncache.path=%s\nheartbeat.interval.ms=100\n"
            "topic.partitions=3\nha.enabled=false\n",
            x->r.db, q.src, x->r.db, x->r.dir, x->r.db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), x->r.status, x->r.cache);
    fclose(f);
    fprintf(stderr, "torture sqlite: seed %llu, %lld s, folder %s (TB_TORTURE_SEED=%llu reproduces it)\n", x->seed,
            seconds, x->r.dir, x->seed);
    cr_assert_eq(sqlite3_open(q.src, &q.db), SQLITE_OK);
    sqlite3_busy_timeout(q.db, 5000);
    sq_exec(&q, "PRAGMA journal_mode=WAL");
    for (int i = 0; i < NTABLES; i++) {
        tt_table *t = &x->t[i];
        snprintf(t->name, sizeof t->name, "t%d", i);
        const char *base[] = {"id", "v", "n"};
        for (size_t c = 0; c < 3; c++)
            snprintf(t->cols[c], sizeof t->cols[0], "%s", base[c]);
        t->ncols = 3;
        sq_exec(&q, "CREATE TABLE %s (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)", t->name);
        sq_exec(&q, "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 200) "
                    "INSERT INTO %s SELECT i, 's'||i, i*3 FROM s", t->name);
    }
    st_start(&x->r);
    /* the snapshot done (state streaming) made every table's topic */
    long long deadline = tb_itest_now_ms() + 120000;
    for (bool streaming = false; !streaming; usleep(100000)) {
        tb_buf b;
        tb_buf_init(&b, 0);
        if (e2e_slurp(x->r.status, &b) && b.len) {
            json_t *v = jo_parse(b.data, b.len);
            const char *st = json_string_value(json_object_get(v, "state"));
            streaming = st && strcmp(st, "streaming") == 0;
            json_decref(v);
        }
        tb_buf_free(&b);
        cr_assert(tb_itest_now_ms() < deadline, "the connector never streamed; see %s", x->r.log);
    }
    cr_assert(sq_check(&q, tb_itest_now_ms() + 120000, false), "the snapshot never reached the topics; see %s",
              x->r.dir);
    start_cache(x);
    long long end = tb_itest_now_ms() + seconds * 1000;
    uint64_t kills_run = 0, kills_cache = 0;
    bool ok = true;
    while (ok && (x->round == 0 || tb_itest_now_ms() < end)) {
        x->round++;
        tb_buf_reset(&x->log);
        tb_buf_printf(&x->log, "-- round %d, seed %llu (SQLite)\n", x->round, x->seed);
        unsigned n = 6 + rnd(x, 14), fault = rnd(x, 4);
        for (unsigned i = 0; i < n; i++) {
            if (i == n / 2 && fault == 1) {
                tb_buf_printf(&x->log, "-- kill -9 tributary run\n");
                kill9(x->r.pid);
                kills_run++;
                st_start(&x->r);
            } else if (i == n / 2 && fault == 2) {
                tb_buf_printf(&x->log, "-- kill -9 tributary cache\n");
                kill9(x->cache);
                kills_cache++;
                start_cache(x);
            }
            sq_transaction(&q);
        }
        char path[400];
        snprintf(path, sizeof path, "%s/round-%d.sql", x->r.dir, x->round);
        FILE *rf = fopen(path, "w");
        if (rf) {
            fputs(tb_buf_cstr(&x->log), rf);
            fclose(rf);
        }
        bool caught_up = sq_check(&q, tb_itest_now_ms() + 90000, false); /* the topics catch up */
        kill(x->cache, SIGTERM);
        cr_assert_neq(e2e_wait(x->cache, 60000), -2, "tributary cache did not stop; see %s", x->clog);
        st_cache_build(&x->r);
        ok = sq_check(&q, 0, true);
        (void)caught_up;
        start_cache(x);
    }
    fprintf(stderr, "torture sqlite: %d round(s), %" PRIu64 " kill -9 of run, %" PRIu64 " of cache, seed %llu: %s\n",
            x->round, kills_run, kills_cache, x->seed, ok ? "source, topics and cache equal" : "FAILED");
    cr_assert(ok, "torture (SQLite) round %d failed (seed %llu); see stderr and %s", x->round, x->seed, x->r.dir);
    kill(x->cache, SIGTERM);
    e2e_wait(x->cache, 60000);
    kill(x->r.pid, SIGTERM);
    e2e_wait(x->r.pid, 60000);
    e2e_assert_clean_log(x->r.log);
    e2e_assert_clean_log(x->clog);
    sqlite3_close(q.db);
    tb_buf_free(&x->log);
    e2e_rmtree(x->r.dir);
}
