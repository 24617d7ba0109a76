/*
 * sqlcap_schema: sqlite_schema (the table b-tree rooted at page 1, columns
 * type, name, tbl_name, rootpage, sql) decoded from a page view, and each
 * table's decoding info derived exactly by executing its CREATE TABLE text in
 * a private in-memory SQLite (sqlite-wal.md 2.6): column names, declared
 * types, affinity, defaults, primary key order, INTEGER PRIMARY KEY alias and
 * the WITHOUT ROWID storage order (PRAGMA index_xinfo of the pk index).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "evt_json.h"
#include "sqlcap_int.h"
#include "tb_log.h"

/*
 * VIRTUAL generated columns are not in the record: their values are computed
 * the way SQLite computes them when it reads the row. The private database
 * holds a copy of the table (its CREATE text run there, then renamed to a
 * private name) for each table version with VIRTUAL columns; a row image is
 * inserted into it (its plain columns, bound with the values the record holds:
 * the column's affinity, collation and the other generated columns apply as in
 * the source), its VIRTUAL columns are read back with a SELECT and the row is
 * deleted. The three statements are prepared once per table version. STORED
 * columns come from the record (the copy computes its own, which the SELECT
 * does not read). CHECK constraints are not enforced there (the row was
 * accepted by the source already).
 */
#define SQLCAP_GEN_RING 4 /* TEXT/BLOB results kept per table: up to this many decoded rows alive */

typedef struct sqlcap_gen {
    sqlite3 *db;              /* the engine's private database (borrowed) */
    char *tname;              /* the copy's name there */
    sqlite3_stmt *ins, *sel, *del;
    size_t *in_cols, nin;     /* plain columns bound to ins, in order */
    size_t *v_cols, nv;       /* VIRTUAL columns, the columns of sel */
    tb_buf ring[SQLCAP_GEN_RING];
    unsigned next;
} sqlcap_gen;

static void sqlcap_gen_free(sqlcap_gen *g)
{
    if (!g)
        return;
    sqlite3_finalize(g->ins);
    sqlite3_finalize(g->sel);
    sqlite3_finalize(g->del);
    if (g->tname) {
        char *q = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\"", g->tname);
        if (q)
            sqlite3_exec(g->db, q, NULL, NULL, NULL);
        sqlite3_free(q);
    }
    sqlite3_free(g->tname);
    free(g->in_cols);
    free(g->v_cols);
    for (int i = 0; i < SQLCAP_GEN_RING; i++)
        tb_buf_free(&g->ring[i]);
    free(g);
}

/* The evaluator of t's VIRTUAL columns: the table t->name (just created in
 * mem from t->sql) renamed to a private name, its statements prepared. NULL
 * with a message in why (sqlite3_free) when it cannot be made. */
static sqlcap_gen *sqlcap_gen_new(sqlite3 *mem, const sqlcap_tbl *t, size_t ncols, char **why)
{
    sqlcap_gen *g = calloc(1, sizeof *g);
    sqlite3_str *ins = sqlite3_str_new(mem), *sel = sqlite3_str_new(mem);
    char *q = NULL, *qi = NULL, *qs = NULL;
    *why = NULL;
    if (g) {
        g->db = mem;
        for (int i = 0; i < SQLCAP_GEN_RING; i++)
            tb_buf_init(&g->ring[i], 0);
    }
    if (!g || !(g->in_cols = calloc(ncols + 1, sizeof *g->in_cols)) ||
        !(g->v_cols = calloc(ncols + 1, sizeof *g->v_cols)))
        goto fail;
    g->tname = sqlite3_mprintf("tributary generated %p", (const void *)t);
    q = sqlite3_mprintf("PRAGMA ignore_check_constraints = ON; ALTER TABLE \"%w\" RENAME TO \"%w\"", t->name,
                        g->tname);
    if (!g->tname || !q)
        goto fail;
    if (sqlite3_exec(mem, q, NULL, NULL, NULL) != SQLITE_OK) {
        *why = sqlite3_mprintf("%s", sqlite3_errmsg(mem));
        sqlite3_free(g->tname); /* not made: nothing to drop */
        g->tname = NULL;
        goto fail;
    }
    sqlite3_str_appendf(ins, "INSERT INTO \"%w\"(", g->tname);
    sqlite3_str_appendall(sel, "SELECT ");
    for (size_t c = 0; c < ncols; c++) {
        if (t->gen[c] == 0) {
            sqlite3_str_appendf(ins, "%s\"%w\"", g->nin ? ", " : "", t->colnames[c]);
            g->in_cols[g->nin++] = c;
        } else if (t->gen[c] == 2) {
            sqlite3_str_appendf(sel, "%s\"%w\"", g->nv ? ", " : "", t->colnames[c]);
            g->v_cols[g->nv++] = c;
        }
    }
    sqlite3_str_appendall(ins, ") VALUES (");
    for (size_t i = 0; i < g->nin; i++)
        sqlite3_str_appendall(ins, i ? ", ?" : "?");
    sqlite3_str_appendall(ins, ")");
    sqlite3_str_appendf(sel, " FROM \"%w\"", g->tname);
    qi = sqlite3_str_finish(ins);
    qs = sqlite3_str_finish(sel);
    ins = sel = NULL;
    sqlite3_free(q);
    q = sqlite3_mprintf("DELETE FROM \"%w\"", g->tname);
    if (!qi || !qs || !q)
        goto fail;
    if (sqlite3_prepare_v2(mem, qi, -1, &g->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(mem, qs, -1, &g->sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(mem, q, -1, &g->del, NULL) != SQLITE_OK) {
        *why = sqlite3_mprintf("%s", sqlite3_errmsg(mem));
        goto fail;
    }
    sqlite3_free(q);
    sqlite3_free(qi);
    sqlite3_free(qs);
    return g;
fail:
    sqlite3_free(sqlite3_str_finish(ins));
    sqlite3_free(sqlite3_str_finish(sel));
    sqlite3_free(q);
    sqlite3_free(qi);
    sqlite3_free(qs);
    sqlcap_gen_free(g);
    return NULL;
}

tb_code sqlcap_gen_eval(const sqlcap_tbl *t, sqlcap_val *vals, tb_error *err)
{
    sqlcap_gen *g = t->gv;
    int rc;
    tb_buf *b = &g->ring[g->next++ % SQLCAP_GEN_RING];
    tb_buf_reset(b);
    sqlite3_reset(g->ins);
    for (size_t i = 0; i < g->nin; i++) {
        const sqlcap_val *v = &vals[g->in_cols[i]];
        int k = (int)i + 1;
        switch (v->type) {
        case SQLCAP_INT: rc = sqlite3_bind_int64(g->ins, k, v->i); break;
        case SQLCAP_REAL: rc = sqlite3_bind_double(g->ins, k, v->d); break;
        case SQLCAP_TEXT: rc = sqlite3_bind_text64(g->ins, k, (const char *)v->p, v->n, SQLITE_STATIC, SQLITE_UTF8); break;
        case SQLCAP_BLOB: rc = sqlite3_bind_blob64(g->ins, k, v->n ? (const void *)v->p : "", v->n, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(g->ins, k); break;
        }
        if (rc != SQLITE_OK)
            goto sqlerr;
    }
    if (sqlite3_step(g->ins) != SQLITE_DONE)
        goto sqlerr;
    sqlite3_reset(g->ins);
    sqlite3_clear_bindings(g->ins); /* the bound values borrow the page */
    if (sqlite3_step(g->sel) != SQLITE_ROW)
        goto sqlerr;
    for (size_t j = 0; j < g->nv; j++) {
        sqlcap_val *v = &vals[g->v_cols[j]];
        memset(v, 0, sizeof *v);
        switch (sqlite3_column_type(g->sel, (int)j)) {
        case SQLITE_INTEGER:
            v->type = SQLCAP_INT;
            v->i = sqlite3_column_int64(g->sel, (int)j);
            break;
        case SQLITE_FLOAT:
            v->type = SQLCAP_REAL;
            v->d = sqlite3_column_double(g->sel, (int)j);
            break;
        case SQLITE_TEXT:
        case SQLITE_BLOB: {
            bool blob = sqlite3_column_type(g->sel, (int)j) == SQLITE_BLOB;
            const void *p = blob ? sqlite3_column_blob(g->sel, (int)j) : (const void *)sqlite3_column_text(g->sel, (int)j);
            v->type = blob ? SQLCAP_BLOB : SQLCAP_TEXT;
            v->n = (size_t)sqlite3_column_bytes(g->sel, (int)j);
            /* offsets first: the buffer may move while later values are appended */
            v->i = (int64_t)b->len;
            if ((v->n && (!p || tb_buf_append(b, p, v->n) != TB_OK)) || tb_buf_append(b, "", 1) != TB_OK) {
                sqlite3_reset(g->sel);
                return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory computing its generated "
                                    "columns", t->name);
            }
            break;
        }
        default: break;
        }
    }
    for (size_t j = 0; j < g->nv; j++) {
        sqlcap_val *v = &vals[g->v_cols[j]];
        if (v->type == SQLCAP_TEXT || v->type == SQLCAP_BLOB) {
            v->p = (const uint8_t *)b->data + v->i;
            v->i = 0;
        }
    }
    sqlite3_reset(g->sel);
    if (sqlite3_step(g->del) != SQLITE_DONE)
        goto sqlerr;
    sqlite3_reset(g->del);
    return TB_OK;
sqlerr:;
    tb_code e = tb_error_set(err, TB_ERR_SOURCE, false, "table %s: cannot compute its VIRTUAL generated columns: %s",
                             t->name, sqlite3_errmsg(g->db));
    sqlite3_reset(g->ins);
    sqlite3_clear_bindings(g->ins);
    sqlite3_reset(g->sel);
    sqlite3_reset(g->del);
    sqlite3_step(g->del); /* the copy empty again */
    sqlite3_reset(g->del);
    return e;
}

void sqlcap_tbl_free(sqlcap_tbl *t)
{
    if (!t)
        return;
    sqlcap_gen_free(t->gv);
    free(t->gen);
    free(t->name);
    free(t->sql);
    for (size_t i = 0; i < t->ncols; i++) {
        if (t->colnames)
            free(t->colnames[i]);
        if (t->dflt_buf)
            free(t->dflt_buf[i]);
    }
    free(t->colnames);
    free(t->dflt_buf);
    free(t->dflt);
    free(t->affinity);
    free(t->pk);
    free(t->store);
    evt_table_unref(t->et);
    free(t);
}

void sqlcap_schema_free(sqlcap_schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        sqlcap_tbl_free(s->tbls[i]);
    free(s->tbls);
    memset(s, 0, sizeof *s);
}

sqlcap_tbl *sqlcap_schema_find(const sqlcap_schema *s, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->tbls[i]->name, name) == 0)
            return s->tbls[i];
    return NULL;
}

int sqlcap_affinity(const char *decl)
{
    if (!decl || !*decl)
        return 'B';
    char *u = strdup(decl);
    int a = 'N';
    if (!u)
        return 'N';
    for (char *p = u; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 32);
    if (strstr(u, "INT"))
        a = 'I';
    else if (strstr(u, "CHAR") || strstr(u, "CLOB") || strstr(u, "TEXT"))
        a = 'T';
    else if (strstr(u, "BLOB"))
        a = 'B';
    else if (strstr(u, "REAL") || strstr(u, "FLOA") || strstr(u, "DOUB"))
        a = 'R';
    free(u);
    return a;
}

evt_type sqlcap_evt_type(int aff, const char *decl)
{
    switch (aff) {
    case 'I': return EVT_T_SQLITE_INTEGER;
    case 'R': return EVT_T_SQLITE_REAL;
    case 'T': return EVT_T_SQLITE_TEXT;
    case 'B': return (decl && *decl) ? EVT_T_SQLITE_BLOB : EVT_T_SQLITE_NUMERIC;
    default: return EVT_T_SQLITE_NUMERIC;
    }
}

#define SQLCAP_DFLT_TABLE "_tributary_default"

/* Evaluate a default expression text into t->dflt[c] (owned copy): the value
 * a record without that column reads as (a row written before ADD COLUMN),
 * found the way SQLite finds it: a one-row table in the private database
 * gets the column by ADD COLUMN with the same declared type (affinity) and
 * default, and its row is read back. A default ADD COLUMN refuses
 * (CURRENT_TIMESTAMP, an expression in parentheses: no record can lack such a
 * column) is evaluated as a plain expression. */
static bool sqlcap_eval_default(sqlite3 *mem, sqlcap_tbl *t, size_t c, const char *expr, const char *decl)
{
    t->dflt[c].type = SQLCAP_NULL;
    if (!expr)
        return true;
    bool constant = false;
    char *q = NULL;
    sqlite3_exec(mem, "DROP TABLE IF EXISTS " SQLCAP_DFLT_TABLE, NULL, NULL, NULL);
    char *alter = sqlite3_mprintf("CREATE TABLE " SQLCAP_DFLT_TABLE "(x); INSERT INTO " SQLCAP_DFLT_TABLE
                                  " VALUES (0); ALTER TABLE " SQLCAP_DFLT_TABLE " ADD COLUMN v %s DEFAULT %s",
                                  decl ? decl : "", expr);
    if (alter && sqlite3_exec(mem, alter, NULL, NULL, NULL) == SQLITE_OK) {
        q = sqlite3_mprintf("SELECT v FROM " SQLCAP_DFLT_TABLE);
        constant = true;
    } else
        q = sqlite3_mprintf("SELECT %s", expr);
    sqlite3_free(alter);
    sqlite3_stmt *st = NULL;
    if (q && sqlite3_prepare_v2(mem, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        switch (sqlite3_column_type(st, 0)) {
        case SQLITE_INTEGER:
            t->dflt[c].type = SQLCAP_INT;
            t->dflt[c].i = sqlite3_column_int64(st, 0);
            break;
        case SQLITE_FLOAT:
            t->dflt[c].type = SQLCAP_REAL;
            t->dflt[c].d = sqlite3_column_double(st, 0);
            break;
        case SQLITE_TEXT:
        case SQLITE_BLOB: {
            int blob = sqlite3_column_type(st, 0) == SQLITE_BLOB;
            const void *p = blob ? sqlite3_column_blob(st, 0) : (const void *)sqlite3_column_text(st, 0);
            size_t n = (size_t)sqlite3_column_bytes(st, 0);
            t->dflt_buf[c] = malloc(n + 1);
            if (t->dflt_buf[c]) {
                if (n)
                    memcpy(t->dflt_buf[c], p, n);
                t->dflt[c].type = blob ? SQLCAP_BLOB : SQLCAP_TEXT;
                t->dflt[c].p = t->dflt_buf[c];
                t->dflt[c].n = n;
            }
            break;
        }
        default: break;
        }
    } else {
        TB_WARN(SQLCAP_FAC, "table %s: cannot evaluate default of column %zu (%s): NULL used", t->name, c, expr);
    }
    sqlite3_finalize(st);
    sqlite3_free(q);
    sqlite3_exec(mem, "DROP TABLE IF EXISTS " SQLCAP_DFLT_TABLE, NULL, NULL, NULL);
    return constant;
}

/* Column c's default as its schema record carries it (evt_table_set_default)
 * into out: a constant (constant: what ADD COLUMN accepts) as the value the
 * topic carries for it (a number's text, a text's characters, a BLOB
 * column's bytes in base64), *is_expr false; an expression SQLite evaluates
 * per row (CURRENT_TIMESTAMP, a parenthesised expression) as its text,
 * *is_expr true. false: none (no default, or NULL). */
static bool sqlcap_default_text(const sqlcap_tbl *t, size_t c, const char *expr, bool constant, bool blob_col,
                                tb_buf *out, bool *is_expr)
{
    const sqlcap_val *v = &t->dflt[c];
    tb_buf_reset(out);
    *is_expr = false;
    if (!expr)
        return false;
    if (!constant) {
        *is_expr = true;
        return tb_buf_puts(out, expr) == TB_OK;
    }
    switch (v->type) {
    case SQLCAP_INT: return tb_buf_printf(out, "%lld", (long long)v->i) == TB_OK;
    case SQLCAP_REAL: {
        char d[32];
        size_t n = evt_fmt_double(v->d, d);
        return tb_buf_append(out, d, n) == TB_OK;
    }
    case SQLCAP_TEXT:
    case SQLCAP_BLOB:
        if (blob_col) {
            evt_jw w;
            evt_jw_init(&w, out);
            evt_jw_base64(&w, v->p, v->n);
            if (evt_jw_finish(&w) != TB_OK || out->len < 2)
                return false;
            memmove(out->data, out->data + 1, out->len - 2); /* the JSON string's quotes off */
            out->len -= 2;
            out->data[out->len] = 0;
            return true;
        }
        return tb_buf_append(out, v->p, v->n) == TB_OK;
    default: return false; /* DEFAULT NULL */
    }
}

/* Derive decoding info for one table. Returns TB_OK with captured=false for
 * tables we do not capture (a CREATE text the private SQLite refuses, hidden
 * columns of a virtual table). Generated columns are captured: STORED ones
 * from the record, VIRTUAL ones computed (sqlcap_gen_eval). */
static tb_code sqlcap_tbl_derive(sqlite3 *mem, sqlcap_tbl *t, const char *dbname, const sqlcap_tbl *prev,
                                 tb_error *err)
{
    tb_code rc = TB_OK;
    sqlite3_stmt *st = NULL;
    char *q = NULL;
    size_t cap = 16, n = 0;
    int *pkpos = NULL;
    char **decl = NULL;
    int *notnull = NULL;
    bool *constant = NULL; /* per column: its default is a constant (sqlcap_eval_default) */

    q = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\"", t->name);
    sqlite3_exec(mem, q, NULL, NULL, NULL);
    sqlite3_free(q);
    q = NULL;
    if (sqlite3_exec(mem, t->sql, NULL, NULL, NULL) != SQLITE_OK) {
        TB_WARN(SQLCAP_FAC, "table %s: cannot interpret its CREATE text (%s): not captured", t->name,
                sqlite3_errmsg(mem));
        return TB_OK;
    }
    t->colnames = calloc(cap, sizeof *t->colnames);
    t->affinity = calloc(cap, sizeof *t->affinity);
    decl = calloc(cap, sizeof *decl);
    pkpos = calloc(cap, sizeof *pkpos);
    notnull = calloc(cap, sizeof *notnull);
    char **dexpr = calloc(cap, sizeof *dexpr);
    t->gen = calloc(cap, sizeof *t->gen);
    bool hidden = false;
    size_t nvirt = 0;
    if (!t->colnames || !t->affinity || !decl || !pkpos || !notnull || !dexpr || !t->gen)
        goto nomem;
    if (sqlite3_prepare_v2(mem, "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?)",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlerr;
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n + 2 >= cap) {
            size_t nc = cap * 2;
            char **a = realloc(t->colnames, nc * sizeof *a);
            if (a) t->colnames = a;
            int *b = realloc(t->affinity, nc * sizeof *b);
            if (b) t->affinity = b;
            char **d = realloc(decl, nc * sizeof *d);
            if (d) decl = d;
            int *e = realloc(pkpos, nc * sizeof *e);
            if (e) pkpos = e;
            int *f = realloc(notnull, nc * sizeof *f);
            if (f) notnull = f;
            char **g = realloc(dexpr, nc * sizeof *g);
            if (g) dexpr = g;
            uint8_t *h = realloc(t->gen, nc * sizeof *h);
            if (h) t->gen = h;
            if (!a || !b || !d || !e || !f || !g || !h)
                goto nomem;
            cap = nc;
        }
        const char *nm = (const char *)sqlite3_column_text(st, 0);
        const char *ty = (const char *)sqlite3_column_text(st, 1);
        const char *df = (const char *)sqlite3_column_text(st, 3);
        t->colnames[n] = strdup(nm ? nm : "");
        decl[n] = strdup(ty ? ty : "");
        dexpr[n] = df ? strdup(df) : NULL;
        t->affinity[n] = sqlcap_affinity(ty);
        notnull[n] = sqlite3_column_int(st, 2);
        pkpos[n] = sqlite3_column_int(st, 4);
        int hid = sqlite3_column_int(st, 5);
        t->gen[n] = hid == 2 || hid == 3 ? (uint8_t)hid : 0;
        if (hid == 2)
            nvirt++;
        else if (hid != 0 && hid != 3)
            hidden = true; /* a virtual table's hidden column */
        n++;
    }
    sqlite3_finalize(st);
    st = NULL;
    t->ncols = n;
    if (hidden) {
        TB_WARN(SQLCAP_FAC, "table %s: hidden columns are not supported: not captured", t->name);
        goto out;
    }
    /* primary key */
    size_t npk = 0;
    for (size_t c = 0; c < n; c++)
        if (pkpos[c] > 0)
            npk++;
    t->pk = calloc(npk + 1, sizeof *t->pk);
    if (!t->pk)
        goto nomem;
    for (size_t c = 0; c < n; c++)
        if (pkpos[c] > 0 && (size_t)pkpos[c] <= npk)
            t->pk[pkpos[c] - 1] = c;
    t->npk = npk;
    t->ipk = -1;
    /* pk index: WITHOUT ROWID storage order; a rowid table with a pk index has no IPK alias */
    bool pk_index = false;
    if (sqlite3_prepare_v2(mem, "SELECT name FROM pragma_index_list(?) WHERE origin = 'pk'", -1, &st, NULL) !=
        SQLITE_OK)
        goto sqlerr;
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    char *pkidx = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        pk_index = true;
        pkidx = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    st = NULL;
    if (t->without_rowid) {
        if (!pkidx)
            goto nomem;
        t->store = calloc(n + 1, sizeof *t->store);
        if (!t->store || sqlite3_prepare_v2(mem, "SELECT cid FROM pragma_index_xinfo(?) ORDER BY seqno", -1, &st,
                                            NULL) != SQLITE_OK) {
            free(pkidx);
            goto sqlerr;
        }
        sqlite3_bind_text(st, 1, pkidx, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW && t->nstore < n) {
            int cid = sqlite3_column_int(st, 0);
            if (cid >= 0)
                t->store[t->nstore++] = (size_t)cid;
        }
        sqlite3_finalize(st);
        st = NULL;
    } else {
        if (npk == 1 && !pk_index && strcasecmp(decl[t->pk[0]], "INTEGER") == 0)
            t->ipk = (long)t->pk[0];
        if (nvirt) {
            /* the record holds the columns that are not VIRTUAL (STORED ones
             * included) in declaration order */
            t->store = calloc(n + 1, sizeof *t->store);
            if (!t->store) {
                free(pkidx);
                goto nomem;
            }
            for (size_t c = 0; c < n; c++)
                if (t->gen[c] != 2)
                    t->store[t->nstore++] = c;
        }
    }
    free(pkidx);
    /* rowid table without a primary key: synthetic trailing "rowid" key column */
    bool synth = !t->without_rowid && npk == 0;
    if (synth) {
        t->colnames[n] = strdup("rowid");
        decl[n] = strdup("INTEGER");
        dexpr[n] = NULL;
        t->affinity[n] = 'I';
        notnull[n] = 1;
        t->gen[n] = 0;
        t->ncols = ++n;
        t->pk[0] = n - 1;
        t->npk = 1;
        t->synth_rowid = true;
    }
    t->dflt = calloc(n, sizeof *t->dflt);
    t->dflt_buf = calloc(n, sizeof *t->dflt_buf);
    if (!t->dflt || !t->dflt_buf)
        goto nomem;
    constant = calloc(n, sizeof *constant);
    if (!constant)
        goto nomem;
    for (size_t c = 0; c < n; c++)
        constant[c] = sqlcap_eval_default(mem, t, c, dexpr[c], decl[c]);
    /* descriptor: reuse the previous one when nothing changed */
    if (prev && prev->et && prev->sql && strcmp(prev->sql, t->sql) == 0) {
        t->et = evt_table_ref(prev->et);
    } else {
        t->et = evt_table_new(dbname, t->name, n);
        if (!t->et)
            goto nomem;
        tb_buf dt;
        tb_buf_init(&dt, 0);
        for (size_t c = 0; c < n; c++) {
            evt_type ty = sqlcap_evt_type(t->affinity[c], decl[c]);
            bool is_expr;
            if (evt_table_set_column(t->et, c, t->colnames[c], ty, decl[c], !notnull[c] && !(synth && c == n - 1),
                                     false) != TB_OK) {
                tb_buf_free(&dt);
                goto nomem;
            }
            if (sqlcap_default_text(t, c, dexpr[c], constant[c], ty == EVT_T_SQLITE_BLOB, &dt, &is_expr) &&
                evt_table_set_default(t->et, c, tb_buf_cstr(&dt), is_expr) != TB_OK) {
                tb_buf_free(&dt);
                goto nomem;
            }
        }
        tb_buf_free(&dt);
        if (evt_table_set_pk(t->et, t->pk, t->npk) != TB_OK)
            goto nomem;
        evt_table_set_version(t->et, prev && prev->et ? evt_table_version(prev->et) + 1 : 1);
        evt_table_seal(t->et);
    }
    if (nvirt) {
        /* the private copy is made from the table created above: last, after
         * every pragma on t->name */
        char *why = NULL;
        size_t nreal = synth ? n - 1 : n;
        if (!(t->gv = sqlcap_gen_new(mem, t, nreal, &why))) {
            if (!why)
                goto nomem;
            TB_WARN(SQLCAP_FAC, "table %s: cannot prepare the computation of its VIRTUAL columns (%s): not captured",
                    t->name, why);
            sqlite3_free(why);
            goto out;
        }
    }
    t->captured = true;
    goto out;
nomem:
    rc = tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory deriving its columns", t->name);
    goto out;
sqlerr:
    rc = tb_error_set(err, TB_ERR_SOURCE, false, "table %s: schema query failed: %s", t->name, sqlite3_errmsg(mem));
out:
    sqlite3_finalize(st);
    for (size_t c = 0; c < cap && decl; c++)
        free(decl[c]);
    for (size_t c = 0; c < cap && dexpr; c++)
        free(dexpr[c]);
    free(decl);
    free(dexpr);
    free(constant);
    free(pkpos);
    free(notnull);
    q = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\"", t->name);
    sqlite3_exec(mem, q, NULL, NULL, NULL);
    sqlite3_free(q);
    return rc;
}

/* ---------------------------------------------------------------- schema rows */

typedef struct sqlcap_schema_ctx {
    const sqlcap_schema *prev;
    const char *dbname;
    int *next_id;
    sqlite3 *mem;
    sqlcap_schema *out;
    sqlcap_u32s *ovfl;
    uint32_t cur_page;
} sqlcap_schema_ctx;

static char *sqlcap_val_strdup(const sqlcap_val *v)
{
    if (v->type != SQLCAP_TEXT)
        return NULL;
    char *s = malloc(v->n + 1);
    if (s) {
        memcpy(s, v->p, v->n);
        s[v->n] = 0;
    }
    return s;
}

static tb_code sqlcap_schema_row(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                                 const sqlcap_u32s *ovfl, tb_error *err)
{
    sqlcap_schema_ctx *x = opaque;
    sqlcap_val v[5];
    size_t n = 0;
    (void)pgno;
    (void)rowid;
    for (size_t i = 0; i < ovfl->n; i++)
        if (x->ovfl && sqlcap_u32s_push(x->ovfl, ovfl->v[i]) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    if (sqlcap_record(payload, len, v, 5, &n) != TB_OK || n < 5)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "sqlite_schema: malformed row on page %u", pgno);
    if (v[0].type != SQLCAP_TEXT || v[0].n != 5 || memcmp(v[0].p, "table", 5) != 0)
        return TB_OK;
    if (v[3].type != SQLCAP_INT || v[3].i <= 0 || v[4].type != SQLCAP_TEXT)
        return TB_OK; /* virtual tables have rootpage 0 */
    sqlcap_tbl *t = calloc(1, sizeof *t);
    if (!t)
        return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    t->name = sqlcap_val_strdup(&v[1]);
    t->sql = sqlcap_val_strdup(&v[4]);
    t->root = (uint32_t)v[3].i;
    t->ipk = -1;
    if (!t->name || !t->sql) {
        sqlcap_tbl_free(t);
        return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    }
    sqlcap_tbl **nt = sqlcap_grow(x->out->tbls, x->out->n, &x->out->cap, sizeof *nt, 8);
    if (!nt) {
        sqlcap_tbl_free(t);
        return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    }
    x->out->tbls = nt;
    x->out->tbls[x->out->n++] = t;
    const sqlcap_tbl *prev = sqlcap_schema_find(x->prev, t->name);
    t->id = prev ? prev->id : (*x->next_id)++;
    /* WITHOUT ROWID: detected from the normalised CREATE text's tail */
    const char *tail = strrchr(t->sql, ')');
    if (tail) {
        for (const char *p = tail; *p; p++)
            if (strncasecmp(p, "without", 7) == 0) {
                t->without_rowid = true;
                break;
            }
    }
    if (strncmp(t->name, "sqlite_", 7) == 0 || strcmp(t->name, "_cdc_log") == 0 || strcmp(t->name, "_cdc_repl") == 0)
        return TB_OK;
    return sqlcap_tbl_derive(x->mem, t, x->dbname, prev, err);
}

tb_code sqlcap_schema_load(const sqlcap_view *v, const sqlcap_schema *prev, const char *dbname, int *next_id,
                           sqlite3 *mem, sqlcap_schema *out, sqlcap_u32s *ovfl_pages, tb_error *err)
{
    sqlcap_u32s inner = {0}, leaves = {0};
    sqlcap_schema_ctx x = {prev, dbname, next_id, mem, out, ovfl_pages, 0};
    memset(out, 0, sizeof *out);
    /* the text encoding is set with the first table: a database attached
     * before it had one may turn out UTF-16 only now */
    uint8_t *p1 = malloc(v->pg->pgsz);
    tb_code rc = p1 ? sqlcap_view_read(v, 1, p1, err) : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (rc == TB_OK && sqlcap_be32(p1 + 56) > 1)
        rc = tb_error_set(err, TB_ERR_UNSUPPORTED, false, "%s: text encoding %u (only UTF-8 is supported)", dbname,
                          sqlcap_be32(p1 + 56));
    free(p1);
    if (rc == TB_OK)
        rc = sqlcap_tree_pages(v, 1, &inner, &leaves, err);
    for (size_t i = 0; rc == TB_OK && i < leaves.n; i++)
        rc = sqlcap_page_rows(v, leaves.v[i], sqlcap_schema_row, &x, err);
    sqlcap_u32s_free(&inner);
    sqlcap_u32s_free(&leaves);
    if (rc != TB_OK)
        sqlcap_schema_free(out);
    return rc;
}

/* ---------------------------------------------------------------- signature */

typedef struct sqlcap_sig_ctx {
    tb_buf *out;
    sqlcap_u32s *ovfl;
} sqlcap_sig_ctx;

static tb_code sqlcap_sig_row(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                              const sqlcap_u32s *ovfl, tb_error *err)
{
    sqlcap_sig_ctx *x = opaque;
    sqlcap_val v[5];
    size_t n = 0;
    (void)rowid;
    for (size_t i = 0; i < ovfl->n; i++)
        if (x->ovfl && sqlcap_u32s_push(x->ovfl, ovfl->v[i]) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    if (sqlcap_record(payload, len, v, 5, &n) != TB_OK || n < 5)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "sqlite_schema: malformed row on page %u", pgno);
    if (v[0].type != SQLCAP_TEXT || v[0].n != 5 || memcmp(v[0].p, "table", 5) != 0)
        return TB_OK;
    if (tb_buf_append(x->out, v[1].p, v[1].n) != TB_OK || tb_buf_putc(x->out, 0) != TB_OK ||
        tb_buf_printf(x->out, "%lld", v[3].type == SQLCAP_INT ? (long long)v[3].i : 0LL) != TB_OK ||
        tb_buf_putc(x->out, 0) != TB_OK || (v[4].n && tb_buf_append(x->out, v[4].p, v[4].n) != TB_OK) ||
        tb_buf_putc(x->out, 0) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "sqlite_schema: out of memory");
    return TB_OK;
}

tb_code sqlcap_schema_sig(const sqlcap_view *v, tb_buf *out, sqlcap_u32s *ovfl_pages, tb_error *err)
{
    sqlcap_u32s inner = {0}, leaves = {0};
    sqlcap_sig_ctx x = {out, ovfl_pages};
    tb_buf_reset(out);
    tb_code rc = sqlcap_tree_pages(v, 1, &inner, &leaves, err);
    for (size_t i = 0; rc == TB_OK && i < leaves.n; i++)
        rc = sqlcap_page_rows(v, leaves.v[i], sqlcap_sig_row, &x, err);
    sqlcap_u32s_free(&inner);
    sqlcap_u32s_free(&leaves);
    return rc;
}
