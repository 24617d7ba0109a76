/*
 * av_connect: an Avro schema made back into the Kafka Connect schema it was
 * made from (av_conv.h's mapping inverted; av_msg.h says how). No registry,
 * no I/O: fuzz/fuzz_avro_decode.c fuzzes it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "av_msg.h"
#include "evt_json.h"

#define AV_MSG_MAX_DEPTH 32
#define AV_MSG_MAX_NAMES 64

/* ============================================================ Avro schema -> Connect schema */

typedef struct named {
    char *full;        /* a record's full name */
    const evt_jv *def; /* its definition (in the parsed schema) */
    char *ns;          /* the namespace it was defined in (owned) */
} named;

typedef struct back {
    evt_jw w;
    tb_error *err;
    tb_code rc;
    named names[AV_MSG_MAX_NAMES];
    size_t nnames;
    tb_buf tmp;
} back;

static const char *str_of(const evt_jv *o, const char *key)
{
    const evt_jv *v = o && evt_jv_type_of(o) == EVT_JV_OBJECT ? evt_jv_get(o, key) : NULL;
    size_t n;
    return v && evt_jv_type_of(v) == EVT_JV_STRING ? evt_jv_text(v, &n) : NULL;
}

static void back_fail(back *b, const char *what, const char *name)
{
    if (b->rc == TB_OK)
        b->rc = tb_error_set(b->err, TB_ERR_CORRUPT, false, "Avro writer schema: %s%s%s", what, name ? ": " : "",
                             name ? name : "");
}

static void key(back *b, const char *k) { evt_jw_key(&b->w, k, strlen(k)); }
static void str(back *b, const char *s) { evt_jw_str(&b->w, s, strlen(s)); }

/* A record's full name as Avro resolves it (its namespace, else the enclosing one). */
static tb_code full_name(const evt_jv *rec, const char *ns, tb_buf *out)
{
    tb_buf_reset(out);
    const char *name = str_of(rec, "name"), *own = str_of(rec, "namespace");
    if (!name)
        return TB_ERR_CORRUPT;
    if (strchr(name, '.'))
        return tb_buf_puts(out, name);
    const char *space = own ? own : ns;
    if (space && *space) {
        tb_code rc = tb_buf_printf(out, "%s.", space);
        if (rc != TB_OK)
            return rc;
    }
    return tb_buf_puts(out, name);
}

static const named *find_named(const back *b, const char *ref, const char *ns)
{
    for (size_t i = 0; i < b->nnames; i++) {
        const char *f = b->names[i].full;
        if (strcmp(f, ref) == 0)
            return &b->names[i];
        /* a short name in the current namespace */
        size_t nl = ns ? strlen(ns) : 0;
        if (nl && strncmp(f, ns, nl) == 0 && f[nl] == '.' && strcmp(f + nl + 1, ref) == 0)
            return &b->names[i];
    }
    return NULL;
}

static void conn_type(back *b, const evt_jv *t, const char *ns, bool optional, const char *field,
                      const evt_jv *dflt, int depth);

/* Connect's "default" of a field: Avro's bytes default (code points 0-255)
 * as Connect's base64. */
static void put_default(back *b, const evt_jv *t, const evt_jv *dflt)
{
    const char *type = evt_jv_type_of(t) == EVT_JV_STRING ? (evt_jv_text(t, &(size_t){0})) : str_of(t, "type");
    key(b, "default");
    if (!type || strcmp(type, "bytes") != 0 || evt_jv_type_of(dflt) != EVT_JV_STRING) {
        if (evt_jv_write(dflt, &b->w) != TB_OK)
            back_fail(b, "a default it cannot copy", NULL);
        return;
    }
    size_t n;
    const unsigned char *p = (const unsigned char *)evt_jv_text(dflt, &n);
    tb_buf raw;
    tb_buf_init(&raw, 0);
    tb_code rc = TB_OK;
    for (size_t i = 0; i < n && rc == TB_OK; i++) {
        unsigned cp = p[i];
        if (cp >= 0xC0 && cp < 0xC4 && i + 1 < n) { /* U+0080..U+00FF */
            cp = ((cp & 0x1F) << 6) | (p[i + 1] & 0x3F);
            i++;
        } else if (cp >= 0x80) {
            rc = TB_ERR_CORRUPT;
            break;
        }
        rc = tb_buf_putc(&raw, (char)cp);
    }
    tb_buf_reset(&b->tmp);
    if (rc == TB_OK)
        rc = tb_buf_base64(&b->tmp, raw.data ? raw.data : "", raw.len);
    if (rc == TB_OK)
        evt_jw_str(&b->w, b->tmp.data ? b->tmp.data : "", b->tmp.len);
    else
        back_fail(b, "a bytes default that is not code points 0-255", NULL);
    tb_buf_free(&raw);
}

static void conn_record(back *b, const evt_jv *rec, const char *ns, bool optional, const char *field, int depth)
{
    tb_buf full;
    tb_buf_init(&full, 0);
    if (full_name(rec, ns, &full) != TB_OK) {
        back_fail(b, "a record without a name", NULL);
        tb_buf_free(&full);
        return;
    }
    const named *me = find_named(b, tb_buf_cstr(&full), NULL);
    if (!me) {
        if (b->nnames == AV_MSG_MAX_NAMES) {
            back_fail(b, "too many records", tb_buf_cstr(&full));
            tb_buf_free(&full);
            return;
        }
        char *f = tb_buf_detach(&full, NULL), *space = strdup(ns ? ns : "");
        if (!f || !space) {
            free(f);
            free(space);
            back_fail(b, "out of memory", NULL);
            return;
        }
        named *nm = &b->names[b->nnames++]; /* owns f and space from here */
        nm->full = f;
        nm->def = rec;
        nm->ns = space;
        me = nm;
    }
    tb_buf_free(&full);
    /* the record's own namespace is the one its fields' names resolve in */
    const char *fns = me->full;
    char *inner = strdup(fns);
    if (!inner) {
        back_fail(b, "out of memory", NULL);
        return;
    }
    char *dot = strrchr(inner, '.');
    if (dot)
        *dot = '\0';
    else
        inner[0] = '\0';
    evt_jw_obj_begin(&b->w);
    key(b, "type");
    str(b, "struct");
    key(b, "optional");
    evt_jw_bool(&b->w, optional);
    const char *cname = str_of(rec, "connect.name");
    if (cname) {
        key(b, "name");
        str(b, cname);
    }
    const evt_jv *ver = evt_jv_get(rec, "connect.version");
    if (ver && evt_jv_type_of(ver) == EVT_JV_NUMBER) {
        key(b, "version");
        if (evt_jv_write(ver, &b->w) != TB_OK)
            back_fail(b, "a version it cannot copy", cname);
    }
    if (field) {
        key(b, "field");
        str(b, field);
    }
    key(b, "fields");
    evt_jw_arr_begin(&b->w);
    const evt_jv *fields = evt_jv_get(rec, "fields");
    if (!fields || evt_jv_type_of(fields) != EVT_JV_ARRAY)
        back_fail(b, "a record without fields", me->full);
    for (size_t i = 0; b->rc == TB_OK && fields && i < evt_jv_size(fields); i++) {
        const evt_jv *f = evt_jv_at(fields, i);
        const char *fname = str_of(f, "name");
        const evt_jv *ft = evt_jv_get(f, "type");
        if (!fname || !ft) {
            back_fail(b, "a field without a name or type", me->full);
            break;
        }
        const evt_jv *dflt = evt_jv_get(f, "default");
        if (dflt && evt_jv_type_of(dflt) == EVT_JV_NULL)
            dflt = NULL;
        bool opt = false;
        const evt_jv *t = ft;
        if (evt_jv_type_of(ft) == EVT_JV_ARRAY) { /* ["null",T] or [T,"null"] */
            if (evt_jv_size(ft) != 2) {
                back_fail(b, "a union that is not a nullable type", fname);
                break;
            }
            for (size_t k = 0; k < 2; k++) {
                const evt_jv *br = evt_jv_at(ft, k);
                size_t n;
                if (evt_jv_type_of(br) == EVT_JV_STRING && strcmp(evt_jv_text(br, &n), "null") == 0)
                    opt = true;
                else
                    t = br;
            }
            if (!opt) {
                back_fail(b, "a union that is not a nullable type", fname);
                break;
            }
        }
        conn_type(b, t, inner, opt, fname, dflt, depth + 1);
    }
    evt_jw_arr_end(&b->w);
    evt_jw_obj_end(&b->w);
    free(inner);
}

static void conn_type(back *b, const evt_jv *t, const char *ns, bool optional, const char *field,
                      const evt_jv *dflt, int depth)
{
    if (b->rc != TB_OK)
        return;
    if (depth > AV_MSG_MAX_DEPTH) {
        back_fail(b, "nested too deep", field);
        return;
    }
    const char *prim = NULL;
    size_t n;
    if (evt_jv_type_of(t) == EVT_JV_STRING) {
        prim = evt_jv_text(t, &n);
        static const char *const simple[] = {"int", "long", "float", "double", "boolean", "string", "bytes", NULL};
        bool is_prim = false;
        for (size_t k = 0; simple[k]; k++)
            is_prim = is_prim || strcmp(prim, simple[k]) == 0;
        if (!is_prim) { /* a record defined before, referred to by name */
            const named *nm = find_named(b, prim, ns);
            if (!nm) {
                back_fail(b, "a reference to a type not defined before", prim);
                return;
            }
            conn_record(b, nm->def, nm->ns, optional, field, depth);
            return;
        }
    } else if (evt_jv_type_of(t) == EVT_JV_OBJECT) {
        prim = str_of(t, "type");
        if (prim && strcmp(prim, "record") == 0) {
            conn_record(b, t, ns, optional, field, depth);
            return;
        }
    }
    if (!prim) {
        back_fail(b, "a type it does not know", field);
        return;
    }
    const char *ctype = str_of(t, "connect.type");
    const char *logical = str_of(t, "logicalType");
    const char *cname = str_of(t, "connect.name");
    const char *type = NULL;
    if (strcmp(prim, "int") == 0)
        type = ctype && (strcmp(ctype, "int8") == 0 || strcmp(ctype, "int16") == 0) ? ctype : "int32";
    else if (strcmp(prim, "long") == 0)
        type = "int64";
    else if (strcmp(prim, "float") == 0 || strcmp(prim, "double") == 0 || strcmp(prim, "boolean") == 0 ||
             strcmp(prim, "string") == 0 || strcmp(prim, "bytes") == 0 || strcmp(prim, "array") == 0)
        type = prim;
    else {
        back_fail(b, "an Avro type the codec does not write", prim);
        return;
    }
    if (!cname && logical) { /* logical types without Connect's name */
        if (strcmp(logical, "decimal") == 0)
            cname = "org.apache.kafka.connect.data.Decimal";
        else if (strcmp(logical, "date") == 0)
            cname = "org.apache.kafka.connect.data.Date";
        else if (strcmp(logical, "time-millis") == 0)
            cname = "org.apache.kafka.connect.data.Time";
        else if (strcmp(logical, "timestamp-millis") == 0)
            cname = "org.apache.kafka.connect.data.Timestamp";
    }
    evt_jw_obj_begin(&b->w);
    key(b, "type");
    str(b, type);
    key(b, "optional");
    evt_jw_bool(&b->w, optional);
    if (dflt)
        put_default(b, t, dflt);
    if (cname) {
        key(b, "name");
        str(b, cname);
    }
    const evt_jv *ver = evt_jv_type_of(t) == EVT_JV_OBJECT ? evt_jv_get(t, "connect.version") : NULL;
    if (ver && evt_jv_type_of(ver) == EVT_JV_NUMBER) {
        key(b, "version");
        if (evt_jv_write(ver, &b->w) != TB_OK)
            back_fail(b, "a version it cannot copy", field);
    }
    const evt_jv *params = evt_jv_type_of(t) == EVT_JV_OBJECT ? evt_jv_get(t, "connect.parameters") : NULL;
    if (params && evt_jv_type_of(params) == EVT_JV_OBJECT) {
        key(b, "parameters");
        if (evt_jv_write(params, &b->w) != TB_OK)
            back_fail(b, "parameters it cannot copy", field);
    } else if (logical && strcmp(logical, "decimal") == 0) {
        const evt_jv *sc = evt_jv_get(t, "scale"), *pr = evt_jv_get(t, "precision");
        key(b, "parameters");
        evt_jw_obj_begin(&b->w);
        key(b, "scale");
        str(b, sc ? evt_jv_text(sc, &n) : "0");
        if (pr) {
            key(b, "connect.decimal.precision");
            str(b, evt_jv_text(pr, &n));
        }
        evt_jw_obj_end(&b->w);
    }
    if (field) {
        key(b, "field");
        str(b, field);
    }
    if (strcmp(type, "array") == 0) {
        const evt_jv *items = evt_jv_get(t, "items");
        if (!items) {
            back_fail(b, "an array without items", field);
            return;
        }
        key(b, "items");
        conn_type(b, items, ns, false, NULL, NULL, depth + 1);
    }
    evt_jw_obj_end(&b->w);
}

tb_code av_msg_connect_schema(const char *avsc, size_t len, tb_buf *out, tb_error *err)
{
    evt_jv *root = NULL;
    tb_code rc = evt_jv_parse(avsc, len, &root, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, TB_ERR_CORRUPT, "Avro writer schema: ");
    back *b = calloc(1, sizeof(*b));
    if (!b) {
        evt_jv_free(root);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    b->err = err;
    tb_buf_init(&b->tmp, 0);
    evt_jw_init(&b->w, out);
    conn_type(b, root, NULL, false, NULL, NULL, 0);
    rc = b->rc;
    if (rc == TB_OK && (rc = evt_jw_finish(&b->w)) != TB_OK)
        rc = tb_error_set(err, rc, false, "Avro writer schema: cannot write its Connect schema");
    for (size_t i = 0; i < b->nnames; i++) {
        free(b->names[i].full);
        free(b->names[i].ns);
    }
    tb_buf_free(&b->tmp);
    free(b);
    evt_jv_free(root);
    return rc;
}

