/* Unit tests of tb_kset: a set of 64-bit key digests with a state byte each. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "tb_kset.h"

Test(kset, put_find_grow_iterate)
{
    tb_kset s;
    tb_kset_init(&s);
    cr_assert_not(tb_kset_has(&s, 42), "an empty set holds nothing");
    enum { N = 50000 };
    char k[32];
    for (int i = 0; i < N; i++) {
        int n = snprintf(k, sizeof(k), "{\"id\":%d}", i);
        uint8_t *st;
        cr_assert_eq(tb_kset_put(&s, tb_kset_digest(k, (size_t)n), &st), TB_OK);
        cr_assert_eq(*st, 0, "a new member's state is 0");
        *st = (uint8_t)(i % 3 + 1);
    }
    cr_assert_eq(s.n, (size_t)N, "no two of %d similar keys share a digest", N);
    cr_assert_leq(s.n * 4, s.cap * 3, "load stays at most 3/4");
    for (int i = 0; i < N; i++) {
        int n = snprintf(k, sizeof(k), "{\"id\":%d}", i);
        uint8_t *st = tb_kset_find(&s, tb_kset_digest(k, (size_t)n));
        cr_assert_not_null(st, "%s", k);
        cr_assert_eq(*st, (uint8_t)(i % 3 + 1));
    }
    cr_assert_not(tb_kset_has(&s, tb_kset_digest("{\"id\":-1}", 9)));
    size_t it = 0, seen = 0;
    uint64_t d;
    uint8_t st;
    while (tb_kset_next(&s, &it, &d, &st)) {
        cr_assert_neq(d, 0);
        cr_assert(st >= 1 && st <= 3);
        seen++;
    }
    cr_assert_eq(seen, (size_t)N, "iteration visits every member once");
    tb_kset_free(&s);
    tb_kset_free(&s); /* twice: still empty */
    cr_assert_eq(s.n, 0);
}

Test(kset, digest_zero_is_a_member)
{
    tb_kset s;
    tb_kset_init(&s);
    cr_assert_eq(tb_kset_put(&s, 0, NULL), TB_OK);
    cr_assert(tb_kset_has(&s, 0), "digest 0 is stored (as 1)");
    cr_assert(tb_kset_has(&s, 1));
    tb_kset_free(&s);
}
