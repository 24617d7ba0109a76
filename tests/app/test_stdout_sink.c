/* Unit tests of the stdout sink: JSON lines, schema records, flushing, file offsets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "tb_file.h"
#include "evt.h"
#include "evt_json.h"
#include "json_oracle.h"
#include "stdout_sink.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tb-ssink-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(ssink, .init = setup, .fini = teardown);

static cfg *make_cfg(const char *format)
{
    cfg *c = cfg_new();
    tb_error err;
    char off[128];
    snprintf(off, sizeof(off), "%s/offsets", dir);
    cr_assert_eq(cfg_set(c, "sink", "stdout", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "topic.prefix", "tp", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "name", "conn", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "offsets.storage", "file", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "offsets.file", off, "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "value.format", format, "t", &err), TB_OK);
    return c;
}

static evt_table *make_table(uint32_t version)
{
    evt_table *t = evt_table_new("shop", "orders", 2);
    cr_assert_not_null(t);
    cr_assert_eq(evt_table_set_column(t, 0, "id", EVT_T_INT, "int", false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "note", EVT_T_VARCHAR, "varchar(20)", true, false), TB_OK);
    size_t pk = 0;
    cr_assert_eq(evt_table_set_pk(t, &pk, 1), TB_OK);
    evt_table_set_version(t, version);
    evt_table_seal(t);
    return t;
}

static evt_event *make_event(evt_op op, evt_table *t, int64_t id, const char *note, bool last)
{
    evt_event *e = evt_event_new(op, t);
    cr_assert_not_null(e);
    if (op == EVT_OP_UPDATE || op == EVT_OP_DELETE) {
        evt_set_int(e, EVT_BEFORE, 0, id);
        evt_set_string(e, EVT_BEFORE, 1, "old", 3);
    }
    if (op != EVT_OP_DELETE) {
        evt_set_int(e, EVT_AFTER, 0, id);
        evt_set_string(e, EVT_AFTER, 1, note, strlen(note));
    }
    evt_event_set_last_in_tx(e, last);
    evt_event_set_commit_ts_ms(e, 1700000000000);
    cr_assert_null(evt_event_error(e));
    return e;
}

/* Split text into lines (modifies text); returns the count. */
static size_t split_lines(char *text, char **lines, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    return n;
}

/* Parse a line with Jansson and check it is {"topic","key","value"} with this
 * topic; returns the parsed object (caller: json_decref). */
static json_t *check_line(const char *line, const char *topic)
{
    json_t *v = jo_parse_s(line);
    cr_assert(json_is_object(v), "not an object: %s", line);
    cr_assert_eq(json_object_size(v), 3, "topic, key, value: %s", line);
    json_t *t = json_object_get(v, "topic");
    cr_assert(json_is_string(t) && strcmp(json_string_value(t), topic) == 0, "topic of %s", line);
    cr_assert_not_null(json_object_get(v, "key"), "%s", line);
    cr_assert_not_null(json_object_get(v, "value"), "%s", line);
    return v;
}

static char *read_stream(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    char *buf = calloc(1, (size_t)n + 1);
    rewind(f);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fseek(f, 0, SEEK_END);
    return buf;
}

Test(ssink, lines_schema_records_and_tombstones)
{
    cfg *c = make_cfg("envelope");
    FILE *f = tmpfile();
    stdout_sink *s = NULL;
    tb_error err;
    cr_assert_eq(stdout_sink_open(c, f, &s, &err), TB_OK, "%s", err.msg);
    evt_table *t1 = make_table(1);
    evt_event *e1 = make_event(EVT_OP_CREATE, t1, 1, "first", false);
    evt_event *e2 = make_event(EVT_OP_UPDATE, t1, 1, "second", false);
    evt_event *e3 = make_event(EVT_OP_DELETE, t1, 1, NULL, true);
    cr_assert_eq(stdout_sink_send(s, e1, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(stdout_sink_send(s, e2, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(stdout_sink_send(s, e3, &err), TB_OK, "%s", err.msg);
    /* A new schema version is announced again. */
    evt_table *t2 = make_table(2);
    evt_event *e4 = make_event(EVT_OP_CREATE, t2, 2, "v2", true);
    cr_assert_eq(stdout_sink_send(s, e4, &err), TB_OK, "%s", err.msg);

    char *out = read_stream(f);
    char *lines[16];
    size_t n = split_lines(out, lines, 16);
    /* schema, c, u, d, tombstone, schema (v2), c */
    cr_assert_eq(n, 7, "lines: %zu", n);

    json_t *v = check_line(lines[0], "tp.schema");
    tb_buf want;
    tb_buf_init(&want, 0);
    cr_assert_eq(evt_json_schema_key(t1, &want), TB_OK);
    jo_expect_at(v, JO_PATH("key"), want.data);
    tb_buf_reset(&want);
    cr_assert_eq(evt_json_schema_value(t1, &want), TB_OK);
    jo_expect_at(v, JO_PATH("value"), want.data);
    json_decref(v);

    static const char *const ops[] = {NULL, "\"c\"", "\"u\"", "\"d\""};
    for (size_t i = 1; i <= 3; i++) {
        v = check_line(lines[i], "tp.shop.orders");
        cr_assert(jo_expect_at(v, JO_PATH("key"), "{\"id\":1}") && jo_expect_at(v, JO_PATH("value", "op"), ops[i]),
                  "line %zu: %s", i, lines[i]);
        json_decref(v);
    }
    v = check_line(lines[1], "tp.shop.orders");
    jo_expect_at(v, JO_PATH("value", "before"), "null");
    jo_expect_at(v, JO_PATH("value", "after"), "{\"id\":1,\"note\":\"first\"}");
    json_decref(v);
    v = check_line(lines[2], "tp.shop.orders");
    jo_expect_at(v, JO_PATH("value", "before"), "{\"id\":1,\"note\":\"old\"}");
    jo_expect_at(v, JO_PATH("value", "after"), "{\"id\":1,\"note\":\"second\"}");
    json_decref(v);
    v = check_line(lines[3], "tp.shop.orders");
    jo_expect_at(v, JO_PATH("value", "before"), "{\"id\":1,\"note\":\"old\"}");
    jo_expect_at(v, JO_PATH("value", "after"), "null");
    json_decref(v);
    v = check_line(lines[4], "tp.shop.orders");
    cr_assert(json_is_null(json_object_get(v, "value")), "tombstone: %s", lines[4]);
    cr_assert(strcmp(lines[4], "{\"topic\":\"tp.shop.orders\",\"key\":{\"id\":1},\"value\":null}") == 0, "%s",
              lines[4]);
    json_decref(v);
    v = check_line(lines[5], "tp.schema");
    tb_buf_reset(&want);
    cr_assert_eq(evt_json_schema_value(t2, &want), TB_OK);
    jo_expect_at(v, JO_PATH("value"), want.data);
    json_decref(v);
    v = check_line(lines[6], "tp.shop.orders");
    jo_expect_at(v, JO_PATH("key"), "{\"id\":2}");
    jo_expect_at(v, JO_PATH("value", "after"), "{\"id\":2,\"note\":\"v2\"}");
    json_decref(v);

    tb_buf_free(&want);
    free(out);
    evt_event_free(e1);
    evt_event_free(e2);
    evt_event_free(e3);
    evt_event_free(e4);
    evt_table_unref(t1);
    evt_table_unref(t2);
    stdout_sink_close(s);
    fclose(f);
    cfg_free(c);
}

Test(ssink, row_format_delete_is_tombstone_only)
{
    cfg *c = make_cfg("row");
    FILE *f = tmpfile();
    stdout_sink *s = NULL;
    tb_error err;
    cr_assert_eq(stdout_sink_open(c, f, &s, &err), TB_OK, "%s", err.msg);
    evt_table *t = make_table(1);
    evt_event *e = make_event(EVT_OP_DELETE, t, 7, NULL, true);
    cr_assert_eq(stdout_sink_send(s, e, &err), TB_OK, "%s", err.msg);
    char *out = read_stream(f);
    char *lines[8];
    cr_assert_eq(split_lines(out, lines, 8), 2);
    cr_assert_str_eq(lines[1], "{\"topic\":\"tp.shop.orders\",\"key\":{\"id\":7},\"value\":null}");
    free(out);
    evt_event_free(e);
    evt_table_unref(t);
    stdout_sink_close(s);
    fclose(f);
    cfg_free(c);
}

Test(ssink, flushes_at_end_of_transaction)
{
    cfg *c = make_cfg("envelope");
    char path[128];
    snprintf(path, sizeof(path), "%s/out", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    static char big[1 << 16];
    setvbuf(f, big, _IOFBF, sizeof(big));
    stdout_sink *s = NULL;
    tb_error err;
    cr_assert_eq(stdout_sink_open(c, f, &s, &err), TB_OK, "%s", err.msg);
    evt_table *t = make_table(1);
    evt_event *e1 = make_event(EVT_OP_CREATE, t, 1, "a", false);
    evt_event *e2 = make_event(EVT_OP_CREATE, t, 2, "b", true);
    struct stat st;
    cr_assert_eq(stdout_sink_send(s, e1, &err), TB_OK);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 0, "nothing flushed inside a transaction");
    cr_assert_eq(stdout_sink_send(s, e2, &err), TB_OK);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_gt(st.st_size, 0, "flushed at last_in_tx");
    evt_event_free(e1);
    evt_event_free(e2);
    evt_table_unref(t);
    stdout_sink_close(s);
    fclose(f);
    cfg_free(c);
}

Test(ssink, commit_writes_offsets_file)
{
    cfg *c = make_cfg("envelope");
    FILE *f = tmpfile();
    stdout_sink *s = NULL;
    tb_error err;
    cr_assert_eq(stdout_sink_open(c, f, &s, &err), TB_OK, "%s", err.msg);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.mariadb = true;
    p.server_id = 1;
    p.pos = 1234;
    cr_assert_eq(tb_position_set_file(&p, "mysql-bin.000003"), TB_OK);
    cr_assert_eq(tb_position_set_gtid(&p, "0-1-7"), TB_OK);
    cr_assert_eq(stdout_sink_commit(s, &p, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(stdout_sink_commit(s, NULL, &err), TB_OK, "NULL: flush only, the file keeps its position");
    p.pos = 5678;
    cr_assert_eq(stdout_sink_commit(s, &p, &err), TB_OK, "%s", err.msg);

    char path[128];
    snprintf(path, sizeof(path), "%s/offsets", dir);
    tb_buf got, want;
    tb_buf_init(&got, 0);
    tb_buf_init(&want, 0);
    cr_assert_eq(tb_file_read(path, 0, &got, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(tb_position_format(&p, &want), TB_OK);
    tb_buf_putc(&want, '\n');
    cr_assert_str_eq(tb_buf_cstr(&got), tb_buf_cstr(&want));
    /* It reads back. */
    tb_position back;
    tb_position_init(&back);
    got.data[got.len - 1] = '\0';
    cr_assert_eq(tb_position_parse(got.data, &back, &err), TB_OK, "%s", err.msg);
    cr_assert(tb_position_equal(&back, &p));
    tb_position_free(&back);
    tb_position_free(&p);
    tb_buf_free(&got);
    tb_buf_free(&want);
    stdout_sink_close(s);
    fclose(f);
    cfg_free(c);
}

Test(ssink, refuses_failed_event_and_close_is_null_safe)
{
    cfg *c = make_cfg("envelope");
    FILE *f = tmpfile();
    stdout_sink *s = NULL;
    tb_error err;
    cr_assert_eq(stdout_sink_open(c, f, &s, &err), TB_OK, "%s", err.msg);
    evt_table *t = make_table(1);
    evt_event *e = make_event(EVT_OP_CREATE, t, 1, "a", true);
    evt_event_fail(e, TB_ERR_CORRUPT, "column note: bad bytes");
    cr_assert_eq(stdout_sink_send(s, e, &err), TB_ERR_CORRUPT);
    cr_assert_str_eq(err.msg, "column note: bad bytes");
    evt_event_free(e);
    evt_table_unref(t);
    stdout_sink_close(s); /* flushes: nothing was printed */
    char *out = read_stream(f);
    cr_assert_str_eq(out, "");
    free(out);
    stdout_sink_close(NULL);
    fclose(f);
    cfg_free(c);
}
