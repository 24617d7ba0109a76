/*
 * ksink_produce.c: handing messages to librdkafka.
 *
 * ksink_produce() hands one message over at once (rd_kafka_producev). The
 * stage gathers the messages of a non-transactional sink, up to
 * KSINK_STAGE_MSGS messages or KSINK_STAGE_BYTES bytes of one topic, and
 * hands them over in one rd_kafka_produce_batch() call: librdkafka then reads
 * its clock, checks the producer's state and takes the topic's lock once per
 * batch instead of once per message (bench/ksink_bench.sh measures the
 * difference). Hand-over order is kept: anything produced
 * directly, or to another topic, flushes the stage first.
 *
 * A batch for a table topic of one partition names partition 0 instead of
 * asking the partitioner: librdkafka's partitioner path costs a clock read, a
 * hash and a partition lookup per message (about 6% of the run's CPU in a 1M-row
 * catch-up, bench/e2e_bench.sh). The count is the one librdkafka's partitioner
 * was last given (ksink_partitioner, murmur2_random as configured, notes it),
 * and a batch goes through the partitioner again once KSINK_PARTS_CHECK_MS
 * passed since the last, so partitions added to the topic are followed within
 * that time of librdkafka learning of them (its metadata refresh).
 *
 * A staged message counts as produced (ksink_stats.messages, its
 * transaction's pending count) from ksink_stage_add() on, so the position
 * cannot pass it before it is acknowledged. The stage is flushed when full,
 * by ksink_kick(), ksink_poll() with a wait or once the first staged message
 * is KSINK_STAGE_MAX_MS old, ksink_flush() and the commits; a caller about to
 * wait for its source calls ksink_kick() (ksink.h).
 * A message librdkafka refuses at flush time (other than "queue full", which
 * polls and retries) records the sink's failure, like a failed delivery: the
 * next ksink_* call returns it and the position stays before the message.
 */
#include <stdlib.h>
#include <string.h>

#include "tb_cast.h"
#include "ksink_int.h"

#define KSINK_STAGE_MSGS 256
#define KSINK_STAGE_BYTES (256 * 1024)
#define KSINK_STAGE_BIG (16 * 1024) /* larger messages go over directly */
#define KSINK_PARTS_CHECK_MS 1000

/* The partition count the partitioner was last given in this thread: librdkafka runs it in the
 * producing thread (during rd_kafka_produce_batch) or in its own (messages waiting for the
 * topic's metadata), whose copy nothing reads. */
static _Thread_local int32_t ksink_parts_seen;

static int32_t ksink_partitioner(const rd_kafka_topic_t *rkt, const void *key, size_t klen, int32_t cnt,
                                 void *rkt_opaque, void *msg_opaque)
{
    ksink_parts_seen = cnt;
    return rd_kafka_msg_partitioner_murmur2_random(rkt, key, klen, cnt, rkt_opaque, msg_opaque);
}

void ksink_partitioner_set(rd_kafka_conf_t *conf)
{
    rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(conf);
    if (!tc) { /* none yet (ksink_conf_new sets topic properties, so not expected) */
        tc = rd_kafka_topic_conf_new();
        rd_kafka_conf_set_default_topic_conf(conf, tc); /* conf owns it */
    }
    rd_kafka_topic_conf_set_partitioner_cb(tc, ksink_partitioner);
}

tb_code ksink_produce(ksink *ks, rd_kafka_topic_t *rkt, int32_t partition, const char *key, size_t klen,
                      const char *value, size_t vlen, uint64_t seq, tb_error *err)
{
    if (ks->stage.n > 0) {
        ksink_stage_flush(ks);
        if (ks->failed)
            return ksink_failed(ks, err);
    }
    for (;;) {
        rd_kafka_resp_err_t rerr = rd_kafka_producev(
            ks->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(TB_UNCONST(key), klen), /* both copied (F_COPY) */
            RD_KAFKA_V_VALUE(TB_UNCONST(value), vlen),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)seq), RD_KAFKA_V_END);
        if (rerr == RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        if (rerr == RD_KAFKA_RESP_ERR__FATAL && ksink_fatal_restart(ks, ks->rk))
            return ksink_failed(ks, err);
        if (rerr != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return kafka_error(err, rerr, "produce to topic %s, key %.*s", rd_kafka_topic_name(rkt),
                                     (int)(klen > KSINK_KEY_SHOW ? KSINK_KEY_SHOW : klen), key);
        rd_kafka_poll(ks->rk, 10); /* backpressure: serve delivery reports, never drop */
        ksink_advance(ks);
        if (ks->failed)
            return ksink_failed(ks, err);
    }
    ks->st.messages++;
    ks->st.bytes += klen + vlen;
    return TB_OK;
}

tb_code ksink_stage_add(ksink *ks, rd_kafka_topic_t *rkt, ksink_parts *parts, const char *key, size_t klen,
                        const char *value, size_t vlen, uint64_t seq, tb_error *err)
{
    ksink_stage *s = &ks->stage;
    if (ks->eos || klen + vlen > KSINK_STAGE_BIG) /* a Kafka transaction reports errors at once */
        return ksink_produce(ks, rkt, RD_KAFKA_PARTITION_UA, key, klen, value, vlen, seq, err);
    if (!s->msgs) {
        s->msgs = calloc(KSINK_STAGE_MSGS, sizeof(*s->msgs));
        s->bytes = malloc(KSINK_STAGE_BYTES);
        if (!s->msgs || !s->bytes) {
            free(s->msgs);
            free(s->bytes);
            s->msgs = NULL;
            s->bytes = NULL;
            return tb_error_set(err, TB_ERR_NOMEM, false, "produce to topic %s: out of memory",
                                rd_kafka_topic_name(rkt));
        }
    }
    if (s->n > 0 && (s->rkt != rkt || s->n == KSINK_STAGE_MSGS || s->used + klen + vlen > KSINK_STAGE_BYTES)) {
        ksink_stage_flush(ks);
        if (ks->failed)
            return ksink_failed(ks, err);
    }
    if (s->n == 0) {
        s->t0_ms = tb_mono_ms();
        s->parts = NULL;
    }
    rd_kafka_message_t *m = &s->msgs[s->n++];
    memset(m, 0, sizeof(*m));
    m->partition = RD_KAFKA_PARTITION_UA;
    m->key = s->bytes + s->used;
    m->key_len = klen;
    if (klen)
        memcpy(m->key, key, klen);
    s->used += klen;
    if (value) { /* NULL: a tombstone */
        m->payload = s->bytes + s->used;
        m->len = vlen;
        memcpy(m->payload, value, vlen);
        s->used += vlen;
    }
    m->_private = (void *)(uintptr_t)seq;
    s->rkt = rkt;
    if (parts) /* a topic's: it holds for the whole batch */
        s->parts = parts;
    ks->st.messages++;
    ks->st.bytes += klen + vlen;
    return TB_OK;
}

/* Record the first refused message as the sink's failure. */
static void ksink_stage_refused(ksink *ks, const rd_kafka_message_t *m)
{
    if (ks->failed || (m->err == RD_KAFKA_RESP_ERR__FATAL && ksink_fatal_restart(ks, ks->rk)))
        return;
    ks->failed = true;
    kafka_error(&ks->fail_err, m->err, "produce to topic %s, key %.*s", rd_kafka_topic_name(ks->stage.rkt),
                      (int)(m->key_len > KSINK_KEY_SHOW ? KSINK_KEY_SHOW : m->key_len), (const char *)m->key);
}

void ksink_stage_flush(ksink *ks)
{
    ksink_stage *s = &ks->stage;
    ksink_parts *p = s->parts;
    bool fixed = p && p->cnt == 1 && s->t0_ms - p->checked_ms < KSINK_PARTS_CHECK_MS;
    size_t done = 0;
    while (done < s->n) {
        ksink_parts_seen = 0;
        rd_kafka_produce_batch(s->rkt, fixed ? 0 : RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, s->msgs + done,
                               (int)(s->n - done));
        if (p && !fixed) { /* 0 when no message was partitioned now (the topic's metadata pending) */
            p->cnt = ksink_parts_seen;
            p->checked_ms = s->t0_ms;
        }
        for (; done < s->n; done++) {
            rd_kafka_resp_err_t e = s->msgs[done].err;
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                break; /* this one and every later one: wait for room */
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
                ksink_stage_refused(ks, &s->msgs[done]);
        }
        if (done < s->n) {
            rd_kafka_poll(ks->rk, 10); /* backpressure: serve delivery reports, never drop */
            ksink_advance(ks);
            if (ks->failed)
                break; /* the rest is never acknowledged: the position stays before it */
        }
    }
    s->n = 0;
    s->used = 0;
}

void ksink_stage_free(ksink_stage *s)
{
    free(s->msgs);
    free(s->bytes);
    memset(s, 0, sizeof(*s));
}
