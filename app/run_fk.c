/*
 * run_fk: the rows a foreign key's referential action changes, which the binlog does not hold.
 *
 * MariaDB, and MySQL with InnoDB's own foreign keys, run ON DELETE / ON UPDATE CASCADE, SET NULL
 * and SET DEFAULT inside the storage engine: the parent's row event is in the binlog, the child
 * rows it deleted or changed are not. A captured child table's topic would keep them for ever,
 * silently. So every DELETE of a parent row, and every UPDATE that changes the columns a foreign
 * key references, of a table (captured or not) that is the parent of such a key, counts as a
 * change of every captured table below it (the children, their children when the action changes
 * rows they reference in turn, and so on). source.fk.cascade.policy says what follows:
 *
 *  - resnapshot (the default): when the transaction ends, before its position can be committed,
 *    an incremental snapshot of each such table is signalled (run_resnapshot_signal); its
 *    reconcile step deletes the keys the cascade removed (DESIGN 6a). No second signal is written
 *    while one already signalled, or a snapshot already queued, has not begun to read the table:
 *    that snapshot reads it after this transaction anyway (snap_inc_will_read).
 *  - fail: the run stops at the parent's row, before anything of it is sent, naming the
 *    constraint, the tables, the GTID and binlog position, and the fixes.
 *  - warn: a WARN per child table (the first time in a run), and rows go on.
 *
 * The foreign keys come from information_schema (REFERENTIAL_CONSTRAINTS and KEY_COLUMN_USAGE)
 * at the first DELETE or UPDATE, and again after a statement that can change them (run_fk_on_stmt):
 * a CREATE or ALTER TABLE of any table whose text names a foreign key or a constraint; a CREATE,
 * ALTER, DROP or RENAME of a captured table or of one in an edge; a DROP DATABASE of a database
 * that holds one. The catalog is read as it is then, like the column defaults of a new table
 * version (a parent's column renamed counts as changed).
 * MySQL servers that run foreign keys in the SQL layer (innodb_native_foreign_keys=OFF) write
 * the cascaded rows to the binlog: nothing is needed there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_run.h"
#include "myconn.h"
#include "snap_incremental.h"
#include "snap_sql.h"
#include "tb_buf.h"
#include "tb_cast.h"
#include "tb_log.h"

typedef struct fk_edge {
    char *parent;      /* "db.table" */
    char *child;       /* "db.table" */
    char *child_db, *child_table;
    char *name;        /* the constraint */
    char *del_rule, *upd_rule;
    bool on_delete;    /* del_rule changes the child's rows */
    bool on_update;    /* upd_rule does */
    char **cols;       /* the parent's referenced columns */
    size_t ncols;
} fk_edge;

typedef struct fk_sent {
    char *child;
    int64_t id;        /* its latest signal */
} fk_sent;

struct run_fk {
    fk_edge *e;
    size_t n;
    bool loaded;       /* e is the catalog's, as of the last load */
    bool native;       /* the server runs referential actions in the storage engine */
    bool asked_native;
    char **pending;    /* captured tables to snapshot again when this transaction ends */
    size_t npending;
    fk_sent *sent;
    size_t nsent;
    char **warned;     /* policy warn: tables already warned about */
    size_t nwarned;
    evt_table *last_t; /* a reference: the table of the last DELETE or UPDATE (its address is not
                          reused while it is held) ... */
    bool last_parent;  /* ... and whether it is the parent of an edge: the edges are looked at once
                          per table version, not once per row */
    enum { FK_RESNAPSHOT, FK_FAIL, FK_WARN } policy;
};

static bool acts(const char *rule)
{
    return rule && (strcmp(rule, "CASCADE") == 0 || strcmp(rule, "SET NULL") == 0 || strcmp(rule, "SET DEFAULT") == 0);
}

static void edges_free(run_fk *f)
{
    evt_table_unref(f->last_t);
    f->last_t = NULL;
    for (size_t i = 0; i < f->n; i++) {
        fk_edge *e = &f->e[i];
        free(e->parent);
        free(e->child);
        free(e->child_db);
        free(e->child_table);
        free(e->name);
        free(e->del_rule);
        free(e->upd_rule);
        for (size_t c = 0; c < e->ncols; c++)
            free(e->cols[c]);
        free(e->cols);
    }
    free(f->e);
    f->e = NULL;
    f->n = 0;
}

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void run_fk_free(run_ctx *r)
{
    run_fk *f = r->fk;
    if (!f)
        return;
    edges_free(f);
    names_free(f->pending, f->npending);
    names_free(f->warned, f->nwarned);
    for (size_t i = 0; i < f->nsent; i++)
        free(f->sent[i].child);
    free(f->sent);
    free(f);
    r->fk = NULL;
}

/* Whether s is "db.table". */
static bool is_dotted(const char *s, const char *db, size_t dl, const char *table)
{
    return strncmp(s, db, dl) == 0 && s[dl] == '.' && strcmp(s + dl + 1, table) == 0;
}

/* Whether db.table is the parent or the child of an edge; table "" (DROP DATABASE): any table of db. */
static bool in_edges(const run_fk *f, const char *db, const char *table)
{
    size_t dl = strlen(db);
    for (size_t i = 0; i < f->n; i++) {
        const char *ends[] = {f->e[i].parent, f->e[i].child};
        for (int k = 0; k < 2; k++)
            if (*table ? is_dotted(ends[k], db, dl, table) : strncmp(ends[k], db, dl) == 0 && ends[k][dl] == '.')
                return true;
    }
    return false;
}

void run_fk_on_stmt(run_ctx *r, const binlog_stmt *st)
{
    run_fk *f = r->fk;
    if (!f || !f->loaded)
        return;
    /* A CREATE or ALTER that names a key or a constraint may add or drop one, on any table (one that
     * is not captured can be on the way from a parent to a captured grandchild). Otherwise a
     * statement matters when it changes a table that is captured or in an edge, either name of a
     * RENAME (a key follows its tables; a key made with foreign_key_checks=0 may name a parent
     * that a RENAME or CREATE brings), or a database that holds one (DROP DATABASE): a referenced
     * column renamed, a table gone or renamed. The edges are every key with an action on the
     * server, so a statement on other tables changes none of them: the staging tables of a load
     * swapped by RENAME, a database dropped, do not cost a look at the catalog. */
    bool stale = st->foreign_keys;
    bool ddl = st->kind == BINLOG_STMT_CREATE || st->kind == BINLOG_STMT_ALTER || st->kind == BINLOG_STMT_DROP ||
               st->kind == BINLOG_STMT_RENAME || st->kind == BINLOG_STMT_DROP_DATABASE;
    for (size_t i = 0; !stale && ddl && i < st->ntables; i++) {
        const binlog_stmt_table *t = &st->tables[i];
        stale = (*t->table && cfg_filter_match(&r->filter, t->db, t->table)) || in_edges(f, t->db, t->table);
    }
    if (stale)
        f->loaded = false;
}

static bool has_name(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static bool add_name(char ***v, size_t *n, const char *s)
{
    if (has_name(*v, *n, s))
        return true;
    char **g = realloc(*v, (*n + 1) * sizeof(*g));
    if (!g)
        return false;
    *v = g;
    if (!(g[*n] = strdup(s)))
        return false;
    (*n)++;
    return true;
}

/* ------------------------------------------------------------ the catalog */

static char *dotted(const char *db, const char *table)
{
    size_t dl = strlen(db), tl = strlen(table);
    char *s = malloc(dl + tl + 2);
    if (s) {
        memcpy(s, db, dl);
        s[dl] = '.';
        memcpy(s + dl + 1, table, tl + 1);
    }
    return s;
}

/* One row per referenced column: schema, table, constraint, parent schema, parent table, delete
 * rule, update rule, referenced column (in key order). */
static tb_code fk_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)len;
    run_fk *f = opaque;
    if (ncols < 8)
        return TB_OK;
    for (unsigned i = 0; i < 8; i++)
        if (!col[i])
            return TB_OK;
    fk_edge *last = f->n ? &f->e[f->n - 1] : NULL;
    bool same = last && strcmp(last->child_db, col[0]) == 0 && strcmp(last->child_table, col[1]) == 0 &&
                strcmp(last->name, col[2]) == 0;
    if (!same) {
        fk_edge *g = realloc(f->e, (f->n + 1) * sizeof(*g));
        if (!g)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        f->e = g;
        last = &g[f->n++];
        memset(last, 0, sizeof(*last));
        last->child_db = strdup(col[0]);
        last->child_table = strdup(col[1]);
        last->name = strdup(col[2]);
        last->parent = dotted(col[3], col[4]);
        last->child = dotted(col[0], col[1]);
        last->del_rule = strdup(col[5]);
        last->upd_rule = strdup(col[6]);
        last->on_delete = acts(col[5]);
        last->on_update = acts(col[6]);
        if (!last->child_db || !last->child_table || !last->name || !last->parent || !last->child ||
            !last->del_rule || !last->upd_rule)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    char **c = realloc(last->cols, (last->ncols + 1) * sizeof(*c));
    if (!c)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    last->cols = c;
    if (!(c[last->ncols] = strdup(col[7])))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    last->ncols++;
    return TB_OK;
}

static tb_code native_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)len, (void)err;
    if (ncols >= 1 && col[0] && (strcmp(col[0], "0") == 0 || strcmp(col[0], "OFF") == 0))
        *(bool *)opaque = false;
    return TB_OK;
}

static tb_code load_once(run_ctx *r, void *arg, tb_error *err)
{
    (void)arg;
    run_fk *f = r->fk;
    MYSQL *my = NULL;
    bool mariadb = false;
    edges_free(f);
    tb_code rc = snap_sql_connect(r->cfg, &my, &mariadb, err);
    if (rc == TB_OK && !f->asked_native) {
        f->native = true;
        if (!mariadb) { /* MySQL 9.x: referential actions in the SQL layer are logged as row events */
            tb_error e;
            tb_error_clear(&e);
            if (myconn_query(my, "SELECT @@global.innodb_native_foreign_keys", NULL, 0, native_row, &f->native, &e) !=
                TB_OK)
                f->native = true; /* no such variable: the storage engine's foreign keys */
        }
        f->asked_native = true;
    }
    if (rc == TB_OK && f->native)
        rc = myconn_query(my,
                          "SELECT rc.CONSTRAINT_SCHEMA, rc.TABLE_NAME, rc.CONSTRAINT_NAME, k.REFERENCED_TABLE_SCHEMA, "
                          "rc.REFERENCED_TABLE_NAME, rc.DELETE_RULE, rc.UPDATE_RULE, k.REFERENCED_COLUMN_NAME "
                          "FROM information_schema.REFERENTIAL_CONSTRAINTS rc "
                          "JOIN information_schema.KEY_COLUMN_USAGE k "
                          "ON k.CONSTRAINT_SCHEMA = rc.CONSTRAINT_SCHEMA AND k.TABLE_NAME = rc.TABLE_NAME AND "
                          "k.CONSTRAINT_NAME = rc.CONSTRAINT_NAME AND k.REFERENCED_TABLE_NAME IS NOT NULL "
                          "WHERE rc.DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT') OR "
                          "rc.UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT') "
                          "ORDER BY rc.CONSTRAINT_SCHEMA, rc.TABLE_NAME, rc.CONSTRAINT_NAME, k.ORDINAL_POSITION",
                          NULL, 0, fk_row, f, err);
    if (my)
        snap_sql_release(r->cfg, my);
    if (rc != TB_OK)
        edges_free(f);
    return rc;
}

static tb_code fk_load(run_ctx *r, tb_error *err)
{
    run_fk *f = r->fk;
    tb_code rc = run_retry(r, "the source's foreign keys (information_schema)", load_once, NULL, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc,
                               "reading the foreign keys whose ON DELETE / ON UPDATE actions change rows without "
                               "row events (source.fk.cascade.policy): ");
    f->loaded = true;
    size_t captured = 0;
    for (size_t i = 0; i < f->n; i++)
        captured += cfg_filter_match(&r->filter, f->e[i].child_db, f->e[i].child_table);
    if (captured)
        TB_INFO("run", "%zu foreign key(s) of captured tables change rows by ON DELETE / ON UPDATE actions, which "
                "the binlog does not hold: source.fk.cascade.policy=%s",
                captured, cfg_get_str(r->cfg, CFGK_SOURCE_FK_CASCADE_POLICY));
    return TB_OK;
}

/* ------------------------------------------------------------ row events */

/* e's referenced columns have other values after the update than before (an absent value, or a
 * column the descriptor lacks, counts as changed). */
static bool refs_changed(const fk_edge *e, const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    for (size_t c = 0; c < e->ncols; c++) {
        long i = evt_table_find(t, e->cols[c]);
        if (i < 0)
            return true;
        const evt_value *b = evt_event_value(ev, EVT_BEFORE, (size_t)i), *a = evt_event_value(ev, EVT_AFTER, (size_t)i);
        if (b->kind == EVT_V_ABSENT || a->kind == EVT_V_ABSENT || !evt_value_equal(b, a))
            return true;
    }
    return false;
}

static tb_code fk_fail(const fk_edge *e, const evt_event *ev, tb_error *err)
{
    const evt_table *t = evt_event_table(ev);
    const tb_position *p = evt_event_position(ev);
    const char *gtid = evt_event_txid_is_gtid(ev) ? evt_event_txid(ev) : NULL;
    bool del = evt_event_op(ev) == EVT_OP_DELETE;
    return tb_error_set(
        err, TB_ERR_SOURCE, false,
        "%s.%s: this %s (%s%s%sbinlog %s:%llu) can change rows of the captured table %s through its foreign key %s "
        "(ON %s %s), which the server does not write to the binlog: its topic would keep them. Stopping here; "
        "nothing after it is committed. Fix: set source.fk.cascade.policy=resnapshot (the table is snapshotted "
        "again after each such change, and its reconcile step deletes what the action deleted), or make the "
        "application change the child rows itself (ON DELETE RESTRICT), or set source.fk.cascade.policy=warn",
        evt_table_db(t), evt_table_name(t), del ? "DELETE" : "UPDATE of a referenced key", gtid ? "GTID " : "",
        gtid ? gtid : "", gtid ? ", " : "", p && p->file && *p->file ? p->file : "?",
        p ? (unsigned long long)p->pos : 0ULL, e->child, e->name, del ? "DELETE" : "UPDATE",
        del ? e->del_rule : e->upd_rule);
}

/* child (a "db.table" whose rows the action changed) is a captured table: what the policy does. */
static tb_code fk_hit(run_ctx *r, const fk_edge *e, const evt_event *ev, tb_error *err)
{
    run_fk *f = r->fk;
    if (f->policy == FK_FAIL)
        return fk_fail(e, ev, err);
    if (f->policy == FK_WARN) {
        if (has_name(f->warned, f->nwarned, e->child))
            return TB_OK;
        TB_WARN("run", "%s: rows of it changed by its foreign key %s (ON DELETE %s, ON UPDATE %s) are not in the "
                "binlog: its topic keeps them until the table is snapshotted again (tributary snapshot "
                "--incremental --table %s; source.fk.cascade.policy=warn, said once a run)",
                e->child, e->name, e->del_rule, e->upd_rule, e->child);
        if (!add_name(&f->warned, &f->nwarned, e->child))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        return TB_OK;
    }
    if (!add_name(&f->pending, &f->npending, e->child))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

tb_code run_fk_row(run_ctx *r, const evt_event *ev, tb_error *err)
{
    evt_op op = evt_event_op(ev);
    const evt_table *t = evt_event_table(ev);
    if (!r->binlog || !t || (op != EVT_OP_DELETE && op != EVT_OP_UPDATE) ||
        evt_event_snapshot(ev) != EVT_SNAPSHOT_FALSE)
        return TB_OK;
    if (!r->fk) {
        if (!(r->fk = calloc(1, sizeof(*r->fk))))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        const char *p = cfg_get_str(r->cfg, CFGK_SOURCE_FK_CASCADE_POLICY);
        r->fk->policy = strcmp(p, "fail") == 0 ? FK_FAIL : strcmp(p, "warn") == 0 ? FK_WARN : FK_RESNAPSHOT;
    }
    run_fk *f = r->fk;
    tb_code rc;
    if (!f->loaded && (rc = fk_load(r, err)) != TB_OK)
        return rc;
    if (f->n == 0)
        return TB_OK;
    const char *db = evt_table_db(t), *name = evt_table_name(t);
    size_t dl = strlen(db);
    if (t != f->last_t) {
        evt_table_unref(f->last_t);
        f->last_t = evt_table_ref(TB_UNCONST(t)); /* the count is atomic; the table stays const */
        f->last_parent = false;
        for (size_t i = 0; i < f->n && !f->last_parent; i++)
            f->last_parent = strncmp(f->e[i].parent, db, dl) == 0 && f->e[i].parent[dl] == '.' &&
                             strcmp(f->e[i].parent + dl + 1, name) == 0;
    }
    if (!f->last_parent)
        return TB_OK;
    /* the tables whose rows change: this one, then, breadth first, the children of each */
    char **changed = NULL;
    size_t nchanged = 0;
    rc = TB_OK;
    for (size_t i = 0; i < f->n && rc == TB_OK; i++) {
        fk_edge *e = &f->e[i];
        if (!is_dotted(e->parent, db, dl, name))
            continue;
        if (!(op == EVT_OP_DELETE ? e->on_delete : e->on_update && refs_changed(e, ev)))
            continue;
        if (!add_name(&changed, &nchanged, e->child))
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        else if (cfg_filter_match(&r->filter, e->child_db, e->child_table))
            rc = fk_hit(r, e, ev, err);
    }
    for (size_t k = 0; k < nchanged && rc == TB_OK; k++) /* grows as it goes */
        for (size_t i = 0; i < f->n && rc == TB_OK; i++) {
            fk_edge *e = &f->e[i];
            if (strcmp(e->parent, changed[k]) != 0 || !(e->on_delete || e->on_update) ||
                has_name(changed, nchanged, e->child))
                continue;
            if (!add_name(&changed, &nchanged, e->child))
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            else if (cfg_filter_match(&r->filter, e->child_db, e->child_table))
                rc = fk_hit(r, e, ev, err);
        }
    names_free(changed, nchanged);
    return rc;
}

tb_code run_fk_end_tx(run_ctx *r, tb_error *err)
{
    run_fk *f = r->fk;
    if (!f || f->npending == 0)
        return TB_OK;
    tb_code rc = TB_OK;
    for (size_t i = 0; i < f->npending && rc == TB_OK; i++) {
        const char *child = f->pending[i];
        fk_sent *s = NULL;
        for (size_t k = 0; k < f->nsent; k++)
            if (strcmp(f->sent[k].child, child) == 0)
                s = &f->sent[k];
        if (r->inc && snap_inc_will_read(r->inc, child, s ? s->id : 0))
            continue; /* a snapshot still to begin reads the table after this transaction */
        int64_t id = 0;
        rc = run_resnapshot_signal(r, child, APP_METRICS_RESNAP_FK_ACTION, &id, err);
        if (rc == TB_ERR_NOT_FOUND || rc == TB_ERR_CONFIG) {
            /* gone since, or refused for having no key (not captured): nothing to send again */
            TB_INFO("run", "%s: its rows changed by a foreign key's action; no snapshot of it (%s)", child, err->msg);
            tb_error_clear(err);
            rc = TB_OK;
            continue;
        }
        if (rc != TB_OK) {
            tb_error_prefix(err, rc,
                            "%s: rows of it changed by a foreign key's ON DELETE / ON UPDATE action must be sent "
                            "again; asking for an incremental snapshot of it failed (grant INSERT on its database's "
                            "%s, or set source.fk.cascade.policy=warn): ",
                            child, SNAP_SIGNAL_TABLE);
            break;
        }
        TB_INFO("run", "%s: rows of it changed by a foreign key's ON DELETE / ON UPDATE action, which the binlog "
                "does not hold: incremental snapshot of it signalled (source.fk.cascade.policy=resnapshot)",
                child);
        if (!s) {
            fk_sent *g = realloc(f->sent, (f->nsent + 1) * sizeof(*g));
            if (!g || !(g[f->nsent].child = strdup(child))) {
                if (g)
                    f->sent = g;
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                break;
            }
            f->sent = g;
            s = &g[f->nsent++];
        }
        s->id = id;
    }
    names_free(f->pending, f->npending);
    f->pending = NULL;
    f->npending = 0;
    return rc;
}
