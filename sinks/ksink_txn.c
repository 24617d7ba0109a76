/*
 * ksink_txn: exactly.once=true (see EXACTLY ONCE in ksink.h).
 *
 * One Kafka transaction holds the messages of the source transactions sent
 * since the last commit and, last, the offsets record of the newest ended
 * source transaction; commit_transaction() makes them visible together to
 * read_committed consumers. An abortable error aborts the Kafka transaction:
 * the in-flight ring is dropped, delivery reports of its messages are ignored
 * (sequence numbers below valid_seq), and the caller resumes the source from
 * ksink_committable(). A fatal error (e.g. fenced by a newer instance with
 * the same transactional.id) stops the sink.
 */
#include "ksink_int.h"
#include "tb_clock.h"

#include <stdlib.h>
#include "tb_log.h"

/* commit_transaction() or abort_transaction() until it is done: either times
 * out (retriable) while the transaction coordinator cannot write its marker
 * or the transaction's messages wait (brokers down, fewer in-sync replicas
 * than min.insync.replicas), and librdkafka wants the same call again to
 * resume it; until it is done it refuses anything else ("Conflicting
 * abort_transaction API call is already in progress"). Each call waits at
 * most a second, then the wait hook runs (ksink_set_wait); a WARN once the
 * wait passes KSINK_TXN_WAIT_WARN_MS, an INFO when it ends; a stop request
 * ends the wait (the retriable error is returned). */
#define KSINK_TXN_WAIT_WARN_MS 10000
static rd_kafka_error_t *ksink_txn_end_wait(ksink *ks, bool commit)
{
    const char *what = commit ? "committing" : "aborting";
    int64_t t0 = tb_wall_ms();
    bool warned = false;
    for (;;) {
        rd_kafka_error_t *kerr = commit ? rd_kafka_commit_transaction(ks->rk, 1000) : rd_kafka_abort_transaction(ks->rk, 1000);
        if (!kerr || !rd_kafka_error_is_retriable(kerr) || (ks->stop && *ks->stop)) {
            ks->st.txn_waiting_since_ms = 0;
            if (warned && !kerr)
                TB_INFO("ksink", "%s the Kafka transaction is done after %.1f s of waiting for the brokers", what,
                        (double)(tb_wall_ms() - t0) / 1000.0);
            return kerr;
        }
        if (!warned && tb_wall_ms() - t0 >= KSINK_TXN_WAIT_WARN_MS) {
            TB_WARN("ksink",
                    "%s the Kafka transaction waits for the brokers (%s): brokers down, or fewer in-sync replicas "
                    "than min.insync.replicas; trying again until they answer, nothing is lost",
                    what, rd_kafka_error_string(kerr));
            warned = true;
        }
        rd_kafka_error_destroy(kerr);
        if (!ks->st.txn_waiting_since_ms) /* status, /health and metrics say so (run_status.c) */
            ks->st.txn_waiting_since_ms = t0;
        if (ks->wait)
            ks->wait(ks->wait_opaque);
    }
}

/* The abort's error says that the coordinator ended the transaction itself:
 * INVALID_TXN_STATE once transaction.timeout.ms passed while the brokers
 * were away (the coordinator aborted it and bumped the producer epoch).
 * librdkafka calls it fatal, yet nothing was fenced: a new producer with the
 * same transactional.id (InitProducerId) may go on, as long as this instance
 * still holds its lease (the gate). The epoch bump answers the old producer
 * with _FENCED (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH), as a newer
 * instance's InitProducerId does: it counts as the coordinator's only when
 * transaction.timeout.ms has passed since the transaction began and the
 * lease holds; any other fence stays fatal. */
static bool ksink_txn_ended_by_coordinator(ksink *ks, const rd_kafka_error_t *aerr)
{
    if (!rd_kafka_error_is_fatal(aerr))
        return false;
    switch (rd_kafka_error_code(aerr)) {
    case RD_KAFKA_RESP_ERR_INVALID_TXN_STATE:   /* the coordinator aborted it (transaction.timeout.ms) */
    case RD_KAFKA_RESP_ERR__FENCED:             /* ... and bumped the producer epoch doing so */
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
        break;
    default:
        return false;
    }
    /* The coordinator ends a transaction only once transaction.timeout.ms
     * passed since it began; sooner, the fence is another instance's. */
    char v[32];
    size_t vn = sizeof v;
    long long timeout_ms = 60000;
    if (rd_kafka_conf_get(rd_kafka_conf(ks->rk), "transaction.timeout.ms", v, &vn) == RD_KAFKA_CONF_OK)
        timeout_ms = atoll(v);
    if (tb_mono_ms() - ks->txn_begin_ms < timeout_ms)
        return false;
    /* Later, a fence by another instance with the same transactional.id is
     * told apart by the lease (ha.enabled): that instance holds it, so the
     * gate refuses. */
    tb_error gerr;
    tb_error_clear(&gerr);
    return !ks->gate || ks->gate(ks->gate_opaque, &gerr) == TB_OK;
}

static tb_code eos_abort(ksink *ks, rd_kafka_error_t *ended, tb_error *err);

/* exactly.once: abort the open Kafka transaction after an abortable error
 * (err already filled); the caller resumes from ksink_committable(). */
tb_code ksink_eos_abort(ksink *ks, tb_error *err)
{
    return eos_abort(ks, NULL, err);
}

/* ksink_eos_abort; ended: the fatal error that ended the transaction in its
 * commit (NULL: abort it), owned here. */
static tb_code eos_abort(ksink *ks, rd_kafka_error_t *ended, tb_error *err)
{
    tb_code rc = TB_ERR_KAFKA; /* one code for "aborted, resume from the committed position" */
    ks->valid_seq = ks->next_seq; /* ignore reports of the aborted messages */
    ksink_schema_forget(ks);      /* schema records of the aborted transaction are not in the topic */
    ks->st.aborts++;
    rd_kafka_error_t *aerr = ended ? ended : ks->in_txn ? ksink_txn_end_wait(ks, false) : NULL;
    ksink_ring_clear(ks);
    ks->in_txn = false;
    ks->txn_dr_failed = false;
    if (aerr && ksink_txn_ended_by_coordinator(ks, aerr)) {
        TB_WARN("ksink",
                "the transaction coordinator ended the Kafka transaction itself (%s: transaction.timeout.ms passed "
                "while it could not be committed): a new producer with the same transactional.id goes on",
                rd_kafka_error_string(aerr));
        rd_kafka_error_destroy(aerr);
        aerr = NULL;
        ks->failed = false; /* the fatal error is the replaced producer's (ksink_error_cb) */
        tb_error_clear(&ks->fail_err);
    }
    if (aerr) {
        rc = kafka_error_obj(err, aerr, "abort Kafka transaction");
        if (rd_kafka_error_is_fatal(aerr)) {
            ks->failed = true;
            ks->fail_err = *err;
        }
        rd_kafka_error_destroy(aerr);
        return rc;
    }
    tb_error rerr;
    if (ksink_client_reset(ks, &rerr) != TB_OK) {
        if (err)
            *err = rerr;
        return rerr.code;
    }
    if (err) {
        tb_error_prefix(err, TB_ERR_KAFKA, "Kafka transaction aborted, resume from the committed position: ");
        err->retriable = true;
    }
    TB_WARN("ksink", "%s", err ? err->msg : "Kafka transaction aborted");
    return rc;
}

tb_code ksink_txn_begin(ksink *ks, tb_error *err)
{
    if (ks->in_txn)
        return TB_OK;
    rd_kafka_error_t *kerr = rd_kafka_begin_transaction(ks->rk);
    if (kerr) {
        tb_code rc = kafka_error_obj(err, kerr, "begin Kafka transaction");
        rd_kafka_error_destroy(kerr);
        return rc;
    }
    ks->in_txn = true;
    ks->txn_begin_ms = tb_mono_ms();
    return TB_OK;
}

tb_code ksink_commit_eos(ksink *ks, tb_error *err)
{
    tb_code rc;
    ksink_tx *tail = ksink_tail(ks);
    if (tail && !tail->closed && tail->produced)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "exactly.once commit inside a source transaction: call ksink_end_tx() first");
    /* the newest closed source transaction still in the ring, else the committed position */
    const tb_position *target = ks->last_seq >= ks->head_seq ? &ks->last_pos : &ks->committable;
    if (!ks->in_txn && ks->committed_valid && tb_position_equal(target, &ks->committed))
        return TB_OK;
    if ((rc = ksink_txn_begin(ks, err)) != TB_OK)
        return rc;
    if ((rc = ksink_produce_offsets(ks, target, false, err)) != TB_OK)
        return rc;
    /* Every report of the transaction's messages is served before it commits: librdkafka
     * commits a transaction whose message it acknowledged without the broker's word (kafka.h
     * kafka_dr_unconfirmed), which this aborts instead, as it does one with a failed delivery.
     * The brokers away, this waits as the commit would (the wait hook each second); a stop ends
     * the wait, and the commit's own wait decides. */
    while (rd_kafka_outq_len(ks->rk) > 0 && !ks->txn_dr_failed && !(ks->stop && *ks->stop)) {
        if (rd_kafka_flush(ks->rk, 1000) != RD_KAFKA_RESP_ERR_NO_ERROR && ks->wait)
            ks->wait(ks->wait_opaque);
    }
    if (ks->txn_dr_failed) {
        tb_error_set(err, TB_ERR_KAFKA, true, "commit Kafka transaction (%s)", ks->txn_err.msg);
        return ksink_eos_abort(ks, err);
    }
    rd_kafka_error_t *kerr = ksink_txn_end_wait(ks, true);
    if (!kerr) {
        ks->txn_dr_failed = false;
        tb_position tmp;
        tb_position_init(&tmp);
        if (tb_position_copy(&tmp, target) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "commit: cannot copy the position");
        ksink_ring_clear(ks);
        tb_position_free(&ks->committable);
        ks->committable = tmp;
        tb_position_free(&ks->committed);
        /* out of memory: nothing is reported committed, so the next commit stores it again */
        ks->committed_valid = tb_position_copy(&ks->committed, &ks->committable) == TB_OK;
        ks->in_txn = false;
        ks->st.commits++;
        return TB_OK;
    }
    if (rd_kafka_error_txn_requires_abort(kerr)) {
        if (ks->txn_dr_failed)
            kafka_error_obj(err, kerr, "commit Kafka transaction (%s)", ks->txn_err.msg);
        else
            kafka_error_obj(err, kerr, "commit Kafka transaction");
        rd_kafka_error_destroy(kerr);
        return ksink_eos_abort(ks, err);
    }
    rc = kafka_error_obj(err, kerr, "commit Kafka transaction");
    if (ksink_txn_ended_by_coordinator(ks, kerr))
        return eos_abort(ks, kerr, err); /* the coordinator aborted it: as an abort */
    if (rd_kafka_error_is_fatal(kerr)) {
        err->retriable = false;
        ks->failed = true;
        ks->fail_err = *err;
    }
    rd_kafka_error_destroy(kerr);
    return rc;
}

