/*
 * sqlcap_state: pinning primitives (leapfrog, sqlite-wal.md 2.2), positions,
 * the overlay and the shadow copy (2.4, mode B), and applying one consumed
 * transaction (diff, positions, event queue).
 *
 * SHADOW FILES (mode B): <shadow> is a plain copy of the database pages at
 * the acknowledged position; <shadow>.pos holds that position in tb_position
 * text form; <shadow>.redo makes an advance atomic:
 *   "SQLCAPREDO1\n" <position text> "\n" u32 npages u32 count
 *   count x (u32 pgno, page) then "END!".
 * Written and fsynced first, then applied to <shadow>, fsynced, .pos renamed
 * into place, .redo unlinked. A complete .redo found at open is re-applied.
 * <shadow>.pend (sqlcap_pend.c): delivered but unacknowledged transactions,
 * each as u32 length + a one-transaction redo.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap_int.h"
#include "sqlcap_priv.h"
#include "tb_clock.h"
#include "tb_file.h"
#include "tb_log.h"

void sqlcap_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- pinning */

tb_code sqlcap_open_reader(sqlcap *c, sqlite3 **db, tb_error *err)
{
    char *uri = sqlite3_mprintf("file:%s?mode=ro", c->path);
    int rc = uri ? sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
    sqlite3_free(uri);
    if (rc != SQLITE_OK)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: open read-only: %s", c->path,
                            *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(*db, 30000);
    sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    return TB_OK;
}

tb_code sqlcap_begin(sqlcap *c, int i, tb_error *err)
{
    for (int attempt = 0;; attempt++) {
        int rc = sqlite3_exec(c->R[i], "BEGIN; SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return TB_OK;
        sqlite3_exec(c->R[i], "ROLLBACK", NULL, NULL, NULL);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt > 100)
            return tb_error_set(err, TB_ERR_SOURCE, true, "%s: begin read transaction: %s", c->path,
                                sqlite3_errmsg(c->R[i]));
        sqlcap_sleep_ms(10);
    }
}

void sqlcap_end(sqlcap *c, int i)
{
    if (i >= 0 && c->R[i])
        sqlite3_exec(c->R[i], "ROLLBACK", NULL, NULL, NULL);
}

tb_code sqlcap_shm(sqlcap *c, sqlcap_shmhdr *h, tb_error *err)
{
    tb_code rc = TB_OK;
    for (int attempt = 0; attempt < 1000; attempt++) {
        rc = sqlcap_shm_read(c->shmfd, h, err);
        if (rc == TB_OK && (h->mxframe != c->seen_mx || h->salt1 != c->seen_salt1 || h->salt2 != c->seen_salt2)) {
            /* new commits became visible now: their observation time (sqlite-wal.md 2.12) */
            int64_t now = tb_wall_ms();
            c->seen_ms = now > c->seen_ms ? now : c->seen_ms;
            c->seen_mx = h->mxframe;
            c->seen_salt1 = h->salt1;
            c->seen_salt2 = h->salt2;
        }
        if (rc == TB_OK || rc != TB_ERR_CORRUPT)
            return rc;
        sqlcap_sleep_ms(1);
    }
    return rc;
}

tb_code sqlcap_walhdr_read(sqlcap *c, sqlcap_walhdr *w, tb_error *err)
{
    uint8_t b[32];
    ssize_t r = pread(c->walfd, b, 32, 0);
    memset(w, 0, sizeof *w);
    if (r < 0)
        return tb_error_set(err, TB_ERR_IO, true, "%s-wal: read header: %s", c->path, strerror(errno));
    if (r == 32)
        sqlcap_walhdr_parse(b, w);
    return TB_OK;
}

/* ---------------------------------------------------------------- positions */

void sqlcap_pos_make(const sqlcap *c, uint32_t frame, uint32_t ck1, uint32_t ck2, uint32_t npages,
                            tb_position *p)
{
    tb_position_free(p);
    p->kind = TB_POS_SQLITE_WAL;
    p->salt1 = c->salt1;
    p->salt2 = c->salt2;
    p->frame = frame;
    p->cksum1 = ck1;
    p->cksum2 = ck2;
    p->db_pages = npages;
    p->gen_seq = c->gen_seq;
    p->inode = c->inode;
}

/* a <= b in stream order */
bool sqlcap_pos_le(const tb_position *a, const tb_position *b)
{
    if (a->gen_seq != b->gen_seq)
        return a->gen_seq < b->gen_seq;
    return a->frame <= b->frame;
}

/* ---------------------------------------------------------------- shadow */

char *sqlcap_strcat3(const char *a, const char *b)
{
    char *s = NULL;
    return asprintf(&s, "%s%s", a, b) < 0 ? NULL : s;
}

tb_code sqlcap_write_all(int fd, const void *p, size_t n, const char *what, tb_error *err)
{
    if (tb_write_all(fd, p, n) != TB_OK)
        return tb_error_set(err, TB_ERR_IO, true, "%s: write: %s", what, strerror(errno));
    return TB_OK;
}

tb_code sqlcap_shadow_meta(sqlcap *c, const tb_position *pos, tb_error *err)
{
    tb_buf t;
    tb_file_replace r;
    tb_buf_init(&t, 0);
    tb_code rc = TB_OK;
    if (tb_position_format(pos, &t) != TB_OK || tb_buf_putc(&t, '\n') != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
    else if ((rc = tb_file_replace_begin(&r, c->shadow_pos_path, 0666, 0, err)) == TB_OK) {
        if ((rc = sqlcap_write_all(r.fd, t.data, t.len, r.tmp, err)) == TB_OK)
            rc = tb_file_replace_commit(&r, false, err);
        tb_file_replace_abort(&r);
    }
    if (rc != TB_OK && err)
        err->retriable = true;
    tb_buf_free(&t);
    return rc;
}

/* Apply a redo buffer (format in the file comment) to the shadow file. */
tb_code sqlcap_redo_apply(sqlcap *c, const uint8_t *b, size_t n, tb_position *pos, tb_error *err)
{
    const char *magic = "SQLCAPREDO1\n";
    size_t ml = strlen(magic);
    if (n < ml + 12 || memcmp(b, magic, ml) != 0 || memcmp(b + n - 4, "END!", 4) != 0)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: incomplete", c->shadow_redo_path);
    const uint8_t *nl = memchr(b + ml, '\n', n - ml);
    if (!nl)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: no position line", c->shadow_redo_path);
    char *txt = strndup((const char *)b + ml, (size_t)(nl - (b + ml)));
    tb_code rc = txt ? tb_position_parse(txt, pos, err) : TB_ERR_NOMEM;
    free(txt);
    if (rc != TB_OK)
        return rc;
    const uint8_t *p = nl + 1;
    uint32_t npages = sqlcap_be32(p), count = sqlcap_be32(p + 4);
    p += 8;
    for (uint32_t i = 0; i < count; i++) {
        if ((size_t)(b + n - 4 - p) < 4 + (size_t)c->pg.pgsz)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: truncated at page %u", c->shadow_redo_path, i);
        uint32_t pgno = sqlcap_be32(p);
        if (pwrite(c->shadowfd, p + 4, c->pg.pgsz, (off_t)(pgno - 1) * c->pg.pgsz) != (ssize_t)c->pg.pgsz)
            return tb_error_set(err, TB_ERR_IO, true, "shadow: write page %u: %s", pgno, strerror(errno));
        p += 4 + c->pg.pgsz;
    }
    if (ftruncate(c->shadowfd, (off_t)npages * c->pg.pgsz) != 0 || fsync(c->shadowfd) != 0)
        return tb_error_set(err, TB_ERR_IO, true, "shadow: truncate/fsync: %s", strerror(errno));
    if ((rc = sqlcap_shadow_meta(c, pos, err)) != TB_OK)
        return rc;
    unlink(c->shadow_redo_path);
    return TB_OK;
}

/* Redo buffer (format in the file comment) for the unacked transactions
 * un[k0 .. k1): the newest image of each page, the position and size of
 * un[k1-1]. Appends to out. */
tb_code sqlcap_redo_build(sqlcap *c, size_t k0, size_t k1, tb_buf *out, tb_error *err)
{
    tb_code rc = TB_OK;
    sqlcap_map last = {0};
    /* one transaction (each .pend record): its pages are distinct already */
    const sqlcap_untx *one = k1 == k0 + 1 ? &c->un[k0] : NULL;
    for (size_t t = k0; !one && t < k1; t++)
        for (size_t i = 0; i < c->un[t].n; i++)
            if (sqlcap_map_put(&last, c->un[t].pgno[i], (uint64_t)(uintptr_t)c->un[t].img[i]) != TB_OK)
                goto nomem;
    uint32_t npages = c->un[k1 - 1].npages, count = 0;
    size_t npg = one ? one->n : last.cap;
    uint8_t hdr[8];
    sqlcap_put_be32(hdr, npages);
    sqlcap_put_be32(hdr + 4, 0);
    /* one allocation for the whole record (128: magic, position text, header, trailer) */
    if (tb_buf_reserve(out, 128 + (one ? one->n : last.n) * (4 + (size_t)c->pg.pgsz)) != TB_OK ||
        tb_buf_puts(out, "SQLCAPREDO1\n") != TB_OK || tb_position_format(&c->un[k1 - 1].pos, out) != TB_OK ||
        tb_buf_putc(out, '\n') != TB_OK)
        goto nomem;
    size_t count_off = out->len + 4;
    if (tb_buf_append(out, hdr, 8) != TB_OK)
        goto nomem;
    for (size_t i = 0; i < npg; i++) {
        uint32_t pgno = one ? one->pgno[i] : last.keys[i];
        const void *img = one ? (const void *)one->img[i] : (const void *)(uintptr_t)last.vals[i];
        if (!pgno || pgno > npages)
            continue;
        uint8_t pb[4];
        sqlcap_put_be32(pb, pgno);
        if (tb_buf_append(out, pb, 4) != TB_OK || tb_buf_append(out, img, c->pg.pgsz) != TB_OK)
            goto nomem;
        count++;
    }
    sqlcap_put_be32((uint8_t *)out->data + count_off, count);
    if (tb_buf_append(out, "END!", 4) != TB_OK)
        goto nomem;
    goto out;
nomem:
    rc = tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
out:
    sqlcap_map_free(&last);
    return rc;
}

/* Write the newest image of every page of un[0 .. k) into the shadow, then its
 * size, fsync, and the position of un[k-1] (.pos). Only for transactions that
 * are durable in .pend: a crash in the middle leaves .pos at the old position
 * and resume replays .pend from there (whole pages), so no .redo is needed. */
tb_code sqlcap_shadow_last(sqlcap *c, size_t k, sqlcap_map *last, tb_error *err)
{
    for (size_t t = 0; t < k; t++)
        for (size_t i = 0; i < c->un[t].n; i++)
            if (sqlcap_map_put(last, c->un[t].pgno[i], (uint64_t)(uintptr_t)c->un[t].img[i]) != TB_OK)
                return tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
    return TB_OK;
}

tb_code sqlcap_shadow_write(sqlcap *c, const sqlcap_map *last, uint32_t npages, const tb_position *pos, tb_error *err)
{
    for (size_t i = 0; i < last->cap; i++) {
        uint32_t pgno = last->keys[i];
        if (!pgno || pgno > npages)
            continue;
        if (pwrite(c->shadowfd, (const void *)(uintptr_t)last->vals[i], c->pg.pgsz, (off_t)(pgno - 1) * c->pg.pgsz) !=
            (ssize_t)c->pg.pgsz)
            return tb_error_set(err, TB_ERR_IO, true, "%s: write page %u: %s", c->shadow_path, pgno, strerror(errno));
    }
    if (ftruncate(c->shadowfd, (off_t)npages * c->pg.pgsz) != 0 || fsync(c->shadowfd) != 0)
        return tb_error_set(err, TB_ERR_IO, true, "%s: truncate/fsync: %s", c->shadow_path, strerror(errno));
    return sqlcap_shadow_meta(c, pos, err);
}

static tb_code sqlcap_shadow_direct(sqlcap *c, size_t k, tb_error *err)
{
    sqlcap_map last = {0};
    tb_code rc = sqlcap_shadow_last(c, k, &last, err);
    if (rc == TB_OK)
        rc = sqlcap_shadow_write(c, &last, c->un[k - 1].npages, &c->un[k - 1].pos, err);
    sqlcap_map_free(&last);
    return rc;
}

/* Advance the shadow by the unacked transactions up to and including pos. */
tb_code sqlcap_shadow_advance(sqlcap *c, const tb_position *pos, tb_error *err)
{
    tb_code rc = sqlcap_shadow_bg_finish(c, true, err); /* a background advance first */
    if (rc != TB_OK)
        return rc;
    size_t k = 0;
    while (k < c->nun && sqlcap_pos_le(&c->un[k].pos, pos))
        k++;
    if (k == 0)
        return TB_OK;
    tb_buf redo;
    tb_buf_init(&redo, 0);
    uint32_t npages = c->un[k - 1].npages;
    if (k <= c->pend_logged) {
        if ((rc = sqlcap_shadow_direct(c, k, err)) != TB_OK)
            goto out;
        goto applied;
    }
    /* not (all) in .pend (transactions skipped on resume): through <shadow>.redo */
    if ((rc = sqlcap_redo_build(c, 0, k, &redo, err)) != TB_OK)
        goto out;
    int fd = open(c->shadow_redo_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = tb_error_set(err, TB_ERR_IO, true, "%s: %s", c->shadow_redo_path, strerror(errno));
        goto out;
    }
    rc = sqlcap_write_all(fd, redo.data, redo.len, c->shadow_redo_path, err);
    if (rc == TB_OK && fsync(fd) != 0)
        rc = tb_error_set(err, TB_ERR_IO, true, "%s: fsync: %s", c->shadow_redo_path, strerror(errno));
    close(fd);
    tb_position rp;
    tb_position_init(&rp);
    if (rc == TB_OK)
        rc = sqlcap_redo_apply(c, (const uint8_t *)redo.data, redo.len, &rp, err);
    tb_position_free(&rp);
    if (rc != TB_OK)
        goto out;
applied:
    rc = sqlcap_shadow_retire(c, k, npages, err);
out:
    tb_buf_free(&redo);
    return rc;
}

tb_code sqlcap_shadow_retire(sqlcap *c, size_t k, uint32_t npages, tb_error *err)
{
    /* queued .pend pieces point at page images: write them before any is
     * freed (records of delivered transactions are written already), and let
     * the writer thread finish: un[] and the file change below */
    tb_code rc = c->npieces ? sqlcap_pend_pieces_write(c, err) : TB_OK;
    if (rc == TB_OK)
        rc = sqlcap_sync_wait(c, err);
    if (rc != TB_OK)
        return rc;
    /* drop the applied transactions and their overlay entries */
    for (size_t t = 0; t < k; t++) {
        for (size_t i = 0; i < c->un[t].n; i++) {
            uint64_t v;
            if (sqlcap_map_get(&c->overlay, c->un[t].pgno[i], &v) && v == (uint64_t)(uintptr_t)c->un[t].img[i])
                sqlcap_map_del(&c->overlay, c->un[t].pgno[i]);
            sqlcap_img_put(c, c->un[t].img[i]);
        }
        free(c->un[t].img);
        free(c->un[t].pgno);
        tb_position_free(&c->un[t].pos);
    }
    memmove(c->un, c->un + k, (c->nun - k) * sizeof *c->un);
    c->nun -= k;
    c->shadow_pages = npages;
    /* .pend records at or below the shadow position are dead (skipped on resume) */
    c->pend_logged = c->pend_logged > k ? c->pend_logged - k : 0;
    c->pend_written = c->pend_written > k ? c->pend_written - k : 0;
    if (c->pend_logged == 0 && c->pend_bytes > 0 && c->pendfd >= 0 && ftruncate(c->pendfd, 0) == 0) {
        c->pend_bytes = 0;
        c->pend_written = 0; /* records written ahead are gone: written again */
        sqlcap_pend_pieces_drop(c);
    } else if (sqlcap_pend_compact_due(c)) {
        rc = sqlcap_pend_compact(c, err);
    }
    return rc;
}

tb_code sqlcap_shadow_flush(sqlcap *c, bool force, tb_error *err)
{
    if (!c->o.shadow || c->acked.kind != TB_POS_SQLITE_WAL)
        return TB_OK;
    tb_code rc = sqlcap_shadow_bg_finish(c, force, err);
    if (rc != TB_OK || c->shw_inflight)
        return rc; /* an advance still runs in the background: later */
    size_t k = 0;
    uint64_t bytes = 0;
    while (k < c->nun && sqlcap_pos_le(&c->un[k].pos, &c->acked))
        bytes += (uint64_t)c->un[k++].n * c->pg.pgsz;
    if (k == 0)
        return TB_OK;
    int64_t now = tb_mono_ms();
    if (!force && bytes < SQLCAP_SHADOW_BYTES && now - c->shadow_ms < SQLCAP_SHADOW_MS)
        return TB_OK;
    c->shadow_ms = now;
    /* in the background when all of it is in .pend (a crash meanwhile replays
     * .pend from the old .pos); otherwise (.redo) here */
    if (!force && k <= c->pend_logged)
        return sqlcap_shadow_bg_start(c, k, err);
    return sqlcap_shadow_advance(c, &c->acked, err);
}

/* The slab holding img, or -1 (malloc'd). Slabs are SQLCAP_IMGSLAB-aligned. */
static int sqlcap_img_slab(const sqlcap *c, const uint8_t *img)
{
    uintptr_t base = (uintptr_t)img & ~(uintptr_t)(SQLCAP_IMGSLAB - 1);
    for (int i = 0; i < c->nimgslab; i++)
        if ((uintptr_t)c->imgslab[i] == base)
            return i;
    return -1;
}

static bool sqlcap_img_push(sqlcap *c, uint8_t *img)
{
    uint8_t **nv = sqlcap_grow(c->imgfree, c->nimgfree, &c->capimgfree, sizeof *nv, 512);
    if (!nv)
        return false;
    c->imgfree = nv;
    c->imgfree[c->nimgfree++] = img;
    return true;
}

/* One more slab of image buffers onto the free list: SQLCAP_IMGSLAB bytes,
 * aligned so sqlcap_img_slab finds a buffer's slab by masking its address.
 * Not MADV_HUGEPAGE: where the kernel's transparent huge pages use
 * defrag=madvise (Debian's default), each huge-page fault compacts and zeroes
 * 2 MiB synchronously, which makes drains slower and uneven (bench_sqlcap). */
static void sqlcap_img_slab_new(sqlcap *c)
{
    size_t sz = SQLCAP_IMGSLAB;
    if (c->nimgslab >= SQLCAP_IMGSLABS || c->pg.pgsz > sz)
        return;
    uint8_t *p = mmap(NULL, 2 * sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    uint8_t *a = (uint8_t *)(((uintptr_t)p + sz - 1) & ~(uintptr_t)(sz - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (a + sz < p + 2 * sz)
        munmap(a + sz, (size_t)(p + 2 * sz - (a + sz)));
    c->imgslab[c->nimgslab++] = a;
    for (size_t off = sz; off >= c->pg.pgsz; off -= c->pg.pgsz)
        if (!sqlcap_img_push(c, a + off - c->pg.pgsz))
            break; /* the rest of the slab stays unused */
}

uint8_t *sqlcap_img_get(sqlcap *c)
{
    /* reused buffers: a malloc and free per page of every transaction (and the
     * page faults after glibc gave a freed group back) were ~20% of a mode B drain */
    if (!c->nimgfree)
        sqlcap_img_slab_new(c);
    return c->nimgfree ? c->imgfree[--c->nimgfree] : malloc(c->pg.pgsz);
}

void sqlcap_img_put(sqlcap *c, uint8_t *img)
{
    if (!img)
        return;
    if (sqlcap_img_slab(c, img) < 0 || !sqlcap_img_push(c, img))
        free(img); /* malloc'd (all slabs in use), or no room in the list: a slab piece is then unused */
}

void sqlcap_img_free_all(sqlcap *c)
{
    for (int i = 0; i < c->nimgslab; i++)
        munmap(c->imgslab[i], SQLCAP_IMGSLAB);
    c->nimgslab = 0;
    free(c->imgfree);
    c->imgfree = NULL;
    c->nimgfree = c->capimgfree = 0;
}

/* Record a consumed transaction's pages (mode B) or frames (mode A) in the overlay. */
static tb_code sqlcap_overlay_txn(sqlcap *c, const sqlcap_map *txn, uint32_t npages, const tb_position *pos,
                                  tb_error *err)
{
    if (!c->o.shadow) {
        for (size_t i = 0; i < txn->cap; i++)
            if (txn->keys[i] && sqlcap_map_put(&c->overlay, txn->keys[i], txn->vals[i]) != TB_OK)
                return tb_error_set(err, TB_ERR_NOMEM, false, "overlay: out of memory");
        return TB_OK;
    }
    sqlcap_untx *nu = sqlcap_grow(c->un, c->nun, &c->capun, sizeof *nu, 64);
    if (!nu)
        return tb_error_set(err, TB_ERR_NOMEM, false, "shadow queue: out of memory");
    c->un = nu;
    sqlcap_untx *u = &c->un[c->nun];
    memset(u, 0, sizeof *u);
    tb_position_init(&u->pos);
    u->npages = npages;
    u->pgno = calloc(txn->n + 1, sizeof *u->pgno);
    u->img = calloc(txn->n + 1, sizeof *u->img);
    if (!u->pgno || !u->img || tb_position_copy(&u->pos, pos) != TB_OK)
        goto nomem;
    sqlcap_view v = {&c->pg, txn, npages};
    for (size_t i = 0; i < txn->cap; i++) {
        if (!txn->keys[i] || txn->keys[i] > npages)
            continue;
        uint8_t *img = sqlcap_img_get(c);
        if (!img)
            goto nomem;
        u->pgno[u->n] = txn->keys[i];
        u->img[u->n++] = img;
        tb_code rc = sqlcap_view_read(&v, txn->keys[i], img, err);
        if (rc != TB_OK) {
            c->nun++;
            return rc;
        }
        c->unacked_bytes += c->pg.pgsz;
        if (sqlcap_map_put(&c->overlay, txn->keys[i], (uint64_t)(uintptr_t)img) != TB_OK)
            goto nomem;
    }
    c->nun++;
    return TB_OK;
nomem:
    c->nun++;
    return tb_error_set(err, TB_ERR_NOMEM, false, "shadow queue: out of memory");
}

/* Diff one transaction, queue its events with positions, update the overlay. */
tb_code sqlcap_apply_txn(sqlcap *c, sqlcap_map *txn, uint32_t frame, uint32_t ck1, uint32_t ck2,
                                uint32_t npages, bool deliver, tb_error *err)
{
    sqlcap_evlist tmp = {0};
    tb_position pos;
    tb_position_init(&pos);
    tb_code rc = sqlcap_engine_txn(c->eng, txn, npages, &tmp, err);
    if (rc != TB_OK)
        goto out;
    sqlcap_pos_make(c, frame, ck1, ck2, npages, &pos);
    for (size_t i = 0; i < tmp.n; i++) {
        evt_event_set_position(tmp.v[i], &pos);
        evt_event_set_last_in_tx(tmp.v[i], i + 1 == tmp.n);
        evt_event_set_commit_ts_ms(tmp.v[i], c->seen_ms ? c->seen_ms : tb_wall_ms());
        if (c->gap)
            evt_event_set_txid(tmp.v[i], "gap");
    }
    c->gap = false;
    if ((rc = sqlcap_overlay_txn(c, txn, npages, &pos, err)) != TB_OK)
        goto out;
    c->frame = frame;
    c->ck1 = ck1;
    c->ck2 = ck2;
    c->npages = npages;
    c->st.txns++;
    if (!deliver) {
        sqlcap_evlist_clear(&tmp);
        if (c->o.shadow)
            rc = sqlcap_shadow_advance(c, &pos, err);
        goto out;
    }
    if ((rc = sqlcap_pend_ahead(c, err)) != TB_OK)
        goto out;
    for (size_t i = 0; i < tmp.n; i++) {
        evt_event **nv = sqlcap_grow(c->evq.v, c->evq.n, &c->evq.cap, sizeof *nv, 256);
        if (!nv) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "event queue: out of memory");
            goto out;
        }
        c->evq.v = nv;
        c->evq.v[c->evq.n++] = tmp.v[i];
        tmp.v[i] = NULL;
        c->st.events++;
    }
    tmp.n = 0;
out:
    for (size_t i = 0; i < tmp.n; i++)
        evt_event_free(tmp.v[i]);
    free(tmp.v);
    tb_position_free(&pos);
    return rc;
}

