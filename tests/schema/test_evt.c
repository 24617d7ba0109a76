/* evt: table descriptors, events, builder, lifetimes (run under ASan/LSan). */
#include <stdio.h>

#include "test_util.h"

static evt_table *orders(void)
{
    evt_table *t = evt_table_new("shop", "orders", 3);
    cr_assert_not_null(t);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint unsigned", false, true), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "name", EVT_T_VARCHAR, "varchar(20)", true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "price", EVT_T_DECIMAL, "decimal(10,2)", true, false), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 2, 0, 10, 2, NULL), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 1, 20, 0, 0, "utf8mb4"), TB_OK);
    size_t pk[] = {0};
    cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_OK);
    evt_table_set_version(t, 3);
    evt_table_seal(t);
    return t;
}

Test(evt, type_names_round_trip)
{
    for (int t = EVT_T_UNKNOWN; t <= EVT_T_SQLITE_NUMERIC; t++) {
        const char *n = evt_type_name((evt_type)t);
        cr_assert_not_null(n);
        cr_assert_eq(evt_type_from_name(n), (evt_type)t, "%s", n);
    }
    cr_assert_str_eq(evt_type_name(EVT_T_SQLITE_INTEGER), "sqlite_integer");
    cr_assert_eq(evt_type_from_name("nope"), EVT_T_UNKNOWN);
    cr_assert_eq(evt_type_from_name(NULL), EVT_T_UNKNOWN);
    cr_assert_str_eq(evt_type_name((evt_type)999), "unknown");
    cr_assert_str_eq(evt_connector_name(EVT_CONN_MARIADB), "mariadb");
    cr_assert_str_eq(evt_connector_name(EVT_CONN_SQLITE), "sqlite");
    cr_assert_str_eq(evt_connector_name(EVT_CONN_CACHE), "cache");
}

Test(evt, table_descriptor)
{
    evt_table *t = evt_table_new("db", "t", 2);
    cr_assert_str_eq(evt_table_column(t, 0)->name, "@1");
    cr_assert_str_eq(evt_table_column(t, 1)->name, "@2");
    cr_assert_null(evt_table_column(t, 2));
    const char *labels[] = {"a", "b"};
    cr_assert_eq(evt_table_set_labels(t, 1, labels, 2), TB_OK);
    cr_assert_eq(evt_table_set_labels(t, 1, labels, 1), TB_OK); /* replaces */
    cr_assert_eq(evt_table_column(t, 1)->nlabels, 1);
    cr_assert_eq(evt_table_set_column(t, 5, "x", EVT_T_INT, NULL, true, false), TB_ERR_INVALID);
    size_t bad[] = {0, 0};
    cr_assert_eq(evt_table_set_pk(t, bad, 2), TB_ERR_INVALID);
    size_t pk[] = {1, 0};
    cr_assert_eq(evt_table_set_pk(t, pk, 2), TB_OK);
    cr_assert_eq(evt_table_column(t, 1)->pk_ordinal, 1);
    cr_assert_eq(evt_table_column(t, 0)->pk_ordinal, 2);
    cr_assert_eq(evt_table_pk_col(t, 0), 1);
    cr_assert_eq(evt_table_find(t, "@2"), 1);
    cr_assert_eq(evt_table_find(t, "zz"), -1);
    evt_table_set_names_known(t, false);
    evt_table_seal(t);
    cr_assert(!evt_table_names_known(t));
    cr_assert_eq(evt_table_set_column(t, 0, "x", EVT_T_INT, NULL, true, false), TB_ERR_STATE);
    cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_ERR_STATE);
    evt_table_unref(t);
    evt_table_unref(NULL);
}

Test(evt, same_shape_ignores_version)
{
    evt_table *a = orders(), *b = orders();
    cr_assert(evt_table_same_shape(a, b));
    evt_table *c = evt_table_new("shop", "orders", 3);
    for (size_t i = 0; i < 3; i++) {
        const evt_column *x = evt_table_column(a, i);
        evt_table_set_column(c, i, x->name, x->type, x->source_type, x->nullable, x->is_unsigned);
        evt_table_set_column_details(c, i, x->length, x->precision, x->scale, x->charset);
    }
    evt_table_set_version(c, 99);
    cr_assert(!evt_table_same_shape(a, c)); /* no key yet */
    size_t pk[] = {0};
    evt_table_set_pk(c, pk, 1);
    cr_assert(evt_table_same_shape(a, c));
    evt_table_set_column_details(c, 2, 0, 12, 2, NULL);
    cr_assert(!evt_table_same_shape(a, c));
    evt_table_unref(a);
    evt_table_unref(b);
    evt_table_unref(c);
}

Test(evt, refcount_keeps_table_alive_for_events)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_table_unref(t); /* the event still holds one */
    evt_set_uint(e, EVT_AFTER, 0, 1);
    cr_assert_str_eq(evt_table_name(evt_event_table(e)), "orders");
    evt_table *t2 = evt_table_ref(evt_event_table(e));
    evt_event_free(e); /* t2 keeps it */
    cr_assert_str_eq(evt_table_db(t2), "shop");
    evt_table_unref(t2);
    evt_event_free(NULL);
}

Test(evt, builder_and_accessors)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_UPDATE, t);
    evt_set_uint(e, EVT_BEFORE, 0, 7);
    evt_set_string(e, EVT_BEFORE, 1, "old", 3);
    evt_set_uint(e, EVT_AFTER, 0, 7);
    evt_set_string(e, EVT_AFTER, 1, "new", 3);
    evt_set_decimal(e, EVT_AFTER, 2, "12.50", 5);
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_MYSQL;
    tb_position_set_file(&pos, "mysql-bin.000003");
    tb_position_set_gtid(&pos, "0-1-7");
    pos.pos = 1234;
    evt_event_set_position(e, &pos);
    tb_position_free(&pos); /* the event has its own copy */
    evt_event_set_txid(e, "0-1-7");
    evt_event_set_commit_ts_ms(e, 1700000000123);
    evt_event_set_last_in_tx(e, true);
    evt_event_set_snapshot(e, EVT_SNAPSHOT_LAST);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    cr_assert_null(evt_event_error(e));
    cr_assert_eq(evt_event_op(e), EVT_OP_UPDATE);
    cr_assert(evt_event_has_image(e, EVT_BEFORE) && evt_event_has_image(e, EVT_AFTER));
    cr_assert_eq(evt_event_value(e, EVT_BEFORE, 2)->kind, EVT_V_ABSENT);
    const evt_value *v = evt_event_value(e, EVT_AFTER, 1);
    cr_assert_eq(v->kind, EVT_V_STRING);
    cr_assert_eq(v->v.s.len, 3);
    cr_assert(memcmp(v->v.s.ptr, "new", 3) == 0);
    cr_assert_eq(evt_event_value(e, EVT_AFTER, 99)->kind, EVT_V_ABSENT);
    cr_assert_str_eq(evt_event_position(e)->file, "mysql-bin.000003");
    cr_assert_str_eq(evt_event_position(e)->gtid_set, "0-1-7");
    cr_assert_eq(evt_event_position(e)->pos, 1234);
    cr_assert_str_eq(evt_event_txid(e), "0-1-7");
    cr_assert_eq(evt_event_commit_ts_ms(e), 1700000000123);
    cr_assert(evt_event_last_in_tx(e));
    cr_assert_eq(evt_event_snapshot(e), EVT_SNAPSHOT_LAST);
    cr_assert_eq(evt_event_connector(e), EVT_CONN_MARIADB);
    cr_assert(evt_event_key_unchanged(e));
    evt_set_uint(e, EVT_AFTER, 0, 8);
    cr_assert(!evt_event_key_unchanged(e));
    evt_set_int(e, EVT_AFTER, 0, 7); /* INT 7 == UINT 7 */
    cr_assert(evt_event_key_unchanged(e));
    evt_event_free(e);
    evt_table_unref(t);
}

Test(evt, sticky_errors_name_table_and_column)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_set_uint(e, EVT_BEFORE, 1, 5); /* c has no before image */
    const tb_error *err = evt_event_error(e);
    cr_assert_not_null(err);
    cr_assert_eq(err->code, TB_ERR_INVALID);
    cr_assert(strstr(err->msg, "shop.orders") && strstr(err->msg, "name") && strstr(err->msg, "before"), "%s",
              err->msg);
    char first[TB_ERROR_MSG_MAX];
    strcpy(first, err->msg);
    evt_set_uint(e, EVT_AFTER, 9, 1); /* a later error does not replace the first */
    evt_set_uint(e, EVT_AFTER, 0, 1); /* and a good call is a no-op */
    cr_assert_str_eq(evt_event_error(e)->msg, first);
    cr_assert_eq(evt_event_value(e, EVT_AFTER, 0)->kind, EVT_V_ABSENT);
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error out;
    cr_assert_eq(evt_json_row(e, EVT_AFTER, &b, &out), TB_ERR_INVALID);
    cr_assert_str_eq(out.msg, first);
    /* reset clears the error */
    evt_event_reset(e, EVT_OP_CREATE, t);
    cr_assert_null(evt_event_error(e));
    evt_set_uint(e, EVT_AFTER, 7, 1);
    cr_assert(strstr(evt_event_error(e)->msg, "column index 7 out of range"), "%s", evt_event_error(e)->msg);
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_set_decimal(e, EVT_AFTER, 2, "1x", 2);
    cr_assert(strstr(evt_event_error(e)->msg, "price"), "%s", evt_event_error(e)->msg);
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_temporal bad = {.year = 2024, .month = 13, .day = 1};
    evt_set_temporal(e, EVT_AFTER, 1, EVT_V_DATE, &bad);
    cr_assert_not_null(evt_event_error(e));
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_event_fail(e, TB_ERR_CORRUPT, "row %d broken", 3);
    cr_assert_eq(evt_event_error(e)->code, TB_ERR_CORRUPT);
    cr_assert_str_eq(evt_event_error(e)->msg, "row 3 broken");
    tb_buf_free(&b);
    evt_event_free(e);
    evt_table_unref(t);
}

Test(evt, reset_reuses_memory_and_pointers_stay_stable)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    char big[3000];
    memset(big, 'x', sizeof big);
    /* many values in one event: earlier pointers must not move */
    const char *ptrs[200];
    for (int i = 0; i < 200; i++) {
        char s[16];
        snprintf(s, sizeof s, "v%d", i);
        evt_set_string(e, EVT_AFTER, 1, i % 10 == 0 ? big : s, i % 10 == 0 ? sizeof big : strlen(s));
        ptrs[i] = evt_event_value(e, EVT_AFTER, 1)->v.s.ptr;
    }
    for (int i = 0; i < 200; i++) {
        char s[16];
        snprintf(s, sizeof s, "v%d", i);
        if (i % 10)
            cr_assert_str_eq(ptrs[i], s);
        else
            cr_assert(memcmp(ptrs[i], big, sizeof big) == 0);
    }
    /* a table with more columns after reset */
    evt_table *wide = evt_table_new("db", "wide", 50);
    evt_table_seal(wide);
    for (int row = 0; row < 1000; row++) {
        evt_table *tt = row % 2 ? wide : t;
        evt_event_reset(e, row % 3 ? EVT_OP_CREATE : EVT_OP_DELETE, tt);
        evt_image img = row % 3 ? EVT_AFTER : EVT_BEFORE;
        for (size_t c = 0; c < evt_table_ncols(tt); c++)
            evt_set_string(e, img, c, "abcdefghijklmnopqrstuvwxyz", 26);
        cr_assert_null(evt_event_error(e));
        cr_assert_eq(evt_event_value(e, img, evt_table_ncols(tt) - 1)->kind, EVT_V_STRING);
        cr_assert_eq(evt_event_value(e, img == EVT_AFTER ? EVT_BEFORE : EVT_AFTER, 0)->kind, EVT_V_ABSENT);
    }
    /* one huge value, then back to small rows (the big chunk is released) */
    size_t hn = 3u << 20;
    char *huge = calloc(1, hn);
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_set_bytes(e, EVT_AFTER, 1, huge, hn);
    cr_assert_eq(evt_event_value(e, EVT_AFTER, 1)->v.s.len, hn);
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_set_bytes(e, EVT_AFTER, 1, "x", 1);
    free(huge);
    evt_event_free(e);
    evt_table_unref(wide);
    evt_table_unref(t);
}

Test(evt, set_value_copies_every_kind)
{
    evt_table *t = evt_table_new("db", "t", 6);
    evt_table_seal(t);
    evt_event *src = evt_event_new(EVT_OP_CREATE, t);
    const char *labels[] = {"a", "b"};
    evt_set_set(src, EVT_AFTER, 0, labels, NULL, 2);
    float fv[] = {1.5f, 2.5f};
    evt_set_vector(src, EVT_AFTER, 1, fv, 2);
    evt_set_geometry(src, EVT_AFTER, 2, 4326, "\x01\x02", 2);
    evt_set_json(src, EVT_AFTER, 3, "[1]", 3);
    evt_temporal tm = {.year = 2024, .month = 1, .day = 2, .hour = 3, .minute = 4, .second = 5, .usec = 6, .fsp = 6};
    evt_set_temporal(src, EVT_AFTER, 4, EVT_V_TIMESTAMP, &tm);
    evt_set_float(src, EVT_AFTER, 5, 0.5f);
    cr_assert_null(evt_event_error(src));
    evt_event *dst = evt_event_new(EVT_OP_READ, t);
    for (size_t c = 0; c < 6; c++)
        evt_set_value(dst, EVT_AFTER, c, evt_event_value(src, EVT_AFTER, c));
    tb_buf a, b;
    tb_buf_init(&a, 0);
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_row(src, EVT_AFTER, &a, NULL), TB_OK);
    evt_event_free(src); /* dst must not depend on src's memory */
    cr_assert_eq(evt_json_row(dst, EVT_AFTER, &b, NULL), TB_OK);
    cr_assert_str_eq(a.data, b.data);
    cr_assert_str_eq(b.data, "{\"@1\":[\"a\",\"b\"],\"@2\":[1.5,2.5],\"@3\":{\"srid\":4326,\"wkb\":\"AQI=\"},"
                             "\"@4\":[1],\"@5\":\"2024-01-02T03:04:05.000006Z\",\"@6\":0.5}");
    for (size_t c = 0; c < 6; c++)
        cr_assert(evt_value_equal(evt_event_value(dst, EVT_AFTER, c), evt_event_value(dst, EVT_AFTER, c)));
    tb_buf_free(&a);
    tb_buf_free(&b);
    evt_event_free(dst);
    evt_table_unref(t);
}
