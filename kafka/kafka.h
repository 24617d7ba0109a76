/*
 * kafka: the librdkafka glue that sinks/ and cache/ share (DESIGN 2): client
 * configuration whose errors name the key, the log callback, the translation
 * of librdkafka's errors into tb_codes (the one place it happens, STYLE 2) and
 * topic creation through the Admin API.
 *
 * Ownership: kafka_conf_new() returns a configuration the caller destroys, or
 * hands to kafka_client_new(), which takes it in every case. Nothing here keeps
 * a pointer to its arguments.
 */
#ifndef TB_KAFKA_H
#define TB_KAFKA_H

#include <stdbool.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

#include "tb_clock.h"
#include "tb_error.h"

/* librdkafka's log lines into tb_log (facility "kafka"). Called on librdkafka's
 * threads: it only forwards. */
void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* A new configuration with kafka_log_cb set. NULL only when out of memory. */
rd_kafka_conf_t *kafka_conf_new(void);

/* Set one property. TB_ERR_CONFIG "kafka.<key>: <librdkafka's reason>" (the value
 * is not repeated: it may be a secret). */
TB_MUST_USE tb_code kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, tb_error *err);

/* Whether a client of type ignores librdkafka property key: a producer property for a
 * consumer, or the other way round, as the linked librdkafka's own property table says
 * (rd_kafka_conf_properties_show, read once). Properties for both, topic properties for both,
 * and keys the table does not list are not ignored. */
bool kafka_prop_ignored_by(const char *key, rd_kafka_type_t type);

/* A pass-through setting (a kafka.* key without its prefix) for a client of type: set as
 * kafka_conf_set does, unless such a client ignores it (kafka_prop_ignored_by). Then it is
 * checked on a configuration of its own, so that a bad value is still an error, and left
 * out, so that librdkafka does not warn "is a producer property and will be ignored by this
 * consumer instance" at each client the run makes. */
TB_MUST_USE tb_code kafka_conf_pass(rd_kafka_conf_t *conf, rd_kafka_type_t type, const char *key, const char *value,
                                    tb_error *err);

/* rd_kafka_new; conf is taken (destroyed on failure). what names the client in
 * the error ("DLQ producer"): TB_ERR_CONFIG "cannot create the <what>: <reason>". */
TB_MUST_USE tb_code kafka_client_new(rd_kafka_conf_t *conf, rd_kafka_type_t type, const char *what, rd_kafka_t **out,
                         tb_error *err);

/* Fill err from a librdkafka error: "<context>: <reason> (<ERR_NAME>)", the code
 * and whether a retry can help. Returns the code (TB_ERR_KAFKA for an unknown
 * error, also for NO_ERROR). */
tb_code kafka_error(tb_error *err, rd_kafka_resp_err_t rerr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tb_code kafka_error_obj(tb_error *err, const rd_kafka_error_t *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Wait for an admin result event on q, for up to timeout_ms. With stop, the
 * client's callbacks are served every 100 ms meanwhile (rd_kafka_poll: its error
 * callback may find a refused login) and the wait ends early, NULL, once *stop
 * is set. NULL on timeout; otherwise the caller destroys the event. */
rd_kafka_event_t *kafka_admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q, int timeout_ms, const bool *stop);

/* Create topic with CreateTopics. configs: NULL or topic configuration as
 * name, value pairs ending with NULL ("cleanup.policy", "compact", NULL);
 * replication_factor -1: the broker's default. *exists (may be NULL) says
 * whether the broker answered that the topic exists already, which is not an
 * error. Errors name the topic; a request that gets no answer within
 * timeout_ms (+1 s) is TB_ERR_KAFKA, retriable. stop: as kafka_admin_wait. */
TB_MUST_USE tb_code kafka_topic_create(rd_kafka_t *rk, const char *topic, int partitions, int replication_factor,
                           const char *const *configs, int timeout_ms, const bool *stop, bool *exists, tb_error *err);

/* DescribeConfigs of one resource (RD_KAFKA_RESOURCE_TOPIC or _BROKER, name
 * the topic or the broker id): values[i] = a copy of the value of keys[i]
 * (caller frees each), NULL when the broker did not return it. Errors name the
 * resource. */
TB_MUST_USE tb_code kafka_describe_configs(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
                               const char *const *keys, char **values, size_t n, int timeout_ms, const bool *stop,
                               tb_error *err);

/* What the cluster's metadata says: brokers it lists, the id of the broker that
 * answered, and with topic (which must exist: a producer's metadata request may
 * create a missing topic on a broker with auto.create.topics.enable) the
 * smallest replica count of its partitions (-1 without topic). */
typedef struct kafka_cluster_md {
    int brokers;
    int32_t broker_id;
    int replicas;
} kafka_cluster_md;
TB_MUST_USE tb_code kafka_cluster_metadata(rd_kafka_t *rk, const char *topic, int timeout_ms, kafka_cluster_md *out,
                               tb_error *err);

/* Whether topic is missing from the cluster: *missing is true when the metadata (one request,
 * at most timeout_ms) answers UNKNOWN_TOPIC_OR_PART for it, false when it has the topic. A
 * producer asks with allow.auto.create.topics=false (ksink_conf_new with topic.create), so the
 * request does not create it on a broker with auto.create.topics.enable. Any other failure is
 * the error returned. */
TB_MUST_USE tb_code kafka_topic_missing(rd_kafka_t *rk, const char *topic, int timeout_ms, bool *missing, tb_error *err);
/* kafka_topic_missing, and when the topic is there, *out as kafka_cluster_metadata gives it for the
 * topic (from the same answer). */
TB_MUST_USE tb_code kafka_topic_metadata(rd_kafka_t *rk, const char *topic, int timeout_ms, bool *missing,
                                         kafka_cluster_md *out, tb_error *err);

/* Whether a delivery report says success without an offset: librdkafka acknowledged the message
 * without the broker's word for it. It does so for a batch whose request failed without writing
 * it (NOT_LEADER_FOR_PARTITION: a partition whose leader was not ready yet) once a later batch of
 * the partition, already in flight, succeeded ("implicitly acked"; a broker that holds no state
 * of the producer for the partition, as for a new topic's, takes that later batch), and for a
 * retried batch the broker calls a duplicate. The first is a loss, so such a report is not a
 * delivery: its message is to be written again. */
bool kafka_dr_unconfirmed(const rd_kafka_message_t *m);

/* After CreateTopics: poll the metadata (which also fills the client's own
 * cache) every 100 ms until topic shows `partitions` partitions, each with a
 * leader, in 2 * brokers - 1 answers in a row (each from a broker librdkafka
 * picks). On a cluster the brokers learn of a new topic one after the other;
 * a client that asks a broker still without it would see the partitions vanish
 * and fail what it queued for them (_UNKNOWN_PARTITION). Then until the leader
 * of every partition answers a ListOffsets for it: a broker names itself
 * leader before it takes writes, and an idempotent producer whose first write
 * to a partition is refused then (NOT_LEADER_FOR_PARTITION) while its next
 * one, already in flight, is taken (the broker holds no state of the producer
 * there) loses the first: librdkafka reports it delivered ("implicitly
 * acked"), without an offset (kafka_dr_unconfirmed). TB_ERR_KAFKA,
 * retriable, when that takes more than timeout_ms; stop: as kafka_admin_wait. */
TB_MUST_USE tb_code kafka_topic_wait_ready(rd_kafka_t *rk, const char *topic, int partitions, int timeout_ms, const bool *stop,
                               tb_error *err);

#endif
