/*
 * snap_values: result values of the binary protocol -> evt values.
 * See snap_values.h; this is the one place of snapshot/ that converts values.
 *
 * Mapping (DESIGN 5), per evt type of the column:
 *   integer types, YEAR   LONGLONG (signed or unsigned per column)  -> int/uint
 *   FLOAT / DOUBLE        the server's float/double bits            -> float/double
 *   DECIMAL               the server's text, exactly `scale` digits -> decimal
 *   CHAR/VARCHAR/TEXT/ENUM UTF-8 text (utf8mb4 results)             -> string
 *   BINARY/VARBINARY/BLOB bytes                                     -> bytes
 *   DATE/DATETIME/TIMESTAMP/TIME MYSQL_TIME (TIME: days folded into hours,
 *                         TIMESTAMP in UTC by the session time zone)-> temporal, fsp = column scale
 *   SET                   "a,b" split at commas (labels cannot hold commas) -> set
 *   BIT                   big-endian bytes: BIT(1) -> bool, else uint
 *   JSON (MySQL)          text                                      -> json
 *   GEOMETRY              internal format: SRID (4 bytes LE) + WKB  -> geometry
 *   VECTOR                float32 little-endian array               -> vector
 */
#include "snap_values.h"

#include "evt_mysql.h"

#include <stdlib.h>
#include <string.h>

tb_code snap_colbuf_bind(snap_colbuf *cb, MYSQL_BIND *b, const evt_column *col, tb_error *err)
{
    memset(cb, 0, sizeof(*cb));
    memset(b, 0, sizeof(*b));
    b->is_null = &cb->is_null;
    b->length = &cb->len;
    b->error = &cb->error;
    switch (col->type) {
    case EVT_T_TINYINT: case EVT_T_SMALLINT: case EVT_T_MEDIUMINT: case EVT_T_INT: case EVT_T_BIGINT:
    case EVT_T_YEAR:
        cb->as = SNAP_AS_INT;
        b->buffer_type = MYSQL_TYPE_LONGLONG;
        b->buffer = &cb->n.i;
        b->is_unsigned = col->is_unsigned;
        return TB_OK;
    case EVT_T_FLOAT:
        cb->as = SNAP_AS_FLOAT;
        b->buffer_type = MYSQL_TYPE_FLOAT;
        b->buffer = &cb->n.f;
        return TB_OK;
    case EVT_T_DOUBLE:
        cb->as = SNAP_AS_DOUBLE;
        b->buffer_type = MYSQL_TYPE_DOUBLE;
        b->buffer = &cb->n.d;
        return TB_OK;
    case EVT_T_DATE: case EVT_T_DATETIME: case EVT_T_TIMESTAMP: case EVT_T_TIME:
        cb->as = SNAP_AS_TIME;
        b->buffer_type = col->type == EVT_T_DATE ? MYSQL_TYPE_DATE
                         : col->type == EVT_T_TIME ? MYSQL_TYPE_TIME
                         : col->type == EVT_T_TIMESTAMP ? MYSQL_TYPE_TIMESTAMP
                                                        : MYSQL_TYPE_DATETIME;
        b->buffer = &cb->n.tm;
        b->buffer_length = sizeof(cb->n.tm);
        return TB_OK;
    default:
        cb->as = SNAP_AS_BYTES;
        cb->cap = 256;
        cb->buf = malloc(cb->cap);
        if (!cb->buf)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory (column %s)", col->name);
        b->buffer_type = MYSQL_TYPE_BLOB;
        b->buffer = cb->buf;
        b->buffer_length = cb->cap;
        return TB_OK;
    }
}

void snap_colbuf_free(snap_colbuf *cb)
{
    if (!cb)
        return;
    free(cb->buf);
    cb->buf = NULL;
    cb->cap = 0;
}

tb_code snap_colbuf_grow(snap_colbuf *cb, MYSQL_BIND *b, tb_error *err)
{
    unsigned long want = cb->len + 1;
    if (want <= cb->cap)
        return TB_OK;
    unsigned long cap = cb->cap ? cb->cap : 256;
    while (cap < want)
        cap *= 2;
    char *p = realloc(cb->buf, cap);
    if (!p)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory (value of %lu bytes)", cb->len);
    cb->buf = p;
    cb->cap = cap;
    b->buffer = p;
    b->buffer_length = cap;
    return TB_OK;
}

static void set_temporal(evt_event *ev, size_t ci, const evt_column *col, const MYSQL_TIME *tm)
{
    evt_temporal t;
    memset(&t, 0, sizeof(t));
    evt_kind kind = col->type == EVT_T_DATE ? EVT_V_DATE
                    : col->type == EVT_T_TIME ? EVT_V_TIME
                    : col->type == EVT_T_TIMESTAMP ? EVT_V_TIMESTAMP
                                                   : EVT_V_DATETIME;
    t.fsp = (uint8_t)(col->scale > 6 ? 6 : col->scale);
    t.usec = (uint32_t)tm->second_part;
    t.minute = (uint8_t)tm->minute;
    t.second = (uint8_t)tm->second;
    if (kind == EVT_V_TIME) {
        t.hour = tm->hour + tm->day * 24; /* days folded into hours (TIME over 24 h) */
        t.negative = tm->neg != 0;
    } else {
        t.year = (int32_t)tm->year;
        t.month = (uint8_t)tm->month;
        t.day = (uint8_t)tm->day;
        t.hour = tm->hour;
    }
    if (kind == EVT_V_DATE)
        t.fsp = 0;
    evt_set_temporal(ev, EVT_AFTER, ci, kind, &t);
}

static void set_set(evt_event *ev, size_t ci, const char *s, size_t len)
{
    const char *items[64] = {0};
    size_t lens[64] = {0};
    size_t n = 0;
    size_t start = 0;
    if (len == 0) {
        evt_set_set(ev, EVT_AFTER, ci, items, lens, 0);
        return;
    }
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == ',') {
            if (n == 64) {
                evt_event_fail(ev, TB_ERR_CORRUPT, "SET value with more than 64 members");
                return;
            }
            items[n] = s + start;
            lens[n] = i - start;
            n++;
            start = i + 1;
        }
    }
    evt_set_set(ev, EVT_AFTER, ci, items, lens, n);
}

void snap_value_set(evt_event *ev, size_t ci, const evt_column *col, const snap_colbuf *cb)
{
    if (cb->is_null) {
        evt_set_null(ev, EVT_AFTER, ci);
        return;
    }
    switch (cb->as) {
    case SNAP_AS_INT:
        if (col->is_unsigned)
            evt_set_uint(ev, EVT_AFTER, ci, (uint64_t)cb->n.i);
        else
            evt_set_int(ev, EVT_AFTER, ci, (int64_t)cb->n.i);
        return;
    case SNAP_AS_FLOAT:
        evt_set_float(ev, EVT_AFTER, ci, cb->n.f);
        return;
    case SNAP_AS_DOUBLE:
        evt_set_double(ev, EVT_AFTER, ci, cb->n.d);
        return;
    case SNAP_AS_TIME:
        set_temporal(ev, ci, col, &cb->n.tm);
        return;
    case SNAP_AS_BYTES:
        break;
    }
    const char *s = cb->buf;
    size_t len = cb->len;
    switch (col->type) {
    case EVT_T_DECIMAL:
        evt_set_decimal(ev, EVT_AFTER, ci, s, len);
        return;
    case EVT_T_BINARY: case EVT_T_VARBINARY: case EVT_T_BLOB:
        evt_set_bytes(ev, EVT_AFTER, ci, s, len);
        return;
    case EVT_T_SET:
        set_set(ev, ci, s, len);
        return;
    case EVT_T_BIT: {
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++)
            v = (v << 8) | (unsigned char)s[i];
        if (col->length == 1)
            evt_set_bool(ev, EVT_AFTER, ci, v != 0);
        else
            evt_set_uint(ev, EVT_AFTER, ci, v);
        return;
    }
    case EVT_T_JSON:
        evt_set_json(ev, EVT_AFTER, ci, s, len);
        return;
    case EVT_T_GEOMETRY: {
        if (len < 4) {
            evt_event_fail(ev, TB_ERR_CORRUPT, "column %s: geometry value of %zu bytes", col->name, len);
            return;
        }
        const unsigned char *u = (const unsigned char *)s;
        uint32_t srid = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
        evt_set_geometry(ev, EVT_AFTER, ci, srid, u + 4, len - 4);
        return;
    }
    case EVT_T_VECTOR: {
        size_t n = len / 4;
        float stackv[256] = {0};
        float *items = n <= 256 ? stackv : malloc(n * sizeof(float));
        if (!items) {
            evt_event_fail(ev, TB_ERR_NOMEM, "column %s: out of memory", col->name);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            const unsigned char *u = (const unsigned char *)s + 4 * i;
            uint32_t bits = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
            memcpy(&items[i], &bits, 4);
        }
        evt_set_vector(ev, EVT_AFTER, ci, items, n);
        if (items != stackv)
            free(items);
        return;
    }
    default:
        /* CHAR, VARCHAR, TEXT, ENUM and anything unknown: UTF-8 text. A text
         * column whose charset is "binary" is bytes. */
        /* (the first letter first: this runs for every value, the lookup scans a table of names) */
        if (col->charset && col->charset[0] == 'b' && evt_mysql_charset_kind(col->charset) == EVT_CS_BINARY)
            evt_set_bytes(ev, EVT_AFTER, ci, s, len);
        else
            evt_set_string(ev, EVT_AFTER, ci, s, len);
        return;
    }
}
