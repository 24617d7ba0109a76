/*
 * tributary snapshot: run an initial snapshot alone, or signal an
 * incremental snapshot to a running connector.
 *
 *   tributary snapshot --config F [--set k=v]...
 *       Snapshot every included table to the configured sink and end with a
 *       summary (tables, rows, time, hand-off position) on stderr. Progress:
 *       on a terminal a bar per table (rows done / estimated, rows/s, ETA),
 *       elsewhere a log line every 5 seconds.
 *   tributary snapshot --incremental --table db.t --config F
 *       Insert an `execute-snapshot` signal row into db.tributary_signal
 *       (created if missing); the running connector sees it in the binlog
 *       and snapshots db.t in chunks (snapshot/snap_incremental.h).
 *
 * Output: the configured sink (stdout JSON lines, DESIGN 10, or Kafka). When
 * every event is delivered, the hand-off position is stored as the
 * connector's offset (offsets.storage), so `tributary run` streams on from
 * exactly there without a second snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "evt_json.h"
#include "snap.h"
#include "snap_incremental.h"
#include "sqlcap.h"
#include "sink.h"
#include "tb_clock.h"
#include "tb_log.h"

/* ------------------------------------------------------------ output */

/* The configured sink (sinks/sink.h): stdout (JSON lines) or Kafka. */
typedef struct out_ctx {
    sink *s;
} out_ctx;

static tb_code out_open(out_ctx *oc, const cfg *c, tb_error *err)
{
    sink_hooks hooks = {.stop = &app_stop_requested};
    return sink_open(c, &hooks, &oc->s, err);
}

static tb_code out_event(out_ctx *oc, const evt_event *ev, tb_error *err)
{
    tb_code rc = sink_send(oc->s, ev, err);
    sink_poll(oc->s, 0);
    return rc;
}

/* Everything sent is delivered; store the hand-off position as the
 * connector's offset so that `tributary run` streams on from it. */
static tb_code out_finish(out_ctx *oc, const tb_position *pos, tb_error *err)
{
    tb_code rc = sink_end_tx(oc->s, pos, err);
    while (rc == TB_OK) {
        rc = sink_flush(oc->s, 1000, err);
        if (rc == TB_OK || !err->retriable || app_stop_requested)
            break;
        rc = TB_OK; /* still in flight: keep waiting */
    }
    if (rc == TB_OK)
        rc = sink_commit(oc->s, true, err);
    return rc;
}

static void out_close(out_ctx *oc)
{
    sink_close(oc->s);
    oc->s = NULL;
}

/* ------------------------------------------------------------ progress */

typedef struct progress {
    bool tty;
    int64_t start_ms, last_ms;
    size_t shown_done;   /* tables whose final bar line is printed */
} progress;

static void fmt_eta(char *buf, size_t n, double secs)
{
    if (secs < 0 || secs > 99 * 3600)
        snprintf(buf, n, "--:--");
    else if (secs >= 3600)
        snprintf(buf, n, "%d:%02d:%02d", (int)secs / 3600, ((int)secs / 60) % 60, (int)secs % 60);
    else
        snprintf(buf, n, "%02d:%02d", (int)secs / 60, (int)secs % 60);
}

static void bar_line(const snap_table_progress *p, int64_t now, bool final)
{
    int64_t end = p->finished_ms ? p->finished_ms : now;
    double secs = p->started_ms ? (double)(end - p->started_ms) / 1000.0 : 0;
    double rate = secs > 0 ? (double)p->rows_done / secs : 0;
    uint64_t est = p->rows_estimated > p->rows_done ? p->rows_estimated : p->rows_done;
    double frac = est ? (double)p->rows_done / (double)est : (final ? 1.0 : 0.0);
    if (final)
        frac = 1.0;
    char bar[31];
    int fill = (int)(frac * 30 + 0.5);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    char eta[16];
    fmt_eta(eta, sizeof(eta), final ? secs : (rate > 0 ? (double)(est - p->rows_done) / rate : -1));
    fprintf(stderr, "\r\033[K%-28.28s [%s] %3d%% %llu/%llu rows %.0f rows/s %s %s", "", bar, (int)(frac * 100),
            (unsigned long long)p->rows_done, (unsigned long long)est, rate, final ? "took" : "ETA", eta);
    /* the name goes over the padding so long names are cut, not wrapped */
    char name[64];
    snprintf(name, sizeof(name), "%s.%s", p->db, p->table);
    fprintf(stderr, "\r%-28.28s", name);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

static void progress_show(progress *pg, const snap *s, bool force)
{
    int64_t now = tb_mono_ms();
    if (!force && now - pg->last_ms < (pg->tty ? 200 : 5000))
        return;
    pg->last_ms = now;
    const snap_table_progress *t;
    size_t n = snap_progress(s, &t);
    if (pg->tty) {
        for (; pg->shown_done < n && t[pg->shown_done].state == SNAP_TABLE_DONE; pg->shown_done++)
            bar_line(&t[pg->shown_done], now, true);
        if (pg->shown_done < n && t[pg->shown_done].state == SNAP_TABLE_RUNNING)
            bar_line(&t[pg->shown_done], now, false);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i].state != SNAP_TABLE_RUNNING)
            continue;
        double secs = (double)(now - t[i].started_ms) / 1000.0;
        double rate = secs > 0 ? (double)t[i].rows_done / secs : 0;
        char eta[16];
        fmt_eta(eta, sizeof(eta),
                rate > 0 && t[i].rows_estimated > t[i].rows_done
                    ? (double)(t[i].rows_estimated - t[i].rows_done) / rate : 0);
        TB_INFO("snapshot", "%s.%s: %llu/~%llu rows, %.0f rows/s, ETA %s (table %zu of %zu)", t[i].db, t[i].table,
                (unsigned long long)t[i].rows_done, (unsigned long long)t[i].rows_estimated, rate, eta, i + 1, n);
    }
}

/* ------------------------------------------------------------ commands */

static int run_initial(const char *cmd, cfg *c)
{
    tb_error err;
    tb_error_clear(&err);
    snap *s = NULL;
    out_ctx oc;
    progress pg = {.tty = isatty(STDERR_FILENO) != 0};
    int64_t t0 = tb_mono_ms();
    pg.start_ms = t0;
    pg.last_ms = t0;

    tb_code rc = out_open(&oc, c, &err);
    if (rc == TB_OK)
        rc = snap_open(c, &s, &err);
    while (rc == TB_OK && !app_stop_requested) {
        evt_event *ev = NULL;
        rc = snap_next(s, &ev, &err);
        if (rc != TB_OK || !ev)
            break;
        rc = out_event(&oc, ev, &err);
        progress_show(&pg, s, false);
    }
    if (rc == TB_OK && app_stop_requested)
        rc = tb_error_set(&err, TB_ERR_STOPPED, false, "stopped by a signal before the snapshot finished");
    if (rc == TB_OK)
        rc = out_finish(&oc, snap_position(s), &err);
    if (rc == TB_OK) {
        progress_show(&pg, s, true);
        const snap_table_progress *t;
        size_t n = snap_progress(s, &t);
        tb_buf pos;
        tb_buf_init(&pos, 0);
        tb_position_format(snap_position(s), &pos);
        double secs = (double)(tb_mono_ms() - t0) / 1000.0;
        fprintf(stderr, "snapshot done: %zu table(s), %llu rows in %.1f s (%.0f rows/s); stream from %s\n", n,
                (unsigned long long)snap_rows_total(s), secs, secs > 0 ? (double)snap_rows_total(s) / secs : 0.0,
                tb_buf_cstr(&pos));
        tb_buf_free(&pos);
    }
    snap_close(s);
    out_close(&oc);
    return rc == TB_OK ? 0 : app_fail(cmd, &err);
}

/* source.type=sqlite: capture/sqlite snapshots in one read transaction
 * (sqlcap_snapshot_begin); its op=r events are written until the one marked
 * snapshot=last (an event of the stream after it, or a poll that returns
 * nothing at all, means there was nothing to snapshot). */
static int run_sqlite(const char *cmd, cfg *c)
{
    tb_error err;
    tb_error_clear(&err);
    out_ctx oc;
    sqlcap *sc = NULL;
    tb_position pos;
    tb_position_init(&pos);
    uint64_t rows = 0, tables = 0;
    char last_table[512] = "";
    int64_t t0 = tb_mono_ms(), last_log = t0;
    tb_code rc = out_open(&oc, c, &err);
    if (rc == TB_OK)
        rc = sqlcap_open(c, NULL, &sc, &err);
    if (rc == TB_OK)
        rc = sqlcap_snapshot_begin(sc, &pos, &err);
    while (rc == TB_OK && !app_stop_requested) {
        evt_event *ev = NULL;
        rc = sqlcap_next(sc, 1000, &ev, &err);
        if (rc != TB_OK || !ev || evt_event_snapshot(ev) == EVT_SNAPSHOT_FALSE)
            break;
        const evt_table *t = evt_event_table(ev);
        char name[512];
        snprintf(name, sizeof(name), "%s.%s", evt_table_db(t), evt_table_name(t));
        if (strcmp(name, last_table) != 0) {
            tables++;
            snprintf(last_table, sizeof(last_table), "%s", name);
        }
        rc = out_event(&oc, ev, &err);
        rows++;
        if (tb_mono_ms() - last_log >= 5000) {
            last_log = tb_mono_ms();
            TB_INFO("snapshot", "%llu rows so far (table %s)", (unsigned long long)rows, last_table);
        }
        if (evt_event_snapshot(ev) == EVT_SNAPSHOT_LAST)
            break;
    }
    if (rc == TB_OK && app_stop_requested)
        rc = tb_error_set(&err, TB_ERR_STOPPED, false, "stopped by a signal before the snapshot finished");
    if (rc == TB_OK)
        rc = out_finish(&oc, &pos, &err);
    if (rc == TB_OK) {
        tb_buf pb;
        tb_buf_init(&pb, 0);
        tb_position_format(&pos, &pb);
        double secs = (double)(tb_mono_ms() - t0) / 1000.0;
        fprintf(stderr, "snapshot done: %llu table(s), %llu rows in %.1f s (%.0f rows/s); stream from %s\n",
                (unsigned long long)tables, (unsigned long long)rows, secs, secs > 0 ? (double)rows / secs : 0.0,
                tb_buf_cstr(&pb));
        tb_buf_free(&pb);
    }
    sqlcap_close(sc);
    out_close(&oc);
    tb_position_free(&pos);
    return rc == TB_OK ? 0 : app_fail(cmd, &err);
}

static int run_signal(const char *cmd, cfg *c, const char *table)
{
    tb_error err;
    tb_error_clear(&err);
    tb_code rc = snap_inc_signal(c, table, &err);
    if (rc != TB_OK)
        return app_fail(cmd, &err);
    fprintf(stderr, "incremental snapshot of %s signalled; the running connector picks it up from the binlog\n",
            table);
    return 0;
}

int cmd_snapshot(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary snapshot --config FILE [--set key=value]...\n"
               "       tributary snapshot --incremental --table DB.TABLE --config FILE\n"
               "Runs an initial snapshot of the included tables to the sink and prints a summary,\n"
               "or asks the running connector for an incremental (chunked, lock-free) snapshot of a table.\n");
        return 0;
    }
    tb_error err;
    tb_error_clear(&err);
    cfg *c = NULL;
    if (app_load_config(&argc, argv, &c, &err) != TB_OK)
        return app_fail("snapshot", &err);
    bool incremental = false;
    const char *table = NULL;
    int rcode = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--incremental") == 0) {
            incremental = true;
        } else if (strcmp(argv[i], "--table") == 0 && i + 1 < argc) {
            table = argv[++i];
        } else if (strncmp(argv[i], "--table=", 8) == 0) {
            table = argv[i] + 8;
        } else {
            tb_error_set(&err, TB_ERR_CONFIG, false, "unknown argument '%s' (see --help)", argv[i]);
            rcode = app_fail("snapshot", &err);
            goto out;
        }
    }
    tb_log_level lvl;
    if (tb_log_parse_level(cfg_get_str(c, CFGK_LOG_LEVEL), &lvl))
        tb_log_set_level(lvl);
    app_install_signals();
    if (incremental) {
        if (strcmp(cfg_get_str(c, CFGK_SOURCE_TYPE), "mysql") != 0) {
            tb_error_set(&err, TB_ERR_CONFIG, false, "incremental snapshots need source.type=mysql");
            rcode = app_fail("snapshot", &err);
            goto out;
        }
        if (!table) {
            tb_error_set(&err, TB_ERR_CONFIG, false, "--incremental needs --table DB.TABLE");
            rcode = app_fail("snapshot", &err);
            goto out;
        }
        rcode = run_signal("snapshot", c, table);
    } else {
        if (table) {
            tb_error_set(&err, TB_ERR_CONFIG, false, "--table only goes with --incremental (use tables.include)");
            rcode = app_fail("snapshot", &err);
            goto out;
        }
        rcode = strcmp(cfg_get_str(c, CFGK_SOURCE_TYPE), "sqlite") == 0 ? run_sqlite("snapshot", c)
                                                                      : run_initial("snapshot", c);
    }
out:
    cfg_free(c);
    return rcode;
}
