/*
 * sqlcap_shadow_bg: the shadow advance (sqlite-wal.md 5, "Shadow advances in
 * groups") in a helper thread, so the main thread goes on consuming while the
 * acknowledged pages are written to <shadow> and fsynced (about 10-30 ms per
 * 32 MiB group). Only groups whose transactions are all durable in .pend go
 * here: a crash before .pos is renamed leaves the old position, and resume
 * replays .pend from there (whole page images), as for the synchronous path.
 * While the advance runs, its un[] entries and images stay allocated and
 * their overlay entries stay (views read those pages from memory, never from
 * the shadow file being written); the main thread retires them afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlcap_priv.h"

/* The worker's job: one advance; its result is read once the worker is idle. */
static void sqlcap_shw_job(void *arg)
{
    sqlcap *c = arg;
    tb_error e;
    tb_code rc = sqlcap_shadow_write(c, &c->shw_last, c->shw_npages, &c->shw_pos, &e);
    c->shw_rc = rc;
    if (rc != TB_OK)
        c->shw_err = e;
}

tb_code sqlcap_shadow_bg_start(sqlcap *c, size_t k, tb_error *err)
{
    if (k == 0)
        return TB_OK;
    sqlcap_map_clear(&c->shw_last);
    tb_code rc = sqlcap_shadow_last(c, k, &c->shw_last, err);
    if (rc == TB_OK && tb_position_copy(&c->shw_pos, &c->un[k - 1].pos) != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
    if (rc != TB_OK)
        return rc;
    c->shw_npages = c->un[k - 1].npages;
    c->shw_k = k;
    if (!c->shw.up && tb_worker_start(&c->shw, sqlcap_shw_job, c, NULL) != TB_OK) {
        /* no thread: here and now */
        if ((rc = sqlcap_shadow_write(c, &c->shw_last, c->shw_npages, &c->shw_pos, err)) == TB_OK)
            rc = sqlcap_shadow_retire(c, k, c->shw_npages, err);
        return rc;
    }
    c->shw_inflight = true;
    tb_worker_wake(&c->shw);
    return TB_OK;
}

tb_code sqlcap_shadow_bg_finish(sqlcap *c, bool wait, tb_error *err)
{
    if (!c->shw_inflight)
        return TB_OK;
    if (!wait && !tb_worker_idle(&c->shw))
        return TB_OK;
    tb_worker_wait_idle(&c->shw);
    tb_code rc = c->shw_rc;
    if (rc != TB_OK && err)
        *err = c->shw_err;
    c->shw_inflight = false;
    if (rc == TB_OK)
        rc = sqlcap_shadow_retire(c, c->shw_k, c->shw_npages, err);
    sqlcap_map_clear(&c->shw_last);
    return rc;
}

void sqlcap_shadow_bg_stop(sqlcap *c)
{
    if (c->shw.up)
        tb_worker_wait_idle(&c->shw); /* an advance asked for is finished, not dropped */
    tb_worker_stop(&c->shw);
    sqlcap_map_free(&c->shw_last);
    tb_position_free(&c->shw_pos);
}
