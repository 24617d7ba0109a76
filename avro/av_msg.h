/*
 * av_msg: Avro messages of a topic (Confluent's wire format: a 0 byte, the
 * writer schema's id in 4 bytes big-endian, the Avro binary body) read back
 * as the Kafka Connect JSON the codec writes with value.schemas=true
 * ({"schema":<Connect schema>,"payload":<value>}, DESIGN 4b), so that a
 * reader of tributary's JSON topics (the table cache) reads Avro topics with
 * the same code. The writer schema is fetched from the registry by its id
 * once (GET /schemas/ids/{id}) and kept.
 *
 * The Connect schema is made back from the Avro schema by inverting av_conv.h's
 * mapping: a record with its connect.name and connect.version, ["null",T] and
 * [T,"null"] as optional fields (the latter with its default, bytes defaults
 * turned back into base64), "int" with connect.type int8/int16, "long" int64,
 * the connect.name, connect.version and connect.parameters of named types,
 * the Avro logical types decimal, date, time-millis and timestamp-millis as
 * Connect's, a record referred to by name expanded where it is used. Field
 * names are the Avro names: a column name outside [A-Za-z0-9_] was changed to
 * fit Avro's rule when the schema was made (av_conv.h) and stays changed.
 *
 * Errors: a body that does not hold one value of its schema, or an id the
 * registry does not know, is TB_ERR_INVALID / TB_ERR_CONFIG naming the id; a
 * registry that cannot be reached is TB_ERR_IO with retriable set (sreg.h).
 * Ownership: av_msg_open returns an object freed with av_msg_close. One thread.
 */
#ifndef AV_MSG_H
#define AV_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include "sreg.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct av_msg av_msg;

TB_MUST_USE tb_code av_msg_open(const sreg_opts *o, av_msg **out, tb_error *err);
void av_msg_close(av_msg *m); /* NULL-safe */

/* A message in Confluent's Avro wire format (a JSON message starts with '{'). */
bool av_msg_is_avro(const void *p, size_t len);

/* The message as Kafka Connect JSON, replacing out's content. */
TB_MUST_USE tb_code av_msg_json(av_msg *m, const void *msg, size_t len, tb_buf *out, tb_error *err);

/* The Connect schema (JSON text) of an Avro schema, appended to out. */
TB_MUST_USE tb_code av_msg_connect_schema(const char *avsc, size_t len, tb_buf *out, tb_error *err);

#endif
