/*
 * bench_codec: build and encode 1M synthetic rows (~200 bytes of JSON after
 * image each) as envelope messages, the way a decoder and the sink do it:
 * one reused event (evt_event_reset), one reused evt_rendered.
 *
 *   bench_codec [rows] [row|envelope]
 * Prints rows/s for build+render and the bytes produced. Not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evt.h"
#include "evt_json.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long rows = argc > 1 ? atol(argv[1]) : 1000000;
    bool row_format = argc > 2 && strcmp(argv[2], "row") == 0;
    evt_table *t = evt_table_new("shop", "orders", 8);
    evt_table_set_column(t, 0, "id", EVT_T_BIGINT, "bigint", false, false);
    evt_table_set_column(t, 1, "customer", EVT_T_VARCHAR, "varchar(64)", true, false);
    evt_table_set_column(t, 2, "email", EVT_T_VARCHAR, "varchar(64)", true, false);
    evt_table_set_column(t, 3, "price", EVT_T_DECIMAL, "decimal(10,2)", true, false);
    evt_table_set_column(t, 4, "qty", EVT_T_INT, "int", true, false);
    evt_table_set_column(t, 5, "created", EVT_T_DATETIME, "datetime(3)", true, false);
    evt_table_set_column(t, 6, "score", EVT_T_DOUBLE, "double", true, false);
    evt_table_set_column(t, 7, "active", EVT_T_BIT, "bit(1)", true, false);
    size_t pk[] = {0};
    evt_table_set_pk(t, pk, 1);
    evt_table_seal(t);

    evt_codec_opts o = {.topic_prefix = "bench", .name = "bench", .row_format = row_format};
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_rendered r;
    evt_rendered_init(&r);
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_MYSQL;
    pos.mariadb = true;
    pos.server_id = 1;
    tb_position_set_file(&pos, "mysql-bin.000001");
    tb_position_set_gtid(&pos, "0-1-100");
    tb_error err;
    size_t bytes = 0, after_bytes = 0;
    /* a pool of distinct strings so the loop measures the codec, not printf */
    enum { POOL = 4096 };
    static char name[POOL][48], email[POOL][48], price[POOL][16];
    static int nl[POOL], el[POOL], pl[POOL];
    for (int k = 0; k < POOL; k++) {
        nl[k] = snprintf(name[k], sizeof name[k], "Customer Number %d of the bench", k * 7919);
        el[k] = snprintf(email[k], sizeof email[k], "customer.%d@mail.example.com", k * 7919);
        pl[k] = snprintf(price[k], sizeof price[k], "%d.%02d", k * 31 % 100000, k % 100);
    }
    double t0 = now_s();
    clock_t c0 = clock();
    for (long i = 0; i < rows; i++) {
        evt_event_reset(e, EVT_OP_CREATE, t);
        pos.pos = 4 + (uint64_t)i * 100;
        evt_event_set_position(e, &pos);
        evt_event_set_connector(e, EVT_CONN_MARIADB);
        evt_event_set_commit_ts_ms(e, 1700000000000 + i);
        int k = (int)(i % POOL);
        evt_set_int(e, EVT_AFTER, 0, i);
        evt_set_string(e, EVT_AFTER, 1, name[k], (size_t)nl[k]);
        evt_set_string(e, EVT_AFTER, 2, email[k], (size_t)el[k]);
        evt_set_decimal(e, EVT_AFTER, 3, price[k], (size_t)pl[k]);
        evt_set_int(e, EVT_AFTER, 4, i % 1000);
        evt_temporal tm = {.year = 2024, .month = 11, .day = 29, .hour = 18, .minute = (uint8_t)(i % 60),
                           .second = (uint8_t)(i % 60), .usec = (uint32_t)(i % 1000) * 1000, .fsp = 3};
        evt_set_temporal(e, EVT_AFTER, 5, EVT_V_DATETIME, &tm);
        /* half short decimals (fast path), half full-precision (printf path) */
        evt_set_double(e, EVT_AFTER, 6, i & 1 ? (double)(i % 10000) / 100.0 : (double)i / 7.0);
        evt_set_bool(e, EVT_AFTER, 7, i & 1);
        if (evt_render(&o, e, &r, &err) != TB_OK) {
            fprintf(stderr, "render failed: %s\n", err.msg);
            return 1;
        }
        for (size_t m = 0; m < r.n; m++)
            bytes += r.msgs[m].key_len + r.msgs[m].value_len;
        if (i == 0) {
            tb_buf a;
            tb_buf_init(&a, 0);
            evt_json_row(e, EVT_AFTER, &a, NULL);
            after_bytes = a.len;
            fprintf(stderr, "sample value: %s\n", r.msgs[0].value);
            tb_buf_free(&a);
        }
    }
    double dt = now_s() - t0;
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("bench_codec: %ld rows (%s), after image ~%zu bytes: wall %.3f s (%.0f events/s), cpu %.3f s "
           "(%.0f events/s), %.1f MB of JSON\n",
           rows, row_format ? "row" : "envelope", after_bytes, dt, (double)rows / dt, cpu, (double)rows / cpu,
           (double)bytes / 1e6);
    tb_position_free(&pos);
    evt_rendered_free(&r);
    evt_event_free(e);
    evt_table_unref(t);
    return 0;
}
