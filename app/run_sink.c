/*
 * run_sink: `tributary run`'s side of the sink (sinks/sink.h): every event
 * through the lease check, the metrics and the sink; the end of each source
 * transaction; commits of the delivered position, told to the source; sink
 * errors sorted (an aborted Kafka transaction: read the source again). The
 * bottom layer of the run's files: run_pipe.c, run_stmt.c and run_keys.c
 * send through it, and it calls none of them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_cast.h"
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


/* The lease check right before each message goes to the producer (sink_hooks.gate). */
static tb_code run_gate(void *opaque, tb_error *err)
{
    return run_lease_check(opaque, err);
}

/* The sink waits for Kafka inside a call: the status file, /health and the metrics go on. */
static void run_wait(void *opaque)
{
    run_ctx *r = opaque;
    run_write_status(r, r->status_state ? r->status_state : "streaming", NULL, false);
}

/* metrics.listen: the counter slot of e's table (a held reference per cached
 * table descriptor, so a pointer compare finds it); -1 without a table. */
/* The sink `sink` names, with the lease check as its gate and the status
 * file kept current while it waits. */
tb_code run_sink_open(run_ctx *r, sink **out, tb_error *err)
{
    sink_hooks hooks = {.gate = run_gate, .wait = run_wait, .opaque = r, .stop = &app_stop_requested};
    return sink_open(r->cfg, &hooks, out, err);
}

int run_slot(run_ctx *r, const evt_event *e)
{
    const evt_table *t = evt_event_table(e);
    if (!t)
        return -1;
    size_t n = sizeof(r->mcache) / sizeof(r->mcache[0]);
    for (size_t i = 0; i < n; i++)
        if (r->mcache[i].t == t)
            return r->mcache[i].slot;
    size_t i = r->mnext++ % n;
    evt_table_unref(r->mcache[i].t);
    r->mcache[i].t = evt_table_ref(TB_UNCONST(t)); /* a reference count only */
    r->mcache[i].slot = app_metrics_table(r->metrics, evt_table_db(t), evt_table_name(t));
    return r->mcache[i].slot;
}

tb_code run_sink_send(run_ctx *r, const evt_event *e, tb_error *err)
{
    tb_code lrc = run_lease_check(r, err);
    if (lrc != TB_OK)
        return lrc;
    r->events_sent++;
    int64_t ts = evt_event_commit_ts_ms(e);
    if (ts > 0)
        r->last_commit_ts_ms = ts;
    sink_stats st;
    uint64_t oversized = 0;
    if (r->metrics) {
        sink_get_stats(r->sink, &st);
        oversized = st.oversized;
    }
    tb_code rc = sink_send(r->sink, e, err);
    if (r->metrics && rc == TB_OK) { /* an event oversize.policy took is not counted as sent */
        sink_get_stats(r->sink, &st);
        int slot = run_slot(r, e);
        if (st.oversized == oversized)
            app_metrics_count(r->metrics, slot, evt_event_op(e));
        else
            app_metrics_skip(r->metrics, slot,
                             strcmp(cfg_get_str(r->cfg, CFGK_OVERSIZE_POLICY), "dlq") == 0 ? APP_METRICS_SKIP_DLQ
                                                                                         : APP_METRICS_SKIP_OVERSIZE);
    }
    return rc;
}

/* A source transaction ended; pos is where to resume after it. */
tb_code run_sink_end_tx(run_ctx *r, const tb_position *pos, tb_error *err)
{
    tb_code rc = tb_position_copy(&r->last_end, pos);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    return sink_end_tx(r->sink, pos, err);
}

/* Commit the delivered position to the offsets store, then tell the source. */
tb_code run_sink_commit(run_ctx *r, bool force, tb_error *err)
{
    tb_code rc = run_lease_check(r, err);
    if (rc != TB_OK)
        return rc;
    sink_poll(r->sink, 0);
    if (!force && !sink_commit_due(r->sink))
        return TB_OK;
    /* While streaming a binlog, do not wait for the offsets record's
     * acknowledgement (the loop would stall behind the queued batches);
     * SQLite capture must know the position is stored (sqlcap_ack), and
     * a forced commit (shutdown) waits. */
    /* a snapshot queued since the state file was written goes into it first, as pending
     * at its position: the file is written after the commit too (below), and a kill -9
     * between the two must not lose it */
    if (r->inc && (rc = snap_inc_before_commit(r->inc, err)) != TB_OK)
        return rc;
    if ((rc = sink_commit(r->sink, force || r->sqlite, err)) != TB_OK)
        return rc;
    const tb_position *c = sink_committable(r->sink);
    if (c->kind != TB_POS_NONE && !tb_position_equal(c, &r->committed)) {
        if (tb_position_copy(&r->committed, c) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (r->sqlite)
            rc = sqlcap_ack(r->sqlite, &r->committed, err);
    }
    /* The incremental snapshot's state saved for positions the offsets now pass (a queued
     * snapshot, a finished chunk), at every commit: also the last one of a run that stops,
     * after which the run loop no longer calls it (the position would otherwise be past a
     * signal whose queued snapshot the state file lacks, and the snapshot lost). */
    if (rc == TB_OK && r->inc && r->committed.kind != TB_POS_NONE)
        rc = snap_inc_committed(r->inc, &r->committed, err);
    return rc;
}

/* Messages delivered and messages still in flight. */
bool run_sink_aborted(run_ctx *r)
{
    if (!r->sink)
        return false;
    sink_stats st;
    sink_get_stats(r->sink, &st);
    if (st.aborts + st.restarts == r->aborts_seen)
        return false;
    r->aborts_seen = st.aborts + st.restarts;
    r->restart = true;
    return true;
}

/* Sorts a sink error: TB_OK to go on (a retriable commit error: the position
 * is written again at the next commit), else rc (r->restart set when the
 * source must be re-read). */
tb_code run_sink_error(run_ctx *r, tb_code rc, bool from_commit, tb_error *err)
{
    if (rc == TB_OK || run_sink_aborted(r))
        return rc;
    if (from_commit && rc == TB_ERR_KAFKA && err->retriable) {
        TB_WARN("run", "offsets commit failed, trying again at the next interval: %s", err->msg);
        tb_error_clear(err);
        return TB_OK;
    }
    return rc;
}

tb_code run_send(run_ctx *r, const evt_event *e, tb_error *err)
{
    tb_code rc = run_sink_error(r, run_txmeta_event(r, e, err), false, err);
    return rc != TB_OK ? rc : run_sink_error(r, run_sink_send(r, e, err), false, err);
}

tb_code run_send_truncate(run_ctx *r, const evt_event *e, tb_error *err)
{
    tb_code rc = run_lease_check(r, err);
    if (rc != TB_OK || !sink_has(r->sink, SINK_CAP_TOPICS))
        return rc;
    return run_sink_error(r, sink_send_truncate(r->sink, e, err), false, err);
}

tb_code run_announce(run_ctx *r, evt_table *t, tb_error *err)
{
    tb_code rc = run_lease_check(r, err);
    if (rc != TB_OK)
        return rc;
    return run_sink_error(r, sink_announce(r->sink, t, err), false, err);
}

tb_code run_end_tx(run_ctx *r, const tb_position *pos, tb_error *err)
{
    tb_code rc = run_sink_error(r, run_txmeta_end(r, err), false, err);
    return rc != TB_OK ? rc : run_sink_error(r, run_sink_end_tx(r, pos, err), false, err);
}

