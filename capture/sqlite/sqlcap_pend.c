/*
 * sqlcap_pend: writing <shadow>.pend records ahead (format: sqlcap_state.c's
 * file comment) without copying the page images: each record is a list of
 * pieces, its header and page numbers in c->iobuf (by offset: iobuf may grow)
 * and its page images by reference, written with writev in chunks of about
 * SQLCAP_IOBUF bytes. Durability is an fsync: sqlcap_pend_log's, or one run
 * by the helper thread below (sqlcap_sync_start / sqlcap_sync_wait) while the
 * reader consumes the next batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sqlcap_priv.h"

/* Decimal digits of v at the end of b[0..20); returns the first digit. */
static char *sqlcap_u64_dec(uint64_t v, char *end)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

tb_code sqlcap_pos_text(const tb_position *p, tb_buf *out)
{
    if (p->kind != TB_POS_SQLITE_WAL)
        return tb_position_format(p, out);
    static const char *const keys[8] = {"sqlite-wal;salt1=", ";salt2=", ";frame=", ";cksum1=",
                                        ";cksum2=", ";db_pages=", ";gen_seq=", ";inode="};
    const uint64_t vals[8] = {p->salt1, p->salt2, p->frame, p->cksum1, p->cksum2, p->db_pages, p->gen_seq, p->inode};
    char b[256], num[20];
    size_t n = 0;
    for (int i = 0; i < 8; i++) {
        size_t kl = strlen(keys[i]);
        memcpy(b + n, keys[i], kl);
        n += kl;
        char *d = sqlcap_u64_dec(vals[i], num + sizeof num);
        size_t dl = (size_t)(num + sizeof num - d);
        memcpy(b + n, d, dl);
        n += dl;
    }
    return tb_buf_append(out, b, n);
}

/* ptr NULL: len bytes of c->iobuf at off; else len bytes at ptr (not owned). */
typedef struct sqlcap_piece {
    size_t off;
    const void *ptr;
    size_t len;
} sqlcap_piece;

static tb_code sqlcap_piece_add(sqlcap *c, size_t off, const void *ptr, size_t len)
{
    sqlcap_piece *last = c->npieces ? &c->pieces[c->npieces - 1] : NULL;
    c->piece_bytes += len;
    if (!ptr && last && !last->ptr && last->off + last->len == off) {
        last->len += len; /* adjacent iobuf bytes: one piece */
        return TB_OK;
    }
    if (c->npieces == c->cappieces) {
        size_t nc = c->cappieces ? c->cappieces * 2 : 1024;
        sqlcap_piece *nv = realloc(c->pieces, nc * sizeof *nv);
        if (!nv)
            return TB_ERR_NOMEM;
        c->pieces = nv;
        c->cappieces = nc;
    }
    c->pieces[c->npieces++] = (sqlcap_piece){off, ptr, len};
    return TB_OK;
}

tb_code sqlcap_pend_queue(sqlcap *c, size_t t, tb_error *err)
{
    const sqlcap_untx *u = &c->un[t];
    tb_buf *b = &c->iobuf;
    size_t at = b->len, np0 = c->npieces;
    uint64_t pb0 = c->piece_bytes;
    uint32_t count = 0;
    for (size_t i = 0; i < u->n; i++)
        count += u->pgno[i] && u->pgno[i] <= u->npages; /* a transaction's pages are distinct */
    uint8_t lb[4] = {0}, hdr[8];
    sqlcap_put_be32(hdr, u->npages);
    sqlcap_put_be32(hdr + 4, count);
    if (tb_buf_append(b, lb, 4) != TB_OK || tb_buf_puts(b, "SQLCAPREDO1\n") != TB_OK ||
        sqlcap_pos_text(&u->pos, b) != TB_OK || tb_buf_putc(b, '\n') != TB_OK || tb_buf_append(b, hdr, 8) != TB_OK)
        goto nomem;
    size_t len = b->len - at - 4 + (size_t)count * (4 + c->pg.pgsz) + 4;
    sqlcap_put_be32((uint8_t *)b->data + at, (uint32_t)len);
    if (sqlcap_piece_add(c, at, NULL, b->len - at) != TB_OK)
        goto nomem;
    for (size_t i = 0; i < u->n; i++) {
        if (!u->pgno[i] || u->pgno[i] > u->npages)
            continue;
        uint8_t pb[4];
        sqlcap_put_be32(pb, u->pgno[i]);
        size_t o = b->len;
        if (tb_buf_append(b, pb, 4) != TB_OK || sqlcap_piece_add(c, o, NULL, 4) != TB_OK ||
            sqlcap_piece_add(c, 0, u->img[i], c->pg.pgsz) != TB_OK)
            goto nomem;
    }
    if (sqlcap_piece_add(c, 0, "END!", 4) == TB_OK)
        return TB_OK;
nomem:
    b->len = at; /* the record is not queued */
    c->npieces = np0;
    c->piece_bytes = pb0;
    return tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
}

void sqlcap_pend_pieces_drop(sqlcap *c)
{
    c->npieces = 0;
    c->piece_bytes = 0;
    tb_buf_reset(&c->iobuf);
    if (c->iobuf.cap > 2 * (size_t)SQLCAP_IOBUF)
        tb_buf_free(&c->iobuf); /* one huge transaction: do not keep its size */
}

tb_code sqlcap_pend_pieces_write(sqlcap *c, tb_error *err)
{
    enum { NIOV = IOV_MAX < 512 ? IOV_MAX : 512 };
    struct iovec iov[NIOV];
    tb_code rc = TB_OK;
    uint64_t total = c->piece_bytes;
    for (size_t i = 0; i < c->npieces && rc == TB_OK;) {
        int n = 0;
        for (; i + (size_t)n < c->npieces && n < NIOV; n++) {
            const sqlcap_piece *p = &c->pieces[i + (size_t)n];
            iov[n].iov_base = p->ptr ? (void *)(uintptr_t)p->ptr : c->iobuf.data + p->off;
            iov[n].iov_len = p->len;
        }
        ssize_t w = writev(c->pendfd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = tb_error_set(err, TB_ERR_IO, true, "%s: write: %s", c->shadow_pend_path, strerror(errno));
            break;
        }
        /* a short write: the rest of these pieces one by one */
        size_t done = (size_t)w;
        for (int k = 0; k < n && rc == TB_OK; k++) {
            size_t l = iov[k].iov_len;
            if (done >= l) {
                done -= l;
                continue;
            }
            rc = sqlcap_write_all(c->pendfd, (const uint8_t *)iov[k].iov_base + done, l - done, c->shadow_pend_path,
                                  err);
            done = 0;
        }
        i += (size_t)n;
    }
    if (rc != TB_OK)
        return rc; /* what is in the file is only a torn tail for pend_replay */
    /* start the writeback now (advisory): the fsync before delivery waits less */
    (void)sync_file_range(c->pendfd, (off_t)c->pend_bytes, (off_t)total, SYNC_FILE_RANGE_WRITE);
    c->pend_bytes += total;
    sqlcap_pend_pieces_drop(c);
    return TB_OK;
}

/* ---------------------------------------------------------------- fsync thread */

static void *sqlcap_syncer_main(void *arg)
{
    sqlcap *c = arg;
    pthread_mutex_lock(&c->sync_mu);
    for (;;) {
        while (!c->sync_busy && !c->sync_quit)
            pthread_cond_wait(&c->sync_cv, &c->sync_mu);
        if (!c->sync_busy)
            break; /* quit, nothing pending */
        int fd = c->pendfd; /* not changed while sync_busy */
        pthread_mutex_unlock(&c->sync_mu);
        int e = fsync(fd) == 0 ? 0 : errno;
        pthread_mutex_lock(&c->sync_mu);
        c->sync_errno = e;
        c->sync_busy = false;
        pthread_cond_broadcast(&c->sync_cv);
    }
    pthread_mutex_unlock(&c->sync_mu);
    return NULL;
}

tb_code sqlcap_sync_start(sqlcap *c, tb_error *err)
{
    tb_code rc = sqlcap_pend_ahead(c, err);
    if (rc == TB_OK && c->piece_bytes)
        rc = sqlcap_pend_pieces_write(c, err);
    if (rc != TB_OK || c->pendfd < 0)
        return rc;
    if (!c->syncer_up) {
        if (pthread_mutex_init(&c->sync_mu, NULL) != 0)
            return sqlcap_pend_log(c, err); /* no thread: synchronously */
        if (pthread_cond_init(&c->sync_cv, NULL) != 0) {
            pthread_mutex_destroy(&c->sync_mu);
            return sqlcap_pend_log(c, err);
        }
        c->sync_busy = c->sync_quit = false;
        if (pthread_create(&c->syncer, NULL, sqlcap_syncer_main, c) != 0) {
            pthread_cond_destroy(&c->sync_cv);
            pthread_mutex_destroy(&c->sync_mu);
            return sqlcap_pend_log(c, err);
        }
        c->syncer_up = true;
    }
    pthread_mutex_lock(&c->sync_mu);
    c->sync_target = c->nun;
    c->sync_busy = true;
    c->sync_inflight = true;
    pthread_cond_broadcast(&c->sync_cv);
    pthread_mutex_unlock(&c->sync_mu);
    return TB_OK;
}

tb_code sqlcap_sync_wait(sqlcap *c, tb_error *err)
{
    if (!c->sync_inflight)
        return TB_OK;
    pthread_mutex_lock(&c->sync_mu);
    while (c->sync_busy)
        pthread_cond_wait(&c->sync_cv, &c->sync_mu);
    int e = c->sync_errno;
    size_t target = c->sync_target;
    c->sync_errno = 0;
    pthread_mutex_unlock(&c->sync_mu);
    c->sync_inflight = false;
    if (e)
        return tb_error_set(err, TB_ERR_IO, true, "%s: fsync: %s", c->shadow_pend_path, strerror(e));
    if (target > c->pend_logged)
        c->pend_logged = target;
    return TB_OK;
}

void sqlcap_sync_stop(sqlcap *c)
{
    if (!c->syncer_up)
        return;
    pthread_mutex_lock(&c->sync_mu);
    c->sync_quit = true;
    pthread_cond_broadcast(&c->sync_cv);
    pthread_mutex_unlock(&c->sync_mu);
    pthread_join(c->syncer, NULL);
    pthread_cond_destroy(&c->sync_cv);
    pthread_mutex_destroy(&c->sync_mu);
    c->syncer_up = false;
}
