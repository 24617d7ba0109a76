/*
 * evt_mysql: MySQL/MariaDB value helpers (see evt_mysql.h).
 *
 * DECIMAL binary form (NEWDECIMAL, MySQL's decimal2bin): the digits are
 * grouped by 9 from the decimal point outwards; a full group is stored as a
 * 4-byte big-endian integer, a partial group of d digits in dig2bytes[d]
 * bytes. Integer part first (its partial group leads), then the fraction
 * (its partial group trails). The first bit is flipped (set = positive); a
 * negative number has every byte inverted.
 *
 * Temporal binary forms (MySQL 5.6+, also written by MariaDB):
 *  DATETIME2: 5 bytes big-endian, minus 0x8000000000: 1 bit sign, 17 bits
 *    year*13+month, 5 bits day, 5 bits hour, 6 bits minute, 6 bits second;
 *    then the fraction in (fsp+1)/2 bytes big-endian (units 10^-fsp rounded
 *    to pairs of digits).
 *  TIME2: 3 bytes big-endian minus 0x800000: sign, 1 bit unused, 10 bits
 *    hour, 6 bits minute, 6 bits second; then the fraction as above; fsp 5-6
 *    read as one 6-byte integer minus 0x800000000000 (packed time).
 *  TIMESTAMP2: 4 bytes big-endian seconds since the epoch (UTC), then the
 *    fraction as above.
 */
#include "tb_cast.h"
#include "evt_mysql.h"

#include <arpa/inet.h>
#include <errno.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ charsets */

enum {
    CS_NONE = 0, CS_ARMSCII8, CS_ASCII, CS_BIG5, CS_BINARY, CS_CP1250, CS_CP1251, CS_CP1256, CS_CP1257,
    CS_CP850, CS_CP852, CS_CP866, CS_CP932, CS_DEC8, CS_EUCJPMS, CS_EUCKR, CS_FILENAME, CS_GB18030,
    CS_GB2312, CS_GBK, CS_GEOSTD8, CS_GREEK, CS_HEBREW, CS_HP8, CS_KEYBCS2, CS_KOI8R, CS_KOI8U,
    CS_LATIN1, CS_LATIN2, CS_LATIN5, CS_LATIN7, CS_MACCE, CS_MACROMAN, CS_SJIS, CS_SWE7, CS_TIS620,
    CS_UCS2, CS_UJIS, CS_UTF16, CS_UTF16LE, CS_UTF32, CS_UTF8MB3, CS_UTF8MB4, CS_COUNT
};

typedef struct cs_info {
    const char *name;
    const char *iconv;
} cs_info;

static const cs_info cs_table[CS_COUNT] = {
    [CS_NONE] = {NULL, NULL},
    [CS_ARMSCII8] = {"armscii8", "ARMSCII-8"}, [CS_ASCII] = {"ascii", NULL},
    [CS_BIG5] = {"big5", "BIG5"}, [CS_BINARY] = {"binary", NULL},
    [CS_CP1250] = {"cp1250", "CP1250"}, [CS_CP1251] = {"cp1251", "CP1251"},
    [CS_CP1256] = {"cp1256", "CP1256"}, [CS_CP1257] = {"cp1257", "CP1257"},
    [CS_CP850] = {"cp850", "CP850"}, [CS_CP852] = {"cp852", "CP852"}, [CS_CP866] = {"cp866", "CP866"},
    [CS_CP932] = {"cp932", "CP932"}, [CS_DEC8] = {"dec8", "DEC-MCS"}, [CS_EUCJPMS] = {"eucjpms", "EUC-JP-MS"},
    [CS_EUCKR] = {"euckr", "EUC-KR"}, [CS_FILENAME] = {"filename", NULL},
    [CS_GB18030] = {"gb18030", "GB18030"}, [CS_GB2312] = {"gb2312", "GB2312"}, [CS_GBK] = {"gbk", "GBK"},
    [CS_GEOSTD8] = {"geostd8", "GEORGIAN-PS"}, [CS_GREEK] = {"greek", "ISO-8859-7"},
    [CS_HEBREW] = {"hebrew", "ISO-8859-8"}, [CS_HP8] = {"hp8", "HP-ROMAN8"},
    [CS_KEYBCS2] = {"keybcs2", "CP895"}, [CS_KOI8R] = {"koi8r", "KOI8-R"}, [CS_KOI8U] = {"koi8u", "KOI8-U"},
    [CS_LATIN1] = {"latin1", NULL}, [CS_LATIN2] = {"latin2", "ISO-8859-2"},
    [CS_LATIN5] = {"latin5", "ISO-8859-9"}, [CS_LATIN7] = {"latin7", "ISO-8859-13"},
    [CS_MACCE] = {"macce", "MAC-CENTRALEUROPE"}, [CS_MACROMAN] = {"macroman", "MACINTOSH"},
    [CS_SJIS] = {"sjis", "SHIFT_JIS"}, [CS_SWE7] = {"swe7", "SEN_850200_B"}, [CS_TIS620] = {"tis620", "TIS-620"},
    [CS_UCS2] = {"ucs2", "UCS-2BE"}, [CS_UJIS] = {"ujis", "EUC-JP"}, [CS_UTF16] = {"utf16", "UTF-16BE"},
    [CS_UTF16LE] = {"utf16le", "UTF-16LE"}, [CS_UTF32] = {"utf32", "UTF-32BE"},
    [CS_UTF8MB3] = {"utf8mb3", NULL}, [CS_UTF8MB4] = {"utf8mb4", NULL},
};

/* Collation id ranges -> charset: the ids MariaDB Connector/C 3.3 and MySQL 8
 * know (generated once from mariadb_get_charset_by_nr over 1..2100). */
typedef struct cs_range {
    uint16_t first, last;
    uint8_t cs;
} cs_range;

static const cs_range cs_ranges[] = {
#include "evt_mysql_collations.inc"
};

const char *evt_mysql_collation_charset(uint32_t id)
{
    size_t lo = 0, hi = sizeof(cs_ranges) / sizeof(cs_ranges[0]);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (id < cs_ranges[mid].first)
            hi = mid;
        else if (id > cs_ranges[mid].last)
            lo = mid + 1;
        else
            return cs_table[cs_ranges[mid].cs].name;
    }
    /* MySQL 8 utf8mb4 collations past the table, MariaDB 10.10+ uca1400 ids */
    if (id >= 255 && id <= 323)
        return "utf8mb4";
    return NULL;
}

static int cs_index(const char *charset)
{
    if (!charset)
        return CS_NONE;
    if (strcmp(charset, "utf8") == 0)
        return CS_UTF8MB3;
    for (int i = 1; i < CS_COUNT; i++)
        if (strcmp(cs_table[i].name, charset) == 0)
            return i;
    return CS_NONE;
}

evt_my_charset_kind evt_mysql_charset_kind(const char *charset)
{
    int i = cs_index(charset);
    switch (i) {
    case CS_NONE: return EVT_CS_UNKNOWN;
    case CS_UTF8MB3: case CS_UTF8MB4: case CS_ASCII: case CS_FILENAME: return EVT_CS_UTF8;
    case CS_LATIN1: return EVT_CS_LATIN1;
    case CS_BINARY: return EVT_CS_BINARY;
    default: return EVT_CS_ICONV;
    }
}

const char *evt_mysql_charset_static(const char *charset)
{
    return cs_table[cs_index(charset)].name;
}

unsigned evt_mysql_charset_mbmaxlen(const char *charset)
{
    switch (cs_index(charset)) {
    case CS_UTF8MB4: case CS_UTF16: case CS_UTF16LE: case CS_UTF32: case CS_GB18030: return 4;
    case CS_UTF8MB3: case CS_UJIS: case CS_EUCJPMS: return 3;
    case CS_UCS2: case CS_BIG5: case CS_CP932: case CS_EUCKR: case CS_GB2312: case CS_GBK: case CS_SJIS: return 2;
    default: return 1;
    }
}

/* MySQL's latin1 is cp1252 with 0x81, 0x8D, 0x8F, 0x90, 0x9D mapped to the C1 controls. */
static const uint16_t latin1_hi[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
};

static tb_code latin1_to_utf8(const uint8_t *in, size_t len, tb_buf *out)
{
    tb_code rc = tb_buf_reserve(out, len * 3);
    if (rc != TB_OK)
        return rc;
    char *p = out->data + out->len;
    for (size_t i = 0; i < len; i++) {
        uint32_t c = in[i];
        if (c < 0x80) {
            *p++ = (char)c;
            continue;
        }
        if (c < 0xA0)
            c = latin1_hi[c - 0x80];
        if (c < 0x800) {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else {
            *p++ = (char)(0xE0 | (c >> 12));
            *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *p++ = (char)(0x80 | (c & 0x3F));
        }
    }
    out->len = (size_t)(p - out->data);
    out->data[out->len] = '\0';
    return TB_OK;
}

struct evt_mysql_conv {
    iconv_t cd[CS_COUNT];
    bool opened[CS_COUNT];
};

evt_mysql_conv *evt_mysql_conv_new(void)
{
    return calloc(1, sizeof(evt_mysql_conv));
}

void evt_mysql_conv_free(evt_mysql_conv *c)
{
    if (!c)
        return;
    for (int i = 0; i < CS_COUNT; i++)
        if (c->opened[i] && c->cd[i] != (iconv_t)-1)
            iconv_close(c->cd[i]);
    free(c);
}

static tb_code iconv_to_utf8(evt_mysql_conv *c, int cs, const char *in, size_t len, tb_buf *out)
{
    if (!c->opened[cs]) {
        c->cd[cs] = iconv_open("UTF-8", cs_table[cs].iconv);
        c->opened[cs] = true;
    }
    if (c->cd[cs] == (iconv_t)-1) /* charset unknown to iconv: keep the bytes */
        return len ? tb_buf_append(out, in, len) : tb_buf_reserve(out, 1);
    iconv(c->cd[cs], NULL, NULL, NULL, NULL);
    char *src = TB_UNCONST(in); /* iconv reads its input only */
    size_t left = len;
    while (left > 0) {
        tb_code rc = tb_buf_reserve(out, left * 4 + 8);
        if (rc != TB_OK)
            return rc;
        char *dst = out->data + out->len;
        size_t room = out->cap - out->len - 1;
        size_t before = room;
        size_t r = iconv(c->cd[cs], &src, &left, &dst, &room);
        out->len += before - room;
        out->data[out->len] = '\0';
        if (r == (size_t)-1 && errno != E2BIG) {
            /* invalid or incomplete sequence: keep the byte as is */
            rc = tb_buf_append(out, src, 1);
            if (rc != TB_OK)
                return rc;
            src++;
            left--;
            iconv(c->cd[cs], NULL, NULL, NULL, NULL);
        }
    }
    return TB_OK;
}

tb_code evt_mysql_to_utf8(evt_mysql_conv *c, const char *charset, const char *in, size_t len, tb_buf *out)
{
    int cs = cs_index(charset);
    if (cs == CS_LATIN1)
        return latin1_to_utf8((const uint8_t *)in, len, out);
    if (cs_table[cs].iconv && c)
        return iconv_to_utf8(c, cs, in, len, out);
    if (len == 0)
        return tb_buf_reserve(out, 1);
    return tb_buf_append(out, in, len);
}

/* ================================================================ DECIMAL */

static const uint8_t dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

size_t evt_mysql_decimal_bin_size(unsigned precision, unsigned scale)
{
    if (precision == 0 || precision > 65 || scale > 30 || scale > precision)
        return 0;
    unsigned intg = precision - scale;
    return (intg / 9) * 4 + dig2bytes[intg % 9] + (scale / 9) * 4 + dig2bytes[scale % 9];
}

/* The group that holds the first byte: that byte with its sign bit flipped. */
static uint32_t be_read_first(const uint8_t *p, uint8_t first, unsigned n, uint8_t mask)
{
    uint32_t v = (uint8_t)(first ^ mask);
    for (unsigned i = 1; i < n; i++)
        v = (v << 8) | (uint8_t)(p[i] ^ mask);
    return v;
}

static uint32_t be_read(const uint8_t *p, unsigned n, uint8_t mask)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | (uint8_t)(p[i] ^ mask);
    return v;
}

/* n digits of v, zero-padded, at o. */
static void put_digits(char *o, uint32_t v, unsigned n)
{
    for (unsigned i = n; i > 0; i--) {
        o[i - 1] = (char)('0' + v % 10);
        v /= 10;
    }
}

static const uint32_t pow10_tab[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
                                       1000000000};

size_t evt_mysql_decimal_text(const uint8_t *bin, size_t len, unsigned precision, unsigned scale,
                              char *out, size_t out_size)
{
    size_t size = evt_mysql_decimal_bin_size(precision, scale);
    if (size == 0 || len < size || out_size < precision + 4)
        return 0;
    bool negative = (bin[0] & 0x80) == 0;
    uint8_t mask = negative ? 0xFF : 0x00;
    uint8_t first = (uint8_t)(bin[0] ^ 0x80); /* the sign bit, flipped */
    unsigned intg = precision - scale;
    unsigned intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
    size_t p = 0;
    char digits[80];
    size_t nd = 0;
    /* integer digits */
    if (intg0x) {
        unsigned n = dig2bytes[intg0x];
        uint32_t v = p == 0 ? be_read_first(bin, first, n, mask) : be_read(bin + p, n, mask);
        p += n;
        if (v >= pow10_tab[intg0x])
            return 0;
        put_digits(digits + nd, v, intg0x);
        nd += intg0x;
    }
    for (unsigned i = 0; i < intg0; i++) {
        uint32_t v = p == 0 ? be_read_first(bin, first, 4, mask) : be_read(bin + p, 4, mask);
        p += 4;
        if (v > 999999999u)
            return 0;
        put_digits(digits + nd, v, 9);
        nd += 9;
    }
    size_t skip = 0, o = 0;
    while (skip < nd && digits[skip] == '0')
        skip++;
    if (negative)
        out[o++] = '-';
    if (skip == nd) {
        out[o++] = '0';
    } else {
        memcpy(out + o, digits + skip, nd - skip);
        o += nd - skip;
    }
    if (scale > 0) {
        out[o++] = '.';
        for (unsigned i = 0; i < frac0; i++) {
            uint32_t v = p == 0 ? be_read_first(bin, first, 4, mask) : be_read(bin + p, 4, mask);
            p += 4;
            if (v > 999999999u)
                return 0;
            put_digits(out + o, v, 9);
            o += 9;
        }
        if (frac0x) {
            unsigned n = dig2bytes[frac0x];
            uint32_t v = p == 0 ? be_read_first(bin, first, n, mask) : be_read(bin + p, n, mask);
            if (v >= pow10_tab[frac0x])
                return 0;
            put_digits(out + o, v, frac0x);
            o += frac0x;
        }
    }
    out[o] = '\0';
    return o;
}

/* ================================================================ temporals */

void evt_mysql_date_from_u24(uint32_t v, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    t->day = (uint8_t)(v & 31);
    t->month = (uint8_t)((v >> 5) & 15);
    t->year = (int32_t)(v >> 9);
}

void evt_mysql_time_from_i24(int32_t v, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    if (v < 0) {
        t->negative = true;
        v = -v;
    }
    t->hour = (uint32_t)(v / 10000);
    t->minute = (uint8_t)((v / 100) % 100);
    t->second = (uint8_t)(v % 100);
}

void evt_mysql_datetime_from_u64(uint64_t v, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    uint64_t d = v / 1000000, tm = v % 1000000;
    t->year = (int32_t)(d / 10000);
    t->month = (uint8_t)((d / 100) % 100);
    t->day = (uint8_t)(d % 100);
    t->hour = (uint32_t)(tm / 10000);
    t->minute = (uint8_t)((tm / 100) % 100);
    t->second = (uint8_t)(tm % 100);
}

void evt_mysql_timestamp_from_epoch(int64_t sec, uint32_t usec, unsigned fsp, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    t->fsp = (uint8_t)(fsp > 6 ? 6 : fsp);
    t->usec = usec;
    if (sec == 0 && usec == 0) { /* the zero timestamp prints as 0000-00-00 00:00:00 */
        return;
    }
    /* days from civil (Howard Hinnant's algorithm, public domain) */
    int64_t days = sec / 86400, rem = sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2)
        y++;
    t->year = (int32_t)y;
    t->month = (uint8_t)m;
    t->day = (uint8_t)d;
    t->hour = (uint32_t)(rem / 3600);
    t->minute = (uint8_t)((rem / 60) % 60);
    t->second = (uint8_t)(rem % 60);
}

size_t evt_mysql_temporal2_size(int binlog_type, unsigned fsp)
{
    size_t frac = (fsp > 6 ? 6 : fsp + 1) / 2;
    switch (binlog_type) {
    case EVT_MY_DATETIME2: return 5 + frac;
    case EVT_MY_TIME2: return 3 + frac;
    case EVT_MY_TIMESTAMP2: return 4 + frac;
    default: return 0;
    }
}

static uint64_t be_u(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Fraction bytes after a DATETIME2/TIMESTAMP2 int part, as microseconds. */
static uint32_t frac_usec(const uint8_t *p, unsigned fsp)
{
    switch (fsp) {
    case 1: case 2: return (uint32_t)p[0] * 10000u;
    case 3: case 4: return (uint32_t)be_u(p, 2) * 100u;
    case 5: case 6: return (uint32_t)be_u(p, 3);
    default: return 0;
    }
}

void evt_mysql_datetime2(const uint8_t *p, unsigned fsp, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    if (fsp > 6)
        fsp = 6;
    int64_t intpart = (int64_t)be_u(p, 5) - 0x8000000000LL;
    if (intpart < 0)
        intpart = -intpart; /* not produced by a server; keep the magnitude */
    uint64_t ymd = (uint64_t)intpart >> 17, hms = (uint64_t)intpart & 0x1FFFF;
    uint64_t ym = ymd >> 5;
    t->year = (int32_t)(ym / 13);
    t->month = (uint8_t)(ym % 13);
    t->day = (uint8_t)(ymd & 31);
    t->hour = (uint32_t)(hms >> 12);
    t->minute = (uint8_t)((hms >> 6) & 63);
    t->second = (uint8_t)(hms & 63);
    t->usec = frac_usec(p + 5, fsp);
    t->fsp = (uint8_t)fsp;
}

void evt_mysql_time2(const uint8_t *p, unsigned fsp, evt_temporal *t)
{
    memset(t, 0, sizeof(*t));
    if (fsp > 6)
        fsp = 6;
    int64_t packed; /* MySQL's packed time: int part << 24 | microseconds */
    int64_t intpart = (int64_t)be_u(p, 3) - 0x800000LL;
    switch (fsp) {
    case 1: case 2: {
        int64_t frac = p[3];
        if (intpart < 0 && frac) {
            intpart++;
            frac -= 0x100;
        }
        packed = intpart * (1LL << 24) + frac * 10000;
        break;
    }
    case 3: case 4: {
        int64_t frac = (int64_t)be_u(p + 3, 2);
        if (intpart < 0 && frac) {
            intpart++;
            frac -= 0x10000;
        }
        packed = intpart * (1LL << 24) + frac * 100;
        break;
    }
    case 5: case 6:
        packed = (int64_t)be_u(p, 6) - 0x800000000000LL;
        break;
    default:
        packed = intpart * (1LL << 24);
        break;
    }
    if (packed < 0) {
        t->negative = true;
        packed = -packed;
    }
    uint64_t hms = (uint64_t)packed >> 24;
    t->usec = (uint32_t)((uint64_t)packed & 0xFFFFFF);
    t->hour = (uint32_t)((hms >> 12) & 0x3FF);
    t->minute = (uint8_t)((hms >> 6) & 63);
    t->second = (uint8_t)(hms & 63);
    t->fsp = (uint8_t)fsp;
}

void evt_mysql_timestamp2(const uint8_t *p, unsigned fsp, evt_temporal *t)
{
    if (fsp > 6)
        fsp = 6;
    evt_mysql_timestamp_from_epoch((int64_t)be_u(p, 4), frac_usec(p + 4, fsp), fsp, t);
}

/* ================================================================ types */

int evt_mysql_string_real_type(uint16_t meta, uint32_t *max_len)
{
    unsigned b0 = meta >> 8, b1 = meta & 0xFF;
    int type = (int)b0;
    uint32_t len = b1;
    if (b0 != 0 && (b0 & 0x30) != 0x30) {
        len = b1 | (((b0 & 0x30) ^ 0x30) << 4);
        type = (int)(b0 | 0x30);
    }
    if (type != EVT_MY_ENUM && type != EVT_MY_SET)
        type = EVT_MY_STRING;
    if (max_len)
        *max_len = len;
    return type;
}

evt_type evt_mysql_type_of(int binlog_type, uint16_t meta, bool binary)
{
    switch (binlog_type) {
    case EVT_MY_TINY: return EVT_T_TINYINT;
    case EVT_MY_SHORT: return EVT_T_SMALLINT;
    case EVT_MY_INT24: return EVT_T_MEDIUMINT;
    case EVT_MY_LONG: return EVT_T_INT;
    case EVT_MY_LONGLONG: return EVT_T_BIGINT;
    case EVT_MY_FLOAT: return EVT_T_FLOAT;
    case EVT_MY_DOUBLE: return EVT_T_DOUBLE;
    case EVT_MY_DECIMAL: case EVT_MY_NEWDECIMAL: return EVT_T_DECIMAL;
    case EVT_MY_YEAR: return EVT_T_YEAR;
    case EVT_MY_DATE: case EVT_MY_NEWDATE: return EVT_T_DATE;
    case EVT_MY_TIME: case EVT_MY_TIME2: return EVT_T_TIME;
    case EVT_MY_DATETIME: case EVT_MY_DATETIME2: return EVT_T_DATETIME;
    case EVT_MY_TIMESTAMP: case EVT_MY_TIMESTAMP2: return EVT_T_TIMESTAMP;
    case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING: return binary ? EVT_T_VARBINARY : EVT_T_VARCHAR;
    case EVT_MY_STRING: {
        int real = evt_mysql_string_real_type(meta, NULL);
        if (real == EVT_MY_ENUM)
            return EVT_T_ENUM;
        if (real == EVT_MY_SET)
            return EVT_T_SET;
        return binary ? EVT_T_BINARY : EVT_T_CHAR;
    }
    case EVT_MY_ENUM: return EVT_T_ENUM;
    case EVT_MY_SET: return EVT_T_SET;
    case EVT_MY_TINY_BLOB: case EVT_MY_MEDIUM_BLOB: case EVT_MY_LONG_BLOB: case EVT_MY_BLOB:
        return binary ? EVT_T_BLOB : EVT_T_TEXT;
    case EVT_MY_BIT: return EVT_T_BIT;
    case EVT_MY_JSON: return EVT_T_JSON;
    case EVT_MY_GEOMETRY: return EVT_T_GEOMETRY;
    case EVT_MY_VECTOR: return EVT_T_VECTOR;
    default: return EVT_T_UNKNOWN;
    }
}

tb_code evt_mysql_source_type(int binlog_type, uint16_t meta, bool is_unsigned, bool binary, tb_buf *out)
{
    const char *u = is_unsigned ? " unsigned" : "";
    switch (binlog_type) {
    case EVT_MY_TINY: return tb_buf_printf(out, "tinyint%s", u);
    case EVT_MY_SHORT: return tb_buf_printf(out, "smallint%s", u);
    case EVT_MY_INT24: return tb_buf_printf(out, "mediumint%s", u);
    case EVT_MY_LONG: return tb_buf_printf(out, "int%s", u);
    case EVT_MY_LONGLONG: return tb_buf_printf(out, "bigint%s", u);
    case EVT_MY_FLOAT: return tb_buf_printf(out, "float%s", u);
    case EVT_MY_DOUBLE: return tb_buf_printf(out, "double%s", u);
    case EVT_MY_NEWDECIMAL: return tb_buf_printf(out, "decimal(%u,%u)%s", meta >> 8, meta & 0xFF, u);
    case EVT_MY_DECIMAL: return tb_buf_puts(out, "decimal");
    case EVT_MY_YEAR: return tb_buf_puts(out, "year");
    case EVT_MY_DATE: case EVT_MY_NEWDATE: return tb_buf_puts(out, "date");
    case EVT_MY_TIME: return tb_buf_puts(out, "time");
    case EVT_MY_DATETIME: return tb_buf_puts(out, "datetime");
    case EVT_MY_TIMESTAMP: return tb_buf_puts(out, "timestamp");
    case EVT_MY_TIME2: return meta ? tb_buf_printf(out, "time(%u)", meta) : tb_buf_puts(out, "time");
    case EVT_MY_DATETIME2: return meta ? tb_buf_printf(out, "datetime(%u)", meta) : tb_buf_puts(out, "datetime");
    case EVT_MY_TIMESTAMP2: return meta ? tb_buf_printf(out, "timestamp(%u)", meta) : tb_buf_puts(out, "timestamp");
    case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING:
        return tb_buf_printf(out, "%s(%u)", binary ? "varbinary" : "varchar", meta);
    case EVT_MY_STRING: {
        uint32_t len = 0;
        int real = evt_mysql_string_real_type(meta, &len);
        if (real == EVT_MY_ENUM)
            return tb_buf_puts(out, "enum");
        if (real == EVT_MY_SET)
            return tb_buf_puts(out, "set");
        return tb_buf_printf(out, "%s(%u)", binary ? "binary" : "char", len);
    }
    case EVT_MY_BLOB: case EVT_MY_TINY_BLOB: case EVT_MY_MEDIUM_BLOB: case EVT_MY_LONG_BLOB: {
        static const char *const blob[] = {"tinyblob", "blob", "mediumblob", "longblob"};
        static const char *const text[] = {"tinytext", "text", "mediumtext", "longtext"};
        unsigned i = (meta >= 1 && meta <= 4) ? meta - 1 : 1;
        return tb_buf_puts(out, binary ? blob[i] : text[i]);
    }
    case EVT_MY_BIT: return tb_buf_printf(out, "bit(%u)", (meta & 0xFF) * 8 + (meta >> 8));
    case EVT_MY_JSON: return tb_buf_puts(out, "json");
    case EVT_MY_GEOMETRY: return tb_buf_puts(out, "geometry");
    case EVT_MY_VECTOR: return tb_buf_puts(out, "vector");
    case EVT_MY_ENUM: return tb_buf_puts(out, "enum");
    case EVT_MY_SET: return tb_buf_puts(out, "set");
    default: return tb_buf_printf(out, "type%d", binlog_type);
    }
}

/* ------------------------------------------------------------ UUID, INET6, INET4 */

int evt_mysql_text_type(const char *source_type)
{
    if (!source_type)
        return 0;
    if (strcmp(source_type, "uuid") == 0)
        return 1;
    if (strcmp(source_type, "inet6") == 0)
        return 2;
    if (strcmp(source_type, "inet4") == 0)
        return 3;
    return 0;
}

tb_code evt_mysql_text_form(int text_type, const uint8_t *p, size_t n, tb_buf *out)
{
    size_t size = text_type == 3 ? 4 : 16;
    if (text_type < 1 || text_type > 3 || n > size)
        return TB_ERR_INVALID;
    uint8_t b[16] = {0};
    memcpy(b, p, n);
    char text[64];
    if (text_type == 1) {
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;
        for (size_t i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                text[o++] = '-';
            text[o++] = hex[b[i] >> 4];
            text[o++] = hex[b[i] & 15];
        }
        text[o] = 0;
    } else if (text_type == 2) {
        if (!inet_ntop(AF_INET6, b, text, sizeof text))
            return TB_ERR_INVALID;
    } else {
        snprintf(text, sizeof text, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
    }
    tb_buf_reset(out);
    return tb_buf_append(out, text, strlen(text));
}
