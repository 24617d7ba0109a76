/* Records on the wire: keys, envelopes, row format, rendering, schema
 * records, the Kafka Connect wrapper, positions, the message decoder. */
#include <math.h>
#include <stdio.h>

#include "json_oracle.h"
#include "test_util.h"

static const evt_codec_opts ENV = {.topic_prefix = "tb", .name = "conn1", .now_ms = 1700000000999};
static const evt_codec_opts ROW = {.topic_prefix = "tb", .name = "conn1", .row_format = true, .now_ms = 1};

/* shop.orders(id bigint unsigned pk, name varchar, price decimal) */
static evt_table *orders(void)
{
    evt_table *t = evt_table_new("shop", "orders", 3);
    evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint unsigned", false, true);
    evt_table_set_column(t, 1, "name", EVT_T_VARCHAR, "varchar(20)", true, false);
    evt_table_set_column(t, 2, "price", EVT_T_DECIMAL, "decimal(10,2)", true, false);
    evt_table_set_column_details(t, 2, 0, 10, 2, NULL);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);
    return t;
}

static void mysql_meta(evt_event *e)
{
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.mariadb = true;
    p.server_id = 1;
    tb_position_set_file(&p, "mysql-bin.000003");
    tb_position_set_gtid(&p, "0-1-7");
    p.pos = 1234;
    p.row = 2;
    evt_event_set_position(e, &p);
    tb_position_free(&p);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    evt_event_set_commit_ts_ms(e, 1700000000000);
    evt_event_set_txid(e, "0-1-7");
}

static void set_row(evt_event *e, evt_image img, uint64_t id, const char *name, const char *price)
{
    evt_set_uint(e, img, 0, id);
    if (name)
        evt_set_string(e, img, 1, name, strlen(name));
    else
        evt_set_null(e, img, 1);
    if (price)
        evt_set_decimal(e, img, 2, price, strlen(price));
}

static char *value_of(const evt_codec_opts *o, const evt_event *e)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    tb_code rc = evt_json_value(o, e, &b, &err);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    return tb_buf_detach(&b, NULL);
}

#define SRC "\"source\":{\"version\":\"0.1.0\",\"connector\":\"mariadb\",\"name\":\"conn1\",\"ts_ms\":1700000000000," \
            "\"snapshot\":\"false\",\"db\":\"shop\",\"table\":\"orders\",\"server_id\":1," \
            "\"file\":\"mysql-bin.000003\",\"pos\":1234,\"row\":2,\"gtid\":\"0-1-7\"}"
#define TAIL ",\"ts_ms\":1700000000999,\"transaction\":{\"id\":\"0-1-7\"}}"

Test(records, envelope_create_update_delete_read)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    mysql_meta(e);
    set_row(e, EVT_AFTER, 18446744073709551615ull, "caf\xc3\xa9", "12.50");
    char *v = value_of(&ENV, e);
    cr_expect_str_eq(v, "{\"before\":null,\"after\":{\"id\":18446744073709551615,\"name\":\"caf\xc3\xa9\",\"price\":"
                        "\"12.50\"}," SRC ",\"op\":\"c\"" TAIL);
    free(v);

    evt_event_reset(e, EVT_OP_UPDATE, t);
    mysql_meta(e);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    set_row(e, EVT_AFTER, 1, NULL, "2.00");
    v = value_of(&ENV, e);
    cr_expect_str_eq(v, "{\"before\":{\"id\":1,\"name\":\"a\",\"price\":\"1.00\"},\"after\":{\"id\":1,\"name\":null,"
                        "\"price\":\"2.00\"}," SRC ",\"op\":\"u\"" TAIL);
    free(v);

    evt_event_reset(e, EVT_OP_DELETE, t);
    mysql_meta(e);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    v = value_of(&ENV, e);
    cr_expect_str_eq(v, "{\"before\":{\"id\":1,\"name\":\"a\",\"price\":\"1.00\"},\"after\":null," SRC
                        ",\"op\":\"d\"" TAIL);
    free(v);

    evt_event_reset(e, EVT_OP_READ, t);
    evt_event_set_snapshot(e, EVT_SNAPSHOT_LAST);
    evt_event_set_connector(e, EVT_CONN_MYSQL);
    set_row(e, EVT_AFTER, 5, "x", "0.00");
    v = value_of(&ENV, e);
    cr_expect_str_eq(v, "{\"before\":null,\"after\":{\"id\":5,\"name\":\"x\",\"price\":\"0.00\"},\"source\":{\"version\":"
                        "\"0.1.0\",\"connector\":\"mysql\",\"name\":\"conn1\",\"ts_ms\":0,\"snapshot\":\"last\","
                        "\"db\":\"shop\",\"table\":\"orders\"},\"op\":\"r\",\"ts_ms\":1700000000999,"
                        "\"transaction\":null}");
    free(v);
    evt_event_free(e);
    evt_table_unref(t);
}

Test(records, sqlite_sources)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    set_row(e, EVT_AFTER, 1, "a", "1.00");
    evt_event_set_connector(e, EVT_CONN_SQLITE);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_WAL;
    p.salt1 = 4000000000u;
    p.salt2 = 2;
    p.frame = 10;
    p.gen_seq = 3;
    evt_event_set_position(e, &p);
    char *v = value_of(&ENV, e);
    json_t *j = jo_parse_s(v);
    jo_expect_at(j, JO_PATH("source", "connector"), "\"sqlite\"");
    jo_expect_at(j, JO_PATH("source", "table"), "\"orders\"");
    jo_expect_at(j, JO_PATH("source", "salt1"), "4000000000");
    jo_expect_at(j, JO_PATH("source", "salt2"), "2");
    jo_expect_at(j, JO_PATH("source", "frame"), "10");
    jo_expect_at(j, JO_PATH("source", "gen_seq"), "3");
    jo_expect_at(j, JO_PATH("source", "seq"), NULL);
    jo_expect_at(j, JO_PATH("source", "file"), NULL);
    json_decref(j);
    free(v);
    p.kind = TB_POS_SQLITE_LOG;
    p.seq = 42;
    evt_event_set_position(e, &p);
    v = value_of(&ENV, e);
    j = jo_parse_s(v);
    jo_expect_at(j, JO_PATH("source", "connector"), "\"sqlite\"");
    jo_expect_at(j, JO_PATH("source", "table"), "\"orders\"");
    jo_expect_at(j, JO_PATH("source", "seq"), "42");
    jo_expect_at(j, JO_PATH("source", "salt1"), NULL);
    jo_expect_at(j, JO_PATH("source", "frame"), NULL);
    json_decref(j);
    free(v);
    evt_event_free(e);
    evt_table_unref(t);
}

Test(records, partial_images_leave_columns_out)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_UPDATE, t);
    evt_set_uint(e, EVT_BEFORE, 0, 9); /* MINIMAL: before = key only */
    evt_set_string(e, EVT_AFTER, 1, "n", 1); /* after = changed column only */
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_row(e, EVT_BEFORE, &b, NULL), TB_OK);
    cr_expect_str_eq(b.data, "{\"id\":9}");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_row(e, EVT_AFTER, &b, NULL), TB_OK);
    cr_expect_str_eq(b.data, "{\"name\":\"n\"}");
    tb_buf_reset(&b);
    /* the key of the after image comes from the before image */
    cr_assert_eq(evt_json_key(e, EVT_AFTER, &b, NULL), TB_OK);
    cr_expect_str_eq(b.data, "{\"id\":9}");
    cr_assert(evt_event_key_unchanged(e));
    tb_buf_free(&b);
    evt_event_free(e);
    evt_table_unref(t);
}

/* Same key values, tables with columns in different orders: identical key bytes. */
Test(records, canonical_key_is_independent_of_column_order)
{
    const char *names[] = {"a", "region", "id", "z"};
    char *keys[2];
    for (int variant = 0; variant < 2; variant++) {
        evt_table *t = evt_table_new("db", "t", 4);
        int order[2][4] = {{0, 1, 2, 3}, {3, 2, 0, 1}}; /* column position of names[i] */
        for (int i = 0; i < 4; i++)
            evt_table_set_column(t, (size_t)order[variant][i], names[i], EVT_T_VARCHAR, NULL, true, false);
        size_t pk[] = {(size_t)order[variant][1], (size_t)order[variant][2]}; /* key (region, id) */
        evt_table_set_pk(t, pk, 2);
        evt_table_seal(t);
        evt_event *e = evt_event_new(EVT_OP_CREATE, t);
        evt_set_string(e, EVT_AFTER, (size_t)order[variant][0], "x", 1);
        evt_set_string(e, EVT_AFTER, (size_t)order[variant][1], "eu \"w\"", 6);
        evt_set_int(e, EVT_AFTER, (size_t)order[variant][2], 42);
        evt_set_null(e, EVT_AFTER, (size_t)order[variant][3]);
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert_eq(evt_json_key(e, EVT_AFTER, &b, NULL), TB_OK);
        keys[variant] = tb_buf_detach(&b, NULL);
        evt_event_free(e);
        evt_table_unref(t);
    }
    cr_assert_str_eq(keys[0], "{\"region\":\"eu \\\"w\\\"\",\"id\":42}");
    cr_assert_str_eq(keys[0], keys[1]);
    free(keys[0]);
    free(keys[1]);

    /* no key: null */
    evt_table *t = evt_table_new("db", "nokey", 1);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_set_int(e, EVT_AFTER, 0, 1);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_key(e, EVT_AFTER, &b, NULL), TB_OK);
    cr_assert_str_eq(b.data, "null");
    tb_buf_free(&b);
    evt_event_free(e);
    evt_table_unref(t);
}

static void expect_msgs(const evt_rendered *r, size_t n, const char *const *keys, const char *const *ops)
{
    cr_assert_eq(r->n, n, "got %zu messages", r->n);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(r->msgs[i].key, keys[i]);
        cr_expect_eq(r->msgs[i].key_len, strlen(keys[i]));
        if (!ops[i]) {
            cr_expect_null(r->msgs[i].value, "message %zu should be a tombstone", i);
            continue;
        }
        cr_assert_not_null(r->msgs[i].value);
        cr_expect_eq(r->msgs[i].value_len, strlen(r->msgs[i].value));
        char want[64];
        if (ops[i][0] == '{')
            cr_expect_str_eq(r->msgs[i].value, ops[i]);
        else {
            snprintf(want, sizeof want, "\"%s\"", ops[i]);
            cr_expect(jo_expect_text_at(r->msgs[i].value, r->msgs[i].value_len, JO_PATH("op"), want), "message %zu",
                      i);
        }
    }
}

Test(records, render_delete_and_key_change)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_DELETE, t);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    evt_rendered r;
    evt_rendered_init(&r);
    tb_error err;
    cr_assert_eq(evt_render(&ENV, e, &r, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(r.topic, "tb.shop.orders");
    expect_msgs(&r, 2, (const char *[]){"{\"id\":1}", "{\"id\":1}"}, (const char *[]){"d", NULL});
    cr_assert_eq(evt_render(&ROW, e, &r, &err), TB_OK, "%s", err.msg);
    expect_msgs(&r, 1, (const char *[]){"{\"id\":1}"}, (const char *[]){NULL});
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_value(&ROW, e, &b, &err), TB_ERR_NOT_FOUND);
    tb_buf_free(&b);

    evt_event_reset(e, EVT_OP_UPDATE, t);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    set_row(e, EVT_AFTER, 2, "a", "1.00");
    cr_assert(!evt_event_key_unchanged(e));
    cr_assert_eq(evt_render(&ENV, e, &r, &err), TB_OK, "%s", err.msg);
    expect_msgs(&r, 3, (const char *[]){"{\"id\":1}", "{\"id\":1}", "{\"id\":2}"}, (const char *[]){"d", NULL, "c"});
    json_t *j = jo_parse(r.msgs[0].value, r.msgs[0].value_len);
    jo_expect_at(j, JO_PATH("before"), "{\"id\":1,\"name\":\"a\",\"price\":\"1.00\"}");
    jo_expect_at(j, JO_PATH("after"), "null");
    json_decref(j);
    j = jo_parse(r.msgs[2].value, r.msgs[2].value_len);
    jo_expect_at(j, JO_PATH("before"), "null");
    jo_expect_at(j, JO_PATH("after"), "{\"id\":2,\"name\":\"a\",\"price\":\"1.00\"}");
    json_decref(j);
    cr_assert_eq(evt_render(&ROW, e, &r, &err), TB_OK, "%s", err.msg);
    expect_msgs(&r, 2, (const char *[]){"{\"id\":1}", "{\"id\":2}"},
                (const char *[]){NULL, "{\"id\":2,\"name\":\"a\",\"price\":\"1.00\"}"});

    /* unchanged key: one message */
    evt_event_reset(e, EVT_OP_UPDATE, t);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    set_row(e, EVT_AFTER, 1, "b", "1.00");
    cr_assert_eq(evt_render(&ENV, e, &r, &err), TB_OK);
    expect_msgs(&r, 1, (const char *[]){"{\"id\":1}"}, (const char *[]){"u"});
    cr_assert_eq(evt_render(&ROW, e, &r, &err), TB_OK);
    expect_msgs(&r, 1, (const char *[]){"{\"id\":1}"}, (const char *[]){"{\"id\":1,\"name\":\"b\",\"price\":\"1.00\"}"});

    /* a failed event renders nothing and reports its sticky error */
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_set_uint(e, EVT_BEFORE, 0, 1);
    cr_assert_eq(evt_render(&ENV, e, &r, &err), TB_ERR_INVALID);
    cr_assert_eq(r.n, 0);
    cr_assert(strstr(err.msg, "shop.orders"));
    evt_rendered_free(&r);
    evt_rendered_free(&r);
    evt_rendered_free(NULL);
    evt_event_free(e);
    evt_table_unref(t);
}

Test(records, topics_and_line)
{
    evt_table *t = orders();
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_topic(&ENV, t, &b), TB_OK);
    cr_assert_str_eq(b.data, "tb.shop.orders");
    tb_buf_reset(&b);
    evt_codec_opts none = {0};
    cr_assert_eq(evt_json_topic(&none, t, &b), TB_OK);
    cr_assert_str_eq(b.data, "shop.orders");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_schema_topic(&ENV, &b), TB_OK);
    cr_assert_str_eq(b.data, "tb.schema");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_line("tb.shop.orders", "{\"id\":1}", 8, NULL, 0, &b), TB_OK);
    cr_assert_str_eq(b.data, "{\"topic\":\"tb.shop.orders\",\"key\":{\"id\":1},\"value\":null}");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_line("t", "null", 4, "{\"a\":1}", 7, &b), TB_OK);
    cr_assert_str_eq(b.data, "{\"topic\":\"t\",\"key\":null,\"value\":{\"a\":1}}");
    tb_buf_free(&b);
    evt_table_unref(t);
}

Test(records, schema_record)
{
    evt_table *t = evt_table_new("shop", "items", 3);
    evt_table_set_column(t, 0, "id", EVT_T_INT, "int(11)", false, false);
    evt_table_set_column(t, 1, "size", EVT_T_ENUM, "enum('s','m')", true, false);
    evt_table_set_column(t, 2, "tags", EVT_T_SET, NULL, true, false);
    evt_table_set_column_details(t, 1, 1, 0, 0, "utf8mb4");
    const char *labels[] = {"s", "m"};
    evt_table_set_labels(t, 1, labels, 2);
    cr_assert_eq(evt_table_set_default(t, 1, "m", false), TB_OK);
    cr_assert_eq(evt_table_set_default(t, 2, "concat('a','b')", true), TB_OK);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_set_version(t, 4);
    evt_table_seal(t);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_json_schema_key(t, &b), TB_OK);
    cr_assert_str_eq(b.data, "{\"db\":\"shop\",\"table\":\"items\"}");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_schema_value(t, &b), TB_OK);
    cr_assert_str_eq(b.data,
                     "{\"db\":\"shop\",\"table\":\"items\",\"version\":4,\"names_known\":true,\"columns\":["
                     "{\"name\":\"id\",\"type\":\"int\",\"source_type\":\"int(11)\",\"nullable\":false,\"unsigned\":false,"
                     "\"pk\":1,\"length\":0,\"precision\":0,\"scale\":0,\"charset\":null,\"labels\":null,"
                     "\"default\":null,\"default_expr\":false},"
                     "{\"name\":\"size\",\"type\":\"enum\",\"source_type\":\"enum('s','m')\",\"nullable\":true,"
                     "\"unsigned\":false,\"pk\":0,\"length\":1,\"precision\":0,\"scale\":0,\"charset\":\"utf8mb4\","
                     "\"labels\":[\"s\",\"m\"],\"default\":\"m\",\"default_expr\":false},"
                     "{\"name\":\"tags\",\"type\":\"set\",\"source_type\":null,\"nullable\":true,\"unsigned\":false,"
                     "\"pk\":0,\"length\":0,\"precision\":0,\"scale\":0,\"charset\":null,\"labels\":null,"
                     "\"default\":\"concat('a','b')\",\"default_expr\":true}],"
                     "\"primary_key\":[\"id\"],\"dropped\":false,\"renamed_from\":null}");

    /* a copy with renamed_from: the same record but for where it came from */
    evt_table *c = evt_table_copy(t);
    cr_assert_not_null(c);
    cr_assert_eq(evt_table_set_renamed_from(c, "shop", "old items"), TB_OK, "a copy is not sealed");
    evt_table_seal(c);
    tb_buf cb;
    tb_buf_init(&cb, 0);
    cr_assert_eq(evt_json_schema_value(c, &cb), TB_OK);
    const char *tail = ",\"dropped\":false,\"renamed_from\":null}";
    size_t common = b.len - strlen(tail);
    cr_assert_eq(strncmp(b.data, cb.data, common), 0, "%s", cb.data);
    cr_assert_str_eq(cb.data + common, ",\"dropped\":false,\"renamed_from\":{\"db\":\"shop\",\"table\":\"old items\"}}");
    cr_assert_eq(evt_table_version(c), 4);
    cr_assert(evt_table_same_shape(t, c));

    /* read back (evt_json_schema_parse): written again, the same text, also with renamed_from, a
     * composite key in another order than the columns and placeholder names */
    const tb_buf *texts[] = {&b, &cb};
    for (size_t k = 0; k < 2; k++) {
        evt_table *back = NULL;
        tb_error err;
        cr_assert_eq(evt_json_schema_parse("shop", "items", texts[k]->data, texts[k]->len, &back, &err), TB_OK, "%s",
                     err.msg);
        tb_buf again;
        tb_buf_init(&again, 0);
        cr_assert_eq(evt_json_schema_value(back, &again), TB_OK);
        cr_expect_str_eq(again.data, texts[k]->data);
        cr_expect(evt_table_same_shape(back, t));
        tb_buf_free(&again);
        evt_table_unref(back);
    }
    tb_buf_free(&cb);
    evt_table_unref(c);
    evt_table *u = evt_table_new("shop", "t\"2", 3);
    cr_assert_eq(evt_table_set_column(u, 0, "a", EVT_T_CHAR, "uuid", true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(u, 1, "b\u00e9", EVT_T_BIGINT, "bigint(20) unsigned", false, true), TB_OK);
    cr_assert_eq(evt_table_set_column(u, 2, "c", EVT_T_DECIMAL, "decimal(12,3)", false, false), TB_OK);
    cr_assert_eq(evt_table_set_column_details(u, 2, 0, 12, 3, NULL), TB_OK);
    cr_assert_eq(evt_table_set_default(u, 2, "1.500", false), TB_OK);
    size_t upk[] = {2, 1};
    cr_assert_eq(evt_table_set_pk(u, upk, 2), TB_OK);
    evt_table_set_version(u, 70000);
    evt_table_set_names_known(u, false);
    evt_table_seal(u);
    tb_buf ub, ub2;
    tb_buf_init(&ub, 0);
    tb_buf_init(&ub2, 0);
    cr_assert_eq(evt_json_schema_value(u, &ub), TB_OK);
    evt_table *uback = NULL;
    tb_error uerr;
    cr_assert_eq(evt_json_schema_parse("shop", "t\"2", ub.data, ub.len, &uback, &uerr), TB_OK, "%s", uerr.msg);
    cr_assert_eq(evt_json_schema_value(uback, &ub2), TB_OK);
    cr_expect_str_eq(ub2.data, ub.data);
    cr_expect_eq(evt_table_pk_col(uback, 0), 2);
    tb_buf_free(&ub);
    tb_buf_free(&ub2);
    evt_table_unref(uback);
    evt_table_unref(u);
    /* what does not read is an error naming the table, never a descriptor */
    const char *bad[] = {"{\"columns\":[", "[]", "{\"columns\":[],\"primary_key\":[\"x\"]}",
                         "{\"columns\":[{\"name\":\"a\",\"type\":\"no such type\"}],\"primary_key\":[]}",
                         "{\"columns\":[{\"type\":\"int\"}],\"primary_key\":[]}",
                         "{\"columns\":[{\"name\":\"a\",\"type\":\"enum\",\"labels\":[1]}],\"primary_key\":[]}"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        evt_table *none = NULL;
        tb_error err;
        cr_expect_neq(evt_json_schema_parse("shop", "items", bad[k], strlen(bad[k]), &none, &err), TB_OK, "%s", bad[k]);
        cr_expect_null(none, "%s", bad[k]);
        cr_expect(strstr(err.msg, "shop.items") != NULL, "%s: %s", bad[k], err.msg);
    }

    /* a dropped table's record: no columns, no key, version 0 */
    evt_table *d = evt_table_new_dropped("shop", "items");
    cr_assert_not_null(d);
    cr_assert_eq(evt_table_set_renamed_from(d, "shop", "x"), TB_ERR_STATE, "a dropped table comes sealed");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_schema_key(d, &b), TB_OK);
    cr_assert_str_eq(b.data, "{\"db\":\"shop\",\"table\":\"items\"}");
    tb_buf_reset(&b);
    cr_assert_eq(evt_json_schema_value(d, &b), TB_OK);
    cr_assert_str_eq(b.data, "{\"db\":\"shop\",\"table\":\"items\",\"version\":0,\"names_known\":true,\"columns\":[],"
                             "\"primary_key\":[],\"dropped\":true,\"renamed_from\":null}");
    evt_table_unref(d);
    tb_buf_free(&b);
    evt_table_unref(t);
}

/* The truncate record: key {}, an envelope with null images and op "t" (both
 * encodings, read by Jansson), then the tombstone of {}; nothing in row format. */
Test(records, truncate_record)
{
    evt_table *t = evt_table_new("shop", "items", 2);
    evt_table_set_column(t, 0, "id", EVT_T_INT, "int", false, false);
    evt_table_set_column(t, 1, "v", EVT_T_VARCHAR, "varchar(5)", true, false);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_DELETE, t);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.pos = 1234;
    p.row = 3;
    tb_position_set_file(&p, "binlog.000007");
    evt_event_set_position(e, &p);
    evt_event_set_txid(e, "0-1-9");
    evt_event_set_commit_ts_ms(e, 1700000000000);
    evt_rendered r;
    evt_rendered_init(&r);
    tb_error err;
    for (int dbz = 0; dbz < 2; dbz++) {
        evt_codec_opts o = {.topic_prefix = "tb", .encoding = dbz ? EVT_ENC_DEBEZIUM : EVT_ENC_TRIBUTARY};
        cr_assert_eq(evt_render_truncate(&o, e, &r, &err), TB_OK, "%s", err.msg);
        cr_assert_str_eq(r.topic, "tb.shop.items");
        cr_assert_eq(r.n, 2);
        cr_assert_eq(r.msgs[0].key_len, 2);
        cr_assert_eq(memcmp(r.msgs[0].key, "{}", 2), 0);
        json_error_t je;
        json_t *v = json_loadb(r.msgs[0].value, r.msgs[0].value_len, 0, &je);
        cr_assert_not_null(v, "%s", je.text);
        cr_assert_str_eq(json_string_value(json_object_get(v, "op")), "t");
        cr_assert(json_is_null(json_object_get(v, "before")));
        cr_assert(json_is_null(json_object_get(v, "after")));
        json_t *src = json_object_get(v, "source");
        cr_assert_str_eq(json_string_value(json_object_get(src, "table")), "items");
        cr_assert_str_eq(json_string_value(json_object_get(src, "file")), "binlog.000007");
        cr_assert_eq(json_integer_value(json_object_get(src, "pos")), 1234);
        json_decref(v);
        cr_assert_eq(r.msgs[1].key_len, 2);
        cr_assert_null(r.msgs[1].value, "the second message is the tombstone of {}");
    }
    evt_codec_opts row = {.row_format = true};
    cr_assert_eq(evt_render_truncate(&row, e, &r, &err), TB_OK);
    cr_assert_eq(r.n, 0);
    evt_rendered_free(&r);
    tb_position_free(&p);
    evt_event_free(e);
    evt_table_unref(t);
}

/* The Connect wrapper is valid JSON, its payload equals the plain value, and
 * every field of the payload's rows is described in the schema. */
Test(records, kafka_connect_wrapper)
{
    evt_table *t = evt_table_new("db", "all", 8);
    evt_type types[] = {EVT_T_INT, EVT_T_TINYINT, EVT_T_DOUBLE, EVT_T_BLOB, EVT_T_SET, EVT_T_GEOMETRY, EVT_T_BIT,
                        EVT_T_TIMESTAMP};
    for (size_t i = 0; i < 8; i++) {
        char n[8];
        snprintf(n, sizeof n, "c%zu", i);
        evt_table_set_column(t, i, n, types[i], NULL, i != 0, i == 1);
    }
    evt_table_set_column_details(t, 6, 1, 0, 0, NULL);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_UPDATE, t);
    mysql_meta(e);
    for (int img = 0; img < 2; img++) {
        evt_set_int(e, img, 0, 1);
        evt_set_uint(e, img, 1, 255);
        evt_set_double(e, img, 2, 0.5);
        evt_set_bytes(e, img, 3, "ab", 2);
        const char *l[] = {"x"};
        evt_set_set(e, img, 4, l, NULL, 1);
        evt_set_geometry(e, img, 5, 0, "\x01", 1);
        evt_set_bool(e, img, 6, img == 1);
        evt_set_null(e, img, 7);
    }
    for (int fmt = 0; fmt < 2; fmt++) {
        evt_codec_opts plain = fmt ? ROW : ENV;
        evt_codec_opts wrapped = plain;
        wrapped.schemas = true;
        char *pv = value_of(&plain, e);
        char *wv = value_of(&wrapped, e);
        evt_jv *root = NULL;
        tb_error err;
        cr_assert_eq(evt_jv_parse(wv, strlen(wv), &root, &err), TB_OK, "%s", err.msg);
        cr_assert_eq(evt_jv_size(root), 2);
        const evt_jv *schema = evt_jv_get(root, "schema");
        const evt_jv *payload = evt_jv_get(root, "payload");
        cr_assert_str_eq(evt_jv_text(evt_jv_get(schema, "type"), NULL), "struct");
        tb_buf b;
        tb_buf_init(&b, 0);
        evt_jw w;
        evt_jw_init(&w, &b);
        evt_jv_write(payload, &w);
        cr_assert_eq(evt_jw_finish(&w), TB_OK);
        cr_expect_str_eq(b.data, pv);
        /* the row schema: one field per column with the mapped type */
        const evt_jv *fields = evt_jv_get(schema, "fields");
        const evt_jv *rowschema = schema;
        if (!fmt) {
            cr_assert_eq(evt_jv_size(fields), 6);
            cr_assert_str_eq(evt_jv_text(evt_jv_get(evt_jv_at(fields, 1), "field"), NULL), "after");
            cr_assert_str_eq(evt_jv_text(evt_jv_get(evt_jv_at(fields, 2), "field"), NULL), "source");
            rowschema = evt_jv_at(fields, 1);
        }
        const evt_jv *cols = evt_jv_get(rowschema, "fields");
        cr_assert_eq(evt_jv_size(cols), 8);
        /* JsonConverter's type names: "double", not "float64" */
        const char *want[] = {"int32", "int16", "double", "bytes", "array", "struct", "boolean", "string"};
        for (size_t i = 0; i < 8; i++)
            cr_expect_str_eq(evt_jv_text(evt_jv_get(evt_jv_at(cols, i), "type"), NULL), want[i], "column %zu", i);
        cr_expect(!evt_jv_bool(evt_jv_get(evt_jv_at(cols, 0), "optional")));
        cr_expect(evt_jv_bool(evt_jv_get(evt_jv_at(cols, 7), "optional")));
        tb_buf_free(&b);
        evt_jv_free(root);
        free(pv);
        free(wv);
    }
    evt_event_free(e);
    evt_table_unref(t);
}

Test(records, position_json_round_trip)
{
    tb_position ps[4];
    for (int i = 0; i < 4; i++)
        tb_position_init(&ps[i]);
    ps[1].kind = TB_POS_MYSQL;
    ps[1].server_id = UINT32_MAX;
    ps[1].pos = UINT64_MAX;
    ps[1].row = 3;
    tb_position_set_file(&ps[1], "bin.\"000001\"");
    tb_position_set_gtid(&ps[1], "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11");
    ps[2].kind = TB_POS_SQLITE_WAL;
    ps[2].salt1 = UINT32_MAX;
    ps[2].salt2 = 1;
    ps[2].frame = 2;
    ps[2].cksum1 = 3;
    ps[2].cksum2 = 4;
    ps[2].db_pages = 5;
    ps[2].gen_seq = UINT64_MAX;
    ps[2].inode = 99;
    ps[3].kind = TB_POS_SQLITE_LOG;
    ps[3].seq = INT64_MIN;
    for (int i = 0; i < 4; i++) {
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert_eq(evt_position_to_json(&ps[i], &b), TB_OK);
        tb_position back;
        tb_position_init(&back);
        tb_error err;
        cr_assert_eq(evt_position_from_json(b.data, b.len, &back, &err), TB_OK, "%s: %s", b.data, err.msg);
        cr_assert(tb_position_equal(&back, &ps[i]), "%s", b.data);
        if (i == 1)
            cr_assert_str_eq(b.data, "{\"kind\":\"mysql\",\"server_id\":4294967295,\"file\":\"bin.\\\"000001\\\"\","
                                     "\"pos\":18446744073709551615,\"row\":3,"
                                     "\"gtid\":\"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11\"}");
        tb_position_free(&back);
        tb_buf_free(&b);
        tb_position_free(&ps[i]);
    }
    const char *bad[] = {"{}", "[]", "{\"kind\":\"x\"}", "{\"kind\":\"mysql\",\"pos\":-1}",
                         "{\"kind\":\"mysql\",\"server_id\":4294967296}", "{\"kind\":\"mysql\",\"pos\":1.5}",
                         "{\"kind\":\"mysql\",\"pos\":18446744073709551616}", "{\"kind\":\"mysql\",\"file\":3}",
                         "{\"kind\":\"sqlite-log\",\"seq\":9223372036854775808}", "{\"kind\":"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb_position p;
        tb_position_init(&p);
        tb_error err;
        cr_expect_neq(evt_position_from_json(bad[i], strlen(bad[i]), &p, &err), TB_OK, "%s", bad[i]);
        cr_expect_eq(p.kind, TB_POS_NONE);
    }
}

/* Every message of one update, in each format, read back by Jansson (the
 * independent oracle): key, row images, source block, Connect wrapper. */
Test(records, messages_read_by_jansson)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_UPDATE, t);
    mysql_meta(e);
    set_row(e, EVT_BEFORE, 1, "a", "1.00");
    set_row(e, EVT_AFTER, 1, "b\u00e9\"\n", "2.00");
    evt_rendered r;
    evt_rendered_init(&r);
    tb_error err;
    for (int mode = 0; mode < 4; mode++) {
        evt_codec_opts o = mode & 1 ? ROW : ENV;
        o.schemas = mode & 2;
        cr_assert_eq(evt_render(&o, e, &r, &err), TB_OK, "%s", err.msg);
        cr_assert_geq(r.n, 1);
        jo_assert_eq(r.msgs[0].key, r.msgs[0].key_len, "{\"id\":1}");
        json_t *v = jo_parse(r.msgs[0].value, r.msgs[0].value_len);
        json_t *body = v;
        if (o.schemas) {
            cr_assert_eq(json_object_size(v), 2, "Connect wrapper: schema and payload only");
            cr_assert(json_is_object(json_object_get(v, "schema")));
            body = json_object_get(v, "payload");
        }
        json_t *after = mode & 1 ? body : json_object_get(body, "after");
        json_t *want_after = json_pack("{s:i, s:s, s:s}", "id", 1, "name", "b\u00e9\"\n", "price", "2.00");
        cr_assert(json_equal(after, want_after), "mode %d: after image", mode);
        json_decref(want_after);
        if (!(mode & 1)) {
            const char *op = NULL, *db = NULL, *table = NULL, *file = NULL, *bprice = NULL;
            json_int_t pos = 0, ts = 0;
            cr_assert_eq(json_unpack(body, "{s:s, s:{s:s}, s:I, s:{s:s, s:s, s:s, s:I}}", "op", &op, "before", "price",
                                     &bprice, "ts_ms", &ts, "source", "db", &db, "table", &table, "file", &file,
                                     "pos", &pos),
                         0, "mode %d: envelope members", mode);
            cr_assert_str_eq(op, "u");
            cr_assert_str_eq(bprice, "1.00");
            cr_assert_str_eq(db, "shop");
            cr_assert_str_eq(table, "orders");
            cr_assert_str_eq(file, "mysql-bin.000003");
            cr_assert_gt(pos, 0);
            cr_assert_gt(ts, 0);
        } else {
            cr_assert_null(json_object_get(body, "before"), "row format: the after image alone");
        }
        json_decref(v);
    }
    evt_rendered_free(&r);
    evt_event_free(e);
    evt_table_unref(t);
}

/* Every bound below the full size fails cleanly with NOMEM (never a
 * truncated record, never a crash); the error names the table. */
Test(records, bounded_buffers_fail_cleanly)
{
    evt_table *t = orders();
    evt_event *e = evt_event_new(EVT_OP_UPDATE, t);
    mysql_meta(e);
    set_row(e, EVT_BEFORE, 1, "a\x01\xff", "1.00");
    set_row(e, EVT_AFTER, 1, "b \xf0\x9f\x98\x80", "2.00");
    evt_codec_opts wrapped = ENV;
    wrapped.schemas = true;
    const evt_codec_opts *opts[] = {&ENV, &ROW, &wrapped};
    for (size_t oi = 0; oi < 3; oi++) {
        tb_buf full;
        tb_buf_init(&full, 0);
        cr_assert_eq(evt_json_value(opts[oi], e, &full, NULL), TB_OK);
        for (size_t max = 1; max < full.len; max++) {
            tb_buf b;
            tb_buf_init(&b, max);
            tb_error err;
            tb_error_clear(&err);
            tb_code rc = evt_json_value(opts[oi], e, &b, &err);
            cr_assert_eq(rc, TB_ERR_NOMEM, "bound %zu of %zu", max, full.len);
            cr_assert(strstr(err.msg, "shop.orders"), "bound %zu: %s", max, err.msg);
            tb_buf_free(&b);
        }
        tb_buf b;
        tb_buf_init(&b, full.len);
        cr_assert_eq(evt_json_value(opts[oi], e, &b, NULL), TB_OK);
        cr_assert_str_eq(b.data, full.data);
        tb_buf_free(&b);
        tb_buf_free(&full);
    }
    evt_event_free(e);
    evt_table_unref(t);
}

/* Topic names as Kafka accepts them (Debezium's rule): characters outside
 * [a-zA-Z0-9._-] become '_', one per character; over 249 bytes: a prefix and
 * a hash of the full name, different for names that differ only at the end. */
Test(records, topic_names_sanitized)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(evt_topic_name("tb", "odd", "we\"ird't", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "tb.odd.we_ird_t");
    tb_buf_reset(&b);
    cr_assert_eq(evt_topic_name("tb", "sh op", "caf\xc3\xa9 `x`-1.2", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "tb.sh_op.caf___x_-1.2");
    tb_buf_reset(&b);
    cr_assert_eq(evt_topic_name(NULL, "", "schema", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "schema");
    tb_buf_reset(&b);
    cr_assert_eq(evt_topic_name("tb", "shop", "orders", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "tb.shop.orders");

    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    tb_buf_reset(&b);
    cr_assert_eq(evt_topic_name("tb", "shop", longname, &b), TB_OK);
    cr_assert_eq(b.len, 249, "%zu", b.len);
    cr_assert_eq(strncmp(tb_buf_cstr(&b), "tb.shop.aaaa", 12), 0);
    cr_assert_eq(b.data[249 - 17], '_');
    for (size_t i = 249 - 16; i < 249; i++)
        cr_assert(strchr("0123456789abcdef", b.data[i]), "%s", tb_buf_cstr(&b));
    char first[250];
    memcpy(first, b.data, 250);
    longname[sizeof longname - 2] = 'b';
    tb_buf_reset(&b);
    cr_assert_eq(evt_topic_name("tb", "shop", longname, &b), TB_OK);
    cr_assert_eq(b.len, 249);
    cr_assert_eq(memcmp(first, b.data, 249 - 16), 0);
    cr_assert_neq(memcmp(first, b.data, 249), 0, "two long names, one topic");
    /* exactly 249 bytes: kept as is */
    tb_buf_reset(&b);
    longname[249 - 8] = '\0';
    cr_assert_eq(evt_topic_name("tb", "shop", longname, &b), TB_OK);
    cr_assert_eq(b.len, 249);
    cr_assert_eq(b.data[248], 'a');
    tb_buf_free(&b);
}

/* A key holding NULL with the row's rowid (SQLite, DESIGN 8 "Keys"): the member __rowid after the
 * key columns, in each encoding, and in its Connect schema (key columns optional, __rowid an
 * optional int64); a key without NULL is unchanged by the rowid; an update that sets the key from
 * NULL is a delete under the rowid key and a create under the plain one. Jansson reads them. */
Test(records, null_key_with_rowid)
{
    evt_table *t = evt_table_new("app", "t", 2);
    evt_table_set_column(t, 0, "k", EVT_T_SQLITE_TEXT, "TEXT", true, false);
    evt_table_set_column(t, 1, "v", EVT_T_SQLITE_INTEGER, "INTEGER", true, false);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);
    evt_codec_opts dbzo = ENV, ks = ENV;
    dbzo.encoding = EVT_ENC_DEBEZIUM;
    ks.key_schemas = true;
    const evt_codec_opts *opts[3] = {&ENV, &dbzo, &ks};
    for (int null = 0; null < 2; null++) {
        evt_event *e = evt_event_new(EVT_OP_CREATE, t);
        if (null)
            evt_set_null(e, EVT_AFTER, 0);
        else
            evt_set_string(e, EVT_AFTER, 0, "a", 1);
        evt_set_int(e, EVT_AFTER, 1, 5);
        evt_event_set_rowid(e, EVT_AFTER, 7);
        for (int o = 0; o < 3; o++) {
            tb_buf b;
            tb_buf_init(&b, 0);
            tb_error err;
            cr_assert_eq(evt_render_key(opts[o], e, EVT_AFTER, &b, &err), TB_OK, "%s", err.msg);
            json_error_t je;
            json_t *k = json_loadb(b.data, b.len, 0, &je);
            cr_assert_not_null(k, "%s: %s", b.data, je.text);
            json_t *payload = o == 2 ? json_object_get(k, "payload") : k;
            cr_expect_eq(json_object_size(payload), null ? 2u : 1u, "%s", b.data);
            cr_expect(null ? json_is_null(json_object_get(payload, "k")) : json_is_string(json_object_get(payload, "k")),
                      "%s", b.data);
            if (null)
                cr_expect_eq(json_integer_value(json_object_get(payload, "__rowid")), 7, "%s", b.data);
            if (o == 2) {
                json_t *fields = json_object_get(json_object_get(k, "schema"), "fields");
                cr_assert_eq(json_array_size(fields), null ? 2u : 1u, "%s", b.data);
                cr_expect(json_is_boolean(json_object_get(json_array_get(fields, 0), "optional")) &&
                              json_boolean_value(json_object_get(json_array_get(fields, 0), "optional")) == (null == 1),
                          "%s", b.data);
                if (null) {
                    json_t *f = json_array_get(fields, 1);
                    cr_expect_str_eq(json_string_value(json_object_get(f, "field")), "__rowid");
                    cr_expect_str_eq(json_string_value(json_object_get(f, "type")), "int64");
                    cr_expect(json_is_true(json_object_get(f, "optional")));
                }
            }
            json_decref(k);
            tb_buf_free(&b);
        }
        evt_event_free(e);
    }
    /* an update that gives the NULL-key row a key: the old key (with the rowid) is deleted */
    evt_event *u = evt_event_new(EVT_OP_UPDATE, t);
    evt_set_null(u, EVT_BEFORE, 0);
    evt_set_int(u, EVT_BEFORE, 1, 5);
    evt_set_string(u, EVT_AFTER, 0, "b", 1);
    evt_set_int(u, EVT_AFTER, 1, 5);
    evt_event_set_rowid(u, EVT_BEFORE, 7);
    evt_event_set_rowid(u, EVT_AFTER, 7);
    evt_rendered r;
    evt_rendered_init(&r);
    tb_error err;
    cr_assert_eq(evt_render(&ENV, u, &r, &err), TB_OK, "%s", err.msg);
    expect_msgs(&r, 3, (const char *[]){"{\"k\":null,\"__rowid\":7}", "{\"k\":null,\"__rowid\":7}", "{\"k\":\"b\"}"},
                (const char *[]){"d", NULL, "c"});
    /* a row whose key stays NULL moved to another rowid: its key changed */
    evt_set_null(u, EVT_AFTER, 0);
    evt_event_set_rowid(u, EVT_AFTER, 9);
    cr_assert(!evt_event_key_unchanged(u));
    cr_assert_eq(evt_render(&ENV, u, &r, &err), TB_OK, "%s", err.msg);
    expect_msgs(&r, 3, (const char *[]){"{\"k\":null,\"__rowid\":7}", "{\"k\":null,\"__rowid\":7}",
                                        "{\"k\":null,\"__rowid\":9}"},
                (const char *[]){"d", NULL, "c"});
    evt_rendered_free(&r);
    evt_event_free(u);
    evt_table_unref(t);
}

/* The source block's fixed part is remembered per thread between events (evt_json.c, src_memo)
 * and a transaction id's text as well (tx_raw): a sequence of events in which each input of
 * them changes or stays, at random, renders every one as its own inputs say (Jansson reads them
 * back). The table is made anew for each event, so a freed table's memory is often reused by
 * one of another name: the memory must be compared by value, never by address. */
Test(records, source_block_follows_every_input)
{
    static const char *const dbs[] = {"shop", "shoq", "s\"q"};
    static const char *const names[] = {"conn1", "conn2", ""};
    static const char *const files[] = {"mysql-bin.000003", "mysql-bin.000004", ""};
    static const char *const txs[] = {"0-1-7", "0-1-8", "0-2-7", NULL};
    static const int64_t cts[] = {1700000000000, 1700000001000};
    static const evt_snapshot_flag snaps[] = {EVT_SNAPSHOT_FALSE, EVT_SNAPSHOT_TRUE, EVT_SNAPSHOT_LAST};
    static const char *const snap_text[] = {"false", "true", "last"};
    static const evt_connector conns[] = {EVT_CONN_MARIADB, EVT_CONN_MYSQL};
    static const char *const conn_text[] = {"mariadb", "mysql"};
    static const double doubles[] = {1.25, -0.0, 1e300, 5e-324, 0.1, 42.0};
    unsigned seed = 20261207;
    for (int i = 0; i < 600; i++) {
        size_t di = (size_t)rand_r(&seed) % 3, ni = (size_t)rand_r(&seed) % 3, fi = (size_t)rand_r(&seed) % 3,
               ti = (size_t)rand_r(&seed) % 4, ci = (size_t)rand_r(&seed) % 2, si = (size_t)rand_r(&seed) % 3,
               ki = (size_t)rand_r(&seed) % 2, vi = (size_t)rand_r(&seed) % 6;
        uint64_t server_id = 1 + (uint64_t)(rand_r(&seed) % 2), pos = 4 + (uint64_t)(rand_r(&seed) % 3);
        evt_table *t = evt_table_new(dbs[di], "orders", 2);
        evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint", false, true);
        evt_table_set_column(t, 1, "x", EVT_T_DOUBLE, "double", true, false);
        size_t pk[] = {0};
        evt_table_set_pk(t, pk, 1);
        evt_table_seal(t);
        evt_event *e = evt_event_new(EVT_OP_CREATE, t);
        tb_position p;
        tb_position_init(&p);
        p.kind = TB_POS_MYSQL;
        p.mariadb = true;
        p.server_id = server_id;
        tb_position_set_file(&p, files[fi]);
        p.pos = pos;
        evt_event_set_position(e, &p);
        tb_position_free(&p);
        evt_event_set_connector(e, conns[ki]);
        evt_event_set_commit_ts_ms(e, cts[ci]);
        evt_event_set_snapshot(e, snaps[si]);
        if (txs[ti]) {
            evt_event_set_txid(e, txs[ti]);
            evt_event_set_source_row(e, pos * 10, (uint32_t)i, true);
        }
        evt_set_int(e, EVT_AFTER, 0, i);
        evt_set_double(e, EVT_AFTER, 1, doubles[vi]);
        evt_codec_opts o = ENV;
        o.name = names[ni];
        char *v = value_of(&o, e);
        json_t *j = jo_parse(v, strlen(v));
        json_t *src = json_object_get(j, "source");
        cr_assert(json_is_object(src), "event %d: %s", i, v);
        cr_expect_str_eq(json_string_value(json_object_get(src, "db")), dbs[di], "event %d: %s", i, v);
        cr_expect_str_eq(json_string_value(json_object_get(src, "name")), names[ni], "event %d: %s", i, v);
        cr_expect_str_eq(json_string_value(json_object_get(src, "file")), files[fi], "event %d: %s", i, v);
        cr_expect_str_eq(json_string_value(json_object_get(src, "connector")), conn_text[ki], "event %d: %s", i, v);
        cr_expect_str_eq(json_string_value(json_object_get(src, "snapshot")), snap_text[si], "event %d: %s", i, v);
        cr_expect_eq(json_integer_value(json_object_get(src, "ts_ms")), cts[ci], "event %d: %s", i, v);
        cr_expect_eq((uint64_t)json_integer_value(json_object_get(src, "server_id")), server_id, "event %d: %s", i, v);
        cr_expect_eq((uint64_t)json_integer_value(json_object_get(src, "pos")), txs[ti] ? pos * 10 : pos,
                     "event %d: %s", i, v);
        json_t *gtid = json_object_get(src, "gtid"), *tx = json_object_get(j, "transaction");
        if (txs[ti]) {
            cr_expect_str_eq(json_string_value(gtid), txs[ti], "event %d: %s", i, v);
            cr_expect_str_eq(json_string_value(json_object_get(tx, "id")), txs[ti], "event %d: %s", i, v);
        } else {
            cr_expect(json_is_null(gtid), "event %d: %s", i, v);
            cr_expect(json_is_null(tx), "event %d: %s", i, v);
        }
        json_t *x = json_object_get(json_object_get(j, "after"), "x");
        cr_expect(json_is_real(x) || json_is_integer(x), "event %d: %s", i, v);
        double got = json_is_real(x) ? json_real_value(x) : (double)json_integer_value(x);
        cr_expect(got == doubles[vi], "event %d: x %.17g in %s", i, doubles[vi], v);
        if (signbit(doubles[vi])) /* "-0": Jansson reads it as the integer 0 */
            cr_expect_not_null(strstr(v, "\"x\":-0}"), "event %d: %s", i, v);
        json_decref(j);
        free(v);
        evt_event_free(e);
        evt_table_unref(t);
    }
}
