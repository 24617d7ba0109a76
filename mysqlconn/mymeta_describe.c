/*
 * mymeta_describe: the one reader of a MySQL/MariaDB table's description (see mymeta.h), for the
 * snapshot (snap_schema_describe) and the binlog decoder's catalog lookups (binlog_live.c).
 * Bound parameters only; the questions, in this order:
 *
 *   SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME,
 *          CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION,
 *          COLUMN_DEFAULT, EXTRA, GENERATION_EXPRESSION (MariaDB; MySQL: NULL)
 *     FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
 *     ORDER BY ORDINAL_POSITION
 *   SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES
 *     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?                    (MariaDB: the period)
 *   SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
 *     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY'
 *     ORDER BY ORDINAL_POSITION
 *
 * Per column (DESIGN 4, the schema record: the same from the snapshot and the binlog):
 *   type         DATA_TYPE (mymeta_type)
 *   source_type  COLUMN_TYPE, but integers without their display width ("int unsigned", not
 *                "int(10) unsigned": the binlog's table map has no width) and YEAR as "year"
 *   length       BIT: NUMERIC_PRECISION (bits); TEXT/BLOB: the type's byte limit (the binlog
 *                reads it from the length field's size); else CHARACTER_MAXIMUM_LENGTH
 *   precision    DECIMAL: NUMERIC_PRECISION; scale: DECIMAL's NUMERIC_SCALE, the fsp of
 *                DATETIME/TIMESTAMP/TIME
 *   charset      CHARACTER_SET_NAME; "binary" for BINARY/VARBINARY/BLOB and geometry types
 *   default      mymeta_parse_default; labels: mymeta_parse_labels of an ENUM's or SET's type
 */
#include "mymeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myconn.h"
#include "tb_log.h"

/* ------------------------------------------------------------ types */

static const struct {
    const char *name;
    evt_type type;
} type_map[] = {
    {"tinyint", EVT_T_TINYINT}, {"smallint", EVT_T_SMALLINT}, {"mediumint", EVT_T_MEDIUMINT},
    {"int", EVT_T_INT}, {"integer", EVT_T_INT}, {"bigint", EVT_T_BIGINT},
    {"float", EVT_T_FLOAT}, {"double", EVT_T_DOUBLE}, {"real", EVT_T_DOUBLE},
    {"double precision", EVT_T_DOUBLE}, {"decimal", EVT_T_DECIMAL}, {"numeric", EVT_T_DECIMAL},
    {"char", EVT_T_CHAR}, {"varchar", EVT_T_VARCHAR},
    {"tinytext", EVT_T_TEXT}, {"text", EVT_T_TEXT}, {"mediumtext", EVT_T_TEXT}, {"longtext", EVT_T_TEXT},
    {"binary", EVT_T_BINARY}, {"varbinary", EVT_T_VARBINARY},
    {"tinyblob", EVT_T_BLOB}, {"blob", EVT_T_BLOB}, {"mediumblob", EVT_T_BLOB}, {"longblob", EVT_T_BLOB},
    {"date", EVT_T_DATE}, {"datetime", EVT_T_DATETIME}, {"timestamp", EVT_T_TIMESTAMP},
    {"time", EVT_T_TIME}, {"year", EVT_T_YEAR},
    {"enum", EVT_T_ENUM}, {"set", EVT_T_SET}, {"bit", EVT_T_BIT}, {"json", EVT_T_JSON},
    {"geometry", EVT_T_GEOMETRY}, {"point", EVT_T_GEOMETRY}, {"linestring", EVT_T_GEOMETRY},
    {"polygon", EVT_T_GEOMETRY}, {"multipoint", EVT_T_GEOMETRY}, {"multilinestring", EVT_T_GEOMETRY},
    {"multipolygon", EVT_T_GEOMETRY}, {"geometrycollection", EVT_T_GEOMETRY},
    {"geomcollection", EVT_T_GEOMETRY}, {"vector", EVT_T_VECTOR},
    /* MariaDB 10.7+: read in their text form (the binlog path converts its bytes, evt_mysql_text_form) */
    {"uuid", EVT_T_CHAR}, {"inet6", EVT_T_CHAR}, {"inet4", EVT_T_CHAR},
};

evt_type mymeta_type(const char *data_type)
{
    if (!data_type)
        return EVT_T_UNKNOWN;
    for (size_t i = 0; i < sizeof(type_map) / sizeof(type_map[0]); i++)
        if (strcasecmp(type_map[i].name, data_type) == 0)
            return type_map[i].type;
    return EVT_T_UNKNOWN;
}

/* The byte limit of a TEXT or BLOB type (tinytext 255, text 65535, mediumtext 16777215,
 * longtext 4294967295; the same for BLOBs), which the binlog path reads from the length-field
 * size. false for other types. */
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

static bool is_integer(evt_type t)
{
    return t == EVT_T_TINYINT || t == EVT_T_SMALLINT || t == EVT_T_MEDIUMINT || t == EVT_T_INT || t == EVT_T_BIGINT;
}

static bool is_binary_type(evt_type t)
{
    return t == EVT_T_BINARY || t == EVT_T_VARBINARY || t == EVT_T_BLOB;
}

/* ------------------------------------------------------------ the catalog's rows */

typedef struct col_row {
    char *name, *data_type, *column_type, *charset, *dflt, *extra;
    bool nullable;
    uint64_t char_len, num_prec, num_scale, dt_prec;
} col_row;

typedef struct desc_ctx {
    col_row *v;
    size_t n, cap;
    char **pk;
    size_t npk;
    mymeta_period period;
    const char *table; /* the described table's name */
} desc_ctx;

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static uint64_t num_or_zero(const char *s)
{
    return s ? strtoull(s, NULL, 10) : 0;
}

static col_row *col_add(desc_ctx *d, tb_error *err)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        col_row *v = realloc(d->v, cap * sizeof(*v));
        if (!v) {
            tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            return NULL;
        }
        d->v = v;
        d->cap = cap;
    }
    col_row *r = &d->v[d->n++];
    memset(r, 0, sizeof(*r));
    return r;
}

static tb_code col_cb(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    desc_ctx *d = opaque;
    (void)len;
    (void)ncols;
    col_row *r = col_add(d, err);
    if (!r)
        return TB_ERR_NOMEM;
    r->name = dup_or_null(col[0]);
    r->data_type = dup_or_null(col[1]);
    r->column_type = dup_or_null(col[2]);
    r->nullable = col[3] && strcmp(col[3], "YES") == 0;
    r->charset = dup_or_null(col[4]);
    r->char_len = num_or_zero(col[5]);
    r->num_prec = num_or_zero(col[6]);
    r->num_scale = num_or_zero(col[7]);
    r->dt_prec = num_or_zero(col[8]);
    r->dflt = dup_or_null(col[9]);
    r->extra = dup_or_null(col[10]);
    if (!r->name || !r->data_type || !r->column_type || (col[4] && !r->charset) || (col[9] && !r->dflt) ||
        (col[10] && !r->extra))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    mymeta_period_column(&d->period, col[0], col[11]);
    return TB_OK;
}

/* The invisible row_start and row_end of an implicit period (mymeta.h), which
 * information_schema.COLUMNS does not list: TIMESTAMP(6) NOT NULL, last, as the binlog has
 * them. The snapshot's SELECT of the rows names them, so they are read. */
static tb_code add_period_columns(desc_ctx *d, tb_error *err)
{
    const char *names[2] = {d->period.start, d->period.end};
    for (int k = 0; k < 2; k++) {
        col_row *r = col_add(d, err);
        if (!r)
            return TB_ERR_NOMEM;
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

/* ------------------------------------------------------------ the descriptor */

/* Column i of t from the catalog's row r. */
static tb_code set_column(evt_table *t, size_t i, const col_row *r, bool mariadb, tb_error *err)
{
    evt_type ty = mymeta_type(r->data_type);
    bool is_uns = strstr(r->column_type, "unsigned") != NULL;
    char int_type[32];
    const char *stype = r->column_type;
    if (is_integer(ty) && strlen(r->data_type) < 20) {
        snprintf(int_type, sizeof(int_type), "%s%s", r->data_type, is_uns ? " unsigned" : "");
        stype = int_type;
    }
    if (ty == EVT_T_YEAR) /* MariaDB says "year(4)"; the binlog knows no width */
        stype = "year";
    tb_code rc = evt_table_set_column(t, i, r->name, ty, stype, r->nullable, is_uns);
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
        tb_code lrc = mymeta_parse_labels(r->column_type, &labels, &nl);
        if (lrc == TB_OK)
            rc = evt_table_set_labels(t, i, (const char *const *)labels, nl);
        else if (lrc == TB_ERR_NOMEM)
            rc = lrc;
        else
            TB_WARN("source", "table %s.%s column %s: cannot parse the labels of %s", evt_table_db(t),
                    evt_table_name(t), r->name, r->column_type);
        mymeta_labels_free(labels, nl);
    }
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "table %s.%s: building the descriptor failed", evt_table_db(t),
                            evt_table_name(t));
    return TB_OK;
}

tb_code mymeta_describe(MYSQL *my, const char *db, const char *table, evt_table **out, tb_error *err)
{
    desc_ctx d;
    memset(&d, 0, sizeof(d));
    d.table = table;
    evt_table *t = NULL;
    size_t *pkidx = NULL;
    const char *params[2] = {db, table};
    bool mariadb = myconn_is_mariadb(my);
    *out = NULL;

#define MYMETA_COLUMNS_SQL(period)                                                                                 \
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, "      \
    "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_DEFAULT, EXTRA, " period                         \
    " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=? AND TABLE_NAME=? ORDER BY ORDINAL_POSITION"
    tb_code rc = myconn_query(my, mariadb ? MYMETA_COLUMNS_SQL("GENERATION_EXPRESSION") : MYMETA_COLUMNS_SQL("NULL"),
                              params, 2, col_cb, &d, err);
#undef MYMETA_COLUMNS_SQL
    if (rc != TB_OK)
        goto out;
    if (d.n == 0) {
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "table %s.%s: no columns (does it exist?)", db, table);
        goto out;
    }
    if (mariadb && (rc = myconn_query(my,
                                            "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE "
                                            "TABLE_SCHEMA=? AND TABLE_NAME=?",
                                            params, 2, type_cb, &d, err)) != TB_OK)
        goto out;
    if (mymeta_period_implicit(&d.period) && (rc = add_period_columns(&d, err)) != TB_OK)
        goto out;
    rc = myconn_query(my,
                      "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=? AND "
                      "TABLE_NAME=? AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
                      params, 2, pk_cb, &d, err);
    if (rc != TB_OK)
        goto out;
    t = evt_table_new(db, table, d.n);
    pkidx = calloc(d.npk ? d.npk : 1, sizeof(*pkidx));
    if (!t || !pkidx) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < d.n && rc == TB_OK; i++)
        rc = set_column(t, i, &d.v[i], mariadb, err);
    if (rc != TB_OK)
        goto out;
    /* a system-versioned table's key is its declared one, without the period's end (mymeta.h) */
    size_t np = 0;
    for (size_t k = 0; k < d.npk; k++) {
        long ix = evt_table_find(t, d.pk[k]);
        if (ix >= 0 && mymeta_period_keeps_key(&d.period, d.pk[k]))
            pkidx[np++] = (size_t)ix;
    }
    if ((rc = evt_table_set_pk(t, pkidx, np)) != TB_OK) {
        tb_error_set(err, rc, false, "table %s.%s: setting the key failed", db, table);
        goto out;
    }
    if (d.period.versioned && (rc = evt_table_set_row_end(t, evt_table_find(t, d.period.end))) != TB_OK) {
        tb_error_set(err, rc, false, "table %s.%s: marking its period's end column failed", db, table);
        goto out;
    }
    evt_table_set_names_known(t, true);
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
    return rc;
}
