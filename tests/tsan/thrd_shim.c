/*
 * thrd_shim: linked into the ThreadSanitizer builds only (TB_TSAN). librdkafka
 * starts its threads and takes its locks with C11 <threads.h>, which glibc
 * implements without going through the pthread functions that TSan intercepts:
 * TSan would crash in the first allocation of a librdkafka thread, and could
 * not see the locks that hand a message from librdkafka's threads to ours.
 * These definitions, exported by the executable, take precedence over glibc's
 * for librdkafka and call the pthread functions (glibc's C11 objects are the
 * pthread objects: mtx_t holds a pthread_mutex_t, cnd_t a pthread_cond_t).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

typedef struct shim_start {
    thrd_start_t fn;
    void *arg;
} shim_start;

static void *shim_main(void *p)
{
    shim_start s = *(shim_start *)p;
    free(p);
    return (void *)(intptr_t)s.fn(s.arg);
}

int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
    shim_start *s = malloc(sizeof(*s));
    if (!s)
        return thrd_nomem;
    s->fn = fn;
    s->arg = arg;
    pthread_t t;
    int rc = pthread_create(&t, NULL, shim_main, s);
    if (rc != 0) {
        free(s);
        return thrd_error;
    }
    *thr = (thrd_t)t;
    return thrd_success;
}

int thrd_join(thrd_t thr, int *res)
{
    void *r = NULL;
    if (pthread_join((pthread_t)thr, &r) != 0)
        return thrd_error;
    if (res)
        *res = (int)(intptr_t)r;
    return thrd_success;
}

int thrd_detach(thrd_t thr)
{
    return pthread_detach((pthread_t)thr) == 0 ? thrd_success : thrd_error;
}

static int c11(int rc)
{
    return rc == 0 ? thrd_success : rc == ETIMEDOUT ? thrd_timedout : rc == EBUSY ? thrd_busy : thrd_error;
}

int mtx_init(mtx_t *m, int type)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    if (type & mtx_recursive)
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    int rc = pthread_mutex_init((pthread_mutex_t *)m, &a);
    pthread_mutexattr_destroy(&a);
    return c11(rc);
}

int mtx_lock(mtx_t *m) { return c11(pthread_mutex_lock((pthread_mutex_t *)m)); }
int mtx_trylock(mtx_t *m) { return c11(pthread_mutex_trylock((pthread_mutex_t *)m)); }
int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts)
{
    return c11(pthread_mutex_timedlock((pthread_mutex_t *)m, ts));
}
int mtx_unlock(mtx_t *m) { return c11(pthread_mutex_unlock((pthread_mutex_t *)m)); }
void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

int cnd_init(cnd_t *c) { return c11(pthread_cond_init((pthread_cond_t *)c, NULL)); }
int cnd_signal(cnd_t *c) { return c11(pthread_cond_signal((pthread_cond_t *)c)); }
int cnd_broadcast(cnd_t *c) { return c11(pthread_cond_broadcast((pthread_cond_t *)c)); }
int cnd_wait(cnd_t *c, mtx_t *m) { return c11(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m)); }
int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict ts)
{
    return c11(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}
void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }
