/*
 * verify_map: the digest map of `tributary verify` (verify.h, MEMORY), the
 * set of keys to check again, and the comparison of positions.
 */
#include <stdlib.h>
#include <string.h>

#include "binlog.h"
#include "tb_hmap.h"
#include "verify.h"

/* ------------------------------------------------------------ digest map */

void vmap_init(vmap *m) { memset(m, 0, sizeof(*m)); }

void vmap_free(vmap *m)
{
    if (!m)
        return;
    free(m->slots);
    size_t max = m->max_bytes;
    memset(m, 0, sizeof(*m));
    m->max_bytes = max;
}

uint64_t vmap_hash(const void *p, size_t n)
{
    uint64_t h = tb_hash_bytes(p, n);
    /* FNV-1a mixes its high bits poorly: a 64-bit finalizer spreads them over the index bits */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1;
}

static vmap_slot *probe(vmap_slot *slots, size_t cap, uint64_t khash)
{
    size_t i = (size_t)khash & (cap - 1);
    while (slots[i].khash && slots[i].khash != khash)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* The map's capacity as cap slots: within max_bytes, the old slots counted too while they are copied. */
static bool room(const vmap *m, size_t cap)
{
    return !m->max_bytes || (cap + m->cap) * sizeof(vmap_slot) <= m->max_bytes;
}

static bool grow_to(vmap *m, size_t cap)
{
    if (!room(m, cap)) {
        m->full = true;
        return false;
    }
    vmap_slot *s = calloc(cap, sizeof(*s));
    if (!s)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].khash)
            *probe(s, cap, m->slots[i].khash) = m->slots[i];
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return true;
}

tb_code vmap_reserve(vmap *m, uint64_t n)
{
    size_t cap = 1024;
    while ((uint64_t)cap * 3 < n * 4 && cap < ((size_t)1 << 40))
        cap *= 2;
    while (m->max_bytes && cap > 1024 && cap * sizeof(vmap_slot) > m->max_bytes)
        cap /= 2;
    if (cap <= m->cap)
        return TB_OK;
    return grow_to(m, cap) || m->full ? TB_OK : TB_ERR_NOMEM;
}

vmap_slot *vmap_put(vmap *m, uint64_t khash)
{
    if ((m->n + 1) * 4 > m->cap * 3 && !grow_to(m, m->cap ? m->cap * 2 : 1024))
        return NULL;
    vmap_slot *s = probe(m->slots, m->cap, khash);
    if (!s->khash) {
        s->khash = khash;
        s->vdig = 0;
        m->n++;
    }
    return s;
}

vmap_slot *vmap_find(const vmap *m, uint64_t khash)
{
    if (!m->cap)
        return NULL;
    vmap_slot *s = probe(m->slots, m->cap, khash);
    return s->khash ? s : NULL;
}

vverdict vmap_judge(vmap *m, uint64_t khash, uint64_t dig, vmap_slot **slot)
{
    vmap_slot *s = *slot = vmap_find(m, khash);
    if (s && (s->vdig & VMAP_LATE)) { /* changed after the read: judged in the next pass */
        s->vdig |= VMAP_SEEN;
        return VV_LATE;
    }
    if (!s || !(s->vdig & VMAP_LIVE))
        return VV_MISSING;
    s->vdig |= VMAP_SEEN;
    return dig == vmap_dig(s) ? VV_EQUAL : VV_DIFFERENT;
}

/* ------------------------------------------------------------ keys to check again */

tb_code vkeys_add(vkeys *k, uint64_t h)
{
    if (k->n >= VERIFY_RECHECK_MAX) {
        k->overflow = true;
        return TB_OK;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        uint64_t *p = realloc(k->h, cap * sizeof(*p));
        if (!p)
            return TB_ERR_NOMEM;
        k->h = p;
        k->cap = cap;
    }
    k->h[k->n++] = h;
    return TB_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void vkeys_sort(vkeys *k)
{
    if (k->n)
        qsort(k->h, k->n, sizeof(*k->h), cmp_u64);
}

bool vkeys_has(const vkeys *k, uint64_t h)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->h[mid] == h)
            return true;
        if (k->h[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

void vkeys_free(vkeys *k)
{
    if (!k)
        return;
    free(k->h);
    memset(k, 0, sizeof(*k));
}

/* ------------------------------------------------------------ positions */

bool verify_pos_passed(const tb_position *p, const tb_position *c, const tb_position *start)
{
    if (!p || p->kind == TB_POS_NONE)
        return true;
    if (!c || c->kind != p->kind)
        return false;
    switch (p->kind) {
    case TB_POS_MYSQL:
        if (p->gtid_set && *p->gtid_set && c->gtid_set && *c->gtid_set)
            return binlog_gtid_covers(c->gtid_set, p->gtid_set, p->mariadb) == 1;
        if (!p->file || !c->file)
            return false;
        return strcmp(c->file, p->file) > 0 || (strcmp(c->file, p->file) == 0 && c->pos >= p->pos);
    case TB_POS_SQLITE_WAL:
        if (c->salt1 == p->salt1 && c->salt2 == p->salt2)
            return c->frame >= p->frame;
        return !(start && start->kind == c->kind && start->salt1 == c->salt1 && start->salt2 == c->salt2);
    case TB_POS_SQLITE_LOG:
        return c->seq >= p->seq;
    default:
        return false;
    }
}
