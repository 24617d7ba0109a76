/*
 * test_cache_debezium: the cache reads Debezium's topics (integration: the
 * testenv MariaDB and Kafka broker).
 *
 * golden: the oracle is tributary itself: tests/fixtures/debezium/golden.sql
 * and golden_dml.sql applied to the testenv MariaDB and captured by
 * `tributary run` (snapshot, then the binlog) into <P>.golden.{types,pairs},
 * replayed by `tributary cache --until-caught-up` into cache A. Every variant
 * of the fixture set (what Debezium 3.6.1's MariaDB connector wrote for the
 * same statements, under five settings) is produced into the broker as it is
 * (key and value bytes; NULL = tombstone) and replayed into cache B. Every
 * cell of A and B must be equal (SQLite storage class and value), except the
 * values Debezium's encoding itself lost, listed in LOSSES below; each listed
 * cell must really differ, so the list stays exact.
 *
 * conventions: truncate events, schema change events, the unavailable-value
 * placeholder, an unreadable value named by topic, partition, offset and field.
 */

#include <errno.h>
#include <sys/stat.h>

#include "../e2e/e2e_util.h"
#include "it_util.h"

#define FIX TB_FIXTURES_DIR "/debezium"

/* ------------------------------------------------------------- helpers */

static void slurp_or_fail(const char *path, tb_buf *b)
{
    cr_assert(e2e_slurp(path, b), "cannot read %s", path);
}

/* Run the statements of a SQL file (one per ';' at a line end; '--' lines skipped). */
static void run_sql_file(MYSQL *m, const char *path)
{
    tb_buf f, stmt;
    tb_buf_init(&f, 0);
    tb_buf_init(&stmt, 0);
    slurp_or_fail(path, &f);
    const char *p = tb_buf_cstr(&f);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *line = p;
        p = nl ? nl + 1 : p + n;
        size_t lead = 0;
        while (lead < n && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        if (n - lead >= 2 && line[lead] == '-' && line[lead + 1] == '-')
            continue;
        tb_buf_append(&stmt, line, n);
        tb_buf_putc(&stmt, '\n');
        size_t e = n;
        while (e > 0 && (line[e - 1] == ' ' || line[e - 1] == '\r'))
            e--;
        if (e > 0 && line[e - 1] == ';') {
            cr_assert_eq(mysql_real_query(m, stmt.data, stmt.len), 0, "%s: %s\n%s", path, mysql_error(m),
                         tb_buf_cstr(&stmt));
            MYSQL_RES *r = mysql_store_result(m);
            if (r)
                mysql_free_result(r);
            tb_buf_reset(&stmt);
        }
    }
    tb_buf_free(&f);
    tb_buf_free(&stmt);
}

static void wait_gtid(const char *status, pid_t pid, const char *log)
{
    char want[256], got[256] = "";
    long long deadline = tb_itest_now_ms() + 60000;
    /* the server's position read anew each time: the connector's own signals (an incremental
     * snapshot after an ALTER) move it too */
    while (e2e_server_gtid(NULL, want, sizeof want),
           !(e2e_status_gtid(status, got, sizeof got) && strcmp(got, want) == 0)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "committed GTID %s did not reach %s; see %s", got, want, log);
        usleep(50000);
    }
}

/* `tributary cache --until-caught-up` of the topics ^<prefix>\. into db; its log at log. */
static void replay(const char *prefix, const char *db, const char *log, const char *const *extra)
{
    char topics[200];
    snprintf(topics, sizeof topics, "^%s\\.", prefix);
    const char *args[20] = {"cache", "--brokers", it_brokers(), "--topics", topics, "--db", db, "--until-caught-up"};
    size_t n = 8;
    for (size_t i = 0; extra && extra[i] && n < 19; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    pid_t pid = e2e_spawn(args, log);
    int rc = e2e_wait(pid, 120000);
    cr_assert_eq(rc, 0, "tributary cache exited %d; see %s", rc, log);
    e2e_assert_clean_log(log);
}

/* ------------------------------------------------------------- cell comparison */

/* A cell Debezium's encoding lost: variant ("" = every variant, "-x" = every variant
 * whose name ends in -x, "!x" = every variant whose name does not begin with x), table,
 * column, the row's id (types) or p_name (pairs); row "*": any row of the
 * column may differ (rows where it is NULL do not). A listed single row must
 * really differ. */
typedef struct loss {
    const char *variant, *table, *column, *row, *why;
} loss;

#define NO_SCHEMA "no schema (schemas.enable=false): stored as the JSON gives it"
static const loss LOSSES[] = {
    /* every Debezium encoding (the fixtures and tributary's own value.encoding=debezium) */
    {"!own-tributary", "types", "c_float", "2", "the snapshot reads FLOAT as the server's 6-digit text (as Debezium's does)"},
    /* every variant with Connect schemas ("-schemas") */
    {"-schemas", "types", "c_datetime3", "1", "fsp not in the schema: trailing zeros of .000 not written"},
    {"-schemas", "types", "c_datetime3", "101", "fsp not in the schema"},
    /* Debezium does not send a row again after an ALTER that widens its column (MODIFY dt1
     * DATETIME(3)); tributary resnapshots the table: the row keeps the fsp it was written with */
    {"history", "t", "dt1", "1", "written as DATETIME(1), not sent again after the ALTER"},
    {"history", "t", "dt1", "3", "written as DATETIME(1), not sent again after the ALTER"},
    {"history", "t", "dt1", "4", "written as DATETIME(1), not sent again after the ALTER"},
    /* tributary's own topics, time.precision.mode=connect */
    {"own-debezium-connect-time", "types", "c_time", "*", "connect Time: null outside 00:00..24:00"},
    {"own-debezium-connect-time", "types", "c_time3", "*", "connect Time: null outside 00:00..24:00"},
    {"own-debezium-connect-time", "types", "c_time6", "*", "connect Time: null outside 0..24 h, milliseconds"},
    {"own-debezium-connect-time", "types", "c_datetime6", "*", "connect Timestamp: milliseconds"},
    /* bigint.unsigned.handling.mode=long (Debezium's default): above 2^63-1 wraps to a negative int64 */
    {"defaults-schemas", "types", "c_bigint_u", "2", "BIGINT UNSIGNED wrapped (long)"},
    {"defaults-schemas", "types", "c_bigint_u", "102", "BIGINT UNSIGNED wrapped (long)"},
    {"defaults-schemas", "types", "c_bigint_u", "44", "BIGINT UNSIGNED wrapped (long)"},
    {"defaults-schemas", "pairs", "p_num", "béta", "BIGINT UNSIGNED wrapped (long), a key column"},
    {"connect-time-schemas", "types", "c_bigint_u", "2", "BIGINT UNSIGNED wrapped (long)"},
    {"connect-time-schemas", "types", "c_bigint_u", "102", "BIGINT UNSIGNED wrapped (long)"},
    {"connect-time-schemas", "types", "c_bigint_u", "44", "BIGINT UNSIGNED wrapped (long)"},
    {"connect-time-schemas", "pairs", "p_num", "béta", "BIGINT UNSIGNED wrapped (long), a key column"},
    /* time.precision.mode=connect: TIME as milliseconds of the day (null outside 0..24 h),
     * DATETIME(6) as milliseconds */
    {"connect-time-schemas", "types", "c_time", "*", "connect Time: null outside 00:00..24:00"},
    {"connect-time-schemas", "types", "c_time3", "*", "connect Time: null outside 00:00..24:00"},
    {"connect-time-schemas", "types", "c_time6", "*", "connect Time: null outside 0..24 h, milliseconds"},
    {"connect-time-schemas", "types", "c_datetime6", "*", "connect Timestamp: milliseconds"},
    /* without schemas: every column whose Debezium encoding is not the value */
    {"defaults", "types", "c_bigint_u", "*", NO_SCHEMA},
    {"defaults", "pairs", "p_num", "béta", NO_SCHEMA},
    {"binary-hex", "pairs", "p_num", "béta", NO_SCHEMA},
    {"defaults", "types", "c_dec_10_2", "*", NO_SCHEMA},
    {"defaults", "types", "c_dec_65_30", "*", NO_SCHEMA},
    {"defaults", "types", "c_dec_5_0", "*", NO_SCHEMA},
    {"defaults", "types", "c_date", "*", NO_SCHEMA},
    {"defaults", "types", "c_time", "*", NO_SCHEMA},
    {"defaults", "types", "c_time3", "*", NO_SCHEMA},
    {"defaults", "types", "c_time6", "*", NO_SCHEMA},
    {"defaults", "types", "c_datetime", "*", NO_SCHEMA},
    {"defaults", "types", "c_datetime3", "*", NO_SCHEMA},
    {"defaults", "types", "c_datetime6", "*", NO_SCHEMA},
    {"defaults", "types", "c_binary", "*", NO_SCHEMA},
    {"defaults", "types", "c_varbinary", "*", NO_SCHEMA},
    {"defaults", "types", "c_tinyblob", "*", NO_SCHEMA},
    {"defaults", "types", "c_blob", "*", NO_SCHEMA},
    {"defaults", "types", "c_set", "*", NO_SCHEMA},
    {"defaults", "types", "c_bit7", "*", NO_SCHEMA},
    {"defaults", "types", "c_bit64", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_bigint_u", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_dec_10_2", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_dec_65_30", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_dec_5_0", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_date", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_time", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_time3", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_time6", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_datetime", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_datetime3", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_datetime6", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_binary", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_varbinary", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_tinyblob", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_blob", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_set", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_bit7", "*", NO_SCHEMA},
    {"binary-hex", "types", "c_bit64", "*", NO_SCHEMA},
    {NULL, NULL, NULL, NULL, NULL},
};

static const loss *lost(const char *variant, const char *table, const char *column, const char *row)
{
    for (const loss *l = LOSSES; l->variant; l++) {
        size_t vl = strlen(variant), ll = strlen(l->variant);
        bool v = !*l->variant || strcmp(l->variant, variant) == 0 ||
                 (l->variant[0] == '!' && strncmp(variant, l->variant + 1, ll - 1) != 0) ||
                 (l->variant[0] == '-' && vl > ll && strcmp(variant + vl - ll, l->variant) == 0);
        if (v && strcmp(l->table, table) == 0 && strcmp(l->column, column) == 0 &&
            (strcmp(l->row, "*") == 0 || strcmp(l->row, row) == 0))
            return l;
    }
    return NULL;
}

/* Same storage class and value (REAL: the same bits; TEXT, BLOB: the same bytes). */
static bool cell_eq(sqlite3_stmt *a, int i, sqlite3_stmt *b, int j)
{
    int t = sqlite3_column_type(a, i);
    if (t != sqlite3_column_type(b, j))
        return false;
    switch (t) {
    case SQLITE_NULL: return true;
    case SQLITE_INTEGER: return sqlite3_column_int64(a, i) == sqlite3_column_int64(b, j);
    case SQLITE_FLOAT: {
        double x = sqlite3_column_double(a, i), y = sqlite3_column_double(b, j);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    default: {
        const void *pa = t == SQLITE_BLOB ? sqlite3_column_blob(a, i) : (const void *)sqlite3_column_text(a, i);
        const void *pb = t == SQLITE_BLOB ? sqlite3_column_blob(b, j) : (const void *)sqlite3_column_text(b, j);
        int n = sqlite3_column_bytes(a, i);
        return n == sqlite3_column_bytes(b, j) && (n == 0 || memcmp(pa, pb, (size_t)n) == 0);
    }
    }
}

/* Compare table `table` (golden.<table>) of cache A (tributary) and B (Debezium
 * variant): rows by key, every column of A. Returns the number of cells that
 * differ and are not listed; listed cells that do not differ fail too. */
static int compare_table_of(const char *dba, const char *dbb, const char *variant, const char *db,
                            const char *table, const char *order, const char *rowcol, int *n_lost)
{
    sqlite3 *ha = NULL, *hb = NULL;
    sqlite3_stmt *sa = NULL, *sb = NULL;
    char sql[256];
    int bad = 0;
    cr_assert_eq(sqlite3_open_v2(dba, &ha, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_open_v2(dbb, &hb, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "SELECT * FROM \"%s.%s\" ORDER BY %s", db, table, order);
    cr_assert_eq(sqlite3_prepare_v2(ha, sql, -1, &sa, NULL), SQLITE_OK, "%s: %s", dba, sqlite3_errmsg(ha));
    cr_assert_eq(sqlite3_prepare_v2(hb, sql, -1, &sb, NULL), SQLITE_OK, "%s (%s): %s", dbb, variant,
                 sqlite3_errmsg(hb));
    int nrow = 0;
    for (;;) {
        int ra = sqlite3_step(sa), rb = sqlite3_step(sb);
        cr_assert_eq(ra == SQLITE_ROW, rb == SQLITE_ROW, "%s.%s: %d rows in the tributary cache, a different count "
                     "in %s", variant, table, nrow, dbb);
        if (ra != SQLITE_ROW)
            break;
        nrow++;
        /* the row's name: its first key column */
        int ic = -1;
        for (int i = 0; i < sqlite3_column_count(sa); i++)
            if (strcmp(sqlite3_column_name(sa, i), rowcol) == 0)
                ic = i;
        const char *rowname = (const char *)sqlite3_column_text(sa, ic);
        char rname[128];
        snprintf(rname, sizeof rname, "%s", rowname ? rowname : "NULL");
        for (int i = 0; i < sqlite3_column_count(sa); i++) {
            const char *col = sqlite3_column_name(sa, i);
            if (strcmp(col, "_partition") == 0)
                continue;
            int j;
            for (j = 0; j < sqlite3_column_count(sb); j++)
                if (strcmp(sqlite3_column_name(sb, j), col) == 0)
                    break;
            cr_assert_lt(j, sqlite3_column_count(sb), "%s.%s: no column %s", variant, table, col);
            char ta[256], tb[256];
            it_cell_text(sa, i, ta, sizeof ta);
            it_cell_text(sb, j, tb, sizeof tb);
            bool same = cell_eq(sa, i, sb, j);
            const loss *l = lost(variant, table, col, rname);
            if (l) {
                (*n_lost)++;
                if (same && strcmp(l->row, "*") != 0) {
                    fprintf(stderr, "%s.%s row %s column %s: listed as lost (%s) but equal: %s\n", variant, table,
                            rname, col, l->why, ta);
                    bad++;
                }
            } else if (!same) {
                fprintf(stderr, "%s.%s row %s column %s: tributary %s, Debezium %s\n", variant, table, rname, col, ta,
                        tb);
                bad++;
            }
        }
    }
    sqlite3_finalize(sa);
    sqlite3_finalize(sb);
    sqlite3_close(ha);
    sqlite3_close(hb);
    return bad;
}

static int compare_table(const char *dba, const char *dbb, const char *variant, const char *table, const char *order,
                         const char *rowcol, int *n_lost)
{
    return compare_table_of(dba, dbb, variant, "golden", table, order, rowcol, n_lost);
}

/* ------------------------------------------------------------- tests */

/* One `tributary run` of golden.types and golden.pairs into topics <prefix>.*, with extra
 * configuration lines; its files in dir/<prefix>.*. */
typedef struct run_proc {
    pid_t pid;
    char status[300], log[300];
} run_proc;

static void start_run_of(run_proc *r, const char *dir, const char *prefix, unsigned server_id, const char *include,
                         const char *extra)
{
    char cfg[300], offsets[300];
    snprintf(cfg, sizeof cfg, "%s/%s.properties", dir, prefix);
    snprintf(offsets, sizeof offsets, "%s/%s.offsets", dir, prefix);
    snprintf(r->status, sizeof r->status, "%s/%s.status", dir, prefix);
    snprintf(r->log, sizeof r->log, "%s/%s.log", dir, prefix);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\nsource.heartbeat.interval.ms=500\nheartbeat.interval.ms=500\n"
            "tables.include=%s\ntopic.prefix=%s\nsink=kafka\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=file\noffsets.file=%s\noffsets.commit.interval.ms=200\nstatus.file=%s\n"
            "snapshot.mode=initial\n%s",
            prefix, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"), server_id, include,
            prefix, it_brokers(), offsets, r->status, extra);
    fclose(f);
    const char *args[] = {"run", "--config", cfg, NULL};
    r->pid = e2e_spawn(args, r->log);
}

static void start_run(run_proc *r, const char *dir, const char *prefix, unsigned server_id, const char *extra)
{
    start_run_of(r, dir, prefix, server_id, "golden[.](types|pairs)", extra);
}

static void stop_run(run_proc *r)
{
    kill(r->pid, SIGTERM);
    cr_assert_eq(e2e_wait(r->pid, 30000), 0, "tributary run did not stop cleanly; see %s", r->log);
    e2e_assert_clean_log(r->log);
}

/* tributary's own value.encoding=debezium topics: their settings, and the cache's for them */
static const struct {
    const char *name, *run_cfg;
    const char *cache_set[8];
} OWN[] = {
    {"own-debezium-defaults", "value.encoding=debezium\n", {NULL}},
    {"own-debezium-options",
     "value.encoding=debezium\ndebezium.decimal.handling.mode=string\ndebezium.bigint.unsigned.handling.mode=precise\n"
     "debezium.binary.handling.mode=hex\n",
     {"--set", "cache.debezium.decimal.handling.mode=string", "--set", "cache.debezium.binary.handling.mode=hex",
      NULL}},
    {"own-debezium-connect-time", "value.encoding=debezium\ndebezium.time.precision.mode=connect\n"
                                  "debezium.binary.handling.mode=base64-url-safe\n",
     {"--set", "cache.debezium.time.precision.mode=connect", "--set",
      "cache.debezium.binary.handling.mode=base64-url-safe", NULL}},
    /* Kafka Connect JSON keys and values (with their <prefix>.schema records too) */
    {"own-debezium-connect-json", "value.encoding=debezium\nvalue.schemas=true\nkey.schemas=true\n", {NULL}},
    {"own-tributary-connect-json", "value.schemas=true\nkey.schemas=true\n", {NULL}},
};
#define NOWN (sizeof OWN / sizeof OWN[0])

Test(debezium, golden_variants_equal_tributary, .timeout = 600, .fini = e2e_kill_children)
{
    char dir[128], prefix[64], dba[200], clog[300];
    it_prefix(prefix, sizeof prefix, "dbz");
    snprintf(dir, sizeof dir, "/tmp/e2e-%s", prefix);
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s: %s", dir, strerror(errno));
    snprintf(dba, sizeof dba, "%s/tributary.db", dir);

    /* the oracle: tributary's own capture of the same statements (and the same capture in
     * value.encoding=debezium, under several options: the round trip of tributary's own topics) */
    MYSQL *m = e2e_mysql();
    run_sql_file(m, FIX "/golden.sql");
    run_proc runs[1 + NOWN];
    char own_prefix[NOWN][96];
    start_run(&runs[0], dir, prefix, 7000 + (unsigned)getpid() % 1000 * 8, "");
    for (size_t i = 0; i < NOWN; i++) {
        snprintf(own_prefix[i], sizeof own_prefix[i], "%s_own%zu", prefix, i);
        start_run(&runs[1 + i], dir, own_prefix[i], 7001 + (unsigned)getpid() % 1000 * 8 + (unsigned)i, OWN[i].run_cfg);
    }
    for (size_t i = 0; i <= NOWN; i++)
        wait_gtid(runs[i].status, runs[i].pid, runs[i].log);
    run_sql_file(m, FIX "/golden_dml.sql");
    mysql_close(m);
    for (size_t i = 0; i <= NOWN; i++)
        wait_gtid(runs[i].status, runs[i].pid, runs[i].log);
    for (size_t i = 0; i <= NOWN; i++)
        stop_run(&runs[i]);
    snprintf(clog, sizeof clog, "%s/cache-tributary.log", dir);
    replay(prefix, dba, clog, NULL);

    int bad = 0;
    /* tributary's own Debezium-encoded topics (schemaless, with their <prefix>.schema records) */
    for (size_t i = 0; i < NOWN; i++) {
        char dbb[300];
        snprintf(dbb, sizeof dbb, "%s/%s.db", dir, OWN[i].name);
        snprintf(clog, sizeof clog, "%s/cache-%s.log", dir, OWN[i].name);
        replay(own_prefix[i], dbb, clog, OWN[i].cache_set);
        int nl = 0, b1 = compare_table(dba, dbb, OWN[i].name, "types", "id", "id", &nl);
        int b2 = compare_table(dba, dbb, OWN[i].name, "pairs", "p_name, CAST(p_num AS TEXT)", "p_name", &nl);
        fprintf(stderr, "debezium %s: %d cells differ beyond the %d listed losses\n", OWN[i].name, b1 + b2, nl);
        bad += b1 + b2;
    }

    /* every Debezium variant, replayed and compared */
    static const char *const variants[] = {"defaults-schemas", "string-precise-schemas", "connect-time-schemas",
                                           "defaults", "binary-hex"};
    rd_kafka_t *rk = it_producer();
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char vp[96], topic[160], path[300], dbb[200];
        snprintf(vp, sizeof vp, "%s_%zu", prefix, v);
        for (int k = 0; k < 2; k++) {
            const char *table = k ? "types" : "pairs";
            snprintf(topic, sizeof topic, "%s.golden.%s", vp, table);
            snprintf(path, sizeof path, FIX "/%s/%s.tsv", variants[v], table);
            it_create_topic(rk, topic, 1, 0);
            cr_assert_eq(it_produce_dump(rk, path, topic), (size_t)(k ? 22 : 18), "%s", path);
        }
        snprintf(dbb, sizeof dbb, "%s/%s.db", dir, variants[v]);
        snprintf(clog, sizeof clog, "%s/cache-%s.log", dir, variants[v]);
        bool schemaless = strstr(variants[v], "schemas") == NULL;
        const char *hex[] = {"--set", "cache.debezium.binary.handling.mode=hex", NULL};
        replay(vp, dbb, clog, strcmp(variants[v], "binary-hex") == 0 ? hex : NULL);
        if (schemaless) { /* a foreign topic without schemas: the cache names what it cannot decode */
            tb_buf lg;
            tb_buf_init(&lg, 0);
            slurp_or_fail(clog, &lg);
            /* the two warning lines of golden.types, as one text */
            tb_buf w;
            tb_buf_init(&w, 0);
            const char *all = tb_buf_cstr(&lg);
            for (const char *h = strstr(all, "without Connect schemas"); h; h = strstr(h + 1, "without Connect schemas")) {
                const char *bol = h, *eol = strchr(h, '\n');
                while (bol > all && bol[-1] != '\n')
                    bol--;
                const char *tn = "table \"golden.types\"";
                if (memmem(bol, (size_t)(h - bol), tn, strlen(tn)))
                    tb_buf_append(&w, bol, eol ? (size_t)(eol - bol + 1) : strlen(bol));
            }
            const char *names[] = {"\"c_date\"", "\"c_datetime6\"", "\"c_dec_10_2\"", "\"c_binary\"", "\"c_set\"",
                                   strcmp(variants[v], "binary-hex") == 0 ? "hex text" : "base64 text"};
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                cr_assert_not_null(strstr(tb_buf_cstr(&w), names[i]), "%s: the warning does not name %s:\n%s",
                                   variants[v], names[i], tb_buf_cstr(&lg));
            tb_buf_free(&w);
            tb_buf_free(&lg);
        }
        int nl = 0, b1 = compare_table(dba, dbb, variants[v], "types", "id", "id", &nl);
        int b2 = compare_table(dba, dbb, variants[v], "pairs", "p_name, CAST(p_num AS TEXT)", "p_name", &nl);
        fprintf(stderr, "debezium %s: %d cells differ beyond the %d listed losses\n", variants[v], b1 + b2, nl);
        bad += b1 + b2;
    }
    rd_kafka_destroy(rk);
    cr_assert_eq(bad, 0, "%d cells differ from the tributary cache (see above)", bad);
    e2e_rmtree(dir);
}

/* Debezium's topic conventions, with Connect schemas: truncate (op t, a null
 * key), logical messages (op m), schema change events, the unavailable-value
 * placeholder, a key change as d + tombstone + c, and a value the cache cannot
 * decode (skipped by cache.error.policy=skip, named by topic, partition,
 * offset and column). */
Test(debezium, conventions, .timeout = 180, .fini = e2e_kill_children)
{
    char dir[128], prefix[64], db[200], clog[200], tt[160], tu[160];
    it_prefix(prefix, sizeof prefix, "dbc");
    snprintf(dir, sizeof dir, "/tmp/e2e-%s", prefix);
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s: %s", dir, strerror(errno));
    snprintf(db, sizeof db, "%s/c.db", dir);
    snprintf(clog, sizeof clog, "%s/cache.log", dir);
    snprintf(tt, sizeof tt, "%s.db.t", prefix);
    snprintf(tu, sizeof tu, "%s.db.u", prefix);
    rd_kafka_t *rk = it_producer();
    it_create_topic(rk, tt, 1, -1); /* the truncate event has no key: a compacted topic refuses it */
    it_create_topic(rk, tu, 1, 0);
    it_create_topic(rk, prefix, 1, 0);
    const char *ks = "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"}],"
                     "\"optional\":false,\"name\":\"k.Key\"}";
    const char *rowf = "[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},"
                       "{\"type\":\"string\",\"optional\":true,\"field\":\"note\"},"
                       "{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                       "\"version\":1,\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"10\"},"
                       "\"field\":\"d\"}]";
    char vs[2048];
    snprintf(vs, sizeof vs,
             "{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":%s,\"optional\":true,\"name\":\"v.Value\","
             "\"field\":\"before\"},{\"type\":\"struct\",\"fields\":%s,\"optional\":true,\"name\":\"v.Value\","
             "\"field\":\"after\"},{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,"
             "\"field\":\"connector\"}],\"optional\":false,\"name\":\"io.debezium.connector.mysql.Source\","
             "\"field\":\"source\"},{\"type\":\"string\",\"optional\":false,\"field\":\"op\"}],\"optional\":false,"
             "\"name\":\"v.Envelope\"}",
             rowf, rowf);
#define KEY(id) "{\"schema\":%s,\"payload\":{\"id\":" #id "}}"
    char k[1024], v[4096];
#define SEND(topic, keyfmt, payload)                                                                                   \
    do {                                                                                                               \
        snprintf(k, sizeof k, keyfmt, ks);                                                                             \
        snprintf(v, sizeof v, "{\"schema\":%s,\"payload\":%s}", vs, payload);                                          \
        it_produce(rk, topic, 0, k, v);                                                                                \
    } while (0)
    /* table u: the placeholder, a bad Decimal, a delete */
    SEND(tu, KEY(1), "{\"before\":null,\"after\":{\"id\":1,\"note\":\"a\",\"d\":\"AMg=\"},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"c\"}");
    SEND(tu, KEY(1), "{\"before\":null,\"after\":{\"id\":1,\"note\":\"__debezium_unavailable_value\",\"d\":\"ASw=\"},"
                     "\"source\":{\"connector\":\"mysql\"},\"op\":\"u\"}");
    SEND(tu, KEY(2), "{\"before\":null,\"after\":{\"id\":2,\"note\":\"b\",\"d\":\"!!\"},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"c\"}");
    SEND(tu, KEY(3), "{\"before\":null,\"after\":{\"id\":3,\"note\":\"c\",\"d\":null},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"c\"}");
    SEND(tu, KEY(3), "{\"before\":{\"id\":3,\"note\":\"c\",\"d\":null},\"after\":null,\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"d\"}");
    snprintf(k, sizeof k, KEY(3), ks);
    it_produce(rk, tu, 0, k, NULL);
    /* a key change: d, tombstone, c */
    SEND(tu, KEY(1), "{\"before\":{\"id\":1,\"note\":\"a\",\"d\":\"ASw=\"},\"after\":null,\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"d\"}");
    snprintf(k, sizeof k, KEY(1), ks);
    it_produce(rk, tu, 0, k, NULL);
    SEND(tu, KEY(10), "{\"before\":{\"id\":1,\"note\":\"a\",\"d\":\"ASw=\"},\"after\":{\"id\":10,\"note\":\"a\",\"d\":"
                      "\"/zg=\"},\"source\":{\"connector\":\"mysql\"},\"op\":\"c\"}");
    /* table t: rows, a logical message, a truncate, a row after it */
    SEND(tt, KEY(1), "{\"before\":null,\"after\":{\"id\":1,\"note\":\"x\",\"d\":\"AA==\"},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"r\"}");
    SEND(tt, KEY(2), "{\"before\":null,\"after\":{\"id\":2,\"note\":\"y\",\"d\":\"AA==\"},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"c\"}");
    SEND(tt, KEY(2), "{\"before\":null,\"after\":null,\"source\":{\"connector\":\"mysql\"},\"op\":\"m\"}");
    snprintf(v, sizeof v, "{\"schema\":%s,\"payload\":{\"before\":null,\"after\":null,\"source\":{\"connector\":"
                          "\"mysql\"},\"op\":\"t\"}}", vs);
    cr_assert_eq(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(tt), RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_VALUE(v, strlen(v)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END), 0);
    SEND(tt, KEY(3), "{\"before\":null,\"after\":{\"id\":3,\"note\":\"z\",\"d\":\"AA==\"},\"source\":{\"connector\":"
                     "\"mysql\"},\"op\":\"c\"}");
    /* the schema change topic (<topic.prefix>): not a table */
    it_produce(rk, prefix, 0, "{\"databaseName\":\"db\"}",
               "{\"source\":{\"connector\":\"mysql\"},\"ts_ms\":1,\"databaseName\":\"db\",\"schemaName\":null,"
               "\"ddl\":\"CREATE TABLE t (id INT PRIMARY KEY)\",\"tableChanges\":[]}");
    it_flush(rk);
    rd_kafka_destroy(rk);
#undef SEND
#undef KEY
    char topics[200];
    snprintf(topics, sizeof topics, "^%s", prefix);
    const char *args[] = {"cache", "--brokers", it_brokers(), "--topics", topics, "--db", db, "--until-caught-up",
                          "--set", "cache.error.policy=skip", NULL};
    pid_t pid = e2e_spawn(args, clog);
    int rc = e2e_wait(pid, 120000);
    cr_assert_eq(rc, 0, "tributary cache exited %d; see %s", rc, clog);
    e2e_assert_clean_log(clog);
    char *u = it_sql_dump(db, "SELECT id, note, d, typeof(d) FROM \"db.u\" ORDER BY id");
    char *t = it_sql_dump(db, "SELECT id, note FROM \"db.t\" ORDER BY id");
    bool uok = strcmp(u, "10|a|-2.00|text\n") == 0, tok = strcmp(t, "3|z\n") == 0;
    cr_assert(uok && tok, "table u:\n%s\ntable t after the truncate:\n%s", u, t);
    free(u);
    free(t);
    cr_assert_eq(it_sql_int(db, "SELECT count(*) FROM _tributary_tables"), 2, "the schema change topic became a table");
    tb_buf lg;
    tb_buf_init(&lg, 0);
    cr_assert(e2e_slurp(clog, &lg));
    char want[256];
    snprintf(want, sizeof want, "%s [0] offset 2: skipped (cache.error.policy=skip): column \"d\"", tu);
    cr_assert_not_null(strstr(tb_buf_cstr(&lg), want), "the log does not name the bad message (%s):\n%s", want,
                       tb_buf_cstr(&lg));
    tb_buf_free(&lg);
    e2e_rmtree(dir);
}

/* The fsp of Debezium's temporal columns from its schema history topic
 * (tests/fixtures/debezium/history: DATETIME(0) to (6), TIME(0/3/6),
 * TIMESTAMP(0/3), a DATETIME(3) unique key and a DATETIME(2) primary key, an
 * ALTER that adds a DATETIME(5) and widens a DATETIME(1) to (3)). The oracle
 * is tributary's own capture of the same statements: with
 * cache.debezium.history.topic every cell of Debezium's topics (Connect
 * schemas) equals it; without, the DATETIME(1..3) and TIME(3) cells with zero
 * trailing digits, and so the DATETIME(2) key, differ (the shortest exact
 * fraction). */
Test(debezium, fsp_from_schema_history, .timeout = 300, .fini = e2e_kill_children)
{
    char dir[128], prefix[64], dba[200], clog[300];
    it_prefix(prefix, sizeof prefix, "dbzh");
    snprintf(dir, sizeof dir, "/tmp/e2e-%s", prefix);
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s: %s", dir, strerror(errno));
    snprintf(dba, sizeof dba, "%s/tributary.db", dir);
    MYSQL *m = e2e_mysql();
    cr_assert_eq(mysql_query(m, "DROP DATABASE IF EXISTS fsp"), 0, "%s", mysql_error(m)); /* a run before */
    run_sql_file(m, FIX "/history/fsp.sql");
    run_proc r;
    start_run_of(&r, dir, prefix, 7500 + (unsigned)getpid() % 1000, "fsp[.](t|k)", "");
    wait_gtid(r.status, r.pid, r.log);
    run_sql_file(m, FIX "/history/fsp_dml.sql");
    mysql_close(m);
    wait_gtid(r.status, r.pid, r.log);
    stop_run(&r);
    snprintf(clog, sizeof clog, "%s/cache-tributary.log", dir);
    replay(prefix, dba, clog, NULL);

    rd_kafka_t *rk = it_producer();
    int bad[2] = {0, 0};
    for (int with = 1; with >= 0; with--) {
        char vp[96], topic[160], hist[160], path[300], dbb[200], set[200];
        snprintf(vp, sizeof vp, "%s_%d", prefix, with);
        for (int k = 0; k < 2; k++) {
            snprintf(topic, sizeof topic, "%s.fsp.%s", vp, k ? "k" : "t");
            snprintf(path, sizeof path, FIX "/history/defaults-schemas/%s.tsv", k ? "k" : "t");
            it_create_topic(rk, topic, 1, 0);
            cr_assert_eq(it_produce_dump(rk, path, topic), (size_t)(k ? 4 : 8), "%s", path);
        }
        snprintf(hist, sizeof hist, "hist_%s", vp); /* outside the cache's topic regex */
        it_create_topic(rk, hist, 1, -1);
        cr_assert_eq(it_produce_dump(rk, FIX "/history/defaults-schemas/schemahistory.tsv", hist), (size_t)9);
        snprintf(dbb, sizeof dbb, "%s/debezium-%d.db", dir, with);
        snprintf(clog, sizeof clog, "%s/cache-debezium-%d.log", dir, with);
        snprintf(set, sizeof set, "cache.debezium.history.topic=%s", hist);
        const char *extra[] = {"--set", set, NULL};
        replay(vp, dbb, clog, with ? extra : NULL);
        int nl = 0;
        const char *variant = with ? "history" : "no-history";
        bad[with] = compare_table_of(dba, dbb, variant, "fsp", "t", "id", "id", &nl) +
                    compare_table_of(dba, dbb, variant, "fsp", "k", "at", "at", &nl);
        fprintf(stderr, "debezium %s: %d cells differ\n", variant, bad[with]);
    }
    rd_kafka_destroy(rk);
    cr_expect_eq(bad[1], 0, "with the schema history, %d cells differ from the tributary cache (see above)", bad[1]);
    cr_expect_gt(bad[0], 0, "without the schema history no cell differs: the test shows nothing");
    e2e_rmtree(dir);
}
