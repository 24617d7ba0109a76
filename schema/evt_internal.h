/*
 * evt_internal: helpers shared by the files of schema/ only (not an API for
 * other modules; they include evt.h and evt_json.h).
 */
#ifndef EVT_INTERNAL_H
#define EVT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "evt_json.h"

/* ------------------------------------------------------------ tables */
struct evt_table {
    int refs; /* atomic: events may travel between threads */
    char *db;
    char *name;
    size_t ncols;
    evt_column *cols;
    size_t npk;
    size_t *pk;
    uint32_t version;
    bool names_known;
    bool sealed;
    bool dropped;
    bool keys_only;
    long row_end; /* evt_table_set_row_end: -1 none */
    char *renamed_db, *renamed_table; /* NULL unless renamed_from was set */
    char *keyfrag;   /* set by seal: each column name as JSON key text, then EVT_KEYFRAG_PAD bytes */
    size_t *keyoff;  /* ncols + 1 offsets into keyfrag */
    char *srcfrag;   /* set by seal: "\"db\":\"<db>\",\"table\":\"<name>\"" (source block members) */
    size_t srcfrag_len;
};

#define EVT_KEYFRAG_PAD 16

/* ------------------------------------------------------------ arena
 * A chunked bump allocator. Pointers it returns never move; they stay valid
 * until evt_arena_reset() or evt_arena_free(). Allocations are 8-aligned.
 * Reset keeps chunks up to 1 MiB for reuse and frees bigger ones. */
typedef struct evt_arena_chunk evt_arena_chunk;
typedef struct evt_arena {
    evt_arena_chunk *head;
    evt_arena_chunk *cur;
} evt_arena;

#define EVT_ARENA_ALIGN 8
struct evt_arena_chunk {
    evt_arena_chunk *next;
    size_t size; /* usable bytes in data */
    size_t used;
    _Alignas(16) unsigned char data[];
};

void *evt_arena_alloc_slow(evt_arena *a, size_t n); /* any n; NULL on allocation failure */
/* n bytes, 8-aligned; NULL on allocation failure. The bump is inline, the
 * rest (next chunk, new chunk, size limits) evt_arena_alloc_slow's. */
static inline void *evt_arena_alloc(evt_arena *a, size_t n)
{
    evt_arena_chunk *c = a->cur;
    size_t r = (n + EVT_ARENA_ALIGN - 1) & ~(size_t)(EVT_ARENA_ALIGN - 1);
    if (c && n != 0 && n <= 4096 && c->size - c->used >= r) {
        void *p = c->data + c->used;
        c->used += r;
        return p;
    }
    return evt_arena_alloc_slow(a, n);
}
void evt_arena_reset(evt_arena *a);
void evt_arena_free(evt_arena *a);             /* a may hold nothing; leaves it empty */

/* ------------------------------------------------------------ writer internals */

/* Append bytes verbatim as one value (caller guarantees they are one valid
 * JSON text, e.g. a key or value produced by this codec). */
void evt_jw_raw_json(evt_jw *w, const char *json, size_t len);
/* evt_jw_json with an error message giving the byte offset. */
tb_code evt_jw_json_ex(evt_jw *w, const char *json, size_t len, tb_error *err);
/* Set the writer's sticky error (no-op when already failed). */
void evt_jw_fail(evt_jw *w, tb_code code);

/* ---- writer primitives, inline for the codec's hot path (evt_jw.c) */
/* Room for n more bytes; NULL (and sticky error) when the buffer cannot grow. */
static inline char *jw_room(evt_jw *w, size_t n)
{
    tb_buf *b = w->out;
    if ((b->cap - b->len <= n || n > b->max - b->len) && tb_buf_reserve(b, n) != TB_OK) {
        evt_jw_fail(w, TB_ERR_NOMEM);
        return NULL;
    }
    return w->out->data + w->out->len;
}

static inline void jw_commit(evt_jw *w, char *end)
{
    w->out->len = (size_t)(end - w->out->data);
    *end = '\0';
}

static inline bool jw_comma_bit(const evt_jw *w)
{
    return w->depth < 64 ? (w->need_comma >> w->depth) & 1 : (w->need_comma_hi >> (w->depth - 64)) & 1;
}

static inline void jw_comma_set(evt_jw *w, bool on)
{
    uint64_t *word = w->depth < 64 ? &w->need_comma : &w->need_comma_hi;
    uint64_t bit = (uint64_t)1 << (w->depth & 63);
    *word = on ? *word | bit : *word & ~bit;
}

/* Called before every value and key: returns where to write, with the comma
 * already written if one is due. extra = bytes the caller will write. */
static inline char *jw_pre(evt_jw *w, size_t extra)
{
    if (w->err)
        return NULL;
    char *p = jw_room(w, extra + 1);
    if (!p)
        return NULL;
    if (w->after_key)
        w->after_key = false;
    else {
        if (jw_comma_bit(w)) {
            *p++ = ',';
            jw_commit(w, p);
        }
        jw_comma_set(w, true);
    }
    return p;
}

/* Write complete object members given as their final text ("\"a\":1,\"b\":2"),
 * with the usual comma logic before them (also: any scalar's final text). */
static inline void evt_jw_members_lit(evt_jw *w, const char *frag, size_t n)
{
    char *p = jw_pre(w, n);
    if (!p)
        return;
    memcpy(p, frag, n);
    jw_commit(w, p + n);
}
/* Write a key given as its final text, quotes and colon included
 * ("\"id\":"), with the usual comma logic. EVT_JW_KEY for literals. */
static inline void evt_jw_key_lit(evt_jw *w, const char *frag, size_t n)
{
    evt_jw_members_lit(w, frag, n);
    if (w->err == TB_OK)
        w->after_key = true;
}
#define EVT_JW_KEY(w, lit) evt_jw_key_lit((w), "\"" lit "\":", sizeof("\"" lit "\":") - 1)

/* Decimal digits of v written backwards ending at end; returns the start. */
char *evt_u64_digits(uint64_t v, char *end);

/* ---- raw writing, for the codec's hot path: reserve the worst case with
 * jw_room/jw_pre once, write bytes through the pointer, jw_commit the end.
 * The JSON structure written this way is the caller's to keep right. */

/* Room evt_jw_esc_raw needs for len input bytes (6 per byte for \u00XX,
 * plus the 16 it may store ahead). */
#define EVT_JW_ESC_ROOM(len) (6 * (len) + 16)
/* Escape (no quotes) s[0, len) into p; returns the end (evt_jw.c). */
char *evt_jw_esc_raw(char *p, const char *s, size_t len);
/* The quoted, escaped string, no comma logic (long strings in pieces). */
void evt_jw_put_str(evt_jw *w, const char *s, size_t len);

/* Where to write at most need raw bytes: w's buffer, or *spill (zeroed by
 * the caller: tb_buf spill = {0}) when w's buffer is bounded below
 * the worst case; jw_raw_done then copies what was really written, failing
 * with NOMEM only if that does not fit. NULL (sticky error) on failure. */
static inline char *jw_raw_room(evt_jw *w, size_t need, tb_buf *spill)
{
    if (w->err)
        return NULL;
    tb_buf *b = w->out;
    if (need < b->max - b->len)
        return jw_room(w, need);
    if (tb_buf_reserve(spill, need) != TB_OK) {
        evt_jw_fail(w, TB_ERR_NOMEM);
        return NULL;
    }
    return spill->data;
}

/* End a raw write begun with jw_raw_room at end; frees *spill. */
static inline void jw_raw_done(evt_jw *w, char *end, tb_buf *spill)
{
    if (!spill->data) {
        jw_commit(w, end);
        return;
    }
    size_t n = (size_t)(end - spill->data);
    char *p = jw_room(w, n);
    if (p) {
        memcpy(p, spill->data, n);
        jw_commit(w, p + n);
    }
    tb_buf_free(spill);
}

/* Quoted, escaped string at p (room: EVT_JW_ESC_ROOM(len) + 2). */
static inline char *jw_str_raw(char *p, const char *s, size_t len)
{
    *p++ = '"';
    p = evt_jw_esc_raw(p, s, len);
    *p++ = '"';
    return p;
}

/* Decimal digits of v at p, forwards (room: 20); returns the end. */
static inline char *jw_u64_raw(char *p, uint64_t v)
{
    if (v < 10) { /* row numbers, server ids, flags: no call */
        *p = (char)('0' + v);
        return p + 1;
    }
    static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                       10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                       100000000000ull, 1000000000000ull, 10000000000000ull,
                                       100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                       100000000000000000ull, 1000000000000000000ull,
                                       10000000000000000000ull};
    unsigned t = ((unsigned)(64 - __builtin_clzll(v | 1)) * 1233u) >> 12; /* about log10(2^bits) */
    unsigned n = t + (v >= pow10[t]);
    if (n == 0)
        n = 1;
    evt_u64_digits(v, p + n);
    return p + n;
}

/* Signed decimal at p (room: 21). */
static inline char *jw_i64_raw(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return jw_u64_raw(p, (uint64_t)0 - (uint64_t)v);
    }
    return jw_u64_raw(p, (uint64_t)v);
}

/* One value in the tributary encoding (section 5 of DESIGN), as a member's value. */
void evt_json_put_value(evt_jw *w, const evt_value *v, tb_error *err);

/* ---- value.encoding=debezium (evt_dbz.c) */
/* One value as Debezium writes it for column c; snapshot: the event is a
 * snapshot read (Debezium's snapshot and binlog paths differ for FLOAT and
 * TIMESTAMP text). On failure the writer's error is set and err says why. */
void evt_dbz_value(evt_jw *w, const evt_codec_opts *o, const evt_column *c, const evt_value *v, bool snapshot,
                   tb_error *err);
/* A column's default as Debezium's schema gives it (BinlogDefaultValueConverter): its
 * literal as a value of the column's type (CURRENT_TIMESTAMP of a DATETIME, or of a NOT NULL
 * TIMESTAMP, as 1970-01-01 00:00:00; a BIT literal b'...'); false when Debezium gives none (no
 * default, another expression, a zero date or a nullable TIMESTAMP's epoch, a text that does
 * not parse). The value points into c->default_text and d. */
typedef struct evt_dbz_dflt {
    evt_value v;
    char text[96];           /* a DECIMAL's digits at the column's scale */
    const char *items[64];   /* a SET's labels */
    size_t lens[64];
} evt_dbz_dflt;
bool evt_dbz_default(const evt_codec_opts *o, const evt_column *c, evt_dbz_dflt *d);
/* D of a FLOAT(M,D) column (source type "float(7,3)"), which Debezium types as a double: the
 * float's value widened (its snapshot reads the server's text with D decimals first); -1 for
 * any other column. */
int evt_dbz_float_scale(const evt_column *c);
/* A POINT column (source type "point": the snapshot's COLUMN_TYPE, the binlog's GEOMETRY_TYPE
 * metadata), which Debezium writes as io.debezium.data.geometry.Point {x, y, wkb, srid}. */
static inline bool evt_dbz_is_point(const evt_column *c)
{
    const char *s = c->source_type;
    return c->type == EVT_T_GEOMETRY && s && (s[0] | 0x20) == 'p' && (s[1] | 0x20) == 'o' &&
           (s[2] | 0x20) == 'i' && (s[3] | 0x20) == 'n' && (s[4] | 0x20) == 't' && s[5] == '\0';
}
/* ---- Kafka Connect JSON schemas (evt_connect.c) */
/* The Connect schema of a table's key; rowid: the key of a row whose key holds NULL (its columns
 * optional, and the member EVT_KEY_ROWID). */
void evt_connect_key_schema(evt_jw *w, const evt_codec_opts *o, const evt_table *t, bool rowid);
void evt_connect_value_schema(evt_jw *w, const evt_codec_opts *o, const evt_event *e);

/* Days from 1970-01-01 (proleptic Gregorian). */
int64_t evt_dbz_days(int64_t y, unsigned m, unsigned d);

/* JSON number grammar (RFC 8259 section 6). */
bool evt_json_number_ok(const char *s, size_t len);
/* Length of the valid UTF-8 sequence at s (1..4), 0 if s[0] starts no valid sequence. */
size_t evt_utf8_seq(const unsigned char *s, size_t avail);

#endif
