/*
 * Integration tests of `tributary cache publish` (the topics rebuilt from the
 * cache, DESIGN 9) against the testenv broker (TRIBUTARY_TEST_KAFKA; FAILS
 * without it). Topic prefixes are unique per run.
 *
 *   publish/round_trip (publish runs while a `tributary cache` keeps writing
 *     cache A): two tables produced through ksink (envelope): every
 *     value kind (int, BIGINT UNSIGNED above 2^63, DECIMAL, DATETIME(3),
 *     TIMESTAMP, BLOB, VARBINARY, JSON, DOUBLE, BIT(1), NULLs), a deleted row,
 *     a primary-key change, a composite key. Replayed into cache A, published
 *     to a new prefix, replayed into cache B: every table of A equals B row
 *     for row (cache_iter JSON) with the same column types; every published
 *     "after" image equals the original's latest byte for byte; the published
 *     keys are byte-identical to the live keys of the original topics and land
 *     on the same partitions; the new table topics and the schema topic are
 *     compacted; the schema records' column names, types and keys equal the
 *     original's; values are op "r", connector "cache", the last one
 *     snapshot "last"; no <name>.offsets topic was created.
 *   publish/tables_filter: a table whose columns the cache inferred is refused
 *     (naming it) before anything is sent; a regex matching no table fails
 *     naming it and the file; --tables publishes only the matching table;
 *     without --prefix, the table's recorded topic gets the rows again
 *     (value.format=row: the values are the rows).
 *   publish/own_prefixes: a cache replayed from two prefixes, published without
 *     --prefix: each table's rows go back to its own prefix's topic.
 *   publish/bad_input: missing --db, a path that is not a cache, a regex
 *     matching no table: non-zero exit and a message naming the input.
 */
#include <criterion/criterion.h>
#include <dirent.h>

#include "cache_read.h"
#include "cfg.h"
#include "evt.h"
#include "evt_json.h"
#pragma GCC diagnostic ignored "-Wunused-function" /* it_util.h: helpers this file does not use */
#include "it_util.h"
#include "json_oracle.h"
#include "ksink.h"
#include "tb_file.h"

#define PUB_PARTS "3"

/* ---------------------------------------------------------------- produce */

static void set_ok(cfg *c, const char *k, const char *v)
{
    tb_error err;
    cr_assert_eq(cfg_set(c, k, v, "test", &err), TB_OK, "%s", err.msg);
}

static evt_table *items_table(const char *db)
{
    static const struct { const char *name; evt_type t; const char *st; bool uns; } cols[] = {
        {"id", EVT_T_BIGINT, "bigint", false},         {"u", EVT_T_BIGINT, "bigint unsigned", true},
        {"d", EVT_T_DECIMAL, "decimal(10,2)", false},  {"dt", EVT_T_DATETIME, "datetime(3)", false},
        {"ts", EVT_T_TIMESTAMP, "timestamp", false},   {"b", EVT_T_BLOB, "blob", false},
        {"vb", EVT_T_VARBINARY, "varbinary(16)", false}, {"j", EVT_T_JSON, "json", false},
        {"f", EVT_T_DOUBLE, "double", false},          {"flag", EVT_T_BIT, "bit(1)", false},
        {"s", EVT_T_VARCHAR, "varchar(32)", false},
    };
    size_t n = sizeof(cols) / sizeof(cols[0]);
    evt_table *t = evt_table_new(db, "items", n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(evt_table_set_column(t, i, cols[i].name, cols[i].t, cols[i].st, i != 0, cols[i].uns), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 9, 1, 0, 0, NULL), TB_OK);
    cr_assert_eq(evt_table_set_column_details(t, 2, 0, 10, 2, NULL), TB_OK);
    size_t pk = 0;
    cr_assert_eq(evt_table_set_pk(t, &pk, 1), TB_OK);
    evt_table_set_version(t, 1);
    evt_table_seal(t);
    return t;
}

static evt_table *lines_table(const char *db)
{
    evt_table *t = evt_table_new(db, "lines", 3);
    cr_assert_eq(evt_table_set_column(t, 0, "what", EVT_T_VARCHAR, "varchar(20)", true, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 1, "order_id", EVT_T_INT, "int", false, false), TB_OK);
    cr_assert_eq(evt_table_set_column(t, 2, "line", EVT_T_SMALLINT, "smallint", false, false), TB_OK);
    size_t pk[2] = {1, 2};
    cr_assert_eq(evt_table_set_pk(t, pk, 2), TB_OK);
    evt_table_set_version(t, 1);
    evt_table_seal(t);
    return t;
}

/* A full items row (id, with values varied by id; nulls when id is even) into image img. */
static void items_row(evt_event *e, evt_image img, int64_t id)
{
    evt_set_int(e, img, 0, id);
    if (id % 2 == 0) {
        for (size_t c = 1; c < 11; c++)
            evt_set_null(e, img, c);
        return;
    }
    evt_set_uint(e, img, 1, UINT64_C(18446744073709551000) + (uint64_t)id);
    char dec[32];
    int n = snprintf(dec, sizeof dec, "-%lld.50", (long long)id * 1000);
    evt_set_decimal(e, img, 2, dec, (size_t)n);
    evt_temporal dt = {.year = 2026, .month = 11, .day = 30, .hour = 4, .minute = 5, .second = 6, .usec = 789000,
                       .fsp = 3};
    evt_set_temporal(e, img, 3, EVT_V_DATETIME, &dt);
    evt_temporal ts = {.year = 1999, .month = 12, .day = 31, .hour = 23, .minute = 59, .second = 59};
    evt_set_temporal(e, img, 4, EVT_V_TIMESTAMP, &ts);
    const unsigned char blob[] = {0, 1, 2, 0xff, 0xfe, (unsigned char)id};
    evt_set_bytes(e, img, 5, blob, sizeof blob);
    evt_set_bytes(e, img, 6, "\x80\x81zz", 4);
    const char *j = "{\"a\":[1,2.50,\"x\"],\"big\":123456789012345678901234567890,\"u\":\"\\u00e9\"}";
    evt_set_json(e, img, 7, j, strlen(j));
    evt_set_double(e, img, 8, 0.1 * (double)id);
    evt_set_bool(e, img, 9, true);
    evt_set_string(e, img, 10, "h\xc3\xa9llo \"q\"", strlen("h\xc3\xa9llo \"q\""));
}

static void send_ok(ksink *ks, evt_event *e)
{
    tb_error err;
    cr_assert_null(evt_event_error(e), "%s", evt_event_error(e) ? evt_event_error(e)->msg : "");
    cr_assert_eq(ksink_send(ks, e, &err), TB_OK, "%s", err.msg);
    tb_position none;
    tb_position_init(&none);
    cr_assert_eq(ksink_end_tx(ks, &none, &err), TB_OK, "%s", err.msg);
    evt_event_free(e);
}

static evt_event *row_event(evt_op op, evt_table *t)
{
    evt_event *e = evt_event_new(op, t);
    cr_assert_not_null(e);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    evt_event_set_commit_ts_ms(e, 1764475200000);
    return e;
}

static void lines_row(evt_event *e, evt_image img, int o, int l, const char *what)
{
    evt_set_int(e, img, 1, o);
    evt_set_int(e, img, 2, l);
    if (what)
        evt_set_string(e, img, 0, what, strlen(what));
    else
        evt_set_null(e, img, 0);
}

/* The original topics <prefix>.<db>.items and <prefix>.<db>.lines. */
static void produce_original(const char *prefix, const char *db)
{
    cfg *c = cfg_new();
    char name[200];
    snprintf(name, sizeof name, "%sconn", prefix);
    set_ok(c, "name", name);
    set_ok(c, "topic.prefix", prefix);
    set_ok(c, "kafka.bootstrap.servers", it_brokers());
    set_ok(c, "topic.partitions", PUB_PARTS);
    ksink *ks = NULL;
    tb_error err;
    cr_assert_eq(ksink_open(c, &ks, &err), TB_OK, "%s", err.msg);
    evt_table *it = items_table(db), *lt = lines_table(db);
    for (int64_t id = 1; id <= 6; id++) { /* 1..6 */
        evt_event *e = row_event(EVT_OP_CREATE, it);
        items_row(e, EVT_AFTER, id);
        send_ok(ks, e);
    }
    evt_event *e = row_event(EVT_OP_DELETE, it); /* row 3 deleted */
    items_row(e, EVT_BEFORE, 3);
    send_ok(ks, e);
    e = row_event(EVT_OP_UPDATE, it); /* key change 4 -> 40 */
    items_row(e, EVT_BEFORE, 4);
    items_row(e, EVT_AFTER, 4);
    evt_set_int(e, EVT_AFTER, 0, 40);
    send_ok(ks, e);
    e = row_event(EVT_OP_UPDATE, it); /* 5: new values (odd id: the full row) */
    items_row(e, EVT_BEFORE, 5);
    items_row(e, EVT_AFTER, 7);
    evt_set_int(e, EVT_AFTER, 0, 5);
    send_ok(ks, e);
    static const struct { int o, l; const char *w; } lines[] = {{1, 1, "apple"}, {1, 2, "pear"}, {2, 1, NULL},
                                                                {2, 2, "plum"}};
    for (size_t i = 0; i < 4; i++) {
        e = row_event(EVT_OP_CREATE, lt);
        lines_row(e, EVT_AFTER, lines[i].o, lines[i].l, lines[i].w);
        send_ok(ks, e);
    }
    e = row_event(EVT_OP_DELETE, lt);
    lines_row(e, EVT_BEFORE, 1, 2, "pear");
    send_ok(ks, e);
    cr_assert_eq(ksink_flush(ks, 60000, &err), TB_OK, "%s", err.msg);
    ksink_close(ks);
    evt_table_unref(it);
    evt_table_unref(lt);
    cfg_free(c);
}

/* ---------------------------------------------------------------- consume */

typedef struct msg {
    char *key, *value; /* value NULL: tombstone */
    int partition;
} msg;

typedef struct msgs {
    msg *m;
    size_t n;
} msgs;

static void msgs_free(msgs *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->m[i].key);
        free(l->m[i].value);
    }
    free(l->m);
    l->m = NULL;
    l->n = 0;
}

static char *dup_n(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* Every record of topic (all its partitions, from the beginning) in partition order. */
static msgs consume_all(const char *topic)
{
    char errstr[512];
    msgs out = {0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", it_brokers(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "pub-reader", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 10000), 0);
    cr_assert_eq(md->topics[0].err, 0, "%s: %s", topic, rd_kafka_err2str(md->topics[0].err));
    int parts = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    int eofs = 0;
    double deadline = it_now() + 60;
    while (eofs < parts && it_now() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eofs++;
        else if (!m->err) {
            out.m = realloc(out.m, (out.n + 1) * sizeof(*out.m));
            msg *x = &out.m[out.n++];
            x->key = dup_n(m->key, m->key_len);
            x->value = m->payload ? dup_n(m->payload, m->len) : NULL;
            x->partition = m->partition;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    cr_assert_eq(eofs, parts, "reading %s timed out", topic);
    return out;
}

/* Live keys (latest record per key is a value) as sorted lines "partition key". */
static char *live_keys(const msgs *l)
{
    size_t cap = 1 << 14, len = 0;
    char *out = calloc(1, cap);
    char **lines = calloc(l->n + 1, sizeof(char *));
    size_t nl = 0;
    for (size_t i = 0; i < l->n; i++) {
        bool later = false;
        for (size_t k = i + 1; k < l->n && !later; k++)
            later = strcmp(l->m[k].key, l->m[i].key) == 0;
        if (later || !l->m[i].value)
            continue;
        cr_assert(asprintf(&lines[nl++], "%d %s", l->m[i].partition, l->m[i].key) > 0);
    }
    for (size_t i = 0; i < nl; i++) /* insertion sort: a handful of lines */
        for (size_t k = i; k > 0 && strcmp(lines[k - 1], lines[k]) > 0; k--) {
            char *t = lines[k];
            lines[k] = lines[k - 1];
            lines[k - 1] = t;
        }
    for (size_t i = 0; i < nl; i++) {
        len += (size_t)snprintf(out + len, cap - len, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out;
}

static bool topic_exists(const char *topic)
{
    rd_kafka_t *rk = it_producer();
    const struct rd_kafka_metadata *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 1, NULL, &md, 10000), 0);
    bool found = false;
    for (int i = 0; i < md->topic_cnt; i++)
        found = found || strcmp(md->topics[i].topic, topic) == 0;
    rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    return found;
}

static void expect_compacted(const char *topic)
{
    rd_kafka_t *rk = it_producer();
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "DescribeConfigs %s timed out", topic);
    size_t n = 0, ne = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_ConfigResource_error(rs[0]), 0, "%s: %s", topic, rd_kafka_ConfigResource_error_string(rs[0]));
    const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[0], &ne);
    const char *v = NULL;
    for (size_t i = 0; i < ne; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(es[i]), "cleanup.policy") == 0)
            v = rd_kafka_ConfigEntry_value(es[i]);
    cr_expect_str_eq(v ? v : "(none)", "compact", "topic %s", topic);
    rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

/* ---------------------------------------------------------------- caches */

static void replay(const char *prefix, const char *db, const char *log)
{
    cache_tmp_rm(db);
    const char *args[] = {"--brokers", it_brokers(), "--prefix", prefix, "--db", db, "--until-caught-up", NULL};
    cr_assert_eq(it_wait(it_spawn(log, args), 120), 0, "cache of %s failed, see %s", prefix, log);
}

static int append_row(const char *row, size_t len, void *opaque)
{
    tb_buf_append(opaque, row, len);
    tb_buf_putc(opaque, '\n');
    return 0;
}

/* Tables, column types and rows of a cache as one text (caller frees). */
static char *cache_text(const char *path)
{
    cache_db *db = NULL;
    tb_error err;
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(cache_db_open(path, &db, &err), TB_OK, "%s", err.msg);
    for (size_t i = 0; i < cache_db_ntables(db); i++) {
        cache_table_info ti;
        cr_assert_eq(cache_db_table(db, i, &ti), TB_OK);
        cr_assert_not(ti.inferred, "%s: table %s inferred", path, ti.name);
        tb_buf_printf(&out, "table %s:", ti.name);
        for (size_t c = 0; c < ti.ncols; c++) {
            cache_column_info ci;
            cr_assert_eq(cache_db_column(db, i, c, &ci), TB_OK);
            tb_buf_printf(&out, " %s/%s/%d/%d/%d", ci.name, ci.type, ci.pk, ci.is_unsigned, ci.is_bool);
        }
        tb_buf_putc(&out, '\n');
        cr_assert_eq(cache_iter(db, ti.name, append_row, &out, &err), TB_OK, "%s", err.msg);
    }
    cache_db_close(db);
    return tb_buf_detach(&out, NULL);
}

/* cache_iter callback: the "id" member of a row (Jansson; other members may be
 * integers above INT64_MAX, read as doubles), appended as "N,". */
static int append_id(const char *row, size_t len, void *opaque)
{
    json_t *v = jo_parse_flags(row, len, JSON_DECODE_INT_AS_REAL), *id = json_object_get(v, "id");
    cr_assert(json_is_number(id), "row without a numeric id: %.*s", (int)len, row);
    tb_buf_printf(opaque, "%.0f,", json_number_value(id));
    json_decref(v);
    return 0;
}

/* The ids of the rows of one table of a cache, in key order: "1,2,5,". Caller frees. */
static char *row_ids(const char *path, const char *table)
{
    cache_db *db = NULL;
    tb_error err;
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(cache_db_open(path, &db, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_iter(db, table, append_id, &out, &err), TB_OK, "%s", err.msg);
    cache_db_close(db);
    return tb_buf_detach(&out, NULL);
}

/* Run `tributary cache publish ARGS` and return its exit status; stderr to log. */
static int publish(const char *log, const char *const *args)
{
    const char *a[32] = {"publish"};
    int n = 1;
    for (int i = 0; args[i]; i++)
        a[n++] = args[i];
    a[n] = NULL;
    return it_wait(it_spawn(log, a), 120);
}

/* The whole file as a C string; the caller frees it. */
static char *slurp(const char *path)
{
    tb_buf b;
    tb_error err;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_file_read(path, SIZE_MAX, &b, &err), TB_OK, "%s", err.msg);
    char *s = tb_buf_detach(&b, NULL);
    cr_assert_not_null(s);
    return s;
}

/* Publish with args must fail (exit status `status`, -1: any non-zero) with a
 * message holding need1 and need2 (NULL: not checked). Removes the log. */
static void expect_failure(const char *log, const char *const *args, int status, const char *need1,
                           const char *need2)
{
    int got = publish(log, args);
    if (status < 0)
        cr_expect_neq(got, 0, "publish succeeded (wanted a failure naming %s)", need1);
    else
        cr_expect_eq(got, status, "exit status (wanted a failure naming %s)", need1);
    char *s = slurp(log);
    cr_expect(strstr(s, need1) && (!need2 || strstr(s, need2)), "message lacks %s / %s: %s", need1,
              need2 ? need2 : "", s);
    free(s);
    unlink(log);
}

/* "name:type" of every column and the primary key of a schema record value. */
static char *schema_shape(const msgs *l, const char *table)
{
    const char *val = NULL;
    char key[100];
    snprintf(key, sizeof key, "{\"db\":\"shop\",\"table\":\"%s\"}", table);
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->m[i].key, key) == 0)
            val = l->m[i].value;
    cr_assert_not_null(val, "no schema record %s", key);
    json_t *v = jo_parse_s(val), *cols = json_object_get(v, "columns"), *pk = json_object_get(v, "primary_key");
    cr_assert(json_is_array(cols) && json_is_array(pk), "schema record %s: no columns or primary_key: %s", key, val);
    tb_buf out;
    tb_buf_init(&out, 0);
    for (size_t i = 0; i < json_array_size(cols); i++) {
        json_t *c = json_array_get(cols, i), *name = json_object_get(c, "name"), *type = json_object_get(c, "type");
        cr_assert(json_is_string(name) && json_is_string(type), "schema record %s: column %zu", key, i);
        tb_buf_printf(&out, "%s:%s:%d ", json_string_value(name), json_string_value(type),
                      json_is_true(json_object_get(c, "unsigned")));
    }
    for (size_t i = 0; i < json_array_size(pk); i++)
        tb_buf_printf(&out, "pk:%s ", json_string_value(json_array_get(pk, i)));
    json_decref(v);
    return tb_buf_detach(&out, NULL);
}

/* The "after" member of an envelope, read with Jansson (integers as doubles:
 * the u column is above INT64_MAX; its exact digits are checked through the
 * caches, cache_text). Caller: json_decref. */
static json_t *after_image(const char *envelope)
{
    json_t *v = jo_parse_flags(envelope, strlen(envelope), JSON_DECODE_INT_AS_REAL), *a = json_object_get(v, "after");
    cr_assert(json_is_object(a), "not an envelope with an after image: %s", envelope);
    json_incref(a);
    json_decref(v);
    return a;
}

/* The bytes of the "after" member of an envelope as the writer put them
 * (caller frees), for a byte-for-byte comparison on top of after_image's (the
 * writer puts "after" right before "source", DESIGN 4; the test's values never
 * hold the text ,"source":{). */
static char *after_bytes(const char *envelope)
{
    const char *a = strstr(envelope, ",\"after\":"), *e = a ? strstr(a, ",\"source\":{") : NULL;
    cr_assert(a && e, "not an envelope: %s", envelope);
    a += strlen(",\"after\":");
    return dup_n(a, (size_t)(e - a));
}

/* Remove the test's temporary folder and the files in it. */
static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[600];
    while (d && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* ---------------------------------------------------------------- tests */

/* The names one test uses: prefixes p1 (original) and p2 (p1 + suffix), a
 * temporary folder with caches a.db / b.db and logs. */
typedef struct penv {
    char p1[64], p2[80], dir[32], dba[128], dbb[128], loga[128], logb[128], logp[128];
} penv;

static void penv_init(penv *e, const char *what, const char *suffix)
{
    it_prefix(e->p1, sizeof e->p1, what);
    snprintf(e->p2, sizeof e->p2, "%s%s", e->p1, suffix);
    snprintf(e->dir, sizeof e->dir, "/tmp/tbpubXXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->dba, sizeof e->dba, "%s/a.db", e->dir);
    snprintf(e->dbb, sizeof e->dbb, "%s/b.db", e->dir);
    snprintf(e->loga, sizeof e->loga, "%s/a.log", e->dir);
    snprintf(e->logb, sizeof e->logb, "%s/b.log", e->dir);
    snprintf(e->logp, sizeof e->logp, "%s/pub.log", e->dir);
}


Test(publish, round_trip, .timeout = 600)
{
    penv e;
    penv_init(&e, "pa", "re");
    char *p1 = e.p1, *p2 = e.p2, *dir = e.dir, *dba = e.dba, *dbb = e.dbb, *loga = e.loga, *logb = e.logb,
         *logp = e.logp, name[100];
    snprintf(name, sizeof name, "%spub", p1);
    produce_original(p1, "shop");
    replay(p1, dba, loga);
    /* a running `tributary cache` keeps following A (writer) while publish reads it */
    const char *follow[] = {"--brokers", it_brokers(), "--prefix", p1, "--db", dba, NULL};
    char logw[140];
    snprintf(logw, sizeof logw, "%s/writer.log", dir);
    pid_t writer = it_spawn(logw, follow);
    for (double deadline = it_now() + 60;; it_nap(50)) { /* it has the file open and wrote its state */
        char *w = access(logw, F_OK) == 0 ? slurp(logw) : calloc(1, 1);
        bool up = strstr(w, "caught up with the high watermarks") != NULL;
        free(w);
        if (up)
            break;
        cr_assert(it_now() < deadline, "the following cache did not catch up, see %s", logw);
    }
    const char *args[] = {"--db", dba, "--brokers", it_brokers(), "--prefix", p2, "--set", "name=", "--set",
                          "topic.partitions=" PUB_PARTS, NULL};
    char nameset[160];
    snprintf(nameset, sizeof nameset, "name=%s", name);
    args[7] = nameset;
    int pub_rc = publish(logp, args);
    kill(writer, SIGTERM);
    cr_assert_eq(it_wait(writer, 60), 0, "the following cache failed, see %s", logw);
    cr_assert_eq(pub_rc, 0, "publish failed, see %s", logp);
    char *log = slurp(logp);
    cr_expect(strstr(log, "shop.items: 5 rows -> ") && strstr(log, "shop.lines: 3 rows -> "), "summary: %s", log);
    free(log);
    replay(p2, dbb, logb);

    /* cache A == cache B, row for row, types included */
    char *ta = cache_text(dba), *tb = cache_text(dbb);
    cr_assert(strstr(ta, "table shop.items:") && strstr(ta, "table shop.lines:"), "%s", ta);
    char *ids = row_ids(dba, "shop.items");
    cr_assert_str_eq(ids, "1,2,5,6,40,", "shop.items of cache A: rows 1..6, 3 deleted, 4 moved to 40");
    free(ids);
    char *u = it_sql_dump(dba, "SELECT u FROM \"shop.items\" WHERE id IN (1, 5) ORDER BY id");
    cr_assert_str_eq(u, "18446744073709551001\n18446744073709551007\n", "BIGINT UNSIGNED kept exactly in cache A");
    free(u);
    cr_assert_str_eq(ta, tb);
    free(ta);
    free(tb);

    /* keys byte-identical to the live keys of the original, same partitions; values r/cache/last */
    static const char *const tables[] = {"items", "lines"};
    for (size_t i = 0; i < 2; i++) {
        char t1[200], t2[200];
        snprintf(t1, sizeof t1, "%s.shop.%s", p1, tables[i]);
        snprintf(t2, sizeof t2, "%s.shop.%s", p2, tables[i]);
        msgs a = consume_all(t1), b = consume_all(t2);
        char *ka = live_keys(&a), *kb = live_keys(&b);
        cr_assert_str_eq(ka, kb, "%s vs %s", t1, t2);
        for (size_t k = 0; k < b.n; k++) {
            cr_assert_not_null(b.m[k].value, "no tombstones in a publish");
            json_t *v = jo_parse_flags(b.m[k].value, strlen(b.m[k].value), JSON_DECODE_INT_AS_REAL);
            cr_expect(jo_expect_at(v, JO_PATH("source", "connector"), "\"cache\"") &&
                          jo_expect_at(v, JO_PATH("op"), "\"r\"") && jo_expect_at(v, JO_PATH("before"), "null"),
                      "%s", b.m[k].value);
            json_decref(v);
        }
        cr_expect_eq(b.n, i == 0 ? 5u : 3u);
        for (size_t k = 0; k < b.n; k++) { /* the row image: the original's latest, as a value and byte for byte */
            const char *orig = NULL;
            for (size_t o = 0; o < a.n; o++)
                if (strcmp(a.m[o].key, b.m[k].key) == 0)
                    orig = a.m[o].value;
            cr_assert_not_null(orig, "key %s not in %s", b.m[k].key, t1);
            json_t *x = after_image(orig), *y = after_image(b.m[k].value);
            cr_expect(json_equal(x, y), "key %s: after image %s, the original's %s", b.m[k].key, b.m[k].value, orig);
            json_decref(x);
            json_decref(y);
            char *xb = after_bytes(orig), *yb = after_bytes(b.m[k].value);
            cr_expect_str_eq(xb, yb, "key %s: the after image's bytes", b.m[k].key);
            free(xb);
            free(yb);
        }
        free(ka);
        free(kb);
        msgs_free(&a);
        msgs_free(&b);
        expect_compacted(t2);
    }
    /* the very last row (shop.lines is published after shop.items) says snapshot "last" */
    char t2[200];
    snprintf(t2, sizeof t2, "%s.shop.lines", p2);
    msgs b = consume_all(t2);
    size_t nlast = 0;
    for (size_t k = 0; k < b.n; k++) {
        json_t *v = jo_parse_flags(b.m[k].value, strlen(b.m[k].value), JSON_DECODE_INT_AS_REAL);
        const char *snap = json_string_value(jo_get(v, JO_PATH("source", "snapshot")));
        cr_expect(snap && (strcmp(snap, "last") == 0 || strcmp(snap, "true") == 0),
                  "message %zu: source.snapshot %s", k, snap ? snap : "(absent)");
        nlast += snap && strcmp(snap, "last") == 0;
        json_decref(v);
    }
    cr_expect_eq(nlast, 1u);
    msgs_free(&b);

    /* schema topic: compacted, same column names, types and keys */
    char s1[200], s2[200], off[200];
    snprintf(s1, sizeof s1, "%s.schema", p1);
    snprintf(s2, sizeof s2, "%s.schema", p2);
    expect_compacted(s2);
    msgs sa = consume_all(s1), sb = consume_all(s2);
    for (size_t i = 0; i < 2; i++) {
        char *x = schema_shape(&sa, tables[i]), *y = schema_shape(&sb, tables[i]);
        cr_expect_str_eq(x, y, "schema of %s", tables[i]);
        free(x);
        free(y);
    }
    msgs_free(&sa);
    msgs_free(&sb);
    /* no offsets record: the publish's connector name has no offsets topic */
    snprintf(off, sizeof off, "%s.offsets", name);
    cr_expect_not(topic_exists(off), "%s exists", off);
    rm_dir(dir);
}

Test(publish, tables_filter, .timeout = 600)
{
    penv e;
    penv_init(&e, "pf", "re");
    char *p1 = e.p1, *p2 = e.p2, *dir = e.dir, *dba = e.dba, *loga = e.loga, *logp = e.logp, t[200];
    produce_original(p1, "shop");
    /* a table without a schema record: the cache infers its columns */
    rd_kafka_t *rk = it_producer();
    snprintf(t, sizeof t, "%s.shop.raw", p1);
    it_create_topic(rk, t, 1, 0);
    it_produce(rk, t, 0, "{\"k\":1}", "{\"k\":1,\"v\":\"x\"}");
    it_flush(rk);
    rd_kafka_destroy(rk);
    replay(p1, dba, loga);
    /* all tables: refused before anything is sent, naming the inferred table */
    const char *all[] = {"--db", dba, "--brokers", it_brokers(), "--prefix", p2, NULL};
    expect_failure(logp, all, -1, "shop.raw", "inferred");
    snprintf(t, sizeof t, "%s.schema", p2);
    cr_expect_not(topic_exists(t), "%s was written", t);
    /* a regex matching no table */
    const char *none[] = {"--db", dba, "--brokers", it_brokers(), "--tables", "^nomatch$", NULL};
    expect_failure(logp, none, -1, "^nomatch$", dba);
    const char *args[] = {"--db", dba, "--brokers", it_brokers(), "--prefix", p2, "--tables", "^shop\\.lin", NULL};
    cr_assert_eq(publish(logp, args), 0, "publish failed, see %s", logp);
    snprintf(t, sizeof t, "%s.shop.lines", p2);
    msgs b = consume_all(t);
    cr_expect_eq(b.n, 3u);
    msgs_free(&b);
    snprintf(t, sizeof t, "%s.shop.items", p2);
    cr_expect_not(topic_exists(t), "%s was published", t);
    /* default prefix: the recorded topic's; the same rows again, keys unchanged */
    const char *args2[] = {"--db", dba, "--brokers", it_brokers(), "--tables", "lines$", "--set", "value.format=row",
                           NULL};
    cr_assert_eq(publish(logp, args2), 0, "publish failed, see %s", logp);
    snprintf(t, sizeof t, "%s.shop.lines", p1);
    b = consume_all(t);
    cr_expect_eq(b.n, 6u + 3u, "4 creates, delete, tombstone, then 3 republished rows: %zu", b.n);
    size_t nrow = 0; /* value.format=row: the republished values are the rows themselves */
    for (size_t k = 0; k < b.n; k++)
        nrow += b.m[k].value && strncmp(b.m[k].value, "{\"what\":", 8) == 0;
    cr_expect_eq(nrow, 3u);
    msgs_free(&b);
    rm_dir(dir);
}

/* Records now in topic (every partition). */
static size_t topic_count(const char *topic)
{
    msgs l = consume_all(topic);
    size_t n = l.n;
    msgs_free(&l);
    return n;
}

Test(publish, own_prefixes, .timeout = 600)
{
    penv e;
    penv_init(&e, "po", "b");
    char *p1 = e.p1, *p2 = e.p2, *dir = e.dir, *dba = e.dba, *loga = e.loga, *logp = e.logp, re[200], t1[200],
         t2[200];
    produce_original(p1, "shop");
    produce_original(p2, "shop2");
    snprintf(re, sizeof re, "^(%s|%s)\\.", p1, p2);
    const char *args[] = {"--brokers", it_brokers(), "--topics", re, "--db", dba, "--until-caught-up", NULL};
    cr_assert_eq(it_wait(it_spawn(loga, args), 120), 0, "cache failed, see %s", loga);
    snprintf(t1, sizeof t1, "%s.shop.items", p1);
    snprintf(t2, sizeof t2, "%s.shop2.items", p2);
    size_t n1 = topic_count(t1), n2 = topic_count(t2);
    const char *pub[] = {"--db", dba, "--brokers", it_brokers(), "--tables", "items$", NULL};
    cr_assert_eq(publish(logp, pub), 0, "publish failed, see %s", logp);
    cr_expect_eq(topic_count(t1), n1 + 5);
    cr_expect_eq(topic_count(t2), n2 + 5);
    char *s = slurp(logp);
    cr_expect(strstr(s, t1) && strstr(s, t2), "%s", s);
    free(s);
    rm_dir(dir);
}

Test(publish, bad_input, .timeout = 120)
{
    char dir[] = "/tmp/tbpubXXXXXX", log[128], notdb[128], empty[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/pub.log", dir);
    snprintf(notdb, sizeof notdb, "%s/not-a-cache.db", dir);
    snprintf(empty, sizeof empty, "%s/missing.db", dir);
    FILE *f = fopen(notdb, "w");
    fputs("hello, not sqlite\n", f);
    fclose(f);
    const char *no_db[] = {"--brokers", it_brokers(), NULL};
    expect_failure(log, no_db, 2, "--db", NULL);
    const char *bad[] = {"--db", notdb, "--brokers", it_brokers(), NULL};
    expect_failure(log, bad, -1, notdb, NULL);
    const char *missing[] = {"--db", empty, "--brokers", it_brokers(), NULL};
    expect_failure(log, missing, -1, empty, NULL);
    cr_expect_neq(access(empty, F_OK), 0, "a missing cache file is not created");
    rm_dir(dir);
}
