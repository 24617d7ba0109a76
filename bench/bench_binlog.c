/*
 * bench_binlog: decode a binlog file and report rows/s and peak RSS
 * (run by bench/binlog_bench.sh; not a test).
 *
 *   bench_binlog FILE [--json]
 * prints one line: rows=N seconds=S (wall) cpu=C (user+sys) rows_per_s=R (by wall) maxrss_kb=K
 * --json also renders every event to its Kafka messages (evt_render).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "binlog.h"
#include "evt_json.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_binlog FILE [--json]\n");
        return 2;
    }
    bool json = argc > 2 && strcmp(argv[2], "--json") == 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    binlog_reader *r = NULL;
    tb_error err;
    evt_rendered rend;
    evt_rendered_init(&rend);
    evt_codec_opts o = {.topic_prefix = "bench", .name = "bench"};
    size_t rows = 0, bytes = 0;
    tb_code rc = binlog_open_file(argv[1], 0, &r, &err);
    while (rc == TB_OK) {
        evt_event *e = NULL;
        rc = binlog_next(r, 0, &e, &err);
        if (rc != TB_OK || !e)
            break;
        rows++;
        if (json) {
            rc = evt_render(&o, e, &rend, &err);
            for (size_t i = 0; rc == TB_OK && i < rend.n; i++)
                bytes += rend.msgs[i].key_len + rend.msgs[i].value_len;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    binlog_close(r);
    evt_rendered_free(&rend);
    if (rc != TB_OK) {
        fprintf(stderr, "bench_binlog: %s\n", err.msg);
        return 1;
    }
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    printf("rows=%zu seconds=%.3f cpu=%.3f rows_per_s=%.0f maxrss_kb=%ld json_bytes=%zu\n", rows, s, cpu, rows / s,
           ru.ru_maxrss, bytes);
    return 0;
}
