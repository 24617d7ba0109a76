/*
 * evt_json_schema: topic names (evt_topic_name: the prefix, database and
 * table sanitized as Debezium does, a name over Kafka's limit shortened
 * with a hash) and schema records (the "<topic.prefix>.schema" topic's key
 * and value for a table; the formats are in evt_json.c's header comment).
 */
#include <stdio.h>
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

