/*
 * e2e_tables.h: helpers of the end-to-end tests that compare a MySQL/MariaDB
 * table with its topic and its cache (tests/e2e/test_e2e_statements.c,
 * test_e2e_mysql.c). Header-only, for one Criterion executable.
 *
 *   wait_caught_up(m, status, pid, log) the committed GTID reaches the server's
 *   st_setup(r, tag, extra)            a database name, a folder and a Kafka run config
 *   st_start(r), st_log_count(r, s)    start the run; count a text in its log
 *   st_assert_equal(r, m, table, ...)  source, topic read as a KTable and cache hold the same rows
 *   st_schema_record(r, table)         the latest schema record (Jansson)
 *   st_schema_each(r, table, fn, o)    each schema record of a table, in order
 *   st_topic_each(topic, fn, o)        each message of a topic
 *   st_cache_build(r)                  tributary cache --until-caught-up
 */
#ifndef E2E_TABLES_H
#define E2E_TABLES_H

#include <sys/stat.h>

#include <jansson.h>
#include <sqlite3.h>

#include "e2e_util.h"

/* Poll the status file until the committed GTID equals the server's (read
 * again each time: the connector's own signalling rows move it too). */
static inline void wait_caught_up(MYSQL *m, const char *status, pid_t pid, const char *log)
{
    char want[256], got[256] = "";
    long long deadline = tb_itest_now_ms() + 60000;
    for (;;) {
        e2e_server_gtid(m, want, sizeof want);
        if (e2e_status_gtid(status, got, sizeof got) && strcmp(got, want) == 0)
            break;
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "committed %s, server %s; see %s", got, want, log);
        usleep(50000);
    }
}

typedef struct st_run {
    char db[96], dir[256], cfg[320], log[320], status[320], cache[320];
    char state[400]; /* the incremental-snapshot state: <folder of offsets.file>/<name>.incsnap */
    pid_t pid;
} st_run;

/* A unique database name (the connector's name too) and its folder under /tmp with the run's
 * file names in it; the configuration is the caller's to write. */
static inline void st_paths(st_run *r, const char *tag)
{
    memset(r, 0, sizeof(*r));
    tb_itest_unique(r->db, sizeof r->db, tag);
    snprintf(r->dir, sizeof r->dir, "/tmp/%s", r->db);
    cr_assert_eq(mkdir(r->dir, 0700), 0);
    snprintf(r->cfg, sizeof r->cfg, "%s/run.properties", r->dir);
    snprintf(r->log, sizeof r->log, "%s/run.log", r->dir);
    snprintf(r->status, sizeof r->status, "%s/status.json", r->dir);
    snprintf(r->cache, sizeof r->cache, "%s/cache.db", r->dir);
    snprintf(r->state, sizeof r->state, "%s/%s.incsnap", r->dir, r->db);
}

static inline void st_setup(st_run *r, const char *tag, const char *extra)
{
    st_paths(r, tag);
    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=^%s[.]\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=kafka\noffsets.commit.interval.ms=100\nstatus.file=%s\ncache.path=%s\n"
            "snapshot.mode=initial\nheartbeat.interval.ms=100\ntopic.partitions=3\n%s",
            r->db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            7000 + (unsigned)getpid() % 1000, r->db, r->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), r->status,
            r->cache, extra ? extra : "");
    fclose(f);
}

/* db.name (id INT PRIMARY KEY, v VARCHAR(20), n INT) with rows 1..nrows: (i, '<prefix>i', i). */
static inline void st_table(MYSQL *m, const char *db, const char *name, const char *prefix, int nrows)
{
    e2e_sql(m, "CREATE TABLE %s.%s (id INT PRIMARY KEY, v VARCHAR(20), n INT)", db, name);
    for (int i = 1; i <= nrows; i++)
        e2e_sql(m, "INSERT INTO %s.%s VALUES (%d, '%s%d', %d)", db, name, i, prefix, i, i);
}

/* SIGTERM, then the run must exit 0 with a log free of WARN and ERROR lines. */
static inline void st_stop(st_run *r)
{
    kill(r->pid, SIGTERM);
    int rc = e2e_wait(r->pid, 60000);
    cr_assert_eq(rc, 0, "tributary run did not stop cleanly (status %d); see %s", rc, r->log);
    e2e_assert_clean_log(r->log);
}

static inline void st_start(st_run *r)
{
    const char *args[] = {"run", "--config", r->cfg, NULL};
    r->pid = e2e_spawn(args, r->log);
}

/* Occurrences of needle in the run log. */
static inline size_t st_log_count(const st_run *r, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    size_t n = e2e_slurp(r->log, &b) ? e2e_count_text(tb_buf_cstr(&b), needle) : 0;
    tb_buf_free(&b);
    return n;
}

/* Wait until needle is in the run log, the run up all along, for at most ms; what: the failure's
 * words ("the RENAME's snapshot was not queued"). */
static inline void st_wait_log(const st_run *r, const char *needle, long long ms, const char *what)
{
    long long deadline = tb_itest_now_ms() + ms;
    while (st_log_count(r, needle) < 1) {
        cr_assert(tb_itest_now_ms() < deadline, "%s in %lld s; see %s", what, ms / 1000, r->log);
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        usleep(2000);
    }
}

/* Rows of db.table as sorted "c1|c2|..\n" lines, from the source. */
static inline void st_source_rows(MYSQL *m, const char *db, const char *table, const char *cols, tb_buf *out)
{
    tb_buf q;
    tb_buf_init(&q, 0);
    tb_buf_printf(&q, "SELECT %s FROM %s.%s ORDER BY id", cols, db, table);
    e2e_query_text(m, tb_buf_cstr(&q), out);
    tb_buf_free(&q);
    tb_buf_putc(out, '\0');
    out->len--;
}

/* One JSON value as the source prints it ("\N" for null). */
static inline void st_cell(json_t *v, tb_buf *out)
{
    if (!v || json_is_null(v))
        tb_buf_puts(out, "\\N");
    else if (json_is_string(v))
        tb_buf_puts(out, json_string_value(v));
    else if (json_is_integer(v))
        tb_buf_printf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) /* the tests' doubles are exact with few digits: %.17g gives their text */
        tb_buf_printf(out, "%.17g", json_real_value(v));
    else if (json_is_true(v) || json_is_false(v)) /* BIT(1) */
        tb_buf_puts(out, json_is_true(v) ? "1" : "0");
    else if (json_is_array(v) && (json_array_size(v) == 0 || json_is_string(json_array_get(v, 0)))) {
        /* a SET: its labels, as the server prints them ("a,c"; none: "") */
        for (size_t i = 0; i < json_array_size(v); i++) {
            cr_assert(json_is_string(json_array_get(v, i)), "an array of other than strings");
            tb_buf_printf(out, "%s%s", i ? "," : "", json_string_value(json_array_get(v, i)));
        }
    } else { /* a JSON column's value: compact, keys in order */
        char *j = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        cr_assert_not_null(j);
        tb_buf_puts(out, j);
        free(j);
    }
}

/* "op":"t" records seen by st_topic_table. */
static int st_truncates __attribute__((unused));

/* Whether the broker has the topic (with partitions). */
static inline bool st_topic_exists(const char *topic)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    bool ok = rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
              md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[0].partition_cnt > 0;
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return ok;
}

/* The topic read as a KTable: for every key whose latest record is not a
 * tombstone, the after image's columns cols[] as "c1|c2|..\n", sorted by id
 * (the keys are {"id":N}; values are parsed with Jansson). */
static inline void st_topic_table(const char *topic, const char *const *cols, tb_buf *out)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "e2e-statements", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(md->topics[0].err, RD_KAFKA_RESP_ERR_NO_ERROR, "topic %s: %s", topic,
                 rd_kafka_err2str(md->topics[0].err));
    /* read each partition to its high watermark as it is now, or to its end-of-partition event
     * (a transaction marker may be its last offset), counted once per partition: librdkafka
     * may send that event again after a refetch, and counting each one ended the read before
     * another partition's records were read */
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    int np = md->topics[0].partition_cnt, left = 0;
    int64_t hi[64];
    cr_assert(np <= 64, "topic %s has %d partitions", topic, np);
    for (int p = 0; p < np; p++) {
        int32_t id = md->topics[0].partitions[p].id;
        int64_t lo = 0;
        cr_assert(id >= 0 && id < 64);
        rd_kafka_resp_err_t werr;
        long long wdeadline = tb_itest_now_ms() + 30000; /* a consumer just made may not know the leader */
        while ((werr = rd_kafka_query_watermark_offsets(rk, topic, id, &lo, &hi[id], 5000)) != RD_KAFKA_RESP_ERR_NO_ERROR &&
               tb_itest_now_ms() < wdeadline)
            rd_kafka_poll(rk, 100);
        cr_assert_eq(werr, RD_KAFKA_RESP_ERR_NO_ERROR, "topic %s [%d]: watermarks: %s", topic, (int)id,
                     rd_kafka_err2str(werr));
        if (hi[id] > lo) {
            rd_kafka_topic_partition_list_add(parts, topic, id)->offset = RD_KAFKA_OFFSET_BEGINNING;
            left++;
        }
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (left > 0)
        cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    json_t *table = json_object(); /* key text -> row line */
    long long deadline = tb_itest_now_ms() + 60000;
    while (left > 0) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 60 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        cr_assert(m->partition >= 0 && m->partition < 64, "partition %d", (int)m->partition);
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) { /* the end (a transaction marker may be last) */
            if (hi[m->partition] >= 0) {
                hi[m->partition] = -1; /* once per partition, however many such events come */
                left--;
            }
            rd_kafka_message_destroy(m);
            continue;
        }
        if (!m->err && hi[m->partition] >= 0 && m->offset >= hi[m->partition] - 1) {
            hi[m->partition] = -1; /* this partition's last record as of the start: read below */
            left--;
        } else if (!m->err && hi[m->partition] < 0) { /* written after the start: not ours */
            rd_kafka_message_destroy(m);
            continue;
        }
        cr_assert(!m->err, "consume %s: %s", topic, rd_kafka_message_errstr(m));
        cr_assert_not_null(m->key, "a record without a key in %s", topic);
        char *key = strndup(m->key, m->key_len);
        if (!m->payload) {
            json_object_del(table, key);
        } else {
            json_error_t je;
            json_t *v = json_loadb(m->payload, m->len, 0, &je);
            cr_assert_not_null(v, "value in %s is not JSON: %s", topic, je.text);
            const char *op = json_string_value(json_object_get(v, "op"));
            cr_assert_not_null(op, "value without op: %.*s", (int)m->len, (const char *)m->payload);
            json_t *after = json_object_get(v, "after");
            if (strcmp(op, "t") == 0) { /* the truncate record: key {}, no images, then its tombstone */
                cr_assert(m->key_len == 2 && memcmp(m->key, "{}", 2) == 0, "truncate record with key %s", key);
                cr_assert(json_is_null(after) && json_is_null(json_object_get(v, "before")));
                st_truncates++;
            } else if (strcmp(op, "d") == 0) {
                json_t *before = json_object_get(v, "before");
                cr_assert(json_is_object(before), "delete without a before image");
                json_t *k = json_loadb(m->key, m->key_len, 0, &je);
                cr_assert(json_is_object(k) && json_object_size(k) > 0, "delete with key %s", key);
                const char *kn;
                json_t *kv;
                json_object_foreach(k, kn, kv) /* every key member (of the key the record has) */
                    cr_assert(json_equal(json_object_get(before, kn), kv),
                              "delete's before image does not hold its key %s", key);
                json_decref(k);
                /* the envelope delete is followed by a tombstone; the KTable reads that one */
            } else {
                cr_assert(json_is_object(after), "%s event without after", op);
                tb_buf line;
                tb_buf_init(&line, 0);
                for (size_t i = 0; cols[i]; i++) {
                    if (i)
                        tb_buf_putc(&line, '|');
                    st_cell(json_object_get(after, cols[i]), &line);
                }
                json_object_set_new(table, key, json_string(tb_buf_cstr(&line)));
                tb_buf_free(&line);
            }
            json_decref(v);
        }
        free(key);
        rd_kafka_message_destroy(m);
    }
    size_t n = json_object_size(table), i = 0;
    char **lines = calloc(n ? n : 1, sizeof(char *));
    const char *k;
    json_t *v;
    json_object_foreach(table, k, v) lines[i++] = strdup(json_string_value(v));
    /* sort by id: the lines start with the id */
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++)
            if (atoll(lines[b]) < atoll(lines[a])) {
                char *t = lines[a];
                lines[a] = lines[b];
                lines[b] = t;
            }
    for (i = 0; i < n; i++) {
        tb_buf_puts(out, lines[i]);
        tb_buf_putc(out, '\n');
        free(lines[i]);
    }
    free(lines);
    tb_buf_putc(out, '\0');
    out->len--;
    json_decref(table);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* Rows of a cache table as "c1|c2|..\n" ordered by id. */
static inline void st_cache_rows(const char *path, const char *table, const char *cols, tb_buf *out)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    tb_buf q;
    tb_buf_init(&q, 0);
    tb_buf_printf(&q, "SELECT %s FROM \"%s\" ORDER BY id", cols, table);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, tb_buf_cstr(&q), -1, &st, NULL), SQLITE_OK, "%s: %s", tb_buf_cstr(&q),
                 sqlite3_errmsg(db));
    tb_buf_free(&q);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            if (i)
                tb_buf_putc(out, '|');
            const unsigned char *v = sqlite3_column_text(st, i);
            tb_buf_puts(out, v ? (const char *)v : "\\N");
        }
        tb_buf_putc(out, '\n');
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    tb_buf_putc(out, '\0');
    out->len--;
}

static inline void st_topic_each(const char *topic, void (*fn)(const char *, size_t, const char *, size_t, void *),
                                 void *opaque);

/* One record as "key op\n" (op of the value, or "tombstone"), for st_assert_equal's report. */
static inline void st_record_line(const char *key, size_t klen, const char *value, size_t vlen, void *opaque)
{
    tb_buf *out = opaque;
    const char *op = "tombstone";
    json_t *v = value ? json_loadb(value, vlen, 0, NULL) : NULL;
    if (value)
        op = v && json_string_value(json_object_get(v, "op")) ? json_string_value(json_object_get(v, "op")) : "?";
    if (out->len < 14000)
        tb_buf_printf(out, "%.*s %s\n", (int)klen, key ? key : "", op);
    json_decref(v);
}

/* What a failed comparison reports besides the rows: the run log (its first 8000 bytes, lines
 * cut at 300) and the topic's records in order (a CI run keeps neither the folder nor the topic). */
static inline void st_report(const st_run *r, const char *topic, tb_buf *out)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_buf_printf(out, "run log %s:\n", r->log);
    if (e2e_slurp(r->log, &b)) {
        for (const char *l = tb_buf_cstr(&b); *l;) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            if (out->len < 8000)
                tb_buf_printf(out, "%.*s\n", (int)(n > 300 ? 300 : n), l);
            l += n + (nl ? 1 : 0);
        }
    }
    tb_buf_printf(out, "records of %s (key op), each partition in order:\n", topic);
    st_topic_each(topic, st_record_line, out);
    tb_buf_free(&b);
}

/* The source, the topic as a KTable and the cache hold the same rows of db.table. */
static inline void st_assert_equal(const st_run *r, MYSQL *m, const char *table, const char *const *cols,
                            const char *colsql)
{
    char topic[256], ctable[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, r->db, table);
    snprintf(ctable, sizeof ctable, "%s.%s", r->db, table);
    tb_buf src, top, cache;
    tb_buf_init(&src, 0);
    tb_buf_init(&top, 0);
    tb_buf_init(&cache, 0);
    st_source_rows(m, r->db, table, colsql, &src);
    st_topic_table(topic, cols, &top);
    st_cache_rows(r->cache, ctable, colsql, &cache);
    fprintf(stderr, "e2e_statements: %s: source %zu bytes, topic %zu, cache %zu\n", table, src.len, top.len,
            cache.len);
    tb_buf rep;
    tb_buf_init(&rep, 0);
    if (strcmp(tb_buf_cstr(&top), tb_buf_cstr(&src)) != 0 || strcmp(tb_buf_cstr(&cache), tb_buf_cstr(&src)) != 0)
        st_report(r, topic, &rep);
    cr_expect_str_eq(tb_buf_cstr(&top), tb_buf_cstr(&src),
                     "%s: topic as a KTable differs from the source (folder %s):\ntopic:\n%.4000ssource:\n%.4000s%s", table,
                     r->dir, tb_buf_cstr(&top), tb_buf_cstr(&src), tb_buf_cstr(&rep));
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src),
                     "%s: cache differs from the source (folder %s):\ncache:\n%.4000ssource:\n%.4000s", table, r->dir,
                     tb_buf_cstr(&cache), tb_buf_cstr(&src));
    tb_buf_free(&rep);
    tb_buf_free(&src);
    tb_buf_free(&top);
    tb_buf_free(&cache);
}

/* fn(key, klen, value, vlen, opaque) for every message of topic, all partitions from their
 * beginning to their end (a key's messages in order; value NULL for a tombstone). */
static inline void st_topic_each(const char *topic, void (*fn)(const char *, size_t, const char *, size_t, void *),
                                 void *opaque)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "e2e-statements", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(md->topics[0].err, RD_KAFKA_RESP_ERR_NO_ERROR, "topic %s: %s", topic,
                 rd_kafka_err2str(md->topics[0].err));
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    for (int p = 0; p < md->topics[0].partition_cnt; p++) /* a key's records are in one partition, in order */
        rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[p].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = tb_itest_now_ms() + 60000;
    for (int left = parts->cnt; left > 0;) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 60 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            left--;
            continue;
        }
        cr_assert(!m->err, "consume %s: %s", topic, rd_kafka_message_errstr(m));
        fn(m->key, m->key_len, m->payload, m->len, opaque);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* fn(record, opaque) for each record of table in the schema topic, in order (NULL: a tombstone). */
typedef struct st_schema_walk {
    const st_run *r;
    const char *table;
    void (*fn)(json_t *rec, void *opaque);
    void *opaque;
} st_schema_walk;

static inline void st_schema_walk_one(const char *key, size_t klen, const char *value, size_t vlen, void *opaque)
{
    st_schema_walk *w = opaque;
    json_error_t je;
    json_t *k = json_loadb(key, klen, 0, &je);
    cr_assert_not_null(k, "schema key is not JSON: %s", je.text);
    if (strcmp(json_string_value(json_object_get(k, "db")), w->r->db) == 0 &&
        strcmp(json_string_value(json_object_get(k, "table")), w->table) == 0) {
        json_t *rec = value ? json_loadb(value, vlen, 0, &je) : NULL;
        cr_assert(!value || rec, "schema record is not JSON: %s", je.text);
        w->fn(rec, w->opaque);
        json_decref(rec);
    }
    json_decref(k);
}

static inline void st_schema_each(const st_run *r, const char *table, void (*fn)(json_t *rec, void *opaque),
                                  void *opaque)
{
    char topic[256];
    snprintf(topic, sizeof topic, "%s.schema", r->db);
    st_schema_walk w = {r, table, fn, opaque};
    st_topic_each(topic, st_schema_walk_one, &w);
}

static inline void st_schema_keep(json_t *rec, void *opaque)
{
    json_t **latest = opaque;
    json_decref(*latest);
    *latest = json_incref(rec);
}

/* The latest schema record of db.table in <db>.schema (topic.prefix is the test's database name),
 * parsed by Jansson; NULL when there is none, or the latest is a tombstone. */
static inline json_t *st_schema_record(const st_run *r, const char *table)
{
    json_t *latest = NULL;
    st_schema_each(r, table, st_schema_keep, &latest);
    return latest;
}

/* The latest schema record of table says it was dropped (no columns). */
static inline void st_expect_dropped(const st_run *r, const char *table)
{
    json_t *rec = st_schema_record(r, table);
    cr_assert_not_null(rec, "no schema record of %s", table);
    cr_expect(json_is_true(json_object_get(rec, "dropped")), "%s: the schema record does not say dropped", table);
    cr_expect_eq(json_array_size(json_object_get(rec, "columns")), 0);
    json_decref(rec);
}

/* The latest schema record of table says it was renamed from db.from. */
static inline void st_expect_renamed(const st_run *r, const char *table, const char *from)
{
    json_t *rec = st_schema_record(r, table);
    cr_assert_not_null(rec, "no schema record of %s", table);
    cr_expect(json_is_false(json_object_get(rec, "dropped")), "%s: dropped", table);
    json_t *rf = json_object_get(rec, "renamed_from");
    cr_expect(json_is_object(rf), "%s: the schema record does not say where it came from", table);
    cr_expect_str_eq(json_string_value(json_object_get(rf, "db")), r->db);
    cr_expect_str_eq(json_string_value(json_object_get(rf, "table")), from);
    cr_expect(json_array_size(json_object_get(rec, "columns")) > 0);
    json_decref(rec);
}

/* Whether the cache file has table name. */
static inline bool st_cache_has(const char *path, const char *name)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    bool has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return has;
}

/* A table gone from the source (dropped, or renamed away): its topic read as
 * a KTable holds no key, and the cache has no such table, or an empty one
 * (must_go: none at all). */
static inline void st_assert_gone(const st_run *r, const char *table, const char *const *cols, bool must_go)
{
    char topic[256], ctable[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, r->db, table);
    snprintf(ctable, sizeof ctable, "%s.%s", r->db, table);
    tb_buf top, cache;
    tb_buf_init(&top, 0);
    tb_buf_init(&cache, 0);
    st_topic_table(topic, cols, &top);
    cr_expect_str_eq(tb_buf_cstr(&top), "", "%s: the topic of a table gone from the source holds keys", table);
    bool has = st_cache_has(r->cache, ctable);
    cr_expect(!(must_go && has), "%s: the cache still has the table", table);
    if (has) {
        st_cache_rows(r->cache, ctable, "id", &cache);
        cr_expect_str_eq(tb_buf_cstr(&cache), "", "%s: the cache table of a table gone from the source has rows", table);
    }
    tb_buf_free(&top);
    tb_buf_free(&cache);
}

static inline void st_cache_build(const st_run *r)
{
    const char *cargs[] = {"cache", "--config", r->cfg, "--until-caught-up", NULL};
    char clog[400];
    snprintf(clog, sizeof clog, "%s/cache.log", r->dir);
    pid_t cp = e2e_spawn(cargs, clog);
    int rc = e2e_wait(cp, 120000);
    cr_assert_eq(rc, 0, "tributary cache --until-caught-up failed (status %d); see %s", rc, clog);
    e2e_assert_clean_log(clog);
}

#endif
