/*
 * Cluster tests: MariaDB -> tributary run -> a three-broker Kafka cluster
 * (scripts/testenv up --brokers 3; TRIBUTARY_TEST_KAFKA_BROKERS must be 3 or
 * more, else every test fails), with the built binary.
 *
 *   topics_fit_the_cluster     topics the connector creates get the cluster's
 *                              replication factor (3) and min.insync.replicas 2;
 *                              an existing topic with replication factor 1 gets
 *                              a WARN naming the fix
 *   leader_killed_*            the leader of the data topic's partition is
 *                              SIGKILLed while a workload streams, and brought
 *                              back (at-least-once and exactly_once)
 *   rolling_restart            each broker in turn stopped and started, the next
 *                              one once every replica is back in sync
 *   two_brokers_down           two brokers SIGKILLed (below min.insync.replicas,
 *                              no controller quorum): the connector waits and
 *                              says so in its status file, /health and
 *                              /metrics, then goes on when they are back
 *   cache_group_failover       three `tributary cache` of cache.mode=group over a
 *                              6-partition topic: every row in exactly one file, on
 *                              its key's partition (as Kafka holds it), in the
 *                              instance storing that partition's offset, with the
 *                              source's values; the one owning most partitions
 *                              SIGKILLed (each of them moves to another), then
 *                              restarted (the assignment settles again)
 *
 * Each one then stops the workload, waits until the connector committed the
 * server's GTID position, stops it (SIGTERM, exit 0) and compares the topic
 * read as a table with the source table (by query); with exactly_once, a
 * read_committed consumer sees no change event twice. The connector must never
 * stop by itself. The broker-loss tests (leader_killed_*, rolling_restart,
 * two_brokers_down) also run a `tributary cache` beside the connector through
 * the faults: it must not stop by itself, and once resumed to the topic's end
 * its table equals the source table.
 */
#include <sys/stat.h>
#include <time.h>

#include "../e2e/e2e_tables.h"

#define CL_IDS 2000

/* ------------------------------------------------------------ the cluster */

static const char *cl_brokers(void)
{
    const char *b = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    const char *n = tb_itest_env("TRIBUTARY_TEST_KAFKA_BROKERS");
    cr_assert(atoi(n) >= 3,
              "TRIBUTARY_TEST_KAFKA_BROKERS=%s: the cluster tests need three brokers "
              "(eval \"$(scripts/testenv up --brokers 3)\")",
              n);
    return b;
}

/* Partition 0 of topic: its leader (-1 none), replicas and in-sync replicas. */
typedef struct cl_part {
    int leader, replicas, isr;
} cl_part;

static bool cl_partition(const char *topic, int partition, cl_part *out)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", cl_brokers(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    bool ok = false;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
        md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int p = 0; p < md->topics[0].partition_cnt; p++) {
            const rd_kafka_metadata_partition_t *mp = &md->topics[0].partitions[p];
            if (mp->id != partition)
                continue;
            out->leader = mp->err == RD_KAFKA_RESP_ERR_NO_ERROR ? mp->leader : -1;
            out->replicas = mp->replica_cnt;
            out->isr = mp->isr_cnt;
            ok = true;
        }
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return ok;
}

/* Poll until every partition 0 of topics (NULL-terminated) has all its replicas in sync. */
static void cl_wait_in_sync(const char *const *topics)
{
    long long deadline = tb_itest_now_ms() + 120000;
    for (size_t i = 0; topics[i]; i++) {
        cl_part p = {-1, 0, 0};
        while (!(cl_partition(topics[i], 0, &p) && p.leader >= 0 && p.isr == p.replicas)) {
            cr_assert(tb_itest_now_ms() < deadline, "%s: %d of %d replicas in sync after 120 s (leader %d)",
                      topics[i], p.isr, p.replicas, p.leader);
            usleep(200000);
        }
    }
}

/* A topic configuration value (DescribeConfigs), into out. */
static void cl_topic_config(const char *topic, const char *key, char *out, size_t cap)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", cl_brokers(), errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "DescribeConfigs %s timed out", topic);
    cr_assert(!rd_kafka_event_error(ev), "DescribeConfigs %s: %s", topic, rd_kafka_event_error_string(ev));
    size_t n = 0, ne = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    cr_assert_eq(n, 1);
    const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[0], &ne);
    snprintf(out, cap, "(none)");
    for (size_t i = 0; i < ne; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(es[i]), key) == 0)
            snprintf(out, cap, "%s", rd_kafka_ConfigEntry_value(es[i]) ? rd_kafka_ConfigEntry_value(es[i]) : "");
    rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

/* Create topic with replication factor rf (Admin API). */
static void cl_create_topic(const char *topic, int rf)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", cl_brokers(), errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, rf, errstr, sizeof errstr);
    cr_assert_not_null(nt, "%s", errstr);
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "CreateTopics %s timed out", topic);
    size_t n = 0;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    cr_assert(n == 1 && !rd_kafka_topic_result_error(tr[0]), "CreateTopics %s: %s", topic,
              n == 1 ? rd_kafka_topic_result_error_string(tr[0]) : "no result");
    rd_kafka_event_destroy(ev);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

/* ------------------------------------------------------------ workload (forked) */

static volatile sig_atomic_t wl_stop;
static void wl_on_term(int sig)
{
    (void)sig;
    wl_stop = 1;
}

/* Until SIGTERM: inserts, updates and deletes on db.t, each its own
 * transaction. Never calls Criterion. */
static void cl_workload(const char *db, unsigned seed)
{
    signal(SIGTERM, wl_on_term);
    srand(seed);
    MYSQL *m = NULL;
    char q[512];
    while (!wl_stop) {
        if (!m && !(m = e2e_mysql_try())) {
            usleep(100000);
            continue;
        }
        int r = rand() % 100, id = 1 + rand() % CL_IDS;
        if (r < 50)
            snprintf(q, sizeof q, "INSERT INTO %s.t (id, v, s) VALUES (%d, %d, 'i%d') ON DUPLICATE KEY UPDATE v = v + 1",
                     db, id, rand() % 1000, rand());
        else if (r < 85)
            snprintf(q, sizeof q, "UPDATE %s.t SET v = v + 1, s = 'u%d' WHERE id BETWEEN %d AND %d", db, rand(), id,
                     id + 3);
        else
            snprintf(q, sizeof q, "DELETE FROM %s.t WHERE id = %d", db, id);
        if (mysql_query(m, q) != 0 && mysql_errno(m) >= 2000) {
            mysql_close(m);
            m = NULL;
        }
        usleep(3000);
    }
    if (m)
        mysql_close(m);
}

/* ------------------------------------------------------------ a run */

typedef struct cl_run {
    char db[96];
    char dir[256];
    char cfg[320];
    char log[320];
    char status[320];
    char topic[256];
    char offsets[256];
    char cache[320];  /* the cache file the broker-loss tests keep beside the connector */
    char clog[320];
    pid_t connector;
    pid_t cache_pid;  /* a `tributary cache` running through the faults, 0 none */
    pid_t wl;
    bool exactly_once;
} cl_run;

/* Poll until the cluster's metadata lists every broker (a test after one that restarted
 * brokers may start while one still recovers: its topics would get fewer replicas). */
static void cl_wait_brokers(void)
{
    int want = atoi(tb_itest_env("TRIBUTARY_TEST_KAFKA_BROKERS")), have = 0;
    long long deadline = tb_itest_now_ms() + 300000;
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", cl_brokers(), errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    for (;;) {
        const rd_kafka_metadata_t *md = NULL;
        if (rd_kafka_metadata(rk, 0, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            have = md->broker_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (have >= want)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "the cluster lists %d of %d brokers after 300 s", have, want);
        usleep(500000);
    }
    rd_kafka_destroy(rk);
}

static void cl_setup(cl_run *r, const char *tag, bool exactly_once, const char *extra)
{
    memset(r, 0, sizeof(*r));
    const char *brokers = cl_brokers();
    cl_wait_brokers();
    r->exactly_once = exactly_once;
    tb_itest_unique(r->db, sizeof r->db, tag);
    snprintf(r->dir, sizeof r->dir, "/tmp/e2e_%s", r->db);
    cr_assert_eq(mkdir(r->dir, 0700), 0, "mkdir %s: %s", r->dir, strerror(errno));
    snprintf(r->cfg, sizeof r->cfg, "%s/run.properties", r->dir);
    snprintf(r->log, sizeof r->log, "%s/run.log", r->dir);
    snprintf(r->status, sizeof r->status, "%s/status.json", r->dir);
    snprintf(r->topic, sizeof r->topic, "%s.%s.t", r->db, r->db);
    snprintf(r->offsets, sizeof r->offsets, "%s.offsets", r->db);
    snprintf(r->cache, sizeof r->cache, "%s/cache.db", r->dir);
    snprintf(r->clog, sizeof r->clog, "%s/cache.log", r->dir);

    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r->db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40) NOT NULL)", r->db);
    e2e_sql(m, "INSERT INTO %s.t SELECT seq, seq, CONCAT('seed', seq) FROM %s.seq_1_to_500", r->db, r->db);
    mysql_close(m);

    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\nsource.heartbeat.ms=1000\nheartbeat.interval.ms=500\n"
            "tables.include=%s[.]t\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=300\nstatus.file=%s\nsnapshot.mode=initial\nexactly_once=%s\n"
            "log.level=info\nha.enabled=false\ncache.path=%s\n%s",
            r->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            6000 + (unsigned)getpid() % 1000, r->db, r->db, brokers, r->status, exactly_once ? "true" : "false",
            r->cache, extra ? extra : "");
    fclose(f);
}

static void cl_start(cl_run *r)
{
    const char *args[] = {"run", "--config", r->cfg, NULL};
    r->connector = e2e_spawn(args, r->log);
}

/* A `tributary cache` of the connector's configuration that runs through the
 * faults (its consumer loses the leader and the coordinator as the connector does). */
static void cl_start_cache(cl_run *r)
{
    char listen[64]; /* its own metrics port: the connector's configuration may name one */
    snprintf(listen, sizeof listen, "metrics.listen=127.0.0.1:%u", e2e_free_port());
    const char *args[] = {"cache", "--config", r->cfg, "--set", listen, NULL};
    r->cache_pid = e2e_spawn(args, r->clog);
}

static void cl_log_tail(const char *path, char *out, size_t cap)
{
    tb_buf lg;
    tb_buf_init(&lg, 0);
    e2e_slurp(path, &lg);
    size_t off = lg.len > cap - 1 ? lg.len - (cap - 1) : 0;
    snprintf(out, cap, "%s", lg.len ? tb_buf_cstr(&lg) + off : "");
    tb_buf_free(&lg);
}

static void cl_assert_running(const cl_run *r)
{
    int rc = e2e_wait(r->connector, 0);
    if (rc != -2) {
        char tail[3000];
        cl_log_tail(r->log, tail, sizeof tail);
        cr_assert_fail("the connector stopped by itself (status %d); log tail:\n%s", rc, tail);
    }
}

/* Poll until this connector says "streaming" in its status file. */
static void cl_wait_streaming(const cl_run *r)
{
    char want[64];
    snprintf(want, sizeof want, "\"pid\":%ld,\"state\":\"streaming\"", (long)r->connector);
    tb_buf b;
    tb_buf_init(&b, 0);
    long long deadline = tb_itest_now_ms() + 90000;
    while (!(e2e_slurp(r->status, &b) && strstr(tb_buf_cstr(&b), want))) {
        cr_assert(tb_itest_now_ms() < deadline, "the connector is not streaming after 90 s; see %s", r->log);
        cl_assert_running(r);
        usleep(100000);
    }
    tb_buf_free(&b);
}

static void cl_start_workload(cl_run *r)
{
    r->wl = tb_test_fork();
    cr_assert_geq(r->wl, 0);
    if (r->wl == 0) {
        cl_workload(r->db, (unsigned)getpid());
        _exit(0);
    }
    e2e_track(r->wl);
}

static void cl_stop_workload(cl_run *r)
{
    kill(r->wl, SIGTERM);
    cr_assert_eq(e2e_wait(r->wl, 30000), 0, "the workload did not stop");
}

static void cl_sleep_ms(long ms)
{
    /* how long a fault lasts or when it strikes, not synchronization */
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll until the committed GTID equals the server's; then SIGTERM, exit 0. */
static void cl_catch_up_and_stop(cl_run *r)
{
    MYSQL *m = e2e_mysql();
    char want[256], got[256] = "";
    e2e_server_gtid(m, want, sizeof want);
    mysql_close(m);
    long long deadline = tb_itest_now_ms() + 180000;
    while (!(e2e_status_gtid(r->status, got, sizeof got) && strcmp(got, want) == 0)) {
        if (tb_itest_now_ms() >= deadline) {
            char tail[3000];
            cl_log_tail(r->log, tail, sizeof tail);
            cr_assert_fail("not caught up in 180 s: committed %s, server %s; log tail:\n%s", got, want, tail);
        }
        cl_assert_running(r);
        usleep(100000);
    }
    kill(r->connector, SIGTERM);
    int rc = e2e_wait(r->connector, 90000);
    cr_assert_eq(rc, 0, "tributary run did not stop cleanly on SIGTERM (status %d); see %s", rc, r->log);
    e2e_assert_clean_log(r->log);
}

/* The topic read as a table equals the source table; with exactly_once no
 * change event is seen twice by a read_committed consumer. With a cache that
 * ran through the faults: it must still be running; it is stopped (SIGTERM,
 * exit 0), resumed with --until-caught-up, and its table must equal the
 * source table too. */
static void cl_compare(cl_run *r, const char *what)
{
    MYSQL *m = e2e_mysql();
    tb_buf src, got;
    tb_buf_init(&src, 0);
    tb_buf_init(&got, 0);
    char q[256];
    snprintf(q, sizeof q, "SELECT id, v, s FROM %s.t ORDER BY id", r->db);
    e2e_query_text(m, q, &src);
    tb_buf_putc(&src, '\0');
    src.len--;
    mysql_close(m);
    const char *cols[] = {"id", "v", "s", NULL};
    st_topic_table(r->topic, cols, &got);
    const char *a = tb_buf_cstr(&src), *b = tb_buf_cstr(&got);
    if (strcmp(a, b) != 0) {
        size_t i = 0;
        while (a[i] && a[i] == b[i])
            i++;
        while (i > 0 && a[i - 1] != '\n')
            i--;
        cr_assert_fail("%s: topic %s differs from the source table from here:\nsource: %.120s\ntopic:  %.120s", what,
                       r->topic, a + i, b + i);
    }
    size_t rows = 0;
    for (const char *p = a; *p; p++)
        rows += *p == '\n';
    if (r->cache_pid > 0) {
        int rc = e2e_wait(r->cache_pid, 0);
        cr_assert_eq(rc, -2, "%s: the cache stopped by itself during the faults (status %d); see %s", what, rc, r->clog);
        kill(r->cache_pid, SIGTERM);
        rc = e2e_wait(r->cache_pid, 60000);
        cr_assert_eq(rc, 0, "%s: the cache did not stop cleanly on SIGTERM (status %d); see %s", what, rc, r->clog);
        r->cache_pid = 0;
        const char *cargs[] = {"cache", "--config", r->cfg, "--until-caught-up", "--set", "metrics.listen=", NULL};
        pid_t cp = e2e_spawn(cargs, r->clog);
        rc = e2e_wait(cp, 180000);
        cr_assert_eq(rc, 0, "%s: tributary cache --until-caught-up failed (status %d); see %s", what, rc, r->clog);
        e2e_assert_clean_log(r->clog);
        tb_buf cache;
        tb_buf_init(&cache, 0);
        char table[200];
        snprintf(table, sizeof table, "%s.t", r->db);
        st_cache_rows(r->cache, table, "id, v, s", &cache);
        const char *cc = tb_buf_cstr(&cache);
        if (strcmp(a, cc) != 0) {
            size_t i = 0;
            while (a[i] && a[i] == cc[i])
                i++;
            while (i > 0 && a[i - 1] != '\n')
                i--;
            cr_assert_fail("%s: the cache %s differs from the source table from here:\nsource: %.120s\ncache:  %.120s",
                           what, r->cache, a + i, cc + i);
        }
        tb_buf_free(&cache);
        fprintf(stderr, "cluster[%s]: the cache that ran through the faults equals the source\n", what);
    }
    const char *topics[] = {r->topic, NULL};
    e2e_counts c = e2e_count_changes(cl_brokers(), topics);
    fprintf(stderr, "cluster[%s]: RESULT rows=%zu change_events=%llu duplicates=%llu exactly_once=%d\n", what, rows,
            (unsigned long long)c.changes, (unsigned long long)c.duplicates, (int)r->exactly_once);
    cr_assert_gt(c.changes, 200, "%s: too few change events (%llu): the workload did not run", what,
                 (unsigned long long)c.changes);
    if (r->exactly_once)
        cr_assert_eq(c.duplicates, 0, "%s: exactly_once: %llu duplicate change events seen read_committed", what,
                     (unsigned long long)c.duplicates);
    tb_buf_free(&src);
    tb_buf_free(&got);
}

/* Every broker back up after a test (a failed one may leave some down). */
static void cl_restore(void)
{
    e2e_kill_children();
    setenv("TRIBUTARY_TESTENV_TIMEOUT", "300", 1);
    const char *n = getenv("TRIBUTARY_TEST_KAFKA_BROKERS");
    for (int i = 1; n && i <= atoi(n); i++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "'%s/scripts/testenv' status '%s' | grep '^kafka broker %d: running' >/dev/null || "
                 "'%s/scripts/testenv' start-broker %d '%s' >&2", TB_SOURCE_DIR, getenv("TRIBUTARY_TEST_DIR"), i,
                 TB_SOURCE_DIR, i, getenv("TRIBUTARY_TEST_DIR"));
        if (system(cmd) != 0)
            fprintf(stderr, "cluster: could not restart broker %d\n", i);
    }
}

/* ------------------------------------------------------------ tests */

Test(cluster, topics_fit_the_cluster, .timeout = 300, .fini = cl_restore)
{
    cl_run r;
    cl_setup(&r, "clrf", true, NULL); /* exactly_once: the transaction state log exists too */
    /* the data topic exists already, with replication factor 1 */
    cl_create_topic(r.topic, 1);
    cl_start(&r);
    cl_wait_streaming(&r);

    /* the offsets topic the connector created: the cluster's replication factor, min.insync.replicas 2 */
    cl_part p = {-1, 0, 0};
    long long until = tb_itest_now_ms() + 60000;
    while (!cl_partition(r.offsets, 0, &p)) { /* created with the first commit */
        cr_assert(tb_itest_now_ms() < until, "no topic %s after 60 s", r.offsets);
        usleep(200000);
    }
    cr_assert_eq(p.replicas, 3, "%s: replication factor %d, want the cluster's default 3", r.offsets, p.replicas);
    char v[64];
    cl_topic_config(r.offsets, "min.insync.replicas", v, sizeof v);
    cr_assert_str_eq(v, "2", "%s: min.insync.replicas=%s", r.offsets, v);
    cl_topic_config(r.offsets, "cleanup.policy", v, sizeof v);
    cr_assert_str_eq(v, "compact");

    /* the cluster's own topics (scripts/testenv --brokers 3): the consumer offsets of the lease
     * group and the transaction state log of exactly_once, each of its 5 partitions on all three
     * brokers, min.insync.replicas 2, so that one broker lost loses no commit or transaction */
    const char *internal[] = {"__consumer_offsets", "__transaction_state"};
    for (size_t t = 0; t < 2; t++) {
        until = tb_itest_now_ms() + 60000;
        while (!cl_partition(internal[t], 0, &p)) {
            cr_assert(tb_itest_now_ms() < until, "no topic %s after 60 s of an exactly_once run", internal[t]);
            usleep(200000);
        }
        for (int part = 0; part < 5; part++) {
            cr_assert(cl_partition(internal[t], part, &p), "%s has no partition %d (want 5)", internal[t], part);
            cr_assert_eq(p.replicas, 3, "%s[%d]: replication factor %d, want 3", internal[t], part, p.replicas);
        }
        cr_assert(!cl_partition(internal[t], 5, &p), "%s has more than 5 partitions", internal[t]);
        cl_topic_config(internal[t], "min.insync.replicas", v, sizeof v);
        cr_assert_str_eq(v, "2", "%s: min.insync.replicas=%s, want 2", internal[t], v);
    }

    /* the existing data topic keeps replication factor 1, with a WARN naming the fix */
    tb_buf lg;
    tb_buf_init(&lg, 0);
    long long deadline = tb_itest_now_ms() + 30000;
    const char *want = "has replication factor 1 on a cluster of 3 brokers";
    while (!(e2e_slurp(r.log, &lg) && strstr(tb_buf_cstr(&lg), want))) {
        cr_assert(tb_itest_now_ms() < deadline, "no WARN \"%s\" in %s", want, r.log);
        usleep(100000);
    }
    const char *w = strstr(tb_buf_cstr(&lg), want);
    const char *eol = strchr(w, '\n');
    cr_assert(strstr(w, "kafka-reassign-partitions") && (!eol || strstr(w, "kafka-reassign-partitions") < eol),
              "the WARN does not name the fix: %.300s", w);
    tb_buf_free(&lg);
    kill(r.connector, SIGTERM);
    cr_assert_eq(e2e_wait(r.connector, 60000), 0);
    e2e_assert_clean_log(r.log);
    e2e_rmtree(r.dir);
}

static void cl_leader_killed(bool exactly_once)
{
    const char *what = exactly_once ? "leader_killed_exactly_once" : "leader_killed";
    cl_run r;
    cl_setup(&r, exactly_once ? "clke" : "clka", exactly_once, NULL);
    cl_start(&r);
    cl_wait_streaming(&r);
    cl_start_cache(&r);
    cl_start_workload(&r);
    cl_sleep_ms(3000);
    cl_part p = {-1, 0, 0};
    cr_assert(cl_partition(r.topic, 0, &p) && p.leader >= 1, "no leader for %s", r.topic);
    cr_assert_eq(p.replicas, 3, "%s: replication factor %d", r.topic, p.replicas);
    char cmd[64];
    fprintf(stderr, "cluster[%s]: SIGKILL of broker %d, the leader of %s\n", what, p.leader, r.topic);
    snprintf(cmd, sizeof cmd, "kill-broker %d", p.leader);
    tb_itest_testenv(cmd);
    /* the other two elect a leader and go on: the stream must too, while the broker is down */
    cl_part q = {-1, 0, 0};
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(cl_partition(r.topic, 0, &q) && q.leader >= 1 && q.leader != p.leader)) {
        cr_assert(tb_itest_now_ms() < deadline, "no new leader for %s within 60 s", r.topic);
        usleep(200000);
    }
    cl_sleep_ms(5000);
    cl_assert_running(&r);
    snprintf(cmd, sizeof cmd, "start-broker %d", p.leader);
    tb_itest_testenv(cmd);
    cl_sleep_ms(3000);
    cl_stop_workload(&r);
    cl_catch_up_and_stop(&r);
    cl_compare(&r, what);
    e2e_rmtree(r.dir);
}

Test(cluster, leader_killed_at_least_once, .timeout = 400, .fini = cl_restore)
{
    cl_leader_killed(false);
}

Test(cluster, leader_killed_exactly_once, .timeout = 400, .fini = cl_restore)
{
    cl_leader_killed(true);
}

Test(cluster, rolling_restart, .timeout = 600, .fini = cl_restore)
{
    cl_run r;
    cl_setup(&r, "clrr", true, NULL);
    cl_start(&r);
    cl_wait_streaming(&r);
    cl_start_cache(&r);
    cl_start_workload(&r);
    const char *topics[] = {r.topic, r.offsets, NULL};
    for (int n = 1; n <= 3; n++) {
        cl_wait_in_sync(topics);
        char cmd[64];
        fprintf(stderr, "cluster[rolling_restart]: restarting broker %d\n", n);
        snprintf(cmd, sizeof cmd, "stop-broker %d", n);
        tb_itest_testenv(cmd);
        cl_sleep_ms(2000);
        cl_assert_running(&r);
        snprintf(cmd, sizeof cmd, "start-broker %d", n);
        tb_itest_testenv(cmd);
    }
    cl_wait_in_sync(topics);
    cl_sleep_ms(2000);
    cl_stop_workload(&r);
    cl_catch_up_and_stop(&r);
    cl_compare(&r, "rolling_restart");
    e2e_rmtree(r.dir);
}

/* The status file, /health and /metrics of a run, each read once. */
typedef struct cl_view {
    bool status_waiting;  /* status file: kafka_waiting_since_ms is a number */
    bool health_waiting;  /* /health: unhealthy, the reason says Kafka does not acknowledge */
    bool health_ok;       /* /health: 200, "status":"ok" */
    double metric_wait;   /* tributary_kafka_waiting_seconds, -1 absent */
    char reason[256];
} cl_view;

static void cl_look(const cl_run *r, unsigned port, cl_view *v)
{
    memset(v, 0, sizeof(*v));
    v->metric_wait = -1;
    tb_buf b;
    tb_buf_init(&b, 0);
    if (e2e_slurp(r->status, &b) && b.len > 0) {
        json_t *st = jo_parse(b.data, b.len);
        v->status_waiting = json_is_integer(json_object_get(st, "kafka_waiting_since_ms"));
        json_decref(st);
    }
    int code = e2e_http_get(port, "/health", &b);
    if (code > 0 && b.len > 0) {
        json_t *h = jo_parse(b.data, b.len);
        const char *reason = json_string_value(json_object_get(h, "reason"));
        const char *status = json_string_value(json_object_get(h, "status"));
        snprintf(v->reason, sizeof v->reason, "%d %s: %s", code, status ? status : "?", reason ? reason : "null");
        v->health_waiting = code == 503 && reason && strncmp(reason, "kafka not acknowledging writes since ", 37) == 0 &&
                            json_is_false(json_object_get(h, "healthy"));
        v->health_ok = code == 200 && status && strcmp(status, "ok") == 0;
        json_decref(h);
    }
    if (e2e_http_get(port, "/metrics", &b) == 200) {
        tb_buf_putc(&b, '\0');
        const char *l = strstr(tb_buf_cstr(&b), "\ntributary_kafka_waiting_seconds");
        if (l && (l = strchr(l + 1, ' ')))
            v->metric_wait = strtod(l + 1, NULL);
    }
    tb_buf_free(&b);
}

/* Two of the three brokers down: fewer in-sync replicas than min.insync.replicas (2) and no
 * controller quorum. The connector waits (it must not stop), says so in its status file,
 * /health and /metrics, and goes on when they are back, losing nothing. */
static void cl_two_down(bool exactly_once)
{
    const char *what = exactly_once ? "two_brokers_down_exactly_once" : "two_brokers_down";
    unsigned port = e2e_free_port();
    char extra[64];
    snprintf(extra, sizeof extra, "metrics.listen=127.0.0.1:%u\n", port);
    cl_run r;
    cl_setup(&r, exactly_once ? "cl2e" : "cl2d", exactly_once, extra);
    cl_start(&r);
    cl_wait_streaming(&r);
    cl_start_cache(&r);
    cl_start_workload(&r);
    cl_sleep_ms(2000);
    cl_part p = {-1, 0, 0};
    cr_assert(cl_partition(r.topic, 0, &p) && p.leader >= 1, "no leader for %s", r.topic);
    int down[2], nd = 0;
    for (int n = 1; n <= 3; n++)
        if (n != p.leader)
            down[nd++] = n;
    char cmd[64];
    for (int i = 0; i < 2; i++) {
        fprintf(stderr, "cluster[%s]: SIGKILL of broker %d (the leader %d stays)\n", what, down[i], p.leader);
        snprintf(cmd, sizeof cmd, "kill-broker %d", down[i]);
        tb_itest_testenv(cmd);
    }
    cl_view v;
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) {
        cl_assert_running(&r);
        cl_look(&r, port, &v);
        if (v.status_waiting && v.health_waiting && v.metric_wait > 0)
            break;
        cr_assert(tb_itest_now_ms() < deadline,
                  "120 s after two brokers went down: status waiting %d, /health %s, tributary_kafka_waiting_seconds "
                  "%g; see %s",
                  (int)v.status_waiting, v.reason, v.metric_wait, r.log);
        usleep(500000);
    }
    fprintf(stderr, "cluster[%s]: waiting as expected: /health %s, waiting %g s\n", what, v.reason, v.metric_wait);
    if (exactly_once) {
        /* the open Kafka transaction outlives transaction.timeout.ms (60 s): its messages fail,
         * the connector aborts it, and the abort itself waits for the brokers (librdkafka
         * refuses a new transaction until it is done) */
        const char *want = "aborting the Kafka transaction waits for the brokers";
        tb_buf lg;
        tb_buf_init(&lg, 0);
        deadline = tb_itest_now_ms() + 240000;
        while (!(e2e_slurp(r.log, &lg) && strstr(tb_buf_cstr(&lg), want))) {
            cl_assert_running(&r);
            cl_look(&r, port, &v);
            cr_assert(v.status_waiting && v.health_waiting && v.metric_wait > 0,
                      "%s: no longer says it waits for Kafka while the transaction cannot end: status waiting %d, "
                      "/health %s, tributary_kafka_waiting_seconds %g; see %s",
                      what, (int)v.status_waiting, v.reason, v.metric_wait, r.log);
            cr_assert(tb_itest_now_ms() < deadline, "%s: no WARN \"%s\" within 240 s; see %s", what, want, r.log);
            usleep(500000);
        }
        tb_buf_free(&lg);
        fprintf(stderr, "cluster[%s]: the abort waits for the brokers, still saying so: /health %s, waiting %g s\n",
                what, v.reason, v.metric_wait);
    }
    /* a node recovering from SIGKILL on this loaded machine may take minutes to register */
    setenv("TRIBUTARY_TESTENV_TIMEOUT", "300", 1);
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "start-broker %d", down[i]);
        tb_itest_testenv(cmd);
    }
    deadline = tb_itest_now_ms() + 180000;
    for (;;) {
        cl_assert_running(&r);
        cl_look(&r, port, &v);
        if (!v.status_waiting && v.health_ok && v.metric_wait == 0)
            break;
        cr_assert(tb_itest_now_ms() < deadline,
                  "180 s after the brokers came back: status waiting %d, /health %s, tributary_kafka_waiting_seconds "
                  "%g; see %s",
                  (int)v.status_waiting, v.reason, v.metric_wait, r.log);
        usleep(500000);
    }
    tb_buf lg;
    tb_buf_init(&lg, 0);
    bool read = e2e_slurp(r.log, &lg);
    const char *l = tb_buf_cstr(&lg);
    bool waited = read && strstr(l, "Kafka has acknowledged nothing for") && strstr(l, "Kafka acknowledges writes again");
    /* the abort ends when the brokers answer, or the coordinator ended the transaction itself
     * (transaction.timeout.ms) and a new producer goes on; either way the source is read again */
    bool resumed = read && (strstr(l, "aborting the Kafka transaction is done after") ||
                            strstr(l, "the transaction coordinator ended the Kafka transaction itself")) &&
                   strstr(l, "reading the source again from");
    tb_buf_free(&lg);
    cr_assert(waited, "the log does not say that the connector waited for Kafka and went on; see %s", r.log);
    cr_assert(!exactly_once || resumed,
              "the log does not say that the abort ended and the source was read again; see %s", r.log);
    cl_sleep_ms(2000);
    cl_stop_workload(&r);
    cl_catch_up_and_stop(&r);
    cl_compare(&r, what);
    e2e_rmtree(r.dir);
}

Test(cluster, two_brokers_down, .timeout = 900, .fini = cl_restore)
{
    cl_two_down(false);
}

/* The same with exactly_once: the open Kafka transaction cannot commit while two brokers are
 * down; the connector waits or aborts and resumes from its committed position, and a
 * read_committed consumer still sees every change once. */
Test(cluster, two_brokers_down_exactly_once, .timeout = 900, .fini = cl_restore)
{
    cl_two_down(true);
}

/* ------------------------------------------------------------ the cache across instances */

#define CL_CACHES 3

/* Every key's partition in topic (the latest record of {"id":N}), into part[id] (-1 none). */
static void cl_key_partitions(const char *topic, int *part, int nids)
{
    for (int i = 0; i < nids; i++)
        part[i] = -1;
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", cl_brokers(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "cluster-key-partitions", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    for (int p = 0; p < 6; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    int left = parts->cnt;
    long long deadline = tb_itest_now_ms() + 60000;
    while (left > 0) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 60 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            left--;
        } else {
            cr_assert(!m->err, "consume %s: %s", topic, rd_kafka_message_errstr(m));
            json_t *k = jo_parse(m->key, m->key_len);
            json_t *id = json_object_get(k, "id");
            if (json_is_integer(id) && json_integer_value(id) >= 0 && json_integer_value(id) < nids)
                part[json_integer_value(id)] = m->payload ? (int)m->partition : -1;
            json_decref(k);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* What one cache file holds: per id its row's _partition (-1 none); the partitions it stores
 * an offset for (bit mask). False when the file cannot be read yet. */
/* The source's values of row id (the cache must hold the same): v, and s as text. */
typedef struct cl_row {
    int v;
    char s[48];
} cl_row;

static bool cl_cache_rows(const char *path, const char *table, const char *topic, int *row_part, int nids,
                          unsigned *owned, const cl_row *want, char *why, size_t cap)
{
    for (int i = 0; i < nids; i++)
        row_part[i] = -1;
    *owned = 0;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    sqlite3_busy_timeout(db, 5000);
    char q[512];
    sqlite3_stmt *st = NULL;
    bool ok = true;
    snprintf(q, sizeof q, "SELECT id, _partition, v, s FROM \"%s\"", table);
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        ok = false;
    } else {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int id = sqlite3_column_int(st, 0);
            if (id < 0 || id >= nids)
                continue;
            row_part[id] = sqlite3_column_int(st, 1);
            const char *sv = (const char *)sqlite3_column_text(st, 3);
            if (sqlite3_column_int(st, 2) != want[id].v || !sv || strcmp(sv, want[id].s) != 0) {
                snprintf(why, cap, "id %d in %s: v=%d s=%s, the source has v=%d s=%s", id, path,
                         sqlite3_column_int(st, 2), sv ? sv : "NULL", want[id].v, want[id].s);
                rc = SQLITE_DONE;
                ok = false;
                break;
            }
        }
        ok = ok && rc == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (ok && sqlite3_prepare_v2(db, "SELECT partition FROM _tributary_offsets WHERE topic = ?1", -1, &st, NULL) ==
                  SQLITE_OK) {
        sqlite3_bind_text(st, 1, topic, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW)
            *owned |= 1u << (sqlite3_column_int(st, 0) & 31);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

/* The live instances' files together hold every source row exactly once, each on its key's
 * partition, each in the instance that stores that partition's offset, no partition in two
 * instances, all six owned. Why not, into why. (Not asserted: that each instance owns some:
 * the group also assigns the schema and offsets topics' partitions, which the assignor counts,
 * so one instance may hold none of the table's.) */
static bool cl_caches_settled(const char caches[][320], const bool *live, const char *table, const char *topic,
                              const int *src, const cl_row *want, const int *kpart, int nids, unsigned *owned,
                              char *why, size_t cap)
{
    static int rows[CL_CACHES][CL_IDS];
    unsigned all = 0;
    for (int c = 0; c < CL_CACHES; c++) {
        owned[c] = 0;
        if (!live[c])
            continue;
        why[0] = '\0';
        if (!cl_cache_rows(caches[c], table, topic, rows[c], nids, &owned[c], want, why, cap)) {
            if (!why[0])
                snprintf(why, cap, "cache %d not readable yet", c + 1);
            return false;
        }
        if (all & owned[c])
            return snprintf(why, cap, "cache %d stores an offset of a partition another one stores", c + 1), false;
        all |= owned[c];
    }
    for (int id = 0; id < nids; id++) {
        int holders = 0;
        for (int c = 0; c < CL_CACHES; c++) {
            if (!live[c] || rows[c][id] < 0)
                continue;
            holders++;
            if (rows[c][id] != kpart[id])
                return snprintf(why, cap, "id %d in cache %d on partition %d, its key is on partition %d", id, c + 1,
                                rows[c][id], kpart[id]), false;
            if (!(owned[c] & (1u << rows[c][id])))
                return snprintf(why, cap, "id %d in cache %d, which does not own partition %d", id, c + 1,
                                rows[c][id]), false;
        }
        if (holders != (src[id] ? 1 : 0))
            return snprintf(why, cap, "id %d held by %d caches, the source has %d", id, holders, src[id]), false;
    }
    if (all != 0x3f)
        return snprintf(why, cap, "the live caches own partitions %#x of the six", all), false;
    return true;
}

/* The group has settled with the table's partitions spread: a balanced assignment of the 8
 * partitions (6 of the table, the schema and offsets topics' one each) gives 3, 3 and 2 to three
 * members and 4 each to two, so at least two instances own partitions of the table. Until then
 * the instances that have not joined yet own nothing and the others everything. */
static bool cl_spread(const unsigned *owned, const bool *live, char *why, size_t cap)
{
    int n = 0;
    for (int c = 0; c < CL_CACHES; c++)
        n += live[c] && owned[c] != 0;
    if (n >= 2)
        return true;
    snprintf(why, cap, "%d instance(s) own partitions of the table, not yet spread", n);
    return false;
}

Test(cluster, cache_group_failover, .timeout = 900, .fini = cl_restore)
{
    cl_run r;
    cl_setup(&r, "clcg", false, "topic.partitions=6\n");
    cl_start(&r);
    cl_wait_streaming(&r);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 7 = 0", r.db);
    e2e_sql(m, "INSERT INTO %s.t SELECT seq, seq, 'more' FROM %s.seq_501_to_900", r.db, r.db);
    mysql_close(m);
    cl_catch_up_and_stop(&r);

    static int src[CL_IDS], kpart[CL_IDS];
    static cl_row want[CL_IDS];
    memset(src, 0, sizeof src);
    memset(want, 0, sizeof want);
    m = e2e_mysql();
    tb_buf ids;
    tb_buf_init(&ids, 0);
    char q[256];
    snprintf(q, sizeof q, "SELECT id, v, s FROM %s.t", r.db);
    e2e_query_text(m, q, &ids);
    mysql_close(m);
    tb_buf_putc(&ids, '\0');
    for (const char *p = tb_buf_cstr(&ids); *p; p = strchr(p, '\n') + 1) { /* id|v|s lines */
        int id = atoi(p);
        const char *bar = strchr(p, '|'), *bar2 = bar ? strchr(bar + 1, '|') : NULL, *nl = strchr(p, '\n');
        cr_assert(id >= 0 && id < CL_IDS && bar2 && nl && bar2 < nl, "source row %.60s", p);
        src[id] = 1;
        want[id].v = atoi(bar + 1);
        snprintf(want[id].s, sizeof want[id].s, "%.*s", (int)(nl - bar2 - 1), bar2 + 1);
    }
    tb_buf_free(&ids);
    cl_key_partitions(r.topic, kpart, CL_IDS);
    for (int id = 0; id < CL_IDS; id++)
        cr_assert(!src[id] || kpart[id] >= 0, "id %d is not in the topic", id);

    char ccfg[400];
    snprintf(ccfg, sizeof ccfg, "%s/cache.properties", r.dir);
    tb_buf base;
    tb_buf_init(&base, 0);
    cr_assert(e2e_slurp(r.cfg, &base));
    FILE *f = fopen(ccfg, "w");
    cr_assert_not_null(f);
    fprintf(f, "%scache.mode=group\ncache.group.id=%s-cache\ncache.on.revoke=drop\nkafka.session.timeout.ms=6000\n"
               "kafka.heartbeat.interval.ms=500\n",
            tb_buf_cstr(&base), r.db);
    fclose(f);
    tb_buf_free(&base);

    char caches[CL_CACHES][320], logs[CL_CACHES][320], setp[CL_CACHES][340], sets[CL_CACHES][340];
    pid_t pid[CL_CACHES];
    bool live[CL_CACHES];
    for (int c = 0; c < CL_CACHES; c++) {
        snprintf(caches[c], sizeof caches[c], "%s/cache%d.db", r.dir, c + 1);
        snprintf(logs[c], sizeof logs[c], "%s/cache%d.log", r.dir, c + 1);
        snprintf(setp[c], sizeof setp[c], "cache.path=%.319s", caches[c]);
        snprintf(sets[c], sizeof sets[c], "status.file=%s/cache%d.status", r.dir, c + 1);
    }
    char table[200], why[300] = "";
    unsigned owned[CL_CACHES];
    snprintf(table, sizeof table, "%s.t", r.db);
#define CL_START_CACHE(c)                                                                                     \
    do {                                                                                                      \
        const char *a_[] = {"cache", "--config", ccfg, "--set", setp[c], "--set", sets[c], NULL};            \
        pid[c] = e2e_spawn(a_, logs[c]);                                                                      \
        live[c] = true;                                                                                       \
    } while (0)
#define CL_WAIT_SETTLED(what, secs)                                                                            \
    do {                                                                                                      \
        long long d_ = tb_itest_now_ms() + (secs) * 1000LL;                                                   \
        while (!cl_caches_settled(caches, live, table, r.topic, src, want, kpart, CL_IDS, owned, why, sizeof why) || \
               !cl_spread(owned, live, why, sizeof why)) {                                                   \
            for (int c_ = 0; c_ < CL_CACHES; c_++)                                                            \
                cr_assert(!live[c_] || e2e_wait(pid[c_], 0) == -2, "cache %d stopped; see %s", c_ + 1,        \
                          logs[c_]);                                                                          \
            cr_assert(tb_itest_now_ms() < d_, "%s: not settled after %d s: %s (logs in %s)", what, secs, why, \
                      r.dir);                                                                                 \
            usleep(500000);                                                                                   \
        }                                                                                                     \
    } while (0)

    for (int c = 0; c < CL_CACHES; c++)
        CL_START_CACHE(c);
    CL_WAIT_SETTLED("three instances", 180);
    fprintf(stderr, "cluster[cache_group]: three instances hold every row once\n");

    /* the victim: an instance that owns partitions of the table (the group also assigns the
     * schema and offsets topics, so one may own none of them) */
    int victim = 0;
    for (int c = 1; c < CL_CACHES; c++)
        if (__builtin_popcount(owned[c]) > __builtin_popcount(owned[victim]))
            victim = c;
    unsigned moved = owned[victim];
    cr_assert_neq(moved, 0u);
    kill(pid[victim], SIGKILL);
    cr_assert_eq(e2e_wait(pid[victim], 10000), -1);
    live[victim] = false;
    CL_WAIT_SETTLED("an instance killed", 180);
    unsigned took = 0;
    for (int c = 0; c < CL_CACHES; c++)
        took |= live[c] ? owned[c] & moved : 0;
    cr_assert_eq(took, moved, "partitions %#x of the killed instance, %#x taken over", moved, took);
    fprintf(stderr, "cluster[cache_group]: after SIGKILL of instance %d (partitions %#x), the others hold every "
                    "row once, with the source's values\n", victim + 1, moved);

    CL_START_CACHE(victim);
    CL_WAIT_SETTLED("the killed instance restarted", 180);
    fprintf(stderr, "cluster[cache_group]: instance %d restarted, the assignment settled\n", victim + 1);
#undef CL_START_CACHE
#undef CL_WAIT_SETTLED
    for (int c = 0; c < CL_CACHES; c++) {
        kill(pid[c], SIGTERM);
        cr_assert_eq(e2e_wait(pid[c], 60000), 0, "cache %d did not stop cleanly; see %s", c + 1, logs[c]);
        e2e_assert_clean_log(logs[c]);
    }
    e2e_rmtree(r.dir);
}
