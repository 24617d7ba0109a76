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
 *
 * FILES (DESIGN 2, "The run's files"): this one holds the command, the
 * start-up and the passes over a source; the stream loop is run_pipe.c,
 * the sink calls run_sink.c, the status file run_status.c.
 */
#include <inttypes.h>
#include <pthread.h>
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
#include "ksink.h" /* ksink_offsets_read: the position store of both kinds */
#include "myconn.h"
#include "sink.h"
#include "snap.h"
#include "snap_incremental.h"
#include "snap_sql.h"
#include "sqlcap.h"
#include "tb_clock.h"
#include "tb_log.h"

#define RUN_FLUSH_MS 60000
#define RUN_METRICS_STATS_MS "5000" /* kafka.statistics.interval.ms with metrics.listen */

/* ------------------------------------------------------------ phases */

/* metrics.listen: a table's row count or estimate at the start of its snapshot
 * (tributary_snapshot_rows_estimated). */
static void run_snap_estimate(const char *db, const char *table, int64_t rows, void *opaque)
{
    run_ctx *r = opaque;
    app_metrics_set_estimate(r->metrics, app_metrics_table(r->metrics, db, table), rows);
}


/* MySQL/MariaDB snapshot through snapshot/; sets *hand_off. */
static tb_code run_mysql_snapshot(run_ctx *r, tb_position *hand_off, tb_error *err)
{
    snap *s = NULL;
    run_snapkeys sk;
    run_snapkeys_init(&sk);
    tb_code rc = snap_open(r->cfg, &s, err);
    if (rc != TB_OK)
        goto out;
    r->snapshot_state = RUN_SNAP_RUNNING;
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
        /* the key first: at a table's first row, whether its topic holds anything yet */
        if ((rc = run_snapkeys_row(r, &sk, ev, err)) != TB_OK || (rc = run_sink_send(r, ev, err)) != TB_OK)
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
    r->snapshot_state = RUN_SNAP_DONE;
    TB_INFO("run", "snapshot done: %" PRIu64 " rows", r->snapshot_rows);
out:
    if (rc != TB_OK && rc != TB_ERR_STOPPED)
        r->snapshot_state = RUN_SNAP_FAILED;
    run_snapkeys_free(&sk);
    snap_close(s);
    return rc;
}

/* snapshot.initial.method=chunked: the snapshot is the incremental machinery
 * run over every captured table, streaming from the server's position now
 * (*start). The order makes a kill -9 at any point safe: the state file
 * naming the tables is written first, then the position is committed, so a
 * crash before that commit snapshots from nothing again (no position
 * stored) and one after it resumes the chunks not done (the state file).
 * Each table's reconcile step follows its last chunk (run_pipe.c), except
 * for tables whose topics hold no record now, asked here before the state
 * file is written (fresh: nothing but this snapshot and the stream write
 * them, so there is nothing to reconcile; the state file keeps that across
 * restarts); the tables the schema topic describes that the source lost
 * meanwhile are handled here, at *start, before the first chunk. */
static tb_code run_mysql_chunked(run_ctx *r, tb_position *start, tb_error *err)
{
    snap_plan plan;
    tb_hmap present;
    tb_hmap_init(&present);
    tb_buf k;
    tb_buf_init(&k, 0);
    bool *fresh = NULL;
    tb_code rc = snap_plan_make(r->cfg, &plan, err);
    if (rc != TB_OK)
        goto out;
    if (!r->inc && (rc = snap_inc_open(r->cfg, NULL, NULL, &r->inc, err)) != TB_OK)
        goto out;
    if (plan.n && !(fresh = calloc(plan.n, sizeof(*fresh)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < plan.n; i++) {
        tb_error perr;
        if (sink_topic_empty(r->sink, plan.db[i], plan.table[i], &fresh[i], &perr) != TB_OK) {
            fresh[i] = false; /* then its step reads the topic */
            TB_DEBUG("run", "%s.%s: whether its topic holds anything: %s", plan.db[i], plan.table[i], perr.msg);
        }
    }
    if ((rc = snap_inc_begin_initial(r->inc, plan.db_table, fresh, plan.n, err)) != TB_OK)
        goto out;
    for (size_t i = 0; r->metrics && i < plan.n; i++)
        run_snap_estimate(plan.db[i], plan.table[i], (int64_t)plan.rows_estimated[i], r);
    for (size_t i = 0; rc == TB_OK && i < plan.n; i++) {
        void **v;
        tb_buf_reset(&k);
        if (tb_buf_puts(&k, plan.db[i]) != TB_OK || tb_buf_putc(&k, 0) != TB_OK ||
            tb_buf_puts(&k, plan.table[i]) != TB_OK || tb_hmap_put(&present, k.data, k.len, &v) != TB_OK)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        else
            *v = &present;
    }
    if (rc != TB_OK)
        goto out;
    r->in_tx = true;
    run_keys_at at = {.pos = &plan.pos,
                      .conn = plan.mariadb ? EVT_CONN_MARIADB : EVT_CONN_MYSQL,
                      .ts_ms = tb_wall_ms(),
                      .what = "snapshot"};
    if ((rc = run_sink_error(r, run_reconcile_vanished(r, &present, &at, err), false, err)) != TB_OK ||
        (rc = run_sink_error(r, run_sink_end_tx(r, &plan.pos, err), false, err)) != TB_OK)
        goto out;
    r->in_tx = false;
    if ((rc = run_sink_error(r, run_sink_commit(r, true, err), true, err)) != TB_OK)
        goto out;
    if ((rc = tb_position_copy(start, &plan.pos)) != TB_OK) {
        rc = tb_error_set(err, rc, false, "out of memory");
        goto out;
    }
    r->snapshot_state = plan.n ? RUN_SNAP_RUNNING : RUN_SNAP_DONE;
    tb_buf pb;
    tb_buf_init(&pb, 0);
    tb_position_format(&plan.pos, &pb);
    TB_INFO("run", "initial snapshot (chunked) of %zu table(s), %lld row(s) a chunk, streaming from %s meanwhile",
            plan.n, (long long)cfg_get_int(r->cfg, CFGK_SNAPSHOT_CHUNK_SIZE), tb_buf_cstr(&pb));
    tb_buf_free(&pb);
out:
    if (rc != TB_OK && rc != TB_ERR_STOPPED)
        r->snapshot_state = RUN_SNAP_FAILED;
    free(fresh);
    tb_buf_free(&k);
    tb_hmap_free(&present, NULL);
    snap_plan_free(&plan);
    return rc;
}

/* After a sink error: true when the Kafka transaction was aborted
 * (exactly.once) and the source must be re-read from sink_committable();
 * sets r->restart. */
/* ------------------------------------------------------------ start-up retries */

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

/* Once the lease is held, the stored position is read on a thread of its own (one attempt)
 * while the main thread has the sink read the schema topic (sink_ready): two reads of Kafka,
 * each by a client of its own, neither of which writes. An attempt that failed is made again
 * on the main thread through run_retry, as it was made before there. */
typedef struct run_offsets_read {
    const cfg *c;
    pthread_t th;
    tb_position pos;
    tb_code rc;
    tb_error err;
} run_offsets_read;

static void *run_offsets_main(void *arg)
{
    run_offsets_read *o = arg;
    o->rc = ksink_offsets_read(o->c, &o->pos, &o->err);
    return NULL;
}

/* sink_ready, and the stored position into *stored, both retried while Kafka cannot be reached. */
static tb_code run_kafka_start(run_ctx *r, const char *kafka_addr, tb_position *stored, tb_error *err)
{
    run_offsets_read o = {.c = r->cfg, .rc = TB_ERR_STATE};
    tb_position_init(&o.pos);
    tb_error_clear(&o.err);
    bool started = pthread_create(&o.th, NULL, run_offsets_main, &o) == 0;
    tb_code rc = run_retry(r, kafka_addr, start_kafka, NULL, err);
    if (started)
        pthread_join(o.th, NULL);
    if (rc == TB_OK && started && o.rc == TB_OK) {
        tb_position t = *stored; /* the read position becomes the caller's */
        *stored = o.pos;
        o.pos = t;
    } else if (rc == TB_OK) {
        rc = run_retry(r, kafka_addr, start_offsets, stored, err);
    }
    tb_position_free(&o.pos);
    return rc;
}

/* ------------------------------------------------------------ the sink opened while the lease is sought */

/* Seeking the lease takes a JoinGroup and a commit (30-60 ms with one broker), and the start then
 * needs the producer, 5-10 ms to make (threads, the bootstrap connection): a thread opens the sink
 * meanwhile. Opening it reads and writes nothing; the reads of Kafka and the first produce still
 * come after the lease (DESIGN 12). With exactly.once the sink is opened after the lease: its
 * InitProducerId would fence the active instance's producer. (The readers of the stored position
 * and of the schema topic were made ahead too, once: on this 2-core machine, with the broker on
 * it, the lease then took as much longer as the reads took less.) */
typedef struct run_ahead {
    run_ctx *r;
    pthread_t th;
    bool started;
    sink *sink; /* the sink opened ahead; NULL: not tried, or failed (rc, err) */
    tb_code rc;
    tb_error err;
} run_ahead;

static void *run_ahead_main(void *arg)
{
    run_ahead *a = arg;
    a->rc = run_sink_open(a->r, &a->sink, &a->err);
    return NULL;
}

static void run_ahead_start(run_ctx *r, run_ahead *a)
{
    *a = (run_ahead){.r = r, .rc = TB_OK};
    tb_error_clear(&a->err);
    if (strcmp(cfg_get_str(r->cfg, CFGK_SINK), "kafka") == 0 && !cfg_get_bool(r->cfg, CFGK_EXACTLY_ONCE))
        a->started = pthread_create(&a->th, NULL, run_ahead_main, a) == 0;
}

/* Wait for the thread. take: the lease is held, r->sink becomes the sink it opened (or the
 * failure of its opening is returned); otherwise the sink is closed. */
static tb_code run_ahead_finish(run_ctx *r, run_ahead *a, bool take, tb_error *err)
{
    if (!a->started)
        return TB_OK;
    pthread_join(a->th, NULL);
    a->started = false;
    if (!take) {
        sink_close(a->sink);
        return TB_OK;
    }
    r->sink = a->sink;
    if (a->rc != TB_OK)
        *err = a->err;
    return a->rc;
}

/* ------------------------------------------------------------ the source's questions at start */

/* The source's start-up questions (its settings and grants, the captured tables and their topic
 * names, the SEQUENCEs) are asked on a thread of their own while the lease is sought and Kafka is
 * read (the stored position, the schema topic): none of them writes anything or needs the
 * position. Answers older than RUN_SRCPREP_FRESH_MS when the lease is held (a standby's) are
 * asked again. One attempt each; run_mysql takes the answers, and asks again through run_retry
 * when the preflight could not reach the source. */
#define RUN_SRCPREP_FRESH_MS 1000
typedef struct run_srcprep {
    run_ctx *r;
    struct myconn_warm *warm; /* r->warm: its first connection, kept, serves the preflight */
    pthread_t th;
    tb_code pre_rc, tab_rc, seq_rc;
    tb_error pre_err, tab_err, seq_err;
    size_t ntables;
} run_srcprep;

static void *run_srcprep_main(void *arg)
{
    run_srcprep *p = arg;
    mysql_thread_init();
    myconn_warm_wait_first(p->warm);
    p->pre_rc = binlog_preflight(p->r->cfg, &p->pre_err);
    if (p->pre_rc == TB_OK)
        p->tab_rc = snap_check_topics(p->r->cfg, &p->ntables, &p->tab_err);
    /* r->keyless: nothing else uses it until the source is read */
    if (p->pre_rc == TB_OK && p->tab_rc == TB_OK)
        p->seq_rc = run_note_sequences(p->r, &p->seq_err);
    mysql_thread_end();
    return NULL;
}

/* Start the questions (a MySQL/MariaDB source); without a thread, run_mysql asks them itself. */
static void run_srcprep_start(run_ctx *r)
{
    run_srcprep *p = calloc(1, sizeof(*p));
    if (!p)
        return;
    p->r = r;
    p->warm = r->warm;
    p->pre_rc = p->tab_rc = p->seq_rc = TB_ERR_STATE;
    tb_error_clear(&p->pre_err);
    tb_error_clear(&p->tab_err);
    tb_error_clear(&p->seq_err);
    if (pthread_create(&p->th, NULL, run_srcprep_main, p) != 0) {
        free(p);
        return;
    }
    r->srcprep = p;
}

/* Wait for the questions' thread; NULL when none was started (or it was joined already). */
static run_srcprep *run_srcprep_join(run_ctx *r)
{
    run_srcprep *p = r->srcprep;
    if (p) {
        pthread_join(p->th, NULL);
        r->srcprep = NULL;
    }
    return p;
}

/* binlog_set_history_fn: the schema topic's latest record of a table the catalog lost. */
static tb_code run_schema_history(void *opaque, const char *db, const char *table, evt_table **out, tb_error *err)
{
    run_ctx *r = opaque;
    return sink_schema_last(r->sink, db, table, out, err);
}

/* One pass over a MySQL/MariaDB source: snapshot if asked, then stream from
 * the hand-off position or from resume. */
static tb_code run_mysql_pass(run_ctx *r, const tb_position *resume, bool force_snapshot, tb_error *err)
{
    tb_position start;
    tb_position_init(&start);
    tb_code rc = TB_OK;
    bool have = resume->kind != TB_POS_NONE, took_consistent = false;
    if (force_snapshot || snap_decide(r->cfg, have, true)) {
        /* settings and grants before a snapshot taken again (run_mysql
         * checked them at start; binlog_open checks them on each connection) */
        if (force_snapshot && (rc = binlog_preflight(r->cfg, err)) != TB_OK)
            goto out;
        if (snap_chunked(r->cfg)) {
            if ((rc = run_mysql_chunked(r, &start, err)) != TB_OK) {
                run_sink_aborted(r);
                goto out;
            }
        } else if ((rc = run_mysql_snapshot(r, &start, err)) != TB_OK) {
            run_sink_aborted(r);
            goto out;
        } else {
            took_consistent = true;
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
    binlog_set_history_fn(r->binlog, run_schema_history, r);
    if (start.kind == TB_POS_NONE && (rc = run_pin_start(r, err)) != TB_OK)
        goto out;
    /* the state as of the stored position (a snapshot just taken replaced that position) */
    if (!r->inc && (rc = snap_inc_open(r->cfg, NULL, took_consistent ? NULL : resume, &r->inc, err)) != TB_OK)
        goto out;
    if (took_consistent && snap_inc_initial(r->inc)) {
        /* a chunked initial snapshot left unfinished by an earlier run (its position since
         * forgotten): the consistent snapshot just taken read every table */
        TB_INFO("run", "the unfinished chunked initial snapshot of the state file is dropped: the consistent "
                       "snapshot read every table");
        if ((rc = snap_inc_begin_initial(r->inc, NULL, NULL, 0, err)) != TB_OK)
            goto out;
    }
    if (snap_inc_initial(r->inc))
        r->snapshot_state = RUN_SNAP_RUNNING; /* a chunked initial snapshot, maybe resumed after a crash */
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
    bool inc = cfg_is_set(r->cfg, CFGK_TABLES_INCLUDE), exc = cfg_is_set(r->cfg, CFGK_TABLES_EXCLUDE);
    if (ntables > 0 || (!inc && !exc))
        return;
    TB_WARN("run",
            "the table filter (%s%s%s%s%s) captures no table of the source: nothing is sent until a table it "
            "captures is created; both are regular expressions over db.table",
            inc ? "tables.include=" : "", inc ? cfg_get_str(r->cfg, CFGK_TABLES_INCLUDE) : "", inc && exc ? ", " : "",
            exc ? "tables.exclude=" : "", exc ? cfg_get_str(r->cfg, CFGK_TABLES_EXCLUDE) : "");
}

typedef struct sqlite_count {
    run_ctx *r;
    size_t n;
} sqlite_count;

static void sqlite_count_one(void *opaque, const char *db, const char *table)
{
    sqlite_count *c = opaque;
    c->n += cfg_filter_match(&c->r->filter, db, table);
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
    snprintf(addr, sizeof addr, "source %s:%lld", cfg_get_str(r->cfg, CFGK_SOURCE_HOST),
             (long long)cfg_get_int(r->cfg, CFGK_SOURCE_PORT));
    run_srcprep *p = run_srcprep_join(r); /* first: it waits on r->warm */
    myconn_warm_join(r->warm); /* its connections, kept, are the preflight's and the binlog's */
    r->warm = NULL;
    tb_code rc;
    size_t ntables = 0;
    tb_error serr; /* naming the sequences is no reason to stop */
    tb_error_clear(&serr);
    if (p && !(p->pre_rc == TB_ERR_SOURCE && p->pre_err.retriable)) {
        /* the thread's answers (a preflight that failed for good stops the run, as run_retry's would) */
        rc = p->pre_rc;
        if (rc != TB_OK)
            *err = p->pre_err;
        else if ((rc = p->tab_rc) != TB_OK)
            *err = p->tab_err;
        else
            run_warn_unmatched(r, p->ntables);
        if (rc == TB_OK && p->seq_rc != TB_OK)
            TB_WARN("run", "the captured SEQUENCEs were not listed (%s): each is named at its first row event",
                    p->seq_err.msg);
    } else {
        rc = run_retry(r, addr, start_preflight, NULL, err);
        if (rc == TB_OK && (rc = snap_check_topics(r->cfg, &ntables, err)) == TB_OK)
            run_warn_unmatched(r, ntables);
        if (rc == TB_OK && run_note_sequences(r, &serr) != TB_OK)
            TB_WARN("run", "the captured SEQUENCEs were not listed (%s): each is named at its first row event",
                    serr.msg);
    }
    free(p);
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
        if (strcmp(cfg_get_str(r->cfg, CFGK_SNAPSHOT_MODE), "when_needed") == 0 && resnapshots++ < 3) {
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
    /* the stored position cannot be resumed from (TB_ERR_STATE: trigger mode's
     * change log removed or made again, WAL mode without a shadow after a
     * checkpoint past it): when_needed snapshots again, as after a purged binlog */
    if (rc == TB_ERR_STATE && !snapshot && have && snap_decide(r->cfg, have, false)) {
        TB_WARN("run", "%s; snapshotting again (snapshot.mode=when_needed), then the reconcile step", err->msg);
        tb_error_clear(err);
        snapshot = true;
        rc = sqlcap_open(r->cfg, NULL, &r->sqlite, err);
    }
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
        r->snapshot_state = RUN_SNAP_RUNNING;
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
                    r->snapshot_state = RUN_SNAP_DONE;
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
    if (tb_log_parse_level(cfg_get_str(r.cfg, CFGK_LOG_LEVEL), &lvl))
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
    if ((cfg_is_set(r.cfg, CFGK_METRICS_LISTEN) || strcmp(cfg_get_str(r.cfg, CFGK_SINK), "kafka") == 0) &&
        !cfg_is_set(r.cfg, "kafka.statistics.interval.ms") &&
        (rc = cfg_set(r.cfg, "kafka.statistics.interval.ms", RUN_METRICS_STATS_MS, "metrics.listen", &err)) != TB_OK)
        goto out;
    r.started_ms = tb_wall_ms();
    r.snapshot_state = RUN_SNAP_NONE;
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
    /* the source's first connection (TCP, TLS) is opened while Kafka is asked for the lease and
     * the stored position: the preflight takes it (myconn_warm) */
    bool mysql = strcmp(cfg_get_str(r.cfg, CFGK_SOURCE_TYPE), "sqlite") != 0;
    if (mysql)
        r.warm = myconn_warm_start(r.cfg, binlog_replication_timeout_ms(r.cfg));
    if ((rc = cfg_filter_init(&r.filter, r.cfg, &err)) != TB_OK)
        goto out;
    r.filter_ok = true;
    r.partial_images_ok = strcmp(cfg_get_str(r.cfg, CFGK_SOURCE_ROW_IMAGE_POLICY), "warn") == 0;
    if (mysql)
        run_srcprep_start(&r); /* the source's questions too read and write nothing that needs the lease */
    run_ahead ahead;
    run_ahead_start(&r, &ahead);
    int64_t lease_t0 = tb_mono_ms();
    rc = run_retry(&r, kafka_addr, start_lease, NULL, &err);
    if (rc == TB_OK && mysql && tb_mono_ms() - lease_t0 > RUN_SRCPREP_FRESH_MS) {
        /* a standby's answers are as old as its wait: asked again, now that it is active */
        TB_DEBUG("run", "the source's answers at start are %lld ms old: asked again",
                 (long long)(tb_mono_ms() - lease_t0));
        free(run_srcprep_join(&r));
        tb_hmap_free(&r.keyless, NULL);
        tb_hmap_init(&r.keyless);
        run_srcprep_start(&r);
    }
    {
        tb_error aerr;
        tb_error_clear(&aerr);
        tb_code arc = run_ahead_finish(&r, &ahead, rc == TB_OK, &aerr);
        if (rc == TB_OK && arc != TB_OK) {
            rc = arc;
            err = aerr;
            goto out;
        }
    }
    if (rc != TB_OK) {
        if (rc == TB_ERR_STOPPED) {
            rc = TB_OK;
            run_write_status(&r, "stopped", NULL, true);
        }
        goto out;
    }
    if (!r.sink && (rc = run_sink_open(&r, &r.sink, &err)) != TB_OK)
        goto out;
    r.txmeta = sink_has(r.sink, SINK_CAP_TOPICS) && cfg_get_bool(r.cfg, CFGK_TRANSACTION_TOPIC);
    if (!sink_has(r.sink, SINK_CAP_TOPICS) && cfg_get_bool(r.cfg, CFGK_TRANSACTION_TOPIC))
        TB_WARN("run", "transaction.topic=true needs sink=kafka (sink=%s writes no topics); no transaction records "
                       "are written", sink_name(r.sink));
    /* the stored position; Kafka is retried at start as the source is (also with file
     * offsets: the sink's first request, before anything is read from the source) */
    if ((rc = run_kafka_start(&r, kafka_addr, &stored, &err)) != TB_OK)
        goto out;
    if (stored.kind != TB_POS_NONE) {
        tb_buf b;
        tb_buf_init(&b, 0);
        tb_position_format(&stored, &b);
        TB_INFO("run", "resuming from %s", tb_buf_cstr(&b));
        tb_buf_free(&b);
        if ((rc = tb_position_copy(&r.committed, &stored)) != TB_OK) {
            rc = tb_error_set(&err, rc, false, "out of memory copying the stored position");
            goto out;
        }
    }
    if (strcmp(cfg_get_str(r.cfg, CFGK_SOURCE_TYPE), "sqlite") == 0)
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
        bool eos_open = r.in_tx && cfg_get_bool(r.cfg, CFGK_EXACTLY_ONCE); /* sink=kafka (cfg_check) */
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
    free(run_srcprep_join(&r)); /* a run that failed before run_mysql took its answers */
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
        cfg_filter_free(&r.filter);
    run_keep_free(&r);
    run_fk_free(&r);
    tb_hmap_free(&r.keyless, NULL);
    run_txmeta_free(&r);
    snap_inc_close(r.inc);
    myconn_warm_join(r.warm);
    snap_sql_release_kept();
    cfg_free(r.cfg);
    if (rc != TB_OK)
        return app_fail("run", &err);
    return 0;
}
