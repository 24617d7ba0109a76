/*
 * binlog_live: the replication client (Connector/C mariadb_rpl_*), internal
 * to capture/mysql. binlog_reader.c wraps it in the public API of binlog.h.
 */
#ifndef BINLOG_LIVE_H
#define BINLOG_LIVE_H

#include "binlog.h"

typedef struct binlog_live binlog_live;

/* Connect and start streaming; creates the decoder (*dec, owned by the caller). */
TB_MUST_USE tb_code binlog_live_open(const cfg *c, const tb_position *start, binlog_live **out, binlog_dec **dec,
                         tb_error *err);
/* Next change event (NULL on timeout or heartbeat); reconnects with backoff. */
TB_MUST_USE tb_code binlog_live_next(binlog_live *l, binlog_dec *dec, int timeout_ms, evt_event **ev, tb_error *err);
void binlog_live_free(binlog_live *l);
/* The description of a table the catalog no longer has (binlog_set_history_fn). */
void binlog_live_set_history_fn(binlog_live *l, binlog_schema_fn fn, void *opaque);
/* True after the server refused to send the binlog from the requested
 * position (error 1236: purged, reset, or never there). */
bool binlog_live_position_gone(const binlog_live *l);
/* True while the replication connection is up and uses TLS. */
bool binlog_live_encrypted(const binlog_live *l);

/* Whether the replication connection is up; *down_since_ms (may be NULL):
 * wall time (Unix ms) it was lost or first failed, 0 while up. */
/* Between reads: when the server closed the replication connection, count it as lost now
 * (see binlog_check_connection). */
void binlog_live_check(binlog_live *l, binlog_dec *dec);
bool binlog_live_connected(const binlog_live *l, int64_t *down_since_ms);
/* Bytes of binlog on the server after the decoder's position (SHOW BINARY
 * LOGS on the second connection); *bytes = -1 when unknown (disconnected,
 * no file position yet). */
TB_MUST_USE tb_code binlog_live_behind(binlog_live *l, const binlog_dec *dec, int64_t *bytes, tb_error *err);

#endif
