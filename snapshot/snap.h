/*
 * snap: the initial snapshot of a MySQL/MariaDB source (DESIGN.md 7).
 *
 *   snap *s; tb_error err;
 *   if (snap_open(cfg, &s, &err) != TB_OK) ...        // consistent view + position
 *   const tb_position *hand_off = snap_position(s);   // stream from here afterwards
 *   evt_event *ev;
 *   while (snap_next(s, &ev, &err) == TB_OK && ev) ... // op=r events, table by table
 *   snap_close(s);
 *
 * CONSISTENCY
 *  MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then
 *  SHOW STATUS LIKE 'binlog_snapshot_%' gives the binlog file/offset of
 *  exactly that view (no lock); the GTID position is BINLOG_GTID_POS(file,
 *  offset). MySQL 8, snapshot.locking.mode=minimal: FLUSH TABLES WITH READ
 *  LOCK, start the consistent snapshot, SHOW MASTER STATUS (file, offset,
 *  Executed_Gtid_Set), UNLOCK TABLES: the lock is held for milliseconds.
 *  snapshot.locking.mode=none on MySQL: no lock, the position is read right
 *  after the view is taken, so a transaction committed in between would be
 *  in neither the snapshot nor the stream (logged as a warning; use minimal
 *  when exactness matters). The session uses time_zone '+00:00' and utf8mb4.
 *
 * TABLES
 *  Every base table outside the system schemas that passes tables.include /
 *  tables.exclude (regexes over "db.table"); the signalling tables
 *  `<db>.tributary_signal` are skipped. Descriptors come from
 *  information_schema (types, unsigned, charset, fsp/scale, ENUM/SET labels,
 *  primary key, else key.columns.<db>.<table>; a table with no key is
 *  refused with TB_ERR_CONFIG). Tables are read in db.table order.
 *
 * EVENTS
 *  op=r, after image only, snapshot=true, the very last one snapshot=last,
 *  last_in_tx=true on the last one, commit time = the time the snapshot
 *  started, position = the hand-off position on every event. Values are
 *  read with the binary protocol and converted as the binlog decoder does
 *  (snap_values.c), one row at a time: memory does not grow with the table.
 *
 * OWNERSHIP
 *  snap_open() returns an object freed with snap_close() (NULL-safe).
 *  snap_position() is borrowed, valid until snap_close(). The event from
 *  snap_next() is borrowed until the next snap_next() or snap_close(); the
 *  table descriptors it references stay valid while the caller holds a
 *  reference (evt_table_ref). snap_progress() is borrowed and changes as
 *  snap_next() runs.
 *
 * source.type=sqlite is not handled here (capture/sqlite snapshots it; the
 * app wires it): snap_open returns TB_ERR_UNSUPPORTED.
 */
#ifndef SNAP_H
#define SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct snap snap;

typedef enum snap_table_state { SNAP_TABLE_PENDING = 0, SNAP_TABLE_RUNNING, SNAP_TABLE_DONE } snap_table_state;

typedef struct snap_table_progress {
    const char *db, *table;      /* borrowed */
    uint64_t rows_done;
    uint64_t rows_estimated;     /* information_schema.TABLES.TABLE_ROWS */
    snap_table_state state;
    int64_t started_ms, finished_ms; /* CLOCK_MONOTONIC ms, 0 = not yet */
} snap_table_progress;

TB_MUST_USE tb_code snap_open(const cfg *c, snap **out, tb_error *err);

/* The hand-off position: streaming must start exactly here. */
const tb_position *snap_position(const snap *s);

/* Next snapshot event in *ev, or *ev = NULL when every table is done.
 * On error *ev is NULL and the snapshot cannot continue. */
TB_MUST_USE tb_code snap_next(snap *s, evt_event **ev, tb_error *err);

/* Per-table progress: returns the number of tables, *tables the array. */
size_t snap_progress(const snap *s, const snap_table_progress **tables);
/* Total rows returned so far. */
uint64_t snap_rows_total(const snap *s);

void snap_close(snap *s);

/* snapshot.mode: whether to take an initial snapshot now.
 *   never        -> false
 *   initial, initial_only -> !have_offset
 *   when_needed  -> !have_offset || !offset_still_on_server */
bool snap_decide(const cfg *c, bool have_offset, bool offset_still_on_server);
/* The captured tables (tables.include/exclude) of the source each get a
 * topic of their own: two whose names sanitize to one topic (evt_topic_name)
 * are TB_ERR_CONFIG naming both and the topic. Opens and closes its own
 * connection; run calls it at start, before anything is sent. *ntables (may
 * be NULL): how many tables the filter captures. */
TB_MUST_USE tb_code snap_check_topics(const cfg *c, size_t *ntables, tb_error *err);

/* Whether streaming follows the snapshot (false for initial_only). */
bool snap_then_stream(const cfg *c);

/* snapshot.initial.method=chunked for a run that streams afterwards
 * (snapshot.mode other than initial_only): the initial snapshot is taken by
 * the incremental machinery (snap_incremental.h, snap_inc_begin_initial),
 * streaming from snap_plan.pos meanwhile. */
bool snap_chunked(const cfg *c);

/* The plan of a chunked initial snapshot: the server's position now (where
 * streaming starts; read first, so a table made after it is also in the
 * stream) and the tables snap_open would read (tables.include/exclude,
 * signalling tables skipped, db.table order), each described once, so a
 * table with no key is refused here with TB_ERR_CONFIG as by snap_open.
 * Opens and closes its own connection. Free with snap_plan_free. */
typedef struct snap_plan {
    tb_position pos;
    size_t n;
    char **db_table;     /* "db.table", owned */
    char **db, **table;  /* owned */
    uint64_t *rows_estimated;
    bool mariadb;
} snap_plan;
TB_MUST_USE tb_code snap_plan_make(const cfg *c, snap_plan *p, tb_error *err);
void snap_plan_free(snap_plan *p);


#endif
