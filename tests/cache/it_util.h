/*
 * Helpers of the cache integration tests: the testenv broker, topics with
 * aggressive compaction, a test producer, the `tributary` binary as a child
 * process, and reading the cache file. Header-only (static functions) so
 * each test executable stays one translation unit plus this.
 */
#ifndef IT_UTIL_H
#define IT_UTIL_H

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "cache_tmp.h"
#include "test_child.h"
#include "tb_cast.h"
#include <unistd.h>

static inline const char *it_brokers(void)
{
    const char *b = getenv("TRIBUTARY_TEST_KAFKA");
    if (!b || !*b)
        cr_assert_fail("TRIBUTARY_TEST_KAFKA is not set: run eval \"$(scripts/testenv up)\" first");
    return b;
}

static inline double it_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void it_nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A unique topic prefix per test run. */
static inline void it_prefix(char *out, size_t n, const char *what)
{
    snprintf(out, n, "it%d%s%ld", (int)getpid(), what, (long)(it_now() * 1000) % 100000);
}

static inline rd_kafka_t *it_producer(void)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", it_brokers(), "enable.idempotence", "true", "partitioner",
                        "murmur2_random", "linger.ms", "20", "queue.buffering.max.messages", "1000000", NULL};
    for (int i = 0; kv[i]; i += 2)
        cr_assert_eq(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)), RD_KAFKA_CONF_OK, "%s", errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(rk, "%s", errstr);
    return rk;
}

/* Create a compacted topic; aggressive > 0: the cleaner runs almost at once (segments roll every 100 ms);
 * aggressive < 0: cleanup.policy=delete (a topic that takes messages without a key). */
static inline void it_create_topic(rd_kafka_t *rk, const char *topic, int partitions, int aggressive)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, errstr, sizeof(errstr));
    cr_assert_not_null(nt, "%s", errstr);
    const char *topic_cfg[] = {"cleanup.policy", aggressive < 0 ? "delete" : "compact", "segment.ms", "100", "min.cleanable.dirty.ratio", "0.01",
                         "delete.retention.ms", "100", "min.compaction.lag.ms", "0", NULL};
    for (int i = 0; topic_cfg[i] && (aggressive > 0 || i == 0); i += 2)
        cr_assert_eq(rd_kafka_NewTopic_set_config(nt, topic_cfg[i], topic_cfg[i + 1]), 0);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "CreateTopics timed out");
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_topic_result_error(res[0]), 0, "create %s: %s", topic,
                 rd_kafka_topic_result_error_string(res[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    /* wait until the topic's metadata shows every partition with a leader */
    double deadline = it_now() + 30;
    for (;;) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
        int ok = 0;
        if (rd_kafka_metadata(rk, 0, t, &md, 5000) == 0) {
            ok = md->topic_cnt == 1 && md->topics[0].err == 0 && md->topics[0].partition_cnt == partitions;
            for (int i = 0; ok && i < md->topics[0].partition_cnt; i++)
                ok = md->topics[0].partitions[i].leader >= 0;
            rd_kafka_metadata_destroy(md);
        }
        rd_kafka_topic_destroy(t);
        if (ok)
            break;
        cr_assert(it_now() < deadline, "topic %s not ready", topic);
        it_nap(100);
    }
}

static inline void it_produce(rd_kafka_t *rk, const char *topic, int partition, const char *key, const char *value)
{
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
            RD_KAFKA_V_KEY(TB_UNCONST(key), strlen(key)), RD_KAFKA_V_VALUE(TB_UNCONST(value), value ? strlen(value) : 0),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(rk, 10);
            continue;
        }
        cr_assert_eq(e, 0, "produce: %s", rd_kafka_err2str(e));
        break;
    }
}

static inline void it_flush(rd_kafka_t *rk)
{
    cr_assert_eq(rd_kafka_flush(rk, 60000), 0, "flush timed out");
}

/* Produce a dump of Debezium's messages (tests/fixtures/debezium: "key<TAB>value" per line, the
 * value NULL for a tombstone) to partition 0 of topic, in order; the number of messages. */
static inline size_t it_produce_dump(rd_kafka_t *rk, const char *path, const char *topic)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot read %s", path);
    cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
    long len = ftell(fp);
    cr_assert_geq(len, 0);
    rewind(fp);
    char *text = malloc((size_t)len + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)len, fp), (size_t)len, "cannot read %s", path);
    text[len] = 0;
    fclose(fp);
    size_t n = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        char *tab = strchr(p, '\t');
        cr_assert_not_null(tab, "%s: line without a TAB", path);
        *tab = 0;
        it_produce(rk, topic, 0, p, strcmp(tab + 1, "NULL") == 0 ? NULL : tab + 1);
        n++;
        p = nl ? nl + 1 : NULL;
    }
    it_flush(rk);
    free(text);
    return n;
}

/* One cache cell as "TYPE:value" for messages (BLOB as x'..', REAL with 17 digits). */
static inline void it_cell_text(sqlite3_stmt *st, int i, char *out, size_t cap)
{
    int t = sqlite3_column_type(st, i);
    static const char *names[] = {"?", "INTEGER", "REAL", "TEXT", "BLOB", "NULL"};
    if (t == SQLITE_BLOB) {
        const unsigned char *b = sqlite3_column_blob(st, i);
        int n = sqlite3_column_bytes(st, i);
        size_t o = (size_t)snprintf(out, cap, "BLOB:x'");
        for (int k = 0; k < n && o + 3 < cap; k++)
            o += (size_t)snprintf(out + o, cap - o, "%02x", b[k]);
        snprintf(out + o, cap - o, "'");
    } else if (t == SQLITE_FLOAT) {
        snprintf(out, cap, "REAL:%.17g", sqlite3_column_double(st, i));
    } else {
        const char *s = (const char *)sqlite3_column_text(st, i);
        snprintf(out, cap, "%s:%s", names[t], s ? s : "");
    }
}

/* Count records now in a topic (all partitions, from the beginning). */
static inline long it_count_records(const char *topic, int partitions)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", it_brokers(), errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "group.id", "it-counter", errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    long n = 0;
    int eofs = 0;
    double deadline = it_now() + 60;
    while (eofs < partitions && it_now() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eofs++;
        else if (!m->err)
            n++;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    cr_assert_eq(eofs, partitions, "counting %s timed out", topic);
    return n;
}

/* Start `tributary cache ARGS...` (NULL-terminated), stderr to logpath. */
static inline pid_t it_spawn(const char *logpath, const char *const *args)
{
    char bin[512];
    snprintf(bin, sizeof(bin), "%s/app/tributary", TB_BINARY_DIR);
    pid_t pid = tb_test_fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        const char *argv[64];
        int n = 0;
        argv[n++] = bin;
        argv[n++] = "cache";
        for (int i = 0; args[i] && n < 62; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        FILE *f = freopen(logpath, "a", stderr);
        (void)f;
        execv(bin, TB_UNCONST(argv)); /* execv does not write its arguments */
        _exit(127);
    }
    return pid;
}

/* Wait for a child with a deadline; returns its exit status (or -signal), fails on timeout. */
static inline int it_wait(pid_t pid, int seconds)
{
    double deadline = it_now() + seconds;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
        if (it_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("child %d did not finish within %d s", (int)pid, seconds);
        }
        it_nap(50);
    }
}

/* One integer from the cache file (-1 when no row, or the file/table is not there yet). */
static inline long long it_sql_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (access(db, F_OK) != 0 || sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return -1;
    }
    sqlite3_busy_timeout(h, 5000);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* All rows of a query as one text, lines "c1|c2|..." (caller frees). */
static inline char *it_sql_dump(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *t = (const char *)sqlite3_column_text(st, i);
            size_t need = len + (t ? strlen(t) : 4) + 3;
            if (need >= cap) {
                while (need >= cap)
                    cap *= 2;
                out = realloc(out, cap);
            }
            len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "|" : "", t ? t : "NULL");
        }
        out[len++] = '\n';
        out[len] = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

#endif
