/*
 * ksink_topics: the Kafka sink's tables and their topics. Each table's topic
 * is made once (ksink_admin.c creates it) and its schema record written on
 * <prefix>.schema before its first row (ksink_announce); the schema topic is
 * read back once, so a record the topic holds is not written again
 * (ksink_keys.c); the tables and topics the schema topic knows are walked for
 * the reconcile step (ksink_tables_known, ksink_topics_gone).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "evt_json.h"
#include "ksink.h"
#include "ksink_int.h"
#include "tb_log.h"

void ksink_table_free(void *p)
{
    ksink_table *te = p;
    if (!te)
        return;
    if (te->rkt)
        rd_kafka_topic_destroy(te->rkt);
    evt_table_unref(te->last);
    free(te->db);
    free(te->table);
    free(te->topic);
    free(te);
}

/* The entry of table t (found or added). */
static ksink_table *ksink_tab_get(ksink *ks, evt_table *t, tb_error *err)
{
    if (ks->last_tab && ks->last_tab->last == t)
        return ks->last_tab;
    const char *db = evt_table_db(t), *name = evt_table_name(t);
    void **v = NULL;
    tb_buf_reset(&ks->tabkey);
    if (tb_buf_puts(&ks->tabkey, db) != TB_OK || tb_buf_putc(&ks->tabkey, '\0') != TB_OK ||
        tb_buf_puts(&ks->tabkey, name) != TB_OK || tb_hmap_put(&ks->tabs, ks->tabkey.data, ks->tabkey.len, &v) != TB_OK) {
        tb_error_set(err, TB_ERR_NOMEM, false, "table %s.%s: out of memory", db, name);
        return NULL;
    }
    ksink_table *e = *v;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e || !(e->db = strdup(db)) || !(e->table = strdup(name))) {
            ksink_table_free(e);
            tb_error_set(err, TB_ERR_NOMEM, false, "table %s.%s: out of memory", db, name);
            return NULL;
        }
        *v = e;
    }
    ks->last_tab = e;
    return e;
}

typedef struct ksink_ensure_arg {
    const char *topic;
    int partitions;
    bool compact;
} ksink_ensure_arg;

static tb_code ksink_ensure_once(ksink *ks, void *arg, tb_error *err)
{
    const ksink_ensure_arg *a = arg;
    return ksink_topic_ensure_until(ks->rk, ks->c, a->topic, a->partitions, a->compact, &ks->failed, err);
}

/* ksink_topic_ensure for this sink, through ksink_wait_kafka. */
static tb_code ksink_ensure(ksink *ks, const char *topic, int partitions, bool compact, tb_error *err)
{
    ksink_ensure_arg a = {topic, partitions, compact};
    char what[320];
    snprintf(what, sizeof what, "topic %s", topic);
    return ksink_wait_kafka(ks, what, ksink_ensure_once, &a, err);
}

tb_code ksink_aux_ensure(ksink *ks, ksink_aux_topic *a, int partitions, bool compact, tb_error *err)
{
    tb_code rc;
    if (a->ensured && a->rkt)
        return TB_OK;
    if (!a->ensured && (rc = ksink_ensure(ks, a->name, partitions, compact, err)) != TB_OK)
        return rc;
    if (!a->rkt && !(a->rkt = rd_kafka_topic_new(ks->rk, a->name, NULL)))
        return kafka_error(err, rd_kafka_last_error(), "topic %s", a->name);
    a->ensured = true;
    return TB_OK;
}

/* The schema topic ensured and its records read (once; one that cannot be read is a WARN, and
 * an empty set: every record written again). */
#define KSINK_READY_PROBE_MS 5000 /* ksink_ready's metadata request */

static tb_code ksink_schema_ready(ksink *ks, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_aux_ensure(ks, &ks->schema, 0, true, err)) != TB_OK)
        return rc;
    if (!ks->schema_seen) {
        tb_error lerr;
        tb_error_clear(&lerr);
        if (ksink_schema_seen_load(ks, ks->schema.name, &lerr) != TB_OK)
            TB_WARN("ksink", "schema topic %s not read (%s): schema records are written again", ks->schema.name,
                    lerr.msg);
    }
    return TB_OK;
}

tb_code ksink_ready(ksink *ks, tb_error *err)
{
    kafka_cluster_md md;
    tb_code rc = kafka_cluster_metadata(ks->rk, NULL, KSINK_READY_PROBE_MS, &md, err);
    if (rc == TB_OK)
        rc = ksink_schema_ready(ks, err);
    if (rc != TB_OK && !ks->failed)
        rd_kafka_poll(ks->rk, 0); /* a refused login is what the failure means */
    if (rc != TB_OK && ks->failed)
        return ksink_failed(ks, err);
    return rc;
}

/* ksink_schema_seen_each: the db and table of each key ({"db":…,"table":…}, canonical JSON),
 * NUL-separated pairs in a buffer. */
typedef struct gone_names {
    tb_buf names;
    tb_code rc;
} gone_names;

static void gone_collect(void *opaque, const char *key, size_t klen)
{
    gone_names *g = opaque;
    json_error_t je;
    json_t *k = json_loadb(key, klen, 0, &je);
    const char *db = json_string_value(json_object_get(k, "db")), *table = json_string_value(json_object_get(k, "table"));
    if (db && table && g->rc == TB_OK &&
        ((g->rc = tb_buf_append(&g->names, db, strlen(db) + 1)) != TB_OK ||
         (g->rc = tb_buf_append(&g->names, table, strlen(table) + 1)) != TB_OK))
        g->rc = TB_ERR_NOMEM;
    json_decref(k);
}

tb_code ksink_tables_known(ksink *ks, ksink_table_fn fn, void *opaque, tb_error *err)
{
    tb_code rc = ksink_schema_ready(ks, err);
    if (rc != TB_OK)
        return rc;
    gone_names g = {.rc = TB_OK};
    tb_buf_init(&g.names, 0);
    ksink_schema_seen_each(ks, gone_collect, &g);
    if ((rc = g.rc) != TB_OK)
        tb_error_set(err, rc, false, "schema topic %s: out of memory", ks->schema.name);
    for (size_t at = 0; rc == TB_OK && at < g.names.len;) {
        const char *db = g.names.data + at, *table = db + strlen(db) + 1;
        at = (size_t)(table + strlen(table) + 1 - g.names.data);
        rc = fn(opaque, db, table, err);
    }
    tb_buf_free(&g.names);
    return rc;
}

tb_code ksink_topics_gone(ksink *ks, ksink_captured_fn captured, ksink_gone_fn gone, void *opaque, tb_error *err)
{
    if (!cfg_get_bool(ks->c, CFGK_TOPIC_CREATE))
        return TB_OK;
    tb_code rc = ksink_schema_ready(ks, err);
    if (rc != TB_OK)
        return rc;
    gone_names g = {.rc = TB_OK};
    tb_buf_init(&g.names, 0);
    tb_buf topic;
    tb_buf_init(&topic, 0);
    ksink_schema_seen_each(ks, gone_collect, &g);
    if ((rc = g.rc) != TB_OK)
        tb_error_set(err, rc, false, "schema topic %s: out of memory", ks->schema.name);
    size_t checked = 0, made = 0;
    int timeout_ms = ksink_request_timeout_ms(ks->c);
    for (size_t at = 0; rc == TB_OK && at < g.names.len;) {
        const char *db = g.names.data + at, *table = db + strlen(db) + 1;
        at = (size_t)(table + strlen(table) + 1 - g.names.data);
        if (!captured(opaque, db, table))
            continue;
        tb_buf_reset(&topic);
        if ((rc = evt_topic_name(ks->copts.topic_prefix, db, table, &topic)) != TB_OK) {
            tb_error_set(err, rc, false, "topic name of %s.%s: out of memory", db, table);
            break;
        }
        bool missing = false;
        checked++;
        if ((rc = kafka_topic_missing(ks->rk, tb_buf_cstr(&topic), timeout_ms, &missing, err)) != TB_OK || !missing)
            continue;
        if ((rc = gone(opaque, db, table, tb_buf_cstr(&topic), err)) == TB_ERR_NOT_FOUND) {
            rc = TB_OK; /* not captured after all */
            continue;
        }
        if (rc != TB_OK)
            break;
        if ((rc = ksink_ensure(ks, tb_buf_cstr(&topic), 0, true, err)) != TB_OK) {
            tb_error_prefix(err, rc, "table %s.%s: ", db, table);
            break;
        }
        made++;
    }
    if (rc == TB_OK)
        TB_DEBUG("ksink", "topics of the %zu captured tables %s describes: checked, %zu of them made again", checked,
                 ks->schema.name, made);
    tb_buf_free(&topic);
    tb_buf_free(&g.names);
    return rc;
}

/* The schema record of t, unless the schema topic's latest record for the
 * table says the same, but for the version number when an earlier run wrote
 * it (the topic is read once, before the first record of the run). Versions
 * continue the topic's numbering: a descriptor's own number, which starts at
 * 1 in every run, is shifted so that a record the topic holds keeps its
 * number and a new one gets a higher number than the topic's latest. */
static tb_code ksink_announce(ksink *ks, ksink_table *te, evt_table *t, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_schema_ready(ks, err)) != TB_OK)
        return rc;
    uint32_t own = evt_table_version(t), held = 0;
    int64_t v = (int64_t)own + te->vshift;
    if (v < 1)
        v = 1;
    bool same = false;
    tb_buf_reset(&ks->scratch);
    tb_buf_reset(&ks->scratch2);
    if ((rc = evt_json_schema_key(t, &ks->scratch)) != TB_OK ||
        (rc = evt_json_schema_value_as(t, (uint32_t)v, &ks->scratch2)) != TB_OK)
        return tb_error_set(err, rc, false, "schema record of %s.%s: cannot encode", evt_table_db(t),
                            evt_table_name(t));
    te->announced = true;
    te->version = own;
    if (ksink_schema_seen(ks, ks->scratch.data, ks->scratch.len, ks->scratch2.data, ks->scratch2.len, &held,
                          &same)) {
        if (same) {
            te->vshift = (int64_t)held - own;
            TB_INFO("ksink", "schema of %s.%s version %" PRIu32 ": %s holds it already", evt_table_db(t),
                    evt_table_name(t), held, ks->schema.name);
            return TB_OK;
        }
        if (v <= (int64_t)held) { /* a new version: after the topic's latest */
            v = (int64_t)held + 1;
            te->vshift = v - own;
            tb_buf_reset(&ks->scratch2);
            if ((rc = evt_json_schema_value_as(t, (uint32_t)v, &ks->scratch2)) != TB_OK)
                return tb_error_set(err, rc, false, "schema record of %s.%s: cannot encode", evt_table_db(t),
                                    evt_table_name(t));
        }
    }
    if ((rc = ksink_produce_tracked(ks, ks->schema.rkt, NULL, ks->scratch.data, ks->scratch.len, ks->scratch2.data,
                                    ks->scratch2.len, err)) != TB_OK)
        return rc;
    ksink_schema_seen_set(ks, ks->scratch.data, ks->scratch.len, ks->scratch2.data, ks->scratch2.len);
    TB_INFO("ksink", "schema of %s.%s version %" PRId64 " written to %s", evt_table_db(t), evt_table_name(t), v,
            ks->schema.name);
    return TB_OK;
}

void ksink_schema_forget(ksink *ks)
{
    void *v;
    for (size_t it = 0; tb_hmap_next(&ks->tabs, &it, NULL, NULL, &v);)
        if (v)
            ((ksink_table *)v)->announced = false;
    ksink_schema_seen_free(ks);
}

/* The table's topic, made when the sink has not made it yet: before the table's first schema
 * record, so that a record in the schema topic means the topic was made (ksink_topics_gone). */
static tb_code ksink_table_topic(ksink *ks, ksink_table *te, const evt_table *t, tb_error *err)
{
    tb_code rc;
    if (!te->topic) {
        tb_buf_reset(&ks->scratch);
        if ((rc = evt_json_topic(&ks->copts, t, &ks->scratch)) != TB_OK)
            return tb_error_set(err, rc, false, "topic name of %s.%s", evt_table_db(t), evt_table_name(t));
        /* two tables whose names sanitize alike would mix their keys in one topic */
        void *ov;
        for (size_t it = 0; tb_hmap_next(&ks->tabs, &it, NULL, NULL, &ov);) {
            const ksink_table *o = ov;
            if (o && o != te && o->topic && strcmp(o->topic, ks->scratch.data) == 0)
                return tb_error_set(err, TB_ERR_CONFIG, false,
                                    "tables %s.%s and %s.%s both map to topic %s (characters outside "
                                    "[a-zA-Z0-9._-] become '_'): exclude one of them with tables.exclude",
                                    o->db, o->table, evt_table_db(t), evt_table_name(t), ks->scratch.data);
        }
        if ((rc = ksink_ensure(ks, ks->scratch.data, 0, true, err)) != TB_OK)
            return tb_error_prefix(err, rc, "table %s.%s: ", evt_table_db(t), evt_table_name(t));
        if (!(te->rkt = rd_kafka_topic_new(ks->rk, ks->scratch.data, NULL)))
            return kafka_error(err, rd_kafka_last_error(), "topic %s", ks->scratch.data);
        if (!(te->topic = strdup(ks->scratch.data)))
            return tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory", ks->scratch.data);
        evt_codec_warn_lossy(&ks->copts, t); /* once per table and run */
    }
    return TB_OK;
}

bool ksink_topic_made(ksink *ks, const char *db, const char *table, const char *topic)
{
    tb_buf k;
    tb_buf_init(&k, 0);
    bool made = false;
    if (tb_buf_puts(&k, db) == TB_OK && tb_buf_putc(&k, '\0') == TB_OK && tb_buf_puts(&k, table) == TB_OK) {
        void **v = tb_hmap_find(&ks->tabs, k.data, k.len);
        const ksink_table *te = v ? *v : NULL;
        made = te && te->topic && strcmp(te->topic, topic) == 0;
    }
    tb_buf_free(&k);
    return made;
}

/* Topic and schema record of the event's table, when needed. */
tb_code ksink_prepare_table(ksink *ks, evt_table *t, ksink_table **out, tb_error *err)
{
    tb_code rc;
    ksink_table *te = ksink_tab_get(ks, t, err);
    if (!te)
        return TB_ERR_NOMEM;
    if (te->last == t) {
        *out = te;
        return TB_OK;
    }
    if ((rc = ksink_table_topic(ks, te, t, err)) != TB_OK)
        return rc;
    /* A new version, or other columns: not the same version described by another reader (the
     * snapshot's descriptor, then the binlog's, differ in lengths and declared types). */
    if (evt_table_keys_only(t)) { /* no table version: nothing to announce, nothing to compare with */
        *out = te;
        return TB_OK;
    }
    if (!te->announced || te->version != evt_table_version(t) || !te->last || !evt_table_same_columns(te->last, t))
        if ((rc = ksink_announce(ks, te, t, err)) != TB_OK)
            return rc;
    evt_table_unref(te->last);
    te->last = evt_table_ref(t);
    *out = te;
    return TB_OK;
}

tb_code ksink_announce_table(ksink *ks, evt_table *t, tb_error *err)
{
    tb_code rc;
    if ((rc = ksink_failed(ks, err)) != TB_OK)
        return rc;
    if (ks->eos && (rc = ksink_txn_begin(ks, err)) != TB_OK)
        return rc;
    ksink_table *te = ksink_tab_get(ks, t, err);
    if (!te)
        return TB_ERR_NOMEM;
    /* a table described without a row (a RENAME's new name): its topic first; a dropped one's
     * is left as it is */
    if (!evt_table_dropped(t) && (rc = ksink_table_topic(ks, te, t, err)) != TB_OK)
        return rc;
    if ((rc = ksink_announce(ks, te, t, err)) != TB_OK) {
        if (ks->eos && !ks->failed && !ks->gate_refused &&
            rd_kafka_fatal_error(ks->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
            return ksink_eos_abort(ks, err);
        return rc;
    }
    evt_table_unref(te->last);
    te->last = NULL;
    if (evt_table_dropped(t))
        te->announced = false; /* a table created again under the name is announced again */
    else
        te->last = evt_table_ref(t);
    return TB_OK;
}
