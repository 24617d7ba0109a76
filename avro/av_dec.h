/*
 * av_dec: an Avro binary body read back into the JSON payload the codec
 * writes (DESIGN.md 4b), with avro-c doing the reading: the inverse of
 * av_encode for what av_conv's schemas hold. Used where tributary reads its
 * own Avro topics (the keys a TRUNCATE deletes).
 *
 *   Avro                    JSON
 *   null                    null
 *   boolean, int, long      true/false, the number
 *   float, double           the shortest number text ("NaN", "Infinity", "-Infinity" as strings)
 *   string                  the string
 *   bytes, fixed            base64 (a Connect Decimal's payload is base64 of its bytes too)
 *   enum                    its symbol
 *   union                   the branch's value
 *   record                  an object of its fields, in schema order
 *   array                   an array; map: an object
 *
 * The body comes from a topic, so it is untrusted: avro-c refuses what does
 * not match the writer schema, and a body with bytes left over is refused
 * too. fuzz/fuzz_avro_decode.c fuzzes it.
 */
#ifndef AV_DEC_H
#define AV_DEC_H

#include <stddef.h>

#include "tb_buf.h"
#include "tb_error.h"

typedef struct av_reader av_reader;

/* A reader of bodies written with the Avro schema writer_json. */
TB_MUST_USE tb_code av_reader_new(const char *writer_json, size_t len, av_reader **out, tb_error *err);
void av_reader_free(av_reader *r); /* NULL-safe */

/* The JSON payload of one body, appended to out. TB_ERR_CORRUPT when the
 * bytes do not hold exactly one value of the schema. */
TB_MUST_USE tb_code av_reader_json(av_reader *r, const void *body, size_t len, tb_buf *out, tb_error *err);

#endif
