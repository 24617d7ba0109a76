/* snap_keys: see snap_keys.h. */
#include "snap_keys.h"

#include <stdlib.h>

#include "snap_rows.h"
#include "snap_schema.h"
#include "snap_sql.h"
#include "tb_buf.h"

/* A descriptor of t's key columns only, in key order, with their types. */
static evt_table *key_table(const evt_table *t)
{
    size_t npk = evt_table_npk(t);
    evt_table *k = evt_table_new(evt_table_db(t), evt_table_name(t), npk);
    size_t *pk = calloc(npk ? npk : 1, sizeof(*pk));
    tb_code rc = k && pk ? TB_OK : TB_ERR_NOMEM;
    for (size_t i = 0; rc == TB_OK && i < npk; i++) {
        const evt_column *x = evt_table_column(t, evt_table_pk_col(t, i));
        if ((rc = evt_table_set_column(k, i, x->name, x->type, x->source_type, x->nullable, x->is_unsigned)) ==
                TB_OK &&
            (rc = evt_table_set_column_details(k, i, x->length, x->precision, x->scale, x->charset)) == TB_OK &&
            x->labels)
            rc = evt_table_set_labels(k, i, (const char *const *)x->labels, x->nlabels);
        pk[i] = i;
    }
    if (rc == TB_OK)
        rc = evt_table_set_pk(k, pk, npk);
    free(pk);
    if (rc != TB_OK) {
        evt_table_unref(k);
        return NULL;
    }
    evt_table_set_version(k, evt_table_version(t));
    evt_table_seal(k);
    return k;
}

tb_code snap_keys_scan(const cfg *c, const char *db, const char *table, evt_table **desc, snap_key_row_fn fn,
                       void *opaque, tb_error *err)
{
    MYSQL *my = NULL;
    bool mariadb = false;
    evt_table *k = NULL;
    evt_event *ev = NULL;
    snap_rows *rows = NULL;
    tb_buf sql;
    tb_buf_init(&sql, 0);
    *desc = NULL;
    tb_code rc = snap_sql_connect_rows(c, &my, &mariadb, err);
    if (rc == TB_OK)
        rc = snap_schema_describe(my, c, db, table, desc, err);
    if (rc != TB_OK)
        goto out;
    if (!(k = key_table(*desc)) || !(ev = evt_event_new(EVT_OP_READ, k)) || snap_rows_select_sql(k, &sql) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if ((rc = snap_rows_open(my, k, tb_buf_cstr(&sql), NULL, 0, &rows, err)) != TB_OK)
        goto out;
    for (;;) {
        bool got = false;
        evt_event_reset(ev, EVT_OP_READ, k);
        if ((rc = snap_rows_next(rows, ev, &got, err)) != TB_OK || !got)
            break;
        if (evt_event_error(ev)) {
            rc = tb_error_set(err, evt_event_error(ev)->code, false, "%s", evt_event_error(ev)->msg);
            break;
        }
        if ((rc = fn(opaque, ev, err)) != TB_OK)
            break;
    }
out:
    if (rc != TB_OK)
        tb_error_prefix(err, rc, "%s.%s: its keys: ", db, table);
    snap_rows_close(rows);
    evt_event_free(ev);
    evt_table_unref(k);
    tb_buf_free(&sql);
    if (my)
        snap_sql_release(c, my);
    return rc;
}
