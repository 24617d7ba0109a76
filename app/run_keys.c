/*
 * run_keys: delete, in a table's topic, the keys it holds that the table
 * does not have: one piece of code for the statements that remove rows
 * without row events (TRUNCATE, DROP TABLE with ddl.drop.policy=tombstone,
 * the old name of a RENAME: every key) and for the reconcile step after a
 * resnapshot (every key outside the table's key set; DESIGN 6a).
 *
 * The keys come from the topic itself (ksink_topic_keys: the topic read to
 * its end after a flush). Each becomes a delete event whose before image is
 * the key's members, rendered by the sink as a delete event and a tombstone
 * at the caller's position. A key whose members are not the table's key
 * columns (the key changed: a keyless table that gained a primary key, a
 * new primary key) is refused for a statement (the topic cannot be emptied
 * key by key) and, for a reconcile, deleted under a descriptor made from
 * its own members (keys_only), so the records of the old key go too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_cast.h"
#include "app_run.h"
#include "evt_json.h"
#include "snap_incremental.h"
#include "snap_keys.h"
#include "tb_clock.h"
#include "tb_hmap.h"
#include "tb_kset.h"
#include "tb_log.h"
#include "tb_num.h"

typedef struct keys_ctx {
    run_ctx *r;
    const run_keys_at *at;
    const char *db, *table;
    evt_table *t;     /* the table's descriptor; NULL until made from its topic's keys */
    evt_table *alt;   /* reconcile: a descriptor of another key's members (keys_only) */
    evt_event *e;
    tb_buf scratch;
    tb_position pos;
    uint64_t n;
} keys_ctx;

/* A descriptor made from the members of a key of the topic (keys_only):
 * its events carry those members only. One reference for the caller. */
static evt_table *keys_table(const char *db, const char *table, const evt_jv *obj)
{
    size_t n = evt_jv_size(obj);
    evt_table *t = evt_table_new(db, table, n);
    size_t *pk = calloc(n ? n : 1, sizeof(*pk));
    tb_code rc = t && pk ? TB_OK : TB_ERR_NOMEM;
    for (size_t i = 0; rc == TB_OK && i < n; i++) {
        size_t kl;
        const char *k = evt_jv_key_at(obj, i, &kl);
        char *name = strndup(k, kl);
        rc = name ? evt_table_set_column(t, i, name, EVT_T_UNKNOWN, NULL, false, false) : TB_ERR_NOMEM;
        free(name);
        pk[i] = i;
    }
    if (rc == TB_OK)
        rc = evt_table_set_pk(t, pk, n);
    free(pk);
    if (rc != TB_OK) {
        evt_table_unref(t);
        return NULL;
    }
    evt_table_set_keys_only(t);
    evt_table_seal(t);
    return t;
}

/* Whether the members of obj are exactly t's key columns. */
static bool keys_match(const evt_table *t, const evt_jv *obj)
{
    if (evt_jv_size(obj) != evt_table_npk(t))
        return false;
    for (size_t i = 0; i < evt_jv_size(obj); i++) {
        size_t kl;
        const char *k = evt_jv_key_at(obj, i, &kl);
        char name[256];
        if (kl >= sizeof name)
            return false;
        memcpy(name, k, kl);
        name[kl] = 0;
        long col = evt_table_find(t, name);
        if (col < 0 || evt_table_column(t, (size_t)col)->pk_ordinal == 0)
            return false;
    }
    return true;
}

/* An integer or text key member as the typed value of its column, so that every value encoding
 * renders it in the before image as it renders the column (Debezium's writes JSON values as
 * strings): integers of integer columns, strings of text columns. Anything else (other column
 * types, a descriptor made from the topic's keys) goes in as JSON; the message key itself is the
 * topic's bytes whatever the image holds (evt_event_set_wire_key). */
static bool keys_fill_typed(evt_event *e, const evt_column *c, size_t col, const evt_jv *m)
{
    size_t n;
    const char *text = evt_jv_text(m, &n);
    if (!c || !text)
        return false;
    switch (c->type) {
    case EVT_T_TINYINT: case EVT_T_SMALLINT: case EVT_T_MEDIUMINT: case EVT_T_INT: case EVT_T_BIGINT:
    case EVT_T_YEAR: case EVT_T_SQLITE_INTEGER: {
        if (evt_jv_type_of(m) != EVT_JV_NUMBER || n == 0 || n > 20)
            return false;
        char buf[24];
        memcpy(buf, text, n);
        buf[n] = '\0';
        uint64_t u;
        if (buf[0] == '-') {
            if (!tb_parse_u64(buf + 1, (uint64_t)INT64_MAX + 1, &u))
                return false;
            evt_set_int(e, EVT_BEFORE, col, u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u);
        } else {
            if (!tb_parse_u64(buf, UINT64_MAX, &u))
                return false;
            if (c->is_unsigned || u > (uint64_t)INT64_MAX)
                evt_set_uint(e, EVT_BEFORE, col, u);
            else
                evt_set_int(e, EVT_BEFORE, col, (int64_t)u);
        }
        return true;
    }
    case EVT_T_CHAR: case EVT_T_VARCHAR: case EVT_T_TEXT: case EVT_T_SQLITE_TEXT:
        if (evt_jv_type_of(m) != EVT_JV_STRING)
            return false;
        evt_set_string(e, EVT_BEFORE, col, text, n);
        return true;
    default:
        return false;
    }
}

/* The before image of x->e (reset to a delete of t): the key's members. */
static tb_code keys_fill(keys_ctx *x, const evt_table *t, const evt_jv *obj)
{
    evt_event_reset(x->e, EVT_OP_DELETE, TB_UNCONST(t)); /* the event holds a reference */
    for (size_t i = 0; i < evt_jv_size(obj); i++) {
        size_t kl;
        const char *k = evt_jv_key_at(obj, i, &kl);
        char name[256];
        if (kl >= sizeof name)
            return TB_ERR_INVALID;
        memcpy(name, k, kl);
        name[kl] = 0;
        long col = evt_table_find(t, name);
        if (col < 0)
            return TB_ERR_INVALID;
        const evt_jv *m = evt_jv_at(obj, i);
        if (evt_jv_type_of(m) == EVT_JV_NULL) {
            evt_set_null(x->e, EVT_BEFORE, (size_t)col);
            continue;
        }
        if (keys_fill_typed(x->e, evt_table_column(t, (size_t)col), (size_t)col, m))
            continue;
        evt_jw w;
        tb_buf_reset(&x->scratch);
        evt_jw_init(&w, &x->scratch);
        if (evt_jv_write(m, &w) != TB_OK || evt_jw_finish(&w) != TB_OK)
            return TB_ERR_NOMEM;
        evt_set_json(x->e, EVT_BEFORE, (size_t)col, x->scratch.data, x->scratch.len);
    }
    return TB_OK;
}

/* One key the topic holds: a delete event with the key's members as its before image. */
static tb_code keys_one(void *opaque, const char *key, size_t klen, tb_error *err)
{
    keys_ctx *x = opaque;
    const run_keys_at *at = x->at;
    int kshow = (int)(klen > 200 ? 200 : klen);
    evt_jv *v = NULL;
    tb_code rc = evt_jv_parse(key, klen, &v, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "%s.%s: %s: unreadable key %.*s in its topic: ", x->db, x->table, at->what,
                               kshow, key);
    const evt_jv *obj = v;
    if (evt_jv_type_of(v) == EVT_JV_OBJECT && evt_jv_get(v, "schema") && evt_jv_get(v, "payload"))
        obj = evt_jv_get(v, "payload"); /* key.schemas=true: Kafka Connect JSON */
    if (evt_jv_type_of(obj) == EVT_JV_OBJECT && evt_jv_size(obj) == 0) {
        evt_jv_free(v); /* the key of an op "t" record whose tombstone was lost: no row */
        return TB_OK;
    }
    const evt_table *t = x->t;
    if (evt_jv_type_of(obj) != EVT_JV_OBJECT) {
        rc = TB_ERR_INVALID;
    } else if (!x->t && !(t = x->t = keys_table(x->db, x->table, obj))) {
        rc = TB_ERR_NOMEM;
    } else if (!keys_match(x->t, obj)) {
        if (!at->any_key)
            rc = TB_ERR_INVALID;
        else if (!x->alt || !keys_match(x->alt, obj)) { /* the records of another key: deleted as they are */
            evt_table_unref(x->alt);
            if (!(x->alt = keys_table(x->db, x->table, obj)))
                rc = TB_ERR_NOMEM;
        }
        t = x->alt;
    }
    if (rc == TB_OK && !x->e && !(x->e = evt_event_new(EVT_OP_DELETE, TB_UNCONST(t))) /* a reference held */)
        rc = TB_ERR_NOMEM;
    if (rc == TB_OK)
        rc = keys_fill(x, t, obj);
    evt_jv_free(v);
    if (rc == TB_ERR_NOMEM)
        return tb_error_set(err, rc, false, "out of memory");
    if (rc != TB_OK)
        return tb_error_set(err, rc, false,
                            "%s.%s: %s: key %.*s in its topic does not match the table's key columns (the key "
                            "changed?); the topic cannot be emptied key by key: delete the topic and snapshot the "
                            "table again, or set ddl.truncate.policy=fail",
                            x->db, x->table, at->what, kshow, key);
    if (evt_event_error(x->e))
        return tb_error_set(err, evt_event_error(x->e)->code, false, "%s.%s: %s: %s", x->db, x->table, at->what,
                            evt_event_error(x->e)->msg);
    x->pos.row = ++x->n;
    evt_event_set_position(x->e, &x->pos);
    evt_event_set_connector(x->e, at->conn);
    evt_event_set_txid(x->e, at->txid);
    evt_event_set_commit_ts_ms(x->e, at->ts_ms);
    evt_event_set_last_in_tx(x->e, false);
    evt_event_set_wire_key(x->e, key, klen); /* the topic's own bytes, whatever the encoding renders */
    return run_send(x->r, x->e, err);
}

tb_code run_keys_delete(run_ctx *r, evt_table *t, const char *db, const char *table, const tb_kset *keep,
                        const run_keys_at *at, uint64_t *n, tb_error *err)
{
    keys_ctx x;
    memset(&x, 0, sizeof(x));
    x.r = r;
    x.at = at;
    x.db = db;
    x.table = table;
    x.t = t ? evt_table_ref(t) : NULL;
    tb_buf_init(&x.scratch, 0);
    tb_position_init(&x.pos);
    tb_code rc = at->pos ? tb_position_copy(&x.pos, at->pos) : TB_OK;
    x.pos.row = 0;
    evt_table *topic_t = t ? evt_table_ref(t) : evt_table_new(db, table, 0); /* names the topic */
    if (rc != TB_OK || !topic_t) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = sink_topic_keys(r->sink, topic_t, keep, keys_one, &x, err);
out:
    *n = x.n;
    evt_event_free(x.e);
    evt_table_unref(x.t);
    evt_table_unref(x.alt);
    evt_table_unref(topic_t);
    tb_buf_free(&x.scratch);
    tb_position_free(&x.pos);
    return rc;
}

tb_code run_reconcile(run_ctx *r, evt_table *t, const char *db, const char *table, const tb_kset *keep,
                      const run_keys_at *at, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_KEYS))
        return TB_OK; /* sink=stdout to a pipe: nothing to read back */
    int64_t t0 = tb_mono_ms();
    uint64_t n = 0;
    run_keys_at a = *at;
    a.any_key = true;
    a.what = "reconcile";
    TB_INFO("run", "%s.%s: reconcile after %s: reading the keys its topic holds", db, table, at->what);
    tb_code rc = run_keys_delete(r, t, db, table, keep, &a, &n, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "%s.%s: reconcile after %s: ", db, table, at->what);
    r->reconciled_keys += n;
    tb_buf where;
    tb_buf_init(&where, 0);
    if (at->pos && at->pos->kind != TB_POS_NONE)
        tb_position_format(at->pos, &where);
    if (n > 0)
        TB_WARN("run", "%s.%s: reconcile after %s: %" PRIu64 " key(s) its topic held that the table no longer has "
                       "deleted (delete event and tombstone each) at %s, %zu key(s) kept, %lld ms",
                db, table, at->what, n, where.len ? tb_buf_cstr(&where) : "?", keep ? keep->n : (size_t)0,
                (long long)(tb_mono_ms() - t0));
    else
        TB_INFO("run", "%s.%s: reconcile after %s: its topic holds no key the table lacks (%zu key(s), %lld ms)", db,
                table, at->what, keep ? keep->n : (size_t)0, (long long)(tb_mono_ms() - t0));
    tb_buf_free(&where);
    return TB_OK;
}

/* ------------------------------------------------------------ key sets of the source */

typedef struct keyscan_ctx {
    run_ctx *r;
    tb_kset *keys;
} keyscan_ctx;

static tb_code keyscan_row(void *opaque, const evt_event *ev, tb_error *err)
{
    keyscan_ctx *k = opaque;
    uint64_t d;
    tb_code rc = sink_key_digest(k->r->sink, ev, &d, err);
    if (rc == TB_OK && tb_kset_put(k->keys, d, NULL) != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the table's keys");
    return rc;
}

/* One attempt of run_retry at the table's keys (snap_keys_scan): a scan cut
 * by a connection error starts again from nothing. */
typedef struct keyscan_arg {
    const char *db, *table;
    evt_table **t;
    keyscan_ctx *k;
} keyscan_arg;

static tb_code keyscan_once(run_ctx *r, void *arg, tb_error *err)
{
    keyscan_arg *a = arg;
    evt_table_unref(*a->t);
    *a->t = NULL;
    tb_kset_free(a->k->keys);
    tb_kset_init(a->k->keys);
    return snap_keys_scan(r->cfg, a->db, a->table, a->t, keyscan_row, a->k, err);
}

tb_code run_reconcile_mysql(run_ctx *r, const char *db, const char *table, const run_keys_at *at, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_KEYS))
        return TB_OK;
    tb_kset keys;
    tb_kset_init(&keys);
    evt_table *t = NULL;
    keyscan_ctx k = {.r = r, .keys = &keys};
    keyscan_arg a = {db, table, &t, &k};
    char what[600];
    snprintf(what, sizeof what, "%s.%s: the keys of its reconcile step", db, table);
    tb_code rc = run_retry(r, what, keyscan_once, &a, err);
    if (rc == TB_ERR_NOT_FOUND || rc == TB_ERR_CONFIG) {
        /* gone (renamed or dropped since, or no key now): its statement, read later, says what to do */
        TB_INFO("run", "%s.%s: no reconcile after %s: %s", db, table, at->what, err->msg);
        tb_error_clear(err);
        rc = TB_OK;
    } else if (rc == TB_OK)
        rc = run_reconcile(r, t, db, table, &keys, at, err);
    else
        tb_error_prefix(err, rc, "%s.%s: reconcile after %s: ", db, table, at->what);
    evt_table_unref(t);
    tb_kset_free(&keys);
    return rc;
}

/* ------------------------------------------------------------ a blocking snapshot */

void run_snapkeys_init(run_snapkeys *sk)
{
    memset(sk, 0, sizeof(*sk));
    tb_kset_init(&sk->keys);
    tb_hmap_init(&sk->done);
}

void run_snapkeys_free(run_snapkeys *sk)
{
    tb_kset_free(&sk->keys);
    tb_hmap_free(&sk->done, NULL);
    evt_table_unref(sk->t);
    tb_position_free(&sk->pos);
    sk->t = NULL;
}

/* The rows of sk->t are all sent: its reconcile step. */
static tb_code snapkeys_close(run_ctx *r, run_snapkeys *sk, tb_error *err)
{
    if (!sk->t)
        return TB_OK;
    run_keys_at at = {.pos = &sk->pos, .conn = sk->conn, .ts_ms = sk->ts_ms, .what = "snapshot"};
    tb_code rc = TB_OK;
    if (sk->topic_empty)
        TB_INFO("run", "%s.%s: no reconcile after the snapshot: its topic held no record before it (%" PRIu64
                " row(s) sent)", evt_table_db(sk->t), evt_table_name(sk->t), sk->rows);
    else
        rc = run_reconcile(r, sk->t, evt_table_db(sk->t), evt_table_name(sk->t), &sk->keys, &at, err);
    evt_table_unref(sk->t);
    sk->t = NULL;
    sk->rows = 0;
    tb_kset_free(&sk->keys);
    return rc;
}

static tb_code snapkeys_mark(run_snapkeys *sk, const char *db, const char *table, tb_error *err)
{
    tb_buf k;
    tb_buf_init(&k, 0);
    tb_code rc = tb_buf_puts(&k, db);
    if (rc == TB_OK)
        rc = tb_buf_putc(&k, 0);
    if (rc == TB_OK)
        rc = tb_buf_puts(&k, table);
    void **v;
    if (rc == TB_OK && (rc = tb_hmap_put(&sk->done, k.data, k.len, &v)) == TB_OK)
        *v = sk;
    tb_buf_free(&k);
    return rc == TB_OK ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
}

tb_code run_snapkeys_row(run_ctx *r, run_snapkeys *sk, const evt_event *ev, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_KEYS))
        return TB_OK;
    evt_table *t = (evt_table *)evt_event_table(ev);
    tb_code rc = TB_OK;
    if (sk->t && (strcmp(evt_table_db(sk->t), evt_table_db(t)) != 0 ||
                  strcmp(evt_table_name(sk->t), evt_table_name(t)) != 0) &&
        (rc = snapkeys_close(r, sk, err)) != TB_OK)
        return rc;
    if (!sk->t) {
        sk->t = evt_table_ref(t);
        sk->conn = evt_event_connector(ev);
        sk->ts_ms = evt_event_commit_ts_ms(ev);
        if (tb_position_copy(&sk->pos, evt_event_position(ev)) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if ((rc = snapkeys_mark(sk, evt_table_db(t), evt_table_name(t), err)) != TB_OK)
            return rc;
        tb_error perr;
        if (sink_topic_empty(r->sink, evt_table_db(t), evt_table_name(t), &sk->topic_empty, &perr) != TB_OK) { /* the step reads the topic */
            sk->topic_empty = false;
            TB_DEBUG("run", "%s.%s: whether its topic holds anything: %s", evt_table_db(t), evt_table_name(t),
                     perr.msg);
        }
    }
    sk->rows++;
    if (sk->topic_empty)
        return TB_OK; /* no reconcile step: no key set */
    uint64_t d;
    if ((rc = sink_key_digest(r->sink, ev, &d, err)) != TB_OK)
        return rc;
    if (tb_kset_put(&sk->keys, d, NULL) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the snapshot's keys");
    return TB_OK;
}

tb_code run_dropped_record(run_ctx *r, const char *db, const char *table, tb_error *err)
{
    evt_table *t = evt_table_new_dropped(db, table);
    if (!t)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = run_announce(r, t, err);
    evt_table_unref(t);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "%s.%s: the schema record that says it was dropped: ", db, table);
    return TB_OK;
}

/* "db\0table" into k (cleared first). */
static tb_code table_key(tb_buf *k, const char *db, const char *table)
{
    tb_buf_reset(k);
    tb_code rc = tb_buf_puts(k, db);
    if (rc == TB_OK)
        rc = tb_buf_putc(k, 0);
    if (rc == TB_OK)
        rc = tb_buf_puts(k, table);
    return rc;
}

/* Tables the source lost while the connector could not follow its log. */
typedef struct vanished_ctx {
    run_ctx *r;
    const run_keys_at *at;
    const tb_hmap *present; /* "db\0table" of the tables the source has */
    tb_buf k;
} vanished_ctx;

static tb_code vanished_one(void *opaque, const char *db, const char *table, tb_error *err)
{
    vanished_ctx *v = opaque;
    if (!cfg_filter_match(&v->r->filter, db, table))
        return TB_OK;
    if (table_key(&v->k, db, table) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (tb_hmap_find(v->present, v->k.data, v->k.len))
        return TB_OK;
    tb_code rc = TB_OK;
    if (strcmp(cfg_get_str(v->r->cfg, CFGK_DDL_DROP_POLICY), "tombstone") == 0) {
        TB_WARN("run", "%s.%s: the schema topic describes it, but the source no longer has it after the %s (dropped "
                       "or renamed while the connector could not follow the source's log): every key of its topic "
                       "is deleted and a schema record says it was dropped (ddl.drop.policy=tombstone)",
                db, table, v->at->what);
        tb_kset none;
        tb_kset_init(&none);
        rc = run_reconcile(v->r, NULL, db, table, &none, v->at, err);
    } else {
        TB_WARN("run", "%s.%s: the schema topic describes it, but the source no longer has it after the %s (dropped "
                       "or renamed while the connector could not follow the source's log): its topic is left as it "
                       "is (ddl.drop.policy=warn), a schema record says it was dropped",
                db, table, v->at->what);
    }
    if (rc == TB_OK)
        rc = run_dropped_record(v->r, db, table, err);
    return rc;
}

tb_code run_reconcile_vanished(run_ctx *r, const tb_hmap *present, const run_keys_at *at, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_TOPICS))
        return TB_OK;
    vanished_ctx v = {.r = r, .at = at, .present = present};
    tb_buf_init(&v.k, 0);
    tb_code rc = sink_tables_known(r->sink, vanished_one, &v, err);
    tb_buf_free(&v.k);
    return rc;
}

tb_code run_snapkeys_end(run_ctx *r, run_snapkeys *sk, const char *const *dbs, const char *const *tables, size_t n,
                         const tb_position *pos, evt_connector conn, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_KEYS))
        return TB_OK;
    tb_code rc = snapkeys_close(r, sk, err);
    /* tables that had no row: every key their topics hold goes */
    for (size_t i = 0; rc == TB_OK && i < n; i++) {
        tb_buf k;
        tb_buf_init(&k, 0);
        tb_buf_puts(&k, dbs[i]);
        tb_buf_putc(&k, 0);
        tb_buf_puts(&k, tables[i]);
        bool seen = k.data && tb_hmap_find(&sk->done, k.data, k.len);
        tb_buf_free(&k);
        if (seen)
            continue;
        tb_kset none;
        tb_kset_init(&none);
        run_keys_at at = {.pos = pos, .conn = conn, .ts_ms = tb_wall_ms(), .what = "snapshot"};
        rc = run_reconcile(r, NULL, dbs[i], tables[i], &none, &at, err);
    }
    /* tables the schema topic describes that the source lost meanwhile */
    tb_hmap present;
    tb_hmap_init(&present);
    tb_buf k;
    tb_buf_init(&k, 0);
    for (size_t i = 0; rc == TB_OK && i < n; i++) {
        void **v;
        if (table_key(&k, dbs[i], tables[i]) != TB_OK || tb_hmap_put(&present, k.data, k.len, &v) != TB_OK)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        else
            *v = &present;
    }
    run_keys_at at = {.pos = pos, .conn = conn, .ts_ms = tb_wall_ms(), .what = "snapshot"};
    if (rc == TB_OK)
        rc = run_reconcile_vanished(r, &present, &at, err);
    tb_buf_free(&k);
    tb_hmap_free(&present, NULL);
    return rc;
}

/* ------------------------------------------------------------ SQLite */

typedef struct sqlkeys_ctx {
    run_ctx *r;
    const run_keys_at *at;
    tb_kset keys;
    tb_hmap present; /* "db\0table" of every table scanned */
    tb_buf k;
} sqlkeys_ctx;

static tb_code sqlkeys_table(void *opaque, evt_table *t, bool end, tb_error *err)
{
    sqlkeys_ctx *k = opaque;
    tb_code rc = TB_OK;
    void **v;
    if (end && (table_key(&k->k, evt_table_db(t), evt_table_name(t)) != TB_OK ||
                tb_hmap_put(&k->present, k->k.data, k->k.len, &v) != TB_OK))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (end)
        *v = k;
    if (end && cfg_filter_match(&k->r->filter, evt_table_db(t), evt_table_name(t)))
        rc = run_reconcile(k->r, t, evt_table_db(t), evt_table_name(t), &k->keys, k->at, err);
    tb_kset_free(&k->keys);
    return rc;
}

static tb_code sqlkeys_row(void *opaque, const evt_event *ev, tb_error *err)
{
    sqlkeys_ctx *k = opaque;
    uint64_t d;
    tb_code rc = sink_key_digest(k->r->sink, ev, &d, err);
    if (rc == TB_OK && tb_kset_put(&k->keys, d, NULL) != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the table's keys");
    return rc;
}

tb_code run_reconcile_sqlite(run_ctx *r, const run_keys_at *at, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_KEYS))
        return TB_OK;
    sqlkeys_ctx k = {.r = r, .at = at};
    tb_kset_init(&k.keys);
    tb_hmap_init(&k.present);
    tb_buf_init(&k.k, 0);
    tb_code rc = sqlcap_scan_tables(r->sqlite, sqlkeys_table, sqlkeys_row, &k, err);
    if (rc == TB_OK) /* tables dropped or renamed in the gap */
        rc = run_reconcile_vanished(r, &k.present, at, err);
    tb_kset_free(&k.keys);
    tb_hmap_free(&k.present, NULL);
    tb_buf_free(&k.k);
    return rc;
}

/* ------------------------------------------------------------ topics that disappeared */

static bool gone_captured(void *opaque, const char *db, const char *table)
{
    run_ctx *r = opaque;
    return cfg_filter_match(&r->filter, db, table);
}

/* A captured table's topic is gone (DESIGN 6a): never made again silently. A table the source
 * no longer has is not captured (its topic was deleted after it went). */
static tb_code gone_table(void *opaque, const char *db, const char *table, const char *topic, tb_error *err)
{
    run_ctx *r = opaque;
    if (run_table_gone(r, db, table)) {
        TB_INFO("run", "topic %s is gone and so is table %s.%s: nothing to make again", topic, db, table);
        return TB_ERR_NOT_FOUND;
    }
    if (strcmp(cfg_get_str(r->cfg, CFGK_TOPIC_MISSING_POLICY), "resnapshot") != 0)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "topic %s of table %s.%s is gone: the schema topic holds the table's record, written "
                            "when the topic was made, so it was deleted while the table is captured, and made "
                            "again it would hold only the changes from now on. Set topic.missing.policy="
                            "resnapshot%s to make it again and snapshot the table, or forget the stored position "
                            "(tributary offsets set --position none) to snapshot every table again; the reconcile "
                            "step then makes each topic equal its table",
                            topic, db, table,
                            strcmp(cfg_get_str(r->cfg, CFGK_SOURCE_TYPE), "sqlite") == 0 ? " (MySQL/MariaDB)" : "");
    /* the signal first: in the binlog, it outlives a crash before the topic is made */
    char name[1024];
    snprintf(name, sizeof name, "%s.%s", db, table);
    tb_code rc = run_resnapshot_signal(r, name, APP_METRICS_RESNAP_TOPIC_MISSING, NULL, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc,
                               "topic %s of table %s.%s is gone; asking for an incremental snapshot of it failed "
                               "(grant INSERT on %s.%s, or see topic.missing.policy): ",
                               topic, db, table, db, SNAP_SIGNAL_TABLE);
    TB_WARN("run", "topic %s of table %s.%s was gone (deleted while the table is captured): made again, and an "
                   "incremental snapshot of the table signalled; until it ends the topic holds only part of the "
                   "table (topic.missing.policy=resnapshot)",
            topic, db, table);
    return TB_OK;
}

tb_code run_topics_gone(run_ctx *r, tb_error *err)
{
    if (!sink_has(r->sink, SINK_CAP_TOPICS))
        return TB_OK;
    return sink_topics_gone(r->sink, gone_captured, gone_table, r, err);
}
