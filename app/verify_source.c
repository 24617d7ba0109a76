/*
 * verify_source: the source side of `tributary verify` (verify.h): one
 * consistent read of the captured tables, as the connector's snapshot reads
 * them, so every row is the event the snapshot would send.
 *
 *  MySQL/MariaDB: snap_open (START TRANSACTION WITH CONSISTENT SNAPSHOT, the
 *  position of exactly that view, no lock on MariaDB), one unbuffered SELECT
 *  per table fetched a row at a time.
 *  SQLite: capture/sqlite's snapshot (one read transaction, the WAL position
 *  it fixes), opened without a shadow copy, checkpoints or triggers: it
 *  reads the database and the WAL and writes nothing.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_filter.h"
#include "snap.h"
#include "snap_schema.h"
#include "sqlcap.h"
#include "verify.h"

typedef struct vsrc_tab {
    char *db, *table;
} vsrc_tab;

struct vsrc {
    snap *snap;           /* MySQL/MariaDB */
    sqlcap *sq;           /* SQLite */
    bool sq_done;
    tb_position pos;
    cfg_filter filter;    /* tables.include / exclude */
    regex_t only;
    bool has_only;
    vsrc_tab *tabs;
    size_t ntabs, cap;
};

static bool selected(const vsrc *s, const char *db, const char *table)
{
    if (!cfg_filter_match(&s->filter, db, table))
        return false;
    if (!s->has_only)
        return true;
    char *name = NULL;
    if (asprintf(&name, "%s.%s", db, table) < 0)
        return false;
    bool ok = regexec(&s->only, name, 0, NULL, 0) == 0;
    free(name);
    return ok;
}

static tb_code add_table(vsrc *s, const char *db, const char *table)
{
    if (s->ntabs == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        vsrc_tab *t = realloc(s->tabs, cap * sizeof(*t));
        if (!t)
            return TB_ERR_NOMEM;
        s->tabs = t;
        s->cap = cap;
    }
    vsrc_tab *t = &s->tabs[s->ntabs];
    t->db = strdup(db);
    t->table = strdup(table);
    if (!t->db || !t->table) {
        free(t->db);
        free(t->table);
        return TB_ERR_NOMEM;
    }
    s->ntabs++;
    return TB_OK;
}

typedef struct count_ctx {
    vsrc *s;
    tb_code rc;
} count_ctx;

static void on_sqlite_table(const char *db, const char *table, int64_t rows, void *opaque)
{
    (void)rows;
    count_ctx *x = opaque;
    if (x->rc == TB_OK && selected(x->s, db, table))
        x->rc = add_table(x->s, db, table);
}

static tb_code open_sqlite(const cfg *c, vsrc *s, tb_error *err)
{
    sqlcap_opts o = {0};
    o.path = cfg_get_str(c, CFGK_SOURCE_PATH);
    o.dbname = cfg_get_str(c, CFGK_SOURCE_DATABASE_NAME);
    o.poll_ms = (int)cfg_get_int(c, CFGK_SOURCE_SQLITE_POLL_MS);
    if (!o.path)
        return tb_error_set(err, TB_ERR_CONFIG, false, "source.type=sqlite needs source.path");
    tb_code rc = sqlcap_open_opts(&o, NULL, &s->sq, err);
    if (rc == TB_OK)
        rc = sqlcap_snapshot_begin(s->sq, &s->pos, err);
    count_ctx x = {s, TB_OK};
    if (rc == TB_OK)
        rc = sqlcap_snapshot_count(s->sq, on_sqlite_table, &x, err);
    if (rc == TB_OK && x.rc != TB_OK)
        rc = tb_error_set(err, x.rc, false, "out of memory");
    if (rc != TB_OK && rc != TB_ERR_CONFIG && rc != TB_ERR_NOMEM)
        tb_error_prefix(err, rc = TB_ERR_SOURCE, "SQLite database %s: ", o.path);
    return rc;
}

static tb_code open_mysql(cfg *c, const char *only_re, vsrc *s, tb_error *err)
{
    tb_code rc;
    if (only_re && (rc = cfg_set(c, CFGK_TABLES_INCLUDE, only_re, "verify --tables", err)) != TB_OK)
        return rc;
    if ((rc = snap_open(c, &s->snap, err)) != TB_OK)
        return rc;
    if ((rc = tb_position_copy(&s->pos, snap_position(s->snap))) != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    const snap_table_progress *p;
    size_t n = snap_progress(s->snap, &p);
    for (size_t i = 0; rc == TB_OK && i < n; i++)
        if (selected(s, p[i].db, p[i].table))
            rc = add_table(s, p[i].db, p[i].table);
    return rc == TB_OK ? TB_OK : tb_error_set(err, rc, false, "out of memory");
}

tb_code vsrc_open(cfg *c, const char *only_re, vsrc **out, tb_error *err)
{
    *out = NULL;
    vsrc *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_position_init(&s->pos);
    tb_code rc = cfg_filter_init(&s->filter, c, err);
    if (rc == TB_OK && only_re) {
        if (regcomp(&s->only, only_re, REG_EXTENDED | REG_NOSUB) != 0)
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "--tables: bad regex '%s'", only_re);
        else
            s->has_only = true;
    }
    if (rc == TB_OK)
        rc = strcmp(cfg_get_str(c, CFGK_SOURCE_TYPE), "sqlite") == 0 ? open_sqlite(c, s, err)
                                                                   : open_mysql(c, only_re, s, err);
    if (rc != TB_OK) {
        vsrc_close(s);
        return rc;
    }
    *out = s;
    return TB_OK;
}

const tb_position *vsrc_position(const vsrc *s) { return &s->pos; }
size_t vsrc_ntables(const vsrc *s) { return s->ntabs; }

void vsrc_table(const vsrc *s, size_t i, const char **db, const char **table)
{
    *db = s->tabs[i].db;
    *table = s->tabs[i].table;
}

static bool listed(const vsrc *s, const evt_table *t)
{
    for (size_t i = 0; i < s->ntabs; i++)
        if (strcmp(s->tabs[i].db, evt_table_db(t)) == 0 && strcmp(s->tabs[i].table, evt_table_name(t)) == 0)
            return true;
    return false;
}

tb_code vsrc_next(vsrc *s, evt_event **ev, tb_error *err)
{
    *ev = NULL;
    for (;;) {
        evt_event *e = NULL;
        tb_code rc;
        if (s->snap) {
            if ((rc = snap_next(s->snap, &e, err)) != TB_OK)
                return rc;
        } else {
            if (s->sq_done)
                return TB_OK;
            if ((rc = sqlcap_next(s->sq, 1000, &e, err)) != TB_OK)
                return rc;
            if (!e || evt_event_snapshot(e) == EVT_SNAPSHOT_FALSE) {
                s->sq_done = true; /* the stream after the snapshot (or nothing to snapshot) */
                return TB_OK;
            }
            if (evt_event_snapshot(e) == EVT_SNAPSHOT_LAST)
                s->sq_done = true;
        }
        if (!e)
            return TB_OK;
        if (evt_event_op(e) == EVT_OP_READ && listed(s, evt_event_table(e))) {
            *ev = e;
            return TB_OK;
        }
    }
}

void vsrc_close(vsrc *s)
{
    if (!s)
        return;
    snap_close(s->snap);
    sqlcap_close(s->sq);
    tb_position_free(&s->pos);
    cfg_filter_free(&s->filter);
    if (s->has_only)
        regfree(&s->only);
    for (size_t i = 0; i < s->ntabs; i++) {
        free(s->tabs[i].db);
        free(s->tabs[i].table);
    }
    free(s->tabs);
    free(s);
}
