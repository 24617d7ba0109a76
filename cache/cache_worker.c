/*
 * cache_worker: a thread that runs one job each time it is asked to, for the
 * cache's background work (cache_ckpt.c, cache_nudge.c). Requests made while
 * a run is pending collapse into one; a request made during a run makes one
 * more run after it. Declared in cache_int.h.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cache_int.h"

struct cache_worker {
    cache_worker_fn fn;
    void *arg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool pending, running, stop;
    int64_t runs;
};

static void *worker_main(void *arg)
{
    cache_worker *w = arg;
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
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

tb_code cache_worker_start(cache_worker_fn fn, void *arg, cache_worker **out, tb_error *err)
{
    cache_worker *w = calloc(1, sizeof(*w));
    *out = NULL;
    if (!w)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    w->fn = fn;
    w->arg = arg;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return tb_error_set(err, TB_ERR_NOMEM, false, "background thread: no mutex");
    }
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return tb_error_set(err, TB_ERR_NOMEM, false, "background thread: no condition variable");
    }
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return tb_error_set(err, TB_ERR_NOMEM, false, "cannot start a background thread");
    }
    *out = w;
    return TB_OK;
}

bool cache_worker_signal(cache_worker *w)
{
    bool queued = false;
    pthread_mutex_lock(&w->mu);
    if (!w->pending) {
        w->pending = queued = true;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return queued;
}

bool cache_worker_idle(cache_worker *w)
{
    pthread_mutex_lock(&w->mu);
    bool idle = !w->pending && !w->running;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

int64_t cache_worker_stop(cache_worker *w)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    int64_t runs = w->runs;
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return runs;
}
