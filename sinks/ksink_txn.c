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
#include "tb_log.h"

/* exactly.once: abort the open Kafka transaction after an abortable error
 * (err already filled); the caller resumes from ksink_committable(). */
tb_code ksink_eos_abort(ksink *ks, tb_error *err)
{
    tb_code rc = TB_ERR_KAFKA; /* one code for "aborted, resume from the committed position" */
    ks->valid_seq = ks->next_seq; /* ignore reports of the aborted messages */
    ksink_schema_forget(ks);      /* schema records of the aborted transaction are not in the topic */
    ks->st.aborts++;
    rd_kafka_error_t *aerr = ks->in_txn ? rd_kafka_abort_transaction(ks->rk, ksink_request_timeout_ms(ks->c)) : NULL;
    ksink_ring_clear(ks);
    ks->in_txn = false;
    ks->txn_dr_failed = false;
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
    rd_kafka_error_t *kerr = NULL;
    for (int attempt = 0; attempt < 3; attempt++) {
        kerr = rd_kafka_commit_transaction(ks->rk, ksink_request_timeout_ms(ks->c));
        if (!kerr || !rd_kafka_error_is_retriable(kerr))
            break;
        rd_kafka_error_destroy(kerr);
        kerr = NULL;
    }
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
        tb_position_copy(&ks->committed, &ks->committable);
        ks->committed_valid = true;
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
    if (rd_kafka_error_is_fatal(kerr)) {
        err->retriable = false;
        ks->failed = true;
        ks->fail_err = *err;
    }
    rd_kafka_error_destroy(kerr);
    return rc;
}

