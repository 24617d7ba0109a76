/*
 * test_binlog_crc: bl_crc32 (binlog_crc.c) against zlib's crc32(), the independent oracle, on
 * every length from 0 to 1100 and at every alignment, chained as the FORMAT_DESCRIPTION check
 * chains it, and on the checksummed events of a real binlog fixture; its folding constants
 * derived again from the CRC's polynomial; and the decoder refusing an event whose bytes no longer
 * match its checksum.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "binlog_int.h"

static uint32_t zlib_crc(uint32_t crc, const uint8_t *p, size_t n)
{
    return (uint32_t)crc32(crc, p, (uInt)n);
}

/* deterministic bytes (xorshift), so that a failure names a reproducible case */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

Test(binlog_crc, every_length_and_alignment_matches_zlib)
{
    enum { MAX = 1100 };
    static uint8_t buf[MAX + 16];
    for (size_t off = 0; off < 16; off++) {
        fill(buf, sizeof buf, off + 1);
        for (size_t n = 0; off + n <= MAX; n++) {
            uint32_t want = zlib_crc(0, buf + off, n), got = bl_crc32(0, buf + off, n);
            cr_assert_eq(got, want, "length %zu at offset %zu: %08x, zlib %08x", n, off, got, want);
        }
    }
}

Test(binlog_crc, chained_and_from_a_nonzero_register)
{
    static uint8_t buf[70000];
    fill(buf, sizeof buf, 7);
    uint32_t seeds[] = {0, 1, 0xffffffffu, 0x12345678u};
    size_t cuts[] = {0, 1, 19, 63, 64, 65, 4096, 69999};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            size_t k = cuts[c];
            uint32_t want = zlib_crc(zlib_crc(seeds[s], buf, k), buf + k, sizeof buf - k);
            uint32_t got = bl_crc32(bl_crc32(seeds[s], buf, k), buf + k, sizeof buf - k);
            cr_assert_eq(got, want, "seed %08x cut %zu: %08x, zlib %08x", seeds[s], k, got, want);
        }
    /* all zeros and all ones: the folds of degenerate blocks */
    memset(buf, 0, sizeof buf);
    cr_assert_eq(bl_crc32(0, buf, sizeof buf), zlib_crc(0, buf, sizeof buf));
    memset(buf, 0xff, sizeof buf);
    cr_assert_eq(bl_crc32(0, buf, sizeof buf), zlib_crc(0, buf, sizeof buf));
}

/* x^n mod P (P = 0x104C11DB7, the CRC's generator), bit i the coefficient of x^i */
static uint64_t xpow_mod(unsigned n)
{
    uint64_t r = 1;
    for (unsigned i = 0; i < n; i++) {
        r <<= 1;
        if (r & 0x100000000ULL)
            r ^= 0x104C11DB7ULL;
    }
    return r;
}

static uint64_t reflect32(uint64_t v)
{
    uint64_t r = 0;
    for (int i = 0; i < 32; i++)
        if (v & (1ULL << i))
            r |= 1ULL << (31 - i);
    return r;
}

Test(binlog_crc, folding_constants_come_from_the_polynomial)
{
#if defined(__x86_64__)
    unsigned n[4] = {544, 480, 160, 96};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(bl_crc32_fold_k[i], reflect32(xpow_mod(n[i])) << 1, "constant for x^%u: %llx", n[i],
                     (unsigned long long)bl_crc32_fold_k[i]);
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("pclmul"))
        cr_log_warn("this CPU has no PCLMULQDQ: bl_crc32 is zlib's here, the folding is not run");
#else
    for (int i = 0; i < 4; i++) /* not built here: bl_crc32 is zlib's, which the other tests check */
        cr_assert_eq(bl_crc32_fold_k[i], 0);
#endif
}

/* Every event of a real binlog fixture with CRC32 checksums: its stored checksum is bl_crc32's. */
Test(binlog_crc, a_real_binlogs_event_checksums)
{
    const char *path = TB_FIXTURES_DIR "/binlog/mysql-5.7.21-app-rows-crc32.000001";
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "fixture %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)size);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    cr_assert(size > 4 && memcmp(b, "\xfe" "bin", 4) == 0, "%s: not a binlog file", path);
    size_t at = 4, events = 0, long_ones = 0;
    while (at + 19 <= (size_t)size) {
        uint32_t len = bl_u32(b + at + 9);
        cr_assert(len >= 19 + 4 && at + len <= (size_t)size, "event at %zu: length %u", at, len);
        if (b[at + 4] != 15) /* the FORMAT_DESCRIPTION is checked with its in-use flag cleared */
            cr_assert_eq(bl_crc32(0, b + at, len - 4), bl_u32(b + at + len - 4), "event at %zu (type %u)", at,
                         b[at + 4]);
        events++;
        long_ones += len - 4 >= 64;
        at += len;
    }
    cr_assert_eq(at, (size_t)size);
    cr_assert_gt(long_ones, 0, "no event of 64 bytes or more: the folding was not walked");
    cr_log_info("%zu events, %zu of 64 bytes or more", events, long_ones);
    free(b);
}

/* Decode the fixture's events with checksums verified, after flipping byte `flip` of the first
 * event of at least 64 bytes that is not the FORMAT_DESCRIPTION (flip < 0: nothing changed). */
static tb_code decode_fixture(long flip, tb_error *err)
{
    static uint8_t b[65536];
    const char *path = TB_FIXTURES_DIR "/binlog/mysql-5.7.21-app-rows-crc32.000001";
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "fixture %s", path);
    size_t size = fread(b, 1, sizeof b, f);
    fclose(f);
    cr_assert(size > 4 && size < sizeof b);
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = path;
    o.file = "mysql-bin.000001";
    o.verify_checksum = true;
    binlog_dec *d = binlog_dec_new(&o);
    cr_assert_not_null(d);
    tb_code rc = TB_OK;
    bool flipped = flip < 0;
    for (size_t at = 4; rc == TB_OK && at + 19 <= size;) {
        uint32_t len = bl_u32(b + at + 9);
        cr_assert(len >= 23 && at + len <= size);
        if (!flipped && b[at + 4] != 15 && len - 4 >= 64) {
            cr_assert_lt((size_t)flip, len - 4);
            b[at + (size_t)flip] ^= 0x10;
            flipped = true;
        }
        rc = binlog_dec_feed(d, b + at, len, at, err);
        evt_event *e;
        while (rc == TB_OK && (rc = binlog_dec_next(d, &e, err)) == TB_OK && e)
            ;
        at += len;
    }
    cr_assert(flipped, "no event of 64 bytes or more to change");
    binlog_dec_free(d);
    return rc;
}

Test(binlog_crc, an_event_changed_after_its_checksum_is_refused)
{
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(decode_fixture(-1, &err), TB_OK, "%s", err.msg);
    /* a byte in the folded part (past the first 16) and one in the last 16 before the checksum */
    long flips[] = {40, 60};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        tb_error_clear(&err);
        tb_code rc = decode_fixture(flips[i], &err);
        cr_assert_eq(rc, TB_ERR_CORRUPT, "byte %ld changed: %d %s", flips[i], (int)rc, err.msg);
        cr_assert(strstr(err.msg, "checksum mismatch"), "byte %ld changed: %s", flips[i], err.msg);
    }
}
