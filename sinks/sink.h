/*
 * sink: the interface `tributary run` writes through (DESIGN.md 10).
 *
 * One struct of operations per kind of sink, chosen once by sink_open()
 * from the `sink` setting, as a connection type is in a server with
 * several transports: the run loop calls sink_* and never asks which kind
 * it has. What a kind cannot do is a capability it lacks (sink_has()), not
 * a branch on its name:
 *
 *   SINK_CAP_KEYS    the sink can read back the keys a table's topic holds
 *                    (sink_topic_keys, sink_key_digest): the reconcile step
 *                    after a resnapshot, a gap or an interrupted snapshot
 *                    (DESIGN 6a). Kafka has it; stdout has it when its
 *                    output is a regular file (the file is the changelog of
 *                    every topic its lines name), not for a pipe or a
 *                    terminal.
 *   SINK_CAP_TOPICS  the messages land in Kafka topics the sink can write
 *                    records into beside the change events and describe:
 *                    topics deleted while captured (sink_topics_gone), the
 *                    tables the schema topic describes (sink_tables_known),
 *                    the truncate record (sink_send_truncate), the
 *                    transaction topic (sink_send_txmeta) and the statements
 *                    that empty a topic key by key (TRUNCATE, DROP, the old
 *                    name of a RENAME). Kafka has it; stdout has not, so
 *                    those steps are left out there.
 *
 * Kinds:
 *   kafka   ksink (ksink.h): asynchronous, a position is committable once
 *           Kafka acknowledged everything before it; exactly.once aborts
 *           are counted in sink_stats.aborts.
 *   stdout  stdout_sink (stdout_sink.h): written synchronously, so the
 *           position of a transaction's end is committable at once; stored
 *           every offsets.commit.interval.ms in offsets.file, or with
 *           offsets.storage=kafka in the offsets topic (ksink_offsets).
 *
 * Every operation returns what the kind's own call returns (see its
 * header); an optional operation a kind lacks is TB_OK and does nothing
 * (sink_poll, sink_kick, sink_serve; sink_push then kicks), or 0 / false
 * (sink_staged, sink_stats_json). The operations under a SINK_CAP_* must
 * only be called when sink_has() says so (TB_ERR_INVALID otherwise).
 *
 * Ownership: sink_open() returns a sink the caller frees with sink_close()
 * (NULL-safe; does not flush or commit). The cfg is borrowed and must
 * outlive the sink. Single-threaded, like the kinds under it.
 */
#ifndef SINK_H
#define SINK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "cfg.h"
#include "evt.h"
#include "tb_buf.h"
#include "tb_error.h"
#include "tb_position.h"

enum {
    SINK_CAP_TOPICS = 1u << 0,
    SINK_CAP_KEYS = 1u << 1,
};

/* Counters of a sink, whatever its kind (stdout: every message counts as
 * acknowledged when written; oversized and aborts stay 0). */
typedef struct sink_stats {
    uint64_t messages;  /* messages handed over (incl. schema, dead-letter, transaction records) */
    uint64_t acked;     /* of them acknowledged */
    uint64_t oversized; /* messages handled by oversize.policy dlq/skip */
    uint64_t aborts;    /* exactly.once: Kafka transactions aborted */
    uint64_t restarts;  /* at-least-once: producers that failed fatally, to be replaced (sink_restart) */
    int64_t waiting_since_ms; /* wall ms since which ending a Kafka transaction waits for the
                               * brokers (its messages may all be acknowledged); 0 none */
    int64_t registry_down_since_ms; /* Avro: wall ms since which a send waits for the schema
                                     * registry, which does not answer; 0 none */
    const char *registry_error;     /* then "<url>: <error>" (valid until the next sink call) */
} sink_stats;

/* Hooks of the caller, all optional (ksink_set_gate, ksink_set_wait,
 * ksink_set_stop: see ksink.h; stdout uses none). */
typedef struct sink_hooks {
    tb_code (*gate)(void *opaque, tb_error *err);
    void (*wait)(void *opaque);
    void *opaque;
    volatile sig_atomic_t *stop;
} sink_hooks;

struct tb_kset;
typedef tb_code (*sink_key_fn)(void *opaque, const char *key, size_t klen, tb_error *err);
typedef bool (*sink_captured_fn)(void *opaque, const char *db, const char *table);
typedef tb_code (*sink_gone_fn)(void *opaque, const char *db, const char *table, const char *topic, tb_error *err);
typedef tb_code (*sink_table_fn)(void *opaque, const char *db, const char *table, tb_error *err);

typedef struct sink_ops {
    const char *name; /* the `sink` setting that picks it */
    unsigned caps;    /* SINK_CAP_* every sink of the kind has */
    unsigned (*caps_of)(const void *impl); /* optional: SINK_CAP_* this one has besides */
    tb_code (*ready)(void *impl, tb_error *err);
    tb_code (*send)(void *impl, const evt_event *e, tb_error *err);
    tb_code (*announce)(void *impl, evt_table *t, tb_error *err);
    tb_code (*end_tx)(void *impl, const tb_position *pos_after_tx, tb_error *err);
    const tb_position *(*committable)(const void *impl);
    bool (*commit_due)(const void *impl);
    tb_code (*commit)(void *impl, bool wait, tb_error *err);
    tb_code (*flush)(void *impl, int timeout_ms, tb_error *err);
    tb_code (*failed)(const void *impl, tb_error *err);
    void (*get_stats)(const void *impl, sink_stats *out);
    void (*close)(void *impl);
    /* optional */
    void (*poll)(void *impl, int timeout_ms);
    void (*kick)(void *impl);
    size_t (*staged)(const void *impl);
    void (*push)(void *impl, int timeout_ms);
    void (*serve)(void *impl);
    bool (*stats_json)(void *impl, tb_buf *out);
    /* SINK_CAP_TOPICS */
    tb_code (*send_truncate)(void *impl, const evt_event *e, tb_error *err);
    tb_code (*send_txmeta)(void *impl, const char *key, size_t klen, const char *value, size_t vlen,
                           tb_error *err);
    tb_code (*topic_keys)(void *impl, const evt_table *t, const struct tb_kset *keep, sink_key_fn fn,
                          void *opaque, tb_error *err);
    tb_code (*key_digest)(void *impl, const evt_event *e, uint64_t *digest, tb_error *err);
    tb_code (*topic_empty)(void *impl, const char *db, const char *table, bool *empty, tb_error *err); /* optional */
    tb_code (*restart)(void *impl, tb_error *err); /* optional */
    tb_code (*topics_gone)(void *impl, sink_captured_fn captured, sink_gone_fn gone, void *opaque,
                           tb_error *err);
    tb_code (*tables_known)(void *impl, sink_table_fn fn, void *opaque, tb_error *err);
    /* optional, of any sink that keeps its schema records where it can read them */
    tb_code (*schema_last)(void *impl, const char *db, const char *table, evt_table **out, tb_error *err);
} sink_ops;

typedef struct sink {
    const sink_ops *ops;
    void *impl;
} sink;

/* Open the sink the `sink` setting names (kafka, stdout: its lines on the
 * process's standard output) with the settings of c; hooks may be NULL.
 * TB_ERR_CONFIG for an unknown kind or a bad setting of the kind. */
TB_MUST_USE tb_code sink_open(const cfg *c, const sink_hooks *hooks, sink **out, tb_error *err);
void sink_close(sink *s);

static inline bool sink_has(const sink *s, unsigned cap)
{
    return s && ((s->ops->caps | (s->ops->caps_of ? s->ops->caps_of(s->impl) : 0u)) & cap) == cap;
}
static inline const char *sink_name(const sink *s)
{
    return s->ops->name;
}

/* Whether the sink can take messages (kafka: the cluster answers, see ksink_ready). */
static inline tb_code sink_ready(sink *s, tb_error *err)
{
    return s->ops->ready(s->impl, err);
}
/* The messages of one event (ksink_send, stdout_sink_send). */
static inline tb_code sink_send(sink *s, const evt_event *e, tb_error *err)
{
    return s->ops->send(s->impl, e, err);
}
/* The schema record of t now (ksink_announce_table). */
static inline tb_code sink_announce(sink *s, evt_table *t, tb_error *err)
{
    return s->ops->announce(s->impl, t, err);
}
/* The current source transaction ends; pos (copied) is where to resume after it. */
static inline tb_code sink_end_tx(sink *s, const tb_position *pos, tb_error *err)
{
    return s->ops->end_tx(s->impl, pos, err);
}
/* The newest position whose transaction and all before it are delivered;
 * kind TB_POS_NONE while there is none. Borrowed until the next sink call. */
static inline const tb_position *sink_committable(const sink *s)
{
    return s->ops->committable(s->impl);
}
/* offsets.commit.interval.ms passed since the last commit. */
static inline bool sink_commit_due(const sink *s)
{
    return s->ops->commit_due(s->impl);
}
/* Store sink_committable() when it changed (flushing first). wait: return
 * only once it is durably stored (ksink_commit); else the Kafka offsets
 * record may still be in flight (ksink_commit_nowait). */
static inline tb_code sink_commit(sink *s, bool wait, tb_error *err)
{
    return s->ops->commit(s->impl, wait, err);
}
/* Wait until everything handed over is delivered, at most timeout_ms. */
static inline tb_code sink_flush(sink *s, int timeout_ms, tb_error *err)
{
    return s->ops->flush(s->impl, timeout_ms, err);
}
/* TB_OK while the sink works; the error that ended it for good, else (retrying does not heal it). */
static inline tb_code sink_failed(const sink *s, tb_error *err)
{
    return s->ops->failed(s->impl, err);
}
static inline void sink_get_stats(const sink *s, sink_stats *out)
{
    s->ops->get_stats(s->impl, out);
}
static inline void sink_poll(sink *s, int timeout_ms)
{
    if (s->ops->poll)
        s->ops->poll(s->impl, timeout_ms);
}
static inline void sink_kick(sink *s)
{
    if (s->ops->kick)
        s->ops->kick(s->impl);
}
/* Before waiting for the source: everything held is sent now (ksink_push), waiting up to
 * timeout_ms for its acknowledgements (at once when nothing is held); a sink without the
 * operation hands over what it staged. */
static inline void sink_push(sink *s, int timeout_ms)
{
    if (s->ops->push)
        s->ops->push(s->impl, timeout_ms);
    else
        sink_kick(s);
}
static inline size_t sink_staged(const sink *s)
{
    return s->ops->staged ? s->ops->staged(s->impl) : 0;
}
static inline void sink_serve(sink *s)
{
    if (s->ops->serve)
        s->ops->serve(s->impl);
}
/* librdkafka's statistics JSON when a new one arrived (ksink_stats_json). */
static inline bool sink_stats_json(sink *s, tb_buf *out)
{
    return s->ops->stats_json ? s->ops->stats_json(s->impl, out) : false;
}

/* SINK_CAP_KEYS (ksink_topic_keys, stdout_sink_topic_keys) */
TB_MUST_USE tb_code sink_topic_keys(sink *s, const evt_table *t, const struct tb_kset *keep, sink_key_fn fn, void *opaque,
                        tb_error *err);
TB_MUST_USE tb_code sink_key_digest(sink *s, const evt_event *e, uint64_t *digest, tb_error *err);
/* Before the source is read again from sink_committable() after an abort or a restart
 * (sink_stats.aborts, .restarts): a producer that failed fatally is replaced (ksink_restart). */
TB_MUST_USE tb_code sink_restart(sink *s, tb_error *err);
/* Whether table t's topic holds no record at all (it does not exist, or every partition's low and
 * high watermarks are equal): then a snapshot that is the only writer of the topic until its end
 * has nothing to reconcile. *empty false when the sink cannot tell. */
TB_MUST_USE tb_code sink_topic_empty(sink *s, const char *db, const char *table, bool *empty, tb_error *err);
/* SINK_CAP_TOPICS (see ksink.h for each) */
TB_MUST_USE tb_code sink_send_truncate(sink *s, const evt_event *e, tb_error *err);
TB_MUST_USE tb_code sink_send_txmeta(sink *s, const char *key, size_t klen, const char *value, size_t vlen, tb_error *err);
TB_MUST_USE tb_code sink_topics_gone(sink *s, sink_captured_fn captured, sink_gone_fn gone, void *opaque, tb_error *err);
/* fn for each table the sink's schema topic describes and does not say is
 * dropped (ksink_tables_known): the tables written to before. */
TB_MUST_USE tb_code sink_tables_known(sink *s, sink_table_fn fn, void *opaque, tb_error *err);
/* db.table as the latest schema record that describes it says (ksink_schema_last; the stdout
 * sink's output file, stdout_sink_schema_last); *out NULL when there is none, and always for a
 * sink that cannot read its records back (standard output to a pipe). */
TB_MUST_USE tb_code sink_schema_last(sink *s, const char *db, const char *table, evt_table **out, tb_error *err);

#endif
