/*
 * Avro with a real schema registry (DESIGN 4b): tributary runs against the testenv MariaDB,
 * Kafka and schema registry (scripts/testenv up --registry) with key.converter=avro and
 * value.converter=avro; an independent consumer (tests/avro/avro_consume.py: confluent-kafka's
 * AvroDeserializer and schema registry client, fastavro underneath) decodes every message, and
 * the values are compared with what the source database itself says (SQL expressions that
 * compute each column's expected encoding). Fails (never skips) without the registry.
 */
#include <sys/stat.h>

#include "../e2e/e2e_util.h"
#include "avro_registry.h"

typedef struct av_run {
    char db[96], dir[256], cfg[320], log[320], status[320];
    pid_t pid;
} av_run;

/* Every message of topic, decoded by the Python consumer: a Jansson array of
 * {"topic","offset","key","value",...} (caller decrefs), or NULL when the
 * consumer did not finish within 120 s (the caller tries again). Fails on any
 * message that does not decode. */
static json_t *consume(const char *topic)
{
    const char *py = tb_itest_env("TRIBUTARY_TEST_PYAVRO");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 120 '%s' '%s/tests/avro/avro_consume.py' '%s' '%s' '%s'", py, TB_SOURCE_DIR,
             tb_itest_env("TRIBUTARY_TEST_KAFKA"), registry(), topic);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, p)) > 0)
        json_array_append_new(all, jo_parse(line, (size_t)n));
    free(line);
    int st = pclose(p);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 124) {
        fprintf(stderr, "avro_e2e: the consumer of %s did not finish in 120 s; trying again\n", topic);
        json_decref(all);
        return NULL;
    }
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the Avro consumer failed on topic %s (status %d)", topic, st);
    return all;
}

/* Consume topic until it holds at least want messages (generous deadline). */
static json_t *consume_at_least(const char *topic, size_t want, const av_run *r)
{
    long long deadline = tb_itest_now_ms() + 300000;
    for (;;) {
        json_t *all = consume(topic);
        if (all && json_array_size(all) >= want)
            return all;
        size_t have = json_array_size(all);
        json_decref(all);
        cr_assert(tb_itest_now_ms() < deadline, "topic %s: %zu messages, want %zu; see %s", topic, have, want,
                  r->log);
        if (r->pid > 0)
            cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary exited; see %s", r->log);
        usleep(500000);
    }
}

/* Start tributary on the tables of r->db (its name is the run's and the topic prefix) that
 * match tables (a regex alternative), with extra config lines. */
static void run_start(av_run *r, const char *tables, const char *extra)
{
    snprintf(r->dir, sizeof r->dir, "/tmp/e2e%s", r->db);
    cr_assert_eq(mkdir(r->dir, 0700), 0);
    snprintf(r->cfg, sizeof r->cfg, "%s/run.properties", r->dir);
    snprintf(r->log, sizeof r->log, "%s/run.log", r->dir);
    snprintf(r->status, sizeof r->status, "%s/status.json", r->dir);
    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=%s[.](%s)\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=kafka\noffsets.commit.interval.ms=200\nstatus.file=%s\nsnapshot.mode=initial\n"
            "key.converter=avro\nvalue.converter=avro\nschema.registry.url=%s\n%s",
            r->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            9000 + (unsigned)getpid() % 1000, r->db, tables, r->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), r->status,
            registry(), extra ? extra : "");
    fclose(f);
    const char *args[] = {"run", "--config", r->cfg, NULL};
    r->pid = e2e_spawn(args, r->log);
}

static void run_stop(av_run *r)
{
    kill(r->pid, SIGTERM);
    cr_assert_eq(e2e_wait(r->pid, 60000), 0, "tributary run did not stop cleanly; see %s", r->log);
    e2e_assert_clean_log(r->log);
    r->pid = 0;
}

/* A decoded JSON value as the text the SQL expressions give ("\N" for null). */
static void as_text(json_t *v, tb_buf *out)
{
    tb_buf_reset(out);
    if (!v || json_is_null(v))
        tb_buf_puts(out, "\\N");
    else if (json_is_string(v))
        tb_buf_append(out, json_string_value(v), json_string_length(v));
    else if (json_is_integer(v))
        tb_buf_printf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_boolean(v))
        tb_buf_puts(out, json_is_true(v) ? "true" : "false");
    else if (json_is_object(v) && json_object_get(v, "wkb")) /* Geometry: wkb/srid */
        tb_buf_printf(out, "%s/%lld", json_string_value(json_object_get(v, "wkb")),
                      (long long)json_integer_value(json_object_get(v, "srid")));
    else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        tb_buf_puts(out, s);
        free(s);
    }
}

/* The table state the topic says: for every key, the after image of its last
 * message, the key gone after a tombstone. A JSON object "<key json>" -> after. */
static json_t *topic_state(json_t *msgs)
{
    json_t *state = json_object();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        char *k = json_dumps(json_object_get(m, "key"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_t *v = json_object_get(m, "value");
        if (json_is_null(v))
            json_object_del(state, k);
        else if (json_is_object(json_object_get(v, "after")))
            json_object_set(state, k, json_object_get(v, "after"));
        free(k);
    }
    return state;
}

/* Compare the topic's state with the source: sql selects the key column first,
 * then one expected text per column of cols (NULL-terminated). */
static void expect_state(MYSQL *m, json_t *msgs, const char *sql, const char *const *cols, const char *what)
{
    json_t *state = topic_state(msgs);
    cr_assert_eq(mysql_query(m, sql), 0, "%s: %s", sql, mysql_error(m));
    MYSQL_RES *res = mysql_store_result(m);
    cr_assert_not_null(res);
    size_t rows = 0;
    MYSQL_ROW row;
    tb_buf got;
    tb_buf_init(&got, 0);
    while ((row = mysql_fetch_row(res))) {
        rows++;
        char key[128];
        snprintf(key, sizeof key, "{\"id\":%s}", row[0]);
        json_t *after = json_object_get(state, key);
        cr_assert_not_null(after, "%s: the topic has no row for key %s", what, key);
        for (size_t c = 0; cols[c]; c++) {
            as_text(json_object_get(after, cols[c]), &got);
            const char *want = row[c + 1] ? row[c + 1] : "\\N";
            cr_expect_str_eq(tb_buf_cstr(&got), want, "%s: key %s column %s: the topic has %s, the source %s", what,
                             key, cols[c], tb_buf_cstr(&got), want);
        }
    }
    mysql_free_result(res);
    cr_expect_eq(json_object_size(state), rows, "%s: the topic holds %zu rows, the source %zu", what,
                 json_object_size(state), rows);
    tb_buf_free(&got);
    json_decref(state);
}

/* Every message carries the wire format's schema ids: key always, value unless a tombstone. */
static void expect_wire_ids(json_t *msgs)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        cr_expect(json_integer_value(json_object_get(m, "key_schema_id")) > 0, "message %zu: no key schema id", i);
        if (!json_is_null(json_object_get(m, "value")))
            cr_expect(json_integer_value(json_object_get(m, "value_schema_id")) > 0, "message %zu: no value schema id",
                      i);
    }
}

#define EVERY_COLS                                                                                              \
    "id INT PRIMARY KEY, ti TINYINT, su SMALLINT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, d DECIMAL(10,2), "   \
    "dd DECIMAL(65,30), f FLOAT, db DOUBLE, c VARCHAR(40), b BLOB, dt DATE, dt3 DATETIME(3), dt6 DATETIME(6), " \
    "ts TIMESTAMP(2) NULL, tm TIME(3), y YEAR, e ENUM('a','b'), s SET('x','y','z'), bit1 BIT(1), bit9 BIT(9), " \
    "j LONGTEXT, g GEOMETRY, n INT NULL"

static void insert_every(MYSQL *m, const char *db, int id, int variant)
{
    if (variant == 0)
        e2e_sql(m,
                "INSERT INTO %s.every VALUES (%d, -128, 65535, -9223372036854775808, 18446744073709551615, -12.50, "
                "-12345678901234567890123456789012345.123456789012345678901234567890, 1.5, -2.25, 'h\xc3\xa9llo \xf0\x9f\x98\x80', "
                "X'00ff10', '2024-01-31', '2024-01-31 10:00:00.123', '1969-12-31 23:59:59.999999', "
                "'2024-01-31 10:00:00.12', '-838:59:59.000', 2024, 'b', 'x,z', 1, b'101010101', '{\"a\":[1,2]}', "
                "ST_GeomFromText('POINT(1 2)'), NULL)",
                db, id);
    else
        e2e_sql(m,
                "INSERT INTO %s.every VALUES (%d, 127, 0, 9223372036854775807, 0, 0.00, 0, -0.5, 0.125, '', '', "
                "'1000-01-01', '9999-12-31 23:59:59.999', '1970-01-01 00:00:00', '1970-01-01 00:00:01.25', "
                "'838:59:59.999', 1901, 'a', '', 0, b'0', '[]', ST_GeomFromText('LINESTRING(0 0, 1 1)'), 7)",
                db, id);
}

/* value.encoding=debezium: snapshot and stream of a table of every column type, a key change,
 * deletes (tombstones) and a TRUNCATE, decoded by the independent consumer and equal to the
 * source. */
Test(avro_e2e, debezium_every_type, .timeout = 900, .fini = e2e_kill_children)
{
    av_run r;
    memset(&r, 0, sizeof r);
    registry();
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "SET time_zone = '+00:00'");
    char db[96];
    tb_itest_unique(db, sizeof db, "avdbz");
    snprintf(r.db, sizeof r.db, "%s", db);
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.every (" EVERY_COLS ")", db);
    e2e_sql(m, "CREATE TABLE %s.trunc (id INT PRIMARY KEY, v VARCHAR(10))", db);
    insert_every(m, db, 1, 0);
    insert_every(m, db, 2, 1);
    e2e_sql(m, "INSERT INTO %s.trunc VALUES (1,'a'),(2,'b'),(3,'c')", db);
    run_start(&r, "every|trunc", "value.encoding=debezium\ndebezium.bigint.unsigned.handling.mode=precise\n");

    char every[256], trunc[256];
    snprintf(every, sizeof every, "%s.%s.every", db, db);
    snprintf(trunc, sizeof trunc, "%s.%s.trunc", db, db);
    json_decref(consume_at_least(every, 2, &r)); /* the snapshot is on the topic: stream from here */
    json_decref(consume_at_least(trunc, 3, &r));
    insert_every(m, db, 3, 0);
    insert_every(m, db, 4, 1);
    e2e_sql(m, "UPDATE %s.every SET c = 'changed', n = 42, d = 99999999.99 WHERE id = 3", db);
    e2e_sql(m, "UPDATE %s.every SET id = 5 WHERE id = 4", db); /* key change */
    e2e_sql(m, "DELETE FROM %s.every WHERE id = 2", db);
    e2e_sql(m, "TRUNCATE TABLE %s.trunc", db);
    /* every: 2 r + 2 c + 1 u + (d, tombstone, c) + (d, tombstone) = 10; trunc: 3 r + 3 tombstones
     * (under Avro keys TRUNCATE writes a tombstone per key, DESIGN 4b) */
    json_t *msgs = consume_at_least(every, 10, &r);
    json_t *tmsgs = consume_at_least(trunc, 6, &r);
    run_stop(&r);

    static const char *const cols[] = {"ti", "su", "bi", "bu", "d", "dd", "f", "db", "c", "b", "dt", "dt3", "dt6",
                                       "ts", "tm", "y", "e", "s", "bit1", "bit9", "j", "g", "n", NULL};
    char sql[4096];
    snprintf(sql, sizeof sql,
             "SELECT id, ti, su, bi, CAST(bu AS CHAR), CAST(d AS CHAR), CAST(dd AS CHAR), CAST(f AS CHAR), "
             "CAST(db AS CHAR), c, LOWER(HEX(b)), DATEDIFF(dt, '1970-01-01'), "
             "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', dt3) DIV 1000, "
             "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', dt6), "
             "CONCAT(DATE_FORMAT(ts, '%%Y-%%m-%%dT%%H:%%i:%%s'), IF(MICROSECOND(ts) = 0, '', "
             "CONCAT('.', TRIM(TRAILING '0' FROM LEFT(DATE_FORMAT(ts, '%%f'), 2)))), 'Z'), "
             "CAST(ROUND(TIME_TO_SEC(tm) * 1000000) AS SIGNED), y, e, s, IF(bit1, 'true', 'false'), "
             "LOWER(CONCAT(LPAD(HEX(bit9 & 255), 2, '0'), LPAD(HEX(bit9 >> 8), 2, '0'))), j, "
             "CONCAT(LOWER(HEX(ST_AsWKB(g))), '/', ST_SRID(g)), n FROM %s.every ORDER BY id",
             db);
    expect_state(m, msgs, sql, cols, "every");
    expect_wire_ids(msgs);
    expect_wire_ids(tmsgs);

    /* ops: snapshot reads, then the stream's; the key change is a delete and tombstone of
     * key 4, then a create of key 5 */
    static const char *const ops[] = {"r", "r", "c", "c", "u", "d", NULL, "c", "d", NULL};
    cr_assert_eq(json_array_size(msgs), 10, "every: %zu messages", json_array_size(msgs));
    for (size_t i = 0; i < 10; i++) {
        json_t *v = json_object_get(json_array_get(msgs, i), "value");
        if (!ops[i])
            cr_expect(json_is_null(v), "message %zu is a tombstone", i);
        else
            cr_expect_str_eq(json_string_value(json_object_get(v, "op")), ops[i], "message %zu", i);
    }
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_array_get(msgs, 5), "key"), "id")), 4);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_array_get(msgs, 7), "key"), "id")), 5);
    /* the source record, as Debezium's */
    json_t *src = json_object_get(json_object_get(json_array_get(msgs, 2), "value"), "source");
    cr_expect_str_eq(json_string_value(json_object_get(src, "connector")), "mariadb");
    cr_expect_str_eq(json_string_value(json_object_get(src, "table")), "every");
    cr_expect_str_eq(json_string_value(json_object_get(src, "snapshot")), "false");
    /* TRUNCATE: a delete and a tombstone per key; the table is empty on the topic */
    json_t *tstate = topic_state(tmsgs);
    cr_expect_eq(json_object_size(tstate), 0, "trunc: rows left on the topic after TRUNCATE");
    cr_expect_eq(json_array_size(tmsgs), 6, "trunc: %zu messages (no record under the key {})",
                 json_array_size(tmsgs));
    for (size_t i = 3; i < json_array_size(tmsgs); i++)
        cr_expect(json_is_null(json_object_get(json_array_get(tmsgs, i), "value")), "trunc: message %zu", i);
    json_decref(tstate);
    json_decref(msgs);
    json_decref(tmsgs);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* tributary's own encoding: the values it keeps exactly (BIGINT UNSIGNED, DECIMAL(65,30),
 * TIME beyond 24 h, zero dates) come out of the Avro consumer as the source's text. */
Test(avro_e2e, tributary_encoding_lossless, .timeout = 900, .fini = e2e_kill_children)
{
    av_run r;
    memset(&r, 0, sizeof r);
    registry();
    MYSQL *m = e2e_mysql();
    tb_itest_unique(r.db, sizeof r.db, "avtrib");
    e2e_sql(m, "SET SESSION sql_mode = ''");
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m,
            "CREATE TABLE %s.lossless (id INT PRIMARY KEY, bu BIGINT UNSIGNED, dd DECIMAL(65,30), tm TIME(6), "
            "dt DATE, s SET('x','y'))",
            r.db);
    e2e_sql(m,
            "INSERT INTO %s.lossless VALUES (1, 18446744073709551615, "
            "99999999999999999999999999999999999.999999999999999999999999999999, '838:59:59.999999', '0000-00-00', "
            "'x,y'), (2, 0, -0.000000000000000000000000000001, '-838:59:59.000000', '2024-02-29', '')",
            r.db);
    av_run *rp = &r;
    const char *db = r.db;
    run_start(rp, "lossless", NULL);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.lossless", db, db);
    json_decref(consume_at_least(topic, 2, rp));
    e2e_sql(m, "UPDATE %s.lossless SET tm = '-00:00:00.000001', bu = 9223372036854775808 WHERE id = 2", db);
    json_t *msgs = consume_at_least(topic, 3, rp);
    run_stop(rp);
    static const char *const cols[] = {"bu", "dd", "tm", "dt", "s", NULL};
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT id, CAST(bu AS CHAR), CAST(dd AS CHAR), CAST(tm AS CHAR), CAST(dt AS CHAR), "
             "IF(s = '', '[]', CONCAT('[\"', REPLACE(s, ',', '\",\"'), '\"]')) FROM %s.lossless ORDER BY id",
             db);
    expect_state(m, msgs, sql, cols, "lossless");
    expect_wire_ids(msgs);
    json_decref(msgs);
    mysql_close(m);
    e2e_rmtree(rp->dir);
}

/* Poll the run's log until it holds text (generous deadline). */
static void wait_log(const av_run *r, const char *text)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    long long deadline = tb_itest_now_ms() + 180000;
    while (!(e2e_slurp(r->log, &b) && strstr(tb_buf_cstr(&b), text))) {
        cr_assert(tb_itest_now_ms() < deadline, "no \"%s\" in %s", text, r->log);
        usleep(200000);
    }
    tb_buf_free(&b);
}

/* The schema registry stopped while streaming: rows of a registered schema still flow, a new
 * table version waits (nothing sent, WARN) until the registry is back, then nothing is lost.
 * Under BACKWARD an added nullable column is accepted (a new schema id); a change the registry
 * refuses (VARCHAR to INT) stops the run naming the subject, the table version and the level, and
 * nothing of it reaches the topic. */
Test(avro_e2e, registry_outage_and_backward_evolution, .timeout = 900, .fini = e2e_kill_children)
{
    av_run r;
    memset(&r, 0, sizeof r);
    registry();
    MYSQL *m = e2e_mysql();
    tb_itest_unique(r.db, sizeof r.db, "avevo");
    const char *db = r.db;
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, a VARCHAR(10))", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1, '1')", db);
    run_start(&r, "t", "ddl.alter.policy=warn\n");
    char topic[256], subject[300];
    snprintf(topic, sizeof topic, "%s.%s.t", db, db);
    snprintf(subject, sizeof subject, "%s-value", topic);
    json_decref(consume_at_least(topic, 1, &r));
    set_compatibility(subject, "BACKWARD");

    tb_itest_testenv("stop-registry");
    e2e_sql(m, "INSERT INTO %s.t VALUES (2, '2')", db); /* its schema is registered: it is sent */
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN b INT DEFAULT 5", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (3, '3', 7)", db); /* a new version: waits for the registry */
    wait_log(&r, "cannot register subject");
    cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary exited while the registry was down; see %s", r.log);
    tb_itest_testenv("start-registry");
    json_t *msgs = consume_at_least(topic, 3, &r);
    cr_assert_eq(json_array_size(msgs), 3, "%zu messages", json_array_size(msgs));
    json_t *m3 = json_array_get(msgs, 2);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(m3, "key"), "id")), 3);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_object_get(m3, "value"), "after"), "b")), 7);
    json_int_t id1 = json_integer_value(json_object_get(json_array_get(msgs, 0), "value_schema_id"));
    json_int_t id3 = json_integer_value(json_object_get(m3, "value_schema_id"));
    cr_expect_neq(id1, id3, "the added column registered a new version");
    static const char *const cols[] = {"a", NULL};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT id, a FROM %s.t ORDER BY id", db);
    expect_state(m, msgs, sql, cols, "t");
    json_decref(msgs);

    /* incompatible under BACKWARD: the run stops, nothing of the new version is sent */
    e2e_sql(m, "ALTER TABLE %s.t MODIFY a INT", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (4, 4, 4)", db);
    int rc = e2e_wait(r.pid, 180000);
    cr_assert(rc > 0, "tributary did not stop on the refused schema (wait: %d); see %s", rc, r.log);
    r.pid = 0;
    tb_buf log;
    tb_buf_init(&log, 0);
    cr_assert(e2e_slurp(r.log, &log));
    const char *l = tb_buf_cstr(&log);
    cr_expect(strstr(l, subject) && strstr(l, "incompatible") && strstr(l, "BACKWARD") && strstr(l, "version"),
              "the error names the subject, the change and the compatibility level; see %s", r.log);
    tb_buf_free(&log);
    msgs = consume(topic);
    cr_assert_not_null(msgs);
    cr_expect_eq(json_array_size(msgs), 3, "nothing sent with the refused schema: %zu messages",
                 json_array_size(msgs));
    json_decref(msgs);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Messages on topic (every partition), read from the broker's watermarks without decoding. */
static int64_t topic_messages(const char *topic)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr,
                                   sizeof errstr),
                 RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t n = 0;
    for (int i = 0; i < md->topic_cnt; i++)
        for (int p = 0; p < md->topics[i].partition_cnt; p++) {
            int64_t lo = 0, hi = 0;
            cr_assert_eq(rd_kafka_query_watermark_offsets(rk, topic, md->topics[i].partitions[p].id, &lo, &hi, 30000),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
            n += hi - lo;
        }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return n;
}

/* What the run says about the registry, each source read once. */
typedef struct reg_view {
    int health_code;     /* /health: HTTP status, 0 no answer */
    char health[700];    /* /health's reason ("null" when none) */
    bool status_down;    /* status file: schema_registry_down_since_ms is a number */
    char status_reason[700]; /* the status file's health reason ("null" when none) */
    bool status_healthy;
    long long updated_ms; /* the status file's updated_ms */
    char gtid[256];      /* the status file's committed GTID set ("" none) */
    double metric;       /* tributary_schema_registry_down_since_seconds, -1 absent */
} reg_view;

static void reg_look(const av_run *r, unsigned port, reg_view *v)
{
    memset(v, 0, sizeof(*v));
    v->metric = -1;
    snprintf(v->health, sizeof v->health, "null");
    snprintf(v->status_reason, sizeof v->status_reason, "null");
    tb_buf b;
    tb_buf_init(&b, 0);
    if (e2e_slurp(r->status, &b) && b.len > 0) {
        json_t *st = jo_parse(b.data, b.len); /* replaced by rename: a whole JSON text */
        v->status_down = json_is_integer(json_object_get(st, "schema_registry_down_since_ms"));
        json_t *h = json_object_get(st, "health");
        v->status_healthy = json_is_true(json_object_get(h, "healthy"));
        const char *reason = json_string_value(json_object_get(h, "reason"));
        if (reason)
            snprintf(v->status_reason, sizeof v->status_reason, "%s", reason);
        v->updated_ms = (long long)json_integer_value(json_object_get(st, "updated_ms"));
        const char *g = json_string_value(jo_get(st, JO_PATH("position", "gtid")));
        snprintf(v->gtid, sizeof v->gtid, "%s", g ? g : "");
        json_decref(st);
    }
    v->health_code = e2e_http_get(port, "/health", &b);
    if (v->health_code > 0 && b.len > 0) {
        json_t *h = jo_parse(b.data, b.len);
        const char *reason = json_string_value(json_object_get(h, "reason"));
        if (reason)
            snprintf(v->health, sizeof v->health, "%s", reason);
        json_decref(h);
    }
    if (e2e_http_get(port, "/metrics", &b) == 200) {
        tb_buf_putc(&b, '\0');
        const char *l = strstr(tb_buf_cstr(&b), "\ntributary_schema_registry_down_since_seconds{");
        if (l && (l = strchr(l + 1, ' ')))
            v->metric = strtod(l + 1, NULL);
    }
    tb_buf_free(&b);
}

/* The sequence number of a single-domain GTID set "D-S-N" (0 when empty). */
static unsigned long long gtid_seq(const char *g)
{
    const char *dash = strrchr(g, '-');
    return dash ? strtoull(dash + 1, NULL, 10) : 0;
}

/* The schema registry stopped while a new table version waits for its registration: /health
 * (503 "schema registry unreachable: <url>: <error>"), the status file (its health reason and
 * schema_registry_down_since_ms), `tributary status` (exit 1) and the gauge
 * tributary_schema_registry_down_since_seconds say so; the committed position stays before the
 * waiting rows and nothing reaches the topic. The registry back: every row arrives once, decoded
 * by the independent consumer, equal to the source, and the run is healthy again. */
Test(avro_e2e, registry_down_reported, .timeout = 900, .fini = e2e_fini_servers)
{
    av_run r;
    memset(&r, 0, sizeof r);
    const char *url = registry();
    MYSQL *m = e2e_mysql();
    tb_itest_unique(r.db, sizeof r.db, "avdown");
    const char *db = r.db;
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, a VARCHAR(10))", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1, '1')", db);
    unsigned port = e2e_free_port();
    char extra[256];
    snprintf(extra, sizeof extra, "ddl.alter.policy=warn\nmetrics.listen=127.0.0.1:%u\n", port);
    run_start(&r, "t", extra);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t", db, db);
    json_decref(consume_at_least(topic, 1, &r));
    reg_view v;
    long long deadline = tb_itest_now_ms() + 120000;
    for (reg_look(&r, port, &v); !(v.health_code == 200 && v.status_healthy && v.metric == 0);
         reg_look(&r, port, &v)) {
        cr_assert(tb_itest_now_ms() < deadline, "not healthy before the outage: /health %d %s, metric %g; see %s",
                  v.health_code, v.health, v.metric, r.log);
        usleep(200000);
    }

    tb_itest_testenv("stop-registry");
    long long t_stop = tb_itest_now_ms();
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN b INT", db);
    /* a new table version: its first row waits for the registration */
    e2e_sql(m, "INSERT INTO %s.t VALUES (2, '2', 2)", db);
    tb_buf gb;
    tb_buf_init(&gb, 0);
    e2e_query_text(m, "SELECT @@last_gtid", &gb);
    unsigned long long first_waiting = gtid_seq(tb_buf_cstr(&gb));
    cr_assert_gt(first_waiting, 0, "@@last_gtid: %s", tb_buf_cstr(&gb));
    tb_buf_free(&gb);
    for (int i = 3; i <= 30; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, '%d', %d)", db, i, i, i);
    e2e_sql(m, "INSERT INTO %s.t SELECT seq, CAST(seq AS CHAR), seq * 10 FROM %s.seq_31_to_80", db, db);

    /* every view says the registry is unreachable, naming it */
    char want[512];
    snprintf(want, sizeof want, "schema registry unreachable: %s: ", url);
    deadline = tb_itest_now_ms() + 120000;
    for (reg_look(&r, port, &v);
         !(v.health_code == 503 && strncmp(v.health, want, strlen(want)) == 0 && v.status_down &&
           !v.status_healthy && strncmp(v.status_reason, want, strlen(want)) == 0 && v.metric * 1000 >= t_stop - 2000);
         reg_look(&r, port, &v)) {
        cr_assert(tb_itest_now_ms() < deadline,
                  "the registry is down, yet: /health %d \"%s\", status down %d \"%s\", metric %g; see %s",
                  v.health_code, v.health, v.status_down, v.status_reason, v.metric, r.log);
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary exited while the registry was down; see %s", r.log);
        usleep(200000);
    }
    fprintf(stderr, "avro_e2e: registry down reported after %lld ms: %s\n", tb_itest_now_ms() - t_stop, v.health);
    /* `tributary status`: exit 1, the registry named */
    char outp[400];
    snprintf(outp, sizeof outp, "%s/status.out", r.dir);
    const char *sargs[] = {"status", "--config", r.cfg, NULL};
    int src = e2e_wait(e2e_spawn(sargs, outp), 30000);
    tb_buf so;
    tb_buf_init(&so, 0);
    e2e_slurp(outp, &so);
    cr_expect_eq(src, 1, "tributary status exits %d while the registry is down:\n%s", src, tb_buf_cstr(&so));
    cr_expect(strstr(tb_buf_cstr(&so), "schema registry unreachable") && strstr(tb_buf_cstr(&so), url),
              "tributary status does not name the registry:\n%s", tb_buf_cstr(&so));
    tb_buf_free(&so);
    /* the position stays before the waiting rows, while the status file goes on being rewritten */
    char gtid0[256];
    snprintf(gtid0, sizeof gtid0, "%s", v.gtid);
    long long upd0 = v.updated_ms;
    cr_expect(gtid_seq(gtid0) < first_waiting, "committed %s, the first waiting row is %llu", gtid0, first_waiting);
    deadline = tb_itest_now_ms() + 60000;
    do {
        usleep(500000);
        reg_look(&r, port, &v);
        cr_assert(tb_itest_now_ms() < deadline, "the status file was not rewritten for 60 s while waiting; see %s",
                  r.log);
    } while (v.updated_ms < upd0 + 3000);
    cr_expect(v.status_down && v.health_code == 503, "still waiting: /health %d %s", v.health_code, v.health);
    cr_expect_str_eq(v.gtid, gtid0, "the committed position moved while the registry was down");
    cr_expect(gtid_seq(v.gtid) < first_waiting, "committed %s, the first waiting row is %llu", v.gtid, first_waiting);
    cr_expect_eq(topic_messages(topic), 1, "nothing of the new version reached the topic");

    tb_itest_testenv("start-registry");
    long long t_start = tb_itest_now_ms();
    json_t *msgs = consume_at_least(topic, 80, &r);
    /* no crash, nothing repeated: each row exactly once */
    cr_expect_eq(json_array_size(msgs), 80, "%zu messages", json_array_size(msgs));
    int seen[81] = {0};
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        json_int_t id = json_integer_value(json_object_get(json_object_get(msg, "key"), "id"));
        cr_assert(id >= 1 && id <= 80, "message %zu: key %lld", i, (long long)id);
        seen[id]++;
    }
    for (int id = 1; id <= 80; id++)
        cr_expect_eq(seen[id], 1, "key %d: %d messages", id, seen[id]);
    static const char *const cols[] = {"a", "b", NULL};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT id, a, b FROM %s.t ORDER BY id", db);
    expect_state(m, msgs, sql, cols, "t");
    expect_wire_ids(msgs);
    json_decref(msgs);
    /* healthy again, everywhere; the position passes the rows that waited */
    deadline = tb_itest_now_ms() + 120000;
    for (reg_look(&r, port, &v); !(v.health_code == 200 && v.status_healthy && !v.status_down && v.metric == 0 &&
                                   gtid_seq(v.gtid) > first_waiting);
         reg_look(&r, port, &v)) {
        cr_assert(tb_itest_now_ms() < deadline,
                  "the registry is back, yet: /health %d \"%s\", status down %d \"%s\", metric %g, committed %s; "
                  "see %s",
                  v.health_code, v.health, v.status_down, v.status_reason, v.metric, v.gtid, r.log);
        usleep(200000);
    }
    fprintf(stderr, "avro_e2e: healthy %lld ms after the registry started\n", tb_itest_now_ms() - t_start);
    run_stop(&r);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Start tributary again on r's configuration (its log appended to). */
static void run_again(av_run *r)
{
    const char *args[] = {"run", "--config", r->cfg, NULL};
    r->pid = e2e_spawn(args, r->log);
}

/* The schema id the log's last "subject <subject>: schema id N" line gives, 0 when none. */
static unsigned long logged_schema_id(const char *log, const char *subject)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    unsigned long id = 0;
    if (e2e_slurp(log, &b)) {
        char needle[400];
        snprintf(needle, sizeof needle, "subject %s: schema id ", subject);
        for (const char *p = strstr(tb_buf_cstr(&b), needle); p; p = strstr(p + 1, needle))
            id = strtoul(p + strlen(needle), NULL, 10);
    }
    tb_buf_free(&b);
    return id;
}

/* kill -9 between registering a schema and sending with it: the run registers the new version of
 * an ALTERed table and stops itself there (the test hook TB_TEST_AVRO_STOP_AFTER_REGISTER, av_ser.h:
 * SIGSTOP after the registry's answer, before the first message of that version is encoded or
 * handed to Kafka); it is SIGKILLed, more rows are written, and a restarted run registers the
 * same schema again: the registry answers with the id it gave (no second version), and the topic,
 * decoded by the independent consumer, equals the source table. */
Test(avro_e2e, kill9_between_register_and_send, .timeout = 900, .fini = e2e_kill_children)
{
    av_run r;
    memset(&r, 0, sizeof r);
    registry();
    MYSQL *m = e2e_mysql();
    tb_itest_unique(r.db, sizeof r.db, "avkill");
    const char *db = r.db;
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, a VARCHAR(10))", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1, '1'), (2, '2'), (3, '3')", db);
    run_start(&r, "t", "ddl.alter.policy=warn\n");
    char topic[256], subject[300];
    snprintf(topic, sizeof topic, "%s.%s.t", db, db);
    snprintf(subject, sizeof subject, "%s-value", topic);
    json_decref(consume_at_least(topic, 3, &r));
    unsigned long id1 = logged_schema_id(r.log, subject);
    cr_assert_gt(id1, 0, "no schema id logged for %s; see %s", subject, r.log);
    run_stop(&r);

    /* streaming with the hook: the first registration of the value subject in this run is the
     * ALTERed table's version 2 (version 1's rows are all committed, and no row of version 1
     * comes before the ALTER: the run would register version 1 again, its id kept per run) */
    cr_assert_eq(setenv("TB_TEST_AVRO_STOP_AFTER_REGISTER", subject, 1), 0);
    run_again(&r);
    cr_assert_eq(unsetenv("TB_TEST_AVRO_STOP_AFTER_REGISTER"), 0);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN b INT", db);
    e2e_sql(m, "INSERT INTO %s.t SELECT seq, CAST(seq AS CHAR), seq * 10 FROM %s.seq_5_to_24", db, db);
    for (int i = 25; i <= 34; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, '%d', %d)", db, i, i, i);
    /* stopped right after the registration (SIGSTOP), or the test fails */
    long long deadline = tb_itest_now_ms() + 180000;
    int st = 0;
    for (;;) {
        pid_t w = waitpid(r.pid, &st, WNOHANG | WUNTRACED);
        cr_assert(w == 0 || (w == r.pid && WIFSTOPPED(st)), "tributary ended instead of stopping at the hook "
                  "(status %d); see %s", st, r.log);
        if (w == r.pid)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "tributary did not stop after registering %s; see %s", subject,
                  r.log);
        usleep(20000);
    }
    unsigned long id2 = logged_schema_id(r.log, subject);
    cr_assert(id2 > 0 && id2 != id1, "version 2 of %s: id %lu (version 1: %lu); see %s", subject, id2, id1, r.log);
    cr_assert_eq(kill(r.pid, SIGKILL), 0);
    cr_assert_eq(e2e_wait(r.pid, 60000), -1, "tributary did not die of SIGKILL; see %s", r.log);
    r.pid = 0;
    /* registered, nothing of version 2 sent: the snapshot's 3 rows */
    cr_expect_eq(topic_messages(topic), 3, "messages on the topic at the kill");
    json_t *vers = subject_versions(subject);
    cr_expect_eq(json_array_size(vers), 2, "versions of %s at the kill: %zu", subject, json_array_size(vers));
    json_decref(vers);

    /* more changes while it is down, then the restart without the hook */
    e2e_sql(m, "UPDATE %s.t SET a = 'x', b = -1 WHERE id IN (1, 5, 30)", db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id = 2", db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (35, '35', 35)", db);
    run_again(&r);
    /* 3 r + 30 c + 3 u + (d, tombstone) + 1 c = 39 at least (at least once: the killed run's
     * transactions may come again) */
    json_t *msgs = NULL;
    deadline = tb_itest_now_ms() + 300000;
    for (;;) {
        msgs = consume_at_least(topic, 39, &r);
        json_t *state = topic_state(msgs);
        size_t rows = json_object_size(state);
        json_decref(state);
        if (rows == 33)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "the topic holds %zu rows, the source 33; see %s", rows, r.log);
        json_decref(msgs);
        usleep(500000);
    }
    static const char *const cols[] = {"a", "b", NULL};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT id, a, b FROM %s.t ORDER BY id", db);
    expect_state(m, msgs, sql, cols, "t");
    expect_wire_ids(msgs);
    /* every message of version 2 carries the id registered before the kill */
    size_t i, v2 = 0;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        json_t *after = json_object_get(json_object_get(msg, "value"), "after");
        if (json_is_object(after) && json_object_get(after, "b")) {
            v2++;
            cr_expect_eq(json_integer_value(json_object_get(msg, "value_schema_id")), (json_int_t)id2,
                         "message %zu: schema id %lld, registered before the kill %lu", i,
                         (long long)json_integer_value(json_object_get(msg, "value_schema_id")), id2);
        }
    }
    cr_expect_geq(v2, 34, "messages of version 2: %zu", v2);
    json_decref(msgs);
    cr_expect_eq(logged_schema_id(r.log, subject), id2, "the restarted run's id for %s; see %s", subject, r.log);
    vers = subject_versions(subject);
    cr_expect_eq(json_array_size(vers), 2, "versions of %s after the restart: %zu (the same schema registered "
                 "twice must keep its version)", subject, json_array_size(vers));
    json_decref(vers);
    run_stop(&r);
    mysql_close(m);
    e2e_rmtree(r.dir);
}
