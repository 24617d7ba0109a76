/*
 * binlog: MySQL/MariaDB binary log capture (DESIGN.md 3, 5, 6).
 *
 * Two layers:
 *
 * 1. binlog_dec: the decoder, our own code, over byte buffers. Feed it whole
 *    events (19-byte v4 header + body + optional CRC32), in log order; pull
 *    change events out. No I/O. Used by the file reader, the live client and
 *    the fuzz target.
 *
 * 2. binlog_reader: a source of change events, over a file (offline decode)
 *    or over a replication connection (Connector/C). This is the API the
 *    pipeline in app/ uses:
 *
 *      binlog_reader *r = NULL;
 *      binlog_open(cfg, &start, &r, &err);          // or binlog_open_file()
 *      for (;;) {
 *          evt_event *ev = NULL;
 *          tb_code rc = binlog_next(r, 1000, &ev, &err);
 *          if (rc != TB_OK) break;                  // err says why (file + offset)
 *          if (!ev) continue;                       // timeout / heartbeat / end of file
 *          ... deliver ev (borrowed until the next binlog_next call) ...
 *          if (evt_event_last_in_tx(ev)) ... evt_event_position(ev) may be
 *              committed once every event up to it is acknowledged ...
 *      }
 *      binlog_close(r);
 *
 * POSITIONS. Every event carries a tb_position (kind TB_POS_MYSQL, `mariadb`
 * set for MariaDB sources, server_id of the source):
 *  - the last event of a transaction: file + the offset just after the
 *    transaction's commit event, row 0, gtid_set = the executed GTID set
 *    including this transaction (MySQL "uuid:1-5,uuid:tag:1-2", MariaDB
 *    "0-1-7,1-2-3"; NULL when the source has no GTIDs). This is a resume point.
 *  - any other event: file + offset of its rows event, row = 1-based index of
 *    the row within the transaction, gtid_set NULL (informational only).
 *  The transaction id (evt_event_txid) is the transaction's GTID ("0-1-7",
 *  "uuid:5", "uuid:tag:5") or "file:offset" of its first event without GTIDs.
 *  binlog_position() returns the position after the last complete transaction
 *  delivered so far. While an XA transaction is prepared and not yet committed
 *  or rolled back, both stay at the resume point before its prepared group
 *  (binlog_xa.c): a restart from there reads it again.
 *
 * SCHEMAS. Table descriptors come from TABLE_MAP events. With FULL optional
 * metadata (binlog_row_metadata=FULL): column names, primary key (incl.
 * prefix keys), signedness, charsets, ENUM/SET labels. Without names the
 * columns are "@1".."@n", evt_table_names_known() is false and the key is
 * null; without signedness integers are read as signed. Live, a table
 * without names is looked up in information_schema when its map is first
 * seen (and again after any DDL), with a warning that a DDL between the
 * event and the lookup can shift columns. A descriptor's version goes up
 * when a table's shape changes. Live, each new version also takes its
 * columns' defaults from information_schema (by column name, as they are
 * when the version is first seen).
 *
 * Ownership: binlog_dec_new/binlog_open* return objects freed with
 * binlog_dec_free/binlog_close (NULL-safe). Events returned by
 * binlog_dec_next/binlog_next are owned by the decoder and valid until the
 * next call on the same object.
 */
#ifndef BINLOG_H
#define BINLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfg.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

/* ============================================================ statements */

/* STATEMENTS. A QUERY event carries SQL text: transaction control (BEGIN,
 * COMMIT, ...), DDL, and, when a session logs with binlog_format=STATEMENT
 * (or MIXED picked it), DML whose changed rows the binlog does not hold.
 * binlog_stmt_classify() (binlog_query.c) says what a statement is and
 * which tables it changes; the decoder uses it for every QUERY event and
 * hands every statement that is not transaction control to the statement
 * callback (binlog_dec_opts.stmt_fn, binlog_set_stmt_fn). */
typedef enum binlog_stmt_kind {
    BINLOG_STMT_OTHER = 0,     /* changes no table rows we know of (SET, GRANT, CREATE VIEW, ...) */
    BINLOG_STMT_BEGIN,         /* BEGIN, XA START */
    BINLOG_STMT_COMMIT,        /* COMMIT, ROLLBACK, XA PREPARE */
    BINLOG_STMT_TX_OTHER,      /* SAVEPOINT, RELEASE SAVEPOINT, ROLLBACK TO, XA END */
    BINLOG_STMT_DML,           /* INSERT, REPLACE, UPDATE, DELETE, LOAD DATA/XML as a statement */
    BINLOG_STMT_TRUNCATE,      /* TRUNCATE [TABLE] */
    BINLOG_STMT_ALTER,         /* ALTER TABLE without RENAME */
    BINLOG_STMT_RENAME,        /* RENAME TABLE, ALTER TABLE ... RENAME: tables in (old, new) pairs */
    BINLOG_STMT_DROP,          /* DROP [TEMPORARY] TABLE */
    BINLOG_STMT_CREATE,        /* CREATE [OR REPLACE] [TEMPORARY] TABLE */
    BINLOG_STMT_MAINT,         /* OPTIMIZE, REPAIR, ANALYZE, CHECK TABLE */
    BINLOG_STMT_DROP_DATABASE, /* tables[0].db is the database, tables[0].table "" */
    BINLOG_STMT_XA_COMMIT,     /* XA COMMIT xid [ONE PHASE]: ends its own transaction (binlog_xa.c) */
    BINLOG_STMT_XA_ROLLBACK,   /* XA ROLLBACK xid: likewise */
} binlog_stmt_kind;

typedef struct binlog_stmt_table {
    char *db;    /* the statement's, else the event's default database ("" when none) */
    char *table;
} binlog_stmt_table;

typedef struct binlog_stmt {
    binlog_stmt_kind kind;
    const char *verb;          /* static, upper case: "INSERT", "TRUNCATE TABLE", ...; "" unknown */
    binlog_stmt_table *tables; /* owned: the tables the statement changes (see binlog_query.c) */
    size_t ntables, cap;
    bool temporary;            /* DROP / CREATE TEMPORARY TABLE */
    bool or_replace;           /* CREATE OR REPLACE TABLE: an existing table is dropped first */
    bool alters;               /* ALTER TABLE ... RENAME that also changes the table */
    bool fills_rows;           /* ALTER TABLE that can give existing rows new values: ADD, MODIFY,
                                  CHANGE or DROP of a column, CONVERT TO CHARACTER SET; or take
                                  rows away or bring them in: DROP / TRUNCATE / EXCHANGE /
                                  CONVERT PARTITION, CONVERT TABLE, IMPORT TABLESPACE (the
                                  other table named by EXCHANGE and CONVERT is in tables too) */
    bool changes_key;          /* ALTER TABLE that adds or drops the primary key (ADD [CONSTRAINT
                                  [name]] PRIMARY KEY, DROP PRIMARY KEY): every row gets a new key */
    bool foreign_keys;         /* CREATE or ALTER TABLE whose text has the word FOREIGN, REFERENCES or
                                  CONSTRAINT: it may add or drop a foreign key (outside strings and
                                  comments; a false positive costs a second look at the catalog) */
    /* Filled by the decoder before the callback; borrowed for its duration. */
    const char *text;          /* the statement (not NUL-terminated) */
    size_t text_len;
    const char *file;          /* binlog file of the QUERY event */
    uint64_t pos;              /* its offset */
    uint64_t end_pos;          /* the offset after it */
    const char *gtid;          /* its transaction's GTID ("0-1-7", "uuid:5"), NULL without GTIDs */
    bool in_tx;                /* inside a BEGIN ... COMMIT (DML), else a transaction of its own (DDL) */
    const tb_position *after;  /* !in_tx: the resume point after the statement (it is committed in the
                                  decoder before the callback; binlog_position() is there too) */
    int64_t ts_ms;             /* the transaction's commit time */
} binlog_stmt;

/* Frees the tables; NULL-safe. */
void binlog_stmt_free(binlog_stmt *st);
/* Classify q[0..n) (replacing st's previous content). defdb[0..deflen):
 * the event's default database, for names without one (may be NULL).
 * TB_ERR_NOMEM only: text that is not understood is BINLOG_STMT_OTHER. */
TB_MUST_USE tb_code binlog_stmt_classify(binlog_stmt *st, const char *q, size_t n, const char *defdb, size_t deflen);

/* Called by the decoder for each statement that is not transaction control,
 * before the statement's transaction commits. An error stops the decoder
 * (binlog_dec_next / binlog_next return it, prefixed with the input and the
 * event's offset) and the position stays before the statement. */
typedef tb_code (*binlog_stmt_fn)(void *opaque, const binlog_stmt *st, tb_error *err);

/* ============================================================ decoder */

typedef struct binlog_dec binlog_dec;

/* Looks a table up in the source's catalog when a TABLE_MAP carries no column
 * names (binlog_row_metadata=MINIMAL), and for the column defaults of every
 * new table version (the binlog has none). *out: a new descriptor with names,
 * key, signedness, charsets, ENUM/SET labels, defaults and the period of a
 * system-versioned table (types may be EVT_T_UNKNOWN: the decoder reads the
 * declared type from source_type), or NULL when the table is not found; the
 * decoder drops the reference. The live reader installs one that reads
 * information_schema (mymeta_describe, mysqlconn/mymeta.h). */
typedef tb_code (*binlog_schema_fn)(void *opaque, const char *db, const char *table, evt_table **out,
                                    tb_error *err);

typedef struct binlog_dec_opts {
    const char *label;       /* names the input in errors, e.g. the file path or "host:port" */
    const char *file;        /* binlog file name for positions until a ROTATE says otherwise; may be NULL */
    bool verify_checksum;    /* verify CRC32 when the FDE says so (default true via binlog_dec_opts_init) */
    bool incident_is_error;  /* INCIDENT stops with an error (default true) */
    binlog_schema_fn schema_fn; /* NULL: tables without names stay @1..@n */
    void *schema_opaque;
    binlog_stmt_fn stmt_fn;     /* NULL: statements only drop the cached table maps */
    void *stmt_opaque;
    const cfg *keys;         /* key.columns.<db>.<table> for tables without a primary key; borrowed, must
                              * outlive the decoder; NULL: such tables have no key */
} binlog_dec_opts;

void binlog_dec_opts_init(binlog_dec_opts *o);

/* New decoder (NULL on allocation failure). */
binlog_dec *binlog_dec_new(const binlog_dec_opts *o);
void binlog_dec_free(binlog_dec *d);

/* Feed one whole event of `len` bytes that starts at byte `off` of the
 * current binlog file. The bytes are borrowed until binlog_dec_next() has
 * returned *out == NULL. Call binlog_dec_next() until then before feeding
 * again. Errors (TB_ERR_CORRUPT, TB_ERR_UNSUPPORTED, TB_ERR_SOURCE for an
 * INCIDENT) name the input label and the byte offset. */
TB_MUST_USE tb_code binlog_dec_feed(binlog_dec *d, const uint8_t *ev, size_t len, uint64_t off, tb_error *err);

/* Next change event, or *out = NULL when the fed event is used up. */
TB_MUST_USE tb_code binlog_dec_next(binlog_dec *d, evt_event **out, tb_error *err);

/* End of input: returns a held-back event (a transaction without a commit
 * event, e.g. at the end of an unfinished file), else *out = NULL. */
TB_MUST_USE tb_code binlog_dec_finish(binlog_dec *d, evt_event **out);

/* on: a transaction whose MySQL GTID is already in the decoder's executed set
 * (the one binlog_dec_set_position gave it) is decoded but not emitted; its
 * commit still moves the position. For a stream started from a GTID set at a
 * binlog file that begins before it (see binlog_live.c). */
void binlog_dec_skip_executed(binlog_dec *d, bool on);
/* Transactions skipped that way so far. */
uint64_t binlog_dec_skipped(const binlog_dec *d);

/* The newest descriptor the decoder built for db.table (from its TABLE_MAP
 * events), or NULL when none was seen. Borrowed: valid while the decoder
 * lives (take a reference to keep it). */
evt_table *binlog_dec_table(const binlog_dec *d, const char *db, const char *table);

/* Install (or, fn NULL, remove) the statement callback. */
void binlog_dec_set_stmt_fn(binlog_dec *d, binlog_stmt_fn fn, void *opaque);

/* Forget a transaction in progress (a held event, pending rows): used when a
 * live connection breaks and the stream resumes at the last commit. */
void binlog_dec_drop_tx(binlog_dec *d);

/* Position after the last complete transaction (see POSITIONS): where a
 * reconnect of the same decoder resumes. */
const tb_position *binlog_dec_position(const binlog_dec *d);
/* The position a consumer may commit: binlog_dec_position(), or, while a
 * prepared XA transaction is pending, the resume point before its group. */
const tb_position *binlog_dec_commit_position(const binlog_dec *d);
/* Set the starting position (GTID state, file name) before feeding. Copied. */
TB_MUST_USE tb_code binlog_dec_set_position(binlog_dec *d, const tb_position *p);

/* From the FORMAT_DESCRIPTION event: the server's flavor. */
bool binlog_dec_is_mariadb(const binlog_dec *d);

/* ============================================================ reader */

typedef struct binlog_reader binlog_reader;

/* Live replication from the server in cfg (source.host, port, user,
 * password, server.id, heartbeat, reconnect backoff). start: where to begin;
 * NULL or kind NONE = source.start.* from cfg, else the server's current
 * position. A MySQL/MariaDB position with gtid_set resumes by GTID, else by
 * file + pos. */
TB_MUST_USE tb_code binlog_open(const cfg *c, const tb_position *start, binlog_reader **out, tb_error *err);

/* Checks that the source in cfg can be captured without losing data: log_bin
 * ON, binlog_format ROW, binlog_row_image FULL (source.row.image.policy),
 * binlog_row_metadata FULL (else a warning) and the grants the configured
 * features need (binlog_preflight.h lists them). Each problem is logged as one
 * line naming the setting or privilege, its value, what is needed and the
 * statement that fixes it; the result is then TB_ERR_CONFIG (exit code 2).
 * A connection failure is TB_ERR_SOURCE. binlog_open checks the same on every
 * (re)connection of the replication client; run calls this before a snapshot. */
TB_MUST_USE tb_code binlog_preflight(const cfg *c, tb_error *err);

/* The read timeout of the replication connection: three heartbeats
 * (source.heartbeat.interval.ms), 60 s without heartbeats. myconn_warm_start
 * opens that connection early with it, so that binlog_open takes it. */
int64_t binlog_replication_timeout_ms(const cfg *c);

/* Whether GTID set text have holds every transaction of want, read by the one parser of GTID
 * sets: MariaDB lists, every domain of want in have at the same or a higher sequence number
 * (in any order of domains); MySQL sets, want a subset of have. 1 yes, 0 no, -1 when either
 * text is not a GTID set of that flavour. */
int binlog_gtid_covers(const char *have, const char *want, bool mariadb);

/* The replica server id for c: source.server.id when set, else derived
 * from `name`: 2^30 + (FNV-1a 32 of the name mod 2^30), i.e. in
 * 1073741824 .. 2147483647, away from the small ids servers are usually
 * given and within a signed 32-bit value. Stable across runs and hosts, so
 * every instance of one connector announces the same id and connectors
 * with different names announce different ones (barring a hash collision).
 * *derived (may be NULL) says which. */
uint32_t binlog_server_id(const cfg *c, bool *derived);

/* Offline: a binlog file. start_pos 0 or 4 = from the beginning; otherwise
 * events before start_pos are read for their FORMAT_DESCRIPTION and
 * TABLE_MAP state only, and no change event before it is returned. */
TB_MUST_USE tb_code binlog_open_file(const char *path, uint64_t start_pos, binlog_reader **out, tb_error *err);

/* Files: take key.columns.<db>.<table> from keys (borrowed, must outlive r)
 * for tables without a primary key, as binlog_open does from its cfg. Call
 * before the first binlog_next. */
void binlog_set_keys(binlog_reader *r, const cfg *keys);

/* Next change event. *ev = NULL on timeout, heartbeat, or (files) at the end:
 * binlog_at_end() then says true. Errors stop the reader. */
TB_MUST_USE tb_code binlog_next(binlog_reader *r, int timeout_ms, evt_event **ev, tb_error *err);
bool binlog_at_end(const binlog_reader *r);
/* Live: true once binlog_next failed because the server cannot send the
 * binlog from the position asked for (MySQL/MariaDB error 1236: the files or
 * GTIDs were purged or reset). The position is gone for good: the caller
 * snapshots again or asks the operator to reset it. False for files. */
bool binlog_position_gone(const binlog_reader *r);
/* True while a live reader's replication connection is up and encrypted with TLS
 * (source.ssl.mode); false for files and while disconnected. */
bool binlog_encrypted(const binlog_reader *r);
const tb_position *binlog_position(const binlog_reader *r);
/* Live: whether the replication connection is up (false while it
 * reconnects); *down_since_ms (may be NULL) = wall time (Unix ms) it went
 * down, 0 while up. Files: always true. */
bool binlog_connected(const binlog_reader *r, int64_t *down_since_ms);
/* Live, for a caller that cannot take events for a while (it waits for
 * something else): whether the server closed the replication connection,
 * without reading from it. If it did, the connection counts as lost from now
 * on (binlog_connected() false, down since now) and the next binlog_next()
 * reconnects and resumes after the last complete transaction, as after any
 * loss. Files: nothing. */
void binlog_check_connection(binlog_reader *r);
/* Bytes of binlog not yet read: live, the server's binlog after
 * binlog_position() (SHOW BINARY LOGS on a second connection: a round trip,
 * call it every few seconds, not per event; -1 while disconnected); files,
 * the bytes left in the file. */
TB_MUST_USE tb_code binlog_behind_bytes(binlog_reader *r, int64_t *bytes, tb_error *err);
/* The decoder underneath (flavor, server version, counters). Borrowed. */
const binlog_dec *binlog_reader_decoder(const binlog_reader *r);
/* The statement callback of the reader's decoder (see binlog_dec_set_stmt_fn). */
void binlog_set_stmt_fn(binlog_reader *r, binlog_stmt_fn fn, void *opaque);
/* Live mode: fn describes a table the catalog does not have (dropped or renamed since the event
 * being decoded, e.g. when a restart reads the binlog again), as the decoder's schema_fn would;
 * the run hands it the sink's schema history (sink_schema_last). Without it such a table is
 * described by its table map alone: a UUID, INET6 or INET4 column is then BINARY(16) or
 * BINARY(4), and its events would differ from those written while the table existed. */
void binlog_set_history_fn(binlog_reader *r, binlog_schema_fn fn, void *opaque);
void binlog_close(binlog_reader *r);

#endif
