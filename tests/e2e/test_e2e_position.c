/*
 * End-to-end position tests of `tributary run`, with the built
 * binary against the testenv MariaDB, sink=stdout and offsets.storage=file
 * (no Kafka needed):
 *   - idle: transactions on tables the connector does not capture still move
 *     its committed position up to the server's @@gtid_binlog_pos;
 *   - purged: after the binlog holding the stored position is purged,
 *     snapshot.mode=initial stops with exit 1 and a message that says what
 *     happened and what to do; snapshot.mode=when_needed snapshots again and
 *     streams on;
 *   - a stop while the source is idle returns promptly.
 */
#include <sys/stat.h>

#include "e2e_util.h"

typedef struct pos_env {
    char db[96];
    char dir[256];
    char cfg[320];
    char log[320];
    char status[320];
    char offsets[320];
} pos_env;

static void pos_setup(pos_env *e, const char *prefix)
{
    memset(e, 0, sizeof(*e));
    tb_itest_unique(e->db, sizeof e->db, prefix);
    snprintf(e->dir, sizeof e->dir, "/tmp/%s", e->db);
    cr_assert_eq(mkdir(e->dir, 0700), 0, "mkdir %s: %s", e->dir, strerror(errno));
    snprintf(e->cfg, sizeof e->cfg, "%s/run.properties", e->dir);
    snprintf(e->log, sizeof e->log, "%s/run.log", e->dir);
    snprintf(e->status, sizeof e->status, "%s/status.json", e->dir);
    snprintf(e->offsets, sizeof e->offsets, "%s/offsets.txt", e->dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e->db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL)", e->db);
    e2e_sql(m, "CREATE TABLE %s.other (id INT PRIMARY KEY, v INT NOT NULL)", e->db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1, 1), (2, 2), (3, 3)", e->db);
    mysql_close(m);
    FILE *f = fopen(e->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\nsource.heartbeat.interval.ms=500\nheartbeat.interval.ms=500\ntables.include=%s[.]t\ntopic.prefix=%s\n"
            "sink=stdout\noffsets.storage=file\noffsets.file=%s\noffsets.commit.interval.ms=200\n"
            "status.file=%s\nsnapshot.mode=initial\n",
            e->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            6000 + (unsigned)getpid() % 1000, e->db, e->db, e->offsets, e->status);
    fclose(f);
}

/* Poll the status file until the committed GTID equals the server's. */
static void wait_gtid(const pos_env *e, pid_t pid, long long ms)
{
    char want[256], got[256] = "";
    e2e_server_gtid(NULL, want, sizeof want);
    long long deadline = tb_itest_now_ms() + ms;
    while (!(e2e_status_gtid(e->status, got, sizeof got) && strcmp(got, want) == 0)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e->log);
        cr_assert(tb_itest_now_ms() < deadline, "committed GTID %s did not reach the server's %s in %lld ms; see %s",
                  got, want, ms, e->log);
        usleep(50000);
    }
}

static void stop(pid_t pid, const char *log)
{
    kill(pid, SIGTERM);
    int rc = e2e_wait(pid, 30000);
    cr_assert_eq(rc, 0, "tributary run did not stop cleanly (status %d); see %s", rc, log);
    e2e_assert_clean_log(log);
}

/* Occurrences of needle in the file at path. */
static size_t count_in(const char *path, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(path, &b), "%s", path);
    size_t n = 0;
    for (const char *p = tb_buf_cstr(&b); (p = strstr(p, needle)); p += strlen(needle))
        n++;
    tb_buf_free(&b);
    return n;
}

Test(e2e_position, idle_tables_advance_the_position, .timeout = 120, .fini = e2e_kill_children)
{
    pos_env e;
    pos_setup(&e, "e2eidle");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_gtid(&e, pid, 30000);
    /* only tables the connector does not capture change now */
    MYSQL *m = e2e_mysql();
    for (int i = 1; i <= 20; i++)
        e2e_sql(m, "INSERT INTO %s.other VALUES (%d, %d)", e.db, i, i);
    mysql_close(m);
    long long t0 = tb_itest_now_ms();
    wait_gtid(&e, pid, 20000);
    fprintf(stderr, "e2e_position: idle connector committed the server's GTID %lld ms after the last write\n",
            tb_itest_now_ms() - t0);
    stop(pid, e.log);
    /* the stored position is the same one */
    char got[256], want[256];
    e2e_server_gtid(NULL, want, sizeof want);
    cr_assert(e2e_status_gtid(e.status, got, sizeof got));
    cr_assert_str_eq(got, want);
    cr_assert_eq(count_in(e.log, "\"table\":\"other\""), 0, "events of an excluded table were sent");
    e2e_rmtree(e.dir);
}

/* A stop while the source is idle is prompt, whatever the server's heartbeat
 * period (60 s here): the thread blocked reading the replication connection
 * is woken, and the loop kept serving the sink meanwhile. */
Test(e2e_position, stop_while_idle_is_prompt, .timeout = 120, .fini = e2e_kill_children)
{
    pos_env e;
    pos_setup(&e, "e2estop");
    const char *args[] = {"run", "--config", e.cfg, "--set", "source.heartbeat.interval.ms=60000", NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_gtid(&e, pid, 30000);
    long long t0 = tb_itest_now_ms();
    kill(pid, SIGTERM);
    int rc = e2e_wait(pid, 30000);
    long long took = tb_itest_now_ms() - t0;
    cr_assert_eq(rc, 0, "tributary run did not stop cleanly (status %d); see %s", rc, e.log);
    /* waiting for the next packet would take up to the 60 s heartbeat: 15 s tells the two apart
     * on a loaded machine */
    cr_assert_lt(took, 15000, "an idle connector took %lld ms to stop; see %s", took, e.log);
    fprintf(stderr, "e2e_position: idle connector stopped %lld ms after SIGTERM\n", took);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* Wall-clock ms, the clock of the status file's updated_ms. */
static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The status file's updated_ms, or 0. */
static long long status_updated_ms(const char *path)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    long long v = 0;
    if (e2e_slurp(path, &b) && b.len > 0) { /* replaced by rename: a whole JSON text */
        json_t *j = jo_parse(b.data, b.len), *u = json_object_get(j, "updated_ms");
        cr_assert(json_is_integer(u), "%s: no updated_ms: %s", path, tb_buf_cstr(&b));
        v = json_integer_value(u);
        json_decref(j);
    }
    tb_buf_free(&b);
    return v;
}

/* A restart that sees no new transaction commits the position it resumed from, not the
 * dump's artificial ROTATE (the file at offset 4). */
Test(e2e_position, restart_without_transactions_keeps_the_position, .timeout = 120, .fini = e2e_kill_children)
{
    pos_env e;
    pos_setup(&e, "e2erest");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    long long t_start = wall_ms();
    pid_t pid = e2e_spawn(args, e.log);
    wait_gtid(&e, pid, 30000);
    while (status_updated_ms(e.status) < t_start + 1500) { /* streaming for a while: idle commits done */
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e.log);
        cr_assert(wall_ms() < t_start + 30000, "no status update; see %s", e.log);
        usleep(50000);
    }
    stop(pid, e.log);
    tb_buf first, again;
    tb_buf_init(&first, 0);
    tb_buf_init(&again, 0);
    cr_assert(e2e_slurp(e.offsets, &first) && first.len > 0, "no offsets file %s", e.offsets);
    cr_assert_null(strstr(tb_buf_cstr(&first), ";pos=4;"), "first run committed %s", tb_buf_cstr(&first));
    long long t0 = wall_ms();
    pid = e2e_spawn(args, e.log);
    /* idle: heartbeats commit the position every heartbeat.interval.ms (500); wait for a
     * status written well after that */
    long long deadline = t0 + 30000;
    while (status_updated_ms(e.status) < t0 + 2000) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e.log);
        cr_assert(wall_ms() < deadline, "no status update; see %s", e.log);
        usleep(50000);
    }
    stop(pid, e.log);
    cr_assert(e2e_slurp(e.offsets, &again));
    cr_assert_str_eq(tb_buf_cstr(&again), tb_buf_cstr(&first), "restart without transactions moved the position");
    tb_buf_free(&first);
    tb_buf_free(&again);
    e2e_rmtree(e.dir);
}

Test(e2e_position, purged_binlog, .timeout = 180, .fini = e2e_kill_children)
{
    pos_env e;
    pos_setup(&e, "e2epurge");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_gtid(&e, pid, 30000);
    stop(pid, e.log);
    size_t snap1 = count_in(e.log, "\"op\":\"r\"");
    cr_assert_eq(snap1, 3, "first snapshot: %zu rows", snap1);

    /* changes the connector misses, then the binlog holding them is purged */
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "INSERT INTO %s.t VALUES (4, 4)", e.db);
    e2e_sql(m, "FLUSH BINARY LOGS");
    e2e_sql(m, "INSERT INTO %s.t VALUES (5, 5)", e.db);
    e2e_sql(m, "FLUSH BINARY LOGS");
    /* PURGE skips a file a replication thread still reads (the stopped
     * connector's dump thread may take a moment to end): poll until the
     * oldest binlog is the current one. */
    long long deadline = tb_itest_now_ms() + 30000;
    for (;;) {
        tb_buf cur, logs;
        tb_buf_init(&cur, 0);
        tb_buf_init(&logs, 0);
        e2e_query_text(m, "SHOW MASTER STATUS", &cur);
        char *bar = strchr((char *)cur.data, '|');
        cr_assert_not_null(bar);
        *bar = '\0';
        e2e_sql(m, "PURGE BINARY LOGS TO '%s'", tb_buf_cstr(&cur));
        e2e_query_text(m, "SHOW BINARY LOGS", &logs);
        bool done = strncmp(tb_buf_cstr(&logs), tb_buf_cstr(&cur), strlen(tb_buf_cstr(&cur))) == 0;
        cr_assert(done || tb_itest_now_ms() < deadline, "binlogs not purged in 30 s:\n%s", tb_buf_cstr(&logs));
        tb_buf_free(&cur);
        tb_buf_free(&logs);
        if (done)
            break;
        usleep(200000);
    }
    mysql_close(m);

    /* snapshot.mode=initial: stop, saying what happened and what to do */
    char elog[400];
    snprintf(elog, sizeof elog, "%s/initial.log", e.dir);
    pid = e2e_spawn(args, elog);
    int rc = e2e_wait(pid, 60000);
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(elog, &b);
    cr_assert_eq(rc, 1, "exit status %d, want 1; log:\n%s", rc, tb_buf_cstr(&b));
    cr_assert(strstr(tb_buf_cstr(&b), "no longer in the server's binlog"), "no explanation:\n%s", tb_buf_cstr(&b));
    cr_assert(strstr(tb_buf_cstr(&b), "snapshot.mode=when_needed"), "no advice:\n%s", tb_buf_cstr(&b));
    fprintf(stderr, "e2e_position: snapshot.mode=initial after a purge says:\n%s", tb_buf_cstr(&b));
    tb_buf_free(&b);

    /* snapshot.mode=when_needed: snapshot again (5 rows), then stream */
    char wlog[400];
    snprintf(wlog, sizeof wlog, "%s/when_needed.log", e.dir);
    const char *wargs[] = {"run", "--config", e.cfg, "--set", "snapshot.mode=when_needed", NULL};
    pid = e2e_spawn(wargs, wlog);
    wait_gtid(&e, pid, 30000);
    m = e2e_mysql();
    e2e_sql(m, "INSERT INTO %s.t VALUES (6, 6)", e.db);
    mysql_close(m);
    wait_gtid(&e, pid, 30000);
    stop(pid, wlog);
    size_t snap2 = count_in(wlog, "\"op\":\"r\"");
    cr_assert_eq(snap2, 5, "second snapshot: %zu rows, want 5 (ids 1-5)", snap2);
    cr_assert_eq(count_in(wlog, "\"op\":\"c\""), 1, "the insert after the new snapshot was not streamed");
    cr_assert_geq(count_in(wlog, "snapshotting again"), 1, "no warning about the new snapshot");
    e2e_rmtree(e.dir);
}

/* `tributary snapshot --incremental` signals a running `tributary run`,
 * which snapshots the table in chunks while streaming (docs/snapshot.md). */
Test(e2e_position, incremental_snapshot_through_run, .timeout = 120, .fini = e2e_kill_children)
{
    pos_env e;
    pos_setup(&e, "e2einc");
    MYSQL *m = e2e_mysql();
    for (int i = 10; i < 260; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, %d)", e.db, i, i);
    mysql_close(m);
    const char *args[] = {"run", "--config", e.cfg, "--set", "snapshot.mode=never", "--set",
                          "snapshot.chunk.size=100", NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_gtid(&e, pid, 30000);
    char slog[400];
    snprintf(slog, sizeof slog, "%s/signal.log", e.dir);
    char table[128];
    snprintf(table, sizeof table, "%s.t", e.db);
    const char *sargs[] = {"snapshot", "--incremental", "--table", table, "--config", e.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(sargs, slog), 30000);
    cr_assert_eq(rc, 0, "tributary snapshot --incremental failed (%d); see %s", rc, slog);
    long long deadline = tb_itest_now_ms() + 60000;
    size_t rows = 0;
    while ((rows = count_in(e.log, "\"op\":\"r\"")) < 253) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "%zu of 253 rows snapshotted in 60 s; see %s", rows, e.log);
        usleep(100000);
    }
    wait_gtid(&e, pid, 30000);
    stop(pid, e.log);
    cr_assert_eq(count_in(e.log, "\"op\":\"r\""), 253, "rows read twice or more");
    cr_assert_eq(count_in(e.log, "\"snapshot\":\"last\""), 1);
    e2e_rmtree(e.dir);
}
