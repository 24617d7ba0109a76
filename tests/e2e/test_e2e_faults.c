/*
 * End-to-end fault tests: MariaDB -> tributary run -> Kafka ->
 * tributary cache, with the built binary, against scripts/testenv.
 *
 * A forked workload keeps changing two tables (inserts, multi-row updates,
 * deletes, multi-table transactions, primary-key changes) while:
 *   (a) the connector is killed with SIGKILL at E2E_KILLS random moments and
 *       restarted each time;
 *   (b) the Kafka broker is stopped and started;
 *   (c) MariaDB is stopped and started.
 * The exactly_once run also writes transaction metadata (transaction.topic).
 * Then the workload stops, the connector catches up (its committed GTID, read
 * from the status file, equals @@gtid_binlog_pos), stops cleanly (SIGTERM,
 * exit 0), `tributary cache --until-caught-up` rebuilds the tables from the
 * topics, and every row of the cache must equal the source (text of every
 * column, in key order). A read_committed consumer counts change events by
 * source position: duplicates are reported for at-least-once and must be 0
 * with exactly.once=true.
 *
 * TB_E2E_SEED=<n> replays a schedule (the seed is printed).
 */
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

#include "e2e_util.h"

#define E2E_KILLS 20
#define E2E_IDS 400 /* id range per table: collisions and PK changes hit existing rows */

/* ------------------------------------------------------------ workload (forked) */

static volatile sig_atomic_t wl_stop;
static void wl_on_term(int sig)
{
    (void)sig;
    wl_stop = 1;
}

/* Runs in the child until SIGTERM; writes "<transactions committed>\n" to
 * stats_path at the end. Never calls Criterion. */
static void workload(const char *db, unsigned seed, const char *stats_path)
{
    signal(SIGTERM, wl_on_term);
    srand(seed);
    uint64_t committed = 0;
    MYSQL *m = NULL;
    char q[512];
    while (!wl_stop) {
        if (!m && !(m = e2e_mysql_try())) {
            usleep(100000); /* the server is restarting: try again */
            continue;
        }
        int r = rand() % 100;
        const char *t = rand() % 2 ? "a" : "b";
        int id = 1 + rand() % E2E_IDS;
        int ok = 1;
        if (r < 35) {
            snprintf(q, sizeof q, "INSERT INTO %s.%s (id, v, s) VALUES (%d, %d, 'i%d')", db, t, id, rand() % 1000,
                     rand());
            ok = mysql_query(m, q) == 0 || mysql_errno(m) == 1062;
        } else if (r < 60) {
            snprintf(q, sizeof q, "UPDATE %s.%s SET v = v + 1, s = 'u%d' WHERE id BETWEEN %d AND %d", db, t, rand(),
                     id, id + 4);
            ok = mysql_query(m, q) == 0;
        } else if (r < 72) {
            snprintf(q, sizeof q, "DELETE FROM %s.%s WHERE id = %d", db, t, id);
            ok = mysql_query(m, q) == 0;
        } else if (r < 90) {
            /* multi-table transaction */
            int id2 = 1 + rand() % E2E_IDS;
            ok = mysql_query(m, "BEGIN") == 0;
            snprintf(q, sizeof q, "INSERT INTO %s.a (id, v, s) VALUES (%d, 1, 'm') ON DUPLICATE KEY UPDATE v = v + 7",
                     db, id);
            ok = ok && mysql_query(m, q) == 0;
            snprintf(q, sizeof q, "UPDATE %s.b SET s = 'm%d', v = v - 1 WHERE id BETWEEN %d AND %d", db, rand(), id2,
                     id2 + 2);
            ok = ok && mysql_query(m, q) == 0;
            snprintf(q, sizeof q, "DELETE FROM %s.b WHERE id = %d", db, 1 + rand() % E2E_IDS);
            ok = ok && mysql_query(m, q) == 0;
            ok = ok && mysql_query(m, "COMMIT") == 0;
            if (!ok)
                mysql_query(m, "ROLLBACK");
        } else {
            /* primary-key change (a duplicate new key fails: nothing happens) */
            snprintf(q, sizeof q, "UPDATE %s.%s SET id = %d WHERE id = %d", db, t, 1 + rand() % E2E_IDS, id);
            ok = mysql_query(m, q) == 0 || mysql_errno(m) == 1062;
        }
        if (ok) {
            committed++;
        } else {
            unsigned e = mysql_errno(m);
            if (e == 2006 || e == 2013 || e == 1927 || e == 2026 || e >= 2000) {
                mysql_close(m); /* connection lost: reconnect */
                m = NULL;
            }
        }
        usleep(1500); /* a few hundred transactions per second on this 2-core machine */
    }
    if (m)
        mysql_close(m);
    FILE *f = fopen(stats_path, "w");
    if (f) {
        fprintf(f, "%llu\n", (unsigned long long)committed);
        fclose(f);
    }
}

/* ------------------------------------------------------------ scenario */

typedef struct e2e_run {
    char db[96];
    char dir[256];
    char cfg[320];
    char log[320];
    char status[320];
    char cache[320];
    pid_t connector;
    pid_t wl;
    int kills;
    int own_exits;      /* the connector stopped by itself (then restarted) */
    int restarts;
    unsigned seed;
} e2e_run;

static void e2e_start_connector(e2e_run *r)
{
    const char *args[] = {"run", "--config", r->cfg, NULL};
    r->connector = e2e_spawn(args, r->log);
    r->restarts++;
}

/* The connector should be running; if it stopped by itself, say so and restart it. */
static void e2e_check_connector(e2e_run *r)
{
    int rc = e2e_wait(r->connector, 0);
    if (rc == -2)
        return;
    r->own_exits++;
    fprintf(stderr, "e2e: the connector exited by itself (status %d); see %s; restarting it\n", rc, r->log);
    e2e_start_connector(r);
}

/* Poll until the running connector (this pid) says "streaming" in its status
 * file, so that a server fault hits the stream, not the start-up. */
static void e2e_wait_streaming(e2e_run *r)
{
    char want[64];
    snprintf(want, sizeof want, "\"pid\":%ld,\"state\":\"streaming\"", (long)r->connector);
    tb_buf b;
    tb_buf_init(&b, 0);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(e2e_slurp(r->status, &b) && strstr(tb_buf_cstr(&b), want))) {
        cr_assert(tb_itest_now_ms() < deadline, "the connector is not streaming after 60 s; see %s", r->log);
        e2e_check_connector(r);
        snprintf(want, sizeof want, "\"pid\":%ld,\"state\":\"streaming\"", (long)r->connector);
        usleep(50000);
    }
    tb_buf_free(&b);
}

static void e2e_sleep_ms(long ms)
{
    /* fault timing (how long a fault lasts or when it strikes), not synchronization */
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void e2e_setup(e2e_run *r, bool exactly_once)
{
    memset(r, 0, sizeof(*r));
    const char *brokers = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    tb_itest_env("TRIBUTARY_TEST_DIR");
    const char *s = getenv("TB_E2E_SEED");
    r->seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(r->seed);
    tb_itest_unique(r->db, sizeof r->db, exactly_once ? "e2eeo" : "e2eal");
    snprintf(r->dir, sizeof r->dir, "/tmp/%s", r->db);
    cr_assert_eq(mkdir(r->dir, 0700), 0, "mkdir %s: %s", r->dir, strerror(errno));
    snprintf(r->cfg, sizeof r->cfg, "%s/run.properties", r->dir);
    snprintf(r->log, sizeof r->log, "%s/run.log", r->dir);
    snprintf(r->status, sizeof r->status, "%s/status.json", r->dir);
    snprintf(r->cache, sizeof r->cache, "%s/cache.db", r->dir);

    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r->db);
    for (int t = 0; t < 2; t++) {
        e2e_sql(m, "CREATE TABLE %s.%c (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40) NOT NULL)", r->db, "ab"[t]);
        for (int i = 1; i <= 100; i++)
            e2e_sql(m, "INSERT INTO %s.%c VALUES (%d, %d, 'seed%d')", r->db, "ab"[t], i * 3, i, i);
    }
    mysql_close(m);

    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\nsource.heartbeat.interval.ms=1000\nheartbeat.interval.ms=500\nsource.reconnect.backoff.max.ms=1000\n"
            "tables.include=%s[.].*\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=300\nstatus.file=%s\ncache.path=%s\nsnapshot.mode=initial\n"
            "exactly.once=%s\ntransaction.topic=%s\nlog.level=info\n"
            /* One instance, restarted right after each SIGKILL and kept through a Kafka
             * restart: with the lease each restart would first wait out the killed
             * instance's group session, and a Kafka outage longer than the session
             * ends the run (DESIGN 12). Takeovers are tested in test_e2e_ha. */
            "ha.enabled=false\n",
            r->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), 5000 + r->seed % 1000,
            r->db, r->db, brokers, r->status, r->cache, exactly_once ? "true" : "false",
            exactly_once ? "true" : "false");
    fclose(f);
}

/* Stop the workload child and return the number of transactions it committed. */
static unsigned long long e2e_stop_workload(e2e_run *r)
{
    char stats[400];
    snprintf(stats, sizeof stats, "%s/workload.txt", r->dir);
    kill(r->wl, SIGTERM);
    cr_assert_eq(e2e_wait(r->wl, 30000), 0, "workload did not stop");
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(stats, &b), "no workload stats");
    unsigned long long n = strtoull(tb_buf_cstr(&b), NULL, 10);
    tb_buf_free(&b);
    return n;
}

/* Poll until the committed GTID equals the server's binlog GTID position. */
static void e2e_wait_caught_up(e2e_run *r)
{
    char want[256];
    e2e_server_gtid(NULL, want, sizeof want);
    char got[256] = "";
    long long deadline = tb_itest_now_ms() + 120000;
    while (!(e2e_status_gtid(r->status, got, sizeof got) && strcmp(got, want) == 0)) {
        if (tb_itest_now_ms() >= deadline) {
            tb_buf lg;
            tb_buf_init(&lg, 0);
            e2e_slurp(r->log, &lg);
            size_t off = lg.len > 3000 ? lg.len - 3000 : 0;
            cr_assert_fail("not caught up in 120 s: committed %s, server %s; log tail:\n%s", got, want,
                           tb_buf_cstr(&lg) + off);
        }
        e2e_check_connector(r);
        usleep(100000);
    }
}

/* Rows of the cache table as "id|v|s\n" in key order. */
static void e2e_cache_text(const char *path, const char *table, tb_buf *out)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    char q[256];
    snprintf(q, sizeof q, "SELECT id, v, s FROM \"%s\" ORDER BY id", table);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s: %s", q, sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < 3; i++) {
            if (i)
                tb_buf_putc(out, '|');
            const unsigned char *v = sqlite3_column_text(st, i);
            tb_buf_puts(out, v ? (const char *)v : "\\N");
        }
        tb_buf_putc(out, '\n');
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static size_t e2e_lines(const tb_buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    return n;
}

static uint64_t e2e_fnv(const tb_buf *b)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < b->len; i++)
        h = (h ^ (unsigned char)b->data[i]) * 1099511628211ULL;
    return h;
}

static void e2e_scenario(bool exactly_once)
{
    const char *mode = exactly_once ? "exactly-once" : "at-least-once";
    e2e_run r;
    e2e_setup(&r, exactly_once);
    fprintf(stderr, "e2e[%s]: seed %u, files in %s\n", mode, r.seed, r.dir);
    long long t0 = tb_itest_now_ms();

    r.wl = tb_test_fork();
    cr_assert_geq(r.wl, 0);
    if (r.wl == 0) {
        char stats[400];
        snprintf(stats, sizeof stats, "%s/workload.txt", r.dir);
        workload(r.db, r.seed + 1, stats);
        _exit(0);
    }
    e2e_track(r.wl);
    e2e_start_connector(&r);

    /* (a) SIGKILL at random moments, restart each time */
    for (int i = 0; i < E2E_KILLS; i++) {
        e2e_sleep_ms(200 + rand() % 1600);
        e2e_check_connector(&r);
        kill(r.connector, SIGKILL);
        cr_assert_eq(e2e_wait(r.connector, 10000), -1, "the connector did not die of SIGKILL");
        r.kills++;
        e2e_start_connector(&r);
    }
    e2e_sleep_ms(2000);

    /* (b) Kafka stopped and started mid-stream */
    e2e_wait_streaming(&r);
    tb_itest_testenv("stop-kafka");
    e2e_sleep_ms(2000);
    tb_itest_testenv("start-kafka");
    e2e_sleep_ms(3000);

    /* (c) MariaDB restarted mid-stream */
    e2e_wait_streaming(&r);
    tb_itest_testenv("stop-mysql");
    e2e_sleep_ms(1000);
    tb_itest_testenv("start-mysql");
    e2e_sleep_ms(3000);

    unsigned long long txs = e2e_stop_workload(&r);
    e2e_wait_caught_up(&r);
    kill(r.connector, SIGTERM);
    int rc = e2e_wait(r.connector, 90000);
    cr_assert_eq(rc, 0, "tributary run did not stop cleanly on SIGTERM (status %d); see %s", rc, r.log);

    /* rebuild the cache from the topics, compare with the source */
    const char *cargs[] = {"cache", "--config", r.cfg, "--until-caught-up", NULL};
    char clog[400];
    snprintf(clog, sizeof clog, "%s/cache.log", r.dir);
    pid_t cp = e2e_spawn(cargs, clog);
    rc = e2e_wait(cp, 120000);
    cr_assert_eq(rc, 0, "tributary cache --until-caught-up failed (status %d); see %s", rc, clog);
    e2e_assert_clean_log(r.log);
    e2e_assert_clean_log(clog);

    MYSQL *m = e2e_mysql();
    size_t rows = 0;
    for (int t = 0; t < 2; t++) {
        char q[256], table[128];
        snprintf(q, sizeof q, "SELECT id, v, s FROM %s.%c ORDER BY id", r.db, "ab"[t]);
        snprintf(table, sizeof table, "%s.%c", r.db, "ab"[t]);
        tb_buf src, got;
        tb_buf_init(&src, 0);
        tb_buf_init(&got, 0);
        e2e_query_text(m, q, &src);
        e2e_cache_text(r.cache, table, &got);
        tb_buf_putc(&src, '\0');
        src.len--;
        tb_buf_putc(&got, '\0');
        got.len--;
        fprintf(stderr, "e2e[%s]: %s: source %zu rows digest %016llx, cache %zu rows digest %016llx\n", mode, table,
                e2e_lines(&src), (unsigned long long)e2e_fnv(&src), e2e_lines(&got),
                (unsigned long long)e2e_fnv(&got));
        if (strcmp(tb_buf_cstr(&src), tb_buf_cstr(&got)) != 0) {
            const char *a = tb_buf_cstr(&src), *b = tb_buf_cstr(&got);
            size_t i = 0;
            while (a[i] && a[i] == b[i])
                i++;
            while (i > 0 && a[i - 1] != '\n')
                i--;
            cr_assert_fail("%s: the cache differs from the source from here:\nsource: %.120s\ncache:  %.120s", table,
                           a + i, b + i);
        }
        rows += e2e_lines(&src);
        tb_buf_free(&src);
        tb_buf_free(&got);
    }
    mysql_close(m);

    char ta[256], tbn[256];
    snprintf(ta, sizeof ta, "%s.%s.a", r.db, r.db);
    snprintf(tbn, sizeof tbn, "%s.%s.b", r.db, r.db);
    const char *topics[] = {ta, tbn, NULL};
    e2e_counts c = e2e_count_changes(getenv("TRIBUTARY_TEST_KAFKA"), topics);
    fprintf(stderr,
            "e2e[%s]: RESULT kills=%d kafka_restarts=1 mariadb_restarts=1 connector_exits_by_itself=%d "
            "workload_transactions=%llu change_events=%llu duplicates=%llu snapshot_reads=%llu rows_compared=%zu "
            "seconds=%.1f\n",
            mode, r.kills, r.own_exits, txs, (unsigned long long)c.changes, (unsigned long long)c.duplicates,
            (unsigned long long)c.snapshot, rows, (double)(tb_itest_now_ms() - t0) / 1000.0);
    cr_assert_gt(c.changes, 1000, "too few change events (%llu): the workload did not run", (unsigned long long)c.changes);
    cr_assert_eq(r.kills, E2E_KILLS);
    if (exactly_once)
        cr_assert_eq(c.duplicates, 0, "exactly_once: %llu duplicate change events seen by a read_committed consumer",
                     (unsigned long long)c.duplicates);
    cr_assert_eq(r.own_exits, 0, "the connector stopped by itself %d times (see %s)", r.own_exits, r.log);
    e2e_rmtree(r.dir);
}

TestSuite(e2e, .init = tb_itest_restore_servers);

Test(e2e, faults_at_least_once, .timeout = 400, .fini = e2e_fini_servers)
{
    e2e_scenario(false);
}

Test(e2e, faults_exactly_once, .timeout = 400, .fini = e2e_fini_servers)
{
    e2e_scenario(true);
}
