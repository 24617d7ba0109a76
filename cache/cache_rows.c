/*
 * cache_rows: upserts, deletes, offsets and state in the cache file.
 *
 * An upsert names only the columns present in the row image (a partial image,
 * binlog_row_image=MINIMAL, must not overwrite the absent columns with NULL):
 *   INSERT INTO "db.t"("a","b","_partition") VALUES(?1,?2,?3)
 *   ON CONFLICT("a") DO UPDATE SET "b"=excluded."b","_partition"=excluded."_partition"
 * Statements are cached per table and presence mask (CACHE_STMT_SLOTS of them).
 *
 * One statement upserts CACHE_UPSERT_ROWS rows (VALUES(...),(...),...): SQLite
 * applies them in order, exactly as one statement per row would, for about a
 * third less CPU per row. Each row is bound when its message is applied (so a
 * value that cannot be bound is reported with that message), and the statement
 * runs when it is full, when a row for another table or mask comes, and before
 * anything else touches the file (cache_store_flush; commit, delete, schema
 * changes, offsets all flush first). A flush of fewer rows fills the remaining
 * ones with the last row again: upserting a row a second time with the same
 * values changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "evt.h"
#include "tb_log.h"

static tb_code step_fail(cache_store *s, const char *what, tb_error *err)
{
    return cache_sqlite_error(s, sqlite3_extended_errcode(s->db), what, NULL, err);
}

/* Room for one value per column (plus the NUL of the presence mask). */
static tb_code ensure_scratch(cache_store *s, size_t n, tb_error *err)
{
    if (n + 1 <= s->cap)
        return TB_OK;
    size_t cap = (n + 1) * 2;
    unsigned char *p = realloc(s->present, cap);
    if (p)
        s->present = p;
    cj_val *v = realloc(s->vals, cap * sizeof(*v));
    if (v)
        s->vals = v;
    cj_val *l = realloc(s->last, cap * sizeof(*l));
    if (l)
        s->last = l;
    if (!p || !v || !l)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    s->cap = cap;
    return TB_OK;
}

/* The slot of t's upsert statement for this presence mask, prepared when
 * missing (evicting the oldest of CACHE_STMT_SLOTS); -1 with err set. */
static int upsert_slot(cache_store *s, cache_table *t, const char *mask, tb_error *err)
{
    for (int i = 0; i < CACHE_STMT_SLOTS; i++)
        if (t->up[i].mask && strcmp(t->up[i].mask, mask) == 0)
            return i;
    tb_buf *q = &s->sql;
    tb_code rc;
    int nparam = 1; /* the columns present, and _partition */
    for (size_t i = 0; i < t->ncols; i++)
        nparam += mask[i] == '1';
    int limit = sqlite3_limit(s->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
    int rows = limit / nparam < CACHE_UPSERT_ROWS ? limit / nparam : CACHE_UPSERT_ROWS;
    if (rows < 1) {
        tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": %d columns are more than SQLite binds", t->name, nparam);
        return -1;
    }
    tb_buf_reset(q);
    rc = tb_buf_puts(q, "INSERT INTO ");
    rc = rc ? rc : cache_quote_ident(q, t->name);
    rc = rc ? rc : tb_buf_putc(q, '(');
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
        if (mask[i] == '1') {
            rc = cache_quote_ident(q, t->cols[i].name);
            rc = rc ? rc : tb_buf_putc(q, ',');
        }
    rc = rc ? rc : tb_buf_puts(q, "\"_partition\") VALUES");
    for (int r = 0; rc == TB_OK && r < rows; r++) { /* row r, parameter j: ?(r * nparam + j) */
        rc = tb_buf_puts(q, r ? ",(" : "(");
        for (int j = 1; rc == TB_OK && j <= nparam; j++)
            rc = tb_buf_printf(q, j > 1 ? ",?%d" : "?%d", r * nparam + j);
        rc = rc ? rc : tb_buf_putc(q, ')');
    }
    rc = rc ? rc : tb_buf_puts(q, " ON CONFLICT(");
    for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
        if (k)
            rc = tb_buf_putc(q, ',');
        rc = rc ? rc : cache_quote_ident(q, t->cols[t->pk[k]].name);
    }
    rc = rc ? rc : tb_buf_puts(q, ") DO UPDATE SET ");
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
        if (mask[i] == '1' && t->cols[i].pk == 0) {
            rc = cache_quote_ident(q, t->cols[i].name);
            rc = rc ? rc : tb_buf_puts(q, "=excluded.");
            rc = rc ? rc : cache_quote_ident(q, t->cols[i].name);
            rc = rc ? rc : tb_buf_putc(q, ',');
        }
    rc = rc ? rc : tb_buf_puts(q, "\"_partition\"=excluded.\"_partition\"");
    if (rc != TB_OK) {
        tb_error_set(err, rc, false, "out of memory");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, tb_buf_cstr(q), (int)q->len, &st, NULL) != SQLITE_OK) {
        tb_error_set(err, TB_ERR_IO, false, "table \"%s\": preparing an upsert: %s", t->name, sqlite3_errmsg(s->db));
        return -1;
    }
    char *m = strdup(mask);
    if (!m) {
        sqlite3_finalize(st);
        tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        return -1;
    }
    int slot = (int)(t->up_next++ % CACHE_STMT_SLOTS); /* the caller flushed: nothing of it is pending */
    sqlite3_finalize(t->up[slot].st);
    free(t->up[slot].mask);
    t->up[slot].st = st;
    t->up[slot].mask = m;
    t->up[slot].rows = rows;
    t->up[slot].nparam = nparam;
    return slot;
}

/* Bind row r of t's upsert statement in slot from vals/mask (column values) and partition. */
static tb_code bind_row(cache_store *s, cache_table *t, int slot, int r, const cj_val *vals, int32_t partition,
                        tb_error *err)
{
    sqlite3_stmt *st = t->up[slot].st;
    const char *mask = t->up[slot].mask;
    int idx = r * t->up[slot].nparam + 1;
    tb_code rc;
    for (size_t i = 0; i < t->ncols; i++)
        if (mask[i] == '1' &&
            (rc = cache_bind(st, idx++, t->cols[i].cls, &vals[i], &s->scratch, t->cols[i].name, err)) != TB_OK)
            return rc;
    sqlite3_bind_int(st, idx, partition);
    return TB_OK;
}

tb_code cache_store_flush(cache_store *s, tb_error *err)
{
    tb_code rc = TB_OK;
    cache_table *t = s->pend_t;
    if (!t || s->pend_n == 0)
        return TB_OK;
    int slot = (int)s->pend_slot;
    /* the rest of the rows: the last one again (it succeeded once, with the same values) */
    for (int r = s->pend_n; rc == TB_OK && r < t->up[slot].rows; r++)
        rc = bind_row(s, t, slot, r, s->last, s->pend_part, err);
    if (rc == TB_OK && sqlite3_step(t->up[slot].st) != SQLITE_DONE) {
        char what[512];
        snprintf(what, sizeof what,
                 "table \"%s\": upsert of a batch of %d rows (the latest message and the %d before it for this "
                 "table) failed",
                 t->name, s->pend_n, s->pend_n - 1);
        rc = cache_sqlite_error(s, sqlite3_extended_errcode(s->db), what, NULL, err);
    }
    sqlite3_reset(t->up[slot].st);
    s->pend_n = 0;
    s->pend_t = NULL;
    return rc;
}

void cache_store_discard(cache_store *s)
{
    if (s->pend_t && s->pend_n)
        sqlite3_reset(s->pend_t->up[s->pend_slot].st);
    s->pend_n = 0;
    s->pend_t = NULL;
}

long cache_rowid_col(const cache_table *t)
{
    return cache_col_find(t, EVT_KEY_ROWID, sizeof(EVT_KEY_ROWID) - 1, t->ncols ? t->ncols - 1 : 0);
}

tb_code cache_store_rowid_col(cache_store *s, cache_table *t, long *ci, tb_error *err)
{
    if ((*ci = cache_rowid_col(t)) >= 0)
        return TB_OK;
    tb_code rc = cache_store_add_column(s, t, EVT_KEY_ROWID, "sqlite_integer", CC_INT, NULL, err);
    if (rc != TB_OK)
        return rc;
    TB_INFO("cache", "table \"%s\": a key holding NULL came with its row's rowid (an SQLite rowid table): "
            "column \"" EVT_KEY_ROWID "\" holds it, NULL in the rows whose key holds no NULL", t->name);
    *ci = (long)t->ncols - 1;
    return TB_OK;
}

long cache_col_find(const cache_table *t, const char *k, size_t klen, size_t hint)
{
    if (hint < t->ncols && cj_key_eq(k, klen, t->cols[hint].name))
        return (long)hint;
    for (size_t i = 0; i < t->ncols; i++)
        if (cj_key_eq(k, klen, t->cols[i].name))
            return (long)i;
    return -1;
}

/* One member of the row (pass 0) or of the message key (pass 1) into s->vals/present;
 * an unknown row member becomes a new untyped column. hint: the column expected next. */
static tb_code take_member(cache_store *s, cache_table *t, int pass, const char *k, size_t klen, const cj_val *v,
                           size_t *hint, tb_error *err)
{
    tb_code rc;
    long ci = cache_col_find(t, k, klen, *hint);
    if (ci < 0 && pass == 1 && cj_key_eq(k, klen, EVT_KEY_ROWID)) { /* a key holding NULL: its row's rowid */
        if ((rc = cache_store_rowid_col(s, t, &ci, err)) != TB_OK || (rc = ensure_scratch(s, t->ncols, err)) != TB_OK)
            return rc;
        s->present[ci] = '0';
    }
    if (ci < 0 && pass == 1)
        return TB_OK; /* key member unknown: the row has it or the check after fails */
    if (ci < 0) {
        tb_buf_reset(&s->scratch);
        if ((rc = cj_str_decode(k, klen, &s->scratch)) != TB_OK)
            return tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": bad column name", t->name);
        char *name = strdup(tb_buf_cstr(&s->scratch));
        if (!name)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        TB_WARN("cache", "table \"%s\": column \"%s\" is not in its schema: adding it untyped", t->name, name);
        rc = cache_store_add_column(s, t, name, "", CC_ANY, NULL, err);
        free(name);
        if (rc != TB_OK || (rc = ensure_scratch(s, t->ncols, err)) != TB_OK)
            return rc;
        ci = (long)t->ncols - 1;
        s->present[ci] = '0';
    }
    if (pass == 1 && s->present[ci] == '1')
        return TB_OK;
    s->vals[ci] = *v;
    s->present[ci] = '1';
    *hint = (size_t)ci + 1;
    return TB_OK;
}

/* Upsert of a row whose key holds a NULL (a nullable key.columns column, or
 * an SQLite primary key, which allows NULL): ON CONFLICT never fires for it
 * (NULLs are distinct in a unique index), so update the row whose key IS
 * these values, and insert only when there is none. Rare: prepared per row. */
static tb_code null_key_upsert(cache_store *s, cache_table *t, const char *mask, const cj_val *vals,
                               int32_t partition, tb_error *err)
{
    tb_buf *q = &s->sql;
    tb_code rc = TB_OK;
    sqlite3_stmt *st = NULL;
    long rid = cache_rowid_col(t); /* the row's rowid, when the table keeps one: part of what finds it */
    for (int step = 0; step < 2 && rc == TB_OK; step++) { /* 0: UPDATE ... WHERE key IS; 1: INSERT */
        tb_buf_reset(q);
        rc = tb_buf_puts(q, step ? "INSERT INTO " : "UPDATE ");
        rc = rc ? rc : cache_quote_ident(q, t->name);
        rc = rc ? rc : tb_buf_puts(q, step ? "(" : " SET ");
        int n = 0; /* parameters: the present columns (step 0: not the key), _partition, then the key */
        for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
            if (mask[i] == '1' && (step || t->cols[i].pk == 0)) {
                rc = cache_quote_ident(q, t->cols[i].name);
                rc = rc ? rc : tb_buf_printf(q, step ? "," : "=?%d,", ++n);
            }
        rc = rc ? rc : tb_buf_printf(q, step ? "\"_partition\") VALUES(" : "\"_partition\"=?%d WHERE ", ++n);
        for (int j = 1; rc == TB_OK && step && j <= n; j++)
            rc = tb_buf_printf(q, j > 1 ? ",?%d" : "?%d", j);
        for (size_t k = 0; rc == TB_OK && !step && k < t->npk; k++) {
            rc = tb_buf_puts(q, k ? " AND " : "");
            rc = rc ? rc : cache_quote_ident(q, t->cols[t->pk[k]].name);
            rc = rc ? rc : tb_buf_printf(q, " IS ?%d", n + 1 + (int)k);
        }
        if (rc == TB_OK && !step && rid >= 0)
            rc = tb_buf_printf(q, " AND \"" EVT_KEY_ROWID "\" IS ?%d", n + 1 + (int)t->npk);
        rc = rc ? rc : tb_buf_puts(q, step ? ")" : "");
        if (rc != TB_OK)
            return tb_error_set(err, rc, false, "out of memory");
        if (sqlite3_prepare_v2(s->db, tb_buf_cstr(q), (int)q->len, &st, NULL) != SQLITE_OK)
            return tb_error_set(err, TB_ERR_IO, false, "table \"%s\": preparing a NULL-key upsert: %s", t->name,
                                sqlite3_errmsg(s->db));
        int idx = 1;
        for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
            if (mask[i] == '1' && (step || t->cols[i].pk == 0))
                rc = cache_bind(st, idx++, t->cols[i].cls, &vals[i], &s->scratch, t->cols[i].name, err);
        if (rc == TB_OK)
            sqlite3_bind_int(st, idx++, partition);
        for (size_t k = 0; rc == TB_OK && !step && k < t->npk; k++) {
            const cache_col *c = &t->cols[t->pk[k]];
            rc = cache_bind(st, idx++, c->cls, &vals[t->pk[k]], &s->scratch, c->name, err);
        }
        if (rc == TB_OK && !step && rid >= 0 && mask[rid] == '1') /* absent: NULL, as bound */
            rc = cache_bind(st, idx, CC_INT, &vals[rid], &s->scratch, EVT_KEY_ROWID, err);
        if (rc == TB_OK && sqlite3_step(st) != SQLITE_DONE) {
            char what[320];
            snprintf(what, sizeof what, "table \"%s\": upsert of a row with a NULL key value", t->name);
            rc = cache_sqlite_error(s, sqlite3_extended_errcode(s->db), what, NULL, err);
        }
        sqlite3_finalize(st);
        st = NULL;
        if (rc == TB_OK && step == 0 && sqlite3_changes(s->db) > 0)
            break; /* updated: no insert */
    }
    return rc;
}

tb_code cache_store_upsert(cache_store *s, cache_table *t, const cj_val *row, const cj_member *mem, size_t nmem,
                           const cj_val *key, int32_t partition, tb_error *err)
{
    tb_code rc;
    cj_iter it;
    const char *k;
    size_t klen;
    cj_val v;

    if ((rc = ensure_scratch(s, t->ncols, err)) != TB_OK)
        return rc;
    memset(s->present, '0', t->ncols);
    size_t hint = 0;
    for (size_t i = 0; mem && i < nmem; i++)
        if ((rc = take_member(s, t, 0, mem[i].key, mem[i].klen, &mem[i].val, &hint, err)) != TB_OK)
            return rc;
    for (int pass = mem ? 1 : 0; pass < 2; pass++) {
        const cj_val *obj = pass == 0 ? row : key;
        if (!obj)
            continue;
        cj_obj_begin(obj, &it);
        while (cj_obj_next(&it, &k, &klen, &v))
            if ((rc = take_member(s, t, pass, k, klen, &v, &hint, err)) != TB_OK)
                return rc;
    }
    s->present[t->ncols] = 0;
    for (size_t kk = 0; kk < t->npk; kk++)
        if (s->present[t->pk[kk]] != '1')
            return tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": row lacks key column \"%s\"", t->name,
                                t->cols[t->pk[kk]].name);
    const char *mask = (const char *)s->present;
    for (size_t kk = 0; kk < t->npk; kk++)
        if (s->vals[t->pk[kk]].type == CJ_NULL) {
            if ((rc = cache_store_flush(s, err)) != TB_OK)
                return rc;
            return null_key_upsert(s, t, mask, s->vals, partition, err);
        }
    if (s->pend_n && (s->pend_t != t || strcmp(t->up[s->pend_slot].mask, mask) != 0) &&
        (rc = cache_store_flush(s, err)) != TB_OK)
        return rc;
    int slot = upsert_slot(s, t, mask, err);
    if (slot < 0)
        return err ? err->code : TB_ERR_IO;
    if ((rc = bind_row(s, t, slot, s->pend_n, s->vals, partition, err)) != TB_OK)
        return rc; /* this row is not pending: its slots are bound again by the next row or the flush */
    memcpy(s->last, s->vals, t->ncols * sizeof(*s->vals));
    s->pend_t = t;
    s->pend_slot = (unsigned)slot;
    s->pend_part = partition;
    if (++s->pend_n == t->up[slot].rows)
        return cache_store_flush(s, err);
    return TB_OK;
}

tb_code cache_store_delete(cache_store *s, cache_table *t, const cj_val *key, tb_error *err)
{
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (!t->del) {
        tb_buf *q = &s->sql;
        tb_buf_reset(q);
        rc = tb_buf_puts(q, "DELETE FROM ");
        rc = rc ? rc : cache_quote_ident(q, t->name);
        rc = rc ? rc : tb_buf_puts(q, " WHERE ");
        for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
            if (k)
                rc = tb_buf_puts(q, " AND ");
            rc = rc ? rc : cache_quote_ident(q, t->cols[t->pk[k]].name);
            rc = rc ? rc : tb_buf_printf(q, " IS ?%zu", k + 1); /* IS: a NULL key value matches too */
        }
        if (rc == TB_OK && cache_rowid_col(t) >= 0)
            rc = tb_buf_printf(q, " AND \"" EVT_KEY_ROWID "\" IS ?%zu", t->npk + 1);
        if (rc != TB_OK)
            return tb_error_set(err, rc, false, "out of memory");
        if (sqlite3_prepare_v2(s->db, tb_buf_cstr(q), (int)q->len, &t->del, NULL) != SQLITE_OK)
            return tb_error_set(err, TB_ERR_IO, false, "table \"%s\": preparing a delete: %s", t->name,
                                sqlite3_errmsg(s->db));
    }
    for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
        const cache_col *c = &t->cols[t->pk[k]];
        cj_val v;
        if (!cj_obj_get(key, c->name, &v))
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": key lacks column \"%s\"", t->name, c->name);
        else
            rc = cache_bind(t->del, (int)k + 1, c->cls, &v, &s->scratch, c->name, err);
    }
    cj_val rv;
    if (rc == TB_OK && cache_rowid_col(t) >= 0 && cj_obj_get(key, EVT_KEY_ROWID, &rv)) /* absent: NULL */
        rc = cache_bind(t->del, (int)t->npk + 1, CC_INT, &rv, &s->scratch, EVT_KEY_ROWID, err);
    if (rc == TB_OK && sqlite3_step(t->del) != SQLITE_DONE) {
        char what[320];
        snprintf(what, sizeof what, "table \"%s\": delete failed", t->name);
        rc = cache_sqlite_error(s, sqlite3_extended_errcode(s->db), what, NULL, err);
    }
    sqlite3_reset(t->del);
    sqlite3_clear_bindings(t->del);
    return rc;
}

tb_code cache_store_truncate(cache_store *s, cache_table *t, tb_error *err)
{
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    tb_buf_reset(&s->sql);
    rc = tb_buf_puts(&s->sql, "DELETE FROM ");
    rc = rc ? rc : cache_quote_ident(&s->sql, t->name);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    if ((rc = cache_exec(s, tb_buf_cstr(&s->sql), err)) != TB_OK)
        return tb_error_prefix(err, rc, "table \"%s\": truncate: ", t->name);
    TB_INFO("cache", "table \"%s\": truncated (%d rows deleted)", t->name, sqlite3_changes(s->db));
    return TB_OK;
}

tb_code cache_store_delete_partition(cache_store *s, cache_table *t, int32_t partition, int *n, tb_error *err)
{
    tb_code rc = cache_store_flush(s, err);
    sqlite3_stmt *st = NULL;
    *n = 0;
    if (rc != TB_OK)
        return rc;
    tb_buf_reset(&s->sql);
    rc = tb_buf_puts(&s->sql, "DELETE FROM ");
    rc = rc ? rc : cache_quote_ident(&s->sql, t->name);
    rc = rc ? rc : tb_buf_puts(&s->sql, " WHERE \"_partition\"=?1");
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    if (sqlite3_prepare_v2(s->db, tb_buf_cstr(&s->sql), -1, &st, NULL) != SQLITE_OK)
        return step_fail(s, "deleting a partition's rows", err);
    sqlite3_bind_int(st, 1, partition);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = step_fail(s, "deleting a partition's rows", err);
    else
        *n = sqlite3_changes(s->db);
    sqlite3_finalize(st);
    return rc;
}

tb_code cache_store_drop_partition(cache_store *s, const char *topic, int32_t partition, tb_error *err)
{
    cache_table *t = cache_store_find_topic(s, topic);
    tb_code rc = cache_store_flush(s, err);
    if (rc == TB_OK && t) {
        int n = 0;
        rc = cache_store_delete_partition(s, t, partition, &n, err);
        if (rc == TB_OK)
            TB_INFO("cache", "table \"%s\": dropped %d rows of revoked partition %s [%d]", t->name, n, topic,
                    (int)partition);
    }
    if (rc == TB_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, "DELETE FROM _tributary_offsets WHERE topic=?1 AND partition=?2", -1, &st,
                               NULL) != SQLITE_OK)
            return step_fail(s, "forgetting a partition's offset", err);
        sqlite3_bind_text(st, 1, topic, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, partition);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = step_fail(s, "forgetting a partition's offset", err);
        sqlite3_finalize(st);
    }
    return rc;
}

tb_code cache_store_drop_partitions_unless(cache_store *s, bool (*keep)(const char *topic, int32_t partition, void *opaque),
                                           void *opaque, tb_error *err)
{
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT topic, partition FROM _tributary_offsets", -1, &st, NULL) != SQLITE_OK)
        return step_fail(s, "listing stored offsets", err);
    /* collected first: dropping deletes from the table being read */
    size_t n = 0, cap = 0;
    struct { char *topic; int32_t partition; } *drop = NULL;
    int sr;
    while (rc == TB_OK && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        int32_t p = (int32_t)sqlite3_column_int(st, 1);
        if (!t || keep(t, p, opaque))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            void *g = realloc(drop, cap * sizeof(*drop));
            if (!g) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                break;
            }
            drop = g;
        }
        if (!(drop[n].topic = strdup(t))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            break;
        }
        drop[n++].partition = p;
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < n; i++) {
        if (rc == TB_OK)
            rc = cache_store_drop_partition(s, drop[i].topic, drop[i].partition, err);
        free(drop[i].topic);
    }
    free(drop);
    return rc;
}

tb_code cache_store_put_offset(cache_store *s, const char *topic, int32_t partition, int64_t next, int64_t high,
                               tb_error *err)
{
    sqlite3_stmt *st = s->st_offset;
    tb_code frc = cache_store_flush(s, err);
    if (frc != TB_OK)
        return frc;
    sqlite3_bind_text(st, 1, topic, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, partition);
    sqlite3_bind_int64(st, 3, next);
    sqlite3_bind_int64(st, 4, high);
    tb_code rc = sqlite3_step(st) == SQLITE_DONE ? TB_OK : step_fail(s, "storing an offset", err);
    sqlite3_reset(st);
    return rc;
}

tb_code cache_store_del_offsets(cache_store *s, const char *topic, tb_error *err)
{
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM _tributary_offsets WHERE topic=?1", -1, &st, NULL) != SQLITE_OK)
        return step_fail(s, "forgetting offsets", err);
    sqlite3_bind_text(st, 1, topic, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = step_fail(s, "forgetting offsets", err);
    sqlite3_finalize(st);
    return rc;
}

int64_t cache_store_get_offset(cache_store *s, const char *topic, int32_t partition)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT next_offset FROM _tributary_offsets WHERE topic=?1 AND partition=?2", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, topic, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, partition);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

tb_code cache_store_put_state(cache_store *s, const char *key, int64_t v, tb_error *err)
{
    sqlite3_stmt *st = s->st_state;
    tb_code frc = cache_store_flush(s, err);
    if (frc != TB_OK)
        return frc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    tb_code rc = sqlite3_step(st) == SQLITE_DONE ? TB_OK : step_fail(s, "storing state", err);
    sqlite3_reset(st);
    return rc;
}

int64_t cache_store_get_state(cache_store *s, const char *key, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM _tributary_state WHERE key=?1", -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
