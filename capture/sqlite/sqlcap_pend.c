/*
 * sqlcap_pend: writing <shadow>.pend records ahead (format: sqlcap_state.c's
 * file comment) without copying the page images: each record is a list of
 * pieces, its header and page numbers in c->iobuf (by offset: iobuf may grow)
 * and its page images by reference, written with writev in chunks of about
 * SQLCAP_IOBUF bytes. Durability is sqlcap_pend_log's fsync, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sqlcap_priv.h"

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
        tb_position_format(&u->pos, b) != TB_OK || tb_buf_putc(b, '\n') != TB_OK || tb_buf_append(b, hdr, 8) != TB_OK)
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
