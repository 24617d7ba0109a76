/*
 * cache_json: zero-allocation JSON scanner (see cache_json.h).
 * RFC 8259 grammar; nesting limited to CJ_MAX_DEPTH.
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cache_json.h"
#include "evt_json.h"

#define CJ_MAX_DEPTH EVT_JSON_MAX_DEPTH /* the writer's limit (schema/evt_json.h) */

typedef struct cj_scan {
    const char *start, *p, *end;
    const char *bad; /* first offending byte */
    const char *why;
} cj_scan;

static void ws_skip(cj_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Skip whitespace; compact JSON has none, so the usual case is one comparison. */
static inline void ws(cj_scan *s)
{
    if (s->p < s->end && (unsigned char)*s->p <= ' ')
        ws_skip(s);
}

static bool fail(cj_scan *s, const char *why)
{
    if (!s->bad) {
        s->bad = s->p;
        s->why = why;
    }
    return false;
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#ifdef __SSE2__
/* Bit k set when byte k of p[0..16) ends a plain run: '"', '\\', and with
 * ctl also a control character (<= 0x1f, unsigned). */
static inline unsigned stop16(const char *p, bool ctl)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
    if (ctl)
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)));
    return (unsigned)_mm_movemask_epi8(hit);
}
#endif

static bool scan_string(cj_scan *s, cj_val *v)
{
    /* s->p at the opening quote */
    s->p++;
    const char *begin = s->p;
    bool esc = false;
    while (s->p < s->end) {
#ifdef __SSE2__
        while (s->end - s->p >= 16) { /* 16 bytes at a time, stopping on the byte that ends the run */
            unsigned m = stop16(s->p, true);
            if (m) {
                s->p += __builtin_ctz(m);
                goto stop; /* s->p is at that byte: no need for the slower scans below */
            }
            s->p += 16;
        }
#endif
        while (s->end - s->p >= 8) { /* fast path: 8 plain bytes at a time (no '"', '\\', control) */
            uint64_t x;
            memcpy(&x, s->p, 8);
            const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
            uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
            uint64_t hit = ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((x - ones * 0x20) & ~x);
            if (hit & highs)
                break;
            s->p += 8;
        }
        while (s->p < s->end) {
            unsigned char c = (unsigned char)*s->p;
            if (c == '"' || c == '\\' || c < 0x20)
                break;
            s->p++;
        }
        if (s->p >= s->end)
            break;
#ifdef __SSE2__
    stop:;
#endif
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            v->type = CJ_STRING;
            v->ptr = begin;
            v->len = (size_t)(s->p - begin);
            v->escaped = esc;
            s->p++;
            return true;
        }
        if (c < 0x20)
            return fail(s, "control character in string");
        if (c == '\\') {
            esc = true;
            s->p++;
            if (s->p >= s->end)
                break;
            char e = *s->p;
            if (e == 'u') {
                if (s->end - s->p < 5)
                    return fail(s, "truncated \\u escape");
                for (int i = 1; i <= 4; i++)
                    if (hexv(s->p[i]) < 0)
                        return fail(s, "bad \\u escape");
                s->p += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0)
                return fail(s, "bad escape");
        }
        s->p++;
    }
    return fail(s, "unterminated string");
}

static bool scan_number(cj_scan *s, cj_val *v)
{
    const char *b = s->p;
    bool is_int = true;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end)
        return fail(s, "bad number");
    if (*s->p == '0')
        s->p++;
    else if (*s->p >= '1' && *s->p <= '9')
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    else
        return fail(s, "bad number");
    if (s->p < s->end && *s->p == '.') {
        is_int = false;
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return fail(s, "bad fraction");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        is_int = false;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return fail(s, "bad exponent");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    v->type = CJ_NUMBER;
    v->ptr = b;
    v->len = (size_t)(s->p - b);
    v->escaped = false;
    v->is_int = is_int;
    return true;
}

static bool scan_lit(cj_scan *s, const char *lit, cj_type t, cj_val *v)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return fail(s, "unexpected character");
    v->type = t;
    v->ptr = s->p;
    v->len = n;
    s->p += n;
    return true;
}

static bool scan_value(cj_scan *s, cj_val *v, int depth);

/* One value at s->p into v. mem != NULL: the members of an object are also
 * stored into mem[0..cap), *nmem counting them all (cj_parse_top_members).
 * Always inlined into its two callers, so the usual one (scan_value) has no
 * trace of mem. */
static inline __attribute__((always_inline)) bool scan_value_in(cj_scan *s, cj_val *v, int depth, cj_member *mem,
                                                                 size_t cap, size_t *nmem)
{
    ws(s);
    if (s->p >= s->end)
        return fail(s, "unexpected end of input");
    memset(v, 0, sizeof(*v));
    switch (*s->p) {
    case '"':
        return scan_string(s, v);
    case 'n':
        return scan_lit(s, "null", CJ_NULL, v);
    case 't':
        return scan_lit(s, "true", CJ_TRUE, v);
    case 'f':
        return scan_lit(s, "false", CJ_FALSE, v);
    case '{':
    case '[': {
        if (depth >= CJ_MAX_DEPTH)
            return fail(s, "nesting too deep");
        bool obj = *s->p == '{';
        char close = obj ? '}' : ']';
        const char *b = s->p;
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
        } else {
            for (;;) {
                cj_val m;
                const char *key = NULL;
                size_t klen = 0;
                if (obj) {
                    ws(s);
                    if (s->p >= s->end || *s->p != '"')
                        return fail(s, "expected a member name");
                    if (!scan_string(s, &m))
                        return false;
                    key = m.ptr;
                    klen = m.len;
                    ws(s);
                    if (s->p >= s->end || *s->p != ':')
                        return fail(s, "expected ':'");
                    s->p++;
                }
                if (!scan_value(s, &m, depth + 1))
                    return false;
                if (mem) {
                    if (*nmem < cap)
                        mem[*nmem] = (cj_member){key, klen, m};
                    (*nmem)++;
                }
                ws(s);
                if (s->p < s->end && *s->p == ',') {
                    s->p++;
                    continue;
                }
                if (s->p < s->end && *s->p == close) {
                    s->p++;
                    break;
                }
                return fail(s, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            }
        }
        v->type = obj ? CJ_OBJECT : CJ_ARRAY;
        v->ptr = b;
        v->len = (size_t)(s->p - b);
        return true;
    }
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
            return scan_number(s, v);
        return fail(s, "unexpected character");
    }
}

static bool scan_value(cj_scan *s, cj_val *v, int depth)
{
    return scan_value_in(s, v, depth, NULL, 0, NULL);
}

/* scan_value, taking the members of an object into mem (cj_parse_top_members). */
static bool scan_value_members(cj_scan *s, cj_val *v, cj_member *mem, size_t cap, size_t *nmem)
{
    return scan_value_in(s, v, 1, mem, cap, nmem);
}

tb_code cj_parse(const char *text, size_t len, cj_val *out, tb_error *err)
{
    if (!text)
        return tb_error_set(err, TB_ERR_INVALID, false, "JSON: no text");
    cj_scan s = {text, text, text + len, NULL, NULL};
    if (scan_value(&s, out, 0)) {
        ws(&s);
        if (s.p == s.end)
            return TB_OK;
        fail(&s, "trailing characters");
    }
    return tb_error_set(err, TB_ERR_INVALID, false, "invalid JSON at byte %zu: %s",
                        (size_t)(s.bad - s.start), s.why);
}

tb_code cj_parse_top_members(const char *text, size_t len, cj_val *out, const char *const *names, size_t n,
                             cj_val *vals, bool *found, size_t *count, size_t collect, cj_member *mem, size_t cap,
                             size_t *nmem, tb_error *err)
{
    for (size_t i = 0; i < n; i++)
        found[i] = false;
    *count = 0;
    *nmem = 0;
    if (!text)
        return tb_error_set(err, TB_ERR_INVALID, false, "JSON: no text");
    cj_scan s = {text, text, text + len, NULL, NULL};
    ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return cj_parse(text, len, out, err);
    const char *b = s.p++;
    ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
    } else {
        for (;;) {
            cj_val k, m;
            ws(&s);
            if (s.p >= s.end || *s.p != '"') {
                fail(&s, "expected a member name");
                goto bad;
            }
            if (!scan_string(&s, &k))
                goto bad;
            ws(&s);
            if (s.p >= s.end || *s.p != ':') {
                fail(&s, "expected ':'");
                goto bad;
            }
            s.p++;
            /* the member to collect: its members while it is scanned (when an object) */
            bool is_collect = mem && collect < n && !k.escaped && k.len == strlen(names[collect]) &&
                              memcmp(names[collect], k.ptr, k.len) == 0;
            ws(&s);
            bool take = is_collect && s.p < s.end && *s.p == '{';
            size_t got = 0;
            if (!(take ? scan_value_members(&s, &m, mem, cap, &got) : scan_value(&s, &m, 1)))
                goto bad;
            if (is_collect)
                *nmem = got; /* 0 when not an object (the last occurrence counts) */
            (*count)++;
            for (size_t i = 0; i < n && !k.escaped; i++)
                if (names[i][0] == k.ptr[0] && strlen(names[i]) == k.len && memcmp(names[i], k.ptr, k.len) == 0) {
                    vals[i] = m;
                    found[i] = true;
                    break;
                }
            ws(&s);
            if (s.p < s.end && *s.p == ',') {
                s.p++;
                continue;
            }
            if (s.p < s.end && *s.p == '}') {
                s.p++;
                break;
            }
            fail(&s, "expected ',' or '}'");
            goto bad;
        }
    }
    ws(&s);
    if (s.p != s.end) {
        fail(&s, "trailing characters");
        goto bad;
    }
    memset(out, 0, sizeof(*out));
    out->type = CJ_OBJECT;
    out->ptr = b;
    out->len = (size_t)(s.p - b);
    return TB_OK;
bad:
    return tb_error_set(err, TB_ERR_INVALID, false, "invalid JSON at byte %zu: %s", (size_t)(s.bad - s.start), s.why);
}

/* Iteration over text cj_parse validated: skip values without checking them
 * again (strings by their quotes, containers by bracket depth). */
static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at the opening quote; returns the position after the closing quote. */
static const char *skip_str(const char *p, const char *end, bool *escaped)
{
    for (p++; p < end; p++) {
#ifdef __SSE2__
        while (end - p >= 16) {
            unsigned m = stop16(p, false);
            if (m) {
                p += __builtin_ctz(m);
                break;
            }
            p += 16;
        }
        if (p >= end)
            break;
#endif
        if (*p == '\\') {
            *escaped = true;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return end;
}

static const char *fast_value(const char *p, const char *end, cj_val *v)
{
    memset(v, 0, sizeof(*v));
    p = skip_ws(p, end);
    if (p >= end)
        return NULL;
    const char *b = p;
    switch (*p) {
    case '"': {
        bool esc = false;
        p = skip_str(p, end, &esc);
        v->type = CJ_STRING;
        v->ptr = b + 1;
        v->len = (size_t)(p - b - 2);
        v->escaped = esc;
        return p;
    }
    case '{':
    case '[': {
        int depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                bool esc = false;
                p = skip_str(p, end, &esc);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    p++;
                    break;
                }
            }
            p++;
        }
        v->type = *b == '{' ? CJ_OBJECT : CJ_ARRAY;
        v->ptr = b;
        v->len = (size_t)(p - b);
        return p;
    }
    case 'n': v->type = CJ_NULL; p += 4; break;
    case 't': v->type = CJ_TRUE; p += 4; break;
    case 'f': v->type = CJ_FALSE; p += 5; break;
    default:
        v->type = CJ_NUMBER;
        v->is_int = true;
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' &&
               *p != '\r') {
            if (*p == '.' || *p == 'e' || *p == 'E')
                v->is_int = false;
            p++;
        }
        break;
    }
    v->ptr = b;
    v->len = (size_t)(p - b);
    return p;
}

void cj_obj_begin(const cj_val *obj, cj_iter *it)
{
    it->p = obj->ptr + 1;
    it->end = obj->ptr + obj->len - 1;
    it->first = true;
}

bool cj_obj_next(cj_iter *it, const char **key, size_t *klen, cj_val *val)
{
    const char *p = skip_ws(it->p, it->end);
    if (!it->first) {
        if (p >= it->end || *p != ',')
            return false;
        p = skip_ws(p + 1, it->end);
    }
    if (p >= it->end || *p != '"')
        return false;
    cj_val k;
    p = fast_value(p, it->end, &k);
    p = skip_ws(p, it->end);
    if (p >= it->end || *p != ':')
        return false;
    p = fast_value(p + 1, it->end, val);
    if (!p)
        return false;
    *key = k.ptr;
    *klen = k.len;
    it->p = p;
    it->first = false;
    return true;
}

void cj_arr_begin(const cj_val *arr, cj_iter *it)
{
    cj_obj_begin(arr, it);
}

bool cj_arr_next(cj_iter *it, cj_val *val)
{
    const char *p = skip_ws(it->p, it->end);
    if (!it->first) {
        if (p >= it->end || *p != ',')
            return false;
        p++;
    }
    p = skip_ws(p, it->end);
    if (p >= it->end)
        return false;
    if (!(p = fast_value(p, it->end, val)))
        return false;
    it->p = p;
    it->first = false;
    return true;
}

size_t cj_count(const cj_val *v)
{
    cj_iter it;
    size_t n = 0;
    cj_val m;
    if (v->type == CJ_OBJECT) {
        const char *k;
        size_t kl;
        cj_obj_begin(v, &it);
        while (cj_obj_next(&it, &k, &kl, &m))
            n++;
    } else if (v->type == CJ_ARRAY) {
        cj_arr_begin(v, &it);
        while (cj_arr_next(&it, &m))
            n++;
    }
    return n;
}

static tb_code put_utf8(tb_buf *out, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return tb_buf_append(out, b, n);
}

static uint32_t hex4(const char *p)
{
    return (uint32_t)(hexv(p[0]) << 12 | hexv(p[1]) << 8 | hexv(p[2]) << 4 | hexv(p[3]));
}

tb_code cj_str_decode(const char *ptr, size_t len, tb_buf *out)
{
    const char *p = ptr, *end = ptr + len;
    tb_code rc = tb_buf_reserve(out, len);
    while (rc == TB_OK && p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        if (!bs)
            return tb_buf_append(out, p, (size_t)(end - p));
        if (bs > p && (rc = tb_buf_append(out, p, (size_t)(bs - p))) != TB_OK)
            break;
        p = bs + 1;
        if (p >= end)
            return TB_ERR_INVALID;
        char e = *p++;
        switch (e) {
        case 'b': rc = tb_buf_putc(out, '\b'); break;
        case 'f': rc = tb_buf_putc(out, '\f'); break;
        case 'n': rc = tb_buf_putc(out, '\n'); break;
        case 'r': rc = tb_buf_putc(out, '\r'); break;
        case 't': rc = tb_buf_putc(out, '\t'); break;
        case 'u': {
            if (end - p < 4)
                return TB_ERR_INVALID;
            uint32_t cp = hex4(p);
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                uint32_t lo = hex4(p + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    p += 6;
                    rc = put_utf8(out, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
                    break;
                }
            }
            if (cp >= 0xDC80 && cp <= 0xDCFF) { /* raw byte (DESIGN 5) */
                rc = tb_buf_putc(out, (char)(cp & 0xFF));
                break;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) /* any other lone surrogate: U+FFFD, as evt_jv does */
                cp = 0xFFFD;
            rc = put_utf8(out, cp);
            break;
        }
        default: rc = tb_buf_putc(out, e); break;
        }
    }
    return rc;
}

bool cj_key_eq(const char *k, size_t klen, const char *s)
{
    size_t n = strlen(s);
    if (!memchr(k, '\\', klen))
        return klen == n && memcmp(k, s, n) == 0;
    tb_buf b;
    tb_buf_init(&b, 0);
    bool eq = cj_str_decode(k, klen, &b) == TB_OK && b.len == n && memcmp(tb_buf_cstr(&b), s, n) == 0;
    tb_buf_free(&b);
    return eq;
}

bool cj_obj_get(const cj_val *obj, const char *key, cj_val *val)
{
    if (obj->type != CJ_OBJECT)
        return false;
    cj_iter it;
    const char *k;
    size_t kl;
    cj_obj_begin(obj, &it);
    while (cj_obj_next(&it, &k, &kl, val))
        if (cj_key_eq(k, kl, key))
            return true;
    return false;
}

bool cj_int64(const cj_val *v, int64_t *out)
{
    if (v->type != CJ_NUMBER || !v->is_int)
        return false;
    const char *p = v->ptr, *end = v->ptr + v->len;
    bool neg = *p == '-';
    if (neg)
        p++;
    uint64_t acc = 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < end; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (acc > (lim - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    if (neg)
        *out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    else
        *out = (int64_t)acc;
    return true;
}

char *cj_strdup(const cj_val *v, tb_buf *tmp)
{
    if (v->type != CJ_STRING)
        return NULL;
    tb_buf_reset(tmp);
    if (cj_str_decode(v->ptr, v->len, tmp) != TB_OK)
        return NULL;
    return strdup(tb_buf_cstr(tmp));
}
