/*
 * snap_incremental: incremental snapshots on a running connector, by the
 * watermark method of DBLog (Netflix) / Flink CDC: chunks by primary key, no
 * locks, interleaved with streaming, resumable per chunk.
 *
 * SIGNALLING (binlog, no polling)
 *  `tributary snapshot --incremental --table db.t` calls snap_inc_signal(),
 *  which creates `db`.`tributary_signal` if missing:
 *      id BIGINT AUTO_INCREMENT PRIMARY KEY, type VARCHAR(32), data VARCHAR(1024),
 *      ts TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6)
 *  and inserts (type='execute-snapshot', data='db.t'). The running connector
 *  sees the insert in the binlog and passes it to snap_inc_observe(), which
 *  queues the table. A signal id at or below the last one handled (saved in
 *  the state file) is ignored, so a replayed binlog does not start it again.
 *  The same table receives the watermark rows (type 'snapshot-window-open' /
 *  'snapshot-window-close', data = the chunk's table). Its rows are not
 *  snapshotted; the run loop decides whether to publish them
 *  (snap_inc_is_signal_table()).
 *
 * ONE CHUNK (snap_inc_poll, when no chunk is in flight)
 *  0. describe the table as it is now (a column added or dropped since the
 *     last chunk changes the SELECT; a changed key starts it again)
 *  1. INSERT a low watermark row (autocommit)            -> id_lo
 *  2. SELECT <cols> FROM t WHERE key > last_key ORDER BY key LIMIT
 *     snapshot.chunk.size (keyset pagination; a composite key expands to
 *     (k1 > ?) OR (k1 = ? AND k2 > ?) ...), rows buffered in memory
 *  3. INSERT a high watermark row                         -> id_hi
 *  Then, as the run loop feeds binlog events to snap_inc_observe():
 *  - the insert of id_lo opens the window;
 *  - inside the window, every row event of t removes from the buffer the
 *    chunk rows whose key it carries (before and after image): the stream's
 *    version is newer than or equal to the SELECT's;
 *  - the insert of id_hi closes the window: the remaining rows are released
 *    as op=r events (snapshot=true; the table's very last one
 *    snapshot=last; last_in_tx=false), positioned at the high watermark and
 *    carrying its commit time.
 *    The caller delivers them (snap_inc_next_event) right after observing
 *    the high watermark's event and BEFORE delivering that event: they
 *    belong to its transaction, which that event (last_in_tx) ends, so they
 *    are acknowledged before its position becomes committable.
 *  A chunk with fewer rows than the chunk size ends the table.
 *
 * PARALLEL WINDOWS (snapshot.threads=N > 1)
 *  Step 2 reads up to N chunks: the keys chunk_size rows apart are found
 *  first (SELECT ... LIMIT 1 OFFSET chunk_size-1, on the main connection),
 *  then each key range is read by its own thread over its own connection at
 *  once (a range bounded above is read whole; the last one up to chunk_size
 *  rows decides whether the table ends); the rows are put together in key
 *  order and the window goes on as one chunk ("chunks" in the state counts
 *  windows). Once a window is read, the next one of the same table is read
 *  ahead by a thread of its own (steps 0-3) while the run loop releases the
 *  first, over a second set of N connections (the sets take turns); it
 *  becomes the current chunk when the first is finished, before the binlog
 *  reaches its low watermark. Memory: two windows of N chunks.
 *
 * INITIAL SNAPSHOT (snapshot.initial.method=chunked)
 *  snap_inc_begin_initial queues every captured table at once, with no
 *  signal row; the chunks, windows, releases and saves are the ones above.
 *  The caller names the tables whose topics held no record then ("fresh",
 *  kept in the state file): their topics get nothing but this run's
 *  stream and chunks, so their reconcile step has nothing to delete and
 *  snap_inc_take_finished says so. A table stops being fresh when an
 *  execute-snapshot signal names it, when its key columns change under the
 *  chunks, when a statement other than DML names it (snap_inc_table_changed),
 *  or when it leaves the queue any other way than by its last chunk.
 *
 * PROGRESS AND CRASHES
 *  The state file (JSON, replaced atomically; by default
 *  `<offsets.file>.incsnap` with offsets.storage=file, `<name>.incsnap` in the
 *  folder of offsets.file with offsets in Kafka, where connectors may share
 *  a folder) names its connector and holds the queue of tables, the last key of the last finished
 *  chunk, counters and the last signal id. It is written when a finished
 *  chunk's high watermark position has been committed by the caller
 *  (snap_inc_committed), so after a kill -9 the snapshot continues with the
 *  first chunk whose rows may not have reached the sink. Watermarks of a
 *  chunk that was in flight at the crash carry ids nobody waits for any more
 *  and are ignored. Rows are therefore delivered at least once.
 *
 * RUN LOOP CONTRACT
 *      snap_inc_open(cfg, NULL, &si, &err);
 *      for each binlog event ev (every table, before tables.include filtering):
 *          snap_inc_observe(si, ev, &err);
 *          while (snap_inc_next_event(si, &out, &err) == TB_OK && out) deliver out;
 *          deliver ev (unless it is filtered out; its transaction still ends
 *              at last_in_tx, e.g. ksink_end_tx with its position)
 *          when a position P is committed: snap_inc_committed(si, P, &err);
 *          snap_inc_poll(si, &err);   // may run the next chunk's SQL
 *      snap_inc_close(si);
 *
 * Ownership: snap_inc_open returns an object freed with snap_inc_close
 * (NULL-safe). Events from snap_inc_next_event are borrowed until the next
 * call of any snap_inc_* function. evt pointers given to observe are
 * borrowed for the call only.
 */
#ifndef SNAP_INCREMENTAL_H
#define SNAP_INCREMENTAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cfg.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct snap_inc snap_inc;

/* "db.table" -> malloc'd db and table (the first dot splits them); false when malformed or out of
 * memory (then either may be set: free both). */
bool snap_inc_split_table(const char *db_table, char **db, char **table);
/* Write the execute-snapshot signal for "db.table" (see SIGNALLING). */
TB_MUST_USE tb_code snap_inc_signal(const cfg *c, const char *db_table, tb_error *err);
/* The same; *id (not NULL) gets the signal's id in its database's signalling table. */
TB_MUST_USE tb_code snap_inc_signal_id(const cfg *c, const char *db_table, int64_t *id, tb_error *err);

/* state_path NULL = the default above. Loads saved progress as of resume, the
 * stored position the run resumes from (NULL: none; see snap_inc_before_commit);
 * a state file naming another connector is refused (TB_ERR_CONFIG), one that
 * earlier versions left at <offsets.file>.incsnap is taken over (docs/snapshot.md). */
TB_MUST_USE tb_code snap_inc_open(const cfg *c, const char *state_path, const tb_position *resume, snap_inc **out,
                                  tb_error *err);
void snap_inc_close(snap_inc *si);

/* Feed one binlog event (any table), in log order. */
TB_MUST_USE tb_code snap_inc_observe(snap_inc *si, const evt_event *ev, tb_error *err);

/* Released chunk rows, one per call; *ev = NULL when none is ready (the
 * call that returns NULL after a chunk records the chunk as finished). */
TB_MUST_USE tb_code snap_inc_next_event(snap_inc *si, evt_event **ev, tb_error *err);

/* If no chunk is in flight and a table is queued: run the next chunk's
 * watermarks and SELECT (a round trip to the source). Cheap otherwise. On
 * an error with err->retriable (the connection failed) the chunk is not in
 * flight and its connection is closed: a later call connects again and runs
 * the chunk again (a window opened and never closed is passed over). */
TB_MUST_USE tb_code snap_inc_poll(snap_inc *si, tb_error *err);

/* The caller committed position p: saves the progress of every finished
 * chunk whose high watermark is at or before p. The file also keeps, as
 * pending, every later save with its position. */
TB_MUST_USE tb_code snap_inc_committed(snap_inc *si, const tb_position *p, tb_error *err);

/* The caller is about to commit a position: when a table joined the queue
 * since the file was last written (a signal, a RENAME, a table created), the
 * file gets every save not yet committed as pending, each with its position,
 * beside the committed state. A run that resumes from a stored position takes
 * the latest pending state at or before it (snap_inc_open): a crash between
 * the commit and snap_inc_committed's write cannot lose a queued snapshot,
 * and a commit that never happened leaves the committed state in force.
 * (Progress alone waits for snap_inc_committed: losing it reads a chunk twice.) */
TB_MUST_USE tb_code snap_inc_before_commit(snap_inc *si, tb_error *err);

/* The descriptor of the table whose last chunk the latest
 * snap_inc_next_event() call released (the table's incremental snapshot is
 * complete; its reconcile step follows, DESIGN 6a), or NULL; once per
 * table. One reference for the caller. *fresh: the table was fresh (see INITIAL
 * SNAPSHOT above) until its last chunk, so its reconcile step can delete nothing. */
evt_table *snap_inc_take_finished(snap_inc *si, bool *fresh);

/* A statement (DDL) ending at pos named db.table: if it was fresh, it is not
 * any more (its reconcile step runs after its last chunk), saved to the state
 * file once pos is committed (pos NULL: with the next progress saved). */
TB_MUST_USE tb_code snap_inc_table_changed(snap_inc *si, const char *db, const char *table, const tb_position *pos,
                                           tb_error *err);

/* The initial snapshot taken as chunks (snapshot.initial.method=chunked):
 * the queue becomes `tables` ("db.table", in order), progress starts from
 * nothing (a chunk in flight and unsaved progress are dropped: they belong
 * to a stream that is not followed any more) and the state, flagged
 * "initial", is written to the state file now, before the caller commits the
 * position streaming starts from. So once that position is stored, a
 * restart resumes the snapshot from its last saved chunk; a crash before it
 * takes the snapshot again from nothing. The last signal id is kept.
 * fresh[i] (fresh may be NULL: none): tables[i]'s topic holds no record now. */
TB_MUST_USE tb_code snap_inc_begin_initial(snap_inc *si, char *const *tables, const bool *fresh, size_t n,
                                           tb_error *err);
/* True while tables of an initial snapshot taken as chunks remain (also
 * after a restart that resumed it); false once its last table's last chunk
 * is released. */
bool snap_inc_initial(const snap_inc *si);

/* True when a snapshot of db_table that reads all of it from now on is still to come: the signal
 * with this id (from snap_inc_signal_id; 0: none) is not read yet, or db_table is queued and its
 * snapshot has not begun. A change committed now is then in the rows it sends. */
bool snap_inc_will_read(const snap_inc *si, const char *db_table, int64_t signal_id);

/* True while a table is queued or a chunk is in flight or unsaved. */
bool snap_inc_active(const snap_inc *si);
/* True when snap_inc_poll would read a chunk now (a table queued, no chunk in flight): the run
 * loop then asks its source without waiting, so the chunk is not held up by an idle source. */
bool snap_inc_wants_poll(const snap_inc *si);

/* Tests (builds with TB_TESTS only; elsewhere it does nothing): fn runs between the table's
 * description and its chunk's SELECT, where a statement of another session changing the table
 * races the chunk: in snap_inc_poll, and on the thread that reads the next window ahead
 * (snapshot.threads >= 2). */
void snap_inc_test_after_describe(snap_inc *si, void (*fn)(void *), void *opaque);
/* True for events of a `tributary_signal` table. */
bool snap_inc_is_signal_table(const evt_event *ev);

#endif
