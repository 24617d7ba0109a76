/* tb_worker: a thread that runs a job each time it is woken (see tb_worker.h). */
#include "tb_worker.h"

#include <string.h>

static void *tb_worker_main(void *arg)
{
    tb_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->pending && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        w->pending = false;
        w->running = true;
        pthread_mutex_unlock(&w->mu);
        w->fn(w->arg);
        pthread_mutex_lock(&w->mu);
        w->running = false;
        w->runs++;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

tb_code tb_worker_start(tb_worker *w, tb_worker_fn fn, void *arg, tb_error *err)
{
    memset(w, 0, sizeof(*w));
    w->fn = fn;
    w->arg = arg;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        return tb_error_set(err, TB_ERR_NOMEM, false, "background thread: no mutex");
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        return tb_error_set(err, TB_ERR_NOMEM, false, "background thread: no condition variable");
    }
    if (pthread_create(&w->thread, NULL, tb_worker_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return tb_error_set(err, TB_ERR_NOMEM, false, "cannot start a background thread");
    }
    w->up = true;
    return TB_OK;
}

bool tb_worker_wake(tb_worker *w)
{
    bool queued = false;
    pthread_mutex_lock(&w->mu);
    if (!w->pending) {
        w->pending = queued = true;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return queued;
}

bool tb_worker_idle(tb_worker *w)
{
    pthread_mutex_lock(&w->mu);
    bool idle = !w->pending && !w->running;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

void tb_worker_wait_idle(tb_worker *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->pending || w->running)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

int64_t tb_worker_stop(tb_worker *w)
{
    if (!w->up)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    int64_t runs = w->runs;
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->up = false;
    return runs;
}
