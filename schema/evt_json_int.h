/*
 * evt_json_int: what the files of the JSON codec share (evt_json.c: values,
 * keys, envelopes and rendering; evt_json_schema.c: topic names and schema
 * records). Internal to schema/.
 */
#ifndef EVT_JSON_INT_H
#define EVT_JSON_INT_H

#include <stdint.h>
#include <string.h>

#include "evt_internal.h"
#include "evt_json.h"

/* A member name as a literal: the quoted name and colon, and its length (evt_jw_key_lit). */
#define EVT_JW_KEY_ARGS(lit) "\"" lit "\":", sizeof("\"" lit "\":") - 1

/* A member whose value is the string s, or null for NULL. */
static inline void put_cstr(evt_jw *w, const char *key, size_t klen, const char *s)
{
    evt_jw_key_lit(w, key, klen);
    if (s)
        evt_jw_str(w, s, strlen(s));
    else
        evt_jw_null(w);
}

/* A member whose value is the unsigned integer v. */
static inline void put_u(evt_jw *w, const char *key, size_t klen, uint64_t v)
{
    evt_jw_key_lit(w, key, klen);
    evt_jw_uint(w, v);
}

#endif
