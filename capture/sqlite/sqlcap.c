/*
 * sqlcap: the public API (sqlcap.h) for WAL mode: open and attach, resume or
 * gap (sqlite-wal.md 2.11), snapshot hand-off, offline decoding, delivery
 * and acknowledgement. Reading frames and polling: sqlcap_poll.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlcap_priv.h"
#include "tb_file.h"
#include "tb_log.h"

/* ---------------------------------------------------------------- open */

/*
 * The first 100 bytes of the newest committed image of page 1 in the WAL of
 * path (frames whose salts match the WAL header, up to the last commit frame):
 * a database its application created in WAL mode and never checkpointed has
 * page 1, with the text encoding and the schema, only there. false when the
 * WAL has none.
 */
static bool sqlcap_wal_page1(const char *path, uint8_t out[100])
{
    char *wal = sqlcap_strcat3(path, "-wal");
    int fd = wal ? open(wal, O_RDONLY | O_CLOEXEC) : -1;
    free(wal);
    if (fd < 0)
        return false;
    bool found = false;
    uint8_t hb[32], fh[24], cand[100];
    sqlcap_walhdr w;
    off_t cand_off = -1;
    if (pread(fd, hb, 32, 0) == 32 && (sqlcap_walhdr_parse(hb, &w), w.valid)) {
        for (off_t off = 32; pread(fd, fh, 24, off) == 24; off += 24 + (off_t)w.pgsz) {
            if (sqlcap_be32(fh + 8) != w.salt1 || sqlcap_be32(fh + 12) != w.salt2)
                break;
            if (sqlcap_be32(fh) == 1)
                cand_off = off + 24;
            if (sqlcap_be32(fh + 4) && cand_off >= 0 && pread(fd, cand, 100, cand_off) == 100) {
                memcpy(out, cand, 100); /* committed */
                found = true;
            }
        }
    }
    close(fd);
    return found;
}

static tb_code sqlcap_db_header(sqlcap *c, tb_error *err)
{
    uint8_t b[100];
    ssize_t r = pread(c->dbfd, b, 100, 0);
    /* page 1 only in the WAL (or its text encoding not set in the file yet):
     * a fresh database, not checkpointed since it was created */
    if ((r != 100 || sqlcap_be32(b + 56) == 0) && sqlcap_wal_page1(c->path, b))
        r = 100;
    if (r != 100)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: no database header (%zd bytes)", c->path, r);
    if (memcmp(b, "SQLite format 3", 16) != 0)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: not an SQLite 3 database", c->path);
    uint32_t ps = sqlcap_be16(b + 16);
    c->pg.pgsz = ps == 1 ? 65536 : ps;
    if (c->pg.pgsz < 512 || (c->pg.pgsz & (c->pg.pgsz - 1)) || c->pg.pgsz - b[20] < 480)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: page size %u with %u reserved bytes is not valid",
                            c->path, c->pg.pgsz, b[20]);
    c->pg.usable = c->pg.pgsz - b[20];
    /* 0: no schema yet (no table was ever created): SQLite sets the encoding
     * with the first table, whose frames the reader then decodes */
    if (sqlcap_be32(b + 56) > 1)
        return tb_error_set(err, TB_ERR_UNSUPPORTED, false, "%s: text encoding %u (only UTF-8 is supported)", c->path,
                            sqlcap_be32(b + 56));
    if (!c->o.offline && (b[18] != 2 || b[19] != 2))
        return tb_error_set(err, TB_ERR_UNSUPPORTED, false,
                            "%s: not in WAL mode (use source.sqlite.mode=trigger, or PRAGMA journal_mode=WAL)", c->path);
    c->npages = sqlcap_be32(b + 28);
    /* a corrupt header must not size the page maps: the database holds at most
     * the file's pages plus what its WAL can add (sqlcap_consume's bound) */
    struct stat sb;
    uint64_t limit = fstat(c->dbfd, &sb) == 0 ? (uint64_t)sb.st_size / c->pg.pgsz + 1 : 1;
    char *wal = sqlcap_strcat3(c->path, "-wal");
    if (wal && stat(wal, &sb) == 0)
        limit += (uint64_t)sb.st_size / (c->pg.pgsz + 24) * (c->pg.usable / 4 + 1);
    free(wal);
    if (c->npages > limit)
        c->npages = (uint32_t)(limit < UINT32_MAX ? limit : UINT32_MAX);
    return TB_OK;
}

/* Overlay (frame refs) = newest frame <= upto of every page, and the db size. */
static tb_code sqlcap_overlay_frames(sqlcap *c, uint32_t upto, sqlcap_map *into, uint32_t *npages, tb_error *err)
{
    for (uint32_t i = 1; i <= upto; i++) {
        sqlcap_frame f = {0};
        tb_code rc = sqlcap_frame_hdr(c, i, &f, NULL, err);
        if (rc != TB_OK)
            return rc;
        if (sqlcap_map_put(into, f.pgno, i) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (f.commit) {
            *npages = f.commit;
            c->ck1 = f.ck1;
            c->ck2 = f.ck2;
        }
    }
    return TB_OK;
}

static tb_code sqlcap_open_files(sqlcap *c, tb_error *err)
{
    char *wal = sqlcap_strcat3(c->path, "-wal"), *shm = sqlcap_strcat3(c->path, "-shm");
    tb_code rc = TB_OK;
    struct stat sb;
    if (!wal || !shm) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    c->dbfd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (c->dbfd < 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: %s", c->path, strerror(errno));
        goto out;
    }
    if ((rc = sqlcap_db_header(c, err)) != TB_OK)
        goto out;
    if (!c->o.offline) {
        /* the reader connections first, so SQLite opens or creates the -shm */
        if ((rc = sqlcap_open_reader(c, &c->R[0], err)) != TB_OK || (rc = sqlcap_open_reader(c, &c->R[1], err)) != TB_OK)
            goto out;
        if ((rc = sqlcap_begin(c, 0, err)) != TB_OK)
            goto out;
        c->protector = 0;
        c->shmfd = open(shm, O_RDONLY | O_CLOEXEC);
        if (c->shmfd < 0) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: %s", shm, strerror(errno));
            goto out;
        }
    }
    c->walfd = open(wal, O_RDONLY | O_CLOEXEC);
    if (c->walfd < 0) {
        rc = tb_error_set(err, errno == ENOENT ? TB_ERR_NOT_FOUND : TB_ERR_IO, true, "%s: %s", wal, strerror(errno));
        goto out;
    }
    if (fstat(c->walfd, &sb) == 0)
        c->inode = (uint64_t)sb.st_ino;
    c->pg.dbfd = c->dbfd;
    c->pg.walfd = c->walfd;
    c->pg.basefd = c->dbfd;
    c->pg.overlay = &c->overlay;
out:
    free(wal);
    free(shm);
    return rc;
}

static tb_code sqlcap_shadow_create(sqlcap *c, tb_error *err)
{
    uint8_t *buf = malloc(c->pg.pgsz);
    sqlcap_view v = {&c->pg, NULL, c->npages};
    tb_code rc = TB_OK;
    tb_position p;
    tb_position_init(&p);
    if (!buf)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    unlink(c->shadow_redo_path);
    unlink(c->shadow_pend_path);
    if (ftruncate(c->shadowfd, 0) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: truncate: %s", c->shadow_path, strerror(errno));
        goto out;
    }
    for (uint32_t pg = 1; pg <= c->npages; pg++) {
        if ((rc = sqlcap_view_read(&v, pg, buf, err)) != TB_OK)
            goto out;
        if (pwrite(c->shadowfd, buf, c->pg.pgsz, (off_t)(pg - 1) * c->pg.pgsz) != (ssize_t)c->pg.pgsz) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: write: %s", c->shadow_path, strerror(errno));
            goto out;
        }
    }
    if (fsync(c->shadowfd) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: fsync: %s", c->shadow_path, strerror(errno));
        goto out;
    }
    sqlcap_pos_make(c, c->frame, c->ck1, c->ck2, c->npages, &p);
    rc = sqlcap_shadow_meta(c, &p, err);
out:
    tb_position_free(&p);
    free(buf);
    return rc;
}

/* Gap (2.11): one transaction = every page where the current state differs from the shadow. */
static tb_code sqlcap_gap(sqlcap *c, const sqlcap_shmhdr *h, const sqlcap_walhdr *w, tb_error *err)
{
    sqlcap_map cur = {0}, diff = {0};
    uint32_t curpages = c->npages;
    uint8_t *a = malloc(c->pg.pgsz), *b = malloc(c->pg.pgsz);
    tb_code rc = TB_OK;
    if (!a || !b) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    c->salt1 = h->salt1;
    c->salt2 = h->salt2;
    /* The shadow may be behind the durable resume position (the consumer
     * stored it, then died before sqlcap_ack advanced the shadow), and that
     * position may already carry a later gen_seq (a generation switch or an
     * earlier gap). Numbering this gap from the shadow's gen_seq could reuse
     * the resume position's gen_seq for a different WAL generation, and the
     * frames of the new generation up to the old resume frame would then be
     * skipped as "already delivered". The gap covers everything up to now,
     * so it gets a gen_seq above both, and nothing after it is skipped. */
    if (c->skip_to.kind == TB_POS_SQLITE_WAL && c->skip_to.gen_seq > c->gen_seq)
        c->gen_seq = c->skip_to.gen_seq;
    c->gen_seq++;
    tb_position_free(&c->skip_to);
    c->frame = 0;
    c->ck1 = w->valid ? w->ck1 : 0;
    c->ck2 = w->valid ? w->ck2 : 0;
    /* With everything backfilled our read transaction may hold WAL_READ_LOCK(0),
     * which does not stop a WAL reset: read the database file only, which no
     * checkpoint can change while we hold the read transaction. */
    bool db_only = h->nbackfill >= h->mxframe;
    if (!db_only && w->valid && w->salt1 == h->salt1 && w->salt2 == h->salt2 && h->mxframe > 0) {
        if ((rc = sqlcap_overlay_frames(c, h->mxframe, &cur, &curpages, err)) != TB_OK)
            goto out;
    } else {
        struct stat sb;
        uint8_t hdr[4];
        if (pread(c->dbfd, hdr, 4, 28) == 4 && sqlcap_be32(hdr) > 0)
            curpages = sqlcap_be32(hdr);
        else if (fstat(c->dbfd, &sb) == 0)
            curpages = (uint32_t)(sb.st_size / c->pg.pgsz);
        if (db_only && h->mxframe > 0) {
            sqlcap_frame f = {0};
            if (sqlcap_frame_hdr(c, h->mxframe, &f, NULL, NULL) == TB_OK) {
                c->ck1 = f.ck1;
                c->ck2 = f.ck2;
            }
        }
    }
    sqlcap_view vs = {&c->pg, NULL, c->npages};
    for (uint32_t p = 1; p <= curpages; p++) {
        uint64_t src = SQLCAP_FROM_DB;
        (void)sqlcap_map_get(&cur, p, &src);
        if (sqlcap_map_put(&diff, p, src) != TB_OK) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        sqlcap_view vc = {&c->pg, &diff, curpages};
        if ((rc = sqlcap_view_read(&vc, p, a, err)) != TB_OK || (rc = sqlcap_view_read(&vs, p, b, err)) != TB_OK)
            goto out;
        if (p <= c->npages && memcmp(a, b, c->pg.pgsz) == 0)
            sqlcap_map_del(&diff, p);
    }
    /* The application checkpointed and reset the WAL while the reader was down (its last
     * connection closing does that): with the database as the shadow left it, no change was
     * merged away, and that is the normal course of an idle database. The reconcile step runs
     * either way (rows delivered after the committed position may be gone). */
    if (diff.n == 0 && curpages == c->npages)
        TB_INFO(SQLCAP_FAC, "%s: the WAL was reset while the reader was down; the database is as at the committed "
                            "position (nothing changed meanwhile): an empty gap transaction",
                c->path);
    else
        TB_WARN(SQLCAP_FAC, "%s: the WAL was reset while the reader was down: emitting one net-diff gap transaction "
                            "(%zu page(s) changed; the changes made meanwhile arrive as one, their order and "
                            "intermediate values lost)",
                c->path, diff.n);
    c->gap = true;
    c->gap_taken = true;
    rc = sqlcap_apply_txn(c, &diff, h->mxframe, c->ck1, c->ck2, curpages, true, err);
    if (rc == TB_OK && !c->o.shadow)
        sqlcap_map_clear(&c->overlay);
out:
    free(a);
    free(b);
    sqlcap_map_free(&cur);
    sqlcap_map_free(&diff);
    return rc;
}

static tb_code sqlcap_attach(sqlcap *c, const tb_position *start, tb_error *err)
{
    sqlcap_shmhdr h = {0};
    sqlcap_walhdr w;
    tb_code rc;
    bool resume = start && start->kind == TB_POS_SQLITE_WAL;
    if ((rc = sqlcap_walhdr_read(c, &w, err)) != TB_OK)
        return rc;
    if (c->o.offline) {
        if (!w.valid)
            return TB_OK; /* empty WAL: nothing to decode */
        if (w.pgsz != c->pg.pgsz)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "%s-wal: page size %u, database %u", c->path, w.pgsz,
                                c->pg.pgsz);
        c->salt1 = w.salt1;
        c->salt2 = w.salt2;
        c->ck1 = w.ck1;
        c->ck2 = w.ck2;
        return sqlcap_engine_attach(c->eng, c->npages, err);
    }
    if ((rc = sqlcap_shm(c, &h, err)) != TB_OK)
        return rc;
    if (!resume) {
        c->salt1 = h.salt1;
        c->salt2 = h.salt2;
        c->gen_seq = 0;
        if (w.valid && w.salt1 == h.salt1 && w.salt2 == h.salt2) {
            c->ck1 = w.ck1;
            c->ck2 = w.ck2;
            if ((rc = sqlcap_overlay_frames(c, h.mxframe, &c->overlay, &c->npages, err)) != TB_OK)
                return rc;
            c->frame = h.mxframe;
        } else {
            c->frame = 0;
            c->ck1 = w.ck1;
            c->ck2 = w.ck2;
            struct stat sb;
            if (fstat(c->dbfd, &sb) == 0 && sb.st_size >= c->pg.pgsz)
                c->npages = (uint32_t)(sb.st_size / c->pg.pgsz);
        }
        if (c->o.shadow) {
            if ((rc = sqlcap_shadow_create(c, err)) != TB_OK)
                return rc;
            sqlcap_map_clear(&c->overlay);
            c->pg.basefd = c->shadowfd;
            c->pg.overlay_images = true;
            c->shadow_pages = c->npages;
        }
        return sqlcap_engine_attach(c->eng, c->npages, err);
    }
    /* resume */
    c->gen_seq = start->gen_seq;
    if (c->o.shadow) {
        tb_buf t;
        tb_position sp;
        tb_buf_init(&t, 0);
        tb_position_init(&sp);
        if (tb_file_read(c->shadow_redo_path, SIZE_MAX, &t, NULL) == TB_OK && t.len) {
            if (sqlcap_redo_apply(c, (const uint8_t *)t.data, t.len, &sp, NULL) != TB_OK)
                unlink(c->shadow_redo_path); /* incomplete: the shadow was not touched */
        }
        tb_buf_reset(&t);
        rc = tb_file_read(c->shadow_pos_path, 0, &t, NULL);
        while (rc == TB_OK && t.len && (t.data[t.len - 1] == '\n' || t.data[t.len - 1] == '\r'))
            t.data[--t.len] = 0;
        if (rc == TB_OK)
            rc = tb_position_parse(tb_buf_cstr(&t), &sp, err);
        tb_buf_free(&t);
        /* roll the shadow forward to the consumer's durable position (.pend, see sqlcap_pend_log) */
        if (rc == TB_OK && (rc = sqlcap_pend_replay(c, &sp, start, err)) != TB_OK) {
            tb_position_free(&sp);
            return rc;
        }
        if (rc != TB_OK) {
            tb_position_free(&sp);
            return tb_error_set(err, TB_ERR_STATE, false, "%s: no usable shadow position (%s): resnapshot needed",
                                c->shadow_pos_path, tb_code_name(rc));
        }
        if (!sqlcap_pos_le(&sp, start))
            TB_WARN(SQLCAP_FAC, "%s: shadow is ahead of the resume position; resuming from the shadow", c->path);
        c->salt1 = sp.salt1;
        c->salt2 = sp.salt2;
        c->gen_seq = sp.gen_seq;
        c->frame = sp.frame;
        c->ck1 = sp.cksum1;
        c->ck2 = sp.cksum2;
        c->npages = sp.db_pages;
        c->shadow_pages = sp.db_pages;
        tb_position_free(&sp);
        c->pg.basefd = c->shadowfd;
        c->pg.overlay_images = true;
        tb_ignore(tb_position_copy(&c->skip_to, start)); /* a SQLite position owns no strings */
        if ((rc = sqlcap_engine_attach(c->eng, c->npages, err)) != TB_OK)
            return rc;
    } else {
        c->salt1 = start->salt1;
        c->salt2 = start->salt2;
        c->frame = start->frame;
        c->ck1 = start->cksum1;
        c->ck2 = start->cksum2;
        c->npages = start->db_pages;
    }
    /* same generation and the frame still has the stored checksum? */
    bool same = w.valid && w.salt1 == c->salt1 && w.salt2 == c->salt2 && h.salt1 == c->salt1 &&
                h.salt2 == c->salt2 && c->frame <= h.mxframe;
    if (same && c->frame > 0) {
        sqlcap_frame f = {0};
        if ((rc = sqlcap_frame_hdr(c, c->frame, &f, NULL, err)) != TB_OK)
            return rc;
        same = f.ck1 == c->ck1 && f.ck2 == c->ck2 && f.commit;
    } else if (same) {
        same = w.ck1 == c->ck1 && w.ck2 == c->ck2;
    }
    if (c->o.shadow) {
        /* frames after P are safe only if our pin blocks resets (a mark >= 1):
         * fully backfilled means we may hold lock 0, so take the state from the
         * database file as a gap instead */
        if (same && !(h.nbackfill >= h.mxframe && c->frame < h.mxframe))
            return TB_OK;
        return sqlcap_gap(c, &h, &w, err);
    }
    if (!same || h.nbackfill > c->frame)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "%s: cannot resume exactly at frame %u without a shadow (WAL reset or checkpointed "
                            "meanwhile): resnapshot needed", c->path, c->frame);
    uint32_t np = c->npages;
    if ((rc = sqlcap_overlay_frames(c, c->frame, &c->overlay, &np, err)) != TB_OK)
        return rc;
    c->ck1 = start->cksum1;
    c->ck2 = start->cksum2;
    if ((rc = sqlcap_engine_attach(c->eng, c->npages, err)) != TB_OK)
        return rc;
    /* Our pin's mark may be above P: a checkpoint may copy frames after P into
     * the database file while we catch up. Catch up now, then check that no
     * backfill passed P; otherwise the before-images may be wrong. */
    bool done = false;
    uint32_t p0 = c->frame;
    if ((rc = sqlcap_consume(c, h.mxframe, w.magic & 1, false, &done, err)) != TB_OK)
        return rc;
    sqlcap_shmhdr h2;
    if ((rc = sqlcap_shm(c, &h2, err)) != TB_OK)
        return rc;
    if (h2.salt1 != c->salt1 || h2.salt2 != c->salt2 || h2.nbackfill > p0)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "%s: a checkpoint ran past frame %u while catching up without a shadow: resnapshot needed",
                            c->path, p0);
    return TB_OK;
}

static char *sqlcap_stem(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    return strndup(b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

tb_code sqlcap_list_tables(const cfg *c, sqlcap_name_fn fn, void *opaque, tb_error *err)
{
    const char *path = cfg_get_str(c, CFGK_SOURCE_PATH), *named = cfg_get_str(c, CFGK_SOURCE_DATABASE_NAME);
    if (!path)
        return tb_error_set(err, TB_ERR_CONFIG, false, "source.type=sqlite needs source.path");
    char *stem = named ? NULL : sqlcap_stem(path);
    if (!named && !stem)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int src = sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL);
    if (src == SQLITE_OK)
        src = sqlite3_prepare_v2(h,
                                 "SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' "
                                 "AND name NOT IN ('_cdc_log', '_cdc_repl')",
                                 -1, &st, NULL);
    while (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
        fn(opaque, named ? named : stem, (const char *)sqlite3_column_text(st, 0));
        src = SQLITE_OK;
    }
    tb_code rc = TB_OK;
    if (src != SQLITE_DONE)
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "SQLite database %s: %s", path,
                          h ? sqlite3_errmsg(h) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(h);
    free(stem);
    return rc;
}

typedef struct exists_ctx {
    const char *db, *table;
    bool found;
} exists_ctx;

static void exists_one(void *opaque, const char *db, const char *table)
{
    exists_ctx *x = opaque;
    x->found = x->found || (strcmp(db, x->db) == 0 && strcmp(table, x->table) == 0);
}

tb_code sqlcap_table_exists(const cfg *c, const char *db, const char *table, bool *exists, tb_error *err)
{
    exists_ctx x = {db, table, false};
    tb_code rc = sqlcap_list_tables(c, exists_one, &x, err);
    *exists = x.found;
    return rc;
}

tb_code sqlcap_open_opts(const sqlcap_opts *o, const tb_position *start, sqlcap **out, tb_error *err)
{
    tb_code rc = TB_OK;
    unsigned made = 0; /* bit i: file i of the shadow set did not exist before this open */
    sqlcap *c = calloc(1, sizeof *c);
    if (!c)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    c->o = *o;
    c->dbfd = c->walfd = c->shmfd = c->shadowfd = c->pendfd = -1;
    c->protector = -1;
    c->ahead_base = SIZE_MAX;
    tb_position_init(&c->pos);
    tb_position_init(&c->skip_to);
    tb_position_init(&c->acked);
    tb_buf_init(&c->iobuf, 0);
    if (!o->path) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "source.path is required for source.type=sqlite");
        goto fail;
    }
    c->path = strdup(o->path);
    c->dbname = o->dbname ? strdup(o->dbname) : sqlcap_stem(o->path);
    if (!c->path || !c->dbname)
        goto nomem;
    if (o->poll_ms <= 0)
        c->o.poll_ms = 50;
    if (o->trigger_mode) {
        if ((rc = sqlcap_trig_open(c, start, err)) != TB_OK)
            goto fail;
        *out = c;
        return TB_OK;
    }
    if (o->offline)
        c->o.shadow = false;
    if (c->o.shadow) {
        c->shadow_path = o->shadow_path ? strdup(o->shadow_path) : sqlcap_strcat3(o->path, ".tbshadow");
        if (!c->shadow_path)
            goto nomem;
        c->shadow_pos_path = sqlcap_strcat3(c->shadow_path, ".pos");
        c->shadow_redo_path = sqlcap_strcat3(c->shadow_path, ".redo");
        c->shadow_pend_path = sqlcap_strcat3(c->shadow_path, ".pend");
        if (!c->shadow_pos_path || !c->shadow_redo_path || !c->shadow_pend_path)
            goto nomem;
        /* what this open creates, a failed open removes (no 0-byte shadow left behind) */
        const char *mine[4] = {c->shadow_path, c->shadow_pos_path, c->shadow_redo_path, c->shadow_pend_path};
        for (int i = 0; i < 4; i++)
            if (access(mine[i], F_OK) != 0)
                made |= 1u << i;
        c->shadowfd = open(c->shadow_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (c->shadowfd < 0) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: %s", c->shadow_path, strerror(errno));
            goto fail;
        }
    }
    if ((rc = sqlcap_open_files(c, err)) != TB_OK)
        goto fail;
    c->eng = sqlcap_engine_new(&c->pg, c->dbname);
    if (!c->eng)
        goto nomem;
    sqlcap_engine_set_ddl(c->eng, o->ddl_drop_rows, o->ddl_rename_rows, o->ddl_alter_rows, o->drop_events);
    sqlcap_engine_set_table_marks(c->eng, o->new_table_events);
    if ((rc = sqlcap_attach(c, start, err)) != TB_OK)
        goto fail;
    if (c->evq.n == 0) {
        sqlcap_pos_make(c, c->frame, c->ck1, c->ck2, c->npages, &c->pos);
        if (start && start->kind == TB_POS_SQLITE_WAL && sqlcap_pos_le(&c->pos, start))
            tb_ignore(tb_position_copy(&c->pos, start)); /* a SQLite position owns no strings */
    }
    TB_INFO(SQLCAP_FAC, "%s: capturing (wal mode, %s), page size %u, %u pages, frame %u", c->path,
            c->o.shadow ? "shadow" : "no shadow", c->pg.pgsz, c->npages, c->frame);
    *out = c;
    return TB_OK;
nomem:
    rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
fail:
    if (made) {
        const char *mine[4] = {c->shadow_path, c->shadow_pos_path, c->shadow_redo_path, c->shadow_pend_path};
        for (int i = 0; i < 4; i++)
            if (made & (1u << i))
                unlink(mine[i]);
    }
    sqlcap_close(c);
    return rc;
}

tb_code sqlcap_open(const cfg *cf, const tb_position *start, sqlcap **out, tb_error *err)
{
    sqlcap_opts o = {0};
    o.path = cfg_get_str(cf, CFGK_SOURCE_PATH);
    o.dbname = cfg_get_str(cf, CFGK_SOURCE_DATABASE_NAME);
    const char *mode = cfg_get_str(cf, CFGK_SOURCE_SQLITE_MODE);
    o.trigger_mode = mode && strcmp(mode, "trigger") == 0;
    o.shadow = cfg_get_bool(cf, CFGK_SOURCE_SQLITE_SHADOW);
    o.shadow_path = cfg_get_str(cf, CFGK_SOURCE_SQLITE_SHADOW_PATH);
    tb_buf dflt_shadow;
    tb_buf_init(&dflt_shadow, 0);
    if (!o.shadow_path) {
        if (cfg_connector_file(cf, ".shadow.db", &dflt_shadow) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        o.shadow_path = tb_buf_cstr(&dflt_shadow);
    }
    const char *ck = cfg_get_str(cf, CFGK_SOURCE_SQLITE_CHECKPOINT);
    o.checkpoint = ck && (strcmp(ck, "on") == 0 || strcmp(ck, "barrier") == 0);
    o.checkpoint_barrier = ck && strcmp(ck, "barrier") == 0;
    o.poll_ms = (int)cfg_get_int(cf, CFGK_SOURCE_SQLITE_POLL_MS);
    o.wal_max_bytes = cfg_get_int(cf, CFGK_SOURCE_SQLITE_WAL_MAX_BYTES);
    o.ddl_drop_rows = strcmp(cfg_get_str(cf, CFGK_DDL_DROP_POLICY), "tombstone") == 0;
    o.ddl_rename_rows = true;
    o.ddl_alter_rows = strcmp(cfg_get_str(cf, CFGK_DDL_ALTER_POLICY), "resnapshot") == 0;
    o.drop_events = true;
    o.new_table_events = true;
    tb_code rc = sqlcap_open_opts(&o, start, out, err);
    tb_buf_free(&dflt_shadow);
    return rc;
}

/* ---------------------------------------------------------------- gaps */

bool sqlcap_take_gap(sqlcap *c)
{
    bool g = c->gap_taken;
    c->gap_taken = false;
    return g;
}

tb_code sqlcap_scan_tables(sqlcap *c, sqlcap_table_fn on_table, sqlcap_row_fn on_row, void *opaque, tb_error *err)
{
    if (c->trig)
        return sqlcap_trig_scan(c, on_table, on_row, opaque, err);
    const sqlcap_schema *s = sqlcap_engine_schema(c->eng);
    sqlcap_evlist rows = {0};
    tb_code rc = TB_OK;
    for (size_t i = 0; rc == TB_OK && i < s->n; i++) {
        const sqlcap_tbl *t = s->tbls[i];
        if (!t->captured)
            continue;
        if ((rc = on_table(opaque, t->et, false, err)) != TB_OK)
            break;
        size_t cursor = 0;
        do {
            rc = sqlcap_engine_scan(c->eng, t, &cursor, &rows, err);
            for (size_t k = 0; rc == TB_OK && k < rows.n; k++)
                rc = on_row(opaque, rows.v[k], err);
            sqlcap_evlist_clear(&rows);
        } while (rc == TB_OK && cursor != 0);
        if (rc == TB_OK)
            rc = on_table(opaque, t->et, true, err);
    }
    sqlcap_evlist_clear(&rows);
    free(rows.v);
    return rc;
}

/* ---------------------------------------------------------------- next */

bool sqlcap_snap_hold(sqlcap *c, bool done, tb_code *rc)
{
    *rc = TB_OK;
    if (c->snap_held) {
        evt_event **nv = sqlcap_grow(c->evq.v, c->evq.n, &c->evq.cap, sizeof *nv, 256);
        if (!nv) {
            *rc = TB_ERR_NOMEM;
            return true;
        }
        c->evq.v = nv;
        memmove(c->evq.v + 1, c->evq.v, c->evq.n * sizeof *c->evq.v);
        c->evq.v[0] = c->snap_held;
        c->evq.n++;
        c->snap_held = NULL;
    }
    if (done) {
        if (c->evq.n) {
            evt_event_set_snapshot(c->evq.v[c->evq.n - 1], EVT_SNAPSHOT_LAST);
            evt_event_set_last_in_tx(c->evq.v[c->evq.n - 1], true);
        }
        return true;
    }
    if (c->evq.n)
        c->snap_held = c->evq.v[--c->evq.n];
    return c->evq.n > 0;
}

static tb_code sqlcap_snap_step(sqlcap *c, tb_error *err)
{
    const sqlcap_schema *s = sqlcap_engine_schema(c->eng);
again:
    while (c->snap_tbl < s->n && c->evq.n == 0) {
        const sqlcap_tbl *t = s->tbls[c->snap_tbl];
        if (!t->captured) {
            c->snap_tbl++;
            continue;
        }
        tb_code rc = sqlcap_engine_scan(c->eng, t, &c->snap_cursor, &c->evq, err);
        if (rc != TB_OK)
            return rc;
        if (c->snap_cursor == 0)
            c->snap_tbl++;
    }
    tb_position p;
    tb_position_init(&p);
    sqlcap_pos_make(c, c->frame, c->ck1, c->ck2, c->npages, &p);
    for (size_t i = 0; i < c->evq.n; i++) {
        evt_event_set_position(c->evq.v[i], &p);
        evt_event_set_snapshot(c->evq.v[i], EVT_SNAPSHOT_TRUE);
        evt_event_set_commit_ts_ms(c->evq.v[i], c->seen_ms ? c->seen_ms : tb_wall_ms());
        c->snap_any = true;
    }
    tb_position_free(&p);
    bool done = c->snap_tbl >= s->n;
    tb_code rc;
    if (!sqlcap_snap_hold(c, done, &rc))
        goto again; /* one row read, held back: read on */
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "%s: snapshot: out of memory", c->path);
    if (done)
        c->snapping = false;
    return TB_OK;
}

/*
 * Make the transaction ending with ev durable in .pend before ev is handed out
 * (see sqlcap_pend_log). Its fsync runs in the helper thread; meanwhile, when
 * a full batch is queued, the next batch is consumed (read ahead: its records
 * are written, not yet synced, and its events queue behind this batch's), so
 * the wait overlaps work. Nothing read ahead is handed out before its own
 * fsync, and the position handed out is unchanged.
 */
static tb_code sqlcap_pend_durable(sqlcap *c, const evt_event *ev, tb_error *err)
{
    const tb_position *ep = evt_event_position(ev);
    /* un[] is in stream order and un[0 .. pend_logged) are durable */
#define SQLCAP_PENDING(c, ep) ((c)->pend_logged < (c)->nun && sqlcap_pos_le(&(c)->un[(c)->pend_logged].pos, (ep)))
    if (!c->o.shadow || !c->shadow_pend_path || !ep || !SQLCAP_PENDING(c, ep))
        return TB_OK;
    tb_code rc = TB_OK;
    bool ahead = !c->o.offline && !c->snapping && c->evq.n - c->evq.next >= SQLCAP_BATCH_EVENTS / 2 &&
                 c->evq.n - c->evq.next < 2 * SQLCAP_BATCH_EVENTS;
    if (ahead) {
        if (!c->sync_inflight && (rc = sqlcap_sync_start(c, err)) != TB_OK)
            return rc;
        if (c->sync_inflight) {
            c->ahead_base = c->evq.n;
            rc = sqlcap_poll(c, err);
            c->ahead_base = SIZE_MAX;
        }
    }
    tb_code wrc = sqlcap_sync_wait_fsync(c, err);
    if (rc != TB_OK)
        return rc;
    if (wrc != TB_OK || !SQLCAP_PENDING(c, ep))
        return wrc;
    /* a small batch (a writer the reader keeps up with): written and fsynced
     * here, after what is queued; handing it to the writer thread costs two
     * context switches per poll, which a writer process sharing the CPUs
     * pays (bench_sqlcap paced writer: +14% wall instead of +2%) */
    c->pw_direct = true;
    rc = sqlcap_pend_log(c, err);
    c->pw_direct = false;
    return rc;
#undef SQLCAP_PENDING
}

tb_code sqlcap_next(sqlcap *c, int timeout_ms, evt_event **ev, tb_error *err)
{
    int64_t deadline = tb_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    *ev = NULL;
    if (c->evq.next > 0) {
        sqlcap_engine_recycle(c->eng, c->evq.v[c->evq.next - 1]);
        c->evq.v[c->evq.next - 1] = NULL;
    }
    for (;;) {
        if (c->evq.next < c->evq.n) {
            if (!c->trig && !c->snapping)
                sqlcap_bound_check(c);
            /* the end of a transaction may be stored as durable by the consumer
             * as soon as it has it: its pages must be durable first (.pend) */
            if (evt_event_last_in_tx(c->evq.v[c->evq.next]) && !c->trig) {
                tb_code prc = sqlcap_pend_durable(c, c->evq.v[c->evq.next], err);
                if (prc != TB_OK)
                    return prc;
            }
            evt_event *e = c->evq.v[c->evq.next++];
            if (evt_event_last_in_tx(e) && evt_event_position(e))
                tb_ignore(tb_position_copy(&c->pos, evt_event_position(e))); /* SQLite: no strings */
            *ev = e;
            return TB_OK;
        }
        c->evq.n = c->evq.next = 0;
        tb_code rc;
        if (c->trig) {
            rc = c->snapping ? sqlcap_trig_snap_step(c, err) : sqlcap_trig_poll(c, err);
        } else if (c->snapping) {
            rc = sqlcap_snap_step(c, err);
            if (rc == TB_OK && c->evq.n)
                continue;
        } else {
            if (c->o.offline) {
                sqlcap_walhdr w;
                bool done = false;
                if ((rc = sqlcap_walhdr_read(c, &w, err)) != TB_OK)
                    return rc;
                if (w.valid && (rc = sqlcap_consume(c, UINT32_MAX - 1, w.magic & 1, true, &done, err)) != TB_OK &&
                    rc != TB_ERR_IO)
                    return rc;
                if (c->evq.n)
                    continue;
                return tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s-wal: end of committed frames", c->path);
            }
            if ((rc = sqlcap_watch(c, err)) != TB_OK)
                return rc;
            rc = sqlcap_poll(c, err);
        }
        if (rc != TB_OK)
            return rc;
        if (c->evq.n)
            continue;
        if (!c->trig) {
            /* sqlcap_position() moves past transactions without events: same rule */
            if ((rc = sqlcap_pend_log(c, err)) != TB_OK || (rc = sqlcap_shadow_flush(c, false, err)) != TB_OK)
                return rc;
            sqlcap_pos_make(c, c->frame, c->ck1, c->ck2, c->npages, &c->pos);
        }
        int64_t now = tb_mono_ms();
        if (now >= deadline)
            return TB_OK;
        int64_t left = deadline - now;
        sqlcap_sleep_ms((int)(left < c->o.poll_ms ? left : c->o.poll_ms));
    }
}

const tb_position *sqlcap_position(sqlcap *c) { return &c->pos; }

tb_code sqlcap_ack(sqlcap *c, const tb_position *pos, tb_error *err)
{
    if (!pos)
        return TB_OK;
    if (c->trig)
        return sqlcap_trig_ack(c, pos, err);
    if (!c->o.shadow || pos->kind != TB_POS_SQLITE_WAL)
        return TB_OK;
    if (c->acked.kind == TB_POS_SQLITE_WAL && sqlcap_pos_le(pos, &c->acked))
        return TB_OK;
    if (tb_position_copy(&c->acked, pos) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return sqlcap_shadow_flush(c, false, err);
}

tb_code sqlcap_snapshot_begin(sqlcap *c, tb_position *pos, tb_error *err)
{
    if (c->evq.n || c->st.txns || c->snapping)
        return tb_error_set(err, TB_ERR_STATE, false, "%s: a snapshot must begin right after the open", c->path);
    if (c->trig)
        return sqlcap_trig_snapshot_begin(c, pos, err);
    c->snapping = true;
    c->snap_tbl = c->snap_cursor = 0;
    if (pos) {
        tb_position_init(pos);
        sqlcap_pos_make(c, c->frame, c->ck1, c->ck2, c->npages, pos);
    }
    return TB_OK;
}

tb_code sqlcap_snapshot_count(sqlcap *c, sqlcap_count_fn fn, void *opaque, tb_error *err)
{
    if (!c->snapping)
        return tb_error_set(err, TB_ERR_STATE, false, "%s: no snapshot to count", c->path);
    if (c->trig)
        return sqlcap_trig_snapshot_count(c, fn, opaque, err);
    const sqlcap_schema *s = sqlcap_engine_schema(c->eng);
    for (size_t i = 0; i < s->n; i++) {
        const sqlcap_tbl *t = s->tbls[i];
        int64_t rows;
        if (!t->captured)
            continue;
        tb_code rc = sqlcap_engine_count(c->eng, t, &rows, err);
        if (rc != TB_OK)
            return rc;
        fn(evt_table_db(t->et), evt_table_name(t->et), rows, opaque);
    }
    return TB_OK;
}

void sqlcap_get_stats(const sqlcap *c, sqlcap_stats *st)
{
    *st = c->st;
    if (c->trig || c->o.offline || c->shmfd < 0 || c->walfd < 0)
        return;
    /* the lag and the WAL size now, not at the last poll: the wal-index header
     * (retried while the writer updates it) against the consumed position */
    sqlcap_shmhdr h;
    tb_error e;
    for (int attempt = 0; attempt < 100; attempt++) {
        tb_code rc = sqlcap_shm_read(c->shmfd, &h, &e);
        if (rc == TB_OK) {
            bool same = h.salt1 == c->salt1 && h.salt2 == c->salt2;
            /* a new generation not switched to yet: all its frames are still to consume */
            st->lag_frames = same ? (h.mxframe > c->frame ? h.mxframe - c->frame : 0) : h.mxframe;
            break;
        }
        if (rc != TB_ERR_CORRUPT)
            break;
    }
    struct stat sb;
    if (fstat(c->walfd, &sb) == 0) {
        st->wal_bytes = (uint64_t)sb.st_size;
        if (st->wal_bytes > st->wal_max_bytes)
            st->wal_max_bytes = st->wal_bytes;
    }
}

void sqlcap_close(sqlcap *c)
{
    if (!c)
        return;
    if (c->trig)
        sqlcap_trig_close(c);
    tb_error ferr;
    if (sqlcap_shadow_flush(c, true, &ferr) != TB_OK) /* best effort: .pend covers it on resume */
        TB_WARN(SQLCAP_FAC, "%s: shadow not advanced at close: %s", c->path, ferr.msg);
    if (sqlcap_shadow_bg_finish(c, true, &ferr) != TB_OK)
        TB_WARN(SQLCAP_FAC, "%s: shadow: %s", c->path, ferr.msg);
    sqlcap_shadow_bg_stop(c);
    if (sqlcap_sync_wait(c, &ferr) != TB_OK)
        TB_WARN(SQLCAP_FAC, "%s: %s", c->path, ferr.msg);
    sqlcap_sync_stop(c);
    /* SQLite connections first (they hold the POSIX locks), then our descriptors */
    for (int i = 0; i < 2; i++) {
        sqlcap_end(c, i);
        sqlite3_close(c->R[i]);
    }
    if (c->W)
        sqlite3_exec(c->W, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(c->W);
    sqlite3_close(c->K);
    if (c->shmfd >= 0)
        close(c->shmfd);
    if (c->walfd >= 0)
        close(c->walfd);
    if (c->dbfd >= 0)
        close(c->dbfd);
    if (c->shadowfd >= 0)
        close(c->shadowfd);
    if (c->pendfd >= 0)
        close(c->pendfd);
    sqlcap_engine_free(c->eng);
    evt_event_free(c->snap_held);
    for (size_t i = c->evq.next > 0 ? c->evq.next - 1 : 0; i < c->evq.n; i++)
        evt_event_free(c->evq.v[i]);
    free(c->evq.v);
    for (size_t t = 0; t < c->nun; t++) {
        for (size_t i = 0; i < c->un[t].n; i++)
            sqlcap_img_put(c, c->un[t].img[i]);
        free(c->un[t].img);
        free(c->un[t].pgno);
        tb_position_free(&c->un[t].pos);
    }
    free(c->un);
    sqlcap_img_free_all(c);
    sqlcap_map_free(&c->overlay);
    tb_position_free(&c->pos);
    tb_position_free(&c->skip_to);
    tb_position_free(&c->acked);
    tb_buf_free(&c->iobuf);
    free(c->pieces);
    free(c->fslab);
    free(c->path);
    free(c->dbname);
    free(c->shadow_path);
    free(c->shadow_pos_path);
    free(c->shadow_redo_path);
    free(c->shadow_pend_path);
    free(c);
}
