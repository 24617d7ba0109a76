/*
 * ksink: the Kafka sink (DESIGN.md 4 and 6).
 *
 * Turns change events into keyed messages on compacted topics, tracks which
 * source transactions Kafka has acknowledged, and stores the newest fully
 * acknowledged source position in the offsets store.
 *
 * PRODUCER SETTINGS
 *  Fixed (the contract; a kafka.* key cannot weaken them):
 *    enable.idempotence=true, acks=all, partitioner=murmur2_random
 *    (the Java client's partitioner, so keys co-partition with Kafka Streams);
 *    transactional.id comes from `name` (exactly.once=true only). A kafka.*
 *    key that contradicts these is refused with TB_ERR_CONFIG.
 *    kafka.message.timeout.ms (librdkafka default 300000) bounds how long a
 *    broker outage can last before queued messages fail permanently and the
 *    sink stops with an error (the position never passes them).
 *  Defaults tuned for throughput, each overridable with kafka.<key>:
 *    linger.ms=5                     wait up to 5 ms to fill a batch while
 *                                    the caller is busy; a caller about to
 *                                    wait for its source pushes what is
 *                                    held (ksink_push), so an idle source
 *                                    adds no wait. (A longer linger spares
 *                                    the idempotent producer's spin, see
 *                                    docs/STATUS.md, but lets messages
 *                                    wait whenever a loaded run is busy:
 *                                    p99 48-268 ms at 10k rows/s at load
 *                                    2-4 with 50, 2-3 ms with 5)
 *    batch.num.messages=100000       messages per MessageSet
 *    batch.size=1000000              bytes per MessageSet (a batch must stay
 *                                    under the broker's max.message.bytes)
 *    compression.type=lz4            cheap CPU, about 3x on JSON
 *    queue.buffering.max.messages=1000000
 *    queue.buffering.max.kbytes=32768 (32 MiB of queued messages before
 *                                    backpressure: bounds memory, and a
 *                                    larger queue is no faster)
 *    client.id=<name>
 *  Every other kafka.* key is passed to librdkafka as is (e.g.
 *  kafka.bootstrap.servers, kafka.security.protocol). librdkafka's log goes
 *  to tb_log (facility "kafka") through a callback that only forwards.
 *
 * MESSAGES (DESIGN 4)
 *  One event becomes the messages evt_render() returns: upsert; delete event
 *  + tombstone; delete + tombstone + create on a key change. Before the first
 *  event of a table, and before the first event of each new schema version,
 *  the sink makes sure the table's topic exists (Admin API, see TOPICS) and
 *  writes the table's schema record to <topic.prefix>.schema.
 *
 * TOPICS
 *  Created with cleanup.policy=compact, topic.partitions and
 *  topic.replication.factor. An existing topic whose cleanup.policy is not
 *  exactly "compact" ("compact,delete" loses old rows) is refused (TB_ERR_CONFIG naming the topic) unless
 *  topic.check.compact=false. topic.create=false skips the Admin API
 *  entirely (topics must exist or be auto-created by the broker).
 *  <topic.prefix>.schema and <name>.offsets (1 partition) are compacted too;
 *  <name>.dlq is a plain (delete policy) topic.
 *
 * DELIVERY AND POSITIONS
 *  The sink keeps a ring of source transactions with a count of messages not
 *  yet acknowledged. A message's delivery-report opaque is the sequence number
 *  of its transaction (never a pointer). ksink_end_tx() closes the current
 *  transaction with its position; a position becomes committable only when its
 *  transaction and every earlier one have no message in flight. The newest
 *  closed transaction's position is always kept, and every one while at most
 *  64 transactions are in flight, else one in 64: ksink_committable() is exact
 *  once the acknowledgements catch up (always after a successful flush) and
 *  otherwise lags by fewer than 64 transactions. A permanent
 *  delivery failure (librdkafka retries transient ones itself) is recorded by
 *  the delivery callback as a flag and a copy of the error; the failed
 *  transaction never becomes committable, and the next ksink_* call that
 *  returns a tb_code returns that error (TB_ERR_KAFKA, naming topic and key).
 *  Queue full: the sink polls and retries; it never drops a message.
 *  Hand-over: a non-transactional sink stages the messages of one topic (up
 *  to 256 messages or 256 KiB) and hands them to librdkafka in one call
 *  (rd_kafka_produce_batch: one clock read, state check and topic lock per
 *  batch, not per message). A staged message counts as produced: the position
 *  cannot pass it until it is acknowledged. The stage goes out when full, on
 *  a message for another topic, and in ksink_kick(), ksink_poll() with a
 *  wait, ksink_flush() and the commits; ksink_poll(ks, 0) hands it over only
 *  once its first message is 1 ms old (so a loop that polls after every
 *  source transaction still batches, and a source busy with events that
 *  produce nothing cannot hold it); a caller about to wait for its source
 *  calls ksink_push() first, which also has librdkafka send at once what it
 *  holds (see linger.ms below). A message
 *  librdkafka refuses at hand-over is reported like a failed delivery.
 *  Record timestamp (Kafka CreateTime): the time the message was handed to
 *  librdkafka, at or after the envelope's ts_ms (DESIGN 4, amended).
 *
 * OVERSIZED MESSAGES
 *  A message whose key + value + record framing (36 bytes at most, as
 *  librdkafka counts it) exceed message.max.bytes (librdkafka's, default
 *  1000000, i.e. kafka.message.max.bytes) follows oversize.policy:
 *    fail: ksink_send() returns TB_ERR_INVALID naming topic, key and position;
 *    dlq:  a record {"topic","key","position","size"} goes to <name>.dlq
 *          (key of the DLQ record: the original key) and a warning is logged;
 *    skip: a warning naming topic, key, position and size is logged.
 *
 * OFFSETS STORE
 *  offsets.storage=kafka: topic <name>.offsets (compacted, 1 partition),
 *  record key = the connector name as a JSON string (name "shop" -> the 6
 *  bytes "shop" with quotes: `"shop"`; canonical like every other key),
 *  value = evt_position_to_json() of the position, or a tombstone for "none".
 *  Read back by consuming partition 0 from the beginning up to the end
 *  (isolation.level=read_committed) and keeping the last value for our key.
 *  offsets.storage=file: offsets.file holds the text form (tb_position_format)
 *  plus a newline, replaced atomically (temp file, fsync, rename, fsync dir).
 *
 * EXACTLY ONCE (exactly.once=true)
 *  transactional.id=<name>. The first ksink_send() after a commit begins a
 *  Kafka transaction; ksink_commit() produces the offsets record (position of
 *  the last ksink_end_tx()) into the same Kafka transaction and commits it,
 *  so one Kafka transaction holds a batch of whole source transactions (one
 *  commit interval's worth). Requires offsets.storage=kafka. ksink_end_tx()
 *  must have been called for every source transaction sent before
 *  ksink_commit(). On an abortable error the Kafka transaction is aborted and
 *  ksink_commit() (or ksink_send(), if the producer refuses a message) returns
 *  TB_ERR_KAFKA with retriable=true: the caller must restart reading the
 *  source from ksink_committable() (the last committed position) and may keep
 *  using the sink, which has replaced its producer (new epoch). A fatal error
 *  (e.g. fenced by a newer instance with the same name) returns
 *  retriable=false and stops the sink.
 *
 * THREADS
 *  One thread uses a ksink. Callbacks run inside ksink_* calls on that thread
 *  (librdkafka's log callback excepted, which only forwards to tb_log).
 *
 * TYPICAL LOOP (app/)
 *    ksink_open(cfg, &ks, &err);
 *    ksink_offsets_read(cfg, &start, &err);      // where to resume
 *    for each event e:  ksink_send(ks, e, &err);
 *      at the end of each source transaction: ksink_end_tx(ks, &pos_after);
 *      ksink_poll(ks, 0); every offsets.commit.interval.ms: ksink_commit(ks, &err);
 *      before waiting for the source: ksink_push(ks, 5);
 *    at shutdown: ksink_flush(ks, 30000, &err); ksink_commit(ks, &err); ksink_close(ks);
 *  ksink_commit() does not look at the interval; ksink_commit_due() does.
 */
#ifndef KSINK_H
#define KSINK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfg.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct ksink ksink;

/* Create the producer (and, with exactly.once, init the transactions).
 * c is borrowed and must stay valid until ksink_close(). On success *out is a sink the caller
 * frees with ksink_close(); on failure *out is NULL and err is filled
 * (TB_ERR_CONFIG for a bad kafka.* key). No network traffic is needed for
 * this call to succeed, except with exactly.once (InitProducerId). */
TB_MUST_USE tb_code ksink_open(const cfg *c, ksink **out, tb_error *err);
/* A flag a signal handler raises: waits inside the sink that can last long
 * (the schema registry's retries, DESIGN 4b) stop when it is set. */
void ksink_set_stop(ksink *ks, volatile sig_atomic_t *stop);

/* The check the sink makes right before each message it stages or hands to its producer (change
 * rows, schema, dead-letter and transaction records): `tributary run` sets its lease check
 * (DESIGN 12). A send can block for the request timeout first (topic creation, the schema
 * topic's first read) and a transaction record goes before the change that starts it, so a
 * check before the call alone would not hold at the hand-over. fn(opaque, err) returns TB_OK to
 * go on, else the error the send returns (that message and the ones after it not handed over,
 * no exactly_once abort). It may serve the producer's callbacks (ksink_serve). NULL: none. */
typedef tb_code (*ksink_gate_fn)(void *opaque, tb_error *err);
void ksink_set_gate(ksink *ks, ksink_gate_fn fn, void *opaque);
/* Called about once a second while the sink waits long inside a call (exactly.once: a Kafka
 * transaction's commit or abort that the brokers do not answer; Avro: a schema registration
 * retried while the registry does not answer, ksink_stats.registry_down_since_ms), so that the
 * caller's status, /health and metrics keep saying so. NULL: none. */
typedef void (*ksink_wait_fn)(void *opaque);
void ksink_set_wait(ksink *ks, ksink_wait_fn fn, void *opaque);

/* TB_OK while the sink works; once it failed for good (a refused login, a broker certificate
 * that does not verify, a fatal producer error), that error (into *err unless NULL) and its
 * code: retrying does not heal it. */
/* At-least-once (not exactly.once): an idempotent producer that failed fatally (librdkafka
 * 2.0's sequence desynchronization after brokers refused writes, OUT_OF_ORDER_SEQUENCE_NUMBER)
 * cannot send again. The sink then counts a restart (ksink_stats.restarts) and fails every call
 * with a retriable error until ksink_restart: it waits (bounded) for what the old producer has in
 * flight, forgets every message after ksink_committable() (the caller reads the source again from
 * there: at least once, in order), and makes a new producer. A no-op when none is due.
 * TEST HOOK (builds with TB_TESTS=ON only, as av_ser.h's): with the environment variable
 * TB_TEST_KAFKA_FATAL_AFTER=<n>, ksink_poll raises such a fatal error once (librdkafka's
 * rd_kafka_test_fatal_error) when n messages are acknowledged (tests/e2e/test_e2e_reconcile.c,
 * fatal_producer_error). */
TB_MUST_USE tb_code ksink_restart(ksink *ks, tb_error *err);
TB_MUST_USE tb_code ksink_failed(const ksink *ks, tb_error *err);

/* Whether the cluster answers: one metadata request (at most 5 s), then the schema topic made
 * when missing and read (as the first schema record would). TB_ERR_KAFKA when the brokers do
 * not answer (`tributary run` retries it at start for source.connect.retry.ms); a refused login
 * is the error the producer reported. */
TB_MUST_USE tb_code ksink_ready(ksink *ks, tb_error *err);

/* Topics that disappeared (DESIGN 6a). A table the schema topic holds a record for (the latest
 * one not saying it was dropped) had its topic: the record is written after the topic is made.
 * For each such table for which captured(opaque, db, table) is true and whose topic the cluster
 * no longer has (deleted while the table is captured), gone(opaque, db, table, topic, err)
 * decides: TB_OK means the caller has arranged for the table's rows to be sent again, and the
 * topic is created again here; TB_ERR_NOT_FOUND, that the table is not captured after all
 * (the source no longer has it): nothing done; any other code is returned at once (the topic not created, so
 * the next start finds it missing too). Nothing to do with topic.create=false. It reads the
 * schema topic (once per sink) and asks for each such table's metadata, a request each. A
 * schema topic that cannot be read is a WARN and no check. The caller: `tributary run`
 * resuming from a stored position, before it sends anything (a topic made again on purpose,
 * by `cache publish` or a snapshot, is not this). */
typedef bool (*ksink_captured_fn)(void *opaque, const char *db, const char *table);
typedef tb_code (*ksink_gone_fn)(void *opaque, const char *db, const char *table, const char *topic, tb_error *err);
TB_MUST_USE tb_code ksink_topics_gone(ksink *ks, ksink_captured_fn captured, ksink_gone_fn gone, void *opaque, tb_error *err);
/* fn(opaque, db, table) for each table whose latest record in the schema
 * topic (read once, then kept up to date by this run's records) is not a
 * dropped one: the tables this connector captured, as far as the topic says.
 * The first error fn returns ends the walk. */
typedef tb_code (*ksink_table_fn)(void *opaque, const char *db, const char *table, tb_error *err);
TB_MUST_USE tb_code ksink_tables_known(ksink *ks, ksink_table_fn fn, void *opaque, tb_error *err);
/* *out: db.table as the latest record of the schema topic that describes it says (read once
 * at start, then kept up to date by this run's records), a new sealed descriptor (the caller
 * drops it), or NULL when there is none. The schema history of a table the catalog no longer
 * has: what the binlog's table map cannot say (the declared type of a UUID, INET6 or INET4
 * column, FLOAT(M,D), defaults). TB_ERR_CORRUPT when the record does not read. */
TB_MUST_USE tb_code ksink_schema_last(const ksink *ks, const char *db, const char *table, evt_table **out,
                                      tb_error *err);

/* Render e and produce all of its messages (see MESSAGES). Ensures the topic
 * and the schema record first when needed (this can block on the Admin API,
 * at most kafka's request timeout). Blocks, polling, while the local queue is
 * full. e is borrowed for the call only. Returns a recorded delivery error
 * first if there is one. */
TB_MUST_USE tb_code ksink_send(ksink *ks, const evt_event *e, tb_error *err);
/* The truncate of e's table (evt_render_truncate: value.format=envelope an
 * "op":"t" record and its tombstone under the key {}; row format nothing),
 * with e's source position, like ksink_send. */
TB_MUST_USE tb_code ksink_send_truncate(ksink *ks, const evt_event *e, tb_error *err);

/* Write the schema record of t now, as a message of the current source
 * transaction: a dropped table's (evt_table_new_dropped), or a descriptor
 * that says where the table was renamed from (evt_table_set_renamed_from).
 * Later events of the table with the same columns do not write it again;
 * after a dropped record the table's next event writes its schema again.
 * t is borrowed (a reference is kept when needed). */
TB_MUST_USE tb_code ksink_announce_table(ksink *ks, evt_table *t, tb_error *err);

/* A tombstone of key (exactly the bytes the topic's records carry) to topic,
 * tracked as a message of the current source transaction like ksink_send
 * (exactly_once: in the open Kafka transaction). The topic must exist. For a
 * key that no event names any more (`tributary verify --repair`: a key the
 * topic holds that the source lacks). key is borrowed for the call. */
TB_MUST_USE tb_code ksink_send_tombstone(ksink *ks, const char *topic, const char *key, size_t klen, tb_error *err);

/* transaction.topic=true: one transaction-metadata record (BEGIN or END,
 * Debezium-style, built by the caller) to <topic.prefix>.transaction
 * (created on first use, delete policy), tracked with the current source
 * transaction like its change messages (exactly.once: in the same Kafka
 * transaction). key and value are borrowed for the call. */
TB_MUST_USE tb_code ksink_send_txmeta(ksink *ks, const char *key, size_t klen, const char *value, size_t vlen, tb_error *err);

/* The current source transaction ends; pos_after_tx (copied) is the position
 * to resume from once it is acknowledged. A transaction with no messages is
 * allowed (heartbeats, skipped tables): its position is committable as soon
 * as every earlier transaction is. Returns the recorded error if any, or
 * TB_ERR_NOMEM. */
TB_MUST_USE tb_code ksink_end_tx(ksink *ks, const tb_position *pos_after_tx, tb_error *err);

/* Serve delivery reports and errors, waiting up to timeout_ms (0 = no wait).
 * Hands the staged messages over first when it waits or when the first of
 * them is 1 ms old. */
void ksink_poll(ksink *ks, int timeout_ms);

/* Hand the staged messages to librdkafka now (see DELIVERY AND POSITIONS);
 * call it before waiting for the source, so they do not wait with it.
 * A refusal is recorded and returned by the next call that returns a code. */
void ksink_kick(ksink *ks);

/* Messages staged and not yet handed to librdkafka. */
size_t ksink_staged(const ksink *ks);

/* Messages not yet acknowledged: staged, or held by librdkafka (queued, in flight, or with a
 * delivery report not yet served). */
size_t ksink_pending(const ksink *ks);

/* Hand the staged messages over and have librdkafka send all it holds now rather than after
 * linger.ms, waiting up to timeout_ms for the acknowledgements (fewer when they come first);
 * delivery reports are served. For a caller about to wait for its source: linger.ms then only
 * batches what comes while the caller is busy. exactly.once: only the hand-over (the Kafka
 * transaction's commit sends). */
void ksink_push(ksink *ks, int timeout_ms);

/* The newest position whose transaction and all earlier ones are fully
 * acknowledged (exactly.once: the position of the last committed Kafka
 * transaction). Kind TB_POS_NONE while there is none. Borrowed: valid until
 * the next ksink_* call other than ksink_committable(). */
const tb_position *ksink_committable(const ksink *ks);

/* True when offsets.commit.interval.ms has passed since the last commit. */
bool ksink_commit_due(const ksink *ks);

/* Write ksink_committable() to the offsets store if it changed since the last
 * write (exactly.once: commit the open Kafka transaction together with the
 * offsets record). Returns when the position is durably stored: the offsets
 * record acknowledged (acks=all), or the file replaced and fsync'd. So after
 * TB_OK the caller may act on ksink_committable() being stored (e.g. let the
 * source drop its change log up to there). With a large backlog the wait can
 * take as long as the queued batches ahead of the record (tens of ms). */
TB_MUST_USE tb_code ksink_commit(ksink *ks, tb_error *err);

/* As ksink_commit(), but with offsets.storage=kafka and exactly.once=false
 * the offsets record is only produced, not waited for, so a streaming loop
 * does not stall behind the queued batches: the position is stored once
 * Kafka acknowledges the record (a failure is reported by a later call, like
 * any delivery failure). For callers that do not act on "stored" (binlog
 * sources); use ksink_commit() at shutdown and where the source must know. */
TB_MUST_USE tb_code ksink_commit_nowait(ksink *ks, tb_error *err);

/* Wait until every produced message is acknowledged or timeout_ms passes
 * (TB_ERR_KAFKA, retriable, when messages remain). Returns a recorded
 * delivery error if there is one. */
TB_MUST_USE tb_code ksink_flush(ksink *ks, int timeout_ms, tb_error *err);

/* Calls fn once for each key that the topic of table t holds (its latest
 * record is not a tombstone) and whose digest (tb_kset_digest of the key's
 * bytes) is not in keep. Flushes the sink first, then reads every partition
 * from its beginning to its high watermark at the start of the read. A topic
 * that does not exist holds no keys. The key bytes are borrowed for the
 * call; fn may send (what it sends is not read). A non-OK return of fn stops
 * and is returned. Memory: a digest per key outside keep, never the keys'
 * bytes (ksink_keys.c).
 *  keep NULL: every key, read_uncommitted (the sink's own messages of an
 *    open Kafka transaction count): for statements that remove rows without
 *    row events (TRUNCATE, DROP TABLE with ddl.drop.policy=tombstone).
 *  keep a set of the table's keys (ksink_key_digest of each row): the keys
 *    a consumer holds (read_committed) that the table no longer has: the
 *    reconcile step after a resnapshot (DESIGN 6a). */
struct tb_kset;
typedef tb_code (*ksink_key_fn)(void *opaque, const char *key, size_t klen, tb_error *err);
TB_MUST_USE tb_code ksink_topic_keys(ksink *ks, const evt_table *t, const struct tb_kset *keep, ksink_key_fn fn, void *opaque,
                         tb_error *err);
/* Whether t's topic holds no record (sink_topic_empty): it does not exist, or low and high
 * watermarks are equal on every partition (asked with the producer's handle, which does not make
 * topics). Kafka away is an error, not "empty". */
TB_MUST_USE tb_code ksink_topic_empty(ksink *ks, const char *db, const char *table, bool *empty, tb_error *err);
/* The digest of e's key (its after image) as the sink writes it to the
 * topic (value.encoding, key.schemas): tb_kset_digest of those bytes. */
TB_MUST_USE tb_code ksink_key_digest(ksink *ks, const evt_event *e, uint64_t *digest, tb_error *err);

/* Every record of a topic, read from the beginning of each partition to the
 * high watermark it had when the read started (committed: read_committed,
 * to the last stable offset; else read_uncommitted), by a consumer of its
 * own that joins no group and commits nothing (group.id "<name>-<reader>").
 * fn is called per record that has a key, in offset order within a
 * partition; the record's bytes are borrowed for the call (value NULL: a
 * tombstone). A topic that does not exist holds nothing (TB_OK, no call).
 * A non-OK return of fn stops and is returned. Usable without an open sink
 * (`tributary verify` reads a table's topic as a table with it). The
 * reader's prefetch queue is 1 MiB (queued.max.messages.kbytes), a fetch
 * 256 KiB a partition (max.partition.fetch.bytes) and at most 1 MiB or
 * message.max.bytes in all (fetch.max.bytes); kafka.* keys override them.
 * librdkafka's defaults (64 MiB, 1 MiB, 50 MiB) would hold up to 64 MiB of a
 * large topic. */
typedef struct ksink_record {
    int32_t partition;
    int64_t offset;
    const char *key;
    size_t klen;
    const char *value; /* NULL: tombstone */
    size_t vlen;
    int64_t total;     /* records the read covers, all partitions (the same in every call):
                          at least the number of distinct keys */
} ksink_record;
typedef tb_code (*ksink_scan_fn)(void *opaque, const ksink_record *rec, tb_error *err);
TB_MUST_USE tb_code ksink_topic_scan(const cfg *c, const char *topic, bool committed, const char *reader, ksink_scan_fn fn,
                         void *opaque, tb_error *err);

/* Counters for status and tests. */
typedef struct ksink_stats {
    uint64_t events;         /* ksink_send calls that succeeded */
    uint64_t messages;       /* messages handed to librdkafka or staged (incl. schema, dlq) */
    uint64_t acked;          /* messages acknowledged */
    uint64_t bytes;          /* key + value bytes handed to librdkafka */
    uint64_t oversized;      /* messages handled by oversize.policy dlq/skip */
    uint64_t tx_open;        /* source transactions not yet committable */
    uint64_t commits;        /* offsets records written */
    uint64_t restarts;       /* at-least-once: producers replaced after a fatal error or an unconfirmed
                                delivery (each one means: resume the source from ksink_committable()
                                after ksink_restart) */
    uint64_t unconfirmed;    /* reports of success without an offset (kafka/kafka.h kafka_dr_unconfirmed):
                                each one restarts the producer, or aborts the Kafka transaction */
    uint64_t aborts;         /* exactly.once: Kafka transactions aborted (each one means: resume the
                                source from ksink_committable(); a retriable error without a new
                                abort leaves the transaction open, to be committed again later) */
    int64_t txn_waiting_since_ms; /* exactly.once: wall ms since which committing or aborting the Kafka
                                     transaction waits for the brokers (a retriable timeout); 0 none */
    int64_t registry_down_since_ms; /* Avro: wall ms since which a registration (or a schema fetch) waits
                                       for the schema registry, which does not answer; 0 none */
    const char *registry_error;   /* then "<url>: <error>" of the latest attempt (valid until the next
                                     ksink call); NULL otherwise */
} ksink_stats;
void ksink_get_stats(const ksink *ks, ksink_stats *out);

/* Serve librdkafka's callbacks (delivery reports, statistics, errors) without
 * waiting and without handing anything staged to librdkafka: for a caller
 * that must not produce for a while but keeps its view of Kafka current. */
void ksink_serve(ksink *ks);

/* librdkafka's statistics JSON (emitted every kafka.statistics.interval.ms,
 * off by default): when a new one arrived since the last call, copy it into
 * out (reset first) and return true; else false. Same thread as the sink. */
bool ksink_stats_json(ksink *ks, tb_buf *out);

/* Destroy the producer. Does NOT flush or commit: call ksink_flush() and
 * ksink_commit() first for a clean shutdown; whatever is still queued is
 * purged (it was never committed, so it will be produced again after a
 * restart). NULL-safe. */
void ksink_close(ksink *ks);

/* ---------------------------------------------------------- offsets store */

/* Read the stored position for cfg's connector into out (freed first).
 * Nothing stored (no file, no topic, no record, or a tombstone): TB_OK with
 * out->kind == TB_POS_NONE. Usable without an open sink. */
TB_MUST_USE tb_code ksink_offsets_read(const cfg *c, tb_position *out, tb_error *err);

/* Store pos (TB_POS_NONE writes a tombstone / a file saying "none"). Waits
 * for the acknowledgement (kafka) or the fsync (file). Usable without an open
 * sink; do not call it while a connector with the same name runs. */
TB_MUST_USE tb_code ksink_offsets_write(const cfg *c, const tb_position *pos, tb_error *err);

/* The offsets record key for a connector name: the name as a JSON string.
 * Appended to out. */
TB_MUST_USE tb_code ksink_offsets_key(const char *name, tb_buf *out);

#endif
