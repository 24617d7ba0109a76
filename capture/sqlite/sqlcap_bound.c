/*
 * sqlcap_bound: the bounded WAL (sqlite-wal.md 2.13): reset windows without a
 * lock and under the write barrier, and naming what keeps the WAL from being
 * reset when it cannot be (an application's read transaction, its write
 * lock, a reader behind).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap_priv.h"
#include "tb_log.h"

#define SQLCAP_WINDOW_MS 100     /* windows without a lock are tried at most this often */
#define SQLCAP_BARRIER_MS 20     /* barrier windows at most this often */
#define SQLCAP_CATCHUP_MS 200    /* consuming without the lock before the barrier, at most */
#define SQLCAP_BARRIER_LAG 256   /* tier 2: no barrier while more frames than this are left */
#define SQLCAP_LOCK_WAIT_MS 200  /* tier 2: wait this long for the write lock ... */
#define SQLCAP_LOCK_HARD_MS 2000 /* ... tier 3 this long */
#define SQLCAP_PINNER_MS 1000    /* an outside read transaction held this long is named */
#define SQLCAP_BOUND_WARN_MS 10000
#define SQLCAP_BOUND_CHECK_MS 20 /* while events wait for the consumer: the bound checked this often */
#define SQLCAP_WINDOW_QUEUE 50000 /* ... and no window with more events than this waiting */

/* The -shm lock bytes (SQLite's unix VFS): WAL_WRITE_LOCK at 120, WAL_READ_LOCK(i) at 123 + i. */
#define SQLCAP_SHM_WRITE_LOCK 120
#define SQLCAP_SHM_READ_LOCK(i) (123 + (i))

sqlite3 *sqlcap_rw_conn(sqlcap *c)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    /* a connection learns the database is in WAL mode only when it first reads
     * it: until then sqlite3_wal_checkpoint_v2 does nothing (log = -1) */
    sqlite3_busy_timeout(db, 1000);
    sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
    return db;
}

/* W's busy handler: try again every 100 us until c->w_deadline_us. SQLite's
 * own handler sleeps 1, 2, 5, 10 ... ms between attempts, and a writer that
 * begins its next transaction right after a commit leaves the lock free for
 * tens of microseconds: with those sleeps W would hardly ever get it. */
static int sqlcap_w_busy(void *p, int n)
{
    sqlcap *c = p;
    (void)n;
    if (tb_mono_us() >= c->w_deadline_us)
        return 0;
    struct timespec ts = {0, 100000L};
    nanosleep(&ts, NULL);
    return 1;
}

/* Bytes the current generation of the WAL holds. */
static uint64_t sqlcap_wal_used(const sqlcap *c, const sqlcap_shmhdr *h)
{
    return 32 + (uint64_t)h->mxframe * (c->pg.pgsz + 24);
}

/*
 * Which reset window is due after a poll that read h: 0 none, 1 a window
 * without a lock (PASSIVE checkpoint up to the pin, then a leapfrog into lock
 * 0; only when caught up), 2 the same under the write barrier once the reader
 * has (nearly) caught up without it, 3 the barrier now, however far behind (the
 * writer waits while the reader consumes the rest: the last resort). With the
 * bound: from a quarter, three eighths and half of it; with
 * source.sqlite.checkpoint=on|barrier tier 1|2 from 1000 frames. None while
 * everything is backfilled (the next leapfrog takes lock 0 by itself).
 */
static int sqlcap_window_due(const sqlcap *c, const sqlcap_shmhdr *h)
{
    if (c->in_window || c->o.offline || h->nbackfill >= h->mxframe || h->salt1 != c->salt1 ||
        h->salt2 != c->salt2)
        return 0;
    int want = 0;
    if (c->o.checkpoint && h->mxframe >= 1000)
        want = c->o.checkpoint_barrier ? 2 : 1;
    uint64_t used = sqlcap_wal_used(c, h), max = (uint64_t)c->o.wal_max_bytes;
    if (max && used >= max / 4) {
        int t = used >= max / 2 ? 3 : used >= max / 8 * 3 ? 2 : 1;
        want = t > want ? t : want;
    }
    return want;
}

bool sqlcap_window_ready(const sqlcap *c, const sqlcap_shmhdr *h, int64_t now)
{
    int want = sqlcap_window_due(c, h);
    return want && now - c->last_ckpt_ms >= (want >= 2 ? SQLCAP_BARRIER_MS : SQLCAP_WINDOW_MS);
}

/* Say (WARN, at most every 10 s) why the WAL holds more than the bound. */
void sqlcap_bound_warn(sqlcap *c, const sqlcap_shmhdr *h, int64_t now)
{
    uint64_t used = sqlcap_wal_used(c, h), max = (uint64_t)c->o.wal_max_bytes;
    if (!max || used <= max || now - c->bound_warn_ms < SQLCAP_BOUND_WARN_MS)
        return;
    c->bound_warn_ms = now;
    if (!c->bound_cause[0])
        snprintf(c->bound_cause, sizeof c->bound_cause,
                 "the writer filled the last half of the bound before the reader had the write lock (the reader is "
                 "%u frames behind; it was not scheduled or was busy meanwhile)",
                 h->mxframe > c->frame ? h->mxframe - c->frame : 0);
    TB_WARN(SQLCAP_FAC, "%s: the WAL holds %llu bytes, more than source.sqlite.wal.max.bytes=%llu: %s", c->path,
            (unsigned long long)used, (unsigned long long)max, c->bound_cause);
}

/*
 * After a checkpoint under the write barrier left frames not backfilled while
 * the reader had consumed everything: a read transaction of another process
 * keeps it below mxFrame (a read mark below it, or lock 0, which blocks every
 * backfill). F_GETLK reports only other processes' locks, so the reader's own
 * read transactions are not seen. Records the cause and WARNs once it has held
 * SQLCAP_PINNER_MS (an application's writer holds a read lock briefly).
 */
static void sqlcap_find_pinner(sqlcap *c, const sqlcap_shmhdr *h, int64_t now)
{
    int pid = 0, slot = -1;
    uint32_t mark = 0;
    for (int i = 0; i < 5; i++) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SQLCAP_SHM_READ_LOCK(i), .l_len = 1};
        if (fcntl(c->shmfd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
            continue;
        uint32_t m = i == 0 ? h->nbackfill : h->readmark[i];
        if (i > 0 && m >= h->mxframe)
            continue; /* does not hold the checkpoint back */
        if (slot < 0 || m < mark) {
            pid = (int)fl.l_pid;
            slot = i;
            mark = m;
        }
    }
    if (slot < 0) {
        c->pinner_pid = 0;
        return;
    }
    if (pid != c->pinner_pid || mark != c->pinner_mark || slot != c->pinner_slot) {
        c->pinner_pid = pid;
        c->pinner_mark = mark;
        c->pinner_slot = slot;
        c->pinner_since_ms = now;
        return;
    }
    int64_t held = now - c->pinner_since_ms;
    if (held < SQLCAP_PINNER_MS)
        return;
    snprintf(c->bound_cause, sizeof c->bound_cause,
             "process pid %d holds a read transaction on the database (WAL read lock %d%s, frame %u of %u) for "
             "%lld.%lld s at least: SQLite cannot checkpoint past it, so nothing can reset the WAL until it ends",
             pid, slot, slot == 0 ? ": it reads the database file only and blocks every checkpoint" : "", mark,
             h->mxframe, (long long)(held / 1000), (long long)(held % 1000 / 100));
    if (now - c->pinner_warn_ms >= SQLCAP_BOUND_WARN_MS) {
        c->pinner_warn_ms = c->bound_warn_ms = now; /* one WARN for this cause */
        TB_WARN(SQLCAP_FAC, "%s: the WAL (%llu bytes, bound %lld) cannot be reset: %s", c->path,
                (unsigned long long)sqlcap_wal_used(c, h), (long long)c->o.wal_max_bytes, c->bound_cause);
    }
}

/* The process holding the WAL write lock (0 if none seen). */
static int sqlcap_writer_pid(const sqlcap *c)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SQLCAP_SHM_WRITE_LOCK, .l_len = 1};
    if (fcntl(c->shmfd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
        return 0;
    return (int)fl.l_pid;
}

/* Consume in a window (no batch limit) until caught up with the wal-index or
 * until deadline_ms; *h gets the last header read. */
static tb_code sqlcap_catch_up(sqlcap *c, int64_t deadline_ms, sqlcap_shmhdr *h, tb_error *err)
{
    tb_code rc;
    c->in_window = true;
    do {
        if ((rc = sqlcap_poll(c, err)) != TB_OK || (rc = sqlcap_shm(c, h, err)) != TB_OK)
            break;
    } while (h->mxframe > c->frame && h->salt1 == c->salt1 && h->salt2 == c->salt2 && tb_mono_ms() < deadline_ms);
    c->in_window = false;
    return rc;
}

/* Take the write lock on W (queueing for it like a writer, retrying every
 * 100 us for up to wait_ms). On failure the cause names the lock's holder. */
static bool sqlcap_lock_take(sqlcap *c, int wait_ms)
{
    if (!c->W && !(c->W = sqlcap_rw_conn(c)))
        return false;
    c->w_deadline_us = tb_mono_us() + (int64_t)wait_ms * 1000;
    sqlite3_busy_handler(c->W, sqlcap_w_busy, c);
    if (sqlite3_exec(c->W, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(c->W, "ROLLBACK", NULL, NULL, NULL);
        int pid = sqlcap_writer_pid(c);
        snprintf(c->bound_cause, sizeof c->bound_cause,
                 "the write lock could not be taken within %d ms (held by %s%d: an application transaction that "
                 "stays open, or a writer without pauses)", wait_ms, pid ? "pid " : "no process seen, ", pid);
        return false;
    }
    c->w_held = true;
    c->w_since_us = tb_mono_us();
    c->st.barriers++;
    return true;
}

/*
 * The window under the write lock (held: c->w_held): consume what was
 * committed before it (at most a second: the application's writers wait with
 * their busy timeout), checkpoint the rest (nothing can commit or reset the
 * WAL meanwhile, so the window cannot be missed unless another process's
 * read transaction holds the checkpoint back: then it is named), leapfrog
 * into lock 0 so the application's next commit rewinds the WAL, release.
 */
static void sqlcap_window_locked(sqlcap *c)
{
    tb_error e;
    sqlcap_shmhdr hb;
    int log = 0, ck = 0;
    int64_t t_consumed = 0, t_ckpt = 0;
    if (!c->K && !(c->K = sqlcap_rw_conn(c)))
        goto out;
    if (sqlcap_shm(c, &hb, NULL) == TB_OK && hb.mxframe == c->frame && hb.nbackfill == hb.mxframe &&
        hb.salt1 == c->salt1 && hb.salt2 == c->salt2 && c->pin_frame == c->frame) {
        /* nothing committed since: everything is backfilled, leapfrog at once */
        log = ck = (int)c->frame;
        t_consumed = t_ckpt = tb_mono_us();
    } else {
        tb_code rc = sqlcap_catch_up(c, tb_mono_ms() + 1000, &hb, &e);
        t_consumed = tb_mono_us();
        if (rc != TB_OK || hb.mxframe != c->frame || hb.salt1 != c->salt1 || hb.salt2 != c->salt2) {
            if (rc == TB_OK && hb.mxframe != c->frame)
                snprintf(c->bound_cause, sizeof c->bound_cause,
                         "the reader is %u frames behind the writer (it consumes more slowly than the application "
                         "writes)", hb.mxframe - c->frame);
            goto out;
        }
        /* the application's own checkpoint after its last commit may still hold
         * the checkpoint lock (PASSIVE never waits): retry briefly */
        int r = SQLITE_BUSY;
        for (int k = 0; k < 20 && r == SQLITE_BUSY; k++) {
            if (k)
                sqlcap_sleep_ms(1);
            log = ck = 0;
            r = sqlite3_wal_checkpoint_v2(c->K, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck);
        }
        t_ckpt = tb_mono_us();
        TB_DEBUG(SQLCAP_FAC, "%s: PASSIVE checkpoint under the barrier: %s, log=%d checkpointed=%d", c->path,
                 sqlite3_errstr(r), log, ck);
        if (r == SQLITE_OK && log > 0 && ck < log && (uint32_t)log == c->frame && sqlcap_shm(c, &hb, NULL) == TB_OK)
            sqlcap_find_pinner(c, &hb, tb_mono_ms()); /* someone else keeps the backfill below mxFrame */
    }
    if (log <= 0 || log != ck || c->protector < 0 || (uint32_t)log != c->frame)
        goto out;
    c->pinner_pid = 0;
    /* Everything is backfilled: leapfrog now, so the new read transaction takes
     * WAL_READ_LOCK(0) and the writer's next commit can rewind the WAL. The
     * old pin is released only if no frame was appended meanwhile (else the
     * new mark could be above P). */
    int j = 1 - c->protector;
    sqlcap_shmhdr h2;
    if (sqlcap_begin(c, j, NULL) != TB_OK)
        goto out;
    if (sqlcap_shm(c, &h2, NULL) == TB_OK && h2.mxframe == c->frame && h2.nbackfill == h2.mxframe &&
        h2.salt1 == c->salt1 && h2.salt2 == c->salt2) {
        sqlcap_end(c, c->protector);
        c->protector = j;
        c->st.windows++;
        c->pin_frame = h2.mxframe;
        c->last_pin_ms = 0; /* probably lock 0: not kept by the coarse pin */
        c->bound_cause[0] = 0;
    } else {
        sqlcap_end(c, j);
    }
out:
    sqlite3_exec(c->W, "ROLLBACK", NULL, NULL, NULL);
    c->w_held = false;
    int64_t t_end = tb_mono_us();
    uint64_t us = (uint64_t)(t_end - c->w_since_us);
    TB_DEBUG(SQLCAP_FAC, "%s: write barrier held %lld us (consume %lld, checkpoint %lld, leapfrog %lld)", c->path,
             (long long)us, (long long)(t_consumed ? t_consumed - c->w_since_us : 0),
             (long long)(t_ckpt ? t_ckpt - t_consumed : 0), (long long)(t_ckpt ? t_end - t_ckpt : 0));
    c->st.barrier_us += us;
    if (us > c->st.barrier_max_us)
        c->st.barrier_max_us = us;
}

void sqlcap_bound_hard(sqlcap *c)
{
    if (!c->o.wal_max_bytes || c->w_held || c->o.offline || c->protector < 0)
        return;
    sqlcap_shmhdr h;
    if (sqlcap_shm_read(c->shmfd, &h, NULL) != TB_OK || h.salt1 != c->salt1 || h.salt2 != c->salt2 ||
        h.nbackfill >= h.mxframe)
        return;
    uint64_t max = (uint64_t)c->o.wal_max_bytes;
    if (sqlcap_wal_used(c, &h) < max / 2)
        return;
    (void)sqlcap_lock_take(c, SQLCAP_LOCK_HARD_MS); /* the poll finishes the window (sqlcap_bound_finish) */
}

void sqlcap_bound_finish(sqlcap *c)
{
    if (c->w_held && !c->in_window)
        sqlcap_window_locked(c);
}

void sqlcap_maybe_checkpoint(sqlcap *c, const sqlcap_shmhdr *h)
{
    int want = sqlcap_window_due(c, h);
    bool barrier = want >= 2;
    int64_t now = tb_mono_ms();
    sqlcap_bound_warn(c, h, now);
    if (c->w_held && !c->in_window) {
        sqlcap_window_locked(c); /* taken while consuming (sqlcap_bound_hard) */
        return;
    }
    if (!want || c->protector < 0 || !sqlcap_window_ready(c, h, now))
        return;
    /* without a lock only when caught up with what this poll read: the window
     * needs a pin at mxFrame */
    if (!barrier && c->frame != h->mxframe)
        return;
    c->last_ckpt_ms = now;
    if (!c->K && !(c->K = sqlcap_rw_conn(c)))
        return;
    /* Our pin is a read mark (it began while the WAL was not fully backfilled),
     * so no reset can run while this checkpoint does (the WAL-reset bug of
     * SQLite < 3.51.3 needs one, sqlite-wal.md 1.10); under lock 0 it would
     * backfill nothing. */
    int log = 0, ck = 0;
    sqlite3_wal_checkpoint_v2(c->K, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck);
    TB_DEBUG(SQLCAP_FAC, "%s: PASSIVE checkpoint log=%d checkpointed=%d", c->path, log, ck);
    if (!barrier) {
        if (log <= 0 || log != ck || (uint32_t)log != c->frame)
            return;
        /* Everything is backfilled: leapfrog now (lock 0); the old pin is
         * released only if no frame was appended meanwhile. */
        int j = 1 - c->protector;
        sqlcap_shmhdr h2;
        if (sqlcap_begin(c, j, NULL) != TB_OK)
            return;
        if (sqlcap_shm(c, &h2, NULL) == TB_OK && h2.mxframe == c->frame && h2.nbackfill == h2.mxframe &&
            h2.salt1 == c->salt1 && h2.salt2 == c->salt2) {
            sqlcap_end(c, c->protector);
            c->protector = j;
            c->st.windows++;
            c->pin_frame = h2.mxframe;
            c->last_pin_ms = 0; /* probably lock 0: not kept by the coarse pin */
        } else {
            sqlcap_end(c, j);
        }
        return;
    }
    /* First, without any lock, consume what was committed meanwhile (for up
     * to SQLCAP_CATCHUP_MS), backfill that too and flush the database and the
     * WAL, so that the window under the write lock finds (almost) nothing left
     * to do: the application waits less. A consume that finds the WAL near the
     * bound takes the lock itself (sqlcap_bound_hard). */
    tb_error e;
    sqlcap_shmhdr hb;
    if (sqlcap_catch_up(c, now + SQLCAP_CATCHUP_MS, &hb, &e) != TB_OK && !c->w_held)
        return; /* an error here comes again at the next poll */
    if (!c->w_held) {
        if (hb.salt1 != c->salt1 || hb.salt2 != c->salt2)
            return; /* the WAL was reset meanwhile */
        int w2 = sqlcap_window_due(c, &hb);
        want = w2 > want ? w2 : want;
        if (want < 3 && hb.mxframe - c->frame > SQLCAP_BARRIER_LAG) {
            snprintf(c->bound_cause, sizeof c->bound_cause,
                     "the reader is %u frames behind the writer (it consumes more slowly than the application writes)",
                     hb.mxframe - c->frame);
            return; /* behind: the writer would wait for the rest; tier 3 takes the lock anyway */
        }
        sqlite3_wal_checkpoint_v2(c->K, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck);
        /* the syncs SQLite does under the lock are then short; not in the last
         * tier, where the lock is needed before the writer fills the rest */
        if (want < 3 && (fdatasync(c->dbfd) != 0 || fdatasync(c->walfd) != 0))
            TB_DEBUG(SQLCAP_FAC, "%s: fdatasync before the barrier: %s", c->path, strerror(errno));
        if (!sqlcap_lock_take(c, want >= 3 ? SQLCAP_LOCK_HARD_MS : SQLCAP_LOCK_WAIT_MS))
            return;
    }
    sqlcap_window_locked(c);
}

void sqlcap_bound_check(sqlcap *c)
{
    if (!c->o.wal_max_bytes || c->in_window || c->o.offline || c->protector < 0)
        return;
    int64_t now = tb_mono_ms();
    if (now - c->bound_check_ms < SQLCAP_BOUND_CHECK_MS)
        return;
    c->bound_check_ms = now;
    sqlcap_shmhdr h;
    if (sqlcap_shm_read(c->shmfd, &h, NULL) != TB_OK)
        return;
    bool newgen = h.salt1 != c->salt1 || h.salt2 != c->salt2;
    uint64_t max = (uint64_t)c->o.wal_max_bytes;
    if (!newgen && (h.mxframe <= c->frame || sqlcap_wal_used(c, &h) < max / 4))
        return;
    size_t queued = c->evq.n - c->evq.next;
    if (queued > SQLCAP_WINDOW_QUEUE) {
        snprintf(c->bound_cause, sizeof c->bound_cause,
                 "%zu events wait for the consumer (the sink is slower than the application writes)", queued);
        sqlcap_bound_warn(c, &h, now);
        return;
    }
    /* Consume ahead (one batch, queued behind the waiting events): a new
     * generation is switched to at once (the pin taken in the window, lock 0,
     * blocks every backfill until then), and a window finds little left. */
    tb_error e;
    size_t base = c->ahead_base;
    c->ahead_base = c->evq.n;
    tb_code rc = sqlcap_poll(c, &e); /* tries the window that is due; an error comes again at the next poll */
    c->ahead_base = base;
    (void)rc;
}
