/* DESIGN.md 5: every row of the value table, through the builder and the codec. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_internal.h"
#include "test_util.h"

static void expect(evt_type type, const evt_value *v, const char *want)
{
    char *got = tu_value_json(type, v);
    cr_expect_str_eq(got, want, "type %s: got %s want %s", evt_type_name(type), got, want);
    free(got);
}

Test(values, integers_exact)
{
    evt_value v = {.kind = EVT_V_INT};
    v.v.i = INT64_MIN;
    expect(EVT_T_BIGINT, &v, "-9223372036854775808");
    v.v.i = INT64_MAX;
    expect(EVT_T_BIGINT, &v, "9223372036854775807");
    v.v.i = 0;
    expect(EVT_T_TINYINT, &v, "0");
    v.v.i = -128;
    expect(EVT_T_TINYINT, &v, "-128");
    v.v.i = 8388607;
    expect(EVT_T_MEDIUMINT, &v, "8388607");
    v.v.i = -10;
    expect(EVT_T_INT, &v, "-10");
    v.v.i = 100;
    expect(EVT_T_INT, &v, "100");
    evt_value u = {.kind = EVT_V_UINT};
    u.v.u = UINT64_MAX;
    expect(EVT_T_BIGINT, &u, "18446744073709551615");
    u.v.u = 4294967295u;
    expect(EVT_T_INT, &u, "4294967295");
    /* every power of ten and its neighbours, against printf */
    char want[32];
    for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10) {
        for (int d = -1; d <= 1; d++) {
            u.v.u = p + (uint64_t)d;
            snprintf(want, sizeof want, "%llu", (unsigned long long)u.v.u);
            expect(EVT_T_BIGINT, &u, want);
            v.v.i = -(int64_t)(p + (uint64_t)d);
            snprintf(want, sizeof want, "%lld", (long long)v.v.i);
            expect(EVT_T_BIGINT, &v, want);
        }
    }
    /* random magnitudes: every digit count, both signs */
    uint64_t x = 88172645463325252ull;
    for (int iter = 0; iter < 2000; iter++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        u.v.u = x >> (iter % 64);
        snprintf(want, sizeof want, "%llu", (unsigned long long)u.v.u);
        expect(EVT_T_BIGINT, &u, want);
        v.v.i = (int64_t)u.v.u;
        snprintf(want, sizeof want, "%lld", (long long)v.v.i);
        expect(EVT_T_BIGINT, &v, want);
    }
}

/* The digit writer itself (evt_u64_digits) against printf: every value below
 * 2*10^6, a window around each power of ten and each 8-digit boundary (inner zeros: 100000005),
 * and random values of every length. */
static void expect_digits(uint64_t v)
{
    char want[32], back[32];
    int n = snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    char *start = evt_u64_digits(v, back + sizeof back);
    cr_assert_eq(back + sizeof back - start, n, "%s: %d digits written", want, (int)(back + sizeof back - start));
    cr_assert(memcmp(start, want, (size_t)n) == 0, "%s written as %.*s", want, n, start);
}

Test(values, digits_match_printf)
{
    for (uint64_t v = 0; v < 2000000; v++)
        expect_digits(v);
    for (uint64_t p = 10; p <= UINT64_MAX / 10; p *= 10)
        for (uint64_t d = 0; d <= 2000; d++) {
            expect_digits(p + d);
            expect_digits(p - 1 - d);
        }
    for (uint64_t hi = 1; hi <= 184467; hi = hi * 3 + 1)
        for (uint64_t lo = 0; lo < 100; lo++) {
            expect_digits(hi * 100000000u + lo);
            expect_digits(hi * 100000000u + 99999999u - lo);
            if (hi <= 1844)
                expect_digits(hi * 10000000000000000u + lo * 100000000u + lo);
        }
    for (uint64_t d = 0; d < 2000; d++)
        expect_digits(UINT64_MAX - d);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        expect_digits(x >> (i % 64));
    }
}

Test(values, year_is_a_number)
{
    evt_value v = {.kind = EVT_V_INT, .v.i = 2155};
    expect(EVT_T_YEAR, &v, "2155");
}

Test(values, decimal_as_string_with_exact_scale)
{
    evt_value v = {.kind = EVT_V_DECIMAL};
    v.v.s.ptr = "12.50";
    v.v.s.len = 5;
    expect(EVT_T_DECIMAL, &v, "\"12.50\"");
    /* DECIMAL(65,30): 35 integer digits, 30 decimals */
    char big[80];
    memset(big, '9', 67);
    big[0] = '-';
    big[36] = '.';
    big[67] = '\0';
    char want[90];
    snprintf(want, sizeof want, "\"%s\"", big);
    v.v.s.ptr = big;
    v.v.s.len = strlen(big);
    expect(EVT_T_DECIMAL, &v, want);
}

Test(values, doubles_shortest_round_trip)
{
    struct { double d; const char *want; } cases[] = {
        {0.1, "0.1"}, {1e300, "1e300"}, {5e-324, "5e-324"}, {-0.0, "-0"}, {0.0, "0"}, {1.5, "1.5"},
        {DBL_MAX, "1.7976931348623157e308"}, {DBL_MIN, "2.2250738585072014e-308"}, {1.0 / 3, "0.3333333333333333"},
        {123456789012345678.0, "1.2345678901234568e17"}, {-2.5e-5, "-2.5e-5"}, {42.0, "42"}, {0.30000000000000004, "0.30000000000000004"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        evt_value v = {.kind = EVT_V_DOUBLE, .v.d = cases[i].d};
        expect(EVT_T_DOUBLE, &v, cases[i].want);
    }
    /* pseudo-random doubles read back to the same bits */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d;
        memcpy(&d, &x, sizeof d);
        if (!isfinite(d))
            continue;
        char buf[32];
        size_t n = evt_fmt_double(d, buf);
        cr_assert_eq(n, strlen(buf));
        double back = strtod(buf, NULL);
        cr_assert(memcmp(&back, &d, sizeof d) == 0, "%s does not read back", buf);
    }
}

/* The reference: the shortest of %.15g, %.16g, %.17g that reads back,
 * exponent without '+' and leading zeros. */
static void ref_double(double v, char *out)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 40, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    char *e = strchr(out, 'e');
    if (e) {
        char *src = e + 1, *dst = e + 1;
        if (*src == '+')
            src++;
        else if (*src == '-')
            *dst++ = *src++;
        while (*src == '0' && src[1])
            src++;
        memmove(dst, src, strlen(src) + 1);
    }
}

Test(values, doubles_match_the_printf_reference)
{
    uint64_t x = 0x243F6A8885A308D3ull;
    char want[40], got[32];
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d;
        if (i % 3 == 0) {
            memcpy(&d, &x, sizeof d); /* any bits */
        } else {
            /* values near decimal rounding boundaries: 17-digit decimals ending in ...50, ...5 */
            char txt[40];
            snprintf(txt, sizeof txt, "%llu%se%d", (unsigned long long)(x % 100000000000000000ull),
                     i % 3 == 1 ? "50" : "5", (int)(x >> 58) - 40);
            d = strtod(txt, NULL);
        }
        if (!isfinite(d) || fabs(d) < DBL_MIN || (d == floor(d) && fabs(d) < 9007199254740992.0))
            continue;
        ref_double(d, want);
        evt_fmt_double(d, got);
        cr_assert_str_eq(got, want, "bits %016llx", (unsigned long long)x);
    }
}

/* Full-precision doubles between about 1e-6 and 2^53 get their digits from
 * 128-bit integer arithmetic (evt_fmt.c exact_digits), not printf: random
 * mantissas over that range and around its edges, and binary fractions
 * whose exact decimal expansion ties at the 16th or 17th digit (printf
 * rounds those half to even), must give the printf reference text. */
Test(values, doubles_exact_digits_match_the_printf_reference)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    char want[40], got[32];
    int ties = 0;
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d;
        if (i % 2 == 0) { /* 53 random mantissa bits, binary exponent over [-26, 56) */
            d = ldexp((double)((x >> 11) | (1ull << 52)), (int)(x % 82) - 26 - 52);
        } else { /* n + j/2^b near 2^50..2^53: few fraction bits, exact ties likely */
            int b = 1 + (int)(x % 3);
            uint64_t n = (1ull << (50 + (x >> 3) % 3)) + ((x >> 8) & 0xFFFFFFFFFFFull);
            d = (double)n + (double)((x >> 60) % (1u << b)) / (double)(1u << b);
        }
        if (x & 0x100)
            d = -d;
        if (!isfinite(d) || (d == floor(d) && fabs(d) < 9007199254740992.0))
            continue;
        snprintf(want, sizeof want, "%.20e", fabs(d));
        if (want[18] == '5' && strncmp(want + 19, "000", 3) == 0)
            ties++; /* 18th significant digit 5, then zeros: a tie at 17 digits */
        ref_double(d, want);
        evt_fmt_double(d, got);
        cr_assert_str_eq(got, want, "value %.20e", d);
    }
    cr_assert_gt(ties, 1000, "only %d exact ties tried", ties);
}

/* Short decimals take a printf-free path: it must agree with %.15g. */
Test(values, short_decimals_match_printf)
{
    uint64_t x = 88172645463325252ull;
    static const double p10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int digits = 1 + (int)(x % 15);
        uint64_t m = (x >> 8) % (uint64_t)p10[digits > 12 ? 12 : digits];
        double v = (double)m / p10[(x >> 4) % 13];
        if (x & 1)
            v = -v;
        char want[40], got[32];
        snprintf(want, sizeof want, "%.15g", v);
        if (strtod(want, NULL) != v || strchr(want, 'e'))
            continue;
        evt_fmt_double(v, got);
        cr_assert_str_eq(got, want, "value %.17g", v);
    }
}

Test(values, floats_match_the_printf_reference)
{
    uint32_t x = 0x9E3779B9u;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        float f;
        memcpy(&f, &x, sizeof f);
        if (!isfinite(f) || fabsf(f) < FLT_MIN)
            continue;
        char want[40], got[32];
        for (int prec = 6; prec <= 9; prec++) {
            snprintf(want, sizeof want, "%.*g", prec, (double)f);
            if (strtof(want, NULL) == f)
                break;
        }
        char *e = strchr(want, 'e');
        if (e) {
            char *src = e + 1, *dst = e + 1;
            if (*src == '+')
                src++;
            else if (*src == '-')
                *dst++ = *src++;
            while (*src == '0' && src[1])
                src++;
            memmove(dst, src, strlen(src) + 1);
        }
        evt_fmt_float(f, got);
        cr_assert_str_eq(got, want, "bits %08x", x);
    }
}

Test(values, floats_shortest_as_float)
{
    struct { float f; const char *want; } cases[] = {
        {0.1f, "0.1"}, {3.4028235e38f, "3.4028235e38"}, {1e-45f, "1e-45"}, {16777216.0f, "16777216"}, {-1.25f, "-1.25"},
        {0.3f, "0.3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        evt_value v = {.kind = EVT_V_FLOAT, .v.f = cases[i].f};
        expect(EVT_T_FLOAT, &v, cases[i].want);
    }
    uint32_t x = 2463534242u;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        float f;
        memcpy(&f, &x, sizeof f);
        if (!isfinite(f))
            continue;
        char buf[32];
        evt_fmt_float(f, buf);
        float back = strtof(buf, NULL);
        cr_assert(memcmp(&back, &f, sizeof f) == 0, "%s does not read back", buf);
    }
}

Test(values, non_finite_are_strings)
{
    evt_value v = {.kind = EVT_V_DOUBLE, .v.d = INFINITY};
    expect(EVT_T_SQLITE_REAL, &v, "\"Infinity\"");
    v.v.d = -INFINITY;
    expect(EVT_T_SQLITE_REAL, &v, "\"-Infinity\"");
    v.v.d = NAN;
    expect(EVT_T_DOUBLE, &v, "\"NaN\"");
}

/* A REAL in a column that holds any class (sqlite_numeric: no declared type,
 * NUMERIC, STRICT ANY) says it is a real by itself; in a REAL/DOUBLE column
 * the type says it, and the number text is the shortest. */
Test(values, real_keeps_its_class_in_a_column_of_no_class)
{
    static const struct { double d; const char *numeric, *real; } cases[] = {
        {2.0, "2.0", "2"},         {-3.0, "-3.0", "-3"},       {0.0, "0.0", "0"},
        {-0.0, "-0.0", "-0"},      {2.5, "2.5", "2.5"},        {1e300, "1e300", "1e300"},
        {5e-324, "5e-324", "5e-324"}, {9007199254740992.0, "9007199254740992.0", "9007199254740992"},
        {INFINITY, "{\"$real\":\"Infinity\"}", "\"Infinity\""},
        {-INFINITY, "{\"$real\":\"-Infinity\"}", "\"-Infinity\""},
        {NAN, "{\"$real\":\"NaN\"}", "\"NaN\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        evt_value v = {.kind = EVT_V_DOUBLE, .v.d = cases[i].d};
        expect(EVT_T_SQLITE_NUMERIC, &v, cases[i].numeric);
        expect(EVT_T_SQLITE_REAL, &v, cases[i].real);
        expect(EVT_T_DOUBLE, &v, cases[i].real); /* MySQL DOUBLE: unchanged */
        if (isfinite(cases[i].d)) { /* the text reads back to the same double */
            double back = strtod(cases[i].numeric, NULL);
            cr_expect(memcmp(&back, &cases[i].d, sizeof back) == 0, "%s", cases[i].numeric);
        }
    }
    /* integers and text in the same column are unchanged: a string stays a string */
    evt_value n = {.kind = EVT_V_INT, .v.i = 2};
    expect(EVT_T_SQLITE_NUMERIC, &n, "2");
    evt_value t = {.kind = EVT_V_STRING};
    t.v.s.ptr = "Infinity";
    t.v.s.len = 8;
    expect(EVT_T_SQLITE_NUMERIC, &t, "\"Infinity\"");
}

/* The same rule in a key (the key writer is another path) and in a table not
 * sealed (the generic writer). */
Test(values, real_keeps_its_class_in_keys)
{
    for (int sealed = 0; sealed < 2; sealed++) {
        evt_table *t = evt_table_new("db", "t", 2);
        cr_assert_eq(evt_table_set_column(t, 0, "k", EVT_T_SQLITE_NUMERIC, NULL, true, false), TB_OK);
        cr_assert_eq(evt_table_set_column(t, 1, "v", EVT_T_SQLITE_NUMERIC, NULL, true, false), TB_OK);
        size_t pk[] = {0};
        cr_assert_eq(evt_table_set_pk(t, pk, 1), TB_OK);
        if (sealed)
            evt_table_seal(t);
        evt_event *e = evt_event_new(EVT_OP_CREATE, t);
        evt_table_unref(t);
        evt_set_double(e, EVT_AFTER, 0, -INFINITY);
        evt_set_double(e, EVT_AFTER, 1, 7.0);
        tb_buf b;
        tb_buf_init(&b, 0);
        tb_error err;
        cr_assert_eq(evt_json_key(e, EVT_AFTER, &b, &err), TB_OK, "%s", err.msg);
        cr_expect_str_eq(tb_buf_cstr(&b), "{\"k\":{\"$real\":\"-Infinity\"}}");
        tb_buf_reset(&b);
        cr_assert_eq(evt_json_row(e, EVT_AFTER, &b, &err), TB_OK, "%s", err.msg);
        cr_expect_str_eq(tb_buf_cstr(&b), "{\"k\":{\"$real\":\"-Infinity\"},\"v\":7.0}");
        tb_buf_free(&b);
        evt_event_free(e);
    }
}

Test(values, strings_and_bytes)
{
    evt_value v = {.kind = EVT_V_STRING};
    v.v.s.ptr = "h\xc3\xa9llo \xf0\x9f\x98\x80";
    v.v.s.len = strlen(v.v.s.ptr);
    expect(EVT_T_VARCHAR, &v, "\"h\xc3\xa9llo \xf0\x9f\x98\x80\"");
    evt_value b = {.kind = EVT_V_BYTES};
    b.v.s.ptr = "\x00\x01\xfe\xff";
    b.v.s.len = 4;
    expect(EVT_T_BLOB, &b, "\"AAH+/w==\"");
    b.v.s.len = 0;
    expect(EVT_T_VARBINARY, &b, "\"\"");
    evt_value en = {.kind = EVT_V_STRING};
    en.v.s.ptr = "medium";
    en.v.s.len = 6;
    expect(EVT_T_ENUM, &en, "\"medium\"");
}

static evt_value temporal(evt_kind k, int y, int mo, int d, unsigned h, int mi, int s, unsigned us, int fsp, bool neg)
{
    evt_value v = {.kind = k};
    v.v.t = (evt_temporal){.year = y, .month = (uint8_t)mo, .day = (uint8_t)d, .hour = h, .minute = (uint8_t)mi,
                           .second = (uint8_t)s, .usec = us, .fsp = (uint8_t)fsp, .negative = neg};
    return v;
}

Test(values, temporal_every_fsp)
{
    evt_value v = temporal(EVT_V_DATE, 2024, 1, 31, 0, 0, 0, 0, 0, false);
    expect(EVT_T_DATE, &v, "\"2024-01-31\"");
    v = temporal(EVT_V_DATE, 1, 2, 3, 0, 0, 0, 0, 0, false);
    expect(EVT_T_DATE, &v, "\"0001-02-03\"");
    static const char *const frac[7] = {"", ".1", ".12", ".123", ".1234", ".12345", ".123456"};
    for (int fsp = 0; fsp <= 6; fsp++) {
        char want[64];
        /* usec holds all 6 digits; fsp digits are printed */
        v = temporal(EVT_V_DATETIME, 2024, 12, 31, 23, 59, 58, 123456, fsp, false);
        snprintf(want, sizeof want, "\"2024-12-31T23:59:58%s\"", frac[fsp]);
        expect(EVT_T_DATETIME, &v, want);
        v = temporal(EVT_V_TIMESTAMP, 1970, 1, 1, 0, 0, 1, 123456, fsp, false);
        snprintf(want, sizeof want, "\"1970-01-01T00:00:01%sZ\"", frac[fsp]);
        expect(EVT_T_TIMESTAMP, &v, want);
        v = temporal(EVT_V_TIME, 0, 0, 0, 838, 59, 59, 123456, fsp, true);
        snprintf(want, sizeof want, "\"-838:59:59%s\"", frac[fsp]);
        expect(EVT_T_TIME, &v, want);
    }
    /* trailing zeros of the fraction are kept: fsp digits exactly */
    v = temporal(EVT_V_DATETIME, 2024, 1, 1, 10, 0, 0, 500000, 3, false);
    expect(EVT_T_DATETIME, &v, "\"2024-01-01T10:00:00.500\"");
    v = temporal(EVT_V_TIME, 0, 0, 0, 25, 0, 1, 0, 0, false);
    expect(EVT_T_TIME, &v, "\"25:00:01\"");
    v = temporal(EVT_V_TIME, 0, 0, 0, 0, 0, 0, 1, 6, true);
    expect(EVT_T_TIME, &v, "\"-00:00:00.000001\"");
    v = temporal(EVT_V_TIME, 0, 0, 0, 5, 4, 3, 0, 0, false);
    expect(EVT_T_TIME, &v, "\"05:04:03\"");
}

Test(values, zero_dates_as_the_server_prints_them)
{
    evt_value v = temporal(EVT_V_DATE, 0, 0, 0, 0, 0, 0, 0, 0, false);
    expect(EVT_T_DATE, &v, "\"0000-00-00\"");
    v = temporal(EVT_V_DATETIME, 0, 0, 0, 0, 0, 0, 0, 0, false);
    expect(EVT_T_DATETIME, &v, "\"0000-00-00T00:00:00\"");
    v = temporal(EVT_V_DATETIME, 0, 0, 0, 0, 0, 0, 0, 2, false);
    expect(EVT_T_DATETIME, &v, "\"0000-00-00T00:00:00.00\"");
    v = temporal(EVT_V_TIMESTAMP, 0, 0, 0, 0, 0, 0, 0, 0, false);
    expect(EVT_T_TIMESTAMP, &v, "\"0000-00-00T00:00:00\"");
    v = temporal(EVT_V_DATE, 2024, 2, 0, 0, 0, 0, 0, 0, false); /* invalid date allowed by the server */
    expect(EVT_T_DATE, &v, "\"2024-02-00\"");
}

Test(values, set_bit_json_geometry_vector)
{
    const char *labels[] = {"a", "b,c", "\"q\""};
    size_t lens[] = {1, 3, 3};
    evt_value s = {.kind = EVT_V_SET};
    s.v.set.items = labels;
    s.v.set.lens = lens;
    s.v.set.n = 3;
    expect(EVT_T_SET, &s, "[\"a\",\"b,c\",\"\\\"q\\\"\"]");
    s.v.set.n = 0;
    expect(EVT_T_SET, &s, "[]");

    evt_value b = {.kind = EVT_V_BOOL, .v.b = true};
    expect(EVT_T_BIT, &b, "true");
    b.v.b = false;
    expect(EVT_T_BIT, &b, "false");
    evt_value bits = {.kind = EVT_V_UINT, .v.u = 0xFFFFFFFFFFFFFFFFull};
    expect(EVT_T_BIT, &bits, "18446744073709551615");

    evt_value j = {.kind = EVT_V_JSON};
    j.v.s.ptr = " { \"a\" : [1, 2.50, -0.0e+1, true, null], \"b\":\"\\u00e9\\/\" , \"n\": 12345678901234567890123 } ";
    j.v.s.len = strlen(j.v.s.ptr);
    expect(EVT_T_JSON, &j, "{\"a\":[1,2.50,-0.0e+1,true,null],\"b\":\"\xc3\xa9/\",\"n\":12345678901234567890123}");
    j.v.s.ptr = "\"scalar\"";
    j.v.s.len = 8;
    expect(EVT_T_JSON, &j, "\"scalar\"");

    evt_value g = {.kind = EVT_V_GEOMETRY};
    static const uint8_t wkb[] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 0, 64};
    g.v.geo.srid = 4326;
    g.v.geo.wkb = wkb;
    g.v.geo.len = sizeof wkb;
    expect(EVT_T_GEOMETRY, &g, "{\"srid\":4326,\"wkb\":\"AQEAAAAAAAAAAADwPwAAAAAAAABA\"}");

    float fv[] = {0.1f, -2.0f, 1e-45f};
    evt_value vec = {.kind = EVT_V_VECTOR};
    vec.v.vec.items = fv;
    vec.v.vec.n = 3;
    expect(EVT_T_VECTOR, &vec, "[0.1,-2,1e-45]");
}

Test(values, sqlite_classes_and_null)
{
    evt_value i = {.kind = EVT_V_INT, .v.i = -7};
    expect(EVT_T_SQLITE_INTEGER, &i, "-7");
    evt_value r = {.kind = EVT_V_DOUBLE, .v.d = 2.5};
    expect(EVT_T_SQLITE_REAL, &r, "2.5");
    evt_value t = {.kind = EVT_V_STRING};
    t.v.s.ptr = "x";
    t.v.s.len = 1;
    expect(EVT_T_SQLITE_TEXT, &t, "\"x\"");
    evt_value b = {.kind = EVT_V_BYTES};
    b.v.s.ptr = "foo";
    b.v.s.len = 3;
    expect(EVT_T_SQLITE_BLOB, &b, "\"Zm9v\"");
    expect(EVT_T_SQLITE_NUMERIC, &r, "2.5");
    evt_value n = {.kind = EVT_V_NULL};
    expect(EVT_T_SQLITE_TEXT, &n, "null");
}

Test(values, invalid_json_column_names_the_column)
{
    evt_table *t = evt_table_new("shop", "docs", 2);
    evt_table_set_column(t, 0, "id", EVT_T_INT, NULL, false, false);
    evt_table_set_column(t, 1, "doc", EVT_T_JSON, NULL, true, false);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_table_unref(t);
    evt_set_int(e, EVT_AFTER, 0, 1);
    evt_set_json(e, EVT_AFTER, 1, "{\"a\":}", 6);
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(evt_json_row(e, EVT_AFTER, &b, &err), TB_ERR_INVALID);
    cr_assert(strstr(err.msg, "shop.docs") && strstr(err.msg, "doc") && strstr(err.msg, "offset 5"), "%s", err.msg);
    tb_buf_free(&b);
    evt_event_free(e);
}
