/*
 * cache_connect: Kafka Connect JSON keys and values (what Debezium's MySQL and
 * MariaDB connectors, and tributary with value.schemas=true, write through
 * Connect's JsonConverter) into the cache, as the values the tributary
 * encoding gives for the same columns (DESIGN 5), so a cache replayed from a
 * Debezium topic equals one replayed from tributary's topic of the same rows.
 *
 * A message {"schema":S,"payload":P} (key and value alike) carries its
 * schema. The table's columns are the fields of the value schema's `after`
 * struct (or of the value struct itself, for a flattened row), in order; its
 * key is the key schema's fields, in order. Each field's Connect type and
 * logical name decide the column's type and how its value is decoded:
 *
 *   schema (name, or type)                       column    stored as (the tributary value)
 *   int8/int16/int32/int64                       integer   INTEGER
 *   org.apache.kafka.connect.data.Decimal        decimal   TEXT "-12.50" (exactly `scale`
 *     (base64 of the unscaled two's complement,            decimals); precision 20 and scale 0
 *      or a JSON number: decimal.format=NUMERIC)           is BIGINT UNSIGNED (precise): INTEGER,
 *                                                          TEXT above 2^63-1
 *   io.debezium.time.Date, connect Date (days)    date      TEXT "YYYY-MM-DD"
 *   MicroTime (us), NanoTime (ns), connect Time   time      TEXT "[-]HH:MM:SS[.f]"
 *     and io.debezium.time.Time (ms)
 *   Timestamp, connect Timestamp (ms),            datetime  TEXT "YYYY-MM-DDTHH:MM:SS[.f]"
 *     MicroTimestamp (us), NanoTimestamp (ns)
 *   ZonedTimestamp (ISO text, UTC)                timestamp TEXT as written
 *   io.debezium.time.Year                         year      INTEGER
 *   io.debezium.data.Enum                         enum      TEXT, the label
 *   io.debezium.data.EnumSet ("a,b")              set       TEXT '["a","b"]'
 *   io.debezium.data.Bits (bytes, LSB first)      bit       INTEGER (TEXT above 2^63-1)
 *   boolean (BIT(1))                              bit(1)    INTEGER 1/0
 *   io.debezium.data.Json (a string)              json      TEXT, the document, compact
 *   io.debezium.data.geometry.* {wkb,srid}        geometry  TEXT '{"srid":N,"wkb":"..."}'
 *   float                                         float     REAL of the shortest float32 text
 *   double                                        double    REAL
 *   bytes (base64)                                blob      BLOB
 *   string                                        varchar   TEXT
 *   array<string> (tributary's SET), struct, map  json      TEXT, the JSON text
 *
 * The fraction digits of a TIME/DATETIME are the column's fsp in the
 * tributary encoding; Connect schemas do not carry it (unless the connector
 * propagates source types: parameter __debezium.source.column.scale), so the
 * cache writes the shortest exact fraction ("10:00:00.5", "10:00:00"), except
 * for a MicroTimestamp (DATETIME(4) to (6)): six digits, DATETIME(6)'s.
 *
 * A table the cache typed otherwise (from tributary's <prefix>.schema record)
 * keeps its column types; a BIGINT UNSIGNED column there turns Debezium's
 * wrapped int64 (bigint.unsigned.handling.mode=long) back into its value.
 * The value `__debezium_unavailable_value` (a TOASTed or otherwise unread
 * value; in a bytes column its base64) leaves the column as it is, like a
 * column absent from a partial row image.
 *
 * Decoded values are written into memory of the store (cache_store_alloc),
 * which lives as long as the messages: until cache_store_release.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_apply.h"
#include "evt_json.h"
#include "tb_log.h"

#define CX_UNAVAILABLE "__debezium_unavailable_value"
#define CX_UNAVAILABLE_B64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

/* ------------------------------------------------------------- the wrapper */

bool cache_cx_same_schema(const char *text, size_t len, const char *schema, size_t slen, const char **payload,
                          size_t *plen)
{
    static const char head[] = "{\"schema\":", mid[] = ",\"payload\":";
    size_t hl = sizeof(head) - 1, ml = sizeof(mid) - 1;
    if (!schema || len < hl + slen + ml + 2 || memcmp(text, head, hl) != 0 || memcmp(text + hl, schema, slen) != 0 ||
        memcmp(text + hl + slen, mid, ml) != 0 || text[len - 1] != '}')
        return false;
    *payload = text + hl + slen + ml;
    *plen = len - hl - slen - ml - 1;
    return true;
}

bool cache_cx_unwrap(const cj_val *v, cj_val *schema, cj_val *payload)
{
    if (v->type != CJ_OBJECT)
        return false;
    const char *p = v->ptr + 1, *end = v->ptr + v->len;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    /* the usual object is no wrapper: decide on its first key */
    if (end - p < 10 || (memcmp(p, "\"schema\"", 8) != 0 && memcmp(p, "\"payload\"", 9) != 0))
        return false;
    cj_iter it;
    const char *k;
    size_t kl;
    cj_val m;
    int n = 0, got = 0;
    cj_obj_begin(v, &it);
    while (cj_obj_next(&it, &k, &kl, &m)) {
        n++;
        if (kl == 6 && memcmp(k, "schema", 6) == 0)
            *schema = m, got |= 1;
        else if (kl == 7 && memcmp(k, "payload", 7) == 0)
            *payload = m, got |= 2;
    }
    return n == 2 && got == 3;
}

/* ------------------------------------------------------------- field schemas */

typedef struct cx_kind {
    const char *type; /* evt type name of the column */
    cache_class cls;
    uint8_t dz;
    int8_t arg;
    bool has_default;
} cx_kind;

static bool str_is(const cj_val *v, const char *s)
{
    return v->type == CJ_STRING && !v->escaped && v->len == strlen(s) && memcmp(v->ptr, s, v->len) == 0;
}

/* A parameter's integer value (Connect writes parameters as strings); dflt when absent. */
static long param_int(const cj_val *params, const char *name, long dflt)
{
    cj_val v;
    char tmp[24];
    if (params->type != CJ_OBJECT || !cj_obj_get(params, name, &v) || v.type != CJ_STRING || v.len == 0 ||
        v.len >= sizeof(tmp))
        return dflt;
    memcpy(tmp, v.ptr, v.len);
    tmp[v.len] = 0;
    char *e;
    long n = strtol(tmp, &e, 10);
    return *e ? dflt : n;
}

static void kind_of(const cj_val *fs, cx_kind *k)
{
    cj_val type = {0}, name = {0}, params = {0}, dv;
    memset(k, 0, sizeof(*k));
    k->arg = -1;
    k->type = "";
    k->cls = CC_ANY;
    cj_obj_get(fs, "type", &type);
    cj_obj_get(fs, "name", &name);
    cj_obj_get(fs, "parameters", &params);
    k->has_default = cj_obj_get(fs, "default", &dv) && dv.type != CJ_NULL;
    long fsp = param_int(&params, "__debezium.source.column.scale", -1);
    if (name.type == CJ_STRING) {
        static const struct { const char *name, *type; cache_class cls; uint8_t dz; } named[] = {
            {"io.debezium.time.Date", "date", CC_TEXT, DZ_DATE},
            {"org.apache.kafka.connect.data.Date", "date", CC_TEXT, DZ_DATE},
            {"io.debezium.time.Time", "time", CC_TEXT, DZ_TIME_MS},
            {"org.apache.kafka.connect.data.Time", "time", CC_TEXT, DZ_TIME_MS},
            {"io.debezium.time.MicroTime", "time", CC_TEXT, DZ_TIME_US},
            {"io.debezium.time.NanoTime", "time", CC_TEXT, DZ_TIME_NS},
            {"io.debezium.time.Timestamp", "datetime", CC_TEXT, DZ_TS_MS},
            {"org.apache.kafka.connect.data.Timestamp", "datetime", CC_TEXT, DZ_TS_MS},
            {"io.debezium.time.MicroTimestamp", "datetime", CC_TEXT, DZ_TS_US},
            {"io.debezium.time.NanoTimestamp", "datetime", CC_TEXT, DZ_TS_NS},
            {"io.debezium.time.ZonedTimestamp", "timestamp", CC_TEXT, DZ_NONE},
            {"io.debezium.time.ZonedTime", "time", CC_TEXT, DZ_NONE},
            {"io.debezium.time.Year", "year", CC_INT, DZ_NONE},
            {"io.debezium.data.Enum", "enum", CC_TEXT, DZ_NONE},
            {"io.debezium.data.EnumSet", "set", CC_JSON, DZ_SET},
            {"io.debezium.data.Bits", "bit", CC_UINT64, DZ_BITS},
            {"io.debezium.data.Json", "json", CC_JSON, DZ_JSON},
            {"io.debezium.data.geometry.Geometry", "geometry", CC_JSON, DZ_GEOM},
            {"io.debezium.data.geometry.Point", "geometry", CC_JSON, DZ_GEOM},
            {"io.debezium.data.geometry.Geography", "geometry", CC_JSON, DZ_GEOM},
        };
        for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
            if (str_is(&name, named[i].name)) {
                k->type = named[i].type;
                k->cls = named[i].cls;
                k->dz = named[i].dz;
                if (k->dz >= DZ_TIME_MS && k->dz <= DZ_TS_NS && fsp >= 0 && fsp <= 6)
                    k->arg = (int8_t)fsp;
                return;
            }
        if (str_is(&name, "org.apache.kafka.connect.data.Decimal")) {
            long scale = param_int(&params, "scale", 0);
            long prec = param_int(&params, "connect.decimal.precision", -1);
            k->dz = DZ_DEC_BYTES;
            k->arg = (int8_t)(scale < -100 ? -100 : scale > 100 ? 100 : scale);
            if (scale == 0 && prec == 20) { /* BIGINT UNSIGNED, bigint.unsigned.handling.mode=precise */
                k->type = "bigint";
                k->cls = CC_UINT64;
            } else {
                k->type = "decimal";
                k->cls = CC_TEXT;
            }
            return;
        }
    }
    static const struct { const char *ctype, *type; cache_class cls; uint8_t dz; } plain[] = {
        {"int8", "tinyint", CC_INT, DZ_NONE},   {"int16", "smallint", CC_INT, DZ_NONE},
        {"int32", "int", CC_INT, DZ_NONE},      {"int64", "bigint", CC_INT, DZ_NONE},
        {"float", "float", CC_REAL, DZ_FLOAT32}, {"float32", "float", CC_REAL, DZ_FLOAT32},
        {"double", "double", CC_REAL, DZ_NONE}, {"float64", "double", CC_REAL, DZ_NONE},
        {"boolean", "bit", CC_BOOL, DZ_NONE},   {"string", "varchar", CC_TEXT, DZ_NONE},
        {"bytes", "blob", CC_BLOB, DZ_NONE},    {"array", "json", CC_JSON, DZ_NONE},
        {"struct", "json", CC_JSON, DZ_NONE},   {"map", "json", CC_JSON, DZ_NONE},
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        if (str_is(&type, plain[i].ctype)) {
            k->type = plain[i].type;
            k->cls = plain[i].cls;
            k->dz = plain[i].dz;
            break;
        }
    cj_val items;
    if (str_is(&type, "array") && cj_obj_get(fs, "items", &items) && cj_obj_get(&items, "type", &type) &&
        str_is(&type, "string"))
        k->type = "set"; /* tributary's SET: an array of labels */
}

/* The struct of the row image in a value schema: `after` of an envelope, or
 * the value struct itself. False when there is none. */
static bool row_struct(const cj_val *vschema, cj_val *fields)
{
    cj_val f, a, name, t;
    if (vschema->type != CJ_OBJECT || !cj_obj_get(vschema, "fields", &f) || f.type != CJ_ARRAY)
        return false;
    cj_iter it;
    bool op = false;
    cj_arr_begin(&f, &it);
    while (cj_arr_next(&it, &a)) {
        if (a.type != CJ_OBJECT || !cj_obj_get(&a, "field", &name))
            continue;
        if (str_is(&name, "op"))
            op = true;
        if (str_is(&name, "after") && cj_obj_get(&a, "type", &t) && str_is(&t, "struct"))
            return cj_obj_get(&a, "fields", fields) && fields->type == CJ_ARRAY;
    }
    if (op)
        return false;
    *fields = f;
    return true;
}

/* ------------------------------------------------------------- the table */

static bool same_text(const char *mem, size_t len, const cj_val *v)
{
    if (!v)
        return mem == NULL;
    return mem && len == v->len && memcmp(mem, v->ptr, len) == 0;
}

/* Keep a copy of schema text v in *mem (v NULL: none). v may point into *mem
 * (the span of a message whose schema equals the remembered one): the copy is
 * made before the old text is freed. */
static tb_code remember(char **mem, size_t *len, const cj_val *v, tb_error *err)
{
    char *p = NULL;
    if (v && same_text(*mem, *len, v))
        return TB_OK;
    if (v) {
        if (!(p = malloc(v->len ? v->len : 1)))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        memcpy(p, v->ptr, v->len);
    }
    free(*mem);
    *mem = p;
    *len = v ? v->len : 0;
    return TB_OK;
}

static char *field_name(const cj_val *fs, tb_buf *tmp)
{
    cj_val n;
    return cj_obj_get(fs, "field", &n) ? cj_strdup(&n, tmp) : NULL;
}

static void set_decoder(cache_col *c, const cx_kind *k)
{
    c->dz = k->dz;
    c->dz_arg = k->arg;
    c->fsp_history = false;
    /* a temporal's fsp the Connect schema lacks: the schema record's, when the table has one */
    if (k->dz >= DZ_TIME_MS && k->dz <= DZ_TS_NS && k->arg < 0 && c->scale >= 0 && c->scale <= 6)
        c->dz_arg = (int8_t)c->scale;
    /* a MicroTimestamp is a DATETIME(4..6) (time.precision.mode=adaptive): six digits, as the
     * tributary encoding writes DATETIME(6), the usual one, so a key is one text whoever wrote it */
    else if (k->dz == DZ_TS_US && k->arg < 0)
        c->dz_arg = 6;
    /* a BIGINT UNSIGNED column (typed from a schema record) given as int64: undo the wrap */
    if (c->cls == CC_UINT64 && k->dz == DZ_NONE && (k->cls == CC_INT))
        c->dz = DZ_U64;
}

/* The fsp of the temporal columns whose Connect schema lacks it, from Debezium's schema history
 * (cache.debezium.history.topic, read on to its end first: a new schema follows its history
 * record), in the table's state whose columns are the row's fields. */
static tb_code apply_history(cache_store *s, cache_table *t, const cj_val *rowf, tb_error *err)
{
    if (!s->history)
        return TB_OK;
    if (s->history_refresh)
        s->history_refresh(s->history_opaque);
    size_t nf = cj_count(rowf), n = 0;
    char **names = calloc(nf ? nf : 1, sizeof(*names));
    tb_buf tmp;
    tb_buf_init(&tmp, 0);
    cj_iter it;
    cj_val fs;
    tb_code rc = names ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    cj_arr_begin(rowf, &it);
    while (rc == TB_OK && n < nf && cj_arr_next(&it, &fs))
        if (!(names[n++] = field_name(&fs, &tmp)))
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": a Connect field without a name", t->name);
    cj_arr_begin(rowf, &it);
    for (size_t f = 0; rc == TB_OK && f < n && cj_arr_next(&it, &fs); f++) {
        cx_kind k;
        kind_of(&fs, &k);
        if (k.dz < DZ_TIME_MS || k.dz > DZ_TS_NS || k.arg >= 0)
            continue; /* not a temporal, or its schema has the fsp */
        int fsp = cache_history_fsp(s->history, t->name, (const char *const *)names, n, names[f]);
        for (size_t i = 0; fsp >= 0 && i < t->ncols; i++)
            if (strcmp(t->cols[i].name, names[f]) == 0) {
                t->cols[i].dz_arg = (int8_t)fsp;
                t->cols[i].fsp_history = true;
            }
    }
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    tb_buf_free(&tmp);
    return rc;
}

/* The losses this table's encoding causes, logged once per table and run. */
static void warn_losses(cache_table *t, const cj_val *rowf)
{
    tb_buf fsp, dflt;
    cj_iter it;
    cj_val fs, n;
    tb_buf_init(&fsp, 0);
    tb_buf_init(&dflt, 0);
    cj_arr_begin(rowf, &it);
    while (cj_arr_next(&it, &fs)) {
        cx_kind k;
        kind_of(&fs, &k);
        if (!cj_obj_get(&fs, "field", &n) || n.type != CJ_STRING)
            continue;
        bool known = false; /* from the schema history */
        for (size_t i = 0; i < t->ncols; i++)
            known = known || (t->cols[i].fsp_history && cj_key_eq(n.ptr, n.len, t->cols[i].name));
        tb_buf *b = k.dz >= DZ_TIME_MS && k.dz <= DZ_TS_NS && k.dz != DZ_TS_US && k.arg < 0 && !known ? &fsp
                    : k.has_default                                                        ? &dflt
                                                                                           : NULL;
        if (b)
            tb_buf_printf(b, "%s\"%.*s\"", b->len ? ", " : "", (int)n.len, n.ptr);
    }
    if (fsp.len)
        TB_INFO("cache", "table \"%s\": the Connect schema has no fraction digits (fsp) for %s: written as the "
                         "shortest exact fraction (the tributary encoding writes fsp digits; set "
                         "cache.debezium.history.topic to Debezium's schema.history.internal.kafka.topic)",
                t->name, tb_buf_cstr(&fsp));
    if (dflt.len)
        TB_INFO("cache", "table \"%s\": %s have a default: with JsonConverter's replace.null.with.default=true a "
                         "NULL arrives as the default",
                t->name, tb_buf_cstr(&dflt));
    tb_buf_free(&fsp);
    tb_buf_free(&dflt);
    t->cx_warned = true;
}

tb_code cache_cx_table(cache_store *s, const char *topic, const char *prefix, const cj_val *kschema,
                       const cj_val *vschema, const cj_val *key, cache_table **tp, tb_error *err)
{
    cache_table *t = *tp;
    tb_code rc = TB_OK;
    cj_val rowf = {0}, keyf = {0}, fs;
    cj_iter it;
    tb_buf tmp;
    if (t && same_text(t->cx_kschema, t->cx_klen, kschema) &&
        (!vschema || same_text(t->cx_vschema, t->cx_vlen, vschema)))
        return TB_OK; /* the usual case: the schemas of the last message (a tombstone has no value schema) */
    bool has_row = vschema && row_struct(vschema, &rowf);
    bool has_key = kschema && cj_obj_get(kschema, "fields", &keyf) && keyf.type == CJ_ARRAY;
    if (!t && !has_row)
        return TB_OK; /* a tombstone or delete of a table not seen yet: nothing to type */
    tb_buf_init(&tmp, 0);
    if (!t) {
        /* a new table: value columns in order, then key fields the value lacks */
        t = calloc(1, sizeof(*t));
        size_t cap = cj_count(&rowf) + (has_key ? cj_count(&keyf) : cj_count(key)) + 1;
        if (!t || !(t->cols = calloc(cap, sizeof(*t->cols))) || !(t->pk = calloc(cap, sizeof(size_t)))) {
            cache_table_free(t);
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        for (int pass = 0; pass < 2; pass++) {
            const cj_val *arr = pass == 0 ? &rowf : has_key ? &keyf : NULL;
            if (!arr)
                break;
            cj_arr_begin(arr, &it);
            while (cj_arr_next(&it, &fs)) {
                char *name = field_name(&fs, &tmp);
                if (!name) {
                    rc = tb_error_set(err, TB_ERR_INVALID, false, "Connect schema of %s: a field without a name", topic);
                    break;
                }
                size_t i;
                for (i = 0; i < t->ncols && strcmp(t->cols[i].name, name) != 0; i++)
                    ;
                if (i < t->ncols || t->ncols == cap) {
                    free(name);
                } else {
                    cx_kind k;
                    kind_of(&fs, &k);
                    cache_col *c = &t->cols[t->ncols++];
                    c->name = name;
                    c->type = strdup(k.type);
                    c->cls = k.cls;
                    c->scale = k.dz == DZ_DEC_BYTES || (k.dz >= DZ_TIME_MS && k.dz <= DZ_TS_NS) ? k.arg : -1;
                    set_decoder(c, &k);
                    if (!c->type)
                        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                }
                if (pass == 1 && i < t->ncols && t->cols[i].pk == 0) {
                    t->pk[t->npk++] = i;
                    t->cols[i].pk = (int)t->npk;
                }
            }
        }
        if (rc == TB_OK && !has_key) { /* a key without schema: its members, in order */
            const char *k;
            size_t kl;
            cj_val m;
            cj_obj_begin(key, &it);
            while (cj_obj_next(&it, &k, &kl, &m))
                for (size_t i = 0; i < t->ncols; i++)
                    if (t->cols[i].pk == 0 && cj_key_eq(k, kl, t->cols[i].name)) {
                        t->pk[t->npk++] = i;
                        t->cols[i].pk = (int)t->npk;
                    }
        }
        if (rc == TB_OK && t->npk == 0)
            rc = tb_error_set(err, TB_ERR_INVALID, false, "Connect schema of %s: no key column is a column of the row",
                              topic);
        if (rc == TB_OK && ((rc = cache_table_name_of(topic, prefix, &tmp)) != TB_OK ||
                            !(t->name = strdup(tb_buf_cstr(&tmp))) || !(t->topic = strdup(topic))))
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (rc == TB_OK && cache_store_find(s, t->name))
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\" already holds topic %s", t->name,
                              cache_store_find(s, t->name)->topic ? cache_store_find(s, t->name)->topic : "(none)");
        if (rc != TB_OK) {
            cache_table_free(t);
            goto out;
        }
        TB_INFO("cache", "table \"%s\": created from the Kafka Connect schema of %s (%zu columns, key of %zu)",
                t->name, topic, t->ncols, t->npk);
        if ((rc = cache_store_create(s, t, err)) != TB_OK)
            goto out;
    } else {
        /* a known table: adopt types of untyped columns, add new columns, set the decoders */
        const cj_val *arrs[2] = {has_row ? &rowf : NULL, has_key ? &keyf : NULL};
        for (int pass = 0; rc == TB_OK && pass < 2; pass++) {
            if (!arrs[pass])
                continue;
            cj_arr_begin(arrs[pass], &it);
            while (rc == TB_OK && cj_arr_next(&it, &fs)) {
                char *name = field_name(&fs, &tmp);
                if (!name) {
                    rc = tb_error_set(err, TB_ERR_INVALID, false, "Connect schema of %s: a field without a name", topic);
                    break;
                }
                cx_kind k;
                kind_of(&fs, &k);
                size_t i;
                for (i = 0; i < t->ncols && strcmp(t->cols[i].name, name) != 0; i++)
                    ;
                if (i == t->ncols) {
                    if (pass == 1) {
                        rc = tb_error_set(err, TB_ERR_INVALID, false,
                                          "table \"%s\": key column \"%s\" is not a column of the table (the key "
                                          "changed: rebuild the cache)",
                                          t->name, name);
                    } else if ((rc = cache_store_add_column(s, t, name, k.type, k.cls, NULL, err)) == TB_OK) {
                        set_decoder(&t->cols[i], &k);
                    }
                } else {
                    if (!*t->cols[i].type && *k.type)
                        rc = cache_store_update_column(s, t, i, k.type, k.cls, err);
                    set_decoder(&t->cols[i], &k);
                }
                free(name);
            }
        }
        if (rc != TB_OK)
            goto out;
        if (t->inferred) { /* typed now */
            t->inferred = false;
            if ((rc = cache_store_set_topic(s, t, t->topic ? t->topic : topic, err)) != TB_OK)
                goto out;
        }
    }
    t->cx_conv = true;
    if (has_row && (rc = apply_history(s, t, &rowf, err)) != TB_OK)
        goto out;
    if (has_row && !t->cx_warned)
        warn_losses(t, &rowf);
    if ((rc = remember(&t->cx_kschema, &t->cx_klen, kschema, err)) != TB_OK ||
        (has_row && (rc = remember(&t->cx_vschema, &t->cx_vlen, vschema, err)) != TB_OK))
        goto out;
    *tp = t;
out:
    tb_buf_free(&tmp);
    return rc;
}

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

/* ------------------------------------------------------------- without Connect schemas */

void cache_dbz_typed(const cache_store *s, cache_table *t)
{
    for (size_t i = 0; i < t->ncols; i++) {
        cache_col *c = &t->cols[i];
        const char *ty = c->type;
        int sc = c->scale;
        c->dz = DZ_NONE;
        c->dz_arg = (int8_t)(sc >= 0 && sc <= 100 ? sc : -1);
        if (strcmp(ty, "decimal") == 0 && sc >= 0)
            c->dz = s->dbz.decimal == CACHE_DBZ_STRING ? DZ_NONE : DZ_DEC_BYTES;
        else if (strcmp(ty, "bigint") == 0 && c->cls == CC_UINT64)
            c->dz = DZ_U64;
        else if (strcmp(ty, "date") == 0)
            c->dz = DZ_DATE;
        else if (strcmp(ty, "time") == 0)
            c->dz = s->dbz.time == CACHE_DBZ_CONNECT || (s->dbz.time == CACHE_DBZ_ADAPTIVE && sc >= 0 && sc <= 3)
                        ? DZ_TIME_MS
                        : DZ_TIME_US;
        else if (strcmp(ty, "datetime") == 0)
            c->dz = s->dbz.time == CACHE_DBZ_CONNECT || (sc >= 0 && sc <= 3) ? DZ_TS_MS : DZ_TS_US;
        else if (strcmp(ty, "set") == 0)
            c->dz = DZ_SET;
        else if (strcmp(ty, "bit") == 0 && c->cls != CC_BOOL)
            c->dz = DZ_BITS;
        else if (strcmp(ty, "json") == 0)
            c->dz = DZ_JSON;
        else if (strcmp(ty, "geometry") == 0)
            c->dz = DZ_GEOM;
        else if (strcmp(ty, "float") == 0)
            c->dz = DZ_FLOAT32;
        else if (c->cls == CC_BLOB)
            c->dz = s->dbz.binary == CACHE_DBZ_HEX ? DZ_HEX : s->dbz.binary == CACHE_DBZ_BASE64_URL ? DZ_B64URL : DZ_NONE;
    }
    t->cx_conv = true;
    TB_INFO("cache", "table \"%s\": values in Debezium's encoding without Connect schemas: decoded by the types of "
                     "its schema record (decimal.handling.mode=%s, time.precision.mode=%s, binary.handling.mode=%s)",
            t->name, s->dbz.decimal == CACHE_DBZ_STRING ? "string" : s->dbz.decimal == CACHE_DBZ_DOUBLE ? "double" : "precise",
            s->dbz.time == CACHE_DBZ_CONNECT ? "connect" : s->dbz.time == CACHE_DBZ_ADAPTIVE ? "adaptive"
                                                                                             : "adaptive_time_microseconds",
            s->dbz.binary == CACHE_DBZ_HEX ? "hex" : s->dbz.binary == CACHE_DBZ_BASE64_URL ? "base64-url-safe"
                                                   : s->dbz.binary == CACHE_DBZ_BASE64 ? "base64" : "bytes");
}

void cache_dbz_warn_schemaless(const cache_store *s, cache_table *t, const cj_val *row)
{
    tb_buf nums, strs;
    cj_iter it;
    const char *k;
    size_t kl;
    cj_val v;
    if (t->cx_warned)
        return;
    t->cx_warned = true;
    tb_buf_init(&nums, 0);
    tb_buf_init(&strs, 0);
    cj_obj_begin(row, &it);
    while (cj_obj_next(&it, &k, &kl, &v)) {
        tb_buf *b = v.type == CJ_NUMBER ? &nums : v.type == CJ_STRING ? &strs : NULL;
        if (b)
            tb_buf_printf(b, "%s\"%.*s\"", b->len ? ", " : "", (int)kl, k);
    }
    const char *dec = s->dbz.decimal == CACHE_DBZ_STRING   ? ""
                      : s->dbz.decimal == CACHE_DBZ_DOUBLE ? "; a DECIMAL arrives as a double (no scale)"
                                                           : "; a DECIMAL holds base64 of its unscaled value, "
                                                             "without the scale";
    const char *bin = s->dbz.binary == CACHE_DBZ_HEX            ? "hex text"
                      : s->dbz.binary == CACHE_DBZ_BASE64_URL ? "base64-url-safe text"
                                                              : "base64 text";
    const char *tim = s->dbz.time == CACHE_DBZ_CONNECT ? "a TIME milliseconds of the day, a DATETIME milliseconds"
                                                       : "a TIME microseconds, a DATETIME milliseconds or "
                                                         "microseconds since 1970";
    /* two lines: column lists can be long, a log line holds 4 KiB */
    TB_WARN("cache",
            "table \"%s\" (%s): Debezium values without Connect schemas and no schema record: stored as the JSON "
            "gives them, not decoded; numbers in %s (a DATE holds days since 1970, %s, a BIGINT UNSIGNED above "
            "2^63-1 a negative number)",
            t->name, t->topic ? t->topic : "", nums.len ? tb_buf_cstr(&nums) : "no column", tim);
    TB_WARN("cache",
            "table \"%s\": without Connect schemas, strings in %s (a BINARY/BLOB holds %s, a SET \"a,b\", a BIT(n) "
            "base64 bytes%s); for exact values write the topic with Connect schemas "
            "(key.converter.schemas.enable=true, value.converter.schemas.enable=true)",
            t->name, strs.len ? tb_buf_cstr(&strs) : "no column", bin, dec);
    tb_buf_free(&nums);
    tb_buf_free(&strs);
}
