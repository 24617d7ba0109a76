/*
 * snap_incremental: incremental snapshots by low/high watermarks.
 * The algorithm, the signalling table and the crash behaviour are described
 * in snap_incremental.h. Signal rows and the state file: snap_inc_state.c.
 */
#include "snap_inc_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"
#include "snap_inc_key.h"
#include "snap_rows.h"
#include "snap_schema.h"
#include "snap_sql.h"
#include "tb_log.h"

#define FAC SNAP_INC_FAC

/* ============================================================ parts */

/* One key range of a window, read by its own connection and thread
 * (snapshot.threads > 1). While the threads run, each touches only its part;
 * the snap_inc's table and chunk size are read, never written. */
struct snap_inc_part {
    evt_table *t;
    MYSQL *my;
    snap_key *lo, *hi;  /* after lo, up to and including hi; NULL: unbounded */
    int64_t limit;      /* 0: none (a range bounded above) */
    snap_rows *rows;    /* the range's n rows, stored; moved to the chunk when it is put together */
    size_t n;
    tb_code rc;
    tb_error err;
};

/* Close the connections of set k (after the stored results read on them). */
static void set_close(snap_inc *si, unsigned k)
{
    for (size_t i = 0; si->set[k] && i < si->nconns; i++)
        if (si->set[k][i]) {
            mysql_close(si->set[k][i]);
            si->set[k][i] = NULL;
        }
}

static void parts_free(snap_inc *si)
{
    for (size_t i = 0; si->parts && i < si->nconns; i++) {
        snap_inc_part *p = &si->parts[i];
        snap_rows_close(p->rows);
    }
    free(si->parts);
    for (unsigned k = 0; k < 2; k++) {
        set_close(si, k);
        free(si->set[k]);
    }
}

/* ============================================================ chunks' storage */

static tb_code chunk_alloc(snap_inc_chunk *ch, size_t nsrc)
{
    ch->src = calloc(nsrc, sizeof(*ch->src));
    ch->src_end = calloc(nsrc, sizeof(*ch->src_end));
    return ch->src && ch->src_end ? TB_OK : TB_ERR_NOMEM;
}

/* Close ch's stored results (before the connection they came from closes): ch is empty. */
static void chunk_rows_close(snap_inc_chunk *ch)
{
    for (size_t j = 0; j < ch->nsrc; j++) {
        snap_rows_close(ch->src[j]);
        ch->src[j] = NULL;
    }
    ch->nsrc = 0;
    ch->nrows = 0;
    ch->last = false;
}

static void chunk_free(snap_inc_chunk *ch)
{
    if (ch->src)
        chunk_rows_close(ch);
    free(ch->src);
    free(ch->src_end);
    ch->src = NULL;
    ch->src_end = NULL;
}

static void ahead_discard(snap_inc *si);

/* ============================================================ open/close */

tb_code snap_inc_open(const cfg *c, const char *state_path, const tb_position *resume, snap_inc **out,
                      tb_error *err)
{
    tb_code rc = TB_OK;
    *out = NULL;
    snap_inc *si = calloc(1, sizeof(*si));
    if (!si)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    si->c = c;
    si->chunk_size = cfg_get_int(c, CFGK_SNAPSHOT_CHUNK_SIZE);
    si->nconns = (size_t)cfg_get_int(c, CFGK_SNAPSHOT_THREADS);
    if (si->nconns < 1)
        si->nconns = 1;
    if (chunk_alloc(&si->cur, si->nconns) != TB_OK || chunk_alloc(&si->ahead.ch, si->nconns) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    si->set[0] = calloc(si->nconns, sizeof(*si->set[0]));
    si->set[1] = calloc(si->nconns, sizeof(*si->set[1]));
    if (!si->set[0] || !si->set[1]) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (si->nconns > 1 && !(si->parts = calloc(si->nconns, sizeof(*si->parts)))) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    tb_position_init(&si->hw);
    tb_position_init(&si->test_pending);
    tb_buf_init(&si->kbuf, 0);
    const char *storage = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
    tb_buf p, legacy;
    tb_buf_init(&p, 0);
    tb_buf_init(&legacy, 0);
    tb_code prc = TB_OK;
    if (state_path) {
        prc = tb_buf_puts(&p, state_path);
    } else if (storage && strcmp(storage, "file") == 0) {
        /* the offsets file is this connector's (its lease is a lock on it) */
        prc = tb_buf_printf(&p, "%s.incsnap", cfg_get_str(c, CFGK_OFFSETS_FILE));
    } else {
        /* connectors with offsets in Kafka may share a folder and an offsets.file */
        prc = cfg_connector_file(c, ".incsnap", &p);
        if (prc == TB_OK)
            prc = tb_buf_printf(&legacy, "%s.incsnap", cfg_get_str(c, CFGK_OFFSETS_FILE));
        if (prc == TB_OK && strcmp(tb_buf_cstr(&legacy), tb_buf_cstr(&p)) != 0)
            si->legacy_path = tb_buf_detach(&legacy, NULL);
    }
    tb_buf_free(&legacy);
    si->state_path = prc == TB_OK ? tb_buf_detach(&p, NULL) : NULL;
    tb_buf_free(&p);
    if (!si->state_path) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = snap_inc_load_state(si, resume, err);
    if (rc != TB_OK)
        goto out;
    *out = si;
    si = NULL;
out:
    snap_inc_close(si);
    return rc;
}

/* The current chunk is over (released, failed or passed over); a chunk read
 * ahead is left alone. */
static void chunk_clear(snap_inc *si)
{
    tb_hmap_free(&si->seen, NULL);
    if (si->cur.src)
        chunk_rows_close(&si->cur);
    si->rel = 0;
    si->ph = PH_IDLE;
}

void snap_inc_close(snap_inc *si)
{
    if (!si)
        return;
    /* before any connection closes: the stored results go first */
    ahead_discard(si);
    chunk_clear(si);
    chunk_free(&si->cur);
    chunk_free(&si->ahead.ch);
    snap_key_free(&si->ahead.key);
    free(si->ahead.db);
    free(si->ahead.table);
    free(si->ahead.db_table);
    evt_event_free(si->ev);
    for (size_t i = 0; i < si->nqueue; i++)
        free(si->queue[i]);
    free(si->queue);
    for (size_t i = 0; i < si->nfresh; i++)
        free(si->fresh[i]);
    free(si->fresh);
    for (size_t i = 0; i < si->nsigs; i++)
        free(si->sigs[i].db);
    free(si->sigs);
    for (size_t i = 0; i < si->nsaves; i++) {
        tb_position_free(&si->saves[i].pos);
        free(si->saves[i].json);
    }
    free(si->saves);
    free(si->disk_base);
    tb_position_free(&si->test_pending);
    snap_key_free(&si->key);
    evt_table_unref(si->t);
    evt_table_unref(si->finished);
    tb_position_free(&si->hw);
    tb_buf_free(&si->kbuf);
    parts_free(si);
    free(si->state_path);
    free(si->legacy_path);
    free(si);
}

evt_table *snap_inc_take_finished(snap_inc *si, bool *fresh)
{
    evt_table *t = si->finished;
    *fresh = t && si->finished_fresh;
    si->finished = NULL;
    si->finished_fresh = false;
    return t;
}

tb_code snap_inc_table_changed(snap_inc *si, const char *db, const char *table, const tb_position *pos, tb_error *err)
{
    char name[2 * 256 + 2];
    if (si->nfresh == 0 || (size_t)snprintf(name, sizeof name, "%s.%s", db, table) >= sizeof name ||
        !snap_inc_fresh_has(si, name))
        return TB_OK; /* (a name longer than any MySQL name is never fresh) */
    TB_INFO(FAC, "%s: a statement changed it during the initial snapshot; its reconcile step runs after its last "
                 "chunk", name);
    snap_inc_fresh_drop(si, name);
    return pos && pos->kind != TB_POS_NONE ? snap_inc_push_save(si, pos, err) : TB_OK;
}

bool snap_inc_wants_poll(const snap_inc *si)
{
    return si->ph == PH_IDLE && si->nqueue > 0 && !si->ahead.started;
}

bool snap_inc_active(const snap_inc *si)
{
    return si->nqueue > 0 || si->ph != PH_IDLE || si->nsaves > 0;
}

tb_code snap_inc_begin_initial(snap_inc *si, char *const *tables, const bool *fresh, size_t n, tb_error *err)
{
    ahead_discard(si); /* a window in flight is passed over: its ids are waited for no more */
    chunk_clear(si);
    return snap_inc_state_initial(si, tables, fresh, n, err);
}

/* ============================================================ key set */

/* The stream changed the row whose key is `key` during the window: the
 * chunk's row with that key, if any, is not released (the stream's event is
 * newer). The keys are checked against the chunk's rows as they are released
 * (row_live), so the window costs the keys the stream touched, not an index of
 * its rows. */
static tb_code seen_add(snap_inc *si, const char *key, size_t len, tb_error *err)
{
    void **v;
    if (tb_hmap_put(&si->seen, key, len, &v) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

/* ============================================================ chunks */

/* Connect the missing connections of a set (nconns of them); *mariadb: the server's flavor. */
static tb_code set_connect(const cfg *c, MYSQL **set, size_t n, bool *mariadb, tb_error *err)
{
    for (size_t i = 0; i < n; i++) {
        bool m = false;
        if (!set[i]) {
            tb_code rc = snap_sql_connect_rows(c, &set[i], &m, err);
            if (rc != TB_OK)
                return rc;
            if (i == 0)
                *mariadb = m;
        }
    }
    return TB_OK;
}

/* One bound of a key range: lower "(k1 > ?) OR (k1 = ? AND k2 > ?) ...", upper
 * "(k1 < ?) OR (k1 = ? AND k2 < ?) ... OR (k1 = ? AND ... AND kn <= ?)". */
static tb_code bound_sql(const evt_table *t, bool upper, tb_buf *sql)
{
    size_t npk = evt_table_npk(t);
    tb_code rc = TB_OK;
    for (size_t k = 0; rc == TB_OK && k < npk; k++) {
        rc = tb_buf_puts(sql, k ? " OR (" : "(");
        for (size_t j = 0; rc == TB_OK && j <= k; j++) {
            if (j)
                rc = tb_buf_puts(sql, " AND ");
            if (rc == TB_OK)
                rc = snap_sql_ident(sql, evt_table_column(t, evt_table_pk_col(t, j))->name);
            if (rc == TB_OK)
                rc = tb_buf_puts(sql, j < k ? " = ?" : !upper ? " > ?" : k + 1 < npk ? " < ?" : " <= ?");
        }
        if (rc == TB_OK)
            rc = tb_buf_putc(sql, ')');
    }
    return rc;
}

/* "SELECT cols FROM t [WHERE (lower) [AND (upper)]] ORDER BY k1,k2 [LIMIT n [OFFSET o]]":
 * keys after lo (if has_lo), up to and including hi (if has_hi); limit 0 = none. */
static tb_code range_sql(const evt_table *t, bool has_lo, bool has_hi, int64_t limit, int64_t offset, tb_buf *sql)
{
    size_t npk = evt_table_npk(t);
    tb_code rc = snap_rows_select_sql(t, sql);
    if (rc == TB_OK && (has_lo || has_hi))
        rc = tb_buf_puts(sql, " WHERE ");
    if (rc == TB_OK && has_lo) {
        rc = tb_buf_putc(sql, '(');
        if (rc == TB_OK)
            rc = bound_sql(t, false, sql);
        if (rc == TB_OK)
            rc = tb_buf_putc(sql, ')');
    }
    if (rc == TB_OK && has_hi) {
        rc = tb_buf_puts(sql, has_lo ? " AND (" : "(");
        if (rc == TB_OK)
            rc = bound_sql(t, true, sql);
        if (rc == TB_OK)
            rc = tb_buf_putc(sql, ')');
    }
    if (rc == TB_OK)
        rc = tb_buf_puts(sql, " ORDER BY ");
    for (size_t k = 0; rc == TB_OK && k < npk; k++) {
        if (k)
            rc = tb_buf_putc(sql, ',');
        if (rc == TB_OK)
            rc = snap_sql_ident(sql, evt_table_column(t, evt_table_pk_col(t, k))->name);
    }
    if (rc == TB_OK && limit > 0)
        rc = tb_buf_printf(sql, " LIMIT %lld", (long long)limit);
    if (rc == TB_OK && limit > 0 && offset > 0)
        rc = tb_buf_printf(sql, " OFFSET %lld", (long long)offset);
    return rc;
}

/* The parameters of range_sql for lo and hi (each NULL when absent): *params is malloc'd. */
static tb_code range_params(snap_key *lo, snap_key *hi, size_t npk, MYSQL_BIND **params, unsigned *nparams)
{
    unsigned per = (unsigned)(npk * (npk + 1) / 2);
    *nparams = per * ((lo ? 1u : 0u) + (hi ? 1u : 0u));
    *params = NULL;
    if (*nparams == 0)
        return TB_OK;
    *params = calloc(*nparams, sizeof(**params));
    if (!*params)
        return TB_ERR_NOMEM;
    unsigned p = 0;
    for (int b = 0; b < 2; b++) {
        snap_key *key = b == 0 ? lo : hi;
        if (!key)
            continue;
        for (size_t k = 0; k < npk; k++)
            for (size_t j = 0; j <= k; j++)
                snap_key_bind(key, j, &(*params)[p++]);
    }
    return TB_OK;
}

/* Chunk row i, read into si->ev (valid until the next read). */
static tb_code row_at(snap_inc *si, size_t i, evt_event **out, tb_error *err)
{
    size_t j = 0;
    while (j + 1 < si->cur.nsrc && i >= si->cur.src_end[j])
        j++;
    size_t k = i - (j > 0 ? si->cur.src_end[j - 1] : 0);
    if (!si->ev && !(si->ev = evt_event_new(EVT_OP_READ, si->t)))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (j != si->at_src || k != si->at_row)
        snap_rows_seek(si->cur.src[j], k);
    evt_event_reset(si->ev, EVT_OP_READ, si->t);
    bool got = false;
    tb_code rc = snap_rows_next(si->cur.src[j], si->ev, &got, err);
    if (rc != TB_OK)
        return rc;
    const tb_error *be = evt_event_error(si->ev);
    if (!got || be)
        return tb_error_set(err, be ? be->code : TB_ERR_STATE, false, "table %s.%s: %s", evt_table_db(si->t),
                            evt_table_name(si->t), be ? be->msg : "a stored row could not be read");
    si->at_src = j;
    si->at_row = k + 1;
    *out = si->ev;
    return TB_OK;
}

/* Chunk row i as row_at reads it; *live false when the stream changed its key
 * during the window (seen_add). */
static tb_code row_live(snap_inc *si, size_t i, evt_event **out, bool *live, tb_error *err)
{
    tb_code rc = row_at(si, i, out, err);
    *live = true;
    if (rc != TB_OK || si->seen.n == 0)
        return rc;
    tb_buf_reset(&si->kbuf);
    if ((rc = evt_json_key(*out, EVT_AFTER, &si->kbuf, err)) != TB_OK)
        return rc;
    *live = tb_hmap_find(&si->seen, si->kbuf.data ? si->kbuf.data : "", si->kbuf.len) == NULL;
    return TB_OK;
}

/* Read the rows of one part (any thread). */
static tb_code part_read(snap_inc_part *p)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    snap_rows *rows = NULL;
    MYSQL_BIND *params = NULL;
    unsigned nparams = 0;
    size_t npk = evt_table_npk(p->t);
    tb_error *err = &p->err;
    tb_code rc = TB_OK;
    p->n = 0;
    if (range_sql(p->t, p->lo != NULL, p->hi != NULL, p->limit, 0, &sql) != TB_OK ||
        range_params(p->lo, p->hi, npk, &params, &nparams) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = snap_rows_open(p->my, p->t, tb_buf_cstr(&sql), params, nparams, &rows, err);
    uint64_t nr = 0;
    if (rc == TB_OK)
        rc = snap_rows_store(rows, &nr, err);
    if (rc == TB_OK) {
        p->n = (size_t)nr;
        p->rows = rows;
        rows = NULL;
    }
out:
    snap_rows_close(rows);
    free(params);
    tb_buf_free(&sql);
    return p->rc = rc;
}

static void *part_thread(void *arg)
{
    tb_ignore(part_read(arg)); /* its result is in the part */
    return NULL;
}

/* The key of the row chunk_size rows after `after` (NULL: from the start), in *key;
 * *found false when there are not that many rows. */
static tb_code boundary(snap_inc *si, MYSQL *my, evt_table *t, snap_key *after, evt_event *probe, snap_key *key,
                       bool *found, tb_error *err)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    snap_rows *rows = NULL;
    MYSQL_BIND *params = NULL;
    unsigned nparams = 0;
    *found = false;
    tb_code rc = TB_OK;
    if (range_sql(t, after != NULL, false, 1, si->chunk_size - 1, &sql) != TB_OK ||
        range_params(after, NULL, evt_table_npk(t), &params, &nparams) != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (rc == TB_OK)
        rc = snap_rows_open(my, t, tb_buf_cstr(&sql), params, nparams, &rows, err);
    if (rc == TB_OK) {
        evt_event_reset(probe, EVT_OP_READ, t);
        rc = snap_rows_next(rows, probe, found, err);
    }
    if (rc == TB_OK && *found)
        rc = snap_key_from_event(key, probe, err);
    snap_rows_close(rows);
    free(params);
    tb_buf_free(&sql);
    return rc;
}

/* snapshot.threads > 1: the window holds up to nconns chunks, split at the keys
 * chunk_size rows apart (found one query each, on my), each range read by its
 * own connection at once; a range bounded above is read whole (rows inserted
 * into it since the boundary was found are read too), the last one up to
 * chunk_size rows, which decides whether the table ends. The rows are then
 * put together in key order as the chunk. */
static tb_code read_chunk_parallel(snap_inc *si, MYSQL **conns, snap_inc_chunk *ch, evt_table *t, snap_key *after,
                                   tb_error *err)
{
    size_t np = si->nconns, nb = 0;
    snap_key *b = calloc(np, sizeof(*b)); /* b[1..nb]: the boundaries */
    pthread_t *th = calloc(np, sizeof(*th));
    bool *started = calloc(np, sizeof(*started));
    evt_event *probe = evt_event_new(EVT_OP_READ, t);
    tb_code rc = TB_OK;
    if (!b || !th || !started || !probe) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t j = 1; j < np; j++) {
        bool found = false;
        snap_key *from = j > 1 ? &b[j - 1] : after;
        if ((rc = boundary(si, conns[0], t, from, probe, &b[j], &found, err)) != TB_OK)
            goto out;
        if (!found)
            break;
        nb = j;
    }
    for (size_t j = 0; j <= nb; j++) {
        snap_inc_part *p = &si->parts[j];
        p->t = t;
        p->my = conns[j];
        p->lo = j > 0 ? &b[j] : after;
        p->hi = j < nb ? &b[j + 1] : NULL;
        p->limit = j < nb ? 0 : si->chunk_size;
        p->rc = TB_OK;
        tb_error_clear(&p->err);
    }
    for (size_t j = 1; j <= nb; j++) {
        if (pthread_create(&th[j], NULL, part_thread, &si->parts[j]) != 0) {
            si->parts[j].rc = tb_error_set(&si->parts[j].err, TB_ERR_NOMEM, false, "cannot start a snapshot thread");
            continue;
        }
        started[j] = true;
    }
    tb_ignore(part_read(&si->parts[0]));
    for (size_t j = 1; j <= nb; j++)
        if (started[j])
            pthread_join(th[j], NULL);
    size_t total = 0;
    for (size_t j = 0; j <= nb; j++) {
        if (si->parts[j].rc != TB_OK && rc == TB_OK) {
            rc = si->parts[j].rc;
            if (err)
                *err = si->parts[j].err;
        }
        total += si->parts[j].n;
    }
    if (rc != TB_OK)
        goto out;
    /* the chunk: every part's stored rows, in key order */
    size_t dst = 0;
    for (size_t j = 0; j <= nb; j++) {
        snap_inc_part *p = &si->parts[j];
        dst += p->n;
        ch->src[j] = p->rows;
        p->rows = NULL;
        ch->src_end[j] = dst;
    }
    ch->nsrc = nb + 1;
    ch->nrows = total;
    ch->last = si->parts[nb].n < (size_t)si->chunk_size;
out:
    for (size_t j = 0; si->parts && j < np; j++) {
        snap_inc_part *p = &si->parts[j];
        snap_rows_close(p->rows); /* a part whose rows did not join the chunk (an error) */
        p->rows = NULL;
        p->n = 0;
        p->lo = p->hi = NULL;
    }
    for (size_t j = 1; b && j <= nb; j++)
        snap_key_free(&b[j]);
    free(b);
    free(th);
    free(started);
    evt_event_free(probe);
    return rc;
}

/* Read the rows after `after` (NULL: from the first) of t into ch, on the
 * connection set conns (conns[0], and with snapshot.threads > 1 the others). */
static tb_code read_chunk(snap_inc *si, MYSQL **conns, snap_inc_chunk *ch, evt_table *t, snap_key *after,
                          tb_error *err)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    snap_rows *rows = NULL;
    MYSQL_BIND *params = NULL;
    size_t npk = evt_table_npk(t);
    unsigned nparams = 0;
    tb_code rc = TB_OK;
    if (after && after->n != npk) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "%s: saved key has %zu parts, table %s.%s %zu",
                          si->state_path, after->n, evt_table_db(t), evt_table_name(t), npk);
        goto out;
    }
    if (si->nconns > 1) {
        rc = read_chunk_parallel(si, conns, ch, t, after, err);
        goto out;
    }
    if (range_sql(t, after != NULL, false, si->chunk_size, 0, &sql) != TB_OK ||
        range_params(after, NULL, npk, &params, &nparams) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = snap_rows_open(conns[0], t, tb_buf_cstr(&sql), params, nparams, &rows, err);
    uint64_t nr = 0;
    if (rc == TB_OK)
        rc = snap_rows_store(rows, &nr, err);
    if (rc != TB_OK)
        goto out;
    ch->nrows = (size_t)nr;
    ch->src[0] = rows;
    rows = NULL;
    ch->src_end[0] = ch->nrows;
    ch->nsrc = 1;
    ch->last = ch->nrows < (size_t)si->chunk_size;
out:
    snap_rows_close(rows);
    free(params);
    tb_buf_free(&sql);
    return rc;
}

/* Same key columns (names, in key order). */
static bool same_key(const evt_table *a, const evt_table *b)
{
    if (evt_table_npk(a) != evt_table_npk(b))
        return false;
    for (size_t k = 0; k < evt_table_npk(a); k++)
        if (strcmp(evt_table_column(a, evt_table_pk_col(a, k))->name,
                   evt_table_column(b, evt_table_pk_col(b, k))->name) != 0)
            return false;
    return true;
}

/* One chunk's SQL (steps 1-3 of snap_incremental.h) on connection set k: the
 * low watermark row, the rows of t after `after` (NULL: from the first) into
 * ch, the high watermark row. ch is empty when it fails. */
static tb_code window_read(snap_inc *si, unsigned k, snap_inc_chunk *ch, evt_table *t, snap_key *after, const char *db,
                           const char *db_table, tb_error *err)
{
    const char *name = cfg_get_str(si->c, CFGK_NAME);
    MYSQL **conns = si->set[k];
    ch->set = k;
    tb_code rc = snap_inc_insert_signal(conns[0], db, name, "snapshot-window-open", db_table, &ch->id_lo, err);
    if (rc == TB_OK)
        rc = read_chunk(si, conns, ch, t, after, err);
    if (rc == TB_OK)
        rc = snap_inc_insert_signal(conns[0], db, name, "snapshot-window-close", db_table, &ch->id_hi, err);
    if (rc != TB_OK)
        chunk_rows_close(ch);
    return rc;
}

/* ============================================================ reading ahead
 *
 * With snapshot.threads >= 2, once a window is read (its high watermark
 * inserted), the next window of the same table is read by a thread while the
 * run loop waits for the first one in the binlog and releases its rows: the
 * table described again, the next low watermark, the rows after the first
 * window's last key, the next high watermark. It reads on the connection set
 * the current chunk's rows are not on (snap_inc.set), connected by the
 * thread the first time, so no connection is used by two threads at once:
 * reading a stored row and closing a stored result both touch the
 * connection, and snap_inc_poll does nothing while a chunk is in flight.
 * Its watermarks come after the first window's in the binlog, so when the
 * first window is finished (finish_chunk, while the run loop handles its high
 * watermark's event) the next one becomes the current chunk before the binlog
 * can reach its low watermark. A window read ahead that failed, or whose
 * table's key columns changed, is dropped and snap_inc_poll reads it again
 * (and handles the change). Memory: two windows; connections: two sets. */

static bool table_changed(MYSQL *my, const cfg *c, const evt_table *t, const char *db, const char *table);

static void *ahead_main(void *arg)
{
    snap_inc *si = arg;
    snap_inc_ahead *a = &si->ahead;
    bool mariadb = false;
    mysql_thread_init();
    a->changed = false;
    a->rc = set_connect(si->c, si->set[a->set], si->nconns, &mariadb, &a->err);
    if (a->rc == TB_OK)
        a->rc = snap_schema_describe(si->set[a->set][0], si->c, a->db, a->table, &a->t, &a->err);
#ifdef TB_TEST_HOOKS
    if (a->rc == TB_OK && si->test_after_describe)
        si->test_after_describe(si->test_opaque);
#endif
    if (a->rc == TB_OK)
        a->rc = window_read(si, a->set, &a->ch, a->t, &a->key, a->db, a->db_table, &a->err);
    if (a->rc != TB_OK && a->t && !a->err.retriable)
        a->changed = table_changed(si->set[a->set][0], si->c, a->t, a->db, a->table);
    if (a->rc != TB_OK) /* holds no connection: the stream's own (the catalog's) may need one */
        set_close(si, a->set);
    mysql_thread_end();
    return NULL;
}

/* Start reading the chunk after the current one, when the table goes on. */
static void ahead_start(snap_inc *si)
{
    snap_inc_ahead *a = &si->ahead;
    if (si->nconns < 2 || a->started || si->cur.last || si->cur.nrows == 0 || si->nqueue == 0)
        return;
    if (a->windows++ < a->retry_at)
        return; /* after failures in a row: see ahead_install */
    evt_event *e = NULL;
    tb_error err;
    snap_key_free(&a->key);
    free(a->db);
    free(a->table);
    free(a->db_table);
    a->db = a->table = NULL;
    if (row_at(si, si->cur.nrows - 1, &e, &err) != TB_OK || snap_key_from_event(&a->key, e, &err) != TB_OK ||
        !(a->db_table = strdup(si->queue[0])) || !snap_inc_split_table(a->db_table, &a->db, &a->table))
        return; /* not read ahead: snap_inc_poll reads it (and reports what fails) */
    a->t = NULL;
    a->rc = TB_OK;
    a->set = 1 - si->cur.set; /* the other set: the current chunk's rows stay on theirs */
    tb_error_clear(&a->err);
    if (pthread_create(&a->th, NULL, ahead_main, si) == 0) {
        a->started = true;
        a->joined = false;
    }
}

/* Wait until the chunk read ahead, if any, is read. */
static void ahead_join(snap_inc *si)
{
    if (si->ahead.started && !si->ahead.joined) {
        pthread_join(si->ahead.th, NULL);
        si->ahead.joined = true;
    }
}

/* Wait for the chunk being read ahead, if any, and drop it. */
static void ahead_discard(snap_inc *si)
{
    ahead_join(si);
    si->ahead.started = false;
    chunk_rows_close(&si->ahead.ch);
    evt_table_unref(si->ahead.t);
    si->ahead.t = NULL;
}

/* The current chunk was finished: the chunk read ahead, if any, becomes the
 * current one (PH_WAIT_LOW), and the one after it is read ahead. */
static void ahead_install(snap_inc *si)
{
    snap_inc_ahead *a = &si->ahead;
    if (!a->started)
        return;
    ahead_join(si);
    if (a->rc != TB_OK && a->changed) {
        /* another session's ALTER, DROP or CREATE between the thread's description of the
         * table and its SELECT: no failure of reading ahead, which goes on as it was */
        TB_INFO(FAC, "%s changed while its next window was read ahead (%s): the window is read again as the table "
                     "is now", a->db_table, a->err.msg);
        ahead_discard(si);
        return;
    }
    if (a->rc != TB_OK) {
        /* Reading ahead (snapshot.threads >= 2) may never work here, e.g. when the server
         * refuses a second set of connections (max_user_connections, max_connections): after
         * each failure in a row it is tried again twice as many windows later (2, 4, ... 64),
         * so that a refused run does not open and drop a connection for every window, nor
         * take the connections other clients of the server wait for. The first failure of a
         * run is a WARN, later ones DEBUG. */
        unsigned skip = 1u << (a->streak < 6 ? a->streak + 1 : 6);
        a->streak++;
        a->retry_at = a->windows + skip - 1;
        if (a->failures++ == 0)
            TB_WARN(FAC, "reading the next window of %s ahead failed: %s; it is read again without reading ahead, "
                         "and reading ahead is tried again after %u windows, then after twice as many each time "
                         "it fails (at most 64; later failures are logged at DEBUG)",
                    a->db_table, a->err.msg, skip);
        else
            TB_DEBUG(FAC, "reading the next window of %s ahead failed: %s; it is read again, and reading ahead is "
                          "tried again after %u windows", a->db_table, a->err.msg, skip);
        ahead_discard(si); /* its set was closed by the thread: it connects anew next time */
        return;
    }
    a->streak = 0;
    if (si->ph != PH_IDLE || si->nqueue == 0 || strcmp(si->queue[0], a->db_table) != 0 || !si->has_key || !si->t ||
        !same_key(si->t, a->t)) {
        ahead_discard(si); /* snap_inc_poll reads the chunk again, and sees what changed */
        return;
    }
    snap_inc_chunk empty = si->cur; /* its rows were closed by chunk_clear */
    si->cur = a->ch;
    a->ch = empty;
    a->started = false;
    evt_table_unref(si->t);
    si->t = a->t;
    a->t = NULL;
    si->at_src = SIZE_MAX;
    si->ph = PH_WAIT_LOW;
    TB_DEBUG(FAC, "%s chunk %llu: %zu rows read ahead, window %lld..%lld", si->queue[0],
             (unsigned long long)si->chunks + 1, si->cur.nrows, (long long)si->cur.id_lo, (long long)si->cur.id_hi);
    ahead_start(si);
}

/* After a chunk's SQL failed: whether the table is no longer as si->t describes it (another
 * session's ALTER, DROP or CREATE between the description and the SELECT, which then names a
 * column or a table that is not there), rather than the SQL failing on the table as it is. */
static bool table_changed(MYSQL *my, const cfg *c, const evt_table *t, const char *db, const char *table)
{
    evt_table *now = NULL;
    tb_error e;
    tb_error_clear(&e);
    tb_code rc = snap_schema_describe(my, c, db, table, &now, &e);
    bool changed = rc == TB_ERR_NOT_FOUND || (rc == TB_OK && !evt_table_same_shape(t, now));
    evt_table_unref(now);
    return changed;
}

static bool changed_under(snap_inc *si, const char *db, const char *table)
{
    return table_changed(si->set[0][0], si->c, si->t, db, table);
}

void snap_inc_test_after_describe(snap_inc *si, void (*fn)(void *), void *opaque)
{
    si->test_after_describe = fn;
    si->test_opaque = opaque;
}

tb_code snap_inc_poll(snap_inc *si, tb_error *err)
{
    if (si->ph != PH_IDLE || si->nqueue == 0 || si->ahead.started)
        return TB_OK;
    char *db = NULL, *table = NULL;
    tb_code rc = set_connect(si->c, si->set[0], si->nconns, &si->mariadb, err);
    if (rc != TB_OK)
        return rc;
    if (!snap_inc_split_table(si->queue[0], &db, &table)) {
        TB_ERROR(FAC, "signal names '%s', not db.table: dropped", si->queue[0]);
        snap_inc_queue_pop(si);
        goto out;
    }
    /* every chunk reads the table as it is now: an ALTER since the last
     * chunk (a column added or dropped) changes the SELECT's columns */
    {
        evt_table *prev = si->t;
        si->t = NULL;
        rc = snap_schema_describe(si->set[0][0], si->c, db, table, &si->t, err);
        /* (no descriptor yet after a restart: the saved key is checked against the table's key when read) */
        bool changed = prev && rc == TB_OK && strcmp(evt_table_db(prev), db) == 0 &&
                       strcmp(evt_table_name(prev), table) == 0 && !same_key(prev, si->t);
        if (si->has_key && changed) {
            /* the key columns changed: the saved key says nothing about the new order */
            TB_INFO(FAC, "incremental snapshot of %s: its key columns changed; it starts again from the first chunk",
                    si->queue[0]);
            snap_inc_fresh_drop(si, si->queue[0]); /* its topic holds keys of the old columns */
            snap_key_free(&si->key);
            si->has_key = false;
            si->chunks = si->rows = si->dropped = 0;
        }
        evt_table_unref(prev);
        if (rc == TB_ERR_CONFIG || rc == TB_ERR_NOT_FOUND) {
            /* no such table or no key: retrying cannot help */
            TB_ERROR(FAC, "incremental snapshot of %s dropped: %s", si->queue[0], err ? err->msg : "");
            snap_inc_queue_pop(si);
            snap_key_free(&si->key);
            si->has_key = false;
            si->chunks = si->rows = si->dropped = 0;
            rc = TB_OK;
            goto out;
        }
        if (rc != TB_OK)
            goto out;
    }
#ifdef TB_TEST_HOOKS
    if (si->test_after_describe)
        si->test_after_describe(si->test_opaque);
#endif
    rc = snap_inc_ensure_signal_table(si->set[0][0], db, err);
    if (rc == TB_OK)
        rc = window_read(si, 0, &si->cur, si->t, si->has_key ? &si->key : NULL, db, si->queue[0], err);
    if (rc != TB_OK) {
        chunk_clear(si);
        if (!err->retriable && changed_under(si, db, table)) {
            /* the next poll describes the table again (and drops the snapshot of one gone) */
            TB_INFO(FAC, "%s changed while its chunk was read (%s): the chunk is read again", si->queue[0], err->msg);
            tb_error_clear(err);
            rc = TB_OK;
        }
        goto out;
    }
    si->at_src = SIZE_MAX;
    si->ph = PH_WAIT_LOW;
    TB_DEBUG(FAC, "%s chunk %llu: %zu rows read, window %lld..%lld", si->queue[0],
             (unsigned long long)si->chunks + 1, si->cur.nrows, (long long)si->cur.id_lo, (long long)si->cur.id_hi);
    ahead_start(si);
out:
    if (rc != TB_OK && err && err->retriable) {
        /* a connection error (the server restarted, say): the next poll connects anew (no chunk
         * is in flight nor read ahead: no stored result is left on either set) */
        set_close(si, 0);
        set_close(si, 1);
    }
    free(db);
    free(table);
    return rc;
}

/* ============================================================ observe */

static const char *str_col(const evt_event *ev, const char *name, size_t *len)
{
    long ci = evt_table_find(evt_event_table(ev), name);
    if (ci < 0)
        return NULL;
    const evt_value *v = evt_event_value(ev, EVT_AFTER, (size_t)ci);
    if (v->kind != EVT_V_STRING)
        return NULL;
    *len = v->v.s.len;
    return v->v.s.ptr;
}

static bool int_col(const evt_event *ev, const char *name, int64_t *out)
{
    long ci = evt_table_find(evt_event_table(ev), name);
    if (ci < 0)
        return false;
    const evt_value *v = evt_event_value(ev, EVT_AFTER, (size_t)ci);
    if (v->kind == EVT_V_INT)
        *out = v->v.i;
    else if (v->kind == EVT_V_UINT)
        *out = (int64_t)v->v.u;
    else
        return false;
    return true;
}

static bool is_type(const char *s, size_t len, const char *want)
{
    return s && len == strlen(want) && memcmp(s, want, len) == 0;
}

static tb_code start_release(snap_inc *si, const evt_event *ev, tb_error *err)
{
    tb_code rc = tb_position_copy(&si->hw, evt_event_position(ev));
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    si->hw_ts_ms = evt_event_commit_ts_ms(ev);
    /* the last row released carries snapshot=last: the last whose key the stream did not touch */
    si->last_live = si->seen.n == 0 && si->cur.nrows > 0 ? si->cur.nrows - 1 : SIZE_MAX;
    for (size_t i = si->cur.nrows; si->seen.n > 0 && i-- > 0;) {
        evt_event *e = NULL;
        bool live = false;
        if ((rc = row_live(si, i, &e, &live, err)) != TB_OK)
            return rc;
        if (live) {
            si->last_live = i;
            break;
        }
    }
    si->rel = 0;
    si->ph = PH_RELEASE;
    return TB_OK;
}

/* All rows of the chunk are out: advance the persistent state. */
static tb_code finish_chunk(snap_inc *si, tb_error *err)
{
    tb_code rc = TB_OK;
    if (si->cur.nrows > 0) {
        evt_event *e = NULL;
        rc = row_at(si, si->cur.nrows - 1, &e, err);
        if (rc == TB_OK)
            rc = snap_key_from_event(&si->key, e, err);
        if (rc != TB_OK)
            return rc;
        si->has_key = true;
    }
    si->chunks++;
    if (si->cur.last) {
        evt_table_unref(si->finished);
        si->finished = evt_table_ref(si->t);
        si->finished_fresh = snap_inc_fresh_has(si, si->queue[0]);
        TB_INFO(FAC, "incremental snapshot of %s done: %llu chunk(s), %llu row(s), %llu replaced by the stream",
                si->queue[0], (unsigned long long)si->chunks, (unsigned long long)si->rows,
                (unsigned long long)si->dropped);
        bool was_initial = si->initial;
        snap_inc_queue_pop(si);
        snap_key_free(&si->key);
        si->has_key = false;
        si->chunks = si->rows = si->dropped = 0;
        if (was_initial && !si->initial)
            TB_INFO(FAC, "initial snapshot (chunked) done: every table read");
    }
    chunk_clear(si);
    rc = snap_inc_push_save(si, &si->hw, err);
    if (rc == TB_OK)
        ahead_install(si);
    return rc;
}

tb_code snap_inc_observe(snap_inc *si, const evt_event *ev, tb_error *err)
{
    const evt_table *t = evt_event_table(ev);
    if (!t)
        return TB_OK;
    if (snap_inc_is_signal_table(ev)) {
        if (evt_event_op(ev) != EVT_OP_CREATE)
            return TB_OK;
        size_t tl = 0, dl = 0;
        int64_t id = 0;
        const char *type = str_col(ev, "type", &tl);
        const char *data = str_col(ev, "data", &dl);
        if (!type || !data || !int_col(ev, "id", &id))
            return TB_OK;
        /* every connector on the server sees every signal: only those naming this one count */
        size_t cl = 0;
        const char *conn = str_col(ev, "connector", &cl);
        const char *self = cfg_get_str(si->c, CFGK_NAME);
        if (!conn || cl != strlen(self) || memcmp(conn, self, cl) != 0) {
            TB_DEBUG(FAC, "signal %lld (%.*s %.*s) is for connector '%.*s', not '%s': left alone", (long long)id,
                     (int)tl, type, (int)dl, data, conn ? (int)cl : 4, conn ? conn : "none", self);
            return TB_OK;
        }
        bool fresh = false;
        const char *db = evt_table_db(t);
        if (is_type(type, tl, "execute-snapshot") && snap_inc_sig_seen(si, db, strlen(db), id, &fresh) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (fresh) {
            char *name = strndup(data, dl);
            if (!name || snap_inc_queue_push(si, name) != TB_OK) {
                free(name);
                return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            }
            snap_inc_fresh_drop(si, name); /* asked for again: its topic may hold what a reconcile deletes */
            TB_INFO(FAC, "signal %lld: incremental snapshot of %s queued", (long long)id, name);
            free(name);
            return snap_inc_push_save(si, evt_event_position(ev), err);
        }
        if (si->ph == PH_WAIT_LOW && id == si->cur.id_lo && is_type(type, tl, "snapshot-window-open")) {
            si->ph = PH_WINDOW;
        } else if (si->ph == PH_WINDOW && id == si->cur.id_hi && is_type(type, tl, "snapshot-window-close")) {
            return start_release(si, ev, err);
        }
        return TB_OK;
    }
    if (si->ph != PH_WINDOW || !si->t || strcmp(evt_table_db(t), evt_table_db(si->t)) != 0 ||
        strcmp(evt_table_name(t), evt_table_name(si->t)) != 0)
        return TB_OK;
    for (int img = EVT_BEFORE; img <= EVT_AFTER; img++) {
        if (!evt_event_has_image(ev, (evt_image)img))
            continue;
        tb_buf_reset(&si->kbuf);
        tb_code rc = evt_json_key(ev, (evt_image)img, &si->kbuf, err);
        if (rc == TB_OK)
            rc = seen_add(si, si->kbuf.data ? si->kbuf.data : "", si->kbuf.len, err);
        if (rc != TB_OK)
            return rc;
    }
    return TB_OK;
}

tb_code snap_inc_next_event(snap_inc *si, evt_event **ev, tb_error *err)
{
    *ev = NULL;
    if (si->ph != PH_RELEASE)
        return TB_OK;
    while (si->rel < si->cur.nrows) {
        size_t i = si->rel++;
        evt_event *e = NULL;
        bool live = false;
        tb_code rc = row_live(si, i, &e, &live, err);
        if (rc != TB_OK)
            return rc;
        if (!live) {
            si->dropped++;
            continue;
        }
        bool last = si->cur.last && i == si->last_live;
        evt_event_set_position(e, &si->hw);
        evt_event_set_commit_ts_ms(e, si->hw_ts_ms);
        evt_event_set_snapshot(e, last ? EVT_SNAPSHOT_LAST : EVT_SNAPSHOT_TRUE);
        evt_event_set_connector(e, si->mariadb ? EVT_CONN_MARIADB : EVT_CONN_MYSQL);
        evt_event_set_last_in_tx(e, false); /* the high watermark's event ends the transaction */
        si->rows++;
        *ev = e;
        return TB_OK;
    }
    return finish_chunk(si, err);
}
