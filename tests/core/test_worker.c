/* Unit tests of tb_worker: wakes collapse, a wake during a run makes one more
 * run, wait_idle sees the job's writes, stop joins. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "tb_worker.h"

typedef struct {
    tb_worker *w;
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    bool gate_open;   /* the job waits for it: a run can be held open */
    bool in_job;
    int value;        /* written by the job, read after wait_idle */
    _Atomic int runs;
} job_state;

static void job(void *arg)
{
    job_state *s = arg;
    pthread_mutex_lock(&s->gate_mu);
    s->in_job = true;
    pthread_cond_broadcast(&s->gate_cv);
    while (!s->gate_open)
        pthread_cond_wait(&s->gate_cv, &s->gate_mu);
    s->in_job = false;
    pthread_mutex_unlock(&s->gate_mu);
    s->value++;
    atomic_fetch_add(&s->runs, 1);
}

static void init_state(job_state *s, tb_worker *w, bool open)
{
    s->w = w;
    pthread_mutex_init(&s->gate_mu, NULL);
    pthread_cond_init(&s->gate_cv, NULL);
    s->gate_open = open;
    s->in_job = false;
    s->value = 0;
    atomic_init(&s->runs, 0);
}

static void set_gate(job_state *s, bool open)
{
    pthread_mutex_lock(&s->gate_mu);
    s->gate_open = open;
    pthread_cond_broadcast(&s->gate_cv);
    pthread_mutex_unlock(&s->gate_mu);
}

static void wait_in_job(job_state *s)
{
    pthread_mutex_lock(&s->gate_mu);
    while (!s->in_job)
        pthread_cond_wait(&s->gate_cv, &s->gate_mu);
    pthread_mutex_unlock(&s->gate_mu);
}

Test(worker, runs_once_per_wake_and_wait_idle_sees_the_result)
{
    tb_worker w;
    job_state s;
    init_state(&s, &w, true);
    tb_error err;
    cr_assert_eq(tb_worker_start(&w, job, &s, &err), TB_OK, "%s", err.msg);
    cr_assert(tb_worker_idle(&w));
    for (int i = 1; i <= 50; i++) {
        tb_worker_wake(&w);
        tb_worker_wait_idle(&w);
        cr_assert_eq(s.value, i, "the job's write is seen after wait_idle");
    }
    cr_assert_eq(tb_worker_stop(&w), 50);
    cr_assert_eq(tb_worker_stop(&w), 0, "a second stop is a no-op");
}

Test(worker, wakes_collapse_and_a_wake_during_a_run_runs_again)
{
    tb_worker w;
    job_state s;
    init_state(&s, &w, false);
    tb_error err;
    cr_assert_eq(tb_worker_start(&w, job, &s, &err), TB_OK, "%s", err.msg);
    cr_assert(tb_worker_wake(&w));
    wait_in_job(&s); /* the first run is held open */
    cr_assert_not(tb_worker_idle(&w));
    cr_assert(tb_worker_wake(&w), "a wake during a run queues one more");
    cr_assert_not(tb_worker_wake(&w), "further wakes collapse into it");
    cr_assert_not(tb_worker_wake(&w));
    set_gate(&s, true);
    tb_worker_wait_idle(&w);
    cr_assert_eq(atomic_load(&s.runs), 2);
    cr_assert(tb_worker_idle(&w));
    cr_assert_eq(tb_worker_stop(&w), 2);
}

Test(worker, stop_drops_a_run_not_started_and_joins)
{
    tb_worker w;
    job_state s;
    init_state(&s, &w, false);
    tb_error err;
    cr_assert_eq(tb_worker_start(&w, job, &s, &err), TB_OK, "%s", err.msg);
    tb_worker_wake(&w);
    wait_in_job(&s);
    tb_worker_wake(&w); /* pending behind the running one */
    set_gate(&s, true);
    int64_t runs = tb_worker_stop(&w); /* joins: the running job has finished */
    cr_assert(runs == 1 || runs == 2, "runs %lld", (long long)runs);
    cr_assert_eq(atomic_load(&s.runs), runs);
    tb_worker never;
    never.up = false;
    cr_assert_eq(tb_worker_stop(&never), 0, "stop of a worker never started");
}
