/*
 * cache_int: internals of the table cache shared by its files (not public).
 *
 * THE CACHE FILE (SQLite, WAL mode)
 *   "<db>.<table>"          one table per topic <prefix>.<db>.<table>: the table's
 *                           columns (typed from <prefix>.schema, or inferred from the
 *                           JSON) plus "_partition" INTEGER (the Kafka partition the
 *                           row came from, to drop a revoked partition's rows).
 *                           PRIMARY KEY = the key columns, in key order.
 *   _tributary_tables       tbl, topic, inferred, version: one row per cache table
 *   _tributary_columns      tbl, ord, name, type (evt type name, "" if inferred),
 *                           cls (cache_class), pk (1-based key position, 0 = none),
 *                           scale (DECIMAL scale, fsp of a temporal; -1 unknown)
 *   _tributary_offsets      topic, partition, next_offset, high_watermark (the high
 *                           watermark recorded when the partition was assigned)
 *   _tributary_state        key, value: caught_up (0/1), caught_up_at (unix ms),
 *                           applied (messages applied, ever: row changes, not schema
 *                           records), skipped, dlq, alive_at (unix ms of the last commit:
 *                           the cache had read its topics up to its offsets then)
 * Every batch of applied messages and the offsets after it are written in one
 * transaction, so the file always holds a state "the topics up to these offsets".
 */
#ifndef CACHE_INT_H
#define CACHE_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "cache_json.h"
#include "tb_buf.h"
#include "tb_error.h"

/* How a column's JSON value is stored and read back. */
typedef enum cache_class {
    CC_ANY = 0, /* no affinity: int64 -> INTEGER, bigger -> TEXT, float -> REAL, string -> TEXT, obj/arr -> JSON TEXT */
    CC_INT,     /* integer types: as CC_ANY, read back as a number */
    CC_UINT64,  /* BIGINT UNSIGNED, BIT(n>1): as CC_INT, declared without affinity so big values stay TEXT */
    CC_REAL,    /* float, double */
    CC_TEXT,    /* strings, decimals, temporals, enums */
    CC_BLOB,    /* base64 in JSON, BLOB in SQLite */
    CC_JSON,    /* JSON, SET, GEOMETRY, VECTOR: the JSON text of the value */
    CC_BOOL,    /* BIT(1): true/false as 1/0 */
} cache_class;

/* How a value written by Debezium (or any Kafka Connect producer) becomes the
 * value the tributary encoding writes for the column (cache_connect.c). */
typedef enum cache_dz {
    DZ_NONE = 0,  /* as it is */
    DZ_DEC_BYTES, /* Decimal: base64 of the unscaled two's complement, big-endian (or a JSON
                   * number, decimal.format=NUMERIC); arg = scale */
    DZ_DATE,      /* days since 1970-01-01 */
    DZ_TIME_MS,   /* TIME as milliseconds (connect Time) */
    DZ_TIME_US,   /* MicroTime */
    DZ_TIME_NS,   /* NanoTime */
    DZ_TS_MS,     /* DATETIME as milliseconds since the epoch (Timestamp, connect Timestamp) */
    DZ_TS_US,     /* MicroTimestamp */
    DZ_TS_NS,     /* NanoTimestamp */
    DZ_SET,       /* EnumSet "a,b" -> ["a","b"] */
    DZ_BITS,      /* Bits: bytes, least significant first -> unsigned number */
    DZ_JSON,      /* Json: a string holding a document -> the document, compact */
    DZ_GEOM,      /* Geometry/Point struct {wkb, srid} -> {"srid":N,"wkb":"..."} */
    DZ_FLOAT32,   /* float: Java's float text -> the shortest float32 text */
    DZ_B64URL,    /* bytes as base64-url-safe text */
    DZ_HEX,       /* bytes as hex text */
    DZ_U64,       /* BIGINT UNSIGNED written as a wrapped int64 (-1 = 2^64-1) */
} cache_dz;

typedef struct cache_col {
    char *name;
    char *type;      /* evt type name from the schema record; "" when inferred */
    cache_class cls;
    int pk;          /* 1-based position in the key, 0 = not a key column */
    int16_t scale;   /* from the schema record: DECIMAL scale, TIME/DATETIME fsp; -1 unknown */
    uint8_t dz;      /* cache_dz: set from the message's Connect schema (not stored in the file) */
    int8_t dz_arg;   /* DECIMAL scale; fraction digits of a temporal (-1: unknown, shortest exact) */
    bool fsp_history; /* dz_arg from Debezium's schema history (cache_history.c) */
    char *dflt_sql;  /* the column's default as an SQL literal of the stored value (schema record's
                        default, cache_apply.c), declared when the column is created; NULL: none */
} cache_col;

#define CACHE_STMT_SLOTS 4
#define CACHE_UPSERT_ROWS 16 /* rows per upsert statement (cache_rows.c) */

typedef struct cache_table {
    char *name;      /* "<db>.<table>" */
    size_t db_len;   /* bytes of <db> in name, when it came from a schema record */
    char *topic;     /* "<prefix>.<db>.<table>" (may be NULL until a message arrives) */
    cache_col *cols;
    size_t ncols;
    size_t *pk;      /* column indexes in key order */
    size_t npk;
    bool inferred;
    bool earlier_key_said; /* the INFO about records under an earlier key was logged */
    int64_t version;
    /* Kafka Connect schemas (cache_connect.c): the last key and value schema
     * texts the columns were typed from (a message with the same bytes needs
     * no parsing), and whether values need decoding (cx_conv) */
    char *cx_kschema, *cx_vschema;
    size_t cx_klen, cx_vlen;
    bool cx_conv;
    bool cx_warned;  /* the losses of this table's encoding were logged */
    /* prepared statements: upserts per presence mask (`rows` rows of `nparam`
     * parameters each), one delete */
    struct { char *mask; sqlite3_stmt *st; int rows, nparam; } up[CACHE_STMT_SLOTS];
    unsigned up_next;
    sqlite3_stmt *del;
    sqlite3_stmt *del_part;
} cache_table;

typedef struct cache_ckpt cache_ckpt;

typedef struct cache_store {
    sqlite3 *db;
    cache_ckpt *ckpt;         /* background checkpoints (writer only), cache_ckpt.c */
    char *path;
    int busy_ms;              /* how long SQLite waits for another process's lock */
    int lock_fd;              /* writer: the flock on "<path>.lock"; -1 none */
    unsigned long long dev, ino; /* the file opened (cache_store_check_file) */
    cache_table **tables;
    size_t ntables;
    cache_table *last_hit;
    struct cache_history *history; /* cache.debezium.history.topic read so far (NULL: none) */
    void (*history_refresh)(void *opaque); /* reads the history topic on to its end */
    void *history_opaque;
    sqlite3_stmt *st_offset;  /* upsert offset */
    sqlite3_stmt *st_state;   /* upsert state */
    bool in_tx;
    bool has_scale;           /* _tributary_columns has its scale column */
    cache_dbz_opts dbz;       /* how schemaless Debezium values were written (cache.debezium.*) */
    bool drop_on_drop;        /* cache.on.drop=drop */
    int64_t applied, skipped, dlq; /* counters (persisted at commit) */
    tb_buf scratch, sql;
    unsigned char *present;   /* per-column scratch */
    cj_val *vals;             /* per-column scratch */
    cj_val *last;             /* the last pending row's values (cache_rows.c) */
    size_t cap;
    /* upserts bound but not run yet (cache_rows.c): pend_n rows of the statement
     * in pend_t->up[pend_slot]; their values point into the messages, which the
     * caller keeps until cache_store_flush */
    cache_table *pend_t;
    unsigned pend_slot;
    int pend_n;
    int32_t pend_part;
    /* values decoded from Debezium's encodings (cache_connect.c): bound like the
     * message text, so they live as long: until cache_store_release */
    struct cache_arena *arena;
    cj_member *cx_mem;        /* decoded row members */
    size_t cx_cap;
} cache_store;

/* ---- cache_store.c: the SQLite side */
/* Open (readonly: for reading) or create the cache file, waiting for SQLite's locks held by
 * other processes up to 5 s. A writer takes the file's lock first ("<path>.lock", flock,
 * holding the writer's pid): a second writer of the same file, in this process or another,
 * is refused naming the holder. */
TB_MUST_USE tb_code cache_store_open(const char *path, bool readonly, cache_store **out, tb_error *err);
/* The same, waiting up to busy_ms (cache.busy.timeout.ms) for SQLite's locks. */
TB_MUST_USE tb_code cache_store_open_busy(const char *path, bool readonly, int busy_ms, cache_store **out, tb_error *err);
/* TB_OK while `path` is still the file the store opened; an error naming the fix when it was
 * deleted or replaced (the store would write a file nobody can open). */
TB_MUST_USE tb_code cache_store_check_file(cache_store *s, tb_error *err);
/* The one translation of SQLite's result codes on the cache file (code: extended code; msg:
 * SQLite's text, NULL: the connection's last): a lock held too long (retriable, names
 * cache.busy.timeout.ms), a corrupt file (TB_ERR_CORRUPT: rebuild it from the topics), a file
 * deleted under the store; anything else TB_ERR_IO. what: what was being done. */
TB_MUST_USE tb_code cache_sqlite_error(cache_store *s, int code, const char *what, const char *msg, tb_error *err);
void cache_store_close(cache_store *s); /* NULL-safe; rolls back an open transaction */
TB_MUST_USE tb_code cache_store_begin(cache_store *s, tb_error *err);
TB_MUST_USE tb_code cache_store_commit(cache_store *s, tb_error *err);
void cache_store_rollback(cache_store *s);
TB_MUST_USE tb_code cache_exec(cache_store *s, const char *sql, tb_error *err);
/* The table of source name "<db>.<table>", under that name or its mapped name
 * (cache_store_sql_name). */
cache_table *cache_store_find(cache_store *s, const char *name);
/* The name a table of source name `name` gets in the cache file (*out, caller
 * frees): the name itself, unless SQLite cannot hold it apart from another
 * cache table than self (SQLite compares table names without case, ASCII
 * only; names beginning with sqlite_ are reserved): then
 * "<name>~<16 hex digits of FNV-1a 64 of the exact name>" (logged at WARN).
 * The first of two such names to arrive keeps its name. */
TB_MUST_USE tb_code cache_store_sql_name(cache_store *s, const cache_table *self, const char *name, char **out, tb_error *err);
cache_table *cache_store_find_topic(cache_store *s, const char *topic);
/* Create (or replace after a rebuild) a table with these columns; takes ownership of t. */
TB_MUST_USE tb_code cache_store_create(cache_store *s, cache_table *t, tb_error *err);
TB_MUST_USE tb_code cache_store_drop(cache_store *s, cache_table *t, tb_error *err); /* frees t */
/* Add a column; dflt_sql (may be NULL): its default as an SQL literal, which the rows
 * already in the table take. */
TB_MUST_USE tb_code cache_store_add_column(cache_store *s, cache_table *t, const char *name, const char *type,
                               cache_class cls, const char *dflt_sql, tb_error *err);
/* Rename table t to name (db_len: bytes of <db> in it), now holding topic. */
TB_MUST_USE tb_code cache_store_rename(cache_store *s, cache_table *t, const char *name, size_t db_len, const char *topic,
                           tb_error *err);
TB_MUST_USE tb_code cache_store_update_column(cache_store *s, cache_table *t, size_t i, const char *type,
                                  cache_class cls, tb_error *err);
TB_MUST_USE tb_code cache_store_set_topic(cache_store *s, cache_table *t, const char *topic, tb_error *err);
/* Upsert the row object `row` (partition p), or when mem is not NULL its
 * members mem[0..nmem) (cj_parse_top_members: row is then not read); unknown
 * members make new (untyped) columns; key columns absent from a partial row
 * image are taken from `key` (the message key object, may be NULL). The row may only be bound to a
 * multi-row statement that runs later: the text of row and key must stay valid
 * until cache_store_flush (every other cache_store call that writes flushes
 * first, and a rollback drops what is pending). */
TB_MUST_USE tb_code cache_store_upsert(cache_store *s, cache_table *t, const cj_val *row, const cj_member *mem, size_t nmem,
                           const cj_val *key, int32_t partition, tb_error *err);
/* Run the pending upserts (see cache_store_upsert). */
TB_MUST_USE tb_code cache_store_flush(cache_store *s, tb_error *err);
/* Drop the pending upserts (a rollback). */
void cache_store_discard(cache_store *s);
/* Delete by key object. */
TB_MUST_USE tb_code cache_store_delete(cache_store *s, cache_table *t, const cj_val *key, tb_error *err);
TB_MUST_USE tb_code cache_store_drop_partition(cache_store *s, const char *topic, int32_t partition, tb_error *err);
/* cache_store_drop_partition for every partition with a stored offset for which keep() is false. */
TB_MUST_USE tb_code cache_store_drop_partitions_unless(cache_store *s, bool (*keep)(const char *topic, int32_t partition, void *opaque),
                                           void *opaque, tb_error *err);
/* Delete t's rows of Kafka partition `partition` (*n: how many). */
TB_MUST_USE tb_code cache_store_delete_partition(cache_store *s, cache_table *t, int32_t partition, int *n, tb_error *err);
TB_MUST_USE tb_code cache_store_put_offset(cache_store *s, const char *topic, int32_t partition, int64_t next,
                               int64_t high, tb_error *err);
TB_MUST_USE tb_code cache_store_del_offsets(cache_store *s, const char *topic, tb_error *err);
/* Stored next offset of a partition, or -1 when none. */
int64_t cache_store_get_offset(cache_store *s, const char *topic, int32_t partition);
TB_MUST_USE tb_code cache_store_put_state(cache_store *s, const char *key, int64_t v, tb_error *err);
int64_t cache_store_get_state(cache_store *s, const char *key, int64_t dflt);

/* Memory for n bytes that stays valid until cache_store_release (NULL: out of memory). */
char *cache_store_alloc(cache_store *s, size_t n);
/* The messages applied so far were flushed and are about to be freed: drop
 * what cache_store_alloc handed out for them. */
void cache_store_release(cache_store *s);
/* Delete every row of t (a truncate event). */
TB_MUST_USE tb_code cache_store_truncate(cache_store *s, cache_table *t, tb_error *err);

/* ---- cache_connect.c: Kafka Connect JSON (Debezium) keys and values */
/* text is {"schema":S,"payload":P} as JsonConverter writes it (compact) with S
 * byte-identical to schema (validated when it was first seen): the span of P.
 * Saves validating a schema that every message repeats. */
bool cache_cx_same_schema(const char *text, size_t len, const char *schema, size_t slen, const char **payload,
                          size_t *plen);
/* v is {"schema":S,"payload":P} (exactly these members): S and P. */
bool cache_cx_unwrap(const cj_val *v, cj_val *schema, cj_val *payload);
/* cache_history.c: the fsp of Debezium's temporal columns from its schema
 * history topic. cache_history_add: one record's value (TB_ERR_INVALID when it
 * is not one; the states read before stay). cache_history_fsp: the column's
 * fsp (0..6) in the state of table "<db>.<table>" whose columns are
 * fields[0..nf) (else the latest), -1 when unknown or not a temporal. */
typedef struct cache_history cache_history;
cache_history *cache_history_new(void);
void cache_history_free(cache_history *h);
TB_MUST_USE tb_code cache_history_add(cache_history *h, const char *value, size_t len, tb_error *err);
int cache_history_fsp(const cache_history *h, const char *table, const char *const *fields, size_t nf,
                      const char *column);
int64_t cache_history_records(const cache_history *h);

/* Type the table of `topic` from a message's Connect schemas (key schema and
 * value schema, each NULL when absent; a span equal to t's remembered schema
 * may point into that memory): create it, or add columns and set
 * the columns' decoders. *t: the table (NULL when not known yet). */
TB_MUST_USE tb_code cache_cx_table(cache_store *s, const char *topic, const char *prefix, const cj_val *kschema,
                       const cj_val *vschema, const cj_val *key, cache_table **t, tb_error *err);
/* The members of row image `row` decoded for t's columns (an unavailable
 * value, __debezium_unavailable_value, is left out like a column absent from
 * a partial image): *out borrows s (valid until cache_store_release). */
TB_MUST_USE tb_code cache_cx_row(cache_store *s, const cache_table *t, const cj_val *row, const cj_member *in, size_t nin,
                     cj_member **out, size_t *nout, tb_error *err);
/* A table typed from tributary's <prefix>.schema record whose values come in
 * Debezium's encoding without Connect schemas (value.encoding=debezium): set
 * the decoders from the column types and s->dbz. */
void cache_dbz_typed(const cache_store *s, cache_table *t);
/* A table inferred from a Debezium envelope without schemas: log once per
 * table and run which columns cannot be decoded faithfully, and why. */
void cache_dbz_warn_schemaless(const cache_store *s, cache_table *t, const cj_val *row);
/* The key object decoded for t's key columns into *out (text in the arena). */
TB_MUST_USE tb_code cache_cx_key(cache_store *s, const cache_table *t, const cj_val *key, cj_val *out, tb_error *err);

/* ---- cache_ckpt.c: WAL checkpoints on a thread of their own (writer only).
 * start: a second connection and a thread, owned by s (s->ckpt); stop: joins
 * and frees them, NULL-safe, called by cache_store_close before the close. */
TB_MUST_USE tb_code cache_ckpt_start(cache_store *s, tb_error *err);
void cache_ckpt_stop(cache_store *s);

void cache_table_free(cache_table *t); /* NULL-safe */
/* Column index of a member name (raw key span); hint: the index expected (members usually
 * come in table order). -1 when t has no such column. */
long cache_col_find(const cache_table *t, const char *k, size_t klen, size_t hint);
/* The rowid of an SQLite source row whose key holds NULL: the message key's member EVT_KEY_ROWID
 * (DESIGN 8 "Keys"), kept in a column of that name, made when the first such key arrives. It is
 * not part of the table's primary key: rows whose key holds no NULL leave it NULL, and a row is
 * found by its key columns and this column (IS, so NULL matches NULL). Its index, or -1 when
 * the table has none. */
long cache_rowid_col(const cache_table *t);
/* The same, making the column when t has none (an INFO); *ci its index. */
TB_MUST_USE tb_code cache_store_rowid_col(cache_store *s, cache_table *t, long *ci, tb_error *err);
/* Quoted SQL identifier appended to b. */
TB_MUST_USE tb_code cache_quote_ident(tb_buf *b, const char *name);
/* Class of an evt type name (with the column's source type for BIT(1), unsigned). */
cache_class cache_class_of(const char *type, const char *source_type, bool is_unsigned);
const char *cache_class_decl(cache_class c);

/* ---- cache_value.c: JSON <-> SQLite values */
/* Bind JSON value v for a column of class cls at index idx. scratch is reused. */
TB_MUST_USE tb_code cache_bind(sqlite3_stmt *st, int idx, cache_class cls, const cj_val *v, tb_buf *scratch,
                   const char *col, tb_error *err);
/* The non-finite real v stands for in a column of class cls: "Infinity", "-Infinity",
 * "NaN" in a CC_REAL column, {"$real":one of them} in a CC_ANY column (DESIGN 5,
 * evt_json_put_real); false for any other value (then it is what it says: text, JSON). */
bool cache_nonfinite(const cj_val *v, cache_class cls, double *d);

#endif
