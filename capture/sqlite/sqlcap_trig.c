/* trigger mode: see sqlcap_trig.c history */
#include "sqlcap_priv.h"

tb_code sqlcap_trig_open(sqlcap *c, const tb_position *start, tb_error *err)
{
    (void)start;
    return tb_error_set(err, TB_ERR_NOT_IMPLEMENTED, false, "%s: trigger mode is not implemented yet", c->path);
}
tb_code sqlcap_trig_poll(sqlcap *c, tb_error *err) { (void)c; (void)err; return TB_OK; }
tb_code sqlcap_trig_ack(sqlcap *c, const tb_position *pos, tb_error *err) { (void)c; (void)pos; (void)err; return TB_OK; }
void sqlcap_trig_close(sqlcap *c) { (void)c; }
tb_code sqlcap_trigger_uninstall(const char *path, tb_error *err)
{
    return tb_error_set(err, TB_ERR_NOT_IMPLEMENTED, false, "%s: trigger mode is not implemented yet", path);
}
