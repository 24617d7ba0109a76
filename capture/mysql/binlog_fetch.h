/*
 * binlog_fetch: the thread that reads a replication connection, internal to
 * capture/mysql (binlog_live.c).
 *
 * Connector/C reads ahead: one read from the socket can bring several
 * events into its private buffer, so whether mariadb_rpl_fetch() would block
 * cannot be told from the socket, and its public API offers no way to ask.
 * A thread of our own therefore blocks in mariadb_rpl_fetch() and hands the
 * events to the decoding thread through a small bounded queue; the decoding
 * thread waits on the queue with a deadline, so it keeps serving the sink
 * (acknowledgements, commits, status) while the source is idle.
 *
 * Ownership: from bl_fetch_start until bl_fetch_stop returns, the MYSQL and
 * MARIADB_RPL handles belong to the thread; the caller must not use them.
 * Events are Connector/C's MARIADB_RPL_EVENT objects; the one bl_fetch_next
 * gives out stays valid until the next bl_fetch_next or bl_fetch_stop, then
 * goes back to the thread to be filled again.
 *
 * Bounds: at most BL_FETCH_QUEUE events and, beyond the first,
 * BL_FETCH_QUEUE_BYTES bytes of events wait in the queue.
 *
 * Stop: bl_fetch_stop sets a flag, shuts the socket's read side down
 * (shutdown(2) of a duplicate of mysql_get_socket's descriptor, which wakes
 * a blocked read) and joins the thread. The connection cannot be used
 * afterwards; close it.
 */
#ifndef BINLOG_FETCH_H
#define BINLOG_FETCH_H

#include <stdbool.h>
#include <stddef.h>

#include <mysql.h>
#include <mariadb_rpl.h>

#include "tb_error.h"

#define BL_FETCH_QUEUE 64
#define BL_FETCH_QUEUE_BYTES (8u << 20)

typedef struct bl_fetch bl_fetch;

/* Start the thread on an opened binlog stream (mariadb_rpl_open done). */
TB_MUST_USE tb_code bl_fetch_start(MYSQL *mysql, MARIADB_RPL *rpl, bl_fetch **out, tb_error *err);

typedef enum bl_fetch_rc {
    BL_FETCH_EVENT,   /* *ev is the next event */
    BL_FETCH_TIMEOUT, /* nothing within timeout_ms */
    BL_FETCH_END      /* the stream ended: *code and *msg say why (mysql_errno/mysql_error) */
} bl_fetch_rc;

/* The next event, waiting at most timeout_ms (0: do not wait). After
 * BL_FETCH_END every call returns BL_FETCH_END again; *msg is borrowed from f. */
bl_fetch_rc bl_fetch_next(bl_fetch *f, int timeout_ms, MARIADB_RPL_EVENT **ev, unsigned *code, const char **msg);

/* Whether the server closed the connection (POLLRDHUP on the socket), events
 * still queued or not. Does not wait. */
bool bl_fetch_peer_closed(bl_fetch *f);

/* Stop and join the thread, free every event. NULL is a no-op. */
void bl_fetch_stop(bl_fetch *f);

#endif
