/*
 * Integration tests of `tributary cache` against the real broker of
 * scripts/testenv (TRIBUTARY_TEST_KAFKA; the tests fail without it). The
 * cache runs as a child process (the built binary), as a user runs it.
 *
 *   it/compacted_changelog: upserts, envelope-delete + tombstone, key changes
 *       on a topic with aggressive compaction; after the cleaner ran, the cache
 *       equals the expected table; `cache get` finds a live key (exit 0) and
 *       not a deleted one (exit 1); `cache status` says caught up
 *   it/kill9_resume: kill -9 during replay, restart: same table as an
 *       uninterrupted replay and the same number of applications (no batch
 *       applied twice)
 *   it/group_split: two instances in one consumer group (cooperative,
 *       cache.on.revoke=drop) split the partitions and together hold every row
 *   it/schema_add_column: a running cache gets schema version 2 (a new
 *       column) mid-stream: ALTER TABLE, old rows kept, new rows typed
 *   it/schema_incompatible_rebuilds: a type change mid-stream drops the table
 *       and replays its topic, with a WARN line naming the column
 *   it/replay_keeps_fetching: a replay of 100000 messages through a consumer
 *       queue that fills up after every fetch (kafka.queued.min.messages=300,
 *       16 KiB fetches): librdkafka 2.0 alone resumes such a paused fetcher on
 *       its broker thread's one-second tick, and the replay takes over 35 s;
 *       cache/cache_nudge.c wakes it as soon as the queue drained: 1.6 s (ASan
 *       build; a nudge that waited for a 10 ms rate limit took 15-18 s). The
 *       test checks the table and that nudges were sent (its debug log line),
 *       not the time: speed is bench/cache_bench.sh's business.
 */
#include "it_util.h"
#include "json_oracle.h"

TestSuite(it, .timeout = 600);

#define SCHEMA_V1                                                                                                      \
    "{\"db\":\"db1\",\"table\":\"t\",\"version\":1,\"names_known\":true,\"columns\":["                                 \
    "{\"name\":\"id\",\"type\":\"bigint\",\"source_type\":\"bigint(20)\",\"nullable\":false,\"unsigned\":false,"       \
    "\"pk\":1},"                                                                                                       \
    "{\"name\":\"v\",\"type\":\"varchar\",\"source_type\":\"varchar(40)\",\"nullable\":true,\"unsigned\":false,"       \
    "\"pk\":0},"                                                                                                       \
    "{\"name\":\"n\",\"type\":\"int\",\"source_type\":\"int(11)\",\"nullable\":true,\"unsigned\":false,\"pk\":0}"     \
    "],\"primary_key\":[\"id\"]}"

static void put_schema(rd_kafka_t *rk, const char *prefix, bool v2)
{
    char topic[128];
    snprintf(topic, sizeof(topic), "%s.schema", prefix);
    json_t *sch = jo_parse_s(SCHEMA_V1);
    if (v2) { /* version 2 adds "color" */
        json_object_set_new(sch, "version", json_integer(2));
        json_array_append_new(json_object_get(sch, "columns"),
                              json_pack("{s:s, s:s, s:s, s:b, s:i}", "name", "color", "type", "varchar", "source_type",
                                        "varchar(9)", "nullable", 1, "pk", 0));
    }
    char *val = jo_dump_take(sch);
    it_produce(rk, topic, 0, "{\"db\":\"db1\",\"table\":\"t\"}", val);
    free(val);
}

static void env_row(char *buf, size_t n, const char *op, long id, long i, const char *color)
{
    char row[256];
    if (color)
        snprintf(row, sizeof(row), "{\"id\":%ld,\"v\":\"s%ld-%ld\",\"n\":%ld,\"color\":\"%s\"}", id, id, i, i, color);
    else
        snprintf(row, sizeof(row), "{\"id\":%ld,\"v\":\"s%ld-%ld\",\"n\":%ld}", id, id, i, i);
    bool del = op[0] == 'd';
    snprintf(buf, n,
             "{\"before\":%s,\"after\":%s,\"source\":{\"connector\":\"mariadb\",\"db\":\"db1\",\"table\":\"t\"},"
             "\"op\":\"%s\",\"ts_ms\":1,\"transaction\":null}",
             del ? row : "null", del ? "null" : row, op);
}

/* The changelog generator: a deterministic mix of creates, updates, deletes and key changes. */
typedef struct model {
    long *n; /* value of n per id, -1 = no row */
    long ids;
    long produced;
} model;

static void upsert(rd_kafka_t *rk, const char *topic, model *m, long id, long i)
{
    char key[64], val[1024];
    snprintf(key, sizeof(key), "{\"id\":%ld}", id);
    env_row(val, sizeof(val), m->n[id] < 0 ? "c" : "u", id, i, NULL);
    it_produce(rk, topic, -1, key, val);
    m->n[id] = i;
    m->produced++;
}

static void delete_row(rd_kafka_t *rk, const char *topic, model *m, long id, long i)
{
    char key[64], val[1024];
    snprintf(key, sizeof(key), "{\"id\":%ld}", id);
    env_row(val, sizeof(val), "d", id, m->n[id], NULL);
    it_produce(rk, topic, -1, key, val);
    it_produce(rk, topic, -1, key, NULL);
    m->n[id] = -1;
    m->produced += 2;
    (void)i;
}

static void changelog(rd_kafka_t *rk, const char *topic, model *m, long ops, long keys, unsigned seed)
{
    long next_new = keys;
    for (long i = 0; i < ops; i++) {
        seed = seed * 1103515245u + 12345u;
        long id = (long)((seed >> 8) % (unsigned)keys);
        unsigned r = (seed >> 20) % 10;
        if (m->n[id] < 0 || r < 6) {
            upsert(rk, topic, m, id, i);
        } else if (r < 8) {
            delete_row(rk, topic, m, id, i);
        } else if (next_new < m->ids) { /* primary-key change id -> next_new */
            long n = m->n[id];
            delete_row(rk, topic, m, id, i);
            upsert(rk, topic, m, next_new++, n);
        }
    }
}

static char *expected_dump(const model *m)
{
    size_t cap = 1 << 20, len = 0;
    char *out = calloc(1, cap);
    for (long id = 0; id < m->ids; id++)
        if (m->n[id] >= 0) {
            if (len + 128 >= cap)
                out = realloc(out, cap *= 2);
            len += (size_t)snprintf(out + len, cap - len, "%ld|s%ld-%ld|%ld\n", id, id, m->n[id], m->n[id]);
        }
    return out;
}

static char *cache_dump(const char *db)
{
    return it_sql_dump(db, "SELECT id, v, n FROM \"db1.t\" ORDER BY id");
}

static pid_t start_cache(const char *prefix, const char *db, const char *log, const char *const *extra)
{
    char topics[128];
    snprintf(topics, sizeof(topics), "^%s\\.", prefix);
    const char *args[32] = {"--brokers", it_brokers(), "--topics", topics, "--prefix", prefix, "--db", db,
                            "--set", "log.level=info"};
    int n = 10;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    return it_spawn(log, args);
}

static void paths(const char *prefix, const char *tag, char *db, char *log)
{
    snprintf(db, 256, "/tmp/%s-%s.db", prefix, tag);
    snprintf(log, 256, "/tmp/%s-%s.log", prefix, tag);
    cache_tmp_rm(db);
    unlink(log);
}

/* A test's topics: <prefix>.schema (1 partition, schema version 1 written) and
 * <prefix>.db1.t (parts partitions, aggressive compaction when asked). Fills
 * prefix[64], topic[128] and, when not NULL, stopic[128]; returns the producer
 * (the caller destroys it). */
static rd_kafka_t *setup_topics(const char *what, int parts, int aggressive, char *prefix, char *topic, char *stopic)
{
    char st[128];
    it_prefix(prefix, 64, what);
    snprintf(topic, 128, "%s.db1.t", prefix);
    snprintf(st, sizeof(st), "%s.schema", prefix);
    if (stopic)
        memcpy(stopic, st, sizeof(st));
    rd_kafka_t *rk = it_producer();
    it_create_topic(rk, st, 1, aggressive);
    it_create_topic(rk, topic, parts, aggressive);
    put_schema(rk, prefix, false);
    return rk;
}

/* A model of ids keys, none with a row yet (the caller frees m.n). */
static model new_model(long ids)
{
    model m = {calloc((size_t)ids, sizeof(long)), ids, 0};
    for (long i = 0; i < ids; i++)
        m.n[i] = -1;
    return m;
}

Test(it, compacted_changelog)
{
    char prefix[64], topic[128], db[256], log[256];
    rd_kafka_t *rk = setup_topics("c", 3, 1, prefix, topic, NULL);
    model m = new_model(2000);
    changelog(rk, topic, &m, 6000, 400, 7);
    it_flush(rk);
    /* keep segments rolling (a tombstone of a key that never existed on every
     * partition) until the cleaner has compacted most of the history away */
    double deadline = it_now() + 180;
    long count = 0;
    for (;;) {
        for (int p = 0; p < 3; p++)
            it_produce(rk, topic, p, "{\"id\":-1}", NULL);
        it_flush(rk);
        count = it_count_records(topic, 3);
        if (count < m.produced / 3)
            break;
        cr_assert(it_now() < deadline, "compaction did not happen: %ld of %ld records left", count, m.produced);
        it_nap(500);
    }
    cr_log_info("compaction: %ld records produced, %ld left", m.produced, count);
    paths(prefix, "c", db, log);
    const char *extra[] = {"--until-caught-up", NULL};
    cr_assert_eq(it_wait(start_cache(prefix, db, log, extra), 120), 0, "cache failed, see %s", log);
    char *want = expected_dump(&m), *got = cache_dump(db);
    cr_expect_str_eq(got, want);
    cr_expect(strlen(want) > 100);
    /* cache get: a live key prints its row, a deleted key exits 1 */
    long live = -1, dead = -1;
    for (long id = 0; id < 400; id++) {
        if (m.n[id] >= 0 && live < 0)
            live = id;
        if (m.n[id] < 0 && dead < 0)
            dead = id;
    }
    char cmd[1024], out[300], line[512] = "", want_row[256];
    snprintf(out, sizeof(out), "%s.get", db);
    snprintf(cmd, sizeof(cmd), "%s/app/tributary cache get --db %s --table db1.t --key '{\"id\":%ld}' > %s",
             TB_BINARY_DIR, db, live, out);
    cr_expect_eq(WEXITSTATUS(system(cmd)), 0);
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(line, sizeof(line), f));
    fclose(f);
    snprintf(want_row, sizeof(want_row), "{\"id\":%ld,\"v\":\"s%ld-%ld\",\"n\":%ld}\n", live, live, m.n[live],
             m.n[live]);
    cr_expect_str_eq(line, want_row);
    snprintf(cmd, sizeof(cmd), "%s/app/tributary cache get --db %s --table db1.t --key '{\"id\":%ld}' 2>/dev/null",
             TB_BINARY_DIR, db, dead);
    cr_expect_eq(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof(cmd), "%s/app/tributary cache status --db %s --brokers %s | grep -q 'caught up with the start watermarks: yes'",
             TB_BINARY_DIR, db, it_brokers());
    cr_expect_eq(WEXITSTATUS(system(cmd)), 0);
    unlink(out);
    free(want);
    free(got);
    free(m.n);
    rd_kafka_destroy(rk);
    cache_tmp_rm(db);
    unlink(log); /* kept when an assertion stops the test (its message names it) */
}

Test(it, kill9_resume)
{
    char prefix[64], topic[128], dba[256], loga[256], dbb[256], logb[256];
    rd_kafka_t *rk = setup_topics("k", 3, 0, prefix, topic, NULL);
    model m = new_model(40000);
    changelog(rk, topic, &m, 150000, 30000, 11);
    it_flush(rk);
    long long total = m.produced; /* table messages (schema records are not counted) */
    /* the reference: one uninterrupted replay */
    paths(prefix, "a", dba, loga);
    const char *extra[] = {"--until-caught-up", "--set", "cache.batch.size=200", NULL};
    cr_assert_eq(it_wait(start_cache(prefix, dba, loga, extra), 300), 0, "cache failed, see %s", loga);
    long long applied_a = it_sql_int(dba, "SELECT value FROM _tributary_state WHERE key='applied'");
    cr_expect_eq(applied_a, total, "uninterrupted replay applied %lld of %lld", applied_a, total);
    /* kill -9 in the middle of a replay, then restart */
    paths(prefix, "b", dbb, logb);
    pid_t pid = start_cache(prefix, dbb, logb, extra);
    double deadline = it_now() + 120;
    long long at_kill;
    for (;;) {
        at_kill = it_sql_int(dbb, "SELECT value FROM _tributary_state WHERE key='applied'");
        if (at_kill > total / 5)
            break;
        cr_assert(it_now() < deadline, "the replay did not start (see %s)", logb);
        it_nap(10);
    }
    kill(pid, SIGKILL);
    cr_assert_eq(it_wait(pid, 30), -SIGKILL);
    at_kill = it_sql_int(dbb, "SELECT value FROM _tributary_state WHERE key='applied'");
    cr_log_info("killed after %lld of %lld applications were committed", at_kill, total);
    cr_assert(at_kill < total, "the replay had finished before the kill: the test proves nothing");
    cr_assert_eq(it_wait(start_cache(prefix, dbb, logb, extra), 300), 0, "restart failed, see %s", logb);
    char *a = cache_dump(dba), *b = cache_dump(dbb), *want = expected_dump(&m);
    cr_expect_str_eq(b, a);
    cr_expect_str_eq(a, want);
    long long applied_b = it_sql_int(dbb, "SELECT value FROM _tributary_state WHERE key='applied'");
    cr_expect_eq(applied_b, total, "committed batches were applied again (or skipped): %lld applications of %lld",
                 applied_b, total);
    free(a);
    free(b);
    free(want);
    free(m.n);
    rd_kafka_destroy(rk);
    cache_tmp_rm(dba);
    cache_tmp_rm(dbb);
    unlink(loga); /* kept when an assertion stops the test (its message names them) */
    unlink(logb);
}

Test(it, group_split)
{
    char prefix[64], topic[128], dba[256], loga[256], dbb[256], logb[256], group[96];
    rd_kafka_t *rk = setup_topics("g", 4, 0, prefix, topic, NULL);
    snprintf(group, sizeof(group), "%s-cache", prefix);
    model m = new_model(3000);
    changelog(rk, topic, &m, 5000, 2000, 3);
    it_flush(rk);
    long long live = 0, sum = 0;
    for (long id = 0; id < m.ids; id++)
        if (m.n[id] >= 0) {
            live++;
            sum += id;
        }
    paths(prefix, "a", dba, loga);
    paths(prefix, "b", dbb, logb);
    const char *extra[] = {"--mode", "group", "--group", group, "--set", "cache.on.revoke=drop", NULL};
    pid_t a = start_cache(prefix, dba, loga, extra);
    pid_t b = start_cache(prefix, dbb, logb, extra);
    double deadline = it_now() + 120;
    for (;;) {
        long long ca = it_sql_int(dba, "SELECT count(*) FROM \"db1.t\""),
                  cb = it_sql_int(dbb, "SELECT count(*) FROM \"db1.t\""),
                  sa = it_sql_int(dba, "SELECT total(id) FROM \"db1.t\""),
                  sb = it_sql_int(dbb, "SELECT total(id) FROM \"db1.t\""),
                  pa = it_sql_int(dba, "SELECT count(*) FROM _tributary_offsets WHERE topic LIKE '%.db1.t'"),
                  pb = it_sql_int(dbb, "SELECT count(*) FROM _tributary_offsets WHERE topic LIKE '%.db1.t'");
        if (ca > 0 && cb > 0 && ca + cb == live && sa + sb == sum && pa > 0 && pb > 0 && pa + pb == 4) {
            cr_log_info("group: instance A holds %lld rows (%lld partitions), B %lld rows (%lld partitions)", ca, pa,
                        cb, pb);
            break;
        }
        if (it_now() > deadline) {
            kill(a, SIGKILL);
            kill(b, SIGKILL);
            cr_assert_fail("the instances did not split the rows: A %lld rows/%lld parts, B %lld rows/%lld parts, want %lld "
                     "rows (logs %s %s)",
                     ca, pa, cb, pb, live, loga, logb);
        }
        it_nap(200);
    }
    /* every row is in exactly one of them */
    char *da = it_sql_dump(dba, "SELECT _partition FROM \"db1.t\" GROUP BY _partition");
    char *db = it_sql_dump(dbb, "SELECT _partition FROM \"db1.t\" GROUP BY _partition");
    for (char *p = strtok(da, "\n"); p; p = strtok(NULL, "\n")) {
        char pat[16];
        snprintf(pat, sizeof(pat), "%s\n", p);
        cr_expect(!strstr(db, pat), "partition %s in both instances", p);
    }
    free(da);
    free(db);
    kill(a, SIGTERM);
    kill(b, SIGTERM);
    cr_expect_eq(it_wait(a, 60), 0);
    cr_expect_eq(it_wait(b, 60), 0);
    free(m.n);
    rd_kafka_destroy(rk);
    cache_tmp_rm(dba);
    cache_tmp_rm(dbb);
    unlink(loga); /* kept when an assertion stops the test (its message names them) */
    unlink(logb);
}

Test(it, schema_add_column)
{
    char prefix[64], topic[128], db[256], log[256], key[64], val[1024];
    rd_kafka_t *rk = setup_topics("s", 2, 0, prefix, topic, NULL);
    for (long id = 0; id < 100; id++) {
        snprintf(key, sizeof(key), "{\"id\":%ld}", id);
        env_row(val, sizeof(val), "c", id, id, NULL);
        it_produce(rk, topic, -1, key, val);
    }
    it_flush(rk);
    paths(prefix, "s", db, log);
    pid_t pid = start_cache(prefix, db, log, NULL);
    double deadline = it_now() + 60;
    while (it_sql_int(db, "SELECT count(*) FROM \"db1.t\"") != 100) {
        cr_assert(it_now() < deadline, "first rows did not arrive (see %s)", log);
        it_nap(100);
    }
    /* version 2 adds "color"; the sink writes the schema record first */
    put_schema(rk, prefix, true);
    for (long id = 100; id < 150; id++) {
        snprintf(key, sizeof(key), "{\"id\":%ld}", id);
        env_row(val, sizeof(val), "c", id, id, "red");
        it_produce(rk, topic, -1, key, val);
    }
    it_flush(rk);
    deadline = it_now() + 60;
    while (it_sql_int(db, "SELECT count(*) FROM \"db1.t\" WHERE color='red'") != 50 ||
           it_sql_int(db, "SELECT count(*) FROM _tributary_columns WHERE tbl='db1.t' AND name='color' AND "
                          "type='varchar'") != 1) {
        cr_assert(it_now() < deadline, "the new column did not arrive (see %s)", log);
        it_nap(100);
    }
    cr_expect_eq(it_sql_int(db, "SELECT count(*) FROM \"db1.t\""), 150);
    cr_expect_eq(it_sql_int(db, "SELECT count(*) FROM \"db1.t\" WHERE color IS NULL"), 100);
    kill(pid, SIGTERM);
    cr_expect_eq(it_wait(pid, 60), 0);
    FILE *f = fopen(log, "r");
    char line[1024];
    bool altered = false;
    while (f && fgets(line, sizeof(line), f))
        altered = altered || strstr(line, "added column \"color\"");
    if (f)
        fclose(f);
    cr_expect(altered, "no ALTER TABLE log line in %s", log);
    rd_kafka_destroy(rk);
    cache_tmp_rm(db);
    unlink(log); /* kept when an assertion stops the test (its message names it) */
}

/* it/schema_incompatible_rebuilds: a running cache gets a schema record that changes a column's
 * type: the table is dropped and replayed from its topic, with a WARN line saying why. */
Test(it, schema_incompatible_rebuilds)
{
    char prefix[64], topic[128], stopic[128], db[256], log[256], key[64], val[2048];
    rd_kafka_t *rk = setup_topics("r", 2, 0, prefix, topic, stopic);
    for (long id = 0; id < 200; id++) {
        snprintf(key, sizeof(key), "{\"id\":%ld}", id);
        env_row(val, sizeof(val), "c", id, id, NULL);
        it_produce(rk, topic, -1, key, val);
    }
    it_flush(rk);
    paths(prefix, "r", db, log);
    pid_t pid = start_cache(prefix, db, log, NULL);
    double deadline = it_now() + 60;
    while (it_sql_int(db, "SELECT value FROM _tributary_state WHERE key='applied'") != 200) {
        cr_assert(it_now() < deadline, "first rows did not arrive (see %s)", log);
        it_nap(100);
    }
    /* version 2: "n" becomes a bigint */
    json_t *sch = jo_parse_s(SCHEMA_V1), *col = jo_find(json_object_get(sch, "columns"), "name", "n");
    cr_assert_not_null(col);
    json_object_set_new(sch, "version", json_integer(2));
    json_object_set_new(col, "type", json_string("bigint"));
    char *v2 = jo_dump_take(sch);
    it_produce(rk, stopic, 0, "{\"db\":\"db1\",\"table\":\"t\"}", v2);
    free(v2);
    it_flush(rk);
    deadline = it_now() + 60;
    while (it_sql_int(db, "SELECT value FROM _tributary_state WHERE key='applied'") != 400 ||
           it_sql_int(db, "SELECT count(*) FROM _tributary_columns WHERE tbl='db1.t' AND name='n' AND type='bigint'") !=
               1) {
        cr_assert(it_now() < deadline, "the table was not rebuilt (see %s)", log);
        it_nap(100);
    }
    cr_expect_eq(it_sql_int(db, "SELECT count(*) FROM \"db1.t\""), 200);
    kill(pid, SIGTERM);
    cr_expect_eq(it_wait(pid, 60), 0);
    FILE *f = fopen(log, "r");
    char line[1024];
    bool said = false;
    while (f && fgets(line, sizeof(line), f))
        said = said || (strstr(line, "WARN") && strstr(line, "rebuilding it from topic") &&
                        strstr(line, "column \"n\" changed type from int to bigint"));
    if (f)
        fclose(f);
    cr_expect(said, "no rebuild log line in %s", log);
    rd_kafka_destroy(rk);
    cache_tmp_rm(db);
    unlink(log); /* kept when an assertion stops the test (its message names it) */
}

Test(it, replay_keeps_fetching)
{
    char prefix[64], topic[128], db[256], log[256];
    rd_kafka_t *rk = setup_topics("f", 3, 0, prefix, topic, NULL);
    model m = new_model(20000);
    for (long i = 0; i < 100000; i++)
        upsert(rk, topic, &m, i % m.ids, i);
    it_flush(rk);
    paths(prefix, "a", db, log);
    const char *extra[] = {"--until-caught-up", "--set", "kafka.queued.min.messages=300", "--set",
                           "kafka.fetch.message.max.bytes=16384", "--set", "log.level=debug", NULL};
    double t0 = it_now();
    cr_assert_eq(it_wait(start_cache(prefix, db, log, extra), 300), 0, "cache failed, see %s", log);
    double secs = it_now() - t0;
    cr_log_info("100000 messages through a 300-message queue in %.2f s", secs);
    char *got = cache_dump(db), *want = expected_dump(&m);
    cr_expect_str_eq(got, want);
    long long nudges = -1;
    FILE *lf = fopen(log, "r");
    cr_assert_not_null(lf, "%s", log);
    for (char line[1024]; fgets(line, sizeof(line), lf);) {
        const char *at = strstr(line, "fetch nudges sent: ");
        if (at)
            nudges = atoll(at + strlen("fetch nudges sent: "));
    }
    fclose(lf);
    cr_expect_gt(nudges, 0, "no fetch nudge was sent (%lld; see %s): the fetcher waits for its one-second tick",
                 nudges, log);
    free(got);
    free(want);
    free(m.n);
    rd_kafka_destroy(rk);
    cache_tmp_rm(db);
    unlink(log);
}

/* it/schema_topic_outside_the_regex: cache.topics takes the table topics only
 * (^<prefix>[.]db1[.]), not <prefix>.schema; the schema topic is read all the
 * same (its prefix is topic.prefix, or that of a topic the regex takes), so the
 * table is typed from its record, not inferred. */
Test(it, schema_topic_outside_the_regex)
{
    char prefix[64], topic[128], db[256], log[256], key[64], val[1024], re[160];
    rd_kafka_t *rk = setup_topics("r", 1, 0, prefix, topic, NULL);
    for (long id = 0; id < 5; id++) {
        snprintf(key, sizeof(key), "{\"id\":%ld}", id);
        env_row(val, sizeof(val), "c", id, id, NULL);
        it_produce(rk, topic, -1, key, val);
    }
    it_flush(rk);
    snprintf(re, sizeof re, "^%s[.]db1[.].*", prefix);
    for (int with_prefix = 0; with_prefix < 2; with_prefix++) {
        paths(prefix, with_prefix ? "rp" : "r", db, log);
        const char *args[] = {"--brokers", it_brokers(), "--topics", re, "--db", db, "--until-caught-up",
                              "--set", "log.level=info", with_prefix ? "--prefix" : NULL, prefix, NULL};
        pid_t pid = it_spawn(log, args);
        cr_assert_eq(it_wait(pid, 120), 0, "the cache did not catch up (see %s)", log);
        cr_expect_eq(it_sql_int(db, "SELECT count(*) FROM \"db1.t\""), 5, "see %s", log);
        cr_expect_eq(it_sql_int(db, "SELECT inferred FROM _tributary_tables WHERE tbl='db1.t'"), 0,
                     "typed from its schema record (prefix %s; see %s)", with_prefix ? "given" : "not given", log);
        cr_expect_eq(it_sql_int(db, "SELECT count(*) FROM _tributary_columns WHERE tbl='db1.t' AND name='n' AND "
                                    "type='int'"),
                     1, "see %s", log);
        cache_tmp_rm(db);
        unlink(log);
    }
    rd_kafka_destroy(rk);
}

/* Whether a line of the log file holds text. */
static bool log_has(const char *log, const char *text)
{
    FILE *f = fopen(log, "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* Delete ids [from, to) and roll segments until the broker compacted them away with their
 * tombstones (the topic's delete.retention.ms is 100 ms): at most live + 2 records are left. */
static void delete_and_compact(rd_kafka_t *rk, const char *topic, model *m, long from, long to, long live)
{
    for (long id = from; id < to; id++)
        delete_row(rk, topic, m, id, 0);
    it_flush(rk);
    double deadline = it_now() + 120;
    long n;
    for (long i = 0; (n = it_count_records(topic, 1)) > live + 2; i++) { /* the live keys, the active segment */
        cr_assert(it_now() < deadline, "the broker did not compact the tombstones away (%ld records)", n);
        upsert(rk, topic, m, 10, 100 + i); /* rolls segments (segment.ms=100) */
        it_flush(rk);
        it_nap(300);
    }
}

/* it/offline_longer_than_delete_retention: a cache stopped while deletes were
 * written, and compaction removed their tombstones (delete.retention.ms=100 on
 * the topic), resumes past them: it rebuilds the partition from the beginning
 * (cache.offline.policy=rebuild) and equals the topic read as a table again;
 * with cache.offline.policy=fail it stops naming the fix. */
Test(it, offline_longer_than_delete_retention)
{
    char prefix[64], topic[128], db[256], log[256];
    rd_kafka_t *rk = setup_topics("o", 1, 1, prefix, topic, NULL);
    model m = new_model(12);
    for (long id = 0; id < 10; id++)
        upsert(rk, topic, &m, id, id);
    it_flush(rk);
    paths(prefix, "o", db, log);
    const char *until[] = {"--until-caught-up", NULL};
    cr_assert_eq(it_wait(start_cache(prefix, db, log, until), 120), 0, "see %s", log);
    cr_assert_eq(it_sql_int(db, "SELECT count(*) FROM \"db1.t\""), 10, "see %s", log);
    /* stopped: deletes arrive, then compaction removes them with their tombstones */
    delete_and_compact(rk, topic, &m, 0, 5, 6);
    cr_assert_eq(it_wait(start_cache(prefix, db, log, until), 120), 0, "see %s", log);
    char *want = expected_dump(&m), *have = cache_dump(db);
    cr_assert_str_eq(have, want, "the resumed cache differs from the topic (see %s)", log);
    free(want);
    free(have);
    cr_assert(log_has(log, "rebuilding the partition from the beginning"), "no WARN about the rebuild in %s", log);
    /* policy fail: the same situation stops the cache with the fix named */
    it_nap(200); /* past the topic's 100 ms since the last commit (a duration the test sets up, not a wait) */
    const char *fail[] = {"--until-caught-up", "--set", "cache.offline.policy=fail", NULL};
    cr_expect_neq(it_wait(start_cache(prefix, db, log, fail), 120), 0, "see %s", log);
    cr_assert(log_has(log, "longer than the topic's delete.retention.ms"), "no error naming delete.retention.ms in %s", log);
    free(m.n);
    rd_kafka_destroy(rk);
    cache_tmp_rm(db);
    unlink(log);
}

/* Wait until the cache file holds exactly the model's rows (a running cache). */
static void wait_equal(const char *db, const model *m, const char *log, int seconds)
{
    char *want = expected_dump(m), *have = NULL;
    double deadline = it_now() + seconds;
    for (;;) {
        free(have);
        have = it_sql_int(db, "SELECT count(*) FROM \"db1.t\"") >= 0 ? cache_dump(db) : NULL;
        if (have && strcmp(have, want) == 0)
            break;
        cr_assert(it_now() < deadline, "the running cache differs from the topic after %d s (see %s):\n%s\nwant:\n%s",
                  seconds, log, have ? have : "(no table)", want);
        it_nap(100);
    }
    free(want);
    free(have);
}

/* it/running_cache_behind_delete_retention: a cache that keeps running but
 * reads nothing for longer than the topic's delete.retention.ms (stopped with
 * SIGSTOP: any stall or lag does the same) while deletes are written and
 * compacted away with their tombstones: on reading on it rebuilds the
 * partition and equals the topic read as a table (without the check it kept
 * the deleted rows); with cache.offline.policy=fail it stops naming the fix. */
Test(it, running_cache_behind_delete_retention)
{
    char prefix[64], topic[128], db[256], log[256];
    rd_kafka_t *rk = setup_topics("b", 1, 1, prefix, topic, NULL);
    model m = new_model(12);
    for (long id = 0; id < 10; id++)
        upsert(rk, topic, &m, id, id);
    it_flush(rk);
    for (int fail = 0; fail < 2; fail++) {
        paths(prefix, fail ? "b2" : "b", db, log); /* a new file: a resume 100 ms later is a long stop */
        const char *rebuild[] = {NULL}, *policy_fail[] = {"--set", "cache.offline.policy=fail", NULL};
        pid_t pid = start_cache(prefix, db, log, fail ? policy_fail : rebuild);
        wait_equal(db, &m, log, 60);
        cr_assert_eq(kill(pid, SIGSTOP), 0);
        /* the fetch it had in flight answers empty after fetch.wait.max.ms (500 ms), so the deletes
         * can reach the cache only from the log (a duration the test sets up, not a wait) */
        it_nap(1000);
        delete_and_compact(rk, topic, &m, fail ? 5 : 0, fail ? 8 : 5, fail ? 3 : 6);
        cr_assert_eq(kill(pid, SIGCONT), 0);
        if (!fail) {
            wait_equal(db, &m, log, 60);
            cr_assert(log_has(log, "behind it, longer than the topic's delete.retention.ms"),
                      "no WARN about the rebuild in %s", log);
            cr_assert(log_has(log, "rebuilding the partition from the beginning"), "see %s", log);
            kill(pid, SIGTERM);
            cr_assert_eq(it_wait(pid, 60), 0, "see %s", log);
        } else {
            cr_expect_neq(it_wait(pid, 60), 0, "the cache went on past missed deletes (see %s)", log);
            cr_assert(log_has(log, "behind it, longer than the topic's delete.retention.ms"), "see %s", log);
            cr_assert(log_has(log, "set cache.offline.policy=rebuild"), "no error naming the fix in %s", log);
        }
        cache_tmp_rm(db);
        unlink(log);
    }
    free(m.n);
    rd_kafka_destroy(rk);
}
