/*
 * app_health: see app_health.h.
 */
#include "app_health.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t app_health_stats_stale_ms(int64_t interval_ms)
{
    return interval_ms > 0 ? (3 * interval_ms > 15000 ? 3 * interval_ms : 15000) : 0;
}

static int64_t json_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* The client's connection to a broker may be closed (by the broker or the
 * network) and is reopened only when a message needs it, so "no broker up"
 * alone is not a fault: messages must be waiting too. */
bool app_health_kafka_unreachable(const char *json, size_t len, int64_t age_ms, int64_t stale_ms, bool need_msgs)
{
    if (!json || len == 0)
        return false;
    if (stale_ms > 0 && age_ms > stale_ms) /* statistics that stopped arriving are not evidence */
        return false;
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root || (need_msgs && json_int(root, "msg_cnt") <= 0)) {
        json_decref(root);
        return false;
    }
    bool any = false, up = false;
    const char *key;
    json_t *b;
    json_object_foreach(json_object_get(root, "brokers"), key, b)
    {
        if (json_int(b, "nodeid") < 0)
            continue;
        any = true;
        json_t *st = json_object_get(b, "state");
        if (json_is_string(st) && strcmp(json_string_value(st), "UP") == 0)
            up = true;
    }
    json_decref(root);
    return any && !up;
}

static void iso_time(int64_t ms, char out[40])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void app_health_run(app_health *h, const app_health_in *in, int64_t now_ms)
{
    h->healthy = h->active = true;
    h->reason[0] = 0;
    const char *state = in->state ? in->state : "starting";
    if (strcmp(state, "failed") == 0) {
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "failed: %s", in->error ? in->error : "unknown error");
    } else if (strcmp(state, "reconnecting") == 0 || (!in->source_connected && strcmp(state, "streaming") == 0)) {
        char t[40];
        iso_time(in->source_down_since_ms ? in->source_down_since_ms : now_ms, t);
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "source down since %s", t);
    } else if (in->kafka_unreachable) {
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "kafka unreachable");
    } else if (in->kafka_waiting_since_ms > 0) {
        char t[40];
        iso_time(in->kafka_waiting_since_ms, t);
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "kafka not acknowledging writes since %s (%llu messages waiting)", t,
                 (unsigned long long)in->in_flight);
    } else if (in->registry_error) {
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "schema registry unreachable: %s", in->registry_error);
    } else if (in->lease_waiting) {
        h->healthy = false;
        snprintf(h->reason, sizeof h->reason, "lease not confirmed: producing nothing");
    } else if (strcmp(state, "standby") == 0) {
        h->active = false;
        snprintf(h->reason, sizeof h->reason, "standby");
    } else if (strcmp(state, "starting") == 0 || strcmp(state, "stopping") == 0 || strcmp(state, "stopped") == 0) {
        h->active = false;
        snprintf(h->reason, sizeof h->reason, "%s", strcmp(state, "starting") == 0 ? "starting" : "stopping");
    }
}
