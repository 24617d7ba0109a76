/*
 * cache_ckpt: WAL checkpoints of the cache file on a thread of their own.
 *
 * In WAL mode with synchronous=NORMAL a commit does not fsync; the fsyncs
 * happen at checkpoints (the WAL before its pages are copied into the
 * database file, the database file after). SQLite's automatic checkpoint runs
 * them inside the commit that crossed wal_autocheckpoint, on the applying
 * thread: during a replay that thread waited on the disk for about a tenth
 * of its time. Here the commit's WAL hook only signals a second connection,
 * owned by a thread of its own, which runs PASSIVE checkpoints (they never
 * block the writer). Nothing changes in what is durable when: the same
 * checkpoints, with the same fsyncs, copy the same committed transactions;
 * only the waiting moved off the applying thread.
 *
 * Bounds: the writer starts the WAL over from its beginning only when a
 * checkpoint copied all of it before the writer's next transaction began,
 * which a thread running beside the writer rarely manages. So the thread
 * copies every CKPT_SOFT new frames, and the commit that finds the WAL at
 * CKPT_HARD frames (with the thread idle, or at twice that in any case)
 * checkpoints inline, as SQLite's automatic checkpoint would: it only has the
 * frames the thread has not copied yet, and the next transaction restarts the
 * WAL. The WAL cannot grow without bound.
 */
#include <stdlib.h>

#include "cache_int.h"
#include "tb_log.h"
#include "tb_worker.h"

#define CKPT_SOFT 4096   /* new WAL frames (pages) that wake the checkpoint thread */
#define CKPT_HARD 16384  /* WAL frames at which the committing thread checkpoints (and restarts the WAL) */

struct cache_ckpt {
    sqlite3 *db; /* the thread's own connection */
    tb_worker w;
    int mark;    /* writer only: WAL frames when the thread was last woken */
};

/* The worker's job: copy what the WAL holds now. */
static void ckpt_run(void *arg)
{
    cache_ckpt *k = arg;
    int log = 0, done = 0;
    int rc = sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        TB_WARN("cache", "background checkpoint: %s", sqlite3_errmsg(k->db));
    TB_DEBUG("cache", "background checkpoint: rc %d, %d of %d WAL frames copied", rc, done, log);
}

/* sqlite3_wal_hook: after every commit of the writer, on its thread. */
static int ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    cache_ckpt *k = arg;
    if (frames < k->mark) /* the WAL restarted */
        k->mark = 0;
    bool idle = tb_worker_idle(&k->w);
    if (frames < CKPT_HARD && frames - k->mark >= CKPT_SOFT && tb_worker_wake(&k->w))
        k->mark = frames;
    if (frames >= 2 * CKPT_HARD || (frames >= CKPT_HARD && idle)) {
        int log = 0, done = 0;
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        TB_DEBUG("cache", "inline checkpoint at %d WAL frames: %d copied", frames, done);
        k->mark = 0;
    }
    return SQLITE_OK;
}

tb_code cache_ckpt_start(cache_store *s, tb_error *err)
{
    tb_code rc;
    cache_ckpt *k = calloc(1, sizeof(*k));
    if (!k)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (sqlite3_open_v2(s->path, &k->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: opening the checkpoint connection: %s", s->path,
                          k->db ? sqlite3_errmsg(k->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(k->db, 1000);
    sqlite3_wal_autocheckpoint(k->db, 0);
    /* a connection opens the WAL at its first read: until then a checkpoint is a no-op */
    if (sqlite3_exec(k->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: the checkpoint connection cannot read: %s", s->path,
                          sqlite3_errmsg(k->db));
        goto fail;
    }
    if ((rc = tb_worker_start(&k->w, ckpt_run, k, err)) != TB_OK)
        goto fail;
    s->ckpt = k;
    sqlite3_wal_hook(s->db, ckpt_hook, k); /* replaces the automatic checkpoint */
    return TB_OK;
fail:
    sqlite3_close(k->db);
    free(k);
    return rc;
}

void cache_ckpt_stop(cache_store *s)
{
    cache_ckpt *k = s ? s->ckpt : NULL;
    if (!k)
        return;
    sqlite3_wal_hook(s->db, NULL, NULL);
    int64_t runs = tb_worker_stop(&k->w);
    TB_DEBUG("cache", "%s: %lld background checkpoints", s->path, (long long)runs);
    sqlite3_close(k->db);
    free(k);
    s->ckpt = NULL;
}
