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
 * XA transactions committed or rolled back, TRUNCATE, ALTER TABLE ADD, DROP and
 * MODIFY COLUMN, RENAME TABLE, DROP TABLE and CREATE it again, and a table
 * without a primary key (keyed by key.columns, a UNIQUE key at the source)
 * that gains and loses one; values of twenty-six types (INT, VARCHAR, BIGINT at
 * its limits, DECIMAL, DATE, DATETIME(6), DOUBLE, BIGINT UNSIGNED, VARBINARY,
 * ENUM, TIME(3), YEAR, SET, BIT, TEXT, BLOB, TIMESTAMP(3), JSON, FLOAT,
 * UUID, INET6, INET4, POINT, TINYINT UNSIGNED, CHAR, BINARY). Before a third
 * of the transactions the session draws its GTID domain (0-2) and server id
 * (1-2) again (SET SESSION gtid_domain_id, server_id: what multi-source
 * replication and a failover to another server leave in a binlog), so
 * positions are GTID lists of several domains through every fault. Now and then the server starts or stops
 * compressing its binlog events (log_bin_compress, from 10 bytes).
 * The SQLite workload has the data kinds, TRUNCATE (DELETE of every row),
 * ADD and DROP COLUMN, RENAME and DROP/CREATE, on INTEGER and TEXT columns.
 * Faults, halfway through some rounds: `tributary run` or `tributary cache`
 * killed with SIGKILL and started again, MariaDB or the Kafka broker
 * restarted, or the connector stopped while the binlog files it needs are
 * purged (snapshot.mode=when_needed: a resnapshot and its reconcile step).
 * Two of the tables, t1 and t2, are children of a parent table fp that is not captured (a
 * foreign key on their TINYINT column ti: t1 ON DELETE CASCADE, t2 ON DELETE SET NULL, both ON
 * UPDATE CASCADE); the parent's deletes and key changes change their rows without row events
 * (source.fk.cascade.policy=resnapshot, the default, snapshots them again).
 * Under ddl.alter.policy=resnapshot a third of the columns ADD COLUMN adds are generated (VIRTUAL
 * or PERSISTENT, on ti, n or v): the ALTER gives every row a value without row events, and so do
 * the foreign key actions on ti.
 * ddl.alter.policy is resnapshot or warn by the seed, and the snapshots that
 * snapshot.mode asks for (the first, and one after a purge) are consistent
 * or chunked (snapshot.initial.method, by the seed; chunks of 100 rows, with
 * snapshot.threads 1 or 2 by the seed: 2 reads windows ahead). After each round the
 * check waits (a bounded time) for the topic to converge, since a
 * resnapshot goes on after the binlog was read to its end. Every statement
 * of a round is written to <dir>/round-N.sql; a round whose check fails
 * prints the seed, the round and its statements, and the folder is kept; a
 * failing round is then reduced to the shortest list of its transactions
 * that still fails (<dir>/round-N.min.sql), replayed from a copy of the
 * round's start (MariaDB: the database <db>_s; SQLite: round-start.db).
 *
 *   TB_TORTURE_SECONDS  how long to run rounds (default 120: two thirds MariaDB, one
 *                       third SQLite)
 *   TB_TORTURE_SEED     the seed (default: from the clock; always printed)
 *   TB_TORTURE_FAULTS   the faults allowed, by name (kill_run, kill_cache,
 *                       restart_mysql, restart_kafka, purge; default all)
 *   TB_TORTURE_REDUCE_SECONDS  the time a failing round's reduction may take
 *                       (default 600, 0: none): its transactions and fault are
 *                       replayed from a copy of the round's start on new
 *                       databases, ddmin keeps the fewest that still fail
 *   TB_TORTURE_PLANT    R: round R also makes a change without a binlog event
 *                       (a negative control: the round fails and reduces to it)
 *
 * Statement kinds that wait for a defect to be fixed are listed in
 * torture_disabled[] with the defect they wait for (none today).
 */
#include <inttypes.h>

#include "../e2e/e2e_tables.h"

#define NTABLES 4
#define MAXCOLS 30
/* The MariaDB tables' columns at creation (an added column is "x<N> INT"). */
#define NBASE 26
static const char *const base_cols[NBASE] = {"id", "v", "n", "d", "dt", "t6", "f", "u", "b", "e", "tm", "yr", "st",
                                             "bt", "tx", "bl", "ts", "j", "fl", "uu", "i6", "i4", "g", "ti", "ch", "bn"};
#define BASE_DDL                                                                                                 \
    "v VARCHAR(40), n BIGINT, d DECIMAL(10,2), dt DATE, t6 DATETIME(6), f DOUBLE, u BIGINT UNSIGNED, "           \
    "b VARBINARY(16), e ENUM('s','m','l'), tm TIME(3), yr YEAR, st SET('a','b','c'), bt BIT(5), tx TEXT, "    \
    "bl BLOB, ts TIMESTAMP(3) NULL, j JSON, fl FLOAT, uu UUID, i6 INET6, i4 INET4, g POINT, ti TINYINT UNSIGNED, "  \
    "ch CHAR(3), bn BINARY(4)"

typedef enum tk_kind {
    TK_INSERT, TK_UPDATE, TK_DELETE, TK_PK_CHANGE, TK_BIG, TK_MULTI, TK_SAVEPOINT, TK_ROLLBACK, TK_XA,
    TK_TRUNCATE, TK_ADD_COLUMN, TK_DROP_COLUMN, TK_MODIFY_COLUMN, TK_RENAME, TK_RECREATE, TK_KEY_CHANGE,
    TK_FK_ACTION, TK_NKINDS
} tk_kind;

static const char *const tk_names[TK_NKINDS] = {"insert", "update", "delete", "pk_change", "big", "multi",
                                                "savepoint", "rollback", "xa", "truncate", "add_column",
                                                "drop_column", "modify_column", "rename", "recreate",
                                                "key_change", "fk_action"};

/* Kinds that change a table's definition, or rows without row events (fk_action): drawn a quarter
 * as often as the others, and never with a planted change (a resnapshot would read it). */
static bool tk_ddl(tk_kind k) { return k >= TK_TRUNCATE; }

/* Kinds left out of the workload, each with the defect it waits for. */
static const struct {
    tk_kind kind;
    const char *waits_for;
} torture_disabled[] = {{TK_NKINDS, NULL}};

typedef struct tt_table {
    char name[24];
    char cols[MAXCOLS][16]; /* cols[0] = "id" */
    size_t ncols;
    bool keyless;           /* no primary key at creation: keyed by key.columns (k0) */
    bool has_pk;            /* it has a primary key now */
    bool gen[MAXCOLS];      /* a generated column (VIRTUAL or PERSISTENT): never written */
    int fk;                 /* its column ti references fp (id): 1 ON DELETE CASCADE, 2 ON DELETE SET NULL
                               (both ON UPDATE CASCADE); 0 none */
    unsigned renames;
} tt_table;

#define MAXGONE 32
#define MAXUNITS 64

typedef struct tt {
    st_run r;
    MYSQL *m;
    unsigned long long seed;
    unsigned rnd;
    tt_table t[NTABLES];
    int ntables;
    char gone[MAXGONE][24]; /* names renamed away: their topics must read as empty tables */
    int ngone;
    tb_buf log;             /* the round's statements */
    int round, xa, added, fks;
    unsigned drawn[TK_NKINDS]; /* transactions of each kind */
    unsigned gens;             /* generated columns added */
    pid_t cache;
    char clog[400];
    bool quiet;             /* a replay of the reduction: differences are not printed */
    bool resnapshot;        /* ddl.alter.policy=resnapshot (else warn) */
    bool chunked;           /* snapshot.initial.method=chunked (else consistent) */
    int threads;            /* snapshot.threads of a chunked snapshot (2: windows read ahead) */
    int plant;              /* the round that makes a change without a binlog event (0: none) */
    bool no_ddl;            /* data statements only (no resnapshot can read the planted change) */
    int reduced;            /* units the reduction kept (0: none ran or it did not reproduce) */
    /* the round's units, for its reduction: a transaction or a fault each, in x->log from
     * unit_off[i] to unit_off[i + 1] (the last one to the log's end) */
    size_t unit_off[MAXUNITS];
    int unit_fault[MAXUNITS]; /* tt_fault; 0 (none): a transaction */
    int nunits;
    tt_table start_t[NTABLES]; /* the tables at the round's start (their rows in <db>_s) */
    char start_desc[400];      /* where the round's start is kept, for the reduction's report */
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

/* Run one statement; an error (a duplicate key, say) is logged, not fatal: false then. */
static bool exec(tt *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool exec(tt *x, const char *fmt, ...)
{
    char q[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    tb_buf_printf(&x->log, "%s;\n", q);
    if (mysql_query(x->m, q) == 0)
        return true;
    tb_buf_printf(&x->log, "-- error %u: %s\n", mysql_errno(x->m), mysql_error(x->m));
    return false;
}

/* t's columns that are not generated, comma separated (what an INSERT may name). */
static void written_cols(const tt_table *t, tb_buf *out)
{
    tb_buf_reset(out);
    for (size_t c = 0; c < t->ncols; c++)
        if (!t->gen[c])
            tb_buf_printf(out, "%s%s", out->len ? "," : "", t->cols[c]);
}

static void value_list(tt *x, const tt_table *t, int id, tb_buf *cols, tb_buf *vals)
{
    static const char *const words[] = {"alpha", "beta", "gamma", "delta", "it's", "x y", "", "zeta"};
    tb_buf_reset(cols);
    tb_buf_reset(vals);
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->gen[c]) /* the server computes it */
            continue;
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
        else if (strcmp(n, "t6") == 0)
            tb_buf_printf(vals, "'%04u-%02u-%02u %02u:%02u:%02u.%06u'", 1000 + rnd(x, 8999), 1 + rnd(x, 12),
                          1 + rnd(x, 28), rnd(x, 24), rnd(x, 60), rnd(x, 60), rnd(x, 4) ? rnd(x, 1000000) : 0);
        else if (strcmp(n, "f") == 0) /* quarters: exact in binary, the same text on every side */
            tb_buf_printf(vals, "%d.%02u", (int)rnd(x, 2000000) - 1000000, 25 * rnd(x, 4));
        else if (strcmp(n, "u") == 0) {
            static const char *const edge[] = {"0", "1", "9223372036854775807", "4294967295"};
            if (rnd(x, 3) == 0)
                tb_buf_puts(vals, edge[rnd(x, 4)]);
            else
                tb_buf_printf(vals, "%u%05u", rnd(x, 100000), rnd(x, 100000));
        } else if (strcmp(n, "b") == 0) {
            unsigned len = rnd(x, 17);
            if (len == 0)
                tb_buf_puts(vals, "''");
            else {
                tb_buf_puts(vals, "X'");
                for (unsigned i = 0; i < len; i++)
                    tb_buf_printf(vals, "%02x", rnd(x, 256));
                tb_buf_putc(vals, '\'');
            }
        } else if (strcmp(n, "e") == 0) {
            static const char *const e[] = {"'s'", "'m'", "'l'"};
            tb_buf_puts(vals, e[rnd(x, 3)]);
        } else if (strcmp(n, "tm") == 0) {
            tb_buf_printf(vals, "'%s%u:%02u:%02u.%03u'", rnd(x, 4) ? "" : "-", rnd(x, 839), rnd(x, 60), rnd(x, 60),
                          rnd(x, 1000));
        } else if (strcmp(n, "yr") == 0) {
            tb_buf_printf(vals, "%u", 1901 + rnd(x, 255));
        } else if (strcmp(n, "st") == 0) {
            static const char *const st[] = {"''", "'a'", "'b,c'", "'a,b,c'", "'a,c'"};
            tb_buf_puts(vals, st[rnd(x, 5)]);
        } else if (strcmp(n, "bt") == 0) {
            tb_buf_printf(vals, "b'%u%u%u%u%u'", rnd(x, 2), rnd(x, 2), rnd(x, 2), rnd(x, 2), rnd(x, 2));
        } else if (strcmp(n, "tx") == 0) {
            tb_buf_printf(vals, "REPEAT('t\\'x %u ', %u)", rnd(x, 100), rnd(x, 40));
        } else if (strcmp(n, "bl") == 0) {
            tb_buf_printf(vals, "UNHEX(REPEAT(MD5(%u), %u))", rnd(x, 1000), rnd(x, 5));
        } else if (strcmp(n, "ts") == 0) {
            tb_buf_printf(vals, "'%04u-%02u-%02u %02u:%02u:%02u.%03u'", 1971 + rnd(x, 66), 1 + rnd(x, 12),
                          1 + rnd(x, 28), rnd(x, 24), rnd(x, 60), rnd(x, 60), rnd(x, 1000));
        } else if (strcmp(n, "j") == 0) { /* compact JSON as Jansson prints it (no strings or null alone) */
            static const char *const j[] = {"'{\"a\":1,\"b\":[1,2]}'", "'[1,2,3]'", "'42'", "'{}'",
                                            "'{\"k\":{\"n\":-7}}'"};
            tb_buf_puts(vals, j[rnd(x, 5)]);
        } else if (strcmp(n, "fl") == 0) { /* quarters: exact in a float */
            tb_buf_printf(vals, "%d.%02u", (int)rnd(x, 200000) - 100000, 25 * rnd(x, 4));
        } else if (strcmp(n, "uu") == 0) {
            /* version 4, variant 10xx: the server refuses some other bit patterns */
            tb_buf_printf(vals, "'%08x-%04x-4%03x-%x%03x-%04x%08x'", rnd(x, 0), rnd(x, 65536), rnd(x, 4096),
                          8 + rnd(x, 4), rnd(x, 4096), rnd(x, 65536), rnd(x, 0));
        } else if (strcmp(n, "i6") == 0) {
            tb_buf_printf(vals, "'2001:db8::%x:%x'", rnd(x, 65536), rnd(x, 65536));
        } else if (strcmp(n, "i4") == 0) {
            tb_buf_printf(vals, "'10.%u.%u.%u'", rnd(x, 256), rnd(x, 256), rnd(x, 256));
        } else if (strcmp(n, "g") == 0) {
            tb_buf_printf(vals, "ST_GeomFromText('POINT(%d %d.5)')", (int)rnd(x, 2000) - 1000, (int)rnd(x, 180) - 90);
        } else if (strcmp(n, "ti") == 0) {
            tb_buf_printf(vals, "%u", rnd(x, 256));
        } else if (strcmp(n, "ch") == 0) {
            static const char *const ch[] = {"''", "'a'", "'ab'", "'abc'", "'x y'"};
            tb_buf_puts(vals, ch[rnd(x, 5)]);
        } else if (strcmp(n, "bn") == 0) {
            tb_buf_printf(vals, "X'%02x%02x%02x%02x'", rnd(x, 256), rnd(x, 256), rnd(x, 3) ? rnd(x, 256) : 0, 0u);
        } else
            tb_buf_printf(vals, "%u", rnd(x, 100000));
    }
}

/* CREATE TABLE t with the base columns (keyless: a UNIQUE key instead of a
 * primary key) and nrows rows of random values. */
/* The foreign key of a child of fp, named fk<n> (a name of its own: one InnoDB made would stay
 * with the table through a RENAME, and clash with the next table made under the old name). */
static void fk_clause(tt *x, const tt_table *t, char *out, size_t cap)
{
    if (!t->fk) {
        *out = '\0';
        return;
    }
    snprintf(out, cap, "CONSTRAINT fk%d FOREIGN KEY (ti) REFERENCES fp (id) ON DELETE %s ON UPDATE CASCADE", ++x->fks,
             t->fk == 1 ? "CASCADE" : "SET NULL");
}

static void table_create(tt *x, tt_table *t, int nrows)
{
    for (size_t c = 0; c < NBASE; c++)
        snprintf(t->cols[c], sizeof t->cols[0], "%s", base_cols[c]);
    t->ncols = NBASE;
    memset(t->gen, 0, sizeof t->gen);
    t->has_pk = !t->keyless;
    char fk[200];
    fk_clause(x, t, fk, sizeof fk);
    exec(x, "CREATE TABLE %s (id INT NOT NULL, " BASE_DDL ", %s (id)%s%s)", t->name,
         t->keyless ? "UNIQUE KEY" : "PRIMARY KEY", *fk ? ", " : "", fk);
    tb_buf cols, vals;
    tb_buf_init(&cols, 0);
    tb_buf_init(&vals, 0);
    for (int i = 0; i < nrows; i++) {
        value_list(x, t, 1 + (int)rnd(x, 300), &cols, &vals);
        exec(x, "INSERT IGNORE INTO %s (%s) VALUES (%s)", t->name, cols.data, vals.data);
    }
    tb_buf_free(&cols);
    tb_buf_free(&vals);
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
    case 4:
        exec(x, "UPDATE %s SET v=CONCAT(IFNULL(v,''),'u'), n=IFNULL(n,0) DIV 2 + %d WHERE id BETWEEN %d AND %d",
             t->name, k, id, id + k);
        break;
    case 5:
        exec(x, "UPDATE %s SET f=IF(ABS(f)<1e9,f*2,f-SIGN(f)*1e9), t6=t6 + INTERVAL %d MICROSECOND, b=REVERSE(b), "
                "u=IFNULL(u,0) DIV 3, e=IF(e='l','s','l'), st=IF(st='','b,c',''), bt=bt ^ 1, "
                "yr=IF(yr < 2155, yr + 1, 1901), tm=IF(tm < '800:00:00', ADDTIME(tm, '1:00:00.5'), '-1:00:00'), "
                "tx=CONCAT(IFNULL(tx,''),'+'), bl=REVERSE(bl), ts=ts + INTERVAL 1 SECOND, fl=IF(fl=0,1,-fl), "
                "j=IF(j='[1,2,3]','{}','[1,2,3]'), ti=255-ti, ch=REVERSE(ch), g=POINT(ST_Y(g), ST_X(g)) "
                "WHERE id BETWEEN %d AND %d",
             t->name, k + 1, id, id + k);
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

static tt_table *table(tt *x) { return &x->t[rnd(x, (unsigned)x->ntables)]; }

static void one_transaction(tt *x)
{
    tk_kind k;
    do
        k = (tk_kind)rnd(x, TK_NKINDS);
    while (disabled(k) || (tk_ddl(k) && (x->no_ddl || rnd(x, 4) != 0)));
    tt_table *t = table(x);
    x->drawn[k]++;
    tb_buf_printf(&x->log, "-- %s\n", tk_names[k]);
    if (rnd(x, 3) == 0)
        exec(x, "SET SESSION gtid_domain_id = %u, server_id = %u", rnd(x, 3), 1 + rnd(x, 2));
    if (rnd(x, 12) == 0) /* compressed query and row events from here on, or no more */
        exec(x, "SET GLOBAL log_bin_compress = %s, log_bin_compress_min_len = 10", rnd(x, 2) ? "ON" : "OFF");
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
    case TK_ADD_COLUMN: /* a third of them generated, under ddl.alter.policy=resnapshot (the ALTER gives
                         * every row its value without row events; warn would leave them out) */
        if (t->ncols < MAXCOLS) {
            static const char *const gens[] = {"INT AS (IFNULL(ti, 0) * 2 + id) VIRTUAL",
                                               "BIGINT AS (IFNULL(n, 0) DIV 3) PERSISTENT",
                                               "INT AS (CHAR_LENGTH(IFNULL(v, ''))) VIRTUAL"};
            bool gen = x->resnapshot && rnd(x, 3) == 0;
            snprintf(t->cols[t->ncols], sizeof t->cols[0], "x%d", ++x->added);
            if (exec(x, "ALTER TABLE %s ADD COLUMN %s %s", t->name, t->cols[t->ncols],
                     gen ? gens[rnd(x, 3)] : "INT NULL")) {
                t->gen[t->ncols] = gen;
                t->ncols++;
                x->gens += gen;
            }
        }
        break;
    case TK_DROP_COLUMN:
        if (t->ncols > NBASE && exec(x, "ALTER TABLE %s DROP COLUMN %s", t->name, t->cols[t->ncols - 1]))
            t->gen[--t->ncols] = false; /* only added columns */
        break;
    case TK_MODIFY_COLUMN: /* changes that keep every value (ddl.alter.policy=warn sends none again) */
        switch (rnd(x, 3)) {
        case 0:
            exec(x, "ALTER TABLE %s MODIFY COLUMN v VARCHAR(%d)", t->name, rnd(x, 2) ? 40 : 64);
            break;
        case 1:
            exec(x, "ALTER TABLE %s MODIFY COLUMN n %s", t->name, rnd(x, 2) ? "BIGINT" : "DECIMAL(20,0)");
            break;
        default:
            if (t->ncols > NBASE && !t->gen[t->ncols - 1])
                exec(x, "ALTER TABLE %s MODIFY COLUMN %s %s", t->name, t->cols[t->ncols - 1],
                     rnd(x, 2) ? "BIGINT" : "INT");
            else
                exec(x, "ALTER TABLE %s MODIFY COLUMN e ENUM('s','m','l','xl')", t->name);
            break;
        }
        break;
    case TK_RENAME: /* not k0: its key.columns setting names it */
        if (!t->keyless && x->ngone < MAXGONE) {
            char to[24];
            snprintf(to, sizeof to, "t%d_r%u", (int)(t - x->t), ++t->renames);
            exec(x, rnd(x, 2) ? "RENAME TABLE %s TO %s" : "ALTER TABLE %s RENAME TO %s", t->name, to);
            memcpy(x->gone[x->ngone++], t->name, sizeof t->name);
            memcpy(t->name, to, sizeof to);
        }
        break;
    case TK_RECREATE: /* ddl.drop.policy=tombstone: the topic is emptied at the DROP */
        exec(x, "DROP TABLE %s", t->name);
        table_create(x, t, 1 + rnd(x, 20));
        break;
    case TK_FK_ACTION: { /* fp's rows go or change key: t1's follow (CASCADE), t2's ti become NULL */
        unsigned a = rnd(x, 256), b = rnd(x, 256);
        switch (rnd(x, 4)) {
        case 0:
            exec(x, "DELETE FROM fp WHERE id BETWEEN %u AND %u", a, a + rnd(x, 4));
            break;
        case 1: /* b's children lose their parent, a's move to b */
            exec(x, "BEGIN");
            exec(x, "DELETE FROM fp WHERE id = %u", b);
            exec(x, "UPDATE fp SET id = %u WHERE id = %u", b, a);
            if (rnd(x, 2))
                data_stmt(x, table(x));
            exec(x, "COMMIT");
            break;
        case 2:
            exec(x, "UPDATE IGNORE fp SET id = %u WHERE id = %u", b, a);
            break;
        default: /* every parent back: the children's inserts and updates of ti find theirs */
            exec(x, "INSERT IGNORE INTO fp SELECT seq FROM seq_0_to_255");
            break;
        }
        break;
    }
    case TK_KEY_CHANGE: /* k0 gains or loses its primary key (the key columns stay "id") */
        if (t->keyless) {
            exec(x, t->has_pk ? "ALTER TABLE %s DROP PRIMARY KEY" : "ALTER TABLE %s ADD PRIMARY KEY (id)", t->name);
            t->has_pk = !t->has_pk;
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

/* The topic read as a table (st_topic_table); one the connector has not
 * made yet (a table created or renamed meanwhile) reads as an empty table. */
static void tt_topic_table(const char *topic, const char *const *cols, tb_buf *out)
{
    if (st_topic_exists(topic))
        st_topic_table(topic, cols, out);
}

/* The round's statements on stderr (a failing round's reproduction). */
static void print_round(const tt *x, const char *what)
{
    if (x->quiet)
        return;
    fprintf(stderr, "torture: FAILED round %d (seed %llu, folder %s): %s\nstatements of the round:\n%s\n", x->round,
            x->seed, x->r.dir, what, tb_buf_cstr(&x->log));
}

/* How a column reads on each side, as the same text: from the source for the
 * topic comparison, from the source for the cache comparison, from the cache
 * (SQLite). A DATETIME(6) is written "YYYY-MM-DDTHH:MM:SS.ffffff"; a VARBINARY
 * is base64 in the topic and a BLOB in the cache (compared as hex); a DOUBLE
 * (a FLOAT too) holds quarters below 1e9, whose shortest text %.17g also
 * gives; a BIT is a number; a SET is an array of labels in the topic (read
 * as "a,c") and its JSON text in the cache; a TIMESTAMP(3) is UTC with a Z;
 * a JSON value is read back compact (st_cell), as the source holds it; a
 * POINT is {"srid":N,"wkb":"<base64>"} in the topic and in the cache. */
typedef enum tt_side { SIDE_SRC_TOPIC, SIDE_SRC_CACHE, SIDE_CACHE } tt_side;

static void col_expr(const char *col, tt_side side, tb_buf *out)
{
    if (strcmp(col, "t6") == 0 && side != SIDE_CACHE)
        tb_buf_puts(out, "DATE_FORMAT(t6, '%Y-%m-%dT%H:%i:%s.%f')");
    else if (strcmp(col, "g") == 0 && side != SIDE_CACHE) /* {"srid":N,"wkb":"<base64>"}, keys sorted */
        tb_buf_puts(out, "CASE WHEN g IS NULL THEN NULL ELSE CONCAT('{\"srid\":', ST_SRID(g), ',\"wkb\":\"', "
                         "REPLACE(TO_BASE64(ST_AsWKB(g)), '\\n', ''), '\"}') END");
    else if (strcmp(col, "b") == 0 || strcmp(col, "bl") == 0 || strcmp(col, "bn") == 0)
        tb_buf_printf(out, side == SIDE_SRC_TOPIC   ? "REPLACE(TO_BASE64(%s), '\\n', '')"
                           : side == SIDE_SRC_CACHE ? "HEX(%s)"
                                                    : "CASE WHEN %1$s IS NULL THEN NULL ELSE hex(%1$s) END",
                      col);
    else if ((strcmp(col, "f") == 0 || strcmp(col, "fl") == 0) && side == SIDE_CACHE)
        tb_buf_printf(out, "CASE WHEN %1$s IS NULL THEN NULL ELSE printf('%%.17g', %1$s) END", col);
    else if (strcmp(col, "fl") == 0) /* the server prints a FLOAT with 6 digits: as a DOUBLE, all of them */
        tb_buf_puts(out, "CAST(fl AS DOUBLE)");
    else if (strcmp(col, "ts") == 0 && side != SIDE_CACHE) /* UTC, milliseconds, Z */
        tb_buf_puts(out, "CONCAT(DATE_FORMAT(CONVERT_TZ(ts, @@session.time_zone, '+00:00'), '%Y-%m-%dT%H:%i:%s.'), "
                         "LPAD(MICROSECOND(ts) DIV 1000, 3, '0'), 'Z')");
    else if (strcmp(col, "bt") == 0 && side != SIDE_CACHE)
        tb_buf_puts(out, "bt + 0");
    else if (strcmp(col, "st") == 0 && side == SIDE_SRC_CACHE) /* the cache holds a SET as the topic's array */
        tb_buf_puts(out, "CASE WHEN st = '' THEN '[]' ELSE CONCAT('[\"', REPLACE(st, ',', '\",\"'), '\"]') END");
    else
        tb_buf_puts(out, col);
}

/* Whether the cache file has table (false when the file has no such table). */
static bool tt_cache_has(const char *path, const char *table)
{
    sqlite3 *db = NULL;
    bool has = false;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &st, NULL) ==
            SQLITE_OK) {
            sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
            has = sqlite3_step(st) == SQLITE_ROW;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return has;
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
        if (c)
            tb_buf_putc(&sel, ',');
        if (has)
            col_expr(t->cols[c], SIDE_CACHE, &sel);
        else
            tb_buf_puts(&sel, "NULL");
    }
    sqlite3_close(db);
    st_cache_rows(path, table, sel.data, out);
    tb_buf_free(&sel);
}

/* Write the three sides of a differing table to a file and print the round. */
static void report_diff(tt *x, const char *table, const char *bad, const tb_buf *src, const tb_buf *top,
                        const tb_buf *cache)
{
    char path[400], what[700];
    snprintf(path, sizeof path, "%s/%s.round-%d.diff", x->r.dir, table, x->round);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "== source\n%s== topic\n%s== cache\n%s", tb_buf_cstr(src), tb_buf_cstr(top), tb_buf_cstr(cache));
        fclose(f);
    }
    snprintf(what, sizeof what, "table %s: %s (source, topic and cache rows in %s)", table, bad, path);
    print_round(x, what);
}

/* Nothing is in flight: the connector committed the server's GTID position
 * and no incremental snapshot is queued (its state file, <name>.incsnap beside
 * the default offsets.file, which is relative to the configuration's folder). */
static bool settled(tt *x)
{
    char want[256], got[256] = "";
    e2e_server_gtid(x->m, want, sizeof want);
    if (!e2e_status_gtid(x->r.status, got, sizeof got) || strcmp(got, want) != 0)
        return false;
    json_error_t je;
    json_t *st = json_load_file(x->r.state, 0, &je);
    bool idle = !st || json_array_size(json_object_get(st, "queue")) == 0;
    json_decref(st);
    return idle;
}

/* The topic of every table equals its source table, the topics of the names
 * renamed away read as empty tables: checked again until it holds, until
 * until_ms (a resnapshot goes on after the binlog was read to its end), or
 * until it failed twice in a row with nothing in flight (settled), then
 * reported when report is set. */
static bool topics_equal(tt *x, long long until_ms, bool report)
{
    for (int settled_fails = 0;;) {
        bool quiet = settled(x);
        bool ok = true;
        for (int i = 0; i < x->ntables && ok; i++) {
            tt_table *t = &x->t[i];
            const char *cols[MAXCOLS + 1];
            tb_buf colsql, src, top, none;
            tb_buf_init(&colsql, 0);
            tb_buf_init(&src, 0);
            tb_buf_init(&top, 0);
            tb_buf_init(&none, 0);
            for (size_t c = 0; c < t->ncols; c++) {
                cols[c] = t->cols[c];
                if (c)
                    tb_buf_putc(&colsql, ',');
                col_expr(t->cols[c], SIDE_SRC_TOPIC, &colsql);
            }
            cols[t->ncols] = NULL;
            char topic[300];
            snprintf(topic, sizeof topic, "%s.%s.%s", x->r.db, x->r.db, t->name);
            st_source_rows(x->m, x->r.db, t->name, colsql.data, &src);
            tt_topic_table(topic, cols, &top);
            if (strcmp(tb_buf_cstr(&src), tb_buf_cstr(&top)) != 0) {
                ok = false;
                if (report || tb_itest_now_ms() >= until_ms)
                    report_diff(x, t->name, "the topic read as a table differs from the source", &src, &top, &none);
            }
            tb_buf_free(&colsql);
            tb_buf_free(&src);
            tb_buf_free(&top);
            tb_buf_free(&none);
        }
        for (int g = 0; g < x->ngone && ok; g++) {
            const char *cols[] = {"id", NULL};
            char topic[300];
            tb_buf top, none;
            tb_buf_init(&top, 0);
            tb_buf_init(&none, 0);
            snprintf(topic, sizeof topic, "%s.%s.%s", x->r.db, x->r.db, x->gone[g]);
            tt_topic_table(topic, cols, &top);
            if (top.len) {
                ok = false;
                if (report || tb_itest_now_ms() >= until_ms)
                    report_diff(x, x->gone[g], "the topic of a table renamed away still holds keys", &none, &top,
                                &none);
            }
            tb_buf_free(&top);
            tb_buf_free(&none);
        }
        settled_fails = !ok && quiet && settled(x) ? settled_fails + 1 : 0;
        if (!ok && !report && settled_fails >= 2 && tb_itest_now_ms() < until_ms)
            return topics_equal(x, 0, true); /* report it now */
        if (ok || report || tb_itest_now_ms() >= until_ms)
            return ok;
        usleep(500000);
    }
}

/* The cache (built again from the topics) holds every table's source rows,
 * and no rows under a name renamed away. */
static bool cache_equal(tt *x)
{
    bool ok = true;
    for (int i = 0; i < x->ntables && ok; i++) {
        tt_table *t = &x->t[i];
        tb_buf colsql, src, cache, none;
        tb_buf_init(&colsql, 0);
        tb_buf_init(&src, 0);
        tb_buf_init(&cache, 0);
        tb_buf_init(&none, 0);
        for (size_t c = 0; c < t->ncols; c++) {
            if (c)
                tb_buf_putc(&colsql, ',');
            col_expr(t->cols[c], SIDE_SRC_CACHE, &colsql);
        }
        char ctable[300];
        snprintf(ctable, sizeof ctable, "%s.%s", x->r.db, t->name);
        st_source_rows(x->m, x->r.db, t->name, colsql.data, &src);
        if (tt_cache_has(x->r.cache, ctable))
            tt_cache_rows(x->r.cache, ctable, t, &cache);
        if (strcmp(tb_buf_cstr(&src), tb_buf_cstr(&cache)) != 0) {
            report_diff(x, t->name, "the cache differs from the source", &src, &none, &cache);
            ok = false;
        }
        tb_buf_free(&colsql);
        tb_buf_free(&src);
        tb_buf_free(&cache);
        tb_buf_free(&none);
    }
    for (int g = 0; g < x->ngone && ok; g++) {
        char ctable[300];
        snprintf(ctable, sizeof ctable, "%s.%s", x->r.db, x->gone[g]);
        if (!tt_cache_has(x->r.cache, ctable))
            continue;
        tb_buf cache, none;
        tb_buf_init(&cache, 0);
        tb_buf_init(&none, 0);
        st_cache_rows(x->r.cache, ctable, "id", &cache);
        if (cache.len) {
            report_diff(x, x->gone[g], "the cache still holds rows of a table renamed away", &none, &none, &cache);
            ok = false;
        }
        tb_buf_free(&cache);
        tb_buf_free(&none);
    }
    return ok;
}

/* A new connection to the test database, after a MariaDB restart too. */
static void tt_connect(tt *x)
{
    if (x->m)
        mysql_close(x->m);
    x->m = e2e_mysql();
    cr_assert_eq(mysql_select_db(x->m, x->r.db), 0, "%s", mysql_error(x->m));
}

/* Faults, drawn per round (the others run none). */
typedef enum tt_fault {
    TF_NONE, TF_KILL_RUN, TF_KILL_CACHE, TF_RESTART_MYSQL, TF_RESTART_KAFKA, TF_PURGE, TF_NFAULTS
} tt_fault;
static const char *const tf_names[TF_NFAULTS] = {"none", "kill -9 tributary run", "kill -9 tributary cache",
                                                 "restart MariaDB", "restart the Kafka broker",
                                                 "binlog purged while the connector is stopped"};

/* A fault for the round (drawn whatever TB_TORTURE_FAULTS allows, so a seed
 * draws the same statements; a fault it leaves out is none). */
static tt_fault draw_fault(tt *x)
{
    unsigned f = rnd(x, 12);
    tt_fault k = f < 3 ? TF_KILL_RUN : f < 5 ? TF_KILL_CACHE : f == 5 ? TF_RESTART_MYSQL : f == 6 ? TF_RESTART_KAFKA
                 : f == 7 ? TF_PURGE : TF_NONE;
    static const char *const keys[TF_NFAULTS] = {"", "kill_run", "kill_cache", "restart_mysql", "restart_kafka",
                                                 "purge"};
    const char *allow = getenv("TB_TORTURE_FAULTS");
    if (k != TF_NONE && allow && !strstr(allow, keys[k]))
        k = TF_NONE;
    return k;
}

/* The fault's first half, halfway through the round's transactions. */
static void fault_begin(tt *x, tt_fault f)
{
    if (f != TF_NONE)
        tb_buf_printf(&x->log, "-- fault: %s\n", tf_names[f]);
    switch (f) {
    case TF_KILL_RUN:
        kill9(x->r.pid);
        st_start(&x->r);
        break;
    case TF_KILL_CACHE:
        kill9(x->cache);
        start_cache(x);
        break;
    case TF_RESTART_MYSQL:
        tb_itest_testenv("stop-mysql");
        tb_itest_testenv("start-mysql");
        tt_connect(x); /* the old connection went with the server */
        break;
    case TF_RESTART_KAFKA: /* the rest of the round is written while the broker is away */
        tb_itest_testenv("stop-kafka");
        break;
    case TF_PURGE:
        kill(x->r.pid, SIGTERM);
        cr_assert_eq(e2e_wait(x->r.pid, 60000), 0, "tributary run did not stop cleanly; see %s", x->r.log);
        exec(x, "FLUSH BINARY LOGS");
        break;
    default:
        break;
    }
}

/* The fault's second half, after the round's transactions. */
static void fault_end(tt *x, tt_fault f)
{
    if (f == TF_RESTART_KAFKA) {
        tb_itest_testenv("start-kafka");
    } else if (f == TF_PURGE) {
        /* every binlog file the stopped connector needs goes: when_needed snapshots again and
         * reconciles (the rows deleted meanwhile are deleted from the topics) */
        exec(x, "FLUSH BINARY LOGS");
        tb_buf cur;
        tb_buf_init(&cur, 0);
        e2e_query_text(x->m, "SHOW MASTER STATUS", &cur);
        char file[256] = "";
        sscanf(tb_buf_cstr(&cur), "%255[^|\n]", file);
        tb_buf_free(&cur);
        cr_assert(*file, "SHOW MASTER STATUS gave no file");
        exec(x, "PURGE BINARY LOGS TO '%s'", file);
        st_start(&x->r);
    }
}

/* ------------------------------------------------------------ reduction */

/* The round's tables, rows included, copied to <db>_s: where its replays start. */
static void save_start(tt *x)
{
    char sdb[128];
    snprintf(sdb, sizeof sdb, "%s_s", x->r.db);
    e2e_sql(x->m, "DROP DATABASE IF EXISTS %s", sdb);
    e2e_sql(x->m, "CREATE DATABASE %s", sdb);
    e2e_sql(x->m, "CREATE TABLE %s.fp LIKE %s.fp", sdb, x->r.db);
    e2e_sql(x->m, "INSERT INTO %s.fp SELECT * FROM %s.fp", sdb, x->r.db);
    tb_buf cols;
    tb_buf_init(&cols, 0);
    for (int i = 0; i < x->ntables; i++) {
        written_cols(&x->t[i], &cols); /* a generated column takes no value */
        e2e_sql(x->m, "CREATE TABLE %s.%s LIKE %s.%s", sdb, x->t[i].name, x->r.db, x->t[i].name);
        e2e_sql(x->m, "INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s", sdb, x->t[i].name, cols.data, cols.data, x->r.db,
                x->t[i].name);
    }
    tb_buf_free(&cols);
    memcpy(x->start_t, x->t, sizeof x->t);
    snprintf(x->start_desc, sizeof x->start_desc, "database %s", sdb);
    x->nunits = 0;
}

/* A unit of the round begins here: a transaction (fault TF_NONE) or a fault. */
static void unit_begin(tt *x, tt_fault fault)
{
    if (x->nunits < MAXUNITS) {
        x->unit_off[x->nunits] = x->log.len;
        x->unit_fault[x->nunits++] = (int)fault;
    }
}

/* The configuration of a torture run, appended to st_setup's. */
static void tt_config(const tt *x)
{
    FILE *cf = fopen(x->r.cfg, "a");
    cr_assert_not_null(cf);
    fprintf(cf,
            "ddl.alter.policy=%s\nddl.drop.policy=tombstone\nha.enabled=false\nsnapshot.mode=when_needed\n"
            "key.columns.%s.k0=id\nsource.connect.retry.ms=120000\nsnapshot.initial.method=%s\n"
            "tables.exclude=^%s[.]fp$\n",
            x->resnapshot ? "resnapshot" : "warn", x->r.db, x->chunked ? "chunked" : "consistent", x->r.db);
    if (x->chunked) /* small chunks: many windows, with rows the stream changes inside them */
        fprintf(cf, "snapshot.chunk.size=100\nsnapshot.threads=%d\n", x->threads);
    fclose(cf);
}

/* Whether the status file says the connector streams and its snapshot is done (a chunked one
 * goes on while it streams). */
static bool status_streaming(const char *status)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool streaming = false;
    if (e2e_slurp(status, &b) && b.len) {
        json_t *v = jo_parse(b.data, b.len);
        const char *st = json_string_value(json_object_get(v, "state"));
        const char *snap = json_string_value(json_object_get(json_object_get(v, "snapshot"), "state"));
        streaming = st && strcmp(st, "streaming") == 0 && !(snap && strcmp(snap, "running") == 0);
        json_decref(v);
    }
    tb_buf_free(&b);
    return streaming;
}

/* Until the connector streams and committed the server's GTID position
 * (the snapshot's position is the server's at its start: streaming first);
 * false when it stopped or ms passed. */
static bool caught_up_within(tt *x, long long ms)
{
    char want[256], got[256] = "";
    for (long long until = tb_itest_now_ms() + ms; tb_itest_now_ms() < until; usleep(50000)) {
        e2e_server_gtid(x->m, want, sizeof want);
        if (status_streaming(x->r.status) && e2e_status_gtid(x->r.status, got, sizeof got) && strcmp(got, want) == 0)
            return true;
        if (e2e_wait(x->r.pid, 0) != -2)
            return false;
    }
    return false;
}

static void gone_from_topics(tt *y);

/* The tables of a replay as the catalog has them (names, columns), and the
 * names renamed away: topics of the replay's prefix whose table is gone. */
static void state_from_catalog(tt *y)
{
    tb_buf names;
    tb_buf_init(&names, 0);
    char q[600];
    snprintf(q, sizeof q,
             "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME NOT IN "
             "('tributary_signal', 'fp') ORDER BY TABLE_NAME",
             y->r.db);
    e2e_query_text(y->m, q, &names);
    y->ntables = 0;
    for (char *line = names.data, *nl; line && *line && y->ntables < NTABLES; line = nl + 1) {
        if (!(nl = strchr(line, '\n')))
            break;
        *nl = '\0';
        tt_table *t = &y->t[y->ntables++];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof t->name, "%s", line);
        t->keyless = strcmp(line, "k0") == 0;
        tb_buf cols;
        tb_buf_init(&cols, 0);
        snprintf(q, sizeof q,
                 "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' "
                 "ORDER BY ORDINAL_POSITION",
                 y->r.db, t->name);
        e2e_query_text(y->m, q, &cols);
        for (char *c = cols.data, *cn; c && *c && t->ncols < MAXCOLS; c = cn + 1) {
            if (!(cn = strchr(c, '\n')))
                break;
            *cn = '\0';
            snprintf(t->cols[t->ncols++], sizeof t->cols[0], "%s", c);
        }
        tb_buf_free(&cols);
    }
    tb_buf_free(&names);
    gone_from_topics(y);
}

/* The names renamed away: topics "<db>.<db>.<name>" of y's prefix without a
 * table in y->t. */
static void gone_from_topics(tt *y)
{
    char errstr[512], prefix[256];
    snprintf(prefix, sizeof prefix, "%s.%s.", y->r.db, y->r.db);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    const rd_kafka_metadata_t *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 1, NULL, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    y->ngone = 0;
    for (int i = 0; i < md->topic_cnt && y->ngone < MAXGONE; i++) {
        const char *tn = md->topics[i].topic;
        if (strncmp(tn, prefix, strlen(prefix)) != 0)
            continue;
        const char *name = tn + strlen(prefix);
        bool exists = strlen(name) >= sizeof y->gone[0];
        for (int k = 0; k < y->ntables && !exists; k++)
            exists = strcmp(y->t[k].name, name) == 0;
        if (!exists)
            snprintf(y->gone[y->ngone++], sizeof y->gone[0], "%s", name);
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
}

/* Each statement of unit u of x's round (its lines ending in ';', not the
 * "--" comments), without the ';', to fn. */
static void unit_statements(const tt *x, int u, void (*fn)(void *opaque, const char *stmt), void *opaque)
{
    size_t end = u + 1 < x->nunits ? x->unit_off[u + 1] : x->log.len;
    char *text = strndup(x->log.data + x->unit_off[u], end - x->unit_off[u]);
    cr_assert_not_null(text);
    for (char *line = text, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t len = strlen(line);
        if (len > 1 && strncmp(line, "--", 2) != 0 && line[len - 1] == ';') {
            line[len - 1] = '\0';
            fn(opaque, line);
        }
        if (!nl)
            break;
    }
    free(text);
}

static void exec_stmt(void *opaque, const char *stmt) { exec(opaque, "%s", stmt); }

/* Replay the kept units of x's round on a new database copied from the
 * round's start, with a connector and cache of its own: true when the
 * topics or the cache then differ from the source (the failure reproduced). */
static bool replay_mariadb(void *ctx, const bool *keep, int n)
{
    tt *x = ctx;
    tt y;
    memset(&y, 0, sizeof(y));
    y.seed = x->seed;
    y.round = x->round;
    y.quiet = true;
    y.resnapshot = x->resnapshot;
    y.chunked = x->chunked;
    y.threads = x->threads;
    tb_buf_init(&y.log, 0);
    st_setup(&y.r, "e2e_tmin", NULL);
    tt_config(&y);
    snprintf(y.clog, sizeof y.clog, "%s/cache.log", y.r.dir);
    y.m = e2e_mysql();
    e2e_sql(y.m, "CREATE DATABASE %s", y.r.db);
    cr_assert_eq(mysql_select_db(y.m, y.r.db), 0);
    y.ntables = x->ntables;
    memcpy(y.t, x->start_t, sizeof y.t);
    e2e_sql(y.m, "CREATE TABLE fp LIKE %s_s.fp", x->r.db);
    e2e_sql(y.m, "INSERT INTO fp SELECT * FROM %s_s.fp", x->r.db);
    tb_buf cols;
    tb_buf_init(&cols, 0);
    for (int i = 0; i < y.ntables; i++) {
        written_cols(&y.t[i], &cols);
        e2e_sql(y.m, "CREATE TABLE %s LIKE %s_s.%s", y.t[i].name, x->r.db, y.t[i].name);
        e2e_sql(y.m, "INSERT INTO %s (%s) SELECT %s FROM %s_s.%s", y.t[i].name, cols.data, cols.data, x->r.db,
                y.t[i].name);
        char fk[200];
        fk_clause(&y, &y.t[i], fk, sizeof fk); /* CREATE TABLE ... LIKE copies no foreign key */
        if (*fk)
            e2e_sql(y.m, "ALTER TABLE %s ADD %s", y.t[i].name, fk);
    }
    tb_buf_free(&cols);
    st_start(&y.r);
    bool differs = false;
    if (caught_up_within(&y, 60000)) {
        start_cache(&y);
        tt_fault pending = TF_NONE;
        for (int u = 0; u < n; u++) {
            if (!keep[u])
                continue;
            if (x->unit_fault[u] != TF_NONE) {
                pending = (tt_fault)x->unit_fault[u];
                fault_begin(&y, pending);
                continue;
            }
            unit_statements(x, u, exec_stmt, &y);
        }
        fault_end(&y, pending);
        state_from_catalog(&y);
        if (caught_up_within(&y, 120000)) {
            differs = !topics_equal(&y, tb_itest_now_ms() + 60000, false);
            kill(y.cache, SIGTERM);
            e2e_wait(y.cache, 60000);
            if (!differs) {
                const char *cargs[] = {"cache", "--config", y.r.cfg, "--until-caught-up", NULL};
                pid_t cp = e2e_spawn(cargs, y.clog);
                differs = e2e_wait(cp, 120000) != 0 || !cache_equal(&y);
            }
        } else {
            differs = true; /* the connector stopped or never caught up: a failure too */
        }
    }
    e2e_kill_children();
    e2e_sql(y.m, "DROP DATABASE %s", y.r.db);
    mysql_close(y.m);
    tb_buf_free(&y.log);
    e2e_rmtree(y.r.dir);
    return differs;
}

/* A failing round: the shortest list of its units that still fails when
 * replayed from the round's start (ddmin over transactions and the fault),
 * within TB_TORTURE_REDUCE_SECONDS (default 600; 0: no reduction), printed
 * and written to <dir>/round-N.min.sql. A failure that no replay reproduces
 * (a timing it needs) is said to be so. */
typedef bool (*tt_replay_fn)(void *ctx, const bool *keep, int n);

static void reduce(tt *x, tt_replay_fn replay, void *ctx)
{
    const char *rs = getenv("TB_TORTURE_REDUCE_SECONDS");
    long long budget = rs && *rs ? atoll(rs) : 600;
    int n = x->nunits;
    if (budget <= 0 || n == 0)
        return;
    long long until = tb_itest_now_ms() + budget * 1000;
    bool cur[MAXUNITS], trial[MAXUNITS];
    /* the round's own connector and cache go: a replay's connector has the same server id */
    kill9(x->r.pid);
    kill9(x->cache);
    for (int i = 0; i < n; i++)
        cur[i] = true;
    fprintf(stderr, "torture: reducing round %d (%d units) within %lld s\n", x->round, n, budget);
    int tries = 1;
    if (!replay(ctx, cur, n)) {
        fprintf(stderr, "torture: round %d did not fail again when replayed from its start on a new database: "
                        "it needs a timing the replay did not give; its whole statement list is above\n",
                x->round);
        return;
    }
    int chunks = 2;
    for (;;) {
        int live = 0;
        for (int i = 0; i < n; i++)
            live += cur[i];
        if (live < 2 || tb_itest_now_ms() >= until)
            break;
        if (chunks > live)
            chunks = live;
        bool reduced = false;
        /* each chunk alone, then each complement */
        for (int pass = 0; pass < 2 && !reduced; pass++) {
            for (int c = 0; c < chunks && !reduced && tb_itest_now_ms() < until; c++) {
                int idx = 0, in = 0;
                for (int i = 0; i < n; i++) {
                    trial[i] = false;
                    if (!cur[i])
                        continue;
                    bool mine = idx++ * chunks / live == c;
                    trial[i] = pass == 0 ? mine : !mine;
                    in += trial[i];
                }
                if (in == 0 || in == live)
                    continue;
                tries++;
                if (replay(ctx, trial, n)) {
                    memcpy(cur, trial, sizeof cur);
                    chunks = pass == 0 ? 2 : (chunks - 1 > 2 ? chunks - 1 : 2);
                    reduced = true;
                }
            }
        }
        if (!reduced) {
            if (chunks >= live)
                break;
            chunks = chunks * 2 > live ? live : chunks * 2;
        }
    }
    tb_buf out;
    tb_buf_init(&out, 0);
    int kept = 0;
    x->reduced = 0;
    for (int i = 0; i < n; i++) {
        if (!cur[i])
            continue;
        kept++;
        size_t end = i + 1 < x->nunits ? x->unit_off[i + 1] : x->log.len;
        tb_buf_printf(&out, "%.*s", (int)(end - x->unit_off[i]), x->log.data + x->unit_off[i]);
    }
    x->reduced = kept;
    char path[400];
    snprintf(path, sizeof path, "%s/round-%d.min.sql", x->r.dir, x->round);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "-- round %d, seed %llu: %d of %d units, from the tables as in %s\n%s", x->round, x->seed, kept, n,
                x->start_desc, tb_buf_cstr(&out));
        fclose(f);
    }
    fprintf(stderr,
            "torture: the shortest list found (%d replays%s) that still fails, %d of the round's %d units, replayed "
            "from the round's start (%s), in %s:\n%s\n",
            tries, tb_itest_now_ms() >= until ? ", the time budget ran out" : "", kept, n, x->start_desc, path,
            tb_buf_cstr(&out));
    tb_buf_free(&out);
}

static void tt_fini(void)
{
    e2e_kill_children();
    tb_itest_restore_servers(); /* a round that failed between a stop and its start */
}

/* The MariaDB torture for about seconds (at least one round); plant: the
 * round that also makes a change without a binlog event (0: none). Returns
 * whether every round's check held; x (zeroed by the caller) keeps the
 * outcome (its round, log and reduction) and is freed by tt_done. */
static bool torture_mariadb(tt *x_, long long seconds, int plant)
{
#define x (*x_)
    const char *sd = getenv("TB_TORTURE_SEED");
    x.plant = plant;
    x.no_ddl = plant > 0; /* a resnapshot after the planted change would read it and send it */
    x.seed = sd && *sd ? strtoull(sd, NULL, 10) : (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    x.rnd = (unsigned)(x.seed ^ (x.seed >> 32)) | 1u;
    bool resnapshot = x.resnapshot = x.seed & 1;
    x.chunked = (x.seed >> 1) & 1;
    x.threads = (x.seed >> 2) & 1 ? 2 : 1;
    tb_buf_init(&x.log, 0);
    st_setup(&x.r, "e2e_torture", NULL);
    tt_config(&x);
    fprintf(stderr,
            "torture: seed %llu, %lld s, ddl.alter.policy=%s, snapshot.initial.method=%s (threads %d), folder %s "
            "(TB_TORTURE_SEED=%llu reproduces it)\n",
            x.seed, seconds, resnapshot ? "resnapshot" : "warn", x.chunked ? "chunked" : "consistent",
            x.chunked ? x.threads : 1, x.r.dir, x.seed);
    snprintf(x.clog, sizeof x.clog, "%s/cache.log", x.r.dir);
    x.m = e2e_mysql();
    e2e_sql(x.m, "CREATE DATABASE %s", x.r.db);
    cr_assert_eq(mysql_select_db(x.m, x.r.db), 0);
    x.ntables = NTABLES;
    e2e_sql(x.m, "CREATE TABLE fp (id TINYINT UNSIGNED PRIMARY KEY)"); /* every value of the children's ti */
    e2e_sql(x.m, "INSERT INTO fp SELECT seq FROM seq_0_to_255");
    for (int i = 0; i < NTABLES; i++) {
        tt_table *t = &x.t[i];
        t->keyless = i == NTABLES - 1;
        t->fk = i == 1 || i == 2 ? i : 0;
        snprintf(t->name, sizeof t->name, t->keyless ? "k0" : "t%d", i);
        table_create(&x, t, 0);
        e2e_sql(x.m, "INSERT INTO %s (id, v, n, d, dt, t6, f, u, b, e, tm, yr, st, bt, tx, bl, ts, j, fl, uu, i6, i4, "
                     "g, ti, ch, bn) "
                  "SELECT seq, CONCAT('s', seq), seq * 3, seq / 4, '2020-01-01' + INTERVAL seq DAY, "
                  "'2020-01-01 00:00:00.000001' + INTERVAL seq SECOND, seq / 4, seq * 1000000007, UNHEX(MD5(seq)), "
                  "ELT(1 + seq %% 3, 's', 'm', 'l'), SEC_TO_TIME(CAST(seq AS SIGNED) * 1000 - 50000), 1901 + seq, "
                  "ELT(1 + seq %% 4, '', 'a', 'b,c', 'a,c'), seq %% 32, CONCAT('text ', seq), UNHEX(MD5(seq + 1)), "
                  "'2020-01-01 00:00:00.500' + INTERVAL seq HOUR, JSON_ARRAY(seq), seq / 4, UUID(), "
                  "CONCAT('2001:db8::', HEX(seq)), CONCAT('10.0.0.', seq), POINT(seq, -CAST(seq AS SIGNED) / 2), seq, "
                  "LEFT(MD5(seq), 3), UNHEX(LEFT(MD5(seq), 8)) FROM seq_1_to_200",
                t->name);
    }
    st_start(&x.r);
    /* the snapshot made every table's topic */
    cr_assert(caught_up_within(&x, 120000), "the connector never streamed or caught up; see %s", x.r.log);
    start_cache(&x);
    long long end = tb_itest_now_ms() + seconds * 1000;
    uint64_t faults[TF_NFAULTS] = {0};
    bool ok = true;
    while (ok && (x.round == 0 || x.round < x.plant || tb_itest_now_ms() < end)) {
        x.round++;
        tb_buf_reset(&x.log);
        tb_buf_printf(&x.log, "-- round %d, seed %llu\n", x.round, x.seed);
        unsigned n = 6 + rnd(&x, 14);
        tt_fault fault = draw_fault(&x);
        save_start(&x);
        for (unsigned i = 0; i < n; i++) {
            if (i == n / 2 && fault != TF_NONE) {
                unit_begin(&x, fault);
                fault_begin(&x, fault);
            }
            unit_begin(&x, TF_NONE);
            one_transaction(&x);
        }
        if (x.plant == x.round) {
            /* a row the binlog never sees, last in the round (a negative control of the check and
             * of the reduction: this round must fail, and reduce to this unit) */
            unit_begin(&x, TF_NONE);
            tb_buf_printf(&x.log, "-- planted: a change without a binlog event\n");
            exec(&x, "SET SESSION sql_log_bin = 0");
            exec(&x, "INSERT INTO %s (id, v) VALUES (%d, 'planted')", x.t[0].name, 100000 + x.round);
            exec(&x, "SET SESSION sql_log_bin = 1");
        }
        fault_end(&x, fault);
        faults[fault]++;
        char path[400];
        snprintf(path, sizeof path, "%s/round-%d.sql", x.r.dir, x.round);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(tb_buf_cstr(&x.log), f);
            fclose(f);
        }
        wait_caught_up(x.m, x.r.status, x.r.pid, x.r.log);
        ok = topics_equal(&x, tb_itest_now_ms() + 120000, false);
        kill(x.cache, SIGTERM);
        cr_assert_neq(e2e_wait(x.cache, 60000), -2, "tributary cache did not stop; see %s", x.clog);
        if (ok) {
            st_cache_build(&x.r);
            ok = cache_equal(&x);
        }
        if (!ok)
            reduce(&x, replay_mariadb, &x);
        else
            start_cache(&x);
    }
    fprintf(stderr,
            "torture: %d round(s); faults: %" PRIu64 " kill -9 of run, %" PRIu64 " of cache, %" PRIu64
            " MariaDB restarts, %" PRIu64 " broker restarts, %" PRIu64 " purges; %u foreign key action transactions, "
            "%zu snapshots they signalled (the run's log); %u generated columns added; seed %llu: %s\n",
            x.round, faults[TF_KILL_RUN], faults[TF_KILL_CACHE], faults[TF_RESTART_MYSQL], faults[TF_RESTART_KAFKA],
            faults[TF_PURGE], x.drawn[TK_FK_ACTION],
            st_log_count(&x.r, "snapshot of it signalled (source.fk.cascade.policy=resnapshot)"), x.gens, x.seed,
            ok ? "source, topics and cache equal" : "FAILED");
    if (ok) {
        kill(x.cache, SIGTERM);
        e2e_wait(x.cache, 60000);
        kill(x.r.pid, SIGTERM);
        e2e_wait(x.r.pid, 60000);
        e2e_assert_clean_log(x.r.log);
        e2e_assert_clean_log(x.clog);
    }
    return ok;
#undef x
}

/* The end of a torture_mariadb: its databases dropped, its folder removed
 * (kept when keep). */
static void tt_done(tt *x, bool keep)
{
    e2e_kill_children();
    e2e_sql(x->m, "SET GLOBAL log_bin_compress = OFF, log_bin_compress_min_len = 256");
    e2e_sql(x->m, "DROP DATABASE IF EXISTS %s_s", x->r.db);
    if (!keep)
        e2e_sql(x->m, "DROP DATABASE IF EXISTS %s", x->r.db);
    mysql_close(x->m);
    tb_buf_free(&x->log);
    if (!keep)
        e2e_rmtree(x->r.dir);
}

Test(torture, mariadb, .fini = tt_fini, .timeout = 0)
{
    const char *s = getenv("TB_TORTURE_SECONDS"), *p = getenv("TB_TORTURE_PLANT");
    long long seconds = (s && *s ? atoll(s) : 120) * 2 / 3; /* the SQLite test takes the rest */
    tt x;
    memset(&x, 0, sizeof(x));
    bool ok = torture_mariadb(&x, seconds, p && *p ? atoi(p) : 0);
    if (!ok)
        cr_assert_fail("torture round %d failed (seed %llu); see stderr and %s", x.round, x.seed, x.r.dir);
    tt_done(&x, false);
}

/* The check and the reduction catch a silent divergence: round 2 makes a
 * change without a binlog event (sql_log_bin=0), which no connector can see.
 * The round fails, and its reduction keeps that transaction alone. */
Test(torture, negative_control_planted_drift, .fini = tt_fini, .timeout = 600)
{
    tt x;
    memset(&x, 0, sizeof(x));
    setenv("TB_TORTURE_FAULTS", "none", 1); /* this round's failure is the planted change alone */
    bool ok = torture_mariadb(&x, 1, 2);
    cr_expect(!ok, "the round with a change the binlog never saw passed the check");
    cr_expect_eq(x.round, 2, "the check failed in round %d, not in the planted round 2", x.round);
    cr_expect_eq(x.reduced, 1, "the reduction kept %d units, not the planted one alone", x.reduced);
    char path[400];
    snprintf(path, sizeof path, "%s/round-2.min.sql", x.r.dir);
    tb_buf min;
    tb_buf_init(&min, 0);
    cr_expect(e2e_slurp(path, &min) && strstr(tb_buf_cstr(&min), "sql_log_bin = 0"),
              "%s does not hold the planted change", path);
    tb_buf_free(&min);
    tt_done(&x, false);
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
    while (disabled(k) || k == TK_XA || k == TK_MODIFY_COLUMN || k == TK_KEY_CHANGE || k == TK_FK_ACTION ||
           (tk_ddl(k) && rnd(x, 4) != 0));
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
    case TK_RENAME:
        if (x->ngone < MAXGONE) {
            char to[24];
            snprintf(to, sizeof to, "t%d_r%u", (int)(t - x->t), ++t->renames);
            sq_exec(q, "ALTER TABLE %s RENAME TO %s", t->name, to);
            memcpy(x->gone[x->ngone++], t->name, sizeof t->name);
            memcpy(t->name, to, sizeof to);
        }
        break;
    case TK_RECREATE: /* ddl.drop.policy=tombstone: the topic is emptied at the DROP */
        sq_exec(q, "DROP TABLE %s", t->name);
        sq_exec(q, "CREATE TABLE %s (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)", t->name);
        t->ncols = 3;
        for (unsigned i = 0, n = 1 + rnd(x, 20); i < n; i++)
            sq_data(q, t, 0);
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
    for (int i = 0; i < x->ntables && ok; i++) {
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
            tt_topic_table(topic, cols, &top);
            bad = strcmp(tb_buf_cstr(&src), tb_buf_cstr(&top)) != 0 ? "the topic read as a table differs from the source" : NULL;
        } while (bad && until_ms && tb_itest_now_ms() < until_ms && (usleep(300000), true));
        if (!bad && report) {
            /* a table the cache does not have reads as empty, as its topic does (tt_topic_table): SQLite
             * capture has no DDL events, so a table created or renamed while streaming gets its schema
             * record, its topic and its cache table with its first row event */
            if (tt_cache_has(x->r.cache, ctable))
                tt_cache_rows(x->r.cache, ctable, t, &cache);
            bad = strcmp(tb_buf_cstr(&src), tb_buf_cstr(&cache)) != 0 ? "the cache differs from the source" : NULL;
        }
        if (bad && report) {
            char path[400], what[700];
            snprintf(path, sizeof path, "%s/%s.round-%d.diff", x->r.dir, t->name, x->round);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "== source\n%s== topic\n%s== cache\n%s", tb_buf_cstr(&src), tb_buf_cstr(&top), tb_buf_cstr(&cache));
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
    /* the names renamed away: their topics read as empty tables, their cache tables hold no row */
    for (int g = 0; g < x->ngone && ok; g++) {
        const char *cols[] = {"id", NULL};
        char topic[300], ctable[300];
        snprintf(topic, sizeof topic, "%s.%s.%s", x->r.db, x->r.db, x->gone[g]);
        snprintf(ctable, sizeof ctable, "%s.%s", x->r.db, x->gone[g]);
        tb_buf top, cache, none;
        tb_buf_init(&top, 0);
        tb_buf_init(&cache, 0);
        tb_buf_init(&none, 0);
        do {
            tb_buf_reset(&top);
            tt_topic_table(topic, cols, &top);
        } while (top.len && until_ms && tb_itest_now_ms() < until_ms && (usleep(300000), true));
        if (report && !top.len && tt_cache_has(x->r.cache, ctable))
            st_cache_rows(x->r.cache, ctable, "id", &cache);
        if (top.len || cache.len) {
            ok = false;
            if (report)
                report_diff(x, x->gone[g], "a table renamed away still has rows in its topic or its cache", &none,
                            &top, &cache);
        }
        tb_buf_free(&top);
        tb_buf_free(&cache);
        tb_buf_free(&none);
    }
    return ok;
}

/* The run's configuration for q's database (replacing st_setup's MariaDB one). */
static void sq_config(const sq *q)
{
    const tt *x = &q->x;
    FILE *f = fopen(x->r.cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=%s\nsource.sqlite.shadow.path=%s/"
            "shadow.db\nsource.sqlite.poll.ms=20\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=100\nstatus.file=%s\ncache.path=%s\nheartbeat.interval.ms=100\n"
            "topic.partitions=3\nha.enabled=false\nddl.drop.policy=tombstone\n",
            x->r.db, q->src, x->r.db, x->r.dir, x->r.db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), x->r.status, x->r.cache);
    fclose(f);
}

/* The database at the round's start, copied (VACUUM INTO) for its replays. */
static void sq_save_start(sq *q)
{
    tt *x = &q->x;
    snprintf(x->start_desc, sizeof x->start_desc, "%s/round-start.db", x->r.dir);
    unlink(x->start_desc);
    char *err = NULL;
    char *sql = sqlite3_mprintf("VACUUM INTO %Q", x->start_desc);
    cr_assert_eq(sqlite3_exec(q->db, sql, NULL, NULL, &err), SQLITE_OK, "%s: %s", sql, err ? err : "?");
    sqlite3_free(sql);
    memcpy(x->start_t, x->t, sizeof x->t);
    x->nunits = 0;
}

static void sq_stmt(void *opaque, const char *stmt) { sq_exec(opaque, "%s", stmt); }

/* The tables of a SQLite replay as its database has them, and the names renamed away. */
static void sq_state(sq *y)
{
    tt *x = &y->x;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(y->db,
                                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' "
                                    "ORDER BY name",
                                    -1, &st, NULL),
                 SQLITE_OK);
    x->ntables = 0;
    while (sqlite3_step(st) == SQLITE_ROW && x->ntables < NTABLES) {
        tt_table *t = &x->t[x->ntables++];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof t->name, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_stmt *ci = NULL;
        cr_assert_eq(sqlite3_prepare_v2(y->db, "SELECT name FROM pragma_table_info(?) ORDER BY cid", -1, &ci, NULL),
                     SQLITE_OK);
        sqlite3_bind_text(ci, 1, t->name, -1, SQLITE_STATIC);
        while (sqlite3_step(ci) == SQLITE_ROW && t->ncols < MAXCOLS)
            snprintf(t->cols[t->ncols++], sizeof t->cols[0], "%s", (const char *)sqlite3_column_text(ci, 0));
        sqlite3_finalize(ci);
    }
    sqlite3_finalize(st);
    gone_from_topics(x);
}

/* A replay of the kept units of q's round (replay_mariadb for SQLite): the
 * round's start copied into a new folder, a connector and cache of its own. */
static bool replay_sqlite(void *ctx, const bool *keep, int n)
{
    sq *q = ctx;
    tt *x = &q->x;
    sq y;
    memset(&y, 0, sizeof(y));
    tt *yx = &y.x;
    yx->seed = x->seed;
    yx->round = x->round;
    yx->quiet = true;
    tb_buf_init(&yx->log, 0);
    st_setup(&yx->r, "e2e_tsmin", NULL);
    snprintf(y.src, sizeof y.src, "%s/src.db", yx->r.dir);
    snprintf(yx->clog, sizeof yx->clog, "%s/cache.log", yx->r.dir);
    sq_config(&y);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", x->start_desc, y.src);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(sqlite3_open(y.src, &y.db), SQLITE_OK);
    sqlite3_busy_timeout(y.db, 5000);
    sq_exec(&y, "PRAGMA journal_mode=WAL");
    st_start(&yx->r);
    bool differs = true;
    long long until = tb_itest_now_ms() + 60000;
    while (!status_streaming(yx->r.status) && tb_itest_now_ms() < until && e2e_wait(yx->r.pid, 0) == -2)
        usleep(50000);
    if (status_streaming(yx->r.status)) {
        start_cache(yx);
        for (int u = 0; u < n; u++) {
            if (!keep[u])
                continue;
            if (x->unit_fault[u] != TF_NONE)
                fault_begin(yx, (tt_fault)x->unit_fault[u]);
            else
                unit_statements(x, u, sq_stmt, &y);
        }
        sq_state(&y);
        differs = !sq_check(&y, tb_itest_now_ms() + 30000, false);
        kill(yx->cache, SIGTERM);
        e2e_wait(yx->cache, 60000);
        if (!differs) {
            const char *cargs[] = {"cache", "--config", yx->r.cfg, "--until-caught-up", NULL};
            differs = e2e_wait(e2e_spawn(cargs, yx->clog), 120000) != 0 || !sq_check(&y, 0, true);
        }
    }
    e2e_kill_children();
    sqlite3_close(y.db);
    tb_buf_free(&yx->log);
    e2e_rmtree(yx->r.dir);
    return differs;
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
    /* st_setup writes a MariaDB configuration; sq_config replaces it */
    st_setup(&x->r, "e2e_tortsq", NULL);
    snprintf(q.src, sizeof q.src, "%s/src.db", x->r.dir);
    snprintf(x->clog, sizeof x->clog, "%s/cache.log", x->r.dir);
    sq_config(&q);
    fprintf(stderr, "torture sqlite: seed %llu, %lld s, folder %s (TB_TORTURE_SEED=%llu reproduces it)\n", x->seed,
            seconds, x->r.dir, x->seed);
    cr_assert_eq(sqlite3_open(q.src, &q.db), SQLITE_OK);
    sqlite3_busy_timeout(q.db, 5000);
    sq_exec(&q, "PRAGMA journal_mode=WAL");
    x->ntables = 3;
    for (int i = 0; i < x->ntables; i++) {
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
        unsigned n = 6 + rnd(x, 14), f = rnd(x, 4);
        tt_fault fault = f == 1 ? TF_KILL_RUN : f == 2 ? TF_KILL_CACHE : TF_NONE;
        sq_save_start(&q);
        for (unsigned i = 0; i < n; i++) {
            if (i == n / 2 && fault != TF_NONE) {
                unit_begin(x, fault);
                fault_begin(x, fault);
                kills_run += fault == TF_KILL_RUN;
                kills_cache += fault == TF_KILL_CACHE;
            }
            unit_begin(x, TF_NONE);
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
        if (!ok)
            reduce(x, replay_sqlite, &q);
        else
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
