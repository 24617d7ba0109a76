/*
 * snap_mysql: the initial snapshot of MySQL/MariaDB. See snap.h for the
 * contract and the consistency method per server flavour.
 *
 * Reading order: a one-row lookahead (two events used in turn) tells which
 * event is the last, so it can carry snapshot=last even when the tables
 * after it are empty.
 */
#include "snap_mysql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snap_rows.h"
#include "snap_schema.h"
#include "myconn.h"
#include "snap_sql.h"
#include "tb_clock.h"
#include "tb_log.h"

struct snap {
    MYSQL *my;
    bool mariadb;
    tb_position pos;
    int64_t started_wall_ms;
    snap_tinfo *tinfo;
    evt_table **tables;
    snap_table_progress *prog;
    size_t ntables;
    size_t cur;             /* table being read */
    snap_rows *rows;        /* open result of table `cur` */
    evt_event *ev[2];
    int which;              /* ev[which] holds the lookahead row */
    bool have_ahead;
    bool started, done;
    const evt_table *prev_table; /* table of the last row handed out (snapshot edges) */
    uint64_t total;
};

/* ============================================================ position */

typedef struct kv_ctx {
    char *file;
    char *gtid;
    uint64_t pos;
    bool have_pos;
    uint32_t server_id;
} kv_ctx;

static tb_code status_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    kv_ctx *k = opaque;
    (void)len;
    if (ncols < 2 || !col[0] || !col[1])
        return TB_OK;
    if (strcasecmp(col[0], "binlog_snapshot_file") == 0) {
        free(k->file);
        k->file = strdup(col[1]);
        if (!k->file)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    } else if (strcasecmp(col[0], "binlog_snapshot_position") == 0) {
        k->pos = strtoull(col[1], NULL, 10);
        k->have_pos = true;
    }
    return TB_OK;
}

/* SHOW MASTER STATUS: File, Position, Binlog_Do_DB, Binlog_Ignore_DB[, Executed_Gtid_Set] */
static tb_code master_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    kv_ctx *k = opaque;
    (void)len;
    if (ncols < 2 || !col[0] || !col[1])
        return TB_OK;
    free(k->file);
    k->file = strdup(col[0]);
    k->pos = strtoull(col[1], NULL, 10);
    k->have_pos = true;
    if (ncols >= 5 && col[4]) {
        free(k->gtid);
        k->gtid = strdup(col[4]);
        /* MySQL prints the set with newlines between UUIDs */
        if (k->gtid) {
            char *w = k->gtid;
            for (char *r = k->gtid; *r; r++)
                if (*r != '\n' && *r != '\r')
                    *w++ = *r;
            *w = '\0';
        }
    }
    if (!k->file)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

static tb_code one_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    kv_ctx *k = opaque;
    (void)len;
    (void)err;
    if (ncols >= 1 && col[0]) {
        free(k->gtid);
        k->gtid = strdup(col[0]);
    }
    if (ncols >= 2 && col[1])
        k->server_id = (uint32_t)strtoul(col[1], NULL, 10);
    return TB_OK;
}

static tb_code fill_position(kv_ctx *k, bool mariadb, tb_position *pos, tb_error *err)
{
    tb_position_free(pos);
    pos->kind = TB_POS_MYSQL;
    pos->mariadb = mariadb;
    pos->server_id = k->server_id;
    pos->pos = k->pos;
    pos->row = 0;
    if (tb_position_set_file(pos, k->file) != TB_OK || tb_position_set_gtid(pos, k->gtid ? k->gtid : "") != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

static tb_code master_status(MYSQL *my, kv_ctx *k, tb_error *err)
{
    tb_error e2;
    tb_code rc = myconn_query(my, "SHOW MASTER STATUS", NULL, 0, master_cb, k, &e2);
    if (rc != TB_OK) /* MySQL 8.2+ renamed it */
        rc = myconn_query(my, "SHOW BINARY LOG STATUS", NULL, 0, master_cb, k, err);
    if (rc == TB_OK && (!k->have_pos || !k->file || !*k->file))
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "the source has no binary log (enable log_bin)");
    return rc;
}

tb_code snap_mysql_current_position(MYSQL *my, bool mariadb, tb_position *pos, tb_error *err)
{
    kv_ctx k;
    memset(&k, 0, sizeof(k));
    tb_code rc = master_status(my, &k, err);
    if (rc == TB_OK) {
        char *g = k.gtid;
        k.gtid = NULL;
        rc = myconn_query(my, mariadb ? "SELECT @@gtid_binlog_pos, @@server_id" : "SELECT NULL, @@server_id",
                          NULL, 0, one_cb, &k, err);
        if (!mariadb) {
            free(k.gtid);
            k.gtid = g;
        } else {
            free(g);
        }
    }
    if (rc == TB_OK)
        rc = fill_position(&k, mariadb, pos, err);
    free(k.file);
    free(k.gtid);
    return rc;
}

tb_code snap_mysql_begin(MYSQL *my, bool mariadb, bool lock_minimal, tb_position *pos, tb_error *err)
{
    kv_ctx k;
    memset(&k, 0, sizeof(k));
    bool locked = false;
    tb_code rc = snap_sql_exec(my, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", err);
    if (rc != TB_OK)
        goto out;
    if (mariadb) {
        rc = snap_sql_exec(my, "START TRANSACTION WITH CONSISTENT SNAPSHOT", err);
        if (rc == TB_OK)
            rc = myconn_query(my, "SHOW STATUS LIKE 'binlog_snapshot_%'", NULL, 0, status_cb, &k, err);
        if (rc != TB_OK)
            goto out;
        if (!k.have_pos || !k.file || !*k.file) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "the source has no binary log (enable log_bin)");
            goto out;
        }
        char posbuf[32];
        snprintf(posbuf, sizeof(posbuf), "%llu", (unsigned long long)k.pos);
        const char *params[2] = {k.file, posbuf};
        rc = myconn_query(my, "SELECT BINLOG_GTID_POS(?, ?), @@server_id", params, 2, one_cb, &k, err);
        if (rc != TB_OK)
            goto out;
    } else {
        if (lock_minimal) {
            rc = snap_sql_exec(my, "FLUSH TABLES WITH READ LOCK", err);
            if (rc != TB_OK)
                goto out;
            locked = true;
        }
        rc = snap_sql_exec(my, "START TRANSACTION WITH CONSISTENT SNAPSHOT", err);
        if (rc == TB_OK)
            rc = master_status(my, &k, err);
        if (locked) {
            tb_error e2;
            if (snap_sql_exec(my, "UNLOCK TABLES", &e2) != TB_OK && rc == TB_OK)
                rc = tb_error_set(err, e2.code, e2.retriable, "%s", e2.msg);
            locked = false;
        }
        if (rc != TB_OK)
            goto out;
        if (!lock_minimal)
            TB_WARN("snapshot", "snapshot.locking.mode=none on MySQL: the position %s:%llu is read after the "
                    "view; a transaction committed in between may be missed", k.file, (unsigned long long)k.pos);
        char *g = k.gtid;
        k.gtid = NULL;
        rc = myconn_query(my, "SELECT NULL, @@server_id", NULL, 0, one_cb, &k, err);
        free(k.gtid);
        k.gtid = g;
        if (rc != TB_OK)
            goto out;
    }
    rc = fill_position(&k, mariadb, pos, err);
out:
    if (locked)
        tb_ignore(snap_sql_exec(my, "UNLOCK TABLES", NULL)); /* closing the connection releases it too */
    free(k.file);
    free(k.gtid);
    return rc;
}

/* ============================================================ snapshot */

static void free_tables(snap *s)
{
    if (s->tables)
        for (size_t i = 0; i < s->ntables; i++)
            evt_table_unref(s->tables[i]);
    free(s->tables);
    s->tables = NULL;
    free(s->prog);
    s->prog = NULL;
    snap_tinfo_free_all(s->tinfo, s->ntables);
    s->tinfo = NULL;
    s->ntables = 0;
}

void snap_close(snap *s)
{
    if (!s)
        return;
    snap_rows_close(s->rows);
    evt_event_free(s->ev[0]);
    evt_event_free(s->ev[1]);
    free_tables(s);
    tb_position_free(&s->pos);
    if (s->my) {
        mysql_rollback(s->my);
        mysql_close(s->my);
    }
    free(s);
}

tb_code snap_open(const cfg *c, snap **out, tb_error *err)
{
    tb_code rc = TB_OK;
    cfg_filter f;
    memset(&f, 0, sizeof(f));
    *out = NULL;
    const char *type = cfg_get_str(c, CFGK_SOURCE_TYPE);
    if (type && strcmp(type, "mysql") != 0)
        return tb_error_set(err, TB_ERR_UNSUPPORTED, false,
                            "snapshot of source.type=%s is not done by the MySQL snapshotter", type);
    snap *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_position_init(&s->pos);
    rc = cfg_filter_init(&f, c, err);
    if (rc != TB_OK)
        goto out;
    rc = snap_sql_connect_rows(c, &s->my, &s->mariadb, err);
    if (rc != TB_OK)
        goto out;
    s->started_wall_ms = tb_wall_ms();
    bool minimal = strcmp(cfg_get_str(c, CFGK_SNAPSHOT_LOCKING_MODE), "none") != 0;
    rc = snap_mysql_begin(s->my, s->mariadb, minimal, &s->pos, err);
    if (rc != TB_OK)
        goto out;
    size_t n = 0;
    rc = snap_schema_list(s->my, &f, &s->tinfo, &n, err);
    if (rc != TB_OK)
        goto out;
    s->ntables = n;
    s->tables = calloc(n ? n : 1, sizeof(*s->tables));
    s->prog = calloc(n ? n : 1, sizeof(*s->prog));
    if (!s->tables || !s->prog) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        rc = snap_schema_describe(s->my, c, s->tinfo[i].db, s->tinfo[i].table, &s->tables[i], err);
        if (rc != TB_OK)
            goto out;
        s->prog[i].db = s->tinfo[i].db;
        s->prog[i].table = s->tinfo[i].table;
        s->prog[i].rows_estimated = s->tinfo[i].rows_est;
        if (s->tinfo[i].engine && strcasecmp(s->tinfo[i].engine, "InnoDB") != 0)
            TB_WARN("snapshot", "table %s.%s uses engine %s: its snapshot is not transactional",
                    s->tinfo[i].db, s->tinfo[i].table, s->tinfo[i].engine);
    }
    s->ev[0] = evt_event_new(EVT_OP_READ, n ? s->tables[0] : NULL);
    s->ev[1] = evt_event_new(EVT_OP_READ, n ? s->tables[0] : NULL);
    if (!s->ev[0] || !s->ev[1]) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    tb_buf pb;
    tb_buf_init(&pb, 0);
    tb_position_format(&s->pos, &pb);
    TB_INFO("snapshot", "consistent snapshot of %zu table(s) at %s", n, tb_buf_cstr(&pb));
    tb_buf_free(&pb);
    *out = s;
    s = NULL;
out:
    cfg_filter_free(&f);
    snap_close(s);
    return rc;
}

const tb_position *snap_position(const snap *s)
{
    return &s->pos;
}

size_t snap_progress(const snap *s, const snap_table_progress **tables)
{
    *tables = s->prog;
    return s->ntables;
}

uint64_t snap_rows_total(const snap *s)
{
    return s->total;
}

/* Read the next row of any table into ev. *got=false when all are done. */
static tb_code fetch(snap *s, evt_event *ev, bool *got, tb_error *err)
{
    *got = false;
    while (s->cur < s->ntables) {
        evt_table *t = s->tables[s->cur];
        snap_table_progress *p = &s->prog[s->cur];
        if (!s->rows) {
            tb_buf sql;
            tb_buf_init(&sql, 0);
            tb_code rc = snap_rows_select_sql(t, &sql);
            if (rc == TB_OK)
                rc = snap_rows_open(s->my, t, tb_buf_cstr(&sql), NULL, 0, &s->rows, err);
            else
                tb_error_set(err, rc, false, "out of memory");
            tb_buf_free(&sql);
            if (rc != TB_OK)
                return rc;
            p->state = SNAP_TABLE_RUNNING;
            p->started_ms = tb_mono_ms();
            TB_DEBUG("snapshot", "reading %s.%s (~%llu rows)", p->db, p->table,
                     (unsigned long long)p->rows_estimated);
        }
        evt_event_reset(ev, EVT_OP_READ, t);
        tb_code rc = snap_rows_next(s->rows, ev, got, err);
        if (rc != TB_OK)
            return rc;
        if (*got) {
            const tb_error *be = evt_event_error(ev);
            if (be)
                return tb_error_set(err, be->code, false, "table %s.%s row %llu: %s", p->db, p->table,
                                    (unsigned long long)p->rows_done + 1, be->msg);
            p->rows_done++;
            return TB_OK;
        }
        snap_rows_close(s->rows);
        s->rows = NULL;
        p->state = SNAP_TABLE_DONE;
        p->finished_ms = tb_mono_ms();
        TB_DEBUG("snapshot", "%s.%s done: %llu rows", p->db, p->table, (unsigned long long)p->rows_done);
        s->cur++;
    }
    return TB_OK;
}

tb_code snap_next(snap *s, evt_event **ev, tb_error *err)
{
    *ev = NULL;
    if (s->done)
        return TB_OK;
    bool got = false;
    tb_code rc;
    if (!s->started) {
        s->started = true;
        rc = fetch(s, s->ev[s->which], &got, err);
        if (rc != TB_OK)
            goto fail;
        s->have_ahead = got;
    }
    if (!s->have_ahead) {
        s->done = true;
        mysql_commit(s->my); /* end the read view */
        return TB_OK;
    }
    evt_event *cur = s->ev[s->which];
    s->which ^= 1;
    rc = fetch(s, s->ev[s->which], &got, err);
    if (rc != TB_OK)
        goto fail;
    s->have_ahead = got;
    evt_event_set_position(cur, &s->pos);
    evt_event_set_commit_ts_ms(cur, s->started_wall_ms);
    evt_event_set_connector(cur, s->mariadb ? EVT_CONN_MARIADB : EVT_CONN_MYSQL);
    evt_event_set_snapshot(cur, got ? EVT_SNAPSHOT_TRUE : EVT_SNAPSHOT_LAST);
    const evt_table *ct = evt_event_table(cur);
    unsigned edges = (s->total == 0 ? EVT_SNAP_FIRST : 0) | (s->prev_table != ct ? EVT_SNAP_FIRST_IN_TABLE : 0) |
                     (!got || evt_event_table(s->ev[s->which]) != ct ? EVT_SNAP_LAST_IN_TABLE : 0);
    evt_event_set_snapshot_edges(cur, edges);
    s->prev_table = ct;
    evt_event_set_last_in_tx(cur, !got);
    s->total++;
    *ev = cur;
    return TB_OK;
fail:
    s->done = true;
    return rc;
}

/* ============================================================ mode */

bool snap_decide(const cfg *c, bool have_offset, bool offset_still_on_server)
{
    const char *mode = cfg_get_str(c, CFGK_SNAPSHOT_MODE);
    if (!mode || strcmp(mode, "initial") == 0 || strcmp(mode, "initial_only") == 0)
        return !have_offset;
    if (strcmp(mode, "never") == 0)
        return false;
    if (strcmp(mode, "when_needed") == 0)
        return !have_offset || !offset_still_on_server;
    return !have_offset;
}

bool snap_then_stream(const cfg *c)
{
    const char *mode = cfg_get_str(c, CFGK_SNAPSHOT_MODE);
    return !(mode && strcmp(mode, "initial_only") == 0);
}

bool snap_chunked(const cfg *c)
{
    const char *m = cfg_get_str(c, CFGK_SNAPSHOT_INITIAL_METHOD);
    return m && strcmp(m, "chunked") == 0 && snap_then_stream(c);
}

void snap_plan_free(snap_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->db_table)
            free(p->db_table[i]);
        if (p->db)
            free(p->db[i]);
        if (p->table)
            free(p->table[i]);
    }
    free(p->db_table);
    free(p->db);
    free(p->table);
    free(p->rows_estimated);
    tb_position_free(&p->pos);
    memset(p, 0, sizeof(*p));
    tb_position_init(&p->pos);
}

tb_code snap_plan_make(const cfg *c, snap_plan *p, tb_error *err)
{
    memset(p, 0, sizeof(*p));
    tb_position_init(&p->pos);
    cfg_filter f;
    memset(&f, 0, sizeof(f));
    MYSQL *my = NULL;
    bool mariadb = false;
    snap_tinfo *ti = NULL;
    size_t n = 0;
    tb_code rc = cfg_filter_init(&f, c, err);
    bool filter_ok = rc == TB_OK;
    if (rc == TB_OK)
        rc = snap_sql_connect(c, &my, &mariadb, err);
    p->mariadb = mariadb;
    if (rc == TB_OK)
        rc = snap_mysql_current_position(my, mariadb, &p->pos, err);
    if (rc == TB_OK)
        rc = snap_schema_list(my, &f, &ti, &n, err);
    if (rc != TB_OK)
        goto out;
    p->db_table = calloc(n ? n : 1, sizeof(char *));
    p->db = calloc(n ? n : 1, sizeof(char *));
    p->table = calloc(n ? n : 1, sizeof(char *));
    p->rows_estimated = calloc(n ? n : 1, sizeof(uint64_t));
    if (!p->db_table || !p->db || !p->table || !p->rows_estimated) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        evt_table *t = NULL;
        /* a table with no key is refused as by the consistent snapshot */
        rc = snap_schema_describe(my, c, ti[i].db, ti[i].table, &t, err);
        evt_table_unref(t);
        if (rc != TB_OK)
            goto out;
        tb_buf b;
        tb_buf_init(&b, 0);
        tb_buf_printf(&b, "%s.%s", ti[i].db, ti[i].table);
        p->db_table[i] = tb_buf_detach(&b, NULL);
        p->db[i] = strdup(ti[i].db);
        p->table[i] = strdup(ti[i].table);
        p->rows_estimated[i] = ti[i].rows_est;
        p->n = i + 1;
        if (!p->db_table[i] || !p->db[i] || !p->table[i]) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        if (ti[i].engine && strcasecmp(ti[i].engine, "InnoDB") != 0)
            TB_WARN("snapshot", "table %s.%s uses engine %s: its chunks are not transactional", ti[i].db,
                    ti[i].table, ti[i].engine);
    }
out:
    if (rc != TB_OK)
        snap_plan_free(p);
    snap_tinfo_free_all(ti, n);
    if (my)
        mysql_close(my);
    if (filter_ok)
        cfg_filter_free(&f);
    return rc;
}

/* ============================================================ offsets */

