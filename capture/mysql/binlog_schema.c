/*
 * binlog_schema: table descriptors from information_schema, for binlogs
 * written with binlog_row_metadata=MINIMAL (no column names in TABLE_MAP).
 * Used by the live reader through binlog_dec_opts.schema_fn, on a second
 * connection (the first one streams the binlog). Bound parameters only.
 *
 *   SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLUMN_KEY,
 *          COLUMN_DEFAULT, EXTRA, GENERATION_EXPRESSION (MariaDB; MySQL: NULL)
 *     FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
 *     ORDER BY ORDINAL_POSITION
 *   SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES
 *     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?  (MariaDB)
 *   SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
 *     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY'
 *     ORDER BY ORDINAL_POSITION
 * ENUM/SET labels are read from COLUMN_TYPE ("enum('a','b''c')", mymeta_parse_labels),
 * defaults from COLUMN_DEFAULT and EXTRA (mymeta_parse_default). The decoder
 * also looks every new table version up here for its columns' defaults,
 * which the binlog does not carry. A MariaDB system-versioned table's
 * period (mymeta_period) marks its end column (evt_table_set_row_end) and
 * leaves it out of the key; an implicit period's invisible row_start and
 * row_end, which COLUMNS does not list, are appended, as the binlog has them.
 */
#include "tb_cast.h"
#include "binlog_schema.h"
#include "evt_mysql.h"
#include "mymeta.h"
#include "tb_log.h"

#include <stdlib.h>
#include <string.h>

#define SC_TEXT 65536
#define SC_NRES 8 /* results of the COLUMNS query */

typedef struct sc_col {
    char *name, *type, *charset, *dflt, *extra;
    bool nullable;
} sc_col;

static tb_code run(MYSQL *m, const char *q, const char *db, const char *table, int nres, char **bufs,
                   unsigned long *lens, bool *nulls, void (*row_fn)(void *, char **, unsigned long *, bool *),
                   void *opaque, tb_error *err)
{
    tb_code rc = TB_OK;
    MYSQL_STMT *st = mysql_stmt_init(m);
    if (!st)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    MYSQL_BIND in[2], out[SC_NRES];
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    unsigned long dl = (unsigned long)strlen(db), tl = (unsigned long)strlen(table);
    in[0].buffer_type = MYSQL_TYPE_STRING;
    in[0].buffer = TB_UNCONST(db); /* an input parameter: read only */
    in[0].buffer_length = dl;
    in[0].length = &dl;
    in[1].buffer_type = MYSQL_TYPE_STRING;
    in[1].buffer = TB_UNCONST(table);
    in[1].buffer_length = tl;
    in[1].length = &tl;
    my_bool isnull[SC_NRES];
    for (int i = 0; i < nres; i++) {
        out[i].buffer_type = MYSQL_TYPE_STRING;
        out[i].buffer = bufs[i];
        out[i].buffer_length = SC_TEXT - 1;
        out[i].length = &lens[i];
        out[i].is_null = &isnull[i];
    }
    if (mysql_stmt_prepare(st, q, (unsigned long)strlen(q)) || mysql_stmt_bind_param(st, in) ||
        mysql_stmt_bind_result(st, out) || mysql_stmt_execute(st)) {
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "information_schema lookup of %s.%s: %s", db, table,
                          mysql_stmt_error(st));
        goto out;
    }
    for (;;) {
        int f = mysql_stmt_fetch(st);
        if (f == MYSQL_NO_DATA)
            break;
        if (f == 1) {
            rc = tb_error_set(err, TB_ERR_SOURCE, true, "information_schema lookup of %s.%s: %s", db, table,
                              mysql_stmt_error(st));
            break;
        }
        for (int i = 0; i < nres; i++) {
            if (lens[i] > SC_TEXT - 1)
                lens[i] = SC_TEXT - 1; /* MYSQL_DATA_TRUNCATED: keep what fits */
            bufs[i][lens[i]] = '\0';
            nulls[i] = isnull[i];
        }
        row_fn(opaque, bufs, lens, nulls);
    }
out:
    mysql_stmt_close(st);
    return rc;
}

typedef struct sc_cols {
    sc_col *cols;
    size_t n, cap;
    bool oom;
    mymeta_period period;
} sc_cols;

static sc_col *col_add(sc_cols *c)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        sc_col *nc = realloc(c->cols, cap * sizeof(*nc));
        if (!nc) {
            c->oom = true;
            return NULL;
        }
        c->cols = nc;
        c->cap = cap;
    }
    sc_col *col = &c->cols[c->n++];
    memset(col, 0, sizeof(*col));
    return col;
}

static void col_row(void *opaque, char **b, unsigned long *l, bool *nulls)
{
    sc_cols *c = opaque;
    if (c->oom)
        return;
    sc_col *col = col_add(c);
    if (!col)
        return;
    mymeta_period_column(&c->period, b[0], nulls[7] ? NULL : b[7]);
    col->name = strndup(b[0], l[0]);
    col->type = strndup(b[1], l[1]);
    col->nullable = strcmp(b[2], "YES") == 0;
    col->charset = nulls[3] ? NULL : strndup(b[3], l[3]);
    col->dflt = nulls[5] ? NULL : strndup(b[5], l[5]);
    col->extra = nulls[6] ? NULL : strndup(b[6], l[6]);
    if (!col->name || !col->type || (!nulls[3] && !col->charset) || (!nulls[5] && !col->dflt) ||
        (!nulls[6] && !col->extra))
        c->oom = true;
}

typedef struct sc_pk {
    char **names;
    size_t n, cap;
    bool oom;
} sc_pk;

typedef struct sc_type {
    mymeta_period *period;
    const char *table;
} sc_type;

static void type_row(void *opaque, char **b, unsigned long *l, bool *nulls)
{
    sc_type *t = opaque;
    (void)l;
    mymeta_period_table(t->period, t->table, nulls[0] ? NULL : b[0], nulls[1] ? NULL : b[1]);
}

static void pk_row(void *opaque, char **b, unsigned long *l, bool *nulls)
{
    sc_pk *p = opaque;
    if (p->oom || p->n == p->cap) {
        p->oom = true;
        return;
    }
    p->names[p->n] = strndup(b[0], l[0]);
    if (!p->names[p->n++])
        p->oom = true;
}

tb_code binlog_schema_lookup(MYSQL *m, const char *db, const char *table, evt_table **out, tb_error *err)
{
    *out = NULL;
    char *bufs[SC_NRES] = {0};
    unsigned long lens[SC_NRES];
    bool nulls[SC_NRES];
    sc_cols cols = {0};
    sc_pk pk = {0};
    evt_table *t = NULL;
    tb_code rc = TB_OK;
    const char *server = mysql_get_server_info(m);
    bool mariadb = server && strstr(server, "MariaDB");
    for (int i = 0; i < SC_NRES; i++)
        if (!(bufs[i] = malloc(SC_TEXT))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
#define SC_COLUMNS_SQL(period)                                                                                     \
    "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLUMN_KEY, COLUMN_DEFAULT, EXTRA, " period    \
    " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
    rc = run(m, mariadb ? SC_COLUMNS_SQL(MYMETA_PERIOD_COLUMNS) : SC_COLUMNS_SQL(MYMETA_PERIOD_COLUMNS_MYSQL), db,
             table, SC_NRES, bufs, lens, nulls, col_row, &cols, err);
#undef SC_COLUMNS_SQL
    if (rc != TB_OK)
        goto out;
    if (cols.n == 0)
        goto out; /* not found */
    if (mariadb) {
        sc_type ty = {&cols.period, table};
        rc = run(m, MYMETA_PERIOD_TABLE_SQL, db, table, 2, bufs, lens, nulls, type_row, &ty, err);
        if (rc != TB_OK)
            goto out;
    }
    /* an implicit period's invisible columns, last, as the binlog has them (mymeta.h) */
    if (mymeta_period_implicit(&cols.period))
        for (int k = 0; k < 2 && !cols.oom; k++) {
            sc_col *pc = col_add(&cols);
            if (pc && (!(pc->name = strdup(k ? cols.period.end : cols.period.start)) ||
                       !(pc->type = strdup("timestamp(6)"))))
                cols.oom = true;
        }
    if (cols.oom) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    pk.cap = cols.n;
    pk.names = calloc(cols.n, sizeof(char *));
    if (!pk.names) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = run(m,
             "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND "
             "TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
             db, table, 1, bufs, lens, nulls, pk_row, &pk, err);
    if (rc != TB_OK)
        goto out;
    t = evt_table_new(db, table, cols.n);
    if (!t) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < cols.n && rc == TB_OK; i++) {
        sc_col *c = &cols.cols[i];
        rc = evt_table_set_column(t, i, c->name, EVT_T_UNKNOWN, c->type, c->nullable, strstr(c->type, "unsigned") != NULL);
        if (rc == TB_OK)
            rc = evt_table_set_column_details(t, i, 0, 0, 0, c->charset);
        if (rc == TB_OK) {
            char *dtext = NULL;
            bool dexpr = false;
            rc = mymeta_parse_default(c->dflt, c->extra, mariadb, &dtext, &dexpr);
            if (rc == TB_OK)
                rc = evt_table_set_default(t, i, dtext, dexpr);
            free(dtext);
        }
        if (rc == TB_OK && (strncmp(c->type, "enum(", 5) == 0 || strncmp(c->type, "set(", 4) == 0)) {
            size_t n = 0;
            char **labels = NULL;
            tb_code lrc = mymeta_parse_labels(c->type, &labels, &n);
            if (lrc == TB_OK)
                rc = evt_table_set_labels(t, i, (const char *const *)labels, n);
            else if (lrc == TB_ERR_NOMEM)
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            else
                TB_WARN("binlog", "table %s.%s column %s: cannot parse the labels of %s", db, table, c->name, c->type);
            mymeta_labels_free(labels, n);
        }
    }
    if (rc == TB_OK && pk.n) {
        size_t idx[4096];
        size_t np = 0;
        for (size_t k = 0; k < pk.n && np < 4096; k++)
            for (size_t i = 0; i < cols.n; i++)
                if (pk.names[k] && strcmp(pk.names[k], cols.cols[i].name) == 0 &&
                    mymeta_period_keeps_key(&cols.period, pk.names[k]))
                    idx[np++] = i;
        rc = evt_table_set_pk(t, idx, np);
    }
    if (rc == TB_OK && cols.period.versioned)
        rc = evt_table_set_row_end(t, evt_table_find(t, cols.period.end));
    if (rc != TB_OK) {
        rc = tb_error_set(err, rc, false, "%s.%s: cannot build the descriptor from information_schema", db, table);
        goto out;
    }
    evt_table_set_names_known(t, true);
    *out = t;
    t = NULL;
out:
    evt_table_unref(t);
    for (size_t i = 0; i < cols.n; i++) {
        free(cols.cols[i].name);
        free(cols.cols[i].type);
        free(cols.cols[i].charset);
        free(cols.cols[i].dflt);
        free(cols.cols[i].extra);
    }
    free(cols.cols);
    for (size_t i = 0; i < pk.n; i++)
        free(pk.names[i]);
    free(pk.names);
    for (int i = 0; i < SC_NRES; i++)
        free(bufs[i]);
    return rc;
}
