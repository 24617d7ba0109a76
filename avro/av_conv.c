/*
 * av_conv: Connect schema -> Avro schema, and payload -> Avro binary (the
 * mapping is in av_conv.h).
 */
#include "av_conv.h"

#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deepest nesting of Connect schemas followed (the codec's are 3 deep). */
#define AV_MAX_DEPTH 32

/* ============================================================ helpers */

static const char *member_str(const evt_jv *o, const char *key)
{
    const evt_jv *v = o ? evt_jv_get(o, key) : NULL;
    if (!v || evt_jv_type_of(v) != EVT_JV_STRING)
        return NULL;
    size_t n;
    return evt_jv_text(v, &n);
}

static bool member_true(const evt_jv *o, const char *key)
{
    const evt_jv *v = evt_jv_get(o, key);
    return v && evt_jv_type_of(v) == EVT_JV_BOOL && evt_jv_bool(v);
}

static const char *param(const evt_jv *cs, const char *key)
{
    return member_str(evt_jv_get(cs, "parameters"), key);
}

/* Avro's name rule: [A-Za-z_][A-Za-z0-9_]*; other characters become '_'. */
static void put_avro_name(tb_buf *b, const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        tb_buf_putc(b, '_');
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        tb_buf_putc(b, ok ? c : '_');
    }
}

/* Namespace "a.b" and name "C" of a Connect name "a.b.C", each part sanitized. */
static void split_name(const char *full, tb_buf *ns, tb_buf *name)
{
    const char *dot = strrchr(full, '.');
    const char *last = dot ? dot + 1 : full;
    put_avro_name(name, last, strlen(last));
    if (!dot)
        return;
    const char *p = full;
    while (p < dot) {
        const char *e = memchr(p, '.', (size_t)(dot - p));
        if (!e)
            e = dot;
        if (ns->len)
            tb_buf_putc(ns, '.');
        put_avro_name(ns, p, (size_t)(e - p));
        p = e + 1;
    }
}

/* ============================================================ schema */

typedef struct conv {
    evt_jw w;
    tb_buf tmp;
    char **defined;     /* pairs: full Avro name of a record written so far, its Connect schema's text */
    size_t ndefined;
    unsigned ndefault;  /* unnamed structs so far */
    tb_error *err;
    tb_code rc;
} conv;

/* The first failure of a conversion (the later ones are its consequences). */
__attribute__((format(printf, 2, 3))) static tb_code conv_fail(conv *c, const char *fmt, ...)
{
    if (c->rc == TB_OK) {
        va_list ap;
        va_start(ap, fmt);
        c->rc = tb_error_vset(c->err, TB_ERR_INVALID, false, fmt, ap);
        va_end(ap);
    }
    return c->rc;
}

/* A JSON value as canonical text, into b. */
static bool canonical(const evt_jv *cs, tb_buf *b)
{
    evt_jw w;
    tb_buf_reset(b);
    evt_jw_init(&w, b);
    evt_jv_write(cs, &w);
    return evt_jw_finish(&w) == TB_OK;
}

/* Whether the record full (not NULL) was written before (then it is referred to by
 * name); a second struct of that name must have the same fields, else the
 * schema and the encoder would disagree on them. */
static bool conv_defined(conv *c, const char *full, const evt_jv *cs)
{
    tb_buf text;
    tb_buf_init(&text, 0);
    bool found = false;
    const evt_jv *fields = evt_jv_get(cs, "fields"); /* what the encoder follows */
    if (!fields || !canonical(fields, &text)) {
        conv_fail(c, "Avro schema: struct %s cannot be written", full);
        goto out;
    }
    for (size_t i = 0; i < c->ndefined; i += 2)
        if (strcmp(c->defined[i], full) == 0) {
            if (strcmp(c->defined[i + 1], tb_buf_cstr(&text)) != 0)
                conv_fail(c, "Avro schema: two different structs are named %s", full);
            found = true;
            goto out;
        }
    char **d = realloc(c->defined, (c->ndefined + 2) * sizeof(*d));
    char *s = strdup(full), *t = strdup(tb_buf_cstr(&text));
    if (d)
        c->defined = d;
    if (!d || !s || !t) {
        free(s);
        free(t);
        c->rc = tb_error_set(c->err, TB_ERR_NOMEM, false, "Avro schema: out of memory");
        goto out;
    }
    c->defined[c->ndefined++] = s;
    c->defined[c->ndefined++] = t;
out:
    tb_buf_free(&text);
    return found;
}

static void jw_str(evt_jw *w, const char *s) { evt_jw_str(w, s, strlen(s)); }
static void jw_key(evt_jw *w, const char *k) { evt_jw_key(w, k, strlen(k)); }

static void conv_type(conv *c, const evt_jv *cs, int depth, const evt_jv *dflt);

/* The connect.* annotations of a named type. */
static void conv_connect_meta(conv *c, const evt_jv *cs, const char *name, const evt_jv *dflt)
{
    const evt_jv *ver = evt_jv_get(cs, "version");
    if (ver && evt_jv_type_of(ver) == EVT_JV_NUMBER) {
        jw_key(&c->w, "connect.version");
        size_t n;
        const char *t = evt_jv_text(ver, &n);
        evt_jw_raw_number(&c->w, t, n);
    }
    const evt_jv *params = evt_jv_get(cs, "parameters");
    if (params && evt_jv_type_of(params) == EVT_JV_OBJECT) {
        jw_key(&c->w, "connect.parameters");
        evt_jv_write(params, &c->w);
    }
    if (dflt) {
        jw_key(&c->w, "connect.default");
        evt_jv_write(dflt, &c->w);
    }
    if (name) {
        jw_key(&c->w, "connect.name");
        jw_str(&c->w, name);
    }
}

/* A field's Connect default as Avro's: numbers, strings and booleans as they
 * are; bytes (Decimal, Bits, binary), base64 in Connect's JSON, as Avro's
 * string of code points 0-255, one per byte. */
static void put_default(conv *c, const evt_jv *f, const evt_jv *dflt)
{
    const char *type = member_str(f, "type");
    size_t n;
    const char *t = evt_jv_text(dflt, &n);
    if (!type || strcmp(type, "bytes") != 0 || evt_jv_type_of(dflt) != EVT_JV_STRING) {
        evt_jv_write(dflt, &c->w);
        return;
    }
    tb_buf raw, u8;
    tb_buf_init(&raw, 0);
    tb_buf_init(&u8, 0);
    tb_code rc = tb_base64_decode(t, n, &raw);
    for (size_t i = 0; rc == TB_OK && i < raw.len; i++) {
        uint8_t b = (uint8_t)raw.data[i];
        if (b < 0x80)
            rc = tb_buf_putc(&u8, (char)b);
        else if ((rc = tb_buf_putc(&u8, (char)(0xC0 | (b >> 6)))) == TB_OK)
            rc = tb_buf_putc(&u8, (char)(0x80 | (b & 0x3F)));
    }
    if (rc == TB_ERR_NOMEM)
        conv_fail(c, "out of memory");
    else if (rc != TB_OK)
        conv_fail(c, "Avro schema: field %s: its default is not base64", member_str(f, "field"));
    else
        evt_jw_str(&c->w, u8.data ? u8.data : "", u8.len);
    tb_buf_free(&raw);
    tb_buf_free(&u8);
}

static void conv_record(conv *c, const evt_jv *cs, int depth)
{
    const char *cname = member_str(cs, "name");
    tb_buf ns, name, full;
    tb_buf_init(&ns, 0);
    tb_buf_init(&name, 0);
    tb_buf_init(&full, 0);
    if (cname)
        split_name(cname, &ns, &name);
    else {
        tb_buf_puts(&ns, "io.confluent.connect.avro");
        tb_buf_puts(&name, "ConnectDefault");
        if (++c->ndefault > 1)
            tb_buf_printf(&name, "%u", c->ndefault);
    }
    if (ns.len)
        tb_buf_printf(&full, "%s.", tb_buf_cstr(&ns));
    tb_buf_puts(&full, tb_buf_cstr(&name));
    if (conv_defined(c, tb_buf_cstr(&full), cs) || c->rc != TB_OK) {
        jw_str(&c->w, tb_buf_cstr(&full)); /* defined before: referred to by name */
        goto out;
    }
    evt_jw_obj_begin(&c->w);
    jw_key(&c->w, "type");
    jw_str(&c->w, "record");
    jw_key(&c->w, "name");
    jw_str(&c->w, tb_buf_cstr(&name));
    if (ns.len) {
        jw_key(&c->w, "namespace");
        jw_str(&c->w, tb_buf_cstr(&ns));
    }
    jw_key(&c->w, "fields");
    evt_jw_arr_begin(&c->w);
    const evt_jv *fields = evt_jv_get(cs, "fields");
    if (!fields || evt_jv_type_of(fields) != EVT_JV_ARRAY)
        conv_fail(c, "Avro schema: struct %s has no fields array", cname ? cname : "?");
    for (size_t i = 0; fields && i < evt_jv_size(fields) && c->rc == TB_OK; i++) {
        const evt_jv *f = evt_jv_at(fields, i);
        const char *fname = member_str(f, "field");
        if (!fname) {
            conv_fail(c, "Avro schema: a field of struct %s has no name", cname ? cname : "?");
            break;
        }
        const evt_jv *dflt = evt_jv_get(f, "default");
        if (dflt && evt_jv_type_of(dflt) == EVT_JV_NULL)
            dflt = NULL;
        bool optional = member_true(f, "optional");
        evt_jw_obj_begin(&c->w);
        jw_key(&c->w, "name");
        tb_buf_reset(&c->tmp);
        put_avro_name(&c->tmp, fname, strlen(fname));
        evt_jw_str(&c->w, c->tmp.data, c->tmp.len);
        jw_key(&c->w, "type");
        if (optional) {
            evt_jw_arr_begin(&c->w);
            if (!dflt)
                jw_str(&c->w, "null");
            conv_type(c, f, depth + 1, dflt);
            if (dflt)
                jw_str(&c->w, "null");
            evt_jw_arr_end(&c->w);
        } else
            conv_type(c, f, depth + 1, dflt);
        if (optional || dflt) {
            jw_key(&c->w, "default");
            if (dflt)
                put_default(c, f, dflt);
            else
                evt_jw_null(&c->w);
        }
        evt_jw_obj_end(&c->w);
    }
    evt_jw_arr_end(&c->w);
    if (cname)
        conv_connect_meta(c, cs, cname, NULL);
    evt_jw_obj_end(&c->w);
out:
    tb_buf_free(&ns);
    tb_buf_free(&name);
    tb_buf_free(&full);
}

static void conv_type(conv *c, const evt_jv *cs, int depth, const evt_jv *dflt)
{
    if (c->rc != TB_OK)
        return;
    const char *type = member_str(cs, "type");
    const char *name = member_str(cs, "name");
    if (depth > AV_MAX_DEPTH || !type) {
        conv_fail(c, "Avro schema: a Connect schema without a type (or nested too deep) near %s", name ? name : "?");
        return;
    }
    if (strcmp(type, "struct") == 0) {
        conv_record(c, cs, depth);
        return;
    }
    static const struct {
        const char *connect, *avro, *ctype;
    } prim[] = {
        {"int8", "int", "int8"},   {"int16", "int", "int16"},        {"int32", "int", NULL},
        {"int64", "long", NULL},   {"float", "float", NULL},         {"float32", "float", NULL},
        {"double", "double", NULL}, {"float64", "double", NULL},     {"boolean", "boolean", NULL},
        {"string", "string", NULL}, {"bytes", "bytes", NULL},        {"array", "array", NULL},
    };
    size_t k = 0;
    while (k < sizeof(prim) / sizeof(prim[0]) && strcmp(prim[k].connect, type) != 0)
        k++;
    if (k == sizeof(prim) / sizeof(prim[0])) {
        conv_fail(c, "Avro schema: Connect type %s has no Avro mapping", type ? type : "?");
        return;
    }
    bool array = strcmp(type, "array") == 0;
    if (!array && !name && !prim[k].ctype && !dflt) {
        jw_str(&c->w, prim[k].avro);
        return;
    }
    evt_jw_obj_begin(&c->w);
    jw_key(&c->w, "type");
    jw_str(&c->w, prim[k].avro);
    if (array) {
        jw_key(&c->w, "items");
        const evt_jv *items = evt_jv_get(cs, "items");
        if (!items) {
            conv_fail(c, "Avro schema: array %s has no items", name ? name : "?");
            return;
        }
        conv_type(c, items, depth + 1, NULL);
    }
    if (prim[k].ctype) {
        jw_key(&c->w, "connect.type");
        jw_str(&c->w, prim[k].ctype);
    }
    if (name && strcmp(name, "org.apache.kafka.connect.data.Decimal") == 0) {
        const char *p = param(cs, "connect.decimal.precision"), *s = param(cs, "scale");
        jw_key(&c->w, "logicalType");
        jw_str(&c->w, "decimal");
        jw_key(&c->w, "precision");
        evt_jw_int(&c->w, p ? strtol(p, NULL, 10) : 64);
        jw_key(&c->w, "scale");
        evt_jw_int(&c->w, s ? strtol(s, NULL, 10) : 0);
    } else if (name && strcmp(name, "org.apache.kafka.connect.data.Date") == 0) {
        jw_key(&c->w, "logicalType");
        jw_str(&c->w, "date");
    } else if (name && strcmp(name, "org.apache.kafka.connect.data.Time") == 0) {
        jw_key(&c->w, "logicalType");
        jw_str(&c->w, "time-millis");
    } else if (name && strcmp(name, "org.apache.kafka.connect.data.Timestamp") == 0) {
        jw_key(&c->w, "logicalType");
        jw_str(&c->w, "timestamp-millis");
    }
    conv_connect_meta(c, cs, name, dflt);
    evt_jw_obj_end(&c->w);
}

tb_code av_schema_from_connect(const evt_jv *cs, tb_buf *out, tb_error *err)
{
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    tb_buf_init(&c.tmp, 0);
    evt_jw_init(&c.w, out);
    conv_type(&c, cs, 0, NULL);
    tb_code f = evt_jw_finish(&c.w);
    if (c.rc == TB_OK && f != TB_OK)
        c.rc = tb_error_set(err, f, false, "Avro schema: cannot write it (%s)", tb_code_name(f));
    for (size_t i = 0; i < c.ndefined; i++)
        free(c.defined[i]);
    free(c.defined);
    tb_buf_free(&c.tmp);
    return c.rc;
}

/* ============================================================ binary */

tb_code av_put_long(tb_buf *out, int64_t v)
{
    uint64_t u = (uint64_t)v, z = (u << 1) ^ (0u - (u >> 63)); /* zigzag, no signed shift */
    uint8_t b[10];
    size_t n = 0;
    do {
        uint8_t byte = z & 0x7f;
        z >>= 7;
        b[n++] = (uint8_t)(byte | (z ? 0x80 : 0));
    } while (z);
    return tb_buf_append(out, b, n);
}

static tb_code put_bytes(tb_buf *out, const void *p, size_t n)
{
    tb_code rc = av_put_long(out, (int64_t)n);
    return rc == TB_OK ? tb_buf_append(out, p, n) : rc;
}

typedef struct enc {
    tb_buf *out;
    tb_buf tmp;
    tb_error *err;
} enc;

static tb_code enc_fail(enc *e, const char *field, const char *what)
{
    return tb_error_set(e->err, TB_ERR_INVALID, false, "Avro: field %s: %s", field ? field : "(top)", what);
}

/* A JSON number (or "NaN"/"Infinity"/"-Infinity", or {"$real":one of them}: a
 * non-finite real in a column of no class, evt_json_put_real) as a double. */
static bool num_double(const evt_jv *v, double *d)
{
    size_t n;
    if (evt_jv_type_of(v) == EVT_JV_OBJECT) {
        const evt_jv *s = evt_jv_size(v) == 1 ? evt_jv_get(v, EVT_JSON_REAL_TAG) : NULL;
        return s && evt_jv_type_of(s) == EVT_JV_STRING && num_double(s, d);
    }
    const char *t = evt_jv_text(v, &n);
    if (evt_jv_type_of(v) == EVT_JV_STRING) {
        if (strcmp(t, "NaN") == 0)
            *d = NAN;
        else if (strcmp(t, "Infinity") == 0)
            *d = INFINITY;
        else if (strcmp(t, "-Infinity") == 0)
            *d = -INFINITY;
        else
            return false;
        return true;
    }
    if (evt_jv_type_of(v) != EVT_JV_NUMBER)
        return false;
    char *end;
    errno = 0;
    *d = strtod(t, &end);
    return end == t + n;
}

static bool num_long(const evt_jv *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (evt_jv_type_of(v) != EVT_JV_NUMBER)
        return false;
    size_t n;
    const char *t = evt_jv_text(v, &n);
    char *end;
    errno = 0;
    long long x = strtoll(t, &end, 10);
    if (errno || end != t + n || x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

/* The unscaled two's complement (big-endian, fewest bytes) of decimal text
 * t at `scale` digits after the point, into out. False when t is not a number
 * with at most `scale` fraction digits. */
static bool decimal_bytes(const char *t, size_t n, long scale, tb_buf *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (t[i] == '-' || t[i] == '+'))
        neg = t[i++] == '-';
    uint8_t mag[64]; /* little-endian magnitude: 512 bits hold 154 digits */
    size_t len = 1;
    memset(mag, 0, sizeof mag);
    long frac = -1, digits = 0;
    for (; i < n; i++) {
        char ch = t[i];
        if (ch == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (ch < '0' || ch > '9')
            return false;
        if (frac >= 0 && ++frac > scale)
            return false;
        if (++digits > 150)
            return false;
        unsigned carry = (unsigned)(ch - '0');
        for (size_t k = 0; k < len; k++) {
            unsigned x = mag[k] * 10u + carry;
            mag[k] = (uint8_t)x;
            carry = x >> 8;
        }
        if (carry)
            mag[len++] = (uint8_t)carry;
    }
    if (digits == 0)
        return false;
    for (long s = frac < 0 ? 0 : frac; s < scale; s++) { /* pad to the scale */
        if (scale > 150)
            return false;
        unsigned carry = 0;
        for (size_t k = 0; k < len; k++) {
            unsigned x = mag[k] * 10u + carry;
            mag[k] = (uint8_t)x;
            carry = x >> 8;
        }
        if (carry) {
            if (len == sizeof mag)
                return false;
            mag[len++] = (uint8_t)carry;
        }
    }
    if (len < sizeof mag)
        mag[len++] = 0; /* room for the sign bit */
    if (neg) {
        unsigned carry = 1;
        for (size_t k = 0; k < len; k++) {
            unsigned x = (uint8_t)~mag[k] + carry;
            mag[k] = (uint8_t)x;
            carry = x >> 8;
        }
    }
    /* fewest bytes that keep the sign */
    while (len > 1 && ((mag[len - 1] == 0 && !(mag[len - 2] & 0x80)) ||
                       (mag[len - 1] == 0xff && (mag[len - 2] & 0x80))))
        len--;
    for (size_t k = len; k-- > 0;)
        if (tb_buf_putc(out, (char)mag[k]) != TB_OK)
            return false;
    return true;
}

static tb_code enc_value(enc *e, const evt_jv *cs, const evt_jv *v, const char *field, int depth);

static tb_code enc_record(enc *e, const evt_jv *cs, const evt_jv *v, const char *field, int depth)
{
    if (evt_jv_type_of(v) != EVT_JV_OBJECT)
        return enc_fail(e, field, "expected an object");
    const evt_jv *fields = evt_jv_get(cs, "fields");
    if (!fields || evt_jv_type_of(fields) != EVT_JV_ARRAY)
        return enc_fail(e, field, "struct schema without fields");
    for (size_t i = 0; i < evt_jv_size(fields); i++) {
        const evt_jv *f = evt_jv_at(fields, i);
        const char *fname = member_str(f, "field");
        if (!fname)
            return enc_fail(e, field, "a field without a name");
        const evt_jv *fv = evt_jv_get(v, fname);
        const evt_jv *dflt = evt_jv_get(f, "default");
        bool has_default = dflt && evt_jv_type_of(dflt) != EVT_JV_NULL;
        tb_code rc;
        if (member_true(f, "optional")) {
            bool null = !fv || evt_jv_type_of(fv) == EVT_JV_NULL;
            /* ["null",T], or [T,"null"] when the field has a default */
            if ((rc = av_put_long(e->out, null == has_default ? 1 : 0)) != TB_OK)
                return rc;
            if (null)
                continue;
        } else if (!fv)
            return enc_fail(e, fname, "missing from the payload");
        if ((rc = enc_value(e, f, fv, fname, depth + 1)) != TB_OK)
            return rc;
    }
    return TB_OK;
}

static tb_code enc_value(enc *e, const evt_jv *cs, const evt_jv *v, const char *field, int depth)
{
    const char *type = member_str(cs, "type");
    const char *name = member_str(cs, "name");
    if (!type || depth > AV_MAX_DEPTH)
        return enc_fail(e, field, "schema without a type");
    evt_jv_type jt = evt_jv_type_of(v);
    if (jt == EVT_JV_NULL)
        return enc_fail(e, field, "null in a field that is not optional");
    if (strcmp(type, "struct") == 0)
        return enc_record(e, cs, v, field, depth);
    int64_t l;
    double d;
    if (strcmp(type, "int8") == 0 || strcmp(type, "int16") == 0 || strcmp(type, "int32") == 0) {
        int64_t lim = type[3] == '8' ? 127 : type[3] == '1' ? 32767 : 2147483647;
        if (jt == EVT_JV_BOOL)
            l = evt_jv_bool(v);
        else if (!num_long(v, -lim - 1, lim, &l))
            return enc_fail(e, field, "not an integer in the type's range");
        return av_put_long(e->out, l);
    }
    if (strcmp(type, "int64") == 0) {
        if (!num_long(v, INT64_MIN, INT64_MAX, &l))
            return enc_fail(e, field, "not a 64-bit integer");
        return av_put_long(e->out, l);
    }
    if (strcmp(type, "float") == 0 || strcmp(type, "float32") == 0) {
        if (!num_double(v, &d))
            return enc_fail(e, field, "not a number");
        float f = (float)d;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        return tb_buf_append(e->out, b, 4);
    }
    if (strcmp(type, "double") == 0 || strcmp(type, "float64") == 0) {
        if (!num_double(v, &d))
            return enc_fail(e, field, "not a number");
        uint64_t u;
        memcpy(&u, &d, 8);
        uint8_t b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (uint8_t)(u >> (8 * k));
        return tb_buf_append(e->out, b, 8);
    }
    if (strcmp(type, "boolean") == 0) {
        if (jt != EVT_JV_BOOL)
            return enc_fail(e, field, "not a boolean");
        return tb_buf_putc(e->out, evt_jv_bool(v) ? 1 : 0);
    }
    if (strcmp(type, "string") == 0) {
        size_t n;
        const char *t;
        if (jt == EVT_JV_STRING)
            t = evt_jv_text(v, &n);
        else { /* a JSON document (JSON column) or a number: its canonical text */
            tb_buf_reset(&e->tmp);
            evt_jw w;
            evt_jw_init(&w, &e->tmp);
            evt_jv_write(v, &w);
            if (evt_jw_finish(&w) != TB_OK)
                return enc_fail(e, field, "cannot write the JSON value as text");
            t = e->tmp.data;
            n = e->tmp.len;
        }
        return put_bytes(e->out, t, n);
    }
    if (strcmp(type, "bytes") == 0) {
        size_t n;
        const char *t = evt_jv_text(v, &n);
        tb_buf_reset(&e->tmp);
        bool decimal = name && strcmp(name, "org.apache.kafka.connect.data.Decimal") == 0;
        if (jt == EVT_JV_STRING) {
            if (tb_base64_decode(t, n, &e->tmp) != TB_OK)
                return enc_fail(e, field, "bytes that are not base64");
        } else if (decimal && jt == EVT_JV_NUMBER) {
            const char *s = param(cs, "scale");
            if (!decimal_bytes(t, n, s ? strtol(s, NULL, 10) : 0, &e->tmp))
                return enc_fail(e, field, "a number the Decimal's scale cannot hold");
        } else
            return enc_fail(e, field, "expected base64 bytes");
        return put_bytes(e->out, e->tmp.data, e->tmp.len);
    }
    if (strcmp(type, "array") == 0) {
        const evt_jv *items = evt_jv_get(cs, "items");
        if (jt != EVT_JV_ARRAY || !items)
            return enc_fail(e, field, "expected an array");
        size_t n = evt_jv_size(v);
        tb_code rc;
        if (n && (rc = av_put_long(e->out, (int64_t)n)) != TB_OK)
            return rc;
        for (size_t i = 0; i < n; i++)
            if ((rc = enc_value(e, items, evt_jv_at(v, i), field, depth + 1)) != TB_OK)
                return rc;
        return av_put_long(e->out, 0);
    }
    return enc_fail(e, field, "Connect type without an Avro mapping");
}

tb_code av_encode(const evt_jv *cs, const evt_jv *payload, tb_buf *out, tb_error *err)
{
    enc e = {.out = out, .err = err};
    tb_buf_init(&e.tmp, 0);
    tb_code rc = enc_value(&e, cs, payload, NULL, 0);
    tb_buf_free(&e.tmp);
    return rc;
}
