/* kafka: librdkafka glue shared by sinks/ and cache/ (see kafka.h). */
#include "kafka.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_clock.h"
#include "tb_log.h"

/* ------------------------------------------------------------ errors */

static tb_code kafka_code_of(rd_kafka_resp_err_t rerr, bool *retriable)
{
    *retriable = false;
    switch (rerr) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return TB_OK;
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PROTOCOL:
        return TB_ERR_CONFIG;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
        return TB_ERR_INVALID;
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    /* a broker restarting: its partitions not yet in the metadata, their leaders being elected */
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
    case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
    case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
        *retriable = true;
        return TB_ERR_KAFKA;
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        return TB_ERR_NOT_FOUND;
    default:
        return TB_ERR_KAFKA;
    }
}

__attribute__((format(printf, 6, 0))) static tb_code kafka_verror(tb_error *err, tb_code code, bool retriable,
                                                                  const char *what, const char *name, const char *fmt,
                                                                  va_list ap)
{
    char ctx[512];
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    return tb_error_set(err, code, retriable, "%s: %s (%s)", ctx, what, name);
}

tb_code kafka_error(tb_error *err, rd_kafka_resp_err_t rerr, const char *fmt, ...)
{
    bool retriable;
    tb_code code = kafka_code_of(rerr, &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    va_list ap;
    va_start(ap, fmt);
    kafka_verror(err, code, retriable, rd_kafka_err2str(rerr), rd_kafka_err2name(rerr), fmt, ap);
    va_end(ap);
    return code;
}

tb_code kafka_error_obj(tb_error *err, const rd_kafka_error_t *e, const char *fmt, ...)
{
    bool retriable;
    tb_code code = kafka_code_of(rd_kafka_error_code(e), &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    retriable = rd_kafka_error_is_retriable(e) != 0;
    va_list ap;
    va_start(ap, fmt);
    kafka_verror(err, code, retriable, rd_kafka_error_string(e), rd_kafka_error_name(e), fmt, ap);
    va_end(ap);
    return code;
}

/* ------------------------------------------------------------ configuration */

void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)fac;
    tb_log_syslog(level, "kafka", buf);
}

rd_kafka_conf_t *kafka_conf_new(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (conf)
        rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    return conf;
}

tb_code kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, tb_error *err)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        return tb_error_set(err, TB_ERR_CONFIG, false, "kafka.%s: %s", key, errstr);
    return TB_OK;
}

/* The role of each property in librdkafka's property table: 'P' (producer), 'C' (consumer)
 * or '*' (both), read from the table librdkafka prints (one line a property,
 * "<name> | <C/P> | ..."), so that it is the linked version's. Built once, kept for the
 * process. */
typedef struct kafka_prop_role {
    char *name;
    char role;
} kafka_prop_role;

static kafka_prop_role *kafka_roles;
static size_t kafka_nroles;
static pthread_once_t kafka_roles_once = PTHREAD_ONCE_INIT;

static void kafka_roles_read(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return; /* nothing known: every setting is passed on, as before */
    rd_kafka_conf_properties_show(fp);
    if (fclose(fp) != 0 || !text) {
        free(text);
        return;
    }
    size_t cap = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *bar = strchr(line, '|');
        if (!bar)
            continue;
        char *role = bar + 1;
        while (*role == ' ')
            role++;
        char *end = bar;
        while (end > line && end[-1] == ' ')
            end--;
        *end = '\0';
        if (end == line || (*role != 'P' && *role != 'C' && *role != '*') || role[1] != ' ')
            continue; /* the header ("C/P"), its rule, a heading */
        if (kafka_nroles == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            kafka_prop_role *n = realloc(kafka_roles, ncap * sizeof(*n));
            if (!n)
                break;
            kafka_roles = n;
            cap = ncap;
        }
        char *name = strdup(line);
        if (!name)
            break;
        kafka_roles[kafka_nroles].name = name;
        kafka_roles[kafka_nroles++].role = *role;
    }
    free(text);
}

bool kafka_prop_ignored_by(const char *key, rd_kafka_type_t type)
{
    pthread_once(&kafka_roles_once, kafka_roles_read);
    char other = type == RD_KAFKA_PRODUCER ? 'C' : 'P';
    bool found = false;
    for (size_t i = 0; i < kafka_nroles; i++) { /* a global and a topic property may share a name */
        if (strcmp(kafka_roles[i].name, key) != 0)
            continue;
        if (kafka_roles[i].role != other)
            return false;
        found = true;
    }
    return found;
}

tb_code kafka_conf_pass(rd_kafka_conf_t *conf, rd_kafka_type_t type, const char *key, const char *value,
                        tb_error *err)
{
    if (!kafka_prop_ignored_by(key, type))
        return kafka_conf_set(conf, key, value, err);
    rd_kafka_conf_t *check = rd_kafka_conf_new();
    if (!check)
        return tb_error_set(err, TB_ERR_NOMEM, false, "kafka configuration: out of memory");
    tb_code rc = kafka_conf_set(check, key, value, err);
    rd_kafka_conf_destroy(check);
    if (rc == TB_OK)
        TB_DEBUG("kafka", "kafka.%s: a %s setting, not given to this %s", key,
                 type == RD_KAFKA_PRODUCER ? "consumer" : "producer",
                 type == RD_KAFKA_PRODUCER ? "producer" : "consumer");
    return rc;
}

/* librdkafka's refusal of a configuration, its property names as a user sets them: a
 * `name` librdkafka knows as a property becomes `kafka.name` ("`message.timeout.ms` must be
 * greater than `linger.ms`" names kafka.message.timeout.ms and kafka.linger.ms). */
static void kafka_conf_error_names(const rd_kafka_conf_t *conf, const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < cap;) {
        const char *end = *p == '`' ? strchr(p + 1, '`') : NULL;
        if (!end) {
            out[o++] = *p++;
            continue;
        }
        size_t n = (size_t)(end - p - 1); /* a quoted text, copied whole, prefixed if a property */
        char name[128], v[512];
        size_t vlen = sizeof v;
        bool prop = false;
        if (n > 0 && n < sizeof name) {
            memcpy(name, p + 1, n);
            name[n] = '\0';
            prop = rd_kafka_conf_get(conf, name, v, &vlen) == RD_KAFKA_CONF_OK; /* topic ones too */
        }
        size_t plen = prop ? 6 : 0;
        if (o + plen + n + 2 >= cap)
            break;
        out[o++] = '`';
        memcpy(out + o, "kafka.", plen);
        memcpy(out + o + plen, p + 1, n);
        o += plen + n;
        out[o++] = '`';
        p = end + 1;
    }
    out[o] = '\0';
}

tb_code kafka_client_new(rd_kafka_conf_t *conf, rd_kafka_type_t type, const char *what, rd_kafka_t **out,
                         tb_error *err)
{
    char errstr[512], named[768];
    *out = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (!*out) { /* the configuration is still the caller's */
        kafka_conf_error_names(conf, errstr, named, sizeof named);
        rd_kafka_conf_destroy(conf);
        return tb_error_set(err, TB_ERR_CONFIG, false, "cannot create the %s: %s", what, named);
    }
    return TB_OK;
}

/* ------------------------------------------------------------ admin */

rd_kafka_event_t *kafka_admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q, int timeout_ms, const bool *stop)
{
    int64_t deadline = tb_mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - tb_mono_ms();
        if (left <= 0)
            return NULL;
        if (stop && left > 100)
            left = 100;
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)left);
        if (ev)
            return ev;
        if (stop) {
            rd_kafka_poll(rk, 0);
            if (*stop)
                return NULL;
        }
    }
}

tb_code kafka_topic_create(rd_kafka_t *rk, const char *topic, int partitions, int replication_factor,
                           const char *const *configs, int timeout_ms, const bool *stop, bool *exists, tb_error *err)
{
    tb_code rc = TB_OK;
    char errstr[512];
    rd_kafka_event_t *ev = NULL;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, replication_factor, errstr, sizeof(errstr));
    if (exists)
        *exists = false;
    if (!nt) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "topic %s: %s", topic, errstr);
        goto out;
    }
    if (!q || !opt) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory", topic);
        goto out;
    }
    for (size_t i = 0; configs && configs[i] && configs[i + 1]; i += 2)
        if (rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1])) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: cannot set %s", topic, configs[i]);
            goto out;
        }
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
    if (!(ev = kafka_admin_wait(rk, q, timeout_ms + 1000, stop))) {
        rc = tb_error_set(err, TB_ERR_KAFKA, true, "topic %s: CreateTopics timed out after %d ms", topic, timeout_ms);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        rc = kafka_error(err, rd_kafka_event_error(ev), "topic %s: CreateTopics", topic);
        goto out;
    }
    const rd_kafka_CreateTopics_result_t *cres = rd_kafka_event_CreateTopics_result(ev);
    size_t nres = 0;
    const rd_kafka_topic_result_t **trs = cres ? rd_kafka_CreateTopics_result_topics(cres, &nres) : NULL;
    rd_kafka_resp_err_t terr = nres == 1 ? rd_kafka_topic_result_error(trs[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    if (terr == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        if (exists)
            *exists = true;
    } else if (terr != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *detail = nres == 1 ? rd_kafka_topic_result_error_string(trs[0]) : NULL;
        rc = kafka_error(err, terr, "topic %s: CreateTopics%s%s", topic, detail ? ": " : "", detail ? detail : "");
        /* A KRaft broker that just (re)started is fenced until the controller has seen it catch up:
         * "Unable to replicate the partition ... All brokers are currently fenced" passes within
         * seconds, whatever the error code (INVALID_REPLICATION_FACTOR) says. */
        if (err && detail && strstr(detail, "fenced"))
            err->retriable = true;
    }
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    if (nt)
        rd_kafka_NewTopic_destroy(nt);
    if (q)
        rd_kafka_queue_destroy(q);
    return rc;
}

tb_code kafka_describe_configs(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
                               const char *const *keys, char **values, size_t n, int timeout_ms, const bool *stop,
                               tb_error *err)
{
    tb_code rc = TB_OK;
    char errstr[512];
    const char *what = type == RD_KAFKA_RESOURCE_BROKER ? "broker" : "topic";
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    rd_kafka_event_t *ev = NULL;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    if (!q || !res || !opt) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "%s %s: out of memory", what, name);
        goto out;
    }
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    if (type == RD_KAFKA_RESOURCE_BROKER) {
        /* a broker's configuration is read from that broker */
        int32_t id = (int32_t)atoi(name);
        rd_kafka_AdminOptions_set_broker(opt, id, errstr, sizeof(errstr));
    }
    rd_kafka_DescribeConfigs(rk, &res, 1, opt, q);
    if (!(ev = kafka_admin_wait(rk, q, timeout_ms + 1000, stop))) {
        rc = tb_error_set(err, TB_ERR_KAFKA, true, "%s %s: DescribeConfigs timed out after %d ms", what, name,
                          timeout_ms);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        rc = kafka_error(err, rd_kafka_event_error(ev), "%s %s: DescribeConfigs", what, name);
        goto out;
    }
    const rd_kafka_DescribeConfigs_result_t *dres = rd_kafka_event_DescribeConfigs_result(ev);
    size_t nres = 0;
    const rd_kafka_ConfigResource_t **rs = dres ? rd_kafka_DescribeConfigs_result_resources(dres, &nres) : NULL;
    if (nres != 1) {
        rc = tb_error_set(err, TB_ERR_KAFKA, false, "%s %s: DescribeConfigs returned %zu resources", what, name,
                          nres);
        goto out;
    }
    if (rd_kafka_ConfigResource_error(rs[0])) {
        rc = kafka_error(err, rd_kafka_ConfigResource_error(rs[0]), "%s %s: DescribeConfigs", what, name);
        goto out;
    }
    size_t nent = 0;
    const rd_kafka_ConfigEntry_t **ents = rd_kafka_ConfigResource_configs(rs[0], &nent);
    for (size_t e = 0; e < nent; e++)
        for (size_t i = 0; i < n; i++)
            if (!values[i] && strcmp(rd_kafka_ConfigEntry_name(ents[e]), keys[i]) == 0 &&
                rd_kafka_ConfigEntry_value(ents[e]) &&
                !(values[i] = strdup(rd_kafka_ConfigEntry_value(ents[e])))) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "%s %s: out of memory", what, name);
                goto out;
            }
out:
    if (rc != TB_OK)
        for (size_t i = 0; i < n; i++) {
            free(values[i]);
            values[i] = NULL;
        }
    if (ev)
        rd_kafka_event_destroy(ev);
    if (res)
        rd_kafka_ConfigResource_destroy(res);
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    if (q)
        rd_kafka_queue_destroy(q);
    return rc;
}

tb_code kafka_cluster_metadata(rd_kafka_t *rk, const char *topic, int timeout_ms, kafka_cluster_md *out,
                               tb_error *err)
{
    out->brokers = 0;
    out->broker_id = -1;
    out->replicas = -1;
    rd_kafka_topic_t *rkt = NULL;
    if (topic && !(rkt = rd_kafka_topic_new(rk, topic, NULL)))
        return kafka_error(err, rd_kafka_last_error(), "topic %s: metadata", topic);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    tb_code rc = TB_OK;
    if (rerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = kafka_error(err, rerr, "%s%s: metadata", topic ? "topic " : "cluster", topic ? topic : "");
        goto out;
    }
    out->brokers = md->broker_cnt;
    out->broker_id = md->orig_broker_id;
    for (int t = 0; topic && t < md->topic_cnt; t++) {
        const struct rd_kafka_metadata_topic *mt = &md->topics[t];
        if (strcmp(mt->topic, topic) != 0)
            continue;
        if (mt->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            rc = kafka_error(err, mt->err, "topic %s: metadata", topic);
            goto out;
        }
        for (int p = 0; p < mt->partition_cnt; p++)
            if (out->replicas < 0 || mt->partitions[p].replica_cnt < out->replicas)
                out->replicas = mt->partitions[p].replica_cnt;
    }
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    return rc;
}

tb_code kafka_topic_missing(rd_kafka_t *rk, const char *topic, int timeout_ms, bool *missing, tb_error *err)
{
    kafka_cluster_md md;
    return kafka_topic_metadata(rk, topic, timeout_ms, missing, &md, err);
}

tb_code kafka_topic_metadata(rd_kafka_t *rk, const char *topic, int timeout_ms, bool *missing,
                             kafka_cluster_md *out, tb_error *err)
{
    *missing = false;
    out->brokers = 0;
    out->broker_id = -1;
    out->replicas = -1;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt)
        return kafka_error(err, rd_kafka_last_error(), "topic %s: metadata", topic);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    tb_code rc = TB_OK;
    if (rerr != RD_KAFKA_RESP_ERR_NO_ERROR)
        rc = kafka_error(err, rerr, "topic %s: metadata", topic);
    if (rc == TB_OK) {
        out->brokers = md->broker_cnt;
        out->broker_id = md->orig_broker_id;
    }
    for (int t = 0; rc == TB_OK && t < md->topic_cnt; t++) {
        const struct rd_kafka_metadata_topic *mt = &md->topics[t];
        if (strcmp(mt->topic, topic) != 0)
            continue;
        if (mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || mt->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
            *missing = true;
        else if (mt->err != RD_KAFKA_RESP_ERR_NO_ERROR)
            rc = kafka_error(err, mt->err, "topic %s: metadata", topic);
        for (int p = 0; rc == TB_OK && p < mt->partition_cnt; p++)
            if (out->replicas < 0 || mt->partitions[p].replica_cnt < out->replicas)
                out->replicas = mt->partitions[p].replica_cnt;
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return rc;
}

bool kafka_dr_unconfirmed(const rd_kafka_message_t *m)
{
    return m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset < 0;
}

/* Whether the leader of each of the topic's partitions 0..partitions-1 answers a question for it
 * (ListOffsets: the leader's own, refused by a broker not yet leader as a write would be). */
static bool kafka_partitions_led(rd_kafka_t *rk, const char *topic, int partitions)
{
    for (int p = 0; p < partitions; p++) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 1000) != RD_KAFKA_RESP_ERR_NO_ERROR)
            return false;
    }
    return true;
}

tb_code kafka_topic_wait_ready(rd_kafka_t *rk, const char *topic, int partitions, int timeout_ms, const bool *stop,
                               tb_error *err)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt)
        return kafka_error(err, rd_kafka_last_error(), "topic %s: metadata", topic);
    int64_t deadline = tb_mono_ms() + timeout_ms;
    int seen = -1, led = 0, brokers = 1, in_a_row = 0;
    tb_code rc = TB_OK;
    for (;;) {
        const struct rd_kafka_metadata *md = NULL;
        int left = (int)(deadline - tb_mono_ms());
        if (rd_kafka_metadata(rk, 0, rkt, &md, left > 1000 ? 1000 : left > 0 ? left : 1) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const struct rd_kafka_metadata_topic *mt = &md->topics[0];
            brokers = md->broker_cnt > 0 ? md->broker_cnt : 1;
            seen = mt->partition_cnt;
            led = 0;
            for (int p = 0; p < mt->partition_cnt; p++)
                led += mt->partitions[p].err == RD_KAFKA_RESP_ERR_NO_ERROR && mt->partitions[p].leader >= 0;
        }
        if (md)
            rd_kafka_metadata_destroy(md);
        /* each answer comes from a broker librdkafka picks at random: twice as many complete
         * answers in a row as there are brokers make it likely that each of them has the topic */
        in_a_row = seen == partitions && led == partitions ? in_a_row + 1 : 0;
        /* and every partition's leader answers as one: a broker names itself leader in the
         * metadata before it takes writes for the partition, and a write refused then
         * (NOT_LEADER_FOR_PARTITION) while the next is taken loses the first (kafka.h) */
        if (in_a_row >= 2 * brokers - 1 && kafka_partitions_led(rk, topic, partitions))
            break;
        seen = -1;
        if (tb_mono_ms() >= deadline || (stop && *stop)) {
            if (led == partitions)
                rc = tb_error_set(err, TB_ERR_KAFKA, true,
                                  "topic %s: created, but the leaders of its %d partitions do not answer for them "
                                  "(ListOffsets) after %d ms",
                                  topic, partitions, timeout_ms);
            else
                rc = tb_error_set(err, TB_ERR_KAFKA, true,
                                  "topic %s: created, but the metadata shows %d of its %d partitions with a leader "
                                  "after %d ms",
                                  topic, led, partitions, timeout_ms);
            break;
        }
        if (stop) {
            rd_kafka_poll(rk, 100);
        } else {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    rd_kafka_topic_destroy(rkt);
    return rc;
}
