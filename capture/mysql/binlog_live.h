/*
 * binlog_live: the replication client (Connector/C mariadb_rpl_*), internal
 * to capture/mysql. binlog_reader.c wraps it in the public API of binlog.h.
 */
#ifndef BINLOG_LIVE_H
#define BINLOG_LIVE_H

#include "binlog.h"

typedef struct binlog_live binlog_live;

/* Connect and start streaming; creates the decoder (*dec, owned by the caller). */
tb_code binlog_live_open(const cfg *c, const tb_position *start, binlog_live **out, binlog_dec **dec,
                         tb_error *err);
/* Next change event (NULL on timeout or heartbeat); reconnects with backoff. */
tb_code binlog_live_next(binlog_live *l, binlog_dec *dec, int timeout_ms, evt_event **ev, tb_error *err);
void binlog_live_free(binlog_live *l);
/* True after the server refused to send the binlog from the requested
 * position (error 1236: purged, reset, or never there). */
bool binlog_live_position_gone(const binlog_live *l);

#endif
