/*
 * bench_ksink: produce N synthetic change events (about 200 bytes of row data
 * each, one source transaction per event, the worst case for the tracker)
 * through ksink to a broker, the way the pipeline does it: one reused event
 * (evt_event_reset), ksink_send + ksink_end_tx per event, ksink_commit_nowait
 * when due (as `tributary run` does for a binlog source: it does not stall
 * behind the offsets record's acknowledgement), then ksink_flush + ksink_commit
 * (which waits). Not a test; run by bench/ksink_bench.sh.
 *
 *   bench_ksink run  BOOTSTRAP PREFIX N [KEY=VALUE...]
 *                                            produce; prints one "result" line
 *                                            (KEY=VALUE: configuration overrides)
 *   bench_ksink dump FILE N [NAME]           write the same messages as
 *                                            "key<TAB>value" lines for kcat -P -K
 *                                            (NAME: the connector name in them;
 *                                            the run's is PREFIX-conn)
 *   bench_ksink topic BOOTSTRAP TOPIC        create TOPIC (compacted, 1 partition)
 *
 * result line: events=N seconds=S events_per_s=E mb_per_s=M bytes=B max_rss_kb=R commits=C
 *              cpu_s=process CPU main_thread_cpu_s=CPU of the thread that renders and produces
 *              commit_wait_s=time spent in the periodic ksink_commit_nowait calls
 *              produced_s=time until the last event was handed to librdkafka (the rest
 *              of seconds is the flush: the backlog still to be sent and acknowledged)
 * (bytes = key + value bytes produced; MB = 10^6 bytes; CPU over the timed part).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cfg.h"
#include "evt.h"
#include "evt_json.h"
#include "ksink.h"
#include "ksink_int.h"
#include "tb_log.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static evt_table *bench_table(void)
{
    evt_table *t = evt_table_new("bench", "orders", 6);
    evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint", false, false);
    evt_table_set_column(t, 1, "customer", EVT_T_VARCHAR, "varchar(64)", true, false);
    evt_table_set_column(t, 2, "email", EVT_T_VARCHAR, "varchar(128)", true, false);
    evt_table_set_column(t, 3, "amount", EVT_T_DECIMAL, "decimal(12,2)", true, false);
    evt_table_set_column(t, 4, "created", EVT_T_DATETIME, "datetime(3)", true, false);
    evt_table_set_column(t, 5, "note", EVT_T_TEXT, "text", true, false);
    size_t pk = 0;
    evt_table_set_pk(t, &pk, 1);
    evt_table_set_version(t, 1);
    evt_table_seal(t);
    return t;
}

/* Column texts, formatted once so the timed loop measures the sink, not
 * snprintf (a capture decoder copies bytes; it does not print). */
#define BENCH_POOL 4096
static char bench_text[4][BENCH_POOL][112];
static size_t bench_len[4][BENCH_POOL];

static void bench_pool_init(void)
{
    for (long i = 0; i < BENCH_POOL; i++) {
        bench_len[0][i] = (size_t)snprintf(bench_text[0][i], 112, "customer-%08ld", i * 7919 % 1000003);
        bench_len[1][i] = (size_t)snprintf(bench_text[1][i], 112, "user%ld@example.org", i * 31 % 99991);
        bench_len[2][i] = (size_t)snprintf(bench_text[2][i], 112, "%ld.%02ld", i * 37 % 100000, i % 100);
        bench_len[3][i] = (size_t)snprintf(bench_text[3][i], 112,
                                           "order %ld: two widgets, one gadget, deliver to the back door, no signature needed", i);
    }
}

/* Fill e as the create of row i (about 200 bytes of row JSON). */
static void bench_row(evt_event *e, evt_table *t, long i, tb_position *pos)
{
    size_t k = (size_t)i % BENCH_POOL;
    evt_event_reset(e, EVT_OP_CREATE, t);
    evt_set_int(e, EVT_AFTER, 0, i);
    evt_set_string(e, EVT_AFTER, 1, bench_text[0][k], bench_len[0][k]);
    evt_set_string(e, EVT_AFTER, 2, bench_text[1][k], bench_len[1][k]);
    evt_set_decimal(e, EVT_AFTER, 3, bench_text[2][k], bench_len[2][k]);
    evt_temporal tm = {.year = 2024, .month = 1 + (uint8_t)(i % 12), .day = 1 + (uint8_t)(i % 28),
                       .hour = (uint32_t)(i % 24), .minute = (uint8_t)(i % 60), .second = (uint8_t)(i % 60),
                       .usec = (uint32_t)(i % 1000) * 1000, .fsp = 3};
    evt_set_temporal(e, EVT_AFTER, 4, EVT_V_DATETIME, &tm);
    evt_set_string(e, EVT_AFTER, 5, bench_text[3][k], bench_len[3][k]);
    pos->pos = 4 + (uint64_t)i * 250;
    evt_event_set_position(e, pos);
    evt_event_set_connector(e, EVT_CONN_MARIADB);
    evt_event_set_commit_ts_ms(e, 1700000000000LL + i);
    evt_event_set_txid(e, NULL);
}

static int bench_run(const char *bootstrap, const char *prefix, long n, char **sets, int nsets)
{
    int status = 1;
    tb_error err;
    cfg *c = cfg_new();
    ksink *ks = NULL;
    evt_table *t = bench_table();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_MYSQL;
    pos.mariadb = true;
    pos.server_id = 1;
    tb_position_set_file(&pos, "mysql-bin.000001");
    char name[256];
    snprintf(name, sizeof name, "%s-conn", prefix);
    if (cfg_set(c, "name", name, "bench", &err) || cfg_set(c, "topic.prefix", prefix, "bench", &err) ||
        cfg_set(c, "kafka.bootstrap.servers", bootstrap, "bench", &err) ||
        cfg_set(c, "offsets.commit.interval.ms", "1000", "bench", &err))
        goto out;
    for (int i = 0; i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        if (!eq) {
            tb_error_set(&err, TB_ERR_CONFIG, false, "%s: expected KEY=VALUE", sets[i]);
            goto out;
        }
        *eq = '\0';
        if (cfg_set(c, sets[i], eq + 1, "bench", &err) != TB_OK)
            goto out;
    }
    if (ksink_open(c, &ks, &err) != TB_OK)
        goto out;
    /* creating the table's topic and the offsets topic, and the schema record,
     * are start-up work (a running connector has done them): not timed */
    bench_row(e, t, 0, &pos);
    if (ksink_send(ks, e, &err) != TB_OK || ksink_end_tx(ks, &pos, &err) != TB_OK ||
        ksink_flush(ks, 30000, &err) != TB_OK || ksink_commit(ks, &err) != TB_OK)
        goto out;
    ksink_stats st0;
    ksink_get_stats(ks, &st0);
    struct rusage r0;
    getrusage(RUSAGE_SELF, &r0);
    double cpu0 = tv_s(r0.ru_utime) + tv_s(r0.ru_stime);
    getrusage(RUSAGE_THREAD, &r0);
    double cpu0_main = tv_s(r0.ru_utime) + tv_s(r0.ru_stime);
    double t0 = now_s(), commit_wait = 0;
    for (long i = 1; i <= n; i++) {
        bench_row(e, t, i, &pos);
        if (ksink_send(ks, e, &err) != TB_OK || ksink_end_tx(ks, &pos, &err) != TB_OK)
            goto out;
        if ((i & 1023) == 0) {
            ksink_poll(ks, 0);
            if (ksink_commit_due(ks)) {
                double c0 = now_s();
                if (ksink_commit_nowait(ks, &err) != TB_OK)
                    goto out;
                commit_wait += now_s() - c0;
            }
        }
    }
    double produced_s = now_s() - t0;
    if (ksink_flush(ks, 120000, &err) != TB_OK || ksink_commit(ks, &err) != TB_OK)
        goto out;
    double secs = now_s() - t0;
    ksink_stats st;
    ksink_get_stats(ks, &st);
    if (ksink_committable(ks)->pos != pos.pos) {
        tb_error_set(&err, TB_ERR_STATE, false, "committable position is not the last one");
        goto out;
    }
    struct rusage ru, ru_main;
    getrusage(RUSAGE_SELF, &ru);
    getrusage(RUSAGE_THREAD, &ru_main);
    uint64_t bytes = st.bytes - st0.bytes;
    printf("result events=%ld seconds=%.3f events_per_s=%.0f mb_per_s=%.1f bytes=%llu max_rss_kb=%ld commits=%llu "
           "cpu_s=%.2f main_thread_cpu_s=%.2f commit_wait_s=%.3f produced_s=%.3f\n",
           n, secs, (double)n / secs, (double)bytes / 1e6 / secs, (unsigned long long)bytes, ru.ru_maxrss,
           (unsigned long long)(st.commits - st0.commits), tv_s(ru.ru_utime) + tv_s(ru.ru_stime) - cpu0,
           tv_s(ru_main.ru_utime) + tv_s(ru_main.ru_stime) - cpu0_main, commit_wait, produced_s);
    status = 0;
out:
    if (status)
        fprintf(stderr, "bench_ksink: %s\n", err.msg);
    ksink_close(ks);
    evt_event_free(e);
    evt_table_unref(t);
    tb_position_free(&pos);
    cfg_free(c);
    return status;
}

static int bench_dump(const char *file, long n, const char *name)
{
    int status = 1;
    tb_error err;
    tb_error_clear(&err);
    FILE *f = fopen(file, "w");
    evt_table *t = bench_table();
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_rendered r;
    evt_rendered_init(&r);
    evt_codec_opts o = {.topic_prefix = "bench", .name = name};
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_MYSQL;
    pos.mariadb = true;
    pos.server_id = 1;
    tb_position_set_file(&pos, "mysql-bin.000001");
    if (!f)
        goto out;
    for (long i = 1; i <= n; i++) {
        bench_row(e, t, i, &pos);
        if (evt_render(&o, e, &r, &err) != TB_OK)
            goto out;
        for (size_t k = 0; k < r.n; k++) {
            fwrite(r.msgs[k].key, 1, r.msgs[k].key_len, f);
            fputc('\t', f);
            fwrite(r.msgs[k].value, 1, r.msgs[k].value_len, f);
            fputc('\n', f);
        }
    }
    status = fclose(f) == 0 ? 0 : 1;
    f = NULL;
out:
    if (f)
        fclose(f);
    if (status)
        fprintf(stderr, "bench_ksink dump: failed %s\n", err.msg);
    evt_rendered_free(&r);
    evt_event_free(e);
    evt_table_unref(t);
    tb_position_free(&pos);
    return status;
}

static int bench_topic(const char *bootstrap, const char *topic)
{
    tb_error err;
    cfg *c = cfg_new();
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_t *rk = NULL;
    int status = 1;
    if (cfg_set(c, "kafka.bootstrap.servers", bootstrap, "bench", &err) == TB_OK &&
        ksink_conf_new(c, KSINK_ROLE_PRODUCER, &conf, &err) == TB_OK &&
        kafka_client_new(conf, RD_KAFKA_PRODUCER, "Kafka client", &rk, &err) == TB_OK &&
        ksink_topic_ensure(rk, c, topic, 1, true, &err) == TB_OK)
        status = 0;
    else
        fprintf(stderr, "bench_ksink topic: %s\n", err.msg);
    if (rk)
        rd_kafka_destroy(rk);
    cfg_free(c);
    return status;
}

int main(int argc, char **argv)
{
    tb_log_set_level(TB_LOG_WARN);
    bench_pool_init();
    if (argc >= 5 && strcmp(argv[1], "run") == 0)
        return bench_run(argv[2], argv[3], atol(argv[4]), argv + 5, argc - 5);
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "dump") == 0)
        return bench_dump(argv[2], atol(argv[3]), argc == 5 ? argv[4] : "bench-conn");
    if (argc == 4 && strcmp(argv[1], "topic") == 0)
        return bench_topic(argv[2], argv[3]);
    fprintf(stderr, "usage: bench_ksink run BOOTSTRAP PREFIX N [KEY=VALUE...] | dump FILE N [NAME] | topic BOOTSTRAP TOPIC\n");
    return 2;
}
