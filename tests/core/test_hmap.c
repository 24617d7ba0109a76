/* Unit tests of tb_hmap: the one hash map (keys as bytes, values as pointers). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_hmap.h"

Test(hmap, put_find_and_grow)
{
    tb_hmap m;
    tb_hmap_init(&m);
    cr_assert_null(tb_hmap_find(&m, "x", 1), "an empty map holds nothing");
    enum { N = 20000 };
    char k[32];
    for (int i = 0; i < N; i++) {
        int n = snprintf(k, sizeof(k), "key-%d", i);
        void **v;
        cr_assert_eq(tb_hmap_put(&m, k, (size_t)n, &v), TB_OK);
        cr_assert_null(*v, "a new key holds NULL");
        *v = (void *)(uintptr_t)(i + 1);
    }
    cr_assert_eq(m.n, (size_t)N);
    cr_assert_leq(m.n * 2, m.cap, "load stays at most one half");
    for (int i = 0; i < N; i++) {
        int n = snprintf(k, sizeof(k), "key-%d", i);
        void **v = tb_hmap_find(&m, k, (size_t)n);
        cr_assert_not_null(v, "%s", k);
        cr_assert_eq((uintptr_t)*v, (uintptr_t)(i + 1));
        void **again;
        cr_assert_eq(tb_hmap_put(&m, k, (size_t)n, &again), TB_OK);
        cr_assert_eq(again, v, "put of a held key returns its slot");
    }
    cr_assert_eq(m.n, (size_t)N);
    cr_assert_null(tb_hmap_find(&m, "key-", 4));
    cr_assert_null(tb_hmap_find(&m, "key-1x", 6));
    tb_hmap_free(&m, NULL);
    cr_assert_eq(m.n, 0);
    cr_assert_null(tb_hmap_find(&m, "key-1", 5), "free leaves an empty, usable map");
    tb_hmap_free(&m, NULL);
    tb_hmap_free(NULL, NULL);
}

Test(hmap, keys_are_bytes)
{
    tb_hmap m;
    tb_hmap_init(&m);
    void **v;
    /* "a\0b" and "a\0c" differ after the NUL; "" is a key too; keys are copied */
    char buf[3] = {'a', 0, 'b'};
    cr_assert_eq(tb_hmap_put(&m, buf, 3, &v), TB_OK);
    *v = "ab";
    buf[2] = 'c';
    cr_assert_eq(tb_hmap_put(&m, buf, 3, &v), TB_OK);
    cr_assert_null(*v);
    *v = "ac";
    cr_assert_eq(tb_hmap_put(&m, "", 0, &v), TB_OK);
    *v = "empty";
    cr_assert_eq(tb_hmap_put(&m, "a", 1, &v), TB_OK);
    *v = "a";
    cr_assert_eq(m.n, 4);
    cr_assert_str_eq(*tb_hmap_find(&m, "a\0b", 3), "ab");
    cr_assert_str_eq(*tb_hmap_find(&m, "a\0c", 3), "ac");
    cr_assert_str_eq(*tb_hmap_find(&m, "", 0), "empty");
    cr_assert_str_eq(*tb_hmap_find(&m, "a", 1), "a");
    /* iteration sees every entry once, keys NUL-terminated */
    size_t it = 0, seen = 0, len;
    const char *key;
    void *val;
    while (tb_hmap_next(&m, &it, &key, &len, &val)) {
        cr_assert_eq(key[len], '\0');
        cr_assert_not_null(val);
        seen++;
    }
    cr_assert_eq(seen, 4);
    tb_hmap_free(&m, NULL);
}

Test(hmap, free_calls_the_destructor_for_every_value)
{
    tb_hmap m;
    tb_hmap_init(&m);
    for (int i = 0; i < 100; i++) {
        char k[16];
        int n = snprintf(k, sizeof(k), "%d", i);
        void **v;
        cr_assert_eq(tb_hmap_put(&m, k, (size_t)n, &v), TB_OK);
        *v = malloc(8); /* LeakSanitizer fails the test if one is not freed */
        cr_assert_not_null(*v);
    }
    tb_hmap_free(&m, free);
}

Test(hmap, fnv1a_reference_values)
{
    cr_assert_eq(tb_hash_bytes("", 0), 0xcbf29ce484222325ULL);
    cr_assert_eq(tb_hash_bytes("a", 1), 0xaf63dc4c8601ec8cULL);
    cr_assert_eq(tb_hash_bytes("foobar", 6), 0x85944171f73967e8ULL);
}
