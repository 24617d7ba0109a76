/*
 * av_ser: messages in the Confluent wire format (DESIGN.md 4b): the byte 0,
 * the schema id (4 bytes, big-endian) and the Avro binary body (av_conv.h).
 *
 * Input: a key or value the codec rendered with its Kafka Connect schema,
 * {"schema":S,"payload":P} (key.schemas / value.schemas wrapping). The Avro
 * schema of S is registered under the subject (TopicNameStrategy:
 * "<topic>-key", "<topic>-value") the first time this (subject, S) pair is
 * seen in the run; its id is kept in a local cache, so a message costs no
 * registry call. Nothing is encoded with a schema the registry has not
 * accepted.
 *
 * Registry unreachable, slow or answering 5xx: the registration is retried
 * (100 ms, doubling to 5 s between attempts, a WARN on the first failure and
 * every 30 s) until it succeeds, schema.registry.retry.timeout.ms passes (then
 * the error, retriable) or the stop flag is raised (TB_ERR_STOPPED). Nothing
 * is produced meanwhile, so the source position cannot pass the message.
 * A 409 (incompatible) fails at once, naming the subject, the change (the
 * caller's `what`) and the compatibility level.
 *
 * TEST HOOK (only in builds with TB_TESTS=ON, which define TB_TEST_HOOKS for
 * this library; release and container builds set TB_TESTS=OFF): with the
 * environment variable TB_TEST_AVRO_STOP_AFTER_REGISTER=<subject>, the process
 * stops itself (SIGSTOP) right after the registry accepted a new schema of
 * that subject and its INFO line was logged, before the message is encoded or
 * handed to Kafka, so a test can SIGKILL it at that point
 * (tests/avro/test_avro_e2e.c, kill9_between_register_and_send).
 *
 * OWNERSHIP: one thread uses an av_ser; c is borrowed for av_ser_open only.
 */
#ifndef AV_SER_H
#define AV_SER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct av_ser av_ser;

/* From schema.registry.* of c. */
TB_MUST_USE tb_code av_ser_open(const cfg *c, av_ser **out, tb_error *err);
void av_ser_close(av_ser *s); /* NULL-safe */
/* Raised by a signal handler: a retry loop stops waiting. */
void av_ser_set_stop(av_ser *s, volatile sig_atomic_t *stop);

/* The wire-format message of json (a {"schema","payload"} wrapper) under
 * subject, appended to out. what names the change in errors (e.g. "table
 * db.t version 2"). */
TB_MUST_USE tb_code av_ser_encode(av_ser *s, const char *subject, const char *what, const char *json, size_t len, tb_buf *out,
                      tb_error *err);

/* The JSON payload of a wire-format message (msg, len) read from a topic,
 * appended to out: the writer schema is fetched by its id from the registry
 * once (retried like a registration) and kept; the body is read with avro-c
 * (av_dec.h). TB_ERR_CORRUPT for bytes that are not such a message. */
TB_MUST_USE tb_code av_ser_decode(av_ser *s, const char *what, const void *msg, size_t len, tb_buf *out, tb_error *err);

/* Called about once a second while a registration or a schema fetch waits for
 * the registry (between attempts), so that the caller's status file, /health and
 * metrics keep saying so (ksink_set_wait). NULL: none. */
void av_ser_set_wait(av_ser *s, void (*fn)(void *opaque), void *opaque);

/* True while a registration or fetch is being retried because the registry
 * cannot answer (from the first failed attempt until one succeeds, the wait
 * gives up or a stop ends it): *since_ms (may be NULL) the wall ms of the
 * first failed attempt, *why (may be NULL; valid until the next av_ser call)
 * "<url>: <error>" of the latest one. For status, /health and metrics. */
bool av_ser_registry_down(const av_ser *s, int64_t *since_ms, const char **why);
/* Registrations done in this run (new subject/schema pairs). */
uint64_t av_ser_registered(const av_ser *s);

#endif
