/*
 * snap_sql: the snapshotter's MySQL/MariaDB connection and small query
 * helpers (internal to snapshot/). All mysql_errno translation of snapshot/
 * happens here (snap_sql_fail).
 *
 * Ownership: snap_sql_connect() returns a MYSQL* the caller closes with
 * mysql_close(), or hands back with snap_sql_release() when it left the session as it got it
 * (no open transaction, no lock, no SET). Row callbacks receive borrowed column texts valid only for
 * the duration of the call.
 */
#ifndef SNAP_SQL_H
#define SNAP_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mysql.h>

#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"

/* Connect with the source.* keys; the session gets time_zone='+00:00',
 * utf8mb4 results and long network timeouts. *mariadb says which flavour. */
TB_MUST_USE tb_code snap_sql_connect(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err);

/* Done with a connection of snap_sql_connect: it is kept open (one per process) and the next
 * snap_sql_connect of the same source within SNAP_SQL_KEEP_MS takes it after a ping instead of
 * a new connection and TLS handshake (later than that it closes it and connects anew) (a run's start and each DDL ask the
 * catalog a few questions in a row). Closed instead when one is kept already or a
 * transaction is open. my may be NULL. Thread-safe. */
#define SNAP_SQL_KEEP_MS 30000
void snap_sql_release(const cfg *c, MYSQL *my);
/* Close the kept connection, if any (at the end of a command). */
void snap_sql_release_kept(void);

/* Fill err from the connection's last error, with a prefix naming what was done. */
TB_MUST_USE tb_code snap_sql_fail(MYSQL *my, tb_error *err, const char *what);
TB_MUST_USE tb_code snap_sql_stmt_fail(MYSQL_STMT *st, tb_error *err, const char *what);

/* Run a statement without a result set. */
TB_MUST_USE tb_code snap_sql_exec(MYSQL *my, const char *sql, tb_error *err);

/* Row callback: col[i] is NULL for SQL NULL; len[i] the byte length. Return
 * TB_OK to go on, anything else stops the query and is returned. */
typedef tb_code (*snap_sql_row_fn)(void *opaque, char **col, unsigned long *len, unsigned ncols,
                                   tb_error *err);

/* Prepared statement with string parameters (params may be NULL when n=0);
 * every result row is given as text to fn. The whole result is buffered
 * (use for metadata queries only). */
TB_MUST_USE tb_code snap_sql_query(MYSQL *my, const char *sql, const char *const *params, size_t nparams,
                       snap_sql_row_fn fn, void *opaque, tb_error *err);

/* Append `name` as a quoted identifier (backticks, doubled inside). */
TB_MUST_USE tb_code snap_sql_ident(tb_buf *b, const char *name);

#endif
