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
 *
 * This file: the wrapper, the field schemas and the table (cache_cx_table),
 * and Debezium's topics without Connect schemas; the values of rows and keys
 * (cache_cx_row, cache_cx_key) are decoded in cache_connect_value.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_apply.h"
#include "evt_json.h"
#include "tb_log.h"

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
                if (pass == 1 && strcmp(name, EVT_KEY_ROWID) == 0) { /* not a key column: cache_store_rowid_col */
                    free(name);
                    continue;
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
                if (i == t->ncols && pass == 1 && strcmp(name, EVT_KEY_ROWID) == 0) {
                    ; /* a key holding NULL: its row's rowid, kept by cache_store_rowid_col */
                } else if (i == t->ncols) {
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
