/*
 * tb_kset: a set of 64-bit digests with one byte of state each (open
 * addressing, linear probing, load at most 3/4, capacity a power of two):
 * 9 bytes a slot, 12 to 24 bytes a member. For sets of keys too many to
 * hold as bytes (the keys of a topic of millions of rows, DESIGN 6a).
 *
 * Digest 0 is stored as 1 (0 marks an empty slot): two keys whose digests
 * differ only so are one member, as any two keys with one digest are.
 *
 *   tb_kset s;
 *   tb_kset_init(&s);
 *   uint8_t *st;
 *   if (tb_kset_put(&s, tb_kset_digest(key, len), &st) != TB_OK) ...  // *st 0 when new
 *   if (tb_kset_has(&s, d)) ...
 *   tb_kset_free(&s);
 */
#ifndef TB_KSET_H
#define TB_KSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tb_error.h"

typedef struct tb_kset {
    uint64_t *d;  /* digests; 0 = empty slot */
    uint8_t *st;  /* the state byte of each slot */
    size_t cap;   /* 0 or a power of two */
    size_t n;     /* members */
} tb_kset;

/* A digest of n bytes: 64-bit FNV-1a, then a 64-bit finalizer (bits of
 * short, similar keys spread over the whole word). */
uint64_t tb_kset_digest(const void *p, size_t n);

void tb_kset_init(tb_kset *s);
/* Frees the slots; s is empty and reusable. NULL-safe. */
void tb_kset_free(tb_kset *s);
/* Adds d (its state byte 0 when new); *state (may be NULL) points at its
 * state byte, valid until the next put. TB_ERR_NOMEM leaves s as it was. */
TB_MUST_USE tb_code tb_kset_put(tb_kset *s, uint64_t d, uint8_t **state);
bool tb_kset_has(const tb_kset *s, uint64_t d);
/* The state byte of d, or NULL when d is not a member. */
uint8_t *tb_kset_find(const tb_kset *s, uint64_t d);
/* Iterate: *it starts at 0; true with *d and *state of the next member. */
bool tb_kset_next(const tb_kset *s, size_t *it, uint64_t *d, uint8_t *state);

#endif
