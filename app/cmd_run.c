/*
 * tributary run: snapshot (per snapshot.mode), then stream changes to the sink.
 *
 * THE LOOP
 *   1. Open the sink (Kafka, or stdout) and read the stored position.
 *   2. Decide on a snapshot (snap_decide). MySQL/MariaDB: snapshot/ reads a
 *      consistent view and gives the hand-off position; SQLite: capture/sqlite
 *      serves the snapshot rows from its read transaction, then streams.
 *   3. Stream: every event of a table that passes tables.include/exclude
 *      goes to the sink; the event flagged last_in_tx closes a source
 *      transaction (sink end_tx with the position after it; also for a
 *      transaction whose tables were all filtered out). When the source is
 *      idle (timeout or server heartbeat) and its position moved, an empty
 *      transaction carries the new position every heartbeat.interval.ms, so
 *      it advances on idle tables too.
 *      exactly.once: an aborted Kafka transaction (sink_stats.aborts) closes
 *      the source and reads it again from sink_committable().
 *      Incremental snapshots (binlog): every event goes to snap_inc_observe
 *      first; released chunk rows are sent before it (docs/snapshot.md).
 *      Every resnapshot of a table ends with its reconcile step (run_keys.c,
 *      DESIGN 6a): the keys its topic holds that the table no longer has
 *      are deleted, in the resnapshot's source transaction.
 *      A binlog the server no longer has (error 1236, binlog_position_gone):
 *      snapshot.mode=when_needed snapshots again, other modes stop.
 *   4. Positions are committed only once Kafka acknowledged everything before
 *      them (the sink's tracker), every offsets.commit.interval.ms and at
 *      shutdown. SQLite capture is told (sqlcap_ack) after each commit.
 *   5. SIGINT/SIGTERM: stop reading, flush, commit, exit 0.
 * A status file (app_status.h) is rewritten about once a second.
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
#include "ksink.h"
#include "snap.h"
#include "snap_incremental.h"
#include "sqlcap.h"
#include "sink.h"
#include "tb_log.h"

#define RUN_POLL_MS 200
#define RUN_FLUSH_MS 60000
#define RUN_STATUS_EVERY_MS 1000
#define RUN_KAFKA_WAIT_MS 10000 /* messages waiting this long for an acknowledgement: "waiting for Kafka" */
#define RUN_STOP_TX_MS 5000
#define RUN_METRICS_STATS_MS "5000" /* kafka.statistics.interval.ms with metrics.listen */

/* ------------------------------------------------------------ the sink */

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
static int run_slot(run_ctx *r, const evt_event *e)
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
    r->mcache[i].t = evt_table_ref((evt_table *)t);
    r->mcache[i].slot = app_metrics_table(r->metrics, evt_table_db(t), evt_table_name(t));
    return r->mcache[i].slot;
}

static tb_code run_sink_send(run_ctx *r, const evt_event *e, tb_error *err)
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
                             strcmp(cfg_get_str(r->cfg, "oversize.policy"), "dlq") == 0 ? APP_METRICS_SKIP_DLQ
                                                                                         : APP_METRICS_SKIP_OVERSIZE);
    }
    return rc;
}

/* A source transaction ended; pos is where to resume after it. */
static tb_code run_sink_end_tx(run_ctx *r, const tb_position *pos, tb_error *err)
{
    tb_code rc = tb_position_copy(&r->last_end, pos);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    return sink_end_tx(r->sink, pos, err);
}

/* Commit the delivered position to the offsets store, then tell the source. */
static tb_code run_sink_commit(run_ctx *r, bool force, tb_error *err)
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
    if ((rc = sink_commit(r->sink, force || r->sqlite, err)) != TB_OK)
        return rc;
    const tb_position *c = sink_committable(r->sink);
    if (c->kind != TB_POS_NONE && !tb_position_equal(c, &r->committed)) {
        if (tb_position_copy(&r->committed, c) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (r->sqlite)
            rc = sqlcap_ack(r->sqlite, &r->committed, err);
    }
    return rc;
}

/* Messages delivered and messages still in flight. */
static void run_sink_counts(run_ctx *r, uint64_t *acked, uint64_t *in_flight)
{
    if (!r->sink) {
        *acked = r->events_sent;
        *in_flight = 0;
        return;
    }
    sink_stats st;
    sink_get_stats(r->sink, &st);
    *acked = st.acked;
    *in_flight = st.messages - st.acked;
}

/* ------------------------------------------------------------ status */

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
    };
    app_metrics_set_run(r->metrics, &v);
}

/* Since when Kafka has acknowledged nothing while messages wait for it (Unix ms
 * of the last acknowledgement, or of the first message waiting), once that is
 * RUN_KAFKA_WAIT_MS or more; else 0. A WARN when the wait begins and an INFO
 * when it ends: the connector waits (librdkafka retries), nothing is lost. */
static int64_t run_kafka_waiting(run_ctx *r, int64_t now, uint64_t acked, uint64_t in_flight)
{
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

/* The status file: rewritten every RUN_STATUS_EVERY_MS, and at once when the
 * state changes. A streaming binlog source whose connection is down is
 * "reconnecting", its lag counted from the newest event sent or the last
 * moment it was known caught up, so it grows while the source is away. */
void run_write_status(run_ctx *r, const char *state, const char *error, bool force)
{
    int64_t down_since = 0;
    if (r->binlog && strcmp(state, "streaming") == 0 && !binlog_connected(r->binlog, &down_since))
        state = "reconnecting";
    if (state != r->status_state && (!r->status_state || strcmp(state, r->status_state) != 0))
        force = true;
    int64_t now = tb_wall_ms();
    if (!force && now - r->last_status_ms < RUN_STATUS_EVERY_MS)
        return;
    double secs = (double)(now - r->last_status_ms) / 1000.0;
    uint64_t acked, in_flight;
    run_sink_counts(r, &acked, &in_flight);
    bool down = down_since > 0;
    int64_t kafka_waiting = run_kafka_waiting(r, now, acked, in_flight);
    app_status st = {
        .name = cfg_get_str(r->cfg, "name"),
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
        .in_flight = in_flight,
        .lease_waiting = r->lease_waiting,
    };
    app_health_run(&health, &hin, now);
    st.health = &health;
    const char *mode = cfg_get_str(r->cfg, "source.sqlite.mode");
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
    r->last_status_ms = now;
    r->status_acked = acked;
    if (strcmp(state, "streaming") == 0)
        run_progress(r, now, st.lag_ms);
}

/* ------------------------------------------------------------ phases */

/* metrics.listen: a table's row count or estimate at the start of its snapshot
 * (tributary_snapshot_rows_estimated). */
static void run_snap_estimate(const char *db, const char *table, int64_t rows, void *opaque)
{
    run_ctx *r = opaque;
    app_metrics_set_estimate(r->metrics, app_metrics_table(r->metrics, db, table), rows);
}

static tb_code run_sink_error(run_ctx *r, tb_code rc, bool from_commit, tb_error *err);

/* MySQL/MariaDB snapshot through snapshot/; sets *hand_off. */
static tb_code run_mysql_snapshot(run_ctx *r, tb_position *hand_off, tb_error *err)
{
    snap *s = NULL;
    run_snapkeys sk;
    run_snapkeys_init(&sk);
    tb_code rc = snap_open(r->cfg, &s, err);
    if (rc != TB_OK)
        goto out;
    r->snapshot_state = "running";
    r->in_tx = true; /* the snapshot's rows end with the hand-off position */
    if (r->metrics) { /* information_schema.TABLES.TABLE_ROWS */
        const snap_table_progress *t;
        size_t n = snap_progress(s, &t);
        for (size_t i = 0; i < n; i++)
            run_snap_estimate(t[i].db, t[i].table, (int64_t)t[i].rows_estimated, r);
    }
    TB_INFO("run", "snapshot started");
    evt_connector conn = EVT_CONN_MYSQL;
    for (;;) {
        evt_event *ev = NULL;
        rc = snap_next(s, &ev, err);
        if (rc != TB_OK || !ev)
            break;
        conn = evt_event_connector(ev);
        if ((rc = run_sink_send(r, ev, err)) != TB_OK || (rc = run_snapkeys_row(r, &sk, ev, err)) != TB_OK)
            break;
        r->snapshot_rows++;
        sink_poll(r->sink, 0);
        run_write_status(r, "snapshot", NULL, false);
        if (app_stop_requested) {
            rc = tb_error_set(err, TB_ERR_STOPPED, false, "stopped during the snapshot; it starts again next time");
            break;
        }
    }
    if (rc != TB_OK)
        goto out;
    if ((rc = tb_position_copy(hand_off, snap_position(s))) != TB_OK)
        goto out;
    {
        /* the reconcile steps: keys the topics hold that the tables no longer have */
        const snap_table_progress *tp;
        size_t n = snap_progress(s, &tp);
        const char **dbs = calloc(n ? n : 1, sizeof(*dbs)), **names = calloc(n ? n : 1, sizeof(*names));
        for (size_t i = 0; dbs && names && i < n; i++) {
            dbs[i] = tp[i].db;
            names[i] = tp[i].table;
        }
        rc = dbs && names ? run_snapkeys_end(r, &sk, dbs, names, n, hand_off, conn, err)
                          : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        free(dbs);
        free(names);
        if ((rc = run_sink_error(r, rc, false, err)) != TB_OK)
            goto out;
    }
    rc = run_sink_end_tx(r, hand_off, err);
    r->in_tx = false;
    r->snapshot_state = "done";
    TB_INFO("run", "snapshot done: %" PRIu64 " rows", r->snapshot_rows);
out:
    if (rc != TB_OK && rc != TB_ERR_STOPPED)
        r->snapshot_state = "failed";
    run_snapkeys_free(&sk);
    snap_close(s);
    return rc;
}

/* After a sink error: true when the Kafka transaction was aborted
 * (exactly.once) and the source must be re-read from sink_committable();
 * sets r->restart. */
static bool run_sink_aborted(run_ctx *r)
{
    if (!r->sink)
        return false;
    sink_stats st;
    sink_get_stats(r->sink, &st);
    if (st.aborts == r->aborts_seen)
        return false;
    r->aborts_seen = st.aborts;
    r->restart = true;
    return true;
}

/* Sorts a sink error: TB_OK to go on (a retriable commit error: the position
 * is written again at the next commit), else rc (r->restart set when the
 * source must be re-read). */
static tb_code run_sink_error(run_ctx *r, tb_code rc, bool from_commit, tb_error *err)
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

/* tables.include / tables.exclude (and never the system schemas or the
 * signalling table): whether ev's table is captured. The source readers
 * deliver every table; the filter applies here, per table descriptor. */
static bool run_keep(run_ctx *r, const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    if (!t)
        return true;
    const char *db = evt_table_db(t), *name = evt_table_name(t);
    size_t dl = strlen(db), nl = strlen(name);
    size_t n = sizeof(r->filter_cache) / sizeof(r->filter_cache[0]);
    bool cacheable = dl + nl + 2 <= sizeof(r->filter_cache[0].name);
    for (size_t i = 0; cacheable && i < n; i++) {
        const char *c = r->filter_cache[i].name;
        if (r->filter_cache[i].t == t && strcmp(c, db) == 0 && strcmp(c + dl + 1, name) == 0)
            return r->filter_cache[i].keep;
    }
    bool keep = snap_filter_match(&r->filter, db, name);
    if (cacheable) {
        size_t slot = r->filter_next++ % n;
        r->filter_cache[slot].t = t;
        memcpy(r->filter_cache[slot].name, db, dl + 1);
        memcpy(r->filter_cache[slot].name + dl + 1, name, nl + 1);
        r->filter_cache[slot].keep = keep;
    }
    return keep;
}

/* A captured MySQL/MariaDB table without a key (no primary key and no
 * key.columns.<db>.<table>), as a table created while streaming can be: its
 * rows would have no key on a compacted topic. It is refused as the start
 * refuses it (snap_schema.c), by name with the fix, without stopping the
 * other tables: an ERROR once per table, its events counted
 * (tributary_events_skipped_total, reason no_key) and not sent. A MariaDB
 * SEQUENCE (keyless too) is not captured: an INFO once, its events counted
 * under reason sequence (the snapshot lists base and system-versioned tables
 * only, so its state never reaches a topic). */
/* The slot of db.name in r->keyless (key "db\1name"), added when missing; NULL when out of memory. */
static void **run_keyless_slot(run_ctx *r, const char *db, const char *name)
{
    size_t dl = strlen(db), nl = strlen(name);
    char *k = malloc(dl + nl + 2);
    void **v = NULL;
    if (k) {
        memcpy(k, db, dl);
        k[dl] = 1;
        memcpy(k + dl + 1, name, nl + 1);
        if (tb_hmap_put(&r->keyless, k, dl + nl + 1, &v) != TB_OK)
            v = NULL;
    }
    free(k);
    return v;
}

bool run_keyless_mark(run_ctx *r, const char *db, const char *table, void *what)
{
    void **v = run_keyless_slot(r, db, table);
    if (v)
        *v = what;
    return v != NULL;
}

static bool run_keyless(run_ctx *r, const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    if (!r->binlog || !t || evt_table_npk(t) > 0 || evt_table_dropped(t))
        return false;
    const char *db = evt_table_db(t), *name = evt_table_name(t);
    void **v = run_keyless_slot(r, db, name);
    if (v && !*v && run_is_sequence(r, db, name)) { /* created while streaming */
        *v = RUN_KEYLESS_SEQUENCE;
        TB_INFO("run", "%s.%s is a SEQUENCE: not captured (its row is the generator's state, not a table's "
                "rows); tables.exclude leaves it out without this line",
                db, name);
    } else if (!v || !*v) {
        if (v)
            *v = RUN_KEYLESS_TABLE;
        TB_ERROR("run", "table %s.%s has no primary key: its changes are not captured (a compacted topic needs a "
                 "key); set key.columns.%s.%s=<columns> or exclude it with tables.exclude, restart, and snapshot "
                 "it (tributary snapshot --incremental --table %s.%s). The other tables go on",
                 db, name, db, name, db, name);
    }
    bool seq = v && *v == RUN_KEYLESS_SEQUENCE;
    if (!seq)
        r->events_keyless++;
    if (r->metrics)
        app_metrics_skip(r->metrics, run_slot(r, ev), seq ? APP_METRICS_SKIP_SEQUENCE : APP_METRICS_SKIP_NO_KEY);
    return true;
}

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
    evt_table *done = rc == TB_OK ? snap_inc_take_finished(r->inc) : NULL;
    if (done && snap_filter_match(&r->filter, evt_table_db(done), evt_table_name(done))) {
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
static tb_code run_pin_start(run_ctx *r, tb_error *err)
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

/* Stream from an open source until stopped or failed. A stop request lets an
 * unfinished source transaction end first (at most RUN_STOP_TX_MS), so that
 * the position committed at shutdown covers everything sent. */
static tb_code run_stream(run_ctx *r, tb_error *err)
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
        /* Messages staged in the sink go to Kafka before waiting for the
         * source: first ask it without waiting, then hand them over. */
        bool staged = sink_staged(r->sink) > 0;
        rc = run_source_next(r, staged ? 0 : RUN_POLL_MS, &ev, err);
        if (rc == TB_OK && !ev && staged) {
            sink_kick(r->sink);
            rc = run_source_next(r, RUN_POLL_MS, &ev, err);
        }
        if (rc != TB_OK)
            return rc;
        if (ev && r->inc && (rc = run_incremental(r, ev, err)) != TB_OK)
            return rc;
        if (ev) {
            r->idle = false;
            if (evt_event_snapshot(ev) != EVT_SNAPSHOT_FALSE) {
                r->snapshot_state = evt_event_snapshot(ev) == EVT_SNAPSHOT_LAST ? "done" : "running";
                r->snapshot_rows++;
            }
            if (!run_keep(r, ev)) {
                r->events_filtered++;
            } else if (run_keyless(r, ev)) {
                /* refused: not a change of a captured table */
            } else if (evt_table_dropped(evt_event_table(ev))) {
                if ((rc = run_on_dropped(r, ev, err)) != TB_OK) /* a table gone, not a row change */
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
            if (!r->in_tx && ((rc = run_sink_error(r, run_txmeta_end(r, err), false, err)) != TB_OK ||
                              (rc = run_sink_error(r, run_sink_end_tx(r, evt_event_position(ev), err), false, err)) != TB_OK))
                return rc;
        } else {
            /* Idle: a heartbeat or a skipped transaction may have moved the
             * source; every heartbeat.interval.ms (0 = never) that position
             * goes to the sink as an empty transaction, to be committed. */
            r->idle = true;
            int64_t hb = cfg_get_int(r->cfg, "heartbeat.interval.ms"), now = tb_wall_ms();
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
            if ((rc = snap_inc_poll(r->inc, err)) != TB_OK)
                return rc;
        }
        run_write_status(r, "streaming", NULL, false);
    }
    return TB_OK;
}

/* Where to read the source from after an aborted Kafka transaction: the
 * position the sink committed, else (nothing committed in this run) the one
 * we started from. Closes the source. */
static tb_code run_prepare_restart(run_ctx *r, tb_position *resume, tb_error *err)
{
    binlog_close(r->binlog);
    r->binlog = NULL;
    sqlcap_close(r->sqlite);
    r->sqlite = NULL;
    r->restart = false;
    r->in_tx = false;
    r->txm_open = false;
    r->restarts++;
    const tb_position *c = sink_committable(r->sink);
    if (c->kind != TB_POS_NONE && tb_position_copy(resume, c) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_position_free(&r->last_end);
    tb_buf b;
    tb_buf_init(&b, 0);
    if (resume->kind != TB_POS_NONE)
        tb_position_format(resume, &b);
    TB_WARN("run", "Kafka transaction aborted (%s); reading the source again from %s", err->msg,
            resume->kind != TB_POS_NONE ? tb_buf_cstr(&b) : "the start (nothing committed yet)");
    tb_buf_free(&b);
    tb_error_clear(err);
    return TB_OK;
}

/* ------------------------------------------------------------ start-up retries */

/* Call fn until it succeeds, fails in a way a retry cannot mend, a stop is
 * requested or source.connect.retry.ms pass (0: one attempt), with the
 * streaming reconnect's backoff (100 ms doubling up to
 * source.reconnect.backoff.max.ms). Each failed attempt is a WARN naming
 * what (the address); the last error is returned prefixed with it. A source
 * that cannot be reached (TB_ERR_SOURCE, retriable) and Kafka failures are
 * retried; configuration problems are not. */
static tb_code run_start_retry(run_ctx *r, const char *what, tb_code (*fn)(run_ctx *, void *, tb_error *), void *arg,
                               tb_error *err)
{
    int64_t limit = cfg_get_int(r->cfg, "source.connect.retry.ms");
    int64_t backoff_max = cfg_get_int(r->cfg, "source.reconnect.backoff.max.ms");
    int64_t deadline = tb_wall_ms() + limit, backoff = 100;
    for (unsigned attempt = 1;; attempt++) {
        tb_error_clear(err);
        tb_code rc = fn(r, arg, err);
        /* Kafka is retried, but not a sink that failed for good (a refused login, a broker
         * certificate that does not verify: librdkafka would retry them for ever) */
        bool again = (rc == TB_ERR_SOURCE && err->retriable) ||
                     (rc == TB_ERR_KAFKA && !(r->sink && sink_failed(r->sink, NULL) != TB_OK));
        if (rc == TB_OK || !again)
            return rc;
        int64_t now = tb_wall_ms();
        if (now + backoff > deadline || app_stop_requested)
            return tb_error_prefix(err, rc, "%s: %s", what,
                                   limit > 0 ? "not reachable within source.connect.retry.ms: " : "");
        TB_WARN("run", "%s: attempt %u failed, retrying in %lld ms (for %lld s more, source.connect.retry.ms): %s",
                what, attempt, (long long)backoff, (long long)((deadline - now) / 1000), err->msg);
        for (int64_t until = now + backoff; tb_wall_ms() < until && !app_stop_requested;) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (app_stop_requested)
            return tb_error_set(err, TB_ERR_STOPPED, false, "stopped while waiting for %s", what);
        backoff = backoff * 2 > backoff_max ? backoff_max : backoff * 2;
    }
}

static tb_code start_preflight(run_ctx *r, void *arg, tb_error *err)
{
    (void)arg;
    return binlog_preflight(r->cfg, err);
}

/* The HA lease (run_lease.c); a failed attempt's lease is released first. */
static tb_code start_lease(run_ctx *r, void *arg, tb_error *err)
{
    (void)arg;
    run_lease_release(r);
    return run_lease_acquire(r, err);
}

static tb_code start_kafka(run_ctx *r, void *arg, tb_error *err)
{
    (void)arg;
    return sink_ready(r->sink, err);
}

static tb_code start_offsets(run_ctx *r, void *stored, tb_error *err)
{
    return ksink_offsets_read(r->cfg, stored, err);
}

/* One pass over a MySQL/MariaDB source: snapshot if asked, then stream from
 * the hand-off position or from resume. */
static tb_code run_mysql_pass(run_ctx *r, const tb_position *resume, bool force_snapshot, tb_error *err)
{
    tb_position start;
    tb_position_init(&start);
    tb_code rc = TB_OK;
    bool have = resume->kind != TB_POS_NONE;
    if (force_snapshot || snap_decide(r->cfg, have, true)) {
        /* settings and grants before a snapshot taken again (run_mysql
         * checked them at start; binlog_open checks them on each connection) */
        if (force_snapshot && (rc = binlog_preflight(r->cfg, err)) != TB_OK)
            goto out;
        if ((rc = run_mysql_snapshot(r, &start, err)) != TB_OK) {
            run_sink_aborted(r);
            goto out;
        }
        if (!snap_then_stream(r->cfg))
            goto out;
    } else if (have) {
        if ((rc = tb_position_copy(&start, resume)) != TB_OK)
            goto out;
    }
    if ((rc = binlog_open(r->cfg, &start, &r->binlog, err)) != TB_OK)
        goto out;
    binlog_set_stmt_fn(r->binlog, run_on_stmt, r);
    if (start.kind == TB_POS_NONE && (rc = run_pin_start(r, err)) != TB_OK)
        goto out;
    if (!r->inc && (rc = snap_inc_open(r->cfg, NULL, &r->inc, err)) != TB_OK)
        goto out;
    TB_INFO("run", "streaming from the binlog");
    rc = run_stream(r, err);
out:
    tb_position_free(&start);
    return rc;
}

/* tables.include/exclude set and no table of the source captured: a WARN, once at start (a run
 * with zero tables looks healthy otherwise). */
static void run_warn_unmatched(run_ctx *r, size_t ntables)
{
    bool inc = cfg_is_set(r->cfg, "tables.include"), exc = cfg_is_set(r->cfg, "tables.exclude");
    if (ntables > 0 || (!inc && !exc))
        return;
    TB_WARN("run",
            "the table filter (%s%s%s%s%s) captures no table of the source: nothing is sent until a table it "
            "captures is created; both are regular expressions over db.table",
            inc ? "tables.include=" : "", inc ? cfg_get_str(r->cfg, "tables.include") : "", inc && exc ? ", " : "",
            exc ? "tables.exclude=" : "", exc ? cfg_get_str(r->cfg, "tables.exclude") : "");
}

typedef struct sqlite_count {
    run_ctx *r;
    size_t n;
} sqlite_count;

static void sqlite_count_one(void *opaque, const char *db, const char *table)
{
    sqlite_count *c = opaque;
    c->n += snap_filter_match(&c->r->filter, db, table);
}

static tb_code run_mysql(run_ctx *r, const tb_position *stored, tb_error *err)
{
    if (stored->kind != TB_POS_NONE && stored->kind != TB_POS_MYSQL)
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "the stored position is not a MySQL/MariaDB position (source.type changed?); "
                            "reset it with `tributary offsets set`");
    /* the source's settings and grants (retried while it cannot be
     * reached), then every captured table gets a topic of its own, before
     * anything is sent */
    char addr[300];
    snprintf(addr, sizeof addr, "source %s:%lld", cfg_get_str(r->cfg, "source.host"),
             (long long)cfg_get_int(r->cfg, "source.port"));
    tb_code rc = run_start_retry(r, addr, start_preflight, NULL, err);
    size_t ntables = 0;
    if (rc == TB_OK && (rc = snap_check_topics(r->cfg, &ntables, err)) == TB_OK)
        run_warn_unmatched(r, ntables);
    tb_error serr; /* naming the sequences is no reason to stop */
    tb_error_clear(&serr);
    if (rc == TB_OK && run_note_sequences(r, &serr) != TB_OK)
        TB_WARN("run", "the captured SEQUENCEs were not listed (%s): each is named at its first row event", serr.msg);
    if (rc == TB_OK && stored->kind != TB_POS_NONE)
        rc = run_topics_gone(r, err);
    if (rc != TB_OK)
        return rc;
    tb_position resume;
    tb_position_init(&resume);
    rc = tb_position_copy(&resume, stored);
    bool force_snapshot = false;
    int resnapshots = 0;
    while (rc == TB_OK) {
        rc = run_mysql_pass(r, &resume, force_snapshot, err);
        force_snapshot = false;
        if (rc == TB_OK || rc == TB_ERR_STOPPED)
            break;
        if (r->restart) {
            rc = run_prepare_restart(r, &resume, err);
            continue;
        }
        if (!binlog_position_gone(r->binlog))
            break;
        /* error 1236: the position asked for is not in the server's binlog */
        char why[TB_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        const tb_position *at = binlog_position(r->binlog);
        if (!at || at->kind == TB_POS_NONE || !at->file || !*at->file)
            at = &resume;
        tb_buf b, server;
        tb_buf_init(&b, 0);
        tb_buf_init(&server, 0);
        tb_position_format(at, &b);
        /* purged, or never written by this server (a failover to one that lacks them) */
        bool diverged = run_history_diverged(r->cfg, &resume, &server);
        if (diverged) {
            TB_ERROR("run",
                     "the server's history diverged from what the topics hold: the stored position has GTID %s, "
                     "the server's binlog ends at GTID %s and never had some of those transactions (a failover to "
                     "a server that lacks transactions already published?). Their changes are in the topics but "
                     "not on this server",
                     resume.gtid_set ? resume.gtid_set : "?", server.len ? tb_buf_cstr(&server) : "(none)");
        }
        if (strcmp(cfg_get_str(r->cfg, "snapshot.mode"), "when_needed") == 0 && resnapshots++ < 3) {
            if (diverged)
                TB_WARN("run", "snapshotting again (snapshot.mode=when_needed); the reconcile step after it "
                               "deletes what this server does not have, so the topics equal it");
            else
                TB_WARN("run", "position %s is no longer in the server's binlog (%s); snapshotting again "
                               "(snapshot.mode=when_needed)", tb_buf_cstr(&b), why);
            tb_error_clear(err);
            binlog_close(r->binlog);
            r->binlog = NULL;
            r->in_tx = false;
            r->txm_open = false;
            tb_position_free(&r->last_end);
            force_snapshot = true;
            rc = TB_OK;
        } else if (diverged) {
            rc = tb_error_set(err, TB_ERR_SOURCE, false,
                              "position %s (GTID %s) is not in the server's history, which ends at GTID %s: the "
                              "server never had some transactions the topics hold (diverged history, not a purged "
                              "binlog; %s). To make the topics equal this server, snapshot again with the "
                              "reconcile step: set snapshot.mode=when_needed and restart",
                              tb_buf_cstr(&b), resume.gtid_set ? resume.gtid_set : "?",
                              server.len ? tb_buf_cstr(&server) : "(none)", why);
        } else {
            rc = tb_error_set(err, TB_ERR_SOURCE, false,
                              "position %s is no longer in the server's binlog (purged or reset; %s). "
                              "Changes after it are lost to this connector. To recover, snapshot again: set "
                              "snapshot.mode=when_needed (or reset the position with `tributary offsets set`) "
                              "and restart",
                              tb_buf_cstr(&b), why);
        }
        tb_buf_free(&b);
        tb_buf_free(&server);
    }
    tb_position_free(&resume);
    return rc;
}

/* One pass over a SQLite source (its snapshot is served by sqlcap itself). */
static tb_code run_sqlite_pass(run_ctx *r, const tb_position *resume, tb_error *err)
{
    bool have = resume->kind != TB_POS_NONE;
    bool snapshot = snap_decide(r->cfg, have, true);
    tb_code rc = sqlcap_open(r->cfg, snapshot ? NULL : resume, &r->sqlite, err);
    if (rc != TB_OK)
        return rc;
    /* what the topics hold may differ from the database: after a gap (rows
     * delivered after the committed position and deleted meanwhile are not
     * in its net diff) and after a snapshot taken again */
    r->sqlite_reconcile = sqlcap_take_gap(r->sqlite) ? "gap" : snapshot ? "snapshot" : NULL;
    if (snapshot) {
        tb_position pos;
        tb_position_init(&pos);
        rc = sqlcap_snapshot_begin(r->sqlite, &pos, err);
        tb_position_free(&pos);
        if (rc != TB_OK)
            return rc;
        tb_error cerr;
        if (r->metrics && sqlcap_snapshot_count(r->sqlite, run_snap_estimate, r, &cerr) != TB_OK)
            TB_WARN("run", "snapshot row counts for metrics: %s", cerr.msg);
        r->snapshot_state = "running";
        if (!snap_then_stream(r->cfg)) {
            /* initial_only: serve the snapshot rows, then stop. */
            while (!app_stop_requested) {
                evt_event *ev = NULL;
                if ((rc = sqlcap_next(r->sqlite, RUN_POLL_MS, &ev, err)) != TB_OK || !ev)
                    return rc;
                if (run_keep(r, ev) && (rc = run_sink_error(r, run_sink_send(r, ev, err), false, err)) != TB_OK)
                    return rc;
                r->snapshot_rows++;
                if (evt_event_snapshot(ev) == EVT_SNAPSHOT_LAST) {
                    r->snapshot_state = "done";
                    return run_sink_error(r, run_sink_end_tx(r, evt_event_position(ev), err), false, err);
                }
            }
            return TB_OK;
        }
    }
    if (!snapshot && !have && (rc = run_pin_start(r, err)) != TB_OK)
        return rc;
    return run_stream(r, err);
}

static tb_code run_sqlite(run_ctx *r, const tb_position *stored, tb_error *err)
{
    tb_position resume;
    tb_position_init(&resume);
    sqlite_count sc = {r, 0};
    tb_error lerr;
    tb_error_clear(&lerr);
    if (sqlcap_list_tables(r->cfg, sqlite_count_one, &sc, &lerr) == TB_OK)
        run_warn_unmatched(r, sc.n);
    tb_code rc = stored->kind != TB_POS_NONE ? run_topics_gone(r, err) : TB_OK;
    if (rc == TB_OK)
        rc = tb_position_copy(&resume, stored);
    while (rc == TB_OK) {
        rc = run_sqlite_pass(r, &resume, err);
        if (rc == TB_OK || !r->restart)
            break;
        rc = run_prepare_restart(r, &resume, err);
    }
    tb_position_free(&resume);
    return rc;
}

/* ------------------------------------------------------------ command */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tributary run --config FILE [--set key=value ...]\n\n"
            "Snapshot the source per snapshot.mode, then stream every committed row change to\n"
            "the sink (Kafka, or stdout with sink=stdout). Resumes from the stored position.\n"
            "SIGINT/SIGTERM flush, commit the position and exit 0.\n\n"
            "  --config FILE     properties file (see tributary --help-config)\n"
            "  --set key=value   override a key (repeatable); TRIBUTARY_<KEY> env vars too\n");
}

int cmd_run(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tb_error err;
    tb_error_clear(&err);
    run_ctx r;
    memset(&r, 0, sizeof(r));
    tb_hmap_init(&r.keyless);
    tb_buf_init(&r.status_path, 0);
    tb_buf_init(&r.kstats, 0);
    tb_position stored;
    tb_position_init(&stored);
    tb_code rc = app_load_config(&argc, argv, &r.cfg, &err);
    if (rc != TB_OK)
        goto out;
    if (argc > 1) {
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "unexpected argument '%s' (see tributary run --help)", argv[1]);
        goto out;
    }
    tb_log_level lvl;
    if (tb_log_parse_level(cfg_get_str(r.cfg, "log.level"), &lvl))
        tb_log_set_level(lvl);
    app_install_signals();
    app_kafka_client_check(r.cfg);
    {
        tb_buf pfx; /* a prefix the topic names change: said once, as `cache` says it */
        tb_buf_init(&pfx, 0);
        app_topic_prefix(r.cfg, &pfx);
        tb_buf_free(&pfx);
    }
    /* sink=kafka or metrics.listen: librdkafka's statistics feed the tributary_kafka_* series and the
     * "kafka unreachable" of /health and the status file (app_health); kafka.statistics.interval.ms
     * set (0 = off) wins */
    if ((cfg_is_set(r.cfg, "metrics.listen") || strcmp(cfg_get_str(r.cfg, "sink"), "kafka") == 0) &&
        !cfg_is_set(r.cfg, "kafka.statistics.interval.ms") &&
        (rc = cfg_set(r.cfg, "kafka.statistics.interval.ms", RUN_METRICS_STATS_MS, "metrics.listen", &err)) != TB_OK)
        goto out;
    r.started_ms = tb_wall_ms();
    r.snapshot_state = "none";
    if ((rc = app_status_path(r.cfg, &r.status_path)) != TB_OK) {
        tb_error_set(&err, rc, false, "out of memory");
        goto out;
    }
    if ((rc = app_metrics_start(r.cfg, APP_METRICS_RUN, &r.metrics, &err)) != TB_OK)
        goto out;
    if (r.metrics && cfg_is_set(r.cfg, "kafka.statistics.interval.ms"))
        app_metrics_set_kafka_stats_interval(r.metrics, atoll(cfg_get_str(r.cfg, "kafka.statistics.interval.ms")));
    app_on_second_signal = app_status_last_words;
    run_write_status(&r, "starting", NULL, true);
    char kafka_addr[600];
    {
        const char *bs = cfg_get_str(r.cfg, "kafka.bootstrap.servers");
        snprintf(kafka_addr, sizeof kafka_addr, "Kafka at %s", bs ? bs : "(kafka.bootstrap.servers not set)");
    }
    if ((rc = run_start_retry(&r, kafka_addr, start_lease, NULL, &err)) != TB_OK) {
        if (rc == TB_ERR_STOPPED) {
            rc = TB_OK;
            run_write_status(&r, "stopped", NULL, true);
        }
        goto out;
    }
    if ((rc = snap_filter_init(&r.filter, r.cfg, &err)) != TB_OK)
        goto out;
    r.filter_ok = true;
    {
        sink_hooks hooks = {.gate = run_gate, .wait = run_wait, .opaque = &r, .stop = &app_stop_requested};
        if ((rc = sink_open(r.cfg, &hooks, &r.sink, &err)) != TB_OK)
            goto out;
    }
    r.txmeta = sink_has(r.sink, SINK_CAP_TOPICS) && cfg_get_bool(r.cfg, "transaction.topic");
    if (!sink_has(r.sink, SINK_CAP_TOPICS) && cfg_get_bool(r.cfg, "transaction.topic"))
        TB_WARN("run", "transaction.topic=true needs sink=kafka (sink=%s writes no topics); no transaction records "
                       "are written", sink_name(r.sink));
    /* the stored position; Kafka is retried at start as the source is (also with file
     * offsets: the sink's first request, before anything is read from the source) */
    if ((rc = run_start_retry(&r, kafka_addr, start_offsets, &stored, &err)) != TB_OK ||
        (rc = run_start_retry(&r, kafka_addr, start_kafka, NULL, &err)) != TB_OK)
        goto out;
    if (stored.kind != TB_POS_NONE) {
        tb_buf b;
        tb_buf_init(&b, 0);
        tb_position_format(&stored, &b);
        TB_INFO("run", "resuming from %s", tb_buf_cstr(&b));
        tb_buf_free(&b);
        tb_position_copy(&r.committed, &stored);
    }
    if (strcmp(cfg_get_str(r.cfg, "source.type"), "sqlite") == 0)
        rc = run_sqlite(&r, &stored, &err);
    else
        rc = run_mysql(&r, &stored, &err);
    if (rc == TB_ERR_STOPPED)
        rc = TB_OK;
    /* Flush and commit what was acknowledged, also after a failure: a
     * position is only ever committed for acknowledged messages. */
    {
        tb_error ferr;
        tb_error_clear(&ferr);
        run_write_status(&r, rc == TB_OK ? "stopping" : "failed", rc == TB_OK ? NULL : err.msg, true);
        /* a lost lease: another instance may be active; nothing more is
         * flushed or committed (sink_close purges what is queued) */
        tb_code frc = run_lease_check(&r, &ferr);
        if (frc == TB_OK && r.sink)
            frc = sink_flush(r.sink, RUN_FLUSH_MS, &ferr);
        bool eos_open = r.in_tx && cfg_get_bool(r.cfg, "exactly.once"); /* sink=kafka (cfg_check) */
        if (eos_open)
            TB_INFO("run", "stopped inside a source transaction: exactly.once keeps the last committed "
                           "position (the open Kafka transaction is aborted)");
        if (r.sink && !eos_open && !r.lease_lost && (frc == TB_OK || rc != TB_OK)) {
            tb_code crc = run_sink_commit(&r, true, &ferr);
            if (frc == TB_OK)
                frc = crc;
        }
        if (rc == TB_OK && frc != TB_OK) {
            rc = frc;
            err = ferr;
        }
    }
    run_write_status(&r, rc == TB_OK ? "stopped" : "failed", rc == TB_OK ? NULL : err.msg, true);
    if (rc == TB_OK)
        TB_INFO("run", "stopped cleanly");
out:
    if (rc != TB_OK && rc != TB_ERR_STOPPED && r.status_state && strcmp(r.status_state, "failed") != 0)
        run_write_status(&r, "failed", err.msg, true);
    app_on_second_signal = NULL;
    app_metrics_stop(r.metrics);
    for (size_t i = 0; i < sizeof(r.mcache) / sizeof(r.mcache[0]); i++)
        evt_table_unref(r.mcache[i].t);
    tb_buf_free(&r.kstats);
    binlog_close(r.binlog);
    sqlcap_close(r.sqlite);
    sink_close(r.sink);
    run_lease_release(&r);
    tb_position_free(&stored);
    tb_position_free(&r.committed);
    tb_position_free(&r.last_end);
    tb_buf_free(&r.status_path);
    if (r.filter_ok)
        snap_filter_free(&r.filter);
    tb_hmap_free(&r.keyless, NULL);
    run_txmeta_free(&r);
    snap_inc_close(r.inc);
    cfg_free(r.cfg);
    if (rc != TB_OK)
        return app_fail("run", &err);
    return 0;
}
