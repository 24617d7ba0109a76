/*
 * run_stmt: what `tributary run` does with a statement of the binlog (a
 * QUERY event that is not transaction control, classified by capture/mysql's
 * binlog_stmt_classify) that names a captured table (tables.include /
 * exclude). docs/statements.md lists every statement and the connector's
 * answer.
 *
 *  - DML logged as a statement (a session with binlog_format=STATEMENT, or
 *    MIXED choosing it): the binlog does not say which rows changed, so the
 *    change cannot be captured. The run stops with an error naming the
 *    table, the GTID and binlog position, and the statement's first 200
 *    bytes; the position stays before it, never past a change not sent.
 *  - TRUNCATE (ddl.truncate.policy=tombstone, sink=kafka): every key the
 *    table's topic holds (run_keys_delete: the topic read to its end after
 *    a flush) gets a delete event (its before image: the key columns) and a
 *    tombstone, at the statement's position, as one source transaction that
 *    ends at the position after the statement: that position is committed
 *    only once they are acknowledged, after them an "op":"t" record (key
 *    {}, then its tombstone; evt_render_truncate). A crash before that reads
 *    the TRUNCATE again and deletes the keys the topic still holds then.
 *    ddl.truncate.policy=fail stops naming the table and the position.
 *  - DROP TABLE with ddl.drop.policy=tombstone: the same as TRUNCATE, with
 *    the descriptor the decoder last built (for a table not seen since the
 *    run started, one made from its topic's key members: keys_only); warn:
 *    a WARN. Either way a schema
 *    record that says the table was dropped (evt_table_new_dropped).
 *  - ALTER TABLE that can give existing rows new values (fills_rows) or
 *    new keys (changes_key: ADD or DROP PRIMARY KEY, a table keyed by
 *    key.columns that gains a primary key): ddl.alter.policy=resnapshot
 *    signals an incremental snapshot of the table (snap_inc_signal), whose
 *    reconcile step (DESIGN 6a) deletes the keys of the old key columns;
 *    warn: WARN. Other ALTERs change no values and no keys.
 *  - RENAME TABLE / ALTER TABLE ... RENAME: the old name's topic loses
 *    its keys (as DROP with tombstone), the new name gets a schema record
 *    that says where it came from (renamed_from) and the old name one that
 *    says it is gone, and an incremental snapshot sends the rows under the
 *    new name (stmt_rename).
 *  - DROP, CREATE OR REPLACE, OPTIMIZE/REPAIR and DROP
 *    DATABASE: a WARN naming the table, the statement and what the topic
 *    does not reflect; never silent.
 * Statements on tables that are not captured are ignored.
 * A SQLite DROP TABLE reaches run_on_dropped as an event whose descriptor
 * says the table was dropped (sqlcap_opts.drop_events), after its deletes,
 * and only for a captured table: the same schema record, and the WARN under
 * ddl.drop.policy=warn.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_run.h"
#include "tb_cast.h"
#include "evt_json.h"
#include "snap_incremental.h"
#include "sqlcap.h"
#include "snap_schema.h"
#include "snap_sql.h"
#include "tb_buf.h"
#include "tb_log.h"

#define RUN_STMT_SHOW 200 /* bytes of a statement quoted in an error */

/* "GTID g, binlog file:pos" into out. */
static void stmt_where(const binlog_stmt *st, tb_buf *out)
{
    if (st->gtid)
        tb_buf_printf(out, "GTID %s, ", st->gtid);
    tb_buf_printf(out, "binlog %s:%llu", st->file && *st->file ? st->file : "?", (unsigned long long)st->pos);
}

/* The statement's first RUN_STMT_SHOW bytes (cut on a UTF-8 boundary), with
 * line breaks as spaces, into out. */
static void stmt_text(const binlog_stmt *st, tb_buf *out)
{
    size_t n = st->text_len;
    bool cut = n > RUN_STMT_SHOW;
    if (cut) {
        n = RUN_STMT_SHOW;
        while (n > 0 && ((unsigned char)st->text[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        char c = st->text[i];
        tb_buf_putc(out, c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    }
    if (cut)
        tb_buf_puts(out, "...");
}

static bool captured(run_ctx *r, const binlog_stmt_table *t)
{
    return cfg_filter_match(&r->filter, t->db, t->table);
}

static tb_code stmt_dml(const binlog_stmt *st, const binlog_stmt_table *t, tb_error *err)
{
    tb_buf where, text;
    tb_buf_init(&where, 0);
    tb_buf_init(&text, 0);
    stmt_where(st, &where);
    stmt_text(st, &text);
    tb_code rc = tb_error_set(
        err, TB_ERR_SOURCE, false,
        "%s.%s is captured, but this %s on it was logged as a statement, not as row changes (%s): the "
        "session that wrote it used binlog_format=STATEMENT (or MIXED chose it), or the table is "
        "system-versioned with transaction-precise history (a BIGINT UNSIGNED period), whose changes MariaDB "
        "always logs as statements; so the binlog does not say which rows changed and the change cannot be "
        "sent. Stopping here; nothing after it is committed. Statement: '%s'. Fix: make every writer log rows "
        "(binlog_format=ROW globally, and no session override; a transaction-precise table: exclude it with "
        "tables.exclude, or give it a TIMESTAMP(6) period), then set the position past this transaction "
        "(`tributary offsets set`) and snapshot the table again (`tributary snapshot --incremental --table "
        "%s.%s`)",
        t->db, t->table, st->verb, tb_buf_cstr(&where), tb_buf_cstr(&text), t->db, t->table);
    tb_buf_free(&where);
    tb_buf_free(&text);
    return rc;
}

/* What the topic keeps after a DROP TABLE under ddl.drop.policy=warn. */
#define DROP_EFFECT                                                                                     \
    "its topic is left as it is, with every row the table had (ddl.drop.policy=warn; `tombstone` deletes " \
    "them)"

/* What the topic misses after a statement of kind k, for the WARN. */
static const char *stmt_effect(const binlog_stmt *st)
{
    switch (st->kind) {
    case BINLOG_STMT_TRUNCATE:
        return "the rows it removed are still in the topic (sink=stdout: no topic to read the keys from)";
    case BINLOG_STMT_ALTER:
        if (st->changes_key)
            return "it changed the table's key: rows reach the topic under the new key only when each next "
                   "changes, and the records under the old key stay (ddl.alter.policy=warn; `resnapshot` "
                   "re-sends the rows under the new key and deletes the old keys)";
        return "values it gave existing rows (a new column's default, a changed type) reach the topic only "
               "when each row next changes (ddl.alter.policy=warn; `resnapshot` re-sends the rows)";
    case BINLOG_STMT_RENAME:
        return "later changes go to the new name's topic; the old topic keeps the rows";
    case BINLOG_STMT_DROP:
        return DROP_EFFECT;
    case BINLOG_STMT_CREATE:
        return "the table it replaced was dropped without row events; the topic keeps the old rows";
    case BINLOG_STMT_MAINT:
        return "rows it changed (a repair) have no row events";
    case BINLOG_STMT_DROP_DATABASE:
        return "the topics of its tables are left as they are";
    default:
        return "";
    }
}

static void stmt_warn(const binlog_stmt *st, const binlog_stmt_table *t)
{
    tb_buf where, text;
    tb_buf_init(&where, 0);
    tb_buf_init(&text, 0);
    stmt_where(st, &where);
    stmt_text(st, &text);
    if (t->table[0])
        TB_WARN("run", "%s.%s: %s at %s: %s. Statement: '%s'", t->db, t->table, st->verb, tb_buf_cstr(&where),
                stmt_effect(st), tb_buf_cstr(&text));
    else
        TB_WARN("run", "database %s: %s at %s: %s. Statement: '%s'", t->db, st->verb, tb_buf_cstr(&where),
                stmt_effect(st), tb_buf_cstr(&text));
    tb_buf_free(&where);
    tb_buf_free(&text);
}

/* ------------------------------------------------------------ TRUNCATE */

/* The catalog's descriptor of db.table, one attempt of run_retry (which
 * tries again while the source cannot be reached). */
typedef struct describe_arg {
    const char *db, *table;
    evt_table **out;
} describe_arg;

static tb_code describe_once(run_ctx *r, void *arg, tb_error *err)
{
    describe_arg *a = arg;
    MYSQL *my = NULL;
    bool mariadb = false;
    tb_code rc = snap_sql_connect(r->cfg, &my, &mariadb, err);
    if (rc == TB_OK)
        rc = snap_schema_describe(my, r->cfg, a->db, a->table, a->out, err);
    if (my)
        snap_sql_release(r->cfg, my);
    return rc;
}

static tb_code describe(run_ctx *r, const char *db, const char *table, evt_table **out, tb_error *err)
{
    char what[400];
    snprintf(what, sizeof what, "%s.%s: its description from the source's catalog", db, table);
    describe_arg a = {db, table, out};
    return run_retry(r, what, describe_once, &a, err);
}

/* The table's descriptor: the decoder's (what the sink announced), else
 * the catalog's; *out NULL for a table dropped or renamed by the statement.
 * A TRUNCATE read again after a restart (the decoder knows no table then) of
 * a table the catalog no longer has (dropped or renamed later in the binlog)
 * is described by its latest schema record (sink_schema_last), as the
 * decoder describes its rows; without one, *out is NULL and its topic's keys
 * are deleted all the same, keyed by the topic (run_keys_delete), without the
 * "op":"t" record. One reference for the caller. */
static tb_code trunc_table(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *bt, evt_table **out,
                           tb_error *err)
{
    evt_table *t = binlog_dec_table(binlog_reader_decoder(r->binlog), bt->db, bt->table);
    *out = t ? evt_table_ref(t) : NULL;
    if (t || st->kind == BINLOG_STMT_DROP || st->kind == BINLOG_STMT_DROP_DATABASE || st->kind == BINLOG_STMT_RENAME)
        return TB_OK; /* the old name is gone from the catalog */
    tb_code rc = describe(r, bt->db, bt->table, out, err);
    if (rc == TB_ERR_NOT_FOUND) {
        tb_error herr;
        tb_error_clear(&herr);
        if (sink_schema_last(r->sink, bt->db, bt->table, out, &herr) == TB_OK && *out) {
            TB_INFO("run", "%s.%s: %s: the table is gone from the source since (dropped or renamed later in the "
                           "binlog): described by its latest schema record",
                    bt->db, bt->table, st->verb);
        } else {
            TB_INFO("run", "%s.%s: %s: the table is gone from the source since (dropped or renamed later in the "
                           "binlog): the keys of its topic are deleted as its topic holds them (%s%s%s)",
                    bt->db, bt->table, st->verb, err->msg, herr.code ? "; " : "", herr.code ? herr.msg : "");
            *out = NULL;
        }
        tb_error_clear(err);
        return TB_OK;
    }
    return rc == TB_OK ? TB_OK : tb_error_prefix(err, rc, "%s.%s: TRUNCATE: its key columns: ", bt->db, bt->table);
}

/* ddl.truncate.policy=tombstone: delete every key the table's topic holds
 * (run_keys_delete). *sent: events sent. */
static tb_code stmt_truncate(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *bt, uint64_t *sent,
                             tb_error *err)
{
    evt_table *t = NULL;
    evt_event *e = NULL;
    uint64_t n = 0;
    tb_position pos;
    tb_position_init(&pos);
    pos.kind = TB_POS_MYSQL;
    pos.mariadb = st->after ? st->after->mariadb : false;
    pos.server_id = st->after ? st->after->server_id : 0;
    pos.pos = st->pos;
    tb_code rc = tb_position_set_file(&pos, st->file);
    if (rc != TB_OK) {
        rc = tb_error_set(err, rc, false, "out of memory");
        goto out;
    }
    if ((rc = trunc_table(r, st, bt, &t, err)) != TB_OK)
        goto out;
    evt_connector conn =
        binlog_dec_is_mariadb(binlog_reader_decoder(r->binlog)) ? EVT_CONN_MARIADB : EVT_CONN_MYSQL;
    run_keys_at at = {.pos = &pos, .conn = conn, .txid = st->gtid, .ts_ms = st->ts_ms, .what = st->verb};
    /* t NULL: gone from the catalog, not seen since the run started: keyed by its topic's keys */
    rc = run_keys_delete(r, t, bt->db, bt->table, NULL, &at, &n, err);
    *sent += n;
    if (rc == TB_OK && st->kind == BINLOG_STMT_TRUNCATE && t) {
        /* then the "op":"t" record, for consumers that understand it (evt_render_truncate) */
        if (!(e = evt_event_new(EVT_OP_DELETE, t))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        pos.row = n + 1;
        evt_event_set_position(e, &pos);
        evt_event_set_connector(e, conn);
        evt_event_set_txid(e, st->gtid);
        evt_event_set_commit_ts_ms(e, st->ts_ms);
        if ((rc = run_send_truncate(r, e, err)) == TB_OK)
            *sent += 1;
    }
    if (rc == TB_OK) {
        tb_buf where;
        tb_buf_init(&where, 0);
        stmt_where(st, &where);
        TB_INFO("run", "%s.%s: %s at %s: %" PRIu64 " keys of its topic deleted (delete event and tombstone each)",
                bt->db, bt->table, st->verb, tb_buf_cstr(&where), n);
        tb_buf_free(&where);
    }
out:
    evt_event_free(e);
    evt_table_unref(t);
    tb_position_free(&pos);
    return rc;
}

static tb_code stmt_truncate_fail(const binlog_stmt *st, const binlog_stmt_table *t, tb_error *err)
{
    tb_buf where, text;
    tb_buf_init(&where, 0);
    tb_buf_init(&text, 0);
    stmt_where(st, &where);
    stmt_text(st, &text);
    tb_code rc = tb_error_set(err, TB_ERR_SOURCE, false,
                              "%s.%s is captured and was truncated (%s; ddl.truncate.policy=fail): its topic still "
                              "holds the removed rows. Statement: '%s'. Stopping before it; set "
                              "ddl.truncate.policy=tombstone to delete them in the topic",
                              t->db, t->table, tb_buf_cstr(&where), tb_buf_cstr(&text));
    tb_buf_free(&where);
    tb_buf_free(&text);
    return rc;
}

/* ------------------------------------------------------------ ALTER */

/* ddl.alter.policy=resnapshot: signal an incremental snapshot of the table
 * (a row in the signalling table, seen in the binlog after the ALTER), so
 * the topic gets every row with the values the ALTER gave it. */
static tb_code stmt_resnapshot(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *t, tb_error *err)
{
    tb_buf name, where;
    tb_buf_init(&name, 0);
    tb_buf_init(&where, 0);
    stmt_where(st, &where);
    tb_code rc = tb_buf_printf(&name, "%s.%s", t->db, t->table);
    if (rc != TB_OK)
        rc = tb_error_set(err, rc, false, "out of memory");
    else if ((rc = run_resnapshot_signal(r, tb_buf_cstr(&name),
                                         st->kind == BINLOG_STMT_RENAME ? APP_METRICS_RESNAP_RENAME
                                                                        : APP_METRICS_RESNAP_ALTER,
                                         NULL, err)) != TB_OK &&
             (rc == TB_ERR_NOT_FOUND || run_table_gone(r, t->db, t->table))) {
        /* gone since (renamed or dropped further on in the binlog): the
         * statement that took it away is handled when it is read. The
         * catalog's "no such table" says so by itself: asking it again could
         * find a table of that name created since (DROP and CREATE further
         * on), whose rows come as row events after its CREATE. */
        TB_INFO("run", "%s: %s at %s: the table no longer exists under this name (%s); nothing to send again",
                tb_buf_cstr(&name), st->verb, tb_buf_cstr(&where), err->msg);
        tb_error_clear(err);
        rc = TB_OK;
    } else if (rc != TB_OK)
        tb_error_prefix(err, rc,
                        "%s: after %s at %s its rows must be sent again; asking for an incremental snapshot of it "
                        "failed (grant INSERT on %s.%s; for ALTER, or set ddl.alter.policy=warn): ",
                        tb_buf_cstr(&name), st->verb, tb_buf_cstr(&where), t->db, SNAP_SIGNAL_TABLE);
    else
        TB_INFO("run", "%s: %s at %s: incremental snapshot of it signalled, to send its rows again",
                tb_buf_cstr(&name), st->verb, tb_buf_cstr(&where));
    tb_buf_free(&name);
    tb_buf_free(&where);
    return rc;
}

/* ------------------------------------------------------------ schema records */

static tb_code stmt_dropped(run_ctx *r, const binlog_stmt_table *bt, uint64_t *sent, tb_error *err)
{
    tb_code rc = run_dropped_record(r, bt->db, bt->table, err);
    if (rc == TB_OK)
        (*sent)++;
    return rc;
}

/* DROP TABLE of a captured table: its topic emptied (ddl.drop.policy=
 * tombstone) or left with a WARN, then the schema record that says dropped. */
static tb_code stmt_drop(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *t, uint64_t *sent,
                         tb_error *err)
{
    tb_code rc;
    if (sink_has(r->sink, SINK_CAP_TOPICS) && strcmp(cfg_get_str(r->cfg, CFGK_DDL_DROP_POLICY), "tombstone") == 0) {
        if ((rc = stmt_truncate(r, st, t, sent, err)) != TB_OK)
            return rc;
    } else
        stmt_warn(st, t);
    return stmt_dropped(r, t, sent, err);
}

/* DROP DATABASE: each captured table of it that the schema topic describes
 * (the tables written to, not dropped since) is dropped as by DROP TABLE;
 * a database none of whose tables was captured is nothing to the run. */
typedef struct dropdb_ctx {
    run_ctx *r;
    const binlog_stmt *st;
    const char *db;
    uint64_t *sent;
} dropdb_ctx;

static tb_code dropdb_one(void *opaque, const char *db, const char *table, tb_error *err)
{
    dropdb_ctx *d = opaque;
    binlog_stmt_table t = {TB_UNCONST(db), TB_UNCONST(table)}; /* read only */
    if (strcmp(db, d->db) != 0 || !captured(d->r, &t))
        return TB_OK;
    return stmt_drop(d->r, d->st, &t, d->sent, err);
}

tb_code run_on_dropped(run_ctx *r, const evt_event *ev, tb_error *err)
{
    const evt_table *t = evt_event_table(ev);
    if (strcmp(cfg_get_str(r->cfg, CFGK_DDL_DROP_POLICY), "tombstone") != 0) {
        tb_buf where;
        tb_buf_init(&where, 0);
        const tb_position *p = evt_event_position(ev);
        if (p && p->kind != TB_POS_NONE)
            tb_position_format(p, &where);
        TB_WARN("run", "%s.%s: DROP TABLE at %s: %s", evt_table_db(t), evt_table_name(t),
                where.len ? tb_buf_cstr(&where) : "?", DROP_EFFECT);
        tb_buf_free(&where);
    }
    return run_dropped_record(r, evt_table_db(t), evt_table_name(t), err);
}

/* The schema record of the new name, saying where the table came from
 * (renamed_from): the catalog's descriptor of it now. A new name that is
 * gone since, or cannot be described, gets none (INFO / WARN). */
static tb_code stmt_renamed(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *from,
                            const binlog_stmt_table *to, uint64_t *sent, tb_error *err)
{
    evt_table *d = NULL, *t = NULL;
    tb_error derr;
    tb_error_clear(&derr);
    tb_code rc = describe(r, to->db, to->table, &d, &derr);
    if (rc == TB_ERR_NOMEM)
        return tb_error_set(err, rc, false, "out of memory");
    if (rc != TB_OK) {
        TB_WARN("run", "%s.%s: %s: no schema record saying it was renamed from %s.%s (%s)", to->db, to->table,
                st->verb, from->db, from->table, derr.msg);
        return TB_OK;
    }
    if (!(t = evt_table_copy(d)) || evt_table_set_renamed_from(t, from->db, from->table) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    evt_table_seal(t);
    if ((rc = run_announce(r, t, err)) != TB_OK)
        tb_error_prefix(err, rc, "%s.%s: its schema record after %s: ", to->db, to->table, st->verb);
    else
        (*sent)++;
out:
    evt_table_unref(d);
    evt_table_unref(t);
    return rc;
}

/* ------------------------------------------------------------ RENAME */

/* RENAME old TO new: the old name's topic loses every key (as for DROP with
 * ddl.drop.policy=tombstone), and an incremental snapshot of the new name
 * sends the rows to its topic; so the topics, and the cache replaying them,
 * follow the table. Either side may be outside tables.include/exclude. */
static tb_code stmt_rename(run_ctx *r, const binlog_stmt *st, const binlog_stmt_table *from,
                           const binlog_stmt_table *to, uint64_t *sent, tb_error *err)
{
    bool cf = captured(r, from), ct = captured(r, to);
    if (!cf && !ct)
        return TB_OK;
    tb_code rc = TB_OK;
    TB_INFO("run", "%s.%s renamed to %s.%s (%s): %s%s", from->db, from->table, to->db, to->table, st->verb,
            cf ? (sink_has(r->sink, SINK_CAP_TOPICS) ? "the old name's topic is emptied"
                                                : "the old name's topic is left (sink=stdout)")
               : "the old name was not captured",
            ct ? "; the rows are sent again under the new name (incremental snapshot)"
               : "; the new name is not captured");
    if (cf && sink_has(r->sink, SINK_CAP_TOPICS) && st->after && (rc = stmt_truncate(r, st, from, sent, err)) != TB_OK)
        return rc;
    if (ct && st->after && (rc = stmt_renamed(r, st, from, to, sent, err)) != TB_OK)
        return rc;
    if (cf && st->after && (rc = stmt_dropped(r, from, sent, err)) != TB_OK)
        return rc;
    if (ct)
        rc = stmt_resnapshot(r, st, to, err);
    return rc;
}

tb_code run_on_stmt(void *opaque, const binlog_stmt *st, tb_error *err)
{
    run_ctx *r = opaque;
    tb_code rc = TB_OK;
    uint64_t sent = 0;
    if (st->kind == BINLOG_STMT_OTHER || (st->temporary && st->kind != BINLOG_STMT_DML))
        return TB_OK; /* temporary tables are never captured */
    run_fk_on_stmt(r, st);
    if (st->kind == BINLOG_STMT_CREATE && !st->or_replace)
        return TB_OK;
    for (size_t i = 0; r->inc && st->kind != BINLOG_STMT_DML && i < st->ntables; i++) /* its snapshot reconciles */
        if ((rc = snap_inc_table_changed(r->inc, st->tables[i].db, st->tables[i].table, st->after, err)) != TB_OK)
            return rc;
    if (st->kind == BINLOG_STMT_RENAME) {
        for (size_t i = 0; i + 1 < st->ntables; i += 2)
            if ((rc = stmt_rename(r, st, &st->tables[i], &st->tables[i + 1], &sent, err)) != TB_OK)
                return rc;
        return sent > 0 ? run_end_tx(r, st->after, err) : TB_OK;
    }
    for (size_t i = 0; i < st->ntables; i++) {
        const binlog_stmt_table *t = &st->tables[i];
        if (st->kind == BINLOG_STMT_DROP_DATABASE) {
            if (!sink_has(r->sink, SINK_CAP_TOPICS) || !st->after) {
                stmt_warn(st, t); /* which of its tables were captured is not known here */
                continue;
            }
            dropdb_ctx d = {r, st, t->db, &sent};
            if ((rc = sink_tables_known(r->sink, dropdb_one, &d, err)) != TB_OK)
                return tb_error_prefix(err, rc, "database %s: DROP DATABASE: ", t->db);
            continue;
        }
        if (!captured(r, t))
            continue;
        if (st->kind == BINLOG_STMT_DML)
            return stmt_dml(st, t, err);
        if (st->kind == BINLOG_STMT_ALTER && !st->fills_rows && !st->changes_key)
            continue; /* indexes, options, engine: no row changes its values or its key */
        if (st->kind == BINLOG_STMT_ALTER && strcmp(cfg_get_str(r->cfg, CFGK_DDL_ALTER_POLICY), "resnapshot") == 0) {
            if ((rc = stmt_resnapshot(r, st, t, err)) != TB_OK)
                return rc;
            continue;
        }
        if (st->kind == BINLOG_STMT_DROP && st->after) {
            if ((rc = stmt_drop(r, st, t, &sent, err)) != TB_OK)
                return rc;
            continue;
        }
        if (st->kind == BINLOG_STMT_TRUNCATE && st->after) {
            if (strcmp(cfg_get_str(r->cfg, CFGK_DDL_TRUNCATE_POLICY), "fail") == 0)
                return stmt_truncate_fail(st, t, err);
            if (sink_has(r->sink, SINK_CAP_TOPICS)) {
                if ((rc = stmt_truncate(r, st, t, &sent, err)) != TB_OK)
                    return rc;
                continue;
            }
        }
        stmt_warn(st, t);
    }
    /* the statement's events are one source transaction, ending after it */
    return sent > 0 ? run_end_tx(r, st->after, err) : TB_OK;
}
