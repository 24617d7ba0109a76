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
#include <ctype.h>
#include <sqlite3.h>
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
    if (e2e_slurp(h->status, &b) && b.len > 0) { /* replaced by rename: a whole JSON text */
        json_t *j = jo_parse(b.data, b.len), *n = json_object_get(j, key);
        if (json_is_integer(n))
            v = json_integer_value(n);
        json_decref(j);
    }
    tb_buf_free(&b);
    return v;
}

/* Whether the status file's member `key` equals the JSON `expected` (Jansson). */
static bool status_at(hctx *h, const char *key, const char *expected)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = false;
    if (e2e_slurp(h->status, &b) && b.len > 0) { /* replaced by rename: a whole JSON text */
        json_t *j = jo_parse(b.data, b.len);
        ok = jo_equal_at(j, JO_PATH(key), expected);
        json_decref(j);
    }
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

TestSuite(e2e_health, .init = tb_itest_restore_servers);

Test(e2e_health, status_follows_the_source_and_the_process, .timeout = 400, .fini = e2e_fini_servers)
{
    hctx h;
    setup(&h, "e2ehs");
    cr_assert_eq(status_exit(&h, NULL), 3, "never started: not running");
    start_run(&h);
    wait_events(&h, 2); /* the snapshot's two rows */
    wait_status_exit(&h, 0, 30000, "streaming");
    cr_assert(status_at(&h, "state", "\"streaming\""));

    /* MariaDB down: reconnecting, unhealthy, the lag grows */
    mysql_close(h.m);
    tb_itest_testenv("stop-mysql");
    long long t0 = tb_itest_now_ms();
    wait_status_exit(&h, 1, 30000, "source down");
    fprintf(stderr, "e2e_health: unhealthy %lld ms after MariaDB stopped\n", tb_itest_now_ms() - t0);
    cr_assert(status_at(&h, "state", "\"reconnecting\""));
    cr_assert(!status_at(&h, "source_down_since_ms", "null"));
    /* the lag grows while the source is down (the status file is rewritten every second): wait
     * for it to grow by a second, with a deadline a loaded machine meets */
    long long lag1 = status_num(&h, "lag_ms"), lag2 = lag1;
    cr_assert_geq(lag1, 0, "lag while the source is down: %lld", lag1);
    long long deadline = tb_itest_now_ms() + 30000;
    while ((lag2 = status_num(&h, "lag_ms")) < lag1 + 1000) {
        cr_assert(tb_itest_now_ms() < deadline, "the lag did not grow by 1000 ms in 30 s while the source is down: "
                  "%lld then %lld; see %s", lag1, lag2, h.status);
        usleep(200000);
    }

    /* MariaDB back: healthy again, and what was written meanwhile arrives */
    tb_itest_testenv("start-mysql");
    t0 = tb_itest_now_ms();
    wait_status_exit(&h, 0, 60000, "source back");
    fprintf(stderr, "e2e_health: healthy %lld ms after MariaDB started\n", tb_itest_now_ms() - t0);
    h.m = e2e_mysql();
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (3, 3)", h.db);
    wait_events(&h, 3);
    cr_assert(status_at(&h, "source_down_since_ms", "null"));

    /* SIGKILL: the file still says streaming, but the process is gone */
    kill(h.pid, SIGKILL);
    cr_assert_eq(e2e_wait(h.pid, 10000), -1);
    cr_assert(status_at(&h, "state", "\"streaming\""));
    cr_assert_eq(status_exit(&h, NULL), 3, "killed: not running");

    /* clean stop: "stopped", exit 3 */
    start_run(&h);
    wait_status_exit(&h, 0, 30000, "restarted");
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 30000), 0, "see %s", h.log);
    cr_assert(status_at(&h, "state", "\"stopped\""));
    cr_assert_eq(status_exit(&h, NULL), 3, "stopped: not running");
    e2e_assert_clean_log(h.log);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}


Test(e2e_health, second_signal_leaves_failed, .timeout = 300, .fini = e2e_fini_servers)
{
    hctx h;
    setup(&h, "e2ehk");
    /* Without the lease: once Kafka is down the lease expires S - 2H (4 s) after its last
     * renewal and from then on nothing is handed to the producer, so the row inserted after
     * stop-kafka went in flight only when the stop took less than that (under load it did not). */
    FILE *f = fopen(h.cfgp, "a");
    cr_assert_not_null(f);
    fputs("ha.enabled=false\n", f);
    fclose(f);
    start_run(&h);
    wait_events(&h, 2);
    /* Nothing in flight before Kafka stops: whatever is in flight afterwards was produced after it
     * stopped and cannot be acknowledged, so the clean stop must wait in its flush. */
    long long deadline0 = tb_itest_now_ms() + 30000;
    while (status_num(&h, "events_behind") != 0) {
        cr_assert(tb_itest_now_ms() < deadline0, "messages still in flight; see %s", h.log);
        usleep(100000);
    }
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
    while (!status_at(&h, "state", "\"stopping\"")) {
        cr_assert(tb_itest_now_ms() < deadline, "no stopping state; see %s", h.log);
        usleep(50000);
    }
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 10000), -1, "the second SIGTERM ends the process by the signal");
    tb_itest_testenv("start-kafka");
    cr_assert(status_at(&h, "state", "\"failed\""), "see %s", h.status);
    tb_buf st;
    tb_buf_init(&st, 0);
    cr_assert(e2e_slurp(h.status, &st));
    json_t *sj = jo_parse(st.data, st.len);
    const char *why = json_string_value(json_object_get(sj, "error"));
    cr_assert(why && strncmp(why, "ended by a second SIGINT/SIGTERM", 32) == 0, "error: %s", why ? why : "(none)");
    json_decref(sj);
    tb_buf_free(&st);
    cr_assert_eq(status_exit(&h, NULL), 1, "failed");
    e2e_assert_clean_log(h.log);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}

/* ------------------------------------------------------------ metrics.listen */

static void wait_health(unsigned port, int want, long long ms, const char *what, tb_buf *body)
{
    long long deadline = tb_itest_now_ms() + ms;
    int st;
    while ((st = e2e_http_get(port, "/health", body)) != want) {
        cr_assert(tb_itest_now_ms() < deadline, "%s: /health is %d, want %d after %lld ms: %s", what, st, want, ms,
                  tb_buf_cstr(body));
        usleep(200000);
    }
}

/* Whether a /health body (JSON) has a reason that starts with `prefix`. */
static bool health_reason_is(const tb_buf *body, const char *prefix)
{
    json_t *v = jo_parse(body->data, body->len);
    const char *r = json_string_value(json_object_get(v, "reason"));
    bool yes = r && strncmp(r, prefix, strlen(prefix)) == 0;
    json_decref(v);
    return yes;
}

/* The value of the sample whose line starts with prefix (name{labels}), -1 when absent. */
static double sample_value(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            const char *sp = strchr(p, ' '); /* label values here hold no spaces */
            return sp ? atof(sp + 1) : -1;
        }
    return -1;
}

/* information_schema.TABLES.TABLE_ROWS of db.t (-1 when NULL). */
static long long table_rows(MYSQL *m, const char *db)
{
    char q[300];
    tb_buf out;
    tb_buf_init(&out, 0);
    snprintf(q, sizeof q, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = 't'",
             db);
    e2e_query_text(m, q, &out);
    long long v = out.len && isdigit((unsigned char)out.data[0]) ? atoll(tb_buf_cstr(&out)) : -1;
    tb_buf_free(&out);
    return v;
}

/* Spawn a program (not tributary) with output to log; tracked for e2e_kill_children. */
static pid_t spawn_prog(char *const argv[], const char *log)
{
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    e2e_track(pid);
    return pid;
}

Test(e2e_health, metrics_health_and_prometheus, .timeout = 500, .fini = e2e_fini_servers)
{
    hctx h;
    setup(&h, "e2ehm");
    unsigned port = e2e_free_port();
    FILE *f = fopen(h.cfgp, "a");
    cr_assert_not_null(f);
    fprintf(f, "metrics.listen=127.0.0.1:%u\n", port); /* librdkafka statistics: on by default */
    fclose(f);
    long long est_before = table_rows(h.m, h.db);
    start_run(&h);
    tb_buf body;
    tb_buf_init(&body, 0);
    wait_health(port, 200, 30000, "started", &body);
    cr_assert(jo_expect_text_at(body.data, body.len, JO_PATH("status"), "\"ok\""));
    for (int i = 10; i < 60; i++)
        e2e_sql(h.m, "INSERT INTO %s.t VALUES (%d, %d)", h.db, i, i);
    e2e_sql(h.m, "UPDATE %s.t SET v = v + 1 WHERE id < 20", h.db); /* 2 + 10 rows */
    e2e_sql(h.m, "DELETE FROM %s.t WHERE id >= 50", h.db);          /* 10 rows */

    /* /metrics counts what was streamed, by table and op */
    char pc[256], pu[256], pd[256], pr[256];
    snprintf(pc, sizeof pc, "tributary_events_total{connector=\"%s\",table=\"%s.t\",op=\"c\"}", h.db, h.db);
    snprintf(pu, sizeof pu, "tributary_events_total{connector=\"%s\",table=\"%s.t\",op=\"u\"}", h.db, h.db);
    snprintf(pd, sizeof pd, "tributary_events_total{connector=\"%s\",table=\"%s.t\",op=\"d\"}", h.db, h.db);
    snprintf(pr, sizeof pr, "tributary_snapshot_rows_total{connector=\"%s\",table=\"%s.t\"}", h.db, h.db);
    long long deadline = tb_itest_now_ms() + 60000;
    for (;;) {
        cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
        const char *t = tb_buf_cstr(&body);
        if (sample_value(t, pc) == 50 && sample_value(t, pu) == 12 && sample_value(t, pd) == 10)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "events never counted:\n%s", t);
        usleep(200000);
    }
    cr_assert_eq(sample_value(tb_buf_cstr(&body), pr), 2, "%s", tb_buf_cstr(&body));
    /* the snapshot's estimate is information_schema's TABLE_ROWS (the oracle: the server, asked
     * before the run started and now; nothing changed the table in between) */
    char pe[256];
    snprintf(pe, sizeof pe, "tributary_snapshot_rows_estimated{connector=\"%s\",table=\"%s.t\"}", h.db, h.db);
    long long est_now = table_rows(h.m, h.db);
    double est = sample_value(tb_buf_cstr(&body), pe);
    cr_assert(est == (double)est_before || est == (double)est_now, "%s = %g, TABLE_ROWS %lld then %lld", pe, est,
              est_before, est_now);
    /* promtool (Debian's prometheus package) checks the exposition */
    deadline = tb_itest_now_ms() + 30000;
    char mfile[400], cmd[900];
    snprintf(mfile, sizeof mfile, "%s/metrics.txt", h.dir);
    for (;;) { /* wait for librdkafka's statistics (every second) */
        cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
        if (sample_value(tb_buf_cstr(&body), "tributary_kafka_broker_up{") >= 0)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "no tributary_kafka_* series:\n%s", tb_buf_cstr(&body));
        usleep(200000);
    }
    f = fopen(mfile, "w");
    cr_assert_not_null(f);
    fwrite(body.data, 1, body.len, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s' >&2", mfile);
    cr_assert_eq(system(cmd), 0, "promtool check metrics failed on:\n%s", tb_buf_cstr(&body));
    cr_assert_eq(sample_value(tb_buf_cstr(&body), "tributary_source_connected{"), 1);

    /* a real Prometheus server scrapes the connector every second */
    unsigned pport = e2e_free_port();
    char pcfg[400], pdata[400], plog[400], listen[64];
    snprintf(pcfg, sizeof pcfg, "%s/prometheus.yml", h.dir);
    snprintf(pdata, sizeof pdata, "%s/prometheus-data", h.dir);
    snprintf(plog, sizeof plog, "%s/prometheus.log", h.dir);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%u", pport);
    f = fopen(pcfg, "w");
    cr_assert_not_null(f);
    fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
               "  - job_name: tributary\n    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
            port);
    fclose(f);
    char cfgarg[420], dataarg[420];
    snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", pcfg);
    snprintf(dataarg, sizeof dataarg, "--storage.tsdb.path=%s", pdata);
    char *pargv[] = {"prometheus", cfgarg, dataarg, listen, "--log.level=warn", NULL};
    pid_t prom = spawn_prog(pargv, plog);
    char q[600];
    snprintf(q, sizeof q, "/api/v1/query?query=tributary_events_total%%7Bop%%3D%%22c%%22%%2Cconnector%%3D%%22%s%%22%%7D",
             h.db);
    deadline = tb_itest_now_ms() + 90000;
    for (;;) {
        int st = e2e_http_get(pport, q, &body);
        const char *t = tb_buf_cstr(&body);
        if (st == 200) { /* {"status":"success","data":{"result":[{"metric":{...},"value":[T,"50"]}]}} */
            json_t *v = jo_parse(body.data, body.len);
            json_t *res = jo_get(v, JO_PATH("data", "result"));
            const char *n = json_string_value(json_array_get(jo_get(json_array_get(res, 0), JO_PATH("value")), 1));
            bool ok = jo_equal_at(v, JO_PATH("status"), "\"success\"") && json_array_size(res) == 1 && n &&
                      strcmp(n, "50") == 0;
            json_decref(v);
            if (ok)
                break;
        }
        cr_assert_eq(e2e_wait(prom, 0), -2, "prometheus exited; see %s", plog);
        cr_assert(tb_itest_now_ms() < deadline, "Prometheus never had tributary_events_total: %d %s", st, t);
        usleep(500000);
    }
    fprintf(stderr, "e2e_health: Prometheus answered: %s\n", tb_buf_cstr(&body));
    kill(prom, SIGTERM);
    cr_assert_geq(e2e_wait(prom, 30000), -1);

    /* tributary cache serves its own metrics: caught up, messages applied */
    unsigned cport = e2e_free_port();
    char cset[64], clog[400];
    snprintf(cset, sizeof cset, "metrics.listen=127.0.0.1:%u", cport);
    snprintf(clog, sizeof clog, "%s/cache.log", h.dir);
    const char *cargs[] = {"cache", "--config", h.cfgp, "--set", cset, NULL};
    pid_t cpid = e2e_spawn(cargs, clog);
    deadline = tb_itest_now_ms() + 60000;
    char cprefix[200];
    snprintf(cprefix, sizeof cprefix, "tributary_cache_caught_up{connector=\"%s\"}", h.db);
    for (;;) {
        int st = e2e_http_get(cport, "/metrics", &body);
        if (st == 200 && sample_value(tb_buf_cstr(&body), cprefix) == 1)
            break;
        cr_assert_eq(e2e_wait(cpid, 0), -2, "tributary cache stopped; see %s", clog);
        cr_assert(tb_itest_now_ms() < deadline, "cache never caught up: %d %s", st, tb_buf_cstr(&body));
        usleep(200000);
    }
    cr_assert_geq(sample_value(tb_buf_cstr(&body), "tributary_cache_messages_applied_total{"), 72, "%s",
                  tb_buf_cstr(&body));
    /* caught up: every partition's lag 0, the table topic's and the schema topic's */
    char lt[600], ls[600];
    snprintf(lt, sizeof lt, "tributary_cache_partition_lag_messages{connector=\"%s\",topic=\"%s.%s.t\",partition=\"0\"}",
             h.db, h.db, h.db);
    snprintf(ls, sizeof ls, "tributary_cache_partition_lag_messages{connector=\"%s\",topic=\"%s.schema\",partition=\"0\"}",
             h.db, h.db);
    cr_assert_eq(sample_value(tb_buf_cstr(&body), lt), 0, "%s: %s", lt, tb_buf_cstr(&body));
    cr_assert_eq(sample_value(tb_buf_cstr(&body), ls), 0, "%s: %s", ls, tb_buf_cstr(&body));
    f = fopen(mfile, "w");
    cr_assert_not_null(f);
    fwrite(body.data, 1, body.len, f);
    fclose(f);
    cr_assert_eq(system(cmd), 0, "promtool check metrics failed on:\n%s", tb_buf_cstr(&body));
    long long applied_metric = (long long)sample_value(tb_buf_cstr(&body), "tributary_cache_messages_applied_total{");
    cr_assert_eq(e2e_http_get(cport, "/health", &body), 200, "%s", tb_buf_cstr(&body));
    kill(cpid, SIGTERM);
    cr_assert_eq(e2e_wait(cpid, 30000), 0, "see %s", clog);
    e2e_assert_clean_log(clog);
    /* `cache` and `cache status` count the same messages (schema records included) */
    tb_buf clogt;
    tb_buf_init(&clogt, 0);
    cr_assert(e2e_slurp(clog, &clogt));
    const char *line = strstr(tb_buf_cstr(&clogt), "messages in this run (");
    cr_assert_not_null(line, "%s", tb_buf_cstr(&clogt));
    long long run_applied = -1;
    sscanf(line, "messages in this run (%lld applied", &run_applied);
    char slog[400], dbp[400];
    snprintf(slog, sizeof slog, "%s/cache-status.out", h.dir);
    snprintf(dbp, sizeof dbp, "%s/tributary-cache.db", h.dir); /* cache.path's default, next to the config */
    const char *sargs[] = {"cache", "status", "--db", dbp, NULL};
    cr_assert_eq(e2e_wait(e2e_spawn(sargs, slog), 30000), 0, "see %s", slog);
    tb_buf st;
    tb_buf_init(&st, 0);
    cr_assert(e2e_slurp(slog, &st));
    const char *ma = strstr(tb_buf_cstr(&st), "messages applied: ");
    cr_assert_not_null(ma, "%s", tb_buf_cstr(&st));
    long long status_applied = atoll(ma + strlen("messages applied: "));
    cr_assert_eq(run_applied, status_applied, "cache said %lld applied, cache status %lld:\n%s\n%s", run_applied,
                 status_applied, line, tb_buf_cstr(&st));
    cr_assert_eq(applied_metric, status_applied, "metrics %lld, cache status %lld", applied_metric, status_applied);
    tb_buf_free(&st);
    tb_buf_free(&clogt);

    /* MariaDB down: /health 503 with the reason, tributary_source_connected 0 */
    mysql_close(h.m);
    tb_itest_testenv("stop-mysql");
    long long t0 = tb_itest_now_ms();
    wait_health(port, 503, 30000, "source down", &body);
    while (!health_reason_is(&body, "source down since ")) { /* not another reason first */
        cr_assert(tb_itest_now_ms() < t0 + 30000, "no 'source down' reason: %s", tb_buf_cstr(&body));
        usleep(200000);
        e2e_http_get(port, "/health", &body);
    }
    fprintf(stderr, "e2e_health: /health 503 %lld ms after MariaDB stopped: %s", tb_itest_now_ms() - t0,
            tb_buf_cstr(&body));
    cr_assert(health_reason_is(&body, "source down since "), "%s", tb_buf_cstr(&body));
    cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
    cr_assert_eq(sample_value(tb_buf_cstr(&body), "tributary_source_connected{"), 0, "%s", tb_buf_cstr(&body));
    tb_itest_testenv("start-mysql");
    t0 = tb_itest_now_ms();
    wait_health(port, 200, 60000, "source back", &body);
    fprintf(stderr, "e2e_health: /health 200 %lld ms after MariaDB started\n", tb_itest_now_ms() - t0);
    cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
    cr_assert_eq(sample_value(tb_buf_cstr(&body), "tributary_source_connected{"), 1);
    cr_assert_geq(sample_value(tb_buf_cstr(&body), "tributary_source_reconnects_total{"), 1);
    cr_assert_eq(e2e_http_get(port, "/nope", &body), 404);

    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 30000), 0, "see %s", h.log);
    cr_assert_eq(e2e_http_get(port, "/health", &body), 0, "the endpoint is gone after exit");
    e2e_assert_clean_log(h.log);
    tb_buf_free(&body);
    h.m = NULL;
    e2e_rmtree(h.dir);
}

/* SQLite source, snapshot, metrics.listen: tributary_snapshot_rows_estimated holds each table's
 * row count (counted from its b-tree pages), equal to SELECT count(*) (SQLite itself is the
 * oracle): a rowid table and a WITHOUT ROWID table, both deep enough for interior pages, and an
 * empty one. The snapshot's rows total reaches the same numbers. No Kafka (sink=stdout). */
Test(e2e_health, snapshot_estimates_sqlite, .timeout = 200)
{
    char dir[] = "/tmp/e2e-est-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char dbp[128], cfgp[128], logp[128];
    snprintf(dbp, sizeof dbp, "%s/shop.db", dir);
    snprintf(cfgp, sizeof cfgp, "%s/run.properties", dir);
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(dbp, &db), SQLITE_OK);
    const char *ddl = "PRAGMA journal_mode=WAL;"
                      "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);"
                      "CREATE TABLE b (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;"
                      "CREATE TABLE e (id INTEGER PRIMARY KEY, v TEXT);"
                      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
                      "INSERT INTO a SELECT i, printf('%.*c', 120, 'a') FROM n;"
                      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
                      "INSERT INTO b SELECT printf('key-%06d', i), printf('%.*c', 200, 'b') FROM n;";
    cr_assert_eq(sqlite3_exec(db, ddl, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    long long want[3];
    const char *tables[] = {"a", "b", "e"};
    for (int i = 0; i < 3; i++) {
        char q[64];
        sqlite3_stmt *st;
        snprintf(q, sizeof q, "SELECT count(*) FROM %s", tables[i]);
        cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        want[i] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    cr_assert_eq(want[0], 3000);
    unsigned port = e2e_free_port();
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f, "name=est\ntopic.prefix=est\nsource.type=sqlite\nsource.path=%s\nsink=stdout\noffsets.storage=file\n"
               "offsets.file=%s/offsets\nsnapshot.mode=initial\nmetrics.listen=127.0.0.1:%u\n",
            dbp, dir, port);
    fclose(f);
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = e2e_spawn(args, logp);
    tb_buf body;
    tb_buf_init(&body, 0);
    long long deadline = tb_itest_now_ms() + 60000;
    for (int i = 0; i < 3; i++) {
        char pe[128], pt[128];
        snprintf(pe, sizeof pe, "tributary_snapshot_rows_estimated{connector=\"est\",table=\"shop.%s\"}", tables[i]);
        snprintf(pt, sizeof pt, "tributary_snapshot_rows_total{connector=\"est\",table=\"shop.%s\"}", tables[i]);
        for (;;) {
            int st = e2e_http_get(port, "/metrics", &body);
            const char *t = tb_buf_cstr(&body);
            if (st == 200 && sample_value(t, pe) == (double)want[i] && sample_value(t, pt) == (double)want[i])
                break;
            cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", logp);
            cr_assert(tb_itest_now_ms() < deadline, "%s and %s never %lld:\n%s", pe, pt, want[i], t);
            usleep(100000);
        }
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", logp);
    e2e_assert_clean_log(logp);
    tb_buf_free(&body);
    sqlite3_close(db);
    e2e_rmtree(dir);
}

/* Kafka stopped first: the connector cannot renew its lease and waits, producing nothing, for the
 * group coordinator (run_lease_check_slow). MariaDB stopped meanwhile: /health must still say
 * "source down since" within 15 s, and tributary_source_connected 0 (the wait used to leave the
 * replication connection unread, so the loss went unnoticed and /health went on reporting what
 * librdkafka's last statistics said, "kafka unreachable", or nothing). Both back: 200 again. */
Test(e2e_health, source_down_noticed_while_the_lease_waits_for_kafka, .timeout = 300, .fini = e2e_fini_servers)
{
    hctx h;
    setup(&h, "e2ehl");
    unsigned port = e2e_free_port();
    FILE *f = fopen(h.cfgp, "a");
    cr_assert_not_null(f);
    fprintf(f, "metrics.listen=127.0.0.1:%u\n", port);
    fclose(f);
    start_run(&h);
    tb_buf body;
    tb_buf_init(&body, 0);
    wait_health(port, 200, 30000, "started", &body);
    wait_events(&h, 2);

    tb_itest_testenv("stop-kafka");
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (3, 3)", h.db); /* something to send: the lease is checked */
    /* the lease expires after ha.takeover.ms * 2/5 - 2 heartbeats (4 s): then the loop waits */
    char needle[] = "not confirmed for";
    long long deadline = tb_itest_now_ms() + 60000;
    for (;;) {
        tb_buf l;
        tb_buf_init(&l, 0);
        bool waiting = e2e_slurp(h.log, &l) && strstr(tb_buf_cstr(&l), needle);
        tb_buf_free(&l);
        if (waiting)
            break;
        cr_assert_eq(e2e_wait(h.pid, 0), -2, "tributary run stopped; see %s", h.log);
        cr_assert(tb_itest_now_ms() < deadline, "the lease never waited; see %s", h.log);
        usleep(200000);
    }
    mysql_close(h.m);
    h.m = NULL;
    tb_itest_testenv("stop-mysql");
    long long t0 = tb_itest_now_ms();
    for (;;) {
        int st = e2e_http_get(port, "/health", &body);
        if (st == 503 && health_reason_is(&body, "source down since "))
            break;
        cr_assert_eq(e2e_wait(h.pid, 0), -2, "tributary run stopped; see %s", h.log);
        cr_assert(tb_itest_now_ms() < t0 + 30000, "MariaDB stopped %lld ms ago: /health %d %s", tb_itest_now_ms() - t0,
                  st, tb_buf_cstr(&body));
        usleep(200000);
    }
    fprintf(stderr, "e2e_health: lease waiting, /health 503 %lld ms after MariaDB stopped: %s", tb_itest_now_ms() - t0,
            tb_buf_cstr(&body));
    cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
    cr_assert_eq(sample_value(tb_buf_cstr(&body), "tributary_source_connected{"), 0, "%s", tb_buf_cstr(&body));

    tb_itest_testenv("start-kafka");
    tb_itest_testenv("start-mysql");
    wait_health(port, 200, 90000, "both back", &body);
    h.m = e2e_mysql();
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (4, 4)", h.db);
    wait_events(&h, 4);
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 30000), 0, "see %s", h.log);
    e2e_assert_clean_log(h.log);
    tb_buf_free(&body);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}

/* Kafka stopped while streaming, a row waiting to be sent: /health says "kafka unreachable"
 * (503), and `tributary status` says the same, unhealthy, exit 1 (app_health: one judgement for
 * both). Kafka back: both healthy again. */
Test(e2e_health, status_and_health_agree_when_kafka_is_down, .timeout = 300, .fini = e2e_fini_servers)
{
    hctx h;
    setup(&h, "e2ehk");
    unsigned port = e2e_free_port();
    FILE *f = fopen(h.cfgp, "a");
    cr_assert_not_null(f);
    fprintf(f, "metrics.listen=127.0.0.1:%u\nkafka.statistics.interval.ms=1000\n", port);
    fclose(f);
    start_run(&h);
    tb_buf body, out;
    tb_buf_init(&body, 0);
    tb_buf_init(&out, 0);
    wait_health(port, 200, 30000, "started", &body);
    wait_events(&h, 2);
    wait_status_exit(&h, 0, 30000, "streaming");

    tb_itest_testenv("stop-kafka");
    e2e_sql(h.m, "INSERT INTO %s.t VALUES (3, 3)", h.db); /* a message waits: Kafka is needed */
    long long deadline = tb_itest_now_ms() + 90000;
    for (;;) {
        int st = e2e_http_get(port, "/health", &body);
        if (st == 503 && health_reason_is(&body, "kafka unreachable"))
            break;
        cr_assert_eq(e2e_wait(h.pid, 0), -2, "tributary run stopped; see %s", h.log);
        cr_assert(tb_itest_now_ms() < deadline, "Kafka stopped: /health %d %s", st, tb_buf_cstr(&body));
        usleep(200000);
    }
    deadline = tb_itest_now_ms() + 30000;
    int rc;
    while ((rc = status_exit(&h, &out)) != 1) {
        cr_assert(tb_itest_now_ms() < deadline, "/health says kafka unreachable, tributary status exits %d:\n%s",
                  rc, tb_buf_cstr(&out));
        usleep(200000);
    }
    cr_expect(strstr(tb_buf_cstr(&out), "health:         kafka unreachable (exit 1)"), "%s", tb_buf_cstr(&out));

    tb_itest_testenv("start-kafka");
    wait_health(port, 200, 120000, "Kafka back", &body);
    wait_status_exit(&h, 0, 60000, "Kafka back");
    wait_events(&h, 3);
    kill(h.pid, SIGTERM);
    cr_assert_eq(e2e_wait(h.pid, 30000), 0, "see %s", h.log);
    e2e_assert_clean_log(h.log);
    tb_buf_free(&body);
    tb_buf_free(&out);
    mysql_close(h.m);
    e2e_rmtree(h.dir);
}
