/*
 * sqlcap_watch: the database file and its WAL checked between polls (at most
 * every 250 ms; sqlite-wal.md 2.14):
 * - the database file replaced (another inode at source.path, e.g. `mv new.db
 *   app.db`) or deleted, or its WAL: the reader closes its connections (it
 *   pins nothing of the old files any more) and fails with TB_ERR_STATE
 *   naming the recovery;
 * - the application gone (no other process holds a lock on the database
 *   file, i.e. its last connection closed; the reader's SHARED lock kept that
 *   close from checkpointing and removing the WAL): once the reader has read
 *   everything, it backfills the WAL completely (a leapfrog to mxFrame, then
 *   a PASSIVE checkpoint). A fully backfilled WAL is never read again: a
 *   connection to a file that replaced the database ignores frames at or below
 *   nBackfill and restarts the WAL at its first write, so the old frames can
 *   no longer be applied to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlcap_priv.h"
#include "tb_log.h"

#define SQLCAP_WATCH_MS 250
/* SQLite's unix VFS: a SHARED lock is a read lock on 510 bytes after PENDING_BYTE + 2 */
#define SQLCAP_SHARED_FIRST (0x40000000 + 2)
#define SQLCAP_SHARED_SIZE 510

static void sqlcap_conns_close(sqlcap *c)
{
    sqlcap_end(c, 0);
    sqlcap_end(c, 1);
    c->protector = -1;
    sqlite3 **all[] = {&c->R[0], &c->R[1], &c->K, &c->W};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_close(*all[i]);
        *all[i] = NULL;
    }
}

/* Whether another process holds a lock on the database file (F_GETLK sees
 * only other processes' locks): every open connection in WAL mode holds SHARED. */
static bool sqlcap_app_attached(const sqlcap *c)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SQLCAP_SHARED_FIRST,
                       .l_len = SQLCAP_SHARED_SIZE};
    if (fcntl(c->dbfd, F_GETLK, &fl) != 0)
        return true; /* unknown: assume it is */
    return fl.l_type != F_UNLCK;
}

/* The application has no connection: backfill everything the reader has read. */
static void sqlcap_backfill_idle(sqlcap *c)
{
    sqlcap_shmhdr h;
    if (c->protector < 0 || sqlcap_shm_read(c->shmfd, &h, NULL) != TB_OK || h.salt1 != c->salt1 ||
        h.salt2 != c->salt2 || h.mxframe != c->frame || h.nbackfill >= h.mxframe || sqlcap_app_attached(c))
        return;
    if (c->pin_frame != h.mxframe) {
        c->last_pin_ms = 0; /* the next poll leapfrogs to mxFrame; the checkpoint follows at the next check */
        return;
    }
    if (!c->K && !(c->K = sqlcap_rw_conn(c)))
        return;
    /* our pin is a read mark at mxFrame (not lock 0: nBackfill < mxFrame when it began),
     * so no reset can overlap this checkpoint (sqlite-wal.md 1.10) */
    int log = 0, ck = 0;
    int r = sqlite3_wal_checkpoint_v2(c->K, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck);
    TB_DEBUG(SQLCAP_FAC, "%s: the application has no connection: PASSIVE checkpoint %s, log=%d checkpointed=%d",
             c->path, sqlite3_errstr(r), log, ck);
}

tb_code sqlcap_watch(sqlcap *c, tb_error *err)
{
    if (c->trig || c->o.offline || c->dbfd < 0 || c->walfd < 0)
        return TB_OK;
    int64_t now = tb_mono_ms();
    if (now - c->watch_ms < SQLCAP_WATCH_MS)
        return TB_OK;
    c->watch_ms = now;
    char *wal = sqlcap_strcat3(c->path, "-wal");
    if (!wal)
        return TB_OK;
    struct stat db_fd, db_path, wal_fd, wal_path;
    int rdb = stat(c->path, &db_path), edb = errno;
    int rwal = stat(wal, &wal_path), ewal = errno;
    free(wal);
    if (fstat(c->dbfd, &db_fd) != 0 || fstat(c->walfd, &wal_fd) != 0)
        return TB_OK;
    const char *what = NULL, *how = NULL;
    uint64_t was = 0, now_ino = 0;
    if (rdb != 0 && edb == ENOENT) {
        what = "database file", how = "deleted", was = (uint64_t)db_fd.st_ino;
    } else if (rdb == 0 && (db_path.st_ino != db_fd.st_ino || db_path.st_dev != db_fd.st_dev)) {
        what = "database file", how = "replaced", was = (uint64_t)db_fd.st_ino, now_ino = (uint64_t)db_path.st_ino;
    } else if (rwal != 0 && ewal == ENOENT) {
        what = "WAL", how = "deleted", was = (uint64_t)wal_fd.st_ino;
    } else if (rwal == 0 && (wal_path.st_ino != wal_fd.st_ino || wal_path.st_dev != wal_fd.st_dev)) {
        what = "WAL", how = "replaced", was = (uint64_t)wal_fd.st_ino, now_ino = (uint64_t)wal_path.st_ino;
    }
    if (!what) {
        sqlcap_backfill_idle(c);
        return TB_OK;
    }
    sqlcap_conns_close(c); /* pin nothing of the old files */
    bool db = what[0] == 'd', deleted = how[0] == 'd';
    TB_ERROR(SQLCAP_FAC, "%s: the %s was %s while the reader ran", c->path, what, how);
    return tb_error_set(
        err, TB_ERR_STATE, false, "%s: the %s was %s (inode %llu%s%llu): the capture of that file ends here. Recovery: %s",
        c->path, what, how, (unsigned long long)was, deleted ? "" : ", now inode ", deleted ? 0ull : (unsigned long long)now_ino,
        db && deleted ? "restore the file and restart; the stored position and the shadow copy belong to it"
        : db          ? "restart with snapshot.mode=when_needed: the stored position and the shadow copy belong to "
                        "the old file, so the new one is snapshotted"
                      : "restart: with the shadow copy (source.sqlite.shadow=on) the changes the removed WAL held are "
                        "sent as one net-diff gap transaction; without it a snapshot is needed");
}
