/*
 * Honest status and health (docs/DESIGN.md 10, `tributary status`): the
 * built binary against the testenv MariaDB and Kafka.
 *
 *   - the status file lands next to the configuration (relative default
 *     paths follow the configuration file, not the working directory);
 *   - `tributary status` exits 0 while streaming; MariaDB stopped: the state
 *     turns "reconnecting" with a growing lag and the exit code 1 within
 *     30 s; MariaDB started again: 0 within 60 s, and the rows written
 *     meanwhile are streamed;
 *   - a second SIGTERM during a flush that cannot finish (Kafka stopped)
 *     leaves state "failed" behind (exit 1), never "streaming";
 *   - SIGKILL: exit 3 (not running).
 */
#include <sys/stat.h>

#include "e2e_util.h"

typedef struct hctx {
    char db[96], dir[128], cfgp[320], log[320], status[320];
    pid_t pid;
    MYSQL *m;
} hctx;

/* `tributary status --config cfgp`: its exit code; its stdout into out (may be NULL). */
static int status_exit(hctx *h, tb_buf *out)
{
    char outp[400];
    snprintf(outp, sizeof outp, "%s/status.out", h->dir);
    unlink(outp);
    const char *args[] = {"status", "--config", h->cfgp, NULL};
    pid_t p = e2e_spawn(args, outp);
    int rc = e2e_wait(p, 30000);
    cr_assert_geq(rc, 0, "tributary status did not finish");
    if (out)
        e2e_slurp(outp, out);
    return rc;
}

/* Poll `tributary status` until it exits with want, at most ms. */
static void wait_status_exit(hctx *h, int want, long long ms, const char *what)
{
    long long deadline = tb_itest_now_ms() + ms;
    tb_buf out;
    tb_buf_init(&out, 0);
    int rc;
    while ((rc = status_exit(h, &out)) != want) {
        cr_assert(tb_itest_now_ms() < deadline, "%s: tributary status exits %d, want %d after %lld ms:\n%s", what, rc,
                  want, ms, tb_buf_cstr(&out));
        usleep(200000);
    }
    tb_buf_free(&out);
}

/* A number member of the status file ("lag_ms"), -1 when absent or null. */
static long long status_num(hctx *h, const char *key)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    long long v = -1;
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    if (e2e_slurp(h->status, &b)) {
        const char *p = strstr(tb_buf_cstr(&b), pat);
        if (p && p[strlen(pat)] != 'n')
            v = atoll(p + strlen(pat));
    }
    tb_buf_free(&b);
    return v;
}

static bool status_has(hctx *h, const char *text)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = e2e_slurp(h->status, &b) && strstr(tb_buf_cstr(&b), text);
    tb_buf_free(&b);
    return ok;
}

static void start_run(hctx *h)
{
    const char *args[] = {"run", "--config", h->cfgp, NULL};
    h->pid = e2e_spawn(args, h->log);
}

/* Until the connector has streamed every row of t (events_total counts them). */
static void wait_events(hctx *h, long long want)
{
    long long deadline = tb_itest_now_ms() + 60000;
    while (status_num(h, "events_total") < want) {
        cr_assert_eq(e2e_wait(h->pid, 0), -2, "tributary run stopped early; see %s", h->log);
        cr_assert(tb_itest_now_ms() < deadline, "events_total %lld, want %lld; see %s", status_num(h, "events_total"),
                  want, h->log);
        usleep(100000);
    }
}

static void setup(hctx *h, const char *prefix)
{
    memset(h, 0, sizeof *h);
    tb_itest_unique(h->db, sizeof h->db, prefix);
    snprintf(h->dir, sizeof h->dir, "/tmp/e2e_%s", h->db);
    cr_assert_eq(mkdir(h->dir, 0700), 0);
    snprintf(h->cfgp, sizeof h->cfgp, "%s/run.properties", h->dir);
    snprintf(h->log, sizeof h->log, "%s/run.log", h->dir);
    /* no status.file, no offsets.file: the default lands next to run.properties */
    snprintf(h->status, sizeof h->status, "%s/%s.status.json", h->dir, h->db);
    h->m = e2e_mysql();
    e2e_sql(h->m, "CREATE DATABASE %s", h->db);
    e2e_sql(h->m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)", h->db);
    e2e_sql(h->m, "INSERT INTO %s.t VALUES (1, 1), (2, 2)", h->db);
    FILE *f = fopen(h->cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=%s[.]t\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=kafka\noffsets.commit.interval.ms=200\nsnapshot.mode=initial\n"
            "heartbeat.interval.ms=200\nsource.reconnect.backoff.max.ms=1000\nsource.connect.timeout.ms=2000\n",
            h->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            7000 + (unsigned)getpid() % 1000, h->db, h->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"));
    fclose(f);
}

Test(e2e_health, status_follows_the_source_and_the_process, .timeout = 400, .fini = e2e_kill_children)
{
    hctx h;
    setup(&h, "e2ehs");
    cr_assert_eq(status_exit(&h, NULL), 3, "never started: not running");
    start_run(&h);
    wait_events(&h, 2); /* the snapshot's two rows */
    wait_status_exit(&h, 0, 30000, "streaming");
    cr_assert(status_has(&h, "\"state\":\"streaming\""));

    /* MariaDB down: reconnecting, unhealthy, the lag grows */
    mysql_close(h.m);
    tb_itest_testenv("stop-mysql");
    long long t0 = tb_itest_now_ms();
    wait_status_exit(&h, 1, 30000, "source down");
    fprintf(stderr, "e2e_health: unhealthy %lld ms after MariaDB stopped\n", tb_itest_now_ms() - t0);
    cr_assert(status_has(&h, "\"state\":\"reconnecting\""));
    cr_assert(!status_has(&h, "\"source_down_since_ms\":null"));
    long long lag1 = status_num(&h, "lag_ms");
    usleep(2500000); /* let the lag grow: the status file is rewritten every second */
    long long lag2 = status_num(&h, "lag_ms");
    cr_assert(lag1 >= 0 && lag2 >= lag1 + 1000, "lag while the source is down: %lld then %lld", lag1, lag2);

    /* MariaDB back: healthy again, and what was written meanwhile arrives */
    tb_itest_testenv("start-mysql");
    t0 = tb_itest_now_ms();
    wait_status_exit(&h, 0, 60000, "source back");
    fprintf(stderr, "e2e_health: healthy %lld ms after MariaDB started\n", tb_itest_now_ms() - t0);
    h.m = e2e_mysql();
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (3, 3)", h.db);
    wait_events(&h, 3);
    cr_assert(status_has(&h, "\"source_down_since_ms\":null"));

    /* SIGKILL: the file still says streaming, but the process is gone */
    kill(h.pid, SIGKILL);
    cr_assert_eq(e2e_wait(h.pid, 10000), -1);
    cr_assert(status_has(&h, "\"state\":\"streaming\""));
    cr_assert_eq(status_exit(&h, NULL), 3, "killed: not running");

    /* clean stop: "stopped", exit 3 */
    start_run(&h);
    wait_status_exit(&h, 0, 30000, "restarted");
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 30000), 0, "see %s", h.log);
    cr_assert(status_has(&h, "\"state\":\"stopped\""));
    cr_assert_eq(status_exit(&h, NULL), 3, "stopped: not running");
    e2e_assert_clean_log(h.log);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}

Test(e2e_health, second_signal_leaves_failed, .timeout = 300, .fini = e2e_kill_children)
{
    hctx h;
    setup(&h, "e2ehk");
    start_run(&h);
    wait_events(&h, 2);
    /* Kafka down, a row in flight: the clean stop waits in its flush */
    tb_itest_testenv("stop-kafka");
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (3, 3)", h.db);
    long long deadline = tb_itest_now_ms() + 30000;
    while (status_num(&h, "events_behind") < 1) {
        cr_assert(tb_itest_now_ms() < deadline, "the row never went in flight; see %s", h.log);
        usleep(100000);
    }
    kill(h.pid, SIGTERM);
    deadline = tb_itest_now_ms() + 10000;
    while (!status_has(&h, "\"state\":\"stopping\"")) {
        cr_assert(tb_itest_now_ms() < deadline, "no stopping state; see %s", h.log);
        usleep(50000);
    }
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 10000), -1, "the second SIGTERM ends the process by the signal");
    tb_itest_testenv("start-kafka");
    cr_assert(status_has(&h, "\"state\":\"failed\""), "see %s", h.status);
    cr_assert(status_has(&h, "second SIGINT/SIGTERM"));
    cr_assert_eq(status_exit(&h, NULL), 1, "failed");
    e2e_assert_clean_log(h.log);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}
