/*
 * Component tests of the table cache against librdkafka's mock cluster
 * (in-process broker: no compaction, topics created in the mock).
 *
 *   mock/envelope_typed: schema record + envelope changelog (upserts, update,
 *       delete as envelope-delete + tombstone, key change) -> typed table;
 *       uint64 max, decimal, binary, JSON, bool survive; get/iter API
 *   mock/row_format_inferred: no schema record, row-format values -> columns
 *       inferred; a later unknown column is added
 *   mock/resume_exact: two runs; the second applies only the new messages
 *       (applied counter = message count), stored offsets = high watermarks
 *   mock/bad_input_fail|skip|dlq: cache.error.policy
 *   mock/schema_add_column, mock/schema_incompatible_rebuilds
 *   mock/group_mode: cooperative group consumer gets every partition
 *   mock/upsert_batches_keep_order: rows go to SQLite several per statement
 *       (cache_rows.c); full and partial images, the same key twice, a delete
 *       and a re-create, and a value that cannot be bound (skipped) in between
 *       end exactly as one message after the other would
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb_cast.h"
#include "cache.h"
#include "cache_tmp.h"
#include "json_oracle.h"
#include "cache_read.h"
#include "tb_log.h"

static rd_kafka_t *prod;
static char bootstrap[256];
static char dbpath[256];

static void setup(void)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
    prod = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(prod, "%s", errstr);
    rd_kafka_mock_cluster_t *mc = (rd_kafka_mock_cluster_t *)rd_kafka_handle_mock_cluster(prod);
    cr_assert_not_null(mc);
    snprintf(bootstrap, sizeof(bootstrap), "%s", rd_kafka_mock_cluster_bootstraps(mc));
    rd_kafka_mock_topic_create(mc, "p.schema", 1, 1);
    rd_kafka_mock_topic_create(mc, "p.shop.items", 2, 1);
    rd_kafka_mock_topic_create(mc, "p.shop.rows", 1, 1);
    rd_kafka_mock_topic_create(mc, "tributary.cache.dlq", 1, 1);
    cache_tmp_path(dbpath, sizeof dbpath, "tb-cache-test");
    tb_log_set_level(TB_LOG_WARN);
}

static void teardown(void)
{
    if (prod)
        rd_kafka_destroy(prod);
    cache_tmp_rm(dbpath);
}

TestSuite(mock, .init = setup, .fini = teardown, .timeout = 120);

static void produce(const char *topic, int part, const char *key, const char *value)
{
    rd_kafka_resp_err_t e = rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                                              RD_KAFKA_V_KEY(TB_UNCONST(key), key ? strlen(key) : 0),
                                              RD_KAFKA_V_VALUE(TB_UNCONST(value), value ? strlen(value) : 0),
                                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    cr_assert_eq(e, 0, "produce: %s", rd_kafka_err2str(e));
}

static void flush(void)
{
    cr_assert_eq(rd_kafka_flush(prod, 10000), 0);
}

/* Replay until caught up, `batch` messages per transaction. */
static tb_code run_cache_batch(cache_error_policy pol, cache_mode mode, int batch, tb_error *err)
{
    cache_opts o;
    cache_opts_init(&o);
    o.brokers = bootstrap;
    o.topics = "^p\\.";
    o.db_path = dbpath;
    o.topic_prefix = "p";
    o.until_caught_up = true;
    o.error_policy = pol;
    o.mode = mode;
    o.group_id = "test-cache-group";
    o.batch_size = batch;
    return cache_run(&o, err);
}

static tb_code run_cache(cache_error_policy pol, cache_mode mode, tb_error *err)
{
    return run_cache_batch(pol, mode, 3, err);
}

static char *get_row(const char *table, const char *key)
{
    cache_db *db = NULL;
    tb_error err;
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cache_db_open(dbpath, &db, &err), TB_OK, "%s", err.msg);
    tb_code rc = cache_get(db, table, key, &b, &err);
    cache_db_close(db);
    if (rc != TB_OK) {
        cr_assert_eq(rc, TB_ERR_NOT_FOUND, "%s", err.msg);
        tb_buf_free(&b);
        return NULL;
    }
    return tb_buf_detach(&b, NULL);
}

static void expect_row(const char *table, const char *key, const char *want)
{
    char *got = get_row(table, key);
    if (!want) {
        cr_expect_null(got, "%s %s: expected no row, got %s", table, key, got);
    } else {
        cr_expect_not_null(got, "%s %s: no row", table, key);
        if (got)
            cr_expect_str_eq(got, want);
    }
    free(got);
}

static int64_t sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t v = -1;
    cr_assert_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static char *sql_text(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    char *v = NULL;
    cr_assert_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#define ITEMS_SCHEMA                                                                                                   \
    "{\"db\":\"shop\",\"table\":\"items\",\"version\":1,\"names_known\":true,\"columns\":["                            \
    "{\"name\":\"id\",\"type\":\"bigint\",\"source_type\":\"bigint(20) unsigned\",\"nullable\":false,"                \
    "\"unsigned\":true,\"pk\":1},"                                                                                     \
    "{\"name\":\"price\",\"type\":\"decimal\",\"source_type\":\"decimal(10,2)\",\"nullable\":true,\"unsigned\":false," \
    "\"pk\":0},"                                                                                                       \
    "{\"name\":\"name\",\"type\":\"varchar\",\"source_type\":\"varchar(20)\",\"nullable\":true,\"unsigned\":false,"    \
    "\"pk\":0},"                                                                                                       \
    "{\"name\":\"img\",\"type\":\"blob\",\"source_type\":\"blob\",\"nullable\":true,\"unsigned\":false,\"pk\":0},"     \
    "{\"name\":\"doc\",\"type\":\"json\",\"source_type\":\"json\",\"nullable\":true,\"unsigned\":false,\"pk\":0},"     \
    "{\"name\":\"flag\",\"type\":\"bit\",\"source_type\":\"bit(1)\",\"nullable\":true,\"unsigned\":false,\"pk\":0,"    \
    "\"length\":1},"                                                                                                   \
    "{\"name\":\"w\",\"type\":\"double\",\"source_type\":\"double\",\"nullable\":true,\"unsigned\":false,\"pk\":0}"    \
    "],\"primary_key\":[\"id\"]}"

#define SRC "\"source\":{\"connector\":\"mariadb\",\"db\":\"shop\",\"table\":\"items\"}"
#define ENV(before, after, op) "{\"before\":" before ",\"after\":" after "," SRC ",\"op\":\"" op "\",\"ts_ms\":1}"

static void produce_items_changelog(void)
{
    produce("p.schema", 0, "{\"db\":\"shop\",\"table\":\"items\"}", ITEMS_SCHEMA);
    const char *r1 = "{\"id\":1,\"price\":\"12.50\",\"name\":\"a\\\"b\\u00e9\",\"img\":\"AAEC/w==\","
                     "\"doc\":{\"k\":[1,2.5,\"x\"]},\"flag\":true,\"w\":0.1}";
    const char *r2 = "{\"id\":18446744073709551615,\"price\":\"-0.01\",\"name\":null,\"img\":null,\"doc\":\"s\","
                     "\"flag\":false,\"w\":1e300}";
    const char *r3 = "{\"id\":3,\"price\":\"1.00\",\"name\":\"three\",\"img\":null,\"doc\":null,\"flag\":null,\"w\":null}";
    const char *r3b = "{\"id\":3,\"price\":\"2.00\",\"name\":\"three!\",\"img\":null,\"doc\":null,\"flag\":null,\"w\":null}";
    const char *r4 = "{\"id\":4,\"price\":\"4.00\",\"name\":\"moved\",\"img\":null,\"doc\":null,\"flag\":null,\"w\":null}";
    char buf[1024];
    snprintf(buf, sizeof(buf), "{\"before\":null,\"after\":%s," SRC ",\"op\":\"c\",\"ts_ms\":1}", r1);
    produce("p.shop.items", 0, "{\"id\":1}", buf);
    snprintf(buf, sizeof(buf), "{\"before\":null,\"after\":%s," SRC ",\"op\":\"r\",\"ts_ms\":1}", r2);
    produce("p.shop.items", 1, "{\"id\":18446744073709551615}", buf);
    snprintf(buf, sizeof(buf), "{\"before\":null,\"after\":%s," SRC ",\"op\":\"c\",\"ts_ms\":1}", r3);
    produce("p.shop.items", 0, "{\"id\":3}", buf);
    snprintf(buf, sizeof(buf), "{\"before\":%s,\"after\":%s," SRC ",\"op\":\"u\",\"ts_ms\":1}", r3, r3b);
    produce("p.shop.items", 0, "{\"id\":3}", buf);
    /* key change 3 -> 4: delete + tombstone for the old key, create for the new */
    snprintf(buf, sizeof(buf), "{\"before\":%s,\"after\":null," SRC ",\"op\":\"d\",\"ts_ms\":1}", r3b);
    produce("p.shop.items", 0, "{\"id\":3}", buf);
    produce("p.shop.items", 0, "{\"id\":3}", NULL);
    snprintf(buf, sizeof(buf), "{\"before\":null,\"after\":%s," SRC ",\"op\":\"c\",\"ts_ms\":1}", r4);
    produce("p.shop.items", 1, "{\"id\":4}", buf);
    flush();
}

Test(mock, envelope_typed)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    expect_row("shop.items", "{\"id\":1}",
               "{\"id\":1,\"price\":\"12.50\",\"name\":\"a\\\"b\xc3\xa9\",\"img\":\"AAEC/w==\","
               "\"doc\":{\"k\":[1,2.5,\"x\"]},\"flag\":true,\"w\":0.1}");
    expect_row("shop.items", "{\"id\":18446744073709551615}",
               "{\"id\":18446744073709551615,\"price\":\"-0.01\",\"name\":null,\"img\":null,\"doc\":\"s\","
               "\"flag\":false,\"w\":1e300}");
    expect_row("shop.items", "{\"id\":3}", NULL);
    expect_row("shop.items", "{\"id\":4}",
               "{\"id\":4,\"price\":\"4.00\",\"name\":\"moved\",\"img\":null,\"doc\":null,\"flag\":null,\"w\":null}");
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.items\""), 3);
    /* storage classes: plain SQL sees typed values */
    char *t = sql_text("SELECT typeof(id)||','||typeof(price)||','||typeof(img)||','||typeof(w) FROM \"shop.items\" WHERE id=1");
    cr_expect_str_eq(t, "integer,text,blob,real");
    free(t);
    t = sql_text("SELECT id FROM \"shop.items\" WHERE typeof(id)='text'");
    cr_expect_str_eq(t, "18446744073709551615");
    free(t);
    cr_expect_eq(sql_int("SELECT length(img) FROM \"shop.items\" WHERE id=1"), 4);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='caught_up'"), 1);
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.items' AND partition=0"), 5);
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.items' AND partition=1"), 2);
    cr_expect_eq(sql_int("SELECT count(DISTINCT _partition) FROM \"shop.items\""), 2);
}

static int count_rows(const char *row, size_t len, void *opaque)
{
    (void)row;
    (void)len;
    (*(int *)opaque)++;
    return 0;
}

Test(mock, read_api_iter)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    cache_db *db;
    cr_assert_eq(cache_db_open(dbpath, &db, &err), TB_OK, "%s", err.msg);
    int n = 0;
    cr_expect_eq(cache_iter(db, "shop.items", count_rows, &n, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(n, 3);
    cr_expect_eq(cache_iter(db, "shop.nope", count_rows, &n, &err), TB_ERR_NOT_FOUND);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_expect_eq(cache_get(db, "shop.items", "[1]", &b, &err), TB_ERR_INVALID);
    cr_expect_eq(cache_get(db, "shop.items", "{\"nid\":1}", &b, &err), TB_ERR_INVALID);
    tb_buf_free(&b);
    cache_db_close(db);
    cache_db_close(NULL);
}

Test(mock, row_format_inferred)
{
    tb_error err;
    produce("p.shop.rows", 0, "{\"k\":\"a\"}", "{\"k\":\"a\",\"n\":1,\"x\":1.5}");
    produce("p.shop.rows", 0, "{\"k\":\"b\"}", "{\"k\":\"b\",\"n\":9223372036854775808,\"x\":null}");
    produce("p.shop.rows", 0, "{\"k\":\"c\"}", "{\"k\":\"c\",\"n\":3}");
    produce("p.shop.rows", 0, "{\"k\":\"c\"}", NULL);
    produce("p.shop.rows", 0, "{\"k\":\"a\"}", "{\"k\":\"a\",\"n\":2,\"extra\":[1]}"); /* new column */
    flush();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    expect_row("shop.rows", "{\"k\":\"a\"}", "{\"k\":\"a\",\"n\":2,\"x\":1.5,\"extra\":\"[1]\"}");
    expect_row("shop.rows", "{\"k\":\"c\"}", NULL);
    char *t = sql_text("SELECT n FROM \"shop.rows\" WHERE k='b'");
    cr_expect_str_eq(t, "9223372036854775808");
    free(t);
}

Test(mock, resume_exact)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 7);
    char buf[512];
    snprintf(buf, sizeof(buf), ENV("null", "{\"id\":5,\"price\":\"5.00\"}", "c"));
    produce("p.shop.items", 0, "{\"id\":5}", buf);
    produce("p.shop.items", 1, "{\"id\":4}", NULL);
    flush();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 9);
    expect_row("shop.items", "{\"id\":4}", NULL);
    char *row = get_row("shop.items", "{\"id\":5}");
    cr_assert_not_null(row, "shop.items {\"id\":5}: no row");
    jo_expect_text_at(row, strlen(row), JO_PATH("id"), "5");
    jo_expect_text_at(row, strlen(row), JO_PATH("price"), "\"5.00\"");
    free(row);
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.items' AND partition=0"), 6);
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.items' AND partition=1"), 3);
    /* a third run with nothing new applies nothing */
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 9);
}

static void produce_bad(void)
{
    produce("p.shop.rows", 0, "{\"k\":\"a\"}", "{\"k\":\"a\",\"n\":1}");
    produce("p.shop.rows", 0, "{\"k\":\"b\"}", "{\"k\":\"b\",\"n\":"); /* bad JSON, offset 1 */
    produce("p.shop.rows", 0, "[1]", "{\"k\":\"c\"}");                  /* key not an object, offset 2 */
    produce("p.shop.rows", 0, "{\"k\":\"d\"}", "{\"k\":\"d\",\"n\":4}");
    flush();
}

Test(mock, bad_input_fail)
{
    tb_error err;
    produce_bad();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_ERR_INVALID);
    cr_expect(strstr(err.msg, "p.shop.rows [0] offset 1") != NULL, "%s", err.msg);
    /* what came before the bad message is kept, and the stored offset points at it */
    expect_row("shop.rows", "{\"k\":\"a\"}", "{\"k\":\"a\",\"n\":1}");
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.rows'"), 1);
    /* the same again on restart: never a silent skip */
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_ERR_INVALID);
}

Test(mock, bad_input_skip)
{
    tb_error err;
    produce_bad();
    cr_assert_eq(run_cache(CACHE_ERR_SKIP, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    expect_row("shop.rows", "{\"k\":\"d\"}", "{\"k\":\"d\",\"n\":4}");
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='skipped'"), 2);
    cr_expect_eq(sql_int("SELECT next_offset FROM _tributary_offsets WHERE topic='p.shop.rows'"), 4);
}

Test(mock, bad_input_dlq)
{
    tb_error err;
    produce_bad();
    cr_assert_eq(run_cache(CACHE_ERR_DLQ, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='dlq'"), 2);
    int64_t lo = -1, hi = -1;
    cr_assert_eq(rd_kafka_query_watermark_offsets(prod, "tributary.cache.dlq", 0, &lo, &hi, 5000), 0);
    cr_expect_eq(hi, 2);
}

Test(mock, schema_add_column)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    /* the next schema record adds "color" */
    json_t *sch = jo_parse_s(ITEMS_SCHEMA);
    json_array_append_new(json_object_get(sch, "columns"),
                          json_pack("{s:s, s:s, s:s, s:b, s:i}", "name", "color", "type", "varchar", "source_type",
                                    "varchar(9)", "nullable", 1, "pk", 0));
    char *schema = jo_dump_take(sch);
    produce("p.schema", 0, "{\"db\":\"shop\",\"table\":\"items\"}", schema);
    free(schema);
    char buf[512];
    snprintf(buf, sizeof(buf), ENV("null", "{\"id\":7,\"price\":\"7.00\",\"color\":\"red\"}", "c"));
    produce("p.shop.items", 0, "{\"id\":7}", buf);
    flush();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    char *row = get_row("shop.items", "{\"id\":7}");
    cr_assert_not_null(row, "shop.items {\"id\":7}: no row");
    jo_expect_text_at(row, strlen(row), JO_PATH("id"), "7");
    jo_expect_text_at(row, strlen(row), JO_PATH("price"), "\"7.00\"");
    jo_expect_text_at(row, strlen(row), JO_PATH("color"), "\"red\"");
    free(row);
    /* existing rows kept (no rebuild): 8 applications in all */
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 8);
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.items\""), 4);
}

Test(mock, schema_incompatible_rebuilds)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    /* "name" becomes an int: the table is rebuilt from its topic */
    json_t *sch = jo_parse_s(ITEMS_SCHEMA), *col = jo_find(json_object_get(sch, "columns"), "name", "name");
    cr_assert_not_null(col);
    json_object_set_new(col, "type", json_string("text"));
    char *schema = jo_dump_take(sch);
    produce("p.schema", 0, "{\"db\":\"shop\",\"table\":\"items\"}", schema);
    free(schema);
    flush();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    /* replayed: the 7 messages applied a second time, same rows */
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 14);
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.items\""), 3);
    char *t = sql_text("SELECT type FROM _tributary_columns WHERE tbl='shop.items' AND name='name'");
    cr_expect_str_eq(t, "text");
    free(t);
}

Test(mock, group_mode)
{
    tb_error err;
    produce_items_changelog();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GROUP, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.items\""), 3);
    cr_expect_eq(sql_int("SELECT count(*) FROM _tributary_offsets WHERE topic='p.shop.items'"), 2);
}

/* ---- following: a topic created while the cache runs is found (global mode) */

typedef struct follow_run {
    volatile sig_atomic_t stop;
    tb_code rc;
    tb_error err;
    int progress_calls, caught_up_calls;
} follow_run;

static void count_progress(const cache_progress *p, void *opaque)
{
    follow_run *f = opaque;
    f->progress_calls++;
    if (p->caught_up)
        f->caught_up_calls++;
}

static void *follow_thread(void *arg)
{
    follow_run *f = arg;
    cache_opts o;
    cache_opts_init(&o);
    o.brokers = bootstrap;
    o.topics = "^p\\.";
    o.db_path = dbpath;
    o.topic_prefix = "p";
    o.metadata_refresh_ms = 300;
    o.stop = &f->stop;
    o.progress = count_progress;
    o.progress_opaque = f;
    f->rc = cache_run(&o, &f->err);
    return NULL;
}

static bool wait_sql(const char *sql, int64_t want, int seconds)
{
    for (int i = 0; i < seconds * 20; i++) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v = -1;
        if (access(dbpath, F_OK) == 0 && sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (v == want)
            return true;
        usleep(50000);
    }
    return false;
}

Test(mock, follow_new_topic_then_stop)
{
    follow_run f = {0};
    pthread_t th;
    produce_items_changelog();
    cr_assert_eq(pthread_create(&th, NULL, follow_thread, &f), 0);
    cr_expect(wait_sql("SELECT value FROM _tributary_state WHERE key='caught_up'", 1, 30), "never caught up");
    rd_kafka_mock_cluster_t *mc = (rd_kafka_mock_cluster_t *)rd_kafka_handle_mock_cluster(prod);
    rd_kafka_mock_topic_create(mc, "p.shop.late", 1, 1);
    produce("p.shop.late", 0, "{\"id\":1}", "{\"id\":1,\"s\":\"late\"}");
    flush();
    cr_expect(wait_sql("SELECT count(*) FROM \"shop.late\"", 1, 30), "the new topic was not picked up");
    f.stop = 1;
    pthread_join(th, NULL);
    cr_expect_eq(f.rc, TB_OK, "%s", f.err.msg);
    cr_expect_geq(f.caught_up_calls, 1);
    expect_row("shop.late", "{\"id\":1}", "{\"id\":1,\"s\":\"late\"}");
}

Test(mock, connect_wrapped_values)
{
    tb_error err;
    /* value.schemas=true: {"schema":…,"payload":<envelope>} */
    produce("p.shop.rows", 0, "{\"k\":\"a\"}",
            "{\"schema\":{\"type\":\"struct\",\"optional\":false},\"payload\":{\"before\":null,\"after\":"
            "{\"k\":\"a\",\"n\":1},\"source\":{\"connector\":\"sqlite\"},\"op\":\"c\",\"ts_ms\":1}}");
    produce("p.shop.rows", 0, "{\"k\":\"b\"}",
            "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"before\":null,\"after\":{\"k\":\"b\",\"n\":2},"
            "\"source\":{},\"op\":\"r\",\"ts_ms\":1}}");
    produce("p.shop.rows", 0, "{\"k\":\"b\"}",
            "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"before\":{\"k\":\"b\",\"n\":2},\"after\":null,"
            "\"source\":{},\"op\":\"d\",\"ts_ms\":1}}");
    produce("p.shop.rows", 0, "{\"k\":\"b\"}", NULL);
    /* a row-format value wrapped, and a wrapped null payload (delete) */
    produce("p.shop.rows", 0, "{\"k\":\"c\"}", "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"k\":\"c\",\"n\":3}}");
    produce("p.shop.rows", 0, "{\"k\":\"a\"}", "{\"schema\":null,\"payload\":null}");
    flush();
    cr_assert_eq(run_cache(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, &err), TB_OK, "%s", err.msg);
    expect_row("shop.rows", "{\"k\":\"a\"}", NULL);
    expect_row("shop.rows", "{\"k\":\"b\"}", NULL);
    expect_row("shop.rows", "{\"k\":\"c\"}", "{\"k\":\"c\",\"n\":3}");
}

Test(mock, upsert_batches_keep_order)
{
    char key[64], val[256], want[4096];
    size_t wl = 0;
    for (int i = 0; i < 36; i++) {
        snprintf(key, sizeof(key), "{\"k\":\"r%02d\"}", i);
        snprintf(val, sizeof(val), "{\"k\":\"r%02d\",\"n\":%d,\"s\":\"x\"}", i, i);
        produce("p.shop.rows", 0, key, val);
        if (i != 15)
            continue;
        /* after one full statement of 16 rows: an update whose statement runs with 15 unused rows */
        produce("p.shop.rows", 0, "{\"k\":\"r10\"}", "{\"k\":\"r10\",\"n\":1010,\"s\":\"x\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r01\"}", "{\"k\":\"r01\",\"n\":100}"); /* partial images */
        produce("p.shop.rows", 0, "{\"k\":\"r01\"}", "{\"k\":\"r01\",\"s\":\"y\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r02\"}", "{\"k\":\"r02\",\"n\":201,\"s\":\"z\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r02\"}", "{\"k\":\"r02\",\"n\":202,\"s\":\"z\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r03\"}", NULL); /* tombstone, then the key again */
        produce("p.shop.rows", 0, "{\"k\":\"r03\"}", "{\"k\":\"r03\",\"n\":300,\"s\":\"back\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r04\"}", /* a number too long to bind: skipped */
                "{\"k\":\"r04\",\"n\":1.00000000000000000000000000000000000000000000000000000000000000001,"
                "\"s\":\"bad\"}");
        produce("p.shop.rows", 0, "{\"k\":\"r05\"}", "{\"k\":\"r05\",\"n\":5000,\"s\":\"after\"}");
    }
    flush();
    tb_error err;
    cr_assert_eq(run_cache_batch(CACHE_ERR_SKIP, CACHE_MODE_GLOBAL, 1000, &err), TB_OK, "%s", err.msg);
    for (int i = 0; i < 36; i++) {
        int n = i == 1 ? 100 : i == 2 ? 202 : i == 3 ? 300 : i == 5 ? 5000 : i == 10 ? 1010 : i;
        const char *sv = i == 1 ? "y" : i == 2 ? "z" : i == 3 ? "back" : i == 5 ? "after" : "x";
        wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%sr%02d:%d:%s", i ? "," : "", i, n, sv);
    }
    char *got = sql_text("SELECT group_concat(k || ':' || n || ':' || s, ',') FROM (SELECT * FROM \"shop.rows\" ORDER BY k)");
    cr_assert_not_null(got);
    cr_expect_str_eq(got, want);
    free(got);
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.rows\""), 36);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='skipped'"), 1);
    cr_expect_eq(sql_int("SELECT value FROM _tributary_state WHERE key='applied'"), 44);
}

/* A key value may be NULL (a nullable key.columns column, an SQLite primary
 * key): NULLs never conflict in a unique index, so such rows must be updated
 * and deleted by IS, not duplicated (row format, composite key, a partial
 * image, a tombstone, rows with ordinary keys in between). */
Test(mock, null_key_values_update_in_place)
{
    produce("p.shop.nk", 0, "{\"a\":\"x\",\"b\":1}", "{\"a\":\"x\",\"b\":1,\"n\":5,\"s\":\"q\"}");
    produce("p.shop.nk", 0, "{\"a\":null,\"b\":1}", "{\"a\":null,\"b\":1,\"n\":1,\"s\":\"o\"}");
    produce("p.shop.nk", 0, "{\"a\":null,\"b\":1}", "{\"a\":null,\"b\":1,\"n\":2,\"s\":\"o\"}");
    produce("p.shop.nk", 0, "{\"a\":\"x\",\"b\":2}", "{\"a\":\"x\",\"b\":2,\"n\":7,\"s\":\"q\"}");
    produce("p.shop.nk", 0, "{\"a\":null,\"b\":1}", "{\"a\":null,\"b\":1,\"s\":\"p\"}"); /* partial image */
    produce("p.shop.nk", 0, "{\"a\":null,\"b\":2}", "{\"a\":null,\"b\":2,\"n\":20,\"s\":\"gone\"}");
    produce("p.shop.nk", 0, "{\"a\":null,\"b\":2}", NULL); /* tombstone */
    produce("p.shop.nk", 0, "{\"a\":\"x\",\"b\":1}", "{\"a\":\"x\",\"b\":1,\"n\":6,\"s\":\"q\"}");
    flush();
    tb_error err;
    cr_assert_eq(run_cache_batch(CACHE_ERR_FAIL, CACHE_MODE_GLOBAL, 1000, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(sql_int("SELECT count(*) FROM \"shop.nk\""), 3);
    char *got = sql_text("SELECT group_concat(coalesce(a, 'NULL') || ':' || b || ':' || n || ':' || s, ',') FROM "
                         "(SELECT * FROM \"shop.nk\" ORDER BY a IS NOT NULL, a, b)");
    cr_assert_not_null(got);
    cr_expect_str_eq(got, "NULL:1:2:p,x:1:6:q,x:2:7:q");
    free(got);
}
