/* Unit tests of the status file API (app_status.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app_status.h"
#include "tb_file.h"
#include "evt_json.h"
#include "json_oracle.h"

Test(app_status, json_has_every_field_and_nulls_for_unknowns)
{
    app_status st = {.name = "n", .state = "starting", .position = NULL, .lag_ms = -1, .events_behind = -1,
                     .events_per_sec = NAN, .started_ms = 5, .updated_ms = 7};
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK, "%s", err.msg);
    char want[512];
    snprintf(want, sizeof(want),
             "{\"name\":\"n\",\"pid\":%ld,\"state\":\"starting\",\"started_ms\":5,\"updated_ms\":7,\"position\":null,"
             "\"position_text\":null,\"lag_ms\":null,\"events_behind\":null,\"events_total\":0,\"events_per_sec\":0,"
             "\"snapshot\":{\"state\":\"none\",\"rows\":0},\"error\":null,\"source_down_since_ms\":null,\"kafka_waiting_since_ms\":null,"
             "\"schema_registry_down_since_ms\":null,\"schema_registry_error\":null,\"source_encrypted\":null}",
             (long)getpid());
    cr_assert_str_eq(b.data, want);
    tb_buf text;
    tb_buf_init(&text, 0);
    cr_assert_eq(app_status_format("f", b.data, b.len, 7, &text, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(text.data, "lag:            unknown\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "position:       none (nothing committed yet)\n"), "%s", text.data);
    tb_buf_free(&text);
    tb_buf_free(&b);
}

Test(app_status, default_path_follows_offsets_file)
{
    cfg *c = cfg_new();
    tb_error err;
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "tributary.status.json");
    cr_assert_eq(cfg_set(c, "offsets.file", "/var/lib/tb/shop.offsets", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "name", "shop", "t", &err), TB_OK);
    tb_buf_reset(&b);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "/var/lib/tb/shop.status.json");
    cr_assert_eq(cfg_set(c, "status.file", "/run/x.json", "t", &err), TB_OK);
    tb_buf_reset(&b);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "/run/x.json");
    tb_buf_free(&b);
    cfg_free(c);
}

Test(app_status, write_is_atomic_and_formats_back)
{
    char dir[] = "/tmp/tb-status-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/s.json", dir);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_LOG;
    p.seq = 42;
    app_status st = {.name = "x", .state = "failed", .position = &p, .lag_ms = 0, .events_behind = 0,
                     .events_total = 9, .events_per_sec = 2.5, .snapshot_state = "running", .snapshot_rows = 5,
                     .error = "source lost", .started_ms = 1000, .updated_ms = 61000};
    tb_error err;
    cr_assert_eq(app_status_write(path, &st, &err), TB_OK, "%s", err.msg);
    st.events_total = 10;
    cr_assert_eq(app_status_write(path, &st, &err), TB_OK, "%s", err.msg);
    tb_buf json, text;
    tb_buf_init(&json, 0);
    tb_buf_init(&text, 0);
    cr_assert_eq(tb_file_read(path, 0, &json, &err), TB_OK);
    cr_assert_eq(json.data[json.len - 1], '\n');
    cr_assert_eq(app_status_format(path, json.data, json.len, 63500, &text, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(text.data, "position:       sqlite-log;seq=42\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "events total:   10\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "throughput:     2.5 events/s\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "updated:        1970-01-01T00:01:01.000Z (2.5 s ago)\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "snapshot:       running (5 rows)\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "last error:     source lost\n"), "%s", text.data);
    tb_buf_reset(&text);
    cr_assert_eq(app_status_format(path, "[1]", 3, 0, &text, &err), TB_ERR_CORRUPT);
    char want[200];
    snprintf(want, sizeof(want), "%s: not a status file: no updated_ms", path);
    cr_assert_str_eq(err.msg, want);
    tb_buf_free(&json);
    tb_buf_free(&text);
    tb_position_free(&p);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A status record as run writes it, with a chosen pid and updated_ms. */
static void health_json(tb_buf *b, const char *state, long pid, int64_t updated_ms)
{
    tb_buf_reset(b);
    tb_buf_printf(b, "{\"name\":\"n\",\"pid\":%ld,\"state\":\"%s\",\"started_ms\":1,\"updated_ms\":%lld}", pid, state,
                  (long long)updated_ms);
}

Test(app_status, health_verdicts)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    int64_t now = tb_wall_ms();
    long me = (long)getpid();
    /* a pid that is surely gone: a child that exited and was reaped */
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    struct {
        const char *state;
        long pid;
        int64_t age_ms;
        int want;
        const char *why;
    } cases[] = {
        {"streaming", me, 0, 0, "healthy"},
        {"snapshot", me, 0, 0, "healthy"},
        {"starting", me, 0, 0, "healthy"},
        {"standby", me, 0, 0, "standby"},
        {"reconnecting", me, 0, 1, "source down"},
        {"failed", me, 0, 1, "failed"},
        {"failed", (long)child, 0, 1, "failed"},
        {"stopped", me, 0, 3, "stopping"},
        {"streaming", (long)child, 0, 3, "not running"},
        {"streaming", me, APP_STATUS_STALE_MS + 1000, 3, "stale: the status file is not being updated"},
        {"reconnecting", (long)child, 0, 3, "not running"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        health_json(&b, cases[i].state, cases[i].pid, now - cases[i].age_ms);
        const char *why = NULL;
        int got = app_status_health(b.data, b.len, now, &why);
        cr_assert_eq(got, cases[i].want, "%s pid %ld age %lld: %d (%s)", cases[i].state, cases[i].pid,
                     (long long)cases[i].age_ms, got, why);
        cr_assert_str_eq(why, cases[i].why);
    }
    cr_assert_eq(app_status_health("{not json", 9, now, NULL), 1);
    /* streaming, but messages have waited for Kafka's acknowledgement: unhealthy, and why */
    tb_buf_reset(&b);
    tb_buf_printf(&b,
                  "{\"name\":\"n\",\"pid\":%ld,\"state\":\"streaming\",\"started_ms\":1,\"updated_ms\":%lld,"
                  "\"kafka_waiting_since_ms\":%lld}",
                  me, (long long)now, (long long)(now - 20000));
    const char *why = NULL;
    cr_assert_eq(app_status_health(b.data, b.len, now, &why), 1);
    cr_assert_str_eq(why, "kafka not acknowledging writes");
    tb_buf_free(&b);
}

/* The run's own judgement in the file ("health", what /health says) decides
 * for a live streaming run: Kafka unreachable is exit 1 with that reason. */
Test(app_status, health_member_is_the_runs_judgement)
{
    app_health h;
    app_health_in in = {.state = "streaming", .source_connected = true, .kafka_unreachable = true};
    app_health_run(&h, &in, tb_wall_ms());
    cr_assert(!h.healthy);
    cr_assert_str_eq(h.reason, "kafka unreachable");
    app_status st = {.name = "n", .state = "streaming", .lag_ms = -1, .events_behind = -1, .health = &h};
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK);
    const char *why = NULL;
    cr_assert_eq(app_status_health(b.data, b.len, tb_wall_ms(), &why), 1, "%s", tb_buf_cstr(&b));
    cr_assert_str_eq(why, "kafka unreachable");
    in.kafka_unreachable = false;
    app_health_run(&h, &in, tb_wall_ms());
    tb_buf_reset(&b);
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK);
    cr_assert_eq(app_status_health(b.data, b.len, tb_wall_ms(), &why), 0, "%s", tb_buf_cstr(&b));
    cr_assert_str_eq(why, "healthy");
    tb_buf_free(&b);
}

/* Avro: a send waiting for the schema registry is unhealthy with the registry's URL and error, in
 * the status file (its fields, the "health" reason, `tributary status`'s text and exit code). */
Test(app_status, registry_down_is_unhealthy_and_named)
{
    const char *e = "http://127.0.0.1:1/apis/ccompat/v7: Couldn't connect to server";
    app_health h;
    app_health_in in = {.state = "streaming", .source_connected = true, .registry_error = e};
    int64_t now = tb_wall_ms();
    app_health_run(&h, &in, now);
    cr_assert(!h.healthy);
    cr_assert(h.active);
    cr_assert_str_eq(h.reason, "schema registry unreachable: http://127.0.0.1:1/apis/ccompat/v7: Couldn't connect to "
                               "server");
    app_status st = {.name = "n", .state = "streaming", .lag_ms = -1, .events_behind = -1, .health = &h,
                     .registry_down_since_ms = now - 3000, .registry_error = e};
    tb_buf b, text;
    tb_buf_init(&b, 0);
    tb_buf_init(&text, 0);
    tb_error err;
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK);
    char want[256];
    snprintf(want, sizeof want, "\"schema_registry_down_since_ms\":%lld,\"schema_registry_error\":\"%s\"",
             (long long)(now - 3000), e);
    cr_assert_not_null(strstr(b.data, want), "%s", b.data);
    const char *why = NULL;
    cr_assert_eq(app_status_health(b.data, b.len, now, &why), 1, "%s", b.data);
    cr_assert_str_eq(why, h.reason);
    cr_assert_eq(app_status_format("f", b.data, b.len, now, &text, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(text.data, "schema registry: unreachable since "), "%s", text.data);
    cr_assert_not_null(strstr(text.data, e), "%s", text.data);
    /* answering again: healthy, the fields null */
    in.registry_error = NULL;
    app_health_run(&h, &in, now);
    st.registry_down_since_ms = 0;
    st.registry_error = NULL;
    tb_buf_reset(&b);
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK);
    cr_assert_not_null(strstr(b.data, "\"schema_registry_down_since_ms\":null,\"schema_registry_error\":null"), "%s",
                       b.data);
    cr_assert_eq(app_status_health(b.data, b.len, now, &why), 0, "%s", b.data);
    tb_buf_free(&text);
    tb_buf_free(&b);
}

Test(app_status, last_words_replace_the_file)
{
    char dir[] = "/tmp/tb_status_lw_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/s.json", dir);
    app_status_last_words(); /* nothing armed: no file */
    cr_assert_neq(access(path, F_OK), 0);
    app_status_arm_last_words(path, "{\"a\":1}", 7);
    app_status_arm_last_words(path, "{\"a\":2}", 7);
    app_status_last_words();
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(tb_file_read(path, 0, &b, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(tb_buf_cstr(&b), "{\"a\":2}\n");
    tb_buf_free(&b);
    unlink(path);
    rmdir(dir);
}

Test(app_status, source_encrypted_true_false_and_its_text_line)
{
    for (int enc = -1; enc <= 1; enc += 2) {
        app_status st = {.name = "n", .state = "streaming", .lag_ms = -1, .events_behind = -1, .started_ms = 5,
                         .updated_ms = 7, .source_encrypted = enc};
        tb_buf b, text;
        tb_buf_init(&b, 0);
        tb_buf_init(&text, 0);
        tb_error err;
        cr_assert_eq(app_status_json(&st, &b, &err), TB_OK, "%s", err.msg);
        cr_assert(jo_expect_text_at(b.data, b.len, JO_PATH("source_encrypted"), enc > 0 ? "true" : "false"));
        cr_assert_eq(app_status_format("f", b.data, b.len, 7, &text, &err), TB_OK, "%s", err.msg);
        cr_assert_not_null(strstr(text.data, enc > 0 ? "source link:    encrypted (TLS)\n"
                                                     : "source link:    not encrypted (source.ssl.mode)\n"),
                           "%s", text.data);
        tb_buf_free(&text);
        tb_buf_free(&b);
    }
}
