/*
 * cache_read: the read API (cache_read.h). Values go back to the wire
 * format's JSON by column class (cache_int.h), written with evt_jw.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "cache_read.h"
#include "evt.h"
#include "evt_json.h"

struct cache_db {
    cache_store *s;
};

tb_code cache_db_open(const char *path, cache_db **out, tb_error *err)
{
    cache_db *db = calloc(1, sizeof(*db));
    *out = NULL;
    if (!db)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = cache_store_open(path, true, &db->s, err);
    if (rc != TB_OK) {
        free(db);
        return rc;
    }
    *out = db;
    return TB_OK;
}

void cache_db_close(cache_db *db)
{
    if (!db)
        return;
    cache_store_close(db->s);
    free(db);
}

static bool is_int_text(const unsigned char *t, int n)
{
    int i = t[0] == '-' ? 1 : 0;
    if (i >= n)
        return false;
    for (; i < n; i++)
        if (t[i] < '0' || t[i] > '9')
            return false;
    return true;
}

/* One column value of the current row of st (column i) as JSON. */
static void render(evt_jw *w, const cache_col *c, sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
        evt_jw_null(w);
        break;
    case SQLITE_INTEGER:
        if (c->cls == CC_BOOL)
            evt_jw_bool(w, sqlite3_column_int64(st, i) != 0);
        else
            evt_jw_int(w, sqlite3_column_int64(st, i));
        break;
    case SQLITE_FLOAT: /* as the topic wrote it: in a column of no class, "2.0" and {"$real":"Infinity"} */
        evt_json_put_real(w, sqlite3_column_double(st, i), c->cls == CC_ANY);
        break;
    case SQLITE_TEXT: {
        const unsigned char *t = sqlite3_column_text(st, i);
        int n = sqlite3_column_bytes(st, i);
        if ((c->cls == CC_INT || c->cls == CC_UINT64) && is_int_text(t, n))
            evt_jw_raw_number(w, (const char *)t, (size_t)n);
        else if (c->cls == CC_JSON)
            evt_jw_json(w, (const char *)t, (size_t)n);
        else
            evt_jw_str(w, (const char *)t, (size_t)n);
        break;
    }
    default:
        evt_jw_base64(w, sqlite3_column_blob(st, i), (size_t)sqlite3_column_bytes(st, i));
        break;
    }
}

static tb_code row_json(const cache_table *t, sqlite3_stmt *st, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    for (size_t i = 0; i < t->ncols; i++) {
        evt_jw_key(&w, t->cols[i].name, (size_t)-1);
        render(&w, &t->cols[i], st, (int)i);
    }
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}

/* SELECT "c1",... FROM "t" [WHERE k1=?1 AND ...] [ORDER BY k1,...] */
static tb_code select_sql(const cache_table *t, bool by_key, tb_buf *q)
{
    tb_code rc = tb_buf_puts(q, "SELECT ");
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++) {
        if (i)
            rc = tb_buf_putc(q, ',');
        rc = rc ? rc : cache_quote_ident(q, t->cols[i].name);
    }
    rc = rc ? rc : tb_buf_puts(q, " FROM ");
    rc = rc ? rc : cache_quote_ident(q, t->name);
    rc = rc ? rc : tb_buf_puts(q, by_key ? " WHERE " : " ORDER BY ");
    for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
        if (k)
            rc = tb_buf_puts(q, by_key ? " AND " : ",");
        rc = rc ? rc : cache_quote_ident(q, t->cols[t->pk[k]].name);
        if (rc == TB_OK && by_key) /* IS: a key column may hold NULL (SQLite allows it outside rowid keys) */
            rc = tb_buf_printf(q, " IS ?%zu", k + 1);
    }
    if (rc == TB_OK && by_key && cache_rowid_col(t) >= 0) /* the rowid a key holding NULL has (or NULL) */
        rc = tb_buf_printf(q, " AND \"" EVT_KEY_ROWID "\" IS ?%zu", t->npk + 1);
    return rc;
}

static tb_code prepare(cache_db *db, const char *table, bool by_key, cache_table **t, sqlite3_stmt **st,
                       tb_error *err)
{
    tb_buf q;
    tb_code rc;
    *st = NULL;
    if (!(*t = cache_store_find(db->s, table)))
        return tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s: no table \"%s\" in the cache", db->s->path, table);
    tb_buf_init(&q, 0);
    if ((rc = select_sql(*t, by_key, &q)) != TB_OK)
        rc = tb_error_set(err, rc, false, "out of memory");
    else if (sqlite3_prepare_v2(db->s->db, tb_buf_cstr(&q), -1, st, NULL) != SQLITE_OK)
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: table \"%s\": %s", db->s->path, table,
                          sqlite3_errmsg(db->s->db));
    tb_buf_free(&q);
    return rc;
}

/* The key columns of t as '"a", "b"' (in b, reused). */
static const char *key_columns(const cache_table *t, tb_buf *b)
{
    tb_buf_reset(b);
    for (size_t k = 0; k < t->npk; k++)
        if (tb_buf_printf(b, "%s\"%s\"", k ? ", " : "", t->cols[t->pk[k]].name) != TB_OK)
            return "?";
    return tb_buf_cstr(b);
}

tb_code cache_get(cache_db *db, const char *table, const char *key_json, tb_buf *row_json_out, tb_error *err)
{
    cache_table *t;
    sqlite3_stmt *st = NULL;
    cj_val key, v;
    tb_code rc;
    if ((rc = cj_parse(key_json, strlen(key_json), &key, err)) != TB_OK)
        return tb_error_prefix(err, rc, "key: ");
    if (key.type != CJ_OBJECT)
        return tb_error_set(err, TB_ERR_INVALID, false, "key is not a JSON object: %s", key_json);
    if ((rc = prepare(db, table, true, &t, &st, err)) != TB_OK)
        return rc;
    /* the key's members: each names a key column (a duplicate: the last counts, as everywhere
     * the JSON reader looks a member up), a scalar value; every key column named */
    cj_val *vals = calloc(t->npk + 1, sizeof(*vals));
    if (!vals)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    cj_iter it;
    const char *kn;
    size_t kl;
    if (rc == TB_OK)
        cj_obj_begin(&key, &it);
    while (rc == TB_OK && cj_obj_next(&it, &kn, &kl, &v)) {
        size_t k;
        for (k = 0; k < t->npk && !cj_key_eq(kn, kl, t->cols[t->pk[k]].name); k++)
            ;
        if (k == t->npk && cache_rowid_col(t) >= 0 && cj_key_eq(kn, kl, EVT_KEY_ROWID))
            rc = cache_bind(st, (int)t->npk + 1, CC_INT, &v, &db->s->scratch, EVT_KEY_ROWID, err);
        else if (k == t->npk)
            rc = tb_error_set(err, TB_ERR_INVALID, false,
                              "table \"%s\": the key member \"%.*s\" is not a key column (the key is %s)", table,
                              (int)kl, kn, key_columns(t, &db->s->scratch));
        else if ((v.type == CJ_OBJECT || v.type == CJ_ARRAY) &&
                 !cache_nonfinite(&v, t->cols[t->pk[k]].cls, &(double){0})) /* {"$real":"Infinity"} is a value */
            rc = tb_error_set(err, TB_ERR_INVALID, false,
                              "table \"%s\": key column \"%s\" needs a scalar value, not a JSON %s", table,
                              t->cols[t->pk[k]].name, v.type == CJ_OBJECT ? "object" : "array");
        else
            vals[k] = v;
    }
    for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
        const cache_col *c = &t->cols[t->pk[k]];
        if (!vals[k].ptr)
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": the key lacks column \"%s\" (the key is %s)",
                              table, c->name, key_columns(t, &db->s->scratch));
        else
            rc = cache_bind(st, (int)k + 1, c->cls, &vals[k], &db->s->scratch, c->name, err);
    }
    free(vals);
    if (rc == TB_OK) {
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            rc = row_json(t, st, row_json_out);
        else if (s == SQLITE_DONE)
            rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "table \"%s\": no row with key %s", table, key_json);
        else
            rc = tb_error_set(err, TB_ERR_IO, false, "table \"%s\": %s", table, sqlite3_errmsg(db->s->db));
    }
    sqlite3_finalize(st);
    return rc;
}

tb_code cache_iter(cache_db *db, const char *table, cache_row_fn fn, void *opaque, tb_error *err)
{
    cache_table *t;
    sqlite3_stmt *st = NULL;
    tb_buf row;
    tb_code rc;
    if ((rc = prepare(db, table, false, &t, &st, err)) != TB_OK)
        return rc;
    tb_buf_init(&row, 0);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        tb_buf_reset(&row);
        if ((rc = row_json(t, st, &row)) != TB_OK) {
            tb_error_set(err, rc, false, "table \"%s\": cannot render a row", table);
            break;
        }
        if (fn(tb_buf_cstr(&row), row.len, opaque))
            break;
    }
    if (rc == TB_OK && s != SQLITE_ROW && s != SQLITE_DONE)
        rc = tb_error_set(err, TB_ERR_IO, false, "table \"%s\": %s", table, sqlite3_errmsg(db->s->db));
    tb_buf_free(&row);
    sqlite3_finalize(st);
    return rc;
}

bool cache_db_has_table(cache_db *db, const char *table)
{
    return db && cache_store_find(db->s, table) != NULL;
}

size_t cache_db_ntables(const cache_db *db)
{
    return db ? db->s->ntables : 0;
}

tb_code cache_db_table(const cache_db *db, size_t i, cache_table_info *out)
{
    if (!db || i >= db->s->ntables)
        return TB_ERR_NOT_FOUND;
    const cache_table *t = db->s->tables[i];
    out->name = t->name;
    out->topic = t->topic;
    out->inferred = t->inferred;
    out->version = (long long)t->version;
    out->ncols = t->ncols;
    out->npk = t->npk;
    return TB_OK;
}

tb_code cache_db_column(const cache_db *db, size_t i, size_t col, cache_column_info *out)
{
    if (!db || i >= db->s->ntables || col >= db->s->tables[i]->ncols)
        return TB_ERR_NOT_FOUND;
    const cache_col *c = &db->s->tables[i]->cols[col];
    out->name = c->name;
    out->type = c->type ? c->type : "";
    out->pk = c->pk;
    out->is_unsigned = c->cls == CC_UINT64;
    out->is_bool = c->cls == CC_BOOL;
    return TB_OK;
}

const char *cache_db_path(const cache_db *db)
{
    return db ? db->s->path : NULL;
}
