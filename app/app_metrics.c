/* app_metrics: the metrics registry and its rendering (see app_metrics.h).
 * The HTTP server around it is app_metrics_http.c. */
#include "tb_cast.h"
#include "app_metrics.h"
#include "app_health.h"
#include "app_metrics_int.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evt_json.h"
#include "tb_clock.h"

/* ------------------------------------------------------------ registry */

app_metrics *app_metrics_new(const char *connector, app_metrics_role role)
{
    app_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->connector = strdup(connector && *connector ? connector : "tributary");
    m->tabs = calloc(APP_METRICS_MAX_TABLES, sizeof(*m->tabs));
    if (!m->connector || !m->tabs) {
        free(m->connector);
        free(m->tabs);
        free(m);
        return NULL;
    }
    m->role = role;
    m->started_ms = tb_wall_ms();
    pthread_mutex_init(&m->mu, NULL);
    m->run.state = "starting";
    m->run.lag_ms = -1;
    m->run.behind_bytes = -1;
    m->run.wal_bytes = m->run.wal_resets = -1;
    m->cache.state = "starting";
    m->cache.remaining = -1;
    m->verify.state = "starting";
    atomic_init(&m->scrapes, 0);
    return m;
}

void app_metrics_free(app_metrics *m)
{
    if (!m)
        return;
    size_t n = atomic_load(&m->ntabs);
    for (size_t i = 0; i < n; i++) {
        free(m->tabs[i]->name);
        free(m->tabs[i]);
    }
    free(m->tabs);
    free(m->connector);
    free(m->error);
    free(m->registry_error);
    free(m->kafka_json);
    for (size_t i = 0; i < m->nlags; i++)
        free(TB_UNCONST(m->lags[i].topic)); /* the copy app_metrics_set_cache made */
    free(m->lags);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int app_metrics_table(app_metrics *m, const char *db, const char *table)
{
    if (!m)
        return -1;
    size_t n = atomic_load(&m->ntabs);
    size_t dl = strlen(db), tl = strlen(table);
    for (size_t i = 0; i < n; i++) {
        const char *s = m->tabs[i]->name;
        if (strncmp(s, db, dl) == 0 && s[dl] == '.' && strcmp(s + dl + 1, table) == 0)
            return (int)i;
    }
    if (n >= APP_METRICS_MAX_TABLES)
        return -1;
    app_metrics_tab *t = calloc(1, sizeof(*t));
    char *name = malloc(dl + tl + 2);
    if (!t || !name) {
        free(t);
        free(name);
        return -1;
    }
    memcpy(name, db, dl);
    name[dl] = '.';
    memcpy(name + dl + 1, table, tl + 1);
    t->name = name;
    atomic_init(&t->estimated, -1);
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 4; j++)
            atomic_init(&t->vdiff[k][j], -1);
    pthread_mutex_lock(&m->mu);
    m->tabs[n] = t;
    atomic_store(&m->ntabs, n + 1); /* publishes the slot to the HTTP thread */
    pthread_mutex_unlock(&m->mu);
    return (int)n;
}

/* One more in a counter only the writer thread changes: a relaxed load and store */
static void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

void app_metrics_count(app_metrics *m, int slot, evt_op op)
{
    if (!m || slot < 0)
        return;
    int i = op == EVT_OP_CREATE ? 0 : op == EVT_OP_UPDATE ? 1 : op == EVT_OP_DELETE ? 2 : 3;
    bump(&m->tabs[slot]->ops[i]); /* one writer: no locked read-modify-write */
}

void app_metrics_skip(app_metrics *m, int slot, app_metrics_skip_reason reason)
{
    if (m && slot >= 0 && (unsigned)reason < APP_METRICS_NSKIP)
        bump(&m->tabs[slot]->skipped[reason]);
}

void app_metrics_resnapshot(app_metrics *m, int slot, app_metrics_resnap_reason reason)
{
    if (m && slot >= 0 && (unsigned)reason < APP_METRICS_NRESNAP)
        bump(&m->tabs[slot]->resnap[reason]);
}

void app_metrics_set_estimate(app_metrics *m, int slot, int64_t rows)
{
    if (m && slot >= 0)
        atomic_store_explicit(&m->tabs[slot]->estimated, rows, memory_order_relaxed);
}

void app_metrics_set_run(app_metrics *m, const app_metrics_run *v)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->run = *v;
    m->run.error = NULL;
    m->run.registry_error = NULL;
    if (!v->error || !m->error || strcmp(v->error, m->error) != 0) {
        free(m->error);
        m->error = v->error ? strdup(v->error) : NULL;
    }
    if (!v->registry_error || !m->registry_error || strcmp(v->registry_error, m->registry_error) != 0) {
        free(m->registry_error);
        m->registry_error = v->registry_error ? strdup(v->registry_error) : NULL;
    }
    pthread_mutex_unlock(&m->mu);
}

void app_metrics_set_cache(app_metrics *m, const app_metrics_cache *v)
{
    if (!m)
        return;
    /* the copies are made before the lock: the HTTP thread never waits on malloc */
    app_metrics_lag *lags = NULL;
    size_t n = 0;
    if (v->nparts > 0 && (lags = calloc(v->nparts, sizeof(*lags))) != NULL)
        for (; n < v->nparts; n++) {
            lags[n] = v->parts[n];
            if (!(lags[n].topic = strdup(v->parts[n].topic)))
                break;
        }
    pthread_mutex_lock(&m->mu);
    m->cache = *v;
    m->cache.parts = NULL;
    m->cache.nparts = 0;
    app_metrics_lag *old = NULL;
    size_t nold = 0;
    if (lags) {
        old = m->lags, nold = m->nlags;
        m->lags = lags, m->nlags = n;
    }
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < nold; i++)
        free(TB_UNCONST(old[i].topic)); /* the copy made here */
    free(old);
}

void app_metrics_set_verify(app_metrics *m, const app_metrics_verify *v)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->verify = *v;
    pthread_mutex_unlock(&m->mu);
}

void app_metrics_verify_rows(app_metrics *m, int slot, bool cache, uint64_t n)
{
    if (!m || slot < 0)
        return;
    _Atomic uint64_t *c = &m->tabs[slot]->vrows[cache];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

void app_metrics_verify_result(app_metrics *m, int slot, bool cache, uint64_t missing, uint64_t extra,
                               uint64_t different, uint64_t in_flight)
{
    if (!m || slot < 0)
        return;
    const uint64_t v[4] = {missing, extra, different, in_flight};
    for (int j = 0; j < 4; j++)
        atomic_store_explicit(&m->tabs[slot]->vdiff[cache][j], (int64_t)v[j], memory_order_relaxed);
}

uint64_t app_metrics_scrapes(const app_metrics *m)
{
    return m ? atomic_load(&m->scrapes) : 0;
}

void app_metrics_set_kafka_stats_interval(app_metrics *m, int64_t interval_ms)
{
    if (m)
        m->kafka_stale_ms = app_health_stats_stale_ms(interval_ms);
}

void app_metrics_set_kafka_stats(app_metrics *m, const char *json, size_t len)
{
    if (!m)
        return;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, json, len);
    copy[len] = '\0';
    pthread_mutex_lock(&m->mu);
    free(m->kafka_json);
    m->kafka_json = copy;
    m->kafka_json_ms = tb_wall_ms();
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------ rendering */

/* A label value, escaped as the text format wants (\\, \", \n). */
static void put_label_value(tb_buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            tb_buf_puts(out, "\\\\");
        else if (*s == '"')
            tb_buf_puts(out, "\\\"");
        else if (*s == '\n')
            tb_buf_puts(out, "\\n");
        else
            tb_buf_putc(out, *s);
    }
}

static void family(tb_buf *out, const char *name, const char *type, const char *help)
{
    tb_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{connector="...",<labels>} value: labels is NULL or pre-escaped k="v" pairs. */
static void sample_begin(tb_buf *out, const app_metrics *m, const char *name)
{
    tb_buf_printf(out, "%s{connector=\"", name);
    put_label_value(out, m->connector);
    tb_buf_putc(out, '"');
}

/* name{table,reason} of each table's counter array at offset off of app_metrics_tab (nreasons
 * counters; a NULL label is a reason kept out of this family); a counter at 0 has no sample. */
static void put_by_reason(tb_buf *out, const app_metrics *m, size_t n, const char *name, size_t off,
                          const char *const *labels, size_t nreasons)
{
    for (size_t i = 0; i < n; i++) {
        const _Atomic uint64_t *c = (const _Atomic uint64_t *)(const void *)((const char *)m->tabs[i] + off);
        for (size_t o = 0; o < nreasons; o++) {
            uint64_t v = atomic_load_explicit(&c[o], memory_order_relaxed);
            if (v == 0 || !labels[o])
                continue;
            sample_begin(out, m, name);
            tb_buf_puts(out, ",table=\"");
            put_label_value(out, m->tabs[i]->name);
            tb_buf_printf(out, "\",reason=\"%s\"} %llu\n", labels[o], (unsigned long long)v);
        }
    }
}

static void sample_i(tb_buf *out, const app_metrics *m, const char *name, int64_t v)
{
    sample_begin(out, m, name);
    tb_buf_printf(out, "} %lld\n", (long long)v);
}

static void sample_d(tb_buf *out, const app_metrics *m, const char *name, double v)
{
    sample_begin(out, m, name);
    tb_buf_printf(out, "} %.17g\n", v);
}

static void gauge_i(tb_buf *out, const app_metrics *m, const char *name, const char *help, int64_t v)
{
    family(out, name, "gauge", help);
    sample_i(out, m, name, v);
}

static void counter_i(tb_buf *out, const app_metrics *m, const char *name, const char *help, int64_t v)
{
    family(out, name, "counter", help);
    sample_i(out, m, name, v);
}

static int64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long pages = 0, resident = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lld %lld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

static int64_t json_i(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* tributary_kafka_* from librdkafka's statistics JSON (see librdkafka's
 * STATISTICS.md): the client's queue, and per broker (bootstrap entries
 * without a node id left out) state, in-flight requests, retries, errors
 * and round-trip time. */
static void render_kafka(tb_buf *out, const app_metrics *m, const char *js)
{
    json_error_t jerr;
    json_t *root = js ? json_loads(js, 0, &jerr) : NULL;
    json_t *brokers = root ? json_object_get(root, "brokers") : NULL;
    gauge_i(out, m, "tributary_kafka_stats_available", "1 when librdkafka statistics were received (kafka.statistics.interval.ms).",
            root ? 1 : 0);
    gauge_i(out, m, "tributary_kafka_queue_messages", "Messages in the producer's queues (librdkafka msg_cnt).",
            root ? json_i(root, "msg_cnt") : 0);
    gauge_i(out, m, "tributary_kafka_queue_bytes", "Bytes of messages in the producer's queues (librdkafka msg_size).",
            root ? json_i(root, "msg_size") : 0);
    struct {
        const char *name, *type, *help;
    } fams[] = {
        {"tributary_kafka_broker_up", "gauge", "1 when the connection to the broker is up (state UP)."},
        {"tributary_kafka_broker_inflight_requests", "gauge", "Requests sent to the broker and awaiting a response, plus requests queued for it (waitresp_cnt + outbuf_cnt)."},
        {"tributary_kafka_broker_retries_total", "counter", "Requests retried to the broker (txretries)."},
        {"tributary_kafka_broker_request_errors_total", "counter", "Transmission and receive errors and request timeouts with the broker (txerrs + rxerrs + req_timeouts)."},
        {"tributary_kafka_broker_rtt_seconds", "gauge", "Average round-trip time to the broker over the last statistics window (rtt.avg)."},
    };
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        family(out, fams[f].name, fams[f].type, fams[f].help);
        const char *key;
        json_t *b;
        json_object_foreach(brokers, key, b)
        {
            if (json_i(b, "nodeid") < 0)
                continue;
            json_t *nn = json_object_get(b, "nodename");
            sample_begin(out, m, fams[f].name);
            tb_buf_puts(out, ",broker=\"");
            put_label_value(out, json_is_string(nn) ? json_string_value(nn) : key);
            tb_buf_puts(out, "\"} ");
            switch (f) {
            case 0: {
                json_t *st = json_object_get(b, "state");
                tb_buf_puts(out, json_is_string(st) && strcmp(json_string_value(st), "UP") == 0 ? "1" : "0");
                break;
            }
            case 1:
                tb_buf_printf(out, "%lld", (long long)(json_i(b, "waitresp_cnt") + json_i(b, "outbuf_cnt")));
                break;
            case 2:
                tb_buf_printf(out, "%lld", (long long)json_i(b, "txretries"));
                break;
            case 3:
                tb_buf_printf(out, "%lld",
                              (long long)(json_i(b, "txerrs") + json_i(b, "rxerrs") + json_i(b, "req_timeouts")));
                break;
            default:
                tb_buf_printf(out, "%.6f", (double)json_i(json_object_get(b, "rtt"), "avg") / 1e6);
                break;
            }
            tb_buf_putc(out, '\n');
        }
    }
    json_decref(root);
}

/* Whether librdkafka's newest statistics show no broker up (false when
 * unknown). Under m->mu. */
/* No broker up while messages wait to be sent. An idle producer's connection
 * may be closed (by the broker or the network) and is reopened only when a
 * message needs it, so "no broker up" alone is not a fault. */
static bool kafka_unreachable(const app_metrics *m, int64_t now_ms)
{
    return m->kafka_json && app_health_kafka_unreachable(m->kafka_json, strlen(m->kafka_json), now_ms - m->kafka_json_ms,
                                                         m->kafka_stale_ms, !m->run.lease_waiting);
}

static const char *const app_metrics_states[] = {"starting", "snapshot", "streaming", "reconnecting", "standby",
                                                 "stopping", "stopped", "failed", NULL};
static const char *const app_metrics_cache_states[] = {"starting", "catching_up", "caught_up", "stopped", "failed",
                                                       NULL};
static const char *const app_metrics_ops[] = {"c", "u", "d", "r"};
static const char *const app_metrics_verify_states[] = {"starting", "waiting", "comparing", "repairing", "done",
                                                        "failed", NULL};
static const char *const app_metrics_against[] = {"topics", "cache"};

/* name{connector,table,against="..."}: the start of a verify sample of table t. */
static void verify_sample(tb_buf *out, const app_metrics *m, const char *name, const app_metrics_tab *t, int against)
{
    sample_begin(out, m, name);
    tb_buf_puts(out, ",table=\"");
    put_label_value(out, t->name);
    tb_buf_printf(out, "\",against=\"%s\"", app_metrics_against[against]);
}

/* The series of `tributary verify` (docs/metrics.md). */
static void render_verify(tb_buf *out, const app_metrics *m, const app_metrics_verify *v, size_t n)
{
    family(out, "tributary_verify_state", "gauge", "1 for verify's current state, 0 for the others.");
    for (size_t i = 0; app_metrics_verify_states[i]; i++) {
        sample_begin(out, m, "tributary_verify_state");
        tb_buf_printf(out, ",state=\"%s\"} %d\n", app_metrics_verify_states[i],
                      strcmp(v->state, app_metrics_verify_states[i]) == 0);
    }
    family(out, "tributary_verify_passes_total", "counter",
           "Passes run (a consistent read of the source compared with the other side), against topics or the "
           "cache.");
    for (int k = 0; k < 2; k++) {
        sample_begin(out, m, "tributary_verify_passes_total");
        tb_buf_printf(out, ",against=\"%s\"} %llu\n", app_metrics_against[k], (unsigned long long)v->passes[k]);
    }
    gauge_i(out, m, "tributary_verify_connector_behind",
            "1 when the connector's committed position did not reach a source read's position within --wait-ms.",
            v->behind);
    family(out, "tributary_verify_rows_total", "counter",
           "Source rows compared, by table and against (topics, cache), all passes together.");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            if (atomic_load_explicit(&m->tabs[i]->vdiff[k][0], memory_order_relaxed) < 0 &&
                atomic_load_explicit(&m->tabs[i]->vrows[k], memory_order_relaxed) == 0)
                continue; /* not compared on that side */
            verify_sample(out, m, "tributary_verify_rows_total", m->tabs[i], k);
            tb_buf_printf(out, "} %llu\n",
                          (unsigned long long)atomic_load_explicit(&m->tabs[i]->vrows[k], memory_order_relaxed));
        }
    family(out, "tributary_verify_differences", "gauge",
           "Keys that differ in the table's latest pass, by kind: missing (in the source, not the other side), "
           "extra (the reverse), different.");
    static const char *const kinds[] = {"missing", "extra", "different"};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3; j++) {
                int64_t d = atomic_load_explicit(&m->tabs[i]->vdiff[k][j], memory_order_relaxed);
                if (d < 0)
                    continue;
                verify_sample(out, m, "tributary_verify_differences", m->tabs[i], k);
                tb_buf_printf(out, ",kind=\"%s\"} %lld\n", kinds[j], (long long)d);
            }
    family(out, "tributary_verify_in_flight_keys", "gauge",
           "Keys changed after the source read of the table's latest pass: not compared, not differences.");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            int64_t d = atomic_load_explicit(&m->tabs[i]->vdiff[k][3], memory_order_relaxed);
            if (d < 0)
                continue;
            verify_sample(out, m, "tributary_verify_in_flight_keys", m->tabs[i], k);
            tb_buf_printf(out, "} %lld\n", (long long)d);
        }
}

tb_code app_metrics_render(app_metrics *m, tb_buf *out)
{
    pthread_mutex_lock(&m->mu);
    app_metrics_run run = m->run;
    app_metrics_cache cache = m->cache;
    app_metrics_verify verify = m->verify;
    char *kjs = m->kafka_json ? strdup(m->kafka_json) : NULL;
    pthread_mutex_unlock(&m->mu);
    size_t n = atomic_load(&m->ntabs);

    gauge_i(out, m, "tributary_start_time_seconds", "Start time of the process since the Unix epoch.",
            m->started_ms / 1000);
    gauge_i(out, m, "tributary_process_resident_memory_bytes", "Resident set size of the process.", rss_bytes());
    if (m->role == APP_METRICS_VERIFY) {
        render_verify(out, m, &verify, n);
        free(kjs);
        return tb_buf_putc(out, '\0') == TB_OK ? (out->len--, TB_OK) : TB_ERR_NOMEM;
    }
    if (m->role == APP_METRICS_CACHE) {
        family(out, "tributary_cache_state", "gauge", "1 for the cache consumer's current state, 0 for the others.");
        for (size_t i = 0; app_metrics_cache_states[i]; i++) {
            sample_begin(out, m, "tributary_cache_state");
            tb_buf_printf(out, ",state=\"%s\"} %d\n", app_metrics_cache_states[i],
                          strcmp(cache.state, app_metrics_cache_states[i]) == 0);
        }
        counter_i(out, m, "tributary_cache_messages_applied_total",
                  "Messages applied to the table cache in this run (upserts and deletes; schema records not counted, as in `cache status`).",
                  (int64_t)cache.messages);
        gauge_i(out, m, "tributary_cache_lag_messages",
                "Messages still to apply up to the high watermarks recorded at start (-1 unknown).", cache.remaining);
        gauge_i(out, m, "tributary_cache_caught_up", "1 once every partition reached its start high watermark.",
                cache.caught_up);
        family(out, "tributary_cache_partition_lag_messages", "gauge",
               "Consumer lag of an assigned partition: messages from the next offset to apply to the newest known "
               "high watermark (-1 unknown).");
        pthread_mutex_lock(&m->mu);
        for (size_t i = 0; i < m->nlags; i++) {
            sample_begin(out, m, "tributary_cache_partition_lag_messages");
            tb_buf_puts(out, ",topic=\"");
            put_label_value(out, m->lags[i].topic);
            tb_buf_printf(out, "\",partition=\"%d\"} %lld\n", (int)m->lags[i].partition, (long long)m->lags[i].lag);
        }
        pthread_mutex_unlock(&m->mu);
        free(kjs);
        return tb_buf_putc(out, '\0') == TB_OK ? (out->len--, TB_OK) : TB_ERR_NOMEM;
    }

    family(out, "tributary_state", "gauge", "1 for the connector's current state, 0 for the others.");
    for (size_t i = 0; app_metrics_states[i]; i++) {
        sample_begin(out, m, "tributary_state");
        tb_buf_printf(out, ",state=\"%s\"} %d\n", app_metrics_states[i], strcmp(run.state, app_metrics_states[i]) == 0);
    }
    gauge_i(out, m, "tributary_source_connected", "1 while the source connection is up.", run.source_connected);
    gauge_i(out, m, "tributary_source_encrypted", "1 while the MySQL/MariaDB replication connection uses TLS.",
            run.source_encrypted);
    gauge_i(out, m, "tributary_source_down_since_seconds",
            "Time the source connection went down, since the Unix epoch; 0 while it is up.",
            run.source_down_since_ms / 1000);
    gauge_i(out, m, "tributary_kafka_waiting_seconds",
            "Seconds since Kafka last acknowledged a message while messages have waited 10 s or more for an "
            "acknowledgement (brokers down, fewer in-sync replicas than min.insync.replicas); 0 otherwise.",
            run.kafka_waiting_since_ms > 0 ? (tb_wall_ms() - run.kafka_waiting_since_ms) / 1000 : 0);
    gauge_i(out, m, "tributary_schema_registry_down_since_seconds",
            "Avro: time since the Unix epoch a send began to wait for the schema registry, which does not "
            "answer (nothing is sent meanwhile); 0 while it answers or is not used.",
            run.registry_down_since_ms / 1000);
    counter_i(out, m, "tributary_source_reconnects_total", "Source connections lost (each one is retried).",
              (int64_t)run.reconnects);
    family(out, "tributary_lag_seconds", "gauge",
           "Source commit time of the newest event sent to the sink, to now; 0 when caught up and "
           "acknowledged; -1 unknown.");
    sample_d(out, m, "tributary_lag_seconds", run.lag_ms < 0 ? -1.0 : (double)run.lag_ms / 1000.0);
    gauge_i(out, m, "tributary_source_behind_bytes",
            "MySQL/MariaDB: bytes of binlog on the server after the read position (-1 unknown).",
            run.behind_unit && strcmp(run.behind_unit, "bytes") == 0 ? run.behind_bytes : -1);
    gauge_i(out, m, "tributary_source_behind_frames",
            "SQLite: WAL frames after the read position (-1 unknown).",
            run.behind_unit && strcmp(run.behind_unit, "frames") == 0 ? run.behind_bytes : -1);
    gauge_i(out, m, "tributary_sqlite_wal_bytes",
            "SQLite: size of the application's WAL file (bounded by source.sqlite.wal.max.bytes while the reader "
            "keeps up; -1 unknown).",
            run.wal_bytes);
    gauge_i(out, m, "tributary_sqlite_wal_resets", "SQLite: WAL resets (generations) seen since start (-1 unknown).",
            run.wal_resets);
    family(out, "tributary_events_total", "counter", "Change events sent to the sink, by table and op (c, u, d, r).");
    for (size_t i = 0; i < n; i++)
        for (size_t o = 0; o < 4; o++) {
            uint64_t v = atomic_load_explicit(&m->tabs[i]->ops[o], memory_order_relaxed);
            if (v == 0 && o != 0)
                continue;
            sample_begin(out, m, "tributary_events_total");
            tb_buf_puts(out, ",table=\"");
            put_label_value(out, m->tabs[i]->name);
            tb_buf_printf(out, "\",op=\"%s\"} %llu\n", app_metrics_ops[o], (unsigned long long)v);
        }
    family(out, "tributary_events_skipped_total", "counter",
           "Change events of captured tables not sent, by table and reason: oversize (over message.max.bytes, "
           "oversize.policy=skip), no_key (a table without a primary key or key.columns), sequence (a MariaDB "
           "SEQUENCE's generator state). Not in "
           "tributary_events_total.");
    static const char *const skip_reasons[APP_METRICS_NSKIP] = {"oversize", NULL, "no_key", "sequence"};
    put_by_reason(out, m, n, "tributary_events_skipped_total", offsetof(app_metrics_tab, skipped), skip_reasons,
                  APP_METRICS_NSKIP);
    family(out, "tributary_resnapshots_total", "counter",
           "Incremental snapshots the run signalled itself, by table and reason, for rows that changed (or a topic "
           "that lost them) without row events: alter (ddl.alter.policy=resnapshot), rename (a table renamed into "
           "the captured set), fk_action (a foreign key's ON DELETE / ON UPDATE action, "
           "source.fk.cascade.policy=resnapshot), topic_missing (topic.missing.policy=resnapshot).");
    static const char *const resnap_reasons[APP_METRICS_NRESNAP] = {"alter", "rename", "fk_action", "topic_missing"};
    put_by_reason(out, m, n, "tributary_resnapshots_total", offsetof(app_metrics_tab, resnap), resnap_reasons,
                  APP_METRICS_NRESNAP);
    family(out, "tributary_events_dead_lettered_total", "counter",
           "Change events over message.max.bytes written to the dead-letter topic <name>.dlq instead "
           "(oversize.policy=dlq), by table. Not in tributary_events_total.");
    for (size_t i = 0; i < n; i++) {
        uint64_t v = atomic_load_explicit(&m->tabs[i]->skipped[APP_METRICS_SKIP_DLQ], memory_order_relaxed);
        if (v == 0)
            continue;
        sample_begin(out, m, "tributary_events_dead_lettered_total");
        tb_buf_puts(out, ",table=\"");
        put_label_value(out, m->tabs[i]->name);
        tb_buf_printf(out, "\"} %llu\n", (unsigned long long)v);
    }
    family(out, "tributary_snapshot_rows_total", "counter", "Snapshot rows sent to the sink, by table.");
    for (size_t i = 0; i < n; i++) {
        uint64_t v = atomic_load_explicit(&m->tabs[i]->ops[3], memory_order_relaxed);
        int64_t est = atomic_load_explicit(&m->tabs[i]->estimated, memory_order_relaxed);
        if (v == 0 && est < 0)
            continue;
        sample_begin(out, m, "tributary_snapshot_rows_total");
        tb_buf_puts(out, ",table=\"");
        put_label_value(out, m->tabs[i]->name);
        tb_buf_printf(out, "\"} %llu\n", (unsigned long long)v);
    }
    family(out, "tributary_snapshot_rows_estimated", "gauge",
           "The source's estimate of a table's rows when its snapshot started (information_schema).");
    for (size_t i = 0; i < n; i++) {
        int64_t est = atomic_load_explicit(&m->tabs[i]->estimated, memory_order_relaxed);
        if (est < 0)
            continue;
        sample_begin(out, m, "tributary_snapshot_rows_estimated");
        tb_buf_puts(out, ",table=\"");
        put_label_value(out, m->tabs[i]->name);
        tb_buf_printf(out, "\"} %lld\n", (long long)est);
    }
    counter_i(out, m, "tributary_sink_messages_acked_total",
              "Messages the sink got acknowledged by Kafka (stdout sink: written), schema records included.",
              (int64_t)run.acked);
    gauge_i(out, m, "tributary_sink_inflight_messages", "Messages sent and not yet acknowledged.",
            (int64_t)run.in_flight);
    family(out, "tributary_errors_total", "counter", "Errors by kind.");
    sample_begin(out, m, "tributary_errors_total");
    tb_buf_printf(out, ",kind=\"source_connection\"} %llu\n", (unsigned long long)run.reconnects);
    sample_begin(out, m, "tributary_errors_total");
    tb_buf_printf(out, ",kind=\"kafka_transaction_aborted\"} %llu\n", (unsigned long long)run.restarts);
    sample_begin(out, m, "tributary_errors_total");
    tb_buf_printf(out, ",kind=\"kafka_producer_replaced\"} %llu\n", (unsigned long long)run.producer_restarts);
    sample_begin(out, m, "tributary_errors_total");
    tb_buf_printf(out, ",kind=\"fatal\"} %d\n", strcmp(run.state, "failed") == 0);
    render_kafka(out, m, kjs);
    free(kjs);
    return tb_buf_putc(out, '\0') == TB_OK ? (out->len--, TB_OK) : TB_ERR_NOMEM;
}

int app_metrics_health(app_metrics *m, int64_t now_ms, tb_buf *out)
{
    pthread_mutex_lock(&m->mu);
    const char *state = m->role == APP_METRICS_CACHE    ? m->cache.state
                        : m->role == APP_METRICS_VERIFY ? m->verify.state
                                                        : m->run.state;
    bool healthy = true, active = true;
    char reason[600] = "";
    if (m->role == APP_METRICS_VERIFY) {
        if (strcmp(state, "failed") == 0)
            healthy = false, snprintf(reason, sizeof reason, "failed");
    } else if (m->role == APP_METRICS_CACHE) {
        if (strcmp(state, "failed") == 0)
            healthy = false, snprintf(reason, sizeof reason, "failed");
        else if (strcmp(state, "stopped") == 0)
            active = false, snprintf(reason, sizeof reason, "stopping");
    } else {
        app_health h;
        app_health_in in = {
            .state = state,
            .error = m->error,
            .source_connected = m->run.source_connected,
            .source_down_since_ms = m->run.source_down_since_ms,
            .kafka_unreachable = kafka_unreachable(m, now_ms),
            .kafka_waiting_since_ms = m->run.kafka_waiting_since_ms,
            .registry_error = m->run.registry_down_since_ms > 0 && m->registry_error ? m->registry_error : NULL,
            .in_flight = m->run.in_flight,
            .lease_waiting = m->run.lease_waiting,
        };
        app_health_run(&h, &in, now_ms);
        healthy = h.healthy;
        active = h.active;
        memcpy(reason, h.reason, sizeof reason);
    }
    int64_t lag = m->run.lag_ms;
    pthread_mutex_unlock(&m->mu);
    bool ok = healthy && active;
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "status", (size_t)-1);
    const char *status = ok ? "ok" : healthy ? "unavailable" : "unhealthy";
    evt_jw_str(&w, status, strlen(status));
    evt_jw_key(&w, "connector", (size_t)-1);
    evt_jw_str(&w, m->connector, strlen(m->connector));
    evt_jw_key(&w, "state", (size_t)-1);
    evt_jw_str(&w, state, strlen(state));
    evt_jw_key(&w, "healthy", (size_t)-1);
    evt_jw_bool(&w, healthy);
    evt_jw_key(&w, "active", (size_t)-1);
    evt_jw_bool(&w, active);
    evt_jw_key(&w, "reason", (size_t)-1);
    if (reason[0])
        evt_jw_str(&w, reason, strlen(reason));
    else
        evt_jw_null(&w);
    if (m->role == APP_METRICS_RUN) {
        evt_jw_key(&w, "lag_ms", (size_t)-1);
        if (lag >= 0)
            evt_jw_int(&w, lag);
        else
            evt_jw_null(&w);
    }
    evt_jw_obj_end(&w);
    if (evt_jw_finish(&w) != TB_OK || tb_buf_putc(out, '\n') != TB_OK)
        return 500; /* out of memory: the body is not whole */
    return ok ? 200 : 503;
}
