/*
 * evt_jw: the streaming JSON writer and the value formatters (DESIGN.md 5).
 *
 * STRINGS
 *  RFC 8259 escaping: '"' and '\' are escaped, control characters U+0000..
 *  U+001F become \b \f \n \r \t or \u00XX. Everything else that is valid
 *  UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 *  U+10FFFF), 4-byte sequences included, is copied as is.
 *  A byte that does not start a valid UTF-8 sequence is written as the lone
 *  surrogate escape \udcXX, XX being the byte (0x80..0xff; bytes below 0x80
 *  are always valid). This is PEP 383's "surrogateescape": lossless (evt_jv
 *  turns the escape back into the byte) and unambiguous, since valid UTF-8
 *  never encodes a surrogate and this writer never emits a high surrogate
 *  escape. Standard JSON readers see U+DC80..U+DCFF (or U+FFFD) there.
 *
 * NUMBERS
 *  Integers exact (uint64 never wraps); doubles and floats as the shortest
 *  text that reads back (evt_fmt.c).
 *
 * The writer is a byte appender with a comma bit per nesting level; it does
 * not validate that keys and values alternate (the codec is its only user).
 */
#include "evt_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define JW_MAX_DEPTH EVT_JSON_MAX_DEPTH

/* ============================================================ plumbing */

void evt_jw_init(evt_jw *w, tb_buf *out)
{
    w->out = out;
    w->need_comma = 0;
    w->need_comma_hi = 0;
    w->depth = 0;
    w->after_key = false;
    w->err = TB_OK;
}

void evt_jw_fail(evt_jw *w, tb_code code)
{
    if (w->err == TB_OK)
        w->err = code;
}

static void open_c(evt_jw *w, char c)
{
    char *p = jw_pre(w, 1);
    if (!p)
        return;
    if (w->depth >= JW_MAX_DEPTH) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    *p++ = c;
    jw_commit(w, p);
    w->depth++;
    jw_comma_set(w, false);
}

static void close_c(evt_jw *w, char c)
{
    if (w->err)
        return;
    if (w->depth <= 0 || w->after_key) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    char *p = jw_room(w, 1);
    if (!p)
        return;
    *p++ = c;
    jw_commit(w, p);
    w->depth--;
}

void evt_jw_obj_begin(evt_jw *w) { open_c(w, '{'); }
void evt_jw_obj_end(evt_jw *w) { close_c(w, '}'); }
void evt_jw_arr_begin(evt_jw *w) { open_c(w, '['); }
void evt_jw_arr_end(evt_jw *w) { close_c(w, ']'); }

tb_code evt_jw_finish(evt_jw *w)
{
    if (w->err == TB_OK && (w->depth != 0 || w->after_key))
        w->err = TB_ERR_INVALID;
    return w->err;
}

/* ============================================================ strings */

/* 1 = must be escaped (control, '"', '\'), 2 = non-ASCII. */
static const unsigned char str_class[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};

static const char hexd[] = "0123456789abcdef";

size_t evt_utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        return avail >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (avail < 3 || (s[2] & 0xC0) != 0x80)
            return 0;
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi ? 3 : 0;
    }
    if (c < 0xF5) {
        if (avail < 4 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi ? 4 : 0;
    }
    return 0;
}

/* Nonzero when one of the 8 bytes is a control character, '"', '\\' or
 * non-ASCII (may report false positives, never false negatives). */
static inline uint64_t needs_attention(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t ctl = x - 0x20 * ones;
    uint64_t q = x ^ (0x22 * ones), b = x ^ (0x5C * ones);
    q = (q - ones) & ~q;
    b = (b - ones) & ~b;
    return (ctl | q | b | x) & high;
}

#ifdef __SSE2__
/* Bit k set when byte k of the 16 needs a look: control (< 0x20), '"', '\\'
 * or non-ASCII (>= 0x80, negative as a signed byte). Exact, unlike the
 * 8-byte test. */
static inline unsigned plain16(const unsigned char *s)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i hit = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
                               _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
    return (unsigned)_mm_movemask_epi8(hit);
}
#endif

/* Escape s[0, len) into p, copying while scanning: plain runs move 16 (or 8)
 * bytes at a time, stored before they are checked, so p needs
 * EVT_JW_ESC_ROOM(len) bytes of room. Returns the end of what was written. */
char *evt_jw_esc_raw(char *p, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len >= 4 && len < 16) { /* short and plain (names, numbers as text): two overlapping words */
        uint64_t a, b;
        if (len >= 8) {
            memcpy(&a, s, 8);
            memcpy(&b, s + len - 8, 8);
            if (!needs_attention(a) && !needs_attention(b)) {
                memcpy(p, &a, 8);
                memcpy(p + len - 8, &b, 8);
                return p + len;
            }
        } else {
            uint32_t a4, b4;
            memcpy(&a4, s, 4);
            memcpy(&b4, s + len - 4, 4);
            if (!needs_attention((uint64_t)a4 | (uint64_t)b4 << 32)) {
                memcpy(p, &a4, 4);
                memcpy(p + len - 4, &b4, 4);
                return p + len;
            }
        }
    }
    size_t i = 0;
    while (i < len) {
#ifdef __SSE2__
        if (i + 16 <= len) { /* 16 bytes at a time; land on the first one that needs a look */
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            _mm_storeu_si128((__m128i *)(void *)p, x);
            unsigned m = plain16(s + i);
            if (!m) {
                i += 16;
                p += 16;
                continue;
            }
            size_t z = (size_t)__builtin_ctz(m);
            i += z;
            p += z;
        } else if (len >= 16 && !(plain16(s + len - 16) >> (16 - (len - i)))) {
            /* a plain tail of fewer than 16 bytes: one look at the string's last 16 */
            memcpy(p, s + i, len - i);
            return p + (len - i);
        } else
#endif
        if (i + 8 <= len) { /* 8 plain ASCII bytes at a time */
            uint64_t x;
            memcpy(&x, s + i, 8);
            memcpy(p, &x, 8);
            if (!needs_attention(x)) {
                i += 8;
                p += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        unsigned char k = str_class[c];
        if (k == 0) {
            *p++ = (char)c;
            i++;
            continue;
        }
        size_t n = 0;
        if (k == 2 && (n = evt_utf8_seq(s + i, len - i)) != 0) {
            memcpy(p, s + i, n);
            p += n;
            i += n;
            continue;
        }
        *p++ = '\\';
        if (k == 2) {
            memcpy(p, "udc", 3);
            p += 3;
            *p++ = hexd[c >> 4];
            *p++ = hexd[c & 15];
        } else {
            switch (c) {
            case '"': *p++ = '"'; break;
            case '\\': *p++ = '\\'; break;
            case '\b': *p++ = 'b'; break;
            case '\f': *p++ = 'f'; break;
            case '\n': *p++ = 'n'; break;
            case '\r': *p++ = 'r'; break;
            case '\t': *p++ = 't'; break;
            default:
                memcpy(p, "u00", 3);
                p += 3;
                *p++ = hexd[c >> 4];
                *p++ = hexd[c & 15];
            }
        }
        i++;
    }
    return p;
}

/* Input bytes escaped per reservation: a long string goes in pieces, so
 * the buffer never needs 6x its length at once. */
#define JW_ESC_CHUNK 16384

/* Append the quoted, escaped string (no comma logic). */
void evt_jw_put_str(evt_jw *w, const char *str, size_t len)
{
    char *p = jw_room(w, EVT_JW_ESC_ROOM(len < JW_ESC_CHUNK ? len : JW_ESC_CHUNK) + 2);
    if (!p)
        return;
    *p++ = '"';
    while (len > JW_ESC_CHUNK) {
        /* cut before a byte that is not a UTF-8 continuation byte; if the
         * four bytes before that point are all continuation bytes, none of
         * the three before the chunk end can start a sequence, so cut there.
         * No valid sequence spans the cut: the escaping is the same as in
         * one piece. */
        size_t n = JW_ESC_CHUNK;
        while (n > JW_ESC_CHUNK - 3 && ((unsigned char)str[n] & 0xC0) == 0x80)
            n--;
        if (((unsigned char)str[n] & 0xC0) == 0x80)
            n = JW_ESC_CHUNK;
        p = evt_jw_esc_raw(p, str, n);
        jw_commit(w, p);
        str += n;
        len -= n;
        if (!(p = jw_room(w, EVT_JW_ESC_ROOM(len < JW_ESC_CHUNK ? len : JW_ESC_CHUNK) + 1)))
            return;
    }
    p = evt_jw_esc_raw(p, str, len);
    *p++ = '"';
    jw_commit(w, p);
}

void evt_jw_str(evt_jw *w, const char *s, size_t len)
{
    if (!s)
        len = 0;
    if (!jw_pre(w, 0))
        return;
    evt_jw_put_str(w, s ? s : "", len);
}

void evt_jw_key(evt_jw *w, const char *key, size_t len)
{
    if (len == (size_t)-1)
        len = key ? strlen(key) : 0;
    if (!jw_pre(w, 0))
        return;
    evt_jw_put_str(w, key ? key : "", len);
    char *p = w->err ? NULL : jw_room(w, 1);
    if (!p)
        return;
    *p++ = ':';
    jw_commit(w, p);
    w->after_key = true;
}

/* ============================================================ scalars */

static void put_lit(evt_jw *w, const char *s, size_t n) { evt_jw_members_lit(w, s, n); }

void evt_jw_null(evt_jw *w) { put_lit(w, "null", 4); }
void evt_jw_bool(evt_jw *w, bool b) { b ? put_lit(w, "true", 4) : put_lit(w, "false", 5); }

static void put_u64(evt_jw *w, uint64_t v, bool neg)
{
    char tmp[24];
    char *start = evt_u64_digits(v, tmp + sizeof(tmp));
    if (neg)
        *--start = '-';
    size_t n = (size_t)(tmp + sizeof(tmp) - start);
    put_lit(w, start, n);
}

void evt_jw_int(evt_jw *w, int64_t v)
{
    if (v < 0)
        put_u64(w, (uint64_t)0 - (uint64_t)v, true);
    else
        put_u64(w, (uint64_t)v, false);
}

void evt_jw_uint(evt_jw *w, uint64_t v) { put_u64(w, v, false); }

void evt_jw_double(evt_jw *w, double v)
{
    if (!isfinite(v)) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    char tmp[32];
    size_t n = evt_fmt_double(v, tmp);
    put_lit(w, tmp, n);
}

void evt_jw_float(evt_jw *w, float v)
{
    if (!isfinite(v)) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    char tmp[32];
    size_t n = evt_fmt_float(v, tmp);
    put_lit(w, tmp, n);
}

bool evt_json_number_ok(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && s[i] == '-')
        i++;
    if (i >= len)
        return false;
    if (s[i] == '0')
        i++;
    else if (s[i] >= '1' && s[i] <= '9')
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < len && s[i] == '.') {
        i++;
        size_t d = i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == len;
}

void evt_jw_raw_number(evt_jw *w, const char *text, size_t len)
{
    if (!text || !evt_json_number_ok(text, len)) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    put_lit(w, text, len);
}

void evt_jw_raw_json(evt_jw *w, const char *json, size_t len)
{
    if (!json || len == 0) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return;
    }
    put_lit(w, json, len);
}

void evt_jw_base64(evt_jw *w, const void *data, size_t len)
{
    char *p = jw_pre(w, 1);
    if (!p)
        return;
    *p++ = '"';
    jw_commit(w, p);
    if (tb_buf_base64(w->out, data, len) != TB_OK) {
        evt_jw_fail(w, TB_ERR_NOMEM);
        return;
    }
    p = jw_room(w, 1);
    if (!p)
        return;
    *p++ = '"';
    jw_commit(w, p);
}

void evt_jw_json(evt_jw *w, const char *json, size_t len) { (void)evt_jw_json_ex(w, json, len, NULL); }
