/*
 * Integration tests of the Kafka sink against the real broker of
 * scripts/testenv (TRIBUTARY_TEST_KAFKA, TRIBUTARY_TEST_DIR). They FAIL when
 * the environment is missing. Topic and connector names are unique per run.
 *
 *   kafka/topics_created_compacted: table, schema and offsets topics are
 *     created with cleanup.policy=compact (DescribeConfigs), partitions as set
 *   kafka/refuses_non_compact_topic: an existing delete-policy topic is refused
 *     with an error naming it; accepted with topic.check.compact=false
 *   kafka/keys_and_partitions: keys are byte-identical when another process
 *     produces the same events, and every partition equals Java's
 *     toPositive(murmur2(key)) % n (murmur2 implemented in the test)
 *   kafka/partitions_added_are_followed: a topic of one partition (whose batches skip the
 *     partitioner) grown to 3: once the sink's client knows it, every row sent after
 *     KSINK_PARTS_CHECK_MS is on Java's partition for 3
 *   kafka/tombstone_after_delete
 *   kafka/compaction_keeps_latest: aggressive compaction settings; polled with a
 *     deadline until only the latest value per key remains and deleted keys are gone
 *   kafka/broker_restart: broker stopped during produce and restarted; nothing
 *     lost; the position never passes unacknowledged transactions
 *   kafka/offsets_cli_round_trip: `tributary offsets set` then `show`
 *   kafka/exactly_once_commit_and_abort: committed batch visible with its offsets
 *     record; an uncommitted batch is invisible to read_committed after close
 *   kafka/exactly_once_abort_and_continue: a batch the broker rejects is aborted
 *     (retriable error, position kept) and the same sink instance goes on
 */
#include <sys/wait.h>

#include "json_oracle.h"
#include "ksink_int.h"
#include "ksink_test_util.h"
#include "../integration/tb_itest.h"

static const char *kenv(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        cr_assert_fail("%s is not set: run under scripts/testenv (eval \"$(scripts/testenv up)\") or scripts/test",
                       name);
    return v;
}

typedef struct kenvx {
    const char *bootstrap;
    char prefix[128], name[128], topic[300];
} kenvx;

static void kx_init(kenvx *x)
{
    x->bootstrap = kenv("TRIBUTARY_TEST_KAFKA");
    kt_unique(x->prefix, sizeof x->prefix, "kp");
    kt_unique(x->name, sizeof x->name, "kc");
    snprintf(x->topic, sizeof x->topic, "%s.shop.orders", x->prefix);
}

static rd_kafka_t *admin_client(const char *bootstrap)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    return rk;
}

static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q)
{
    long long deadline = kt_now_ms() + KT_TIMEOUT_MS;
    while (kt_now_ms() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 500);
        if (ev)
            return ev;
    }
    cr_assert_fail("admin request timed out");
    return NULL;
}

/* The value of config `key` of topic, copied into out. */
static void topic_config(const char *bootstrap, const char *topic, const char *key, char *out, size_t cap)
{
    rd_kafka_t *rk = admin_client(bootstrap);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = admin_wait(q);
    cr_assert_eq(rd_kafka_event_error(ev), 0, "%s", rd_kafka_event_error_string(ev));
    size_t n = 0, ne = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_ConfigResource_error(rs[0]), 0, "topic %s: %s", topic,
                 rd_kafka_ConfigResource_error_string(rs[0]));
    const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[0], &ne);
    out[0] = '\0';
    for (size_t i = 0; i < ne; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(es[i]), key) == 0)
            snprintf(out, cap, "%s", rd_kafka_ConfigEntry_value(es[i]) ? rd_kafka_ConfigEntry_value(es[i]) : "");
    rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

static int topic_partitions(const char *bootstrap, const char *topic)
{
    rd_kafka_t *rk = admin_client(bootstrap);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, KT_TIMEOUT_MS), 0);
    cr_assert_eq(md->topic_cnt, 1);
    cr_assert_eq(md->topics[0].err, 0, "%s", rd_kafka_err2str(md->topics[0].err));
    int n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return n;
}

/* Create topic with the given configs (NULL-terminated key, value pairs). */
static void create_topic(const char *bootstrap, const char *topic, int partitions, const char *const *kv)
{
    char errstr[512];
    rd_kafka_t *rk = admin_client(bootstrap);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, errstr, sizeof errstr);
    cr_assert_not_null(nt, "%s", errstr);
    for (size_t i = 0; kv && kv[i]; i += 2)
        cr_assert_eq(rd_kafka_NewTopic_set_config(nt, kv[i], kv[i + 1]), 0);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = admin_wait(q);
    size_t n = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_topic_result_error(tr[0]), 0, "%s", rd_kafka_topic_result_error_string(tr[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

static ksink *open_ok(cfg *c)
{
    ksink *ks = NULL;
    tb_error err;
    cr_assert_eq(ksink_open(c, &ks, &err), TB_OK, "%s", err.msg);
    return ks;
}

static void flush_ok(ksink *ks)
{
    tb_error err;
    cr_assert_eq(ksink_flush(ks, KT_TIMEOUT_MS, &err), TB_OK, "%s", err.msg);
}

/* Every case waits on the broker: a hang ends as that case's failure. */
TestSuite(kafka, .timeout = 180);

Test(kafka, topics_created_compacted)
{
    kenvx x;
    kx_init(&x);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    kt_set(c, "topic.partitions", "3");
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e, 10);
    flush_ok(ks);
    tb_error err;
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    char v[128], st[300], ot[300];
    snprintf(st, sizeof st, "%s.schema", x.prefix);
    snprintf(ot, sizeof ot, "%s.offsets", x.name);
    const char *topics[] = {x.topic, st, ot};
    for (size_t i = 0; i < 3; i++) {
        topic_config(x.bootstrap, topics[i], "cleanup.policy", v, sizeof v);
        cr_expect_str_eq(v, "compact", "topic %s", topics[i]);
        /* how long a tombstone stays once compacted: the longest a cache may be stopped */
        topic_config(x.bootstrap, topics[i], "delete.retention.ms", v, sizeof v);
        cr_expect_str_eq(v, "86400000", "topic %s: delete.retention.ms (topic.delete.retention.ms)", topics[i]);
        topic_config(x.bootstrap, topics[i], "min.insync.replicas", v, sizeof v);
        cr_expect_str_eq(v, "1", "topic %s: min.insync.replicas for replication factor 1", topics[i]);
    }
    cr_expect_eq(topic_partitions(x.bootstrap, x.topic), 3);
    cr_expect_eq(topic_partitions(x.bootstrap, ot), 1);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

Test(kafka, refuses_non_compact_topic)
{
    kenvx x;
    kx_init(&x);
    const char *kv[] = {"cleanup.policy", "delete", NULL};
    create_topic(x.bootstrap, x.topic, 1, kv);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    tb_error err;
    cr_assert_eq(ksink_send(ks, e, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, x.topic) != NULL, "names the topic: %s", err.msg);
    cr_assert(strstr(err.msg, "compact") != NULL, "%s", err.msg);
    ksink_close(ks);
    kt_set(c, "topic.check.compact", "false");
    ks = open_ok(c);
    cr_assert_eq(ksink_send(ks, e, &err), TB_OK, "%s", err.msg);
    flush_ok(ks);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

#define KP_ROWS 300

/* Produce KP_ROWS creates (ids 0..n-1) with prefix into 7 partitions. */
static void produce_rows(const char *bootstrap, const char *name, const char *prefix)
{
    cfg *c = kt_cfg(bootstrap, name, prefix);
    kt_set(c, "topic.partitions", "7");
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    for (int i = 0; i < KP_ROWS; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "row-%d", i);
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, (int64_t)i * 7919 - 1000, nm, NULL, 0, (uint64_t)i);
        kt_send_tx(ks, e, (uint64_t)i + 1);
        evt_event_free(e);
    }
    flush_ok(ks);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

static int cmp_msg_key(const void *a, const void *b)
{
    const kt_msg *x = a, *y = b;
    return strcmp(x->key, y->key);
}

Test(kafka, keys_and_partitions)
{
    kenvx x;
    kx_init(&x);
    char prefix2[160], topic2[300];
    snprintf(prefix2, sizeof prefix2, "%s_other", x.prefix);
    snprintf(topic2, sizeof topic2, "%s.shop.orders", prefix2);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) { /* another process, another producer instance */
        produce_rows(x.bootstrap, x.name, prefix2);
        _exit(0);
    }
    produce_rows(x.bootstrap, x.name, x.prefix);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child producer failed");

    kt_msgs a = kt_read_topic(x.bootstrap, x.topic, 7);
    kt_msgs b = kt_read_topic(x.bootstrap, topic2, 7);
    cr_assert_eq(a.n, KP_ROWS);
    cr_assert_eq(b.n, KP_ROWS);
    int used[7] = {0};
    for (size_t i = 0; i < a.n; i++) {
        int32_t want = kt_java_partition(a.m[i].key, a.m[i].key_len, 7);
        cr_assert_eq(a.m[i].partition, want, "key %s: partition %d, Java's murmur2 gives %d", a.m[i].key,
                     a.m[i].partition, want);
        used[a.m[i].partition]++;
    }
    for (int p = 0; p < 7; p++)
        cr_expect_gt(used[p], 0, "partition %d unused: keys do not spread", p);
    qsort(a.m, a.n, sizeof(*a.m), cmp_msg_key);
    qsort(b.m, b.n, sizeof(*b.m), cmp_msg_key);
    for (size_t i = 0; i < a.n; i++) {
        cr_assert_eq(a.m[i].key_len, b.m[i].key_len);
        cr_assert(memcmp(a.m[i].key, b.m[i].key, a.m[i].key_len) == 0, "key %s vs %s", a.m[i].key, b.m[i].key);
        cr_assert_eq(a.m[i].partition, b.m[i].partition, "key %s", a.m[i].key);
    }
    /* a known value: the key of id -1000 */
    bool found = false;
    for (size_t i = 0; i < a.n; i++)
        found |= strcmp(a.m[i].key, "{\"id\":-1000}") == 0;
    cr_assert(found);
    kt_msgs_free(&a);
    kt_msgs_free(&b);
}

/* Grow topic to n partitions (CreatePartitions). */
static void add_partitions(const char *bootstrap, const char *topic, int n)
{
    char errstr[512];
    rd_kafka_t *rk = admin_client(bootstrap);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)n, errstr, sizeof errstr);
    cr_assert_not_null(np, "%s", errstr);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
    rd_kafka_event_t *ev = admin_wait(q);
    size_t cnt = 0;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &cnt);
    cr_assert_eq(cnt, 1);
    cr_assert_eq(rd_kafka_topic_result_error(tr[0]), 0, "%s", rd_kafka_topic_result_error_string(tr[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_NewPartitions_destroy(np);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

Test(kafka, partitions_added_are_followed)
{
    kenvx x;
    kx_init(&x);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix); /* topic.partitions=1 */
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    uint64_t pos = 1;
    int id = 0;
    for (; id < 600; id++) { /* after the first batch, partition 0 is named, not computed */
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, id, "before", NULL, 0, pos);
        kt_send_tx(ks, e, pos++);
        evt_event_free(e);
    }
    flush_ok(ks);
    add_partitions(x.bootstrap, x.topic, 3);
    /* the sink's client learns the count from a metadata answer of its own */
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(ks->rk, x.topic, NULL);
    cr_assert_not_null(rkt);
    long long deadline = kt_now_ms() + KT_TIMEOUT_MS, known = 0;
    for (int parts = 0; parts != 3;) {
        cr_assert_lt(kt_now_ms(), deadline, "the sink's client never saw 3 partitions (%d)", parts);
        const struct rd_kafka_metadata *md = NULL;
        cr_assert_eq(rd_kafka_metadata(ks->rk, 0, rkt, &md, KT_TIMEOUT_MS), 0);
        parts = md->topic_cnt == 1 ? md->topics[0].partition_cnt : 0;
        rd_kafka_metadata_destroy(md);
        known = kt_now_ms();
    }
    rd_kafka_topic_destroy(rkt);
    /* rows go on; those staged KSINK_PARTS_CHECK_MS after that went through the partitioner again */
    int first_checked = -1;
    for (int n = 0; first_checked < 0 || id < first_checked + 300; id++, n++) {
        if (first_checked < 0 && kt_now_ms() > known + 1100) /* KSINK_PARTS_CHECK_MS plus the clock's grain */
            first_checked = id;
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, id, "after", NULL, 0, pos);
        kt_send_tx(ks, e, pos++);
        evt_event_free(e);
        if (n % 20 == 19)
            flush_ok(ks); /* batches over the second, not one */
    }
    flush_ok(ks);
    kt_msgs a = kt_read_topic(x.bootstrap, x.topic, 3);
    cr_assert_eq(a.n, (size_t)id);
    size_t checked = 0, used[3] = {0};
    for (size_t i = 0; i < a.n; i++) {
        int rid = atoi(a.m[i].key + strlen("{\"id\":"));
        if (rid < first_checked)
            continue;
        int32_t want = kt_java_partition(a.m[i].key, a.m[i].key_len, 3);
        cr_assert_eq(a.m[i].partition, want, "key %s: partition %d, Java's murmur2 over 3 gives %d", a.m[i].key,
                     a.m[i].partition, want);
        used[want]++;
        checked++;
    }
    cr_assert_eq(checked, 300);
    cr_assert(used[1] > 0 && used[2] > 0, "keys on partitions 0/1/2: %zu/%zu/%zu", used[0], used[1], used[2]);
    kt_msgs_free(&a);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

Test(kafka, tombstone_after_delete)
{
    kenvx x;
    kx_init(&x);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e1 = kt_event(t, EVT_OP_CREATE, 0, 5, "five", NULL, 0, 1);
    evt_event *e2 = kt_event(t, EVT_OP_DELETE, 5, 0, NULL, NULL, 0, 2);
    kt_send_tx(ks, e1, 10);
    kt_send_tx(ks, e2, 20);
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 20);
    kt_msgs ms = kt_read_topic(x.bootstrap, x.topic, 1);
    cr_assert_eq(ms.n, 3);
    cr_assert_str_eq(ms.m[1].key, "{\"id\":5}");
    json_t *v = jo_parse(ms.m[1].value, ms.m[1].value_len);
    cr_assert(jo_expect_at(v, JO_PATH("op"), "\"d\"") &&
              jo_expect_at(v, JO_PATH("before"), "{\"id\":5,\"name\":\"old\",\"note\":null}") &&
              jo_expect_at(v, JO_PATH("after"), "null"), "%s", ms.m[1].value);
    json_decref(v);
    cr_assert_str_eq(ms.m[2].key, "{\"id\":5}");
    cr_assert_null(ms.m[2].value, "the delete is followed by a tombstone");
    kt_msgs_free(&ms);
    evt_event_free(e1);
    evt_event_free(e2);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

Test(kafka, compaction_keeps_latest, .timeout = 240)
{
    kenvx x;
    kx_init(&x);
    const char *kv[] = {"cleanup.policy", "compact", "segment.ms", "100", "min.cleanable.dirty.ratio", "0.01",
                        "delete.retention.ms", "100", "min.compaction.lag.ms", "0", NULL};
    create_topic(x.bootstrap, x.topic, 1, kv);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    kt_set(c, "value.format", "row"); /* a delete is only a tombstone */
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    uint64_t pos = 1;
    for (int round = 0; round < 5; round++)
        for (int id = 0; id < 20; id++) {
            char nm[32];
            snprintf(nm, sizeof nm, "v%d", round);
            evt_event *e = kt_event(t, round ? EVT_OP_UPDATE : EVT_OP_CREATE, id, id, nm, NULL, 0, pos);
            kt_send_tx(ks, e, pos++);
            evt_event_free(e);
        }
    for (int id = 0; id < 5; id++) {
        evt_event *e = kt_event(t, EVT_OP_DELETE, id, 0, NULL, NULL, 0, pos);
        kt_send_tx(ks, e, pos++);
        evt_event_free(e);
    }
    flush_ok(ks);
    /* Segments roll only when a new message arrives after segment.ms: keep
     * writing a filler key while waiting for the cleaner. */
    long long deadline = kt_now_ms() + 180000;
    bool done = false;
    int filler = 0;
    size_t last_n = 0;
    while (!done) {
        cr_assert_lt(kt_now_ms(), deadline, "not compacted in time (last read: %zu messages)", last_n);
        char nm[32];
        snprintf(nm, sizeof nm, "f%d", filler++);
        evt_event *e = kt_event(t, EVT_OP_UPDATE, 1000, 1000, nm, NULL, 0, pos);
        kt_send_tx(ks, e, pos++);
        evt_event_free(e);
        flush_ok(ks);
        kt_msgs ms = kt_read_topic(x.bootstrap, x.topic, 1);
        last_n = ms.n;
        int seen[20] = {0};
        bool ok = true;
        for (size_t i = 0; i < ms.n; i++) {
            int id = -1;
            if (sscanf(ms.m[i].key, "{\"id\":%d}", &id) != 1 || id == 1000)
                continue;
            json_t *v = ms.m[i].value ? jo_parse(ms.m[i].value, ms.m[i].value_len) : NULL;
            const char *name = json_string_value(json_object_get(v, "name")); /* value.format=row */
            if (id < 0 || id >= 20 || id < 5 || !name || strcmp(name, "v4") != 0)
                ok = false; /* an old value, a deleted key or its tombstone is still there */
            else
                seen[id]++;
            json_decref(v);
        }
        for (int id = 5; id < 20; id++)
            ok = ok && seen[id] == 1;
        kt_msgs_free(&ms);
        done = ok;
        if (!done)
            ksink_poll(ks, 1000); /* wait for the cleaner, serving delivery reports */
    }
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

static void testenv(const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/scripts/testenv %s %s >/dev/null 2>&1", TB_SOURCE_DIR, what,
             kenv("TRIBUTARY_TEST_DIR"));
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

Test(kafka, broker_restart, .timeout = 300, .fini = tb_itest_restore_servers)
{
    kenvx x;
    kx_init(&x);
    kenv("TRIBUTARY_TEST_DIR");
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    kt_set(c, "kafka.message.timeout.ms", "240000");
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    uint64_t pos = 1;
    for (int i = 0; i < 1000; i++, pos++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, i, "before", NULL, 0, pos);
        kt_send_tx(ks, e, pos);
        evt_event_free(e);
    }
    flush_ok(ks);
    uint64_t acked_pos = ksink_committable(ks)->pos;
    cr_assert_eq(acked_pos, 1000);

    testenv("stop-kafka");
    for (int i = 1000; i < 2000; i++, pos++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, i, "during", NULL, 0, pos);
        kt_send_tx(ks, e, pos);
        evt_event_free(e);
        ksink_poll(ks, 0);
        cr_assert_eq(ksink_committable(ks)->pos, acked_pos, "position moved while the broker is down");
    }
    tb_error err;
    cr_assert_neq(ksink_flush(ks, 2000, &err), TB_OK, "nothing can be acknowledged while the broker is down");
    cr_assert_eq(ksink_committable(ks)->pos, acked_pos);

    testenv("start-kafka");
    long long deadline = kt_now_ms() + 200000;
    uint64_t last = acked_pos;
    while (ksink_flush(ks, 1000, &err) != TB_OK) {
        cr_assert_eq(err.code, TB_ERR_KAFKA);
        cr_assert(err.retriable, "permanent failure after restart: %s", err.msg);
        cr_assert_lt(kt_now_ms(), deadline, "not delivered after the restart");
        uint64_t now = ksink_committable(ks)->pos;
        cr_assert_geq(now, last, "position went backwards");
        last = now;
    }
    cr_assert_eq(ksink_committable(ks)->pos, 2000);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    tb_position got;
    tb_position_init(&got);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.pos, 2000);
    tb_position_free(&got);

    kt_msgs ms = kt_read_topic(x.bootstrap, x.topic, 1);
    char *seen = calloc(2000, 1);
    for (size_t i = 0; i < ms.n; i++) {
        int id = -1;
        cr_assert_eq(sscanf(ms.m[i].key, "{\"id\":%d}", &id), 1);
        cr_assert(id >= 0 && id < 2000);
        seen[id] = 1;
    }
    for (int i = 0; i < 2000; i++)
        cr_assert(seen[i], "row %d lost", i);
    free(seen);
    kt_msgs_free(&ms);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

/* Run the tributary binary; stdout into out. Returns the exit status. */
static int run_cli(const char *args, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/app/tributary %s 2>&1", TB_BINARY_DIR, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(kafka, offsets_cli_round_trip)
{
    kenvx x;
    kx_init(&x);
    char props[256];
    snprintf(props, sizeof props, "/tmp/ksink-it-%ld.properties", (long)getpid());
    FILE *f = fopen(props, "w");
    cr_assert_not_null(f);
    fprintf(f, "name=%s\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n", x.name, x.prefix, x.bootstrap);
    fclose(f);
    char out[4096], args[1024];
    const char *text = "mariadb;server_id=1;file=mysql-bin.000007;pos=4711;row=0;gtid=0-1-99";
    snprintf(args, sizeof args, "offsets show --config %s", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "text: none\n") != NULL, "%s", out);
    snprintf(args, sizeof args, "offsets set --config %s --position '%s'", props, text);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    snprintf(args, sizeof args, "offsets show --config %s", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    char want[512];
    snprintf(want, sizeof want, "text: %s\n", text);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    const char *json = strstr(out, "\njson: "); /* the line after "text: ..." */
    cr_assert_not_null(json, "no json line: %s", out);
    json += strlen("\njson: ");
    json_t *pj = jo_parse(json, strcspn(json, "\n"));
    cr_assert(jo_expect_at(pj, JO_PATH("kind"), "\"mariadb\"") && jo_expect_at(pj, JO_PATH("server_id"), "1") &&
                  jo_expect_at(pj, JO_PATH("file"), "\"mysql-bin.000007\"") && jo_expect_at(pj, JO_PATH("pos"), "4711") &&
                  jo_expect_at(pj, JO_PATH("gtid"), "\"0-1-99\""),
              "%s", out);
    json_decref(pj);
    /* the reader starts at the low watermark it read, not at the logical BEGINNING (whose
     * lookup delayed the first fetch by up to 500 ms): librdkafka's debug log says where */
    snprintf(args, sizeof args, "offsets show --config %s --set log.level=debug --set kafka.debug=topic", props);
    static char dbg[1 << 20];
    cr_assert_eq(run_cli(args, dbg, sizeof dbg), 0, "%.2000s", dbg);
    cr_assert(strstr(dbg, "Start consuming") != NULL, "no librdkafka debug: %.2000s", dbg);
    cr_assert(strstr(dbg, "at offset BEGINNING") == NULL, "the offsets reader assigned BEGINNING");
    /* the library reads the same */
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    tb_position got;
    tb_position_init(&got);
    tb_error err;
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.pos, 4711);
    tb_position_free(&got);
    cfg_free(c);
    /* invalid text is refused with exit 2 and nothing is written */
    snprintf(args, sizeof args, "offsets set --config %s --position 'mariadb;pos=x'", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 2, "%s", out);
    snprintf(args, sizeof args, "offsets show --config %s", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    /* none forgets it */
    snprintf(args, sizeof args, "offsets set --config %s --position none", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    snprintf(args, sizeof args, "offsets show --config %s", props);
    cr_assert_eq(run_cli(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "text: none\n") != NULL, "%s", out);
    unlink(props);
}

Test(kafka, exactly_once_commit_and_abort)
{
    kenvx x;
    kx_init(&x);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    kt_set(c, "exactly.once", "true");
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    tb_error err;
    for (int i = 0; i < 3; i++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, i, "committed", NULL, 0, 1);
        kt_send_tx(ks, e, 100 + (uint64_t)i);
        evt_event_free(e);
    }
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 102);
    for (int i = 3; i < 5; i++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, i, "aborted", NULL, 0, 1);
        kt_send_tx(ks, e, 100 + (uint64_t)i);
        evt_event_free(e);
    }
    ksink_close(ks); /* no commit: the Kafka transaction is aborted */
    kt_msgs ms = kt_read_topic(x.bootstrap, x.topic, 1);
    cr_assert_eq(ms.n, 3, "read_committed sees %zu messages", ms.n);
    for (size_t i = 0; i < ms.n; i++)
        cr_assert(jo_expect_text_at(ms.m[i].value, ms.m[i].value_len, JO_PATH("after", "name"), "\"committed\""),
                  "message %zu", i);
    kt_msgs_free(&ms);
    tb_position got;
    tb_position_init(&got);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.pos, 102);
    tb_position_free(&got);
    /* a new instance fences the old one and continues */
    ks = open_ok(c);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 9, "again", NULL, 0, 1);
    kt_send_tx(ks, e, 200);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    evt_event_free(e);
    ms = kt_read_topic(x.bootstrap, x.topic, 1);
    cr_assert_eq(ms.n, 4);
    kt_msgs_free(&ms);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
}

/* exactly_once on the real broker: a message the broker rejects (over the
 * topic's max.message.bytes) makes the Kafka transaction abortable; the
 * commit aborts it (retriable), the position stays, the same sink instance
 * goes on, and read_committed readers never see the aborted batch. */
Test(kafka, exactly_once_abort_and_continue)
{
    kenvx x;
    kx_init(&x);
    const char *kv[] = {"cleanup.policy", "compact", "max.message.bytes", "3000", NULL};
    create_topic(x.bootstrap, x.topic, 1, kv);
    cfg *c = kt_cfg(x.bootstrap, x.name, x.prefix);
    kt_set(c, "exactly.once", "true");
    ksink *ks = open_ok(c);
    evt_table *t = kt_table("orders", 1);
    tb_error err;
    evt_event *small = kt_event(t, EVT_OP_CREATE, 0, 1, "first", NULL, 0, 1);
    kt_send_tx(ks, small, 100);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);

    char *big = malloc(12000); /* random letters: still ~7 KB after lz4 */
    uint32_t r = 12345;
    for (int i = 0; i < 12000; i++) {
        r = r * 1103515245u + 12345u;
        big[i] = (char)('a' + (r >> 16) % 26);
    }
    evt_event *large = kt_event(t, EVT_OP_CREATE, 0, 2, "rejected", big, 12000, 2);
    evt_event *mid = kt_event(t, EVT_OP_CREATE, 0, 3, "aborted", NULL, 0, 3);
    kt_send_tx(ks, mid, 150);
    kt_send_tx(ks, large, 200);
    tb_error_clear(&err);
    cr_assert_eq(ksink_commit(ks, &err), TB_ERR_KAFKA, "commit of a rejected batch: %s", err.msg);
    cr_assert(err.retriable, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100);

    evt_event *next = kt_event(t, EVT_OP_CREATE, 0, 4, "after", NULL, 0, 4);
    kt_send_tx(ks, next, 300);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "the same instance continues after an abort: %s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 300);
    ksink_close(ks);

    kt_msgs ms = kt_read_topic(x.bootstrap, x.topic, 1);
    cr_assert_eq(ms.n, 2, "read_committed sees %zu messages", ms.n);
    cr_assert_str_eq(ms.m[0].key, "{\"id\":1}");
    cr_assert_str_eq(ms.m[1].key, "{\"id\":4}");
    kt_msgs_free(&ms);
    tb_position got;
    tb_position_init(&got);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.pos, 300);
    tb_position_free(&got);
    free(big);
    evt_event_free(small);
    evt_event_free(large);
    evt_event_free(mid);
    evt_event_free(next);
    evt_table_unref(t);
    cfg_free(c);
}
