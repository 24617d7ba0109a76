/*
 * evt_table: type names and table descriptors (DESIGN.md 3). See evt.h for
 * ownership: reference counted, immutable once sealed. Sealing precomputes
 * each column name as JSON key text for the codec.
 */
#include "evt.h"
#include "evt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================ types */

static const char *const type_names[] = {
    [EVT_T_UNKNOWN] = "unknown",
    [EVT_T_TINYINT] = "tinyint",
    [EVT_T_SMALLINT] = "smallint",
    [EVT_T_MEDIUMINT] = "mediumint",
    [EVT_T_INT] = "int",
    [EVT_T_BIGINT] = "bigint",
    [EVT_T_FLOAT] = "float",
    [EVT_T_DOUBLE] = "double",
    [EVT_T_DECIMAL] = "decimal",
    [EVT_T_CHAR] = "char",
    [EVT_T_VARCHAR] = "varchar",
    [EVT_T_TEXT] = "text",
    [EVT_T_BINARY] = "binary",
    [EVT_T_VARBINARY] = "varbinary",
    [EVT_T_BLOB] = "blob",
    [EVT_T_DATE] = "date",
    [EVT_T_DATETIME] = "datetime",
    [EVT_T_TIMESTAMP] = "timestamp",
    [EVT_T_TIME] = "time",
    [EVT_T_YEAR] = "year",
    [EVT_T_ENUM] = "enum",
    [EVT_T_SET] = "set",
    [EVT_T_BIT] = "bit",
    [EVT_T_JSON] = "json",
    [EVT_T_GEOMETRY] = "geometry",
    [EVT_T_VECTOR] = "vector",
    [EVT_T_SQLITE_INTEGER] = "sqlite_integer",
    [EVT_T_SQLITE_REAL] = "sqlite_real",
    [EVT_T_SQLITE_TEXT] = "sqlite_text",
    [EVT_T_SQLITE_BLOB] = "sqlite_blob",
    [EVT_T_SQLITE_NUMERIC] = "sqlite_numeric",
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

const char *evt_type_name(evt_type t)
{
    if ((size_t)t >= NTYPES || !type_names[t])
        return "unknown";
    return type_names[t];
}

evt_type evt_type_from_name(const char *name)
{
    if (!name)
        return EVT_T_UNKNOWN;
    for (size_t i = 0; i < NTYPES; i++)
        if (type_names[i] && strcmp(type_names[i], name) == 0)
            return (evt_type)i;
    return EVT_T_UNKNOWN;
}

const char *evt_connector_name(evt_connector c)
{
    switch (c) {
    case EVT_CONN_MYSQL: return "mysql";
    case EVT_CONN_MARIADB: return "mariadb";
    case EVT_CONN_SQLITE: return "sqlite";
    case EVT_CONN_CACHE: return "cache";
    }
    return "mysql";
}

/* ============================================================ tables */


static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void column_clear(evt_column *c)
{
    free(c->name);
    free(c->source_type);
    free(c->charset);
    free(c->default_text);
    for (size_t i = 0; i < c->nlabels; i++)
        free(c->labels[i]);
    free(c->labels);
    memset(c, 0, sizeof(*c));
}

static void table_destroy(evt_table *t)
{
    for (size_t i = 0; t->cols && i < t->ncols; i++) /* cols NULL: its allocation failed */
        column_clear(&t->cols[i]);
    free(t->cols);
    free(t->pk);
    free(t->keyfrag);
    free(t->srcfrag);
    free(t->keyoff);
    free(t->db);
    free(t->name);
    free(t->renamed_db);
    free(t->renamed_table);
    free(t);
}

evt_table *evt_table_new(const char *db, const char *table, size_t ncols)
{
    evt_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->refs = 1;
    t->db = strdup(db ? db : "");
    t->name = strdup(table ? table : "");
    t->ncols = ncols;
    t->cols = ncols ? calloc(ncols, sizeof(evt_column)) : NULL;
    t->names_known = true;
    t->row_end = -1;
    if (!t->db || !t->name || (ncols && !t->cols))
        goto fail;
    for (size_t i = 0; i < ncols; i++) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "@%zu", i + 1);
        t->cols[i].name = strdup(tmp);
        t->cols[i].nullable = true;
        if (!t->cols[i].name)
            goto fail;
    }
    return t;
fail:
    table_destroy(t);
    return NULL;
}

evt_table *evt_table_ref(evt_table *t)
{
    if (t)
        __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

void evt_table_unref(evt_table *t)
{
    if (!t)
        return;
    if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0)
        table_destroy(t);
}

static tb_code table_check(const evt_table *t, size_t i)
{
    if (!t)
        return TB_ERR_INVALID;
    if (t->sealed)
        return TB_ERR_STATE;
    if (i >= t->ncols)
        return TB_ERR_INVALID;
    return TB_OK;
}

tb_code evt_table_set_column(evt_table *t, size_t i, const char *name, evt_type type,
                             const char *source_type, bool nullable, bool is_unsigned)
{
    tb_code rc = table_check(t, i);
    if (rc != TB_OK)
        return rc;
    evt_column *c = &t->cols[i];
    char *n = name ? strdup(name) : NULL;
    char *st = dup_or_null(source_type);
    if ((name && !n) || (source_type && !st)) {
        free(n);
        free(st);
        return TB_ERR_NOMEM;
    }
    if (n) {
        free(c->name);
        c->name = n;
    }
    free(c->source_type);
    c->source_type = st;
    c->type = type;
    c->nullable = nullable;
    c->is_unsigned = is_unsigned;
    return TB_OK;
}

tb_code evt_table_set_column_details(evt_table *t, size_t i, uint32_t length, uint32_t precision,
                                     uint32_t scale, const char *charset)
{
    tb_code rc = table_check(t, i);
    if (rc != TB_OK)
        return rc;
    evt_column *c = &t->cols[i];
    char *cs = dup_or_null(charset);
    if (charset && !cs)
        return TB_ERR_NOMEM;
    free(c->charset);
    c->charset = cs;
    c->length = length;
    c->precision = precision;
    c->scale = scale;
    return TB_OK;
}

tb_code evt_table_set_labels(evt_table *t, size_t i, const char *const *labels, size_t n)
{
    tb_code rc = table_check(t, i);
    if (rc != TB_OK)
        return rc;
    char **copy = NULL;
    if (labels) {
        copy = calloc(n ? n : 1, sizeof(char *));
        if (!copy)
            return TB_ERR_NOMEM;
        for (size_t k = 0; k < n; k++) {
            copy[k] = strdup(labels[k] ? labels[k] : "");
            if (!copy[k]) {
                for (size_t j = 0; j < k; j++)
                    free(copy[j]);
                free(copy);
                return TB_ERR_NOMEM;
            }
        }
    }
    evt_column *c = &t->cols[i];
    for (size_t k = 0; k < c->nlabels; k++)
        free(c->labels[k]);
    free(c->labels);
    c->labels = copy;
    c->nlabels = labels ? n : 0;
    return TB_OK;
}

tb_code evt_table_set_pk(evt_table *t, const size_t *cols, size_t n)
{
    if (!t || (n && !cols))
        return TB_ERR_INVALID;
    if (t->sealed)
        return TB_ERR_STATE;
    for (size_t k = 0; k < n; k++) {
        if (cols[k] >= t->ncols)
            return TB_ERR_INVALID;
        for (size_t j = 0; j < k; j++)
            if (cols[j] == cols[k])
                return TB_ERR_INVALID;
    }
    size_t *pk = NULL;
    if (n) {
        pk = malloc(n * sizeof(size_t));
        if (!pk)
            return TB_ERR_NOMEM;
        memcpy(pk, cols, n * sizeof(size_t));
    }
    free(t->pk);
    t->pk = pk;
    t->npk = n;
    for (size_t i = 0; i < t->ncols; i++)
        t->cols[i].pk_ordinal = 0;
    for (size_t k = 0; k < n; k++)
        t->cols[cols[k]].pk_ordinal = (int)k + 1;
    return TB_OK;
}

tb_code evt_table_set_default(evt_table *t, size_t i, const char *text, bool is_expr)
{
    tb_code rc = table_check(t, i);
    if (rc != TB_OK)
        return rc;
    char *copy = dup_or_null(text);
    if (text && !copy)
        return TB_ERR_NOMEM;
    evt_column *c = &t->cols[i];
    free(c->default_text);
    c->default_text = copy;
    c->default_expr = text && is_expr;
    return TB_OK;
}

tb_code evt_table_set_renamed_from(evt_table *t, const char *db, const char *table)
{
    if (!t)
        return TB_ERR_INVALID;
    if (t->sealed)
        return TB_ERR_STATE;
    char *d = table ? strdup(db ? db : "") : NULL, *n = dup_or_null(table);
    if (table && (!d || !n)) {
        free(d);
        free(n);
        return TB_ERR_NOMEM;
    }
    free(t->renamed_db);
    free(t->renamed_table);
    t->renamed_db = d;
    t->renamed_table = n;
    return TB_OK;
}

evt_table *evt_table_copy(const evt_table *t)
{
    if (!t)
        return NULL;
    evt_table *c = evt_table_new(t->db, t->name, t->ncols);
    tb_code rc = c ? TB_OK : TB_ERR_NOMEM;
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++) {
        const evt_column *x = &t->cols[i];
        if ((rc = evt_table_set_column(c, i, x->name, x->type, x->source_type, x->nullable, x->is_unsigned)) == TB_OK &&
            (rc = evt_table_set_column_details(c, i, x->length, x->precision, x->scale, x->charset)) == TB_OK &&
            (rc = evt_table_set_default(c, i, x->default_text, x->default_expr)) == TB_OK && x->labels)
            rc = evt_table_set_labels(c, i, (const char *const *)x->labels, x->nlabels);
    }
    if (rc == TB_OK)
        rc = evt_table_set_pk(c, t->pk, t->npk);
    if (rc == TB_OK)
        rc = evt_table_set_renamed_from(c, t->renamed_db, t->renamed_table);
    if (rc != TB_OK) {
        evt_table_unref(c);
        return NULL;
    }
    c->version = t->version;
    c->names_known = t->names_known;
    c->dropped = t->dropped;
    c->row_end = t->row_end;
    return c;
}

evt_table *evt_table_new_dropped(const char *db, const char *table)
{
    evt_table *t = evt_table_new(db, table, 0);
    if (!t)
        return NULL;
    t->dropped = true;
    evt_table_seal(t);
    return t;
}

tb_code evt_table_set_row_end(evt_table *t, long col)
{
    if (!t || col < -1 || (col >= 0 && (size_t)col >= t->ncols))
        return TB_ERR_INVALID;
    if (t->sealed)
        return TB_ERR_STATE;
    t->row_end = col;
    return TB_OK;
}

long evt_table_row_end(const evt_table *t)
{
    return t ? t->row_end : -1;
}

void evt_table_set_keys_only(evt_table *t)
{
    if (t && !t->sealed)
        t->keys_only = true;
}

bool evt_table_keys_only(const evt_table *t) { return t->keys_only; }

void evt_table_set_version(evt_table *t, uint32_t version)
{
    if (t && !t->sealed)
        t->version = version;
}

void evt_table_set_names_known(evt_table *t, bool known)
{
    if (t && !t->sealed)
        t->names_known = known;
}

/* Precompute the key text of every column ("\"name\":"); the codec writes it
 * per row. On allocation failure the codec escapes names itself. */
static void build_keyfrags(evt_table *t)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    size_t *off = malloc((t->ncols + 1) * sizeof(size_t));
    tb_code rc = off ? TB_OK : TB_ERR_NOMEM;
    for (size_t i = 0; i < t->ncols && rc == TB_OK; i++) {
        off[i] = b.len;
        evt_jw w;
        evt_jw_init(&w, &b);
        evt_jw_str(&w, t->cols[i].name, strlen(t->cols[i].name));
        rc = evt_jw_finish(&w);
        if (rc == TB_OK)
            rc = tb_buf_putc(&b, ':');
    }
    if (rc != TB_OK) {
        free(off);
        tb_buf_free(&b);
        return;
    }
    off[t->ncols] = b.len;
    /* 16 bytes of padding: the codec copies a short key with one 16-byte move */
    if (tb_buf_reserve(&b, EVT_KEYFRAG_PAD) != TB_OK) {
        free(off);
        tb_buf_free(&b);
        return;
    }
    memset(b.data + b.len, 0, EVT_KEYFRAG_PAD);
    t->keyfrag = tb_buf_detach(&b, NULL);
    t->keyoff = t->keyfrag ? off : (free(off), NULL);
}

/* Precompute the table's members of the envelope's source block
 * ("\"db\":\"shop\",\"table\":\"orders\""). On failure the codec writes them itself. */
static void build_srcfrag(evt_table *t)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    evt_jw w;
    evt_jw_init(&w, &b);
    evt_jw_obj_begin(&w);
    EVT_JW_KEY(&w, "db");
    evt_jw_str(&w, t->db, strlen(t->db));
    EVT_JW_KEY(&w, "table");
    evt_jw_str(&w, t->name, strlen(t->name));
    evt_jw_obj_end(&w);
    if (evt_jw_finish(&w) == TB_OK && b.len >= 2) { /* drop the braces */
        memmove(b.data, b.data + 1, b.len - 2);
        b.len -= 2;
        b.data[b.len] = '\0';
        t->srcfrag = tb_buf_detach(&b, &t->srcfrag_len);
    }
    tb_buf_free(&b);
}

void evt_table_seal(evt_table *t)
{
    if (!t || t->sealed)
        return;
    build_keyfrags(t);
    build_srcfrag(t);
    t->sealed = true;
}

const char *evt_table_db(const evt_table *t) { return t->db; }
const char *evt_table_name(const evt_table *t) { return t->name; }
size_t evt_table_ncols(const evt_table *t) { return t->ncols; }
const evt_column *evt_table_column(const evt_table *t, size_t i) { return i < t->ncols ? &t->cols[i] : NULL; }
size_t evt_table_npk(const evt_table *t) { return t->npk; }
size_t evt_table_pk_col(const evt_table *t, size_t k) { return k < t->npk ? t->pk[k] : (size_t)-1; }
uint32_t evt_table_version(const evt_table *t) { return t->version; }
bool evt_table_names_known(const evt_table *t) { return t->names_known; }
bool evt_table_dropped(const evt_table *t) { return t->dropped; }
const char *evt_table_renamed_from_db(const evt_table *t) { return t->renamed_db; }
const char *evt_table_renamed_from_table(const evt_table *t) { return t->renamed_table; }

long evt_table_find(const evt_table *t, const char *name)
{
    if (!t || !name)
        return -1;
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return (long)i;
    return -1;
}

static bool str_same(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Same name, column count, key and name knowledge. */
static bool same_frame(const evt_table *a, const evt_table *b)
{
    if (strcmp(a->db, b->db) || strcmp(a->name, b->name) || a->ncols != b->ncols || a->npk != b->npk ||
        a->names_known != b->names_known || a->row_end != b->row_end)
        return false;
    for (size_t k = 0; k < a->npk; k++)
        if (a->pk[k] != b->pk[k])
            return false;
    return true;
}

bool evt_table_same_shape(const evt_table *a, const evt_table *b)
{
    if (!a || !b)
        return a == b;
    if (!same_frame(a, b))
        return false;
    for (size_t i = 0; i < a->ncols; i++) {
        const evt_column *x = &a->cols[i], *y = &b->cols[i];
        if (strcmp(x->name, y->name) || x->type != y->type || !str_same(x->source_type, y->source_type) ||
            x->nullable != y->nullable || x->is_unsigned != y->is_unsigned || x->length != y->length ||
            x->precision != y->precision || x->scale != y->scale || !str_same(x->charset, y->charset) ||
            x->nlabels != y->nlabels || (x->labels == NULL) != (y->labels == NULL))
            return false;
        for (size_t k = 0; k < x->nlabels; k++)
            if (strcmp(x->labels[k], y->labels[k]))
                return false;
    }
    return true;
}

bool evt_table_same_columns(const evt_table *a, const evt_table *b)
{
    if (!a || !b)
        return a == b;
    if (!same_frame(a, b))
        return false;
    for (size_t i = 0; i < a->ncols; i++) {
        const evt_column *x = &a->cols[i], *y = &b->cols[i];
        if (strcmp(x->name, y->name) || x->type != y->type || x->is_unsigned != y->is_unsigned)
            return false;
    }
    return true;
}
