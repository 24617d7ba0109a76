/*
 * snap_rows: stream one SELECT into events. See snap_rows.h.
 */
#include "snap_rows.h"

#include <stdlib.h>
#include <string.h>

#include "myconn.h"
#include "snap_sql.h"
#include "snap_values.h"

struct snap_rows {
    MYSQL_STMT *st;
    evt_table *t;
    size_t ncols;
    MYSQL_BIND *bind;
    snap_colbuf *cb;
};

tb_code snap_rows_select_sql(const evt_table *t, tb_buf *out)
{
    tb_code rc = tb_buf_puts(out, "SELECT ");
    for (size_t i = 0; rc == TB_OK && i < evt_table_ncols(t); i++) {
        if (i > 0)
            rc = tb_buf_putc(out, ',');
        if (rc == TB_OK)
            rc = snap_sql_ident(out, evt_table_column(t, i)->name);
    }
    if (rc == TB_OK)
        rc = tb_buf_puts(out, " FROM ");
    if (rc == TB_OK)
        rc = snap_sql_ident(out, evt_table_db(t));
    if (rc == TB_OK)
        rc = tb_buf_putc(out, '.');
    if (rc == TB_OK)
        rc = snap_sql_ident(out, evt_table_name(t));
    return rc;
}

void snap_rows_close(snap_rows *r)
{
    if (!r)
        return;
    if (r->st) {
        mysql_stmt_free_result(r->st);
        mysql_stmt_close(r->st);
    }
    if (r->cb)
        for (size_t i = 0; i < r->ncols; i++)
            snap_colbuf_free(&r->cb[i]);
    free(r->cb);
    free(r->bind);
    evt_table_unref(r->t);
    free(r);
}

tb_code snap_rows_open(MYSQL *my, evt_table *t, const char *sql, MYSQL_BIND *params, unsigned nparams,
                       snap_rows **out, tb_error *err)
{
    tb_code rc = TB_OK;
    *out = NULL;
    snap_rows *r = calloc(1, sizeof(*r));
    if (!r)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    r->t = evt_table_ref(t);
    r->ncols = evt_table_ncols(t);
    r->bind = calloc(r->ncols, sizeof(*r->bind));
    r->cb = calloc(r->ncols, sizeof(*r->cb));
    r->st = mysql_stmt_init(my);
    if (!r->bind || !r->cb || !r->st) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (mysql_stmt_prepare(r->st, sql, strlen(sql)) != 0) {
        rc = myconn_stmt_fail(r->st, err, "prepare");
        goto out;
    }
    if (nparams > 0 && mysql_stmt_bind_param(r->st, params) != 0) {
        rc = myconn_stmt_fail(r->st, err, "bind");
        goto out;
    }
    if (mysql_stmt_field_count(r->st) != r->ncols) {
        rc = tb_error_set(err, TB_ERR_STATE, false, "result has %u columns, the descriptor %zu",
                          mysql_stmt_field_count(r->st), r->ncols);
        goto out;
    }
    for (size_t i = 0; i < r->ncols; i++) {
        rc = snap_colbuf_bind(&r->cb[i], &r->bind[i], evt_table_column(t, i), err);
        if (rc != TB_OK)
            goto out;
    }
    if (mysql_stmt_execute(r->st) != 0) {
        rc = myconn_stmt_fail(r->st, err, "execute");
        goto out;
    }
    if (mysql_stmt_bind_result(r->st, r->bind) != 0) {
        rc = myconn_stmt_fail(r->st, err, "bind result");
        goto out;
    }
    *out = r;
    r = NULL;
out:
    if (rc != TB_OK)
        tb_error_prefix(err, rc, "table %s.%s: ", evt_table_db(t), evt_table_name(t));
    snap_rows_close(r);
    return rc;
}

tb_code snap_rows_store(snap_rows *r, uint64_t *nrows, tb_error *err)
{
    if (mysql_stmt_store_result(r->st) != 0) {
        tb_code rc = myconn_stmt_fail(r->st, err, "store result");
        return tb_error_prefix(err, rc, "table %s.%s: ", evt_table_db(r->t), evt_table_name(r->t));
    }
    *nrows = (uint64_t)mysql_stmt_num_rows(r->st);
    return TB_OK;
}

void snap_rows_seek(snap_rows *r, uint64_t i) { mysql_stmt_data_seek(r->st, (unsigned long long)i); }

tb_code snap_rows_next(snap_rows *r, evt_event *ev, bool *got, tb_error *err)
{
    *got = false;
    int f = mysql_stmt_fetch(r->st);
    if (f == MYSQL_NO_DATA)
        return TB_OK;
    if (f == 1) {
        tb_code rc = myconn_stmt_fail(r->st, err, "fetch");
        return tb_error_prefix(err, rc, "table %s.%s: ", evt_table_db(r->t), evt_table_name(r->t));
    }
    bool rebind = false;
    for (size_t i = 0; i < r->ncols; i++) {
        snap_colbuf *cb = &r->cb[i];
        if (cb->as == SNAP_AS_BYTES && !cb->is_null && cb->len > cb->cap) {
            tb_code rc = snap_colbuf_grow(cb, &r->bind[i], err);
            if (rc != TB_OK)
                return tb_error_prefix(err, rc, "table %s.%s column %s: ", evt_table_db(r->t), evt_table_name(r->t),
                                       evt_table_column(r->t, i)->name);
            if (mysql_stmt_fetch_column(r->st, &r->bind[i], (unsigned)i, 0) != 0) {
                rc = myconn_stmt_fail(r->st, err, "fetch column");
                return tb_error_prefix(err, rc, "table %s.%s column %s: ", evt_table_db(r->t), evt_table_name(r->t),
                                       evt_table_column(r->t, i)->name);
            }
            rebind = true;
        }
        snap_value_set(ev, i, evt_table_column(r->t, i), cb);
    }
    if (rebind && mysql_stmt_bind_result(r->st, r->bind) != 0)
        return myconn_stmt_fail(r->st, err, "bind result");
    *got = true;
    return TB_OK;
}
