/*
 * sqlcap_rows: the keyed row maps of one side of a table diff (sqlcap_diff.c)
 * and event building (values by declared type, recycled events).
 */
#include <stdlib.h>
#include <string.h>

#include "sqlcap_int.h"
#include "tb_cast.h"
#include "tb_hmap.h"
#include "tb_log.h"

/* ---------------------------------------------------------------- row maps */

void sqlcap_rowmap_free(sqlcap_rowmap *m)
{
    free(m->e);
    free(m->bucket);
    tb_buf_free(&m->arena);
    memset(m, 0, sizeof *m);
}

/* Empty the map, keeping its memory. */
void sqlcap_rowmap_reset(sqlcap_rowmap *m)
{
    if (m->nb > 65536 || m->arena.cap > (1u << 24)) { /* after a huge transaction: give it back */
        sqlcap_rowmap_free(m);
        return;
    }
    m->n = 0;
    if (m->nb)
        memset(m->bucket, 0xff, m->nb * sizeof *m->bucket); /* every bucket -1 */
    tb_buf_reset(&m->arena);
}

long sqlcap_rowmap_find(const sqlcap_rowmap *m, const uint8_t *k, size_t kn, uint64_t h)
{
    if (!m->nb)
        return -1;
    for (long i = m->bucket[h & (m->nb - 1)]; i >= 0; i = m->e[i].next)
        if (m->e[i].h == h && m->e[i].klen == kn && memcmp(m->arena.data + m->e[i].koff, k, kn) == 0)
            return i;
    return -1;
}

tb_code sqlcap_rowmap_add(sqlcap_rowmap *m, const uint8_t *k, size_t kn, const uint8_t *p, size_t pn,
                                 int64_t rowid)
{
    if (m->n + 1 > m->nb) {
        size_t nb = m->nb ? m->nb * 2 : 256;
        long *b = malloc(nb * sizeof *b);
        if (!b)
            return TB_ERR_NOMEM;
        for (size_t i = 0; i < nb; i++)
            b[i] = -1;
        for (size_t i = 0; i < m->n; i++) {
            size_t s = m->e[i].h & (nb - 1);
            m->e[i].next = b[s];
            b[s] = (long)i;
        }
        free(m->bucket);
        m->bucket = b;
        m->nb = nb;
    }
    sqlcap_rowent *ne = sqlcap_grow(m->e, m->n, &m->cap, sizeof *ne, 256);
    if (!ne)
        return TB_ERR_NOMEM;
    m->e = ne;
    uint64_t h = tb_hash_bytes(k, kn);
    sqlcap_rowent *e = &m->e[m->n];
    e->h = h;
    e->koff = m->arena.len;
    e->klen = kn;
    if (tb_buf_append(&m->arena, k, kn) != TB_OK)
        return TB_ERR_NOMEM;
    e->poff = m->arena.len;
    e->plen = pn;
    if (pn && tb_buf_append(&m->arena, p, pn) != TB_OK)
        return TB_ERR_NOMEM;
    e->rowid = rowid;
    e->matched = false;
    size_t s = h & (m->nb - 1);
    e->next = m->bucket[s];
    m->bucket[s] = (long)m->n;
    m->n++;
    return TB_OK;
}

/* Canonical key bytes of a decoded row (t->pk columns). */
tb_code sqlcap_key(const sqlcap_tbl *t, const sqlcap_val *vals, tb_buf *out)
{
    tb_buf_reset(out);
    for (size_t k = 0; k < t->npk; k++) {
        const sqlcap_val *v = &vals[t->pk[k]];
        uint8_t tag = (uint8_t)v->type, b[8];
        if (tb_buf_append(out, &tag, 1) != TB_OK)
            return TB_ERR_NOMEM;
        if (v->type == SQLCAP_INT || v->type == SQLCAP_REAL) {
            uint64_t u;
            if (v->type == SQLCAP_INT)
                u = (uint64_t)v->i ^ 0x8000000000000000ull;
            else
                memcpy(&u, &v->d, 8);
            for (int i = 0; i < 8; i++)
                b[i] = (uint8_t)(u >> (56 - 8 * i));
            if (tb_buf_append(out, b, 8) != TB_OK)
                return TB_ERR_NOMEM;
        } else if (v->type == SQLCAP_TEXT || v->type == SQLCAP_BLOB) {
            uint32_t n = (uint32_t)v->n;
            for (int i = 0; i < 4; i++)
                b[i] = (uint8_t)(n >> (24 - 8 * i));
            if (tb_buf_append(out, b, 4) != TB_OK || (v->n && tb_buf_append(out, v->p, v->n) != TB_OK))
                return TB_ERR_NOMEM;
        }
    }
    return TB_OK;
}

bool sqlcap_key_has_null(const sqlcap_tbl *t, const sqlcap_val *vals)
{
    for (size_t k = 0; k < t->npk; k++)
        if (vals[t->pk[k]].type == SQLCAP_NULL)
            return true;
    return false;
}

/* The INFO of sqlcap_key_null_note: table and its key columns (names[k] of key part k). */
static void key_null_note(const char *table, const char *const *names, size_t npk)
{
    tb_buf cols;
    tb_buf_init(&cols, 0);
    for (size_t k = 0; k < npk; k++)
        if (tb_buf_printf(&cols, "%s%s", k ? ", " : "", names[k]) != TB_OK)
            break;
    TB_INFO(SQLCAP_FAC,
            "table %s: a row whose primary key (%s) holds NULL, which a rowid table allows: such rows are keyed "
            "with their rowid as well (key member \"" EVT_KEY_ROWID "\"), so each keeps its own record in the "
            "topic and its own row in the cache",
            table, cols.data ? tb_buf_cstr(&cols) : "");
    tb_buf_free(&cols);
}

/* The rowid table t has a declared key, which may hold NULL (not the rowid itself). */
static bool key_nullable(const sqlcap_tbl *t)
{
    return !t->without_rowid && !t->synth_rowid && t->ipk < 0;
}

void sqlcap_key_null_note(const sqlcap_tbl *t, const sqlcap_val *vals)
{
    if (!vals || !key_nullable(t) || !sqlcap_key_has_null(t, vals))
        return;
    /* the flag is the only state the const descriptor changes; one INFO even with two threads */
    sqlcap_tbl *mt = TB_UNCONST(t);
    if (__atomic_exchange_n(&mt->null_key_noted, true, __ATOMIC_RELAXED))
        return;
    const char *names[64];
    size_t n = t->npk < 64 ? t->npk : 64;
    for (size_t k = 0; k < n; k++)
        names[k] = t->colnames[t->pk[k]];
    key_null_note(t->name, names, n);
}

void sqlcap_event_key_null_note(const evt_table *et, const evt_event *ev, bool *noted)
{
    size_t npk = evt_table_npk(et);
    bool null = false;
    for (int img = 0; img < 2 && !null && !*noted; img++)
        for (size_t k = 0; k < npk && !null; k++)
            null = evt_event_value(ev, (evt_image)img, evt_table_pk_col(et, k))->kind == EVT_V_NULL;
    if (!null)
        return;
    *noted = true;
    const char *names[64];
    size_t n = npk < 64 ? npk : 64;
    for (size_t k = 0; k < n; k++)
        names[k] = evt_table_column(et, evt_table_pk_col(et, k))->name;
    key_null_note(evt_table_name(et), names, n);
}

/* ---------------------------------------------------------------- events */

void sqlcap_set_val(evt_event *ev, evt_image img, size_t c, bool blob_col, const sqlcap_val *v)
{
    switch (v->type) {
    case SQLCAP_NULL: evt_set_null(ev, img, c); break;
    case SQLCAP_INT: evt_set_int(ev, img, c, v->i); break;
    case SQLCAP_REAL: evt_set_double(ev, img, c, v->d); break;
    default:
        /* TEXT and BLOB by the declared type (DESIGN 5, SQLite dynamic typing):
         * bytes in a BLOB-declared column, a string of the same bytes elsewhere */
        if (blob_col)
            evt_set_bytes(ev, img, c, v->p, v->n);
        else
            evt_set_string(ev, img, c, (const char *)v->p, v->n);
        break;
    }
}

/* events kept for reuse: about two batches are queued at a time (read ahead) */
#define SQLCAP_EVPOOL 4096

void sqlcap_evpool_put(sqlcap_evpool *p, evt_event *ev)
{
    if (!ev)
        return;
    if (p->n >= SQLCAP_EVPOOL) {
        evt_event_free(ev);
        return;
    }
    evt_event **nv = sqlcap_grow(p->v, p->n, &p->cap, sizeof *nv, 256);
    if (!nv) {
        evt_event_free(ev);
        return;
    }
    p->v = nv;
    p->v[p->n++] = ev;
}

void sqlcap_evpool_free(sqlcap_evpool *p)
{
    for (size_t i = 0; i < p->n; i++)
        evt_event_free(p->v[i]);
    free(p->v);
    memset(p, 0, sizeof *p);
}

evt_event *sqlcap_make_event(sqlcap_evpool *p, const sqlcap_tbl *t, evt_op op, const sqlcap_val *before,
                             const sqlcap_val *after, int64_t rowid)
{
    evt_event *ev;
    if (p && p->n) {
        /* a recycled event: its memory (images, arena) is reused, and with the same
         * table its reference is kept (no malloc/free and atomic pair per event) */
        ev = p->v[--p->n];
        evt_event_reset(ev, op, t->et);
        const tb_error *fe = evt_event_error(ev);
        if (fe && fe->code == TB_ERR_NOMEM) { /* as evt_event_new */
            evt_event_free(ev);
            return NULL;
        }
    } else if (!(ev = evt_event_new(op, t->et))) {
        return NULL;
    }
    evt_event_set_connector(ev, EVT_CONN_SQLITE);
    if (key_nullable(t) && ((before && sqlcap_key_has_null(t, before)) || (after && sqlcap_key_has_null(t, after)))) {
        sqlcap_key_null_note(t, before ? before : after);
        evt_event_set_rowid(ev, EVT_BEFORE, rowid); /* one rowid: the diff keys such a row by it */
        evt_event_set_rowid(ev, EVT_AFTER, rowid);
    }
    for (int img = 0; img < 2; img++) {
        const sqlcap_val *v = img == 0 ? before : after;
        if (!v)
            continue;
        for (size_t c = 0; c < t->ncols; c++)
            sqlcap_set_val(ev, (evt_image)img, c, evt_table_column(t->et, c)->type == EVT_T_SQLITE_BLOB, &v[c]);
    }
    return ev;
}

tb_code sqlcap_evpush(sqlcap_evlist *l, evt_event *ev)
{
    if (!ev)
        return TB_ERR_NOMEM;
    evt_event **nv = sqlcap_grow(l->v, l->n, &l->cap, sizeof *nv, 64);
    if (!nv) {
        evt_event_free(ev);
        return TB_ERR_NOMEM;
    }
    l->v = nv;
    l->v[l->n++] = ev;
    return TB_OK;
}

void sqlcap_evlist_clear(sqlcap_evlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        evt_event_free(l->v[i]);
    l->n = l->next = 0;
}
