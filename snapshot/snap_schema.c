/*
 * snap_schema: table discovery and descriptors from information_schema.
 * See snap_schema.h.
 */
#include "snap_schema.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "evt_json.h"
#include "snap.h"
#include "snap_sql.h"
#include "snap_values.h"
#include "mymeta.h"
#include "tb_buf.h"
#include "tb_log.h"

/* ============================================================ filter */

tb_code snap_filter_init(snap_filter *f, const cfg *c, tb_error *err)
{
    memset(f, 0, sizeof(*f));
    const char *inc = cfg_get_str(c, "tables.include");
    const char *exc = cfg_get_str(c, "tables.exclude");
    if (inc && *inc) {
        if (regcomp(&f->inc, inc, REG_EXTENDED | REG_NOSUB) != 0)
            return tb_error_set(err, TB_ERR_CONFIG, false, "tables.include: bad regex '%s'", inc);
        f->has_inc = true;
    }
    if (exc && *exc) {
        if (regcomp(&f->exc, exc, REG_EXTENDED | REG_NOSUB) != 0) {
            snap_filter_free(f);
            return tb_error_set(err, TB_ERR_CONFIG, false, "tables.exclude: bad regex '%s'", exc);
        }
        f->has_exc = true;
    }
    return TB_OK;
}

void snap_filter_free(snap_filter *f)
{
    if (!f)
        return;
    if (f->has_inc)
        regfree(&f->inc);
    if (f->has_exc)
        regfree(&f->exc);
    f->has_inc = f->has_exc = false;
}

static bool system_schema(const char *db)
{
    static const char *const sys[] = {"mysql", "information_schema", "performance_schema", "sys"};
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
        if (strcasecmp(db, sys[i]) == 0)
            return true;
    return false;
}

bool snap_filter_match(const snap_filter *f, const char *db, const char *table)
{
    if (system_schema(db) || strcmp(table, SNAP_SIGNAL_TABLE) == 0)
        return false;
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = tb_buf_printf(&b, "%s.%s", db, table) == TB_OK;
    if (ok && f->has_inc && regexec(&f->inc, tb_buf_cstr(&b), 0, NULL, 0) != 0)
        ok = false;
    if (ok && f->has_exc && regexec(&f->exc, tb_buf_cstr(&b), 0, NULL, 0) == 0)
        ok = false;
    tb_buf_free(&b);
    return ok;
}

/* ============================================================ list */

typedef struct list_ctx {
    const snap_filter *f;
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
    if (!col[0] || !col[1] || !snap_filter_match(l->f, col[0], col[1]))
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

tb_code snap_schema_list(MYSQL *my, const snap_filter *f, snap_tinfo **out, size_t *n, tb_error *err)
{
    list_ctx l = {.f = f};
    tb_code rc = snap_sql_query(my,
                                "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, ENGINE FROM information_schema.TABLES "
                                "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, TABLE_NAME",
                                NULL, 0, list_row, &l, err);
    if (rc != TB_OK) {
        snap_tinfo_free_all(l.v, l.n);
        return tb_error_prefix(err, rc, "listing tables: ");
    }
    *out = l.v;
    *n = l.n;
    return TB_OK;
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
    snap_filter f;
    MYSQL *my = NULL;
    snap_tinfo *tinfo = NULL;
    topic_of *v = NULL;
    size_t n = 0;
    bool mariadb = false;
    tb_code rc = snap_filter_init(&f, c, err);
    if (rc != TB_OK)
        return rc;
    if ((rc = snap_sql_connect(c, &my, &mariadb, err)) != TB_OK ||
        (rc = snap_schema_list(my, &f, &tinfo, &n, err)) != TB_OK)
        goto out;
    if (!(v = calloc(n ? n : 1, sizeof(*v)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    const char *prefix = cfg_get_str(c, "topic.prefix");
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
    snap_filter_free(&f);
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

typedef struct col_row {
    char *name, *data_type, *column_type, *charset, *dflt, *extra;
    bool nullable;
    uint64_t char_len, num_prec, num_scale, dt_prec;
    bool has_num_scale;
} col_row;

typedef struct desc_ctx {
    col_row *v;
    size_t n, cap;
    char **pk;
    size_t npk;
    mymeta_period period;
    const char *table; /* the described table's name */
} desc_ctx;

static uint64_t num_or_zero(const char *s)
{
    return s ? strtoull(s, NULL, 10) : 0;
}

static tb_code col_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    desc_ctx *d = opaque;
    (void)len;
    (void)ncols;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        col_row *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        d->v = v;
        d->cap = cap;
    }
    col_row *r = &d->v[d->n++];
    memset(r, 0, sizeof(*r));
    r->name = dup_or_null(col[0]);
    r->data_type = dup_or_null(col[1]);
    r->column_type = dup_or_null(col[2]);
    r->nullable = col[3] && strcmp(col[3], "YES") == 0;
    r->charset = dup_or_null(col[4]);
    r->char_len = num_or_zero(col[5]);
    r->num_prec = num_or_zero(col[6]);
    r->num_scale = num_or_zero(col[7]);
    r->has_num_scale = col[7] != NULL;
    r->dt_prec = num_or_zero(col[8]);
    r->dflt = dup_or_null(col[9]);
    r->extra = dup_or_null(col[10]);
    if (!r->name || !r->data_type || !r->column_type || (col[9] && !r->dflt) || (col[10] && !r->extra))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    mymeta_period_column(&d->period, col[0], col[11]);
    return TB_OK;
}

/* The invisible row_start and row_end of an implicit period (mymeta.h), which
 * information_schema.COLUMNS does not list: TIMESTAMP(6) NOT NULL, last, as
 * the binlog has them. The SELECT of the rows names them, so they are read. */
static tb_code add_period_columns(desc_ctx *d, tb_error *err)
{
    const char *names[2] = {d->period.start, d->period.end};
    for (int k = 0; k < 2; k++) {
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 16;
            col_row *v = realloc(d->v, cap * sizeof(*v));
            if (!v)
                return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            d->v = v;
            d->cap = cap;
        }
        col_row *r = &d->v[d->n++];
        memset(r, 0, sizeof(*r));
        r->name = strdup(names[k]);
        r->data_type = strdup("timestamp");
        r->column_type = strdup("timestamp(6)");
        r->dt_prec = 6;
        if (!r->name || !r->data_type || !r->column_type)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    return TB_OK;
}

static tb_code type_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    desc_ctx *d = opaque;
    (void)len;
    (void)ncols;
    (void)err;
    mymeta_period_table(&d->period, d->table, col[0], col[1]);
    return TB_OK;
}

static tb_code pk_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    desc_ctx *d = opaque;
    (void)len;
    (void)ncols;
    char **v = realloc(d->pk, (d->npk + 1) * sizeof(*v));
    if (!v)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    d->pk = v;
    d->pk[d->npk] = dup_or_null(col[0]);
    if (!d->pk[d->npk])
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    d->npk++;
    return TB_OK;
}

/* key.columns.<db>.<table>=c1,c2 */
static tb_code key_columns(const cfg *c, const char *db, const char *table, desc_ctx *d, tb_error *err)
{
    if (cfg_key_columns(c, db, table, &d->pk, &d->npk) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

/* The byte limit of a TEXT or BLOB type (tinytext 255, text 65535,
 * mediumtext 16777215, longtext 4294967295; the same for BLOBs), which the
 * binlog path reads from the length-field size. false for other types. */
static bool lob_length(const char *data_type, uint32_t *length)
{
    static const struct {
        const char *name;
        uint32_t len;
    } lobs[] = {
        {"tinytext", 255u}, {"text", 65535u}, {"mediumtext", 16777215u}, {"longtext", 4294967295u},
        {"tinyblob", 255u}, {"blob", 65535u}, {"mediumblob", 16777215u}, {"longblob", 4294967295u},
    };
    for (size_t i = 0; i < sizeof(lobs) / sizeof(lobs[0]); i++)
        if (strcasecmp(data_type, lobs[i].name) == 0) {
            *length = lobs[i].len;
            return true;
        }
    return false;
}

static bool is_binary_type(evt_type t)
{
    return t == EVT_T_BINARY || t == EVT_T_VARBINARY || t == EVT_T_BLOB;
}

tb_code snap_schema_describe(MYSQL *my, const cfg *c, const char *db, const char *table, evt_table **out,
                             tb_error *err)
{
    desc_ctx d;
    memset(&d, 0, sizeof(d));
    evt_table *t = NULL;
    size_t *pkidx = NULL;
    const char *params[2] = {db, table};
    const char *server = mysql_get_server_info(my);
    bool mariadb = server && strstr(server, "MariaDB");
    *out = NULL;

#define SNAP_COLUMNS_SQL(period)                                                                                   \
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, "      \
    "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_DEFAULT, EXTRA, " period                         \
    " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=? AND TABLE_NAME=? ORDER BY ORDINAL_POSITION"
    tb_code rc = snap_sql_query(my, mariadb ? SNAP_COLUMNS_SQL(MYMETA_PERIOD_COLUMNS)
                                            : SNAP_COLUMNS_SQL(MYMETA_PERIOD_COLUMNS_MYSQL),
                                params, 2, col_cb, &d, err);
#undef SNAP_COLUMNS_SQL
    if (rc != TB_OK)
        goto out;
    if (d.n == 0) {
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "table %s.%s: no columns (does it exist?)", db, table);
        goto out;
    }
    d.table = table;
    if (mariadb && (rc = snap_sql_query(my, MYMETA_PERIOD_TABLE_SQL, params, 2, type_cb, &d, err)) != TB_OK)
        goto out;
    if (mymeta_period_implicit(&d.period) && (rc = add_period_columns(&d, err)) != TB_OK)
        goto out;
    rc = snap_sql_query(my,
                        "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=? AND "
                        "TABLE_NAME=? AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
                        params, 2, pk_cb, &d, err);
    if (rc != TB_OK)
        goto out;
    /* a system-versioned table's key is its declared one, without the period's end (mymeta.h) */
    for (size_t k = 0; k < d.npk;) {
        if (mymeta_period_keeps_key(&d.period, d.pk[k])) {
            k++;
            continue;
        }
        free(d.pk[k]);
        memmove(&d.pk[k], &d.pk[k + 1], (d.npk - k - 1) * sizeof(*d.pk));
        d.npk--;
    }
    if (d.npk == 0) {
        rc = key_columns(c, db, table, &d, err);
        if (rc != TB_OK)
            goto out;
    }
    if (d.npk == 0) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "table %s.%s has no primary key: set key.columns.%s.%s=<columns> or exclude it "
                          "with tables.exclude",
                          db, table, db, table);
        goto out;
    }
    t = evt_table_new(db, table, d.n);
    pkidx = calloc(d.npk, sizeof(*pkidx));
    if (!t || !pkidx) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < d.n && rc == TB_OK; i++) {
        col_row *r = &d.v[i];
        evt_type ty = snap_type_from_data_type(r->data_type);
        if (ty == EVT_T_UNKNOWN)
            TB_WARN("snapshot", "table %s.%s column %s: type '%s' read as text", db, table, r->name, r->data_type);
        bool is_uns = strstr(r->column_type, "unsigned") != NULL;
        /* Integer display widths ("int(11)") are not in the binlog's table map;
         * drop them so the schema record reads the same from both paths. */
        char int_type[32];
        const char *stype = r->column_type;
        if ((ty == EVT_T_TINYINT || ty == EVT_T_SMALLINT || ty == EVT_T_MEDIUMINT || ty == EVT_T_INT ||
             ty == EVT_T_BIGINT) &&
            strlen(r->data_type) < 20) {
            snprintf(int_type, sizeof(int_type), "%s%s", r->data_type, is_uns ? " unsigned" : "");
            stype = int_type;
        }
        if (ty == EVT_T_YEAR) /* MariaDB says "year(4)"; the binlog knows no width */
            stype = "year";
        rc = evt_table_set_column(t, i, r->name, ty, stype, r->nullable, is_uns);
        uint32_t length = 0, prec = 0, scale = 0;
        if (ty == EVT_T_BIT)
            length = (uint32_t)r->num_prec;
        else if (lob_length(r->data_type, &length))
            ; /* TEXT/BLOB: the type's byte limit, as the binlog path reads it */
        else if (r->char_len)
            length = (uint32_t)r->char_len;
        if (ty == EVT_T_DECIMAL) {
            prec = (uint32_t)r->num_prec;
            scale = (uint32_t)r->num_scale;
        } else if (ty == EVT_T_DATETIME || ty == EVT_T_TIMESTAMP || ty == EVT_T_TIME) {
            scale = (uint32_t)r->dt_prec;
        }
        const char *cs = r->charset;
        if (!cs && (is_binary_type(ty) || ty == EVT_T_GEOMETRY))
            cs = "binary";
        if (rc == TB_OK)
            rc = evt_table_set_column_details(t, i, length, prec, scale, cs);
        if (rc == TB_OK) {
            char *dtext = NULL;
            bool dexpr = false;
            rc = mymeta_parse_default(r->dflt, r->extra, mariadb, &dtext, &dexpr);
            if (rc == TB_OK)
                rc = evt_table_set_default(t, i, dtext, dexpr);
            free(dtext);
        }
        if (rc == TB_OK && (ty == EVT_T_ENUM || ty == EVT_T_SET)) {
            char **labels = NULL;
            size_t nl = 0;
            if (mymeta_parse_labels(r->column_type, &labels, &nl) == TB_OK)
                rc = evt_table_set_labels(t, i, (const char *const *)labels, nl);
            else
                TB_WARN("snapshot", "table %s.%s column %s: cannot parse labels of %s", db, table, r->name,
                        r->column_type);
            mymeta_labels_free(labels, nl);
        }
    }
    if (rc != TB_OK) {
        tb_error_set(err, rc, false, "table %s.%s: building the descriptor failed", db, table);
        goto out;
    }
    for (size_t k = 0; k < d.npk; k++) {
        long ix = evt_table_find(t, d.pk[k]);
        if (ix < 0) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "table %s.%s: key column '%s' does not exist", db, table,
                              d.pk[k]);
            goto out;
        }
        pkidx[k] = (size_t)ix;
    }
    rc = evt_table_set_pk(t, pkidx, d.npk);
    if (rc != TB_OK) {
        tb_error_set(err, rc, false, "table %s.%s: setting the key failed", db, table);
        goto out;
    }
    if (d.period.versioned && (rc = evt_table_set_row_end(t, evt_table_find(t, d.period.end))) != TB_OK) {
        tb_error_set(err, rc, false, "table %s.%s: marking its period's end column failed", db, table);
        goto out;
    }
    evt_table_set_version(t, 1);
    evt_table_set_names_known(t, true);
    evt_table_seal(t);
    *out = t;
    t = NULL;
out:
    evt_table_unref(t);
    free(pkidx);
    for (size_t i = 0; i < d.n; i++) {
        free(d.v[i].name);
        free(d.v[i].data_type);
        free(d.v[i].column_type);
        free(d.v[i].charset);
        free(d.v[i].dflt);
        free(d.v[i].extra);
    }
    free(d.v);
    for (size_t i = 0; i < d.npk; i++)
        free(d.pk[i]);
    free(d.pk);
    if (rc != TB_OK && err && err->code == TB_OK)
        tb_error_set(err, rc, false, "table %s.%s: describe failed", db, table);
    return rc;
}
