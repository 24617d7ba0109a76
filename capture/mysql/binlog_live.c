/*
 * binlog_live: replication client (not implemented yet).
 */
#include "binlog_live.h"

tb_code binlog_live_open(const cfg *c, const tb_position *start, binlog_live **out, binlog_dec **dec,
                         tb_error *err)
{
    *out = NULL;
    *dec = NULL;
    return tb_error_set(err, TB_ERR_NOT_IMPLEMENTED, false, "live binlog replication is not implemented yet");
}

tb_code binlog_live_next(binlog_live *l, binlog_dec *dec, int timeout_ms, evt_event **ev, tb_error *err)
{
    *ev = NULL;
    return tb_error_set(err, TB_ERR_NOT_IMPLEMENTED, false, "live binlog replication is not implemented yet");
}

void binlog_live_free(binlog_live *l)
{
    (void)l;
}
