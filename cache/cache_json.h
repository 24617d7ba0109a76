/*
 * cache_json: a zero-allocation JSON scanner for the cache's hot path.
 *
 * The cache reads millions of small objects (keys and values of the wire
 * format, DESIGN 4). Instead of building a tree it validates a value in place
 * and hands out spans into the caller's bytes: every span (cj_val.ptr/len)
 * borrows the input text and is valid as long as that text.
 *
 *   cj_val v;
 *   if (cj_parse(text, len, &v, err) != TB_OK) ...;     // whole text, one value
 *   cj_iter it; cj_obj_begin(&v, &it);
 *   const char *k; size_t klen; cj_val m;
 *   while (cj_obj_next(&it, &k, &klen, &m)) ...;         // raw key bytes (escaped)
 *
 * Strings: ptr/len span the raw bytes between the quotes (escapes left in);
 * cj_str_decode() decodes them into a tb_buf. `escaped` says whether any
 * backslash occurs, so callers can bind the span directly when it is false.
 * A lone \udc80..\udcff escape turns back into the raw byte 0x80..0xff
 * (DESIGN 5, as the writer evt_jw_str encodes invalid UTF-8); any other lone
 * surrogate becomes U+FFFD. Nesting is limited to EVT_JSON_MAX_DEPTH, the
 * writer's limit. fuzz/fuzz_json_readers.c holds this scanner, evt_jv and
 * Jansson to the same grammar and the same decoded values.
 *
 * Why not schema/evt_jv.c: evt_jv is the reader for everything else (records,
 * `offsets show`, re-serialising JSON columns through evt_jw); it builds a
 * tree in an arena and decodes every string into a copy. The cache needs the
 * opposite: no allocation and no copy per message (spans bound straight into
 * SQLite when unescaped), which is this scanner. Making evt_jv serve both
 * means giving it a span/iterator mode, i.e. moving this scanner into
 * schema/ behind evt_jv's API; not done yet (the two share no code beyond
 * the RFC 8259 grammar, and the \udcXX rule, which both implement as
 * documented in evt_jw.c).
 */
#ifndef CACHE_JSON_H
#define CACHE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tb_buf.h"
#include "tb_error.h"

typedef enum cj_type { CJ_NULL, CJ_FALSE, CJ_TRUE, CJ_NUMBER, CJ_STRING, CJ_ARRAY, CJ_OBJECT } cj_type;

typedef struct cj_val {
    cj_type type;
    const char *ptr; /* STRING: bytes between the quotes; others: the whole value text */
    size_t len;
    bool escaped;    /* STRING: contains a backslash escape */
    bool is_int;     /* NUMBER: no fraction, no exponent */
} cj_val;

typedef struct cj_iter {
    const char *p, *end;
    bool first;
} cj_iter;

/* Parse exactly one JSON value spanning text[0..len) (surrounding whitespace
 * allowed). TB_ERR_INVALID with the byte offset on bad input. */
TB_MUST_USE tb_code cj_parse(const char *text, size_t len, cj_val *out, tb_error *err);

/* One member of an object: key span (raw, between the quotes) and value. */
typedef struct cj_member {
    const char *key;
    size_t klen;
    cj_val val;
} cj_member;

/* cj_parse, and when the value is an object also its top-level members named
 * names[0..n) (plain names) in one pass: vals[i] and found[i]; *count = members.
 * A name is matched only when its key has no escapes. With collect < n, also
 * the members of the top-level member names[collect] when it is an object (its
 * last occurrence): mem[0..*nmem) in order, when *nmem <= cap; a larger *nmem
 * says how many there are, and only the first cap were stored (iterate the
 * object instead). *nmem = 0 when that member is absent or not an object (or
 * collect >= n). Saves iterating the object again. */
TB_MUST_USE tb_code cj_parse_top_members(const char *text, size_t len, cj_val *out, const char *const *names, size_t n,
                             cj_val *vals, bool *found, size_t *count, size_t collect, cj_member *mem, size_t cap,
                             size_t *nmem, tb_error *err);

/* Iterate an OBJECT (already validated by cj_parse). */
void cj_obj_begin(const cj_val *obj, cj_iter *it);
/* Next member: key span (raw, between the quotes) and value. False at the end. */
bool cj_obj_next(cj_iter *it, const char **key, size_t *klen, cj_val *val);
/* Member lookup by plain (unescaped) key; false if missing. */
bool cj_obj_get(const cj_val *obj, const char *key, cj_val *val);
/* Number of members of an OBJECT or elements of an ARRAY. */
size_t cj_count(const cj_val *v);
/* Iterate an ARRAY. */
void cj_arr_begin(const cj_val *arr, cj_iter *it);
bool cj_arr_next(cj_iter *it, cj_val *val);

/* Decode a STRING span (or a raw key span) into out (appended). */
TB_MUST_USE tb_code cj_str_decode(const char *ptr, size_t len, tb_buf *out);
/* A STRING's decoded text as a new C string (the caller frees; tmp is scratch); NULL when v is
 * not a string, or out of memory. */
char *cj_strdup(const cj_val *v, tb_buf *tmp);
/* Key span equals the plain string s (handles escaped keys). */
bool cj_key_eq(const char *k, size_t klen, const char *s);

/* An integer NUMBER as int64; false when it does not fit (or is not an integer). */
bool cj_int64(const cj_val *v, int64_t *out);

#endif
