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

/* Fill err from the connection's last error, with a prefix naming what was done (a prepared
 * statement's: myconn_stmt_fail). */
TB_MUST_USE tb_code snap_sql_fail(MYSQL *my, tb_error *err, const char *what);

/* Run a statement without a result set. */
TB_MUST_USE tb_code snap_sql_exec(MYSQL *my, const char *sql, tb_error *err);

/* Append `name` as a quoted identifier (backticks, doubled inside). */
TB_MUST_USE tb_code snap_sql_ident(tb_buf *b, const char *name);

#endif
