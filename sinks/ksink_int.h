/*
 * ksink_int.h: pieces shared by the files of the Kafka sink (not public).
 *
 *   ksink_conf.c     librdkafka configuration, log routing, error translation
 *   ksink_admin.c    topic creation and the compaction check (Admin API)
 *   ksink_offsets.c  the offsets store (topic or file)
 *   ksink.c          the producer, the in-flight tracker, commits
 *   ksink_txn.c      exactly.once: Kafka transactions around batches
 */
#ifndef KSINK_INT_H
#define KSINK_INT_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>
#include "cfg.h"
#include "kafka.h"
#include "tb_buf.h"
#include "tb_error.h"
#include "tb_hmap.h"
#include "tb_position.h"
#include "av_ser.h"

/* The prefetch queue of a KSINK_ROLE_SCAN reader (queued.max.messages.kbytes). */
#define KSINK_SCAN_QUEUE_KB 1024
/* The producer's queue.buffering.max.kbytes unless kafka.* sets it (ksink_conf_new). */
#define KSINK_QUEUE_KB 4096

typedef enum ksink_role {
    KSINK_ROLE_PRODUCER,    /* idempotent producer, throughput defaults */
    KSINK_ROLE_TXN,         /* same, plus transactional.id = name */
    KSINK_ROLE_CONSUMER,    /* offsets reader: read_committed, no group commits */
    KSINK_ROLE_SCAN,        /* the same, reading a whole topic once: a small prefetch queue
                               (ksink_topic_scan, KSINK_SCAN_QUEUE_KB) */
} ksink_role;

/* A new librdkafka configuration for role: fixed settings, tuned defaults,
 * every kafka.* key, the log callback. Caller owns *out (rd_kafka_conf_destroy
 * or hand it to rd_kafka_new). */
TB_MUST_USE tb_code ksink_conf_new(const cfg *c, ksink_role role, rd_kafka_conf_t **out, tb_error *err);

/* Clients are created with kafka_client_new and librdkafka's errors become
 * tb_codes in kafka_error / kafka_error_obj (kafka/kafka.h). */

/* message.max.bytes in effect (kafka.message.max.bytes or 1000000). */
long ksink_max_message_bytes(const cfg *c);

/* Milliseconds to wait for admin and metadata requests. */
int ksink_request_timeout_ms(const cfg *c);

/* Make sure topic exists: create it (compacted when compact) or, when it
 * exists and compact && topic.check.compact, check its cleanup.policy.
 * partitions <= 0 means topic.partitions. Honors topic.create=false. */
TB_MUST_USE tb_code ksink_topic_ensure(rd_kafka_t *rk, const cfg *c, const char *topic, int partitions,
                           bool compact, tb_error *err);
/* The same, serving rk's callbacks while it waits and giving up once *stop is set (the sink's
 * failed flag: a refused login seen by its error callback). */
TB_MUST_USE tb_code ksink_topic_ensure_until(rd_kafka_t *rk, const cfg *c, const char *topic, int partitions,
                                 bool compact, const bool *stop, tb_error *err);

/* min.insync.replicas for a new topic of replication factor rf without
 * topic.min.insync.replicas: 2 from 3 replicas on, else 1. */
int ksink_default_min_insync(int rf);
/* WARN, naming the fix, when topic's replication (rf replicas on a cluster of
 * brokers, min_insync; 0 or less: unknown) can lose acknowledged writes or
 * stops them: rf 1 on several brokers, min_insync above rf, 1 with rf >= 3,
 * or equal to rf > 1. */
void ksink_topic_check_replication(const char *topic, int brokers, int rf, int min_insync);

/* "<name>.offsets", "<name>.dlq" appended to out. */
TB_MUST_USE tb_code ksink_offsets_topic(const cfg *c, tb_buf *out);
TB_MUST_USE tb_code ksink_dlq_topic(const cfg *c, tb_buf *out);

/* The offsets record value for pos: JSON, or *is_null = true for NONE. */
TB_MUST_USE tb_code ksink_offsets_value(const tb_position *pos, tb_buf *out, bool *is_null);

/* Atomic file write of the text form. */
TB_MUST_USE tb_code ksink_offsets_file_write(const char *path, const tb_position *pos, tb_error *err);

/* ------------------------------------------------------------ the sink */
/* Shared by ksink.c (producer, tracker) and ksink_txn.c (exactly.once). */

#include "evt_json.h"
#include "ksink.h"

#define KSINK_OPAQUE_OFFSETS 0
#define KSINK_KEY_SHOW 200 /* bytes of a key quoted in messages */

/* One source transaction in flight (16 bytes: the ring is walked once per
 * message and per delivery report). Its sequence number is implicit: the
 * slot of seq s is ring[(head + s - head_seq) & (cap - 1)]. */
typedef struct ksink_tx {
    int64_t pending;         /* messages not yet acknowledged */
    bool produced;           /* at least one message was produced in it */
    bool closed;
} ksink_tx;

/* A position kept for a closed transaction (see KSINK_MARK_EVERY in ksink_track.c). */
typedef struct ksink_mark {
    uint64_t seq;
    tb_position pos;
} ksink_mark;

/* What the sink knows of a table topic's partitions (ksink_stage_flush); the caller's thread only. */
typedef struct ksink_parts {
    int32_t cnt;             /* when a batch last went through the partitioner (0: unknown) */
    int64_t checked_ms;      /* and when (tb_mono_ms) */
} ksink_parts;

typedef struct ksink_table {
    char *db, *table;        /* owned */
    char *topic;
    rd_kafka_topic_t *rkt;
    ksink_parts parts;       /* of rkt */
    evt_table *last;         /* reference to the descriptor last seen */
    bool announced;
    uint32_t version;        /* schema version announced (the descriptor's own) */
    int64_t vshift;          /* added to a descriptor's version in its schema record, so that the
                              * numbers continue those the schema topic holds */
} ksink_table;

typedef enum { KSINK_OVERSIZE_FAIL, KSINK_OVERSIZE_DLQ, KSINK_OVERSIZE_SKIP } ksink_oversize;

typedef struct ksink_aux_topic {
    char *name;
    rd_kafka_topic_t *rkt;
    bool ensured;
} ksink_aux_topic;

/* Messages of one topic waiting to be handed to librdkafka together (ksink_produce.c). */
typedef struct ksink_stage {
    rd_kafka_topic_t *rkt;   /* their topic (borrowed) */
    ksink_parts *parts;      /* its partitions, or NULL: partitioned per message (borrowed) */
    rd_kafka_message_t *msgs; /* KSINK_STAGE_MSGS slots, allocated on first use */
    char *bytes;             /* their keys and values, KSINK_STAGE_BYTES */
    size_t n, used;
    int64_t t0_ms;           /* tb_mono_ms() when the first of them was staged */
} ksink_stage;

/* At most this many producer replacements (ksink_restart) in KSINK_RESTART_WINDOW_MS; one more
 * fatal error stops the sink as before. */
#define KSINK_RESTARTS 5
#define KSINK_RESTART_WINDOW_MS (10 * 60 * 1000)

struct ksink {
    const cfg *c;
    rd_kafka_t *rk;
    tb_buf stats_json;       /* newest librdkafka statistics JSON (kafka.statistics.interval.ms) */
    bool stats_new;          /* stats_json not yet taken by ksink_stats_json() */
    evt_codec_opts copts;
    evt_rendered r;
    av_ser *avro;            /* key.converter or value.converter avro: the serializer, else NULL */
    bool avro_key, avro_value;
    tb_buf avro_k, avro_v;   /* the wire-format key and value of the message being sent */
    const char *topic_key;   /* during ksink_topic_keys with Avro keys: the key's bytes as the topic holds
                              * them, which the deletes of that key reuse (borrowed) */
    size_t topic_key_len;
    ksink_stage stage;
    tb_buf scratch, scratch2;
    tb_buf keybuf;           /* ksink_key_digest's rendering */

    tb_hmap tabs;            /* "<db>\0<table>" -> ksink_table * (owned) */
    tb_buf tabkey;           /* the key being looked up */
    ksink_table *last_tab;

    ksink_aux_topic schema, offsets, dlq, txmeta; /* txmeta: <topic.prefix>.transaction */
    tb_hmap *schema_seen;    /* "{db,table}" key -> latest schema record held (ksink_keys.c); NULL until read */
    tb_buf offsets_key;

    ksink_tx *ring;
    size_t cap, head, count; /* cap: 0 or a power of two (ring indices are masked) */
    uint64_t head_seq, next_seq, valid_seq;
    ksink_mark *marks;       /* kept positions of closed transactions in the ring, oldest first */
    size_t mcap, mhead, mcount; /* like cap, head, count; free slots keep their strings for reuse */
    tb_position last_pos;    /* position of the newest closed transaction, seq last_seq (0: none) */
    uint64_t last_seq;

    tb_position committable; /* newest fully acknowledged (non-EOS) / committed (EOS) */
    tb_position committed;   /* last written to the offsets store */
    bool committed_valid;

    ksink_gate_fn gate;      /* checked before each message is staged (ksink_set_gate); NULL: none */
    void *gate_opaque;
    ksink_wait_fn wait;      /* ksink_set_wait; NULL: none */
    void *wait_opaque;
    bool gate_refused;       /* the last message was refused by the gate (no exactly_once abort) */
    bool failed;             /* set by callbacks */
    bool reached;            /* an operation through ksink_wait_kafka succeeded once */
    tb_error fail_err;
    bool txn_dr_failed;      /* exactly.once: a message of the open Kafka transaction failed */
    bool restart_due;        /* at-least-once: the producer failed fatally; ksink_restart replaces it
                              * (failed and fail_err say so until then) */
    int64_t restart_ms[KSINK_RESTARTS]; /* tb_mono_ms of the latest replacements (a ring) */
    unsigned nrestart;
    uint64_t test_fatal_after; /* TB_TEST_KAFKA_FATAL_AFTER (ksink.h, test builds): 0 none, or done */
    tb_error txn_err;

    ksink_oversize oversize;
    long max_bytes;
    bool eos, in_txn, file_storage;
    int64_t txn_begin_ms;    /* tb_mono_ms() when the open Kafka transaction began */
    volatile sig_atomic_t *stop; /* ksink_set_stop: long waits end when it is set */
    int64_t commit_interval_ms, last_commit_ms;
    uint64_t offs_sent, offs_acked;
    ksink_stats st;
};

/* Kafka away once the sink has reached it is waited for, as a send waits for it (DESIGN 4):
 * op, failing retriably (brokers down, a broker restarting, a request timed out), is tried
 * again until it succeeds, fails otherwise, the producer's callbacks record a failure (that
 * error is returned), or a stop is requested (TB_ERR_STOPPED: the run stops cleanly, and what the
 * caller was doing is done again after the restart). The first retriable failure WARNs, naming what;
 * between tries the messages queued before go on and the wait hook (ksink_set_wait) keeps
 * status and /health current. Before the first success a failure is returned at once: start-up
 * reports an unreachable Kafka (run_retry). */
typedef tb_code (*ksink_op_fn)(ksink *ks, void *arg, tb_error *err);
TB_MUST_USE tb_code ksink_wait_kafka(ksink *ks, const char *what, ksink_op_fn op, void *arg, tb_error *err);

/* Whether this run made (or found) topic as the topic of table db.table: it exists unless it
 * was deleted since, so the cluster's metadata not knowing it is a lag, not an empty topic. */
bool ksink_topic_made(ksink *ks, const char *db, const char *table, const char *topic);

/* Hand one message to librdkafka now (after the staged ones), polling while
 * the queue is full. seq: the delivery opaque. */
TB_MUST_USE tb_code ksink_produce(ksink *ks, rd_kafka_topic_t *rkt, int32_t partition, const char *key, size_t klen,
                      const char *value, size_t vlen, uint64_t seq, tb_error *err);
/* Stage one message for rkt (parts: what is known of its partitions, or NULL; ksink_stage_flush);
 * produced directly with exactly.once and when large. Copies key and value. */
TB_MUST_USE tb_code ksink_stage_add(ksink *ks, rd_kafka_topic_t *rkt, ksink_parts *parts, const char *key,
                                    size_t klen, const char *value, size_t vlen, uint64_t seq, tb_error *err);
/* The producer's partitioner (partitioner=murmur2_random, noting the partition count for
 * ksink_stage_flush): set on conf's default topic configuration. */
void ksink_partitioner_set(rd_kafka_conf_t *conf);
/* Hand the staged messages over; a refused one records the sink's failure. */
void ksink_stage_flush(ksink *ks);
void ksink_stage_free(ksink_stage *s);
/* Pop the acknowledged transactions; move committable (ksink_track.c). */
void ksink_advance(ksink *ks);
/* ksink_poll(ks, 0) hands the stage over once its first message is this old
 * (a source busy with events that produce nothing must not hold it). */
#define KSINK_STAGE_MAX_MS 1
/* librdkafka's largest framing of one record besides key and value
 * (RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD: seven varints and the attributes byte):
 * it refuses a message when key + value + this exceeds message.max.bytes. */
#define KSINK_RECORD_OVERHEAD 36

/* Schema records the schema topic holds (ksink_keys.c). _load reads the
 * topic once (later calls do nothing); on failure the set stays empty, so
 * every record is written. _seen: whether the topic holds a record for key;
 * then *version is its version and *same whether it equals value, but for
 * the version when an earlier run wrote it. _set: value, written by this
 * sink, is now the latest for key (out of memory empties the set). */
TB_MUST_USE tb_code ksink_schema_seen_load(ksink *ks, const char *topic, tb_error *err);
bool ksink_schema_seen(const ksink *ks, const char *key, size_t klen, const char *value, size_t vlen,
                       uint32_t *version, bool *same);
void ksink_schema_seen_set(ksink *ks, const char *key, size_t klen, const char *value, size_t vlen);
void ksink_schema_seen_free(ksink *ks);
/* fn for the key of every schema record held whose table was not dropped since. */
void ksink_schema_seen_each(const ksink *ks, void (*fn)(void *opaque, const char *key, size_t klen), void *opaque);
/* After an aborted Kafka transaction: its schema records are not in the
 * topic, so every table's is written again unless the topic (read again)
 * holds it (ksink.c). */
void ksink_schema_forget(ksink *ks);

/* Produce one message of the current source transaction (every message but
 * the offsets records): the gate first, then staged and counted in the
 * transaction's slot (ksink.c). parts: as for ksink_stage_add. */
TB_MUST_USE tb_code ksink_produce_tracked(ksink *ks, rd_kafka_topic_t *rkt, ksink_parts *parts, const char *key,
                                          size_t klen, const char *value, size_t vlen, tb_error *err);
/* Tables and topics (ksink_topics.c). The table entry of t, its topic made and
 * its schema record written when new or changed. */
TB_MUST_USE tb_code ksink_prepare_table(ksink *ks, evt_table *t, ksink_table **out, tb_error *err);
/* An auxiliary topic (schema, transaction metadata) made once. */
TB_MUST_USE tb_code ksink_aux_ensure(ksink *ks, ksink_aux_topic *a, int partitions, bool compact, tb_error *err);
/* The free function of ks->tables' entries. */
void ksink_table_free(void *p);

/* The in-flight tracker (ksink_track.c). Newest transaction of the ring, or NULL. */
ksink_tx *ksink_tail(ksink *ks);
/* The open transaction, starting one when the last one is closed; NULL when
 * out of memory (err says so). */
ksink_tx *ksink_cur_tx(ksink *ks, tb_error *err);
/* Keep pos as the position of closed transaction seq. */
TB_MUST_USE tb_code ksink_keep_pos(ksink *ks, uint64_t seq, const tb_position *pos);
/* Free the ring, the marks and the kept positions (at close). */
void ksink_ring_free(ksink *ks);
/* Drop every transaction of the ring (frees their positions). */
/* The producer rk failed fatally (rd_kafka_fatal_error) and, at-least-once, a restart is now due
 * (ksink_restart; failed and fail_err say so); false when it is not (exactly.once, failed for
 * another reason, too many restarts lately, no fatal error). */
bool ksink_fatal_restart(ksink *ks, rd_kafka_t *rk);
/* At-least-once: the producer is replaced for why (ksink_restart; failed and fail_err say so,
 * with a WARN); false when it is not (exactly.once, failed for another reason, too many restarts
 * lately). */
bool ksink_restart_for(ksink *ks, const char *why);
void ksink_ring_clear(ksink *ks);
/* Produce the offsets record of pos; wait for its acknowledgement when asked. */
TB_MUST_USE tb_code ksink_produce_offsets(ksink *ks, const tb_position *pos, bool wait, tb_error *err);
/* exactly.once (ksink_txn.c) */
/* Begin a Kafka transaction unless one is open. */
TB_MUST_USE tb_code ksink_txn_begin(ksink *ks, tb_error *err);
TB_MUST_USE tb_code ksink_commit_eos(ksink *ks, tb_error *err);
TB_MUST_USE tb_code ksink_eos_abort(ksink *ks, tb_error *err);
/* A new producer after an abort (ksink.c); records a failure if it cannot. */
TB_MUST_USE tb_code ksink_client_reset(ksink *ks, tb_error *err);

#endif
