/*
 * Helpers shared by the Kafka sink tests: configurations, a small table and
 * its events, reading a topic back, murmur2 (Java's, implemented here
 * independently of librdkafka and of the sink).
 * Everything is static; each test file includes this once.
 */
#ifndef KSINK_TEST_UTIL_H
#define KSINK_TEST_UTIL_H

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "evt.h"
#include "ksink.h"
#include "tb_position.h"

#define KT_TIMEOUT_MS 30000
#define KT_FN static __attribute__((unused))

KT_FN long long kt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "<prefix>_<pid>_<time>_<rand>" */
KT_FN void kt_unique(char *out, size_t cap, const char *prefix)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srand((unsigned)(ts.tv_nsec ^ (long)getpid()));
    snprintf(out, cap, "%s_%ld_%ld_%d", prefix, (long)getpid(), (long)ts.tv_sec, rand() % 100000);
}

KT_FN void kt_set(cfg *c, const char *k, const char *v)
{
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(cfg_set(c, k, v, "test", &err), TB_OK, "%s=%s: %s", k, v, err.msg);
}

/* A configuration for connector `name` on bootstrap. Caller frees. */
KT_FN cfg *kt_cfg(const char *bootstrap, const char *name, const char *prefix)
{
    cfg *c = cfg_new();
    cr_assert_not_null(c);
    kt_set(c, "name", name);
    kt_set(c, "topic.prefix", prefix);
    kt_set(c, "kafka.bootstrap.servers", bootstrap);
    return c;
}

/* shop.<table>(id BIGINT PK, name VARCHAR, note TEXT), version v. Caller unrefs. */
KT_FN evt_table *kt_table(const char *table, uint32_t v)
{
    evt_table *t = evt_table_new("shop", table, 3);
    cr_assert_not_null(t);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint", false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "name", EVT_T_VARCHAR, "varchar(64)", true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "note", EVT_T_TEXT, "text", true, false), TB_OK);
    size_t pk = 0;
    cr_assert_eq(evt_table_set_pk(t, &pk, 1), TB_OK);
    evt_table_set_version(t, v);
    evt_table_seal(t);
    return t;
}

KT_FN void kt_pos(tb_position *p, uint64_t pos)
{
    tb_position_init(p);
    p->kind = TB_POS_MYSQL;
    p->mariadb = true;
    p->server_id = 1;
    cr_assert_eq(tb_position_set_file(p, "mysql-bin.000001"), TB_OK);
    p->pos = pos;
}

/* An event: op c/u/d/r on row id (old_id for the before image of u/d). note
 * may be NULL; note_len lets a test make a large row. Caller frees. */
KT_FN evt_event *kt_event(evt_table *t, evt_op op, int64_t old_id, int64_t id, const char *name, const char *note,
                           size_t note_len, uint64_t pos)
{
    evt_event *e = evt_event_new(op, t);
    cr_assert_not_null(e);
    if (op == EVT_OP_UPDATE || op == EVT_OP_DELETE) {
        evt_set_int(e, EVT_BEFORE, 0, old_id);
        evt_set_string(e, EVT_BEFORE, 1, "old", 3);
        evt_set_null(e, EVT_BEFORE, 2);
    }
    if (op != EVT_OP_DELETE) {
        evt_set_int(e, EVT_AFTER, 0, id);
        evt_set_string(e, EVT_AFTER, 1, name, strlen(name));
        if (note)
            evt_set_string(e, EVT_AFTER, 2, note, note_len);
        else
            evt_set_null(e, EVT_AFTER, 2);
    }
    tb_position p;
    kt_pos(&p, pos);
    evt_event_set_position(e, &p);
    tb_position_free(&p);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    evt_event_set_commit_ts_ms(e, 1700000000000LL);
    cr_assert_null(evt_event_error(e), "%s", evt_event_error(e) ? evt_event_error(e)->msg : "");
    return e;
}

/* Send one event and end its transaction at position pos. */
KT_FN void kt_send_tx(ksink *ks, evt_event *e, uint64_t pos)
{
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(ksink_send(ks, e, &err), TB_OK, "send: %s", err.msg);
    tb_position p;
    kt_pos(&p, pos);
    cr_assert_eq(ksink_end_tx(ks, &p, &err), TB_OK, "end_tx: %s", err.msg);
    tb_position_free(&p);
}

/* ------------------------------------------------------------ reading back */

typedef struct kt_msg {
    char *key;      /* NUL-terminated copies */
    size_t key_len;
    char *value;    /* NULL = tombstone */
    size_t value_len;
    int32_t partition;
    int64_t offset;
    int64_t timestamp; /* Kafka CreateTime, ms */
} kt_msg;

typedef struct kt_msgs {
    kt_msg *m;
    size_t n;
} kt_msgs;

KT_FN char *kt_dup(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

KT_FN void kt_msgs_free(kt_msgs *ms)
{
    for (size_t i = 0; i < ms->n; i++) {
        free(ms->m[i].key);
        free(ms->m[i].value);
    }
    free(ms->m);
    ms->m = NULL;
    ms->n = 0;
}

/* Every message of topic (partitions 0..nparts-1) from the beginning to the
 * end, in partition then offset order. read_committed. */
KT_FN kt_msgs kt_read_topic(const char *bootstrap, const char *topic, int nparts)
{
    char errstr[512];
    kt_msgs out = {NULL, 0};
    size_t cap = 0;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[][2] = {{"bootstrap.servers", bootstrap}, {"group.id", "ksink-test-reader"},
                           {"enable.partition.eof", "true"}, {"enable.auto.commit", "false"},
                           {"isolation.level", "read_committed"}, {"auto.offset.reset", "earliest"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        cr_assert_eq(rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr, sizeof errstr), RD_KAFKA_CONF_OK, "%s",
                     errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    int eofs = 0;
    long long deadline = kt_now_ms() + KT_TIMEOUT_MS;
    while (eofs < nparts) {
        cr_assert_lt(kt_now_ms(), deadline, "topic %s: not read to its end in time", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eofs++;
        } else {
            cr_assert_eq(m->err, RD_KAFKA_RESP_ERR_NO_ERROR, "topic %s: %s", topic, rd_kafka_message_errstr(m));
            if (out.n == cap) {
                cap = cap ? cap * 2 : 64;
                out.m = realloc(out.m, cap * sizeof(*out.m));
                cr_assert_not_null(out.m);
            }
            kt_msg *k = &out.m[out.n++];
            k->key = kt_dup(m->key, m->key_len);
            k->key_len = m->key_len;
            k->value = m->payload ? kt_dup(m->payload, m->len) : NULL;
            k->value_len = m->len;
            k->partition = m->partition;
            k->offset = m->offset;
            k->timestamp = rd_kafka_message_timestamp(m, NULL);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return out;
}

/* ------------------------------------------------------------ murmur2 */

/* Kafka's org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c),
 * written from the algorithm's description, not from librdkafka. */
KT_FN int32_t kt_murmur2(const void *data, size_t len)
{
    const uint8_t *d = data;
    const uint32_t m = 0x5bd1e995;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t n4 = len / 4;
    for (size_t i = 0; i < n4; i++) {
        size_t i4 = i * 4;
        uint32_t k = (uint32_t)d[i4] | ((uint32_t)d[i4 + 1] << 8) | ((uint32_t)d[i4 + 2] << 16) |
                     ((uint32_t)d[i4 + 3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len % 4) {
    case 3: h ^= (uint32_t)d[(len & ~(size_t)3) + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)d[(len & ~(size_t)3) + 1] << 8;  /* fall through */
    case 1: h ^= (uint32_t)d[len & ~(size_t)3]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

/* Java's DefaultPartitioner / BuiltInPartitioner: toPositive(murmur2(key)) % n. */
KT_FN int32_t kt_java_partition(const void *key, size_t len, int32_t n)
{
    return (int32_t)(((uint32_t)kt_murmur2(key, len) & 0x7fffffffu) % (uint32_t)n);
}

#endif
