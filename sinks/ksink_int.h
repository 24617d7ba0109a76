/*
 * ksink_int.h: pieces shared by the files of the Kafka sink (not public).
 *
 *   ksink_conf.c     librdkafka configuration, log routing, error translation
 *   ksink_admin.c    topic creation and the compaction check (Admin API)
 *   ksink_offsets.c  the offsets store (topic or file)
 *   ksink.c          the producer, the in-flight tracker, commits
 */
#ifndef KSINK_INT_H
#define KSINK_INT_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>
#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"
#include "tb_position.h"

typedef enum ksink_role {
    KSINK_ROLE_PRODUCER,    /* idempotent producer, throughput defaults */
    KSINK_ROLE_TXN,         /* same, plus transactional.id = name */
    KSINK_ROLE_CONSUMER,    /* offsets reader: read_committed, no group commits */
} ksink_role;

/* A new librdkafka configuration for role: fixed settings, tuned defaults,
 * every kafka.* key, the log callback. Caller owns *out (rd_kafka_conf_destroy
 * or hand it to rd_kafka_new). */
tb_code ksink_conf_new(const cfg *c, ksink_role role, rd_kafka_conf_t **out, tb_error *err);

/* Create a client from a configuration built by ksink_conf_new (consumes
 * conf in every case). */
tb_code ksink_client_new(rd_kafka_conf_t *conf, rd_kafka_type_t type, rd_kafka_t **out, tb_error *err);

/* The one place librdkafka error codes become tb_codes. Fills err with
 * "<context>: <librdkafka message> (<name>)" and returns the code. */
tb_code ksink_kafka_error(tb_error *err, rd_kafka_resp_err_t rerr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same for an rd_kafka_error_t (keeps its retriable flag; does not destroy it). */
tb_code ksink_kafka_error_obj(tb_error *err, const rd_kafka_error_t *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* message.max.bytes in effect (kafka.message.max.bytes or 1000000). */
long ksink_max_message_bytes(const cfg *c);

/* Milliseconds to wait for admin and metadata requests. */
int ksink_request_timeout_ms(const cfg *c);

/* Make sure topic exists: create it (compacted when compact) or, when it
 * exists and compact && topic.check.compact, check its cleanup.policy.
 * partitions <= 0 means topic.partitions. Honors topic.create=false. */
tb_code ksink_topic_ensure(rd_kafka_t *rk, const cfg *c, const char *topic, int partitions,
                           bool compact, tb_error *err);

/* "<name>.offsets", "<name>.dlq" appended to out. */
tb_code ksink_offsets_topic(const cfg *c, tb_buf *out);
tb_code ksink_dlq_topic(const cfg *c, tb_buf *out);

/* The offsets record value for pos: JSON, or *is_null = true for NONE. */
tb_code ksink_offsets_value(const tb_position *pos, tb_buf *out, bool *is_null);

/* Atomic file write of the text form. */
tb_code ksink_offsets_file_write(const char *path, const tb_position *pos, tb_error *err);

/* Monotonic clock in milliseconds. */
int64_t ksink_now_ms(void);

#endif
