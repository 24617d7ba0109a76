/*
 * evt_position_json: source positions as JSON (the offsets record, DESIGN 6).
 *
 * POSITION JSON (evt_position_to_json / evt_position_from_json)
 *   {"kind":"none"}
 *   {"kind":"mysql"|"mariadb","server_id":N,"file":S|null,"pos":N,"row":N,"gtid":S|null}
 *   {"kind":"sqlite-wal","salt1":N,"salt2":N,"frame":N,"cksum1":N,"cksum2":N,
 *    "db_pages":N,"gen_seq":N,"inode":N}
 *   {"kind":"sqlite-log","seq":N}
 * Numbers are exact decimal integers (uint64 / int64 never pass through a
 * double). On reading, member order is free, unknown members are ignored and
 * a missing member reads as 0 / null; a number out of its field's range, a
 * wrong type or an unknown kind is an error naming the member.
 */
#include "evt_internal.h"

#include <stdlib.h>
#include <string.h>

/* ============================================================ positions */

static void put_num(evt_jw *w, const char *key, uint64_t v)
{
    evt_jw_key(w, key, strlen(key));
    evt_jw_uint(w, v);
}

static void put_opt_str(evt_jw *w, const char *key, const char *s)
{
    evt_jw_key(w, key, strlen(key));
    if (s)
        evt_jw_str(w, s, strlen(s));
    else
        evt_jw_null(w);
}

tb_code evt_position_to_json(const tb_position *p, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "kind", 4);
    switch (p->kind) {
    case TB_POS_NONE: evt_jw_str(&w, "none", 4); break;
    case TB_POS_MYSQL:
        if (p->mariadb)
            evt_jw_str(&w, "mariadb", 7);
        else
            evt_jw_str(&w, "mysql", 5);
        put_num(&w, "server_id", p->server_id);
        put_opt_str(&w, "file", p->file);
        put_num(&w, "pos", p->pos);
        put_num(&w, "row", p->row);
        put_opt_str(&w, "gtid", p->gtid_set);
        break;
    case TB_POS_SQLITE_WAL:
        evt_jw_str(&w, "sqlite-wal", 10);
        put_num(&w, "salt1", p->salt1);
        put_num(&w, "salt2", p->salt2);
        put_num(&w, "frame", p->frame);
        put_num(&w, "cksum1", p->cksum1);
        put_num(&w, "cksum2", p->cksum2);
        put_num(&w, "db_pages", p->db_pages);
        put_num(&w, "gen_seq", p->gen_seq);
        put_num(&w, "inode", p->inode);
        break;
    case TB_POS_SQLITE_LOG:
        evt_jw_str(&w, "sqlite-log", 10);
        evt_jw_key(&w, "seq", 3);
        evt_jw_int(&w, p->seq);
        break;
    }
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}

/* Exact decimal integer text -> value within [-(neg_max), max]. */
static bool parse_int_text(const char *s, size_t n, uint64_t max, uint64_t neg_max, uint64_t *mag, bool *neg)
{
    size_t i = 0;
    *neg = false;
    if (i < n && s[i] == '-') {
        *neg = true;
        i++;
    }
    if (i >= n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (*neg ? v > neg_max : v > max)
        return false;
    *mag = v;
    return true;
}

static tb_code get_u(const evt_jv *o, const char *key, uint64_t max, uint64_t *out, tb_error *err)
{
    const evt_jv *v = evt_jv_get(o, key);
    *out = 0;
    if (!v || evt_jv_type_of(v) == EVT_JV_NULL)
        return TB_OK;
    size_t n;
    const char *t = evt_jv_text(v, &n);
    bool neg;
    if (evt_jv_type_of(v) != EVT_JV_NUMBER || !parse_int_text(t, n, max, 0, out, &neg))
        return tb_error_set(err, TB_ERR_INVALID, false, "position JSON: \"%s\" is not an integer in 0..%llu", key,
                            (unsigned long long)max);
    return TB_OK;
}

static tb_code get_s(const evt_jv *o, const char *key, char **out, tb_error *err)
{
    const evt_jv *v = evt_jv_get(o, key);
    if (!v || evt_jv_type_of(v) == EVT_JV_NULL)
        return TB_OK;
    size_t n;
    const char *t = evt_jv_text(v, &n);
    if (evt_jv_type_of(v) != EVT_JV_STRING || memchr(t, '\0', n))
        return tb_error_set(err, TB_ERR_INVALID, false, "position JSON: \"%s\" is not a string", key);
    *out = strdup(t);
    if (!*out)
        return tb_error_set(err, TB_ERR_NOMEM, false, "position JSON: out of memory");
    return TB_OK;
}

tb_code evt_position_from_json(const char *json, size_t len, tb_position *p, tb_error *err)
{
    evt_jv *root = NULL;
    tb_position tmp;
    tb_position_init(&tmp);
    tb_code rc = evt_jv_parse(json, len, &root, err);
    if (rc != TB_OK) {
        tb_error_prefix(err, rc, "position: ");
        goto out;
    }
    const evt_jv *k = evt_jv_get(root, "kind");
    size_t kn = 0;
    const char *kind = evt_jv_type_of(k) == EVT_JV_STRING ? evt_jv_text(k, &kn) : NULL;
    if (evt_jv_type_of(root) != EVT_JV_OBJECT || !kind) {
        rc = tb_error_set(err, TB_ERR_INVALID, false, "position JSON: expected an object with a \"kind\" string");
        goto out;
    }
    uint64_t v[8];
    if (strcmp(kind, "none") == 0) {
        tmp.kind = TB_POS_NONE;
    } else if (strcmp(kind, "mysql") == 0 || strcmp(kind, "mariadb") == 0) {
        tmp.kind = TB_POS_MYSQL;
        tmp.mariadb = kind[1] == 'a';
        if ((rc = get_u(root, "server_id", UINT32_MAX, &v[0], err)) || (rc = get_u(root, "pos", UINT64_MAX, &v[1], err)) ||
            (rc = get_u(root, "row", UINT64_MAX, &v[2], err)) || (rc = get_s(root, "file", &tmp.file, err)) ||
            (rc = get_s(root, "gtid", &tmp.gtid_set, err)))
            goto out;
        tmp.server_id = (uint32_t)v[0];
        tmp.pos = v[1];
        tmp.row = v[2];
    } else if (strcmp(kind, "sqlite-wal") == 0) {
        static const char *const names[] = {"salt1", "salt2", "frame", "cksum1", "cksum2", "db_pages", "gen_seq", "inode"};
        tmp.kind = TB_POS_SQLITE_WAL;
        for (int i = 0; i < 8; i++)
            if ((rc = get_u(root, names[i], i < 6 ? UINT32_MAX : UINT64_MAX, &v[i], err)) != TB_OK)
                goto out;
        tmp.salt1 = (uint32_t)v[0];
        tmp.salt2 = (uint32_t)v[1];
        tmp.frame = (uint32_t)v[2];
        tmp.cksum1 = (uint32_t)v[3];
        tmp.cksum2 = (uint32_t)v[4];
        tmp.db_pages = (uint32_t)v[5];
        tmp.gen_seq = v[6];
        tmp.inode = v[7];
    } else if (strcmp(kind, "sqlite-log") == 0) {
        tmp.kind = TB_POS_SQLITE_LOG;
        const evt_jv *s = evt_jv_get(root, "seq");
        if (s && evt_jv_type_of(s) != EVT_JV_NULL) {
            size_t n;
            const char *t = evt_jv_text(s, &n);
            bool neg;
            uint64_t mag;
            if (evt_jv_type_of(s) != EVT_JV_NUMBER ||
                !parse_int_text(t, n, INT64_MAX, (uint64_t)INT64_MAX + 1, &mag, &neg)) {
                rc = tb_error_set(err, TB_ERR_INVALID, false, "position JSON: \"seq\" is not a 64-bit integer");
                goto out;
            }
            tmp.seq = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        }
    } else {
        rc = tb_error_set(err, TB_ERR_INVALID, false, "position JSON: unknown kind \"%.40s\"", kind);
        goto out;
    }
    tb_position_free(p);
    *p = tmp;
    tb_position_init(&tmp);
out:
    tb_position_free(&tmp);
    evt_jv_free(root);
    return rc;
}
