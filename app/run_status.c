/*
 * run_status: the status file, /health and the run's metrics of `tributary
 * run` (app_status.h, app_health.h, app_metrics.h), from the run's state
 * and the sink's counters. Called by the loop about once a second and by
 * the sink while it waits for Kafka inside a call.
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

#define RUN_STATUS_EVERY_MS 1000
#define RUN_KAFKA_WAIT_MS 10000 /* messages waiting this long for an acknowledgement: "waiting for Kafka" */

/* The sink's counters; *reg_since and *reg_error: a send waiting for the schema registry
 * (Avro, sink_stats), 0 and NULL otherwise. */
static void run_sink_counts(run_ctx *r, uint64_t *acked, uint64_t *in_flight, int64_t *txn_wait, int64_t *reg_since,
                            const char **reg_error)
{
    *txn_wait = 0;
    *reg_since = 0;
    *reg_error = NULL;
    if (!r->sink) {
        *acked = r->events_sent;
        *in_flight = 0;
        return;
    }
    sink_stats st;
    sink_get_stats(r->sink, &st);
    *acked = st.acked;
    *in_flight = st.messages - st.acked;
    *txn_wait = st.waiting_since_ms;
    if (st.registry_down_since_ms > 0) {
        *reg_since = st.registry_down_since_ms;
        *reg_error = st.registry_error ? st.registry_error : "no answer";
    }
}



/* Every 10 s while a binlog source streams events: one INFO line with the
 * rate, the position and the lag (silent while idle). */
static void run_progress(run_ctx *r, int64_t now, int64_t lag_ms)
{
    if (!r->binlog || now - r->progress_ms < 10000)
        return;
    uint64_t n = r->events_sent - r->progress_sent;
    if (n > 0 && r->progress_ms > 0) {
        tb_buf b;
        tb_buf_init(&b, 0);
        const tb_position *p = binlog_position(r->binlog);
        if (p && p->kind != TB_POS_NONE)
            tb_position_format(p, &b);
        TB_INFO("run", "binlog: %" PRIu64 " events in %.1f s (%.0f events/s), position %s, lag %s%" PRId64 " ms", n,
                (double)(now - r->progress_ms) / 1000.0, (double)n * 1000.0 / (double)(now - r->progress_ms),
                b.len ? tb_buf_cstr(&b) : "-", lag_ms < 0 ? "unknown " : "", lag_ms < 0 ? (int64_t)0 : lag_ms);
        tb_buf_free(&b);
    }
    r->progress_ms = now;
    r->progress_sent = r->events_sent;
}

/* metrics.listen: the gauges, from the status record being written. */
static void run_metrics(run_ctx *r, const app_status *st, int64_t now, uint64_t in_flight)
{
    const char *unit = "bytes";
    int64_t wal_bytes = -1, wal_resets = -1;
    if (r->binlog && now - r->behind_ms >= 5000) {
        tb_error berr;
        r->behind_ms = now;
        if (binlog_behind_bytes(r->binlog, &r->behind, &berr) != TB_OK)
            r->behind = -1;
    } else if (r->sqlite) {
        sqlcap_stats ss;
        sqlcap_get_stats(r->sqlite, &ss);
        r->behind = (int64_t)ss.lag_frames;
        unit = "frames";
        wal_bytes = (int64_t)ss.wal_bytes;
        wal_resets = (int64_t)ss.generations;
    } else if (!r->binlog) {
        r->behind = -1;
    }
    app_metrics_run v = {
        .state = st->state,
        .error = st->error,
        .source_connected = st->source_down_since_ms == 0 && (r->binlog || r->sqlite),
        .lease_waiting = r->lease_waiting,
        .source_down_since_ms = st->source_down_since_ms,
        .kafka_waiting_since_ms = st->kafka_waiting_since_ms,
        .registry_down_since_ms = st->registry_down_since_ms,
        .registry_error = st->registry_error,
        .source_encrypted = st->source_encrypted > 0,
        .lag_ms = st->lag_ms,
        .behind_bytes = r->behind,
        .behind_unit = unit,
        .wal_bytes = wal_bytes,
        .wal_resets = wal_resets,
        .acked = st->events_total,
        .in_flight = in_flight,
        .reconnects = r->reconnects,
        .restarts = r->restarts,
        .producer_restarts = r->producer_restarts,
    };
    app_metrics_set_run(r->metrics, &v);
}

/* Since when Kafka has acknowledged nothing while messages wait for it (Unix ms
 * of the last acknowledgement, or of the first message waiting), once that is
 * RUN_KAFKA_WAIT_MS or more; else 0. A WARN when the wait begins and an INFO
 * when it ends: the connector waits (librdkafka retries), nothing is lost. */
static int64_t run_kafka_waiting(run_ctx *r, int64_t now, uint64_t acked, uint64_t in_flight, int64_t txn_wait)
{
    /* exactly.once: the end of a Kafka transaction waits (its coordinator or in-sync replicas are
     * down), every message of it perhaps acknowledged; the sink WARNs about it */
    if (txn_wait > 0 && now - txn_wait >= RUN_KAFKA_WAIT_MS)
        return txn_wait;
    if (in_flight == 0 || acked != r->ack_mark || r->ack_since_ms == 0) {
        if (r->kafka_waiting && (in_flight == 0 || acked != r->ack_mark))
            TB_INFO("run", "Kafka acknowledges writes again after %.1f s", (double)(now - r->ack_since_ms) / 1000.0);
        r->kafka_waiting = false;
        r->ack_mark = acked;
        r->ack_since_ms = in_flight ? now : 0;
        return 0;
    }
    if (now - r->ack_since_ms < RUN_KAFKA_WAIT_MS)
        return 0;
    if (!r->kafka_waiting)
        TB_WARN("run",
                "Kafka has acknowledged nothing for %.0f s, %" PRIu64 " messages waiting (brokers down, or fewer "
                "in-sync replicas than the topic's min.insync.replicas): waiting for it; nothing is lost, the "
                "position stays before them",
                (double)(now - r->ack_since_ms) / 1000.0, in_flight);
    r->kafka_waiting = true;
    return r->ack_since_ms;
}

const char RUN_SNAP_NONE[] = "none", RUN_SNAP_RUNNING[] = "running", RUN_SNAP_DONE[] = "done",
           RUN_SNAP_FAILED[] = "failed";

/* The status file: rewritten every RUN_STATUS_EVERY_MS, and at once when the
 * state changes. A streaming binlog source whose connection is down is
 * "reconnecting", its lag counted from the newest event sent or the last
 * moment it was known caught up, so it grows while the source is away. */
void run_write_status(run_ctx *r, const char *state, const char *error, bool force)
{
    int64_t down_since = 0;
    if (state != r->status_asked) { /* called at every turn of the run loop: compare text only on a change */
        r->status_asked = state;
        r->status_asked_streaming = strcmp(state, "streaming") == 0;
    }
    if (r->binlog && r->status_asked_streaming && !binlog_connected(r->binlog, &down_since))
        state = "reconnecting";
    if (state != r->status_state && (!r->status_state || strcmp(state, r->status_state) != 0))
        force = true;
    if (r->snapshot_state != r->status_snapshot &&
        (!r->snapshot_state || !r->status_snapshot || strcmp(r->snapshot_state, r->status_snapshot) != 0))
        force = true; /* a snapshot that begins, ends or fails is written at once */
    int64_t now = tb_wall_coarse_ms(); /* called once a loop turn: the cheap clock decides */
    if (!force && now - r->last_status_ms < RUN_STATUS_EVERY_MS)
        return;
    now = tb_wall_ms();
    double secs = (double)(now - r->last_status_ms) / 1000.0;
    uint64_t acked, in_flight;
    int64_t txn_wait, reg_since;
    const char *reg_error;
    run_sink_counts(r, &acked, &in_flight, &txn_wait, &reg_since, &reg_error);
    bool down = down_since > 0;
    int64_t kafka_waiting = run_kafka_waiting(r, now, acked, in_flight, txn_wait);
    app_status st = {
        .name = cfg_get_str(r->cfg, CFGK_NAME),
        .state = state,
        .position = r->committed.kind != TB_POS_NONE ? &r->committed : NULL,
        .lag_ms = r->last_commit_ts_ms > 0 ? now - r->last_commit_ts_ms : -1,
        .events_behind = (int64_t)in_flight,
        .events_total = acked,
        .events_per_sec = r->last_status_ms > 0 && secs > 0 ? (double)(acked - r->status_acked) / secs : 0.0,
        .snapshot_state = r->snapshot_state,
        .snapshot_rows = r->snapshot_rows,
        .error = error,
        .source_down_since_ms = down_since,
        .kafka_waiting_since_ms = kafka_waiting,
        .registry_down_since_ms = reg_since,
        .registry_error = reg_error,
        .source_encrypted = r->binlog && !down ? (binlog_encrypted(r->binlog) ? 1 : -1) : 0,
        .started_ms = r->started_ms,
    };
    if (!down && r->idle && st.events_behind == 0) {
        r->caught_up_ms = now;
        if (r->last_commit_ts_ms > 0)
            st.lag_ms = 0;
    }
    if (down) {
        int64_t since = r->last_commit_ts_ms > r->caught_up_ms ? r->last_commit_ts_ms : r->caught_up_ms;
        st.lag_ms = since > 0 ? now - since : -1;
    }
    /* one judgement of health for the status file and /health (app_health) */
    if (r->sink && sink_stats_json(r->sink, &r->kstats)) {
        r->kstats_ms = now;
        if (r->metrics)
            app_metrics_set_kafka_stats(r->metrics, r->kstats.data, r->kstats.len);
    }
    int64_t interval = cfg_is_set(r->cfg, "kafka.statistics.interval.ms")
                           ? atoll(cfg_get_str(r->cfg, "kafka.statistics.interval.ms")) : 0;
    app_health health;
    app_health_in hin = {
        .state = state,
        .error = error,
        .source_connected = !down && (r->binlog || r->sqlite),
        .source_down_since_ms = down_since,
        .kafka_unreachable = app_health_kafka_unreachable(r->kstats.data, r->kstats.len, now - r->kstats_ms,
                                                          app_health_stats_stale_ms(interval), !r->lease_waiting),
        .kafka_waiting_since_ms = kafka_waiting,
        .registry_error = reg_error,
        .in_flight = in_flight,
        .lease_waiting = r->lease_waiting,
    };
    app_health_run(&health, &hin, now);
    st.health = &health;
    const char *mode = cfg_get_str(r->cfg, CFGK_SOURCE_SQLITE_MODE);
    if (r->sqlite && !(mode && strcmp(mode, "trigger") == 0)) {
        sqlcap_stats ss;
        sqlcap_get_stats(r->sqlite, &ss);
        st.sqlite_wal = true;
        st.wal_bytes = ss.wal_bytes;
        st.wal_largest_bytes = ss.wal_max_bytes;
        st.wal_lag_frames = ss.lag_frames;
        st.wal_resets = ss.generations;
    }
    tb_error err;
    if (app_status_write(tb_buf_cstr(&r->status_path), &st, &err) != TB_OK)
        TB_WARN("run", "status file: %s", err.msg);
    if (down && !r->source_was_down)
        r->reconnects++;
    r->source_was_down = down;
    if (r->metrics)
        run_metrics(r, &st, now, in_flight);
    /* What a second SIGINT/SIGTERM leaves behind (app_status_last_words). */
    tb_buf lw;
    tb_buf_init(&lw, 0);
    st.state = "failed";
    st.error = "ended by a second SIGINT/SIGTERM before the final flush (what Kafka acknowledged is committed; "
               "the rest is sent again after a restart)";
    app_health lwh;
    app_health_in lwin = {.state = st.state, .error = st.error, .source_down_since_ms = down_since};
    app_health_run(&lwh, &lwin, now);
    st.health = &lwh;
    if (app_status_json(&st, &lw, &err) == TB_OK)
        app_status_arm_last_words(tb_buf_cstr(&r->status_path), lw.data, lw.len);
    tb_buf_free(&lw);
    r->status_state = state;
    r->status_snapshot = r->snapshot_state;
    r->last_status_ms = now;
    r->status_acked = acked;
    if (strcmp(state, "streaming") == 0)
        run_progress(r, now, st.lag_ms);
}

