/*
 * test_sqlcap_cksum: the WAL checksum (sqlite-wal.md 1.2) computed in four
 * chains joined by matrix powers equals the one-chain definition, for every
 * length class and both byte orders. Real WAL frames are checked by the
 * offline_decode and replay tests (a wrong checksum stops an offline decode).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "sqlcap_int.h"

/* The definition (FF 4.2), one step at a time. */
static void ref_cksum(bool bigend, const uint8_t *d, size_t len, uint32_t *s0, uint32_t *s1)
{
    uint32_t a = *s0, b = *s1;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint32_t x[2];
        for (int k = 0; k < 2; k++) {
            const uint8_t *p = d + i + 4 * k;
            x[k] = bigend ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                          : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
        }
        a += x[0] + b;
        b += x[1] + a;
    }
    *s0 = a;
    *s1 = b;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint8_t next_byte(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)(rng >> 24);
}

Test(sqlcap_cksum, four_chains_equal_the_definition)
{
    static uint8_t buf[65536 + 64];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = next_byte();
    size_t lens[] = {0, 8, 24, 40, 504, 512, 520, 1024, 1032, 4096, 4104, 8192, 32768, 65536, 65536 + 56};
    int checked = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (int be = 0; be < 2; be++)
            for (uint32_t seed = 0; seed < 3; seed++) {
                uint32_t a0 = seed * 0x01000193u + 7, b0 = seed * 0x811C9DC5u;
                uint32_t ra = a0, rb = b0, ta = a0, tb = b0;
                ref_cksum(be, buf + seed, lens[l], &ra, &rb);
                sqlcap_cksum(be, buf + seed, lens[l], &ta, &tb);
                cr_assert(ra == ta && rb == tb, "len %zu bigend %d seed %u: %08x %08x, expected %08x %08x", lens[l],
                          be, seed, ta, tb, ra, rb);
                checked++;
            }
    cr_assert_eq(checked, 90);
    /* a one-bit change anywhere changes the checksum (the test can fail) */
    uint32_t a = 0, b = 0, c = 0, d = 0;
    sqlcap_cksum(false, buf, 4096, &a, &b);
    buf[3001] ^= 4;
    sqlcap_cksum(false, buf, 4096, &c, &d);
    cr_assert(a != c || b != d);
}
