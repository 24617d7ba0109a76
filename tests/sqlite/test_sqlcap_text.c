/*
 * test_sqlcap_text: sqlcap_pos_text (the position text of every .pend record,
 * written without printf) gives exactly tb_position_format's bytes, which
 * tb_position_parse reads back: zeros, maxima, mixed digit counts; other
 * kinds are passed to tb_position_format.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "sqlcap_int.h"

static void check(const tb_position *p)
{
    tb_buf a, b;
    tb_buf_init(&a, 0);
    tb_buf_init(&b, 0);
    cr_assert_eq(sqlcap_pos_text(p, &a), TB_OK);
    cr_assert_eq(tb_position_format(p, &b), TB_OK);
    cr_assert_eq(a.len, b.len, "length %zu vs %zu: %s", a.len, b.len, tb_buf_cstr(&b));
    cr_assert(memcmp(a.data, b.data, a.len) == 0, "%s vs %s", tb_buf_cstr(&a), tb_buf_cstr(&b));
    tb_position q;
    tb_position_init(&q);
    cr_assert_eq(tb_position_parse(tb_buf_cstr(&a), &q, NULL), TB_OK);
    cr_assert(tb_position_equal(p, &q));
    tb_position_free(&q);
    tb_buf_free(&a);
    tb_buf_free(&b);
}

Test(sqlcap_text, wal_position_same_as_tb_position_format)
{
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_WAL;
    check(&p); /* all zero */
    p.salt1 = p.salt2 = p.frame = p.cksum1 = p.cksum2 = p.db_pages = UINT32_MAX;
    p.gen_seq = p.inode = UINT64_MAX;
    check(&p);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int digits = (int)(x % 20); /* mixed magnitudes */
        uint64_t m = 1;
        for (int d = 0; d < digits; d++)
            m *= 10;
        p.salt1 = (uint32_t)x;
        p.salt2 = (uint32_t)(x >> 32);
        p.frame = (uint32_t)(x % 1000);
        p.cksum1 = (uint32_t)(x >> 7);
        p.cksum2 = (uint32_t)(x % 10);
        p.db_pages = (uint32_t)(x >> 40);
        p.gen_seq = x % m;
        p.inode = x;
        check(&p);
    }
    tb_position_free(&p);
}

Test(sqlcap_text, other_kinds_passed_through)
{
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_LOG;
    p.seq = 42;
    check(&p);
    tb_position_free(&p);
}
