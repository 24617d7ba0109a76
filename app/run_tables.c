/*
 * run_tables: which tables `tributary run` captures, and what it knows of
 * them: tables.include / tables.exclude per event (run_keep), captured
 * tables refused for having no key and MariaDB SEQUENCEs (run_keyless,
 * run_keyless_mark, run_note_sequences, run_is_sequence), and whether the
 * source's catalog still has a table (run_table_gone). Below run_pipe.c,
 * run_stmt.c and run_keys.c; it calls only run_sink.c (metrics slots).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "app_run.h"
#include "sink.h"
#include "myconn.h"
#include "snap_incremental.h"
#include "snap_sql.h"
#include "sqlcap.h"
#include "tb_cast.h"
#include "tb_clock.h"
#include "tb_log.h"

/* tables.include / tables.exclude (and never the system schemas or the
 * signalling table): whether ev's table is captured. The source readers
 * deliver every table; the filter applies here, per table descriptor. */
bool run_keep(run_ctx *r, const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    if (!t)
        return true;
    size_t n = sizeof(r->filter_cache) / sizeof(r->filter_cache[0]);
    for (size_t i = 0; i < n; i++)
        if (r->filter_cache[i].t == t)
            return r->filter_cache[i].keep;
    bool keep = cfg_filter_match(&r->filter, evt_table_db(t), evt_table_name(t));
    size_t slot = r->filter_next++ % n;
    evt_table_unref(r->filter_cache[slot].t);
    r->filter_cache[slot].t = evt_table_ref(TB_UNCONST(t)); /* the count is atomic; the table stays const */
    r->filter_cache[slot].keep = keep;
    return keep;
}

void run_keep_free(run_ctx *r)
{
    for (size_t i = 0; i < sizeof(r->filter_cache) / sizeof(r->filter_cache[0]); i++) {
        evt_table_unref(r->filter_cache[i].t);
        r->filter_cache[i].t = NULL;
    }
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

/* An event of a captured binlog table that has no key (refused: an ERROR once, then
 * counted) or of a SEQUENCE: true when it must not be sent. */
bool run_keyless(run_ctx *r, const evt_event *ev)
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

/* The binlog's global binlog_row_image is checked at every connection (binlog_preflight); a
 * writer's session can still log a partial image (SET SESSION binlog_row_image=MINIMAL or NOBLOB).
 * Such a row cannot be sent whole: a compacted topic keeps the last record per key, so a row left
 * without its absent columns would stay that way. */
tb_code run_partial_image(const evt_event *ev, tb_error *err)
{
    const evt_table *t = evt_event_table(ev);
    const tb_position *p = evt_event_position(ev);
    static const char *const img_name[2] = {"before", "after"};
    tb_buf cols;
    tb_buf_init(&cols, 0);
    for (int img = EVT_BEFORE; img <= EVT_AFTER; img++) {
        if (!evt_event_has_image(ev, (evt_image)img))
            continue;
        size_t named = 0, absent = 0;
        for (size_t c = 0; c < evt_table_ncols(t); c++) {
            if (evt_event_value(ev, (evt_image)img, c)->kind != EVT_V_ABSENT)
                continue;
            if (absent++ == 0)
                tb_buf_printf(&cols, "%sthe %s image lacks ", cols.len ? "; " : "", img_name[img]);
            if (named < 8)
                tb_buf_printf(&cols, "%s%s", named++ ? ", " : "", evt_table_column(t, c)->name);
        }
        if (absent > named)
            tb_buf_printf(&cols, " and %zu more", absent - named);
    }
    if (cols.len == 0)
        tb_buf_puts(&cols, "the event has fewer columns than the table");
    evt_op o = evt_event_op(ev);
    const char *op = o == EVT_OP_CREATE ? "INSERT" : o == EVT_OP_DELETE ? "DELETE" : "UPDATE";
    const char *gtid = evt_event_txid_is_gtid(ev) ? evt_event_txid(ev) : NULL;
    tb_code rc = tb_error_set(
        err, TB_ERR_SOURCE, false,
        "%s.%s is captured, but this %s on it was logged with a partial row image (%s%s%sbinlog %s:%llu): the "
        "session that wrote it used binlog_row_image=MINIMAL or NOBLOB (%s), so the row cannot be sent whole. "
        "Stopping here; nothing after it is committed. Fix: make every writer log whole rows (binlog_row_image=FULL "
        "globally, and no session override), then set the position past this transaction (`tributary offsets set`) "
        "and snapshot the table again (`tributary snapshot --incremental --table %s.%s`); or send partial images "
        "with source.row.image.policy=warn (absent columns left out)",
        evt_table_db(t), evt_table_name(t), op, gtid ? "GTID " : "", gtid ? gtid : "", gtid ? ", " : "",
        p->file && *p->file ? p->file : "?", (unsigned long long)p->pos, tb_buf_cstr(&cols), evt_table_db(t),
        evt_table_name(t));
    tb_buf_free(&cols);
    return rc;
}

static tb_code count_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)col, (void)len, (void)ncols, (void)err;
    (*(int *)opaque)++;
    return TB_OK;
}

/* See app_run.h. */
tb_code run_retry(run_ctx *r, const char *what, tb_code (*fn)(run_ctx *, void *, tb_error *), void *arg, tb_error *err)
{
    int64_t limit = cfg_get_int(r->cfg, CFGK_SOURCE_CONNECT_RETRY_MS);
    int64_t backoff_max = cfg_get_int(r->cfg, CFGK_SOURCE_RECONNECT_BACKOFF_MAX_MS);
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

typedef struct signal_ask {
    const char *name;
    int64_t id;
} signal_ask;

/* One attempt of run_retry at the signal of an incremental snapshot of a->name ("db.table"). */
static tb_code signal_once(run_ctx *r, void *arg, tb_error *err)
{
    signal_ask *a = arg;
    return snap_inc_signal_id(r->cfg, a->name, &a->id, err);
}

tb_code run_resnapshot_signal(run_ctx *r, const char *name, app_metrics_resnap_reason why, int64_t *id,
                              tb_error *err)
{
    char what[400];
    snprintf(what, sizeof what, "%s: the signal of its incremental snapshot", name);
    signal_ask a = {name, 0};
    tb_code rc = run_retry(r, what, signal_once, &a, err);
    if (id)
        *id = a.id;
    char *db = NULL, *table = NULL;
    if (rc == TB_OK && r->metrics && snap_inc_split_table(name, &db, &table))
        app_metrics_resnapshot(r->metrics, app_metrics_table(r->metrics, db, table), why);
    free(db);
    free(table);
    return rc;
}

bool run_table_gone(run_ctx *r, const char *db, const char *table)
{
    tb_error e;
    tb_error_clear(&e);
    if (strcmp(cfg_get_str(r->cfg, CFGK_SOURCE_TYPE), "sqlite") == 0) {
        bool exists = true;
        return sqlcap_table_exists(r->cfg, db, table, &exists, &e) == TB_OK && !exists;
    }
    MYSQL *my = NULL;
    bool mariadb = false;
    int n = -1;
    const char *params[] = {db, table};
    if (snap_sql_connect(r->cfg, &my, &mariadb, &e) == TB_OK) {
        n = 0;
        if (myconn_query(my, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                         params, 2, count_row, &n, &e) != TB_OK)
            n = -1;
    }
    if (my)
        snap_sql_release(r->cfg, my);
    return n == 0;
}

typedef struct seq_list {
    run_ctx *r;
    size_t n;
} seq_list;

static tb_code seq_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)len, (void)err;
    seq_list *l = opaque;
    if (ncols < 2 || !col[0] || !col[1] || !cfg_filter_match(&l->r->filter, col[0], col[1]))
        return TB_OK;
    l->n++;
    TB_INFO("run", "%s.%s is a SEQUENCE: not captured (its row is the generator's state, not a table's rows); "
            "tables.exclude leaves it out without this line",
            col[0], col[1]);
    return run_keyless_mark(l->r, col[0], col[1], RUN_KEYLESS_SEQUENCE) ? TB_OK
                                                                        : tb_error_set(err, TB_ERR_NOMEM, false,
                                                                                       "out of memory");
}

tb_code run_note_sequences(run_ctx *r, tb_error *err)
{
    MYSQL *my = NULL;
    bool mariadb = false;
    tb_code rc = snap_sql_connect(r->cfg, &my, &mariadb, err);
    seq_list l = {r, 0};
    if (rc == TB_OK && mariadb)
        rc = myconn_query(my,
                          "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = "
                          "'SEQUENCE' ORDER BY TABLE_SCHEMA, TABLE_NAME",
                          NULL, 0, seq_row, &l, err);
    if (my)
        snap_sql_release(r->cfg, my);
    return rc;
}

typedef struct seq_ask {
    const char *db, *table;
    bool seq;
} seq_ask;

static tb_code is_sequence_once(run_ctx *r, void *arg, tb_error *err)
{
    seq_ask *q = arg;
    MYSQL *my = NULL;
    bool mariadb = false;
    const char *params[] = {q->db, q->table};
    tb_code rc = snap_sql_connect(r->cfg, &my, &mariadb, err);
    if (rc == TB_OK && mariadb) {
        int n = 0;
        rc = myconn_query(my,
                          "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND "
                          "TABLE_TYPE = 'SEQUENCE'",
                          params, 2, count_row, &n, err);
        q->seq = rc == TB_OK && n > 0;
    }
    if (my)
        snap_sql_release(r->cfg, my);
    return rc;
}

/* Asked through run_retry: a source restarting when a keyless table's first
 * event arrives must not make a SEQUENCE look like a table without a key. */
bool run_is_sequence(run_ctx *r, const char *db, const char *table)
{
    seq_ask q = {db, table, false};
    tb_error e;
    tb_error_clear(&e);
    if (run_retry(r, "asking the source whether a keyless table is a SEQUENCE", is_sequence_once, &q, &e) != TB_OK)
        TB_WARN("run", "%s.%s: %s; taken as a table", db, table, e.msg);
    return q.seq;
}

