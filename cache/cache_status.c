/*
 * cache_status: `tributary cache status`: per-partition stored offset vs high
 * watermark, and whether the cache has caught up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_kafka.h"
#include "tb_log.h"

rd_kafka_conf_t *cache_kafka_conf(const char *brokers, rd_kafka_type_t type, const char *const *props,
                                  tb_error *err)
{
    rd_kafka_conf_t *conf = kafka_conf_new();
    if (!conf) {
        tb_error_set(err, TB_ERR_NOMEM, false, "kafka configuration: out of memory");
        return NULL;
    }
    tb_code rc = brokers ? kafka_conf_set(conf, "bootstrap.servers", brokers, err) : TB_OK;
    for (size_t i = 0; rc == TB_OK && props && props[i] && props[i + 1]; i += 2)
        rc = kafka_conf_pass(conf, type, props[i], props[i + 1], err);
    if (rc != TB_OK) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

tb_code cache_status(const char *db_path, const char *brokers, tb_buf *out, tb_error *err)
{
    cache_store *s = NULL;
    rd_kafka_t *rk = NULL;
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_open(db_path, true, &s, err);
    if (rc != TB_OK)
        return rc;
    if (brokers) {
        rd_kafka_conf_t *conf = cache_kafka_conf(brokers, RD_KAFKA_CONSUMER, NULL, err);
        if (!conf) {
            rc = err ? err->code : TB_ERR_CONFIG;
            goto out;
        }
        if ((rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka consumer", &rk, err)) != TB_OK)
            goto out;
    }
    if (sqlite3_prepare_v2(s->db,
                           "SELECT topic, partition, next_offset, high_watermark FROM _tributary_offsets"
                           " ORDER BY topic, partition",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: %s", db_path, sqlite3_errmsg(s->db));
        goto out;
    }
    rc = tb_buf_printf(out, "%-50s %14s %14s%s\n", "topic [partition]", "stored offset", "start high",
                       rk ? "       high now         lag" : "");
    bool all_current = true;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *topic = (const char *)sqlite3_column_text(st, 0);
        int p = sqlite3_column_int(st, 1);
        long long next = sqlite3_column_int64(st, 2), high = sqlite3_column_int64(st, 3);
        char tp[300];
        snprintf(tp, sizeof(tp), "%s [%d]", topic, p);
        rc = tb_buf_printf(out, "%-50s %14lld %14lld", tp, next, high);
        if (rc == TB_OK && rk) {
            int64_t lo = -1, hi = -1;
            rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000);
            if (e)
                rc = tb_buf_printf(out, " %14s", rd_kafka_err2str(e));
            else {
                long long lag = hi > next ? hi - next : 0;
                if (lag > 0)
                    all_current = false;
                rc = tb_buf_printf(out, " %14lld %11lld", (long long)hi, lag);
            }
        }
        rc = rc ? rc : tb_buf_putc(out, '\n');
    }
    if (rc == TB_OK) {
        int64_t caught = cache_store_get_state(s, "caught_up", 0);
        int64_t at = cache_store_get_state(s, "caught_up_at", 0);
        char when[64] = "";
        if (caught) {
            time_t t = (time_t)(at / 1000);
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(when, sizeof(when), " (at %Y-%m-%dT%H:%M:%SZ)", &tm);
        }
        rc = tb_buf_printf(out, "caught up with the start watermarks: %s%s\n", caught ? "yes" : "no", when);
        if (rc == TB_OK && rk)
            rc = tb_buf_printf(out, "current with the brokers now: %s\n", all_current ? "yes" : "no");
        rc = rc ? rc
                : tb_buf_printf(out, "messages applied: %lld, skipped: %lld, sent to the DLQ: %lld\n",
                                (long long)s->applied, (long long)s->skipped, (long long)s->dlq);
    }
out:
    sqlite3_finalize(st);
    if (rk)
        rd_kafka_destroy(rk);
    cache_store_close(s);
    return rc;
}
