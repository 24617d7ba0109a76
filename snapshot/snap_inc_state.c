/*
 * snap_inc_state: the signalling table and the state file of incremental
 * snapshots (see snap_incremental.h for both).
 *
 * STATE FILE (JSON, replaced atomically: temp file, fsync, rename)
 *   {"last_signal_id":N,"last_signal_ids":{"db":N,...},"queue":["db.t",...],"chunks":N,"rows":N,
 *    "key":KEY|null,"initial":B,"fresh":["db.t",...],"pending":[{"pos":POS,"state":{...}},...]}
 *   last_signal_ids holds, per database, the id of the last execute-snapshot signal read from
 *   its signalling table (each database's table numbers its rows itself); last_signal_id, their
 *   largest, is written for older versions and not read: a file without last_signal_ids (older
 *   versions kept one id for every database, which dropped the signals of a second database)
 *   starts with none, and the binlog read from the resumed position holds only signals after it.
 *   queue[0] is the table in progress; key is the last primary key of its
 *   last finished chunk (snap_inc_key.h), null before the first chunk;
 *   initial is true while the queue holds an initial snapshot's tables
 *   (snap_inc_begin_initial; absent in files of older versions: false);
 *   fresh names the queued tables of the initial snapshot whose topics held
 *   no record at its start and have had no reason to reconcile since
 *   (snap_incremental.h; absent: none). The members before "pending" are
 *   the state as of the committed position; pending (absent: none) holds
 *   the states saved for positions not yet committed when the file was
 *   written, in position order, POS in tb_position's text form, each state
 *   of the same form without "pending": a run resuming from a stored
 *   position takes the latest one at or before it (snap_inc_before_commit).
 */
#include "tb_cast.h"
#include "snap_inc_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"
#include "snap_schema.h"
#include "myconn.h"
#include "snap_sql.h"
#include "tb_file.h"
#include "tb_log.h"

#define FAC SNAP_INC_FAC

/* ============================================================ helpers */

bool snap_inc_split_table(const char *db_table, char **db, char **table)
{
    const char *dot = strchr(db_table, '.');
    if (!dot || dot == db_table || !dot[1])
        return false;
    *db = strndup(db_table, (size_t)(dot - db_table));
    *table = strdup(dot + 1);
    return *db && *table;
}

static tb_code has_row(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)col, (void)len, (void)ncols, (void)err;
    *(bool *)opaque = true;
    return TB_OK;
}

tb_code snap_inc_ensure_signal_table(MYSQL *my, const char *db, tb_error *err)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    tb_code rc = tb_buf_puts(&sql, "CREATE TABLE IF NOT EXISTS ");
    if (rc == TB_OK)
        rc = snap_sql_ident(&sql, db);
    if (rc == TB_OK)
        rc = tb_buf_puts(&sql, "." SNAP_SIGNAL_TABLE " (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                               "type VARCHAR(32) NOT NULL, data VARCHAR(1024) NOT NULL, "
                               "ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
                               "connector VARCHAR(255) NOT NULL DEFAULT '') ENGINE=InnoDB");
    if (rc == TB_OK)
        rc = snap_sql_exec(my, tb_buf_cstr(&sql), err);
    else
        tb_error_set(err, rc, false, "out of memory");
    /* a table from before signals named their connector: add the column */
    bool has = false;
    const char *params[] = {db};
    if (rc == TB_OK)
        rc = myconn_query(my,
                          "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = '"
                          SNAP_SIGNAL_TABLE "' AND COLUMN_NAME = 'connector'",
                          params, 1, has_row, &has, err);
    if (rc == TB_OK && !has) {
        tb_buf_reset(&sql);
        rc = tb_buf_puts(&sql, "ALTER TABLE ");
        if (rc == TB_OK)
            rc = snap_sql_ident(&sql, db);
        if (rc == TB_OK)
            rc = tb_buf_puts(&sql, "." SNAP_SIGNAL_TABLE " ADD COLUMN connector VARCHAR(255) NOT NULL DEFAULT ''");
        if (rc == TB_OK)
            rc = snap_sql_exec(my, tb_buf_cstr(&sql), err);
        else
            tb_error_set(err, rc, false, "out of memory");
    }
    tb_buf_free(&sql);
    return rc;
}

/* INSERT a signal row; *id = its AUTO_INCREMENT id. */
tb_code snap_inc_insert_signal(MYSQL *my, const char *db, const char *connector, const char *type, const char *data,
                               int64_t *id, tb_error *err)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    tb_code rc = tb_buf_puts(&sql, "INSERT INTO ");
    if (rc == TB_OK)
        rc = snap_sql_ident(&sql, db);
    if (rc == TB_OK)
        rc = tb_buf_puts(&sql, "." SNAP_SIGNAL_TABLE " (type, data, connector) VALUES (?, ?, ?)");
    MYSQL_STMT *st = mysql_stmt_init(my);
    if (rc != TB_OK || !st) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    MYSQL_BIND b[3];
    unsigned long len[3] = {(unsigned long)strlen(type), (unsigned long)strlen(data), (unsigned long)strlen(connector)};
    memset(b, 0, sizeof(b));
    b[0].buffer_type = MYSQL_TYPE_STRING;
    b[0].buffer = TB_UNCONST(type); /* input parameters: read only */
    b[0].buffer_length = len[0];
    b[0].length = &len[0];
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = TB_UNCONST(data);
    b[1].buffer_length = len[1];
    b[1].length = &len[1];
    b[2].buffer_type = MYSQL_TYPE_STRING;
    b[2].buffer = TB_UNCONST(connector);
    b[2].buffer_length = len[2];
    b[2].length = &len[2];
    if (mysql_stmt_prepare(st, tb_buf_cstr(&sql), sql.len) != 0 || mysql_stmt_bind_param(st, b) != 0 ||
        mysql_stmt_execute(st) != 0) {
        rc = myconn_stmt_fail(st, err, "writing a signal row");
        tb_error_prefix(err, rc, "%s." SNAP_SIGNAL_TABLE ": ", db);
        goto out;
    }
    *id = (int64_t)mysql_stmt_insert_id(st);
out:
    if (st)
        mysql_stmt_close(st);
    tb_buf_free(&sql);
    return rc;
}

tb_code snap_inc_signal(const cfg *c, const char *db_table, tb_error *err)
{
    int64_t id;
    return snap_inc_signal_id(c, db_table, &id, err);
}

tb_code snap_inc_signal_id(const cfg *c, const char *db_table, int64_t *id_out, tb_error *err)
{
    char *db = NULL, *table = NULL;
    MYSQL *my = NULL;
    bool mariadb = false;
    evt_table *t = NULL;
    tb_code rc = TB_OK;
    if (!snap_inc_split_table(db_table, &db, &table)) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "--table '%s': expected db.table", db_table);
        goto out;
    }
    rc = snap_sql_connect(c, &my, &mariadb, err);
    if (rc == TB_OK)
        rc = snap_schema_describe(my, c, db, table, &t, err); /* exists and has a key */
    if (rc == TB_OK)
        rc = snap_inc_ensure_signal_table(my, db, err);
    int64_t id = 0;
    if (rc == TB_OK)
        rc = snap_inc_insert_signal(my, db, cfg_get_str(c, CFGK_NAME), "execute-snapshot", db_table, &id, err);
    if (rc == TB_OK)
        TB_INFO(FAC, "signal %lld: execute-snapshot %s for connector '%s'", (long long)id, db_table,
                cfg_get_str(c, CFGK_NAME));
    *id_out = id;
out:
    evt_table_unref(t);
    if (my)
        mysql_close(my);
    free(db);
    free(table);
    return rc;
}

bool snap_inc_is_signal_table(const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    const char *name = t ? evt_table_name(t) : NULL;
    /* asked for every event: the first letter settles it for almost every table */
    return name && name[0] == SNAP_SIGNAL_TABLE[0] && strcmp(name, SNAP_SIGNAL_TABLE) == 0;
}

/* a <= b for positions of one server (binlog file names sort by number). */
static bool pos_le(const tb_position *a, const tb_position *b)
{
    if (!a->file || !b->file)
        return true;
    int c = strcmp(a->file, b->file);
    if (c != 0)
        return c < 0;
    return a->pos <= b->pos;
}

/* ============================================================ state */

/* The connector whose state it is: a state file names it, and a connector
 * refuses a file naming another. */
static const char *state_owner(const snap_inc *si)
{
    const char *me = si->c ? cfg_get_str(si->c, CFGK_NAME) : NULL;
    return me && *me ? me : "tributary";
}

static tb_code state_json(const snap_inc *si, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    const char *me = state_owner(si);
    evt_jw_key(&w, "connector", (size_t)-1);
    evt_jw_str(&w, me, strlen(me));
    int64_t last = 0;
    for (size_t i = 0; i < si->nsigs; i++)
        last = si->sigs[i].id > last ? si->sigs[i].id : last;
    evt_jw_key(&w, "last_signal_id", (size_t)-1);
    evt_jw_int(&w, last);
    evt_jw_key(&w, "last_signal_ids", (size_t)-1);
    evt_jw_obj_begin(&w);
    for (size_t i = 0; i < si->nsigs; i++) {
        evt_jw_key(&w, si->sigs[i].db, strlen(si->sigs[i].db));
        evt_jw_int(&w, si->sigs[i].id);
    }
    evt_jw_obj_end(&w);
    evt_jw_key(&w, "queue", (size_t)-1);
    evt_jw_arr_begin(&w);
    for (size_t i = 0; i < si->nqueue; i++)
        evt_jw_str(&w, si->queue[i], strlen(si->queue[i]));
    evt_jw_arr_end(&w);
    evt_jw_key(&w, "chunks", (size_t)-1);
    evt_jw_uint(&w, si->chunks);
    evt_jw_key(&w, "rows", (size_t)-1);
    evt_jw_uint(&w, si->rows);
    evt_jw_key(&w, "key", (size_t)-1);
    if (si->has_key)
        snap_key_to_json(&si->key, &w);
    else
        evt_jw_null(&w);
    evt_jw_key(&w, "initial", (size_t)-1);
    evt_jw_bool(&w, si->initial);
    evt_jw_key(&w, "fresh", (size_t)-1);
    evt_jw_arr_begin(&w);
    for (size_t i = 0; i < si->nfresh; i++)
        evt_jw_str(&w, si->fresh[i], strlen(si->fresh[i]));
    evt_jw_arr_end(&w);
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}

/* db_table is queued and its snapshot has not begun: it reads the table as it is when it begins.
 * (Begun: some of its chunks are read already.) */
static bool queued_unbegun(const snap_inc *si, const char *db_table)
{
    bool begun = si->has_key || si->ph != PH_IDLE || si->chunks > 0;
    for (size_t i = 0; i < si->nqueue; i++)
        if (strcmp(si->queue[i], db_table) == 0 && (i > 0 || !begun))
            return true;
    return false;
}

bool snap_inc_will_read(const snap_inc *si, const char *db_table, int64_t signal_id)
{
    char *db = NULL, *table = NULL;
    bool unread = signal_id > 0 && snap_inc_split_table(db_table, &db, &table) &&
                  signal_id > snap_inc_sig_last(si, db, strlen(db));
    free(db);
    free(table);
    return unread || queued_unbegun(si, db_table);
}

tb_code snap_inc_queue_push(snap_inc *si, const char *db_table)
{
    /* queued and not begun: that snapshot reads the table as it is then.
     * Begun: queued again, so every row is sent once more as the table is
     * after this signal's statement. */
    if (queued_unbegun(si, db_table))
        return TB_OK;
    char **q = realloc(si->queue, (si->nqueue + 1) * sizeof(*q));
    if (!q)
        return TB_ERR_NOMEM;
    si->queue = q;
    si->queue[si->nqueue] = strdup(db_table);
    if (!si->queue[si->nqueue])
        return TB_ERR_NOMEM;
    si->nqueue++;
    si->queued_unsaved = true;
    return TB_OK;
}

static struct snap_inc_sig *sig_find(const snap_inc *si, const char *db, size_t dblen)
{
    for (size_t i = 0; i < si->nsigs; i++)
        if (strlen(si->sigs[i].db) == dblen && memcmp(si->sigs[i].db, db, dblen) == 0)
            return &si->sigs[i];
    return NULL;
}

int64_t snap_inc_sig_last(const snap_inc *si, const char *db, size_t dblen)
{
    const struct snap_inc_sig *s = sig_find(si, db, dblen);
    return s ? s->id : 0;
}

tb_code snap_inc_sig_seen(snap_inc *si, const char *db, size_t dblen, int64_t id, bool *fresh)
{
    struct snap_inc_sig *s = sig_find(si, db, dblen);
    if (s) {
        *fresh = id > s->id;
        if (*fresh)
            s->id = id;
        return TB_OK;
    }
    *fresh = false;
    struct snap_inc_sig *n = realloc(si->sigs, (si->nsigs + 1) * sizeof(*n));
    if (!n)
        return TB_ERR_NOMEM;
    si->sigs = n;
    if (!(n[si->nsigs].db = strndup(db, dblen)))
        return TB_ERR_NOMEM;
    n[si->nsigs++].id = id;
    *fresh = id > 0;
    return TB_OK;
}

bool snap_inc_fresh_has(const snap_inc *si, const char *db_table)
{
    for (size_t i = 0; i < si->nfresh; i++)
        if (strcmp(si->fresh[i], db_table) == 0)
            return true;
    return false;
}

void snap_inc_fresh_drop(snap_inc *si, const char *db_table)
{
    for (size_t i = 0; i < si->nfresh; i++)
        if (strcmp(si->fresh[i], db_table) == 0) {
            free(si->fresh[i]);
            si->fresh[i] = si->fresh[--si->nfresh];
            return;
        }
}

static tb_code fresh_add(snap_inc *si, const char *db_table, size_t len)
{
    char **f = realloc(si->fresh, (si->nfresh + 1) * sizeof(*f));
    if (!f)
        return TB_ERR_NOMEM;
    si->fresh = f;
    if (!(si->fresh[si->nfresh] = strndup(db_table, len)))
        return TB_ERR_NOMEM;
    si->nfresh++;
    return TB_OK;
}

void snap_inc_queue_pop(snap_inc *si)
{
    if (si->nqueue == 0)
        return;
    snap_inc_fresh_drop(si, si->queue[0]);
    free(si->queue[0]);
    memmove(si->queue, si->queue + 1, (si->nqueue - 1) * sizeof(*si->queue));
    si->nqueue--;
    if (si->nqueue == 0)
        si->initial = false; /* its last table is done (or dropped) */
}

/* Write the state file: base (a state_json text: the state as of the committed position) and,
 * as "pending", the saves from `from` on with their positions (STATE FILE above). The caller
 * makes base si->disk_base and drops the saves before `from` once it is written. */
static tb_code state_write(snap_inc *si, const char *base, size_t from, tb_error *err)
{
    size_t blen = strlen(base);
    tb_buf b, pos;
    tb_buf_init(&b, 0);
    tb_buf_init(&pos, 0);
    tb_code rc = TB_OK;
    if (from >= si->nsaves || blen < 2 || base[blen - 1] != '}') {
        rc = tb_buf_append(&b, base, blen);
    } else {
        evt_jw w;
        rc = tb_buf_append(&b, base, blen - 1);
        if (rc == TB_OK)
            rc = tb_buf_puts(&b, ",\"pending\":[");
        for (size_t i = from; i < si->nsaves && rc == TB_OK; i++) {
            tb_buf_reset(&pos);
            if ((rc = tb_position_format(&si->saves[i].pos, &pos)) != TB_OK)
                break;
            rc = tb_buf_puts(&b, i > from ? ",{\"pos\":" : "{\"pos\":");
            if (rc == TB_OK) {
                evt_jw_init(&w, &b);
                evt_jw_str(&w, tb_buf_cstr(&pos), pos.len);
                rc = evt_jw_finish(&w);
            }
            if (rc == TB_OK)
                rc = tb_buf_printf(&b, ",\"state\":%s}", si->saves[i].json);
        }
        if (rc == TB_OK)
            rc = tb_buf_puts(&b, "]}");
    }
#ifdef TB_TEST_HOOKS
    if (rc == TB_OK && si->queued_unsaved && si->nsaves > from)
        rc = tb_position_copy(&si->test_pending, &si->saves[si->nsaves - 1].pos);
#endif
    if (rc == TB_OK)
        rc = tb_file_write_atomic(si->state_path, tb_buf_cstr(&b), b.len, err);
    else
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (rc == TB_OK)
        si->queued_unsaved = false;
    tb_buf_free(&b);
    tb_buf_free(&pos);
    return rc;
}

/* A state file parsed into *root (TB_ERR_NOT_FOUND: there is none). */
static tb_code state_parse(const char *path, tb_buf *b, evt_jv **root, tb_error *err)
{
    tb_buf_reset(b);
    tb_code rc = tb_file_read(path, 1 << 24, b, err);
    if (rc == TB_OK && (rc = evt_jv_parse(tb_buf_cstr(b), b->len, root, err)) != TB_OK)
        tb_error_prefix(err, rc, "%s: ", path);
    return rc;
}

/* The "connector" member of a state file; NULL in files of earlier versions. */
static const char *state_connector(const evt_jv *root, size_t *len)
{
    const evt_jv *v = evt_jv_get(root, "connector");
    return v && evt_jv_type_of(v) == EVT_JV_STRING ? evt_jv_text(v, len) : NULL;
}

/* offsets.storage=kafka, no state at si->state_path: earlier versions kept
 * the state at <offsets.file>.incsnap, one file for every connector of the
 * folder. One naming this connector is moved to si->state_path (*moved); one
 * naming another is left to it; one without a name that still holds tables
 * to read cannot be told apart, and is refused with the way out, so that no
 * connector streams on past a snapshot it had not finished. */
static tb_code state_adopt_legacy(snap_inc *si, bool *moved, tb_error *err)
{
    *moved = false;
    tb_buf b;
    tb_buf_init(&b, 0);
    evt_jv *root = NULL;
    tb_code rc = state_parse(si->legacy_path, &b, &root, err);
    if (rc == TB_ERR_NOT_FOUND) {
        tb_error_clear(err);
        rc = TB_OK;
        goto out;
    }
    if (rc != TB_OK)
        goto out;
    size_t len = 0;
    const char *owner = state_connector(root, &len), *me = state_owner(si);
    const evt_jv *q = evt_jv_get(root, "queue");
    bool pending = q && evt_jv_type_of(q) == EVT_JV_ARRAY && evt_jv_size(q) > 0;
    if (owner && (len != strlen(me) || memcmp(owner, me, len) != 0))
        goto out; /* another connector's */
    if (!owner && !pending)
        goto out; /* nothing left in it to finish */
    if (!owner) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "%s: an incremental-snapshot state with tables still to read and no connector name, "
                          "from an earlier version that kept one state for every connector using this "
                          "offsets.file; with offsets.storage=kafka the state of connector '%s' is now %s. If "
                          "the snapshot in it is this connector's, rename the file to %s; if it is another "
                          "connector's, rename it to <that connector's name>.incsnap in the same folder; then "
                          "start again",
                          si->legacy_path, me, si->state_path, si->state_path);
        goto out;
    }
    if (rename(si->legacy_path, si->state_path) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "cannot rename %s to %s: %s", si->legacy_path, si->state_path,
                          strerror(errno));
        goto out;
    }
    TB_INFO(FAC, "%s: moved to %s (the incremental-snapshot state is named after the connector)", si->legacy_path,
            si->state_path);
    *moved = true;
out:
    evt_jv_free(root);
    tb_buf_free(&b);
    return rc;
}

/* The state of root in force when a run resumes from `resume`: the latest of
 * root's "pending" states whose position is at or before it, else root itself
 * (no resume position, or one without a binlog file to order it by). */
static const evt_jv *state_as_of(const evt_jv *root, const tb_position *resume, tb_error *err, tb_code *rc)
{
    const evt_jv *best = root, *pend = evt_jv_get(root, "pending");
    *rc = TB_OK;
    if (!pend || evt_jv_type_of(pend) != EVT_JV_ARRAY || !resume || resume->kind != TB_POS_MYSQL || !resume->file)
        return root;
    for (size_t i = 0; i < evt_jv_size(pend); i++) {
        const evt_jv *e = evt_jv_at(pend, i), *st = evt_jv_get(e, "state");
        size_t len = 0;
        const char *text = evt_jv_text(evt_jv_get(e, "pos"), &len);
        char *t = text ? strndup(text, len) : NULL;
        tb_position p;
        tb_position_init(&p);
        tb_code prc = t ? tb_position_parse(t, &p, err) : TB_ERR_CORRUPT;
        free(t);
        if (prc != TB_OK || !st || evt_jv_type_of(st) != EVT_JV_OBJECT) {
            tb_position_free(&p);
            *rc = tb_error_set(err, TB_ERR_CORRUPT, false,
                               "pending state %zu: no position or state (without the \"pending\" member the "
                               "committed state is resumed, and a snapshot queued since may have to be signalled "
                               "again)", i);
            return NULL;
        }
        if (p.file && pos_le(&p, resume))
            best = st; /* saved in position order */
        tb_position_free(&p);
    }
    return best;
}

tb_code snap_inc_load_state(snap_inc *si, const tb_position *resume, tb_error *err)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    evt_jv *root = NULL;
    tb_code rc = state_parse(si->state_path, &b, &root, err);
    if (rc == TB_ERR_NOT_FOUND && si->legacy_path) {
        tb_error_clear(err);
        bool moved = false;
        rc = state_adopt_legacy(si, &moved, err);
        if (rc == TB_OK)
            rc = moved ? state_parse(si->state_path, &b, &root, err) : TB_ERR_NOT_FOUND;
    }
    if (rc != TB_OK) {
        if (rc == TB_ERR_NOT_FOUND) {
            rc = TB_OK; /* no state yet */
            tb_error_clear(err);
        }
        goto out;
    }
    size_t olen = 0;
    const char *owner = state_connector(root, &olen), *me = state_owner(si);
    if (owner && (olen != strlen(me) || memcmp(owner, me, olen) != 0)) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "%s: the incremental-snapshot state of connector '%.*s', not of '%s': give each "
                          "connector its own offsets.file",
                          si->state_path, (int)olen, owner, me);
        goto out;
    }
    const evt_jv *st = state_as_of(root, resume, err, &rc);
    if (rc != TB_OK) {
        tb_error_prefix(err, rc, "%s: ", si->state_path);
        goto out;
    }
    if (st != root)
        TB_INFO(FAC, "%s: the state pending at the resumed position is in force (the run before stopped "
                     "between committing it and saving it)", si->state_path);
    const evt_jv *v;
    size_t len;
    const char *s;
    if ((v = evt_jv_get(st, "last_signal_ids")) && evt_jv_type_of(v) == EVT_JV_OBJECT) {
        for (size_t i = 0; i < evt_jv_size(v) && rc == TB_OK; i++) {
            size_t kl = 0;
            const char *k = evt_jv_key_at(v, i, &kl);
            bool fresh;
            if (k && (s = evt_jv_text(evt_jv_at(v, i), &len)) &&
                snap_inc_sig_seen(si, k, kl, strtoll(s, NULL, 10), &fresh) != TB_OK)
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        }
    }
    if ((v = evt_jv_get(st, "chunks")) && (s = evt_jv_text(v, &len)))
        si->chunks = strtoull(s, NULL, 10);
    if ((v = evt_jv_get(st, "rows")) && (s = evt_jv_text(v, &len)))
        si->rows = strtoull(s, NULL, 10);
    if ((v = evt_jv_get(st, "initial")) && evt_jv_type_of(v) == EVT_JV_BOOL && evt_jv_bool(v))
        si->initial = true;
    if ((v = evt_jv_get(st, "queue")) && evt_jv_type_of(v) == EVT_JV_ARRAY) {
        for (size_t i = 0; i < evt_jv_size(v) && rc == TB_OK; i++) {
            s = evt_jv_text(evt_jv_at(v, i), &len);
            if (s) {
                char *q = strndup(s, len);
                rc = q ? snap_inc_queue_push(si, q) : TB_ERR_NOMEM;
                free(q);
            }
        }
    }
    if (rc == TB_OK && (v = evt_jv_get(st, "fresh")) && evt_jv_type_of(v) == EVT_JV_ARRAY) {
        for (size_t i = 0; i < evt_jv_size(v) && rc == TB_OK; i++)
            if ((s = evt_jv_text(evt_jv_at(v, i), &len)))
                rc = fresh_add(si, s, len);
    }
    v = evt_jv_get(st, "key");
    if (rc == TB_OK && v && evt_jv_type_of(v) == EVT_JV_ARRAY) {
        rc = snap_key_from_json(&si->key, v, err);
        if (rc != TB_OK)
            tb_error_prefix(err, rc, "%s: ", si->state_path);
        si->has_key = rc == TB_OK;
    }
    if (si->nqueue == 0)
        si->initial = false;
    if (rc == TB_OK && si->nqueue > 0)
        TB_INFO(FAC, "resuming %s snapshot of %s after %llu chunk(s), %llu row(s)%s",
                si->initial ? "the initial (chunked)" : "incremental", si->queue[0], (unsigned long long)si->chunks,
                (unsigned long long)si->rows, si->nqueue > 1 ? "; more tables queued after it" : "");
out:
    evt_jv_free(root);
    si->queued_unsaved = false;
    if (rc == TB_OK) { /* what the file holds as of the position resumed from (none: the empty state) */
        tb_buf_reset(&b);
        rc = state_json(si, &b);
        free(si->disk_base);
        si->disk_base = rc == TB_OK ? tb_buf_detach(&b, NULL) : NULL;
        if (!si->disk_base)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    tb_buf_free(&b);
    if (rc != TB_OK && err && err->code == TB_OK)
        tb_error_set(err, rc, false, "%s: cannot load", si->state_path);
    return rc;
}

tb_code snap_inc_state_initial(snap_inc *si, char *const *tables, const bool *fresh, size_t n, tb_error *err)
{
    for (size_t i = 0; i < si->nsaves; i++) {
        tb_position_free(&si->saves[i].pos);
        free(si->saves[i].json);
    }
    si->nsaves = 0;
    while (si->nqueue > 0)
        snap_inc_queue_pop(si);
    snap_key_free(&si->key);
    si->has_key = false;
    si->chunks = si->rows = si->dropped = 0;
    while (si->nfresh > 0)
        snap_inc_fresh_drop(si, si->fresh[0]);
    for (size_t i = 0; i < n; i++)
        if (snap_inc_queue_push(si, tables[i]) != TB_OK ||
            (fresh && fresh[i] && !snap_inc_fresh_has(si, tables[i]) &&
             fresh_add(si, tables[i], strlen(tables[i])) != TB_OK))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    si->initial = n > 0;
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = state_json(si, &b);
    if (rc == TB_OK)
        rc = state_write(si, tb_buf_cstr(&b), 0, err); /* no saves: reset above */
    else
        tb_error_set(err, rc, false, "out of memory");
    if (rc == TB_OK) {
        free(si->disk_base);
        if (!(si->disk_base = tb_buf_detach(&b, NULL)))
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    tb_buf_free(&b);
    return rc;
}

bool snap_inc_initial(const snap_inc *si)
{
    return si->initial;
}

/* Remember the current state, to be saved once `pos` is committed. */
tb_code snap_inc_push_save(snap_inc *si, const tb_position *pos, tb_error *err)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = state_json(si, &b);
    snap_inc_save *v = rc == TB_OK ? realloc(si->saves, (si->nsaves + 1) * sizeof(*v)) : NULL;
    if (!v) {
        tb_buf_free(&b);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    si->saves = v;
    snap_inc_save *ps = &si->saves[si->nsaves];
    tb_position_init(&ps->pos);
    if (tb_position_copy(&ps->pos, pos) != TB_OK) {
        tb_buf_free(&b);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    ps->json = tb_buf_detach(&b, NULL);
    si->nsaves++;
    return TB_OK;
}

tb_code snap_inc_committed(snap_inc *si, const tb_position *p, tb_error *err)
{
    size_t k = 0;
    while (k < si->nsaves && pos_le(&si->saves[k].pos, p))
        k++;
    if (k == 0)
        return TB_OK;
#ifdef TB_TEST_HOOKS
    /* a kill -9 between a commit that passes a snapshot queued (and written as pending) and
     * this write (test_e2e_snapshot_chunked) */
    if (si->test_pending.kind != TB_POS_NONE && pos_le(&si->test_pending, p) &&
        getenv("TB_TEST_INCSNAP_KILL_BEFORE_SAVE"))
        raise(SIGKILL);
#endif
    /* written first: on a failure the saves stay, and the next commit writes them */
    tb_code rc = state_write(si, si->saves[k - 1].json, k, err);
    if (rc != TB_OK)
        return rc;
    free(si->disk_base);
    si->disk_base = si->saves[k - 1].json;
    si->saves[k - 1].json = NULL;
    for (size_t i = 0; i < k; i++) {
        tb_position_free(&si->saves[i].pos);
        free(si->saves[i].json);
    }
    memmove(si->saves, si->saves + k, (si->nsaves - k) * sizeof(*si->saves));
    si->nsaves -= k;
    return TB_OK;
}

tb_code snap_inc_before_commit(snap_inc *si, tb_error *err)
{
    if (!si->queued_unsaved || si->nsaves == 0 || !si->disk_base)
        return TB_OK;
    return state_write(si, si->disk_base, 0, err);
}

