/*
 * myconn: the one place tributary opens a connection to a MySQL/MariaDB source.
 *
 * The replication connection (capture/mysql), its schema-lookup connection, every snapshot
 * connection (snapshot/) and the signal writer of `tributary snapshot --incremental` all connect
 * here, so host, port, user, password and TLS (source.ssl.*) are applied the same way everywhere.
 *
 * TLS, by source.ssl.mode (the names and meanings of the MySQL clients' --ssl-mode):
 *   disabled         plaintext; no TLS option is given to Connector/C
 *   preferred        TLS when the server offers it, else plaintext (the default)
 *   required         TLS or no connection; the certificate is not checked
 *   verify_ca        TLS, and the server certificate must chain to source.ssl.ca/capath
 *   verify_identity  as verify_ca, and the certificate must name source.host
 * With source.ssl.ca or capath set, preferred and required verify the chain too (a CA given is a
 * CA used). Client certificate (cert, key), CRL, cipher list and TLS versions go to Connector/C
 * as they are. After a TLS connect the negotiated version and cipher are logged at INFO.
 *
 * Ownership: myconn_new copies what it needs from the configuration (the password included,
 * wiped on free); the cfg may be freed afterwards. A MYSQL handle from myconn_connect belongs to
 * the caller (mysql_close). Thread use: a myconn is read-only after myconn_new; connections may
 * be opened from several threads at once.
 */
#ifndef MYCONN_H
#define MYCONN_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "tb_error.h"

typedef struct myconn myconn;

typedef struct myconn_opts {
    const char *purpose;     /* what the connection is for, in log lines ("replication") */
    int64_t read_timeout_ms; /* 0: Connector/C's default */
    const char *charset;     /* NULL: Connector/C's default */
    bool quiet;              /* log the TLS line at DEBUG, not INFO (connections opened often) */
    bool reuse;              /* a connection myconn_keep kept for the same source may serve */
    bool any_timeout;        /* with reuse: one opened without a read timeout or with the catalog's
                                or a longer one (catalog questions); else only one opened with
                                read_timeout_ms */
} myconn_opts;

/* Read source.host/port/user/password(.file)/connect.timeout.ms and source.ssl.*; the password
 * file is read now. Errors: TB_ERR_CONFIG (unreadable password file, verify_* without a CA). */
TB_MUST_USE tb_code myconn_new(const cfg *c, myconn **out, tb_error *err);
void myconn_free(myconn *mc);

/* Open a connection. On failure *out is NULL and err says, in one line, which host:port, and
 * why; a failed certificate check reads "TLS certificate verification failed: <reason>".
 * Retriable: network errors and broken TLS handshakes; not retriable: access denied and
 * certificates that do not verify. */
TB_MUST_USE tb_code myconn_connect(const myconn *mc, const myconn_opts *o, MYSQL **out, tb_error *err);

/* Keep an idle connection of mc (no transaction open, no result pending; else it is closed)
 * for the next myconn_connect with reuse of the same source within MYCONN_KEEP_MS, which takes
 * it after a ping (and sets its charset) instead of a new connection and TLS handshake: a
 * run's start asks the catalog several questions, from several modules, before it streams.
 * At most MYCONN_KEEP_MAX are kept (another is closed); one of other source settings is closed
 * at the next take. The session keeps what its last user SET. Thread-safe. */
#define MYCONN_KEEP_MS 30000
#define MYCONN_KEEP_MAX 2
void myconn_keep(const myconn *mc, MYSQL *my);
/* Close every kept connection (at the end of a command). */
void myconn_keep_close(void);
/* The read timeout of connections that ask the catalog (the preflight's, the binlog reader's
 * schema lookups): source.connect.timeout.ms, at least 60 s (listing a large catalog). One
 * value, so that such a connection, kept, serves the next (myconn_keep). */
int64_t myconn_catalog_timeout_ms(const myconn *mc);
/* Open, each in a thread of its own, the connection the start's catalog questions take (the
 * preflight's options: catalog read timeout, utf8mb4) and, with also_rt_ms > 0, one more with
 * that read timeout for "replication" (binlog_replication_timeout_ms), and keep them
 * (myconn_keep), so that their TCP and TLS handshakes go on while the caller waits for Kafka; the
 * second starts once the first is kept. A
 * failure is forgotten: the first user connects and reports it. NULL when it cannot start
 * (nothing is lost). */
typedef struct myconn_warm myconn_warm;
myconn_warm *myconn_warm_start(const cfg *c, int64_t also_rt_ms);
/* Wait for the connections of myconn_warm_start to be kept (or to have failed); frees w.
 * NULL is ignored. */
void myconn_warm_join(myconn_warm *w);
/* Wait for the first of them (the catalog questions'), from any thread, before w is joined.
 * NULL is ignored. */
void myconn_warm_wait_first(myconn_warm *w);
/* The options of the preflight connection, which the catalog questions and the binlog reader's
 * schema lookups then take. */
myconn_opts myconn_catalog_opts(const myconn *mc, const char *purpose);
/* Whether a and b open connections to the same server with the same account and TLS settings
 * (a connection of one may serve the other). */
bool myconn_same(const myconn *a, const myconn *b);

const char *myconn_host(const myconn *mc);
unsigned myconn_port(const myconn *mc);

/* Is the server of this connection MariaDB (its version string says so), not MySQL? */
bool myconn_is_mariadb(MYSQL *my);

/* Is this connection encrypted (TLS)? */
bool myconn_encrypted(MYSQL *my);

/* Whether a statement that failed with this mysql_errno() (or mysql_stmt_errno()) may
 * succeed when tried again, after a reconnect: the connection broke or the server was busy
 * (client errors 2000-2999, lock wait timeout, deadlock, too many connections, server
 * shutdown, query interrupted). A permission or syntax error is not: it is reported instead
 * of being retried for ever. The one list for every source connection. */
bool myconn_errno_retriable(unsigned mysql_errno_value);

/* How many times a TLS connection without a CA did not load the system CA store it would not
 * use (myconn.c, "the system CA store"). */
unsigned long myconn_ca_store_skipped(void);

/* Fill err from a prepared statement's last error (TB_ERR_SOURCE, retriable as
 * myconn_errno_retriable says), with a prefix naming what was done. */
TB_MUST_USE tb_code myconn_stmt_fail(MYSQL_STMT *st, tb_error *err, const char *what);

/* Row callback of myconn_query: col[i] is NULL for SQL NULL, else borrowed text valid for the
 * call only; len[i] its byte length. Return TB_OK to go on; anything else stops the query and
 * is returned. */
typedef tb_code (*myconn_row_fn)(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err);

/* The one runner of catalog and status questions (myconn_query.c): a prepared statement with
 * string parameters (params may be NULL when nparams is 0); every result row is given as text
 * to fn. The whole result is buffered: for metadata queries, not for rows of tables. Errors:
 * myconn_stmt_fail's, naming the statement; TB_ERR_NOMEM. */
TB_MUST_USE tb_code myconn_query(MYSQL *my, const char *sql, const char *const *params, size_t nparams,
                                 myconn_row_fn fn, void *opaque, tb_error *err);

#endif
