/*
 * sink: the two kinds behind sink.h, each a table of operations.
 *
 * kafka: the ksink calls themselves, through casts of the handle.
 * stdout: stdout_sink plus what makes it a sink of the run loop: the
 * position of the last ended transaction (committable at once, the lines
 * are written synchronously), the interval between commits, the store of
 * positions (offsets.file is stdout_sink's; offsets.storage=kafka is
 * ksink_offsets_write), its counters, and, when its output is a regular
 * file, the keys a topic's lines hold (SINK_CAP_KEYS).
 */
#include "sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksink.h"
#include "stdout_sink.h"
#include "tb_clock.h"

/* ------------------------------------------------------------ kafka */

static tb_code k_ready(void *k, tb_error *err)
{
    return ksink_ready(k, err);
}
static tb_code k_send(void *k, const evt_event *e, tb_error *err)
{
    return ksink_send(k, e, err);
}
static tb_code k_announce(void *k, evt_table *t, tb_error *err)
{
    return ksink_announce_table(k, t, err);
}
static tb_code k_end_tx(void *k, const tb_position *pos, tb_error *err)
{
    return ksink_end_tx(k, pos, err);
}
static const tb_position *k_committable(const void *k)
{
    return ksink_committable(k);
}
static bool k_commit_due(const void *k)
{
    return ksink_commit_due(k);
}
static tb_code k_commit(void *k, bool wait, tb_error *err)
{
    return wait ? ksink_commit(k, err) : ksink_commit_nowait(k, err);
}
static tb_code k_flush(void *k, int timeout_ms, tb_error *err)
{
    return ksink_flush(k, timeout_ms, err);
}
static tb_code k_failed(const void *k, tb_error *err)
{
    return ksink_failed(k, err);
}
static tb_code k_restart(void *k, tb_error *err)
{
    return ksink_restart(k, err);
}
static void k_get_stats(const void *k, sink_stats *out)
{
    ksink_stats st;
    ksink_get_stats(k, &st);
    *out = (sink_stats){.messages = st.messages, .acked = st.acked, .oversized = st.oversized, .aborts = st.aborts,
                        .restarts = st.restarts,
                        .waiting_since_ms = st.txn_waiting_since_ms,
                        .registry_down_since_ms = st.registry_down_since_ms,
                        .registry_error = st.registry_error};
}
static void k_close(void *k)
{
    ksink_close(k);
}
static void k_poll(void *k, int timeout_ms)
{
    ksink_poll(k, timeout_ms);
}
static void k_kick(void *k)
{
    ksink_kick(k);
}
static size_t k_staged(const void *k)
{
    return ksink_staged(k);
}
static void k_push(void *k, int timeout_ms)
{
    ksink_push(k, timeout_ms);
}

static void k_serve(void *k)
{
    ksink_serve(k);
}
static bool k_stats_json(void *k, tb_buf *out)
{
    return ksink_stats_json(k, out);
}
static tb_code k_send_truncate(void *k, const evt_event *e, tb_error *err)
{
    return ksink_send_truncate(k, e, err);
}
static tb_code k_send_txmeta(void *k, const char *key, size_t klen, const char *value, size_t vlen, tb_error *err)
{
    return ksink_send_txmeta(k, key, klen, value, vlen, err);
}
static tb_code k_topic_keys(void *k, const evt_table *t, const struct tb_kset *keep, sink_key_fn fn, void *opaque,
                            tb_error *err)
{
    return ksink_topic_keys(k, t, keep, fn, opaque, err);
}
static tb_code k_topic_empty(void *k, const char *db, const char *table, bool *empty, tb_error *err)
{
    return ksink_topic_empty(k, db, table, empty, err);
}

static tb_code k_key_digest(void *k, const evt_event *e, uint64_t *digest, tb_error *err)
{
    return ksink_key_digest(k, e, digest, err);
}
static tb_code k_topics_gone(void *k, sink_captured_fn captured, sink_gone_fn gone, void *opaque, tb_error *err)
{
    return ksink_topics_gone(k, captured, gone, opaque, err);
}

static tb_code k_tables_known(void *k, sink_table_fn fn, void *opaque, tb_error *err)
{
    return ksink_tables_known(k, fn, opaque, err);
}

static tb_code k_schema_last(void *k, const char *db, const char *table, evt_table **out, tb_error *err)
{
    return ksink_schema_last(k, db, table, out, err);
}

static const sink_ops kafka_ops = {
    .name = "kafka",
    .caps = SINK_CAP_TOPICS | SINK_CAP_KEYS,
    .ready = k_ready,
    .send = k_send,
    .announce = k_announce,
    .end_tx = k_end_tx,
    .committable = k_committable,
    .commit_due = k_commit_due,
    .commit = k_commit,
    .flush = k_flush,
    .failed = k_failed,
    .get_stats = k_get_stats,
    .close = k_close,
    .poll = k_poll,
    .kick = k_kick,
    .staged = k_staged,
    .push = k_push,
    .serve = k_serve,
    .stats_json = k_stats_json,
    .send_truncate = k_send_truncate,
    .send_txmeta = k_send_txmeta,
    .topic_keys = k_topic_keys,
    .key_digest = k_key_digest,
    .topic_empty = k_topic_empty,
    .restart = k_restart,
    .topics_gone = k_topics_gone,
    .tables_known = k_tables_known,
    .schema_last = k_schema_last,
};

/* ------------------------------------------------------------ stdout */

typedef struct out_sink {
    stdout_sink *ss;          /* owned */
    const cfg *cfg;           /* borrowed: offsets.storage=kafka writes with it */
    tb_position committable;  /* the last ended transaction's position */
    tb_position stored;       /* the last position written to the offsets store */
    int64_t interval_ms;      /* offsets.commit.interval.ms */
    int64_t last_commit_ms;   /* monotonic time of the last commit */
    bool kafka_offsets;       /* offsets.storage=kafka */
    uint64_t sent;            /* events written */
} out_sink;

static tb_code o_ready(void *o, tb_error *err)
{
    (void)o;
    (void)err;
    return TB_OK;
}
static tb_code o_send(void *o, const evt_event *e, tb_error *err)
{
    out_sink *s = o;
    tb_code rc = stdout_sink_send(s->ss, e, err);
    if (rc == TB_OK)
        s->sent++;
    return rc;
}
static tb_code o_announce(void *o, evt_table *t, tb_error *err)
{
    return stdout_sink_announce(((out_sink *)o)->ss, t, err);
}
static tb_code o_end_tx(void *o, const tb_position *pos, tb_error *err)
{
    if (tb_position_copy(&((out_sink *)o)->committable, pos) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    return TB_OK;
}
static const tb_position *o_committable(const void *o)
{
    return &((const out_sink *)o)->committable;
}
static bool o_commit_due(const void *o)
{
    const out_sink *s = o;
    return tb_mono_ms() - s->last_commit_ms >= s->interval_ms;
}
/* Flush; then store the position if it moved since the last store. */
static tb_code o_commit(void *o, bool wait, tb_error *err)
{
    (void)wait; /* both stores are synchronous */
    out_sink *s = o;
    s->last_commit_ms = tb_mono_ms();
    const tb_position *p = &s->committable;
    if (p->kind == TB_POS_NONE || tb_position_equal(p, &s->stored))
        return stdout_sink_commit(s->ss, NULL, err);
    tb_code rc = stdout_sink_commit(s->ss, p, err);
    if (rc == TB_OK && s->kafka_offsets)
        rc = ksink_offsets_write(s->cfg, p, err);
    if (rc == TB_OK && tb_position_copy(&s->stored, p) != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    return rc;
}
static tb_code o_flush(void *o, int timeout_ms, tb_error *err)
{
    (void)timeout_ms;
    return stdout_sink_commit(((out_sink *)o)->ss, NULL, err);
}
static tb_code o_failed(const void *o, tb_error *err)
{
    (void)o;
    (void)err;
    return TB_OK;
}
static void o_get_stats(const void *o, sink_stats *out)
{
    const out_sink *s = o;
    *out = (sink_stats){.messages = s->sent, .acked = s->sent};
}
static void o_close(void *o)
{
    out_sink *s = o;
    stdout_sink_close(s->ss);
    tb_position_free(&s->committable);
    tb_position_free(&s->stored);
    free(s);
}

static unsigned o_caps_of(const void *o)
{
    return stdout_sink_keys_readable(((const out_sink *)o)->ss) ? SINK_CAP_KEYS : 0u;
}
static tb_code o_topic_keys(void *o, const evt_table *t, const struct tb_kset *keep, sink_key_fn fn, void *opaque,
                            tb_error *err)
{
    return stdout_sink_topic_keys(((out_sink *)o)->ss, t, keep, fn, opaque, err);
}
static tb_code o_key_digest(void *o, const evt_event *e, uint64_t *digest, tb_error *err)
{
    return stdout_sink_key_digest(((out_sink *)o)->ss, e, digest, err);
}
static tb_code o_schema_last(void *o, const char *db, const char *table, evt_table **out, tb_error *err)
{
    return stdout_sink_schema_last(((out_sink *)o)->ss, db, table, out, err);
}

static const sink_ops stdout_ops = {
    .name = "stdout",
    .caps = 0,
    .caps_of = o_caps_of,
    .ready = o_ready,
    .send = o_send,
    .announce = o_announce,
    .end_tx = o_end_tx,
    .committable = o_committable,
    .commit_due = o_commit_due,
    .commit = o_commit,
    .flush = o_flush,
    .failed = o_failed,
    .get_stats = o_get_stats,
    .close = o_close,
    .topic_keys = o_topic_keys,
    .key_digest = o_key_digest,
    .schema_last = o_schema_last,
};

static tb_code stdout_open(const cfg *c, void **impl, tb_error *err)
{
    out_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    tb_position_init(&s->committable);
    tb_position_init(&s->stored);
    s->cfg = c;
    s->interval_ms = cfg_get_int(c, CFGK_OFFSETS_COMMIT_INTERVAL_MS);
    s->last_commit_ms = INT64_MIN / 2; /* never: the first commit is due at once */
    s->kafka_offsets = strcmp(cfg_get_str(c, CFGK_OFFSETS_STORAGE), "kafka") == 0;
    tb_code rc = stdout_sink_open(c, stdout, &s->ss, err);
    if (rc != TB_OK) {
        free(s);
        return rc;
    }
    *impl = s;
    return TB_OK;
}

/* ------------------------------------------------------------ the interface */

tb_code sink_open(const cfg *c, const sink_hooks *hooks, sink **out, tb_error *err)
{
    *out = NULL;
    const char *kind = cfg_get_str(c, CFGK_SINK);
    sink *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "sink: out of memory");
    tb_code rc;
    if (strcmp(kind, "kafka") == 0) {
        ksink *ks = NULL;
        if ((rc = ksink_open(c, &ks, err)) == TB_OK && hooks) {
            if (hooks->gate)
                ksink_set_gate(ks, hooks->gate, hooks->opaque);
            if (hooks->wait)
                ksink_set_wait(ks, hooks->wait, hooks->opaque);
            if (hooks->stop)
                ksink_set_stop(ks, hooks->stop);
        }
        s->ops = &kafka_ops;
        s->impl = ks;
    } else if (strcmp(kind, "stdout") == 0) {
        rc = stdout_open(c, &s->impl, err);
        s->ops = &stdout_ops;
    } else {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "sink=%s: unknown sink (kafka or stdout)", kind);
    }
    if (rc != TB_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return TB_OK;
}

void sink_close(sink *s)
{
    if (!s)
        return;
    s->ops->close(s->impl);
    free(s);
}

static tb_code no_topics(const sink *s, const char *what, tb_error *err)
{
    return tb_error_set(err, TB_ERR_INVALID, false, "sink=%s cannot %s (it writes no Kafka topics)", s->ops->name,
                        what);
}

tb_code sink_send_truncate(sink *s, const evt_event *e, tb_error *err)
{
    return sink_has(s, SINK_CAP_TOPICS) ? s->ops->send_truncate(s->impl, e, err)
                                        : no_topics(s, "write a truncate record", err);
}

tb_code sink_send_txmeta(sink *s, const char *key, size_t klen, const char *value, size_t vlen, tb_error *err)
{
    return sink_has(s, SINK_CAP_TOPICS) ? s->ops->send_txmeta(s->impl, key, klen, value, vlen, err)
                                        : no_topics(s, "write transaction records", err);
}

tb_code sink_topic_keys(sink *s, const evt_table *t, const struct tb_kset *keep, sink_key_fn fn, void *opaque,
                        tb_error *err)
{
    return sink_has(s, SINK_CAP_KEYS) ? s->ops->topic_keys(s->impl, t, keep, fn, opaque, err)
                                        : no_topics(s, "read a topic's keys", err);
}

tb_code sink_restart(sink *s, tb_error *err)
{
    return s->ops->restart ? s->ops->restart(s->impl, err) : TB_OK;
}

tb_code sink_topic_empty(sink *s, const char *db, const char *table, bool *empty, tb_error *err)
{
    *empty = false;
    return sink_has(s, SINK_CAP_KEYS) && s->ops->topic_empty ? s->ops->topic_empty(s->impl, db, table, empty, err)
                                                               : TB_OK;
}

tb_code sink_key_digest(sink *s, const evt_event *e, uint64_t *digest, tb_error *err)
{
    return sink_has(s, SINK_CAP_KEYS) ? s->ops->key_digest(s->impl, e, digest, err)
                                        : no_topics(s, "digest a topic key", err);
}

tb_code sink_tables_known(sink *s, sink_table_fn fn, void *opaque, tb_error *err)
{
    return sink_has(s, SINK_CAP_TOPICS) ? s->ops->tables_known(s->impl, fn, opaque, err)
                                        : no_topics(s, "list the tables of the schema topic", err);
}

tb_code sink_schema_last(sink *s, const char *db, const char *table, evt_table **out, tb_error *err)
{
    *out = NULL;
    return s->ops->schema_last ? s->ops->schema_last(s->impl, db, table, out, err) : TB_OK;
}

tb_code sink_topics_gone(sink *s, sink_captured_fn captured, sink_gone_fn gone, void *opaque, tb_error *err)
{
    return sink_has(s, SINK_CAP_TOPICS) ? s->ops->topics_gone(s->impl, captured, gone, opaque, err)
                                        : no_topics(s, "check for deleted topics", err);
}
