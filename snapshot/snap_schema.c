/*
 * snap_schema: table discovery and descriptors from information_schema.
 * See snap_schema.h.
 */
#include "snap_schema.h"

#include <stdlib.h>
#include <string.h>

#include "evt_json.h"
#include "myconn.h"
#include "mymeta.h"
#include "snap.h"
#include "snap_sql.h"
#include "tb_buf.h"
#include "tb_log.h"

/* ============================================================ list */

typedef struct list_ctx {
    const cfg_filter *f;
    snap_tinfo *v;
    size_t n, cap;
} list_ctx;

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static tb_code list_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    list_ctx *l = opaque;
    (void)len;
    (void)ncols;
    if (!col[0] || !col[1] || !cfg_filter_match(l->f, col[0], col[1]))
        return TB_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        snap_tinfo *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    snap_tinfo *t = &l->v[l->n];
    memset(t, 0, sizeof(*t));
    t->db = strdup(col[0]);
    t->table = strdup(col[1]);
    t->rows_est = col[2] ? strtoull(col[2], NULL, 10) : 0;
    t->engine = dup_or_null(col[3]);
    l->n++;
    if (!t->db || !t->table)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

/* With stats, each table's TABLE_ROWS and ENGINE; without, NULLs: the server then reads each
 * table's definition only, without opening the table (much less work on a large catalog). */
static tb_code schema_list(MYSQL *my, const cfg_filter *f, bool stats, snap_tinfo **out, size_t *n, tb_error *err)
{
    list_ctx l = {.f = f};
    tb_code rc = myconn_query(my,
                              stats ? "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, ENGINE FROM information_schema.TABLES "
                                      "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, "
                                      "TABLE_NAME"
                                    : "SELECT TABLE_SCHEMA, TABLE_NAME, NULL, NULL FROM information_schema.TABLES "
                                      "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, "
                                      "TABLE_NAME",
                              NULL, 0, list_row, &l, err);
    if (rc != TB_OK) {
        snap_tinfo_free_all(l.v, l.n);
        return tb_error_prefix(err, rc, "listing tables: ");
    }
    *out = l.v;
    *n = l.n;
    return TB_OK;
}

tb_code snap_schema_list(MYSQL *my, const cfg_filter *f, snap_tinfo **out, size_t *n, tb_error *err)
{
    return schema_list(my, f, true, out, n, err);
}

typedef struct topic_of {
    char *topic;
    const snap_tinfo *t;
} topic_of;

static int topic_cmp(const void *a, const void *b)
{
    return strcmp(((const topic_of *)a)->topic, ((const topic_of *)b)->topic);
}

tb_code snap_check_topics(const cfg *c, size_t *ntables, tb_error *err)
{
    cfg_filter f;
    MYSQL *my = NULL;
    snap_tinfo *tinfo = NULL;
    topic_of *v = NULL;
    size_t n = 0;
    bool mariadb = false;
    tb_code rc = cfg_filter_init(&f, c, err);
    if (rc != TB_OK)
        return rc;
    if ((rc = snap_sql_connect(c, &my, &mariadb, err)) != TB_OK ||
        (rc = schema_list(my, &f, false, &tinfo, &n, err)) != TB_OK) /* the names are enough */
        goto out;
    if (!(v = calloc(n ? n : 1, sizeof(*v)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    const char *prefix = cfg_get_str(c, CFGK_TOPIC_PREFIX);
    for (size_t i = 0; i < n; i++) {
        tb_buf b;
        tb_buf_init(&b, 0);
        v[i].t = &tinfo[i];
        if (evt_topic_name(prefix, tinfo[i].db, tinfo[i].table, &b) != TB_OK ||
            !(v[i].topic = tb_buf_detach(&b, NULL))) {
            tb_buf_free(&b);
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
    }
    if (ntables)
        *ntables = n;
    qsort(v, n, sizeof(*v), topic_cmp);
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i - 1].topic, v[i].topic) == 0) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false,
                              "tables %s.%s and %s.%s both map to topic %s (characters outside [a-zA-Z0-9._-] "
                              "become '_'): exclude one of them with tables.exclude",
                              v[i - 1].t->db, v[i - 1].t->table, v[i].t->db, v[i].t->table, v[i].topic);
            goto out;
        }
out:
    for (size_t i = 0; v && i < n; i++)
        free(v[i].topic);
    free(v);
    snap_tinfo_free_all(tinfo, n);
    if (my)
        snap_sql_release(c, my);
    cfg_filter_free(&f);
    return rc;
}

void snap_tinfo_free_all(snap_tinfo *t, size_t n)
{
    if (!t)
        return;
    for (size_t i = 0; i < n; i++) {
        free(t[i].db);
        free(t[i].table);
        free(t[i].engine);
    }
    free(t);
}

/* ============================================================ describe */

/* key.columns.<db>.<table>=c1,c2 as t's key; a named column t lacks is a configuration error. */
static tb_code key_columns(const cfg *c, evt_table *t, tb_error *err)
{
    const char *db = evt_table_db(t), *table = evt_table_name(t);
    char **cols = NULL;
    size_t n = 0;
    if (cfg_key_columns(c, db, table, &cols, &n) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = TB_OK;
    size_t *idx = n ? calloc(n, sizeof(*idx)) : NULL;
    if (n && !idx)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    for (size_t k = 0; k < n && rc == TB_OK; k++) {
        long ix = evt_table_find(t, cols[k]);
        if (ix < 0)
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "table %s.%s: key column '%s' does not exist", db, table,
                              cols[k]);
        else
            idx[k] = (size_t)ix;
    }
    if (rc == TB_OK && n && (rc = evt_table_set_pk(t, idx, n)) != TB_OK)
        tb_error_set(err, rc, false, "table %s.%s: setting the key failed", db, table);
    free(idx);
    cfg_list_free(cols, n);
    return rc;
}

tb_code snap_schema_describe(MYSQL *my, const cfg *c, const char *db, const char *table, evt_table **out,
                             tb_error *err)
{
    evt_table *t = NULL;
    *out = NULL;
    tb_code rc = mymeta_describe(my, db, table, &t, err);
    if (rc != TB_OK)
        return rc;
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        const evt_column *col = evt_table_column(t, i);
        if (col->type == EVT_T_UNKNOWN)
            TB_WARN("snapshot", "table %s.%s column %s: type '%s' read as text", db, table, col->name,
                    col->source_type ? col->source_type : "?");
    }
    if (evt_table_npk(t) == 0 && (rc = key_columns(c, t, err)) != TB_OK)
        goto out;
    if (evt_table_npk(t) == 0) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "table %s.%s has no primary key: set key.columns.%s.%s=<columns> or exclude it "
                          "with tables.exclude",
                          db, table, db, table);
        goto out;
    }
    evt_table_set_version(t, 1);
    evt_table_seal(t);
    *out = t;
    t = NULL;
out:
    evt_table_unref(t);
    return rc;
}
