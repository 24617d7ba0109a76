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
 *  - TRUNCATE, ALTER, RENAME, DROP, CREATE OR REPLACE, OPTIMIZE/REPAIR and
 *    DROP DATABASE: a WARN naming the table, the statement and what the
 *    topic does not reflect; never silent.
 * Statements on tables that are not captured are ignored.
 */
#include <string.h>

#include "app_run.h"
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
    return snap_filter_match(&r->filter, t->db, t->table);
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
        "session that wrote it used binlog_format=STATEMENT (or MIXED chose it), so the binlog does not say "
        "which rows changed and the change cannot be sent. Stopping here; nothing after it is committed. "
        "Statement: '%s'. Fix: make every writer log rows (binlog_format=ROW globally, and no session "
        "override), then set the position past this transaction (`tributary offsets set`) and snapshot the "
        "table again (`tributary snapshot --incremental --table %s.%s`)",
        t->db, t->table, st->verb, tb_buf_cstr(&where), tb_buf_cstr(&text), t->db, t->table);
    tb_buf_free(&where);
    tb_buf_free(&text);
    return rc;
}

/* What the topic misses after a statement of kind k, for the WARN. */
static const char *stmt_effect(const binlog_stmt *st)
{
    switch (st->kind) {
    case BINLOG_STMT_TRUNCATE:
        return "the rows it removed are still in the topic (no row events)";
    case BINLOG_STMT_ALTER:
        return "values it gave existing rows (a new column's default, a changed type) reach the topic only "
               "when each row next changes";
    case BINLOG_STMT_RENAME:
        return "later changes go to the new name's topic; the old topic keeps the rows";
    case BINLOG_STMT_DROP:
        return "the topic is left as it is, with every row the table had";
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

tb_code run_on_stmt(void *opaque, const binlog_stmt *st, tb_error *err)
{
    run_ctx *r = opaque;
    if (st->kind == BINLOG_STMT_OTHER || (st->temporary && st->kind != BINLOG_STMT_DML))
        return TB_OK; /* temporary tables are never captured */
    if (st->kind == BINLOG_STMT_CREATE && !st->or_replace)
        return TB_OK;
    for (size_t i = 0; i < st->ntables; i++) {
        const binlog_stmt_table *t = &st->tables[i];
        if (st->kind == BINLOG_STMT_DROP_DATABASE) {
            stmt_warn(st, t); /* which of its tables were captured is not known here */
            continue;
        }
        if (!captured(r, t))
            continue;
        if (st->kind == BINLOG_STMT_DML)
            return stmt_dml(st, t, err);
        stmt_warn(st, t);
    }
    return TB_OK;
}
