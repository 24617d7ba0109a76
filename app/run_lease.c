/*
 * run_lease: the lease of `tributary run` (DESIGN 12, sinks/ksink_lease.h).
 *
 * run_lease_acquire() comes before the stored position is read and anything
 * is produced (the clients that do it are made meanwhile, cmd_run.c's
 * run_ahead; with exactly.once the sink is opened after it): a standby waits here, state "standby" in its status file,
 * logging `standby: <name> is active on <host:pid>` once per active
 * instance it sees. run_lease_check() guards every produce and commit of
 * the run loop (run_sink.c: run_sink_send, run_sink_commit, and cmd_run.c's final flush);
 * once it fails, r->lease_lost is set and the run ends without flushing or
 * committing anything more. run_lease_release() comes after the sink is
 * closed, so a standby never starts while this instance still produces.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "app_run.h"
#include "app_status.h"
#include "binlog.h"
#include "ksink_lease.h"
#include "tb_log.h"

#define LEASE_WAIT_POLL_MS 200

tb_code run_lease_acquire(run_ctx *r, tb_error *err)
{
    if (!cfg_get_bool(r->cfg, CFGK_HA_ENABLED))
        return TB_OK;
    tb_code rc = ksink_lease_open(r->cfg, &r->lease, err);
    if (rc != TB_OK)
        return rc;
    const char *name = cfg_get_str(r->cfg, CFGK_NAME);
    tb_buf holder, seen;
    tb_buf_init(&holder, 0);
    tb_buf_init(&seen, 0);
    int64_t t0 = tb_wall_ms();
    bool standby = false, was = false;
    for (;;) {
        ksink_lease_state st;
        if ((rc = ksink_lease_poll(r->lease, LEASE_WAIT_POLL_MS, &st, err)) != TB_OK)
            break;
        if (st == KSINK_LEASE_HELD) {
            TB_INFO("lease", "%s is active on %s%s", name, ksink_lease_self(r->lease),
                    standby ? " (took over)" : "");
            break;
        }
        if (app_stop_requested) {
            rc = tb_error_set(err, TB_ERR_STOPPED, false, "stopped while standing by");
            break;
        }
        tb_buf_reset(&holder);
        if (ksink_lease_holder(r->lease, &holder) && strcmp(tb_buf_cstr(&holder), tb_buf_cstr(&seen)) != 0) {
            TB_INFO("lease", "standby: %s is active on %s", name, tb_buf_cstr(&holder));
            tb_buf_reset(&seen);
            tb_buf_puts(&seen, tb_buf_cstr(&holder));
            standby = true;
        }
        if (!standby && tb_wall_ms() - t0 >= 2000) {
            TB_INFO("lease", "standby: waiting for the lease of %s (no active instance seen yet)", name);
            standby = true;
        }
        if (standby)
            run_write_status(r, "standby", NULL, !was);
        was = standby;
    }
    tb_buf_free(&holder);
    tb_buf_free(&seen);
    return rc;
}

tb_code run_lease_check_slow(run_ctx *r, tb_error *err)
{
    tb_code rc;
    bool said = false;
    /* Unconfirmed (Kafka unreachable, a rebalance): wait, producing nothing,
     * until it is confirmed or lost; a stop request ends the wait. */
    while ((rc = ksink_lease_check(r->lease, err)) != TB_OK && err->retriable && !app_stop_requested) {
        if (!said)
            TB_WARN("lease", "%s", err->msg);
        said = true;
        /* Producing nothing, but watching: a source connection lost meanwhile is noticed
         * (status "reconnecting", /health "source down") as it is while streaming, and the
         * producer's callbacks keep /health's view of Kafka current; nothing staged goes out. */
        binlog_check_connection(r->binlog);
        if (r->sink)
            sink_serve(r->sink);
        r->lease_waiting = true; /* unhealthy while it lasts (app_health) */
        run_write_status(r, "streaming", NULL, false);
    }
    r->lease_waiting = false;
    if (rc == TB_OK && said)
        TB_INFO("lease", "%s: the lease is confirmed; producing again", cfg_get_str(r->cfg, CFGK_NAME));
    if (rc != TB_OK && !r->lease_lost) {
        r->lease_lost = true;
        if (err->retriable) {
            char why[TB_ERROR_MSG_MAX];
            snprintf(why, sizeof why, "%s", err->msg);
            rc = tb_error_set(err, TB_ERR_STATE, false,
                              "stopped while the lease was not confirmed (%s); nothing more was produced or committed",
                              why);
        }
        TB_ERROR("lease", "%s", err->msg);
    }
    return rc;
}

void run_lease_release(run_ctx *r)
{
    ksink_lease_close(r->lease);
    r->lease = NULL;
}
