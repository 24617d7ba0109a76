/*
 * av_dec: Avro bodies to JSON payloads, through avro-c (av_dec.h).
 */
#include "av_dec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <avro.h>

#include "av_lib.h"
#include "evt_json.h"

#define AV_DEC_MAX_DEPTH 64

struct av_reader {
    avro_schema_t schema;
    avro_value_iface_t *iface;
    avro_value_t value;
    bool have_value;
};

void av_reader_free(av_reader *r)
{
    if (!r)
        return;
    if (r->have_value)
        av_lib.value_decref(&r->value);
    if (r->iface)
        avro_value_iface_decref(r->iface);
    if (r->schema)
        av_lib.schema_decref(r->schema);
    free(r);
}

/* Records of a writer schema met by a walk: in progress, or done. */
typedef struct rec_walk {
    avro_schema_t *rec;
    bool *done;
    size_t n, cap;
    bool nomem; /* the walk's own table could not grow */
} rec_walk;

/* Whether a value of t can be made at all: no record holds itself through fields that are
 * records (or names of records) all the way round, where avro-c's generic value, which makes
 * every field of a record, would recurse without end. A union, an array or a map holds no
 * value when made, so a record may hold itself through one (a linked list). Each record is
 * walked once. */
static bool makeable(rec_walk *w, avro_schema_t t, int depth)
{
    while (is_avro_link(t))
        t = av_lib.schema_link_target(t);
    if (!is_avro_record(t))
        return true;
    for (size_t i = 0; i < w->n; i++)
        if (w->rec[i] == t)
            return w->done[i]; /* in progress: the record holds itself */
    if (depth > AV_DEC_MAX_DEPTH * 16)
        return false; /* nested deeper than any body could be read */
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        avro_schema_t *r = realloc(w->rec, cap * sizeof(*r));
        if (r)
            w->rec = r;
        bool *d = r ? realloc(w->done, cap * sizeof(*d)) : NULL;
        if (d)
            w->done = d;
        if (!r || !d) {
            w->nomem = true;
            return false;
        }
        w->cap = cap;
    }
    size_t me = w->n++;
    w->rec[me] = t;
    w->done[me] = false;
    for (size_t i = 0; i < av_lib.schema_record_size(t); i++)
        if (!makeable(w, av_lib.schema_record_field_get_by_index(t, (int)i), depth + 1))
            return false;
    w->done[me] = true;
    return true;
}

tb_code av_reader_new(const char *writer_json, size_t len, av_reader **out, tb_error *err)
{
    *out = NULL;
    tb_code lrc = av_lib_load(err);
    if (lrc != TB_OK)
        return lrc;
    av_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro reader: out of memory");
    if (av_lib.schema_from_json_length(writer_json, len, &r->schema) != 0) {
        tb_code rc = tb_error_set(err, TB_ERR_CORRUPT, false, "Avro writer schema does not parse: %s",
                                  av_lib.strerror());
        av_reader_free(r);
        return rc;
    }
    rec_walk w = {0};
    bool ok = makeable(&w, r->schema, 0);
    free(w.rec);
    free(w.done);
    if (!ok && w.nomem) {
        av_reader_free(r);
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro reader: out of memory");
    }
    if (!ok) {
        av_reader_free(r);
        return tb_error_set(err, TB_ERR_CORRUPT, false,
                            "Avro writer schema: a record holds itself through fields that are records all the "
                            "way round (or nests records too deeply): no value of it can exist");
    }
    if (!(r->iface = av_lib.generic_class_from_schema(r->schema)) ||
        av_lib.generic_value_new(r->iface, &r->value) != 0) {
        tb_code rc = tb_error_set(err, TB_ERR_CORRUPT, false, "Avro writer schema: %s", av_lib.strerror());
        av_reader_free(r);
        return rc;
    }
    r->have_value = true;
    *out = r;
    return TB_OK;
}

static void put_double(evt_jw *w, double d)
{
    if (isnan(d))
        evt_jw_str(w, "NaN", 3);
    else if (isinf(d))
        d > 0 ? evt_jw_str(w, "Infinity", 8) : evt_jw_str(w, "-Infinity", 9);
    else
        evt_jw_double(w, d);
}

static bool put_value(evt_jw *w, avro_value_t *v, int depth)
{
    if (depth > AV_DEC_MAX_DEPTH)
        return false;
    switch (avro_value_get_type(v)) {
    case AVRO_NULL: evt_jw_null(w); return true;
    case AVRO_BOOLEAN: {
        int b;
        if (avro_value_get_boolean(v, &b))
            return false;
        evt_jw_bool(w, b != 0);
        return true;
    }
    case AVRO_INT32: {
        int32_t i;
        if (avro_value_get_int(v, &i))
            return false;
        evt_jw_int(w, i);
        return true;
    }
    case AVRO_INT64: {
        int64_t l;
        if (avro_value_get_long(v, &l))
            return false;
        evt_jw_int(w, l);
        return true;
    }
    case AVRO_FLOAT: {
        float f;
        if (avro_value_get_float(v, &f))
            return false;
        if (isfinite(f))
            evt_jw_float(w, f);
        else
            put_double(w, f);
        return true;
    }
    case AVRO_DOUBLE: {
        double d;
        if (avro_value_get_double(v, &d))
            return false;
        put_double(w, d);
        return true;
    }
    case AVRO_STRING: {
        const char *s;
        size_t n;
        if (avro_value_get_string(v, &s, &n))
            return false;
        evt_jw_str(w, s, n ? n - 1 : 0); /* avro-c counts the NUL */
        return true;
    }
    case AVRO_BYTES: {
        const void *p;
        size_t n;
        if (avro_value_get_bytes(v, &p, &n))
            return false;
        evt_jw_base64(w, p, n);
        return true;
    }
    case AVRO_FIXED: {
        const void *p;
        size_t n;
        if (avro_value_get_fixed(v, &p, &n))
            return false;
        evt_jw_base64(w, p, n);
        return true;
    }
    case AVRO_ENUM: {
        int e;
        if (avro_value_get_enum(v, &e))
            return false;
        const char *sym = av_lib.schema_enum_get(avro_value_get_schema(v), e);
        if (!sym)
            return false;
        evt_jw_str(w, sym, strlen(sym));
        return true;
    }
    case AVRO_UNION: {
        avro_value_t b;
        if (avro_value_get_current_branch(v, &b))
            return false;
        return put_value(w, &b, depth + 1);
    }
    case AVRO_RECORD:
    case AVRO_MAP: {
        size_t n;
        if (avro_value_get_size(v, &n))
            return false;
        evt_jw_obj_begin(w);
        for (size_t i = 0; i < n; i++) {
            avro_value_t f;
            const char *name = NULL;
            if (avro_value_get_by_index(v, i, &f, &name) || !name)
                return false;
            evt_jw_key(w, name, strlen(name));
            if (!put_value(w, &f, depth + 1))
                return false;
        }
        evt_jw_obj_end(w);
        return true;
    }
    case AVRO_ARRAY: {
        size_t n;
        if (avro_value_get_size(v, &n))
            return false;
        evt_jw_arr_begin(w);
        for (size_t i = 0; i < n; i++) {
            avro_value_t f;
            if (avro_value_get_by_index(v, i, &f, NULL) || !put_value(w, &f, depth + 1))
                return false;
        }
        evt_jw_arr_end(w);
        return true;
    }
    default: return false;
    }
}

/* ------------------------------------------------------------ bounds */

/* avro-c allocates what a length or a count in the body says before it
 * reads the bytes: a corrupt body could ask for exabytes. This pass walks
 * the body along the schema first and refuses a length or count that the
 * bytes left cannot hold (the same grammar avro-c then reads). */
typedef struct span {
    const uint8_t *p, *end;
} span;

static bool rd_long(span *s, int64_t *v)
{
    uint64_t z = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (s->p >= s->end)
            return false;
        uint8_t b = *s->p++;
        z |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return true;
        }
    }
    return false;
}

static bool skip(span *s, int64_t n)
{
    if (n < 0 || n > s->end - s->p)
        return false;
    s->p += n;
    return true;
}

static bool check(span *s, avro_schema_t t, int depth)
{
    int64_t v;
    if (depth > AV_DEC_MAX_DEPTH)
        return false;
    switch (avro_typeof(t)) {
    case AVRO_NULL: return true;
    case AVRO_BOOLEAN: return skip(s, 1);
    case AVRO_INT32:
    case AVRO_INT64: return rd_long(s, &v);
    case AVRO_FLOAT: return skip(s, 4);
    case AVRO_DOUBLE: return skip(s, 8);
    case AVRO_STRING:
    case AVRO_BYTES: return rd_long(s, &v) && skip(s, v);
    case AVRO_FIXED: return skip(s, av_lib.schema_fixed_size(t));
    case AVRO_ENUM: return rd_long(s, &v) && v >= 0 && v < av_lib.schema_enum_number_of_symbols(t);
    case AVRO_UNION:
        return rd_long(s, &v) && v >= 0 && (size_t)v < av_lib.schema_union_size(t) &&
               check(s, av_lib.schema_union_branch(t, (int)v), depth + 1);
    case AVRO_RECORD:
        for (size_t i = 0; i < av_lib.schema_record_size(t); i++)
            if (!check(s, av_lib.schema_record_field_get_by_index(t, (int)i), depth + 1))
                return false;
        return true;
    case AVRO_ARRAY:
    case AVRO_MAP: {
        bool map = avro_typeof(t) == AVRO_MAP;
        avro_schema_t item = map ? av_lib.schema_map_values(t) : av_lib.schema_array_items(t);
        int64_t total = 0;
        for (;;) {
            int64_t n;
            if (!rd_long(s, &n))
                return false;
            if (n == 0)
                return true;
            if (n < 0) { /* a block with its size in bytes */
                int64_t size;
                if (n == INT64_MIN || !rd_long(s, &size) || size < 0 || size > s->end - s->p)
                    return false;
                n = -n;
            }
            /* every item takes a byte at least, except null items: bound those too */
            total += n;
            if (n > s->end - s->p + 1 || total > (int64_t)1 << 20)
                return false;
            for (int64_t i = 0; i < n; i++)
                if ((map && (!rd_long(s, &v) || !skip(s, v))) || !check(s, item, depth + 1))
                    return false;
        }
    }
    case AVRO_LINK: return check(s, av_lib.schema_link_target(t), depth + 1);
    default: return false;
    }
}

tb_code av_reader_json(av_reader *r, const void *body, size_t len, tb_buf *out, tb_error *err)
{
    span sp = {body, (const uint8_t *)body + len};
    if (!check(&sp, r->schema, 0) || sp.p != sp.end)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "Avro body of %zu bytes does not match its schema", len);
    avro_value_reset(&r->value);
    avro_reader_t rd = av_lib.reader_memory(body, (int64_t)len);
    if (!rd)
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro reader: out of memory");
    tb_code rc = TB_OK;
    char extra;
    if (av_lib.value_read(rd, &r->value) != 0)
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "Avro body of %zu bytes does not match its schema: %s", len,
                          av_lib.strerror());
    else if (av_lib.read(rd, &extra, 1) == 0)
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "Avro body of %zu bytes: bytes left after the value", len);
    av_lib.reader_free(rd);
    if (rc != TB_OK)
        return rc;
    size_t start = out->len;
    evt_jw w;
    evt_jw_init(&w, out);
    bool ok = put_value(&w, &r->value, 0);
    if (evt_jw_finish(&w) != TB_OK || !ok) {
        out->len = start;
        return tb_error_set(err, TB_ERR_CORRUPT, false, "Avro body of %zu bytes: a value JSON cannot hold", len);
    }
    return TB_OK;
}
