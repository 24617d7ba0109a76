/*
 * evt: the change event and its builder (DESIGN.md 3; tables: evt_table.c). See evt.h for
 * the ownership rules.
 *
 * MEMORY LAYOUT OF AN EVENT
 *  - Two value arrays (before, after), one evt_value per column, grown with
 *    realloc only while the event is being reset (never while values are
 *    borrowed).
 *  - An arena of chunks for every byte the builder copies (strings, bytes,
 *    SET label lists, vectors, WKB, the txid and the position's strings).
 *    A chunk is never moved, so pointers handed out stay valid until
 *    evt_event_reset()/evt_event_free(). Reset rewinds the chunks and keeps
 *    them (a decoder reusing one event per row makes no allocation in the
 *    steady state); chunks larger than 1 MiB (evt_arena.c) are released on reset
 *    so one huge BLOB does not pin memory forever.
 *  - The position is stored as a tb_position whose `file`/`gtid_set` point
 *    into the arena: it is borrowed by readers (never tb_position_free it).
 */
#include "evt.h"
#include "evt_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ============================================================ events */

struct evt_event {
    evt_op op;
    evt_table *t;
    evt_value *img[2];
    size_t cap[2]; /* slots allocated in img[0], img[1]: only an image the op has is allocated */
    bool has[2];
    evt_arena mem;
    tb_position pos; /* strings point into mem */
    const char *txid;
    int64_t commit_ts_ms;
    bool last_in_tx;
    bool partial;      /* an image lacks columns of the table (evt_event_set_partial) */
    evt_snapshot_flag snapshot;
    unsigned snap_edges;
    bool has_src;      /* src_pos/src_row set */
    bool txid_gtid;    /* txid is the transaction's GTID */
    uint32_t src_row;
    uint64_t src_pos;
    evt_connector connector;
    const char *wire_key; /* in mem: the message key to send verbatim, or NULL */
    size_t wire_key_len;
    bool has_rowid[2];    /* rowid[img]: the source row's rowid (SQLite), for a key holding NULL */
    int64_t rowid[2];
    bool failed;
    tb_error *err; /* the first failure's; allocated by the first one, kept across resets */
};

/* evt_event_error when even the error could not be allocated */
static const tb_error evt_err_nomem = {TB_ERR_NOMEM, false, "out of memory"};

/* e->t must hold no reference (or, from reset, the one it holds is t's). */
static void event_prepare(evt_event *e, evt_op op, evt_table *t, bool holds_t)
{
    e->op = op;
    e->t = holds_t ? t : evt_table_ref(t);
    e->has[EVT_BEFORE] = op == EVT_OP_UPDATE || op == EVT_OP_DELETE;
    e->has[EVT_AFTER] = op == EVT_OP_CREATE || op == EVT_OP_UPDATE || op == EVT_OP_READ;
    e->failed = false;
    tb_position_init(&e->pos);
    e->txid = NULL;
    e->commit_ts_ms = 0;
    e->last_in_tx = false;
    e->partial = false;
    e->snapshot = EVT_SNAPSHOT_FALSE;
    e->snap_edges = 0;
    e->has_src = false;
    e->connector = EVT_CONN_MYSQL;
    e->wire_key = NULL;
    e->wire_key_len = 0;
    e->has_rowid[0] = e->has_rowid[1] = false;
    if (op != EVT_OP_CREATE && op != EVT_OP_UPDATE && op != EVT_OP_DELETE && op != EVT_OP_READ)
        evt_event_fail(e, TB_ERR_INVALID, "invalid op %d", (int)op);
    size_t n = t ? t->ncols : 0;
    for (int k = 0; k < 2 && n; k++) {
        if (!e->has[k])
            continue; /* never read: every access checks has[] */
        if (n > e->cap[k]) {
            evt_value *p = realloc(e->img[k], n * sizeof(evt_value));
            if (!p) {
                evt_event_fail(e, TB_ERR_NOMEM, "out of memory for %zu columns", n);
                return;
            }
            e->img[k] = p;
            e->cap[k] = n;
        }
        memset(e->img[k], 0, n * sizeof(evt_value));
    }
    if (!t)
        evt_event_fail(e, TB_ERR_INVALID, "event without a table");
}

evt_event *evt_event_new(evt_op op, evt_table *t)
{
    evt_event *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    event_prepare(e, op, t, false);
    if (e->failed && evt_event_error(e)->code == TB_ERR_NOMEM) {
        evt_event_free(e);
        return NULL;
    }
    return e;
}

void evt_event_free(evt_event *e)
{
    if (!e)
        return;
    evt_table_unref(e->t);
    free(e->img[0]);
    free(e->img[1]);
    evt_arena_free(&e->mem);
    free(e->err);
    free(e);
}

void evt_event_reset(evt_event *e, evt_op op, evt_table *t)
{
    evt_table *old = e->t;
    e->t = NULL;
    evt_arena_reset(&e->mem);
    bool same = old && old == t; /* keep the reference held: no atomic pair per event */
    event_prepare(e, op, t, same);
    if (!same)
        evt_table_unref(old);
}

void evt_event_fail(evt_event *e, tb_code code, const char *fmt, ...)
{
    if (!e || e->failed)
        return;
    e->failed = true;
    if (!e->err && !(e->err = malloc(sizeof(*e->err))))
        return; /* evt_event_error says "out of memory" */
    va_list ap;
    va_start(ap, fmt);
    tb_error_vset(e->err, code == TB_OK ? TB_ERR_INVALID : code, false, fmt, ap);
    va_end(ap);
}

static const char *col_name(const evt_event *e, size_t col)
{
    return e->t && col < e->t->ncols ? e->t->cols[col].name : "?";
}

/* Why slot() refused col of img (kept out of line: slot is on every set). */
__attribute__((cold, noinline)) static void slot_fail(evt_event *e, evt_image img, size_t col)
{
    const char *db = e->t->db, *tn = e->t->name;
    if (col >= e->t->ncols)
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s: column index %zu out of range (%zu columns)", db, tn, col,
                       e->t->ncols);
    else
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s column %s: op '%c' has no %s image", db, tn, col_name(e, col),
                       (char)e->op, img == EVT_BEFORE ? "before" : "after");
}

/* The slot to write, or NULL (and the sticky error set). */
static inline evt_value *slot(evt_event *e, evt_image img, size_t col)
{
    if (!e || e->failed)
        return NULL;
    if (col >= e->t->ncols || (img != EVT_BEFORE && img != EVT_AFTER) || !e->has[img]) {
        slot_fail(e, img, col);
        return NULL;
    }
    return &e->img[img][col];
}

__attribute__((cold, noinline)) static void copy_in_fail(evt_event *e, size_t col, size_t len)
{
    evt_event_fail(e, TB_ERR_NOMEM, "%s.%s column %s: out of memory for %zu bytes", e->t->db, e->t->name,
                   col_name(e, col), len);
}

static inline void *copy_in(evt_event *e, size_t col, const void *data, size_t len)
{
    void *p = evt_arena_alloc(&e->mem, len + 1);
    if (!p) {
        copy_in_fail(e, col, len);
        return NULL;
    }
    if (len)
        memcpy(p, data, len);
    ((char *)p)[len] = '\0';
    return p;
}

void evt_set_null(evt_event *e, evt_image img, size_t col)
{
    evt_value *v = slot(e, img, col);
    if (v)
        v->kind = EVT_V_NULL;
}

void evt_set_int(evt_event *e, evt_image img, size_t col, int64_t x)
{
    evt_value *v = slot(e, img, col);
    if (v) {
        v->kind = EVT_V_INT;
        v->v.i = x;
    }
}

void evt_set_uint(evt_event *e, evt_image img, size_t col, uint64_t x)
{
    evt_value *v = slot(e, img, col);
    if (v) {
        v->kind = EVT_V_UINT;
        v->v.u = x;
    }
}

void evt_set_float(evt_event *e, evt_image img, size_t col, float x)
{
    evt_value *v = slot(e, img, col);
    if (v) {
        v->kind = EVT_V_FLOAT;
        v->v.f = x;
    }
}

void evt_set_double(evt_event *e, evt_image img, size_t col, double x)
{
    evt_value *v = slot(e, img, col);
    if (v) {
        v->kind = EVT_V_DOUBLE;
        v->v.d = x;
    }
}

void evt_set_bool(evt_event *e, evt_image img, size_t col, bool x)
{
    evt_value *v = slot(e, img, col);
    if (v) {
        v->kind = EVT_V_BOOL;
        v->v.b = x;
    }
}

static void set_text(evt_event *e, evt_image img, size_t col, evt_kind kind, const void *p, size_t len)
{
    evt_value *v = slot(e, img, col);
    if (!v)
        return;
    if (!p && len) {
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s column %s: NULL data with length %zu", e->t->db, e->t->name,
                       col_name(e, col), len);
        return;
    }
    const char *c = copy_in(e, col, p, len);
    if (!c)
        return;
    v->kind = kind;
    v->v.s.ptr = c;
    v->v.s.len = len;
}

static bool decimal_ok(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    size_t d = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++, d++;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, d++;
    }
    return d > 0 && i == len;
}

void evt_set_decimal(evt_event *e, evt_image img, size_t col, const char *text, size_t len)
{
    if (e && !e->failed && text && !decimal_ok(text, len)) {
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s column %s: bad DECIMAL text \"%.*s\"", e->t->db, e->t->name,
                       col_name(e, col), (int)(len > 80 ? 80 : len), text);
        return;
    }
    set_text(e, img, col, EVT_V_DECIMAL, text, len);
}

void evt_set_string(evt_event *e, evt_image img, size_t col, const char *utf8, size_t len)
{
    set_text(e, img, col, EVT_V_STRING, utf8, len);
}

void evt_set_bytes(evt_event *e, evt_image img, size_t col, const void *data, size_t len)
{
    set_text(e, img, col, EVT_V_BYTES, data, len);
}

void evt_set_json(evt_event *e, evt_image img, size_t col, const char *json, size_t len)
{
    set_text(e, img, col, EVT_V_JSON, json, len);
}

void evt_set_temporal(evt_event *e, evt_image img, size_t col, evt_kind kind, const evt_temporal *t)
{
    evt_value *v = slot(e, img, col);
    if (!v)
        return;
    const char *what = NULL;
    if (kind != EVT_V_DATE && kind != EVT_V_DATETIME && kind != EVT_V_TIMESTAMP && kind != EVT_V_TIME)
        what = "not a temporal kind";
    else if (!t)
        what = "no value";
    else if (t->fsp > 6)
        what = "fsp above 6";
    else if (t->usec > 999999)
        what = "microseconds above 999999";
    else if (t->year < 0 || t->year > 9999 || t->month > 12 || t->day > 31)
        what = "date out of range";
    else if (t->minute > 59 || t->second > 59 || (kind != EVT_V_TIME && t->hour > 23) || t->hour > 9999)
        what = "time out of range";
    if (what) {
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s column %s: bad temporal value: %s", e->t->db, e->t->name,
                       col_name(e, col), what);
        return;
    }
    v->kind = kind;
    /* t is not NULL here: what is set when it is (cppcheck cannot follow that) */
    /* cppcheck-suppress nullPointerRedundantCheck */
    v->v.t = *t;
}

void evt_set_set(evt_event *e, evt_image img, size_t col, const char *const *labels, const size_t *lens, size_t n)
{
    evt_value *v = slot(e, img, col);
    if (!v)
        return;
    if (n && !labels) {
        evt_event_fail(e, TB_ERR_INVALID, "%s.%s column %s: NULL SET labels", e->t->db, e->t->name,
                       col_name(e, col));
        return;
    }
    const char **items = n ? evt_arena_alloc(&e->mem, n * sizeof(char *)) : NULL;
    size_t *ls = n ? evt_arena_alloc(&e->mem, n * sizeof(size_t)) : NULL;
    if (n && (!items || !ls)) {
        evt_event_fail(e, TB_ERR_NOMEM, "%s.%s column %s: out of memory", e->t->db, e->t->name, col_name(e, col));
        return;
    }
    for (size_t k = 0; k < n; k++) {
        size_t l = lens ? lens[k] : strlen(labels[k]);
        items[k] = copy_in(e, col, labels[k], l);
        if (!items[k])
            return;
        ls[k] = l;
    }
    v->kind = EVT_V_SET;
    v->v.set.items = items;
    v->v.set.lens = ls;
    v->v.set.n = n;
}

void evt_set_geometry(evt_event *e, evt_image img, size_t col, uint32_t srid, const void *wkb, size_t len)
{
    evt_value *v = slot(e, img, col);
    if (!v)
        return;
    const uint8_t *p = copy_in(e, col, wkb, wkb ? len : 0);
    if (!p)
        return;
    v->kind = EVT_V_GEOMETRY;
    v->v.geo.srid = srid;
    v->v.geo.wkb = p;
    v->v.geo.len = wkb ? len : 0;
}

void evt_set_vector(evt_event *e, evt_image img, size_t col, const float *items, size_t n)
{
    evt_value *v = slot(e, img, col);
    if (!v)
        return;
    if (n > SIZE_MAX / sizeof(float))
        n = SIZE_MAX / sizeof(float);
    const float *p = copy_in(e, col, items, items ? n * sizeof(float) : 0);
    if (!p)
        return;
    v->kind = EVT_V_VECTOR;
    v->v.vec.items = p;
    v->v.vec.n = items ? n : 0;
}

void evt_set_value(evt_event *e, evt_image img, size_t col, const evt_value *v)
{
    if (!v) {
        evt_event_fail(e, TB_ERR_INVALID, "evt_set_value: NULL value for column %zu", col);
        return;
    }
    switch (v->kind) {
    case EVT_V_ABSENT: {
        evt_value *s = slot(e, img, col);
        if (s)
            s->kind = EVT_V_ABSENT;
        return;
    }
    case EVT_V_NULL: evt_set_null(e, img, col); return;
    case EVT_V_INT: evt_set_int(e, img, col, v->v.i); return;
    case EVT_V_UINT: evt_set_uint(e, img, col, v->v.u); return;
    case EVT_V_FLOAT: evt_set_float(e, img, col, v->v.f); return;
    case EVT_V_DOUBLE: evt_set_double(e, img, col, v->v.d); return;
    case EVT_V_BOOL: evt_set_bool(e, img, col, v->v.b); return;
    case EVT_V_DECIMAL: evt_set_decimal(e, img, col, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_STRING: evt_set_string(e, img, col, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_BYTES: evt_set_bytes(e, img, col, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_JSON: evt_set_json(e, img, col, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_DATE:
    case EVT_V_DATETIME:
    case EVT_V_TIMESTAMP:
    case EVT_V_TIME: evt_set_temporal(e, img, col, v->kind, &v->v.t); return;
    case EVT_V_SET: evt_set_set(e, img, col, v->v.set.items, v->v.set.lens, v->v.set.n); return;
    case EVT_V_GEOMETRY: evt_set_geometry(e, img, col, v->v.geo.srid, v->v.geo.wkb, v->v.geo.len); return;
    case EVT_V_VECTOR: evt_set_vector(e, img, col, v->v.vec.items, v->v.vec.n); return;
    }
    evt_event_fail(e, TB_ERR_INVALID, "evt_set_value: unknown kind %d for column %zu", (int)v->kind, col);
}

/* ------------------------------------------------------------ metadata */

static char *arena_strdup(evt_event *e, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *p = evt_arena_alloc(&e->mem, n + 1);
    if (!p) {
        evt_event_fail(e, TB_ERR_NOMEM, "out of memory copying event metadata");
        return NULL;
    }
    memcpy(p, s, n + 1);
    return p;
}

void evt_event_set_position(evt_event *e, const tb_position *pos)
{
    if (!e)
        return;
    if (!pos) {
        tb_position_init(&e->pos);
        return;
    }
    e->pos = *pos;
    e->pos.file = arena_strdup(e, pos->file);
    e->pos.gtid_set = arena_strdup(e, pos->gtid_set);
}

void evt_event_set_txid(evt_event *e, const char *txid)
{
    if (e)
        e->txid = arena_strdup(e, txid);
}

void evt_event_set_wire_key(evt_event *e, const char *key, size_t len)
{
    if (!e)
        return;
    e->wire_key = NULL;
    e->wire_key_len = 0;
    if (!key)
        return;
    char *p = evt_arena_alloc(&e->mem, len ? len : 1);
    if (!p) {
        evt_event_fail(e, TB_ERR_NOMEM, "out of memory copying the event's message key");
        return;
    }
    memcpy(p, key, len);
    e->wire_key = p;
    e->wire_key_len = len;
}

const char *evt_event_wire_key(const evt_event *e, size_t *len)
{
    *len = e->wire_key_len;
    return e->wire_key;
}

void evt_event_set_rowid(evt_event *e, evt_image img, int64_t rowid)
{
    if (e && (img == EVT_BEFORE || img == EVT_AFTER)) {
        e->has_rowid[img] = true;
        e->rowid[img] = rowid;
    }
}

bool evt_event_rowid(const evt_event *e, evt_image img, int64_t *rowid)
{
    *rowid = e->rowid[img];
    return e->has_rowid[img];
}

void evt_event_set_commit_ts_ms(evt_event *e, int64_t ts_ms) { if (e) e->commit_ts_ms = ts_ms; }
void evt_event_set_last_in_tx(evt_event *e, bool last) { if (e) e->last_in_tx = last; }
void evt_event_set_partial(evt_event *e, bool partial) { if (e) e->partial = partial; }
void evt_event_set_snapshot(evt_event *e, evt_snapshot_flag flag) { if (e) e->snapshot = flag; }
void evt_event_set_snapshot_edges(evt_event *e, unsigned edges) { if (e) e->snap_edges = edges; }
void evt_event_set_connector(evt_event *e, evt_connector c) { if (e) e->connector = c; }

const tb_error *evt_event_error(const evt_event *e)
{
    return !e->failed ? NULL : e->err ? e->err : &evt_err_nomem;
}
evt_op evt_event_op(const evt_event *e) { return e->op; }
evt_table *evt_event_table(const evt_event *e) { return e->t; }
const tb_position *evt_event_position(const evt_event *e) { return &e->pos; }
const char *evt_event_txid(const evt_event *e) { return e->txid; }
int64_t evt_event_commit_ts_ms(const evt_event *e) { return e->commit_ts_ms; }
bool evt_event_last_in_tx(const evt_event *e) { return e->last_in_tx; }
bool evt_event_partial(const evt_event *e) { return e->partial; }
evt_snapshot_flag evt_event_snapshot(const evt_event *e) { return e->snapshot; }
unsigned evt_event_snapshot_edges(const evt_event *e) { return e->snap_edges; }

void evt_event_set_source_row(evt_event *e, uint64_t pos, uint32_t row, bool txid_is_gtid)
{
    if (!e)
        return;
    e->has_src = true;
    e->txid_gtid = txid_is_gtid;
    e->src_pos = pos;
    e->src_row = row;
}

bool evt_event_txid_is_gtid(const evt_event *e) { return e->has_src && e->txid_gtid; }

bool evt_event_source_row(const evt_event *e, uint64_t *pos, uint32_t *row)
{
    if (!e->has_src)
        return false;
    *pos = e->src_pos;
    *row = e->src_row;
    return true;
}
evt_connector evt_event_connector(const evt_event *e) { return e->connector; }

void evt_event_table_only(evt_event *e)
{
    if (e)
        e->has[EVT_BEFORE] = e->has[EVT_AFTER] = false;
}

tb_code evt_event_update_to_delete(evt_event *e)
{
    if (!e || e->op != EVT_OP_UPDATE)
        return TB_ERR_STATE;
    e->op = EVT_OP_DELETE;
    e->has[EVT_AFTER] = false;
    return TB_OK;
}

bool evt_event_has_image(const evt_event *e, evt_image img)
{
    return (img == EVT_BEFORE || img == EVT_AFTER) && e->has[img];
}

const evt_value *evt_event_value(const evt_event *e, evt_image img, size_t col)
{
    static const evt_value absent = {.kind = EVT_V_ABSENT};
    if (!e->t || col >= e->t->ncols || (img != EVT_BEFORE && img != EVT_AFTER) || !e->has[img])
        return &absent;
    return &e->img[img][col];
}

const evt_value *evt_event_values(const evt_event *e, evt_image img)
{
    if (!e->t || (img != EVT_BEFORE && img != EVT_AFTER) || !e->has[img])
        return NULL;
    return e->img[img];
}

/* ------------------------------------------------------------ equality */

bool evt_value_equal(const evt_value *a, const evt_value *b)
{
    if (a->kind != b->kind) {
        if (a->kind == EVT_V_INT && b->kind == EVT_V_UINT)
            return a->v.i >= 0 && (uint64_t)a->v.i == b->v.u;
        if (a->kind == EVT_V_UINT && b->kind == EVT_V_INT)
            return b->v.i >= 0 && (uint64_t)b->v.i == a->v.u;
        return false;
    }
    switch (a->kind) {
    case EVT_V_ABSENT:
    case EVT_V_NULL: return true;
    case EVT_V_INT: return a->v.i == b->v.i;
    case EVT_V_UINT: return a->v.u == b->v.u;
    case EVT_V_FLOAT: return memcmp(&a->v.f, &b->v.f, sizeof(float)) == 0;
    case EVT_V_DOUBLE: return memcmp(&a->v.d, &b->v.d, sizeof(double)) == 0;
    case EVT_V_BOOL: return a->v.b == b->v.b;
    case EVT_V_DECIMAL:
    case EVT_V_STRING:
    case EVT_V_BYTES:
    case EVT_V_JSON:
        return a->v.s.len == b->v.s.len && (a->v.s.len == 0 || memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0);
    case EVT_V_DATE:
    case EVT_V_DATETIME:
    case EVT_V_TIMESTAMP:
    case EVT_V_TIME: {
        const evt_temporal *x = &a->v.t, *y = &b->v.t;
        return x->year == y->year && x->month == y->month && x->day == y->day && x->hour == y->hour &&
               x->minute == y->minute && x->second == y->second && x->usec == y->usec && x->fsp == y->fsp &&
               x->negative == y->negative;
    }
    case EVT_V_SET:
        if (a->v.set.n != b->v.set.n)
            return false;
        for (size_t k = 0; k < a->v.set.n; k++)
            if (a->v.set.lens[k] != b->v.set.lens[k] ||
                memcmp(a->v.set.items[k], b->v.set.items[k], a->v.set.lens[k]) != 0)
                return false;
        return true;
    case EVT_V_GEOMETRY:
        return a->v.geo.srid == b->v.geo.srid && a->v.geo.len == b->v.geo.len &&
               (a->v.geo.len == 0 || memcmp(a->v.geo.wkb, b->v.geo.wkb, a->v.geo.len) == 0);
    case EVT_V_VECTOR:
        return a->v.vec.n == b->v.vec.n &&
               (a->v.vec.n == 0 || memcmp(a->v.vec.items, b->v.vec.items, a->v.vec.n * sizeof(float)) == 0);
    }
    return false;
}

bool evt_event_key_unchanged(const evt_event *e)
{
    if (e->op != EVT_OP_UPDATE || !e->t)
        return true;
    for (size_t k = 0; k < e->t->npk; k++) {
        size_t c = e->t->pk[k];
        const evt_value *b = &e->img[EVT_BEFORE][c], *a = &e->img[EVT_AFTER][c];
        /* A key column missing from the after image (MINIMAL) did not change. */
        if (a->kind == EVT_V_ABSENT || b->kind == EVT_V_ABSENT)
            continue;
        if (!evt_value_equal(a, b))
            return false;
    }
    /* the row moved to another rowid: its key changed if it holds NULL (the renderers decide) */
    return !(e->has_rowid[EVT_BEFORE] && e->has_rowid[EVT_AFTER] && e->rowid[EVT_BEFORE] != e->rowid[EVT_AFTER]);
}
