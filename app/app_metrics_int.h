/*
 * app_metrics_int: the registry's layout, shared by app_metrics.c (registry,
 * rendering) and app_metrics_http.c (the server). Private to those two.
 */
#ifndef APP_METRICS_INT_H
#define APP_METRICS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include "app_metrics.h"
#include "tb_clock.h"

#define APP_METRICS_MAX_TABLES 4096

typedef struct app_metrics_tab {
    char *name;                  /* "db.table", immutable once published */
    _Atomic uint64_t ops[4];     /* events by op: c, u, d, r (written by the loop only) */
    _Atomic uint64_t skipped[APP_METRICS_NSKIP]; /* events not sent, by app_metrics_skip reason */
    _Atomic uint64_t resnap[APP_METRICS_NRESNAP]; /* snapshots signalled, by app_metrics_resnapshot reason */
    _Atomic int64_t estimated;   /* snapshot row estimate, -1 unknown */
    _Atomic uint64_t vrows[2];   /* verify: source rows compared, against topics [0] and the cache [1] */
    _Atomic int64_t vdiff[2][4]; /* verify: the latest pass's missing, extra, different, in flight; -1 none yet */
} app_metrics_tab;

struct app_metrics {
    char *connector;
    app_metrics_role role;
    int64_t started_ms;
    app_metrics_tab **tabs;      /* APP_METRICS_MAX_TABLES slots; the first ntabs are set */
    _Atomic size_t ntabs;
    pthread_mutex_t mu;          /* guards the members below */
    app_metrics_run run;         /* run.error and run.registry_error unused: see error, registry_error */
    char *error;
    char *registry_error;
    app_metrics_cache cache;     /* cache.parts: lags below */
    app_metrics_verify verify;
    _Atomic uint64_t scrapes;    /* GET /metrics answered (written by the HTTP thread) */
    app_metrics_lag *lags;       /* owned copies (topic strings too) */
    size_t nlags;
    char *kafka_json;            /* librdkafka statistics, NUL-terminated, or NULL */
    int64_t kafka_json_ms;       /* when it arrived (Unix ms) */
    int64_t kafka_stale_ms;      /* older statistics say nothing about Kafka now; 0 = no limit */
    struct MHD_Daemon *httpd;    /* NULL without a server */
    struct app_http *http;       /* the server's connection table and token (app_metrics_http.c) */
};

void app_metrics_free(app_metrics *m);

#endif
