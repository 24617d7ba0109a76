/*
 * run_pipe: the stream loop of `tributary run` (run_stream), from the source
 * to the sink through run_sink.c: the table filter, keyless tables,
 * incremental snapshot chunks, statements (run_stmt.c) and the reconcile
 * steps (run_keys.c) on the way; the restart after an aborted Kafka
 * transaction. cmd_run.c opens the source and the sink and calls it; the
 * status file is run_status.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "app_health.h"
#include "app_run.h"
#include "app_status.h"
#include "binlog.h"
#include "evt.h"
#include "sink.h"
#include "snap.h"
#include "snap_incremental.h"
#include "sqlcap.h"
#include "tb_clock.h"
#include "tb_log.h"

#define RUN_STOP_TX_MS 5000

/* Incremental snapshot (docs/snapshot.md, run loop contract): every binlog
 * event, before filtering, goes to snap_inc_observe; chunk rows it releases
 * belong to the event's transaction and are sent before it. */
static tb_code run_incremental(run_ctx *r, const evt_event *ev, tb_error *err)
{
    tb_code rc = snap_inc_observe(r->inc, ev, err);
    while (rc == TB_OK) {
        evt_event *row = NULL;
        if ((rc = snap_inc_next_event(r->inc, &row, err)) != TB_OK || !row)
            break;
        r->snapshot_rows++;
        if (run_keep(r, row))
            rc = run_sink_error(r, run_sink_send(r, row, err), false, err);
    }
    bool fresh = false;
    evt_table *done = rc == TB_OK ? snap_inc_take_finished(r->inc, &fresh) : NULL;
    if (done && fresh) {
        TB_INFO("run", "%s.%s: no reconcile after the snapshot: its topic held no record before it, and only it "
                       "and the stream wrote it since",
                evt_table_db(done), evt_table_name(done));
    } else if (done && cfg_filter_match(&r->filter, evt_table_db(done), evt_table_name(done))) {
        /* its last chunk is out: the reconcile step, in the high watermark's transaction */
        run_keys_at at = {.pos = evt_event_position(ev),
                          .conn = evt_event_connector(ev),
                          .ts_ms = evt_event_commit_ts_ms(ev),
                          .what = "incremental snapshot"};
        rc = run_sink_error(r, run_reconcile_mysql(r, evt_table_db(done), evt_table_name(done), &at, err), false, err);
    }
    evt_table_unref(done);
    return rc;
}

/* SQLite: the reconcile step due after a gap or a snapshot (DESIGN 6a), at
 * pos, in the transaction ending there. */
static tb_code run_sqlite_reconcile(run_ctx *r, const tb_position *pos, tb_error *err)
{
    run_keys_at at = {.pos = pos, .conn = EVT_CONN_SQLITE, .ts_ms = tb_wall_ms(), .what = r->sqlite_reconcile};
    r->sqlite_reconcile = NULL;
    return run_sink_error(r, run_reconcile_sqlite(r, &at, err), false, err);
}

/* Starting "now" (nothing stored, no snapshot): store the source's start
 * position before reading anything, so that a crash before the first commit
 * resumes from there instead of from a later "now" (which would lose the
 * changes in between). */
tb_code run_pin_start(run_ctx *r, tb_error *err)
{
    const tb_position *p = r->binlog ? binlog_position(r->binlog) : sqlcap_position(r->sqlite);
    if (!p || p->kind == TB_POS_NONE)
        return TB_OK;
    tb_code rc = run_sink_error(r, run_sink_end_tx(r, p, err), false, err);
    if (rc == TB_OK)
        rc = run_sink_error(r, run_sink_commit(r, true, err), true, err);
    return rc;
}

static tb_code run_source_next(run_ctx *r, int timeout_ms, evt_event **ev, tb_error *err)
{
    return r->binlog ? binlog_next(r->binlog, timeout_ms, ev, err) : sqlcap_next(r->sqlite, timeout_ms, ev, err);
}

/* The next chunk of an incremental snapshot. A chunk that failed on a
 * connection error (the source restarted or went away for a moment) is tried
 * again after a pause that doubles up to 30 s, with a WARN, while the binlog
 * stream goes on (its reader has its own reconnect rules): the snapshot's
 * state is unchanged by a failed chunk. Other errors stop the run. */
#define RUN_INC_RETRY_MAX_MS 30000

/* Whether a failed chunk's pause is still running. */
static bool run_inc_pausing(const run_ctx *r)
{
    return r->inc_retry_ms && tb_mono_ms() < r->inc_retry_ms;
}

static tb_code run_inc_poll(run_ctx *r, tb_error *err)
{
    if (run_inc_pausing(r))
        return TB_OK;
    tb_code rc = snap_inc_poll(r->inc, err);
    if (rc == TB_OK) {
        if (r->inc_failures)
            TB_INFO("run", "incremental snapshot: the source answers again; chunks go on");
        r->inc_failures = 0;
        r->inc_retry_ms = 0;
        return TB_OK;
    }
    if (!err->retriable)
        return rc;
    int64_t wait = 500;
    for (unsigned i = 0; i < r->inc_failures && wait < RUN_INC_RETRY_MAX_MS; i++)
        wait *= 2;
    if (wait > RUN_INC_RETRY_MAX_MS)
        wait = RUN_INC_RETRY_MAX_MS;
    r->inc_failures++;
    r->inc_retry_ms = tb_mono_ms() + wait;
    TB_WARN("run", "incremental snapshot: a chunk failed (%s); trying it again in %lld ms", err->msg, (long long)wait);
    tb_error_clear(err);
    return TB_OK;
}

/* Stream from an open source until stopped or failed. A stop request lets an
 * unfinished source transaction end first (at most RUN_STOP_TX_MS), so that
 * the position committed at shutdown covers everything sent. */
tb_code run_stream(run_ctx *r, tb_error *err)
{
    tb_code rc = TB_OK;
    int64_t stop_deadline = 0;
    r->idle = false;
    for (;;) {
        if (app_stop_requested) {
            if (!r->in_tx)
                break;
            if (stop_deadline == 0)
                stop_deadline = tb_wall_ms() + RUN_STOP_TX_MS;
            else if (tb_wall_ms() >= stop_deadline) {
                TB_WARN("run", "stopping inside a source transaction; it is sent again after the restart");
                break;
            }
        }
        evt_event *ev = NULL;
        /* Messages the sink holds go to Kafka before waiting for the source:
         * first ask the source without waiting; when it has nothing, push them
         * (sent at once, not after linger.ms; their acknowledgements awaited up
         * to RUN_PUSH_MS), then wait. The sink looks at what it holds only
         * then: librdkafka's count takes its locks. With a chunk of an
         * incremental snapshot to read (run_inc_poll below) there is no wait:
         * they are only handed over, and linger.ms batches them with the chunk's. */
        int wait = r->inc && snap_inc_wants_poll(r->inc) && !run_inc_pausing(r) ? 0 : RUN_POLL_MS;
        rc = run_source_next(r, 0, &ev, err);
        if (rc == TB_OK && !ev) {
            if (wait == 0)
                sink_kick(r->sink);
            else {
                sink_push(r->sink, RUN_PUSH_MS);
                rc = run_source_next(r, wait, &ev, err);
            }
        }
        if (rc != TB_OK)
            return rc;
        if (ev && r->inc && (rc = run_incremental(r, ev, err)) != TB_OK)
            return rc;
        if (ev) {
            r->idle = false;
            if (evt_event_snapshot(ev) != EVT_SNAPSHOT_FALSE) {
                r->snapshot_state = evt_event_snapshot(ev) == EVT_SNAPSHOT_LAST ? RUN_SNAP_DONE : RUN_SNAP_RUNNING;
                r->snapshot_rows++;
            }
            if ((rc = run_fk_row(r, ev, err)) != TB_OK)
                return rc;
            if (!run_keep(r, ev)) {
                r->events_filtered++;
            } else if (run_keyless(r, ev)) {
                /* refused: not a change of a captured table */
            } else if (evt_event_partial(ev) && !r->partial_images_ok) {
                return run_partial_image(ev, err);
            } else if (evt_table_dropped(evt_event_table(ev))) {
                if ((rc = run_on_dropped(r, ev, err)) != TB_OK) /* a table gone, not a row change */
                    return rc;
            } else if (!evt_event_error(ev) && !evt_event_has_image(ev, EVT_BEFORE) &&
                       !evt_event_has_image(ev, EVT_AFTER)) {
                /* a table that arrived empty (sqlcap_opts.new_table_events): its schema record now */
                if ((rc = run_announce(r, evt_event_table(ev), err)) != TB_OK)
                    return rc;
            } else {
                if ((rc = run_sink_error(r, run_txmeta_event(r, ev, err), false, err)) != TB_OK)
                    return rc;
                if ((rc = run_sink_error(r, run_sink_send(r, ev, err), false, err)) != TB_OK)
                    return rc;
            }
            r->in_tx = !evt_event_last_in_tx(ev);
            if (!r->in_tx && r->sqlite_reconcile && (rc = run_sqlite_reconcile(r, evt_event_position(ev), err)) != TB_OK)
                return rc;
            if (!r->in_tx && (rc = run_fk_end_tx(r, err)) != TB_OK)
                return rc;
            if (!r->in_tx && ((rc = run_sink_error(r, run_txmeta_end(r, err), false, err)) != TB_OK ||
                              (rc = run_sink_error(r, run_sink_end_tx(r, evt_event_position(ev), err), false, err)) != TB_OK))
                return rc;
        } else {
            /* Idle: a heartbeat or a skipped transaction may have moved the
             * source; every heartbeat.interval.ms (0 = never) that position
             * goes to the sink as an empty transaction, to be committed. */
            r->idle = true;
            int64_t hb = cfg_get_int(r->cfg, CFGK_HEARTBEAT_INTERVAL_MS), now = tb_wall_ms();
            const tb_position *p = r->binlog ? binlog_position(r->binlog) : sqlcap_position(r->sqlite);
            if (r->sqlite_reconcile && !r->in_tx && p && p->kind != TB_POS_NONE) {
                /* a gap or snapshot that sent nothing: its reconcile step is a transaction of its own */
                if ((rc = run_sqlite_reconcile(r, p, err)) != TB_OK ||
                    (rc = run_sink_error(r, run_sink_end_tx(r, p, err), false, err)) != TB_OK)
                    return rc;
            }
            if (hb > 0 && now - r->last_heartbeat_ms >= hb && !r->in_tx && p && p->kind != TB_POS_NONE &&
                !tb_position_equal(p, &r->last_end)) {
                r->last_heartbeat_ms = now;
                if ((rc = run_sink_error(r, run_sink_end_tx(r, p, err), false, err)) != TB_OK)
                    return rc;
            }
        }
        if (!r->in_tx && (rc = run_sink_error(r, run_sink_commit(r, false, err), true, err)) != TB_OK)
            return rc;
        if (r->inc && snap_inc_active(r->inc)) {
            if (r->committed.kind != TB_POS_NONE && (rc = snap_inc_committed(r->inc, &r->committed, err)) != TB_OK)
                return rc;
            if ((rc = run_inc_poll(r, err)) != TB_OK)
                return rc;
        }
        if (r->snapshot_state == RUN_SNAP_RUNNING && r->inc && !snap_inc_initial(r->inc)) {
            r->snapshot_state = RUN_SNAP_DONE; /* a chunked initial snapshot released its last row */
            TB_INFO("run", "snapshot done: %" PRIu64 " rows", r->snapshot_rows);
        }
        run_write_status(r, "streaming", NULL, false);
    }
    return TB_OK;
}

/* Where to read the source from after an aborted Kafka transaction or a
 * producer replaced (sink_restart): the position the sink committed, else
 * (nothing committed in this run) the one we started from. Closes the source. */
tb_code run_prepare_restart(run_ctx *r, tb_position *resume, tb_error *err)
{
    tb_error serr;
    if (sink_restart(r->sink, &serr) != TB_OK) {
        *err = serr;
        return serr.code;
    }
    binlog_close(r->binlog);
    r->binlog = NULL;
    sqlcap_close(r->sqlite);
    r->sqlite = NULL;
    r->restart = false;
    r->in_tx = false;
    r->txm_open = false;
    sink_stats st;
    sink_get_stats(r->sink, &st);
    if (st.restarts != r->producer_restarts)
        r->producer_restarts = st.restarts; /* the producer was replaced */
    else
        r->restarts++; /* a Kafka transaction was aborted */
    const tb_position *c = sink_committable(r->sink);
    if (c->kind != TB_POS_NONE && tb_position_copy(resume, c) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_position_free(&r->last_end);
    tb_buf b;
    tb_buf_init(&b, 0);
    if (resume->kind != TB_POS_NONE)
        tb_position_format(resume, &b);
    TB_WARN("run", "%s; reading the source again from %s", err->msg,
            resume->kind != TB_POS_NONE ? tb_buf_cstr(&b) : "the start (nothing committed yet)");
    tb_buf_free(&b);
    tb_error_clear(err);
    return TB_OK;
}


