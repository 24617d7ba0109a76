/*
 * evt_json_schema: topic names (evt_topic_name: the prefix, database and
 * table sanitized as Debezium does, a name over Kafka's limit shortened
 * with a hash) and schema records (the "<topic.prefix>.schema" topic's key
 * and value for a table; the formats are in evt_json.c's header comment).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json_int.h"

/* ============================================================ topics, schema records */

tb_code evt_topic_name(const char *prefix, const char *db, const char *table, tb_buf *out)
{
    prefix = prefix ? prefix : "";
    db = db ? db : "";
    size_t start = out->len;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 of the unsanitized name */
    const char *parts[3] = {prefix, db, table};
    bool first = true;
    tb_code rc = TB_OK;
    for (int i = 0; i < 3 && rc == TB_OK; i++) {
        const unsigned char *p = (const unsigned char *)parts[i];
        if (!*p && i < 2)
            continue;
        if (!first) {
            rc = tb_buf_putc(out, '.');
            h = (h ^ '.') * 0x100000001b3ull;
        }
        first = false;
        for (; *p && rc == TB_OK; p++) {
            h = (h ^ *p) * 0x100000001b3ull;
            unsigned char c = *p;
            if ((c & 0xC0) == 0x80)
                continue; /* a UTF-8 continuation byte: its character is one '_' already */
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
            rc = tb_buf_putc(out, ok ? (char)c : '_');
        }
    }
    if (rc == TB_OK && out->len - start > EVT_TOPIC_MAX) {
        char suffix[18];
        snprintf(suffix, sizeof suffix, "_%016llx", (unsigned long long)h);
        out->len = start + EVT_TOPIC_MAX - 17;
        rc = tb_buf_puts(out, suffix);
    }
    return rc;
}

tb_code evt_json_topic_into(const evt_codec_opts *o, const char *db, const char *table, tb_buf *out)
{
    return evt_topic_name(o ? o->topic_prefix : NULL, db, table, out);
}

tb_code evt_json_topic(const evt_codec_opts *o, const evt_table *t, tb_buf *out)
{
    return evt_json_topic_into(o, evt_table_db(t), evt_table_name(t), out);
}

tb_code evt_json_schema_topic(const evt_codec_opts *o, tb_buf *out)
{
    return evt_json_topic_into(o, "", "schema", out);
}

tb_code evt_json_schema_key(const evt_table *t, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    put_cstr(&w, EVT_JW_KEY_ARGS("db"), evt_table_db(t));
    put_cstr(&w, EVT_JW_KEY_ARGS("table"), evt_table_name(t));
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}

tb_code evt_json_schema_value(const evt_table *t, tb_buf *out)
{
    return evt_json_schema_value_as(t, evt_table_version(t), out);
}

tb_code evt_json_schema_value_as(const evt_table *t, uint32_t version, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    put_cstr(&w, EVT_JW_KEY_ARGS("db"), evt_table_db(t));
    put_cstr(&w, EVT_JW_KEY_ARGS("table"), evt_table_name(t));
    put_u(&w, EVT_JW_KEY_ARGS("version"), version);
    EVT_JW_KEY(&w, "names_known");
    evt_jw_bool(&w, evt_table_names_known(t));
    EVT_JW_KEY(&w, "columns");
    evt_jw_arr_begin(&w);
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        const evt_column *c = evt_table_column(t, i);
        evt_jw_obj_begin(&w);
        put_cstr(&w, EVT_JW_KEY_ARGS("name"), c->name);
        put_cstr(&w, EVT_JW_KEY_ARGS("type"), evt_type_name(c->type));
        put_cstr(&w, EVT_JW_KEY_ARGS("source_type"), c->source_type);
        EVT_JW_KEY(&w, "nullable");
        evt_jw_bool(&w, c->nullable);
        EVT_JW_KEY(&w, "unsigned");
        evt_jw_bool(&w, c->is_unsigned);
        put_u(&w, EVT_JW_KEY_ARGS("pk"), (uint64_t)c->pk_ordinal);
        put_u(&w, EVT_JW_KEY_ARGS("length"), c->length);
        put_u(&w, EVT_JW_KEY_ARGS("precision"), c->precision);
        put_u(&w, EVT_JW_KEY_ARGS("scale"), c->scale);
        put_cstr(&w, EVT_JW_KEY_ARGS("charset"), c->charset);
        EVT_JW_KEY(&w, "labels");
        if (c->labels) {
            evt_jw_arr_begin(&w);
            for (size_t k = 0; k < c->nlabels; k++)
                evt_jw_str(&w, c->labels[k], strlen(c->labels[k]));
            evt_jw_arr_end(&w);
        } else
            evt_jw_null(&w);
        put_cstr(&w, EVT_JW_KEY_ARGS("default"), c->default_text);
        EVT_JW_KEY(&w, "default_expr");
        evt_jw_bool(&w, c->default_expr);
        evt_jw_obj_end(&w);
    }
    evt_jw_arr_end(&w);
    EVT_JW_KEY(&w, "primary_key");
    evt_jw_arr_begin(&w);
    for (size_t k = 0; k < evt_table_npk(t); k++) {
        const evt_column *c = evt_table_column(t, evt_table_pk_col(t, k));
        evt_jw_str(&w, c->name, strlen(c->name));
    }
    evt_jw_arr_end(&w);
    EVT_JW_KEY(&w, "dropped");
    evt_jw_bool(&w, evt_table_dropped(t));
    EVT_JW_KEY(&w, "renamed_from");
    if (evt_table_renamed_from_table(t)) {
        evt_jw_obj_begin(&w);
        put_cstr(&w, EVT_JW_KEY_ARGS("db"), evt_table_renamed_from_db(t));
        put_cstr(&w, EVT_JW_KEY_ARGS("table"), evt_table_renamed_from_table(t));
        evt_jw_obj_end(&w);
    } else
        evt_jw_null(&w);
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}

/* ------------------------------------------------------------ reading a schema record back */

/* A string member of o as a NUL-terminated copy (NULL: absent, null or not a string; *oom set when
 * a copy failed). */
static char *jv_strdup(const evt_jv *o, const char *key, bool *oom)
{
    const evt_jv *v = evt_jv_get(o, key);
    if (!v || evt_jv_type_of(v) != EVT_JV_STRING)
        return NULL;
    size_t n = 0;
    const char *t = evt_jv_text(v, &n);
    char *c = malloc(n + 1);
    if (!c) {
        *oom = true;
        return NULL;
    }
    memcpy(c, t, n);
    c[n] = '\0';
    return c;
}

static bool jv_true(const evt_jv *o, const char *key)
{
    const evt_jv *v = evt_jv_get(o, key);
    return v && evt_jv_type_of(v) == EVT_JV_BOOL && evt_jv_bool(v);
}

/* A number member that fits 32 bits unsigned, else 0. */
static uint32_t jv_u32(const evt_jv *o, const char *key)
{
    const evt_jv *v = evt_jv_get(o, key);
    if (!v || evt_jv_type_of(v) != EVT_JV_NUMBER)
        return 0;
    size_t n = 0;
    const char *t = evt_jv_text(v, &n);
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9' || x > UINT32_MAX)
            return 0;
        x = x * 10 + (uint64_t)(t[i] - '0');
    }
    return x <= UINT32_MAX ? (uint32_t)x : 0;
}

/* Column i of t from its member of "columns". NULL, or what is wrong with it. */
static const char *column_parse(evt_table *t, size_t i, const evt_jv *c)
{
    bool oom = false;
    const char *why = NULL;
    char *name = jv_strdup(c, "name", &oom), *type = jv_strdup(c, "type", &oom),
         *source = jv_strdup(c, "source_type", &oom), *charset = jv_strdup(c, "charset", &oom),
         *dflt = jv_strdup(c, "default", &oom);
    const evt_jv *labels = evt_jv_get(c, "labels");
    char **lab = NULL;
    size_t nl = labels && evt_jv_type_of(labels) == EVT_JV_ARRAY ? evt_jv_size(labels) : 0;
    evt_type ty = type ? evt_type_from_name(type) : EVT_T_UNKNOWN;
    if (oom)
        why = "out of memory";
    else if (evt_jv_type_of(c) != EVT_JV_OBJECT || !name || ty == EVT_T_UNKNOWN)
        why = "a column without a name or a known type";
    else if (evt_table_set_column(t, i, name, ty, source, jv_true(c, "nullable"), jv_true(c, "unsigned")) != TB_OK ||
             evt_table_set_column_details(t, i, jv_u32(c, "length"), jv_u32(c, "precision"), jv_u32(c, "scale"),
                                          charset) != TB_OK ||
             evt_table_set_default(t, i, dflt, jv_true(c, "default_expr")) != TB_OK)
        why = "out of memory";
    if (!why && nl > 0) {
        if (!(lab = calloc(nl, sizeof(*lab))))
            why = "out of memory";
        for (size_t k = 0; !why && k < nl; k++) {
            const evt_jv *l = evt_jv_at(labels, k);
            size_t n = 0;
            const char *txt = evt_jv_type_of(l) == EVT_JV_STRING ? evt_jv_text(l, &n) : NULL;
            if (!txt)
                why = "a label that is not a string";
            else if (!(lab[k] = strndup(txt, n)))
                why = "out of memory";
        }
        if (!why && evt_table_set_labels(t, i, (const char *const *)lab, nl) != TB_OK)
            why = "out of memory";
    }
    for (size_t k = 0; lab && k < nl; k++)
        free(lab[k]);
    free(lab);
    free(name);
    free(type);
    free(source);
    free(charset);
    free(dflt);
    return why;
}

tb_code evt_json_schema_parse(const char *db, const char *table, const char *text, size_t len, evt_table **out,
                              tb_error *err)
{
    *out = NULL;
    evt_jv *root = NULL;
    tb_code rc = evt_jv_parse(text, len, &root, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "the schema record of %s.%s: ", db, table);
    const evt_jv *cols = evt_jv_get(root, "columns"), *pk = evt_jv_get(root, "primary_key");
    const char *why = NULL;
    evt_table *t = NULL;
    size_t *pkc = NULL;
    if (evt_jv_type_of(root) != EVT_JV_OBJECT || !cols || evt_jv_type_of(cols) != EVT_JV_ARRAY || !pk ||
        evt_jv_type_of(pk) != EVT_JV_ARRAY)
        why = "no columns or primary_key";
    size_t n = why ? 0 : evt_jv_size(cols), npk = why ? 0 : evt_jv_size(pk);
    if (!why && (!(t = evt_table_new(db, table, n)) || !(pkc = calloc(npk + 1, sizeof(*pkc)))))
        why = "out of memory";
    for (size_t i = 0; !why && i < n; i++)
        why = column_parse(t, i, evt_jv_at(cols, i));
    for (size_t k = 0; !why && k < npk; k++) {
        const evt_jv *v = evt_jv_at(pk, k);
        size_t nlen = 0;
        const char *name = evt_jv_type_of(v) == EVT_JV_STRING ? evt_jv_text(v, &nlen) : NULL;
        long col = -1;
        for (size_t i = 0; name && col < 0 && i < n; i++) {
            const char *cn = evt_table_column(t, i)->name;
            if (strlen(cn) == nlen && memcmp(cn, name, nlen) == 0)
                col = (long)i;
        }
        if (col < 0)
            why = "primary_key names no column";
        else
            pkc[k] = (size_t)col;
    }
    if (!why && evt_table_set_pk(t, pkc, npk) != TB_OK)
        why = "out of memory";
    const evt_jv *rf = why ? NULL : evt_jv_get(root, "renamed_from");
    if (rf && evt_jv_type_of(rf) == EVT_JV_OBJECT) {
        bool oom = false;
        char *rdb = jv_strdup(rf, "db", &oom), *rtable = jv_strdup(rf, "table", &oom);
        if (oom || (rdb && rtable && evt_table_set_renamed_from(t, rdb, rtable) != TB_OK))
            why = "out of memory";
        free(rdb);
        free(rtable);
    }
    if (!why) {
        uint32_t ver = jv_u32(root, "version");
        const evt_jv *nk = evt_jv_get(root, "names_known");
        evt_table_set_version(t, ver ? ver : 1);
        evt_table_set_names_known(t, !(nk && evt_jv_type_of(nk) == EVT_JV_BOOL && !evt_jv_bool(nk)));
        evt_table_seal(t);
        *out = t;
        t = NULL;
    }
    evt_table_unref(t);
    free(pkc);
    evt_jv_free(root);
    if (why)
        return tb_error_set(err, strcmp(why, "out of memory") == 0 ? TB_ERR_NOMEM : TB_ERR_CORRUPT, false,
                            "the schema record of %s.%s does not read: %s", db, table, why);
    return TB_OK;
}
