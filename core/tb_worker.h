/*
 * tb_worker: one background thread that runs a job each time it is woken
 * (the cache's checkpoint and nudge threads, the SQLite reader's .pend
 * writer and shadow advance).
 *
 * Wakes made while a run is pending collapse into one; a wake during a run
 * makes one more run after it. The job runs without the lock held. The lock
 * and condition are the caller's too: a user that hands data to the job
 * (a queue, a result) guards it with w->mu and may wait on w->cv, which is
 * broadcast after every run; everything the job writes before it returns is
 * visible to a thread that then sees the worker idle (tb_worker_idle,
 * tb_worker_wait_idle), as both go through w->mu.
 *
 *   tb_worker w;
 *   if (tb_worker_start(&w, job, arg, err) != TB_OK) ...   // run job inline instead
 *   tb_worker_wake(&w);            // job(arg) runs soon on the thread
 *   tb_worker_wait_idle(&w);       // every requested run has finished
 *   tb_worker_stop(&w);            // a run not started yet is dropped; joins
 */
#ifndef TB_WORKER_H
#define TB_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tb_error.h"

typedef void (*tb_worker_fn)(void *arg);

typedef struct tb_worker {
    pthread_mutex_t mu; /* guards the fields below and whatever the user keeps with them */
    pthread_cond_t cv;  /* broadcast on every wake, after every run and at stop */
    pthread_t thread;
    tb_worker_fn fn;
    void *arg;
    bool up;            /* started and not stopped */
    bool pending, running, stop;
    int64_t runs;       /* runs finished */
} tb_worker;

/* Start the thread. On failure (TB_ERR_NOMEM, message in err) w is not up
 * and needs no stop. */
TB_MUST_USE tb_code tb_worker_start(tb_worker *w, tb_worker_fn fn, void *arg, tb_error *err);

/* Ask for a run; true when this wake queued one, false when a run was
 * already pending. */
bool tb_worker_wake(tb_worker *w);

/* No run pending or running (a snapshot: a wake may come next). */
bool tb_worker_idle(tb_worker *w);

/* Wait until no run is pending or running. */
void tb_worker_wait_idle(tb_worker *w);

/* Stop and join the thread; a pending run that has not started is dropped.
 * Returns the number of runs. Safe on a worker that is not up (returns 0). */
int64_t tb_worker_stop(tb_worker *w);

#endif
