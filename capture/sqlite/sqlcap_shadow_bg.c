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
 * Also the start/stop of a helper thread (sqlcap_worker), shared with the
 * .pend writer thread of sqlcap_pend.c.
 */
#include <stdlib.h>
#include <string.h>

#include "sqlcap_priv.h"

static void *sqlcap_shw_main(void *arg)
{
    sqlcap *c = arg;
    pthread_mutex_lock(&c->shw.mu);
    for (;;) {
        while (!c->shw_busy && !c->shw.quit)
            pthread_cond_wait(&c->shw.cv, &c->shw.mu);
        if (!c->shw_busy)
            break;
        pthread_mutex_unlock(&c->shw.mu);
        tb_error e;
        tb_code rc = sqlcap_shadow_write(c, &c->shw_last, c->shw_npages, &c->shw_pos, &e);
        pthread_mutex_lock(&c->shw.mu);
        c->shw_rc = rc;
        if (rc != TB_OK)
            c->shw_err = e;
        c->shw_busy = false;
        pthread_cond_broadcast(&c->shw.cv);
    }
    pthread_mutex_unlock(&c->shw.mu);
    return NULL;
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
    if (!c->shw.up && !sqlcap_worker_start(&c->shw, sqlcap_shw_main, c)) {
        /* no thread: here and now */
        if ((rc = sqlcap_shadow_write(c, &c->shw_last, c->shw_npages, &c->shw_pos, err)) == TB_OK)
            rc = sqlcap_shadow_retire(c, k, c->shw_npages, err);
        return rc;
    }
    pthread_mutex_lock(&c->shw.mu);
    c->shw_rc = TB_OK;
    c->shw_busy = true;
    c->shw_inflight = true;
    pthread_cond_broadcast(&c->shw.cv);
    pthread_mutex_unlock(&c->shw.mu);
    return TB_OK;
}

tb_code sqlcap_shadow_bg_finish(sqlcap *c, bool wait, tb_error *err)
{
    if (!c->shw_inflight)
        return TB_OK;
    pthread_mutex_lock(&c->shw.mu);
    if (c->shw_busy && !wait) {
        pthread_mutex_unlock(&c->shw.mu);
        return TB_OK;
    }
    while (c->shw_busy)
        pthread_cond_wait(&c->shw.cv, &c->shw.mu);
    tb_code rc = c->shw_rc;
    if (rc != TB_OK && err)
        *err = c->shw_err;
    pthread_mutex_unlock(&c->shw.mu);
    c->shw_inflight = false;
    if (rc == TB_OK)
        rc = sqlcap_shadow_retire(c, c->shw_k, c->shw_npages, err);
    sqlcap_map_clear(&c->shw_last);
    return rc;
}

void sqlcap_shadow_bg_stop(sqlcap *c)
{
    sqlcap_worker_stop(&c->shw);
    sqlcap_map_free(&c->shw_last);
    tb_position_free(&c->shw_pos);
}

/* ---------------------------------------------------------------- workers */

bool sqlcap_worker_start(sqlcap_worker *w, void *(*fn)(void *), void *arg)
{
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        return false;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    w->quit = false;
    if (pthread_create(&w->t, NULL, fn, arg) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    w->up = true;
    return true;
}

void sqlcap_worker_stop(sqlcap_worker *w)
{
    if (!w->up)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->t, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->up = false;
}
