/*
 * binlog_fetch: the thread that reads a replication connection (see
 * binlog_fetch.h for why it exists, ownership and bounds).
 *
 * QUEUE
 *  q[] is a ring of filled events, oldest at head; bytes is the sum of their
 *  raw sizes. spare[] holds emptied events for the thread to fill again
 *  (mariadb_rpl_fetch reuses an event it is given), so a stream allocates no
 *  event objects once the queue has been full once. One mutex guards all of
 *  it. Each side signals the other only when it is known to wait: the
 *  decoding thread is woken by every event that arrives while it waits (its
 *  latency matters); the fetching thread, when the queue is full, only once
 *  it has drained to half, so a catch-up does not pay a wake-up per event.
 */
#include "binlog_fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct bl_fetch {
    pthread_mutex_t mu;
    pthread_cond_t ready; /* the decoding thread waits for an event */
    pthread_cond_t space; /* the fetching thread waits for room in the queue */
    pthread_t th;
    MYSQL *mysql;
    MARIADB_RPL *rpl;
    int wake; /* a duplicate of the connection's socket descriptor: Connector/C closes its own
               * when a read fails, and the number may be reused before the stop */
    MARIADB_RPL_EVENT *q[BL_FETCH_QUEUE];
    size_t head, count, bytes;
    MARIADB_RPL_EVENT *spare[BL_FETCH_QUEUE + 1];
    size_t nspare;
    MARIADB_RPL_EVENT *held; /* given out by bl_fetch_next */
    bool stop, ended, want_ready, want_space;
    unsigned code;
    char msg[512];
};

static bool bl_fetch_full(const bl_fetch *f)
{
    return f->count == BL_FETCH_QUEUE || (f->count > 0 && f->bytes >= BL_FETCH_QUEUE_BYTES);
}

static void *bl_fetch_main(void *arg)
{
    bl_fetch *f = arg;
    mysql_thread_init();
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && bl_fetch_full(f)) {
            f->want_space = true;
            pthread_cond_wait(&f->space, &f->mu);
        }
        f->want_space = false;
        if (f->stop)
            break;
        MARIADB_RPL_EVENT *ev = f->nspare ? f->spare[--f->nspare] : NULL;
        pthread_mutex_unlock(&f->mu);
        MARIADB_RPL_EVENT *got = mariadb_rpl_fetch(f->rpl, ev);
        unsigned code = 0;
        char msg[sizeof f->msg] = "";
        if (!got) {
            code = mysql_errno(f->mysql);
            snprintf(msg, sizeof msg, "%s", code ? mysql_error(f->mysql) : "the server ended the binlog stream");
            /* a failed fetch has freed the event it was given */
        }
        pthread_mutex_lock(&f->mu);
        if (!got) {
            f->ended = true;
            f->code = code;
            memcpy(f->msg, msg, sizeof msg);
        } else {
            f->q[(f->head + f->count) % BL_FETCH_QUEUE] = got;
            f->count++;
            f->bytes += got->raw_data_size;
        }
        if (f->want_ready)
            pthread_cond_signal(&f->ready);
        if (f->ended)
            break;
    }
    pthread_mutex_unlock(&f->mu);
    mysql_thread_end();
    return NULL;
}

tb_code bl_fetch_start(MYSQL *mysql, MARIADB_RPL *rpl, bl_fetch **out, tb_error *err)
{
    *out = NULL;
    bl_fetch *f = calloc(1, sizeof(*f));
    if (!f)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    f->mysql = mysql;
    f->rpl = rpl;
    if ((f->wake = fcntl((int)mysql_get_socket(mysql), F_DUPFD_CLOEXEC, 0)) < 0) {
        int e = errno;
        free(f);
        return tb_error_set(err, TB_ERR_SOURCE, true, "binlog connection: cannot duplicate its socket: %s",
                            strerror(e));
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->ready, &ca);
    pthread_cond_init(&f->space, NULL);
    pthread_condattr_destroy(&ca);
    /* the process's signals (a stop request) go to the threads that handle them,
     * not this one; faults stay deliverable */
    sigset_t async, old;
    sigemptyset(&async);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&async, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &async, &old);
    int e = pthread_create(&f->th, NULL, bl_fetch_main, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_cond_destroy(&f->ready);
        pthread_cond_destroy(&f->space);
        pthread_mutex_destroy(&f->mu);
        close(f->wake);
        free(f);
        return tb_error_set(err, TB_ERR_SOURCE, false, "cannot start the binlog reading thread: %s", strerror(e));
    }
    *out = f;
    return TB_OK;
}

bl_fetch_rc bl_fetch_next(bl_fetch *f, int timeout_ms, MARIADB_RPL_EVENT **ev, unsigned *code, const char **msg)
{
    *ev = NULL;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    MARIADB_RPL_EVENT *drop = NULL;
    pthread_mutex_lock(&f->mu);
    if (f->held) {
        if (f->nspare < sizeof f->spare / sizeof f->spare[0])
            f->spare[f->nspare++] = f->held;
        else
            drop = f->held;
        f->held = NULL;
    }
    bl_fetch_rc rc = BL_FETCH_TIMEOUT;
    while (f->count == 0 && !f->ended && timeout_ms > 0) {
        f->want_ready = true;
        int w = pthread_cond_timedwait(&f->ready, &f->mu, &until);
        f->want_ready = false;
        if (w == ETIMEDOUT)
            break;
    }
    if (f->count > 0) {
        f->held = *ev = f->q[f->head];
        f->head = (f->head + 1) % BL_FETCH_QUEUE;
        f->count--;
        f->bytes -= f->held->raw_data_size;
        if (f->want_space && f->count <= BL_FETCH_QUEUE / 2 && f->bytes <= BL_FETCH_QUEUE_BYTES / 2)
            pthread_cond_signal(&f->space);
        rc = BL_FETCH_EVENT;
    } else if (f->ended) {
        *code = f->code;
        *msg = f->msg;
        rc = BL_FETCH_END;
    }
    pthread_mutex_unlock(&f->mu);
    if (drop)
        mariadb_free_rpl_event(drop);
    return rc;
}

bool bl_fetch_peer_closed(bl_fetch *f)
{
    struct pollfd pfd = {.fd = f->wake, .events = POLLRDHUP};
    return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void bl_fetch_stop(bl_fetch *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->space);
    pthread_mutex_unlock(&f->mu);
    /* wakes a read blocked in the thread (it then sees end of stream); the
     * write side stays open, so closing the connection can still say goodbye */
    shutdown(f->wake, SHUT_RD);
    pthread_join(f->th, NULL);
    close(f->wake);
    for (size_t i = 0; i < f->count; i++)
        mariadb_free_rpl_event(f->q[(f->head + i) % BL_FETCH_QUEUE]);
    for (size_t i = 0; i < f->nspare; i++)
        mariadb_free_rpl_event(f->spare[i]);
    if (f->held)
        mariadb_free_rpl_event(f->held);
    pthread_cond_destroy(&f->ready);
    pthread_cond_destroy(&f->space);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
