/*
 * snap_sql: the snapshotter's MySQL/MariaDB connection and small query
 * helpers (internal to snapshot/). The errors of snapshot/'s connections are
 * translated by snap_sql_fail and, for prepared statements, myconn_stmt_fail
 * (mysqlconn/), both with the one list of retriable errors.
 *
 * Ownership: snap_sql_connect() returns a MYSQL* the caller closes with
 * mysql_close(), or hands back with snap_sql_release() when it left the session as it got it
 * (no open transaction, no lock, no SET). Catalog questions on it go through myconn_query
 * (mysqlconn/myconn.h).
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

/* Connect with the source.* keys, for catalog questions; the session gets time_zone='+00:00',
 * utf8mb4 results and long network timeouts. *mariadb says which flavour. A connection kept
 * (myconn_keep: the preflight's, or one handed back with snap_sql_release) serves after a ping
 * instead of a new connection and TLS handshake (a run's start asks the catalog several
 * questions in a row), whatever read timeout it was opened with. */
TB_MUST_USE tb_code snap_sql_connect(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err);
/* The same for reading a table's rows: a kept connection serves only when opened without a
 * read timeout (a long scan must not time out between two packets). */
TB_MUST_USE tb_code snap_sql_connect_rows(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err);

/* Done with a connection of snap_sql_connect(_rows): it is kept open (myconn_keep, within
 * MYCONN_KEEP_MS) for the next connection of the same source. Closed instead when a
 * transaction is open or MYCONN_KEEP_MAX are kept already. my may be NULL. Thread-safe. */
void snap_sql_release(const cfg *c, MYSQL *my);
/* Close the kept connections, if any (at the end of a command). */
void snap_sql_release_kept(void);

/* Fill err from the connection's last error, with a prefix naming what was done (a prepared
 * statement's: myconn_stmt_fail). */
TB_MUST_USE tb_code snap_sql_fail(MYSQL *my, tb_error *err, const char *what);

/* Run a statement without a result set. */
TB_MUST_USE tb_code snap_sql_exec(MYSQL *my, const char *sql, tb_error *err);

/* Append `name` as a quoted identifier (backticks, doubled inside). */
TB_MUST_USE tb_code snap_sql_ident(tb_buf *b, const char *name);

#endif
