/*
 * tb_hmap: the one hash map of tributary, from byte strings to pointers
 * (open addressing with linear probing, FNV-1a, load at most one half,
 * capacity a power of two; after Redis's dict and curl's hash, smaller).
 *
 * Ownership: the map owns a copy of every key (NUL-terminated, so a string
 * key reads as a C string); values are the caller's pointers, which the map
 * never dereferences. tb_hmap_free() takes an optional destructor for them.
 * A value slot returned by tb_hmap_put()/tb_hmap_find() is valid until the
 * next tb_hmap_put() (a put may move every slot). There is no removal: the
 * users keep tables, keys or announced versions for the life of the map.
 *
 *   tb_hmap m;
 *   tb_hmap_init(&m);
 *   void **v;
 *   if (tb_hmap_put(&m, key, len, &v) != TB_OK) ...   // *v is NULL when the key is new
 *   if (!*v) *v = make_value();
 *   for (size_t it = 0; tb_hmap_next(&m, &it, &k, &klen, &val);) ...
 *   tb_hmap_free(&m, free);
 */
#ifndef TB_HMAP_H
#define TB_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tb_error.h"

typedef struct tb_hmap_slot {
    char *key; /* owned, NUL-terminated; NULL = empty slot */
    size_t len;
    uint64_t hash;
    void *val;
} tb_hmap_slot;

typedef struct tb_hmap {
    tb_hmap_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t n;   /* keys held */
} tb_hmap;

/* 64-bit FNV-1a of n bytes (inline: hot loops hash short keys). */
static inline uint64_t tb_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL; /* offset basis */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL; /* prime */
    return h;
}

void tb_hmap_init(tb_hmap *m);

/* Free the keys, call free_val (when not NULL) on every value, leave m empty
 * and reusable. m may be NULL. */
void tb_hmap_free(tb_hmap *m, void (*free_val)(void *));

/* The value slot of key, added (holding NULL) when the key is new.
 * TB_ERR_NOMEM when the key or a larger table cannot be allocated; m is then
 * as it was. */
TB_MUST_USE tb_code tb_hmap_put(tb_hmap *m, const void *key, size_t len, void ***val);

/* The value slot of key, or NULL when the map does not hold it. */
void **tb_hmap_find(const tb_hmap *m, const void *key, size_t len);

/* Iterate: start with *it = 0; true and the next entry while there is one. */
bool tb_hmap_next(const tb_hmap *m, size_t *it, const char **key, size_t *len, void **val);

#endif
