/*
 * sqlcap_trig: trigger mode (sqlite-wal.md section 3), any journal mode.
 *
 * INSTALLED OBJECTS (all removed by sqlcap_trigger_uninstall):
 *   _cdc_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl, op I|U|D, pk, old_pk,
 *            before, after)   -- pk/old_pk JSON arrays, before/after JSON objects
 *   per captured table T: triggers _cdc_<T>_ai, _cdc_<T>_au, _cdc_<T>_ad.
 * VALUE ENCODING in the JSON: v(x) = CASE typeof(x) WHEN 'blob' THEN
 *   json_object('$b',hex(x)) WHEN 'real' THEN json_object('$f',printf('%!.17g',x))
 *   ELSE x END (json_object rejects BLOBs and prints REAL with 15 digits).
 * A rowid table without a primary key gets a synthetic "rowid" key column.
 *
 * DRAIN: rows with seq > last in seq order (one writer at a time: seq order is
 * commit order; a read transaction sees a gap-free prefix). Transaction
 * boundaries are not available: every event is last_in_tx and carries
 * position TB_POS_SQLITE_LOG{seq}. sqlcap_ack deletes rows with seq <= ack in
 * batches of 1000 (write transactions: they contend with the application).
 * ALTER TABLE: the schema_version is watched and triggers are regenerated
 * (changes between the ALTER and the regeneration lack new columns). A table
 * gone since (dropped or renamed) is a WARN; the change-log rows it left are
 * still delivered under its old name, also those of changes made after a
 * RENAME and before the regeneration (the triggers log the name they were
 * made for; at most one poll). The rows a DROP, RENAME or ALTER implies are
 * not in the change log (WAL mode sends them).
 * CAVEAT: INSERT OR REPLACE fires the DELETE trigger only with
 * recursive_triggers on in the writer, so a replaced row appears as op=c for
 * an existing key: consumers must treat c as an upsert.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_cast.h"
#include "evt_json.h"
#include "sqlcap_priv.h"
#include "tb_log.h"

typedef struct sqlcap_ttab {
    char *name;
    evt_table *et;
} sqlcap_ttab;

struct sqlcap_trig {
    sqlite3 *db;
    int64_t last_seq;
    int schema_version;
    sqlcap_ttab *tabs;
    size_t captabs;
    size_t ntabs;
    /* tables gone (dropped or renamed) since the open: their descriptors, for
     * change-log rows written before they went and drained after */
    sqlcap_ttab *gone;
    size_t ngone, capgone;
};

static void sqlcap_trig_tabs_free(sqlcap_trig *t)
{
    for (size_t i = 0; i < t->ntabs; i++) {
        free(t->tabs[i].name);
        evt_table_unref(t->tabs[i].et);
    }
    free(t->tabs);
    t->tabs = NULL;
    t->ntabs = t->captabs = 0;
}

static int sqlcap_trig_schema_version(sqlite3 *db)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA schema_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* v(x) as SQL text */
static void sqlcap_trig_v(sqlite3_str *s, const char *ref, const char *col)
{
    sqlite3_str_appendf(s,
                        "CASE typeof(%s.\"%w\") WHEN 'blob' THEN json_object('$b',hex(%s.\"%w\")) WHEN 'real' THEN "
                        "json_object('$f',printf('%%!.17g',%s.\"%w\")) ELSE %s.\"%w\" END",
                        ref, col, ref, col, ref, col, ref, col);
}

/* json_object() / json_array() take at most 127 arguments (SQLITE_MAX_FUNCTION_ARG's
 * default): an image of more than this many columns is a JSON array of objects
 * of at most this many columns each (at most 2000 / 60 < 127 of them). */
#define SQLCAP_TRIG_CHUNK 60

/* The JSON image of the row ref (NEW or OLD): json_object(name, v(name), ...),
 * or for more than SQLCAP_TRIG_CHUNK columns json_array(json_object(...), ...). */
static void sqlcap_trig_image_sql(sqlite3_str *s, const char *ref, char **names, size_t n, bool synth)
{
    size_t ncols = n + (synth ? 1 : 0);
    bool chunked = ncols > SQLCAP_TRIG_CHUNK;
    if (chunked)
        sqlite3_str_appendall(s, "json_array(");
    for (size_t q = 0; q < ncols; q++) {
        const char *cn = q < n ? names[q] : "rowid";
        if (q % SQLCAP_TRIG_CHUNK == 0)
            sqlite3_str_appendf(s, "%sjson_object(", q ? ")," : "");
        sqlite3_str_appendf(s, "%s%Q,", q % SQLCAP_TRIG_CHUNK ? "," : "", cn);
        sqlcap_trig_v(s, ref, cn);
    }
    sqlite3_str_appendall(s, ncols ? ")" : "json_object()");
    if (chunked)
        sqlite3_str_appendall(s, ")");
}

/* The key of ref as a JSON array (of arrays of at most SQLCAP_TRIG_CHUNK values
 * for a longer key; kept for reading the log by hand, not decoded). */
static void sqlcap_trig_key_sql(sqlite3_str *s, const char *ref, char **names, const size_t *keys, size_t npk,
                                bool synth)
{
    bool chunked = npk > SQLCAP_TRIG_CHUNK;
    sqlite3_str_appendall(s, "json_array(");
    for (size_t q = 0; q < npk; q++) {
        if (chunked && q % SQLCAP_TRIG_CHUNK == 0)
            sqlite3_str_appendf(s, "%sjson_array(", q ? ")," : "");
        else if (q)
            sqlite3_str_appendall(s, ",");
        sqlcap_trig_v(s, ref, synth ? "rowid" : names[keys[q]]);
    }
    sqlite3_str_appendall(s, chunked ? "))," : "),");
}

/* Read table tn's columns, add its descriptor to c->trig->tabs and append its
 * three triggers to s. Any column count and name length SQLite allows. *ci is
 * the caller's statement slot (finalized by the caller on error). */
static tb_code sqlcap_trig_table_add(sqlcap *c, sqlite3_str *s, const char *tn, sqlite3_stmt **ci, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    tb_code rc = TB_OK;
    char **names = NULL, **decl = NULL;
    int *pk = NULL, *nn = NULL;
    size_t *keys = NULL;
    size_t n = 0, cap = 0, npk = 0;
    evt_table *et = NULL;
    char *name = NULL;
    if (sqlite3_prepare_v2(t->db, "SELECT name, type, pk, \"notnull\" FROM pragma_table_xinfo(?) WHERE hidden = 0", -1,
                           ci, NULL) != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: trigger mode install: %s", c->path, sqlite3_errmsg(t->db));
    sqlite3_bind_text(*ci, 1, tn, -1, SQLITE_TRANSIENT);
    int r;
    while ((r = sqlite3_step(*ci)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            char **nn1 = realloc(names, nc * sizeof *names);
            if (nn1)
                names = nn1;
            char **nd = realloc(decl, nc * sizeof *decl);
            if (nd)
                decl = nd;
            int *np = realloc(pk, nc * sizeof *pk);
            if (np)
                pk = np;
            int *nnn = realloc(nn, nc * sizeof *nn);
            if (nnn)
                nn = nnn;
            if (!nn1 || !nd || !np || !nnn)
                goto nomem;
            cap = nc;
        }
        const char *cn = (const char *)sqlite3_column_text(*ci, 0), *ty = (const char *)sqlite3_column_text(*ci, 1);
        names[n] = strdup(cn ? cn : "");
        decl[n] = strdup(ty ? ty : "");
        if (!names[n] || !decl[n]) {
            free(names[n]);
            free(decl[n]);
            goto nomem;
        }
        pk[n] = sqlite3_column_int(*ci, 2);
        nn[n] = sqlite3_column_int(*ci, 3);
        if (pk[n] > 0)
            npk++;
        n++;
    }
    if (r != SQLITE_DONE) {
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: trigger mode install: columns of %s: %s", c->path, tn,
                          sqlite3_errmsg(t->db));
        goto out;
    }
    sqlite3_finalize(*ci);
    *ci = NULL;
    bool synth = npk == 0;
    size_t ncols = n + (synth ? 1 : 0);
    if (!(keys = calloc(npk ? npk : 1, sizeof *keys)) || !(et = evt_table_new(c->dbname, tn, ncols)) ||
        !(name = strdup(tn)))
        goto nomem;
    for (size_t k = 0; k < n; k++) {
        if (evt_table_set_column(et, k, names[k], sqlcap_evt_type(sqlcap_affinity(decl[k]), decl[k]), decl[k], !nn[k],
                                 false) != TB_OK)
            goto nomem;
        if (pk[k] > 0 && (size_t)pk[k] <= npk)
            keys[pk[k] - 1] = k;
    }
    if (synth) {
        if (evt_table_set_column(et, n, "rowid", EVT_T_SQLITE_INTEGER, "INTEGER", false, false) != TB_OK)
            goto nomem;
        keys[0] = n;
        npk = 1;
    }
    if (evt_table_set_pk(et, keys, npk) != TB_OK)
        goto nomem;
    evt_table_seal(et);
    sqlcap_ttab *nt = sqlcap_grow(t->tabs, t->ntabs, &t->captabs, sizeof *nt, 8);
    if (!nt)
        goto nomem;
    t->tabs = nt;
    t->tabs[t->ntabs].name = name;
    t->tabs[t->ntabs++].et = et;
    name = NULL;
    et = NULL;
    /* triggers */
    static const char *const kinds[3] = {"ai", "au", "ad"};
    for (int k = 0; k < 3; k++) {
        const char *nr = k == 2 ? "OLD" : "NEW";
        sqlite3_str_appendf(s, "DROP TRIGGER IF EXISTS \"_cdc_%w_%s\";", tn, kinds[k]);
        sqlite3_str_appendf(s, "CREATE TRIGGER \"_cdc_%w_%s\" AFTER %s ON \"%w\" BEGIN INSERT INTO _cdc_log(tbl,op,pk,old_pk,before,after) VALUES(%Q,'%c',",
                            tn, kinds[k], k == 0 ? "INSERT" : k == 1 ? "UPDATE" : "DELETE", tn, tn, "IUD"[k]);
        sqlcap_trig_key_sql(s, nr, names, keys, npk, synth);
        if (k == 1)
            sqlcap_trig_key_sql(s, "OLD", names, keys, npk, synth);
        else
            sqlite3_str_appendall(s, "NULL,");
        if (k != 0)
            sqlcap_trig_image_sql(s, "OLD", names, n, synth);
        else
            sqlite3_str_appendall(s, "NULL");
        sqlite3_str_appendall(s, ",");
        if (k != 2)
            sqlcap_trig_image_sql(s, "NEW", names, n, synth);
        else
            sqlite3_str_appendall(s, "NULL");
        sqlite3_str_appendall(s, "); END;");
    }
    if (sqlite3_str_errcode(s) != SQLITE_OK)
        goto nomem;
    goto out;
nomem:
    rc = tb_error_set(err, TB_ERR_NOMEM, false, "trigger mode: out of memory (table %s)", tn);
out:
    for (size_t k = 0; k < n; k++) {
        free(names[k]);
        free(decl[k]);
    }
    free(names);
    free(decl);
    free(pk);
    free(nn);
    free(keys);
    free(name);
    evt_table_unref(et);
    return rc;
}

/* (Re)install the triggers of every user table and refresh the descriptors. */
static tb_code sqlcap_trig_install(sqlcap *c, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    sqlite3_stmt *tl = NULL, *ci = NULL;
    sqlite3_str *s = sqlite3_str_new(NULL);
    tb_code rc = TB_OK;
    sqlcap_trig_tabs_free(t);
    sqlite3_str_appendall(s, "CREATE TABLE IF NOT EXISTS _cdc_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                             "tbl TEXT NOT NULL, op TEXT NOT NULL, pk TEXT NOT NULL, old_pk TEXT, before TEXT, after TEXT);");
    /* every trigger of ours first: those of a renamed table moved with it and
     * would go on logging its old name beside the new name's triggers */
    if (sqlite3_prepare_v2(t->db, "SELECT name FROM sqlite_schema WHERE type='trigger' AND name LIKE '\\_cdc\\_%' "
                                  "ESCAPE '\\'", -1, &tl, NULL) != SQLITE_OK)
        goto sqlerr;
    while (sqlite3_step(tl) == SQLITE_ROW)
        sqlite3_str_appendf(s, "DROP TRIGGER IF EXISTS \"%w\";", sqlite3_column_text(tl, 0));
    sqlite3_finalize(tl);
    tl = NULL;
    if (sqlite3_prepare_v2(t->db, "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                                  "AND name <> '_cdc_log' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
                           -1, &tl, NULL) != SQLITE_OK)
        goto sqlerr;
    while (sqlite3_step(tl) == SQLITE_ROW) {
        const char *tn = (const char *)sqlite3_column_text(tl, 0);
        if ((rc = sqlcap_trig_table_add(c, s, tn, &ci, err)) != TB_OK)
            goto out;
    }
    sqlite3_finalize(tl);
    tl = NULL;
    char *sql = sqlite3_str_finish(s);
    s = NULL;
    if (!sql) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "trigger mode: out of memory");
        goto out;
    }
    char *full = sqlite3_mprintf("BEGIN IMMEDIATE; %s COMMIT;", sql);
    sqlite3_free(sql);
    int r = sqlite3_exec(t->db, full, NULL, NULL, NULL);
    sqlite3_free(full);
    if (r != SQLITE_OK) {
        sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
        goto sqlerr;
    }
    t->schema_version = sqlcap_trig_schema_version(t->db);
    TB_INFO(SQLCAP_FAC, "%s: trigger mode: change-log triggers installed on %zu tables", c->path, t->ntabs);
    goto out;
sqlerr:
    rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: trigger mode install: %s", c->path, sqlite3_errmsg(t->db));
out:
    sqlite3_finalize(tl);
    sqlite3_finalize(ci);
    if (s)
        sqlite3_free(sqlite3_str_finish(s));
    return rc;
}

tb_code sqlcap_trig_open(sqlcap *c, const tb_position *start, tb_error *err)
{
    c->trig = calloc(1, sizeof *c->trig);
    if (!c->trig)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    sqlcap_trig *t = c->trig;
    if (sqlite3_open_v2(c->path, &t->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, false, "%s: open: %s", c->path, sqlite3_errmsg(t->db));
    sqlite3_busy_timeout(t->db, 30000);
    tb_code rc = sqlcap_trig_install(c, err);
    if (rc != TB_OK)
        return rc;
    if (start && start->kind == TB_POS_SQLITE_LOG) {
        t->last_seq = start->seq;
    } else {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(t->db, "SELECT coalesce(max(seq),0) FROM _cdc_log", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            t->last_seq = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    c->pos.kind = TB_POS_SQLITE_LOG;
    c->pos.seq = t->last_seq;
    return TB_OK;
}

static const evt_table *sqlcap_trig_table(sqlcap_trig *t, const char *name)
{
    for (size_t i = 0; i < t->ntabs; i++)
        if (strcmp(t->tabs[i].name, name) == 0)
            return t->tabs[i].et;
    return NULL;
}

/* A table's descriptor, also of a table gone since (sqlcap_trig.gone). */
static const evt_table *sqlcap_trig_table_any(sqlcap_trig *t, const char *name)
{
    const evt_table *et = sqlcap_trig_table(t, name);
    for (size_t i = t->ngone; !et && i-- > 0;)
        if (strcmp(t->gone[i].name, name) == 0)
            et = t->gone[i].et;
    return et;
}

/* Set the columns of one image of ev found in o, a JSON object of column -> v(x). */
static tb_code sqlcap_trig_image_obj(evt_event *ev, evt_image img, const evt_table *et, const evt_jv *o, tb_error *err)
{
    for (size_t c = 0; c < evt_table_ncols(et); c++) {
        const evt_jv *v = evt_jv_get(o, evt_table_column(et, c)->name);
        if (!v)
            continue;
        size_t len = 0;
        const char *txt;
        bool blob_col = evt_table_column(et, c)->type == EVT_T_SQLITE_BLOB;
        switch (evt_jv_type_of(v)) {
        case EVT_JV_NULL: evt_set_null(ev, img, c); break;
        case EVT_JV_NUMBER:
            txt = evt_jv_text(v, &len);
            if (strpbrk(txt, ".eE"))
                evt_set_double(ev, img, c, strtod(txt, NULL));
            else
                evt_set_int(ev, img, c, strtoll(txt, NULL, 10));
            break;
        case EVT_JV_STRING: {
            sqlcap_val sv = {.type = SQLCAP_TEXT};
            txt = evt_jv_text(v, &len);
            sv.p = (const uint8_t *)txt;
            sv.n = len;
            sqlcap_set_val(ev, img, c, blob_col, &sv);
            break;
        }
        case EVT_JV_OBJECT: {
            const evt_jv *b = evt_jv_get(v, "$b"), *f = evt_jv_get(v, "$f");
            if (f) {
                evt_set_double(ev, img, c, strtod(evt_jv_text(f, &len), NULL));
            } else if (b) {
                txt = evt_jv_text(b, &len);
                uint8_t *bytes = malloc(len / 2 + 1);
                if (!bytes)
                    return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                for (size_t i = 0; i < len / 2; i++) {
                    char h[3] = {txt[2 * i], txt[2 * i + 1], 0};
                    bytes[i] = (uint8_t)strtoul(h, NULL, 16);
                }
                sqlcap_val sv = {.type = SQLCAP_BLOB, .p = bytes, .n = len / 2};
                sqlcap_set_val(ev, img, c, blob_col, &sv);
                free(bytes);
            }
            break;
        }
        default: evt_set_null(ev, img, c); break;
        }
    }
    return TB_OK;
}

/* Set one image of ev from its JSON: an object of column -> v(x), or for a
 * table of more than SQLCAP_TRIG_CHUNK columns an array of such objects. */
static tb_code sqlcap_trig_image(evt_event *ev, evt_image img, const evt_table *et, const char *json, tb_error *err)
{
    evt_jv *o = NULL;
    if (!json)
        return TB_OK;
    tb_code rc = evt_jv_parse(json, strlen(json), &o, err);
    if (rc != TB_OK)
        return rc;
    if (evt_jv_type_of(o) == EVT_JV_ARRAY) {
        for (size_t i = 0; rc == TB_OK && i < evt_jv_size(o); i++)
            rc = sqlcap_trig_image_obj(ev, img, et, evt_jv_at(o, i), err);
    } else {
        rc = sqlcap_trig_image_obj(ev, img, et, o, err);
    }
    evt_jv_free(o);
    return rc;
}

tb_code sqlcap_trig_poll(sqlcap *c, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    tb_code rc = TB_OK;
    if (sqlcap_trig_schema_version(t->db) != t->schema_version) {
        TB_INFO(SQLCAP_FAC, "%s: schema changed: regenerating change-log triggers", c->path);
        /* what the schema change did to existing rows is not in the change
         * log: a table gone (dropped or renamed) or with other columns is a
         * WARN naming it */
        size_t nold = t->ntabs;
        sqlcap_ttab *old = t->tabs;
        t->tabs = NULL;
        t->ntabs = t->captabs = 0;
        rc = sqlcap_trig_install(c, err);
        for (size_t i = 0; rc == TB_OK && i < nold; i++) {
            const evt_table *now = sqlcap_trig_table(t, old[i].name);
            if (!now) {
                TB_WARN(SQLCAP_FAC, "%s: table %s is gone (dropped or renamed): trigger mode sees no rows for it, "
                        "its topic keeps every row it had (WAL mode sends deletes: docs/statements.md)", c->path,
                        old[i].name);
                /* its change-log rows not drained yet still decode */
                sqlcap_ttab *g = sqlcap_grow(t->gone, t->ngone, &t->capgone, sizeof *g, 4);
                if (!g) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "trigger mode: out of memory");
                    break;
                }
                t->gone = g;
                t->gone[t->ngone++] = old[i];
                old[i].name = NULL;
                old[i].et = NULL;
            } else if (!evt_table_same_columns(now, old[i].et))
                TB_WARN(SQLCAP_FAC, "%s: table %s altered: rows written before keep their old values in the topic "
                        "until each changes (trigger mode cannot send them again; WAL mode can: "
                        "docs/statements.md)", c->path, old[i].name);
        }
        for (size_t i = 0; i < nold; i++) {
            free(old[i].name);
            evt_table_unref(old[i].et);
        }
        free(old);
        if (rc != TB_OK)
            return rc;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(t->db, "SELECT seq, tbl, op, before, after FROM _cdc_log WHERE seq > ? ORDER BY seq LIMIT 5000",
                           -1, &st, NULL) != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: _cdc_log: %s", c->path, sqlite3_errmsg(t->db));
    sqlite3_bind_int64(st, 1, t->last_seq);
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_SQLITE_LOG;
    int64_t seen_ms = tb_wall_ms(); /* observation time: SQLite records no commit time */
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0);
        const char *tbl = (const char *)sqlite3_column_text(st, 1);
        const char *op = (const char *)sqlite3_column_text(st, 2);
        const evt_table *et = tbl ? sqlcap_trig_table_any(t, tbl) : NULL;
        t->last_seq = seq;
        if (!et || !op) {
            TB_WARN(SQLCAP_FAC, "%s: _cdc_log seq %lld: unknown table %s, skipped", c->path, (long long)seq, tbl ? tbl : "?");
            continue;
        }
        evt_op eo = op[0] == 'I' ? EVT_OP_CREATE : op[0] == 'U' ? EVT_OP_UPDATE : EVT_OP_DELETE;
        evt_event *ev = evt_event_new(eo, TB_UNCONST(et)); /* a reference held */
        if (!ev) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            break;
        }
        evt_event_set_connector(ev, EVT_CONN_SQLITE);
        if ((eo != EVT_OP_CREATE && (rc = sqlcap_trig_image(ev, EVT_BEFORE, et, (const char *)sqlite3_column_text(st, 3), err)) != TB_OK) ||
            (eo != EVT_OP_DELETE && (rc = sqlcap_trig_image(ev, EVT_AFTER, et, (const char *)sqlite3_column_text(st, 4), err)) != TB_OK)) {
            tb_error_prefix(err, rc, "%s: _cdc_log seq %lld: ", c->path, (long long)seq);
            evt_event_free(ev);
            break;
        }
        pos.seq = seq;
        evt_event_set_position(ev, &pos);
        evt_event_set_last_in_tx(ev, true);
        evt_event_set_commit_ts_ms(ev, seen_ms);
        evt_event **nv = sqlcap_grow(c->evq.v, c->evq.n, &c->evq.cap, sizeof *nv, 256);
        if (!nv) {
            evt_event_free(ev);
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            break;
        }
        c->evq.v = nv;
        c->evq.v[c->evq.n++] = ev;
        c->st.events++;
        c->st.txns++;
    }
    if (rc == TB_OK && r != SQLITE_DONE && r != SQLITE_ROW)
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: _cdc_log: %s", c->path, sqlite3_errmsg(t->db));
    sqlite3_finalize(st);
    tb_position_free(&pos);
    return rc;
}

tb_code sqlcap_trig_ack(sqlcap *c, const tb_position *pos, tb_error *err)
{
    if (pos->kind != TB_POS_SQLITE_LOG)
        return TB_OK;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->trig->db,
                           "DELETE FROM _cdc_log WHERE seq IN (SELECT seq FROM _cdc_log WHERE seq <= ? ORDER BY seq LIMIT 1000)",
                           -1, &st, NULL) != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: _cdc_log cleanup: %s", c->path, sqlite3_errmsg(c->trig->db));
    tb_code rc = TB_OK;
    for (;;) {
        sqlite3_bind_int64(st, 1, pos->seq);
        int r = sqlite3_step(st);
        sqlite3_reset(st);
        if (r != SQLITE_DONE) {
            rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: _cdc_log cleanup: %s", c->path, sqlite3_errmsg(c->trig->db));
            break;
        }
        if (sqlite3_changes(c->trig->db) < 1000)
            break;
    }
    sqlite3_finalize(st);
    return rc;
}

void sqlcap_trig_close(sqlcap *c)
{
    if (!c->trig)
        return;
    sqlcap_trig_tabs_free(c->trig);
    for (size_t i = 0; i < c->trig->ngone; i++) {
        free(c->trig->gone[i].name);
        evt_table_unref(c->trig->gone[i].et);
    }
    free(c->trig->gone);
    sqlite3_close(c->trig->db);
    free(c->trig);
    c->trig = NULL;
}

tb_code sqlcap_trigger_uninstall(const char *path, int *ntriggers, bool *had_log, tb_error *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    tb_code rc = TB_OK;
    int n = 0;
    bool log_table = false;
    sqlite3_str *s = sqlite3_str_new(NULL);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(db, 30000);
    sqlite3_str_appendall(s, "BEGIN IMMEDIATE;");
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type='trigger' AND name LIKE '\\_cdc\\_%' ESCAPE '\\'",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_str_appendf(s, "DROP TRIGGER IF EXISTS \"%w\";", sqlite3_column_text(st, 0));
        n++;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_DONE) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: listing triggers: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type='table' AND name='_cdc_log'", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    step = sqlite3_step(st);
    log_table = step == SQLITE_ROW;
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_str_appendall(s, "DROP TABLE IF EXISTS _cdc_log; COMMIT;");
    char *sql = sqlite3_str_finish(s);
    s = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: uninstall: %s", path, sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        TB_INFO(SQLCAP_FAC, "%s: removed %s%d triggers", path, log_table ? "_cdc_log and " : "", n);
        if (ntriggers)
            *ntriggers = n;
        if (had_log)
            *had_log = log_table;
    }
    sqlite3_free(sql);
out:
    sqlite3_finalize(st);
    if (s)
        sqlite3_free(sqlite3_str_finish(s));
    sqlite3_close(db);
    return rc;
}
