/*
 * sqlcap_trig: trigger mode (sqlite-wal.md section 3), any journal mode.
 *
 * INSTALLED OBJECTS (named in an INFO line at every open; all removed by
 * sqlcap_trigger_uninstall, `tributary sqlite uninstall`):
 *   _cdc_log(seq INTEGER PRIMARY KEY, tbl, op I|U|D, pk, old_pk, before,
 *            after)   -- pk/old_pk JSON arrays, before/after JSON objects;
 *            no AUTOINCREMENT (no sqlite_sequence left behind): the cleanup
 *            keeps the newest row, so seq never repeats
 *   _cdc_repl(tbl, pk, before)   -- rows an INSERT/UPDATE would replace
 *   per captured table T: triggers _cdc_<T>_bi, _bu (BEFORE INSERT/UPDATE:
 *   the rows a REPLACE would delete, into _cdc_repl), _ai, _au, _ad.
 * VALUE ENCODING in the JSON: v(x) = CASE typeof(x) WHEN 'blob' THEN
 *   json_object('$b',hex(x)) WHEN 'real' THEN json_object('$f',printf('%!.17g',x))
 *   ELSE x END (json_object rejects BLOBs and prints REAL with 15 digits).
 * A rowid table without a primary key gets a synthetic "rowid" key column.
 * Generated columns (STORED and VIRTUAL) are columns like the others: SQLite
 * computes them for NEW/OLD in triggers and for SELECT.
 *
 * SNAPSHOT: one read transaction reads max(seq) and then every row, as the
 * same JSON images (so values read the same as in the log), in batches of
 * SQLCAP_TRIG_SNAP_BATCH events; the triggers were installed before it.
 * RESUME: a stored seq the log cannot continue (log gone or made again, or a
 * WAL position) is TB_ERR_STATE "resnapshot needed".
 * REPLACE (lang_conflict.html): the rows REPLACE deletes fire DELETE triggers
 * only with recursive_triggers on in the writer; _bi/_bu record the candidates
 * (one SELECT per unique index, and the explicit rowid), _ai/_au log them as
 * deletes only once the row was written (every conflicting row is then gone);
 * a candidate under the new row's own key makes the insert an update. Unique
 * indexes on expressions or with a WHERE clause are left out with a WARN.
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
    bool null_key_noted; /* sqlcap_event_key_null_note */
    char rid[8];         /* how the images name the rowid ("rowid", "_rowid_", "oid"): a rowid table whose
                          * declared key may hold NULL; "" none (sqlcap_trig_rid_of) */
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
    /* the snapshot (sqlcap_trig_snapshot_begin): one read transaction on db
     * from the log's highest sequence to the last row */
    bool snap_open;      /* the read transaction is open */
    size_t snap_tbl;     /* index into tabs of the table being read */
    sqlite3_stmt *snap_st; /* its rows, NULL before the table is begun */
    bool installed_log;  /* this open created _cdc_log */
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
 * or for more than SQLCAP_TRIG_CHUNK columns json_array(json_object(...), ...).
 * rid (not NULL, not empty): the member "$rowid", the row's rowid by that name
 * (the key of a row whose declared key holds NULL takes it). */
static void sqlcap_trig_image_sql(sqlite3_str *s, const char *ref, char **names, size_t n, bool synth, const char *rid)
{
    bool with_rid = rid && *rid;
    size_t ncols = n + (synth ? 1 : 0) + (with_rid ? 1 : 0);
    bool chunked = ncols > SQLCAP_TRIG_CHUNK;
    if (chunked)
        sqlite3_str_appendall(s, "json_array(");
    for (size_t q = 0; q < ncols; q++) {
        bool rid_member = with_rid && q == ncols - 1;
        const char *cn = q < n ? names[q] : rid_member ? "$rowid" : "rowid";
        if (q % SQLCAP_TRIG_CHUNK == 0)
            sqlite3_str_appendf(s, "%sjson_object(", q ? ")," : "");
        sqlite3_str_appendf(s, "%s%Q,", q % SQLCAP_TRIG_CHUNK ? "," : "", cn);
        if (rid_member)
            sqlite3_str_appendf(s, "%s.%s", ref, rid);
        else
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
    sqlite3_str_appendall(s, chunked ? "))" : ")");
}

/* The rows an INSERT (update false) or UPDATE of table tn would replace
 * (lang_conflict.html, REPLACE: the pre-existing rows that cause a UNIQUE or
 * PRIMARY KEY violation are deleted before the row is written; their DELETE
 * triggers fire only with recursive_triggers on, which the application's
 * connection decides): a SELECT of (table, key, before image) per unique
 * index, joined by UNION, appended to s; how many were appended in *nsel.
 * An index column compares with the index's collation and `=`, so NULLs never
 * conflict, as in a unique index. The rowid conflicts too (an explicit rowid;
 * in a BEFORE INSERT trigger an automatic rowid reads -1, never a conflict).
 * An UPDATE's own row is left out. Unique indexes on expressions or with a
 * WHERE clause are left out with a WARN (their deletions are not captured). */
static tb_code sqlcap_trig_replaced_sql(sqlcap *c, sqlite3_str *s, const char *tn, char **names, size_t n,
                                        const size_t *keys, size_t npk, bool synth, bool rowid_tbl, const char *rid,
                                        bool update, int *nsel, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    sqlite3_stmt *il = NULL, *ix = NULL;
    tb_code rc = TB_OK;
    *nsel = 0;
    /* the SELECT list and, for an UPDATE, the condition that leaves the updated row out */
    sqlite3_str *head = sqlite3_str_new(NULL), *self = sqlite3_str_new(NULL);
    sqlite3_str_appendf(head, "SELECT %Q,", tn);
    sqlcap_trig_key_sql(head, "_o", names, keys, npk, synth);
    sqlite3_str_appendall(head, ",");
    sqlcap_trig_image_sql(head, "_o", names, n, synth, rid);
    sqlite3_str_appendf(head, " FROM \"%w\" AS _o WHERE ", tn);
    if (update) {
        if (rowid_tbl) {
            sqlite3_str_appendall(self, " AND _o.rowid <> OLD.rowid");
        } else {
            sqlite3_str_appendall(self, " AND NOT (");
            for (size_t k = 0; k < npk; k++)
                sqlite3_str_appendf(self, "%s_o.\"%w\" IS OLD.\"%w\"", k ? " AND " : "", names[keys[k]],
                                    names[keys[k]]);
            sqlite3_str_appendall(self, ")");
        }
    }
    bool oom = sqlite3_str_errcode(head) != SQLITE_OK || sqlite3_str_errcode(self) != SQLITE_OK;
    char *hd = sqlite3_str_finish(head), *sf = sqlite3_str_finish(self); /* NULL: empty */
    if (oom || !hd) {
        sqlite3_free(hd);
        sqlite3_free(sf);
        goto nomem;
    }
    if (rowid_tbl) {
        sqlite3_str_appendf(s, "%s _o.rowid = NEW.rowid AND %s", hd,
                            update ? "_o.rowid <> OLD.rowid" : "NEW.rowid <> -1");
        (*nsel)++;
    }
    if (sqlite3_prepare_v2(t->db, "SELECT name, partial FROM pragma_index_list(?) WHERE \"unique\"", -1, &il, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(t->db, "SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key ORDER BY seqno", -1,
                           &ix, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: trigger mode install: indexes of %s: %s", c->path, tn,
                          sqlite3_errmsg(t->db));
        goto out;
    }
    sqlite3_bind_text(il, 1, tn, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(il) == SQLITE_ROW) {
        const char *in = (const char *)sqlite3_column_text(il, 0);
        if (sqlite3_column_int(il, 1)) {
            if (!update)
                TB_WARN(SQLCAP_FAC, "%s: table %s: unique index %s has a WHERE clause: a row that INSERT or UPDATE "
                        "OR REPLACE deletes through it is not captured in trigger mode (its delete is missing; "
                        "WAL mode sends it)", c->path, tn, in);
            continue;
        }
        sqlite3_str *cond = sqlite3_str_new(NULL);
        bool expr = false;
        int nk = 0;
        sqlite3_reset(ix);
        sqlite3_bind_text(ix, 1, in, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(ix) == SQLITE_ROW) {
            const char *cn = (const char *)sqlite3_column_text(ix, 1);
            const char *coll = (const char *)sqlite3_column_text(ix, 2);
            if (sqlite3_column_int(ix, 0) < 0 || !cn) {
                expr = true;
                break;
            }
            sqlite3_str_appendf(cond, "%s_o.\"%w\" = NEW.\"%w\" COLLATE \"%w\"", nk++ ? " AND " : "", cn, cn,
                                coll ? coll : "BINARY");
        }
        bool coom = sqlite3_str_errcode(cond) != SQLITE_OK;
        char *cd = sqlite3_str_finish(cond); /* NULL: empty */
        if (coom) {
            sqlite3_free(hd);
            sqlite3_free(sf);
            goto nomem;
        }
        if (expr && !update)
            TB_WARN(SQLCAP_FAC, "%s: table %s: unique index %s is on an expression: a row that INSERT or UPDATE OR "
                    "REPLACE deletes through it is not captured in trigger mode (its delete is missing; WAL mode "
                    "sends it)", c->path, tn, in);
        if (!expr && nk > 0) {
            sqlite3_str_appendf(s, "%s%s %s%s", *nsel ? " UNION " : "", hd, cd, sf ? sf : "");
            (*nsel)++;
        }
        sqlite3_free(cd);
    }
    sqlite3_free(hd);
    sqlite3_free(sf);
    if (sqlite3_str_errcode(s) != SQLITE_OK)
        goto nomem;
    goto out;
nomem:
    rc = tb_error_set(err, TB_ERR_NOMEM, false, "trigger mode: out of memory (table %s)", tn);
out:
    sqlite3_finalize(il);
    sqlite3_finalize(ix);
    return rc;
}

/* The name by which the images read the rowid of a rowid table whose declared key may hold NULL
 * (a key column without NOT NULL that is not the rowid itself, INTEGER PRIMARY KEY), into rid:
 * the first of rowid, _rowid_ and oid that no column takes (SQLite gives the name to the column);
 * "" when the key cannot hold NULL or every name is a column's. */
static void sqlcap_trig_rid_of(char rid[8], bool rowid_tbl, char **names, char **decl, const int *pk, const int *nn,
                               size_t n, size_t npk)
{
    rid[0] = 0;
    bool nullable = false;
    for (size_t k = 0; k < n; k++)
        nullable |= pk[k] > 0 && !nn[k] && !(npk == 1 && sqlite3_stricmp(decl[k], "INTEGER") == 0);
    if (!rowid_tbl || !nullable)
        return;
    static const char *const cand[3] = {"rowid", "_rowid_", "oid"};
    for (int i = 0; i < 3; i++) {
        bool taken = false;
        for (size_t k = 0; k < n && !taken; k++)
            taken = sqlite3_stricmp(names[k], cand[i]) == 0;
        if (!taken) {
            snprintf(rid, 8, "%s", cand[i]);
            return;
        }
    }
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
    if (sqlite3_prepare_v2(t->db, "SELECT name, type, pk, \"notnull\" FROM pragma_table_xinfo(?) WHERE hidden IN (0, 2, 3)", -1,
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
    bool rowid_tbl = false;
    {
        char *q = sqlite3_mprintf("SELECT rowid FROM \"%w\" LIMIT 0", tn);
        sqlite3_stmt *rs = NULL;
        rowid_tbl = q && sqlite3_prepare_v2(t->db, q, -1, &rs, NULL) == SQLITE_OK;
        sqlite3_finalize(rs);
        sqlite3_free(q);
    }
    sqlcap_ttab *nt = sqlcap_grow(t->tabs, t->ntabs, &t->captabs, sizeof *nt, 8);
    if (!nt)
        goto nomem;
    t->tabs = nt;
    t->tabs[t->ntabs] = (sqlcap_ttab){.name = name, .et = et};
    const char *rid = t->tabs[t->ntabs].rid;
    sqlcap_trig_rid_of(t->tabs[t->ntabs].rid, rowid_tbl && !synth, names, decl, pk, nn, n, npk);
    t->ntabs++;
    name = NULL;
    et = NULL;
    /* triggers: the change log (ai, au, ad) and the rows REPLACE deletes (bi,
     * bu: the candidates go to _cdc_repl before the row is written; ai/au find
     * them there only if the row was written, i.e. every conflicting row was
     * deleted, and log their deletes before the row's own change; an INSERT OR
     * IGNORE, an upsert's DO NOTHING/DO UPDATE or a failed statement never
     * reaches ai and its candidates are cleared by the next bi/bu; with
     * recursive_triggers on, ad logs such a delete itself and takes it out of
     * _cdc_repl) */
    for (int k = 0; k < 2; k++) {
        int nsel = 0;
        sqlite3_str_appendf(s, "DROP TRIGGER IF EXISTS \"_cdc_%w_%s\";", tn, k ? "bu" : "bi");
        sqlite3_str_appendf(s, "CREATE TRIGGER \"_cdc_%w_%s\" BEFORE %s ON \"%w\" BEGIN DELETE FROM _cdc_repl WHERE "
                               "tbl = %Q; INSERT INTO _cdc_repl(tbl, pk, before) ",
                            tn, k ? "bu" : "bi", k ? "UPDATE" : "INSERT", tn, tn);
        if ((rc = sqlcap_trig_replaced_sql(c, s, tn, names, n, keys, npk, synth, rowid_tbl, rid, k == 1, &nsel,
                                           err)) != TB_OK)
            goto out;
        if (nsel == 0) /* WITHOUT ROWID tables always have their primary key: not reached */
            sqlite3_str_appendall(s, "SELECT NULL, NULL, NULL WHERE 0");
        sqlite3_str_appendall(s, "; END;");
    }
    static const char *const kinds[3] = {"ai", "au", "ad"};
    for (int k = 0; k < 3; k++) {
        const char *nr = k == 2 ? "OLD" : "NEW";
        sqlite3_str_appendf(s, "DROP TRIGGER IF EXISTS \"_cdc_%w_%s\";", tn, kinds[k]);
        sqlite3_str_appendf(s, "CREATE TRIGGER \"_cdc_%w_%s\" AFTER %s ON \"%w\" BEGIN ", tn, kinds[k],
                            k == 0 ? "INSERT" : k == 1 ? "UPDATE" : "DELETE", tn);
        if (k == 0) {
            /* a replaced row with the new row's key is not deleted: the insert
             * is logged as an update from it (as WAL mode sees it: the row
             * under that key changed) */
            sqlite3_str *nk = sqlite3_str_new(NULL);
            sqlcap_trig_key_sql(nk, "NEW", names, keys, npk, synth);
            bool oom = sqlite3_str_errcode(nk) != SQLITE_OK;
            char *nks = sqlite3_str_finish(nk);
            if (oom || !nks) {
                sqlite3_free(nks);
                goto nomem;
            }
            sqlite3_str_appendf(s, "INSERT INTO _cdc_log(tbl,op,pk,old_pk,before,after) SELECT tbl,'D',pk,NULL,before,"
                                   "NULL FROM _cdc_repl WHERE tbl = %Q AND pk <> %s; "
                                   "INSERT INTO _cdc_log(tbl,op,pk,old_pk,before,after) SELECT %Q, CASE WHEN "
                                   "b.before IS NULL THEN 'I' ELSE 'U' END, %s, CASE WHEN b.before IS NULL THEN NULL "
                                   "ELSE %s END, b.before, ",
                                tn, nks, tn, nks, nks);
            sqlcap_trig_image_sql(s, "NEW", names, n, synth, rid);
            sqlite3_str_appendf(s, " FROM (SELECT (SELECT before FROM _cdc_repl WHERE tbl = %Q AND pk = %s) AS before) "
                                   "AS b; DELETE FROM _cdc_repl WHERE tbl = %Q; END;",
                                tn, nks, tn);
            sqlite3_free(nks);
            continue;
        }
        if (k == 1)
            sqlite3_str_appendf(s, "INSERT INTO _cdc_log(tbl,op,pk,old_pk,before,after) SELECT tbl,'D',pk,NULL,before,"
                                   "NULL FROM _cdc_repl WHERE tbl = %Q; DELETE FROM _cdc_repl WHERE tbl = %Q; ",
                                tn, tn);
        else {
            sqlite3_str_appendf(s, "DELETE FROM _cdc_repl WHERE tbl = %Q AND pk = ", tn);
            sqlcap_trig_key_sql(s, "OLD", names, keys, npk, synth);
            sqlite3_str_appendall(s, "; ");
        }
        sqlite3_str_appendf(s, "INSERT INTO _cdc_log(tbl,op,pk,old_pk,before,after) VALUES(%Q,'%c',", tn, "IUD"[k]);
        sqlcap_trig_key_sql(s, nr, names, keys, npk, synth);
        sqlite3_str_appendall(s, ",");
        if (k == 1) {
            sqlcap_trig_key_sql(s, "OLD", names, keys, npk, synth);
            sqlite3_str_appendall(s, ",");
        } else
            sqlite3_str_appendall(s, "NULL,");
        if (k != 0)
            sqlcap_trig_image_sql(s, "OLD", names, n, synth, rid);
        else
            sqlite3_str_appendall(s, "NULL");
        sqlite3_str_appendall(s, ",");
        if (k != 2)
            sqlcap_trig_image_sql(s, "NEW", names, n, synth, rid);
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
static tb_code sqlcap_trig_install(sqlcap *c, bool announce, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    sqlite3_stmt *tl = NULL, *ci = NULL;
    sqlite3_str *s = sqlite3_str_new(NULL);
    tb_code rc = TB_OK;
    sqlcap_trig_tabs_free(t);
    /* seq: INTEGER PRIMARY KEY without AUTOINCREMENT (which would leave the
     * sqlite_sequence table, which SQLite cannot drop, in the application's
     * database): sqlcap_trig_ack never deletes the newest row, so a new row's
     * seq (the largest rowid + 1) is never one handed out before */
    sqlite3_str_appendall(s, "CREATE TABLE IF NOT EXISTS _cdc_log(seq INTEGER PRIMARY KEY, "
                             "tbl TEXT NOT NULL, op TEXT NOT NULL, pk TEXT NOT NULL, old_pk TEXT, before TEXT, after TEXT);"
                             "CREATE TABLE IF NOT EXISTS _cdc_repl(tbl TEXT NOT NULL, pk TEXT NOT NULL, before TEXT);");
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
                                  "AND name NOT IN ('_cdc_log', '_cdc_repl') AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
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
    if (announce) {
        sqlite3_str *names = sqlite3_str_new(NULL);
        for (size_t i = 0; i < t->ntabs && i < 20; i++)
            sqlite3_str_appendf(names, "%s%s", i ? ", " : "", t->tabs[i].name);
        if (t->ntabs > 20)
            sqlite3_str_appendf(names, " and %zu more", t->ntabs - 20);
        char *nl = sqlite3_str_finish(names);
        TB_INFO(SQLCAP_FAC, "%s: trigger mode installed in the application's database: the tables _cdc_log (change "
                "log) and _cdc_repl (rows REPLACE deletes) and %zu triggers _cdc_<table>_{bi,bu,ai,au,ad} on %zu "
                "table(s)%s%s%s; they stay while the connector is stopped (changes go on being logged); to remove "
                "them when it stops for good: tributary sqlite uninstall --config <file>",
                c->path, 5 * t->ntabs, t->ntabs, nl && *nl ? " (" : "", nl ? nl : "", nl && *nl ? ")" : "");
        sqlite3_free(nl);
    }
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

/* The highest sequence the change log has handed out (0: none), from its
 * newest row (sqlcap_trig_ack keeps it) and, for a log made with
 * AUTOINCREMENT, its counter in sqlite_sequence. *exists: whether _cdc_log is
 * there at all. */
static tb_code sqlcap_trig_max_seq(sqlcap *c, bool *exists, int64_t *seq, tb_error *err)
{
    sqlite3 *db = c->trig->db;
    sqlite3_stmt *st = NULL;
    bool have_seq_tbl = false;
    *exists = false;
    *seq = 0;
    int r = sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='_cdc_log'), "
                                   "(SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='sqlite_sequence')",
                               -1, &st, NULL);
    if (r == SQLITE_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        *exists = sqlite3_column_int(st, 0) > 0;
        have_seq_tbl = sqlite3_column_int(st, 1) > 0;
        r = SQLITE_OK;
    }
    sqlite3_finalize(st);
    st = NULL;
    for (int q = 0; r == SQLITE_OK && q < 2; q++) {
        if (!*exists || (q == 1 && !have_seq_tbl))
            break;
        r = sqlite3_prepare_v2(db, q ? "SELECT seq FROM sqlite_sequence WHERE name='_cdc_log'"
                                     : "SELECT coalesce(max(seq), 0) FROM _cdc_log", -1, &st, NULL);
        if (r == SQLITE_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t v = sqlite3_column_int64(st, 0);
            if (v > *seq)
                *seq = v;
        }
        if (r == SQLITE_ROW || r == SQLITE_DONE)
            r = SQLITE_OK;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (r != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: reading _cdc_log: %s", c->path, sqlite3_errmsg(db));
    return TB_OK;
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
    bool existed = false;
    int64_t known = 0;
    tb_code rc = sqlcap_trig_max_seq(c, &existed, &known, err);
    if (rc != TB_OK)
        return rc;
    if (start && start->kind != TB_POS_NONE) {
        /* the changes after the stored position must all be in the log: not
         * if the log was removed (sqlite uninstall) or made again since, nor
         * for a position of WAL mode */
        const char *why = start->kind != TB_POS_SQLITE_LOG ? "the stored position is not a change-log sequence "
                                                             "(source.sqlite.mode was changed?)"
                          : !existed ? "the change log _cdc_log is gone (removed with `tributary sqlite uninstall`?)"
                          : known < start->seq ? "the change log _cdc_log was made again since (its sequence is lower)"
                                               : NULL;
        if (why)
            return tb_error_set(err, TB_ERR_STATE, false,
                                "%s: trigger mode cannot resume after the stored position: %s, so changes made "
                                "meanwhile were not logged: resnapshot needed (snapshot.mode=when_needed snapshots "
                                "again by itself; or forget the position: tributary offsets set --position none)",
                                c->path, why);
    }
    t->installed_log = !existed;
    if ((rc = sqlcap_trig_install(c, true, err)) != TB_OK)
        return rc;
    t->last_seq = start && start->kind == TB_POS_SQLITE_LOG ? start->seq : known;
    c->pos.kind = TB_POS_SQLITE_LOG;
    c->pos.seq = t->last_seq;
    return TB_OK;
}

/* The null-key INFO flag of table name (a dummy for a table not found). */
static bool *sqlcap_trig_noted(sqlcap_trig *t, const char *name)
{
    static bool none;
    for (size_t i = 0; i < t->ntabs; i++)
        if (strcmp(t->tabs[i].name, name) == 0)
            return &t->tabs[i].null_key_noted;
    for (size_t i = t->ngone; i-- > 0;)
        if (strcmp(t->gone[i].name, name) == 0)
            return &t->gone[i].null_key_noted;
    none = false;
    return &none;
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
    const evt_jv *rid = evt_jv_get(o, "$rowid"); /* sqlcap_trig_image_sql */
    if (rid && evt_jv_type_of(rid) == EVT_JV_NUMBER) {
        size_t len;
        evt_event_set_rowid(ev, img, strtoll(evt_jv_text(rid, &len), NULL, 10));
    }
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
        rc = sqlcap_trig_install(c, false, err);
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
        sqlcap_event_key_null_note(et, ev, sqlcap_trig_noted(t, tbl));
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

/* ---------------------------------------------------------------- snapshot */

/* The rows of table et as JSON images, built as the triggers build them
 * (sqlcap_trig_image_sql), so a row reads the same in the snapshot as in
 * the change log. */
static tb_code sqlcap_trig_rows_prepare(sqlcap *c, const evt_table *et, sqlite3_stmt **st, tb_error *err)
{
    size_t n = evt_table_ncols(et);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    for (size_t k = 0; k < n; k++)
        names[k] = TB_UNCONST(evt_table_column(et, k)->name);
    sqlite3_str *s = sqlite3_str_new(NULL);
    sqlite3_str_appendall(s, "SELECT ");
    const char *rid = NULL;
    for (size_t i = 0; i < c->trig->ntabs && !rid; i++)
        if (c->trig->tabs[i].et == et)
            rid = c->trig->tabs[i].rid;
    sqlcap_trig_image_sql(s, "_r", names, n, false, rid);
    sqlite3_str_appendf(s, " FROM \"%w\" AS _r", evt_table_name(et));
    free(names);
    char *sql = sqlite3_str_finish(s);
    if (!sql)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    int r = sqlite3_prepare_v2(c->trig->db, sql, -1, st, NULL);
    sqlite3_free(sql);
    if (r != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: reading table %s: %s", c->path, evt_table_name(et),
                            sqlite3_errmsg(c->trig->db));
    return TB_OK;
}

/* An op=r event of the current row of st (sqlcap_trig_rows_prepare). */
static tb_code sqlcap_trig_row_event(sqlcap *c, const evt_table *et, sqlite3_stmt *st, evt_event **out, tb_error *err)
{
    evt_event *ev = evt_event_new(EVT_OP_READ, TB_UNCONST(et));
    if (!ev)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    evt_event_set_connector(ev, EVT_CONN_SQLITE);
    tb_code rc = sqlcap_trig_image(ev, EVT_AFTER, et, (const char *)sqlite3_column_text(st, 0), err);
    if (rc != TB_OK) {
        evt_event_free(ev);
        return tb_error_prefix(err, rc, "%s: table %s: ", c->path, evt_table_name(et));
    }
    sqlcap_event_key_null_note(et, ev, sqlcap_trig_noted(c->trig, evt_table_name(et)));
    *out = ev;
    return TB_OK;
}

static void sqlcap_trig_snap_end(sqlcap_trig *t)
{
    sqlite3_finalize(t->snap_st);
    t->snap_st = NULL;
    if (t->snap_open)
        sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL);
    t->snap_open = false;
}

tb_code sqlcap_trig_snapshot_begin(sqlcap *c, tb_position *pos, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    int64_t seq = 0;
    /* one read transaction: the log's highest sequence and every row. On a
     * rollback-journal database it holds a SHARED lock (no commit until it
     * ends), in WAL mode a read snapshot. The triggers were installed before
     * it began, so every change after its sequence is in the log; a schema
     * changed since the install means other triggers: install them again. */
    for (int attempt = 0;; attempt++) {
        bool exists = false;
        tb_code rc;
        if (sqlite3_exec(t->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            return tb_error_set(err, TB_ERR_SOURCE, true, "%s: snapshot: %s", c->path, sqlite3_errmsg(t->db));
        t->snap_open = true;
        if ((rc = sqlcap_trig_max_seq(c, &exists, &seq, err)) != TB_OK) {
            sqlcap_trig_snap_end(t);
            return rc;
        }
        if (exists && sqlcap_trig_schema_version(t->db) == t->schema_version)
            break;
        sqlcap_trig_snap_end(t);
        if (attempt >= 10)
            return tb_error_set(err, TB_ERR_SOURCE, true, "%s: snapshot: the schema kept changing while the "
                                "change-log triggers were installed (10 tries)", c->path);
        if ((rc = sqlcap_trig_install(c, false, err)) != TB_OK)
            return rc;
    }
    t->snap_tbl = 0;
    t->last_seq = seq;
    c->pos.kind = TB_POS_SQLITE_LOG;
    c->pos.seq = seq;
    c->snapping = true;
    if (pos) {
        tb_position_init(pos);
        pos->kind = TB_POS_SQLITE_LOG;
        pos->seq = seq;
    }
    TB_INFO(SQLCAP_FAC, "%s: trigger mode snapshot of %zu table(s) at change-log sequence %lld (one read "
            "transaction%s)", c->path, t->ntabs, (long long)seq,
            sqlite3_get_autocommit(t->db) ? "" : "; on a rollback-journal database the application's commits wait "
            "until it ends");
    return TB_OK;
}

tb_code sqlcap_trig_snapshot_count(sqlcap *c, sqlcap_count_fn fn, void *opaque, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    for (size_t i = 0; i < t->ntabs; i++) {
        sqlite3_stmt *st = NULL;
        char *q = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", t->tabs[i].name);
        int r = q ? sqlite3_prepare_v2(t->db, q, -1, &st, NULL) : SQLITE_NOMEM;
        sqlite3_free(q);
        if (r == SQLITE_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
            fn(evt_table_db(t->tabs[i].et), t->tabs[i].name, sqlite3_column_int64(st, 0), opaque);
        sqlite3_finalize(st);
        if (r != SQLITE_ROW)
            return tb_error_set(err, TB_ERR_SOURCE, true, "%s: counting %s: %s", c->path, t->tabs[i].name,
                                sqlite3_errmsg(t->db));
    }
    return TB_OK;
}

#define SQLCAP_TRIG_SNAP_BATCH 1000

tb_code sqlcap_trig_snap_step(sqlcap *c, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    tb_code rc = TB_OK;
again:
    while (t->snap_tbl < t->ntabs && c->evq.n < SQLCAP_TRIG_SNAP_BATCH) {
        const evt_table *et = t->tabs[t->snap_tbl].et;
        if (!t->snap_st && (rc = sqlcap_trig_rows_prepare(c, et, &t->snap_st, err)) != TB_OK)
            return rc;
        int r = sqlite3_step(t->snap_st);
        if (r == SQLITE_DONE) {
            sqlite3_finalize(t->snap_st);
            t->snap_st = NULL;
            t->snap_tbl++;
            continue;
        }
        if (r != SQLITE_ROW)
            return tb_error_set(err, TB_ERR_SOURCE, true, "%s: snapshot of %s: %s", c->path, evt_table_name(et),
                                sqlite3_errmsg(t->db));
        evt_event *ev = NULL;
        if ((rc = sqlcap_trig_row_event(c, et, t->snap_st, &ev, err)) != TB_OK)
            return rc;
        evt_event **nv = sqlcap_grow(c->evq.v, c->evq.n, &c->evq.cap, sizeof *nv, 256);
        if (!nv) {
            evt_event_free(ev);
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        }
        c->evq.v = nv;
        c->evq.v[c->evq.n++] = ev;
    }
    int64_t now = tb_wall_ms();
    for (size_t i = 0; i < c->evq.n; i++) {
        evt_event_set_position(c->evq.v[i], &c->pos);
        evt_event_set_snapshot(c->evq.v[i], EVT_SNAPSHOT_TRUE);
        evt_event_set_commit_ts_ms(c->evq.v[i], now);
    }
    bool done = t->snap_tbl >= t->ntabs;
    if (!sqlcap_snap_hold(c, done, &rc))
        goto again; /* one row read, held back: read on */
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "%s: snapshot: out of memory", c->path);
    if (done) {
        sqlcap_trig_snap_end(t);
        c->snapping = false;
        TB_INFO(SQLCAP_FAC, "%s: trigger mode snapshot read; streaming from change-log sequence %lld", c->path,
                (long long)t->last_seq);
    }
    return TB_OK;
}

tb_code sqlcap_trig_scan(sqlcap *c, sqlcap_table_fn on_table, sqlcap_row_fn on_row, void *opaque, tb_error *err)
{
    sqlcap_trig *t = c->trig;
    if (t->snap_open)
        return tb_error_set(err, TB_ERR_STATE, false, "%s: scan during the snapshot", c->path);
    if (sqlite3_exec(t->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: scan: %s", c->path, sqlite3_errmsg(t->db));
    tb_code rc = TB_OK;
    for (size_t i = 0; rc == TB_OK && i < t->ntabs; i++) {
        evt_table *et = t->tabs[i].et;
        sqlite3_stmt *st = NULL;
        if ((rc = on_table(opaque, et, false, err)) != TB_OK || (rc = sqlcap_trig_rows_prepare(c, et, &st, err)) != TB_OK)
            break;
        int r;
        while (rc == TB_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
            evt_event *ev = NULL;
            if ((rc = sqlcap_trig_row_event(c, et, st, &ev, err)) != TB_OK)
                break;
            evt_event_set_position(ev, &c->pos);
            rc = on_row(opaque, ev, err);
            evt_event_free(ev);
        }
        if (rc == TB_OK && r != SQLITE_DONE)
            rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s: scan of %s: %s", c->path, evt_table_name(et),
                              sqlite3_errmsg(t->db));
        sqlite3_finalize(st);
        if (rc == TB_OK)
            rc = on_table(opaque, et, true, err);
    }
    sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL);
    return rc;
}

tb_code sqlcap_trig_ack(sqlcap *c, const tb_position *pos, tb_error *err)
{
    /* not inside the snapshot's read transaction: the rows up to its
     * sequence go with the next acknowledgement after it */
    if (pos->kind != TB_POS_SQLITE_LOG || c->trig->snap_open)
        return TB_OK;
    sqlite3_stmt *st;
    /* the newest row stays: the next seq (largest rowid + 1) must stay above
     * every seq handed out (_cdc_log has no AUTOINCREMENT) */
    if (sqlite3_prepare_v2(c->trig->db,
                           "DELETE FROM _cdc_log WHERE seq IN (SELECT seq FROM _cdc_log WHERE seq <= ? AND seq < "
                           "(SELECT max(seq) FROM _cdc_log) ORDER BY seq LIMIT 1000)",
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
    sqlcap_trig_snap_end(c->trig);
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
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type='table' AND name IN ('_cdc_log', '_cdc_repl')", -1, &st, NULL) !=
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
    sqlite3_str_appendall(s, "DROP TABLE IF EXISTS _cdc_log; DROP TABLE IF EXISTS _cdc_repl; COMMIT;");
    char *sql = sqlite3_str_finish(s);
    s = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s: uninstall: %s", path, sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        TB_INFO(SQLCAP_FAC, "%s: removed %s%d triggers", path, log_table ? "_cdc_log, _cdc_repl and " : "", n);
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
