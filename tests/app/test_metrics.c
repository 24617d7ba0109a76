/* Unit tests of the metrics registry (app_metrics.c): rendering checked by
 * promtool (the Prometheus project's own linter), health verdicts, the
 * listen address, and the endpoint refusing a bad or taken address. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json_oracle.h"

#include "app_metrics.h"

static void promtool_ok(const char *text)
{
    char path[] = "/tmp/tb_metrics_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s >&2", path);
    int st = system(cmd);
    unlink(path);
    cr_assert_eq(st, 0, "promtool check metrics refused:\n%s", text);
}

Test(app_metrics, run_exposition_passes_promtool_and_escapes_labels)
{
    app_metrics *m = app_metrics_new("sh\"op\\1", APP_METRICS_RUN);
    cr_assert_not_null(m);
    int a = app_metrics_table(m, "db", "t\"x");
    int b = app_metrics_table(m, "db", "u");
    cr_assert_eq(app_metrics_table(m, "db", "t\"x"), a, "one slot per table");
    cr_assert_neq(a, b);
    for (int i = 0; i < 5; i++)
        app_metrics_count(m, a, EVT_OP_CREATE);
    app_metrics_count(m, a, EVT_OP_DELETE);
    app_metrics_count(m, b, EVT_OP_READ);
    app_metrics_set_estimate(m, b, 1000);
    app_metrics_skip(m, b, APP_METRICS_SKIP_NO_KEY);
    app_metrics_skip(m, b, APP_METRICS_SKIP_DLQ); /* its own family */
    for (int i = 0; i < 3; i++)
        app_metrics_resnapshot(m, b, APP_METRICS_RESNAP_FK_ACTION);
    app_metrics_resnapshot(m, a, APP_METRICS_RESNAP_ALTER);
    app_metrics_resnapshot(m, a, APP_METRICS_NRESNAP); /* out of range: ignored */
    app_metrics_run v = {.state = "streaming", .source_connected = true, .lag_ms = 1500, .behind_bytes = 42,
                         .behind_unit = "bytes", .acked = 9};
    app_metrics_set_run(m, &v);
    const char *stats = "{\"msg_cnt\":3,\"msg_size\":300,\"brokers\":{\"b:9092/1\":{\"nodename\":\"b:9092\","
                        "\"nodeid\":1,\"state\":\"UP\",\"outbuf_cnt\":1,\"waitresp_cnt\":2,\"txretries\":4,"
                        "\"txerrs\":1,\"rxerrs\":1,\"req_timeouts\":1,\"rtt\":{\"avg\":2500}},"
                        "\"b:9092/bootstrap\":{\"nodeid\":-1,\"state\":\"INIT\"}}}";
    app_metrics_set_kafka_stats(m, stats, strlen(stats));
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(app_metrics_render(m, &out), TB_OK);
    const char *t = tb_buf_cstr(&out);
    promtool_ok(t);
    cr_assert_not_null(strstr(t, "tributary_events_total{connector=\"sh\\\"op\\\\1\",table=\"db.t\\\"x\",op=\"c\"} 5\n"), "%s", t);
    cr_assert_not_null(strstr(t, ",table=\"db.t\\\"x\",op=\"d\"} 1\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_snapshot_rows_estimated{connector=\"sh\\\"op\\\\1\",table=\"db.u\"} 1000\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_events_skipped_total{connector=\"sh\\\"op\\\\1\",table=\"db.u\",reason=\"no_key\"} 1\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_events_dead_lettered_total{connector=\"sh\\\"op\\\\1\",table=\"db.u\"} 1\n"), "%s", t);
    cr_assert_null(strstr(t, "reason=\"dlq\""), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_resnapshots_total{connector=\"sh\\\"op\\\\1\",table=\"db.u\",reason=\"fk_action\"} 3\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_resnapshots_total{connector=\"sh\\\"op\\\\1\",table=\"db.t\\\"x\",reason=\"alter\"} 1\n"), "%s", t);
    cr_assert_null(strstr(t, "reason=\"rename\""), "a reason at 0 has no sample: %s", t);
    cr_assert_not_null(strstr(t, "tributary_lag_seconds{connector=\"sh\\\"op\\\\1\"} 1.5\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_kafka_queue_messages{connector=\"sh\\\"op\\\\1\"} 3\n"), "%s", t);
    cr_assert_not_null(strstr(t, ",broker=\"b:9092\"} 3\n"), "in flight 1 + 2: %s", t);
    cr_assert_not_null(strstr(t, "tributary_kafka_broker_request_errors_total{connector=\"sh\\\"op\\\\1\",broker=\"b:9092\"} 3\n"), "%s", t);
    cr_assert_not_null(strstr(t, "tributary_kafka_broker_rtt_seconds{connector=\"sh\\\"op\\\\1\",broker=\"b:9092\"} 0.002500\n"), "%s", t);
    cr_assert_null(strstr(t, "bootstrap"), "brokers without a node id are left out");
    tb_buf_free(&out);
    app_metrics_stop(m);
}

Test(app_metrics, cache_exposition_passes_promtool)
{
    app_metrics *m = app_metrics_new("c", APP_METRICS_CACHE);
    char topic[] = "shop.db.t\"1";
    app_metrics_lag lags[] = {{topic, 0, 7}, {"shop.db.u", 3, -1}};
    app_metrics_cache v = {.state = "caught_up", .messages = 12, .remaining = 0, .caught_up = true, .parts = lags,
                           .nparts = 2};
    app_metrics_set_cache(m, &v);
    topic[0] = 'X'; /* the registry holds its own copy */
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(app_metrics_render(m, &out), TB_OK);
    const char *t = tb_buf_cstr(&out);
    promtool_ok(t);
    cr_assert_not_null(strstr(t, "tributary_cache_caught_up{connector=\"c\"} 1\n"));
    cr_assert_not_null(strstr(t, "tributary_cache_messages_applied_total{connector=\"c\"} 12\n"));
    cr_assert_not_null(
        strstr(t, "tributary_cache_partition_lag_messages{connector=\"c\",topic=\"shop.db.t\\\"1\",partition=\"0\"} 7\n"),
        "%s", t);
    cr_assert_not_null(strstr(t, ",topic=\"shop.db.u\",partition=\"3\"} -1\n"), "%s", t);
    /* a progress report without partitions keeps the last ones */
    app_metrics_cache v2 = {.state = "stopped", .remaining = -1};
    app_metrics_set_cache(m, &v2);
    tb_buf_reset(&out);
    cr_assert_eq(app_metrics_render(m, &out), TB_OK);
    cr_assert_not_null(strstr(tb_buf_cstr(&out), ",topic=\"shop.db.u\",partition=\"3\"} -1\n"), "%s",
                       tb_buf_cstr(&out));
    tb_buf_free(&out);
    app_metrics_stop(m);
}

static int health_of(app_metrics *m, const char *state, bool connected, const char *stats, tb_buf *out)
{
    app_metrics_run v = {.state = state, .source_connected = connected, .lag_ms = -1, .behind_bytes = -1,
                         .source_down_since_ms = connected ? 0 : 1764547200000LL, .error = "boom"};
    app_metrics_set_run(m, &v);
    if (stats)
        app_metrics_set_kafka_stats(m, stats, strlen(stats));
    tb_buf_reset(out);
    return app_metrics_health(m, 1764547260000LL, out);
}

Test(app_metrics, health_reasons)
{
    app_metrics *m = app_metrics_new("h", APP_METRICS_RUN);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(health_of(m, "streaming", true, NULL, &b), 200, "%s", tb_buf_cstr(&b));
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("status"), "\"ok\""));
    cr_assert_eq(health_of(m, "snapshot", true, NULL, &b), 200, "a snapshot is healthy");
    cr_assert_eq(health_of(m, "reconnecting", false, NULL, &b), 503);
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("reason"), "\"source down since 2025-12-01T00:00:00Z\""));
    cr_assert_eq(health_of(m, "failed", true, NULL, &b), 503);
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("reason"), "\"failed: boom\""));
    cr_assert_eq(health_of(m, "standby", true, NULL, &b), 503);
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("healthy"), "true") &&
              jo_expect_text_at(b.data, b.len, JO_PATH("active"), "false") &&
              jo_expect_text_at(b.data, b.len, JO_PATH("reason"), "\"standby\""));
    cr_assert_eq(health_of(m, "starting", true, NULL, &b), 503);
    const char *down = "{\"msg_cnt\":3,\"brokers\":{\"k:1/1\":{\"nodeid\":1,\"state\":\"DOWN\"}}}";
    cr_assert_eq(health_of(m, "streaming", true, down, &b), 503);
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("reason"), "\"kafka unreachable\""));
    /* an idle producer whose connection was closed: nothing waits, so nothing is wrong */
    const char *idle = "{\"msg_cnt\":0,\"brokers\":{\"k:1/1\":{\"nodeid\":1,\"state\":\"DOWN\"}}}";
    cr_assert_eq(health_of(m, "streaming", true, idle, &b), 200, "%s", tb_buf_cstr(&b));
    /* statistics that stopped arriving are not evidence: with a 5 s interval, 15 s old is stale */
    app_metrics_set_kafka_stats_interval(m, 5000);
    app_metrics_set_kafka_stats(m, down, strlen(down));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    tb_buf_reset(&b);
    cr_assert_eq(app_metrics_health(m, now + 10000, &b), 503, "%s", tb_buf_cstr(&b));
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("reason"), "\"kafka unreachable\""));
    tb_buf_reset(&b);
    cr_assert_eq(app_metrics_health(m, now + 16000, &b), 200, "%s", tb_buf_cstr(&b));
    app_metrics_set_kafka_stats_interval(m, 0);
    const char *up = "{\"brokers\":{\"k:1/1\":{\"nodeid\":1,\"state\":\"UP\"}}}";
    cr_assert_eq(health_of(m, "streaming", true, up, &b), 200);
    tb_buf_free(&b);
    app_metrics_stop(m);
}

/* Avro: a send waiting for the schema registry makes /health 503 naming the registry and its
 * error, and sets tributary_schema_registry_down_since_seconds; both clear when it answers. */
Test(app_metrics, registry_down_health_and_gauge)
{
    app_metrics *m = app_metrics_new("h", APP_METRICS_RUN);
    tb_buf b;
    tb_buf_init(&b, 0);
    app_metrics_run v = {.state = "streaming", .source_connected = true, .lag_ms = -1, .behind_bytes = -1,
                         .registry_down_since_ms = 1764547200000LL,
                         .registry_error = "http://127.0.0.1:1/apis/ccompat/v7: Couldn't connect to server"};
    app_metrics_set_run(m, &v);
    cr_assert_eq(app_metrics_health(m, 1764547260000LL, &b), 503, "%s", tb_buf_cstr(&b));
    cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("reason"),
                                "\"schema registry unreachable: http://127.0.0.1:1/apis/ccompat/v7: Couldn't connect "
                                "to server\""),
              "%s", tb_buf_cstr(&b));
    tb_buf_reset(&b);
    cr_assert_eq(app_metrics_render(m, &b), TB_OK);
    cr_assert_not_null(strstr(tb_buf_cstr(&b), "tributary_schema_registry_down_since_seconds{connector=\"h\"} "
                                               "1764547200\n"),
                       "%s", tb_buf_cstr(&b));
    v.registry_down_since_ms = 0;
    v.registry_error = NULL;
    app_metrics_set_run(m, &v);
    tb_buf_reset(&b);
    cr_assert_eq(app_metrics_health(m, 1764547260000LL, &b), 200, "%s", tb_buf_cstr(&b));
    tb_buf_reset(&b);
    cr_assert_eq(app_metrics_render(m, &b), TB_OK);
    cr_assert_not_null(strstr(tb_buf_cstr(&b), "tributary_schema_registry_down_since_seconds{connector=\"h\"} 0\n"),
                       "%s", tb_buf_cstr(&b));
    tb_buf_free(&b);
    app_metrics_stop(m);
}

Test(app_metrics, listen_addresses)
{
    char host[64];
    unsigned port;
    tb_error err;
    cr_assert_eq(app_metrics_parse_listen("127.0.0.1:9464", host, sizeof host, &port, &err), TB_OK);
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, 9464);
    cr_assert_eq(app_metrics_parse_listen("[::1]:80", host, sizeof host, &port, &err), TB_OK);
    cr_assert_str_eq(host, "::1");
    const char *bad[] = {"9464", "127.0.0.1:", ":9464", "127.0.0.1:70000", "127.0.0.1:x", "[::1]9464"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(app_metrics_parse_listen(bad[i], host, sizeof host, &port, &err), TB_ERR_CONFIG, "%s", bad[i]);
        cr_assert_not_null(strstr(err.msg, "metrics.listen"), "%s", err.msg);
    }
}

Test(app_metrics, start_is_off_by_default_and_refuses_a_host_name)
{
    cfg *c = cfg_new();
    tb_error err;
    app_metrics *m = NULL;
    cr_assert_eq(app_metrics_start(c, APP_METRICS_RUN, &m, &err), TB_OK, "unset: off");
    cr_assert_null(m);
    cr_assert_eq(cfg_set(c, "metrics.listen", "example.com:9464", "t", &err), TB_OK);
    cr_assert_eq(app_metrics_start(c, APP_METRICS_RUN, &m, &err), TB_ERR_CONFIG);
    cr_assert_not_null(strstr(err.msg, "not a numeric IP address"), "%s", err.msg);
    cr_assert_eq(cfg_set(c, "metrics.listen", "127.0.0.1:0", "t", &err), TB_OK);
    cr_assert_eq(app_metrics_start(c, APP_METRICS_RUN, &m, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(m);
    app_metrics_stop(m);
    cfg_free(c);
}

/* Every "expr" string anywhere under j, appended to out with newlines. */
static void collect_exprs(json_t *j, tb_buf *out)
{
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (strcmp(k, "expr") == 0 && json_is_string(v)) {
                tb_buf_puts(out, json_string_value(v));
                tb_buf_putc(out, '\n');
            } else {
                collect_exprs(v, out);
            }
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) collect_exprs(v, out);
    }
}

Test(app_metrics, grafana_dashboard_queries_only_exported_series)
{
    json_error_t jerr;
    json_t *dash = json_load_file(TB_SOURCE_DIR "/contrib/grafana/tributary.json", 0, &jerr);
    cr_assert_not_null(dash, "contrib/grafana/tributary.json:%d: %s", jerr.line, jerr.text);
    cr_assert(json_is_array(json_object_get(dash, "panels")) && json_array_size(json_object_get(dash, "panels")) >= 10);
    /* what the connector exports: the families of a run and a cache registry */
    tb_buf exported;
    tb_buf_init(&exported, 0);
    app_metrics *run = app_metrics_new("x", APP_METRICS_RUN), *cache = app_metrics_new("x", APP_METRICS_CACHE);
    cr_assert_eq(app_metrics_render(run, &exported), TB_OK);
    cr_assert_eq(app_metrics_render(cache, &exported), TB_OK);
    tb_buf exprs;
    tb_buf_init(&exprs, 0);
    collect_exprs(dash, &exprs);
    const char *s = tb_buf_cstr(&exprs);
    size_t names = 0;
    for (const char *p = strstr(s, "tributary_"); p; p = strstr(p, "tributary_")) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        char want[160];
        snprintf(want, sizeof want, "# TYPE %.*s ", (int)n, p);
        cr_assert_not_null(strstr(tb_buf_cstr(&exported), want), "the dashboard queries %.*s, which is not exported",
                           (int)n, p);
        names++;
        p += n;
    }
    cr_assert_geq(names, 15, "%s", s);
    /* the panels the dashboard promises */
    const char *must[] = {"tributary_events_total", "tributary_lag_seconds", "tributary_source_connected",
                          "tributary_snapshot_rows_total", "tributary_kafka_queue_messages",
                          "tributary_cache_lag_messages", "tributary_cache_partition_lag_messages",
                          "tributary_snapshot_rows_estimated"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        cr_assert_not_null(strstr(s, must[i]), "no panel queries %s", must[i]);
    tb_buf_free(&exprs);
    tb_buf_free(&exported);
    app_metrics_stop(run);
    app_metrics_stop(cache);
    json_decref(dash);
}
