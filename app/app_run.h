/*
 * app_run: state of one `tributary run` (cmd_run.c and the run_*.c files
 * below it, DESIGN 2). Private to app/.
 */
#ifndef APP_RUN_H
#define APP_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include "app_metrics.h"
#include "binlog.h"
#include "cfg.h"
#include "cfg_filter.h"
#include "ksink_lease.h"
#include "snap_incremental.h"
#include "snap_schema.h"
#include "sqlcap.h"
#include "sink.h"
#include "tb_buf.h"
#include "tb_hmap.h"
#include "tb_kset.h"
#include "tb_position.h"

#define RUN_POLL_MS 200 /* the longest wait for the source in one call */
/* the longest wait for acknowledgements when the source is idle (sink_push): what the sink held
 * is sent at once, and the loop goes back to the source after this at the latest */
#define RUN_PUSH_MS 5

/* The values of run_ctx.snapshot_state (the status file's snapshot.state), compared by address:
 * the run loop asks at every turn whether a snapshot is running. */
extern const char RUN_SNAP_NONE[], RUN_SNAP_RUNNING[], RUN_SNAP_DONE[], RUN_SNAP_FAILED[];

typedef struct run_ctx {
    cfg *cfg;                      /* owned */
    sink *sink;                    /* owned (sinks/sink.h) */
    binlog_reader *binlog;         /* owned, source.type=mysql */
    struct myconn_warm *warm;      /* owned: the source connection opened while Kafka is asked (run_mysql takes it) */
    struct run_srcprep *srcprep;   /* owned: the source's catalog questions asked on a thread while Kafka is read
                                      after the lease (cmd_run.c; run_mysql takes the answers) */
    sqlcap *sqlite;                /* owned, source.type=sqlite */
    tb_position committed;         /* last position written to the offsets store */
    tb_position last_end;          /* position of the last ended source transaction */
    uint64_t events_sent;
    int64_t last_commit_ts_ms;     /* source commit time of the newest event sent */
    int64_t started_ms;
    int64_t last_status_ms;
    uint64_t status_acked;
    uint64_t ack_mark;             /* sink messages acknowledged when ack_since_ms was set */
    int64_t ack_since_ms;          /* wall time of the last acknowledgement seen with messages in flight, 0 none */
    bool kafka_waiting;            /* said so: messages waited RUN_KAFKA_WAIT_MS for Kafka */
    bool idle;
    const char *status_state;      /* state last written to the status file (static string) */
    const char *status_asked;      /* the state run_write_status was last given (static string) */
    bool status_asked_streaming;   /* ... and whether it is "streaming" */
    const char *status_snapshot;   /* snapshot state last written there (static string or NULL) */
    app_metrics *metrics;          /* owned; NULL unless metrics.listen is set */
    struct {
        evt_table *t;              /* a reference held, so the address is not reused meanwhile */
        int slot;                  /* app_metrics_table() slot */
    } mcache[8];
    unsigned mnext;
    uint64_t reconnects;           /* source connections lost (seen by write_status) */
    bool source_was_down;
    int64_t behind_ms;             /* wall time binlog_behind_bytes was last asked */
    int64_t behind;                /* its answer (-1 unknown) */
    tb_buf kstats;                 /* scratch: librdkafka statistics JSON */
    int64_t caught_up_ms;          /* wall time the source was last seen connected, idle, all acked */
    int64_t progress_ms;           /* wall time of the last progress line (binlog) */
    uint64_t progress_sent;        /* events_sent at that line */
    const char *snapshot_state;    /* one of RUN_SNAP_*: compared by address */
    uint64_t snapshot_rows;
    tb_buf status_path;
    bool in_tx;                    /* an event of an unfinished source transaction was sent */
    bool restart;                  /* exactly.once: a Kafka transaction was aborted; re-read the
                                      source from sink_committable() */
    uint64_t aborts_seen;          /* sink_stats.aborts + .restarts already acted on */
    uint64_t restarts;             /* source re-reads after aborted Kafka transactions */
    uint64_t producer_restarts;    /* source re-reads after a producer replaced (sink_stats.restarts) */
    cfg_filter filter;             /* tables.include / tables.exclude (owned) */
    bool partial_images_ok;        /* source.row.image.policy=warn: rows with partial images are sent */
    struct run_fk *fk;             /* owned: foreign keys whose actions change rows unlogged (run_fk.c) */
    bool filter_ok;
    struct {
        evt_table *t;              /* a reference: its address is not reused while it is here */
        bool keep;
    } filter_cache[8];             /* run_keep's answers for the latest tables (released by run_keep_free) */
    unsigned filter_next;
    uint64_t events_filtered;
    tb_hmap keyless;               /* "db\x01table" of captured tables refused for having no key */
    uint64_t events_keyless;       /* their events, not sent */
    bool lease_waiting;            /* run_lease_check_slow waits for an unconfirmed lease */
    int64_t kstats_ms;             /* wall time r->kstats (librdkafka's statistics) arrived */
    snap_inc *inc;                 /* owned: incremental snapshots signalled through the binlog */
    int64_t inc_retry_ms;          /* tb_mono_ms before which no chunk is tried (after a failed one) */
    unsigned inc_failures;         /* chunks failed in a row on a connection error */
    int64_t last_heartbeat_ms;     /* wall time the idle position last went to the sink */
    /* transaction.topic (run_txmeta.c) */
    bool txmeta;                   /* transaction.topic=true and sink=kafka */
    bool txm_open;                 /* BEGIN sent, END not yet */
    char *txm_id;                  /* owned: the open transaction's id */
    int64_t txm_ts;
    struct { char *name; size_t dblen; uint64_t count; } *txm; /* owned: per-table counts of the open
                                                                 * transaction; name is "db.table" */
    size_t txm_n, txm_cap;
    ksink_lease *lease;            /* owned: ha.enabled (run_lease.c) */
    bool lease_lost;               /* the lease was lost: produce and commit nothing more */
    uint64_t reconciled_keys;      /* keys deleted by reconcile steps (run_keys.c) */
    const char *sqlite_reconcile;  /* SQLite: the reconcile step is due after the first transaction
                                      ("gap", "snapshot"; static string), NULL when not */
} run_ctx;

/* run_sink.c: the run's side of the sink (see its header). */
TB_MUST_USE tb_code run_sink_open(run_ctx *r, sink **out, tb_error *err);
/* metrics.listen: the counter slot of e's table; -1 without a table. */
int run_slot(run_ctx *r, const evt_event *e);
/* One event to the sink (lease check, metrics). */
TB_MUST_USE tb_code run_sink_send(run_ctx *r, const evt_event *e, tb_error *err);
/* A source transaction ended; pos is where to resume after it. */
TB_MUST_USE tb_code run_sink_end_tx(run_ctx *r, const tb_position *pos, tb_error *err);
/* Commit the delivered position (force: now, and wait until it is stored),
 * then tell the source (sqlcap_ack). */
TB_MUST_USE tb_code run_sink_commit(run_ctx *r, bool force, tb_error *err);
/* Sorts a sink error: TB_OK to go on (a retriable commit error), else rc
 * (r->restart set when an aborted Kafka transaction means reading the
 * source again). */
TB_MUST_USE tb_code run_sink_error(run_ctx *r, tb_code rc, bool from_commit, tb_error *err);
/* After a sink error: true when the Kafka transaction was aborted (sets r->restart). */
bool run_sink_aborted(run_ctx *r);
/* run_tables.c: tables.include / tables.exclude: whether ev's table is captured. */
bool run_keep(run_ctx *r, const evt_event *ev);
/* Releases the tables run_keep holds on to (its answers for the latest ones). */
void run_keep_free(run_ctx *r);
/* Starting "now": store the source's start position before reading. */
TB_MUST_USE tb_code run_pin_start(run_ctx *r, tb_error *err);
/* Stream from the open source until stopped, failed or r->restart. */
TB_MUST_USE tb_code run_stream(run_ctx *r, tb_error *err);
/* After an aborted Kafka transaction: close the source; *resume is where to read it again. */
TB_MUST_USE tb_code run_prepare_restart(run_ctx *r, tb_position *resume, tb_error *err);

/* run_status.c: rewrite the status file (at most once a second unless force). */
void run_write_status(run_ctx *r, const char *state, const char *error, bool force);

/* run_lease.c (DESIGN 12). Stand by until this instance holds the lease
 * (ha.enabled; status "standby"); TB_ERR_STOPPED on SIGINT/SIGTERM. */
TB_MUST_USE tb_code run_lease_acquire(run_ctx *r, tb_error *err);
/* Before producing or committing: TB_OK while the lease is held (or
 * ha.enabled=false); else sets r->lease_lost and fills err. */
TB_MUST_USE tb_code run_lease_check_slow(run_ctx *r, tb_error *err);
static inline tb_code run_lease_check(run_ctx *r, tb_error *err)
{
    return r->lease ? run_lease_check_slow(r, err) : TB_OK;
}
/* Leave the group / unlock. After the sink is closed. */
void run_lease_release(run_ctx *r);

/* run_txmeta.c: a captured change ev is about to be sent (BEGIN first if
 * its transaction has none yet; counts it). */
TB_MUST_USE tb_code run_txmeta_event(run_ctx *r, const evt_event *ev, tb_error *err);
/* The source transaction ends: END, if a BEGIN was sent. Call before the
 * sink's end of transaction. */
TB_MUST_USE tb_code run_txmeta_end(run_ctx *r, tb_error *err);
void run_txmeta_free(run_ctx *r);

/* run_pipe.c: send a captured event from outside the stream loop (a
 * statement's events): transaction metadata, then the sink; and end the
 * source transaction at pos. Sink errors as in the loop (r->restart set
 * after an aborted Kafka transaction). */
TB_MUST_USE tb_code run_send(run_ctx *r, const evt_event *e, tb_error *err);
TB_MUST_USE tb_code run_end_tx(run_ctx *r, const tb_position *pos, tb_error *err);
/* Write t's schema record now (a dropped table's, or a renamed one's), in
 * the current source transaction (ksink_announce_table). */
TB_MUST_USE tb_code run_announce(run_ctx *r, evt_table *t, tb_error *err);
/* sink=kafka: the truncate record of e's table (ksink_send_truncate), in the
 * current source transaction. */
TB_MUST_USE tb_code run_send_truncate(run_ctx *r, const evt_event *e, tb_error *err);

/* run_stmt.c: the binlog statement callback (binlog_set_stmt_fn), opaque =
 * the run_ctx. Stops on DML logged as a statement on a captured table. */
TB_MUST_USE tb_code run_on_stmt(void *opaque, const binlog_stmt *st, tb_error *err);
/* run_stmt.c: a SQLite DROP TABLE of a captured table (an event whose
 * descriptor is evt_table_dropped, sqlcap_opts.drop_events): the schema
 * record that says the table was dropped, in the DROP's transaction (after
 * its deletes under ddl.drop.policy=tombstone); warn: also a WARN naming the
 * table and the position. */
TB_MUST_USE tb_code run_on_dropped(run_ctx *r, const evt_event *ev, tb_error *err);

/* run_history.c: after error 1236 for stored, whether the server never had
 * some of the transactions it covers (diverged history) rather than purged
 * them; server: the server's GTID position, for the message. */
bool run_history_diverged(const cfg *c, const tb_position *stored, tb_buf *server);

/* run_keys.c: the schema record that says db.table was dropped (or renamed away). */
TB_MUST_USE tb_code run_dropped_record(run_ctx *r, const char *db, const char *table, tb_error *err);

/* run_tables.c: call fn until it succeeds, fails in a way a retry cannot mend
 * (configuration, a refused login, a sink that failed for good), a stop is
 * requested or source.connect.retry.ms pass (0: one attempt), with the
 * streaming reconnect's backoff (100 ms doubling up to
 * source.reconnect.backoff.max.ms). A source that cannot be reached
 * (TB_ERR_SOURCE, retriable) and Kafka failures are retried. Each failed
 * attempt is a WARN naming what (an address, a table); the last error is
 * returned prefixed with it. Start-up uses it for the source and Kafka, the
 * stream for the catalog queries a statement needs (TRUNCATE's key columns,
 * a RENAME's new name, the signal of a resnapshot): the source restarting
 * then holds the stream up instead of stopping it. */
TB_MUST_USE tb_code run_retry(run_ctx *r, const char *what, tb_code (*fn)(run_ctx *, void *, tb_error *), void *arg,
                              tb_error *err);

/* run_fk.c: rows that a foreign key's ON DELETE / ON UPDATE action changes without row events
 * (source.fk.cascade.policy). run_fk_row: every row event, before tables.include filters it (the
 * parent need not be captured); may stop the run (policy fail). run_fk_end_tx: when the source
 * transaction ends, before its position goes to the sink: the signals of the snapshots due.
 * run_fk_on_stmt: every statement that is not a temporary table's; the catalog is read again at
 * the next DELETE or UPDATE when it can add, drop or rename a foreign key. */
typedef struct run_fk run_fk;
TB_MUST_USE tb_code run_fk_row(run_ctx *r, const evt_event *ev, tb_error *err);
TB_MUST_USE tb_code run_fk_end_tx(run_ctx *r, tb_error *err);
void run_fk_on_stmt(run_ctx *r, const binlog_stmt *st);
void run_fk_free(run_ctx *r);
/* run_tables.c: the signal of an incremental snapshot of name ("db.table"), through run_retry;
 * *id (id may be NULL) gets the signal's id (snap_inc_signal_id). Counted, once signalled, in
 * tributary_resnapshots_total under why. */
TB_MUST_USE tb_code run_resnapshot_signal(run_ctx *r, const char *name, app_metrics_resnap_reason why, int64_t *id,
                                          tb_error *err);
/* run_tables.c: true when the source's catalog has no table db.table now (MySQL/MariaDB:
 * information_schema; SQLite: sqlcap_table_exists); false when it has it or cannot be asked. */
bool run_table_gone(run_ctx *r, const char *db, const char *table);
/* run_tables.c: whether db.table is a MariaDB SEQUENCE (information_schema.TABLES.TABLE_TYPE):
 * its row events carry the generator's state (next_not_cached_value, ...), written by NEXTVAL
 * and SETVAL. False when it is not or the source cannot be asked. */
bool run_is_sequence(run_ctx *r, const char *db, const char *table);
/* run_tables.c: at start, an INFO for each captured SEQUENCE (not captured), each marked in
 * r->keyless as one (run_keyless_mark), so its row events are passed over without a lookup. */
TB_MUST_USE tb_code run_note_sequences(run_ctx *r, tb_error *err);
/* run_tables.c: what r->keyless holds for db.table (a table without a key, or a SEQUENCE); false
 * when out of memory. */
#define RUN_KEYLESS_TABLE ((void *)1)
#define RUN_KEYLESS_SEQUENCE ((void *)2)
bool run_keyless_mark(run_ctx *r, const char *db, const char *table, void *what);
/* run_tables.c: ev is of a captured table without a key, or of a SEQUENCE: not to be sent. */
bool run_keyless(run_ctx *r, const evt_event *ev);
/* run_tables.c: the error that stops the run at a row of a captured table whose image lacks
 * columns (evt_event_partial) under source.row.image.policy=fail; TB_ERR_SOURCE. */
TB_MUST_USE tb_code run_partial_image(const evt_event *ev, tb_error *err);
/* run_keys.c: the topics of captured tables that disappeared (ksink_topics_gone), per
 * topic.missing.policy; before anything is sent when resuming from a stored position. */
TB_MUST_USE tb_code run_topics_gone(run_ctx *r, tb_error *err);

/* run_keys.c: where the deletes of run_keys_delete go. */
typedef struct run_keys_at {
    const tb_position *pos; /* their source position (copied; rows numbered from 1) */
    evt_connector conn;
    const char *txid;       /* transaction id (GTID), may be NULL */
    int64_t ts_ms;          /* commit time */
    const char *what;       /* what they follow, for messages: "TRUNCATE", "snapshot", ... */
    bool any_key;           /* a key of other members than t's key columns is deleted as it is
                               (reconcile), instead of refused (statements) */
} run_keys_at;

/* run_keys.c: the end of a snapshot taken again after a gap (a purged or
 * diverged binlog, a SQLite WAL reset, a crash before the first committed
 * position): every captured table the sink's schema topic describes (not
 * dropped) that is not in present ("db\0table" keys: the tables the source
 * has) was dropped or renamed while the connector could not follow the log.
 * Its topic loses every key (ddl.drop.policy=tombstone) or is left with a
 * WARN (warn), and gets the schema record that says it was dropped, at at. */
struct tb_hmap;
TB_MUST_USE tb_code run_reconcile_vanished(run_ctx *r, const struct tb_hmap *present, const run_keys_at *at,
                                           tb_error *err);
/* Delete (delete event and tombstone, at at->pos, in the current source
 * transaction) every key the topic of db.table holds whose digest is not in
 * keep (NULL: every key; ksink_topic_keys). t: the table's descriptor, or
 * NULL (one is made from the topic's first key: keys_only). *n: keys
 * deleted. sink=kafka only. */
TB_MUST_USE tb_code run_keys_delete(run_ctx *r, evt_table *t, const char *db, const char *table, const tb_kset *keep,
                        const run_keys_at *at, uint64_t *n, tb_error *err);
/* The reconcile step (DESIGN 6a): after the rows of db.table were sent
 * again, keep holding the digests of the table's keys (ksink_key_digest),
 * delete every other key its topic holds, at at->pos, in the current source
 * transaction (before the transaction's end, so its position is committed
 * only with them). Logs what it did (WARN when it deleted keys). sink=stdout:
 * nothing. */
TB_MUST_USE tb_code run_reconcile(run_ctx *r, evt_table *t, const char *db, const char *table, const tb_kset *keep,
                      const run_keys_at *at, tb_error *err);
/* The same for a MySQL/MariaDB table, with the keys it has now
 * (snap_keys_scan): after an incremental snapshot. A table gone since is
 * left to its statement (INFO). */
TB_MUST_USE tb_code run_reconcile_mysql(run_ctx *r, const char *db, const char *table, const run_keys_at *at, tb_error *err);

/* The same for every captured table of the SQLite source, with its rows at
 * the position of the transaction just decoded (sqlcap_scan_tables): after
 * a gap (sqlcap_take_gap) and after a snapshot. */
TB_MUST_USE tb_code run_reconcile_sqlite(run_ctx *r, const run_keys_at *at, tb_error *err);

/* A blocking snapshot's reconcile steps: run_snapkeys_row for every row
 * before it is sent (rows come table by table; a table's step runs when the
 * next table's first row comes), run_snapkeys_end after the last row, with
 * every table of the snapshot (those without rows lose every key) and the
 * hand-off position, before the snapshot's transaction ends. A table whose
 * topic held no record when its first row came (sink_topic_empty) has no
 * step: the snapshot is its topic's only writer until it ends, so the topic
 * holds the snapshot's keys and no other. */
typedef struct run_snapkeys {
    tb_kset keys;      /* digests of the current table's rows */
    evt_table *t;      /* the current table (a reference) */
    tb_position pos;   /* its rows' position */
    evt_connector conn;
    int64_t ts_ms;
    tb_hmap done;      /* "db\0table" of the tables seen */
    bool topic_empty;  /* the current table's topic held no record before its first row: its
                        * keys are not kept (no step to use them), only counted */
    uint64_t rows;     /* the current table's rows */
} run_snapkeys;
void run_snapkeys_init(run_snapkeys *sk);
void run_snapkeys_free(run_snapkeys *sk);
TB_MUST_USE tb_code run_snapkeys_row(run_ctx *r, run_snapkeys *sk, const evt_event *ev, tb_error *err);
TB_MUST_USE tb_code run_snapkeys_end(run_ctx *r, run_snapkeys *sk, const char *const *dbs, const char *const *tables, size_t n,
                         const tb_position *pos, evt_connector conn, tb_error *err);

#endif
