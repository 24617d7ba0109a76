/* tb_kset: see tb_kset.h. */
#include "tb_kset.h"

#include <stdlib.h>

#include "tb_hmap.h"

uint64_t tb_kset_digest(const void *p, size_t n)
{
    uint64_t h = tb_hash_bytes(p, n); /* then splitmix64's finalizer */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

void tb_kset_init(tb_kset *s)
{
    s->d = NULL;
    s->st = NULL;
    s->cap = s->n = 0;
}

void tb_kset_free(tb_kset *s)
{
    if (!s)
        return;
    free(s->d);
    free(s->st);
    tb_kset_init(s);
}

static size_t kset_slot(const uint64_t *d, size_t cap, uint64_t k)
{
    size_t i = (size_t)k & (cap - 1);
    while (d[i] && d[i] != k)
        i = (i + 1) & (cap - 1);
    return i;
}

static tb_code kset_grow(tb_kset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *d = calloc(cap, sizeof(*d));
    uint8_t *st = calloc(cap, 1);
    if (!d || !st) {
        free(d);
        free(st);
        return TB_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->d[i]) {
            size_t j = kset_slot(d, cap, s->d[i]);
            d[j] = s->d[i];
            st[j] = s->st[i];
        }
    free(s->d);
    free(s->st);
    s->d = d;
    s->st = st;
    s->cap = cap;
    return TB_OK;
}

tb_code tb_kset_put(tb_kset *s, uint64_t d, uint8_t **state)
{
    if (!d)
        d = 1;
    if ((s->n + 1) * 4 > s->cap * 3 && kset_grow(s) != TB_OK)
        return TB_ERR_NOMEM;
    size_t i = kset_slot(s->d, s->cap, d);
    if (!s->d[i]) {
        s->d[i] = d;
        s->st[i] = 0;
        s->n++;
    }
    if (state)
        *state = &s->st[i];
    return TB_OK;
}

uint8_t *tb_kset_find(const tb_kset *s, uint64_t d)
{
    if (!s || !s->cap)
        return NULL;
    if (!d)
        d = 1;
    size_t i = kset_slot(s->d, s->cap, d);
    return s->d[i] ? &s->st[i] : NULL;
}

bool tb_kset_has(const tb_kset *s, uint64_t d)
{
    return tb_kset_find(s, d) != NULL;
}

bool tb_kset_next(const tb_kset *s, size_t *it, uint64_t *d, uint8_t *state)
{
    for (; *it < s->cap; (*it)++)
        if (s->d[*it]) {
            if (d)
                *d = s->d[*it];
            if (state)
                *state = s->st[*it];
            (*it)++;
            return true;
        }
    return false;
}
