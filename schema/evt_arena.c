/*
 * evt_arena: chunked bump allocator used by events (value bytes) and by the
 * JSON reader (parsed trees). See evt_internal.h.
 */
#include "evt_internal.h"

#include <stdlib.h>

#define ARENA_CHUNK 256 /* the first chunk; each new one doubles, up to ARENA_KEEP */
#define ARENA_KEEP ((size_t)1 << 20)
#define ARENA_ALIGN EVT_ARENA_ALIGN

void *evt_arena_alloc_slow(evt_arena *a, size_t n)
{
    if (n > SIZE_MAX - 64)
        return NULL;
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (n == 0)
        n = ARENA_ALIGN;
    for (;;) {
        evt_arena_chunk *c = a->cur;
        if (c && c->size - c->used >= n) {
            void *p = c->data + c->used;
            c->used += n;
            return p;
        }
        if (c && c->next) { /* a chunk kept by an earlier reset */
            a->cur = c->next;
            a->cur->used = 0;
            continue;
        }
        size_t size = ARENA_CHUNK;
        if (c && c->size < ARENA_KEEP && c->size * 2 > size)
            size = c->size * 2;
        if (size < n)
            size = n;
        if (size > SIZE_MAX - sizeof(evt_arena_chunk))
            return NULL;
        evt_arena_chunk *nc = malloc(sizeof(evt_arena_chunk) + size);
        if (!nc)
            return NULL;
        nc->next = NULL;
        nc->size = size;
        nc->used = 0;
        if (c)
            c->next = nc;
        else
            a->head = nc;
        a->cur = nc;
    }
}

void evt_arena_reset(evt_arena *a)
{
    evt_arena_chunk **pp = &a->head;
    while (*pp) {
        evt_arena_chunk *c = *pp;
        if (c->size > ARENA_KEEP) {
            *pp = c->next;
            free(c);
            continue;
        }
        c->used = 0;
        pp = &c->next;
    }
    a->cur = a->head;
}

void evt_arena_free(evt_arena *a)
{
    evt_arena_chunk *c = a->head;
    while (c) {
        evt_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = a->cur = NULL;
}
