/*
 * binlog_rows: one row image of a rows event -> evt_event values.
 *
 * A row image is: a null bitmap over the columns present in the image
 * ((present + 7) / 8 bytes, LSB first), then the value of every present,
 * non-null column in table order. Cell layouts (all integers little-endian
 * unless said otherwise):
 *   TINY 1, SHORT 2, INT24 3, LONG 4, LONGLONG 8 (signedness from the map)
 *   FLOAT 4, DOUBLE 8 (IEEE 754)
 *   NEWDECIMAL  evt_mysql_decimal_bin_size(precision, scale) bytes (see evt_mysql.c)
 *   YEAR 1 (0 = 0000, else 1900 + v); DATE/NEWDATE 3 (d | m << 5 | y << 9)
 *   TIME 3 (signed [-]HHMMSS); DATETIME 8 (YYYYMMDDhhmmss); TIMESTAMP 4 (epoch seconds)
 *   TIME2/DATETIME2/TIMESTAMP2: big-endian packed forms + fraction (see evt_mysql.c)
 *   VARCHAR/VAR_STRING: length in 1 byte (max length < 256) or 2, then bytes
 *   STRING: real type ENUM: index in 1 or 2 bytes (1-based, 0 = ''); SET: bitmask
 *     in `length` bytes; else like VARCHAR with the max length from the metadata
 *     (BINARY(n) comes without its trailing 0x00 padding; we put it back)
 *   BLOB/TEXT, JSON, GEOMETRY, VECTOR: length in `meta` (1..4) bytes, then bytes;
 *     GEOMETRY = 4-byte SRID + WKB; JSON = MySQL binary JSON; VECTOR = float32s
 *   BIT: (bits + 7) / 8 bytes big-endian
 * PARTIAL_UPDATE_ROWS after images: a JSON column whose partial bit is set
 * holds a diff list (binlog_json.c) to apply to the before image's value.
 */
#include "binlog_int.h"
#include "tb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bl_rowctx_init(bl_rowctx *c)
{
    memset(c, 0, sizeof(*c));
    tb_buf_init(&c->scratch, 0);
    tb_buf_init(&c->json, 0);
    tb_buf_init(&c->json2, 0);
}

void bl_rowctx_free(bl_rowctx *c)
{
    if (!c)
        return;
    evt_mysql_conv_free(c->conv);
    tb_buf_free(&c->scratch);
    tb_buf_free(&c->json);
    tb_buf_free(&c->json2);
    free(c->labels);
    free(c->lens);
    free(c->vec);
    free(c->jraw);
    free(c->jraw_len);
    memset(c, 0, sizeof(*c));
}

#define COLERR(code, ...)                                                                                   \
    do {                                                                                                    \
        char m_[256];                                                                                       \
        snprintf(m_, sizeof(m_), __VA_ARGS__);                                                              \
        return tb_error_set(err, code, false, "table %s.%s column %s (%zu): %s", evt_table_db(m->table),   \
                            evt_table_name(m->table), evt_table_column(m->table, i)->name, i + 1, m_);     \
    } while (0)

#define NEED(n)                                                                                             \
    do {                                                                                                    \
        if ((size_t)(end - p) < (size_t)(n))                                                                \
            COLERR(TB_ERR_CORRUPT, "row image truncated (need %zu bytes, have %zu)", (size_t)(n),           \
                   (size_t)(end - p));                                                                      \
    } while (0)

static tb_code set_text(bl_rowctx *c, const bl_col *col, evt_event *e, evt_image img, size_t i,
                        const uint8_t *s, size_t len)
{
    switch (col->csk) {
    case EVT_CS_BINARY:
        evt_set_bytes(e, img, i, s, len);
        return TB_OK;
    case EVT_CS_LATIN1:
    case EVT_CS_ICONV: {
        if (col->csk == EVT_CS_ICONV && !c->conv && !(c->conv = evt_mysql_conv_new()))
            return TB_ERR_NOMEM;
        tb_buf_reset(&c->scratch);
        tb_code rc = evt_mysql_to_utf8(c->conv, col->charset, (const char *)s, len, &c->scratch);
        if (rc != TB_OK)
            return rc;
        evt_set_string(e, img, i, c->scratch.data ? c->scratch.data : "", c->scratch.len);
        return TB_OK;
    }
    default:
        evt_set_string(e, img, i, (const char *)s, len);
        return TB_OK;
    }
}

static tb_code ensure_labels(bl_rowctx *c, size_t n)
{
    if (n <= c->cap_labels)
        return TB_OK;
    const char **l = realloc(c->labels, n * sizeof(*l));
    if (!l)
        return TB_ERR_NOMEM;
    c->labels = l;
    size_t *s = realloc(c->lens, n * sizeof(*s));
    if (!s)
        return TB_ERR_NOMEM;
    c->lens = s;
    c->cap_labels = n;
    return TB_OK;
}

tb_code bl_row_decode(bl_rowctx *c, const bl_tmap *m, const uint8_t **pp, const uint8_t *end,
                      const uint8_t *present, const uint8_t *partial_bits, evt_event *e, evt_image img,
                      tb_error *err)
{
    const uint8_t *p = *pp;
    size_t npresent = 0;
    for (size_t i = 0; i < m->ncols; i++)
        npresent += (present[i / 8] >> (i % 8)) & 1;
    size_t nb = (npresent + 7) / 8;
    if ((size_t)(end - p) < nb)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "table %s.%s: row null bitmap truncated",
                            evt_table_db(m->table), evt_table_name(m->table));
    const uint8_t *nulls = p;
    p += nb;
    if (m->njson && img == EVT_BEFORE) {
        if (m->ncols > c->cap_jraw) {
            const uint8_t **jr = realloc(c->jraw, m->ncols * sizeof(*jr));
            if (!jr)
                return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            c->jraw = jr;
            size_t *jl = realloc(c->jraw_len, m->ncols * sizeof(*jl));
            if (!jl)
                return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            c->jraw_len = jl;
            c->cap_jraw = m->ncols;
        }
        memset(c->jraw, 0, m->ncols * sizeof(*c->jraw));
    }
    size_t k = 0, jsonidx = 0;
    for (size_t i = 0; i < m->ncols; i++) {
        const bl_col *col = &m->cols[i];
        bool is_json = col->type == EVT_MY_JSON;
        if (!((present[i / 8] >> (i % 8)) & 1)) {
            jsonidx += is_json;
            continue;
        }
        bool isnull = (nulls[k / 8] >> (k % 8)) & 1;
        k++;
        if (isnull) {
            evt_set_null(e, img, i);
            jsonidx += is_json;
            continue;
        }
        switch (col->type) {
        case EVT_MY_TINY:
            NEED(1);
            if (col->is_unsigned) evt_set_uint(e, img, i, p[0]);
            else evt_set_int(e, img, i, (int8_t)p[0]);
            p += 1;
            break;
        case EVT_MY_SHORT:
            NEED(2);
            if (col->is_unsigned) evt_set_uint(e, img, i, bl_u16(p));
            else evt_set_int(e, img, i, (int16_t)bl_u16(p));
            p += 2;
            break;
        case EVT_MY_INT24: {
            NEED(3);
            uint32_t v = bl_u24(p);
            if (col->is_unsigned) evt_set_uint(e, img, i, v);
            else evt_set_int(e, img, i, (v & 0x800000) ? (int32_t)(v | 0xFF000000u) : (int32_t)v);
            p += 3;
            break;
        }
        case EVT_MY_LONG:
            NEED(4);
            if (col->is_unsigned) evt_set_uint(e, img, i, bl_u32(p));
            else evt_set_int(e, img, i, (int32_t)bl_u32(p));
            p += 4;
            break;
        case EVT_MY_LONGLONG:
            NEED(8);
            if (col->is_unsigned) evt_set_uint(e, img, i, bl_u64(p));
            else evt_set_int(e, img, i, (int64_t)bl_u64(p));
            p += 8;
            break;
        case EVT_MY_FLOAT: {
            NEED(4);
            float f;
            uint32_t u = bl_u32(p);
            memcpy(&f, &u, 4);
            evt_set_float(e, img, i, f);
            p += 4;
            break;
        }
        case EVT_MY_DOUBLE: {
            NEED(8);
            double d;
            uint64_t u = bl_u64(p);
            memcpy(&d, &u, 8);
            evt_set_double(e, img, i, d);
            p += 8;
            break;
        }
        case EVT_MY_NEWDECIMAL: {
            unsigned prec = col->meta >> 8, scale = col->meta & 0xFF;
            size_t sz = evt_mysql_decimal_bin_size(prec, scale);
            if (sz == 0)
                COLERR(TB_ERR_CORRUPT, "bad DECIMAL(%u,%u)", prec, scale);
            NEED(sz);
            char txt[80];
            size_t tl = evt_mysql_decimal_text(p, sz, prec, scale, txt, sizeof(txt));
            if (tl == 0)
                COLERR(TB_ERR_CORRUPT, "malformed DECIMAL(%u,%u) value", prec, scale);
            evt_set_decimal(e, img, i, txt, tl);
            p += sz;
            break;
        }
        case EVT_MY_YEAR:
            NEED(1);
            evt_set_int(e, img, i, p[0] ? 1900 + p[0] : 0);
            p += 1;
            break;
        case EVT_MY_DATE: case EVT_MY_NEWDATE: {
            NEED(3);
            evt_temporal t;
            evt_mysql_date_from_u24(bl_u24(p), &t);
            evt_set_temporal(e, img, i, EVT_V_DATE, &t);
            p += 3;
            break;
        }
        case EVT_MY_TIME: {
            NEED(3);
            uint32_t v = bl_u24(p);
            evt_temporal t;
            evt_mysql_time_from_i24((v & 0x800000) ? (int32_t)(v | 0xFF000000u) : (int32_t)v, &t);
            evt_set_temporal(e, img, i, EVT_V_TIME, &t);
            p += 3;
            break;
        }
        case EVT_MY_DATETIME: {
            NEED(8);
            evt_temporal t;
            evt_mysql_datetime_from_u64(bl_u64(p), &t);
            evt_set_temporal(e, img, i, EVT_V_DATETIME, &t);
            p += 8;
            break;
        }
        case EVT_MY_TIMESTAMP: {
            NEED(4);
            evt_temporal t;
            evt_mysql_timestamp_from_epoch(bl_u32(p), 0, 0, &t);
            evt_set_temporal(e, img, i, EVT_V_TIMESTAMP, &t);
            p += 4;
            break;
        }
        case EVT_MY_TIME2: case EVT_MY_DATETIME2: case EVT_MY_TIMESTAMP2: {
            unsigned fsp = col->meta > 6 ? 6 : col->meta;
            size_t sz = evt_mysql_temporal2_size(col->type, fsp);
            NEED(sz);
            evt_temporal t;
            if (col->type == EVT_MY_TIME2) {
                evt_mysql_time2(p, fsp, &t);
                evt_set_temporal(e, img, i, EVT_V_TIME, &t);
            } else if (col->type == EVT_MY_DATETIME2) {
                evt_mysql_datetime2(p, fsp, &t);
                evt_set_temporal(e, img, i, EVT_V_DATETIME, &t);
            } else {
                evt_mysql_timestamp2(p, fsp, &t);
                evt_set_temporal(e, img, i, EVT_V_TIMESTAMP, &t);
            }
            p += sz;
            break;
        }
        case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING: case EVT_MY_STRING: case EVT_MY_ENUM: case EVT_MY_SET: {
            if (col->real == EVT_MY_ENUM) {
                unsigned n = col->max_len == 2 ? 2 : 1;
                NEED(n);
                unsigned idx = n == 2 ? bl_u16(p) : p[0];
                p += n;
                const evt_column *ec = evt_table_column(m->table, i);
                if (ec->labels && idx >= 1 && idx <= ec->nlabels)
                    evt_set_string(e, img, i, ec->labels[idx - 1], strlen(ec->labels[idx - 1]));
                else if (ec->labels || idx == 0)
                    evt_set_string(e, img, i, "", 0); /* invalid value stored as '' */
                else
                    evt_set_uint(e, img, i, idx); /* labels unknown (no FULL metadata) */
                break;
            }
            if (col->real == EVT_MY_SET) {
                unsigned n = col->max_len ? col->max_len : 1;
                if (n > 8)
                    COLERR(TB_ERR_CORRUPT, "SET of %u bytes", n);
                NEED(n);
                uint64_t bits = bl_uN(p, n);
                p += n;
                const evt_column *ec = evt_table_column(m->table, i);
                if (!ec->labels) {
                    evt_set_uint(e, img, i, bits); /* labels unknown (no FULL metadata) */
                    break;
                }
                if (ensure_labels(c, ec->nlabels + 1) != TB_OK)
                    COLERR(TB_ERR_NOMEM, "out of memory");
                size_t nl = 0;
                for (size_t b = 0; b < ec->nlabels && b < 64; b++)
                    if ((bits >> b) & 1) {
                        c->labels[nl] = ec->labels[b];
                        c->lens[nl++] = strlen(ec->labels[b]);
                    }
                evt_set_set(e, img, i, c->labels, c->lens, nl);
                break;
            }
            uint32_t maxlen = col->type == EVT_MY_STRING ? col->max_len : col->meta;
            unsigned lb = maxlen > 255 ? 2 : 1;
            NEED(lb);
            size_t l = lb == 2 ? bl_u16(p) : p[0];
            p += lb;
            NEED(l);
            int tt = col->type == EVT_MY_STRING && col->csk == EVT_CS_BINARY && (maxlen == 16 || maxlen == 4)
                         ? evt_mysql_text_type(evt_table_column(m->table, i)->source_type)
                         : 0;
            if (tt) { /* MariaDB UUID / INET6 / INET4: their text form, as SELECT gives it */
                if (evt_mysql_text_form(tt, p, l, &c->scratch) != TB_OK)
                    COLERR(TB_ERR_CORRUPT, "%s value of %zu bytes", evt_table_column(m->table, i)->source_type, l);
                evt_set_string(e, img, i, c->scratch.data, c->scratch.len);
            } else if (col->type == EVT_MY_STRING && col->csk == EVT_CS_BINARY && l < maxlen) {
                /* BINARY(n): the server strips the 0x00 padding in the binlog; SELECT returns it */
                tb_buf_reset(&c->scratch);
                if (tb_buf_append(&c->scratch, p, l) != TB_OK || tb_buf_reserve(&c->scratch, maxlen - l + 1) != TB_OK)
                    COLERR(TB_ERR_NOMEM, "out of memory");
                memset(c->scratch.data + l, 0, maxlen - l);
                evt_set_bytes(e, img, i, c->scratch.data, maxlen);
            } else if (set_text(c, col, e, img, i, p, l) != TB_OK) {
                COLERR(TB_ERR_NOMEM, "out of memory");
            }
            p += l;
            break;
        }
        case EVT_MY_BLOB: case EVT_MY_TINY_BLOB: case EVT_MY_MEDIUM_BLOB: case EVT_MY_LONG_BLOB:
        case EVT_MY_JSON: case EVT_MY_GEOMETRY: case EVT_MY_VECTOR: {
            unsigned lb = col->meta;
            if (lb < 1 || lb > 4)
                COLERR(TB_ERR_CORRUPT, "bad length size %u", lb);
            NEED(lb);
            size_t l = (size_t)bl_uN(p, lb);
            p += lb;
            NEED(l);
            if (col->type == EVT_MY_JSON) {
                bool partial = partial_bits && ((partial_bits[jsonidx / 8] >> (jsonidx % 8)) & 1);
                tb_code rc;
                tb_buf_reset(&c->json);
                if (img == EVT_BEFORE && i < c->cap_jraw) {
                    c->jraw[i] = p;
                    c->jraw_len[i] = l;
                }
                if (partial && (i >= c->cap_jraw || !c->jraw[i] || c->jraw_len[i] == 0)) {
                    /* binlog_row_image=MINIMAL: the before image lacks the document, so
                     * the diff cannot be applied; the column stays absent from the after
                     * image (DESIGN 4: absent, never null). */
                    if (!c->warned_partial) {
                        TB_WARN("binlog", "table %s.%s column %s: partial JSON update without the document in "
                                "the before image (binlog_row_image=MINIMAL); column left out of the after image",
                                evt_table_db(m->table), evt_table_name(m->table), evt_table_column(m->table, i)->name);
                        c->warned_partial = true;
                    }
                    p += l;
                    jsonidx++;
                    continue;
                }
                if (partial) {
                    rc = bl_json_apply_diff(c->jraw[i], c->jraw_len[i], p, l, &c->json, err);
                } else if (l == 0) {
                    rc = tb_buf_puts(&c->json, "null"); /* empty JSON value (server writes it for NULL-ish) */
                } else {
                    rc = bl_json_to_text(p, l, &c->json, err);
                }
                if (rc != TB_OK)
                    return tb_error_prefix(err, rc, "table %s.%s column %s (%zu): ", evt_table_db(m->table),
                                           evt_table_name(m->table), evt_table_column(m->table, i)->name, i + 1);
                evt_set_json(e, img, i, c->json.data, c->json.len);
            } else if (col->type == EVT_MY_GEOMETRY) {
                if (l < 4)
                    COLERR(TB_ERR_CORRUPT, "GEOMETRY value shorter than its SRID");
                evt_set_geometry(e, img, i, bl_u32(p), p + 4, l - 4);
            } else if (col->type == EVT_MY_VECTOR) {
                if (l % 4)
                    COLERR(TB_ERR_CORRUPT, "VECTOR of %zu bytes", l);
                size_t n = l / 4;
                if (n > c->cap_vec) {
                    float *v = realloc(c->vec, n * sizeof(float));
                    if (!v)
                        COLERR(TB_ERR_NOMEM, "out of memory");
                    c->vec = v;
                    c->cap_vec = n;
                }
                for (size_t j = 0; j < n; j++) {
                    uint32_t u = bl_u32(p + 4 * j);
                    memcpy(&c->vec[j], &u, 4);
                }
                evt_set_vector(e, img, i, c->vec, n);
            } else if (set_text(c, col, e, img, i, p, l) != TB_OK) {
                COLERR(TB_ERR_NOMEM, "out of memory");
            }
            p += l;
            break;
        }
        case EVT_MY_BIT: {
            unsigned bits = (col->meta & 0xFF) * 8u + (col->meta >> 8);
            unsigned n = (bits + 7) / 8;
            if (n > 8)
                COLERR(TB_ERR_CORRUPT, "BIT of %u bytes", n);
            NEED(n);
            uint64_t v = 0;
            for (unsigned j = 0; j < n; j++)
                v = (v << 8) | p[j];
            if (bits == 1)
                evt_set_bool(e, img, i, v != 0);
            else
                evt_set_uint(e, img, i, v);
            p += n;
            break;
        }
        default:
            COLERR(TB_ERR_UNSUPPORTED, "binlog column type %u is not supported", col->type);
        }
        jsonidx += is_json;
    }
    *pp = p;
    return TB_OK;
}
