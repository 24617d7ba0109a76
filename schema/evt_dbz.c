/*
 * evt_dbz: value.encoding=debezium, the values Debezium 3.6's MySQL/MariaDB
 * connector writes (through Kafka Connect's JsonConverter) for the same row
 * (DESIGN.md 5a). tests/fixtures/debezium holds Debezium's own output; the
 * golden test compares with it value by value.
 *
 * VALUES, by column type (options under debezium.*, Debezium's names):
 *   TINYINT, SMALLINT, MEDIUMINT, INT (any sign), YEAR   number
 *   BIGINT                 number
 *   BIGINT UNSIGNED        bigint.unsigned.handling.mode=long (default): the
 *                          two's complement int64 (2^64-1 -> -1, lossy: a
 *                          WARN per column); precise: Decimal (below)
 *   DECIMAL(p,s)           decimal.handling.mode=precise (default): base64 of
 *                          the unscaled value at scale s, big-endian two's
 *                          complement in the fewest bytes (Java's
 *                          BigInteger.toByteArray); string: "12.50";
 *                          double: the nearest double as a number
 *   FLOAT, DOUBLE          number (shortest text of the float / double);
 *                          snapshot reads of FLOAT: the value rounded to 6
 *                          digits, as the server's text protocol gives it to
 *                          Debezium's snapshot ("3.40282E38"); FLOAT(M,D): a
 *                          double, the float widened (-9999.999f as
 *                          -9999.9990234375), its snapshot read with D decimals
 *   UUID                   its text
 *   CHAR..TEXT, ENUM, JSON string (JSON: its text)
 *   SET                    the labels joined with ',' ("a,c")
 *   BINARY..BLOB           binary.handling.mode=bytes, base64 (default): base64;
 *                          base64-url-safe: RFC 4648 section 5 alphabet,
 *                          padded; hex: lower-case hex
 *   BIT(1)                 true|false
 *   BIT(n>1)               base64 of ceil(n/8) bytes, least significant first
 *   DATE                   days since 1970-01-01
 *   TIME                   adaptive_time_microseconds (default): signed
 *                          microseconds; connect: milliseconds since midnight,
 *                          null outside 00:00:00..23:59:59.999999
 *   DATETIME(fsp)          fsp 0..3: milliseconds since 1970-01-01 (the value
 *                          read as UTC); fsp 4..6: microseconds; connect:
 *                          milliseconds (floor)
 *   TIMESTAMP(fsp)         "YYYY-MM-DDTHH:MM:SS[.f]Z"; streamed: exactly fsp
 *                          digits; snapshot reads: trailing zeros dropped
 *                          (Java's ISO_OFFSET_DATE_TIME), as Debezium does
 *   zero/invalid dates     null (NOT NULL columns: 0 / "1970-01-01T00:00:00Z")
 *   GEOMETRY               {"wkb":"<base64>","srid":N}; SRID 0: null
 *   POINT                  {"x":X,"y":Y,"wkb":"<base64>","srid":N}
 *   VECTOR                 array of numbers
 *
 * A NULL in a column with a default is the default (evt_dbz_default), unless
 * debezium.replace.null.with.default=false: Debezium's messages pass through
 * Kafka Connect's JsonConverter, which writes a null field's schema default.
 */
#include "evt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "tb_log.h"

/* ============================================================ options */

static int pick(const char *v, const char *const *names, int dflt)
{
    for (int i = 0; v && names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return dflt;
}

void evt_codec_opts_encoding(evt_codec_opts *o, const struct cfg *c)
{
    static const char *const enc[] = {"tributary", "debezium", NULL};
    static const char *const dec[] = {"precise", "string", "double", NULL};
    static const char *const bin[] = {"bytes", "base64", "base64-url-safe", "hex", NULL};
    o->encoding = (evt_encoding)pick(cfg_get_str(c, CFGK_VALUE_ENCODING), enc, 0);
    o->key_schemas = cfg_get_bool(c, CFGK_KEY_SCHEMAS);
    o->dbz.decimal = (evt_dbz_decimal)pick(cfg_get_str(c, CFGK_DEBEZIUM_DECIMAL_HANDLING_MODE), dec, 0);
    o->dbz.binary = (evt_dbz_binary)pick(cfg_get_str(c, CFGK_DEBEZIUM_BINARY_HANDLING_MODE), bin, 0);
    const char *b = cfg_get_str(c, CFGK_DEBEZIUM_BIGINT_UNSIGNED_HANDLING_MODE);
    o->dbz.bigint_precise = b && strcmp(b, "precise") == 0;
    const char *t = cfg_get_str(c, CFGK_DEBEZIUM_TIME_PRECISION_MODE);
    o->dbz.time_connect = t && strcmp(t, "connect") == 0;
    o->dbz.keep_null = !cfg_get_bool(c, CFGK_DEBEZIUM_REPLACE_NULL_WITH_DEFAULT);
}

void evt_codec_warn_lossy(const evt_codec_opts *o, const evt_table *t)
{
    if (!o || o->encoding != EVT_ENC_DEBEZIUM || o->dbz.bigint_precise)
        return;
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        const evt_column *c = evt_table_column(t, i);
        if (c->type == EVT_T_BIGINT && c->is_unsigned)
            TB_WARN("codec",
                    "%s.%s column %s: BIGINT UNSIGNED under value.encoding=debezium with "
                    "debezium.bigint.unsigned.handling.mode=long: values above 9223372036854775807 wrap to "
                    "negative numbers (as Debezium's default does); set "
                    "debezium.bigint.unsigned.handling.mode=precise to keep them",
                    evt_table_db(t), evt_table_name(t), c->name);
    }
}

/* ============================================================ helpers */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
int64_t evt_dbz_days(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = m > 2 ? (int64_t)m - 3 : (int64_t)m + 9;
    int64_t doy = (153 * mp + 2) / 5 + (int64_t)d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool zero_date(const evt_temporal *t) { return t->month == 0 || t->day == 0; }

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Microseconds since 1970-01-01T00:00:00 of a DATE/DATETIME/TIMESTAMP read as UTC. */
static int64_t epoch_us(const evt_temporal *t)
{
    int64_t days = evt_dbz_days(t->year, t->month, t->day);
    int64_t secs = days * 86400 + (int64_t)t->hour * 3600 + (int64_t)t->minute * 60 + t->second;
    return secs * 1000000 + (int64_t)t->usec;
}

/* Big-endian two's complement of a magnitude held little-endian in mag[0,n),
 * negated when neg, in the fewest bytes that keep the sign (Java's
 * BigInteger.toByteArray). out holds n + 1 bytes; returns the start. */
static const uint8_t *twos_minimal(const uint8_t *mag, size_t n, bool neg, uint8_t *out, size_t *len)
{
    size_t total = n + 1;
    unsigned carry = 1;
    for (size_t i = 0; i < total; i++) {
        uint8_t b = i < n ? mag[i] : 0;
        if (neg) {
            unsigned x = (uint8_t)~b + carry;
            b = (uint8_t)x;
            carry = x >> 8;
        }
        out[total - 1 - i] = b;
    }
    size_t s = 0;
    while (s + 1 < total && ((out[s] == 0x00 && !(out[s + 1] & 0x80)) || (out[s] == 0xFF && (out[s + 1] & 0x80))))
        s++;
    *len = total - s;
    return out + s;
}

#define DBZ_DEC_BYTES 64 /* 154 decimal digits; DECIMAL has at most 65 */

/* Connect Decimal bytes of a decimal text at the given scale; false when the
 * text is not a plain decimal or too long. */
static bool decimal_bytes(const char *s, size_t len, unsigned scale, uint8_t out[DBZ_DEC_BYTES + 1], const uint8_t **p,
                          size_t *n)
{
    char dig[160];
    size_t nd = 0, i = 0, frac = 0;
    bool neg = false, dot = false;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    for (; i < len; i++) {
        if (s[i] == '.' && !dot) {
            dot = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9' || nd >= sizeof(dig))
            return false;
        dig[nd++] = s[i];
        frac += dot;
    }
    if (nd == 0)
        return false;
    for (; frac < scale; frac++) { /* the unscaled value at the column's scale */
        if (nd >= sizeof(dig))
            return false;
        dig[nd++] = '0';
    }
    uint8_t mag[DBZ_DEC_BYTES] = {0};
    bool zero = true;
    for (size_t k = 0; k < nd; k++) {
        unsigned carry = (unsigned)(dig[k] - '0');
        zero = zero && carry == 0;
        for (size_t j = 0; j < DBZ_DEC_BYTES; j++) {
            unsigned x = mag[j] * 10u + carry;
            mag[j] = (uint8_t)x;
            carry = x >> 8;
        }
    }
    *p = twos_minimal(mag, DBZ_DEC_BYTES, neg && !zero, out, n);
    return true;
}

static void put_unsigned_decimal(evt_jw *w, uint64_t u)
{
    uint8_t mag[8], out[9];
    for (int k = 0; k < 8; k++)
        mag[k] = (uint8_t)(u >> (8 * k));
    size_t n;
    const uint8_t *p = twos_minimal(mag, 8, false, out, &n);
    evt_jw_base64(w, p, n);
}

static void put_binary(evt_jw *w, const evt_dbz_opts *d, const uint8_t *b, size_t n)
{
    if (d->binary == EVT_DBZ_BIN_BYTES || d->binary == EVT_DBZ_BIN_BASE64) {
        evt_jw_base64(w, b, n);
        return;
    }
    tb_buf t;
    tb_buf_init(&t, 0);
    tb_code rc = TB_OK;
    if (d->binary == EVT_DBZ_BIN_HEX) {
        static const char hx[] = "0123456789abcdef";
        for (size_t i = 0; i < n && rc == TB_OK; i++) {
            char two[2] = {hx[b[i] >> 4], hx[b[i] & 15]};
            rc = tb_buf_append(&t, two, 2);
        }
    } else {
        rc = tb_buf_base64(&t, b, n);
        for (size_t i = 0; rc == TB_OK && i < t.len; i++)
            t.data[i] = t.data[i] == '+' ? '-' : t.data[i] == '/' ? '_' : t.data[i];
    }
    if (rc != TB_OK)
        evt_jw_fail(w, rc);
    else
        evt_jw_str(w, t.data ? t.data : "", t.len);
    tb_buf_free(&t);
}

/* "YYYY-MM-DDTHH:MM:SS[.f]Z": streamed with fsp digits, snapshot reads with
 * trailing zeros dropped. */
/* x and y of a 2D point's WKB (21 bytes: byte order, type 1, two doubles), as
 * Debezium's Point.parseWKBPoint reads them; false for anything else. */
static bool wkb_point(const uint8_t *b, size_t n, double *x, double *y)
{
    if (n != 21)
        return false;
    bool le = b[0] != 0;
    uint64_t v[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        const uint8_t *p = b + 1 + (k ? 4 + 8 * (k - 1) : 0);
        int len = k ? 8 : 4;
        for (int i = 0; i < len; i++)
            v[k] |= (uint64_t)p[le ? i : len - 1 - i] << (8 * i);
    }
    if (v[0] != 1)
        return false;
    memcpy(x, &v[1], sizeof(*x));
    memcpy(y, &v[2], sizeof(*y));
    return true;
}

static void put_zoned(evt_jw *w, const evt_temporal *t, bool snapshot)
{
    evt_temporal u = *t;
    u.fsp = t->fsp > 6 ? 6 : t->fsp;
    if (snapshot) {
        u.fsp = 6;
        uint32_t us = t->usec;
        if (us == 0)
            u.fsp = 0;
        else
            while (us % 10 == 0) {
                us /= 10;
                u.fsp--;
            }
    }
    char tmp[48];
    size_t n = evt_fmt_temporal(EVT_V_TIMESTAMP, &u, tmp);
    evt_jw_str(w, tmp, n);
}

/* ============================================================ column defaults */

/* Digits at *p into *out (at most max of them, at least one); advances *p. */
static bool digits(const char **p, unsigned max, uint64_t *out, unsigned *n)
{
    uint64_t v = 0;
    unsigned k = 0;
    while (k < max && **p >= '0' && **p <= '9') {
        v = v * 10 + (uint64_t)(**p - '0');
        (*p)++;
        k++;
    }
    *out = v;
    if (n)
        *n = k;
    return k > 0;
}

/* ".ffffff" (1-6 digits) at *p into microseconds; nothing there is 0. */
static bool fraction(const char **p, uint32_t *usec)
{
    *usec = 0;
    if (**p != '.')
        return true;
    (*p)++;
    uint64_t f;
    unsigned n;
    if (!digits(p, 6, &f, &n))
        return false;
    while (n++ < 6)
        f *= 10;
    *usec = (uint32_t)f;
    return **p == '\0';
}

/* "YYYY-MM-DD[ HH:MM:SS[.f]]" (the server's text of a DATE, DATETIME or TIMESTAMP default). */
static bool parse_datetime(const char *s, evt_temporal *t)
{
    uint64_t y, mo, d, h = 0, mi = 0, se = 0;
    const char *p = s;
    if (!digits(&p, 4, &y, NULL) || *p++ != '-' || !digits(&p, 2, &mo, NULL) || *p++ != '-' ||
        !digits(&p, 2, &d, NULL))
        return false;
    memset(t, 0, sizeof(*t));
    if (*p == ' ') {
        p++;
        if (!digits(&p, 2, &h, NULL) || *p++ != ':' || !digits(&p, 2, &mi, NULL) || *p++ != ':' ||
            !digits(&p, 2, &se, NULL) || !fraction(&p, &t->usec))
            return false;
    } else if (*p)
        return false;
    if (mo > 12 || d > 31 || h > 23 || mi > 59 || se > 59)
        return false;
    t->year = (int32_t)y;
    t->month = (uint8_t)mo;
    t->day = (uint8_t)d;
    t->hour = (uint32_t)h;
    t->minute = (uint8_t)mi;
    t->second = (uint8_t)se;
    t->fsp = 6;
    return true;
}

/* "[-]H:MM:SS[.f]" (a TIME default). */
static bool parse_time(const char *s, evt_temporal *t)
{
    uint64_t h, mi, se;
    const char *p = s;
    memset(t, 0, sizeof(*t));
    if (*p == '-') {
        t->negative = true;
        p++;
    }
    if (!digits(&p, 3, &h, NULL) || *p++ != ':' || !digits(&p, 2, &mi, NULL) || *p++ != ':' ||
        !digits(&p, 2, &se, NULL) || !fraction(&p, &t->usec) || mi > 59 || se > 59)
        return false;
    t->hour = (uint32_t)h;
    t->minute = (uint8_t)mi;
    t->second = (uint8_t)se;
    t->fsp = 6;
    return true;
}

static bool is_current_timestamp(const char *s)
{
    return strncasecmp(s, "current_timestamp", 17) == 0 || strncasecmp(s, "now(", 4) == 0 ||
           strncasecmp(s, "localtimestamp", 14) == 0;
}

int evt_dbz_float_scale(const evt_column *c)
{
    const char *s = c->source_type;
    if (c->type != EVT_T_FLOAT || !s || strncasecmp(s, "float(", 6) != 0)
        return -1;
    const char *comma = strchr(s, ',');
    if (!comma)
        return -1;
    char *end;
    long d = strtol(comma + 1, &end, 10);
    return *end == ')' && d >= 0 && d <= 30 ? (int)d : -1;
}

bool evt_dbz_default(const evt_codec_opts *o, const evt_column *c, evt_dbz_dflt *d)
{
    evt_value *v = &d->v;
    const char *s = c->default_text;
    if (!s)
        return false;
    if (c->default_expr) {
        /* Debezium's DDL parser takes CURRENT_TIMESTAMP as "1970-01-01 00:00:00"
         * (a nullable TIMESTAMP: none); b'...' is a BIT literal; any other
         * expression has no default. */
        if (is_current_timestamp(s) && (c->type == EVT_T_DATETIME || (c->type == EVT_T_TIMESTAMP && !c->nullable)))
            s = "1970-01-01 00:00:00";
        else if (c->type == EVT_T_BIT && (s[0] == 'b' || s[0] == 'B') && s[1] == '\'') {
            uint64_t u = 0;
            const char *p = s + 2;
            for (unsigned n = 0; *p == '0' || *p == '1'; p++, n++) {
                if (n >= 64)
                    return false;
                u = u << 1 | (uint64_t)(*p - '0');
            }
            if (p[0] != '\'' || p[1] != '\0')
                return false;
            v->kind = EVT_V_UINT;
            v->v.u = u;
            return true;
        } else
            return false;
    }
    char *end;
    errno = 0;
    switch (c->type) {
    case EVT_T_TINYINT:
    case EVT_T_SMALLINT:
    case EVT_T_MEDIUMINT:
    case EVT_T_INT:
    case EVT_T_BIGINT:
    case EVT_T_YEAR:
        if (c->is_unsigned && s[0] != '-') {
            v->kind = EVT_V_UINT;
            v->v.u = strtoull(s, &end, 10);
            if (c->type == EVT_T_BIGINT && !o->dbz.bigint_precise && v->v.u > INT64_MAX) {
                v->kind = EVT_V_INT; /* Debezium's long mode caps a default (a value wraps) */
                v->v.i = INT64_MAX;
            }
        } else {
            v->kind = EVT_V_INT;
            v->v.i = strtoll(s, &end, 10);
        }
        return errno == 0 && end != s && *end == '\0';
    case EVT_T_BIT: {
        /* MySQL writes a BIT default as its number */
        v->kind = EVT_V_UINT;
        v->v.u = strtoull(s, &end, 10);
        return errno == 0 && end != s && *end == '\0';
    }
    case EVT_T_FLOAT:
        v->kind = EVT_V_FLOAT;
        v->v.f = (float)strtod(s, &end);
        return end != s && *end == '\0';
    case EVT_T_DOUBLE:
        v->kind = EVT_V_DOUBLE;
        v->v.d = strtod(s, &end);
        return end != s && *end == '\0';
    case EVT_T_DECIMAL: {
        /* at the column's scale, as the server shows it */
        size_t n = strlen(s);
        const char *dot = strchr(s, '.');
        size_t frac = dot ? n - (size_t)(dot - s) - 1 : 0;
        if (n + c->scale + 2 > sizeof(d->text) || frac > c->scale)
            return false;
        memcpy(d->text, s, n);
        if (!dot && c->scale)
            d->text[n++] = '.';
        for (; frac < c->scale; frac++)
            d->text[n++] = '0';
        d->text[n] = '\0';
        v->kind = EVT_V_DECIMAL;
        v->v.s.ptr = d->text;
        v->v.s.len = n;
        return true;
    }
    case EVT_T_CHAR:
    case EVT_T_VARCHAR:
    case EVT_T_TEXT:
    case EVT_T_ENUM:
    case EVT_T_JSON:
        v->kind = c->type == EVT_T_JSON ? EVT_V_JSON : EVT_V_STRING;
        v->v.s.ptr = s;
        v->v.s.len = strlen(s);
        return true;
    case EVT_T_BINARY:
    case EVT_T_VARBINARY:
    case EVT_T_BLOB:
        v->kind = EVT_V_BYTES;
        v->v.s.ptr = s;
        v->v.s.len = strlen(s);
        return true;
    case EVT_T_SET: {
        size_t n = 0;
        for (const char *p = s; *p;) {
            const char *q = strchr(p, ',');
            size_t len = q ? (size_t)(q - p) : strlen(p);
            if (n >= sizeof(d->lens) / sizeof(d->lens[0]))
                return false;
            d->items[n] = p;
            d->lens[n++] = len;
            p += len + (q != NULL);
        }
        v->kind = EVT_V_SET;
        v->v.set.items = d->items;
        v->v.set.lens = d->lens;
        v->v.set.n = n;
        return true;
    }
    case EVT_T_DATE:
    case EVT_T_DATETIME:
    case EVT_T_TIMESTAMP:
        if (!parse_datetime(s, &v->v.t))
            return false;
        if ((v->v.t.month == 0 || v->v.t.day == 0) && c->nullable)
            return false; /* a zero date: none in a nullable column (Debezium) */
        if (c->type == EVT_T_TIMESTAMP && c->nullable && strcmp(s, "1970-01-01 00:00:00") == 0)
            return false;
        v->kind = c->type == EVT_T_DATE ? EVT_V_DATE : c->type == EVT_T_DATETIME ? EVT_V_DATETIME : EVT_V_TIMESTAMP;
        v->v.t.fsp = (uint8_t)c->scale;
        return true;
    case EVT_T_TIME:
        if (!parse_time(s, &v->v.t))
            return false;
        if (o->dbz.time_connect && (v->v.t.negative || v->v.t.hour >= 24))
            return false; /* not a time of day: Debezium's schema then has no default */
        v->kind = EVT_V_TIME;
        v->v.t.fsp = (uint8_t)c->scale;
        return true;
    default: return false;
    }
}

/* ============================================================ values */

void evt_dbz_value(evt_jw *w, const evt_codec_opts *o, const evt_column *c, const evt_value *v, bool snapshot,
                   tb_error *err)
{
    const evt_dbz_opts *d = &o->dbz;
    char tmp[64];
    switch (v->kind) {
    case EVT_V_ABSENT:
    case EVT_V_NULL: evt_jw_null(w); return;
    case EVT_V_INT:
        if (c->type == EVT_T_BIGINT && c->is_unsigned && d->bigint_precise)
            put_unsigned_decimal(w, (uint64_t)v->v.i);
        else if (c->type == EVT_T_BIT)
            goto bits;
        else
            evt_jw_int(w, v->v.i);
        return;
    case EVT_V_UINT:
        if (c->type == EVT_T_BIT)
            goto bits;
        if (c->type == EVT_T_BIGINT && d->bigint_precise)
            put_unsigned_decimal(w, v->v.u);
        else if (c->type == EVT_T_BIGINT)
            evt_jw_int(w, (int64_t)v->v.u); /* long mode: Debezium's wrap */
        else
            evt_jw_uint(w, v->v.u);
        return;
    case EVT_V_FLOAT: {
        float f = v->v.f;
        int fd = evt_dbz_float_scale(c);
        if (fd >= 0) { /* FLOAT(M,D): a double; the snapshot's text has D decimals */
            if (!isfinite(f)) {
                evt_jw_null(w);
                return;
            }
            if (snapshot) {
                char ftxt[352]; /* %f of any double with at most 31 decimals */
                snprintf(ftxt, sizeof(ftxt), "%.*f", fd & 31, (double)f);
                f = strtof(ftxt, NULL);
            }
            evt_jw_double(w, (double)f);
            return;
        }
        if (snapshot && isfinite(f)) { /* the server's 6-digit text, read back */
            snprintf(tmp, sizeof(tmp), "%.6g", (double)f);
            f = strtof(tmp, NULL);
        }
        if (!isfinite(f))
            evt_jw_null(w);
        else
            evt_jw_float(w, f);
        return;
    }
    case EVT_V_DOUBLE:
        if (!isfinite(v->v.d))
            evt_jw_null(w);
        else
            evt_jw_double(w, v->v.d);
        return;
    case EVT_V_BOOL: evt_jw_bool(w, v->v.b); return;
    case EVT_V_DECIMAL:
        if (d->decimal == EVT_DBZ_DEC_STRING)
            evt_jw_str(w, v->v.s.ptr, v->v.s.len);
        else if (d->decimal == EVT_DBZ_DEC_DOUBLE) {
            size_t n = v->v.s.len < sizeof(tmp) - 1 ? v->v.s.len : sizeof(tmp) - 1;
            memcpy(tmp, v->v.s.ptr, n);
            tmp[n] = '\0';
            evt_jw_double(w, strtod(tmp, NULL));
        } else {
            uint8_t out[DBZ_DEC_BYTES + 1];
            const uint8_t *p;
            size_t n;
            if (!decimal_bytes(v->v.s.ptr, v->v.s.len, c->scale, out, &p, &n)) {
                tb_error_set(err, TB_ERR_INVALID, false, "not a decimal: %.*s", (int)(v->v.s.len > 80 ? 80 : v->v.s.len),
                             v->v.s.ptr);
                evt_jw_fail(w, TB_ERR_INVALID);
                return;
            }
            evt_jw_base64(w, p, n);
        }
        return;
    case EVT_V_STRING: evt_jw_str(w, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_JSON: evt_jw_str(w, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_BYTES: put_binary(w, d, (const uint8_t *)v->v.s.ptr, v->v.s.len); return;
    case EVT_V_DATE:
        if (zero_date(&v->v.t))
            c->nullable ? evt_jw_null(w) : evt_jw_int(w, 0);
        else
            evt_jw_int(w, evt_dbz_days(v->v.t.year, v->v.t.month, v->v.t.day));
        return;
    case EVT_V_DATETIME: {
        if (zero_date(&v->v.t)) {
            c->nullable ? evt_jw_null(w) : evt_jw_int(w, 0);
            return;
        }
        int64_t us = epoch_us(&v->v.t);
        unsigned fsp = c->scale ? c->scale : v->v.t.fsp;
        if (d->time_connect || fsp <= 3)
            evt_jw_int(w, floor_div(us, 1000));
        else
            evt_jw_int(w, us);
        return;
    }
    case EVT_V_TIMESTAMP:
        if (zero_date(&v->v.t)) {
            if (c->nullable)
                evt_jw_null(w);
            else
                evt_jw_str(w, "1970-01-01T00:00:00Z", 20);
            return;
        }
        put_zoned(w, &v->v.t, snapshot);
        return;
    case EVT_V_TIME: {
        const evt_temporal *t = &v->v.t;
        int64_t us = ((int64_t)t->hour * 3600 + (int64_t)t->minute * 60 + t->second) * 1000000 + (int64_t)t->usec;
        if (t->negative)
            us = -us;
        if (!d->time_connect)
            evt_jw_int(w, us);
        else if (us < 0 || us >= INT64_C(86400000000))
            evt_jw_null(w); /* not a time of day: Debezium logs a WARN and writes null */
        else
            evt_jw_int(w, us / 1000);
        return;
    }
    case EVT_V_SET: {
        tb_buf j;
        tb_buf_init(&j, 0);
        tb_code rc = TB_OK;
        for (size_t k = 0; k < v->v.set.n && rc == TB_OK; k++) {
            if (k)
                rc = tb_buf_putc(&j, ',');
            if (rc == TB_OK)
                rc = tb_buf_append(&j, v->v.set.items[k], v->v.set.lens[k]);
        }
        if (rc != TB_OK)
            evt_jw_fail(w, rc);
        else
            evt_jw_str(w, j.data ? j.data : "", j.len);
        tb_buf_free(&j);
        return;
    }
    case EVT_V_GEOMETRY: {
        double x, y;
        bool point = evt_dbz_is_point(c);
        if (point && !wkb_point(v->v.geo.wkb, v->v.geo.len, &x, &y)) {
            tb_error_set(err, TB_ERR_INVALID, false, "column %s: a POINT value that is not a 2D point (%zu bytes of WKB)",
                         c->name, v->v.geo.len);
            evt_jw_fail(w, TB_ERR_INVALID);
            return;
        }
        evt_jw_obj_begin(w);
        if (point) {
            EVT_JW_KEY(w, "x");
            evt_jw_double(w, x);
            EVT_JW_KEY(w, "y");
            evt_jw_double(w, y);
        }
        EVT_JW_KEY(w, "wkb");
        evt_jw_base64(w, v->v.geo.wkb, v->v.geo.len);
        EVT_JW_KEY(w, "srid");
        if (v->v.geo.srid)
            evt_jw_uint(w, v->v.geo.srid);
        else
            evt_jw_null(w); /* Debezium: SRID 0 is unset */
        evt_jw_obj_end(w);
        return;
    }
    case EVT_V_VECTOR:
        evt_jw_arr_begin(w);
        for (size_t k = 0; k < v->v.vec.n; k++)
            isfinite(v->v.vec.items[k]) ? evt_jw_float(w, v->v.vec.items[k]) : evt_jw_null(w);
        evt_jw_arr_end(w);
        return;
    }
    evt_jw_fail(w, TB_ERR_INVALID);
    return;
bits: {
    uint64_t u = v->kind == EVT_V_UINT ? v->v.u : (uint64_t)v->v.i;
    size_t nb = c->length ? (c->length + 7) / 8 : 8;
    if (c->length == 1) {
        evt_jw_bool(w, u != 0);
        return;
    }
    uint8_t b[8];
    for (size_t k = 0; k < nb && k < 8; k++)
        b[k] = (uint8_t)(u >> (8 * k));
    evt_jw_base64(w, b, nb > 8 ? 8 : nb);
}
}
