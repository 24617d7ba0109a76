/*
 * One active instance per connector, standbys that take over (DESIGN 12),
 * with the built binary against scripts/testenv's MariaDB and Kafka.
 *
 * Every scenario runs several `tributary run` of one configuration (each
 * with its own status file and log), changes a counter row (id 1, n = 1, 2,
 * 3, ...) and a table with random inserts, updates and deletes, and checks
 * against independent oracles:
 *   - a read_committed consumer parses every record of the counter topic
 *     with Jansson: the update values n must be exactly 1..N, each once
 *     (a second streaming instance, or a paused one writing after the
 *     takeover, would repeat them);
 *   - the offsets records of <name>.offsets never move backwards (GTID
 *     sequence numbers, in topic order);
 *   - `tributary cache --until-caught-up` rebuilt from the topics equals the
 *     source tables.
 * Scenarios: two instances, only one streams (the standby says so in its
 * status file, its log and its /health), and a graceful stop hands over; SIGKILL of the active during the workload with exactly.once=true;
 * SIGSTOP of the active beyond the session timeout, then SIGCONT (it must
 * stop, never write); three instances, the active killed twice.
 */
#include <jansson.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <time.h>

#include "e2e_util.h"

#define HA_MAX 3

typedef struct ha_run {
    char db[96];
    char dir[256];
    char cfg[320];
    char cache[320];
    char status[HA_MAX][320];
    char log[HA_MAX][320];
    pid_t pid[HA_MAX];
    int counter;   /* last value written to the counter */
    unsigned seed;
} ha_run;

static void ha_setup(ha_run *h, const char *tag, bool exactly_once)
{
    memset(h, 0, sizeof *h);
    h->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(h->seed);
    snprintf(h->db, sizeof h->db, "ha_%s_%d", tag, (int)getpid());
    snprintf(h->dir, sizeof h->dir, "/tmp/e2e_%s", h->db);
    cr_assert_eq(mkdir(h->dir, 0700), 0, "mkdir %s: %s", h->dir, strerror(errno));
    snprintf(h->cfg, sizeof h->cfg, "%s/c.properties", h->dir);
    snprintf(h->cache, sizeof h->cache, "%s/cache.db", h->dir);
    for (int i = 0; i < HA_MAX; i++) {
        snprintf(h->status[i], sizeof h->status[i], "%s/status%d.json", h->dir, i);
        snprintf(h->log[i], sizeof h->log[i], "%s/run%d.log", h->dir, i);
    }
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "DROP DATABASE IF EXISTS %s", h->db);
    e2e_sql(m, "CREATE DATABASE %s", h->db);
    e2e_sql(m, "CREATE TABLE %s.counter (id INT PRIMARY KEY, n INT NOT NULL)", h->db);
    e2e_sql(m, "INSERT INTO %s.counter VALUES (1, 0)", h->db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL)", h->db);
    mysql_close(m);
    FILE *f = fopen(h->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.heartbeat.interval.ms=1000\nheartbeat.interval.ms=500\nsource.reconnect.backoff.max.ms=1000\n"
            "tables.include=%s[.].*\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=300\ncache.path=%s\nsnapshot.mode=initial\nexactly.once=%s\n",
            h->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), h->db, h->db,
            tb_itest_env("TRIBUTARY_TEST_KAFKA"), h->cache, exactly_once ? "true" : "false");
    fclose(f);
    fprintf(stderr, "ha[%s]: seed %u, files in %s\n", tag, h->seed, h->dir);
}

/* Start instance i; extra: one more "key=value" for --set, or NULL. */
static void ha_start_with(ha_run *h, int i, const char *extra)
{
    char set[400];
    snprintf(set, sizeof set, "status.file=%s", h->status[i]);
    const char *args[] = {"run", "--config", h->cfg, "--set", set, extra ? "--set" : NULL, extra, NULL};
    h->pid[i] = e2e_spawn(args, h->log[i]);
}

static void ha_start(ha_run *h, int i)
{
    ha_start_with(h, i, NULL);
}

static size_t ha_log_count(const ha_run *h, int i, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    size_t n = 0;
    if (e2e_slurp(h->log[i], &b))
        for (const char *p = tb_buf_cstr(&b); (p = strstr(p, needle)) != NULL; p += strlen(needle))
            n++;
    tb_buf_free(&b);
    return n;
}

static bool ha_log_has(const ha_run *h, int i, const char *needle)
{
    return ha_log_count(h, i, needle) > 0;
}

static void ha_fail_with_log(const ha_run *h, int i, const char *what)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(h->log[i], &b);
    size_t off = b.len > 3000 ? b.len - 3000 : 0;
    cr_assert_fail("%s; instance %d (pid %ld) log tail:\n%s", what, i, (long)h->pid[i], tb_buf_cstr(&b) + off);
}

/* Instance i's status file says state (written by that very process). */
static bool ha_in_state(const ha_run *h, int i, const char *state)
{
    char want[96];
    snprintf(want, sizeof want, "\"pid\":%ld,\"state\":\"%s\"", (long)h->pid[i], state);
    tb_buf b;
    tb_buf_init(&b, 0);
    bool yes = e2e_slurp(h->status[i], &b) && strstr(tb_buf_cstr(&b), want);
    tb_buf_free(&b);
    return yes;
}

static void ha_wait_state(const ha_run *h, int i, const char *state, long long ms)
{
    long long deadline = tb_itest_now_ms() + ms;
    while (!ha_in_state(h, i, state)) {
        if (tb_itest_now_ms() >= deadline || e2e_wait(h->pid[i], 0) != -2) {
            char what[160];
            snprintf(what, sizeof what, "instance %d is not \"%s\" within %lld ms (or exited)", i, state, ms);
            ha_fail_with_log(h, i, what);
        }
        usleep(50000);
    }
}

/* Which of the live instances in mask streams, waiting up to ms; its index. */
static int ha_wait_active(const ha_run *h, unsigned mask, long long ms)
{
    long long deadline = tb_itest_now_ms() + ms;
    for (;;) {
        for (int i = 0; i < HA_MAX; i++)
            if ((mask & (1u << i)) && ha_in_state(h, i, "streaming"))
                return i;
        cr_assert(tb_itest_now_ms() < deadline, "no instance took over within %lld ms (see %s)", ms, h->dir);
        usleep(50000);
    }
}

/* Poll until instance i's committed GTID reaches the server's binlog GTID
 * position (at or past it: tests running at the same time add their own). */
static void ha_wait_caught_up(const ha_run *h, int i)
{
    char want[256], got[256] = "";
    e2e_server_gtid(NULL, want, sizeof want);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(e2e_status_gtid(h->status[i], got, sizeof got) && e2e_gtid_reached(got, want))) {
        if (tb_itest_now_ms() >= deadline) {
            char what[600];
            snprintf(what, sizeof what, "not caught up in 60 s: committed %s, server %s", got, want);
            ha_fail_with_log(h, i, what);
        }
        usleep(50000);
    }
}

/* n counter updates, each with a random change of table t, paced so that
 * the stream is busy when a fault strikes. */
static void ha_workload(ha_run *h, int n)
{
    MYSQL *m = e2e_mysql();
    for (int k = 0; k < n; k++) {
        e2e_sql(m, "UPDATE %s.counter SET n = %d WHERE id = 1", h->db, ++h->counter);
        int id = 1 + rand() % 30, r = rand() % 3;
        if (r == 0)
            e2e_sql(m, "INSERT INTO %s.t VALUES (%d, %d) ON DUPLICATE KEY UPDATE v = v + 1", h->db, id, rand() % 100);
        else if (r == 1)
            e2e_sql(m, "UPDATE %s.t SET v = v * 2 + 1 WHERE id BETWEEN %d AND %d", h->db, id, id + 5);
        else
            e2e_sql(m, "DELETE FROM %s.t WHERE id = %d", h->db, id);
        usleep(30000);
    }
    mysql_close(m);
}

/* Every record of topic from the start to its end (read_committed), one
 * callback per record value (NULL for a tombstone). */
static void ha_consume(const char *topic, void (*fn)(json_t *value, void *opaque), void *opaque)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", getenv("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr),
                 RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "group.id", "ha-check", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "consumer: %s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = tb_itest_now_ms() + 60000;
    for (bool eof = false; !eof;) {
        cr_assert(tb_itest_now_ms() < deadline, "%s: end not reached in 60 s", topic);
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 500);
        if (!msg)
            continue;
        if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eof = true;
        } else if (msg->err) {
            cr_assert_fail("%s: %s", topic, rd_kafka_message_errstr(msg));
        } else {
            json_t *v = NULL;
            if (msg->payload) {
                json_error_t je;
                v = json_loadb(msg->payload, msg->len, 0, &je);
                cr_assert_not_null(v, "%s: a record value is not JSON: %s", topic, je.text);
            }
            fn(v, opaque);
            json_decref(v);
        }
        rd_kafka_message_destroy(msg);
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

typedef struct ha_counts {
    int seen[1024]; /* how many update events carried after.n == index */
    int updates;
} ha_counts;

static void ha_count_cb(json_t *v, void *opaque)
{
    ha_counts *c = opaque;
    const char *op = json_string_value(json_object_get(v, "op"));
    if (!op || strcmp(op, "u") != 0)
        return;
    json_t *n = json_object_get(json_object_get(v, "after"), "n");
    cr_assert(json_is_integer(n), "an update of the counter without after.n");
    json_int_t k = json_integer_value(n);
    cr_assert(k > 0 && k < 1024, "counter value %lld out of range", (long long)k);
    c->seen[k]++;
    c->updates++;
}

/* The counter topic holds the updates n = 1..h->counter, each exactly once. */
static void ha_assert_counter_once(const ha_run *h)
{
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.counter", h->db, h->db);
    ha_counts *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    ha_consume(topic, ha_count_cb, c);
    for (int k = 1; k <= h->counter; k++)
        cr_assert_eq(c->seen[k], 1, "counter value %d appears %d times (read_committed; %d updates in the topic)", k,
                     c->seen[k], c->updates);
    cr_assert_eq(c->updates, h->counter, "%d counter updates in the topic, %d made", c->updates, h->counter);
    free(c);
}

typedef struct ha_offsets {
    char last[256];
    int records;
} ha_offsets;

/* Each offsets record's MariaDB GTID list reaches the one before it in every domain. */
static void ha_offsets_cb(json_t *v, void *opaque)
{
    ha_offsets *o = opaque;
    const char *g = json_string_value(json_object_get(v, "gtid"));
    if (!g)
        return;
    cr_assert(*g && strlen(g) < sizeof o->last, "offsets record gtid %s", g);
    cr_assert(e2e_gtid_reached(g, o->last), "the offsets record moved backwards: gtid %s after %s", g, o->last);
    memcpy(o->last, g, strlen(g) + 1);
    o->records++;
}

static void ha_assert_offsets_monotonic(const ha_run *h)
{
    char topic[256];
    snprintf(topic, sizeof topic, "%s.offsets", h->db);
    ha_offsets o = {"", 0};
    ha_consume(topic, ha_offsets_cb, &o);
    cr_assert_gt(o.records, 0, "no offsets record in %s", topic);
}

/* The rows of a cache table as "c1|c2\n" in key order. */
static void ha_cache_text(const char *path, const char *table, const char *cols, tb_buf *out)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    char q[256];
    snprintf(q, sizeof q, "SELECT %s FROM \"%s\" ORDER BY id", cols, table);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s: %s", q, sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
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

/* Rebuild the cache from the topics; every row must equal the source. */
static void ha_assert_cache_equals_source(const ha_run *h)
{
    const char *cargs[] = {"cache", "--config", h->cfg, "--until-caught-up", NULL};
    char clog[400];
    snprintf(clog, sizeof clog, "%s/cache.log", h->dir);
    int rc = e2e_wait(e2e_spawn(cargs, clog), 120000);
    cr_assert_eq(rc, 0, "tributary cache --until-caught-up failed (status %d); see %s", rc, clog);
    e2e_assert_clean_log(clog);
    MYSQL *m = e2e_mysql();
    const char *tables[][2] = {{"counter", "id, n"}, {"t", "id, v"}};
    for (size_t k = 0; k < 2; k++) {
        char q[256], table[160];
        snprintf(q, sizeof q, "SELECT %s FROM %s.%s ORDER BY id", tables[k][1], h->db, tables[k][0]);
        snprintf(table, sizeof table, "%s.%s", h->db, tables[k][0]);
        tb_buf src, got;
        tb_buf_init(&src, 0);
        tb_buf_init(&got, 0);
        e2e_query_text(m, q, &src);
        ha_cache_text(h->cache, table, tables[k][1], &got);
        tb_buf_putc(&src, '\0');
        tb_buf_putc(&got, '\0');
        cr_assert_str_eq(got.data, src.data, "%s: the cache differs from the source", table);
        tb_buf_free(&src);
        tb_buf_free(&got);
    }
    mysql_close(m);
}

static void ha_stop(ha_run *h, int i)
{
    kill(h->pid[i], SIGTERM);
    int rc = e2e_wait(h->pid[i], 90000);
    if (rc != 0)
        ha_fail_with_log(h, i, "did not stop cleanly on SIGTERM");
    e2e_assert_clean_log(h->log[i]);
}

static void ha_kill(ha_run *h, int i, int sig)
{
    kill(h->pid[i], sig);
    cr_assert_eq(e2e_wait(h->pid[i], 10000), -1, "instance %d did not die of signal %d", i, sig);
}

/* ------------------------------------------------------------ scenarios */

TestSuite(ha, .init = tb_itest_restore_servers);

Test(ha, two_instances_only_one_streams, .timeout = 300, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "two", false);
    FILE *f = fopen(h.cfg, "a"); /* the DEBUG line of the source's questions asked again */
    cr_assert_not_null(f);
    fprintf(f, "log.level=debug\n");
    fclose(f);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    unsigned port = e2e_free_port();
    char listen[64];
    snprintf(listen, sizeof listen, "metrics.listen=127.0.0.1:%u", port);
    ha_start_with(&h, 1, listen);
    ha_wait_state(&h, 1, "standby", 60000);
    /* the health endpoint says standby too (healthy, not active: 503) */
    tb_buf body;
    tb_buf_init(&body, 0);
    int hs = e2e_http_get(port, "/health", &body);
    cr_assert_eq(hs, 503, "/health of the standby: %d %s", hs, tb_buf_cstr(&body));
    cr_assert(strstr(tb_buf_cstr(&body), "standby"), "/health of the standby: %s", tb_buf_cstr(&body));
    char line[200];
    snprintf(line, sizeof line, "standby: %s is active on ", h.db);
    long long deadline = tb_itest_now_ms() + 20000;
    while (!ha_log_has(&h, 1, line)) {
        cr_assert(tb_itest_now_ms() < deadline, "the standby did not name the active instance; see %s", h.log[1]);
        usleep(50000);
    }
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, ":%ld\n", (long)h.pid[0]);
    cr_assert(ha_log_has(&h, 1, pidtxt), "the standby's line does not name pid %ld; see %s", (long)h.pid[0], h.log[1]);

    ha_workload(&h, 30);
    ha_wait_caught_up(&h, 0);
    cr_assert(ha_in_state(&h, 1, "standby"), "the second instance left standby while the first streams");
    cr_assert_not(ha_log_has(&h, 1, "streaming from"), "the standby streamed; see %s", h.log[1]);

    /* a graceful stop hands over within ha.takeover.ms (15 s by default) */
    long long t0 = tb_itest_now_ms();
    ha_stop(&h, 0);
    ha_wait_state(&h, 1, "streaming", 15000 - (tb_itest_now_ms() - t0));
    fprintf(stderr, "ha[two]: handed over %lld ms after SIGTERM\n", tb_itest_now_ms() - t0);
    /* the standby opened its producer before its long wait, and asked the source its questions:
     * they are asked again (the first instance's were not) */
    cr_assert_eq(ha_log_count(&h, 1, "the source's answers at start are "), 1, "see %s", h.log[1]);
    cr_assert_eq(ha_log_count(&h, 0, "the source's answers at start are "), 0, "see %s", h.log[0]);
    deadline = tb_itest_now_ms() + 10000;
    while ((hs = e2e_http_get(port, "/health", &body)) != 200) {
        cr_assert(tb_itest_now_ms() < deadline, "/health after the takeover: %d %s", hs, tb_buf_cstr(&body));
        usleep(100000);
    }
    tb_buf_free(&body);
    ha_workload(&h, 10);
    ha_wait_caught_up(&h, 1);
    ha_stop(&h, 1);

    ha_assert_counter_once(&h);
    ha_assert_offsets_monotonic(&h);
    ha_assert_cache_equals_source(&h);
    e2e_rmtree(h.dir);
}

Test(ha, sigkill_of_the_active_exactly_once, .timeout = 300, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "kill", true);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    ha_start(&h, 1);
    ha_wait_state(&h, 1, "standby", 60000);
    ha_workload(&h, 20);
    long long t0 = tb_itest_now_ms();
    ha_kill(&h, 0, SIGKILL); /* mid-workload: its last changes are in flight */
    ha_workload(&h, 20);
    ha_wait_state(&h, 1, "streaming", 15000 - (tb_itest_now_ms() - t0));
    fprintf(stderr, "ha[kill]: took over %lld ms after SIGKILL\n", tb_itest_now_ms() - t0);
    ha_wait_caught_up(&h, 1);
    ha_stop(&h, 1);

    ha_assert_counter_once(&h); /* 40 updates, exactly 40 times */
    cr_assert_eq(h.counter, 40);
    ha_assert_offsets_monotonic(&h);
    ha_assert_cache_equals_source(&h);
    e2e_rmtree(h.dir);
}

/* Without exactly_once (no fencing by the transactional id), so that any
 * record the paused instance wrote after the takeover would show as a
 * repeated counter value or an offsets record moving backwards. */
Test(ha, sigstop_beyond_the_session_then_sigcont, .timeout = 300, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "stop", false);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    ha_start(&h, 1);
    ha_wait_state(&h, 1, "standby", 60000);
    ha_workload(&h, 10);
    ha_wait_caught_up(&h, 0);
    kill(h.pid[0], SIGSTOP);
    ha_workload(&h, 10);
    ha_wait_state(&h, 1, "streaming", 15000);
    ha_wait_caught_up(&h, 1);
    kill(h.pid[0], SIGCONT);
    int rc = e2e_wait(h.pid[0], 30000);
    if (rc != 1)
        ha_fail_with_log(&h, 0, "the paused instance did not stop with exit 1 after SIGCONT");
    cr_assert(ha_log_has(&h, 0, "lost the lease"), "see %s", h.log[0]);
    e2e_assert_clean_log(h.log[0]);
    ha_workload(&h, 10);
    ha_wait_caught_up(&h, 1);
    ha_stop(&h, 1);

    ha_assert_counter_once(&h);
    ha_assert_offsets_monotonic(&h);
    ha_assert_cache_equals_source(&h);
    e2e_rmtree(h.dir);
}

Test(ha, three_instances_the_active_killed_twice, .timeout = 400, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "three", true);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    ha_start(&h, 1);
    ha_start(&h, 2);
    ha_wait_state(&h, 1, "standby", 60000);
    ha_wait_state(&h, 2, "standby", 60000);
    unsigned alive = 7;
    int active = 0;
    for (int round = 0; round < 2; round++) {
        ha_workload(&h, 10);
        ha_kill(&h, active, SIGKILL);
        alive &= ~(1u << active);
        ha_workload(&h, 5);
        int next = ha_wait_active(&h, alive, 15000);
        fprintf(stderr, "ha[three]: instance %d took over from %d\n", next, active);
        active = next;
        for (int i = 0; i < HA_MAX; i++)
            if ((alive & (1u << i)) && i != active)
                cr_assert(ha_in_state(&h, i, "standby"), "instance %d is not standing by", i);
    }
    ha_workload(&h, 10);
    ha_wait_caught_up(&h, active);
    ha_stop(&h, active);

    ha_assert_counter_once(&h);
    ha_assert_offsets_monotonic(&h);
    ha_assert_cache_equals_source(&h);
    e2e_rmtree(h.dir);
}

/* offsets.storage=file: the lease is a flock on <offsets.file>.lock, which
 * the kernel releases when the holder dies: the standby takes over at once. */
Test(ha, file_lease_one_host, .timeout = 120, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "file", false);
    FILE *f = fopen(h.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "sink=stdout\noffsets.storage=file\noffsets.file=%s/offsets\n", h.dir);
    fclose(f);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    ha_start(&h, 1);
    ha_wait_state(&h, 1, "standby", 60000);
    char line[200];
    snprintf(line, sizeof line, "standby: %s is active on ", h.db);
    cr_assert(ha_log_has(&h, 1, line), "see %s", h.log[1]);
    ha_workload(&h, 5);
    ha_wait_caught_up(&h, 0);
    cr_assert(ha_in_state(&h, 1, "standby"));
    long long t0 = tb_itest_now_ms();
    ha_kill(&h, 0, SIGKILL);
    ha_wait_state(&h, 1, "streaming", 5000);
    fprintf(stderr, "ha[file]: took over %lld ms after SIGKILL\n", tb_itest_now_ms() - t0);
    ha_workload(&h, 5);
    ha_wait_caught_up(&h, 1);
    /* the new active instance prints the updates made after the takeover */
    char first[64];
    snprintf(first, sizeof first, "\"n\":%d}", h.counter);
    cr_assert(ha_log_has(&h, 1, first), "the new active instance did not print n=%d; see %s", h.counter, h.log[1]);
    ha_stop(&h, 1);
    e2e_rmtree(h.dir);
}

/* Kafka stopped for longer than the session timeout under a single active
 * instance: it pauses, and when Kafka is back the partition returns to it
 * with no other holder in between, so it goes on where it stopped (no exit,
 * every change exactly once). Every topic the workload writes exists before
 * Kafka stops: a table's first change creates its topic, and CreateTopics
 * with Kafka down blocks for the 30 s request timeout and then ends the run
 * (a different scenario; the lease check right before the hand-over keeps
 * that wait from producing anything after the lease expired). */
Test(ha, kafka_outage_the_active_goes_on, .timeout = 300, .fini = e2e_fini_servers)
{
    ha_run h;
    ha_setup(&h, "outage", false);
    ha_start(&h, 0);
    ha_wait_state(&h, 0, "streaming", 60000);
    MYSQL *m = e2e_mysql(); /* a change of t: its topic (the counter's comes with the snapshot) */
    e2e_sql(m, "INSERT INTO %s.t VALUES (0, 0)", h.db);
    mysql_close(m);
    ha_workload(&h, 5);
    ha_wait_caught_up(&h, 0);
    tb_itest_testenv("stop-kafka");
    ha_workload(&h, 5);
    /* the lease expires S - 2H (4 s) after the last renewal, and the wait is logged 2H later */
    long long t0 = tb_itest_now_ms();
    while (!ha_log_has(&h, 0, "producing nothing until")) {
        if (tb_itest_now_ms() - t0 >= 60000)
            ha_fail_with_log(&h, 0, "no \"producing nothing until\" (the lease wait) within 60 s of stop-kafka");
        usleep(100000);
    }
    tb_itest_testenv("start-kafka");
    ha_workload(&h, 5);
    ha_wait_caught_up(&h, 0);
    cr_assert_eq(e2e_wait(h.pid[0], 0), -2, "the instance exited during the outage; see %s", h.log[0]);
    cr_assert_not(ha_log_has(&h, 0, "lost the lease"), "see %s", h.log[0]);
    ha_stop(&h, 0);
    ha_assert_counter_once(&h);
    ha_assert_offsets_monotonic(&h);
    e2e_rmtree(h.dir);
}
