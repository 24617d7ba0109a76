/*
 * cache_connect_value: the values of Kafka Connect JSON rows and keys
 * (cache_cx_row, cache_cx_key) decoded into the tributary encoding's values
 * by each column's decoder, which cache_cx_table set from its field schema
 * (the table of schemas and values is in cache_connect.c's header comment).
 * Decoded values are written into memory of the store (cache_store_alloc),
 * which lives as long as the messages: until cache_store_release.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_apply.h"
#include "evt_json.h"
#include "tb_log.h"

/* What Debezium writes for a value it did not read (a TOASTed column), and its base64 in a bytes column. */
#define CX_UNAVAILABLE "__debezium_unavailable_value"
#define CX_UNAVAILABLE_B64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

/* ------------------------------------------------------------- values */

static tb_code bad_value(tb_error *err, const cache_col *c, const char *what)
{
    return tb_error_set(err, TB_ERR_INVALID, false, "column \"%s\" (%s): %s", c->name, *c->type ? c->type : "untyped",
                        what);
}

/* Text of n bytes into the arena as a value of type `type`. */
static tb_code put(cache_store *s, const char *text, size_t n, cj_type type, cj_val *out, tb_error *err)
{
    char *p = cache_store_alloc(s, n + 1);
    if (!p)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    memcpy(p, text, n);
    p[n] = 0;
    memset(out, 0, sizeof(*out));
    out->type = type;
    out->ptr = p;
    out->len = n;
    out->is_int = type == CJ_NUMBER;
    return TB_OK;
}

static char *u64_text(uint64_t v, char *end)
{
    *--end = 0;
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

/* Unscaled big-endian two's complement bytes and a scale -> "-12.50" in out. */
static tb_code decimal_text(const unsigned char *b, size_t n, int scale, tb_buf *out)
{
    unsigned char mag[128];
    char digits[320];
    if (n > sizeof(mag))
        return TB_ERR_INVALID;
    bool neg = n > 0 && (b[0] & 0x80);
    memcpy(mag, b, n);
    if (neg) { /* two's complement negation */
        for (size_t i = 0; i < n; i++)
            mag[i] = (unsigned char)~mag[i];
        for (size_t i = n; i-- > 0;)
            if (++mag[i] != 0)
                break;
    }
    size_t nd = 0, lo = 0;
    for (;;) { /* divide by 10 until zero: digits in reverse */
        while (lo < n && mag[lo] == 0)
            lo++;
        if (lo == n)
            break;
        unsigned rem = 0;
        for (size_t i = lo; i < n; i++) {
            unsigned cur = rem << 8 | mag[i];
            mag[i] = (unsigned char)(cur / 10);
            rem = cur % 10;
        }
        digits[nd++] = (char)('0' + rem);
    }
    if (nd == 0)
        digits[nd++] = '0';
    tb_buf_reset(out);
    tb_code rc = neg ? tb_buf_putc(out, '-') : TB_OK;
    if (scale <= 0) {
        for (size_t i = nd; rc == TB_OK && i-- > 0;)
            rc = tb_buf_putc(out, digits[i]);
        for (int i = 0; rc == TB_OK && i < -scale && !(nd == 1 && digits[0] == '0'); i++)
            rc = tb_buf_putc(out, '0');
        return rc;
    }
    while (nd <= (size_t)scale) /* at least one digit before the point */
        digits[nd++] = '0';
    for (size_t i = nd; rc == TB_OK && i-- > 0;) {
        rc = tb_buf_putc(out, digits[i]);
        if (rc == TB_OK && i == (size_t)scale)
            rc = tb_buf_putc(out, '.');
    }
    return rc;
}

/* A plain JSON number text ("12.5", "-3") with exactly `scale` decimals. */
static tb_code number_scaled(const cj_val *v, int scale, tb_buf *out)
{
    const char *p = v->ptr, *end = v->ptr + v->len;
    const char *dot = memchr(p, '.', v->len);
    if (memchr(p, 'e', v->len) || memchr(p, 'E', v->len))
        return TB_ERR_INVALID;
    size_t have = dot ? (size_t)(end - dot - 1) : 0;
    tb_buf_reset(out);
    tb_code rc = tb_buf_append(out, p, (size_t)((dot ? dot : end) - p));
    if (scale > 0) {
        rc = rc ? rc : tb_buf_putc(out, '.');
        for (int i = 0; rc == TB_OK && i < scale; i++)
            rc = tb_buf_putc(out, (size_t)i < have ? dot[1 + i] : '0');
    }
    for (size_t i = (size_t)(scale > 0 ? scale : 0); i < have; i++)
        if (dot[1 + i] != '0')
            return TB_ERR_INVALID; /* more decimals than the scale: not this column's value */
    return rc;
}

/* Days since 1970-01-01 -> civil date (Howard Hinnant's algorithm). The
 * days of years 0 to 9999 and a margin: false outside (no arithmetic on a
 * number from the message can overflow). */
#define CX_DAYS_MIN (-719528LL - 366)  /* 0000-01-01 */
#define CX_DAYS_MAX (2932896LL + 366)  /* 9999-12-31 */
static bool civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    if (z < CX_DAYS_MIN || z > CX_DAYS_MAX)
        return false;
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
    return true;
}

static int64_t floor_div(int64_t a, int64_t b, int64_t *rem)
{
    int64_t q = a / b, r = a % b;
    if (r < 0) {
        r += b;
        q--;
    }
    *rem = r;
    return q;
}

/* Fraction digits to print: the column's fsp when known, else the shortest exact. */
static uint8_t frac_digits(uint32_t usec, int arg)
{
    if (arg >= 0)
        return (uint8_t)arg;
    if (usec == 0)
        return 0;
    uint8_t n = 6;
    while (usec % 10 == 0) {
        usec /= 10;
        n--;
    }
    return n;
}

static tb_code temporal(cache_store *s, const cache_col *c, const cj_val *v, cj_val *out, tb_error *err)
{
    int64_t n, rem;
    if (!cj_int64(v, &n))
        return bad_value(err, c, "expected an integer");
    evt_temporal tm;
    memset(&tm, 0, sizeof(tm));
    evt_kind kind = EVT_V_DATETIME;
    int64_t unit = c->dz == DZ_TIME_MS || c->dz == DZ_TS_MS ? 1000 : c->dz == DZ_TIME_NS || c->dz == DZ_TS_NS ? 1 : 0;
    /* to microseconds (nanoseconds: the tributary encoding keeps six digits) */
    int64_t us = n;
    if (unit == 1000) {
        if (n > INT64_MAX / 1000 || n < INT64_MIN / 1000)
            return bad_value(err, c, "out of range");
        us = n * 1000;
    } else if (unit == 1) { /* a TIME is a duration: toward zero; an instant: toward the past */
        us = c->dz == DZ_TIME_NS ? n / 1000 : floor_div(n, 1000, &rem);
    }
    if (c->dz == DZ_DATE) {
        kind = EVT_V_DATE;
        int64_t y;
        unsigned m, d;
        if (!civil_from_days(n, &y, &m, &d) || y < 0 || y > 9999)
            return bad_value(err, c, "date out of range");
        tm.year = (int32_t)y, tm.month = (uint8_t)m, tm.day = (uint8_t)d;
    } else if (c->dz == DZ_TIME_MS || c->dz == DZ_TIME_US || c->dz == DZ_TIME_NS) {
        kind = EVT_V_TIME;
        uint64_t a = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
        tm.negative = us < 0;
        tm.usec = (uint32_t)(a % 1000000);
        a /= 1000000;
        tm.second = (uint8_t)(a % 60);
        tm.minute = (uint8_t)(a / 60 % 60);
        if (a / 3600 > 99999)
            return bad_value(err, c, "time out of range");
        tm.hour = (uint32_t)(a / 3600);
        tm.fsp = frac_digits(tm.usec, c->dz_arg);
    } else {
        int64_t day = floor_div(us, 86400000000LL, &rem), y;
        unsigned m, d;
        if (!civil_from_days(day, &y, &m, &d) || y < 0 || y > 9999)
            return bad_value(err, c, "timestamp out of range");
        tm.year = (int32_t)y, tm.month = (uint8_t)m, tm.day = (uint8_t)d;
        tm.usec = (uint32_t)(rem % 1000000);
        rem /= 1000000;
        tm.second = (uint8_t)(rem % 60);
        tm.minute = (uint8_t)(rem / 60 % 60);
        tm.hour = (uint32_t)(rem / 3600);
        tm.fsp = frac_digits(tm.usec, c->dz_arg);
    }
    char text[48];
    size_t len = evt_fmt_temporal(kind, &tm, text);
    return put(s, text, len, CJ_STRING, out, err);
}

/* Base64 (standard) text of a string value into s->scratch. */
static tb_code unbase64(cache_store *s, const cache_col *c, const cj_val *v, tb_error *err)
{
    tb_buf_reset(&s->scratch);
    if (v->escaped || tb_base64_decode(v->ptr, v->len, &s->scratch) != TB_OK)
        return bad_value(err, c, "not base64");
    return TB_OK;
}

static tb_code decode_value(cache_store *s, const cache_col *c, const cj_val *v, cj_val *out, tb_error *err)
{
    tb_code rc;
    *out = *v;
    if (v->type == CJ_NULL)
        return TB_OK;
    switch ((cache_dz)c->dz) {
    case DZ_NONE:
        return TB_OK;
    case DZ_DEC_BYTES: {
        tb_buf txt;
        tb_buf_init(&txt, 0);
        if (v->type == CJ_STRING) {
            if ((rc = unbase64(s, c, v, err)) != TB_OK) {
                tb_buf_free(&txt);
                return rc;
            }
            rc = decimal_text((const unsigned char *)s->scratch.data, s->scratch.len, c->dz_arg, &txt);
        } else if (v->type == CJ_NUMBER) {
            rc = number_scaled(v, c->dz_arg, &txt);
        } else {
            rc = TB_ERR_INVALID;
        }
        if (rc != TB_OK && v->type == CJ_NUMBER && c->dz_arg >= 0) {
            /* decimal.handling.mode=double: a double, rounded to the scale (the setting's loss) */
            char tmp[64];
            if (v->len < sizeof(tmp)) {
                memcpy(tmp, v->ptr, v->len);
                tmp[v->len] = 0;
                tb_buf_reset(&txt);
                rc = tb_buf_printf(&txt, "%.*f", (int)c->dz_arg, strtod(tmp, NULL));
            }
        }
        if (rc == TB_OK)
            rc = put(s, txt.data ? txt.data : "", txt.len, c->cls == CC_UINT64 ? CJ_NUMBER : CJ_STRING, out, err);
        else
            rc = bad_value(err, c, "not a decimal of this scale");
        tb_buf_free(&txt);
        return rc;
    }
    case DZ_DATE:
    case DZ_TIME_MS:
    case DZ_TIME_US:
    case DZ_TIME_NS:
    case DZ_TS_MS:
    case DZ_TS_US:
    case DZ_TS_NS:
        return v->type == CJ_NUMBER ? temporal(s, c, v, out, err) : TB_OK; /* text: as the tributary encoding */
    case DZ_SET: {
        if (v->type != CJ_STRING)
            return TB_OK; /* an array already */
        tb_buf lab, js;
        evt_jw w;
        tb_buf_init(&lab, 0);
        tb_buf_init(&js, 0);
        rc = cj_str_decode(v->ptr, v->len, &lab);
        evt_jw_init(&w, &js);
        evt_jw_arr_begin(&w);
        const char *p = lab.data ? lab.data : "", *end = p + lab.len;
        while (rc == TB_OK && p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e = comma ? comma : end;
            evt_jw_str(&w, p, (size_t)(e - p));
            p = comma ? comma + 1 : end;
        }
        evt_jw_arr_end(&w);
        if (rc == TB_OK && (rc = evt_jw_finish(&w)) == TB_OK)
            rc = put(s, js.data, js.len, CJ_ARRAY, out, err);
        else
            rc = bad_value(err, c, "bad set value");
        tb_buf_free(&lab);
        tb_buf_free(&js);
        return rc;
    }
    case DZ_BITS: {
        if (v->type != CJ_STRING)
            return TB_OK;
        if ((rc = unbase64(s, c, v, err)) != TB_OK)
            return rc;
        if (s->scratch.len > 8)
            return bad_value(err, c, "more than 64 bits");
        uint64_t u = 0;
        for (size_t i = s->scratch.len; i-- > 0;)
            u = u << 8 | (unsigned char)s->scratch.data[i];
        char tmp[24], *d = u64_text(u, tmp + sizeof(tmp));
        return put(s, d, strlen(d), CJ_NUMBER, out, err);
    }
    case DZ_JSON: {
        if (v->type != CJ_STRING)
            return TB_OK; /* the document itself */
        tb_buf doc, js;
        evt_jw w;
        tb_buf_init(&doc, 0);
        tb_buf_init(&js, 0);
        rc = cj_str_decode(v->ptr, v->len, &doc);
        evt_jw_init(&w, &js);
        if (rc == TB_OK)
            evt_jw_json(&w, doc.data ? doc.data : "", doc.len);
        if (rc == TB_OK && evt_jw_finish(&w) == TB_OK)
            rc = put(s, js.data, js.len, js.data[0] == '"' ? CJ_OBJECT : CJ_ARRAY, out, err);
        /* not JSON text: a string document, kept as the string */
        tb_buf_free(&doc);
        tb_buf_free(&js);
        return rc;
    }
    case DZ_GEOM: {
        cj_val wkb, srid;
        if (v->type != CJ_OBJECT)
            return TB_OK;
        if (!cj_obj_get(v, "wkb", &wkb) || wkb.type != CJ_STRING || wkb.escaped)
            return bad_value(err, c, "geometry without wkb");
        bool has_srid = cj_obj_get(v, "srid", &srid) && srid.type == CJ_NUMBER && srid.is_int;
        tb_buf js;
        tb_buf_init(&js, 0);
        rc = tb_buf_printf(&js, "{\"srid\":%.*s,\"wkb\":\"%.*s\"}", has_srid ? (int)srid.len : 1,
                           has_srid ? srid.ptr : "0", (int)wkb.len, wkb.ptr);
        rc = rc ? tb_error_set(err, TB_ERR_NOMEM, false, "out of memory") : put(s, js.data, js.len, CJ_OBJECT, out, err);
        tb_buf_free(&js);
        return rc;
    }
    case DZ_FLOAT32: {
        char tmp[64], f[32];
        if (v->type != CJ_NUMBER || v->len >= sizeof(tmp))
            return TB_OK;
        memcpy(tmp, v->ptr, v->len);
        tmp[v->len] = 0;
        size_t n = evt_fmt_float(strtof(tmp, NULL), f);
        rc = put(s, f, n, CJ_NUMBER, out, err);
        out->is_int = !strpbrk(f, ".eE");
        return rc;
    }
    case DZ_U64: {
        int64_t i;
        if (v->type == CJ_STRING) { /* bigint.unsigned.handling.mode=precise without a schema: Decimal bytes */
            cache_col d = *c;
            d.dz = DZ_DEC_BYTES;
            d.dz_arg = 0;
            return decode_value(s, &d, v, out, err);
        }
        if (!cj_int64(v, &i) || i >= 0)
            return TB_OK;
        char tmp[24], *d = u64_text((uint64_t)i, tmp + sizeof(tmp));
        return put(s, d, strlen(d), CJ_NUMBER, out, err);
    }
    case DZ_B64URL:
    case DZ_HEX: {
        if (v->type != CJ_STRING)
            return TB_OK;
        tb_buf raw, b64;
        tb_buf_init(&raw, 0);
        tb_buf_init(&b64, 0);
        rc = TB_OK;
        if (c->dz == DZ_HEX) {
            if (v->len % 2)
                rc = TB_ERR_INVALID;
            for (size_t i = 0; rc == TB_OK && i < v->len; i += 2) {
                int hi = -1, lo = -1;
                char h = v->ptr[i], l = v->ptr[i + 1];
                hi = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                lo = l >= '0' && l <= '9' ? l - '0' : l >= 'a' && l <= 'f' ? l - 'a' + 10 : l >= 'A' && l <= 'F' ? l - 'A' + 10 : -1;
                rc = hi < 0 || lo < 0 ? TB_ERR_INVALID : tb_buf_putc(&raw, (char)(hi << 4 | lo));
            }
            rc = rc ? rc : tb_buf_base64(&b64, raw.data ? raw.data : "", raw.len);
        } else {
            for (size_t i = 0; rc == TB_OK && i < v->len; i++)
                rc = tb_buf_putc(&b64, v->ptr[i] == '-' ? '+' : v->ptr[i] == '_' ? '/' : v->ptr[i]);
            while (rc == TB_OK && b64.len % 4)
                rc = tb_buf_putc(&b64, '=');
        }
        rc = rc ? bad_value(err, c, c->dz == DZ_HEX ? "not hex" : "not base64-url-safe")
                : put(s, b64.data ? b64.data : "", b64.len, CJ_STRING, out, err);
        tb_buf_free(&raw);
        tb_buf_free(&b64);
        return rc;
    }
    }
    return TB_OK;
}

static bool unavailable(const cache_col *c, const cj_val *v)
{
    if (v->type != CJ_STRING)
        return false;
    if (c->cls == CC_BLOB)
        return v->len == sizeof(CX_UNAVAILABLE_B64) - 1 && memcmp(v->ptr, CX_UNAVAILABLE_B64, v->len) == 0;
    return v->len == sizeof(CX_UNAVAILABLE) - 1 && memcmp(v->ptr, CX_UNAVAILABLE, v->len) == 0;
}

tb_code cache_cx_row(cache_store *s, const cache_table *t, const cj_val *row, const cj_member *in, size_t nin,
                     cj_member **out, size_t *nout, tb_error *err)
{
    cj_iter it;
    const char *k;
    size_t kl, n = 0, hint = 0, next = 0;
    cj_val v;
    tb_code rc;
    if (!in)
        cj_obj_begin(row, &it);
    while (in ? next < nin : cj_obj_next(&it, &k, &kl, &v)) {
        if (in) {
            k = in[next].key;
            kl = in[next].klen;
            v = in[next].val;
            next++;
        }
        if (n == s->cx_cap) {
            size_t cap = s->cx_cap ? s->cx_cap * 2 : 64;
            cj_member *m = realloc(s->cx_mem, cap * sizeof(*m));
            if (!m)
                return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            s->cx_mem = m;
            s->cx_cap = cap;
        }
        cj_member *m = &s->cx_mem[n];
        m->key = k;
        m->klen = kl;
        long ci = cache_col_find(t, k, kl, hint);
        if (ci < 0) {
            m->val = v; /* a column the schema does not know: added untyped by the upsert */
        } else {
            const cache_col *c = &t->cols[ci];
            hint = (size_t)ci + 1;
            if (c->pk == 0 && unavailable(c, &v))
                continue; /* left as it is */
            if ((rc = decode_value(s, c, &v, &m->val, err)) != TB_OK)
                return rc;
        }
        n++;
    }
    *out = s->cx_mem;
    *nout = n;
    return TB_OK;
}

tb_code cache_cx_key(cache_store *s, const cache_table *t, const cj_val *key, cj_val *out, tb_error *err)
{
    bool any = false;
    for (size_t i = 0; i < t->npk; i++)
        any |= t->cols[t->pk[i]].dz != DZ_NONE;
    *out = *key;
    if (!any || key->type != CJ_OBJECT)
        return TB_OK;
    cj_iter it;
    const char *k;
    size_t kl;
    cj_val v, d;
    tb_buf js;
    tb_code rc = TB_OK;
    tb_buf_init(&js, 0);
    rc = tb_buf_putc(&js, '{');
    cj_obj_begin(key, &it);
    while (rc == TB_OK && cj_obj_next(&it, &k, &kl, &v)) {
        long ci = cache_col_find(t, k, kl, 0);
        d = v;
        if (ci >= 0 && (rc = decode_value(s, &t->cols[ci], &v, &d, err)) != TB_OK)
            break;
        rc = tb_buf_printf(&js, "%s\"%.*s\":", js.len > 1 ? "," : "", (int)kl, k);
        if (rc == TB_OK && d.type == CJ_STRING)
            rc = tb_buf_printf(&js, "\"%.*s\"", (int)d.len, d.ptr);
        else if (rc == TB_OK)
            rc = tb_buf_append(&js, d.ptr, d.len);
    }
    rc = rc ? rc : tb_buf_putc(&js, '}');
    if (rc == TB_OK) {
        cj_val txt = {0};
        if ((rc = put(s, js.data, js.len, CJ_OBJECT, &txt, err)) == TB_OK)
            rc = cj_parse(txt.ptr, txt.len, out, err);
    } else if (!err || err->code == TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    tb_buf_free(&js);
    return rc;
}

