/*
 * e2e_load: workload and measurement helper of bench/e2e_bench.sh (not a test).
 *
 *   e2e_load bulk   DB TABLE ROWS BATCH        create DB.TABLE (5 columns) and insert ROWS rows,
 *                                              BATCH rows per INSERT (one transaction each)
 *   e2e_load steady DB TABLE RATE SECONDS BATCH
 *                                              insert RATE rows/s for SECONDS, BATCH rows per
 *                                              transaction; column ts = wall clock ms at the INSERT
 *   e2e_load topic  BROKERS TOPIC [RF]         create TOPIC compacted with
 *                                              message.timestamp.type=LogAppendTime (broker time),
 *                                              replication factor RF (default 1; with RF >= 3,
 *                                              min.insync.replicas=2, as the connector's topics)
 *   e2e_load latency BROKERS TOPIC             read TOPIC to its end; per change message
 *                                              latency = broker append time - ts column; prints
 *                                              count, first/last append time, p50/p90/p99/max
 *   e2e_load size BROKERS TOPIC                read TOPIC to its end, whatever the encoding (JSON
 *                                              or Avro); prints count, first/last append time and
 *                                              the key and value bytes of its messages
 * MariaDB from TRIBUTARY_TEST_MYSQL_HOST/PORT/USER/PASSWORD (scripts/testenv up).
 * The table: id BIGINT PRIMARY KEY, a INT, b VARCHAR(32), c DOUBLE, ts BIGINT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <mysql.h>

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static MYSQL *connect_db(void)
{
    MYSQL *m = mysql_init(NULL);
    const char *port = getenv("TRIBUTARY_TEST_MYSQL_PORT");
    if (!m || !mysql_real_connect(m, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_USER"),
                                  getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL, port ? (unsigned)atoi(port) : 0,
                                  NULL, 0)) {
        fprintf(stderr, "e2e_load: cannot connect: %s\n", m ? mysql_error(m) : "out of memory");
        exit(1);
    }
    return m;
}

static void sql(MYSQL *m, const char *q)
{
    if (mysql_query(m, q) != 0) {
        fprintf(stderr, "e2e_load: %.200s: %s\n", q, mysql_error(m));
        exit(1);
    }
}

static void create_table(MYSQL *m, const char *db, const char *table)
{
    char q[512];
    snprintf(q, sizeof q, "CREATE DATABASE IF NOT EXISTS %s", db);
    sql(m, q);
    snprintf(q, sizeof q,
             "CREATE TABLE IF NOT EXISTS %s.%s (id BIGINT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32) NOT NULL, "
             "c DOUBLE NOT NULL, ts BIGINT NOT NULL)",
             db, table);
    sql(m, q);
}

/* INSERT of n rows from id first, ts = now; q must hold n * 80 + 200 bytes. */
static void insert_rows(MYSQL *m, char *q, const char *db, const char *table, long long first, int n)
{
    int64_t now = wall_ms();
    size_t off = (size_t)sprintf(q, "INSERT INTO %s.%s (id, a, b, c, ts) VALUES ", db, table);
    for (int i = 0; i < n; i++) {
        long long id = first + i;
        off += (size_t)sprintf(q + off, "%s(%lld,%lld,'row-%lld',%lld.25,%" PRId64 ")", i ? "," : "", id,
                               id % 100000, id, id % 977, now);
    }
    sql(m, q);
}

static int cmd_bulk(const char *db, const char *table, long long rows, int batch)
{
    MYSQL *m = connect_db();
    create_table(m, db, table);
    char *q = malloc((size_t)batch * 80 + 256);
    int64_t t0 = mono_us();
    for (long long id = 1; id <= rows; id += batch) {
        int n = (int)(rows - id + 1 < batch ? rows - id + 1 : batch);
        insert_rows(m, q, db, table, id, n);
    }
    double s = (double)(mono_us() - t0) / 1e6;
    printf("bulk: %lld rows in %.1f s (%.0f rows/s)\n", rows, s, (double)rows / s);
    free(q);
    mysql_close(m);
    return 0;
}

static int cmd_steady(const char *db, const char *table, int rate, int seconds, int batch)
{
    MYSQL *m = connect_db();
    create_table(m, db, table);
    char *q = malloc((size_t)batch * 80 + 256);
    long long total = (long long)rate * seconds, id = 1;
    int64_t period_us = (int64_t)1000000 * batch / rate, t0 = mono_us(), late = 0;
    for (long long k = 0; id <= total; k++) {
        int64_t due = t0 + k * period_us, now = mono_us();
        if (due > now)
            usleep((useconds_t)(due - now));
        else if (now - due > 1000)
            late++;
        insert_rows(m, q, db, table, id, batch);
        id += batch;
    }
    double s = (double)(mono_us() - t0) / 1e6;
    printf("steady: %lld rows in %.1f s (%.0f rows/s, %d rows per transaction, %" PRId64 " batches > 1 ms late)\n",
           id - 1, s, (double)(id - 1) / s, batch, late);
    free(q);
    mysql_close(m);
    return 0;
}

static rd_kafka_t *client(const char *brokers, rd_kafka_type_t type)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr);
    if (type == RD_KAFKA_CONSUMER) {
        rd_kafka_conf_set(conf, "group.id", "e2e-bench", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "e2e_load: %s\n", errstr);
        exit(1);
    }
    return rk;
}

static int cmd_topic(const char *brokers, const char *topic, int rf)
{
    rd_kafka_t *rk = client(brokers, RD_KAFKA_PRODUCER);
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, rf, errstr, sizeof errstr);
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    if (rf >= 3)
        rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", "2");
    rd_kafka_NewTopic_set_config(nt, "message.timestamp.type", "LogAppendTime");
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    int rc = 1;
    if (ev) {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
        if (n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR)
            rc = 0;
        else
            fprintf(stderr, "e2e_load: create %s: %s\n", topic,
                    n == 1 ? rd_kafka_topic_result_error_string(tr[0]) : rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_destroy(rk);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every message of TOPIC (partition 0, as cmd_topic makes it): count, broker append times of
 * the first and last, key and value bytes. */
static int cmd_size(const char *brokers, const char *topic)
{
    rd_kafka_t *rk = client(brokers, RD_KAFKA_CONSUMER);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, parts);
    uint64_t n = 0, kbytes = 0, vbytes = 0;
    int64_t first = 0, last = 0;
    int rc = 0;
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 5000);
        if (!m) {
            fprintf(stderr, "e2e_load: no message in 5 s\n");
            rc = 1;
            break;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            break;
        }
        if (!m->err) {
            rd_kafka_timestamp_type_t tt;
            int64_t at = rd_kafka_message_timestamp(m, &tt);
            n++;
            kbytes += m->key_len;
            vbytes += m->len;
            if (!first)
                first = at;
            last = at;
        }
        rd_kafka_message_destroy(m);
    }
    printf("size: count=%" PRIu64 " first_append_ms=%" PRId64 " last_append_ms=%" PRId64 " key_bytes=%" PRIu64
           " value_bytes=%" PRIu64 "\n",
           n, first, last, kbytes, vbytes);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

static int cmd_latency(const char *brokers, const char *topic)
{
    rd_kafka_t *rk = client(brokers, RD_KAFKA_CONSUMER);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, parts);
    size_t cap = 1 << 20, n = 0;
    int64_t *lat = malloc(cap * sizeof(int64_t)), first = 0, last = 0;
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 5000);
        if (!m) {
            fprintf(stderr, "e2e_load: no message in 5 s\n");
            break;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            break;
        }
        if (!m->err && m->payload) {
            rd_kafka_timestamp_type_t tt;
            int64_t at = rd_kafka_message_timestamp(m, &tt);
            const char *v = m->payload, *end = v + m->len;
            const char *after = memmem(v, m->len, "\"after\":{", 9);
            const char *ts = after ? memmem(after, (size_t)(end - after), "\"ts\":", 5) : NULL;
            if (ts && tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME) {
                if (n == cap)
                    lat = realloc(lat, (cap *= 2) * sizeof(int64_t));
                lat[n++] = at - strtoll(ts + 5, NULL, 10);
                if (!first)
                    first = at;
                last = at;
            }
        }
        rd_kafka_message_destroy(m);
    }
    qsort(lat, n, sizeof(int64_t), cmp_i64);
    if (n == 0) {
        printf("latency: no change messages with a broker append time in %s\n", topic);
        return 1;
    }
    printf("latency: count=%zu first_append_ms=%" PRId64 " last_append_ms=%" PRId64 " p50=%" PRId64 " p90=%" PRId64
           " p99=%" PRId64 " max=%" PRId64 " ms\n",
           n, first, last, lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], lat[n - 1]);
    free(lat);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "bulk") == 0)
        return cmd_bulk(argv[2], argv[3], atoll(argv[4]), atoi(argv[5]));
    if (argc == 7 && strcmp(argv[1], "steady") == 0)
        return cmd_steady(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "topic") == 0)
        return cmd_topic(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 1);
    if (argc == 4 && strcmp(argv[1], "latency") == 0)
        return cmd_latency(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "size") == 0)
        return cmd_size(argv[2], argv[3]);
    fprintf(stderr, "usage: e2e_load bulk DB TABLE ROWS BATCH | steady DB TABLE RATE SECONDS BATCH |\n"
                    "       topic BROKERS TOPIC [RF] | latency BROKERS TOPIC | size BROKERS TOPIC\n");
    return 2;
}
