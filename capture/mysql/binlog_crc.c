/*
 * binlog_crc.c: the CRC32 of binlog event checksums (ISO-HDLC, zlib's crc32()).
 *
 * zlib 1.2.13's crc32() spends about 1.75 instructions a byte; the checksum of every binlog
 * event is about 150 instructions a row of a catch-up (bench/instr_bench.sh). On a CPU with
 * PCLMULQDQ, bl_crc32 folds 64 bytes at a time with carry-less multiplies instead, and leaves
 * the last 16 folded bytes and the tail to zlib.
 *
 * The folding. Take the message with the initial register value XORed into its first four
 * bytes: its CRC is then that of a zero register. A 128-bit block A followed, D bits later, by
 * block B contributes A(x)·x^D to the message polynomial, and A(x)·x^D ≡ A_lo(x)·(x^(D+32)
 * mod P) + A_hi(x)·(x^(D-32) mod P) at B's place (mod P, in the bit-reflected order of this
 * CRC, where the first bytes hold the highest powers). Each product of a 64-bit half with a
 * 33-bit constant fits the 128 bits, so the fold A' = clmul(A_lo, k_lo) ^ clmul(A_hi, k_hi) ^ B
 * keeps the CRC of the message while shortening it by 16 bytes. At the end the one 128-bit
 * block left has the CRC of the whole, and zlib finishes it. The constants are
 * reflect32(x^n mod P) << 1 (the shift accounts for the reflected product being one bit
 * short), n = 4·128 ± 32 for four blocks of distance and 128 ± 32 for one;
 * tests/binlog/test_binlog_crc.c derives them again from the polynomial.
 */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "binlog_int.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define BL_CRC_K544 0x154442bd4ULL /* reflect32(x^544 mod P) << 1 */
#define BL_CRC_K480 0x1c6e41596ULL /* x^480 */
#define BL_CRC_K160 0x1751997d0ULL /* x^160 */
#define BL_CRC_K96 0x0ccaa009eULL  /* x^96 */

const uint64_t bl_crc32_fold_k[4] = {BL_CRC_K544, BL_CRC_K480, BL_CRC_K160, BL_CRC_K96};

__attribute__((target("pclmul,sse2"))) static inline __m128i fold16(__m128i a, __m128i k, __m128i b)
{
    __m128i lo = _mm_clmulepi64_si128(a, k, 0x00); /* A_lo · k_lo */
    __m128i hi = _mm_clmulepi64_si128(a, k, 0x11); /* A_hi · k_hi */
    return _mm_xor_si128(_mm_xor_si128(lo, hi), b);
}

static inline __m128i load16(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* len >= 64 */
__attribute__((target("pclmul,sse2"))) static uint32_t crc32_fold(uint32_t crc, const uint8_t *p, size_t len)
{
    const __m128i k4 = _mm_set_epi64x((long long)BL_CRC_K480, (long long)BL_CRC_K544);
    const __m128i k1 = _mm_set_epi64x((long long)BL_CRC_K96, (long long)BL_CRC_K160);
    __m128i x0 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128((int)~crc)), x1 = load16(p + 16),
            x2 = load16(p + 32), x3 = load16(p + 48);
    p += 64;
    len -= 64;
    while (len >= 64) {
        x0 = fold16(x0, k4, load16(p));
        x1 = fold16(x1, k4, load16(p + 16));
        x2 = fold16(x2, k4, load16(p + 32));
        x3 = fold16(x3, k4, load16(p + 48));
        p += 64;
        len -= 64;
    }
    __m128i x = fold16(fold16(fold16(x0, k1, x1), k1, x2), k1, x3);
    while (len >= 16) {
        x = fold16(x, k1, load16(p));
        p += 16;
        len -= 16;
    }
    uint8_t last[16];
    _mm_storeu_si128((__m128i *)(void *)last, x);
    /* the 16 bytes from a zero register (zlib's argument is the register inverted), then the tail */
    uLong c = crc32(0xffffffffUL, last, 16);
    return (uint32_t)crc32(c, p, (uInt)len);
}

static int bl_crc_pclmul = -1; /* unknown yet; a benign race: every thread finds the same */

uint32_t bl_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    if (len >= 64) {
        int have = __atomic_load_n(&bl_crc_pclmul, __ATOMIC_RELAXED);
        if (have < 0) {
            __builtin_cpu_init();
            have = __builtin_cpu_supports("pclmul") ? 1 : 0;
            __atomic_store_n(&bl_crc_pclmul, have, __ATOMIC_RELAXED);
        }
        if (have)
            return crc32_fold(crc, p, len);
    }
    return (uint32_t)crc32_z(crc, p, len);
}
#else
const uint64_t bl_crc32_fold_k[4] = {0, 0, 0, 0};

uint32_t bl_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    return (uint32_t)crc32_z(crc, p, len);
}
#endif
