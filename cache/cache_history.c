/*
 * cache_history: the fractional-second precision (fsp) of the TIME, DATETIME
 * and TIMESTAMP columns of Debezium's tables, from the connector's schema
 * history topic (schema.history.internal.kafka.topic; the cache reads it with
 * cache.debezium.history.topic). A Connect schema does not carry it: a
 * DATETIME(0) to (3) is an io.debezium.time.Timestamp, a DATETIME(4) to (6) a
 * MicroTimestamp, a TIME(0) to (6) a MicroTime. Without it the cache would
 * write the same instant as a different text than the tributary encoding
 * (which writes fsp digits), and a row would have one key per encoding.
 *
 * A history record (one JSON object, key null) carries, per table it changed,
 * the whole table after the change:
 *
 *   {"databaseName":"fsp","ddl":"...","tableChanges":[{"type":"CREATE"|"ALTER"|"DROP",
 *    "id":"\"fsp\".\"t\"","table":{"columns":[{"name":"dt3","typeName":"DATETIME",
 *    "length":3,...},{"name":"dt0","typeName":"DATETIME",...}]}}]}
 *
 * "length" is the precision of a temporal column, absent when it was declared
 * without one (fsp 0). Every state is kept in the order read: a Connect schema
 * takes the latest state of its table whose column names are its fields
 * exactly (the table as it was when the schema was written), else the latest.
 * Columns of other types are not kept.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"

typedef struct hist_col {
    char *name;
    int8_t fsp; /* 0..6 */
    bool temporal;
} hist_col;

typedef struct hist_state {
    char *table; /* "<db>.<table>" */
    hist_col *cols; /* every column (names are matched against a schema's fields) */
    size_t ncols;
} hist_state;

struct cache_history {
    hist_state *v;
    size_t n, cap;
    int64_t records;
};

cache_history *cache_history_new(void)
{
    return calloc(1, sizeof(cache_history));
}

static void state_free(hist_state *s)
{
    for (size_t i = 0; i < s->ncols; i++)
        free(s->cols[i].name);
    free(s->cols);
    free(s->table);
}

void cache_history_free(cache_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        state_free(&h->v[i]);
    free(h->v);
    free(h);
}

int64_t cache_history_records(const cache_history *h)
{
    return h ? h->records : 0;
}

/* "\"db\".\"table\"" (Debezium's quoted id; a quote inside a part is doubled) into "db.table". */
static char *table_of_id(const char *id)
{
    size_t n = strlen(id);
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    const char *p = id;
    for (int part = 0; part < 2; part++) {
        if (*p != '"') {
            free(out);
            return NULL;
        }
        for (p++;; p++) {
            if (!*p) {
                free(out);
                return NULL;
            }
            if (*p == '"' && p[1] == '"') {
                *o++ = '"';
                p++;
            } else if (*p == '"') {
                p++;
                break;
            } else {
                *o++ = *p;
            }
        }
        if (part == 0) {
            if (*p != '.') {
                free(out);
                return NULL;
            }
            *o++ = *p++;
        }
    }
    *o = 0;
    if (*p) {
        free(out);
        return NULL;
    }
    return out;
}

static bool is_temporal(const char *type_name)
{
    return strcmp(type_name, "DATETIME") == 0 || strcmp(type_name, "TIME") == 0 ||
           strcmp(type_name, "TIMESTAMP") == 0;
}

/* One table change: a new state of its table (a DROP keeps none). */
static tb_code add_change(cache_history *h, const cj_val *ch, tb_buf *tmp, tb_error *err)
{
    cj_val v, tbl, cols, col;
    cj_iter it;
    if (!cj_obj_get(ch, "type", &v) || v.type != CJ_STRING || (v.len == 4 && memcmp(v.ptr, "DROP", 4) == 0))
        return TB_OK;
    if (!cj_obj_get(ch, "table", &tbl) || tbl.type != CJ_OBJECT || !cj_obj_get(&tbl, "columns", &cols) ||
        cols.type != CJ_ARRAY || !cj_obj_get(ch, "id", &v))
        return tb_error_set(err, TB_ERR_INVALID, false, "a table change without its id, table or columns");
    char *id = cj_strdup(&v, tmp);
    char *table = id ? table_of_id(id) : NULL;
    free(id);
    if (!table)
        return tb_error_set(err, TB_ERR_INVALID, false, "a table change whose id is not \"db\".\"table\"");
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        hist_state *nv = realloc(h->v, cap * sizeof(*nv));
        if (!nv) {
            free(table);
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        }
        h->v = nv;
        h->cap = cap;
    }
    hist_state *s = &h->v[h->n];
    memset(s, 0, sizeof(*s));
    s->table = table;
    size_t n = cj_count(&cols);
    tb_code rc = TB_OK;
    if (n && !(s->cols = calloc(n, sizeof(*s->cols))))
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    cj_arr_begin(&cols, &it);
    while (rc == TB_OK && s->ncols < n && cj_arr_next(&it, &col)) {
        cj_val name, type, len;
        hist_col *c = &s->cols[s->ncols];
        if (col.type != CJ_OBJECT || !cj_obj_get(&col, "name", &name) || !(c->name = cj_strdup(&name, tmp))) {
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table %s: a column without a name", table);
            break;
        }
        s->ncols++;
        char *tn = cj_obj_get(&col, "typeName", &type) ? cj_strdup(&type, tmp) : NULL;
        c->temporal = tn && is_temporal(tn);
        free(tn);
        int64_t l = 0;
        if (c->temporal && cj_obj_get(&col, "length", &len) && (!cj_int64(&len, &l) || l < 0 || l > 6))
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table %s, column \"%s\": a precision (length) outside 0..6",
                              table, c->name);
        c->fsp = (int8_t)l;
    }
    if (rc != TB_OK) {
        state_free(s);
        return rc;
    }
    h->n++;
    return TB_OK;
}

tb_code cache_history_add(cache_history *h, const char *value, size_t len, tb_error *err)
{
    cj_val rec, changes, ch;
    cj_iter it;
    tb_buf tmp;
    tb_code rc = cj_parse(value, len, &rec, err);
    if (rc != TB_OK)
        return rc;
    if (rec.type != CJ_OBJECT)
        return tb_error_set(err, TB_ERR_INVALID, false, "a history record that is not a JSON object");
    h->records++;
    if (!cj_obj_get(&rec, "tableChanges", &changes))
        return TB_OK; /* a statement that changed no table (SET, USE, CREATE DATABASE) */
    if (changes.type != CJ_ARRAY)
        return tb_error_set(err, TB_ERR_INVALID, false, "tableChanges is not an array");
    tb_buf_init(&tmp, 0);
    cj_arr_begin(&changes, &it);
    while (rc == TB_OK && cj_arr_next(&it, &ch))
        rc = ch.type == CJ_OBJECT ? add_change(h, &ch, &tmp, err)
                                  : tb_error_set(err, TB_ERR_INVALID, false, "a table change that is not an object");
    tb_buf_free(&tmp);
    return rc;
}

/* Whether the state's columns are exactly the names fields[0..nf). */
static bool same_columns(const hist_state *s, const char *const *fields, size_t nf)
{
    if (s->ncols != nf)
        return false;
    for (size_t i = 0; i < nf; i++) {
        size_t j = 0;
        while (j < s->ncols && strcmp(s->cols[j].name, fields[i]) != 0)
            j++;
        if (j == s->ncols)
            return false;
    }
    return true;
}

int cache_history_fsp(const cache_history *h, const char *table, const char *const *fields, size_t nf,
                      const char *column)
{
    const hist_state *pick = NULL;
    for (size_t i = h ? h->n : 0; i-- > 0;) {
        const hist_state *s = &h->v[i];
        if (strcmp(s->table, table) != 0)
            continue;
        if (!pick)
            pick = s; /* the latest, unless one matches the fields */
        if (same_columns(s, fields, nf)) {
            pick = s;
            break;
        }
    }
    for (size_t j = 0; pick && j < pick->ncols; j++)
        if (strcmp(pick->cols[j].name, column) == 0)
            return pick->cols[j].temporal ? pick->cols[j].fsp : -1;
    return -1;
}
