/*
 * Component tests of the Kafka sink against librdkafka's mock cluster (no
 * admin API there: topic.create=false, topics pre-created in the mock).
 *
 *   mock/messages_in_order: c, u, key-changing u, d become the DESIGN 4
 *     messages (keys, tombstones) after the schema record; committable = last tx
 *   mock/schema_once_per_version: one schema record per table version
 *   mock/position_waits_for_acks: broker down -> the position stays at the last
 *     acknowledged tx while later ones are in flight; broker up -> it advances
 *   mock/fatal_producer_error_restarts: a fatal idempotence error, a new producer, nothing lost
 *   mock/unconfirmed_delivery_restarts, unconfirmed_delivery_aborts_exactly_once: a
 *     Produce answered DUPLICATE_SEQUENCE_NUMBER though nothing was written (librdkafka
 *     reports success without an offset, as for a batch it acknowledges implicitly):
 *     not a delivery. The position stays before it; at least once a new producer goes
 *     on (and writes it again), exactly once the Kafka transaction is aborted
 *   mock/permanent_error_stops: a non-retriable produce error is returned by
 *     the next call and the position never passes the failed tx
 *   mock/queue_full_never_drops: a 10-message local queue, 2000 events, all arrive
 *   mock/oversize_fail, oversize_skip, oversize_dlq
 *   mock/offsets_commit_read_back: ksink_commit -> ksink_offsets_read
 *   mock/offsets_write_unconfirmed_is_an_error: `offsets set`'s record reported delivered
 *     without an offset is an error, and nothing is read back
 *   mock/empty_tx_committable: a transaction without messages advances the position
 *   mock/row_format_delete_is_tombstone
 *   mock/librdkafka_log_routed: librdkafka's log reaches tb_log; kafka.* passes through
 *   mock/exactly_once_commit_mid_transaction_refused
 *   mock/exactly_once_abortable_error: abortable error -> abort, retriable error,
 *     position kept at the last committed Kafka transaction
 *   mock/exactly_once_fenced_early_stops, exactly_once_fenced_after_timeout_goes_on:
 *     EndTxn answered PRODUCER_FENCED before transaction.timeout.ms (another
 *     instance: the sink stops) and after it (the coordinator's own abort: aborted,
 *     retriable, a new producer goes on)
 *   mock/stop_while_waiting_is_a_stop: a read of a topic's keys that fails retriably
 *     (ListOffsets answered NOT_LEADER_FOR_PARTITION) while a stop is requested ends
 *     as a stop (TB_ERR_STOPPED: the run stops cleanly), not as the Kafka error
 *   mock/push_sends_at_once_whatever_linger: ksink_push sends what librdkafka holds at once
 *     (linger.ms a minute) and returns with it acknowledged
 *   mock/gate_asked_before_each_message: the gate (ksink_set_gate: the run's lease
 *     check) is asked right before each message; refused, nothing is staged or sent
 */
#include "json_oracle.h"
#include "ksink_int.h"
#include "ksink_test_util.h"

#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <time.h>

#include "tb_log.h"

typedef struct mockenv {
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
    char prefix[128];
    char name[128];
    char topic[300];
} mockenv;

static void mock_up(mockenv *m)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(m->rk, "%s", errstr);
    m->mc = rd_kafka_mock_cluster_new(m->rk, 1);
    cr_assert_not_null(m->mc);
    snprintf(m->bootstrap, sizeof m->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(m->mc));
    kt_unique(m->prefix, sizeof m->prefix, "mp");
    kt_unique(m->name, sizeof m->name, "mc");
    snprintf(m->topic, sizeof m->topic, "%s.shop.orders", m->prefix);
    char t[300];
    rd_kafka_mock_topic_create(m->mc, m->topic, 1, 1);
    snprintf(t, sizeof t, "%s.schema", m->prefix);
    rd_kafka_mock_topic_create(m->mc, t, 1, 1);
    snprintf(t, sizeof t, "%s.offsets", m->name);
    rd_kafka_mock_topic_create(m->mc, t, 1, 1);
    snprintf(t, sizeof t, "%s.dlq", m->name);
    rd_kafka_mock_topic_create(m->mc, t, 1, 1);
}

static void mock_down(mockenv *m)
{
    rd_kafka_mock_cluster_destroy(m->mc);
    rd_kafka_destroy(m->rk);
}

static cfg *mock_cfg(mockenv *m)
{
    cfg *c = kt_cfg(m->bootstrap, m->name, m->prefix);
    kt_set(c, "topic.create", "false");
    kt_set(c, "kafka.linger.ms", "5");
    return c;
}

static ksink *mock_open(cfg *c)
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

Test(mock, messages_in_order)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e1 = kt_event(t, EVT_OP_CREATE, 0, 1, "one", NULL, 0, 100);
    evt_event *e2 = kt_event(t, EVT_OP_UPDATE, 1, 1, "uno", NULL, 0, 200);
    evt_event *e3 = kt_event(t, EVT_OP_UPDATE, 1, 2, "two", NULL, 0, 300);
    evt_event *e4 = kt_event(t, EVT_OP_DELETE, 2, 0, NULL, NULL, 0, 400);
    kt_send_tx(ks, e1, 150);
    kt_send_tx(ks, e2, 250);
    kt_send_tx(ks, e3, 350);
    kt_send_tx(ks, e4, 450);
    cr_assert_gt(ksink_staged(ks), 0, "messages of one topic are staged");
    flush_ok(ks);
    struct timespec after;
    clock_gettime(CLOCK_REALTIME, &after);
    int64_t after_ms = (int64_t)after.tv_sec * 1000 + after.tv_nsec / 1000000;
    cr_assert_eq(ksink_staged(ks), 0, "a flush hands the stage over");
    const tb_position *p = ksink_committable(ks);
    cr_assert_eq(p->kind, TB_POS_MYSQL);
    cr_assert_eq(p->pos, 450);
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.events, 4);
    cr_assert_eq(st.tx_open, 0);
    cr_assert_eq(st.acked, st.messages);

    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    /* c; u; (key change) d + tombstone + c; d + tombstone */
    cr_assert_eq(ms.n, 7, "got %zu messages", ms.n);
    const char *keys[] = {"{\"id\":1}", "{\"id\":1}", "{\"id\":1}", "{\"id\":1}", "{\"id\":2}", "{\"id\":2}",
                          "{\"id\":2}"};
    bool tomb[] = {false, false, false, true, false, false, true};
    for (size_t i = 0; i < ms.n; i++) {
        cr_expect_str_eq(ms.m[i].key, keys[i], "message %zu", i);
        cr_expect_eq(ms.m[i].value == NULL, tomb[i], "message %zu tombstone", i);
    }
    static const char *const ops[] = {"\"c\"", "\"u\"", "\"d\"", NULL, "\"c\"", "\"d\"", NULL};
    for (size_t i = 0; i < ms.n; i++)
        if (ops[i])
            cr_expect(jo_expect_text_at(ms.m[i].value, ms.m[i].value_len, JO_PATH("op"), ops[i]), "message %zu", i);
    /* the Kafka timestamp of a message is the time it was handed to librdkafka:
     * not before its envelope's ts_ms (read from the coarse clock, which never
     * runs ahead of the precise one), not after the flush returned */
    for (size_t i = 0; i < ms.n; i++) {
        if (!ms.m[i].value)
            continue;
        json_t *v = jo_parse(ms.m[i].value, ms.m[i].value_len), *ts = json_object_get(v, "ts_ms");
        cr_assert(json_is_integer(ts), "message %zu: no integer ts_ms: %s", i, ms.m[i].value);
        cr_expect_geq(ms.m[i].timestamp, json_integer_value(ts), "message %zu: timestamp %lld, envelope %s", i,
                      (long long)ms.m[i].timestamp, ms.m[i].value);
        json_decref(v);
        cr_expect_leq(ms.m[i].timestamp, after_ms, "message %zu: timestamp %lld after the flush (%lld)", i,
                      (long long)ms.m[i].timestamp, (long long)after_ms);
    }
    kt_msgs_free(&ms);

    evt_event_free(e1);
    evt_event_free(e2);
    evt_event_free(e3);
    evt_event_free(e4);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, schema_once_per_version)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t1 = kt_table("orders", 1);
    evt_table *t1b = kt_table("orders", 1); /* same shape and version, another descriptor */
    evt_table *t2 = kt_table("orders", 2);
    for (int i = 0; i < 3; i++) {
        evt_event *e = kt_event(i == 1 ? t1b : t1, EVT_OP_CREATE, 0, i, "x", NULL, 0, 10);
        kt_send_tx(ks, e, 10 + (uint64_t)i);
        evt_event_free(e);
    }
    evt_event *e = kt_event(t2, EVT_OP_CREATE, 0, 9, "y", NULL, 0, 20);
    kt_send_tx(ks, e, 20);
    evt_event_free(e);
    flush_ok(ks);
    char st[300];
    snprintf(st, sizeof st, "%s.schema", m.prefix);
    kt_msgs ms = kt_read_topic(m.bootstrap, st, 1);
    cr_assert_eq(ms.n, 2, "schema records: %zu", ms.n);
    cr_expect_str_eq(ms.m[0].key, "{\"db\":\"shop\",\"table\":\"orders\"}");
    cr_expect_str_eq(ms.m[1].key, ms.m[0].key);
    kt_msgs_free(&ms);
    evt_table_unref(t1);
    evt_table_unref(t1b);
    evt_table_unref(t2);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* The snapshot's descriptor, then the binlog's of the same version (other lengths, charset and
 * declared type): one schema record, not two with different contents. */
Test(mock, schema_not_rewritten_by_another_descriptor)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *snap = kt_table("orders", 1);
    evt_table *bin = evt_table_new("shop", "orders", 3);
    cr_assert_eq(evt_table_set_column(bin, 0, "id", EVT_T_BIGINT, NULL, false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(bin, 1, "name", EVT_T_VARCHAR, NULL, true, false), TB_OK);
    cr_assert_eq(evt_table_set_column_details(bin, 1, 256, 0, 0, "utf8mb4"), TB_OK);
    cr_assert_eq(evt_table_set_column(bin, 2, "note", EVT_T_TEXT, NULL, true, false), TB_OK);
    size_t pk = 0;
    cr_assert_eq(evt_table_set_pk(bin, &pk, 1), TB_OK);
    evt_table_set_version(bin, 1);
    evt_table_seal(bin);
    for (int i = 0; i < 2; i++) {
        evt_event *e = kt_event(i ? bin : snap, EVT_OP_CREATE, 0, i, "x", NULL, 0, 10);
        kt_send_tx(ks, e, 10 + (uint64_t)i);
        evt_event_free(e);
    }
    flush_ok(ks);
    char st[300];
    snprintf(st, sizeof st, "%s.schema", m.prefix);
    kt_msgs ms = kt_read_topic(m.bootstrap, st, 1);
    cr_assert_eq(ms.n, 1, "schema records: %zu", ms.n);
    kt_msgs_free(&ms);
    evt_table_unref(snap);
    evt_table_unref(bin);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, position_waits_for_acks)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "kafka.message.timeout.ms", "60000");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    for (int i = 0; i < 700; i++) /* acknowledged: the tracker's ring head moves to 700 */
        kt_send_tx(ks, e, 301 + (uint64_t)i);
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 1000);

    rd_kafka_mock_broker_set_down(m.mc, 1);
    for (int i = 0; i < 3000; i++) /* open transactions: the ring grows twice, its head wrapped */
        kt_send_tx(ks, e, 2000 + (uint64_t)i);
    long long until = kt_now_ms() + 1500;
    while (kt_now_ms() < until) { /* nothing may be acknowledged while the broker is down */
        ksink_poll(ks, 100);
        cr_assert_eq(ksink_committable(ks)->pos, 1000, "position advanced past unacknowledged messages");
    }
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.tx_open, 3000);

    rd_kafka_mock_broker_set_up(m.mc, 1);
    /* while the 3000 catch up, committable only moves forward, to transaction boundaries
     * (positions kept one in 64 while more than 64 are in flight), and ends exact */
    uint64_t last = 1000;
    tb_error err;
    long long deadline = kt_now_ms() + KT_TIMEOUT_MS;
    while (ksink_flush(ks, 20, &err) != TB_OK) {
        cr_assert_lt(kt_now_ms(), deadline, "not delivered: %s", err.msg);
        uint64_t now = ksink_committable(ks)->pos;
        cr_assert_geq(now, last, "position went backwards");
        cr_assert(now == 1000 || (now >= 2000 && now <= 4999), "not a transaction's position: %llu",
                  (unsigned long long)now);
        last = now;
    }
    cr_assert_eq(ksink_committable(ks)->pos, 4999);
    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    cr_assert_eq(ms.n, 3700, "nothing lost: %zu", ms.n);
    kt_msgs_free(&ms);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, permanent_error_stops)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e, 100);
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 100);

    /* the next Produce requests fail with a non-retriable error (ApiKey 0 = Produce) */
    rd_kafka_mock_push_request_errors(m.mc, 0, 5, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(ksink_send(ks, e, &err), TB_OK);
    tb_position p;
    kt_pos(&p, 200);
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK);
    tb_code rc = ksink_flush(ks, KT_TIMEOUT_MS, &err);
    cr_assert_eq(rc, TB_ERR_KAFKA, "flush: %s", err.msg);
    cr_assert(strstr(err.msg, m.topic) != NULL, "error names the topic: %s", err.msg);
    cr_assert(strstr(err.msg, "{\"id\":1}") != NULL, "error names the key: %s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100, "position passed a failed message");
    /* sticky: every later call returns it, and a commit does not store 200 */
    rd_kafka_mock_clear_request_errors(m.mc, 0);
    cr_assert_eq(ksink_send(ks, e, &err), TB_ERR_KAFKA);
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_ERR_KAFKA);
    cr_assert_eq(ksink_commit(ks, &err), TB_ERR_KAFKA);
    tb_position_free(&p);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* At least once: a fatal error of the idempotent producer (librdkafka 2.0's sequence
 * desynchronization after brokers refused writes; triggered here by rd_kafka_test_fatal_error)
 * is not the end: the sink counts a restart and fails every call with a retriable error until
 * ksink_restart, which makes a new producer; the position stays at what was acknowledged before,
 * and what is sent after the restart arrives, in order after what came before. */
/* After ksink_restart: the source read again from 100 sends e2 (id 2) at 200, which the new
 * producer writes; the topic holds ids 1 and 2, once each, and one restart was counted. Frees
 * everything, the mock cluster too. */
static void replaced_goes_on(mockenv *m, ksink *ks, cfg *c, evt_table *t, evt_event *e1, evt_event *e2)
{
    tb_error err;
    kt_send_tx(ks, e2, 200);
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 200);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_expect_eq(st.restarts, 1);
    kt_msgs ms = kt_read_topic(m->bootstrap, m->topic, 1);
    cr_assert_eq(ms.n, 2, "both rows in the topic, once each");
    cr_expect_str_eq(ms.m[0].key, "{\"id\":1}");
    cr_expect_str_eq(ms.m[1].key, "{\"id\":2}");
    kt_msgs_free(&ms);
    evt_event_free(e1);
    evt_event_free(e2);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(m);
}

Test(mock, fatal_producer_error_restarts)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e1 = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e1, 100);
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 100);

    cr_assert_eq(rd_kafka_test_fatal_error(ks->rk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, "injected"),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    tb_error err;
    tb_error_clear(&err);
    ksink_poll(ks, 100); /* the error callback */
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.restarts, 1, "a restart counted");
    cr_assert_eq(ksink_send(ks, e1, &err), TB_ERR_KAFKA, "a call before the restart fails");
    cr_expect(err.retriable, "retriable: %s", err.msg);
    cr_expect(strstr(err.msg, "new producer") != NULL, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100, "the position stays at what was acknowledged");
    cr_assert_eq(ksink_restart(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_restart(ks, &err), TB_OK, "none due: a no-op");

    evt_event *e2 = kt_event(t, EVT_OP_CREATE, 0, 2, "b", NULL, 0, 2);
    replaced_goes_on(&m, ks, c, t, e1, e2);
}

/* A report of success without an offset (the mock answers the Produce DUPLICATE_SEQUENCE_NUMBER
 * and writes nothing; a NOT_LEADER_FOR_PARTITION before a later batch's success does the same on
 * a real broker, "implicitly acked") is not a delivery: the position does not pass it, the next
 * call says so (retriable), a new producer writes it again. */
Test(mock, unconfirmed_delivery_restarts)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e1 = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e1, 100); /* the schema record and the row: the topics known to the producer */
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 100);

    evt_event *e2 = kt_event(t, EVT_OP_CREATE, 0, 2, "b", NULL, 0, 2);
    rd_kafka_mock_push_request_errors(m.mc, 0 /* Produce */, 1, RD_KAFKA_RESP_ERR_DUPLICATE_SEQUENCE_NUMBER);
    kt_send_tx(ks, e2, 200);
    tb_error err;
    tb_error_clear(&err);
    (void)ksink_flush(ks, KT_TIMEOUT_MS, &err);
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.unconfirmed, 1, "the report without an offset is seen");
    cr_assert_eq(st.restarts, 1, "a restart counted");
    cr_assert_eq(ksink_committable(ks)->pos, 100, "the position passed a message the broker did not confirm");
    tb_error_clear(&err);
    cr_assert_eq(ksink_send(ks, e2, &err), TB_ERR_KAFKA, "a call before the restart fails");
    cr_expect(err.retriable, "retriable: %s", err.msg);
    cr_expect(strstr(err.msg, "not confirmed by the broker") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "{\"id\":2}") != NULL, "names the key: %s", err.msg);
    cr_assert_eq(ksink_restart(ks, &err), TB_OK, "%s", err.msg);

    replaced_goes_on(&m, ks, c, t, e1, e2); /* the run reads the source again from 100 */
}

Test(mock, queue_full_never_drops)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "kafka.queue.buffering.max.messages", "10");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    for (int i = 0; i < 2000; i++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, i, "row", NULL, 0, (uint64_t)i);
        kt_send_tx(ks, e, (uint64_t)i + 1);
        evt_event_free(e);
    }
    flush_ok(ks);
    cr_assert_eq(ksink_committable(ks)->pos, 2000);
    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    cr_assert_eq(ms.n, 2000);
    for (size_t i = 0; i < ms.n; i++) {
        char k[64];
        snprintf(k, sizeof k, "{\"id\":%zu}", i);
        cr_assert_str_eq(ms.m[i].key, k, "order kept");
    }
    kt_msgs_free(&ms);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

static void oversize_run(const char *policy, tb_code want_send, size_t want_topic, size_t want_dlq)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "oversize.policy", policy);
    kt_set(c, "kafka.message.max.bytes", "2000");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    char *big = malloc(5000);
    memset(big, 'x', 5000);
    evt_event *small = kt_event(t, EVT_OP_CREATE, 0, 1, "small", NULL, 0, 1);
    evt_event *large = kt_event(t, EVT_OP_CREATE, 0, 2, "large", big, 5000, 2);
    kt_send_tx(ks, small, 10);
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(ksink_send(ks, large, &err), want_send, "policy %s: %s", policy, err.msg);
    if (want_send != TB_OK) {
        cr_assert(strstr(err.msg, m.topic) != NULL, "names the topic: %s", err.msg);
        cr_assert(strstr(err.msg, "{\"id\":2}") != NULL, "names the key: %s", err.msg);
        cr_assert(strstr(err.msg, "pos=2") != NULL, "names the position: %s", err.msg);
    } else {
        tb_position p;
        kt_pos(&p, 20);
        cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK);
        tb_position_free(&p);
        flush_ok(ks);
        cr_assert_eq(ksink_committable(ks)->pos, 20);
        ksink_stats st;
        ksink_get_stats(ks, &st);
        cr_assert_eq(st.oversized, 1);
    }
    flush_ok(ks);
    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    cr_assert_eq(ms.n, want_topic);
    kt_msgs_free(&ms);
    char dlq[300];
    snprintf(dlq, sizeof dlq, "%s.dlq", m.name);
    ms = kt_read_topic(m.bootstrap, dlq, 1);
    cr_assert_eq(ms.n, want_dlq);
    if (want_dlq) {
        cr_assert_str_eq(ms.m[0].key, "{\"id\":2}");
        /* the dead-letter record: {"topic","key","position","size"} */
        json_t *v = jo_parse(ms.m[0].value, ms.m[0].value_len);
        char dlq_topic[sizeof m.topic + 3];
        snprintf(dlq_topic, sizeof dlq_topic, "\"%s\"", m.topic);
        cr_assert(jo_expect_at(v, JO_PATH("topic"), dlq_topic), "%s", ms.m[0].value);
        cr_assert(jo_expect_at(v, JO_PATH("key"), "{\"id\":2}"), "%s", ms.m[0].value);
        cr_assert(json_is_object(json_object_get(v, "position")), "%s", ms.m[0].value);
        cr_assert(jo_expect_at(v, JO_PATH("position", "pos"), "2"), "%s", ms.m[0].value);
        json_t *size = json_object_get(v, "size");
        cr_assert(json_is_integer(size) && json_integer_value(size) > 2000, "over message.max.bytes: ""%s", ms.m[0].value);
        cr_assert_eq(json_object_size(v), 4, "topic, key, position, size: %s", ms.m[0].value);
        json_decref(v);
    }
    kt_msgs_free(&ms);
    free(big);
    evt_event_free(small);
    evt_event_free(large);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* A staged message does not wait for the stage to fill: ksink_poll(ks, 0),
 * which the run loop calls after every source transaction, hands it over once
 * it is 1 ms old, with no ksink_kick() or flush. */
Test(mock, stage_handed_over_by_age)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "one", NULL, 0, 1);
    kt_send_tx(ks, e, 10);
    cr_assert_gt(ksink_staged(ks), 0);
    long long deadline = kt_now_ms() + 5000;
    while (ksink_staged(ks) > 0 && kt_now_ms() < deadline)
        ksink_poll(ks, 0);
    cr_assert_eq(ksink_staged(ks), 0, "still staged after 5 s of ksink_poll(ks, 0)");
    deadline = kt_now_ms() + KT_TIMEOUT_MS;
    while (ksink_committable(ks)->pos != 10 && kt_now_ms() < deadline)
        ksink_poll(ks, 0);
    cr_assert_eq(ksink_committable(ks)->pos, 10, "acknowledged without a flush");
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* ksink_push, which the run loop calls before it waits for its source, has librdkafka send what
 * it holds at once: with linger.ms at a minute, a message polled for is not sent, and is
 * acknowledged when ksink_push returns. */
Test(mock, push_sends_at_once_whatever_linger)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "kafka.linger.ms", "60000");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "one", NULL, 0, 1);
    kt_send_tx(ks, e, 10);
    ksink_kick(ks);
    cr_assert_eq(ksink_staged(ks), 0);
    for (int i = 0; i < 3; i++)
        ksink_poll(ks, 100);
    cr_assert_neq(ksink_committable(ks)->pos, 10, "acknowledged before linger.ms without a push");
    cr_assert_gt(ksink_pending(ks), 0, "held by librdkafka, so pending");
    ksink_push(ks, KT_TIMEOUT_MS);
    cr_assert_eq(ksink_committable(ks)->pos, 10, "not acknowledged when ksink_push returned");
    cr_assert_eq(ksink_pending(ks), 0, "nothing pending after the push");
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* Messages just under message.max.bytes but over it with librdkafka's record
 * framing: ksink_send() must apply the policy at once, never stage a message
 * that librdkafka then refuses at hand-over (which would stop the sink). */
Test(mock, oversize_framing_boundary)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "oversize.policy", "fail");
    kt_set(c, "kafka.message.max.bytes", "2000");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    char note[2000];
    memset(note, 'x', sizeof note);
    size_t accepted = 0, refused = 0;
    for (size_t len = 1300; len < sizeof note; len++) {
        evt_event *e = kt_event(t, EVT_OP_CREATE, 0, (int64_t)len, "edge", note, len, len);
        tb_error err;
        tb_error_clear(&err);
        tb_code rc = ksink_send(ks, e, &err);
        evt_event_free(e);
        if (rc == TB_OK) {
            cr_assert_eq(refused, 0, "note of %zu bytes accepted after a shorter one was refused", len);
            accepted++;
        } else {
            cr_assert_eq(rc, TB_ERR_INVALID, "note of %zu bytes: %s", len, err.msg);
            cr_assert(strstr(err.msg, "with its record framing") != NULL, "%s", err.msg);
            refused++;
        }
    }
    tb_position p;
    kt_pos(&p, 5);
    tb_error err;
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK, "%s", err.msg);
    tb_position_free(&p);
    cr_assert_gt(accepted, 0);
    cr_assert_gt(refused, 0);
    flush_ok(ks); /* no message refused at hand-over */
    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    cr_assert_eq(ms.n, accepted);
    for (size_t i = 0; i < ms.n; i++)
        cr_assert_leq(strlen(ms.m[i].key) + strlen(ms.m[i].value) + 36, 2000, "message %zu", i);
    cr_assert_eq(strlen(ms.m[ms.n - 1].key) + strlen(ms.m[ms.n - 1].value) + 36, 2000,
                 "the largest accepted message is exactly at the limit");
    kt_msgs_free(&ms);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, oversize_fail) { oversize_run("fail", TB_ERR_INVALID, 1, 0); }
Test(mock, oversize_skip) { oversize_run("skip", TB_OK, 1, 0); }
Test(mock, oversize_dlq) { oversize_run("dlq", TB_OK, 1, 1); }

Test(mock, offsets_commit_read_back)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    tb_error err;
    tb_position got;
    tb_position_init(&got);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.kind, TB_POS_NONE);
    kt_send_tx(ks, e, 777);
    flush_ok(ks);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    kt_send_tx(ks, e, 888);
    flush_ok(ks);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg); /* unchanged: no new record */
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.commits, 2);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(got.kind, TB_POS_MYSQL);
    cr_assert_eq(got.pos, 888);
    cr_assert(tb_position_equal(&got, ksink_committable(ks)));
    char ot[300];
    snprintf(ot, sizeof ot, "%s.offsets", m.name);
    kt_msgs ms = kt_read_topic(m.bootstrap, ot, 1);
    cr_assert_eq(ms.n, 2);
    char key[200];
    snprintf(key, sizeof key, "\"%s\"", m.name);
    cr_assert_str_eq(ms.m[1].key, key);
    kt_msgs_free(&ms);
    tb_position_free(&got);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* `tributary offsets set` writes one record with a producer of its own: a report of success
 * without an offset (here a Produce answered DUPLICATE_SEQUENCE_NUMBER, the mock writing
 * nothing) is an error that says so, not a stored position; written again, it is stored. */
Test(mock, offsets_write_unconfirmed_is_an_error)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    tb_position pos, got;
    tb_position_init(&pos);
    tb_position_init(&got);
    pos.kind = TB_POS_MYSQL;
    pos.server_id = 1;
    pos.file = strdup("binlog.000007");
    pos.pos = 4242;
    tb_error err;
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg); /* makes the offsets topic */
    rd_kafka_mock_push_request_errors(m.mc, 0 /* Produce */, 1, RD_KAFKA_RESP_ERR_DUPLICATE_SEQUENCE_NUMBER);
    tb_error_clear(&err);
    cr_assert_eq(ksink_offsets_write(c, &pos, &err), TB_ERR_KAFKA, "an unconfirmed record is not stored");
    cr_expect(err.retriable, "%s", err.msg);
    cr_expect(strstr(err.msg, "did not confirm") != NULL, "%s", err.msg);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(got.kind, TB_POS_NONE, "nothing was written");
    cr_assert_eq(ksink_offsets_write(c, &pos, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_offsets_read(c, &got, &err), TB_OK, "%s", err.msg);
    cr_expect(tb_position_equal(&got, &pos));
    tb_position_free(&got);
    tb_position_free(&pos);
    cfg_free(c);
    mock_down(&m);
}

typedef struct gate_ctl {
    bool allow;
    int asked;
} gate_ctl;

static tb_code gate_fn(void *opaque, tb_error *err)
{
    gate_ctl *g = opaque;
    g->asked++;
    return g->allow ? TB_OK : tb_error_set(err, TB_ERR_STATE, false, "lease lost (test)");
}

/* The gate is asked right before each message (schema record, row, transaction record), after
 * whatever the send did first: refused, the send returns its error and nothing is staged or
 * handed over; allowed, each message costs one question. */
Test(mock, gate_asked_before_each_message)
{
    mockenv m;
    mock_up(&m);
    char t[300];
    snprintf(t, sizeof t, "%s.transaction", m.prefix);
    rd_kafka_mock_topic_create(m.mc, t, 1, 1);
    snprintf(t, sizeof t, "%s.shop.items", m.prefix);
    rd_kafka_mock_topic_create(m.mc, t, 1, 1);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    gate_ctl g = {false, 0};
    ksink_set_gate(ks, gate_fn, &g);
    evt_table *orders = kt_table("orders", 1), *items = kt_table("items", 1);
    evt_event *e1 = kt_event(orders, EVT_OP_CREATE, 0, 1, "one", NULL, 0, 100);
    evt_event *e2 = kt_event(items, EVT_OP_CREATE, 0, 2, "two", NULL, 0, 200);
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(ksink_send(ks, e1, &err), TB_ERR_STATE, "refused: %s", err.msg);
    cr_assert_str_eq(err.msg, "lease lost (test)");
    cr_assert_eq(ksink_send_txmeta(ks, "{\"id\":\"1\"}", 10, "{}", 2, &err), TB_ERR_STATE);
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.messages, 0, "%llu messages staged or sent while the gate refused", (unsigned long long)st.messages);
    cr_assert_eq(ksink_staged(ks), 0);
    cr_assert_eq(g.asked, 2, "asked %d times", g.asked);

    g.allow = true;
    g.asked = 0;
    kt_send_tx(ks, e2, 250); /* the schema record of items, then its row */
    cr_assert_eq(g.asked, 2, "asked %d times for 2 messages", g.asked);
    cr_assert_eq(ksink_send_txmeta(ks, "{\"id\":\"2\"}", 10, "{}", 2, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(g.asked, 3);
    flush_ok(ks);
    ksink_get_stats(ks, &st);
    cr_assert_eq(st.messages, 3);
    cr_assert_eq(st.acked, 3);
    evt_event_free(e1);
    evt_event_free(e2);
    evt_table_unref(orders);
    evt_table_unref(items);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, empty_tx_committable)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    tb_error err;
    tb_position p;
    kt_pos(&p, 31);
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK);
    cr_assert_eq(ksink_committable(ks)->pos, 31);
    tb_position_free(&p);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* exactly_once: a failed produce makes the Kafka transaction abortable; the
 * commit aborts it, says so (retriable), keeps the last committed position,
 * and the same sink goes on with the next transaction. */
/* exactly.once: a Produce answered produce_err makes the commit abort the Kafka transaction and
 * say so (retriable, its message holding says), the position stays at the last committed one and
 * the same sink goes on with the next transaction; unconfirmed: the reports of success without an
 * offset counted. */
static void eos_abort_run(rd_kafka_resp_err_t produce_err, const char *says, uint64_t unconfirmed)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "exactly.once", "true");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    tb_error err;
    kt_send_tx(ks, e, 100);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100);

    rd_kafka_mock_push_request_errors(m.mc, 0 /* Produce */, 1, produce_err);
    kt_send_tx(ks, e, 200);
    tb_error_clear(&err);
    tb_code rc = ksink_commit(ks, &err);
    cr_assert_eq(rc, TB_ERR_KAFKA, "commit after a failed produce: %s", err.msg);
    cr_assert(err.retriable, "abortable errors are retriable: %s", err.msg);
    cr_assert(strstr(err.msg, "aborted") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, says) != NULL, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100, "position passed an aborted transaction");
    ksink_stats st;
    ksink_get_stats(ks, &st);
    cr_expect_eq(st.unconfirmed, unconfirmed);
    cr_expect_eq(st.aborts, 1);

    kt_send_tx(ks, e, 300); /* the same instance goes on */
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 300);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, exactly_once_abortable_error)
{
    eos_abort_run(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, "commit Kafka transaction", 0);
}

/* exactly.once: the same report fails the Kafka transaction; its commit aborts it and says
 * so (retriable), the position stays at the last committed one, and the same instance goes on. */
Test(mock, unconfirmed_delivery_aborts_exactly_once)
{
    eos_abort_run(RD_KAFKA_RESP_ERR_DUPLICATE_SEQUENCE_NUMBER, "not confirmed by the broker", 1);
}

/* value.format=row: the after image only; a delete is a tombstone alone. */
Test(mock, row_format_delete_is_tombstone)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "value.format", "row");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e1 = kt_event(t, EVT_OP_CREATE, 0, 7, "seven", NULL, 0, 1);
    evt_event *e2 = kt_event(t, EVT_OP_DELETE, 7, 0, NULL, NULL, 0, 2);
    kt_send_tx(ks, e1, 10);
    kt_send_tx(ks, e2, 20);
    flush_ok(ks);
    kt_msgs ms = kt_read_topic(m.bootstrap, m.topic, 1);
    cr_assert_eq(ms.n, 2);
    cr_assert_str_eq(ms.m[0].value, "{\"id\":7,\"name\":\"seven\",\"note\":null}");
    cr_assert_null(ms.m[1].value);
    cr_assert_str_eq(ms.m[1].key, "{\"id\":7}");
    kt_msgs_free(&ms);
    evt_event_free(e1);
    evt_event_free(e2);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_kafka_lines;

static void log_collect(tb_log_level level, const char *line, void *opaque)
{
    (void)level;
    (void)opaque;
    pthread_mutex_lock(&log_mu);
    if (strstr(line, " kafka: ") != NULL)
        log_kafka_lines++;
    pthread_mutex_unlock(&log_mu);
}

/* librdkafka's log reaches tb_log (facility "kafka"), and kafka.* keys reach
 * librdkafka (kafka.debug makes it log). */
Test(mock, librdkafka_log_routed)
{
    mockenv m;
    mock_up(&m);
    tb_log_set_level(TB_LOG_DEBUG);
    tb_log_set_sink(log_collect, NULL);
    cfg *c = mock_cfg(&m);
    kt_set(c, "kafka.debug", "msg");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e, 10);
    flush_ok(ks);
    ksink_close(ks);
    tb_log_set_sink(NULL, NULL);
    pthread_mutex_lock(&log_mu);
    int n = log_kafka_lines;
    pthread_mutex_unlock(&log_mu);
    cr_assert_gt(n, 0, "no librdkafka line reached tb_log");
    evt_event_free(e);
    evt_table_unref(t);
    cfg_free(c);
    mock_down(&m);
}

/* exactly_once: committing in the middle of a source transaction would make
 * part of it visible without its position; refused even when its messages
 * are already acknowledged. */
Test(mock, exactly_once_commit_mid_transaction_refused)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "exactly.once", "true");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    tb_error err;
    cr_assert_eq(ksink_send(ks, e, &err), TB_OK, "%s", err.msg);
    flush_ok(ks);
    cr_assert_eq(ksink_commit(ks, &err), TB_ERR_STATE);
    tb_position p;
    kt_pos(&p, 50);
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 50);
    tb_position_free(&p);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

/* exactly_once: the coordinator answers the commit's EndTxn with PRODUCER_FENCED (librdkafka:
 * _FENCED, fatal). Sooner than transaction.timeout.ms after the transaction began, another
 * instance fenced this one: the sink stops (not retriable, ksink_failed). Later, it is how the
 * coordinator answers after it aborted the transaction itself and bumped the epoch: the
 * transaction counts as aborted (retriable, the position stays), and the same sink goes on
 * with a new producer. */
static void fenced_run(bool after_timeout)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    kt_set(c, "exactly.once", "true");
    kt_set(c, "kafka.transaction.timeout.ms", after_timeout ? "1000" : "60000");
    ksink *ks = mock_open(c);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    tb_error err;
    kt_send_tx(ks, e, 100);
    cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);

    kt_send_tx(ks, e, 200);
    if (after_timeout) /* the transaction outlives transaction.timeout.ms: the time itself is the condition */
        usleep(1200 * 1000);
    rd_kafka_mock_push_request_errors(m.mc, 26 /* EndTxn */, 1, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
    tb_error_clear(&err);
    tb_code rc = ksink_commit(ks, &err);
    cr_assert_eq(rc, TB_ERR_KAFKA, "commit answered PRODUCER_FENCED: %s", err.msg);
    cr_assert_eq(ksink_committable(ks)->pos, 100, "position passed a fenced transaction");
    tb_error ferr;
    if (!after_timeout) {
        cr_assert(!err.retriable, "a fence by another instance is retriable: %s", err.msg);
        cr_assert_neq(ksink_failed(ks, &ferr), TB_OK, "the sink goes on after a fence by another instance");
    } else {
        cr_assert(err.retriable, "the coordinator's own abort is not retriable: %s", err.msg);
        cr_assert(strstr(err.msg, "aborted") != NULL, "%s", err.msg);
        cr_assert_eq(ksink_failed(ks, &ferr), TB_OK, "the sink stopped: %s", ferr.msg);
        kt_send_tx(ks, e, 300); /* a new producer goes on */
        cr_assert_eq(ksink_commit(ks, &err), TB_OK, "%s", err.msg);
        cr_assert_eq(ksink_committable(ks)->pos, 300);
    }
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}

Test(mock, exactly_once_fenced_early_stops) { fenced_run(false); }
Test(mock, exactly_once_fenced_after_timeout_goes_on) { fenced_run(true); }

static tb_code count_key(void *opaque, const char *key, size_t klen, tb_error *err)
{
    (void)key;
    (void)klen;
    (void)err;
    (*(int *)opaque)++;
    return TB_OK;
}

Test(mock, stop_while_waiting_is_a_stop)
{
    mockenv m;
    mock_up(&m);
    cfg *c = mock_cfg(&m);
    ksink *ks = mock_open(c);
    volatile sig_atomic_t stop = 0;
    ksink_set_stop(ks, &stop);
    evt_table *t = kt_table("orders", 1);
    evt_event *e = kt_event(t, EVT_OP_CREATE, 0, 1, "a", NULL, 0, 1);
    kt_send_tx(ks, e, 100);
    flush_ok(ks);
    int n = 0;
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(ksink_topic_keys(ks, t, NULL, count_key, &n, &err), TB_OK, "%s", err.msg); /* Kafka reached */
    cr_assert_eq(n, 1);

    /* every ListOffsets (ApiKey 2) answered as by a partition whose leader moved: retriable */
    rd_kafka_resp_err_t errs[64];
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        errs[i] = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
    rd_kafka_mock_push_request_errors_array(m.mc, 2, sizeof errs / sizeof errs[0], errs);
    stop = 1;
    n = 0;
    tb_code rc = ksink_topic_keys(ks, t, NULL, count_key, &n, &err);
    cr_assert_eq(rc, TB_ERR_STOPPED, "%d: %s", (int)rc, err.msg);
    cr_expect(strstr(err.msg, "stopped while waiting for Kafka") && strstr(err.msg, m.topic),
              "the stop names what it waited for: %s", err.msg);
    cr_expect_eq(ksink_failed(ks, NULL), TB_OK, "a stop is not a failure of the sink");

    rd_kafka_mock_clear_request_errors(m.mc, 2);
    stop = 0;
    n = 0;
    cr_assert_eq(ksink_topic_keys(ks, t, NULL, count_key, &n, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(n, 1);
    evt_event_free(e);
    evt_table_unref(t);
    ksink_close(ks);
    cfg_free(c);
    mock_down(&m);
}
