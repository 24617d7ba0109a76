/*
 * evt: table descriptors, typed values and the change event (DESIGN.md 3, 5).
 *
 * Only capture/ and snapshot/ build events; sinks/ and app/ read them.
 *
 * OWNERSHIP AND LIFETIMES
 *  - evt_table is reference counted. evt_table_new() returns one reference;
 *    evt_table_ref() adds one, evt_table_unref() drops one (NULL-safe) and frees
 *    the table at zero. An event holds one reference to its table, so a table
 *    descriptor stays valid as long as any event that uses it.
 *    A table is immutable once evt_table_seal() has been called (a capture
 *    module replaces the descriptor on a schema change, bumping `version`).
 *  - evt_event owns its row images, its position copy and every string or
 *    byte value set through the builder (copied into the event's arena).
 *    evt_event_free(NULL) is a no-op. evt_event_reset() empties an event for
 *    reuse and keeps its memory (decoders reuse one event per row).
 *  - Accessors return borrowed const pointers valid until the event is reset
 *    or freed (values) or until the last reference is dropped (tables).
 *
 * ERRORS
 *  Builder errors are sticky (SQLite style): after the first failure every
 *  further evt_set_* call is a no-op and evt_event_error() returns the first
 *  error (code + message naming the column). Check once, after building.
 *
 * PARTIAL IMAGES
 *  A row image has one slot per column of the table; a slot that was never
 *  set is "absent" (binlog_row_image=MINIMAL/NOBLOB) and is left out of the
 *  JSON object, never written as null. SQL NULL is evt_set_null().
 */
#ifndef EVT_H
#define EVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tb_error.h"
#include "tb_position.h"

/* ---------------------------------------------------------------- types */

/* The column's type family, as the source declared it. Drives the schema
 * record and the cache's column affinity; the value kind drives the JSON. */
typedef enum evt_type {
    EVT_T_UNKNOWN = 0,
    EVT_T_TINYINT, EVT_T_SMALLINT, EVT_T_MEDIUMINT, EVT_T_INT, EVT_T_BIGINT,
    EVT_T_FLOAT, EVT_T_DOUBLE, EVT_T_DECIMAL,
    EVT_T_CHAR, EVT_T_VARCHAR, EVT_T_TEXT,
    EVT_T_BINARY, EVT_T_VARBINARY, EVT_T_BLOB,
    EVT_T_DATE, EVT_T_DATETIME, EVT_T_TIMESTAMP, EVT_T_TIME, EVT_T_YEAR,
    EVT_T_ENUM, EVT_T_SET, EVT_T_BIT, EVT_T_JSON, EVT_T_GEOMETRY, EVT_T_VECTOR,
    EVT_T_SQLITE_INTEGER, EVT_T_SQLITE_REAL, EVT_T_SQLITE_TEXT, EVT_T_SQLITE_BLOB,
    EVT_T_SQLITE_NUMERIC, /* SQLite NUMERIC affinity or no declared type: any storage class */
} evt_type;

/* Stable lower-case name ("bigint", "sqlite_integer", ...). */
const char *evt_type_name(evt_type t);
/* Inverse of evt_type_name; EVT_T_UNKNOWN when unknown. */
evt_type evt_type_from_name(const char *name);

typedef struct evt_column {
    char *name;          /* "@1".."@n" when the source gave no names */
    evt_type type;
    char *source_type;   /* as declared, e.g. "decimal(10,2) unsigned"; may be NULL */
    bool nullable;
    bool is_unsigned;
    int pk_ordinal;      /* 0 = not part of the key, else 1-based position in the key */
    uint32_t length;     /* chars/bytes/bits where meaningful, else 0 */
    uint32_t precision;  /* DECIMAL precision */
    uint32_t scale;      /* DECIMAL scale; fsp for DATETIME/TIMESTAMP/TIME */
    char *charset;       /* e.g. "utf8mb4", "latin1", "binary"; may be NULL */
    char **labels;       /* ENUM/SET labels in declaration order; NULL if unknown */
    size_t nlabels;
    /* The column's default as the source reports it (evt_table_set_default):
     * NULL when it has none or it is NULL; else the text of a literal (a
     * string literal's value without quotes, a number as written), or, when
     * default_expr, the text of an expression the source evaluates when it
     * writes a row ("current_timestamp()", "uuid()"): such a default has no
     * value a consumer could apply. */
    char *default_text;
    bool default_expr;
} evt_column;

typedef struct evt_table evt_table;

/* Create an empty descriptor (ncols columns, all EVT_T_UNKNOWN, named @1..@n).
 * db may be "" but not NULL. Returns NULL on allocation failure. */
evt_table *evt_table_new(const char *db, const char *table, size_t ncols);
evt_table *evt_table_ref(evt_table *t);
void evt_table_unref(evt_table *t);

/* Mutators: only before evt_table_seal(). Strings are copied. */
TB_MUST_USE tb_code evt_table_set_column(evt_table *t, size_t i, const char *name, evt_type type,
                             const char *source_type, bool nullable, bool is_unsigned);
TB_MUST_USE tb_code evt_table_set_column_details(evt_table *t, size_t i, uint32_t length, uint32_t precision,
                                     uint32_t scale, const char *charset);
TB_MUST_USE tb_code evt_table_set_labels(evt_table *t, size_t i, const char *const *labels, size_t n);
/* The column's default (see evt_column.default_text; text NULL: none). */
TB_MUST_USE tb_code evt_table_set_default(evt_table *t, size_t i, const char *text, bool is_expr);
/* The table was renamed from db.table (the schema record says where it came
 * from); NULL clears. */
TB_MUST_USE tb_code evt_table_set_renamed_from(evt_table *t, const char *db, const char *table);
/* A new unsealed copy of t (one reference for the caller, version and
 * everything else kept), to derive a descriptor from a sealed one; NULL on
 * allocation failure. */
evt_table *evt_table_copy(const evt_table *t);
/* A sealed descriptor that says db.table was dropped: no columns, no key,
 * version 0, evt_table_dropped() true. One reference for the caller; NULL on
 * allocation failure. */
evt_table *evt_table_new_dropped(const char *db, const char *table);
/* A descriptor made from the keys a table's topic holds (the table is no
 * longer in the catalog and no descriptor of it is known): its events carry
 * key columns only, and sinks write no schema record for it. */
void evt_table_set_keys_only(evt_table *t);
bool evt_table_keys_only(const evt_table *t);
/* A MariaDB system-versioned table (mysqlconn/mymeta.h): col is the column that ends each row's
 * period; a row image whose value there is not the type's maximum is a history row. -1 (the
 * default): not versioned. */
TB_MUST_USE tb_code evt_table_set_row_end(evt_table *t, long col);
long evt_table_row_end(const evt_table *t);
/* Primary key as column indexes in key order (replaces any previous key). */
TB_MUST_USE tb_code evt_table_set_pk(evt_table *t, const size_t *cols, size_t n);
void evt_table_set_version(evt_table *t, uint32_t version);
/* False when column names are placeholders (@1..@n): events then say so. */
void evt_table_set_names_known(evt_table *t, bool known);
void evt_table_seal(evt_table *t);

const char *evt_table_db(const evt_table *t);
const char *evt_table_name(const evt_table *t);
size_t evt_table_ncols(const evt_table *t);
const evt_column *evt_table_column(const evt_table *t, size_t i);
/* Index of a column by name, or -1. */
long evt_table_find(const evt_table *t, const char *name);
size_t evt_table_npk(const evt_table *t);
size_t evt_table_pk_col(const evt_table *t, size_t k); /* column index of key part k */
uint32_t evt_table_version(const evt_table *t);
bool evt_table_names_known(const evt_table *t);
bool evt_table_dropped(const evt_table *t);
/* Where the table was renamed from; NULL (both) when it was not. Borrowed. */
const char *evt_table_renamed_from_db(const evt_table *t);
const char *evt_table_renamed_from_table(const evt_table *t);
/* Same columns (names, types, key) ignoring version: used to decide whether a
 * new schema version must be announced. */
bool evt_table_same_shape(const evt_table *a, const evt_table *b);
/* Same columns as a consumer types them: names, types, signedness and key
 * (not lengths, charsets, labels or declared text, which a snapshot's and a
 * binlog's descriptor of one table version give differently). */
bool evt_table_same_columns(const evt_table *a, const evt_table *b);

/* --------------------------------------------------------------- values */

typedef enum evt_kind {
    EVT_V_ABSENT = 0, /* not in the image (partial row image) */
    EVT_V_NULL,
    EVT_V_INT,        /* i64 */
    EVT_V_UINT,       /* u64 */
    EVT_V_FLOAT,      /* f32: shortest text that reads back to the same float */
    EVT_V_DOUBLE,     /* f64: shortest text that reads back to the same double */
    EVT_V_BOOL,       /* BIT(1) */
    EVT_V_DECIMAL,    /* text: "-12.50" (exactly `scale` decimals, already formatted) */
    EVT_V_STRING,     /* text in UTF-8 (invalid sequences kept, see DESIGN 5) */
    EVT_V_BYTES,      /* binary: base64 in JSON */
    EVT_V_DATE,       /* tm fields */
    EVT_V_DATETIME,
    EVT_V_TIMESTAMP,  /* UTC */
    EVT_V_TIME,       /* neg, hour (may exceed 24), min, sec, usec */
    EVT_V_SET,        /* list of labels: JSON array */
    EVT_V_JSON,       /* JSON text (a complete JSON value), embedded as JSON */
    EVT_V_GEOMETRY,   /* srid + WKB bytes */
    EVT_V_VECTOR,     /* float32 array */
} evt_kind;

typedef struct evt_temporal {
    int32_t year;     /* 0..9999; zero dates keep zeros */
    uint8_t month, day;
    uint32_t hour;    /* TIME: may exceed 24 (up to 838) */
    uint8_t minute, second;
    uint32_t usec;    /* 0..999999 */
    uint8_t fsp;      /* digits of fraction to print, 0..6 */
    bool negative;    /* TIME only */
} evt_temporal;

typedef struct evt_value {
    evt_kind kind;
    union {
        int64_t i;
        uint64_t u;
        float f;
        double d;
        bool b;
        struct { const char *ptr; size_t len; } s;      /* STRING, BYTES, DECIMAL, JSON */
        evt_temporal t;
        struct { const char *const *items; const size_t *lens; size_t n; } set;
        struct { uint32_t srid; const uint8_t *wkb; size_t len; } geo;
        struct { const float *items; size_t n; } vec;
    } v;
} evt_value;

/* --------------------------------------------------------------- events */

typedef enum evt_op {
    EVT_OP_CREATE = 'c',
    EVT_OP_UPDATE = 'u',
    EVT_OP_DELETE = 'd',
    EVT_OP_READ = 'r',
    EVT_OP_TRUNCATE = 't', /* only in evt_render_truncate's message; no event has it */
} evt_op;

typedef enum evt_image { EVT_BEFORE = 0, EVT_AFTER = 1 } evt_image;

typedef enum evt_snapshot_flag { EVT_SNAPSHOT_FALSE = 0, EVT_SNAPSHOT_TRUE, EVT_SNAPSHOT_LAST } evt_snapshot_flag;

/* EVT_CONN_CACHE: events rebuilt from the table cache (`tributary cache publish`). */
typedef enum evt_connector { EVT_CONN_MYSQL = 0, EVT_CONN_MARIADB, EVT_CONN_SQLITE, EVT_CONN_CACHE } evt_connector;
const char *evt_connector_name(evt_connector c); /* "mysql" | "mariadb" | "sqlite" | "cache" */

typedef struct evt_event evt_event;

/* New event for table t (takes a reference). op decides which images exist:
 * c/r: after; u: before + after; d: before. NULL on allocation failure. */
evt_event *evt_event_new(evt_op op, evt_table *t);
void evt_event_free(evt_event *e);
/* Reuse for another row: drops the table reference, clears values and error,
 * keeps allocated memory. */
void evt_event_reset(evt_event *e, evt_op op, evt_table *t);

/* Builder (sticky errors). col is a column index of the event's table. */
void evt_set_null(evt_event *e, evt_image img, size_t col);
void evt_set_int(evt_event *e, evt_image img, size_t col, int64_t v);
void evt_set_uint(evt_event *e, evt_image img, size_t col, uint64_t v);
void evt_set_float(evt_event *e, evt_image img, size_t col, float v);
void evt_set_double(evt_event *e, evt_image img, size_t col, double v);
void evt_set_bool(evt_event *e, evt_image img, size_t col, bool v);
void evt_set_decimal(evt_event *e, evt_image img, size_t col, const char *text, size_t len);
void evt_set_string(evt_event *e, evt_image img, size_t col, const char *utf8, size_t len);
void evt_set_bytes(evt_event *e, evt_image img, size_t col, const void *data, size_t len);
void evt_set_temporal(evt_event *e, evt_image img, size_t col, evt_kind kind, const evt_temporal *t);
void evt_set_set(evt_event *e, evt_image img, size_t col, const char *const *labels, const size_t *lens, size_t n);
void evt_set_json(evt_event *e, evt_image img, size_t col, const char *json, size_t len);
void evt_set_geometry(evt_event *e, evt_image img, size_t col, uint32_t srid, const void *wkb, size_t len);
void evt_set_vector(evt_event *e, evt_image img, size_t col, const float *items, size_t n);
/* Copy a value (from another event or a decoder) into this event. */
void evt_set_value(evt_event *e, evt_image img, size_t col, const evt_value *v);
/* Mark the whole event failed with a message (the builder's sticky error). */
void evt_event_fail(evt_event *e, tb_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Metadata. */
void evt_event_set_position(evt_event *e, const tb_position *pos); /* copied */
void evt_event_set_txid(evt_event *e, const char *txid);          /* copied; NULL clears */
/* The message key of a delete, verbatim: a key read back from the table's topic. Renderers send
 * these bytes instead of the key rendered from the before image, so the delete and its tombstone
 * name the very record the topic holds whatever the value encoding writes for a key column (the
 * before image is rebuilt from the key's JSON members, which an encoding such as Debezium's may
 * render differently from the topic's key). Copied; NULL clears; reset clears it. */
void evt_event_set_wire_key(evt_event *e, const char *key, size_t len);
/* The source row's rowid in image img (SQLite rowid tables with a declared key): the key of an
 * image holding NULL in a key column (a rowid table's declared key allows it) gets the member
 * EVT_KEY_ROWID with it, so rows whose keys hold NULL keep apart on the wire (DESIGN 8 "Keys");
 * keys without NULL do not change. Reset clears it. */
void evt_event_set_rowid(evt_event *e, evt_image img, int64_t rowid);
#define EVT_KEY_ROWID "__rowid"
void evt_event_set_commit_ts_ms(evt_event *e, int64_t ts_ms);
void evt_event_set_last_in_tx(evt_event *e, bool last);
/* The source logged a row image without some columns of the table (MySQL/MariaDB
 * binlog_row_image MINIMAL or NOBLOB, for the whole server or one session): those columns are
 * EVT_V_ABSENT, and the row cannot be sent whole (source.row.image.policy). Reset clears it. */
void evt_event_set_partial(evt_event *e, bool partial);
void evt_event_set_snapshot(evt_event *e, evt_snapshot_flag flag);
/* Where a snapshot read sits (bits): the first row of the whole snapshot, the
 * first and the last row of its table. Debezium's source.snapshot tells them
 * apart ("first", "first_in_data_collection", "last_in_data_collection");
 * the tributary encoding does not. 0 after reset. */
enum { EVT_SNAP_FIRST = 1, EVT_SNAP_FIRST_IN_TABLE = 2, EVT_SNAP_LAST_IN_TABLE = 4 };
void evt_event_set_snapshot_edges(evt_event *e, unsigned edges);
void evt_event_set_connector(evt_event *e, evt_connector c);

/* The change's own place in the source log, beside the resume position
 * (evt_event_set_position, which on the last event of a transaction is the
 * commit's): the binlog offset of the rows event that holds the row and the
 * row's index in it. The codec writes them as source.pos and source.row, and
 * the transaction id as source.gtid when txid_is_gtid (the transaction has a
 * GTID; else source.gtid is null). */
void evt_event_set_source_row(evt_event *e, uint64_t pos, uint32_t row, bool txid_is_gtid);
bool evt_event_txid_is_gtid(const evt_event *e);
/* false when not set (snapshot reads, SQLite); then *pos and *row are untouched. */
bool evt_event_source_row(const evt_event *e, uint64_t *pos, uint32_t *row);

/* The sticky error, or NULL when the event is well formed. Borrowed. */
const tb_error *evt_event_error(const evt_event *e);

/* An update whose after image is to be dropped becomes a delete of its before image (a
 * system-versioned row that moved into the table's history). TB_ERR_STATE unless e is an update. */
TB_MUST_USE tb_code evt_event_update_to_delete(evt_event *e);
/* The event carries its table's descriptor and no row image (evt_event_has_image is false for
 * both): a table that arrived with no row, for the consumer to announce (its schema record), not
 * to send (sqlcap_opts.new_table_events). */
void evt_event_table_only(evt_event *e);
evt_op evt_event_op(const evt_event *e);
evt_table *evt_event_table(const evt_event *e);               /* borrowed */
bool evt_event_has_image(const evt_event *e, evt_image img);
const evt_value *evt_event_value(const evt_event *e, evt_image img, size_t col); /* never NULL for valid col */
/* All values of image img, indexed by column (evt_table_ncols of the event's
 * table), or NULL when the event has no such image. Borrowed, like
 * evt_event_value's; for loops over every column. */
const evt_value *evt_event_values(const evt_event *e, evt_image img);
/* Borrowed, valid until reset/free: its file/gtid_set point into the event;
 * never tb_position_free() it (tb_position_copy() it to keep it). */
const tb_position *evt_event_position(const evt_event *e);
const char *evt_event_txid(const evt_event *e);               /* NULL if none */
const char *evt_event_wire_key(const evt_event *e, size_t *len); /* NULL if none */
bool evt_event_rowid(const evt_event *e, evt_image img, int64_t *rowid); /* false if none */
int64_t evt_event_commit_ts_ms(const evt_event *e);
bool evt_event_last_in_tx(const evt_event *e);
bool evt_event_partial(const evt_event *e);
evt_snapshot_flag evt_event_snapshot(const evt_event *e);
unsigned evt_event_snapshot_edges(const evt_event *e);
evt_connector evt_event_connector(const evt_event *e);

/* Value equality as the JSON would show it: same kind and content (floats
 * bit for bit; INT and UINT compare by numeric value). */
bool evt_value_equal(const evt_value *a, const evt_value *b);

/* True when every primary-key column has equal values in both images
 * (always true for c/r/d) and the images' rowids (evt_event_set_rowid), if
 * both are set, are equal. False means a key change (sinks split it when
 * the rendered keys differ). */
bool evt_event_key_unchanged(const evt_event *e);

#endif
