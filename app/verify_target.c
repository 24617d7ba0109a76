/*
 * verify_target: the other side of `tributary verify` (verify.h), read as a
 * table: a table's topic (every record to the end offsets at the start of the
 * read, read_committed; the last record per key wins, tombstones delete),
 * or its table in the cache file (read-only, key order).
 *
 * What is compared is the row image in the bytes of the wire format: the
 * envelope's `after` object (value.format=envelope) or the value itself
 * (value.format=row), inside Kafka Connect's `payload` when value.schemas is
 * on; a cache row as cache_iter gives it, re-serialised canonically.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_json.h"
#include "cache_read.h"
#include "ksink.h"
#include "verify.h"

/* ------------------------------------------------------------ topic */

typedef struct topic_ctx {
    const evt_codec_opts *o;
    const tb_position *at;
    vtarget_fn fn;
    void *opaque;
} topic_ctx;

static bool num_member(const cj_val *obj, const char *name, int64_t *out)
{
    cj_val v;
    return cj_obj_get(obj, name, &v) && v.type == CJ_NUMBER && cj_int64(&v, out);
}

bool vtarget_after(const char *source, size_t len, const tb_position *at)
{
    cj_val src, f;
    tb_error perr;
    int64_t pos, s1, s2, frame, seq;
    if (!at || cj_parse(source, len, &src, &perr) != TB_OK || src.type != CJ_OBJECT)
        return false;
    switch (at->kind) {
    case TB_POS_MYSQL: {
        if (!at->file || !cj_obj_get(&src, "file", &f) || f.type != CJ_STRING || f.escaped ||
            !num_member(&src, "pos", &pos))
            return false;
        size_t fl = strlen(at->file);
        int c = strncmp(f.ptr, at->file, f.len < fl ? f.len : fl);
        if (c == 0)
            c = f.len < fl ? -1 : f.len > fl;
        return c > 0 || (c == 0 && (uint64_t)pos > at->pos);
    }
    case TB_POS_SQLITE_WAL:
        return num_member(&src, "salt1", &s1) && num_member(&src, "salt2", &s2) && num_member(&src, "frame", &frame) &&
               (uint32_t)s1 == at->salt1 && (uint32_t)s2 == at->salt2 && (uint64_t)frame > at->frame;
    case TB_POS_SQLITE_LOG:
        return num_member(&src, "seq", &seq) && seq > at->seq;
    default:
        return false;
    }
}

/* The key of tributary's truncate record (DESIGN 4): it names no row. */
static bool truncate_key(const char *k, size_t n)
{
    static const char plain[] = "{}", wrapped[] = "{\"schema\":null,\"payload\":{}}";
    return (n == sizeof plain - 1 && memcmp(k, plain, n) == 0) ||
           (n == sizeof wrapped - 1 && memcmp(k, wrapped, n) == 0);
}

static tb_code on_record(void *opaque, const ksink_record *rec, tb_error *err)
{
    topic_ctx *x = opaque;
    if (truncate_key(rec->key, rec->klen))
        return TB_OK;
    vtarget_rec r = {.key = rec->key, .klen = rec->klen, .total = rec->total > 0 ? (uint64_t)rec->total : 0};
    if (!rec->value) {
        r.tombstone = true;
        return x->fn(x->opaque, &r, err);
    }
    cj_val v, inner;
    tb_error perr;
    if (cj_parse(rec->value, rec->vlen, &v, &perr) != TB_OK || v.type != CJ_OBJECT) {
        /* not a message the connector writes: a row that equals nothing */
        static const char bad[] = "\"(not a JSON object)\"";
        r.row = bad;
        r.rlen = sizeof bad - 1;
        return x->fn(x->opaque, &r, err);
    }
    if (x->o->schemas && cj_obj_get(&v, "payload", &inner))
        v = inner;
    if (!x->o->row_format) {
        cj_val src;
        r.late =
            x->at && cj_obj_get(&v, "source", &src) && src.type == CJ_OBJECT && vtarget_after(src.ptr, src.len, x->at);
        if (!cj_obj_get(&v, "after", &inner) || inner.type == CJ_NULL)
            return x->fn(x->opaque, &r, err); /* a delete event, or op t */
        v = inner;
    }
    /* the span of a string is between its quotes */
    r.row = v.type == CJ_STRING ? v.ptr - 1 : v.ptr;
    r.rlen = v.type == CJ_STRING ? v.len + 2 : v.len;
    return x->fn(x->opaque, &r, err);
}

tb_code vtarget_topic(const cfg *c, const evt_codec_opts *o, const char *topic, const tb_position *at,
                      vtarget_fn fn, void *opaque, tb_error *err)
{
    topic_ctx x = {o, at, fn, opaque};
    return ksink_topic_scan(c, topic, true, "verify", on_record, &x, err);
}

/* ------------------------------------------------------------ cache */

typedef struct cache_ctx {
    const char **pk;  /* key column names in key order */
    size_t npk;
    tb_buf key, row, name; /* name: a decoded member name */
    vtarget_fn fn;
    void *opaque;
    tb_code rc;
    tb_error *err;
} cache_ctx;

/* A value's JSON text from a scanned span. */
static void span_text(const cj_val *v, const char **p, size_t *n)
{
    *p = v->type == CJ_STRING ? v->ptr - 1 : v->ptr;
    *n = v->type == CJ_STRING ? v->len + 2 : v->len;
}

static int on_cache_row(const char *row, size_t len, void *opaque)
{
    cache_ctx *x = opaque;
    cj_val v;
    if ((x->rc = cj_parse(row, len, &v, x->err)) != TB_OK)
        return 1;
    tb_buf_reset(&x->key);
    tb_buf_reset(&x->row);
    evt_jw w;
    evt_jw_init(&w, &x->key);
    evt_jw_obj_begin(&w);
    bool key_null = false;
    for (size_t i = 0; i < x->npk; i++) {
        cj_iter it;
        const char *k, *p;
        size_t kl, n;
        cj_val m;
        bool found = false;
        cj_obj_begin(&v, &it);
        while (!found && cj_obj_next(&it, &k, &kl, &m))
            found = cj_key_eq(k, kl, x->pk[i]);
        evt_jw_key(&w, x->pk[i], (size_t)-1);
        if (!found) {
            evt_jw_null(&w);
            continue;
        }
        key_null |= m.type == CJ_NULL;
        span_text(&m, &p, &n);
        evt_jw_json(&w, p, n);
    }
    /* the cache's column of the rowid of a row whose key holds NULL (cache_rowid_col): a member of
     * that row's key as the connector writes it (EVT_KEY_ROWID), not of its image */
    cj_val rid;
    bool has_rid = cj_obj_get(&v, EVT_KEY_ROWID, &rid);
    if (has_rid && key_null && rid.type == CJ_NUMBER) {
        const char *p;
        size_t n;
        evt_jw_key(&w, EVT_KEY_ROWID, (size_t)-1);
        span_text(&rid, &p, &n);
        evt_jw_json(&w, p, n);
    }
    evt_jw_obj_end(&w);
    evt_jw w2;
    evt_jw_init(&w2, &x->row);
    if (!has_rid) {
        evt_jw_json(&w2, row, len);
    } else {
        cj_iter it;
        const char *k;
        size_t kl;
        cj_val m;
        evt_jw_obj_begin(&w2);
        cj_obj_begin(&v, &it);
        while (cj_obj_next(&it, &k, &kl, &m)) {
            if (cj_key_eq(k, kl, EVT_KEY_ROWID))
                continue;
            const char *p;
            size_t n;
            tb_buf_reset(&x->name);
            if (cj_str_decode(k, kl, &x->name) != TB_OK) {
                x->rc = tb_error_set(x->err, TB_ERR_INVALID, false, "unreadable cache row %.200s", row);
                return 1;
            }
            evt_jw_key(&w2, tb_buf_cstr(&x->name), x->name.len);
            span_text(&m, &p, &n);
            evt_jw_json(&w2, p, n);
        }
        evt_jw_obj_end(&w2);
    }
    if (evt_jw_finish(&w) != TB_OK || evt_jw_finish(&w2) != TB_OK) {
        x->rc = tb_error_set(x->err, TB_ERR_INVALID, false, "unreadable cache row %.200s", row);
        return 1;
    }
    vtarget_rec r = {.key = x->key.data, .klen = x->key.len, .row = x->row.data, .rlen = x->row.len};
    x->rc = x->fn(x->opaque, &r, x->err);
    return x->rc != TB_OK;
}

tb_code vtarget_cache(const char *path, const char *db, const char *table, bool *present, vtarget_fn fn,
                      void *opaque, tb_error *err)
{
    cache_db *cdb = NULL;
    cache_ctx x = {.fn = fn, .opaque = opaque, .err = err};
    tb_buf_init(&x.key, 0);
    tb_buf_init(&x.row, 0);
    tb_buf_init(&x.name, 0);
    tb_buf name;
    tb_buf_init(&name, 0);
    *present = false;
    tb_code rc = cache_db_open(path, &cdb, err);
    if (rc != TB_OK) {
        tb_error_prefix(err, rc, "cache %s: ", path);
        goto out;
    }
    if ((rc = tb_buf_printf(&name, "%s.%s", db, table)) != TB_OK)
        goto out;
    size_t ti = 0, nt = cache_db_ntables(cdb);
    cache_table_info info;
    for (; ti < nt; ti++)
        if (cache_db_table(cdb, ti, &info) == TB_OK && strcmp(info.name, name.data) == 0)
            break;
    if (ti == nt)
        goto out; /* no such table: it holds no rows */
    *present = true;
    if (!(x.pk = calloc(info.npk + 1, sizeof(*x.pk)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t c = 0; c < info.ncols; c++) {
        cache_column_info ci;
        if (cache_db_column(cdb, ti, c, &ci) == TB_OK && ci.pk > 0 && (size_t)ci.pk <= info.npk)
            x.pk[ci.pk - 1] = ci.name;
    }
    x.npk = info.npk;
    for (size_t k = 0; k < x.npk; k++)
        if (!x.pk[k]) {
            rc = tb_error_set(err, TB_ERR_INVALID, false, "cache %s: table \"%s\": its key columns are not recorded",
                              path, name.data);
            goto out;
        }
    if ((rc = cache_iter(cdb, name.data, on_cache_row, &x, err)) == TB_OK)
        rc = x.rc;
out:
    cache_db_close(cdb);
    free(x.pk);
    tb_buf_free(&x.key);
    tb_buf_free(&x.name);
    tb_buf_free(&x.row);
    tb_buf_free(&name);
    return rc;
}
