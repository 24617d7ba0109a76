/* tb_hmap: hash map from byte strings to pointers (see tb_hmap.h). */
#include "tb_hmap.h"

#include <stdlib.h>
#include <string.h>

#define TB_HMAP_MIN_CAP 16

void tb_hmap_init(tb_hmap *m)
{
    m->slots = NULL;
    m->cap = m->n = 0;
}

void tb_hmap_free(tb_hmap *m, void (*free_val)(void *))
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) {
            free(m->slots[i].key);
            if (free_val)
                free_val(m->slots[i].val);
        }
    free(m->slots);
    tb_hmap_init(m);
}

/* The slot holding key, or the empty slot where it goes. cap > 0. */
static tb_hmap_slot *tb_hmap_slot_for(tb_hmap_slot *slots, size_t cap, const void *key, size_t len, uint64_t h)
{
    size_t mask = cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        tb_hmap_slot *s = &slots[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

static tb_code tb_hmap_grow(tb_hmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : TB_HMAP_MIN_CAP;
    if (cap < m->cap || cap > SIZE_MAX / sizeof(tb_hmap_slot))
        return TB_ERR_NOMEM;
    tb_hmap_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return TB_ERR_NOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *tb_hmap_slot_for(slots, cap, m->slots[i].key, m->slots[i].len, m->slots[i].hash) = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return TB_OK;
}

tb_code tb_hmap_put(tb_hmap *m, const void *key, size_t len, void ***val)
{
    uint64_t h = tb_hash_bytes(key, len);
    tb_hmap_slot *s = m->cap ? tb_hmap_slot_for(m->slots, m->cap, key, len, h) : NULL;
    if (s && s->key) {
        *val = &s->val;
        return TB_OK;
    }
    if ((m->n + 1) * 2 > m->cap) {
        if (tb_hmap_grow(m) != TB_OK)
            return TB_ERR_NOMEM;
        s = tb_hmap_slot_for(m->slots, m->cap, key, len, h);
    }
    char *k = malloc(len + 1);
    if (!k)
        return TB_ERR_NOMEM;
    if (len)
        memcpy(k, key, len);
    k[len] = '\0';
    s->key = k;
    s->len = len;
    s->hash = h;
    s->val = NULL;
    m->n++;
    *val = &s->val;
    return TB_OK;
}

void **tb_hmap_find(const tb_hmap *m, const void *key, size_t len)
{
    if (!m->cap)
        return NULL;
    tb_hmap_slot *s = tb_hmap_slot_for(m->slots, m->cap, key, len, tb_hash_bytes(key, len));
    return s->key ? &s->val : NULL;
}

bool tb_hmap_next(const tb_hmap *m, size_t *it, const char **key, size_t *len, void **val)
{
    for (; *it < m->cap; (*it)++) {
        const tb_hmap_slot *s = &m->slots[*it];
        if (s->key) {
            if (key)
                *key = s->key;
            if (len)
                *len = s->len;
            if (val)
                *val = s->val;
            (*it)++;
            return true;
        }
    }
    return false;
}
