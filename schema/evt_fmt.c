/*
 * evt_fmt: value formatters of the JSON codec (DESIGN.md 5): shortest
 * round-trip text of doubles and floats, decimal digits, temporal text.
 *
 * NUMBERS
 *  Integers exact (hand-rolled conversion, uint64 never wraps). Doubles:
 *  the shortest of %.15g/%.16g/%.17g that strtod reads back to the same
 *  bits, integral values below 2^53 as plain integers; floats the same with
 *  %.6g..%.9g and strtof. The exponent is written without '+' and leading
 *  zeros ("1e300", "5e-324"). Non-finite values are an error in the writer.
 *
 * SPEED
 *  The text is what the plain loop "first of %.15g, %.16g, %.17g that
 *  strtod reads back" (floats: %.6g..%.9g, strtof) gives, exponent tidied,
 *  but found mostly without printf: short decimals and floats by exact
 *  Clinger-style checks, full-precision doubles from their exact 17-digit
 *  decimal (128-bit integer arithmetic, exact_digits; one printf outside
 *  about 1e-6..2^53); printf is asked whenever a decision would be unsure
 *  (near ties). Tests and the fuzz target compare with that loop.
 */
#include "evt_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

/* Decimal digits of v written backwards ending at end; returns the start.
 * Eight digits per 64-bit division, the rest in 32-bit arithmetic. */
char *evt_u64_digits(uint64_t v, char *end)
{
    char *p = end;
    while (v >= 100000000u) {
        uint64_t q = v / 100000000u;
        uint32_t r = (uint32_t)(v - q * 100000000u);
        v = q;
        uint32_t hi = r / 10000, lo = r % 10000;
        p -= 8;
        memcpy(p, digit_pairs + 2 * (hi / 100), 2);
        memcpy(p + 2, digit_pairs + 2 * (hi % 100), 2);
        memcpy(p + 4, digit_pairs + 2 * (lo / 100), 2);
        memcpy(p + 6, digit_pairs + 2 * (lo % 100), 2);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        uint32_t r = w % 100;
        w /= 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * r, 2);
    }
    if (w >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * w, 2);
    } else
        *--p = (char)('0' + w);
    return p;
}

/* Drop '+' and leading zeros from the exponent: "1e+300" -> "1e300". */
static size_t tidy_exponent(char *s, size_t n)
{
    char *e = memchr(s, 'e', n);
    if (!e)
        return n;
    char *src = e + 1, *dst = e + 1;
    if (*src == '+')
        src++;
    else if (*src == '-')
        *dst++ = *src++;
    while (*src == '0' && src[1])
        src++;
    while (*src)
        *dst++ = *src++;
    *dst = '\0';
    return (size_t)(dst - s);
}

/* Text of a number with significant digits dig[0..n) (no trailing zeros)
 * and decimal exponent x (value = d.ddd x 10^x), laid out as %.<prec>g
 * lays it out, exponent tidied. Returns the length. */
static size_t layout_g(bool neg, const char *dig, int n, int x, int prec, char *out)
{
    char *p = out;
    if (neg)
        *p++ = '-';
    if (x < -4 || x >= prec) {
        *p++ = dig[0];
        if (n > 1) {
            *p++ = '.';
            memcpy(p, dig + 1, (size_t)n - 1);
            p += n - 1;
        }
        *p++ = 'e';
        unsigned ax = (unsigned)(x < 0 ? -x : x);
        if (x < 0)
            *p++ = '-';
        char tmp[8];
        char *d = evt_u64_digits(ax, tmp + sizeof(tmp));
        memcpy(p, d, (size_t)(tmp + sizeof(tmp) - d));
        p += tmp + sizeof(tmp) - d;
    } else if (x >= 0) {
        for (int i = 0; i <= x; i++)
            *p++ = i < n ? dig[i] : '0';
        if (n > x + 1) {
            *p++ = '.';
            memcpy(p, dig + x + 1, (size_t)(n - x - 1));
            p += n - x - 1;
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -x - 1; i++)
            *p++ = '0';
        memcpy(p, dig, (size_t)n);
        p += n;
    }
    *p = '\0';
    return (size_t)(p - out);
}

/* Does the text (digits dig[0..n), exponent x: d.ddd x 10^x) read back as
 * v? For doubles with a mantissa below 2^53 and a power of ten up to 10^22
 * the double division/multiplication is correctly rounded, i.e. it is what
 * strtod returns (Clinger's fast path); otherwise strtod/strtof decides. */
static bool reads_back(const char *dig, int n, int x, const char *text, double v, bool is_float)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (is_float)
        return (double)strtof(text, NULL) == v;
    uint64_t m = 0;
    for (int i = 0; i < n; i++)
        m = m * 10 + (uint64_t)(dig[i] - '0');
    int k = n - 1 - x; /* value = m / 10^k */
    if (m < ((uint64_t)1 << 53) && k >= -22 && k <= 22) {
        double d = k >= 0 ? (double)m / p10[k] : (double)m * p10[-k];
        return d == fabs(v);
    }
    return strtod(text, NULL) == v;
}

/* The correctly rounded prec-digit decimal of av (positive, normal), as
 * "%.<prec-1>e" gives it, without printf: av = m * 2^-s exactly (m < 2^53),
 * so av * 10^k = m * 10^k / 2^s, with m * 10^k < 2^53 * 10^22 < 2^127 in
 * 128-bit integers: quotient and remainder are exact, and rounding is
 * glibc's round-half-even on an exact tie. Digits into dig[0..prec),
 * decimal exponent into *x. Returns false (the caller asks printf) outside
 * 0 <= k <= 22, 0 < s <= 127, i.e. roughly outside 1e-6 <= av < 2^53. */
static bool exact_digits(double av, int prec, char *dig, int *x)
{
    static const uint64_t p10u[] = {1ull,
                                    10ull,
                                    100ull,
                                    1000ull,
                                    10000ull,
                                    100000ull,
                                    1000000ull,
                                    10000000ull,
                                    100000000ull,
                                    1000000000ull,
                                    10000000000ull,
                                    100000000000ull,
                                    1000000000000ull,
                                    10000000000000ull,
                                    100000000000000ull,
                                    1000000000000000ull,
                                    10000000000000000ull,
                                    100000000000000000ull,
                                    1000000000000000000ull,
                                    10000000000000000000ull};
    typedef unsigned __int128 u128;
    int ex;
    double f = frexp(av, &ex); /* av = f * 2^ex, 0.5 <= f < 1 */
    uint64_t m = (uint64_t)ldexp(f, 53);
    int s = 53 - ex;
    if (s <= 0 || s > 127 || prec > 17)
        return false;
    int xe = (int)floor(log10(av));
    for (int tries = 0; tries < 3; tries++) {
        int k = prec - 1 - xe;
        if (k < 0 || k > 22)
            return false;
        u128 p10k = k <= 19 ? (u128)p10u[k] : (u128)p10u[19] * p10u[k - 19];
        u128 n = (u128)m * p10k;
        u128 q = n >> s, r = n - (q << s), half = (u128)1 << (s - 1);
        uint64_t lo = p10u[prec - 1], hi = p10u[prec];
        if (q < lo) {
            xe--;
            continue;
        }
        if (q >= hi) {
            xe++;
            continue;
        }
        uint64_t d = (uint64_t)q;
        if (r > half || (r == half && (d & 1)))
            d++;
        if (d == hi) {
            d = lo;
            xe++;
        }
        char tmp[24];
        char *end = tmp + sizeof(tmp);
        memcpy(dig, evt_u64_digits(d, end), (size_t)prec);
        *x = xe;
        return true;
    }
    return false;
}

/* printf's "%.<prec-1>e" digits of v (sign dropped) and exponent. */
static void printf_digits(double v, int prec, char *dig, int *x)
{
    char ep[40];
    snprintf(ep, sizeof(ep), "%.*e", prec - 1, v);
    const char *q = ep + (ep[0] == '-' ? 1 : 0);
    dig[0] = q[0];
    memcpy(dig + 1, q + 2, (size_t)prec - 1);
    *x = atoi(q + prec + 2);
}

/* Shortest round-trip text of a normal double (lo..hi = 15..17 digits) or
 * float (6..9, v holding the float exactly): "%.<hi-1>e" (exact_digits, or
 * printf out of its range) gives the correctly rounded hi significant digits; each shorter candidate
 * is that digit string rounded, which equals rounding v itself unless the
 * dropped digits are exactly half (then printf is asked). Same text as the
 * loop over %.<lo>g..%.<hi>g (for normal values the first precision that
 * reads back is the shortest: a shorter text that reads back would print
 * the same, zero-padded, at lo digits). */
static size_t fmt_shortest(double v, bool is_float, char out[32])
{
    const int lo = is_float ? 6 : 15, hi = is_float ? 9 : 17;
    bool neg = v < 0;
    char dhi[17];
    int xhi;
    if (!exact_digits(fabs(v), hi, dhi, &xhi))
        printf_digits(v, hi, dhi, &xhi);
    for (int prec = lo; prec <= hi; prec++) {
        char dig[17];
        int x = xhi;
        if (prec == hi)
            memcpy(dig, dhi, (size_t)hi);
        else {
            long tail = 0, half = 5;
            for (int i = prec; i < hi; i++)
                tail = tail * 10 + (dhi[i] - '0');
            for (int i = prec + 1; i < hi; i++)
                half *= 10;
            if (tail == half) { /* v's own digits decide */
                if (!exact_digits(fabs(v), prec, dig, &x))
                    printf_digits(v, prec, dig, &x);
            } else {
                memcpy(dig, dhi, (size_t)prec);
                if (tail > half) {
                    int i = prec - 1;
                    while (i >= 0 && dig[i] == '9')
                        dig[i--] = '0';
                    if (i >= 0)
                        dig[i]++;
                    else { /* 999.. -> 1000.. */
                        dig[0] = '1';
                        x++;
                    }
                }
            }
        }
        int n = prec;
        while (n > 1 && dig[n - 1] == '0')
            n--;
        size_t len = layout_g(neg, dig, n, x, prec, out);
        if (prec == hi || reads_back(dig, n, x, out, v, is_float))
            return len;
    }
    return 0; /* not reached */
}

size_t evt_fmt_double(double v, char out[32])
{
    if (!isfinite(v)) {
        const char *t = isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
        size_t n = strlen(t);
        memcpy(out, t, n + 1);
        return n;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0 && !(v == 0 && signbit(v))) {
        int64_t i = (int64_t)v;
        char tmp[24];
        char *start = evt_u64_digits(i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i, tmp + sizeof(tmp));
        if (i < 0)
            *--start = '-';
        size_t n = (size_t)(tmp + sizeof(tmp) - start);
        memcpy(out, start, n);
        out[n] = '\0';
        return n;
    }
    /* Short decimals (prices, measures): Clinger's fast path. With m an
     * integer below 2^53 and 10^k exact, m / 10^k is correctly rounded, so
     * the text "m/10^k" reads back to v exactly; with at most 15 significant
     * digits it is the very text %.15g gives (see below), found without
     * printf. Range limited to where %g uses fixed notation. */
    double av = fabs(v);
    if (av >= 1e-4 && av < 1e15) {
        static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        for (int k = 1; k <= 15; k++) {
            double m = nearbyint(av * p10[k]);
            if (m >= 1e15)
                break;
            if (m / p10[k] != av)
                continue;
            uint64_t mi = (uint64_t)m;
            char tmp[24];
            char *end = tmp + sizeof(tmp), *d = evt_u64_digits(mi, end);
            size_t nd = (size_t)(end - d);
            char *p = out;
            if (v < 0)
                *p++ = '-';
            if (nd <= (size_t)k) { /* 0.000ddd */
                *p++ = '0';
                *p++ = '.';
                for (size_t z = nd; z < (size_t)k; z++)
                    *p++ = '0';
                memcpy(p, d, nd);
                p += nd;
            } else {
                memcpy(p, d, nd - (size_t)k);
                p += nd - (size_t)k;
                *p++ = '.';
                memcpy(p, d + nd - (size_t)k, (size_t)k);
                p += k;
            }
            *p = '\0';
            return (size_t)(p - out);
        }
    }
    /* For normal values %.15g is the shortest whenever it reads back (a
     * shorter text that reads back would print the same at 15 digits).
     * Subnormals have less precision: search from 1 digit. */
    if (fabs(v) < DBL_MIN) {
        int n = 0;
        for (int prec = 1; prec <= 17; prec++) {
            n = snprintf(out, 32, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
        return tidy_exponent(out, (size_t)n);
    }
    return fmt_shortest(v, false, out);
}

/* Floats without printf. v (normal, nonzero) is exactly a double; for each
 * precision p = 6..9: sc = |v| * 10^k (k = p-1-x, 10^|k| exact, so sc is
 * correctly rounded: absolute error <= 1.2e-7 since sc < 1e9) rounded to
 * the integer M gives the correctly rounded p-digit decimal of v unless sc
 * is within 1e-6 of a tie. Whether M * 10^-k reads back as v is decided as
 * strtof would: the double quotient/product is correctly rounded (Clinger:
 * M < 2^53, 10^|k| exact), and rounding it to float equals rounding the
 * exact decimal unless the double sits exactly on a float midpoint.
 * Returns 0 (caller falls back to printf) whenever unsure or out of range. */
static size_t fmt_float_fast(float f, char out[32])
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    double v = fabs((double)f);
    int x = (int)floor(log10(v));
    for (int p = 6; p <= 9; p++) {
        double sc = 0;
        int k = 0;
        for (int tries = 0; tries < 3; tries++) {
            k = p - 1 - x;
            if (k > 22 || k < -22)
                return 0;
            sc = k >= 0 ? v * p10[k] : v / p10[-k];
            if (sc < p10[p - 1])
                x--;
            else if (sc >= p10[p])
                x++;
            else
                break;
        }
        if (sc < p10[p - 1] || sc >= p10[p])
            return 0;
        double fl = floor(sc);
        if (fabs(sc - fl - 0.5) < 1e-6)
            return 0; /* too close to a tie to trust */
        double r = sc - fl > 0.5 ? fl + 1 : fl;
        int xe = x; /* exponent of the candidate */
        if (r >= p10[p]) { /* 999999.7 -> 1000000 */
            r = p10[p - 1];
            xe = x + 1;
            k--;
            if (k < -22)
                return 0;
        }
        double dd = k >= 0 ? r / p10[k] : r * p10[-k];
        float ff = (float)dd;
        if ((double)ff != dd) {
            float other = nextafterf(ff, dd > (double)ff ? INFINITY : 0.0f);
            if (((double)ff + (double)other) / 2 == dd)
                return 0; /* double rounding could differ from strtof */
        }
        if (ff != fabsf(f))
            continue;
        char tmp[24];
        char *end = tmp + sizeof(tmp), *d = evt_u64_digits((uint64_t)r, end);
        int n = (int)(end - d);
        while (n > 1 && d[n - 1] == '0')
            n--;
        return layout_g(f < 0, d, n, xe, p, out);
    }
    return 0;
}

size_t evt_fmt_float(float v, char out[32])
{
    if (!isfinite(v))
        return evt_fmt_double((double)v, out);
    if (v != 0 && fabsf(v) >= FLT_MIN) {
        size_t n = fmt_float_fast(v, out);
        return n ? n : fmt_shortest((double)v, true, out);
    }
    int n = 0; /* zero and subnormals: search from 1 digit */
    for (int prec = 1; prec <= 9; prec++) {
        n = snprintf(out, 32, "%.*g", prec, (double)v);
        if (strtof(out, NULL) == v)
            break;
    }
    return tidy_exponent(out, (size_t)n);
}

/* ============================================================ temporal */

static char *put2(char *p, unsigned v)
{
    memcpy(p, digit_pairs + 2 * (v % 100), 2);
    return p + 2;
}

static char *put_frac(char *p, uint32_t usec, unsigned fsp)
{
    if (fsp == 0)
        return p;
    char d[6]; /* all six digits, two at a time (usec <= 999999) */
    put2(d, usec / 10000);
    put2(d + 2, usec / 100 % 100);
    put2(d + 4, usec % 100);
    *p++ = '.';
    memcpy(p, d, fsp);
    return p + fsp;
}

size_t evt_fmt_temporal(evt_kind kind, const evt_temporal *t, char out[48])
{
    char *p = out;
    unsigned fsp = t->fsp > 6 ? 6 : t->fsp;
    uint32_t usec = t->usec > 999999 ? 999999 : t->usec;
    if (kind == EVT_V_TIME) {
        if (t->negative)
            *p++ = '-';
        uint32_t h = t->hour;
        if (h < 100)
            p = put2(p, h);
        else {
            char tmp[24];
            char *s = evt_u64_digits(h, tmp + sizeof(tmp));
            size_t n = (size_t)(tmp + sizeof(tmp) - s);
            memcpy(p, s, n);
            p += n;
        }
        *p++ = ':';
        p = put2(p, t->minute);
        *p++ = ':';
        p = put2(p, t->second);
        p = put_frac(p, usec, fsp);
        *p = '\0';
        return (size_t)(p - out);
    }
    int32_t y = t->year < 0 ? 0 : t->year > 9999 ? 9999 : t->year;
    p = put2(p, (unsigned)y / 100);
    p = put2(p, (unsigned)y % 100);
    *p++ = '-';
    p = put2(p, t->month);
    *p++ = '-';
    p = put2(p, t->day);
    if (kind != EVT_V_DATE) {
        *p++ = 'T';
        p = put2(p, t->hour);
        *p++ = ':';
        p = put2(p, t->minute);
        *p++ = ':';
        p = put2(p, t->second);
        p = put_frac(p, usec, fsp);
        /* A zero TIMESTAMP is not an instant: printed as the server does, without Z. */
        bool zero = t->year == 0 && t->month == 0 && t->day == 0;
        if (kind == EVT_V_TIMESTAMP && !zero)
            *p++ = 'Z';
    }
    *p = '\0';
    return (size_t)(p - out);
}
