/*
 * app_health: the one judgement of whether `tributary run` is healthy, shared
 * by GET /health (app_metrics_health) and the status file that `tributary
 * status` reads (app_status, "health"), so the two never disagree.
 *
 *   unhealthy: failed; the source connection down (state reconnecting, or
 *              streaming without a connection); Kafka unreachable (librdkafka's
 *              statistics, not older than their staleness limit, say no broker
 *              with a node id is UP, and messages wait or the HA lease waits
 *              for the group coordinator); messages waiting 10 s or more for
 *              Kafka's acknowledgement; a send waiting for the schema registry
 *              (Avro), which does not answer; the lease not confirmed (producing
 *              nothing) with Kafka up
 *   not active (healthy, but not serving): standby, starting, stopping, stopped
 */
#ifndef APP_HEALTH_H
#define APP_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct app_health {
    bool healthy;
    bool active;
    char reason[600]; /* "" when healthy and active */
} app_health;

/* Statistics older than this say nothing about Kafka now: three intervals,
 * at least 15 s; 0 (no limit) when interval_ms <= 0. */
int64_t app_health_stats_stale_ms(int64_t interval_ms);
/* librdkafka's statistics JSON json[0..len) (NULL: none), age_ms old: no
 * broker is UP, and messages wait (or need_msgs is false: the run needs Kafka
 * now, its lease waits). Stale (stale_ms > 0 and age_ms > stale_ms) or
 * unparsable statistics: false. */
bool app_health_kafka_unreachable(const char *json, size_t len, int64_t age_ms, int64_t stale_ms, bool need_msgs);
/* What the run's health is judged from. */
typedef struct app_health_in {
    const char *state;              /* "starting", "snapshot", "streaming", "reconnecting", "standby",
                                       "stopping", "stopped", "failed" */
    const char *error;              /* last error, NULL = none */
    bool source_connected;
    int64_t source_down_since_ms;   /* Unix ms the source went down, 0 unknown (now) */
    bool kafka_unreachable;         /* app_health_kafka_unreachable */
    int64_t kafka_waiting_since_ms; /* messages waited 10 s or more: Kafka's last acknowledgement, 0 = no */
    uint64_t in_flight;             /* messages waiting for an acknowledgement */
    const char *registry_error;     /* Avro: a send waits for the schema registry, which does not answer:
                                       "<url>: <error>"; NULL = not waiting */
    bool lease_waiting;             /* the HA lease waits unconfirmed: producing nothing */
} app_health_in;

void app_health_run(app_health *h, const app_health_in *in, int64_t now_ms);

#endif
