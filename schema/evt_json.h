/*
 * evt_json: the wire format (DESIGN.md 4, 5, 10).
 *
 * Encoding is done by our own small streaming writer (evt_jw), not Jansson:
 * Jansson cannot hold an integer above INT64_MAX (BIGINT UNSIGNED), nor a
 * number given as exact text (DECIMAL inside JSON documents, shortest
 * doubles), and it allocates a node per value on the hot path. The writer
 * escapes every string per RFC 8259 and is fuzzed and unit tested.
 * Decoding uses evt_jv (records, `offsets show`, JSON columns re-serialised),
 * which keeps numbers as their exact text for the same reason; the cache reads
 * messages with its own zero-copy scanner (cache/cache_json.c). Both accept the
 * same grammar, nesting (EVT_JSON_MAX_DEPTH) and escapes, and decode to the same
 * bytes: fuzz/fuzz_json_readers.c checks them against each other and Jansson.
 *
 * The full layout of every record is specified at the top of evt_json.c.
 *
 * All functions append to a caller-owned tb_buf and return TB_OK or an error
 * (filled into err when non-NULL, naming the table and column).
 */
#ifndef EVT_JSON_H
#define EVT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "evt.h"
#include "tb_buf.h"

/* The deepest nesting of objects and arrays in one JSON text that the writer
 * (evt_jw) produces and that every reader accepts: evt_jv here and the cache's
 * scanner (cache/cache_json.c). One limit for all three, so whatever the
 * connector writes, the cache reads. */
#define EVT_JSON_MAX_DEPTH 127

/* ------------------------------------------------------------ writer */

/* Streaming JSON writer over a tb_buf. Commas are inserted automatically.
 * Errors are sticky: check the return of evt_jw_finish. */
typedef struct evt_jw {
    tb_buf *out;
    uint64_t need_comma;    /* bit per nesting level 0..63 */
    int depth;              /* max EVT_JSON_MAX_DEPTH */
    tb_code err;
    uint64_t need_comma_hi; /* levels 64..127 */
    bool after_key;         /* a key was written, its value is due */
} evt_jw;

void evt_jw_init(evt_jw *w, tb_buf *out);
void evt_jw_obj_begin(evt_jw *w);
void evt_jw_obj_end(evt_jw *w);
void evt_jw_arr_begin(evt_jw *w);
void evt_jw_arr_end(evt_jw *w);
void evt_jw_key(evt_jw *w, const char *key, size_t len); /* len (size_t)-1 = strlen */
void evt_jw_str(evt_jw *w, const char *s, size_t len);   /* UTF-8; invalid bytes -> \udcXX (DESIGN 5) */
void evt_jw_null(evt_jw *w);
void evt_jw_bool(evt_jw *w, bool b);
void evt_jw_int(evt_jw *w, int64_t v);
void evt_jw_uint(evt_jw *w, uint64_t v);
void evt_jw_double(evt_jw *w, double v);                 /* shortest round-trip; non-finite -> error */
void evt_jw_float(evt_jw *w, float v);                   /* shortest round-trip as float */
void evt_jw_raw_number(evt_jw *w, const char *text, size_t len); /* validated JSON number text */
void evt_jw_base64(evt_jw *w, const void *data, size_t len);     /* as a JSON string */
/* Embed a complete JSON text, re-serialised canonically (no whitespace);
 * TB_ERR_INVALID if it is not valid JSON. */
void evt_jw_json(evt_jw *w, const char *json, size_t len);
/* TB_ERR_INVALID when containers are left open or a key has no value. */
TB_MUST_USE tb_code evt_jw_finish(evt_jw *w);

/* Shortest text for a double/float that reads back to the same value
 * (exponent as "1e300", "5e-324"); non-finite: "NaN", "Infinity", "-Infinity"
 * (not JSON numbers: the codec writes them as strings). NUL-terminated. */
size_t evt_fmt_double(double v, char out[32]);
size_t evt_fmt_float(float v, char out[32]);
/* A REAL (double) as a value of the wire format (DESIGN 5). keep_class false
 * (a column whose type says it is a real: FLOAT, DOUBLE, SQLite REAL): the
 * shortest number text ("2", "0.5"), non-finite as the strings "Infinity",
 * "-Infinity", "NaN". keep_class true (a column that holds any class: SQLite
 * sqlite_numeric), the value itself says it is a real: a number with a
 * fraction or exponent ("2.0", "0.5", "1e300", "-0.0"), non-finite as the
 * object {"$real":"Infinity"|"-Infinity"|"NaN"} (a string there is TEXT). */
#define EVT_JSON_REAL_TAG "$real"
void evt_json_put_real(evt_jw *w, double d, bool keep_class);
/* Temporal text per DESIGN 5 ("2024-01-31", "2024-01-31T10:00:00.5", "...Z", "-838:59:59"). */
size_t evt_fmt_temporal(evt_kind kind, const evt_temporal *t, char out[48]);

/* ------------------------------------------------------------ records */

/* value.encoding: tributary's own lossless values (DESIGN 5), or what
 * Debezium 3.6's MySQL/MariaDB connector writes (evt_dbz.c, DESIGN 5a). */
typedef enum evt_encoding { EVT_ENC_TRIBUTARY = 0, EVT_ENC_DEBEZIUM } evt_encoding;
/* Debezium's options, under debezium.* (same names and values as Debezium's). */
typedef enum evt_dbz_decimal { EVT_DBZ_DEC_PRECISE = 0, EVT_DBZ_DEC_STRING, EVT_DBZ_DEC_DOUBLE } evt_dbz_decimal;
typedef enum evt_dbz_binary {
    EVT_DBZ_BIN_BYTES = 0, EVT_DBZ_BIN_BASE64, EVT_DBZ_BIN_BASE64_URL, EVT_DBZ_BIN_HEX
} evt_dbz_binary;
typedef struct evt_dbz_opts {
    evt_dbz_decimal decimal;    /* decimal.handling.mode */
    bool bigint_precise;        /* bigint.unsigned.handling.mode=precise (else long: wraps) */
    bool time_connect;          /* time.precision.mode=connect (else adaptive_time_microseconds) */
    evt_dbz_binary binary;      /* binary.handling.mode */
    bool keep_null;             /* a NULL stays null where the column has a default (Kafka Connect's
                                   JsonConverter replace.null.with.default=false); else the default */
} evt_dbz_opts;

typedef struct evt_codec_opts {
    const char *topic_prefix;   /* topic.prefix */
    const char *name;           /* connector name (source.name) */
    bool row_format;            /* value.format=row */
    bool schemas;               /* value.schemas=true: Kafka Connect JSON wrapper */
    bool key_schemas;           /* key.schemas=true: keys wrapped the same way */
    int64_t now_ms;             /* envelope ts_ms (processing time); 0 = read the clock */
    evt_encoding encoding;      /* value.encoding */
    evt_dbz_opts dbz;           /* debezium.* (encoding debezium only) */
    bool schema_defaults;       /* the tributary encoding's Connect schemas carry column defaults
                                   (set for Avro, where a null is its own union branch: JSON
                                   wrappers leave them out, JsonConverter would read a null as the
                                   default); value.encoding=debezium always carries them */
} evt_codec_opts;

struct cfg;
/* Fill encoding, dbz and key_schemas of o from value.encoding, debezium.* and key.schemas of c. */
void evt_codec_opts_encoding(evt_codec_opts *o, const struct cfg *c);
/* Log a WARN for each column of t whose values the configured encoding
 * cannot carry exactly (Debezium's bigint.unsigned.handling.mode=long wraps
 * BIGINT UNSIGNED above 2^63-1). Callers call it once per table version. */
void evt_codec_warn_lossy(const evt_codec_opts *o, const evt_table *t);

/* "<prefix>.<db>.<table>" */
TB_MUST_USE tb_code evt_json_topic(const evt_codec_opts *o, const evt_table *t, tb_buf *out);
/* The same for db.table by name. */
TB_MUST_USE tb_code evt_json_topic_into(const evt_codec_opts *o, const char *db, const char *table, tb_buf *out);
/* Kafka's longest topic name. */
#define EVT_TOPIC_MAX 249
/* The topic of table db.table under prefix (NULL or "" = none), appended to
 * out: "<prefix>.<db>.<table>" with every character outside [a-zA-Z0-9._-]
 * turned into '_' (Debezium's rule), and a name over EVT_TOPIC_MAX bytes
 * shortened to fit with a hash suffix of the full name. The event keeps the
 * real names (source.db, source.table); two tables whose names sanitize
 * alike share a topic, which the sink and the snapshot refuse. */
TB_MUST_USE tb_code evt_topic_name(const char *prefix, const char *db, const char *table, tb_buf *out);
/* "<prefix>.schema" */
TB_MUST_USE tb_code evt_json_schema_topic(const evt_codec_opts *o, tb_buf *out);

/* Canonical key of image img: {"id":42}, columns in key order, no spaces.
 * Writes null when the table has no key. A key column absent from img (a
 * MINIMAL after image) is taken from the other image. */
TB_MUST_USE tb_code evt_json_key(const evt_event *e, evt_image img, tb_buf *out, tb_error *err);
/* The key as evt_render writes it under o (value.encoding, key.schemas). */
TB_MUST_USE tb_code evt_render_key(const evt_codec_opts *o, const evt_event *e, evt_image img, tb_buf *out, tb_error *err);
/* Value of the event in the configured format (envelope or row). For op=d in
 * row format there is no value: returns TB_ERR_NOT_FOUND and writes nothing. */
TB_MUST_USE tb_code evt_json_value(const evt_codec_opts *o, const evt_event *e, tb_buf *out, tb_error *err);
/* An image as a plain object {"col":value,...} in table order, absent columns left out. */
TB_MUST_USE tb_code evt_json_row(const evt_event *e, evt_image img, tb_buf *out, tb_error *err);

/* Schema record of a table: key {"db":…,"table":…}, value = descriptor. */
TB_MUST_USE tb_code evt_json_schema_key(const evt_table *t, tb_buf *out);
TB_MUST_USE tb_code evt_json_schema_value(const evt_table *t, tb_buf *out);
/* The same, naming the table version `version` instead of t's own (the Kafka
 * sink continues the numbering its schema topic holds). */
TB_MUST_USE tb_code evt_json_schema_value_as(const evt_table *t, uint32_t version, tb_buf *out);
/* A schema record's value read back into a new sealed descriptor of db.table (the caller drops
 * it): columns (names, types, declared types, nullability, signedness, details, labels, defaults),
 * key, version, names_known. Writing *out again with evt_json_schema_value gives the same text.
 * TB_ERR_CORRUPT naming the table when the record does not read. */
TB_MUST_USE tb_code evt_json_schema_parse(const char *db, const char *table, const char *text, size_t len,
                                          evt_table **out, tb_error *err);

/* Positions as JSON objects (tb_position's JSON form). */
TB_MUST_USE tb_code evt_position_to_json(const tb_position *p, tb_buf *out);
TB_MUST_USE tb_code evt_position_from_json(const char *json, size_t len, tb_position *p, tb_error *err);

/* The messages one event becomes on the wire, in order (DESIGN 4):
 *  c/r/u with unchanged key: 1 message (key, value)
 *  d: envelope: delete event then tombstone; row format: tombstone only
 *  u with changed key: delete (+ tombstone) for the old key, then create for the new key
 * The rendering owns its buffers; reuse one across events. */
typedef struct evt_msg {
    const char *key;    size_t key_len;
    const char *value;  size_t value_len; /* value == NULL: tombstone */
} evt_msg;

typedef struct evt_rendered {
    char *topic;        /* owned */
    evt_msg msgs[3];
    size_t n;
    tb_buf bufs[4];     /* storage for keys and values */
    evt_table *topic_table; /* a reference: the table topic was built for (no rebuild per event) */
    char *topic_prefix;     /* owned: the topic.prefix it was built with */
} evt_rendered;

void evt_rendered_init(evt_rendered *r);
void evt_rendered_free(evt_rendered *r); /* NULL-safe */
TB_MUST_USE tb_code evt_render(const evt_codec_opts *o, const evt_event *e, evt_rendered *r, tb_error *err);
/* The truncate of e's table (e: any event of it, for the source block and
 * position; its op and images are not used): envelope format: (key {},
 * "op":"t" envelope with null images), ({}, tombstone); row format: none. */
TB_MUST_USE tb_code evt_render_truncate(const evt_codec_opts *o, const evt_event *e, evt_rendered *r, tb_error *err);

/* One printed line (DESIGN 10): {"topic":…,"key":…,"value":…} where key and
 * value are JSON texts embedded verbatim (they must be valid JSON, as this
 * codec produces them; NULL or empty -> null). */
TB_MUST_USE tb_code evt_json_line(const char *topic, const char *key, size_t key_len, const char *value,
                      size_t value_len, tb_buf *out);

/* ------------------------------------------------------------ reader */

/* A parsed JSON value. Numbers keep their exact text. Strings are decoded to
 * UTF-8 bytes (\udcXX escapes turn back into the raw byte they stand for). */
typedef enum evt_jv_type { EVT_JV_NULL, EVT_JV_BOOL, EVT_JV_NUMBER, EVT_JV_STRING, EVT_JV_ARRAY, EVT_JV_OBJECT } evt_jv_type;
typedef struct evt_jv evt_jv;

/* Parse one JSON text. On error, err says the byte offset. Caller frees with evt_jv_free. */
TB_MUST_USE tb_code evt_jv_parse(const char *text, size_t len, evt_jv **out, tb_error *err);
void evt_jv_free(evt_jv *v);
evt_jv_type evt_jv_type_of(const evt_jv *v);
bool evt_jv_bool(const evt_jv *v);
const char *evt_jv_text(const evt_jv *v, size_t *len); /* NUMBER text or STRING bytes */
size_t evt_jv_size(const evt_jv *v);                   /* ARRAY/OBJECT element count */
const evt_jv *evt_jv_at(const evt_jv *v, size_t i);    /* ARRAY element / OBJECT value */
const char *evt_jv_key_at(const evt_jv *v, size_t i, size_t *len); /* OBJECT key */
const evt_jv *evt_jv_get(const evt_jv *v, const char *key); /* OBJECT lookup, NULL if missing */
/* Serialise canonically (no whitespace, numbers as their text). */
tb_code evt_jv_write(const evt_jv *v, evt_jw *w);

#endif
