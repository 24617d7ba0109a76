/*
 * bench_snapshot: initial snapshot throughput and memory (run by
 * bench/snapshot_bench.sh).
 *
 *   bench_snapshot --table DB.TABLE --sink none|null|stdout|kafka
 *
 * Source: the testenv MariaDB (TRIBUTARY_TEST_MYSQL_*); Kafka: TRIBUTARY_TEST_KAFKA.
 * sink=null renders every event to the stdout sink's JSON lines into
 * /dev/null (all the work of the stdout sink); sink=kafka produces with the
 * Kafka sink and waits for every acknowledgement; sink=none only reads the
 * rows into events (the snapshotter alone). Prints one line:
 *   snapshot sink=S rows=N secs=T rows_per_s=R peak_rss_mb=M
 * (peak RSS = getrusage ru_maxrss of this process).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cfg.h"
#include "ksink.h"
#include "snap.h"
#include "stdout_sink.h"
#include "tb_log.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set(cfg *c, const char *k, const char *v)
{
    tb_error err;
    if (cfg_set(c, k, v, "bench", &err) != TB_OK) {
        fprintf(stderr, "bench_snapshot: %s=%s: %s\n", k, v ? v : "", err.msg);
        exit(2);
    }
}

static const char *env(const char *n)
{
    const char *v = getenv(n);
    if (!v || !*v) {
        fprintf(stderr, "bench_snapshot: %s is not set (run inside scripts/testenv)\n", n);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *table = NULL, *sink = "null";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--table") == 0 && i + 1 < argc)
            table = argv[++i];
        else if (strcmp(argv[i], "--sink") == 0 && i + 1 < argc)
            sink = argv[++i];
        else {
            fprintf(stderr, "usage: bench_snapshot --table DB.TABLE --sink none|null|stdout|kafka\n");
            return 2;
        }
    }
    if (!table)
        table = "bench.t1m";
    tb_log_set_level(TB_LOG_WARN);
    cfg *c = cfg_new();
    set(c, "source.host", env("TRIBUTARY_TEST_MYSQL_HOST"));
    set(c, "source.port", env("TRIBUTARY_TEST_MYSQL_PORT"));
    set(c, "source.user", env("TRIBUTARY_TEST_MYSQL_USER"));
    set(c, "source.password", env("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    set(c, "name", "bench-snapshot");
    set(c, "topic.prefix", "bench");
    char *inc = NULL;
    const char *dot = strchr(table, '.');
    if (asprintf(&inc, "^%.*s\\.%s$", dot ? (int)(dot - table) : 0, table, dot ? dot + 1 : table) < 0)
        return 1;
    set(c, "tables.include", inc);
    free(inc);
    bool kafka = strcmp(sink, "kafka") == 0;
    bool none = strcmp(sink, "none") == 0;
    if (kafka) {
        set(c, "sink", "kafka");
        set(c, "kafka.bootstrap.servers", env("TRIBUTARY_TEST_KAFKA"));
    } else {
        set(c, "sink", "stdout");
        set(c, "offsets.storage", "file");
        set(c, "offsets.file", "/dev/null");
    }
    tb_error err;
    stdout_sink *so = NULL;
    ksink *ks = NULL;
    FILE *devnull = NULL;
    snap *s = NULL;
    tb_code rc;
    if (kafka) {
        rc = ksink_open(c, &ks, &err);
    } else {
        devnull = fopen(strcmp(sink, "stdout") == 0 ? "/dev/stdout" : "/dev/null", "w");
        rc = devnull ? stdout_sink_open(c, devnull, &so, &err) : TB_ERR_IO;
    }
    double t0 = now_s();
    if (rc == TB_OK)
        rc = snap_open(c, &s, &err);
    uint64_t rows = 0;
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = snap_next(s, &ev, &err);
        if (rc != TB_OK || !ev)
            break;
        if (!none)
            rc = kafka ? ksink_send(ks, ev, &err) : stdout_sink_send(so, ev, &err);
        if (kafka && (rows & 1023) == 0)
            ksink_poll(ks, 0);
        rows++;
    }
    if (rc == TB_OK && kafka) {
        rc = ksink_end_tx(ks, snap_position(s), &err);
        while (rc == TB_OK && (rc = ksink_flush(ks, 1000, &err)) != TB_OK && err.retriable)
            rc = TB_OK;
    }
    double secs = now_s() - t0;
    if (rc != TB_OK) {
        fprintf(stderr, "bench_snapshot: %s\n", err.msg);
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("snapshot sink=%s rows=%llu secs=%.3f rows_per_s=%.0f peak_rss_mb=%.1f\n", sink,
               (unsigned long long)rows, secs, secs > 0 ? rows / secs : 0.0, ru.ru_maxrss / 1024.0);
    }
    snap_close(s);
    stdout_sink_close(so);
    ksink_close(ks);
    if (devnull)
        fclose(devnull);
    cfg_free(c);
    return rc == TB_OK ? 0 : 1;
}
