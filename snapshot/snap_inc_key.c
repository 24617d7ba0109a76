/*
 * snap_inc_key: key values between chunks. See snap_inc_key.h.
 */
#include "snap_inc_key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void snap_key_free(snap_key *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++)
        free(k->p[i].s);
    free(k->p);
    k->p = NULL;
    k->n = 0;
}

static tb_code dup_bytes(snap_kpart *p, const void *data, size_t len)
{
    p->s = malloc(len + 1);
    if (!p->s)
        return TB_ERR_NOMEM;
    memcpy(p->s, data, len);
    p->s[len] = '\0';
    p->len = (unsigned long)len;
    return TB_OK;
}

tb_code snap_key_from_event(snap_key *k, const evt_event *ev, tb_error *err)
{
    const evt_table *t = evt_event_table(ev);
    size_t n = evt_table_npk(t);
    snap_key_free(k);
    k->p = calloc(n ? n : 1, sizeof(*k->p));
    if (!k->p)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    k->n = n;
    for (size_t i = 0; i < n; i++) {
        size_t ci = evt_table_pk_col(t, i);
        const evt_value *v = evt_event_value(ev, EVT_AFTER, ci);
        snap_kpart *p = &k->p[i];
        tb_code rc = TB_OK;
        switch (v->kind) {
        case EVT_V_INT: p->t = 'i'; p->i = v->v.i; break;
        case EVT_V_UINT: p->t = 'u'; p->i = (long long)v->v.u; break;
        case EVT_V_BOOL: p->t = 'u'; p->i = v->v.b; break;
        case EVT_V_FLOAT: p->t = 'd'; p->d = v->v.f; break;
        case EVT_V_DOUBLE: p->t = 'd'; p->d = v->v.d; break;
        case EVT_V_DECIMAL: case EVT_V_STRING: p->t = 's'; rc = dup_bytes(p, v->v.s.ptr, v->v.s.len); break;
        case EVT_V_BYTES: p->t = 'b'; rc = dup_bytes(p, v->v.s.ptr, v->v.s.len); break;
        case EVT_V_DATE: case EVT_V_DATETIME: case EVT_V_TIMESTAMP: case EVT_V_TIME:
            p->t = 'T';
            p->kind = v->kind;
            p->tm.year = (unsigned)v->v.t.year;
            p->tm.month = v->v.t.month;
            p->tm.day = v->v.t.day;
            p->tm.hour = v->v.t.hour;
            p->tm.minute = v->v.t.minute;
            p->tm.second = v->v.t.second;
            p->tm.second_part = v->v.t.usec;
            p->tm.neg = v->v.t.negative;
            p->tm.time_type = v->kind == EVT_V_DATE ? MYSQL_TIMESTAMP_DATE
                              : v->kind == EVT_V_TIME ? MYSQL_TIMESTAMP_TIME : MYSQL_TIMESTAMP_DATETIME;
            break;
        default:
            return tb_error_set(err, TB_ERR_UNSUPPORTED, false,
                                "table %s.%s: key column %s has a type incremental snapshots cannot page by",
                                evt_table_db(t), evt_table_name(t), evt_table_column(t, ci)->name);
        }
        if (rc != TB_OK)
            return tb_error_set(err, rc, false, "out of memory");
    }
    return TB_OK;
}

void snap_key_bind(snap_key *k, size_t i, MYSQL_BIND *b)
{
    snap_kpart *p = &k->p[i];
    memset(b, 0, sizeof(*b));
    switch (p->t) {
    case 'i': case 'u':
        b->buffer_type = MYSQL_TYPE_LONGLONG;
        b->buffer = &p->i;
        b->is_unsigned = p->t == 'u';
        break;
    case 'd':
        b->buffer_type = MYSQL_TYPE_DOUBLE;
        b->buffer = &p->d;
        break;
    case 's': case 'b':
        b->buffer_type = p->t == 's' ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
        b->buffer = p->s;
        b->buffer_length = p->len;
        b->length = &p->len;
        break;
    default:
        b->buffer_type = p->kind == EVT_V_DATE ? MYSQL_TYPE_DATE
                         : p->kind == EVT_V_TIME ? MYSQL_TYPE_TIME : MYSQL_TYPE_DATETIME;
        b->buffer = &p->tm;
        b->buffer_length = sizeof(p->tm);
        break;
    }
}

void snap_key_to_json(const snap_key *k, evt_jw *w)
{
    char num[40];
    evt_jw_arr_begin(w);
    for (size_t i = 0; i < k->n; i++) {
        const snap_kpart *p = &k->p[i];
        char t[2] = {p->t, 0};
        evt_jw_obj_begin(w);
        evt_jw_key(w, "t", 1);
        evt_jw_str(w, t, 1);
        evt_jw_key(w, "v", 1);
        switch (p->t) {
        case 'i': snprintf(num, sizeof(num), "%lld", p->i); evt_jw_str(w, num, strlen(num)); break;
        case 'u': snprintf(num, sizeof(num), "%llu", (unsigned long long)p->i); evt_jw_str(w, num, strlen(num)); break;
        case 'd': snprintf(num, sizeof(num), "%.17g", p->d); evt_jw_str(w, num, strlen(num)); break;
        case 's': evt_jw_str(w, p->s, p->len); break;
        case 'b': evt_jw_base64(w, p->s, p->len); break;
        default:
            evt_jw_arr_begin(w);
            evt_jw_int(w, p->kind);
            evt_jw_uint(w, p->tm.year);
            evt_jw_uint(w, p->tm.month);
            evt_jw_uint(w, p->tm.day);
            evt_jw_uint(w, p->tm.hour);
            evt_jw_uint(w, p->tm.minute);
            evt_jw_uint(w, p->tm.second);
            evt_jw_uint(w, p->tm.second_part);
            evt_jw_uint(w, (uint64_t)p->tm.neg);
            evt_jw_arr_end(w);
            break;
        }
        evt_jw_obj_end(w);
    }
    evt_jw_arr_end(w);
}

static unsigned long long jv_ull(const evt_jv *v)
{
    size_t n;
    const char *s = v ? evt_jv_text(v, &n) : NULL;
    return s ? strtoull(s, NULL, 10) : 0;
}

tb_code snap_key_from_json(snap_key *k, const evt_jv *v, tb_error *err)
{
    snap_key_free(k);
    if (!v || evt_jv_type_of(v) != EVT_JV_ARRAY)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "key is not an array");
    size_t n = evt_jv_size(v);
    k->p = calloc(n ? n : 1, sizeof(*k->p));
    if (!k->p)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    k->n = n;
    for (size_t i = 0; i < n; i++) {
        const evt_jv *o = evt_jv_at(v, i);
        const evt_jv *jt = evt_jv_get(o, "t"), *jv = evt_jv_get(o, "v");
        size_t tl = 0, vl = 0;
        const char *ts = jt ? evt_jv_text(jt, &tl) : NULL;
        if (!ts || tl != 1 || !jv)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "key part %zu is malformed", i);
        snap_kpart *p = &k->p[i];
        p->t = ts[0];
        const char *vs = evt_jv_type_of(jv) == EVT_JV_STRING ? evt_jv_text(jv, &vl) : NULL;
        tb_code rc = TB_OK;
        switch (p->t) {
        case 'i': p->i = vs ? strtoll(vs, NULL, 10) : 0; break;
        case 'u': p->i = (long long)(vs ? strtoull(vs, NULL, 10) : 0); break;
        case 'd': p->d = vs ? strtod(vs, NULL) : 0; break;
        case 's': rc = vs ? dup_bytes(p, vs, vl) : TB_ERR_CORRUPT; break;
        case 'b': {
            tb_buf b;
            tb_buf_init(&b, 0);
            rc = vs ? tb_base64_decode(vs, vl, &b) : TB_ERR_CORRUPT;
            if (rc == TB_OK)
                rc = dup_bytes(p, b.data ? b.data : "", b.len);
            tb_buf_free(&b);
            break;
        }
        case 'T':
            if (evt_jv_type_of(jv) != EVT_JV_ARRAY || evt_jv_size(jv) != 9) {
                rc = TB_ERR_CORRUPT;
                break;
            }
            p->kind = (int)jv_ull(evt_jv_at(jv, 0));
            p->tm.year = (unsigned)jv_ull(evt_jv_at(jv, 1));
            p->tm.month = (unsigned)jv_ull(evt_jv_at(jv, 2));
            p->tm.day = (unsigned)jv_ull(evt_jv_at(jv, 3));
            p->tm.hour = (unsigned)jv_ull(evt_jv_at(jv, 4));
            p->tm.minute = (unsigned)jv_ull(evt_jv_at(jv, 5));
            p->tm.second = (unsigned)jv_ull(evt_jv_at(jv, 6));
            p->tm.second_part = (unsigned long)jv_ull(evt_jv_at(jv, 7));
            p->tm.neg = (my_bool)jv_ull(evt_jv_at(jv, 8));
            p->tm.time_type = p->kind == EVT_V_DATE ? MYSQL_TIMESTAMP_DATE
                              : p->kind == EVT_V_TIME ? MYSQL_TIMESTAMP_TIME : MYSQL_TIMESTAMP_DATETIME;
            break;
        default:
            rc = TB_ERR_CORRUPT;
        }
        if (rc != TB_OK)
            return tb_error_set(err, rc, false, "key part %zu is malformed", i);
    }
    return TB_OK;
}
