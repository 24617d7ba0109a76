/*
 * sqlcap_poll: reading committed frames (sqlite-wal.md 2.3) and the polling
 * step under the leapfrog pin (2.2), generations (2.10), the optional PASSIVE
 * reset windows (2.9). Split out of sqlcap.c (lifecycle, resume, API).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlcap_priv.h"
#include "tb_log.h"

/* coarse pin by default: the pin advances at most every SQLCAP_REPIN_MS while no
 * reset window is possible (sqlite-wal.md 5 "Coarse pin"). Each advance lets the
 * application's next autocheckpoint backfill (walIteratorInit over the
 * un-backfilled hash segments, a copy, an fdatasync of the WAL): with a writer
 * the reader keeps up with, advancing at every poll made that happen at almost
 * every commit (writer fdatasync 494 vs 90 without a reader, 6000 commits) */
#define SQLCAP_REPIN_MS 1000
/* ... but once the writer has been idle this long, the pin moves up to mxFrame
 * at once (if it is not there), so an application checkpoint can then backfill
 * everything: a FULL/RESTART/TRUNCATE checkpoint waits (busy handler) for read
 * marks below mxFrame, and a lock-0 reset window needs a full backfill */
#define SQLCAP_IDLE_REPIN_MS 100

/* frames of one sqlcap_consume read through a mapping of the WAL of at most this size */
#define SQLCAP_WALMAP_BYTES ((size_t)256 << 20)

/* ---------------------------------------------------------------- frames */

static void sqlcap_frame_parse(const uint8_t *h, sqlcap_frame *f)
{
    f->pgno = sqlcap_be32(h);
    f->commit = sqlcap_be32(h + 4);
    f->salt1 = sqlcap_be32(h + 8);
    f->salt2 = sqlcap_be32(h + 12);
    f->ck1 = sqlcap_be32(h + 16);
    f->ck2 = sqlcap_be32(h + 20);
}

tb_code sqlcap_frame_hdr(sqlcap *c, uint32_t i, sqlcap_frame *f, uint8_t *page, tb_error *err)
{
    uint8_t hb[24], *h = hb;
    off_t off = 32 + (off_t)(i - 1) * (c->pg.pgsz + 24);
    if (page) {
        /* header and page in one read: page points 24 bytes into a pgsz+24 buffer */
        h = page - 24;
        if (pread(c->walfd, h, c->pg.pgsz + 24, off) != (ssize_t)c->pg.pgsz + 24)
            return tb_error_set(err, TB_ERR_IO, true, "%s-wal: read frame %u at offset %lld", c->path, i,
                                (long long)off);
    } else if (pread(c->walfd, h, 24, off) != 24) {
        return tb_error_set(err, TB_ERR_IO, true, "%s-wal: read frame %u header at offset %lld", c->path, i,
                            (long long)off);
    }
    sqlcap_frame_parse(h, f);
    return TB_OK;
}

/*
 * The WAL bytes of frames from+1 .. upto, mapped read-only (as far as the file
 * and SQLCAP_WALMAP_BYTES reach), so sqlcap_consume reads frames without a
 * pread copy each. Only under the pin: frames after the consumed position
 * cannot be backfilled, so no reset or truncation can shrink the file under
 * them while they are read (sqlite-wal.md 2.2; a truncation under a mapping
 * would be SIGBUS). *m receives the mapping, or NULL (then pread).
 */
typedef struct sqlcap_walmap {
    uint8_t *base;
    size_t len;
    off_t off;
} sqlcap_walmap;

static void sqlcap_walmap_open(sqlcap *c, uint32_t from, uint32_t upto, sqlcap_walmap *m)
{
    struct stat sb;
    long ps = sysconf(_SC_PAGESIZE);
    off_t lo = 32 + (off_t)from * (c->pg.pgsz + 24), hi = 32 + (off_t)upto * (c->pg.pgsz + 24);
    memset(m, 0, sizeof *m);
    if (ps <= 0 || upto <= from || fstat(c->walfd, &sb) != 0)
        return;
    if (hi > sb.st_size)
        hi = sb.st_size;
    m->off = lo & ~(off_t)(ps - 1);
    if (hi <= m->off)
        return;
    m->len = (size_t)(hi - m->off) < SQLCAP_WALMAP_BYTES ? (size_t)(hi - m->off) : SQLCAP_WALMAP_BYTES;
    void *p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, c->walfd, m->off);
    if (p == MAP_FAILED) {
        memset(m, 0, sizeof *m);
        return;
    }
    (void)madvise(p, m->len, MADV_SEQUENTIAL);
    m->base = p;
}

/* Frame i (header then page) inside the mapping, or NULL. */
static const uint8_t *sqlcap_walmap_frame(const sqlcap *c, const sqlcap_walmap *m, uint32_t i)
{
    off_t off = 32 + (off_t)(i - 1) * (c->pg.pgsz + 24);
    if (!m->base || off < m->off || off + (off_t)c->pg.pgsz + 24 > m->off + (off_t)m->len)
        return NULL;
    return m->base + (off - m->off);
}

/* Checksum of frame i given the previous checksum (diagnostic, 2.3). */
static void sqlcap_frame_cksum(sqlcap *c, const uint8_t *hdr8, const uint8_t *page, uint32_t *s0, uint32_t *s1,
                               bool bigend)
{
    sqlcap_cksum(bigend, hdr8, 8, s0, s1);
    sqlcap_cksum(bigend, page, c->pg.pgsz, s0, s1);
}

/* Consume committed frames c->frame+1 .. upto. Offline: stop at the first
 * frame whose salts or checksum chain fail. *done = consumed everything. */
tb_code sqlcap_consume(sqlcap *c, uint32_t upto, bool bigend, bool offline, bool *done, tb_error *err)
{
    tb_code rc = TB_OK;
    sqlcap_map txn = {0}, fc = {0};
    uint8_t *fbuf = malloc(c->pg.pgsz + 24), *page = NULL;
    uint8_t *pgnos = malloc(32768);
    uint32_t pgblock = UINT32_MAX; /* -shm hash block cached in pgnos */
    uint32_t s0 = c->ck1, s1 = c->ck2;
    uint32_t start = c->frame, hard_checked = start;
    /* frames of the current transaction are read into slots of c->fslab (the
     * page images the diff and the shadow queue use: fc maps frame -> image);
     * a transaction larger than the slab reads the rest into fbuf again */
    size_t slot = (size_t)c->pg.pgsz + 24, nslots = SQLCAP_FCACHE / slot, used = 0;
    sqlcap_walmap wm = {0};
    *done = false;
    if (!fbuf) {
        free(pgnos);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    if (!offline && !c->o.test_no_pin)
        sqlcap_walmap_open(c, c->frame, upto, &wm);
    if (!wm.base && !c->fslab && nslots)
        c->fslab = malloc(nslots * slot); /* NULL: no cache, every read from the WAL */
    for (uint32_t i = c->frame + 1; i <= upto; i++) {
        sqlcap_frame f = {0};
        const uint8_t *mf = sqlcap_walmap_frame(c, &wm, i);
        bool cached = mf || (c->fslab && used < nslots);
        if (mf) {
            /* mapped: the page is used in place (it stays mapped until the end of this call) */
            sqlcap_frame_parse(mf, &f);
            page = (uint8_t *)(uintptr_t)(mf + 24);
        } else {
            page = (cached ? c->fslab + used * slot : fbuf) + 24;
            if ((rc = sqlcap_frame_hdr(c, i, &f, page, err)) != TB_OK)
                goto out;
        }
        uint8_t h8[8];
        uint32_t be[2] = {f.pgno, f.commit};
        for (int k = 0; k < 2; k++) {
            h8[4 * k] = (uint8_t)(be[k] >> 24);
            h8[4 * k + 1] = (uint8_t)(be[k] >> 16);
            h8[4 * k + 2] = (uint8_t)(be[k] >> 8);
            h8[4 * k + 3] = (uint8_t)be[k];
        }
        sqlcap_frame_cksum(c, h8, page, &s0, &s1, bigend);
        bool ok = f.salt1 == c->salt1 && f.salt2 == c->salt2 && s0 == f.ck1 && s1 == f.ck2;
        if (!ok) {
            if (offline)
                break;
            c->st.cksum_mismatch++;
            TB_WARN(SQLCAP_FAC, "%s-wal: frame %u (page %u) fails its salt/checksum check; committed per the "
                    "wal-index, used anyway (SQLite < 3.51 savepoint bug, sqlite-wal.md 1.9)", c->path, i, f.pgno);
        }
        /* chain from the stored checksum so one bad frame stays local */
        s0 = f.ck1;
        s1 = f.ck2;
        if (!offline && pgnos) {
            /* aPgno[] of frame i, from the cached 32 KiB hash block */
            uint32_t blk = i <= 4062 ? 0 : 1 + (i - 4063) / 4096;
            size_t at = i <= 4062 ? 136 + (size_t)(i - 1) * 4 : (size_t)((i - 4063) % 4096) * 4;
            if (blk != pgblock) {
                ssize_t r = pread(c->shmfd, pgnos, 32768, (off_t)blk * 32768);
                pgblock = r == 32768 ? blk : UINT32_MAX;
            }
            uint32_t ip = 0;
            if (pgblock == blk)
                memcpy(&ip, pgnos + at, 4);
            if (ip && ip != f.pgno) {
                rc = tb_error_set(err, TB_ERR_CORRUPT, true, "%s-wal: frame %u holds page %u but the wal-index says %u",
                                  c->path, i, f.pgno, ip);
                goto out;
            }
        }
        c->st.frames++;
        if (f.pgno == 0) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "%s-wal: frame %u has page number 0", c->path, i);
            goto out;
        }
        if (sqlcap_map_put(&txn, f.pgno, i) != TB_OK ||
            (cached && sqlcap_map_put(&fc, i, (uint64_t)(uintptr_t)page) != TB_OK)) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        used += cached && !mf;
        if (f.commit) {
            /* A database grows only by pages the transaction writes, pages it
             * frees again as freelist leaves without writing them (at most U/4
             * per freelist trunk page it writes) and the lock-byte page: a
             * larger size is a corrupt frame, not a reason to size the page
             * maps for billions of pages. */
            uint64_t most = (uint64_t)c->npages + (uint64_t)(i - start) * (c->pg.usable / 4 + 1) + 1;
            if ((uint64_t)f.commit > most) {
                rc = tb_error_set(err, TB_ERR_CORRUPT, false,
                                  "%s-wal: frame %u commits a database of %u pages, more than %u pages and %u frames "
                                  "can make", c->path, i, f.commit, c->npages, i - start);
                goto out;
            }
            sqlcap_map clean = {0}; /* pages past the commit size are truncated away */
            for (size_t k = 0; k < txn.cap; k++)
                if (txn.keys[k] && txn.keys[k] <= f.commit && sqlcap_map_put(&clean, txn.keys[k], txn.vals[k]) != TB_OK) {
                    sqlcap_map_free(&clean);
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                    goto out;
                }
            /* resume with the shadow behind the durable position: do not deliver again */
            bool deliver = !(c->skip_to.kind == TB_POS_SQLITE_WAL &&
                             (c->gen_seq < c->skip_to.gen_seq ||
                              (c->gen_seq == c->skip_to.gen_seq && i <= c->skip_to.frame)));
            c->pg.fcache = &fc;
            rc = sqlcap_apply_txn(c, &clean, i, f.ck1, f.ck2, f.commit, deliver, err);
            c->pg.fcache = NULL;
            sqlcap_map_free(&clean);
            sqlcap_map_clear(&txn);
            sqlcap_map_clear(&fc);
            used = 0;
            if (rc != TB_OK)
                goto out;
            start = i;
            /* the WAL near its bound: the write lock now (the hard limit) */
            if (c->o.wal_max_bytes && !c->w_held && i - hard_checked >= 8) {
                hard_checked = i;
                sqlcap_bound_hard(c);
            }
            /* a reset window consumes everything (what it reads is bounded by the WAL bound) */
            if (!c->in_window && !c->w_held &&
                c->evq.n - (c->ahead_base == SIZE_MAX ? c->evq.next : c->ahead_base) >= SQLCAP_BATCH_EVENTS)
                break;
        }
    }
    *done = c->frame == upto;
out:
    (void)start;
    if (wm.base)
        munmap(wm.base, wm.len);
    c->pg.fcache = NULL;
    sqlcap_map_free(&fc);
    sqlcap_map_free(&txn);
    free(fbuf);
    free(pgnos);
    return rc;
}

/* ---------------------------------------------------------------- polling */

static void sqlcap_switch_gen(sqlcap *c, const sqlcap_walhdr *w)
{
    TB_INFO(SQLCAP_FAC, "%s-wal: new generation (salts %08x %08x -> %08x %08x) after frame %u", c->path, c->salt1,
            c->salt2, w->salt1, w->salt2, c->frame);
    c->salt1 = w->salt1;
    c->salt2 = w->salt2;
    c->frame = 0;
    c->ck1 = w->ck1;
    c->ck2 = w->ck2;
    c->gen_seq++;
    c->st.generations++;
    if (!c->o.shadow)
        sqlcap_map_clear(&c->overlay); /* the database file now equals the state at P */
}

void sqlcap_report(sqlcap *c, const sqlcap_shmhdr *h)
{
    struct stat sb;
    if (fstat(c->walfd, &sb) == 0) {
        c->st.wal_bytes = (uint64_t)sb.st_size;
        if (c->st.wal_bytes > c->st.wal_max_bytes)
            c->st.wal_max_bytes = c->st.wal_bytes;
    }
    c->st.lag_frames = h->mxframe > c->frame ? h->mxframe - c->frame : 0;
    int64_t now = tb_mono_ms();
    if (h->salt1 == c->salt1 && h->salt2 == c->salt2)
        sqlcap_bound_warn(c, h, now);
    if (now - c->last_log_ms >= 10000) {
        c->last_log_ms = now;
        TB_INFO(SQLCAP_FAC, "%s: wal %llu bytes, mxFrame %u, consumed frame %u (lag %llu frames), backfilled %u, "
                "%llu txns, %llu events, %llu checksum anomalies", c->path, (unsigned long long)c->st.wal_bytes,
                h->mxframe, c->frame, (unsigned long long)c->st.lag_frames, h->nbackfill,
                (unsigned long long)c->st.txns, (unsigned long long)c->st.events,
                (unsigned long long)c->st.cksum_mismatch);
    }
}

/* One leapfrog step: begin the other read transaction, consume up to the
 * mxFrame read after it, release the old one only when all was consumed. */
static tb_code sqlcap_poll_step(sqlcap *c, tb_error *err)
{
    tb_code rc;
    int i = c->protector < 0 ? 0 : 1 - c->protector;
    sqlcap_shmhdr h;
    sqlcap_walhdr w;
    bool done = false;
    int64_t now = tb_mono_ms();
    int repin = c->o.repin_ms ? c->o.repin_ms : SQLCAP_REPIN_MS; /* < 0: leapfrog at every poll */
    if (c->protector >= 0 && !c->o.test_no_pin && !c->o.checkpoint && !c->in_window && repin > 0 &&
        now - c->last_pin_ms < repin) {
        /* Coarse pin: keep the pin we hold (its mark m <= P, or lock 0, stays
         * below every frame we consume: nothing we consume can be backfilled or
         * reset) and consume what the wal-index shows. The mark advances at most
         * every repin ms, so the application's autocheckpoint finds new frames
         * to backfill that often, not after every commit. The full step at once
         * when a lock-0 window is possible (everything backfilled: the new read
         * transaction takes lock 0 and the writer may rewind the WAL), across
         * generations, with the checkpoint options (their windows need a pin
         * at mxFrame), and when caught up with an idle writer while the pin is
         * below mxFrame (SQLCAP_IDLE_REPIN_MS). */
        if ((rc = sqlcap_shm(c, &h, err)) != TB_OK)
            return rc;
        if (h.mxframe > c->frame)
            c->last_new_ms = now;
        bool idle = h.mxframe == c->frame && c->pin_frame != h.mxframe && now - c->last_new_ms >= SQLCAP_IDLE_REPIN_MS;
        /* a reset window due (bounded WAL): the full step, which tries it */
        bool due = sqlcap_window_ready(c, &h, now);
        if (!idle && !due && h.mxframe >= c->frame && h.nbackfill < h.mxframe && h.salt1 == c->salt1 &&
            h.salt2 == c->salt2 && h.pgsz == c->pg.pgsz) {
            if (h.mxframe == c->frame) {
                sqlcap_report(c, &h);
                return TB_OK; /* caught up: nothing to consume, the pin stays */
            }
            if ((rc = sqlcap_walhdr_read(c, &w, err)) != TB_OK)
                return rc;
            if (w.valid && w.salt1 == c->salt1 && w.salt2 == c->salt2) {
                rc = sqlcap_consume(c, h.mxframe, w.magic & 1, false, &done, err);
                sqlcap_report(c, &h);
                return rc;
            }
        }
    }
    if ((rc = sqlcap_begin(c, i, err)) != TB_OK)
        return rc;
    if ((rc = sqlcap_shm(c, &h, err)) != TB_OK || (rc = sqlcap_walhdr_read(c, &w, err)) != TB_OK)
        goto release_new;
    if (h.mxframe > c->frame)
        c->last_new_ms = now;
    if (h.pgsz != c->pg.pgsz && h.mxframe) {
        rc = tb_error_set(err, TB_ERR_UNSUPPORTED, false, "%s: page size changed (%u -> %u)", c->path, c->pg.pgsz,
                          h.pgsz);
        goto release_new;
    }
    if (w.valid && (w.salt1 != c->salt1 || w.salt2 != c->salt2)) {
        if (h.salt1 != w.salt1 || h.salt2 != w.salt2)
            goto release_new; /* header being rewritten */
        if (c->frame < h.mxframe && c->gen_seq > 0 && h.nbackfill > c->frame)
            TB_WARN(SQLCAP_FAC, "%s: generation switch with unconsumed frames?", c->path);
        sqlcap_switch_gen(c, &w);
    }
    if (h.salt1 != c->salt1 || h.salt2 != c->salt2 || !w.valid) {
        done = true; /* the shm was reset for the next generation: nothing more here */
        goto finish;
    }
    if (!c->o.shadow && h.nbackfill > c->frame && h.mxframe > c->frame)
        TB_ERROR(SQLCAP_FAC, "%s: invariant violated: backfill %u beyond consumed frame %u", c->path, h.nbackfill,
                 c->frame);
    if ((rc = sqlcap_consume(c, h.mxframe, w.magic & 1, false, &done, err)) != TB_OK)
        goto release_new;
finish:
    sqlcap_report(c, &h);
    if (done) {
        sqlcap_end(c, c->protector);
        c->protector = i;
        c->st.pin_moves++;
        c->pin_frame = h.mxframe;
        /* a pin begun on a fully backfilled WAL probably holds lock 0, which makes
         * every application checkpoint build its frame index and fail: not lazy then */
        c->last_pin_ms = h.nbackfill >= h.mxframe ? 0 : now;
        if (c->o.test_no_pin) {
            sqlcap_end(c, i);
            c->protector = -1;
        }
        sqlcap_maybe_checkpoint(c, &h);
        return TB_OK;
    }
release_new:
    sqlcap_end(c, i);
    if (rc == TB_OK && !done)
        sqlcap_maybe_checkpoint(c, &h); /* behind (one batch consumed): the barrier tiers may be due */
    return rc;
}

tb_code sqlcap_poll(sqlcap *c, tb_error *err)
{
    tb_code rc = sqlcap_poll_step(c, err);
    sqlcap_bound_finish(c); /* a consume that took the write lock (the hard limit): the window now */
    return rc;
}
