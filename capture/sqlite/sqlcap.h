/*
 * sqlcap: SQLite change capture (DESIGN 8, docs sqlite-wal.md).
 *
 * Two modes (source.sqlite.mode):
 *   wal      (default) read committed frames of the write-ahead log from
 *            outside the writer, pinning the WAL with two leapfrogging read
 *            transactions, and diff the changed b-tree pages into row events.
 *   trigger  a change-log table _cdc_log filled by generated triggers, drained
 *            in sequence order (works in any journal mode).
 *
 * USAGE (pipeline)
 *   sqlcap *c; sqlcap_open(cfg, &start, &c, &err);   // start: TB_POS_NONE = now
 *   ... with start NONE, store sqlcap_position(c) durably before consuming:
 *       a crash before the first stored position restarts at "now" again and
 *       the changes in between are never delivered
 *   for (;;) {
 *       evt_event *ev;
 *       sqlcap_next(c, 100, &ev, &err);              // ev NULL on timeout
 *       ... produce ev; on evt_event_last_in_tx(ev) the transaction is complete
 *       ... when Kafka acknowledged everything up to a position P (the position
 *           of a last_in_tx event, or sqlcap_position()), store P durably, then
 *       sqlcap_ack(c, &P);   // lets the shadow copy / change log advance
 *   }
 *   sqlcap_close(c);
 *
 * EVENTS. Each event carries the position of its transaction
 * (evt_event_position): TB_POS_SQLITE_WAL {salts, commit frame, that frame's
 * checksum, db_pages, gen_seq, inode} or TB_POS_SQLITE_LOG {seq}. The last
 * event of a commit has last_in_tx. Inside a commit events are sorted by
 * table and key; only the net change per commit is visible. Keys: the
 * declared PRIMARY KEY, else the rowid (as a column named "rowid"; VACUUM may
 * renumber rowids). evt_table db = source.database.name or the file stem.
 * A WAL event `u` whose schema changed within the commit carries the before
 * image normalised to the new column list (appended columns take defaults).
 *
 * SHADOW (wal mode, source.sqlite.shadow=on, mode B): a private copy of the
 * database at the acknowledged position (default path <db>.tbshadow next to
 * source.path, or source.sqlite.shadow.path). Before-images are read from it
 * plus the unacknowledged pages held in memory, so they never depend on the
 * writer's checkpoints. On restart from a durable position equal to the
 * shadow's, in the same WAL generation: exact continuation. If the WAL was
 * reset meanwhile: one "gap" transaction = exact net diff shadow -> current
 * (its events have txid "gap"; consumers should apply them as upserts).
 * Before the last event of a transaction is returned, the pages of every
 * delivered, unacknowledged transaction are made durable in <shadow>.pend;
 * on restart the shadow is rolled forward through them to the resume
 * position, so a crash between storing a position and sqlcap_ack does not
 * make the gap start before the consumer's state (costs one fsync per batch
 * of delivered transactions).
 * With shadow=off (mode A) before-images come from the live file; a restart
 * is exact only if no frame after the position was checkpointed, else
 * sqlcap_open fails with TB_ERR_STATE ("resnapshot needed").
 *
 * ACKS ARE REQUIRED in mode B: the page images of every transaction delivered
 * but not acknowledged are kept in memory until sqlcap_ack covers them.
 *
 * SCHEMA CHANGES (wal mode): CREATE TABLE: its rows appear as op=c (diff
 * against an empty table); ALTER ADD/RENAME/DROP COLUMN: later events use a
 * new descriptor (evt_table version+1); with ddl_alter_rows, when the ALTER
 * changes what existing rows read as (a column added with a non-NULL
 * default, a column renamed or dropped) every row of the table follows as
 * op=r in the same transaction, else a WARN; DROP TABLE: with ddl_drop_rows
 * a delete per row the table had (its rows at the position before the
 * DROP), else a WARN (the topic keeps the rows); with drop_events then an
 * event whose descriptor is evt_table_dropped() (the table is gone: no row,
 * not sent as a change; the WARN is the consumer's); ALTER TABLE RENAME:
 * recognised (same root page, same column definitions); with
 * ddl_rename_rows a delete per row under the old name and op=r per row under
 * the new one, else no row events (INFO); later changes (including those in
 * the renaming transaction) carry the new name, and the new name's
 * descriptor starts at version 1. These rows are all in memory at once, as
 * for any transaction (a DROP of a large table costs like deleting its
 * rows). VACUUM:
 * no events (keys are the declared primary key, so renumbered rowids do not
 * matter unless the table has no primary key). Generated columns are
 * captured with their values in both modes (WAL mode: STORED from the
 * record, VIRTUAL computed in the private SQLite). WAL mode refuses tables
 * with hidden columns (not captured, a WARN) and UTF-16 databases (open
 * fails).
 *
 * VALUES (both modes, DESIGN 5 "SQLite dynamic typing"): TEXT and BLOB values
 * follow the declared type, not the value's class: bytes (EVT_V_BYTES) in a
 * BLOB-declared column, a string of the same bytes (EVT_V_STRING) in any other
 * column. INTEGER and REAL values are numbers in every column.
 *
 * COMMIT TIME: SQLite records none. evt_event_commit_ts_ms is the wall-clock
 * time at which the reader read the wal-index header that first showed the
 * commit (trigger mode: the drain), shared by the commits of one poll,
 * never going back (sqlite-wal.md 2.12).
 *
 * PIN: two leapfrogging read transactions (sqlite-wal.md 2.2). Coarse pin (the
 * default): the pin advances at most every repin_ms (default 1000 ms; any pin
 * at or below the consumed position is safe), also while the reader is caught
 * up, so the application's autocheckpoint backfills (walIteratorInit, a copy,
 * an fdatasync of the WAL) about once per interval instead of after almost
 * every commit; it advances at once when a lock-0 reset window is possible
 * (everything backfilled), across WAL generations, at every poll with the
 * checkpoint options, and when caught up with a writer idle for 100 ms. While
 * the application writes, its own FULL/RESTART/TRUNCATE checkpoint may wait up
 * to repin_ms for the pin to move. repin_ms < 0: advance at every poll (much
 * more work for the writer; sqlite-wal.md 5, bench_sqlcap).
 *
 * BOUNDED WAL (wal_max_bytes, source.sqlite.wal.max.bytes, default 16 MiB in
 * the configuration; sqlite-wal.md 2.13): once the WAL holds a quarter of the
 * bound and the reader is caught up, a reset window (PASSIVE checkpoint up to
 * the pin, then a leapfrog into lock 0) is tried at most every 100 ms without
 * any lock an application waits for; from three eighths of the bound the window
 * is taken under the write barrier below once the reader has (nearly) caught up
 * (the application's writers wait for it, with their busy timeout); from half
 * of it the barrier is taken however far behind the reader is, also from
 * inside a consume (the last resort: writers wait while it reads the rest, at
 * most a second). The bound is also checked every 20 ms while sqlcap_next
 * hands out queued events. A read transaction of another process that keeps
 * the checkpoint back is named in a WARN (pid, slot, frame). Checkpoints of
 * the reader never overlap a reset (the
 * pin or the barrier excludes one), so the WAL-reset bug of SQLite < 3.51.3
 * (1.10) cannot be met by them.
 *
 * CHECKPOINTS without the bound: source.sqlite.checkpoint=on runs a PASSIVE
 * checkpoint at most every 100 ms when caught up and mxFrame >= 1000 (a reset
 * window, sqlite-wal.md 2.9: after a full backfill it leapfrogs at once so the
 * new read transaction holds lock 0). Under continuous commits a commit lands
 * between the checkpoint and the leapfrog and the window rarely opens.
 * source.sqlite.checkpoint=barrier (sqlcap_opts.checkpoint_barrier) also holds BEGIN IMMEDIATE on
 * a connection of its own (W, never writes) while it consumes the last frames,
 * checkpoints them and leapfrogs (2.9 option 3): the application's next commit
 * then rewinds the WAL. Costs: application writers wait (busy timeout) for
 * about 1-3 ms per window; a deferred application transaction that has read
 * and then writes gets SQLITE_BUSY at once while it is held; a tailer
 * checkpoint on SQLite < 3.51.3 (sqlite-wal.md 1.10). A window opens only
 * when the reader has caught up. Tests: replay_barrier_windows; also
 * SQLCAP_CHECKPOINT=on|barrier runs every test reader with it. WAL size, lag and checksum anomalies are logged every
 * 10 s and in sqlcap_get_stats.
 *
 * OWNERSHIP. sqlcap_open returns an object freed by sqlcap_close (NULL-safe).
 * Events returned by sqlcap_next are borrowed until the next sqlcap_next or
 * sqlcap_close. sqlcap_position returns a borrowed pointer valid until the
 * next call on the object.
 *
 * THE FILE (wal mode, sqlite-wal.md 2.14): when no other process has the
 * database open and everything is read, the WAL is backfilled completely (the
 * reader's SHARED lock kept the application's last close from doing it), so a
 * replaced file never gets the old frames. A database file or WAL replaced
 * (another inode at the path) or deleted: sqlcap_next fails with TB_ERR_STATE
 * naming the recovery.
 *
 * THREADS. One thread per object. The process must not close() any file
 * descriptor of the database, -wal or -shm while an sqlcap is open (POSIX
 * locks, sqlite-wal.md 1.8): do not open and close other SQLite connections
 * to the same database file in the same process.
 */
#ifndef SQLCAP_H
#define SQLCAP_H

#include <stdbool.h>
#include <stdint.h>
#include "cfg.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct sqlcap sqlcap;

/* Options when not using a cfg (tests, `tributary decode --wal`). */
typedef struct sqlcap_opts {
    const char *path;         /* database file (required) */
    const char *dbname;       /* evt_table db; NULL = file stem */
    bool trigger_mode;        /* source.sqlite.mode=trigger */
    bool shadow;              /* mode B */
    const char *shadow_path;  /* NULL = <path>.tbshadow */
    bool checkpoint;          /* PASSIVE reset windows (2.9) */
    bool checkpoint_barrier;  /* with checkpoint: hold BEGIN IMMEDIATE on a connection of its
                               * own around the window (2.9 option 3): the window opens under
                               * continuous commits; application transactions that read and
                               * then write get SQLITE_BUSY while it is held */
    int poll_ms;              /* sleep between polls (default 50) */
    bool offline;             /* decode --wal: no pinning, frames validated by checksum */
    int repin_ms;             /* coarse pin: advance at most every repin_ms; 0 = default (1000), < 0 = every poll */
    int64_t wal_max_bytes;    /* bounded WAL (source.sqlite.wal.max.bytes): reset windows from a
                               * quarter of it, under the write barrier from half of it; 0 = no
                               * bound (the pin alone: windows only with checkpoint) */
    /* statements without row events (docs/statements.md, SQLite; WAL mode): rows of the
     * statement's transaction, at its position */
    bool ddl_drop_rows;       /* ddl.drop.policy=tombstone: DROP TABLE gives a delete (before image:
                               * the row) for every row the table had */
    bool ddl_rename_rows;     /* ALTER TABLE RENAME: a delete for every row under the old name and a
                               * read (op r) for every row under the new one */
    bool ddl_alter_rows;      /* ddl.alter.policy=resnapshot: an ALTER that changes what existing rows
                               * read as (a column added with a default, renamed or dropped) gives a
                               * read (op r) for every row of the table */
    bool drop_events;         /* a DROP TABLE of a table the capture reads gives, after that table's
                               * rows (ddl_drop_rows), one event whose descriptor says it was dropped
                               * (evt_table_dropped: op d, no columns, no row image) in the DROP's
                               * transaction, for the consumer to write the schema record that says
                               * so; the capture then logs no WARN of its own for the DROP (the
                               * consumer knows whether the table is captured). sqlcap_open: on */
    bool new_table_events;    /* a captured table created (or renamed) while streaming that holds no
                               * row gives one event of its descriptor with no row image (op r) in
                               * that transaction, for the consumer to write its schema record (and
                               * make its topic) at once, as MySQL's CREATE TABLE does; a table
                               * with rows is announced by its first row. sqlcap_open: on */
    bool test_no_pin;         /* TESTS ONLY (negative control): drop the read transaction after
                               * each poll, breaking the pinning invariant */
} sqlcap_opts;

/* Open from the configuration (source.path, source.sqlite.*, source.database.name).
 * start: TB_POS_NONE (or NULL) starts at the current state without a snapshot;
 * else resume after that position. *out is set on success only. */
TB_MUST_USE tb_code sqlcap_open(const cfg *c, const tb_position *start, sqlcap **out, tb_error *err);
TB_MUST_USE tb_code sqlcap_open_opts(const sqlcap_opts *o, const tb_position *start, sqlcap **out, tb_error *err);

/* Next event, waiting up to timeout_ms (0 = poll once). *ev is NULL on timeout
 * (and in offline mode once the WAL is exhausted, with TB_ERR_NOT_FOUND). */
TB_MUST_USE tb_code sqlcap_next(sqlcap *c, int timeout_ms, evt_event **ev, tb_error *err);

/* Position of the last complete transaction delivered (all its events were
 * returned by sqlcap_next), or of the start. Borrowed. */
const tb_position *sqlcap_position(sqlcap *c);

/* Everything up to pos is durable downstream. WAL mode B: advances the shadow
 * copy; trigger mode: deletes drained change-log rows with seq <= pos.seq. */
TB_MUST_USE tb_code sqlcap_ack(sqlcap *c, const tb_position *pos, tb_error *err);

/* Snapshot support: call right after sqlcap_open with start NONE and
 * before any sqlcap_next (both modes; trigger mode: one read transaction
 * from the change log's highest sequence to the last row, sqlite-wal.md 3). The reader's read transaction fixes the position;
 * the following sqlcap_next calls first return every row of every captured
 * table as op=r events (snapshot flag true, last one SNAPSHOT_LAST, carrying
 * the snapshot position), table by table, page by page (memory bounded by one
 * page of rows), then continue streaming exactly after that position.
 * *pos (optional) receives the snapshot position (caller frees with tb_position_free). */
TB_MUST_USE tb_code sqlcap_snapshot_begin(sqlcap *c, tb_position *pos, tb_error *err);

/* After sqlcap_snapshot_begin: fn(db, table, rows, opaque) once for each captured table with its
 * row count in the snapshot, from the cells of its b-tree pages (one read of each leaf page, no
 * row decoded). For progress reports (metrics.listen); the names are borrowed for the call. */
typedef void (*sqlcap_count_fn)(const char *db, const char *table, int64_t rows, void *opaque);
TB_MUST_USE tb_code sqlcap_snapshot_count(sqlcap *c, sqlcap_count_fn fn, void *opaque, tb_error *err);

/* Whether sqlcap_open took a gap (the WAL was reset while the reader was
 * down: one net-diff transaction, sqlite-wal.md 2.11); true once. Rows
 * delivered after the durable position and deleted before the gap are not
 * in that diff: the caller reconciles the topics (DESIGN 6a). */
bool sqlcap_take_gap(sqlcap *c);

/* Every row of every captured table at the position of the last
 * transaction decoded (sqlcap_position once its events are delivered): per
 * table on_table(t, false), on_row per row (an op=r event, borrowed for the
 * call), on_table(t, true). Leaf page by leaf page: memory of one page of
 * rows. For the reconcile step; call between sqlcap_next calls. */
typedef tb_code (*sqlcap_table_fn)(void *opaque, evt_table *t, bool end, tb_error *err);
typedef tb_code (*sqlcap_row_fn)(void *opaque, const evt_event *ev, tb_error *err);
TB_MUST_USE tb_code sqlcap_scan_tables(sqlcap *c, sqlcap_table_fn on_table, sqlcap_row_fn on_row, void *opaque, tb_error *err);

/* Statistics for logs and status; wal_bytes and lag_frames are read at the call
 * (the -shm header and the WAL file), not at the last poll. */
typedef struct sqlcap_stats {
    uint64_t txns, events, frames, cksum_mismatch, wal_bytes, lag_frames, generations;
    uint64_t pin_moves;       /* leapfrogs (the read mark advanced) */
    uint64_t windows;         /* reset windows opened (the reader took lock 0 after a full backfill) */
    uint64_t barriers;        /* write barriers taken (wal_max_bytes, checkpoint_barrier) */
    uint64_t barrier_us, barrier_max_us; /* time the write lock was held: total, longest */
    uint64_t wal_max_bytes;   /* largest WAL file size seen */
} sqlcap_stats;
void sqlcap_get_stats(const sqlcap *c, sqlcap_stats *st);

void sqlcap_close(sqlcap *c);

/* The tables of the database the configuration names (source.path; their db name:
 * source.database.name, else the file name without its extension), as the capture sees them
 * (sqlite_* and the trigger mode's _cdc_log left out, as sqlcap_schema does): fn(opaque, db, table) for each, now.
 * Opens the file read-only for the one query. */
typedef void (*sqlcap_name_fn)(void *opaque, const char *db, const char *table);
TB_MUST_USE tb_code sqlcap_list_tables(const cfg *c, sqlcap_name_fn fn, void *opaque, tb_error *err);
/* sqlcap_list_tables: whether db.table is one of them. */
TB_MUST_USE tb_code sqlcap_table_exists(const cfg *c, const char *db, const char *table, bool *exists, tb_error *err);

/* Trigger mode: remove _cdc_log, _cdc_repl and every _cdc_* trigger from the database.
 * *ntriggers (may be NULL) gets the number of triggers removed, *had_log
 * (may be NULL) whether _cdc_log or _cdc_repl was there. */
TB_MUST_USE tb_code sqlcap_trigger_uninstall(const char *path, int *ntriggers, bool *had_log, tb_error *err);

#endif
