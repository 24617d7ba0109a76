/*
 * verify_spill (app/verify.h, MEMORY): a comparison in hash partitions on
 * disk judges every key as the digest map alone does. The oracle is the map
 * without a bound, fed the same records; 60,000 keys under a bound of 1024
 * slots (768 keys) make every partition split once more (16 x 16 partitions).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

typedef struct judged {
    uint64_t *h[4]; /* per vverdict, then extras [VV_EQUAL slot reused below] */
    size_t n[4];
    uint64_t *extra;
    size_t nextra, late_extra;
} judged;

static void add(uint64_t **a, size_t *n, uint64_t h)
{
    *a = realloc(*a, (*n + 1) * sizeof(**a));
    cr_assert_not_null(*a);
    (*a)[(*n)++] = h;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static tb_code on_row(void *opaque, vmap *m, uint64_t h, uint64_t d1, uint64_t d2, tb_error *err)
{
    (void)err;
    judged *j = opaque;
    vmap_slot *s;
    vverdict v = vmap_judge(m, h, d1, &s);
    if (v == VV_DIFFERENT && d2 && d2 == vmap_dig(s))
        v = VV_EQUAL;
    add(&j->h[v], &j->n[v], h);
    return TB_OK;
}

static tb_code on_end(void *opaque, vmap *m, tb_error *err)
{
    (void)err;
    judged *j = opaque;
    for (size_t i = 0; i < m->cap; i++) {
        const vmap_slot *s = &m->slots[i];
        if (!s->khash || (s->vdig & VMAP_SEEN))
            continue;
        if (s->vdig & VMAP_LATE)
            j->late_extra++;
        else if (s->vdig & VMAP_LIVE)
            add(&j->extra, &j->nextra, s->khash);
    }
    return TB_OK;
}

/* The records of the test: keys 1..N on the other side (some deleted, some
 * tombstoned after a late delete, some late, some changed), source rows for
 * most of them and for keys the other side lacks. */
#define N 60000
static uint64_t key(uint64_t i) { return vmap_hash(&i, sizeof i); }
static uint64_t dig(uint64_t i, uint64_t salt) { uint64_t x[2] = {i, salt}; return vmap_digest(x, sizeof x); }

static void feed_target(tb_code (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
    for (uint64_t i = 1; i <= N; i++)
        cr_assert_eq(fn(ctx, key(i), dig(i, 0) | VMAP_LIVE), TB_OK);
    for (uint64_t i = 1; i <= N; i += 97) /* deleted (a delete event, then a tombstone) */
        cr_assert_eq(fn(ctx, key(i), 0) == TB_OK && fn(ctx, key(i), VMAP_TOMB) == TB_OK ? TB_OK : TB_ERR_IO, TB_OK);
    for (uint64_t i = 5; i <= N; i += 101) /* a late delete, then its tombstone: late stays */
        cr_assert_eq(fn(ctx, key(i), VMAP_LATE) == TB_OK && fn(ctx, key(i), VMAP_TOMB) == TB_OK ? TB_OK : TB_ERR_IO,
                     TB_OK);
    for (uint64_t i = 7; i <= N; i += 89) /* changed after the read */
        cr_assert_eq(fn(ctx, key(i), dig(i, 1) | VMAP_LIVE | VMAP_LATE), TB_OK);
    for (uint64_t i = 3; i <= N; i += 53) /* drift */
        cr_assert_eq(fn(ctx, key(i), dig(i, 2) | VMAP_LIVE), TB_OK);
}

static void feed_source(tb_code (*fn)(void *, uint64_t, uint64_t, uint64_t), void *ctx)
{
    for (uint64_t i = 1; i <= N + 500; i++) {
        if (i % 61 == 0)
            continue; /* the source lacks it: extra */
        /* every 11th row in its second form only (equal through d2) */
        uint64_t d1 = i % 11 == 0 ? dig(i, 9) : dig(i, 0), d2 = i % 11 == 0 ? dig(i, 0) : 0;
        cr_assert_eq(fn(ctx, key(i), d1, d2), TB_OK);
    }
}

typedef struct mem_ctx {
    vmap m;
    judged *j;
} mem_ctx;

static tb_code mem_target(void *opaque, uint64_t h, uint64_t word)
{
    mem_ctx *x = opaque;
    vmap_slot *s = vmap_put(&x->m, h);
    if (!s)
        return TB_ERR_NOMEM;
    vmap_apply(s, word);
    return TB_OK;
}

static tb_code mem_source(void *opaque, uint64_t h, uint64_t d1, uint64_t d2)
{
    mem_ctx *x = opaque;
    tb_error err;
    return on_row(x->j, &x->m, h, d1, d2, &err);
}

static tb_code spill_target(void *opaque, uint64_t h, uint64_t word)
{
    tb_error err;
    return vspill_target(opaque, h, word, &err);
}

static tb_code spill_source(void *opaque, uint64_t h, uint64_t d1, uint64_t d2)
{
    tb_error err;
    return vspill_source(opaque, h, d1, d2, &err);
}

static void sort_all(judged *j)
{
    for (int v = 0; v < 4; v++)
        qsort(j->h[v], j->n[v], sizeof(uint64_t), cmp);
    qsort(j->extra, j->nextra, sizeof(uint64_t), cmp);
}

static void judged_free(judged *j)
{
    for (int v = 0; v < 4; v++)
        free(j->h[v]);
    free(j->extra);
}

Test(verify_spill, same_verdicts_as_the_map)
{
    judged want = {0}, got = {0};
    mem_ctx x = {.j = &want};
    vmap_init(&x.m);
    feed_target(mem_target, &x);
    feed_source(mem_source, &x);
    tb_error err;
    cr_assert_eq(on_end(&want, &x.m, &err), TB_OK);
    vmap_free(&x.m);

    vspill *s = NULL;
    cr_assert_eq(vspill_open(0, &s, &err), TB_OK, "%s", err.msg);
    feed_target(spill_target, s);
    feed_source(spill_source, s);
    cr_expect_gt(vspill_bytes(s), (uint64_t)N * 16);
    vmap m;
    vmap_init(&m);
    m.max_bytes = 16384; /* 1024 slots: 768 keys, against 3750 a level-0 partition */
    cr_assert_eq(vspill_join(s, &m, on_row, on_end, &got, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(m.cap, 0, "the map is empty after the join");
    vspill_close(s);

    sort_all(&want);
    sort_all(&got);
    static const char *const names[] = {"equal", "missing", "different", "late"};
    for (int v = 0; v < 4; v++) {
        cr_expect_gt(want.n[v], 0, "the test has %s rows", names[v]);
        cr_expect_eq(got.n[v], want.n[v], "%s: %zu in partitions, %zu in memory", names[v], got.n[v], want.n[v]);
        if (got.n[v] == want.n[v])
            cr_expect(memcmp(got.h[v], want.h[v], want.n[v] * sizeof(uint64_t)) == 0, "%s: other keys", names[v]);
    }
    cr_expect_gt(want.nextra, 0);
    cr_expect_eq(got.nextra, want.nextra);
    if (got.nextra == want.nextra)
        cr_expect(memcmp(got.extra, want.extra, want.nextra * sizeof(uint64_t)) == 0, "extra: other keys");
    cr_expect_gt(want.late_extra, 0);
    cr_expect_eq(got.late_extra, want.late_extra);
    judged_free(&want);
    judged_free(&got);
}

/* A map bounded by max_bytes: reserve stays within it, put says full (not out of memory). */
Test(verify_spill, bounded_map)
{
    vmap m;
    vmap_init(&m);
    m.max_bytes = 16384;
    cr_assert_eq(vmap_reserve(&m, 1000000), TB_OK);
    cr_expect_eq(m.cap, 1024);
    size_t n = 0;
    for (uint64_t i = 1; vmap_put(&m, key(i)); i++)
        n++;
    cr_expect(m.full);
    cr_expect_eq(n, 768);
    vmap_free(&m);
    cr_expect_eq(m.max_bytes, 16384, "max_bytes stays");
    cr_expect(!m.full);
    /* growth counts the old slots while copying: 1024 slots fit 24 KiB, 1024 + 2048 do not */
    m.max_bytes = 24576;
    n = 0;
    for (uint64_t i = 1; vmap_put(&m, key(i)); i++)
        n++;
    cr_expect_eq(m.cap, 1024);
    cr_expect_eq(n, 768);
    vmap_free(&m);
}
