/*
 * ksink: the producer and commits.
 * The contract is in ksink.h; the in-flight transaction tracker in
 * ksink_track.c, topics in ksink_admin.c, the offsets store in
 * ksink_offsets.c, librdkafka configuration in ksink_conf.c, exactly.once
 * commits in ksink_txn.c; the struct is in ksink_int.h.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "evt_json.h"
#include "ksink.h"
#include "ksink_int.h"
#include "tb_clock.h"
#include "tb_log.h"

/* ------------------------------------------------------------ callbacks */

/* ksink_int.h. A restart already due, or a sink failed for another reason (or exactly.once,
 * whose aborts restart it), is left as it is. */
bool ksink_restart_for(ksink *ks, const char *why)
{
    if (ks->eos || ks->failed)
        return ks->restart_due;
    int64_t now = tb_mono_ms();
    unsigned oldest = ks->nrestart % KSINK_RESTARTS;
    if (ks->nrestart >= KSINK_RESTARTS && now - ks->restart_ms[oldest] < KSINK_RESTART_WINDOW_MS)
        return false; /* the caller fails as before */
    ks->restart_ms[oldest] = now;
    ks->nrestart++;
    ks->restart_due = true;
    ks->failed = true;
    ks->st.restarts++;
    tb_error_set(&ks->fail_err, TB_ERR_KAFKA, true, "%s: a new producer goes on, from the committed position", why);
    TB_WARN("ksink", "%s", ks->fail_err.msg);
    return true;
}

bool ksink_fatal_restart(ksink *ks, rd_kafka_t *rk)
{
    if (ks->eos || ks->failed)
        return ks->restart_due;
    char buf[512], why[640];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    if (orig == RD_KAFKA_RESP_ERR_NO_ERROR)
        return false;
    snprintf(why, sizeof why, "fatal producer error: %s (%s)", buf, rd_kafka_err2name(orig));
    return ksink_restart_for(ks, why);
}

/* why: what the broker did not confirm, for the log and the error. */
static void ksink_unconfirmed_why(const rd_kafka_message_t *m, char *why, size_t cap)
{
    int klen = m->key_len > KSINK_KEY_SHOW ? KSINK_KEY_SHOW : (int)m->key_len;
    snprintf(why, cap,
             "delivery to topic %s [%d] of key %.*s%s not confirmed by the broker (acknowledged by librdkafka "
             "without an offset, after a refused request: it may not be in the topic)",
             rd_kafka_topic_name(m->rkt), (int)m->partition, klen, m->key ? (const char *)m->key : "",
             (size_t)klen < m->key_len ? "..." : "");
}

/* Delivery report: O(1), only counts and records (STYLE 5). */
static void ksink_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    ksink *ks = opaque;
    uint64_t seq = (uint64_t)(uintptr_t)m->_private;
    if (seq != KSINK_OPAQUE_OFFSETS && seq < ks->valid_seq)
        return; /* from an aborted Kafka transaction */
    if (kafka_dr_unconfirmed(m)) { /* not a delivery (kafka.h): written again */
        char why[TB_ERROR_MSG_MAX];
        ksink_unconfirmed_why(m, why, sizeof why);
        ks->st.unconfirmed++;
        if (ks->eos) { /* the Kafka transaction is aborted and its source transactions read again */
            if (!ks->txn_dr_failed) {
                ks->txn_dr_failed = true;
                tb_error_set(&ks->txn_err, TB_ERR_KAFKA, true, "%s", why);
            }
        } else if (!ksink_restart_for(ks, why) && !ks->failed) {
            ks->failed = true; /* too many replacements lately: the run stops, the position before it */
            tb_error_set(&ks->fail_err, TB_ERR_KAFKA, false, "%s; the position stays before it", why);
        }
        return;
    }
    if (m->err && ks->eos && m->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE && m->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        /* exactly.once: the Kafka transaction's outcome decides (commit fails, we abort) */
        if (!ks->txn_dr_failed) {
            ks->txn_dr_failed = true;
            tb_error_set(&ks->txn_err, TB_ERR_KAFKA, true, "delivery to topic %s failed: %s",
                         rd_kafka_topic_name(m->rkt), rd_kafka_err2name(m->err));
        }
        return;
    }
    if (m->err && ks->eos)
        return; /* purged by our own abort */
    if (m->err && ksink_fatal_restart(ks, rk))
        return; /* sent again by the new producer (ksink_restart) */
    if (m->err) {
        if (!ks->failed) {
            ks->failed = true;
            int klen = m->key_len > KSINK_KEY_SHOW ? KSINK_KEY_SHOW : (int)m->key_len;
            tb_error_set(&ks->fail_err, TB_ERR_KAFKA, false,
                         "delivery to topic %s failed for key %.*s%s: %s (%s); the position stays before it",
                         rd_kafka_topic_name(m->rkt), klen, m->key ? (const char *)m->key : "",
                         (size_t)klen < m->key_len ? "..." : "", rd_kafka_err2str(m->err),
                         rd_kafka_err2name(m->err));
        }
        return;
    }
    ks->st.acked++;
    if (seq == KSINK_OPAQUE_OFFSETS) {
        ks->offs_acked++;
        return;
    }
    if (seq >= ks->head_seq && seq - ks->head_seq < ks->count) {
        ksink_tx *t = &ks->ring[(ks->head + (seq - ks->head_seq)) & (ks->cap - 1)];
        assert(t->pending > 0 && "delivery report for a transaction with nothing in flight");
        t->pending--;
    }
}

static void ksink_error_cb(rd_kafka_t *rk, int rerr, const char *reason, void *opaque)
{
    ksink *ks = opaque;
    if (rerr == RD_KAFKA_RESP_ERR__FATAL && ksink_fatal_restart(ks, rk))
        return;
    if (rerr == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
        if (!ks->failed) {
            ks->failed = true;
            tb_error_set(&ks->fail_err, TB_ERR_KAFKA, false, "fatal producer error: %s (%s)", buf,
                         rd_kafka_err2name(orig));
        }
        return;
    }
    /* A refused login or a broker certificate that does not verify does not heal by retrying,
     * and librdkafka would retry for ever: the sink fails with the broker's reason. */
    bool auth = rerr == RD_KAFKA_RESP_ERR__AUTHENTICATION;
    bool cert = rerr == RD_KAFKA_RESP_ERR__SSL && reason && strstr(reason, "certificate verify failed");
    if ((auth || cert) && !ks->failed) {
        ks->failed = true;
        tb_error_set(&ks->fail_err, TB_ERR_KAFKA, false, "Kafka %s: %s (check %s)",
                     auth ? "authentication failed" : "TLS certificate verification failed", reason,
                     auth ? "kafka.sasl.username, kafka.sasl.password(.file) and kafka.sasl.mechanisms"
                          : "kafka.ssl.ca.location");
    }
    TB_WARN("ksink", "%s (%s)", reason, rd_kafka_err2name((rd_kafka_resp_err_t)rerr));
}

/* librdkafka's statistics (kafka.statistics.interval.ms > 0), served from
 * rd_kafka_poll on the sink's thread: keep a copy of the newest. */
static int ksink_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    (void)rk;
    ksink *ks = opaque;
    tb_buf_reset(&ks->stats_json);
    if (tb_buf_append(&ks->stats_json, json, len) == TB_OK)
        ks->stats_new = true;
    return 0; /* librdkafka frees json */
}

bool ksink_stats_json(ksink *ks, tb_buf *out)
{
    if (!ks || !ks->stats_new)
        return false;
    ks->stats_new = false;
    tb_buf_reset(out);
    return tb_buf_append(out, ks->stats_json.data, ks->stats_json.len) == TB_OK;
}

tb_code ksink_failed(const ksink *ks, tb_error *err)
{
    if (!ks->failed)
        return TB_OK;
    if (err)
        *err = ks->fail_err;
    return ks->fail_err.code;
}

tb_code ksink_wait_kafka(ksink *ks, const char *what, ksink_op_fn op, void *arg, tb_error *err)
{
    bool said = false;
    int64_t t0 = tb_mono_ms();
    for (;;) {
        tb_code rc = op(ks, arg, err);
        if (rc != TB_OK && ks->failed) /* a refused login: the error, not the timeout it caused */
            return ksink_failed(ks, err);
        if (rc == TB_OK) {
            ks->reached = true;
            if (said)
                TB_INFO("ksink", "%s: done, after %.1f s waiting for Kafka", what, (double)(tb_mono_ms() - t0) / 1000);
            return TB_OK;
        }
        if (!ks->reached || !err->retriable)
            return rc;
        if (ks->stop && *ks->stop) { /* a stop, not a failure: what was done is redone after the restart */
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return tb_error_set(err, TB_ERR_STOPPED, false, "stopped while waiting for Kafka (%s: %s)", what, why);
        }
        if (!said)
            TB_WARN("ksink", "%s: %s: waiting for Kafka, trying again until it answers (nothing is lost)", what,
                    err->msg);
        said = true;
        ksink_poll(ks, 500); /* the messages queued before go on; delivery reports are served */
        if (ks->wait)
            ks->wait(ks->wait_opaque);
    }
}

/* ------------------------------------------------------------ produce */

void ksink_set_gate(ksink *ks, ksink_gate_fn fn, void *opaque)
{
    ks->gate = fn;
    ks->gate_opaque = opaque;
}

/* av_ser waits for the schema registry inside a send (DESIGN 4b): the messages before the
 * waiting one go on as the loop's poll would send them (staged ones handed over, delivery
 * reports served: they are not "waiting for Kafka"), and the caller's wait hook runs (status,
 * /health, metrics). */
static void ksink_registry_wait(void *opaque)
{
    ksink *ks = opaque;
    if (ks->rk)
        ksink_poll(ks, 0);
    if (ks->wait)
        ks->wait(ks->wait_opaque);
}

void ksink_set_wait(ksink *ks, ksink_wait_fn fn, void *opaque)
{
    ks->wait = fn;
    ks->wait_opaque = opaque;
}

/* Every message of the sink but the offsets records goes through here: the gate first (the
 * transaction slot is looked up after it, since the gate may serve delivery reports). */
tb_code ksink_produce_tracked(ksink *ks, rd_kafka_topic_t *rkt, ksink_parts *parts, const char *key, size_t klen,
                              const char *value, size_t vlen, tb_error *err)
{
    ks->gate_refused = false;
    if (ks->gate) {
        tb_code grc = ks->gate(ks->gate_opaque, err);
        if (grc != TB_OK) {
            ks->gate_refused = true;
            return grc;
        }
    }
    ksink_tx *t = ksink_cur_tx(ks, err);
    if (!t)
        return TB_ERR_NOMEM;
    uint64_t seq = ks->next_seq - 1; /* t is the newest slot */
    tb_code rc = ksink_stage_add(ks, rkt, parts, key, klen, value, vlen, seq, err);
    if (rc == TB_OK) { /* the ring may have moved while polling: find the slot again */
        assert(seq >= ks->head_seq && seq - ks->head_seq < ks->count && "ring: the open transaction left the ring");
        ksink_tx *cur = &ks->ring[(ks->head + (seq - ks->head_seq)) & (ks->cap - 1)];
        cur->pending++;
        cur->produced = true;
    }
    return rc;
}

/* A message over message.max.bytes: oversize.policy decides. */
static tb_code ksink_oversized(ksink *ks, const evt_event *e, const char *topic, const evt_msg *m, tb_error *err)
{
    tb_code rc = TB_OK;
    size_t size = m->key_len + m->value_len, framed = size + KSINK_RECORD_OVERHEAD; /* as librdkafka counts */
    tb_buf pos, rec;
    tb_buf_init(&pos, 0);
    tb_buf_init(&rec, 0);
    int kshow = (int)(m->key_len > KSINK_KEY_SHOW ? KSINK_KEY_SHOW : m->key_len);
    tb_position_format(evt_event_position(e), &pos);
    if (ks->oversize == KSINK_OVERSIZE_FAIL) {
        rc = tb_error_set(err, TB_ERR_INVALID, false,
                          "message for topic %s, key %.*s at position %s is %zu bytes with its record framing, over "
                          "message.max.bytes=%ld (oversize.policy=fail; use dlq or skip, or raise "
                          "kafka.message.max.bytes and the topic's max.message.bytes)",
                          topic, kshow, m->key, tb_buf_cstr(&pos), framed, ks->max_bytes);
        goto out;
    }
    if (ks->oversize == KSINK_OVERSIZE_DLQ) {
        if ((rc = ksink_aux_ensure(ks, &ks->dlq, 0, false, err)) != TB_OK)
            goto out;
        evt_jw w;
        evt_jw_init(&w, &rec);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "topic", (size_t)-1);
        evt_jw_str(&w, topic, strlen(topic));
        evt_jw_key(&w, "key", (size_t)-1);
        evt_jw_json(&w, m->key, m->key_len);
        evt_jw_key(&w, "position", (size_t)-1);
        tb_buf_reset(&ks->scratch);
        if (evt_position_to_json(evt_event_position(e), &ks->scratch) == TB_OK)
            evt_jw_json(&w, ks->scratch.data, ks->scratch.len);
        else
            evt_jw_null(&w);
        evt_jw_key(&w, "size", (size_t)-1);
        evt_jw_uint(&w, size);
        evt_jw_obj_end(&w);
        if ((rc = evt_jw_finish(&w)) != TB_OK) {
            rc = tb_error_set(err, rc, false, "dead-letter record for topic %s, key %.*s: cannot encode", topic,
                              kshow, m->key);
            goto out;
        }
        if (m->key_len + rec.len + KSINK_RECORD_OVERHEAD > (size_t)ks->max_bytes) {
            rc = tb_error_set(err, TB_ERR_INVALID, false,
                              "message for topic %s, key %.*s at position %s is %zu bytes with its record framing "
                              "and even its dead-letter record is over message.max.bytes=%ld",
                              topic, kshow, m->key, tb_buf_cstr(&pos), framed, ks->max_bytes);
            goto out;
        }
        if ((rc = ksink_produce_tracked(ks, ks->dlq.rkt, NULL, m->key, m->key_len, rec.data, rec.len, err)) != TB_OK)
            goto out;
    }
    ks->st.oversized++;
    TB_WARN("ksink",
            "message for topic %s, key %.*s at position %s is %zu bytes with its record framing, over "
            "message.max.bytes=%ld: %s",
            topic, kshow, m->key, tb_buf_cstr(&pos), framed, ks->max_bytes,
            ks->oversize == KSINK_OVERSIZE_DLQ ? "written to the dead-letter topic instead" : "skipped");
out:
    tb_buf_free(&pos);
    tb_buf_free(&rec);
    return rc;
}

static tb_code ksink_send_rendered(ksink *ks, const evt_event *e, ksink_table *te, tb_error *err);
static tb_code ksink_send_as(ksink *ks, const evt_event *e, bool truncate, tb_error *err);

tb_code ksink_send(ksink *ks, const evt_event *e, tb_error *err)
{
    return ksink_send_as(ks, e, false, err);
}

tb_code ksink_send_truncate(ksink *ks, const evt_event *e, tb_error *err)
{
    return ksink_send_as(ks, e, true, err);
}

/* e's messages (truncate: the truncate of its table, evt_render_truncate). */
static tb_code ksink_send_as(ksink *ks, const evt_event *e, bool truncate, tb_error *err)
{
    tb_code rc;
    ksink_table *te = NULL;
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (evt_event_error(e))
        return tb_error_set(err, evt_event_error(e)->code, false, "event not sent: %s", evt_event_error(e)->msg);
    if (ks->eos && (rc = ksink_txn_begin(ks, err)) != TB_OK)
        return rc;
    if ((rc = ksink_prepare_table(ks, evt_event_table(e), &te, err)) != TB_OK)
        return rc;
    ks->copts.now_ms = tb_wall_coarse_ms(); /* envelope ts_ms: processing time, a few ms are enough */
    if ((rc = (truncate ? evt_render_truncate : evt_render)(&ks->copts, e, &ks->r, err)) != TB_OK)
        return rc;
    rc = ksink_send_rendered(ks, e, te, err);
    if (rc == TB_OK)
        ks->st.events++;
    return rc;
}

/* Message m of e in Confluent's wire format (key.converter / value.converter
 * avro) into *out; a null key or value (a tombstone) stays null. The truncate
 * record's key {} fits no Key schema: under Avro keys the truncate is told by
 * the tombstone per key alone (false: m is not sent). The deletes of the keys
 * a topic holds (ksink_topic_keys: TRUNCATE, DROP) reuse the key bytes the
 * topic holds, and their delete event, whose before image holds the key
 * columns only, which an Avro Value record cannot hold, is left out: the
 * tombstone deletes the row. */
static bool ksink_avro_msg(ksink *ks, const evt_event *e, const ksink_table *te, const evt_msg *m, evt_msg *out,
                           tb_code *rc, tb_error *err)
{
    static const char empty_key[] = "{\"schema\":null,\"payload\":{}}";
    *out = *m;
    *rc = TB_OK;
    const evt_table *t = evt_event_table(e);
    if (ks->avro_key && ks->topic_key) {
        if (m->value)
            return false;
        out->key = ks->topic_key;
        out->key_len = ks->topic_key_len;
        return true;
    }
    if (ks->avro_key && m->key) {
        if (m->key_len == sizeof empty_key - 1 && memcmp(m->key, empty_key, m->key_len) == 0)
            return false;
        tb_buf_reset(&ks->scratch);
        tb_buf_reset(&ks->avro_k);
        tb_buf_printf(&ks->scratch, "%s-key", te->topic);
        char what[600];
        snprintf(what, sizeof what, "table %s.%s version %" PRIu32 " (key)", evt_table_db(t), evt_table_name(t),
                 evt_table_version(t));
        if ((*rc = av_ser_encode(ks->avro, tb_buf_cstr(&ks->scratch), what, m->key, m->key_len, &ks->avro_k, err)) !=
            TB_OK)
            return false;
        out->key = ks->avro_k.data;
        out->key_len = ks->avro_k.len;
    }
    if (ks->avro_value && m->value) {
        tb_buf_reset(&ks->scratch);
        tb_buf_reset(&ks->avro_v);
        tb_buf_printf(&ks->scratch, "%s-value", te->topic);
        char what[600];
        snprintf(what, sizeof what, "table %s.%s version %" PRIu32, evt_table_db(t), evt_table_name(t),
                 evt_table_version(t));
        if ((*rc = av_ser_encode(ks->avro, tb_buf_cstr(&ks->scratch), what, m->value, m->value_len, &ks->avro_v,
                                 err)) != TB_OK)
            return false;
        out->value = ks->avro_v.data;
        out->value_len = ks->avro_v.len;
    }
    return true;
}

/* The messages of ks->r, rendered from e, to te's topic. */
static tb_code ksink_send_rendered(ksink *ks, const evt_event *e, ksink_table *te, tb_error *err)
{
    tb_code rc;
    for (size_t i = 0; i < ks->r.n; i++) {
        const evt_msg *m = &ks->r.msgs[i];
        evt_msg am;
        if (ks->avro) {
            if (!ksink_avro_msg(ks, e, te, m, &am, &rc, err)) {
                if (rc != TB_OK)
                    return rc;
                continue;
            }
            m = &am;
        }
        if (m->key_len + m->value_len + KSINK_RECORD_OVERHEAD > (size_t)ks->max_bytes) {
            if ((rc = ksink_oversized(ks, e, te->topic, m, err)) != TB_OK)
                return rc;
            continue;
        }
        rc = ksink_produce_tracked(ks, te->rkt, &te->parts, m->key, m->key_len, m->value, m->value_len, err);
        if (rc == TB_ERR_INVALID) { /* librdkafka counts framing too: same policy */
            if ((rc = ksink_oversized(ks, e, te->topic, m, err)) != TB_OK)
                return rc;
        } else if (rc != TB_OK) {
            if (ks->eos && !ks->failed && !ks->gate_refused &&
                rd_kafka_fatal_error(ks->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
                return ksink_eos_abort(ks, err);
            return rc;
        }
    }
    return TB_OK;
}

tb_code ksink_end_tx(ksink *ks, const tb_position *pos_after_tx, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    ksink_tx *t = ksink_cur_tx(ks, err);
    if (!t)
        return TB_ERR_NOMEM;
    if ((rc = ksink_keep_pos(ks, ks->next_seq - 1, pos_after_tx)) != TB_OK)
        return tb_error_set(err, rc, false, "in-flight tracker: cannot copy the position");
    t->closed = true;
    ksink_advance(ks);
    return TB_OK;
}

void ksink_kick(ksink *ks)
{
    if (ks->stage.n > 0)
        ksink_stage_flush(ks);
}

size_t ksink_staged(const ksink *ks)
{
    return ks->stage.n;
}

size_t ksink_pending(const ksink *ks)
{
    return ks->stage.n + (ks->rk ? (size_t)rd_kafka_outq_len(ks->rk) : 0);
}

/* rd_kafka_flush is the one call that makes librdkafka's linger.ms immediate: while it runs the
 * broker threads send what they hold at once (librdkafka's "flushing"); it returns once
 * everything is acknowledged or at the timeout. In a Kafka transaction the commit sends them. */
void ksink_push(ksink *ks, int timeout_ms)
{
    ksink_kick(ks);
    if (ks->eos || ksink_pending(ks) == 0) /* nothing held: no flush, no wait */
        return;
    rd_kafka_flush(ks->rk, timeout_ms);
    ksink_advance(ks);
}

void ksink_serve(ksink *ks)
{
    rd_kafka_poll(ks->rk, 0);
    ksink_advance(ks);
}

void ksink_poll(ksink *ks, int timeout_ms)
{
    if (timeout_ms > 0 || (ks->stage.n > 0 && tb_mono_ms() - ks->stage.t0_ms >= KSINK_STAGE_MAX_MS))
        ksink_kick(ks);
    rd_kafka_poll(ks->rk, timeout_ms);
    ksink_advance(ks);
#ifdef TB_TEST_HOOKS
    if (ks->test_fatal_after && ks->st.acked >= ks->test_fatal_after) { /* once */
        ks->test_fatal_after = 0;
        rd_kafka_test_fatal_error(ks->rk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, "TB_TEST_KAFKA_FATAL_AFTER");
    }
#endif
}

const tb_position *ksink_committable(const ksink *ks)
{
    return &ks->committable;
}

bool ksink_commit_due(const ksink *ks)
{
    return tb_mono_ms() - ks->last_commit_ms >= ks->commit_interval_ms;
}

tb_code ksink_flush(ksink *ks, int timeout_ms, tb_error *err)
{
    ksink_kick(ks);
    rd_kafka_flush(ks->rk, timeout_ms);
    ksink_advance(ks);
    tb_code rc = ksink_failed(ks, err);
    if (rc != TB_OK)
        return rc;
    int left = rd_kafka_outq_len(ks->rk);
    if (left > 0)
        return tb_error_set(err, TB_ERR_KAFKA, true, "flush: %d messages not acknowledged after %d ms", left,
                            timeout_ms);
    return TB_OK;
}

void ksink_get_stats(const ksink *ks, ksink_stats *out)
{
    *out = ks->st;
    out->tx_open = ks->count;
    out->registry_down_since_ms = 0;
    out->registry_error = NULL;
    av_ser_registry_down(ks->avro, &out->registry_down_since_ms, &out->registry_error);
}

/* Produce the offsets record of pos (non-transactional path waits for it). */
tb_code ksink_produce_offsets(ksink *ks, const tb_position *pos, bool wait, tb_error *err)
{
    tb_code rc;
    bool is_null = false;
    if ((rc = ksink_aux_ensure(ks, &ks->offsets, 1, true, err)) != TB_OK)
        return rc;
    tb_buf_reset(&ks->scratch);
    if ((rc = ksink_offsets_value(pos, &ks->scratch, &is_null)) != TB_OK)
        return tb_error_set(err, rc, false, "offsets record: cannot encode the position");
    if ((rc = ksink_produce(ks, ks->offsets.rkt, 0, ks->offsets_key.data, ks->offsets_key.len,
                            is_null ? NULL : ks->scratch.data, is_null ? 0 : ks->scratch.len, KSINK_OPAQUE_OFFSETS,
                            err)) != TB_OK)
        return rc;
    ks->offs_sent++;
    if (!wait)
        return TB_OK;
    int64_t deadline = tb_mono_ms() + ksink_request_timeout_ms(ks->c);
    while (ks->offs_acked < ks->offs_sent && !ks->failed && tb_mono_ms() < deadline)
        ksink_push(ks, 50); /* sent now, not after linger.ms */
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (ks->offs_acked < ks->offs_sent)
        return tb_error_set(err, TB_ERR_KAFKA, true, "offsets record to %s not acknowledged in %d ms",
                            ks->offsets.name, ksink_request_timeout_ms(ks->c));
    return TB_OK;
}

static tb_code ksink_commit_impl(ksink *ks, bool wait, tb_error *err);

tb_code ksink_commit(ksink *ks, tb_error *err)
{
    return ksink_commit_impl(ks, true, err);
}

tb_code ksink_commit_nowait(ksink *ks, tb_error *err)
{
    return ksink_commit_impl(ks, false, err);
}

static tb_code ksink_commit_impl(ksink *ks, bool wait, tb_error *err)
{
    tb_code rc;
    ks->last_commit_ms = tb_mono_ms();
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (ks->eos)
        return ksink_commit_eos(ks, err);
    ksink_kick(ks);
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    rd_kafka_poll(ks->rk, 0);
    ksink_advance(ks);
    if (ks->committable.kind == TB_POS_NONE ||
        (ks->committed_valid && tb_position_equal(&ks->committable, &ks->committed)))
        return TB_OK;
    if (ks->file_storage)
        rc = ksink_offsets_file_write(cfg_get_str(ks->c, CFGK_OFFSETS_FILE), &ks->committable, err);
    else /* wait for the acknowledgement: callers act on "stored" (e.g. SQLite trigger-mode cleanup) */
        rc = ksink_produce_offsets(ks, &ks->committable, wait, err);
    if (rc != TB_OK)
        return rc;
    if ((rc = tb_position_copy(&ks->committed, &ks->committable)) != TB_OK)
        return tb_error_set(err, rc, false, "commit: cannot copy the position");
    ks->committed_valid = true;
    ks->st.commits++;
    TB_DEBUG("ksink", "committed position (%" PRIu64 " messages acknowledged)", ks->st.acked);
    return TB_OK;
}

/* ------------------------------------------------------------ open/close */

static tb_code ksink_aux_init(ksink_aux_topic *a, tb_code (*name_fn)(const cfg *, tb_buf *), const cfg *c)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = name_fn(c, &b);
    a->name = rc == TB_OK ? tb_buf_detach(&b, NULL) : NULL;
    tb_buf_free(&b);
    return a->name ? TB_OK : TB_ERR_NOMEM;
}

static tb_code ksink_schema_topic_name(const cfg *c, tb_buf *b)
{
    evt_codec_opts o = {.topic_prefix = cfg_get_str(c, CFGK_TOPIC_PREFIX), .name = cfg_get_str(c, CFGK_NAME)};
    return evt_json_schema_topic(&o, b);
}

static tb_code ksink_txmeta_topic_name(const cfg *c, tb_buf *b)
{
    return tb_buf_printf(b, "%s.transaction", cfg_get_str(c, CFGK_TOPIC_PREFIX));
}

tb_code ksink_send_tombstone(ksink *ks, const char *topic, const char *key, size_t klen, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (ks->eos && (rc = ksink_txn_begin(ks, err)) != TB_OK)
        return rc;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(ks->rk, topic, NULL);
    if (!rkt)
        return kafka_error(err, rd_kafka_last_error(), "topic %s", topic);
    rc = ksink_produce_tracked(ks, rkt, NULL, key, klen, NULL, 0, err);
    rd_kafka_topic_destroy(rkt); /* librdkafka keeps it while the message is queued */
    if (rc != TB_OK && ks->eos && !ks->failed && rd_kafka_fatal_error(ks->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return ksink_eos_abort(ks, err);
    return rc;
}

tb_code ksink_send_txmeta(ksink *ks, const char *key, size_t klen, const char *value, size_t vlen, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (ks->eos && (rc = ksink_txn_begin(ks, err)) != TB_OK)
        return rc;
    if ((rc = ksink_aux_ensure(ks, &ks->txmeta, 0, false, err)) != TB_OK)
        return rc;
    rc = ksink_produce_tracked(ks, ks->txmeta.rkt, NULL, key, klen, value, vlen, err);
    if (rc != TB_OK && ks->eos && !ks->failed && !ks->gate_refused &&
        rd_kafka_fatal_error(ks->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return ksink_eos_abort(ks, err);
    return rc;
}

/* The producer (and, with exactly.once, its transactional id initialised). */
static tb_code ksink_client_create(ksink *ks, tb_error *err)
{
    tb_code rc;
    rd_kafka_conf_t *conf = NULL;
    if ((rc = ksink_conf_new(ks->c, ks->eos ? KSINK_ROLE_TXN : KSINK_ROLE_PRODUCER, &conf, err)) != TB_OK)
        return rc;
    rd_kafka_conf_set_opaque(conf, ks);
    rd_kafka_conf_set_dr_msg_cb(conf, ksink_dr_cb);
    rd_kafka_conf_set_error_cb(conf, ksink_error_cb);
    rd_kafka_conf_set_stats_cb(conf, ksink_stats_cb);
    ksink_partitioner_set(conf);
    if ((rc = kafka_client_new(conf, RD_KAFKA_PRODUCER, "Kafka client", &ks->rk, err)) != TB_OK)
        return rc;
    if (ks->eos) {
        rd_kafka_error_t *kerr = rd_kafka_init_transactions(ks->rk, ksink_request_timeout_ms(ks->c));
        if (kerr) {
            rc = kafka_error_obj(err, kerr, "init Kafka transactions (transactional.id=%s)", ks->copts.name);
            rd_kafka_error_destroy(kerr);
            return rc;
        }
    }
    return TB_OK;
}

static void ksink_aux_drop(ksink_aux_topic *a)
{
    if (a->rkt)
        rd_kafka_topic_destroy(a->rkt);
    a->rkt = NULL;
}

/* exactly.once, after an abort: a new producer (new epoch, sequence numbers
 * from zero). librdkafka 2.0.2 keeps the failed batch's sequence numbers
 * after abort_transaction and the broker then answers OUT_OF_ORDER_SEQUENCE
 * to the next transaction; a fresh InitProducerId avoids that. Nothing may
 * be in flight (the transaction was aborted). */
tb_code ksink_client_reset(ksink *ks, tb_error *err)
{
    void *v;
    for (size_t it = 0; tb_hmap_next(&ks->tabs, &it, NULL, NULL, &v);) {
        ksink_table *te = v;
        if (te && te->rkt) {
            rd_kafka_topic_destroy(te->rkt);
            te->rkt = NULL;
        }
        if (te)
            te->parts = (ksink_parts){0, 0}; /* the new client partitions the first batch */
    }
    ksink_aux_drop(&ks->schema);
    ksink_aux_drop(&ks->offsets);
    ksink_aux_drop(&ks->dlq);
    ksink_aux_drop(&ks->txmeta);
    rd_kafka_destroy(ks->rk);
    ks->rk = NULL;
    tb_code rc = ksink_client_create(ks, err);
    if (rc != TB_OK) {
        ks->failed = true;
        if (err)
            ks->fail_err = *err;
        return rc;
    }
    for (size_t it = 0; tb_hmap_next(&ks->tabs, &it, NULL, NULL, &v);) {
        ksink_table *te = v;
        if (te && te->topic && !(te->rkt = rd_kafka_topic_new(ks->rk, te->topic, NULL)))
            return kafka_error(err, rd_kafka_last_error(), "topic %s", te->topic);
    }
    return TB_OK;
}

tb_code ksink_restart(ksink *ks, tb_error *err)
{
    if (!ks->restart_due)
        return TB_OK;
    /* what the old producer has in flight lands or fails before the new one sends, so that a
     * key's records keep their order; its reports are not counted (valid_seq) */
    ks->valid_seq = ks->next_seq;
    ks->stage.n = 0;
    ks->stage.used = 0;
    rd_kafka_flush(ks->rk, ksink_request_timeout_ms(ks->c));
    ksink_ring_clear(ks);
    ksink_schema_forget(ks); /* schema records in flight may be lost: written again when due */
    ks->offs_acked = ks->offs_sent;
    tb_error rerr;
    if (ksink_client_reset(ks, &rerr) != TB_OK) {
        ks->restart_due = false; /* failed stays: the new producer's error */
        if (err)
            *err = rerr;
        return rerr.code;
    }
    ks->restart_due = false;
    ks->failed = false;
    tb_error_clear(&ks->fail_err);
    TB_INFO("ksink", "a new Kafka producer replaced the one that failed");
    return TB_OK;
}

tb_code ksink_open(const cfg *c, ksink **out, tb_error *err)
{
    tb_code rc = TB_OK;
    ksink *ks = calloc(1, sizeof(*ks));
    *out = NULL;
    if (!ks)
        return tb_error_set(err, TB_ERR_NOMEM, false, "ksink: out of memory");
    ks->c = c;
    evt_rendered_init(&ks->r);
    tb_buf_init(&ks->stats_json, 0);
    tb_buf_init(&ks->scratch, 0);
    tb_buf_init(&ks->scratch2, 0);
    tb_buf_init(&ks->keybuf, 0);
    tb_buf_init(&ks->tabkey, 0);
    tb_hmap_init(&ks->tabs);
    tb_buf_init(&ks->offsets_key, 0);
    tb_position_init(&ks->committable);
    tb_position_init(&ks->committed);
    ks->next_seq = ks->head_seq = ks->valid_seq = 1;
    ks->copts.topic_prefix = cfg_get_str(c, CFGK_TOPIC_PREFIX);
    ks->copts.name = cfg_get_str(c, CFGK_NAME);
    ks->copts.row_format = strcmp(cfg_get_str(c, CFGK_VALUE_FORMAT), "row") == 0;
    ks->copts.schemas = cfg_get_bool(c, CFGK_VALUE_SCHEMAS);
    evt_codec_opts_encoding(&ks->copts, c);
    tb_buf_init(&ks->avro_k, 0);
    tb_buf_init(&ks->avro_v, 0);
    ks->avro_key = strcmp(cfg_get_str(c, CFGK_KEY_CONVERTER), "avro") == 0;
    ks->avro_value = strcmp(cfg_get_str(c, CFGK_VALUE_CONVERTER), "avro") == 0;
    if (ks->avro_key || ks->avro_value) {
        /* the codec renders each message with its Connect schema; av_ser turns both into Avro */
        if (ks->avro_key)
            ks->copts.key_schemas = true;
        if (ks->avro_value)
            ks->copts.schemas = true;
        ks->copts.schema_defaults = true; /* a null is its own union branch in Avro */
        if ((rc = av_ser_open(c, &ks->avro, err)) != TB_OK)
            goto out;
        av_ser_set_wait(ks->avro, ksink_registry_wait, ks);
    }
    const char *pol = cfg_get_str(c, CFGK_OVERSIZE_POLICY);
    ks->oversize = strcmp(pol, "dlq") == 0 ? KSINK_OVERSIZE_DLQ
                   : strcmp(pol, "skip") == 0 ? KSINK_OVERSIZE_SKIP : KSINK_OVERSIZE_FAIL;
    ks->max_bytes = ksink_max_message_bytes(c);
    ks->eos = cfg_get_bool(c, CFGK_EXACTLY_ONCE);
    ks->file_storage = strcmp(cfg_get_str(c, CFGK_OFFSETS_STORAGE), "file") == 0;
    ks->commit_interval_ms = cfg_get_int(c, CFGK_OFFSETS_COMMIT_INTERVAL_MS);
#ifdef TB_TEST_HOOKS
    const char *tf = getenv("TB_TEST_KAFKA_FATAL_AFTER");
    ks->test_fatal_after = tf ? strtoull(tf, NULL, 10) : 0;
#endif
    ks->last_commit_ms = tb_mono_ms();
    if (ks->eos && ks->file_storage) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "exactly.once=true needs offsets.storage=kafka (the offsets record joins the Kafka transaction)");
        goto out;
    }
    if (ksink_aux_init(&ks->schema, ksink_schema_topic_name, c) != TB_OK ||
        ksink_aux_init(&ks->offsets, ksink_offsets_topic, c) != TB_OK ||
        ksink_aux_init(&ks->dlq, ksink_dlq_topic, c) != TB_OK ||
        ksink_aux_init(&ks->txmeta, ksink_txmeta_topic_name, c) != TB_OK ||
        ksink_offsets_key(ks->copts.name, &ks->offsets_key) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "ksink: out of memory");
        goto out;
    }
    if ((rc = ksink_client_create(ks, err)) != TB_OK)
        goto out;
    *out = ks;
    ks = NULL;
out:
    ksink_close(ks);
    return rc;
}

static void ksink_aux_free(ksink_aux_topic *a)
{
    ksink_aux_drop(a);
    free(a->name);
}

void ksink_set_stop(ksink *ks, volatile sig_atomic_t *stop)
{
    if (ks)
        ks->stop = stop;
    if (ks && ks->avro)
        av_ser_set_stop(ks->avro, stop);
}

void ksink_close(ksink *ks)
{
    if (!ks)
        return;
    if (ks->rk) {
        if (ks->eos && ks->in_txn) {
            rd_kafka_error_t *kerr = rd_kafka_abort_transaction(ks->rk, 5000);
            if (kerr)
                rd_kafka_error_destroy(kerr);
        }
        rd_kafka_purge(ks->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(ks->rk, 0);
    }
    tb_hmap_free(&ks->tabs, ksink_table_free);
    tb_buf_free(&ks->tabkey);
    ksink_schema_seen_free(ks);
    tb_buf_free(&ks->stats_json);
    ksink_aux_free(&ks->schema);
    ksink_aux_free(&ks->offsets);
    ksink_aux_free(&ks->dlq);
    ksink_aux_free(&ks->txmeta);
    if (ks->rk)
        rd_kafka_destroy(ks->rk);
    ksink_ring_free(ks);
    ksink_stage_free(&ks->stage);
    evt_rendered_free(&ks->r);
    av_ser_close(ks->avro);
    tb_buf_free(&ks->avro_k);
    tb_buf_free(&ks->avro_v);
    tb_buf_free(&ks->scratch);
    tb_buf_free(&ks->scratch2);
    tb_buf_free(&ks->keybuf);
    tb_buf_free(&ks->offsets_key);
    tb_position_free(&ks->committable);
    tb_position_free(&ks->committed);
    free(ks);
}
