/*
 * cache_apply: one Kafka message of the wire format (DESIGN 4) -> the cache file.
 *
 * Table topics <prefix>.<db>.<table>:
 *   value null / empty              tombstone: delete the row with this key (key {}: nothing)
 *   envelope op t                   truncate: key {} (tributary) the rows of the message's
 *                                   partition, else (Debezium, key null) the whole table
 *   {"schema":…,"payload":P}        Kafka Connect wrapper: P is the value (null: tombstone)
 *   {"before","after","source","op"} envelope: op c/u/r upsert `after`, op d delete by key
 *   any other object                row format: upsert the value itself
 * Schema topic <prefix>.schema: key {"db","table"}, value the table descriptor
 * (layout atop schema/evt_json.c). A descriptor that only adds columns alters
 * the table; any other change (a column's type, the key, a dropped column)
 * drops the table and replays its topic from the beginning. A column's
 * literal default is declared on the cache column (default_sql), so the rows
 * already there when the column is added, and rows of the topic written
 * before the source added it, take it, as the source's rows did. A
 * descriptor with "renamed_from" renames the old name's cache table when the
 * new name has none, emptied (the new name's topic fills it); one with "dropped" keeps the table (cache.on.drop=keep)
 * or drops it and marks its topic, whose later messages are not applied
 * until the table is described again.
 *
 * The scanner is cache_json (zero allocation): this runs once per message.
 * Errors of the message itself are TB_ERR_INVALID (the caller applies
 * cache.error.policy); anything else is an I/O failure of the cache file.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cache_apply.h"
#include "evt_json.h"
#include "tb_log.h"

tb_code cache_table_name_of(const char *topic, const char *prefix, tb_buf *out)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    tb_buf_reset(out);
    if (pl && strncmp(topic, prefix, pl) == 0 && topic[pl] == '.' && topic[pl + 1])
        return tb_buf_puts(out, topic + pl + 1);
    /* no known prefix: the last two dot-separated parts are <db>.<table> */
    const char *last = strrchr(topic, '.');
    const char *start = topic;
    if (last) {
        for (const char *p = last - 1; p >= topic; p--)
            if (*p == '.') {
                start = p + 1;
                break;
            }
    }
    return tb_buf_puts(out, start);
}

__attribute__((format(printf, 2, 3))) static tb_code bad(tb_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_code rc = tb_error_vset(err, TB_ERR_INVALID, false, fmt, ap);
    va_end(ap);
    return rc;
}

/* ----------------------------------------------------------- schema records */

/* A number as SQLite reads a signed-number literal: [+-]digits[.digits][e[+-]digits]. */
static bool sql_number(const char *p)
{
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static tb_code sql_quoted(tb_buf *out, const char *text)
{
    tb_code rc = tb_buf_putc(out, '\'');
    for (const char *p = text; rc == TB_OK && *p; p++)
        rc = *p == '\'' ? tb_buf_puts(out, "''") : tb_buf_putc(out, *p);
    return rc ? rc : tb_buf_putc(out, '\'');
}

/* The SQL literal of the value the cache stores for a column of evt type
 * `type` whose source default is `text` (the schema record's literal
 * default), as the column's values from the topic are stored (DESIGN 5,
 * cache_value.c); NULL when none can be given: an expression, or a type
 * whose stored value the text does not give without the source's context
 * (TIMESTAMP: the server's time zone; BIT, binary strings, JSON, GEOMETRY,
 * VECTOR). *oom on allocation failure. */
static char *default_sql(const char *type, cache_class cls, const char *text, bool *oom)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = TB_OK;
    bool ok = true;
    if (cls == CC_INT || cls == CC_UINT64 || cls == CC_REAL) {
        if (strcmp(type, "bit") == 0 || !sql_number(text))
            ok = false;
        else if (cls != CC_REAL && (strchr(text, '.') || strchr(text, 'e') || strchr(text, 'E')))
            ok = false;
        else if (cls == CC_UINT64 && strlen(text) >= 19) /* above int64: stored as its digits */
            rc = sql_quoted(&b, text);
        else
            rc = tb_buf_puts(&b, text);
    } else if (cls == CC_TEXT && strcmp(type, "timestamp") != 0) {
        if (strcmp(type, "datetime") == 0 && strlen(text) > 10 && text[10] == ' ') {
            char *t = strdup(text); /* '2024-01-31 10:11:12' is "2024-01-31T10:11:12" in events */
            if (!t)
                rc = TB_ERR_NOMEM;
            else {
                t[10] = 'T';
                rc = sql_quoted(&b, t);
                free(t);
            }
        } else
            rc = sql_quoted(&b, text);
    } else if (cls == CC_JSON && strcmp(type, "set") == 0) {
        /* 'a,c' is ["a","c"] (the canonical JSON text the topic's values have) */
        tb_buf j;
        tb_buf_init(&j, 0);
        rc = tb_buf_putc(&j, '[');
        for (const char *p = text; rc == TB_OK && *p;) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (p != text)
                rc = tb_buf_putc(&j, ',');
            evt_jw w;
            evt_jw_init(&w, &j);
            evt_jw_str(&w, p, n);
            rc = rc ? rc : evt_jw_finish(&w);
            p += n + (e != NULL);
        }
        rc = rc ? rc : tb_buf_putc(&j, ']');
        rc = rc ? rc : sql_quoted(&b, tb_buf_cstr(&j));
        tb_buf_free(&j);
    } else if (cls == CC_ANY && *type == 0) {
        ok = false; /* untyped */
    } else if (cls == CC_ANY) { /* SQLite NUMERIC affinity: a number is a number */
        rc = sql_number(text) ? tb_buf_puts(&b, text) : sql_quoted(&b, text);
    } else {
        ok = false;
    }
    if (rc != TB_OK) {
        *oom = true;
        ok = false;
    }
    char *r = ok ? tb_buf_detach(&b, NULL) : NULL;
    if (ok && !r)
        *oom = true;
    tb_buf_free(&b);
    return r;
}

/* The db or table name of a schema record into out (reset): a string without a NUL character
 * (a table name cannot hold one). TB_ERR_INVALID naming which, else TB_ERR_NOMEM. */
static tb_code decode_name(const cj_val *v, const char *what, tb_buf *out, tb_error *err)
{
    tb_buf_reset(out);
    tb_code rc = cj_str_decode(v->ptr, v->len, out);
    if (rc == TB_ERR_NOMEM)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (rc != TB_OK)
        return tb_error_set(err, TB_ERR_INVALID, false, "schema record: its %s is not a valid JSON string", what);
    if (memchr(out->data ? out->data : "", 0, out->len))
        return tb_error_set(err, TB_ERR_INVALID, false, "schema record: its %s holds a NUL character (\\u0000)",
                            what);
    return TB_OK;
}

/* Parse a descriptor into a new table definition (caller frees). */
static tb_code parse_descriptor(const cj_val *val, cache_table **out, tb_error *err)
{
    cj_val db, tbl, cols, pks, c, m;
    cj_iter it;
    tb_buf tmp;
    tb_code rc = TB_OK;
    cache_table *t = calloc(1, sizeof(*t));
    *out = NULL;
    tb_buf_init(&tmp, 0);
    if (!t)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (val->type != CJ_OBJECT || !cj_obj_get(val, "db", &db) || db.type != CJ_STRING ||
        !cj_obj_get(val, "table", &tbl) || tbl.type != CJ_STRING || !cj_obj_get(val, "columns", &cols) ||
        cols.type != CJ_ARRAY) {
        rc = bad(err, "schema record: %s", "needs db, table and columns");
        goto out;
    }
    if ((rc = decode_name(&db, "db", &tmp, err)) != TB_OK || (rc = decode_name(&tbl, "table", &tmp, err)) != TB_OK)
        goto out;
    tb_buf_reset(&tmp);
    if ((rc = cj_str_decode(db.ptr, db.len, &tmp)) == TB_OK && (rc = tb_buf_putc(&tmp, '.')) == TB_OK) {
        size_t l = tmp.len;
        tb_buf rest;
        tb_buf_init(&rest, 0);
        rc = cj_str_decode(tbl.ptr, tbl.len, &rest);
        rc = rc ? rc : tb_buf_append(&tmp, rest.data ? rest.data : "", rest.len);
        tb_buf_free(&rest);
        t->db_len = l - 1;
    }
    if (rc != TB_OK || !(t->name = strdup(tb_buf_cstr(&tmp)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (cj_obj_get(val, "version", &m) && m.type == CJ_NUMBER) {
        int64_t v;
        if (cj_int64(&m, &v))
            t->version = v;
    }
    size_t n = cj_count(&cols);
    t->cols = calloc(n ? n : 1, sizeof(*t->cols));
    if (!t->cols) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    cj_arr_begin(&cols, &it);
    while (cj_arr_next(&it, &c)) {
        cj_val name, type, st, uns, len;
        if (c.type != CJ_OBJECT || !cj_obj_get(&c, "name", &name) || !cj_obj_get(&c, "type", &type)) {
            rc = bad(err, "schema record of \"%s\": a column lacks name or type", t->name);
            goto out;
        }
        cache_col *col = &t->cols[t->ncols];
        col->name = cj_strdup(&name, &tmp);
        col->type = cj_strdup(&type, &tmp);
        if (!col->name || !col->type) {
            free(col->name);
            free(col->type);
            rc = bad(err, "schema record of \"%s\": bad column name or type", t->name);
            goto out;
        }
        t->ncols++;
        cj_val sc;
        int64_t scale = -1;
        col->scale = cj_obj_get(&c, "scale", &sc) && cj_int64(&sc, &scale) && scale >= 0 && scale < 128
                         ? (int16_t)scale : -1;
        char *source_type = cj_obj_get(&c, "source_type", &st) ? cj_strdup(&st, &tmp) : NULL;
        bool is_unsigned = cj_obj_get(&c, "unsigned", &uns) && uns.type == CJ_TRUE;
        col->cls = cache_class_of(col->type, source_type, is_unsigned);
        if (strcmp(col->type, "bit") == 0 && cj_obj_get(&c, "length", &len) && len.len == 1 && len.ptr[0] == '1')
            col->cls = CC_BOOL;
        free(source_type);
        cj_val dv, de;
        if (cj_obj_get(&c, "default", &dv) && dv.type == CJ_STRING &&
            !(cj_obj_get(&c, "default_expr", &de) && de.type == CJ_TRUE)) {
            char *text = cj_strdup(&dv, &tmp);
            bool oom = !text;
            col->dflt_sql = text ? default_sql(col->type, col->cls, text, &oom) : NULL;
            free(text);
            if (oom) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
        }
    }
    /* primary key: "primary_key" names in key order */
    if (cj_obj_get(val, "primary_key", &pks) && pks.type == CJ_ARRAY) {
        t->pk = calloc(cj_count(&pks) + 1, sizeof(size_t));
        if (!t->pk) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        cj_arr_begin(&pks, &it);
        while (cj_arr_next(&it, &c)) {
            size_t i;
            for (i = 0; i < t->ncols; i++)
                if (c.type == CJ_STRING && cj_key_eq(c.ptr, c.len, t->cols[i].name))
                    break;
            if (i == t->ncols) {
                rc = bad(err, "schema record of \"%s\": primary key names an unknown column", t->name);
                goto out;
            }
            t->pk[t->npk++] = i;
            t->cols[i].pk = (int)t->npk;
        }
    }
    if (t->npk == 0) {
        rc = bad(err, "schema record of \"%s\": no primary key (the cache needs one)", t->name);
        goto out;
    }
out:
    tb_buf_free(&tmp);
    if (rc != TB_OK)
        cache_table_free(t);
    else
        *out = t;
    return rc;
}

/* Why nt cannot replace t in place, or NULL when it can (only added columns). */
static const char *incompatible(const cache_table *t, const cache_table *nt, tb_buf *why)
{
    tb_buf_reset(why);
    if (t->npk != nt->npk)
        return tb_buf_printf(why, "the primary key changed") == TB_OK ? tb_buf_cstr(why) : "key";
    for (size_t k = 0; k < t->npk; k++)
        if (strcmp(t->cols[t->pk[k]].name, nt->cols[nt->pk[k]].name) != 0)
            return tb_buf_printf(why, "the primary key changed") == TB_OK ? tb_buf_cstr(why) : "key";
    for (size_t i = 0; i < t->ncols; i++) {
        size_t j;
        for (j = 0; j < nt->ncols; j++)
            if (strcmp(t->cols[i].name, nt->cols[j].name) == 0)
                break;
        if (j == nt->ncols && (long)i == cache_rowid_col(t))
            continue; /* the cache's column of the rows' rowids, not the source's */
        if (j == nt->ncols)
            return tb_buf_printf(why, "column \"%s\" was dropped", t->cols[i].name) == TB_OK ? tb_buf_cstr(why)
                                                                                              : "drop";
        const cache_col *a = &t->cols[i], *b = &nt->cols[j];
        if (strcmp(a->type, b->type) == 0 && a->cls == b->cls)
            continue;
        /* an untyped column (a row arrived before its schema record) may take a type
         * whose values it already stores the same way */
        if (*a->type == 0 && (b->cls == CC_INT || b->cls == CC_UINT64 || b->cls == CC_REAL || b->cls == CC_TEXT ||
                              b->cls == CC_ANY))
            continue;
        return tb_buf_printf(why, "column \"%s\" changed type from %s to %s", a->name, *a->type ? a->type : "untyped",
                             b->type) == TB_OK
                   ? tb_buf_cstr(why)
                   : "type";
    }
    return NULL;
}

/* The state key that marks a dropped table's topic, in b. */
static const char *dropped_key(tb_buf *b, const char *topic)
{
    tb_buf_reset(b);
    if (tb_buf_printf(b, "dropped %s", topic) != TB_OK)
        return "dropped ";
    return tb_buf_cstr(b);
}

/* db.table and topic of the db and table members of o (a descriptor or its renamed_from). */
static tb_code names_of(const cj_val *o, const char *prefix, tb_buf *name, size_t *db_len, tb_buf *topic,
                        tb_error *err)
{
    cj_val db, tbl;
    if (o->type != CJ_OBJECT || !cj_obj_get(o, "db", &db) || db.type != CJ_STRING || !cj_obj_get(o, "table", &tbl) ||
        tbl.type != CJ_STRING)
        return bad(err, "schema record: %s", "needs db and table");
    tb_buf d, t;
    tb_buf_init(&d, 0);
    tb_buf_init(&t, 0);
    tb_buf_reset(name);
    tb_buf_reset(topic);
    tb_code rc = decode_name(&db, "db", &d, err);
    rc = rc ? rc : decode_name(&tbl, "table", &t, err);
    if (rc != TB_OK) {
        tb_buf_free(&d);
        tb_buf_free(&t);
        return rc;
    }
    rc = rc ? rc : tb_buf_printf(name, "%s.%s", tb_buf_cstr(&d), tb_buf_cstr(&t));
    rc = rc ? rc : evt_topic_name(prefix, tb_buf_cstr(&d), tb_buf_cstr(&t), topic);
    *db_len = d.len;
    tb_buf_free(&d);
    tb_buf_free(&t);
    return rc == TB_OK ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
}

/* A schema record that says the table was dropped: cache.on.drop. */
static tb_code apply_dropped(cache_store *s, const char *prefix, const cj_val *v, tb_error *err)
{
    tb_buf name, topic, key;
    size_t db_len;
    tb_buf_init(&name, 0);
    tb_buf_init(&topic, 0);
    tb_buf_init(&key, 0);
    tb_code rc = names_of(v, prefix, &name, &db_len, &topic, err);
    if (rc != TB_OK)
        goto out;
    cache_table *t = cache_store_find(s, tb_buf_cstr(&name));
    if (!s->drop_on_drop) {
        if (t)
            TB_INFO("cache", "table \"%s\": dropped at the source; its rows are kept (cache.on.drop=keep)",
                    tb_buf_cstr(&name));
        goto out;
    }
    if (t) {
        TB_INFO("cache", "table \"%s\": dropped at the source; dropped here too (cache.on.drop=drop)",
                tb_buf_cstr(&name));
        if ((rc = cache_store_drop(s, t, err)) != TB_OK)
            goto out;
    }
    /* rows of its topic read after this would make the table again: not applied */
    rc = cache_store_put_state(s, dropped_key(&key, tb_buf_cstr(&topic)), 1, err);
out:
    tb_buf_free(&name);
    tb_buf_free(&topic);
    tb_buf_free(&key);
    return rc;
}

/* A descriptor of a table the cache does not hold under its name, renamed
 * from one it holds: that table becomes this one (*t), emptied. Its rows come
 * back from the new name's topic (the connector sends every row there after a
 * RENAME): the old topic's last messages (a delete the source made before the
 * RENAME, read after this record, which comes first in each batch) are not
 * applied, so a row kept from the old table could be one the source deleted.
 * The table is then what the new topic holds, live as when replayed from
 * scratch. */
static tb_code apply_renamed(cache_store *s, const char *prefix, const cj_val *v, const cache_table *nt,
                             cache_table **t, tb_error *err)
{
    cj_val from;
    *t = NULL;
    if (!cj_obj_get(v, "renamed_from", &from) || from.type != CJ_OBJECT)
        return TB_OK;
    tb_buf name, topic;
    size_t db_len;
    tb_buf_init(&name, 0);
    tb_buf_init(&topic, 0);
    tb_code rc = names_of(&from, prefix, &name, &db_len, &topic, err);
    cache_table *old = rc == TB_OK ? cache_store_find(s, tb_buf_cstr(&name)) : NULL;
    if (rc == TB_OK && strcmp(tb_buf_cstr(&name), nt->name) != 0) {
        /* the old name is gone at the source: its topic's messages (the rows before the rename and
         * their deletes, read after this record when the cache replays from scratch) do not make
         * its table again, as after a dropped record; a record describing it again undoes this */
        tb_buf key;
        tb_buf_init(&key, 0);
        rc = cache_store_put_state(s, dropped_key(&key, tb_buf_cstr(&topic)), 1, err);
        tb_buf_free(&key);
    }
    if (rc == TB_OK && old) {
        TB_INFO("cache", "table \"%s\": renamed to \"%s\" at the source; renamed here too, its rows read again "
                "from the new name's topic", old->name, nt->name);
        if ((rc = cache_store_rename(s, old, nt->name, nt->db_len, nt->topic, err)) == TB_OK &&
            (rc = cache_store_truncate(s, old, err)) == TB_OK)
            *t = old;
    }
    tb_buf_free(&name);
    tb_buf_free(&topic);
    return rc;
}

tb_code cache_apply_schema(cache_store *s, const char *prefix, const char *key, size_t klen, const char *value,
                           size_t vlen, cache_rewind_fn rewind, void *opaque, tb_error *err)
{
    cj_val v;
    cache_table *nt = NULL, *t;
    tb_buf why, topic;
    tb_code rc;
    (void)key;
    (void)klen;
    if (!value || vlen == 0)
        return TB_OK; /* a table's descriptor removed: keep the cache table as it is */
    if ((rc = cj_parse(value, vlen, &v, err)) != TB_OK)
        return tb_error_prefix(err, rc, "schema record: ");
    cj_val flag;
    if (cj_obj_get(&v, "dropped", &flag) && flag.type == CJ_TRUE)
        return apply_dropped(s, prefix, &v, err);
    if ((rc = parse_descriptor(&v, &nt, err)) != TB_OK)
        return rc;
    if (!nt)
        return bad(err, "schema record: %s", "no table descriptor");
    tb_buf_init(&why, 0);
    tb_buf_init(&topic, 0);
    /* the sink's topic of db.table (sanitized names: evt_topic_name) */
    char *db = strndup(nt->name, nt->db_len);
    rc = db ? evt_topic_name(prefix, db, nt->name + nt->db_len + 1, &topic) : TB_ERR_NOMEM;
    free(db);
    if (rc != TB_OK || !(nt->topic = strdup(tb_buf_cstr(&topic)))) {
        cache_table_free(nt);
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (cache_store_get_state(s, dropped_key(&why, nt->topic), 0) &&
        (rc = cache_store_put_state(s, dropped_key(&why, nt->topic), 0, err)) != TB_OK)
        goto fail; /* described again: its messages apply */
    t = cache_store_find(s, nt->name);
    if (!t && (t = cache_store_find_topic(s, nt->topic)) != NULL) {
        /* named from its topic before this record arrived: the source's name from now on */
        TB_INFO("cache", "table \"%s\": named \"%s\" from its schema record", t->name, nt->name);
        if ((rc = cache_store_rename(s, t, nt->name, nt->db_len, nt->topic, err)) != TB_OK)
            goto fail;
    }
    if (!t && (rc = apply_renamed(s, prefix, &v, nt, &t, err)) != TB_OK)
        goto fail;
    if (!t) {
        /* the store owns nt from here on, and frees it if it cannot create the table */
        long long version = (long long)nt->version;
        size_t ncols = nt->ncols;
        if ((rc = cache_store_create(s, nt, err)) == TB_OK)
            TB_INFO("cache", "table \"%s\": created from schema version %lld (%zu columns)", nt->name, version, ncols);
        goto out;
    }
    const char *reason = t->inferred ? "its columns were inferred before a schema record arrived"
                                     : incompatible(t, nt, &why);
    if (reason) {
        TB_WARN("cache", "table \"%s\": schema version %lld is incompatible (%s): rebuilding it from topic %s",
                nt->name, (long long)nt->version, reason, nt->topic);
        if ((rc = cache_store_drop(s, t, err)) != TB_OK || (rc = cache_store_del_offsets(s, nt->topic, err)) != TB_OK)
            goto fail;
        char *tp = strdup(nt->topic);
        rc = cache_store_create(s, nt, err);
        nt = NULL;
        if (rc == TB_OK && rewind)
            rc = rewind(tp, opaque, err);
        free(tp);
        goto out;
    }
    /* compatible: adopt types of untyped columns, add new columns */
    for (size_t j = 0; rc == TB_OK && j < nt->ncols; j++) {
        size_t i;
        for (i = 0; i < t->ncols; i++)
            if (strcmp(t->cols[i].name, nt->cols[j].name) == 0)
                break;
        if (i == t->ncols)
            rc = cache_store_add_column(s, t, nt->cols[j].name, nt->cols[j].type, nt->cols[j].cls,
                                        nt->cols[j].dflt_sql, err);
        else if (strcmp(t->cols[i].type, nt->cols[j].type) != 0)
            rc = cache_store_update_column(s, t, i, nt->cols[j].type, nt->cols[j].cls, err);
    }
    if (rc == TB_OK && (!t->topic || strcmp(t->topic, nt->topic) != 0))
        rc = cache_store_set_topic(s, t, nt->topic, err);
    t->version = nt->version;
fail:
    cache_table_free(nt);
out:
    tb_buf_free(&why);
    tb_buf_free(&topic);
    return rc;
}

/* ----------------------------------------------------------- table messages */

static tb_code infer_table(cache_store *s, const char *topic, const char *prefix, const cj_val *row,
                           const cj_val *key, bool warn, cache_table **out, tb_error *err)
{
    tb_code rc;
    cj_iter it;
    const char *k;
    size_t kl;
    cj_val v;
    tb_buf name;
    cache_table *t = calloc(1, sizeof(*t));
    size_t cap = cj_count(row) + cj_count(key) + 1;
    *out = NULL;
    tb_buf_init(&name, 0);
    if (!t || !(t->cols = calloc(cap, sizeof(*t->cols))) || !(t->pk = calloc(cap, sizeof(size_t)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    t->inferred = true;
    for (int pass = 0; pass < 2; pass++) {
        cj_obj_begin(pass == 0 ? key : row, &it);
        while (cj_obj_next(&it, &k, &kl, &v)) {
            size_t i;
            for (i = 0; i < t->ncols; i++)
                if (cj_key_eq(k, kl, t->cols[i].name))
                    break;
            if (i < t->ncols || (pass == 0 && cj_key_eq(k, kl, EVT_KEY_ROWID)))
                continue; /* a key holding NULL: its row's rowid (cache_store_rowid_col), not a key column */
            tb_buf_reset(&name);
            if ((rc = cj_str_decode(k, kl, &name)) != TB_OK || !(t->cols[i].name = strdup(tb_buf_cstr(&name))) ||
                !(t->cols[i].type = strdup(""))) {
                free(t->cols[i].name);
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            t->cols[i].scale = -1;
            t->ncols++;
            if (pass == 0) {
                t->pk[t->npk++] = i;
                t->cols[i].pk = (int)t->npk;
            }
        }
    }
    if ((rc = cache_table_name_of(topic, prefix, &name)) != TB_OK || !(t->name = strdup(tb_buf_cstr(&name))) ||
        !(t->topic = strdup(topic))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (cache_store_find(s, t->name)) {
        rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\" already holds topic %s", t->name,
                          cache_store_find(s, t->name)->topic ? cache_store_find(s, t->name)->topic : "(none)");
        goto out;
    }
    if (warn) /* tributary's encoding: its schema record exists on <prefix>.schema, unread */
        TB_WARN("cache",
                "table \"%s\": no schema record for topic %s was read: %zu columns inferred from its first row, "
                "untyped (binary columns stay base64 text); the cache reads <prefix>.schema when topic.prefix is set "
                "or cache.topics takes a topic of that prefix: fix that and rebuild the cache",
                t->name, topic, t->ncols);
    else
        TB_INFO("cache", "table \"%s\": no schema record, %zu columns inferred from the first row of %s", t->name,
                t->ncols, topic);
    rc = cache_store_create(s, t, err);
    if (rc == TB_OK)
        *out = t;
    t = NULL;
out:
    cache_table_free(t);
    tb_buf_free(&name);
    return rc;
}

/* The top-level members the decoder looks at, in one pass over the value. */
typedef struct top_members {
    cj_val before, after, source, op, schema, payload, ddl, ts_us;
    bool has_before, has_after, has_source, has_op, has_schema, has_payload, has_ddl, has_ts_us;
    size_t n;
} top_members;

static void pick(const cj_val *v, top_members *tm)
{
    cj_iter it;
    const char *k;
    size_t kl;
    cj_val m;
    memset(tm, 0, sizeof(*tm));
    cj_obj_begin(v, &it);
    while (cj_obj_next(&it, &k, &kl, &m)) {
        tm->n++;
#define TB_PICK(name)                                                                                                  \
    if (kl == sizeof(#name) - 1 && memcmp(k, #name, kl) == 0) {                                                        \
        tm->name = m;                                                                                                  \
        tm->has_##name = true;                                                                                         \
        continue;                                                                                                      \
    }
        TB_PICK(before)
        TB_PICK(after)
        TB_PICK(source)
        TB_PICK(op)
        TB_PICK(schema)
        TB_PICK(payload)
        TB_PICK(ddl)
        TB_PICK(ts_us)
#undef TB_PICK
    }
}

/* Members of an envelope's after image taken while the value is validated (up to this many). */
#define CACHE_ROW_MEMBERS 64

/* The table of a topic: known by topic, or described by a schema record before its topic was seen. */
static tb_code table_of(cache_store *s, const char *topic, const char *prefix, cache_table **out, tb_error *err)
{
    tb_code rc = TB_OK;
    cache_table *t = cache_store_find_topic(s, topic);
    if (!t) {
        tb_buf name;
        tb_buf_init(&name, 0);
        rc = cache_table_name_of(topic, prefix, &name);
        t = rc == TB_OK ? cache_store_find(s, tb_buf_cstr(&name)) : NULL;
        tb_buf_free(&name);
        if (t && !t->topic)
            rc = cache_store_set_topic(s, t, topic, err);
        else if (t && strcmp(t->topic, topic) != 0)
            t = NULL; /* the name is another topic's table: the caller reports it */
    }
    *out = t;
    return rc;
}

/* Whether obj (a key or a row image) has a member for each of t's key columns. */
static bool has_key_columns(const cache_table *t, const cj_val *obj)
{
    cj_val v;
    if (obj->type != CJ_OBJECT)
        return false;
    for (size_t k = 0; k < t->npk; k++)
        if (!cj_obj_get(obj, t->cols[t->pk[k]].name, &v))
            return false;
    return true;
}

/* A record of t's topic whose key lacks t's key columns was written under an earlier key of the
 * table (a primary key added or dropped, or key.columns changed: DESIGN 6a). It is passed over,
 * upsert or delete alike: the resnapshot that follows a key change sends every row under the new
 * key, and its reconcile step deletes every old key, so the topic read as a table holds the rows
 * under the current key only. Applying them instead would make the cache depend on the order in
 * which it reads the partitions (a row's old and new keys are on different partitions). */
static void pass_earlier_key(cache_store *s, cache_table *t)
{
    if (!t->earlier_key_said)
        TB_INFO("cache", "table \"%s\": records under an earlier key of the table (its key changed) are passed "
                "over; the rows are those its topic holds under the current key", t->name);
    t->earlier_key_said = true;
    s->applied++;
}

tb_code cache_apply_msg(cache_store *s, const char *topic, const char *prefix, int32_t partition, const char *key,
                        size_t klen, const char *value, size_t vlen, tb_error *err)
{
    cj_val kv, vv, row, ks = {0}, vs = {0}, payload;
    top_members tm;
    tb_code rc;
    cj_member mem[CACHE_ROW_MEMBERS];
    size_t nmem = 0;
    const cj_member *row_mem = NULL; /* row's members, when the scan took them all */
    bool tombstone = !value || vlen == 0;
    bool del = tombstone, has_ks = false, has_vs = false;
    bool has_key = key && klen > 0;
    char op = 0;
    /* Kafka Connect JSON repeats the schema in every message: when it is the one the table was
     * typed from, byte for byte, only the payload is parsed */
    const char *ptext;
    size_t plen;
    bool key_cx = has_key && klen > 10 && key[0] == '{' && key[1] == '"' && key[2] == 's';
    bool val_cx = !tombstone && vlen > 10 && value[0] == '{' && value[1] == '"' && value[2] == 's';
    cache_table *tc = key_cx || val_cx ? cache_store_find_topic(s, topic) : NULL;
    bool same_vs = false;
    if (has_key) {
        if (tc && key_cx && cache_cx_same_schema(key, klen, tc->cx_kschema, tc->cx_klen, &ptext, &plen)) {
            if ((rc = cj_parse(ptext, plen, &kv, err)) != TB_OK)
                return tb_error_prefix(err, rc, "key: ");
            ks = (cj_val){.type = CJ_OBJECT, .ptr = tc->cx_kschema, .len = tc->cx_klen};
            has_ks = true;
        } else {
            if ((rc = cj_parse(key, klen, &kv, err)) != TB_OK)
                return tb_error_prefix(err, rc, "key: ");
            if (cache_cx_unwrap(&kv, &ks, &payload)) { /* Kafka Connect JSON key */
                kv = payload;
                has_ks = ks.type == CJ_OBJECT;
            }
        }
    }
    if (!tombstone) {
        static const char *const names[] = {"before", "after", "source", "op", "schema", "payload", "ddl", "ts_us"};
        cj_val vals[8] = {{0}};
        bool found[8];
        if (tc && val_cx && cache_cx_same_schema(value, vlen, tc->cx_vschema, tc->cx_vlen, &ptext, &plen)) {
            same_vs = true;
            value = ptext;
            vlen = plen;
        }
        if ((rc = cj_parse_top_members(value, vlen, &vv, names, 8, vals, found, &tm.n, 1, mem, CACHE_ROW_MEMBERS,
                                       &nmem, err)) != TB_OK)
            return tb_error_prefix(err, rc, "value: ");
        if (vv.type != CJ_OBJECT)
            return tb_error_set(err, TB_ERR_INVALID, false, "value is not a JSON object");
        tm.before = vals[0], tm.has_before = found[0];
        tm.after = vals[1], tm.has_after = found[1];
        tm.source = vals[2], tm.has_source = found[2];
        tm.op = vals[3], tm.has_op = found[3];
        tm.schema = vals[4], tm.has_schema = found[4];
        tm.payload = vals[5], tm.has_payload = found[5];
        tm.ddl = vals[6], tm.has_ddl = found[6];
        tm.ts_us = vals[7], tm.has_ts_us = found[7];
        bool wrapped = !same_vs && tm.n == 2 && tm.has_schema && tm.has_payload;
        if (same_vs) { /* the payload of a known schema: parsed above */
            vs = (cj_val){.type = CJ_OBJECT, .ptr = tc->cx_vschema, .len = tc->cx_vlen};
            has_vs = true;
        } else if (wrapped) { /* Kafka Connect JSON wrapper */
            vv = tm.payload;
            vs = tm.schema;
            has_vs = vs.type == CJ_OBJECT;
            if (vv.type == CJ_OBJECT)
                pick(&vv, &tm);
        }
        if (vv.type == CJ_NULL) {
            del = true;
        } else if (vv.type != CJ_OBJECT) {
            return tb_error_set(err, TB_ERR_INVALID, false, "value is not a JSON object");
        } else if (tm.has_op && tm.has_source && tm.has_after && tm.op.type == CJ_STRING && tm.op.len == 1) {
            op = tm.op.ptr[0];
            row = tm.after;
            if (op == 'd')
                del = true;
            else if (op == 't' || op == 'm')
                ; /* truncate (below); a logical decoding message: no row */
            else if (op != 'c' && op != 'u' && op != 'r')
                return tb_error_set(err, TB_ERR_INVALID, false, "envelope with unknown op \"%c\"", op);
            else if (row.type != CJ_OBJECT)
                return tb_error_set(err, TB_ERR_INVALID, false, "envelope op %c without an after image", op);
            else if (!wrapped && nmem <= CACHE_ROW_MEMBERS)
                row_mem = mem; /* the top-level after: its members were taken by the scan */
        } else if (tm.has_ddl && tm.has_source && !tm.has_op) {
            s->applied++; /* a Debezium schema change event (<topic.prefix> topic): not a table */
            return TB_OK;
        } else {
            row = vv;
        }
    }
    if (op == 'm') {
        s->applied++;
        return TB_OK;
    }
    if (op == 't') { /* truncate */
        cache_table *t;
        /* tributary's (key {}, after a delete per key of the table): the rows of its partition, which
         * are those written before it there (other partitions may be ahead, with rows written after);
         * Debezium's (key null): the table */
        bool scoped = has_key && kv.type == CJ_OBJECT && kv.len <= 2;
        int n = 0;
        if ((rc = table_of(s, topic, prefix, &t, err)) == TB_OK && t)
            rc = scoped ? cache_store_delete_partition(s, t, partition, &n, err) : cache_store_truncate(s, t, err);
        if (rc == TB_OK)
            s->applied++;
        return rc;
    }
    if (!has_key)
        return tb_error_set(err, TB_ERR_INVALID, false, "message has no key");
    if (del && kv.type == CJ_OBJECT && kv.len <= 2 && !has_ks) {
        s->applied++; /* the tombstone of a truncate record's key {}: no row */
        return TB_OK;
    }
    if (kv.type != CJ_OBJECT || kv.len <= 2)
        return tb_error_set(err, TB_ERR_INVALID, false, "key is not a non-empty JSON object");
    cache_table *t = cache_store_find_topic(s, topic);
    if (!t) { /* a table dropped here (cache.on.drop=drop) is not made again by its topic's rows */
        tb_buf k;
        tb_buf_init(&k, 0);
        bool dropped = cache_store_get_state(s, dropped_key(&k, topic), 0) != 0;
        tb_buf_free(&k);
        if (dropped) {
            s->applied++;
            return TB_OK;
        }
    }
    if (has_ks || has_vs) { /* typed by the message's Connect schemas */
        if (!t && (rc = table_of(s, topic, prefix, &t, err)) != TB_OK)
            return rc;
        if ((rc = cache_cx_table(s, topic, prefix, has_ks ? &ks : NULL, has_vs ? &vs : NULL, &kv, &t,
                                 err)) != TB_OK)
            return rc;
    }
    /* an envelope with ts_us and no Connect schema is in Debezium's encoding (tributary's
     * envelope has no ts_us): a table typed from a schema record decodes it by its types */
    if (t && !has_vs && op && tm.has_ts_us && !t->cx_conv && !t->inferred)
        cache_dbz_typed(s, t);
    if (t && t->cx_conv && (rc = cache_cx_key(s, t, &kv, &kv, err)) != TB_OK)
        return rc;
    if (t && !has_key_columns(t, &kv)) {
        pass_earlier_key(s, t);
        return TB_OK;
    }
    if (del) {
        rc = t ? cache_store_delete(s, t, &kv, err) : TB_OK; /* nothing cached for an unknown table */
        if (rc == TB_OK)
            s->applied++;
        return rc;
    }
    if (!t) {
        tb_buf name;
        tb_buf_init(&name, 0);
        rc = cache_table_name_of(topic, prefix, &name);
        t = rc == TB_OK ? cache_store_find(s, tb_buf_cstr(&name)) : NULL;
        tb_buf_free(&name);
        if (t && !t->topic) /* described by a schema record before its topic was seen */
            rc = cache_store_set_topic(s, t, topic, err);
        else if (!t)
            rc = infer_table(s, topic, prefix, &row, &kv, !(op && tm.has_ts_us), &t, err);
        if (rc != TB_OK)
            return rc;
    }
    if (!has_vs && op && tm.has_ts_us && !t->cx_conv && t->inferred)
        cache_dbz_warn_schemaless(s, t, &row);
    if (t->cx_conv) {
        cj_member *cm;
        if ((rc = cache_cx_row(s, t, &row, row_mem, nmem, &cm, &nmem, err)) != TB_OK)
            return rc;
        row_mem = cm;
    }
    rc = cache_store_upsert(s, t, &row, row_mem, nmem, &kv, partition, err);
    if (rc == TB_OK)
        s->applied++;
    return rc;
}
