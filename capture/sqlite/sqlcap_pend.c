/*
 * sqlcap_pend: <shadow>.pend, the delivered but unacknowledged transactions,
 * appended before their end reaches the consumer, each as u32 length + a
 * one-transaction redo (format: sqlcap_state.c's file comment); replayed up to
 * the resume position on open (sqlcap_pend_replay), rewritten with its live
 * records when it outgrows them (sqlcap_pend_compact).
 *
 * Records are written ahead without copying the page images: each record is a list of
 * pieces, its header and page numbers in c->iobuf (by offset: iobuf may grow)
 * and its page images by reference, written with writev in chunks of about
 * SQLCAP_IOBUF bytes. The writes (and their sync_file_range) and the fsyncs
 * run in a writer thread, in order, from a small queue of jobs: the main
 * thread goes on consuming meanwhile (sqlcap_sync_start / sqlcap_sync_wait);
 * without a thread they run here. Page images referenced by queued pieces are
 * freed only after sqlcap_sync_wait (sqlcap_shadow_retire).
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
#include "tb_file.h"

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
    sqlcap_piece *nv = sqlcap_grow(c->pieces, c->npieces, &c->cappieces, sizeof *nv, 1024);
    if (!nv)
        return TB_ERR_NOMEM;
    c->pieces = nv;
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

/* Write pieces[0 .. n) (iobuf bytes from buf) to fd with writev, completing
 * short writes. Returns 0 or an errno. */
static int sqlcap_pieces_out(int fd, const sqlcap_piece *pieces, size_t npieces, const tb_buf *buf)
{
    enum { NIOV = IOV_MAX < 512 ? IOV_MAX : 512 };
    struct iovec iov[NIOV];
    for (size_t i = 0; i < npieces;) {
        int n = 0;
        for (; i + (size_t)n < npieces && n < NIOV; n++) {
            const sqlcap_piece *p = &pieces[i + (size_t)n];
            iov[n].iov_base = p->ptr ? (void *)(uintptr_t)p->ptr : buf->data + p->off;
            iov[n].iov_len = p->len;
        }
        ssize_t w = writev(fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        /* a short write: the rest of these pieces one by one */
        size_t done = (size_t)w;
        for (int k = 0; k < n; k++) {
            size_t l = iov[k].iov_len;
            if (done >= l) {
                done -= l;
                continue;
            }
            if (tb_write_all(fd, (const uint8_t *)iov[k].iov_base + done, l - done) != TB_OK)
                return errno;
            done = 0;
        }
        i += (size_t)n;
    }
    return 0;
}

/* ---------------------------------------------------------------- writer thread */

/* One job of the .pend writer thread: pieces to write (with the iobuf they
 * point into), then optionally an fsync that makes un[0 .. target) durable.
 * A slot's buffers are swapped with the main thread's at each use. */
struct sqlcap_pjob {
    sqlcap_piece *pieces;
    size_t npieces, cappieces;
    tb_buf buf;
    uint64_t off, total; /* file offset and size of the pieces */
    bool sync;
    size_t target;
};

/* The worker's job: write the queued jobs, in order, until the queue is empty
 * (a job queued meanwhile wakes the worker again). */
static void sqlcap_pw_job(void *arg)
{
    sqlcap *c = arg;
    pthread_mutex_lock(&c->pw.mu);
    while (c->pj_head != c->pj_tail) {
        struct sqlcap_pjob *j = &c->pj[c->pj_head % SQLCAP_PJOBS];
        int fd = c->pendfd; /* not changed while jobs are queued */
        pthread_mutex_unlock(&c->pw.mu);
        int e = sqlcap_pieces_out(fd, j->pieces, j->npieces, &j->buf);
        bool fs = false;
        if (!e && j->total) /* start the writeback now (advisory): the fsync waits less */
            (void)sync_file_range(fd, (off_t)j->off, (off_t)j->total, SYNC_FILE_RANGE_WRITE);
        if (!e && j->sync && fsync(fd) != 0)
            e = errno, fs = true;
        pthread_mutex_lock(&c->pw.mu);
        if (e && !c->pw_errno) {
            c->pw_errno = e;
            c->pw_fsync = fs;
        }
        if (!e && j->sync)
            c->pw_synced = j->target;
        c->pj_head++;
        pthread_cond_broadcast(&c->pw.cv);
    }
    pthread_mutex_unlock(&c->pw.mu);
}

/* The writer thread, started on first use; false: none (write here). */
static bool sqlcap_pw_up(sqlcap *c)
{
    if (c->pw.up)
        return true;
    if (c->pw_failed)
        return false;
    c->pw_failed = true; /* unless everything below works */
    if (!(c->pj = calloc(SQLCAP_PJOBS, sizeof *c->pj)))
        return false;
    c->pj_head = c->pj_tail = 0;
    if (tb_worker_start(&c->pw, sqlcap_pw_job, c, NULL) != TB_OK) {
        free(c->pj);
        c->pj = NULL;
        return false;
    }
    c->pw_failed = false;
    return true;
}

/* Queue the current pieces (may be none) and optionally an fsync up to target;
 * the main thread continues with the slot's old, written buffers. */
static void sqlcap_pw_push(sqlcap *c, bool sync, size_t target)
{
    uint64_t total = c->piece_bytes;
    pthread_mutex_lock(&c->pw.mu);
    while (c->pj_tail - c->pj_head >= SQLCAP_PJOBS)
        pthread_cond_wait(&c->pw.cv, &c->pw.mu);
    struct sqlcap_pjob *j = &c->pj[c->pj_tail % SQLCAP_PJOBS];
    sqlcap_piece *tp = j->pieces;
    size_t tc = j->cappieces;
    tb_buf tbuf = j->buf;
    j->pieces = c->pieces;
    j->npieces = c->npieces;
    j->cappieces = c->cappieces;
    j->buf = c->iobuf;
    j->off = c->pend_bytes;
    j->total = total;
    j->sync = sync;
    j->target = target;
    c->pj_tail++;
    pthread_mutex_unlock(&c->pw.mu);
    tb_worker_wake(&c->pw);
    c->pieces = tp;
    c->cappieces = tc;
    c->iobuf = tbuf;
    c->pend_bytes += total;
    sqlcap_pend_pieces_drop(c);
}

tb_code sqlcap_pend_pieces_write(sqlcap *c, tb_error *err)
{
    if (!c->npieces)
        return TB_OK;
    if (!c->pw_direct && sqlcap_pw_up(c)) {
        sqlcap_pw_push(c, false, 0);
        return TB_OK;
    }
    uint64_t total = c->piece_bytes;
    int e = sqlcap_pieces_out(c->pendfd, c->pieces, c->npieces, &c->iobuf);
    if (e) /* what is in the file is only a torn tail for pend_replay */
        return tb_error_set(err, TB_ERR_IO, true, "%s: write: %s", c->shadow_pend_path, strerror(e));
    /* start the writeback now (advisory): the fsync before delivery waits less */
    (void)sync_file_range(c->pendfd, (off_t)c->pend_bytes, (off_t)total, SYNC_FILE_RANGE_WRITE);
    c->pend_bytes += total;
    sqlcap_pend_pieces_drop(c);
    return TB_OK;
}

tb_code sqlcap_sync_start(sqlcap *c, tb_error *err)
{
    tb_code rc = sqlcap_pend_ahead(c, err);
    if (rc != TB_OK || c->pendfd < 0)
        return rc;
    if (!sqlcap_pw_up(c))
        return sqlcap_pend_log(c, err); /* no thread: synchronously */
    sqlcap_pw_push(c, true, c->nun); /* with the pieces not written yet */
    c->sync_inflight = true;
    c->sync_seq = c->pj_tail;
    return TB_OK;
}

tb_code sqlcap_pend_fsync(sqlcap *c, tb_error *err)
{
    if (c->pw.up && !c->pw_direct) {
        sqlcap_pw_push(c, true, c->nun);
        c->sync_inflight = true;
        return sqlcap_sync_wait(c, err);
    }
    if (c->pendfd >= 0 && fsync(c->pendfd) != 0)
        return tb_error_set(err, TB_ERR_IO, true, "%s: fsync: %s", c->shadow_pend_path, strerror(errno));
    return TB_OK;
}

/* Wait until the jobs before upto are done (the errors of jobs after it
 * come later), then as sqlcap_sync_wait. */
static tb_code sqlcap_sync_wait_upto(sqlcap *c, size_t upto, tb_error *err)
{
    if (!c->pw.up)
        return TB_OK;
    pthread_mutex_lock(&c->pw.mu);
    while (c->pj_head < upto)
        pthread_cond_wait(&c->pw.cv, &c->pw.mu);
    int e = c->pw_errno;
    bool fs = c->pw_fsync;
    size_t synced = c->pw_synced;
    c->pw_errno = 0;
    pthread_mutex_unlock(&c->pw.mu);
    bool inflight = c->sync_inflight;
    c->sync_inflight = false;
    if (e)
        return tb_error_set(err, TB_ERR_IO, true, "%s: %s: %s", c->shadow_pend_path, fs ? "fsync" : "write",
                            strerror(e));
    if (inflight && synced > c->pend_logged)
        c->pend_logged = synced;
    return TB_OK;
}

tb_code sqlcap_sync_wait(sqlcap *c, tb_error *err)
{
    return sqlcap_sync_wait_upto(c, c->pw.up ? c->pj_tail : 0, err);
}

tb_code sqlcap_sync_wait_fsync(sqlcap *c, tb_error *err)
{
    return sqlcap_sync_wait_upto(c, c->pw.up && c->sync_inflight ? c->sync_seq : 0, err);
}

void sqlcap_sync_stop(sqlcap *c)
{
    if (!c->pw.up)
        return;
    tb_worker_wait_idle(&c->pw); /* what is queued is written first */
    tb_worker_stop(&c->pw);
    for (size_t i = 0; i < SQLCAP_PJOBS; i++) {
        free(c->pj[i].pieces);
        tb_buf_free(&c->pj[i].buf);
    }
    free(c->pj);
    c->pj = NULL;
}

/* .pend is rewritten with its live records once it passes the WAL bound
 * (wal_max_bytes; 64 MiB without one) and is more than twice their size: a
 * continuous stream rarely lets it be truncated (something is always
 * unacknowledged), so this is what keeps it as small as the WAL. */
bool sqlcap_pend_compact_due(const sqlcap *c)
{
    uint64_t limit = c->o.wal_max_bytes > 0 ? (uint64_t)c->o.wal_max_bytes : (uint64_t)64 << 20;
    if (c->pend_bytes <= limit)
        return false;
    uint64_t live = 0;
    for (size_t t = 0; t < c->pend_logged && t < c->nun; t++)
        live += (uint64_t)c->un[t].n * (c->pg.pgsz + 8) + 64;
    return c->pend_bytes > 2 * live;
}

/* Append the .pend record of un[t] to b: u32 length, then that transaction's
 * redo. On failure b is as it was. */
static tb_code sqlcap_pend_record(sqlcap *c, size_t t, tb_buf *b, tb_error *err)
{
    size_t at = b->len;
    uint8_t lb[4] = {0};
    if (tb_buf_append(b, lb, 4) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "shadow: out of memory");
    tb_code rc = sqlcap_redo_build(c, t, t + 1, b, err);
    if (rc != TB_OK) {
        b->len = at;
        return rc;
    }
    sqlcap_put_be32((uint8_t *)b->data + at, (uint32_t)(b->len - at - 4));
    return TB_OK;
}

/* Append records for un[from .. to) (u32 length + one-transaction redo each) to fd. */
static tb_code sqlcap_pend_write(sqlcap *c, int fd, size_t from, size_t to, uint64_t *bytes, tb_error *err)
{
    tb_code rc = TB_OK;
    tb_buf *b = &c->iobuf; /* kept across calls: no allocation (and page faults) per batch */
    uint64_t total = 0;
    tb_buf_reset(b);
    for (size_t t = from; t < to && rc == TB_OK; t++) {
        rc = sqlcap_pend_record(c, t, b, err);
        /* written in chunks of about SQLCAP_IOBUF bytes; durable only with the fsync below */
        if (rc == TB_OK && (b->len >= SQLCAP_IOBUF || t + 1 == to)) {
            rc = sqlcap_write_all(fd, b->data, b->len, c->shadow_pend_path, err);
            total += b->len;
            tb_buf_reset(b);
        }
    }
    if (rc == TB_OK && total && fsync(fd) != 0)
        rc = tb_error_set(err, TB_ERR_IO, true, "%s: fsync: %s", c->shadow_pend_path, strerror(errno));
    if (rc == TB_OK)
        *bytes += total;
    if (b->cap > 2 * (size_t)SQLCAP_IOBUF)
        tb_buf_free(b); /* one huge transaction: do not keep its size */
    return rc;
}

/* Rewrite .pend with the live records only (tmp file, fsync, rename). */
tb_code sqlcap_pend_compact(sqlcap *c, tb_error *err)
{
    uint64_t bytes = 0;
    tb_file_replace r;
    tb_code rc = tb_file_replace_begin(&r, c->shadow_pend_path, 0666, O_APPEND, err);
    if (rc != TB_OK) {
        if (err)
            err->retriable = true;
        return rc;
    }
    sqlcap_pend_pieces_drop(c); /* iobuf is reused below; pend_written goes back to pend_logged */
    int fd = r.fd;
    rc = sqlcap_pend_write(c, fd, 0, c->pend_logged, &bytes, err);
    if (rc == TB_OK && (rc = tb_file_replace_commit(&r, true, err)) != TB_OK && err)
        err->retriable = true;
    tb_file_replace_abort(&r);
    if (rc != TB_OK)
        return rc;
    if (c->pendfd >= 0)
        close(c->pendfd);
    c->pendfd = fd;
    c->pend_bytes = bytes;
    c->pend_written = c->pend_logged; /* iobuf was reused: records written ahead come again */
    return TB_OK;
}

/*
 * WHY .pend EXISTS (the kill9_restart_shadow race). The consumer stores a
 * position P durably and only then calls sqlcap_ack(P), which advances the
 * shadow. A crash between the two leaves the shadow behind the durable
 * position, and the page images of (shadow, P] were only in memory. If the
 * WAL is then reset while the reader is down, those frames are gone too, and
 * the gap (net diff shadow -> now) was computed against a state the consumer
 * had already left: changes it had applied came again with stale
 * before-images, and a row inserted after the shadow and deleted before the
 * restart produced no event at all, so the consumer kept it forever. So
 * before the end of a transaction can reach the consumer, its pages are made
 * durable here; on resume the shadow is rolled forward through them to
 * exactly the consumer's position (sqlcap_pend_replay).
 */
static tb_code sqlcap_pend_more(sqlcap *c, bool flush, tb_error *err)
{
    tb_code rc = TB_OK;
    if (c->pendfd < 0) {
        c->pendfd = open(c->shadow_pend_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (c->pendfd < 0)
            return tb_error_set(err, TB_ERR_IO, true, "%s: %s", c->shadow_pend_path, strerror(errno));
    }
    for (; c->pend_written < c->nun; c->pend_written++)
        if ((rc = sqlcap_pend_queue(c, c->pend_written, err)) != TB_OK)
            return rc;
    if (c->piece_bytes && (flush || c->piece_bytes >= SQLCAP_IOBUF))
        rc = sqlcap_pend_pieces_write(c, err); /* on failure what is in the file is only a torn tail */
    return rc;
}

tb_code sqlcap_pend_ahead(sqlcap *c, tb_error *err)
{
    if (!c->o.shadow || !c->shadow_pend_path || c->trig)
        return TB_OK;
    return sqlcap_pend_more(c, false, err);
}

tb_code sqlcap_pend_log(sqlcap *c, tb_error *err)
{
    if (!c->o.shadow || !c->shadow_pend_path || c->trig)
        return TB_OK;
    tb_code rc = sqlcap_sync_wait(c, err);
    if (rc != TB_OK || c->pend_logged >= c->nun)
        return rc;
    rc = sqlcap_pend_more(c, true, err);
    if (rc == TB_OK)
        rc = sqlcap_pend_fsync(c, err);
    if (rc == TB_OK)
        c->pend_logged = c->nun;
    return rc;
}

tb_code sqlcap_pend_replay(sqlcap *c, tb_position *sp, const tb_position *start, tb_error *err)
{
    tb_buf t;
    tb_buf_init(&t, 0);
    tb_code rc = tb_file_read(c->shadow_pend_path, SIZE_MAX, &t, err);
    if (rc == TB_ERR_NOT_FOUND) {
        rc = TB_OK; /* nothing logged */
        tb_error_clear(err);
    }
    const uint8_t *p = (const uint8_t *)t.data, *end = p + t.len;
    const size_t ml = strlen("SQLCAPREDO1\n");
    while (rc == TB_OK && start && start->kind == TB_POS_SQLITE_WAL && end - p >= 4) {
        uint32_t len = sqlcap_be32(p);
        if ((size_t)(end - p - 4) < len || len < ml + 12)
            break; /* torn tail: never fsynced, so never handed to the consumer */
        const uint8_t *rec = p + 4, *nl = memchr(rec + ml, '\n', len - ml);
        p += 4 + (size_t)len;
        if (!nl)
            break;
        tb_position rp;
        tb_position_init(&rp);
        char *txt = strndup((const char *)rec + ml, (size_t)(nl - (rec + ml)));
        if (!txt || tb_position_parse(txt, &rp, NULL) != TB_OK) {
            free(txt);
            break;
        }
        free(txt);
        bool apply = !sqlcap_pos_le(&rp, sp) && sqlcap_pos_le(&rp, start);
        bool past = !sqlcap_pos_le(&rp, start);
        tb_position_free(&rp);
        if (past)
            break;
        if (!apply)
            continue;
        /* redo_apply writes the pages, fsyncs, then the .pos: a crash in
         * between re-applies this record (whole page images) next time */
        if ((rc = sqlcap_redo_apply(c, rec, len, &rp, err)) == TB_OK)
            rc = tb_position_copy(sp, &rp) == TB_OK ? TB_OK
                                                    : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        tb_position_free(&rp);
    }
    tb_buf_free(&t);
    /* records past start were never durable downstream: they are re-read from the WAL or come in the gap */
    if (rc == TB_OK)
        unlink(c->shadow_pend_path);
    return rc;
}
