/*
 * sqlcap_diff: the row diff of one transaction (sqlite-wal.md 2.5-2.7).
 *
 * State at the position P: the schema, owner[pgno] (0 none, 1 sqlite_schema
 * tree, id+2 a captured table's tree) and, for overflow pages, the tree and
 * the b-tree page holding the cell. For a transaction with changed pages C:
 * touched trees = owners of C and of truncated pages (+ tables whose CREATE
 * text or root changed). For each touched table, S0/S1 = its pages in V0/V1;
 * cand0 = S0 ∩ (C ∪ truncated ∪ ¬S1 ∪ forced), cand1 = S1 ∩ (C ∪ ¬S0 ∪ forced)
 * (forced: holder of a changed overflow page); rows on candidate pages give
 * O and N keyed by the primary key; N only = c, O only = d, differing = u.
 * Pages in S0 ∩ S1 outside C are byte-identical, so this is exact.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlcap_int.h"
#include "tb_log.h"

struct sqlcap_engine {
    sqlcap_pages *pg;
    char *dbname;
    sqlite3 *mem;
    sqlcap_schema schema;
    tb_buf sig;
    int next_id;
    uint32_t npages;
    size_t cap;           /* slots in the arrays below (max pgno + 1) */
    uint32_t *owner, *ovowner, *ovleaf;
    uint32_t *inner;      /* inner[p] == owner[p]: p is an interior page of that tree at P */
    uint32_t *m0, *m1, *mforce, *mdone;
    uint32_t stamp, fstamp;
    sqlcap_u32s scan_pages; /* sqlcap_engine_scan: pages of the table being scanned */
    int scan_id;
    /* per-table diff scratch, reused across transactions (freed with the engine) */
    uint8_t *skip0, *skip1, *pga, *pgb, *cellscr;
    struct sqlcap_rowmap *O, *N;
    sqlcap_u32s in0, lf0, in1, lf1; /* tree pages of the table being diffed, V0 and V1 */
    sqlcap_u32s cands;              /* candidate pages of the fast path (sqlcap_fast_cands) */
    sqlcap_evpool pool;             /* delivered events kept for reuse (sqlcap_engine_recycle) */
    bool ddl_drop, ddl_rename, ddl_alter, drop_marks; /* sqlcap_engine_set_ddl */
    bool table_marks;                                 /* sqlcap_engine_set_table_marks */
};

/* ---------------------------------------------------------------- engine */

static tb_code sqlcap_engine_grow(sqlcap_engine *e, uint32_t npages)
{
    if ((size_t)npages + 1 <= e->cap)
        return TB_OK;
    size_t nc = e->cap ? e->cap : 1024;
    while (nc < (size_t)npages + 1)
        nc *= 2;
    uint32_t **arrs[] = {&e->owner, &e->ovowner, &e->ovleaf, &e->m0, &e->m1, &e->mforce, &e->mdone, &e->inner};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        uint32_t *n = realloc(*arrs[i], nc * sizeof *n);
        if (!n)
            return TB_ERR_NOMEM;
        memset(n + e->cap, 0, (nc - e->cap) * sizeof *n);
        *arrs[i] = n;
    }
    e->cap = nc;
    return TB_OK;
}

sqlcap_engine *sqlcap_engine_new(sqlcap_pages *pg, const char *dbname)
{
    sqlcap_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->pg = pg;
    e->dbname = strdup(dbname);
    tb_buf_init(&e->sig, 0);
    if (!e->dbname || sqlite3_open_v2(":memory:", &e->mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        sqlcap_engine_free(e);
        return NULL;
    }
    return e;
}

void sqlcap_engine_free(sqlcap_engine *e)
{
    if (!e)
        return;
    sqlcap_schema_free(&e->schema);
    tb_buf_free(&e->sig);
    sqlite3_close(e->mem);
    free(e->dbname);
    free(e->owner);
    free(e->ovowner);
    free(e->ovleaf);
    free(e->m0);
    free(e->m1);
    free(e->mforce);
    free(e->mdone);
    free(e->inner);
    sqlcap_u32s_free(&e->scan_pages);
    sqlcap_u32s_free(&e->in0);
    sqlcap_u32s_free(&e->lf0);
    sqlcap_u32s_free(&e->in1);
    sqlcap_u32s_free(&e->lf1);
    sqlcap_u32s_free(&e->cands);
    sqlcap_evpool_free(&e->pool);
    free(e->skip0);
    free(e->skip1);
    free(e->pga);
    free(e->pgb);
    free(e->cellscr);
    if (e->O)
        sqlcap_rowmap_free(e->O);
    if (e->N)
        sqlcap_rowmap_free(e->N);
    free(e->O);
    free(e->N);
    free(e);
}

void sqlcap_engine_set_ddl(sqlcap_engine *e, bool drop, bool rename, bool alter, bool marks)
{
    e->drop_marks = marks;
    e->ddl_drop = drop;
    e->ddl_rename = rename;
    e->ddl_alter = alter;
}

void sqlcap_engine_set_table_marks(sqlcap_engine *e, bool on) { e->table_marks = on; }

const sqlcap_schema *sqlcap_engine_schema(const sqlcap_engine *e) { return &e->schema; }

static sqlcap_tbl *sqlcap_by_id(const sqlcap_schema *s, int id)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->tbls[i]->id == id)
            return s->tbls[i];
    return NULL;
}

/* Register overflow ownership for every row cell of a page. */
typedef struct sqlcap_ovctx {
    sqlcap_engine *e;
    uint32_t owner;
} sqlcap_ovctx;

static tb_code sqlcap_ov_cell(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                              const sqlcap_u32s *ovfl, tb_error *err)
{
    sqlcap_ovctx *x = opaque;
    (void)rowid, (void)payload, (void)len;
    for (size_t i = 0; i < ovfl->n; i++) {
        if (sqlcap_engine_grow(x->e, ovfl->v[i]) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "overflow map: out of memory");
        x->e->ovowner[ovfl->v[i]] = x->owner;
        x->e->ovleaf[ovfl->v[i]] = pgno;
    }
    return TB_OK;
}

static tb_code sqlcap_set_schema_owners(sqlcap_engine *e, const sqlcap_view *v, const sqlcap_u32s *sovfl,
                                        tb_error *err)
{
    sqlcap_u32s inner = {0}, leaves = {0};
    tb_code rc = sqlcap_tree_pages(v, 1, &inner, &leaves, err);
    for (size_t i = 1; rc == TB_OK && i < e->cap; i++)
        if (e->owner[i] == 1)
            e->owner[i] = 0;
    for (size_t i = 0; rc == TB_OK && i < inner.n; i++)
        e->owner[inner.v[i]] = 1;
    for (size_t i = 0; rc == TB_OK && i < leaves.n; i++)
        e->owner[leaves.v[i]] = 1;
    for (size_t i = 0; rc == TB_OK && i < sovfl->n; i++) {
        e->ovowner[sovfl->v[i]] = 1;
        e->ovleaf[sovfl->v[i]] = 1;
    }
    sqlcap_u32s_free(&inner);
    sqlcap_u32s_free(&leaves);
    return rc;
}

tb_code sqlcap_engine_attach(sqlcap_engine *e, uint32_t npages, tb_error *err)
{
    sqlcap_view v = {e->pg, NULL, npages};
    sqlcap_u32s sovfl = {0}, inner = {0}, leaves = {0};
    tb_code rc;
    e->npages = npages;
    sqlcap_schema_free(&e->schema);
    if (sqlcap_engine_grow(e, npages) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "page maps: out of memory (%u pages)", npages);
    memset(e->owner, 0, e->cap * sizeof *e->owner);
    memset(e->ovowner, 0, e->cap * sizeof *e->ovowner);
    memset(e->inner, 0, e->cap * sizeof *e->inner);
    if ((rc = sqlcap_schema_load(&v, NULL, e->dbname, &e->next_id, e->mem, &e->schema, &sovfl, err)) != TB_OK)
        goto out;
    if ((rc = sqlcap_schema_sig(&v, &e->sig, NULL, err)) != TB_OK)
        goto out;
    if ((rc = sqlcap_set_schema_owners(e, &v, &sovfl, err)) != TB_OK)
        goto out;
    for (size_t i = 0; i < e->schema.n; i++) {
        sqlcap_tbl *t = e->schema.tbls[i];
        if (!t->captured)
            continue;
        inner.n = leaves.n = 0;
        if ((rc = sqlcap_tree_pages(&v, t->root, &inner, &leaves, err)) != TB_OK)
            goto out;
        sqlcap_ovctx x = {e, (uint32_t)t->id + 2};
        for (size_t k = 0; k < inner.n; k++) {
            e->owner[inner.v[k]] = x.owner;
            e->inner[inner.v[k]] = x.owner;
            if (t->without_rowid && (rc = sqlcap_page_rows(&v, inner.v[k], sqlcap_ov_cell, &x, err)) != TB_OK)
                goto out;
        }
        for (size_t k = 0; k < leaves.n; k++) {
            e->owner[leaves.v[k]] = x.owner;
            if ((rc = sqlcap_page_rows(&v, leaves.v[k], sqlcap_ov_cell, &x, err)) != TB_OK)
                goto out;
        }
    }
out:
    sqlcap_u32s_free(&sovfl);
    sqlcap_u32s_free(&inner);
    sqlcap_u32s_free(&leaves);
    return rc;
}

/* ---------------------------------------------------------------- one table */

typedef struct sqlcap_rowctx {
    sqlcap_engine *e;
    const sqlcap_tbl *t;
    sqlcap_rowmap *map;
    sqlcap_val *vals;
    tb_buf *key;
    uint32_t ovowner; /* 0: do not register overflow pages */
} sqlcap_rowctx;

static tb_code sqlcap_collect(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                              const sqlcap_u32s *ovfl, tb_error *err)
{
    sqlcap_rowctx *x = opaque;
    tb_code rc;
    if (x->ovowner) {
        sqlcap_ovctx o = {x->e, x->ovowner};
        if ((rc = sqlcap_ov_cell(&o, pgno, rowid, payload, len, ovfl, err)) != TB_OK)
            return rc;
    }
    if (!x->t->without_rowid && (x->t->ipk >= 0 || x->t->synth_rowid)) {
        /* key = rowid: encoded exactly as sqlcap_key() encodes an INT, without decoding the row */
        uint8_t kb[9];
        uint64_t u = (uint64_t)rowid ^ 0x8000000000000000ull;
        kb[0] = SQLCAP_INT;
        for (int i = 0; i < 8; i++)
            kb[1 + i] = (uint8_t)(u >> (56 - 8 * i));
        if (sqlcap_rowmap_add(x->map, kb, 9, payload, len, rowid) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory collecting rows", x->t->name);
        return TB_OK;
    }
    if ((rc = sqlcap_row_decode_stored(x->t, rowid, payload, len, x->vals, err)) != TB_OK)
        return rc;
    if (!x->t->without_rowid && sqlcap_key_has_null(x->t, x->vals)) {
        /* a declared key holding NULL (a rowid table allows it): rows are told apart by their
         * rowid (sqlite-wal.md 2.6 "Keys"), under a tag no key tuple starts with */
        uint8_t kb[9];
        kb[0] = SQLCAP_KEY_ROWID_TAG;
        for (int i = 0; i < 8; i++)
            kb[1 + i] = (uint8_t)((uint64_t)rowid >> (56 - 8 * i));
        if (sqlcap_rowmap_add(x->map, kb, 9, payload, len, rowid) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory collecting rows", x->t->name);
        return TB_OK;
    }
    if (sqlcap_key(x->t, x->vals, x->key) != TB_OK ||
        sqlcap_rowmap_add(x->map, (const uint8_t *)x->key->data, x->key->len, payload, len, rowid) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory collecting rows", x->t->name);
    return TB_OK;
}

static bool sqlcap_val_eq(const sqlcap_val *a, const sqlcap_val *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case SQLCAP_NULL: return true;
    case SQLCAP_INT: return a->i == b->i;
    case SQLCAP_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0 || a->d == b->d;
    default: return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
    }
}

/* Old row (t0 columns) normalised to t1's columns: by name, else by position
 * when the column count is unchanged (RENAME COLUMN), else the default. */
static void sqlcap_normalise(const sqlcap_tbl *t0, const sqlcap_val *v0, const sqlcap_tbl *t1, sqlcap_val *out)
{
    for (size_t c = 0; c < t1->ncols; c++) {
        long j = -1;
        for (size_t k = 0; k < t0->ncols; k++)
            if (strcmp(t0->colnames[k], t1->colnames[c]) == 0) {
                j = (long)k;
                break;
            }
        if (j < 0 && t0->ncols == t1->ncols)
            j = (long)c;
        out[c] = j >= 0 ? v0[j] : t1->dflt[c];
    }
}

typedef struct sqlcap_sorted {
    const uint8_t *k;
    size_t kn;
    evt_event *ev;
} sqlcap_sorted;

static int sqlcap_sorted_cmp(const void *a, const void *b)
{
    const sqlcap_sorted *x = a, *y = b;
    size_t n = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}

/* Every row of table t in view v (its leaves, and the interior pages of a
 * WITHOUT ROWID tree, which hold rows too) into x's map. */
static tb_code sqlcap_collect_all(const sqlcap_view *v, const sqlcap_tbl *t, const sqlcap_u32s *inner,
                                  const sqlcap_u32s *leaves, sqlcap_rowctx *x, tb_error *err)
{
    tb_code rc = TB_OK;
    for (size_t i = 0; rc == TB_OK && i < leaves->n; i++)
        rc = sqlcap_page_rows(v, leaves->v[i], sqlcap_collect, x, err);
    for (size_t i = 0; rc == TB_OK && t->without_rowid && i < inner->n; i++)
        rc = sqlcap_page_rows(v, inner->v[i], sqlcap_collect, x, err);
    return rc;
}

/* One event for every row of m (rows of table t), in key order, appended to
 * out: op d (before image: the row) or op r (after image: the row). vals has
 * t->ncols slots. */
static tb_code sqlcap_emit_all(sqlcap_engine *e, const sqlcap_tbl *t, const sqlcap_rowmap *m, evt_op op,
                               sqlcap_val *vals, sqlcap_evlist *out, tb_error *err)
{
    tb_code rc = TB_OK;
    sqlcap_sorted *srt = calloc(m->n + 1, sizeof *srt);
    size_t n = 0;
    if (!srt)
        return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
    for (size_t i = 0; rc == TB_OK && i < m->n; i++) {
        const sqlcap_rowent *re = &m->e[i];
        if ((rc = sqlcap_row_decode(t, re->rowid, (const uint8_t *)m->arena.data + re->poff, re->plen, vals, err)) !=
            TB_OK)
            break;
        evt_event *ev = op == EVT_OP_DELETE ? sqlcap_make_event(&e->pool, t, op, vals, NULL, re->rowid)
                                            : sqlcap_make_event(&e->pool, t, op, NULL, vals, re->rowid);
        if (!ev)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
        else
            srt[n++] = (sqlcap_sorted){(const uint8_t *)m->arena.data + re->koff, re->klen, ev};
    }
    if (rc == TB_OK)
        qsort(srt, n, sizeof *srt, sqlcap_sorted_cmp);
    for (size_t i = 0; i < n; i++) {
        evt_event *ev = srt[i].ev;
        srt[i].ev = NULL;
        if (rc == TB_OK && sqlcap_evpush(out, ev) != TB_OK)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
        else if (rc != TB_OK)
            evt_event_free(ev);
    }
    free(srt);
    return rc;
}

/* Whether t1, a new definition of t0 under the same name, makes existing rows
 * read differently: a column of t0 is gone (dropped, or renamed), or t1 has a
 * new column whose default is not NULL (SQLite does not rewrite the rows of
 * ADD COLUMN: they read the default). A changed constraint or a rewritten
 * REFERENCES clause (a referenced table renamed) changes no value. */
static bool sqlcap_alter_fills(const sqlcap_tbl *t0, const sqlcap_tbl *t1)
{
    for (size_t k = 0; k < t0->ncols; k++) {
        bool found = false;
        for (size_t c = 0; c < t1->ncols && !found; c++)
            found = strcmp(t0->colnames[k], t1->colnames[c]) == 0;
        if (!found)
            return true;
    }
    for (size_t c = 0; c < t1->ncols; c++) {
        bool found = false;
        for (size_t k = 0; k < t0->ncols && !found; k++)
            found = strcmp(t0->colnames[k], t1->colnames[c]) == 0;
        if (!found && (t1->dflt[c].type != SQLCAP_NULL || (t1->gen && t1->gen[c] == 2)))
            return true; /* a default, or a VIRTUAL column computed for every row */
    }
    return false;
}

/*
 * Fast path: when no interior page of the table's tree at P is in the
 * transaction, its interior pages are byte-identical in V0 and V1, so both
 * walks reach the same pages (S0 = S1) provided every changed page of the tree
 * is still a leaf in V1 (checked here; the walk classifies a level by its
 * pages' type). Then the candidates of both sides are the tree's pages in C
 * plus the holders of changed overflow pages (forced), and the owners do not
 * change: the two tree walks (every interior page read and every leaf looked
 * up in the transaction, per transaction) are not needed. *fast = true with
 * e->cands filled, false when the general path must run. buf receives page
 * images (pgsz bytes).
 */
static tb_code sqlcap_fast_cands(sqlcap_engine *e, const sqlcap_view *v0, const sqlcap_view *v1, const sqlcap_map *txn,
                                 uint32_t own, uint8_t *buf, bool *fast, tb_error *err)
{
    uint32_t s = ++e->stamp; /* mdone: already a candidate */
    e->cands.n = 0;
    *fast = false;
    if (v1->npages < v0->npages)
        return TB_OK; /* pages truncated away: the general path */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < txn->cap; i++) {
            uint32_t p = txn->keys[i];
            if (!p || p > v1->npages)
                continue;
            if (pass == 1) {
                if (!e->ovowner[p])
                    continue;
                p = e->ovleaf[p]; /* the page holding the changed overflow chain's cell: forced */
                if (!p || p >= e->cap)
                    continue;
            }
            if (e->owner[p] != own || e->mdone[p] == s)
                continue;
            if (e->inner[p] == own)
                return TB_OK;
            if (pass == 0) {
                const uint8_t *img;
                tb_code rc = sqlcap_view_ptr(v1, p, buf, &img, err);
                if (rc != TB_OK)
                    return rc;
                uint8_t ty = img[p == 1 ? 100 : 0];
                if (ty != 13 && ty != 10)
                    return TB_OK; /* no longer a leaf (the tree grew a level) */
            }
            e->mdone[p] = s;
            if (sqlcap_u32s_push(&e->cands, p) != TB_OK)
                return tb_error_set(err, TB_ERR_NOMEM, false, "diff: out of memory");
        }
    *fast = true;
    return TB_OK;
}

/* One table's diff between two versions of the database (sqlcap_diff_table):
 * the pages, row maps and scratch values its four cases share. */
typedef struct sqlcap_dctx {
    sqlcap_engine *e;
    const sqlcap_view *v0, *v1;
    const sqlcap_map *txn;
    const sqlcap_tbl *t0, *t1; /* the table before and after (NULL: absent) */
    uint32_t own;              /* its owner mark in e->owner / e->inner */
    uint32_t s;                /* this diff's stamp in e->m0 / e->m1 / e->mdone */
    bool fast;                 /* the candidates are e->cands (sqlcap_fast_cands), no tree walk */
    sqlcap_u32s in0, lf0, in1, lf1; /* interior and leaf pages before and after */
    sqlcap_rowmap O, N;             /* the candidate rows before and after */
    tb_buf key;
    sqlcap_val *va, *vb, *vn;
    sqlcap_sorted *srt; /* the changed case's events, sorted by key */
    size_t nsrt;
    sqlcap_evlist *out;
} sqlcap_dctx;

static tb_code sqlcap_diff_nomem(const sqlcap_dctx *d, tb_error *err)
{
    return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory in diff",
                        d->t1 ? d->t1->name : d->t0->name);
}

/* A captured table that arrived (created, or renamed to its name) holding no
 * row: with table marks, one event of its descriptor without a row image, so
 * the consumer writes its schema record and makes its topic now, not with a
 * first row that may never come. */
static tb_code sqlcap_diff_table_mark(sqlcap_dctx *d, tb_error *err)
{
    if (!d->e->table_marks || d->N.n > 0)
        return TB_OK;
    evt_event *ev = evt_event_new(EVT_OP_READ, d->t1->et);
    if (ev) {
        evt_event_set_connector(ev, EVT_CONN_SQLITE);
        evt_event_table_only(ev);
    }
    if (sqlcap_evpush(d->out, ev) != TB_OK)
        return sqlcap_diff_nomem(d, err);
    return TB_OK;
}

/* ALTER TABLE RENAME: the rows leave the old name (deletes) and are sent under
 * the new one (reads), so both topics follow the table. */
static tb_code sqlcap_diff_renamed(sqlcap_dctx *d, tb_error *err)
{
    sqlcap_rowctx x0 = {d->e, d->t0, &d->O, d->va, &d->key, 0};
    sqlcap_rowctx x1 = {d->e, d->t1, &d->N, d->vb, &d->key, d->own};
    tb_code rc;
    if ((rc = sqlcap_collect_all(d->v0, d->t0, &d->in0, &d->lf0, &x0, err)) != TB_OK ||
        (rc = sqlcap_collect_all(d->v1, d->t1, &d->in1, &d->lf1, &x1, err)) != TB_OK ||
        (rc = sqlcap_emit_all(d->e, d->t0, &d->O, EVT_OP_DELETE, d->va, d->out, err)) != TB_OK ||
        (rc = sqlcap_emit_all(d->e, d->t1, &d->N, EVT_OP_READ, d->vb, d->out, err)) != TB_OK)
        return rc;
    TB_INFO(SQLCAP_FAC, "table %s renamed to %s: a delete for each of its %zu rows under the old name, each of "
            "its %zu rows sent again under the new name", d->t0->name, d->t1->name, d->O.n, d->N.n);
    return sqlcap_diff_table_mark(d, err);
}

/* DROP TABLE: under ddl.drop.policy=tombstone a delete for every row it had;
 * then, with drop marks, the event that says the table is gone. */
static tb_code sqlcap_diff_dropped(sqlcap_dctx *d, tb_error *err)
{
    sqlcap_engine *e = d->e;
    const sqlcap_tbl *t0 = d->t0;
    sqlcap_rowctx x0 = {e, t0, &d->O, d->va, &d->key, 0};
    tb_code rc;
    if (e->ddl_drop) {
        if ((rc = sqlcap_collect_all(d->v0, t0, &d->in0, &d->lf0, &x0, err)) != TB_OK ||
            (rc = sqlcap_emit_all(e, t0, &d->O, EVT_OP_DELETE, d->va, d->out, err)) != TB_OK)
            return rc;
        TB_INFO(SQLCAP_FAC, "table %s dropped: a delete for each of its %zu rows (ddl.drop.policy=tombstone)",
                t0->name, d->O.n);
    } else if (!e->drop_marks) {
        TB_WARN(SQLCAP_FAC, "table %s dropped: its topic is left as it is, with every row the table had "
                "(ddl.drop.policy=warn; `tombstone` deletes them)", t0->name);
    }
    if (e->drop_marks) {
        /* after its rows: the consumer says the table is gone (and WARNs under
         * ddl.drop.policy=warn, knowing whether it is captured) */
        evt_table *gone = evt_table_new_dropped(e->dbname, t0->name);
        evt_event *ev = gone ? evt_event_new(EVT_OP_DELETE, gone) : NULL;
        evt_table_unref(gone);
        if (sqlcap_evpush(d->out, ev) != TB_OK)
            return sqlcap_diff_nomem(d, err);
    }
    return TB_OK;
}

/* A new table (or newly capturable): every row is an insert. */
static tb_code sqlcap_diff_created(sqlcap_dctx *d, tb_error *err)
{
    const sqlcap_tbl *t1 = d->t1;
    sqlcap_rowctx x1 = {d->e, t1, &d->N, d->va, &d->key, d->own};
    tb_code rc;
    int nl = t1->without_rowid ? 2 : 1;
    sqlcap_u32s *lists[2] = {&d->lf1, &d->in1};
    for (int li = 0; li < nl; li++)
        for (size_t i = 0; i < lists[li]->n; i++)
            if ((rc = sqlcap_page_rows(d->v1, lists[li]->v[i], sqlcap_collect, &x1, err)) != TB_OK)
                return rc;
    for (size_t i = 0; i < d->N.n; i++) {
        sqlcap_rowent *ne = &d->N.e[i];
        if ((rc = sqlcap_row_decode(t1, ne->rowid, (const uint8_t *)d->N.arena.data + ne->poff, ne->plen, d->vb,
                                    err)) != TB_OK)
            return rc;
        if (sqlcap_evpush(d->out, sqlcap_make_event(&d->e->pool, t1, EVT_OP_CREATE, NULL, d->vb, ne->rowid)) != TB_OK)
            return sqlcap_diff_nomem(d, err);
    }
    return sqlcap_diff_table_mark(d, err);
}

/* The changed table's candidate rows into d->O and d->N: the rows of every
 * page the transaction wrote (or whose overflow chain it wrote) and of every
 * page that joined or left the table's tree; of a page changed in place, the
 * rows whose cells are byte-identical on both sides are left out of both. */
static tb_code sqlcap_diff_collect(sqlcap_dctx *d, tb_error *err)
{
    sqlcap_engine *e = d->e;
    const sqlcap_view *v0 = d->v0, *v1 = d->v1;
    sqlcap_rowctx x0 = {e, d->t0, &d->O, d->va, &d->key, 0};
    sqlcap_rowctx x1 = {e, d->t1, &d->N, d->va, &d->key, d->own};
    uint32_t s = d->s;
    tb_code rc;
    size_t scap = e->pg->pgsz / 4 + 1;
    if (!e->skip0) {
        e->skip0 = malloc(scap);
        e->skip1 = malloc(scap);
        e->pga = malloc(e->pg->pgsz);
        if (!e->pgb)
            e->pgb = malloc(e->pg->pgsz);
        e->cellscr = calloc(1, sqlcap_same_cells_scratch(e->pg->pgsz)); /* its offset map must begin empty */
    }
    uint8_t *skip0 = e->skip0, *skip1 = e->skip1, *pga = e->pga, *pgb = e->pgb;
    if (!e->cellscr || !skip0 || !skip1 || !pga || !pgb)
        return sqlcap_diff_nomem(d, err);
    for (size_t i = 0; d->fast && i < e->cands.n; i++) {
        /* S0 = S1: every candidate is on both sides (the general path's "both") */
        uint32_t p = e->cands.v[i];
        if (e->mforce[p] == e->fstamp) {
            if ((rc = sqlcap_page_rows(v0, p, sqlcap_collect, &x0, err)) != TB_OK ||
                (rc = sqlcap_page_rows(v1, p, sqlcap_collect, &x1, err)) != TB_OK)
                return rc;
            continue;
        }
        size_t n0 = 0, n1 = 0;
        const uint8_t *ia, *ib;
        if ((rc = sqlcap_page_same_cells(v0, v1, p, pga, pgb, &ia, &ib, skip0, &n0, skip1, &n1, e->cellscr, err)) !=
                TB_OK ||
            (rc = sqlcap_page_rows_img(v0, p, ia, skip0, n0, sqlcap_collect, &x0, err)) != TB_OK ||
            (rc = sqlcap_page_rows_img(v1, p, ib, skip1, n1, sqlcap_collect, &x1, err)) != TB_OK)
            return rc;
    }
    for (int side = 0; !d->fast && side < 2; side++) {
        sqlcap_u32s *lists[2] = {side ? &d->lf1 : &d->lf0, side ? &d->in1 : &d->in0};
        int nl = (side ? d->t1 : d->t0)->without_rowid ? 2 : 1;
        for (int li = 0; li < nl; li++)
            for (size_t i = 0; i < lists[li]->n; i++) {
                uint32_t p = lists[li]->v[i];
                bool forced = e->mforce[p] == e->fstamp, inc = sqlcap_map_get(d->txn, p, NULL);
                bool both = e->m0[p] == s && e->m1[p] == s && p <= v1->npages;
                bool cand = inc || forced;
                if (side == 0)
                    cand = cand || p > v1->npages || e->m1[p] != s;
                else
                    cand = cand || e->m0[p] != s;
                if (!cand)
                    continue;
                if (both && !forced) {
                    /* the same page on both sides, changed in place: both versions at
                     * once (side 0), identical cells filtered out; nothing on side 1 */
                    if (side == 1) {
                        if (e->mdone[p] == s)
                            continue; /* done on side 0 */
                        if ((rc = sqlcap_page_rows(v1, p, sqlcap_collect, &x1, err)) != TB_OK)
                            return rc;
                        continue;
                    }
                    e->mdone[p] = s;
                    size_t n0 = 0, n1 = 0;
                    const uint8_t *ia, *ib;
                    if ((rc = sqlcap_page_same_cells(v0, v1, p, pga, pgb, &ia, &ib, skip0, &n0, skip1, &n1,
                                                     e->cellscr, err)) != TB_OK ||
                        (rc = sqlcap_page_rows_img(v0, p, ia, skip0, n0, sqlcap_collect, &x0, err)) != TB_OK ||
                        (rc = sqlcap_page_rows_img(v1, p, ib, skip1, n1, sqlcap_collect, &x1, err)) != TB_OK)
                        return rc;
                    continue;
                }
                if ((rc = sqlcap_page_rows(side ? v1 : v0, p, sqlcap_collect, side ? &x1 : &x0, err)) != TB_OK)
                    return rc;
            }
    }
    return TB_OK;
}

/* The changed table's events from d->O and d->N, sorted by key: an update for
 * a key on both sides whose values differ, an insert for a key only after, a
 * delete for a key only before. */
static tb_code sqlcap_diff_events(sqlcap_dctx *d, tb_error *err)
{
    sqlcap_engine *e = d->e;
    const sqlcap_tbl *t0 = d->t0, *t1 = d->t1;
    sqlcap_rowmap *O = &d->O, *N = &d->N;
    tb_code rc;
    if (!(d->srt = calloc(O->n + N->n + 1, sizeof *d->srt)))
        return sqlcap_diff_nomem(d, err);
    /* updates and inserts */
    bool same_schema = t0 == t1 || strcmp(t0->sql, t1->sql) == 0;
    for (size_t i = 0; i < N->n; i++) {
        sqlcap_rowent *ne = &N->e[i];
        const uint8_t *k = (const uint8_t *)N->arena.data + ne->koff;
        long j = sqlcap_rowmap_find(O, k, ne->klen, ne->h);
        evt_event *ev = NULL;
        if (j >= 0 && same_schema && O->e[j].rowid == ne->rowid && O->e[j].plen == ne->plen &&
            memcmp(O->arena.data + O->e[j].poff, N->arena.data + ne->poff, ne->plen) == 0) {
            O->e[j].matched = true; /* byte-identical row: no change */
            continue;
        }
        if ((rc = sqlcap_row_decode(t1, ne->rowid, (const uint8_t *)N->arena.data + ne->poff, ne->plen, d->vb,
                                    err)) != TB_OK)
            return rc;
        if (j >= 0) {
            sqlcap_rowent *oe = &O->e[j];
            oe->matched = true;
            if ((rc = sqlcap_row_decode(t0, oe->rowid, (const uint8_t *)O->arena.data + oe->poff, oe->plen, d->va,
                                        err)) != TB_OK)
                return rc;
            sqlcap_normalise(t0, d->va, t1, d->vn);
            bool same = true;
            for (size_t c = 0; c < t1->ncols && same; c++)
                same = sqlcap_val_eq(&d->vn[c], &d->vb[c]);
            if (same)
                continue;
            ev = sqlcap_make_event(&e->pool, t1, EVT_OP_UPDATE, d->vn, d->vb, ne->rowid);
        } else {
            ev = sqlcap_make_event(&e->pool, t1, EVT_OP_CREATE, NULL, d->vb, ne->rowid);
        }
        if (!ev)
            return sqlcap_diff_nomem(d, err);
        d->srt[d->nsrt++] = (sqlcap_sorted){k, ne->klen, ev};
    }
    for (size_t i = 0; i < O->n; i++) {
        sqlcap_rowent *oe = &O->e[i];
        if (oe->matched)
            continue;
        if ((rc = sqlcap_row_decode(t0, oe->rowid, (const uint8_t *)O->arena.data + oe->poff, oe->plen, d->va,
                                    err)) != TB_OK)
            return rc;
        evt_event *ev;
        if (strcmp(t0->name, t1->name) != 0) { /* renamed: the row leaves the table under its new name */
            sqlcap_normalise(t0, d->va, t1, d->vn);
            ev = sqlcap_make_event(&e->pool, t1, EVT_OP_DELETE, d->vn, NULL, oe->rowid);
        } else {
            ev = sqlcap_make_event(&e->pool, t0, EVT_OP_DELETE, d->va, NULL, oe->rowid);
        }
        if (!ev)
            return sqlcap_diff_nomem(d, err);
        d->srt[d->nsrt++] = (sqlcap_sorted){(const uint8_t *)O->arena.data + oe->koff, oe->klen, ev};
    }
    qsort(d->srt, d->nsrt, sizeof *d->srt, sqlcap_sorted_cmp);
    for (size_t i = 0; i < d->nsrt; i++) {
        evt_event *ev = d->srt[i].ev;
        d->srt[i].ev = NULL;
        if (sqlcap_evpush(d->out, ev) != TB_OK)
            return sqlcap_diff_nomem(d, err);
    }
    return TB_OK;
}

/* A table captured before and after: its row changes, then, when an ALTER
 * changed what its old rows read as, every row again
 * (ddl.alter.policy=resnapshot) or a WARN. */
static tb_code sqlcap_diff_changed(sqlcap_dctx *d, tb_error *err)
{
    const sqlcap_tbl *t0 = d->t0, *t1 = d->t1;
    tb_code rc;
    if ((rc = sqlcap_diff_collect(d, err)) != TB_OK || (rc = sqlcap_diff_events(d, err)) != TB_OK)
        return rc;
    if (strcmp(t0->name, t1->name) != 0 || t0 == t1 || strcmp(t0->sql, t1->sql) == 0 || !sqlcap_alter_fills(t0, t1))
        return TB_OK;
    if (!d->e->ddl_alter) {
        TB_WARN(SQLCAP_FAC, "table %s altered (a column added with a default, renamed or dropped): its "
                "rows keep their old values in the topic until each changes (ddl.alter.policy=warn; "
                "`resnapshot` sends them again)", t1->name);
        return TB_OK;
    }
    /* ddl.alter.policy=resnapshot: every row again, as it reads now */
    sqlcap_rowctx x1 = {d->e, t1, &d->N, d->va, &d->key, d->own};
    sqlcap_rowmap_reset(&d->N);
    if ((rc = sqlcap_collect_all(d->v1, t1, &d->in1, &d->lf1, &x1, err)) != TB_OK ||
        (rc = sqlcap_emit_all(d->e, t1, &d->N, EVT_OP_READ, d->vb, d->out, err)) != TB_OK)
        return rc;
    TB_INFO(SQLCAP_FAC, "table %s altered (a column added with a default, renamed or dropped): each of "
            "its %zu rows sent again (ddl.alter.policy=resnapshot)", t1->name, d->N.n);
    return TB_OK;
}

/* One table's changes between v0 (schema t0) and v1 (schema t1): the pages
 * of its trees on both sides (or the fast path's candidates), one of the four
 * cases (renamed, dropped, changed, created), then the page owners for v1.
 * The engine's page lists and row maps are lent to the call and given back. */
static tb_code sqlcap_diff_table(sqlcap_engine *e, const sqlcap_view *v0, const sqlcap_view *v1, const sqlcap_map *txn,
                                 int id, const sqlcap_tbl *t0, const sqlcap_tbl *t1, sqlcap_evlist *out, tb_error *err)
{
    tb_code rc = TB_OK;
    sqlcap_dctx dc = {.e = e, .v0 = v0, .v1 = v1, .txn = txn, .t0 = t0, .t1 = t1, .own = (uint32_t)id + 2, .out = out};
    sqlcap_dctx *d = &dc;
    d->in0 = e->in0, d->lf0 = e->lf0, d->in1 = e->in1, d->lf1 = e->lf1; /* moved back at the end */
    d->in0.n = d->lf0.n = d->in1.n = d->lf1.n = 0;
    tb_buf_init(&d->key, 0);
    if (e->O) { /* moved out of e->O, e->N for the call, moved back at the end */
        d->O = *e->O;
        d->N = *e->N;
        sqlcap_rowmap_reset(&d->O);
        sqlcap_rowmap_reset(&d->N);
    }
    uint32_t own = d->own;
    uint32_t maxp = v0->npages > v1->npages ? v0->npages : v1->npages;
    if (sqlcap_engine_grow(e, maxp) != TB_OK) {
        rc = sqlcap_diff_nomem(d, err);
        goto out;
    }
    if (t0 && t0 == t1 && t0->captured) {
        if (!e->pgb && !(e->pgb = malloc(e->pg->pgsz))) {
            rc = sqlcap_diff_nomem(d, err);
            goto out;
        }
        if ((rc = sqlcap_fast_cands(e, v0, v1, txn, own, e->pgb, &d->fast, err)) != TB_OK)
            goto out;
    }
    if (!d->fast && t0 && t0->captured && (rc = sqlcap_tree_pages(v0, t0->root, &d->in0, &d->lf0, err)) != TB_OK)
        goto out;
    if (!d->fast && t1 && t1->captured && (rc = sqlcap_tree_pages(v1, t1->root, &d->in1, &d->lf1, err)) != TB_OK)
        goto out;
    uint32_t s = d->s = ++e->stamp;
    for (size_t i = 0; i < d->in0.n; i++) e->m0[d->in0.v[i]] = s;
    for (size_t i = 0; i < d->lf0.n; i++) e->m0[d->lf0.v[i]] = s;
    for (size_t i = 0; i < d->in1.n; i++) e->m1[d->in1.v[i]] = s;
    for (size_t i = 0; i < d->lf1.n; i++) e->m1[d->lf1.v[i]] = s;
    size_t mc = (t0 ? t0->ncols : 0) + (t1 ? t1->ncols : 0) + 1;
    d->va = calloc(mc, sizeof *d->va);
    d->vb = calloc(mc, sizeof *d->vb);
    d->vn = calloc(mc, sizeof *d->vn);
    if (!d->va || !d->vb || !d->vn) {
        rc = sqlcap_diff_nomem(d, err);
        goto out;
    }
    bool renamed = t0 && t1 && strcmp(t0->name, t1->name) != 0;
    if (t0 && t0->captured && t1 && t1->captured && renamed && e->ddl_rename)
        rc = sqlcap_diff_renamed(d, err);
    else if (t0 && t0->captured && !t1)
        rc = sqlcap_diff_dropped(d, err);
    else if (t0 && t0->captured && t1 && t1->captured)
        rc = sqlcap_diff_changed(d, err);
    else if (t1 && t1->captured)
        rc = sqlcap_diff_created(d, err);
    if (rc != TB_OK || d->fast)
        goto out;
    /* owners now describe V1 */
    for (size_t i = 0; i < d->in0.n; i++) {
        if (e->owner[d->in0.v[i]] == own)
            e->owner[d->in0.v[i]] = 0;
        if (e->inner[d->in0.v[i]] == own)
            e->inner[d->in0.v[i]] = 0;
    }
    for (size_t i = 0; i < d->lf0.n; i++) if (e->owner[d->lf0.v[i]] == own) e->owner[d->lf0.v[i]] = 0;
    for (size_t i = 0; i < d->in1.n; i++) e->owner[d->in1.v[i]] = e->inner[d->in1.v[i]] = own;
    for (size_t i = 0; i < d->lf1.n; i++) {
        e->owner[d->lf1.v[i]] = own;
        e->inner[d->lf1.v[i]] = 0;
    }
out:
    for (size_t i = 0; d->srt && i < d->nsrt; i++)
        evt_event_free(d->srt[i].ev);
    free(d->srt);
    free(d->va);
    free(d->vb);
    free(d->vn);
    tb_buf_free(&d->key);
    if (!e->O) {
        e->O = calloc(1, sizeof *e->O);
        e->N = calloc(1, sizeof *e->N);
    }
    if (e->O && e->N) {
        *e->O = d->O;
        *e->N = d->N;
    } else {
        sqlcap_rowmap_free(&d->O);
        sqlcap_rowmap_free(&d->N);
    }
    e->in0 = d->in0;
    e->lf0 = d->lf0;
    e->in1 = d->in1;
    e->lf1 = d->lf1;
    return rc;
}

/* ---------------------------------------------------------------- one txn */

static int sqlcap_name_cmp(const void *a, const void *b)
{
    const sqlcap_tbl *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

tb_code sqlcap_engine_txn(sqlcap_engine *e, const sqlcap_map *txn, uint32_t new_npages, sqlcap_evlist *out,
                          tb_error *err)
{
    tb_code rc = TB_OK;
    sqlcap_view v0 = {e->pg, NULL, e->npages}, v1 = {e->pg, txn, new_npages};
    uint32_t maxp = e->npages > new_npages ? e->npages : new_npages;
    int *ids = NULL;
    size_t nids = 0, capids = 0;
    bool schema_touch = false;
    sqlcap_schema s1 = {0};
    sqlcap_u32s sovfl = {0};
    tb_buf sig;
    tb_buf_init(&sig, 0);
    if (sqlcap_engine_grow(e, maxp) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "page maps: out of memory");
    uint32_t fs = ++e->fstamp;
#define SQLCAP_TOUCH(o)                                                                   \
    do {                                                                                  \
        uint32_t o_ = (o);                                                                \
        if (o_ == 1) {                                                                    \
            schema_touch = true;                                                          \
        } else if (o_ >= 2) {                                                             \
            bool seen_ = false;                                                           \
            for (size_t q_ = 0; q_ < nids && !seen_; q_++)                                \
                seen_ = ids[q_] == (int)(o_ - 2);                                         \
            if (!seen_) {                                                                 \
                if (nids == capids) {                                                     \
                    capids = capids ? capids * 2 : 16;                                    \
                    int *n_ = realloc(ids, capids * sizeof *n_);                          \
                    if (!n_) {                                                            \
                        rc = tb_error_set(err, TB_ERR_NOMEM, false, "txn: out of memory"); \
                        goto out;                                                         \
                    }                                                                     \
                    ids = n_;                                                             \
                }                                                                         \
                ids[nids++] = (int)(o_ - 2);                                              \
            }                                                                             \
        }                                                                                 \
    } while (0)
    for (size_t i = 0; i < txn->cap; i++) {
        uint32_t p = txn->keys[i];
        if (!p || p > maxp)
            continue;
        if (p == 1)
            schema_touch = true;
        SQLCAP_TOUCH(e->owner[p]);
        if (e->ovowner[p]) {
            SQLCAP_TOUCH(e->ovowner[p]);
            e->mforce[e->ovleaf[p]] = fs;
        }
    }
    for (uint32_t p = new_npages + 1; p <= e->npages; p++) {
        SQLCAP_TOUCH(e->owner[p]);
        SQLCAP_TOUCH(e->ovowner[p]);
    }
    bool schema_changed = false;
    if (schema_touch) {
        if ((rc = sqlcap_schema_sig(&v1, &sig, &sovfl, err)) != TB_OK)
            goto out;
        if (sig.len != e->sig.len || (sig.len && memcmp(sig.data, e->sig.data, sig.len) != 0)) {
            schema_changed = true;
            sovfl.n = 0;
            if ((rc = sqlcap_schema_load(&v1, &e->schema, e->dbname, &e->next_id, e->mem, &s1, &sovfl, err)) != TB_OK)
                goto out;
            /* ALTER TABLE RENAME: a new name on the root page of a vanished name, with
             * the same column definitions (the CREATE text after the name): the same
             * table (its id, hence its pages' owner, is kept); rows changed in the
             * same transaction are diffed as usual. A DROP + CREATE of an identical
             * definition that reuses the root page in one transaction is read as a
             * rename too; the row diff is exact either way. */
            for (size_t i = 0; i < s1.n; i++) {
                sqlcap_tbl *t1 = s1.tbls[i];
                if (!t1->captured || sqlcap_schema_find(&e->schema, t1->name))
                    continue;
                const char *d1 = strchr(t1->sql, '(');
                for (size_t k = 0; d1 && k < e->schema.n; k++) {
                    sqlcap_tbl *t0 = e->schema.tbls[k];
                    const char *d0 = strchr(t0->sql, '(');
                    if (t0->root == t1->root && t0->without_rowid == t1->without_rowid && t0->captured && d0 &&
                        strcmp(d0, d1) == 0 && !sqlcap_schema_find(&s1, t0->name)) {
                        TB_INFO(SQLCAP_FAC, "schema: table %s renamed to %s (root page %u): later changes carry "
                                "the new name%s", t0->name, t1->name, t1->root, e->ddl_rename ? "" : "; no row events");
                        t1->id = t0->id;
                        /* the new name's schema record says where the table came from */
                        evt_table *cp = t1->et ? evt_table_copy(t1->et) : NULL;
                        if (!cp || evt_table_set_renamed_from(cp, e->dbname, t0->name) != TB_OK) {
                            evt_table_unref(cp);
                            rc = tb_error_set(err, TB_ERR_NOMEM, false, "schema: out of memory");
                            goto out;
                        }
                        evt_table_seal(cp);
                        evt_table_unref(t1->et);
                        t1->et = cp;
                        break;
                    }
                }
            }
            for (size_t i = 0; i < s1.n; i++) {
                sqlcap_tbl *r0 = sqlcap_by_id(&e->schema, s1.tbls[i]->id);
                if (r0 && strcmp(r0->name, s1.tbls[i]->name) != 0) {
                    SQLCAP_TOUCH((uint32_t)s1.tbls[i]->id + 2);
                    continue;
                }
                sqlcap_tbl *t0 = sqlcap_schema_find(&e->schema, s1.tbls[i]->name);
                if (!t0 || t0->root != s1.tbls[i]->root || strcmp(t0->sql, s1.tbls[i]->sql) != 0) {
                    SQLCAP_TOUCH((uint32_t)s1.tbls[i]->id + 2);
                    TB_INFO(SQLCAP_FAC, "schema: table %s %s", s1.tbls[i]->name,
                            !t0 ? "created" : strcmp(t0->sql, s1.tbls[i]->sql) ? "altered" : "moved");
                }
            }
            for (size_t i = 0; i < e->schema.n; i++)
                if (!sqlcap_schema_find(&s1, e->schema.tbls[i]->name) && !sqlcap_by_id(&s1, e->schema.tbls[i]->id)) {
                    SQLCAP_TOUCH((uint32_t)e->schema.tbls[i]->id + 2); /* sqlcap_diff_table says what is sent */
                }
        }
        if ((rc = sqlcap_set_schema_owners(e, &v1, &sovfl, err)) != TB_OK)
            goto out;
    }
#undef SQLCAP_TOUCH
    const sqlcap_schema *S1 = schema_changed ? &s1 : &e->schema;
    /* process in table-name order */
    sqlcap_tbl **order = calloc(nids + 1, sizeof *order);
    int *oid = calloc(nids + 1, sizeof *oid);
    size_t nord = 0;
    if (!order || !oid) {
        free(order);
        free(oid);
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "txn: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nids; i++) {
        sqlcap_tbl *t = sqlcap_by_id(S1, ids[i]);
        if (!t)
            t = sqlcap_by_id(&e->schema, ids[i]);
        if (t)
            order[nord++] = t;
    }
    qsort(order, nord, sizeof *order, sqlcap_name_cmp);
    for (size_t i = 0; i < nord && rc == TB_OK; i++) {
        int id = order[i]->id;
        rc = sqlcap_diff_table(e, &v0, &v1, txn, id, sqlcap_by_id(&e->schema, id), sqlcap_by_id(S1, id), out, err);
    }
    free(order);
    free(oid);
    if (rc != TB_OK)
        goto out;
    if (schema_changed) {
        sqlcap_schema_free(&e->schema);
        e->schema = s1;
        memset(&s1, 0, sizeof s1);
        tb_buf tmp = e->sig;
        e->sig = sig;
        sig = tmp;
    }
    /* pages truncated away lose their owners */
    for (uint32_t p = new_npages + 1; p <= e->npages && p < e->cap; p++)
        e->owner[p] = e->ovowner[p] = e->inner[p] = 0;
    e->npages = new_npages;
out:
    sqlcap_schema_free(&s1);
    sqlcap_u32s_free(&sovfl);
    tb_buf_free(&sig);
    free(ids);
    return rc;
}

void sqlcap_engine_recycle(sqlcap_engine *e, evt_event *ev)
{
    if (e)
        sqlcap_evpool_put(&e->pool, ev);
    else
        evt_event_free(ev);
}

/* ---------------------------------------------------------------- scan */

typedef struct sqlcap_scanctx {
    sqlcap_engine *e;
    const sqlcap_tbl *t;
    sqlcap_val *vals;
    sqlcap_evlist *out;
} sqlcap_scanctx;

static tb_code sqlcap_scan_cell(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                                const sqlcap_u32s *ovfl, tb_error *err)
{
    sqlcap_scanctx *x = opaque;
    tb_code rc;
    (void)pgno, (void)ovfl;
    if ((rc = sqlcap_row_decode(x->t, rowid, payload, len, x->vals, err)) != TB_OK)
        return rc;
    if (sqlcap_evpush(x->out, sqlcap_make_event(&x->e->pool, x->t, EVT_OP_READ, NULL, x->vals, rowid)) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", x->t->name);
    return TB_OK;
}

tb_code sqlcap_engine_count(sqlcap_engine *e, const sqlcap_tbl *t, int64_t *rows, tb_error *err)
{
    sqlcap_view v = {e->pg, NULL, e->npages};
    sqlcap_u32s inner = {0}, leaves = {0};
    uint8_t *buf = malloc(e->pg->pgsz);
    *rows = 0;
    tb_code rc = buf ? sqlcap_tree_pages(&v, t->root, &inner, &leaves, err)
                     : tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
    /* a row is a cell of a leaf page; WITHOUT ROWID (an index b-tree) keeps rows in its interior
     * cells too */
    for (size_t i = 0; rc == TB_OK && i < leaves.n + (t->without_rowid ? inner.n : 0); i++) {
        uint32_t p = i < leaves.n ? leaves.v[i] : inner.v[i - leaves.n];
        if ((rc = sqlcap_view_read(&v, p, buf, err)) == TB_OK)
            *rows += sqlcap_be16(buf + (p == 1 ? 100 : 0) + 3);
    }
    sqlcap_u32s_free(&inner);
    sqlcap_u32s_free(&leaves);
    free(buf);
    return rc;
}

tb_code sqlcap_engine_scan(sqlcap_engine *e, const sqlcap_tbl *t, size_t *cursor, sqlcap_evlist *out, tb_error *err)
{
    sqlcap_view v = {e->pg, NULL, e->npages};
    tb_code rc = TB_OK;
    if (*cursor == 0) {
        sqlcap_u32s inner = {0};
        e->scan_pages.n = 0;
        rc = sqlcap_tree_pages(&v, t->root, &inner, &e->scan_pages, err);
        for (size_t i = 0; rc == TB_OK && t->without_rowid && i < inner.n; i++)
            rc = sqlcap_u32s_push(&e->scan_pages, inner.v[i]);
        sqlcap_u32s_free(&inner);
        if (rc != TB_OK)
            return rc;
    }
    sqlcap_val *vals = calloc(t->ncols + 1, sizeof *vals);
    if (!vals)
        return tb_error_set(err, TB_ERR_NOMEM, false, "table %s: out of memory", t->name);
    sqlcap_scanctx x = {e, t, vals, out};
    if (*cursor < e->scan_pages.n)
        rc = sqlcap_page_rows(&v, e->scan_pages.v[*cursor], sqlcap_scan_cell, &x, err);
    free(vals);
    if (rc != TB_OK)
        return rc;
    (*cursor)++;
    if (*cursor >= e->scan_pages.n)
        *cursor = 0;
    return TB_OK;
}
