/*
 * av_conv: Avro schemas and Avro binary bodies of the messages the codec
 * renders (DESIGN.md 4b).
 *
 * The input is what schema/ renders with value.schemas / key.schemas on: a
 * Kafka Connect schema (evt_connect.c, the same schema JsonConverter reads)
 * and its payload. The Avro schema is derived from the Connect schema the way
 * Kafka Connect's Avro converter does it, so a consumer of Debezium's Avro
 * topics reads tributary's:
 *
 *   Connect                Avro
 *   int8, int16            {"type":"int","connect.type":"int8"|"int16"}
 *   int32, int64           "int", "long"
 *   float, double          "float", "double"
 *   boolean, string, bytes "boolean", "string", "bytes"
 *   array                  {"type":"array","items":…}
 *   struct named a.b.C     {"type":"record","name":"C","namespace":"a.b","fields":[…],
 *                          "connect.name":"a.b.C"[,"connect.version":N]}; an unnamed struct is
 *                          io.confluent.connect.avro.ConnectDefault (ConnectDefault2, … after it);
 *                          a record named twice (before and after) is defined once and then
 *                          referred to by its full name
 *   a named type           the type object with "connect.name", "connect.version",
 *                          "connect.parameters" (the Connect parameters, as strings)
 *   Decimal                bytes, "logicalType":"decimal", "precision" (parameter
 *                          connect.decimal.precision, else 64), "scale"
 *   Connect Date, Time,    "logicalType" "date", "time-millis", "timestamp-millis"
 *   Timestamp
 *   optional field         ["null",T] with "default":null
 *   field with a default   [T,"null"] with that default, and "connect.default" in T
 *
 * Names: every character of a record name, namespace component or field name
 * outside [A-Za-z0-9_] becomes '_', and a leading digit gets a '_' before it
 * (Avro's name rule); connect.name keeps the Connect name.
 *
 * Payload to binary (Avro 1.11 specification, binary encoding): int and long
 * as zig-zag varints, float and double as little-endian IEEE 754, strings and
 * bytes length-prefixed, a union as its branch index then the value, an array
 * as one block (count, items) then 0, a record as its fields in order. Payload
 * values as the codec writes them: numbers as JSON numbers (the strings "NaN",
 * "Infinity", "-Infinity" for non-finite floats), bytes as base64, a Decimal as
 * base64 of its unscaled two's complement or as a JSON number, a string field
 * holding a JSON document (a JSON column in the tributary encoding) as that
 * document's canonical text.
 *
 * The encoder is fuzzed (fuzz/fuzz_avro_encode.c) and its output is read
 * back with avro-c in the tests.
 */
#ifndef AV_CONV_H
#define AV_CONV_H

#include "evt_json.h"
#include "tb_buf.h"
#include "tb_error.h"

/* The Avro schema (JSON text) of Connect schema cs, appended to out. */
TB_MUST_USE tb_code av_schema_from_connect(const evt_jv *cs, tb_buf *out, tb_error *err);

/* The Avro binary of payload under Connect schema cs, appended to out.
 * TB_ERR_INVALID (naming the field) when the payload does not fit the schema. */
TB_MUST_USE tb_code av_encode(const evt_jv *cs, const evt_jv *payload, tb_buf *out, tb_error *err);

/* Avro's zig-zag varint of v, appended to out. */
TB_MUST_USE tb_code av_put_long(tb_buf *out, int64_t v);

#endif
