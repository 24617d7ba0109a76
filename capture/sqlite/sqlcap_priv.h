/*
 * sqlcap_priv: the sqlcap object (capture/sqlite only).
 */
#ifndef SQLCAP_PRIV_H
#define SQLCAP_PRIV_H

#include <pthread.h>

#include "sqlcap_int.h"
#include "tb_clock.h"
#include "tb_worker.h"

#define SQLCAP_IOBUF (1u << 20)          /* .pend writes in chunks of about 1 MiB */
#define SQLCAP_PJOBS 8                   /* ... at most this many queued for the writer thread */
#define SQLCAP_FCACHE (8u << 20)         /* frames of one transaction kept in memory */
#define SQLCAP_SHADOW_MS 1000            /* shadow advances at most this often ... */
#define SQLCAP_SHADOW_BYTES (8u << 20)   /* ... unless this much acknowledged data waits */
#define SQLCAP_IMGSLAB (2u << 20)        /* page image buffers come from slabs of this size ... */
#define SQLCAP_IMGSLABS 24               /* ... up to this many (48 MiB), then from malloc */
/* events per consumed batch: 2000 keeps the queued events' memory small enough
 * to be reused (a larger batch takes more page faults than it saves calls) */
#define SQLCAP_BATCH_EVENTS 2000

/* One consumed, not yet acknowledged transaction (mode B): its page images. */
typedef struct sqlcap_untx {
    tb_position pos;
    uint32_t npages;
    uint32_t *pgno;
    uint8_t **img; /* owned */
    size_t n;
} sqlcap_untx;

typedef struct sqlcap_trig sqlcap_trig;

struct sqlcap {
    sqlcap_opts o;
    char *path, *dbname;
    char *shadow_path, *shadow_pos_path, *shadow_redo_path;
    char *shadow_pend_path;     /* <shadow>.pend: delivered, unacknowledged transactions (mode B) */
    int pendfd;                 /* -1 until first written */
    size_t pend_logged;         /* un[0 .. pend_logged) are durable in the .pend file */
    size_t pend_written;        /* un[0 .. pend_written) are written ahead (file or iobuf) */
    uint64_t pend_bytes;        /* size of the .pend file */
    /* .pend writes and fsyncs in a writer thread (sqlcap_pend.c), so that they
     * overlap consuming; pendfd is not closed, truncated or replaced while
     * jobs are queued (sqlcap_sync_wait first) */
    tb_worker pw;               /* its mu guards pj_*, pw_errno, pw_fsync, pw_synced */
    bool pw_failed;             /* the thread could not be started: all here */
    bool pw_direct;             /* write and fsync here even when the thread runs */
    struct sqlcap_pjob *pj;     /* ring of SQLCAP_PJOBS jobs, owned */
    size_t pj_head, pj_tail;    /* jobs [head, tail) queued or running */
    int pw_errno;               /* first failure since the last wait, 0 = ok */
    bool pw_fsync;              /* ... it was the fsync (else a write) */
    size_t pw_synced;           /* target of the newest fsync done */
    bool sync_inflight;         /* main thread: an fsync was queued and not waited for */
    size_t sync_seq;            /* ... it is done once pj_head reaches this */
    size_t ahead_base;          /* sqlcap_consume's batch limit counts events queued from here;
                                 * SIZE_MAX: from evq.next (all undelivered events) */
    /* shadow advance in a second helper thread (sqlcap_shadow_bg.c): it writes
     * the newest images of un[0 .. shw_k) (shw_last) to the shadow, fsyncs,
     * writes .pos; the main thread keeps those un[] entries until it retires
     * them (sqlcap_shadow_bg_finish) */
    tb_worker shw;              /* the job sets shw_rc/shw_err; read once the worker is idle */
    bool shw_inflight;          /* main thread: started and not finished */
    sqlcap_map shw_last;        /* pgno -> image of the running advance */
    uint32_t shw_npages;
    tb_position shw_pos;
    size_t shw_k;
    tb_code shw_rc;
    tb_error shw_err;
    tb_buf iobuf;               /* .pend write buffer, reused (SQLCAP_IOBUF chunks) */
    struct sqlcap_piece *pieces; /* queued .pend bytes (sqlcap_pend.c), owned */
    size_t npieces, cappieces;
    uint64_t piece_bytes;       /* bytes the queued pieces hold */
    uint8_t **imgfree;          /* page image buffers (pgsz bytes) free for reuse: pieces of
                                 * imgslab[], never malloc'd ones */
    size_t nimgfree, capimgfree;
    uint8_t *imgslab[SQLCAP_IMGSLABS]; /* mmap'd, SQLCAP_IMGSLAB bytes each, owned */
    int nimgslab;
    tb_position acked;          /* newest acknowledged position (mode B), applied to the
                                 * shadow in groups by sqlcap_shadow_flush */
    int64_t shadow_ms;          /* monotonic time of the last shadow advance */
    sqlcap_trig *trig;          /* trigger mode */
    /* files: never closed while running (sqlite-wal.md 1.8) */
    int dbfd, walfd, shmfd, shadowfd;
    sqlite3 *R[2];
    int protector;              /* index of the pinning read transaction, -1 none */
    sqlite3 *K;                 /* PASSIVE checkpoints (optional) */
    sqlite3 *W;                 /* write barrier (checkpoint_barrier), never writes */
    bool in_window;             /* inside a barrier window: no nested window */
    int64_t w_deadline_us;      /* W's busy handler gives up at this monotonic time */
    bool w_held;                /* W holds the write lock (a barrier window is under way) */
    int64_t w_since_us;         /* ... since then */
    /* the bounded WAL (sqlcap_bound.c): what keeps it from being reset */
    int pinner_pid, pinner_slot;  /* another process's read transaction holding the checkpoint back */
    uint32_t pinner_mark;
    int64_t pinner_since_ms, pinner_warn_ms, bound_warn_ms, bound_check_ms;
    char bound_cause[384];      /* why the last window failed ("" = none or it opened) */
    int64_t watch_ms;           /* the files' inodes last checked (sqlcap_watch.c) */
    int64_t window_fail_ms;     /* monotonic time the last window without barrier missed */
    uint8_t *fslab;             /* sqlcap_consume: frames (header + page) of the current
                                 * transaction, up to SQLCAP_FCACHE bytes, so the diff and
                                 * the shadow queue do not read them from the WAL again */
    int64_t last_ckpt_ms, last_log_ms;
    int64_t last_pin_ms;        /* monotonic time of the last leapfrog (coarse pin) */
    int64_t last_new_ms;        /* monotonic time a poll last saw frames not consumed yet */
    uint32_t pin_frame;         /* mxFrame read after the newest pin began (its mark is <= this) */
    sqlcap_pages pg;
    sqlcap_map overlay;
    sqlcap_engine *eng;
    /* stream position P (last consumed commit) */
    uint32_t salt1, salt2;
    uint64_t gen_seq, inode;
    uint32_t frame, ck1, ck2, npages;
    uint32_t shadow_pages;
    /* delivery */
    sqlcap_evlist evq;
    tb_position pos;            /* last complete delivered transaction */
    tb_position skip_to;        /* resume: transactions up to here are not delivered */
    /* mode B queue */
    sqlcap_untx *un;
    size_t nun, capun;
    uint64_t unacked_bytes;
    /* snapshot */
    bool snapping;
    size_t snap_tbl, snap_cursor;
    bool snap_any;
    evt_event *snap_held;       /* the snapshot's newest row event, held back until it is known
                                 * whether another row follows (sqlcap_snap_hold) */
    bool gap;                   /* the next applied transaction is a gap net diff */
    bool gap_taken;             /* a gap was taken at open, not yet reported (sqlcap_take_gap) */
    sqlcap_stats st;
    /* observation time (wall clock, ms) of the newest wal-index header that showed
     * new commits: the commit time of the events (SQLite records none) */
    int64_t seen_ms;
    uint32_t seen_mx, seen_salt1, seen_salt2;
};

void sqlcap_sleep_ms(int ms);
TB_MUST_USE tb_code sqlcap_open_reader(sqlcap *c, sqlite3 **db, tb_error *err);
TB_MUST_USE tb_code sqlcap_begin(sqlcap *c, int i, tb_error *err);
void sqlcap_end(sqlcap *c, int i);
TB_MUST_USE tb_code sqlcap_shm(sqlcap *c, sqlcap_shmhdr *h, tb_error *err);
TB_MUST_USE tb_code sqlcap_walhdr_read(sqlcap *c, sqlcap_walhdr *w, tb_error *err);
void sqlcap_pos_make(const sqlcap *c, uint32_t frame, uint32_t ck1, uint32_t ck2, uint32_t npages, tb_position *p);
bool sqlcap_pos_le(const tb_position *a, const tb_position *b);
char *sqlcap_strcat3(const char *a, const char *b);
TB_MUST_USE tb_code sqlcap_shadow_meta(sqlcap *c, const tb_position *pos, tb_error *err);
TB_MUST_USE tb_code sqlcap_redo_apply(sqlcap *c, const uint8_t *b, size_t n, tb_position *pos, tb_error *err);
TB_MUST_USE tb_code sqlcap_shadow_advance(sqlcap *c, const tb_position *pos, tb_error *err);
/* The newest image of every page of un[0 .. k) into last (pgno -> image, borrowed). */
TB_MUST_USE tb_code sqlcap_shadow_last(sqlcap *c, size_t k, sqlcap_map *last, tb_error *err);
/* Write the images of last (pages <= npages) into the shadow, size it to
 * npages, fsync, then .pos = pos. Touches only the shadow files: safe in the
 * helper thread while the main thread runs (pages it writes are all in the
 * overlay, so no view reads them from the file meanwhile). */
TB_MUST_USE tb_code sqlcap_shadow_write(sqlcap *c, const sqlcap_map *last, uint32_t npages, const tb_position *pos, tb_error *err);
/* After the shadow reached un[k-1]: drop un[0 .. k), their overlay entries and
 * images, the .pend records below the shadow (truncate or compact). */
TB_MUST_USE tb_code sqlcap_shadow_retire(sqlcap *c, size_t k, uint32_t npages, tb_error *err);
/* Start advancing the shadow through un[0 .. k) (all durable in .pend) in the
 * helper thread; none may be running. Without a thread: at once. */
TB_MUST_USE tb_code sqlcap_shadow_bg_start(sqlcap *c, size_t k, tb_error *err);
/* If a background advance was started: when it has ended (or wait: once it
 * ends) retire its transactions and clear shw_inflight; else leave it running. */
TB_MUST_USE tb_code sqlcap_shadow_bg_finish(sqlcap *c, bool wait, tb_error *err);
/* Join the helper thread (at close, after sqlcap_shadow_bg_finish). */
void sqlcap_shadow_bg_stop(sqlcap *c);
/* Advance the shadow to c->acked when due: force, or SQLCAP_SHADOW_MS since the
 * last advance, or SQLCAP_SHADOW_BYTES of acknowledged page images waiting.
 * Until then those pages are durable in .pend (replayed on resume), so a
 * crash in between loses nothing; grouping saves fsyncs and rewrites of hot pages. */
TB_MUST_USE tb_code sqlcap_shadow_flush(sqlcap *c, bool force, tb_error *err);
/* write(2) all n bytes (retrying short writes); what names the file in errors. */
TB_MUST_USE tb_code sqlcap_write_all(int fd, const void *p, size_t n, const char *what, tb_error *err);
/* .pend write-ahead (sqlcap_pend.c). Queue the record of un[t] (u32 length,
 * then its one-transaction redo): headers and page numbers in c->iobuf, page
 * images by reference (they must stay allocated until the pieces are written). */
TB_MUST_USE tb_code sqlcap_pend_queue(sqlcap *c, size_t t, tb_error *err);
/* Write the queued pieces to c->pendfd (writev) and start their writeback, in
 * the writer thread (queued; errors come at sqlcap_sync_wait) or here; add them
 * to pend_bytes, then empty the queue and c->iobuf. Not durable by itself. */
TB_MUST_USE tb_code sqlcap_pend_pieces_write(sqlcap *c, tb_error *err);
/* fsync .pend after everything written or queued so far (through the writer
 * thread when it runs, waiting for it). */
TB_MUST_USE tb_code sqlcap_pend_fsync(sqlcap *c, tb_error *err);
/* Forget the queued pieces and empty c->iobuf (their records are written again). */
void sqlcap_pend_pieces_drop(sqlcap *c);
/* .pend has passed the WAL bound (wal_max_bytes; 64 MiB without one) and is
 * more than twice its live records: sqlcap_pend_compact is due. */
bool sqlcap_pend_compact_due(const sqlcap *c);
/* Rewrite .pend with the live records un[0 .. pend_logged) only (tmp file,
 * fsync, rename); the pieces written ahead are dropped and come again. */
TB_MUST_USE tb_code sqlcap_pend_compact(sqlcap *c, tb_error *err);
/* Redo buffer (format: sqlcap_state.c's file comment) for un[k0 .. k1): the
 * newest image of each page, the position and size of un[k1-1]; appended to out. */
TB_MUST_USE tb_code sqlcap_redo_build(sqlcap *c, size_t k0, size_t k1, tb_buf *out, tb_error *err);
/* Queue the records of un[pend_written .. nun) and an fsync of .pend covering
 * un[0 .. nun) for the writer thread (started on first use; without it, all
 * here and now). Durable only after sqlcap_sync_wait. */
TB_MUST_USE tb_code sqlcap_sync_start(sqlcap *c, tb_error *err);
/* Wait until the writer thread has done every queued job; then pend_logged
 * covers the fsync queued by sqlcap_sync_start. TB_ERR_IO when a write or
 * fsync failed. */
TB_MUST_USE tb_code sqlcap_sync_wait(sqlcap *c, tb_error *err);
/* Wait only for the jobs up to the fsync queued by sqlcap_sync_start (writes
 * queued after it, such as a read-ahead batch's, go on). */
TB_MUST_USE tb_code sqlcap_sync_wait_fsync(sqlcap *c, tb_error *err);
/* Stop and join the writer thread, free its jobs (at close, after a wait). */
void sqlcap_sync_stop(sqlcap *c);
/* A page image buffer (pgsz bytes, contents undefined) from the free list (a
 * new slab when it is empty), or malloc'd; NULL when out of memory. The caller
 * owns it until sqlcap_img_put. */
uint8_t *sqlcap_img_get(sqlcap *c);
/* Give an image buffer back: a slab piece goes back to the free list, a
 * malloc'd one is freed. img may be NULL. */
void sqlcap_img_put(sqlcap *c, uint8_t *img);
/* Unmap the slabs, free the list (at close, after every image was put back). */
void sqlcap_img_free_all(sqlcap *c);
/* Make every queued unacknowledged transaction durable in <shadow>.pend (one
 * fsync). Called before a transaction's end can reach the consumer. */
TB_MUST_USE tb_code sqlcap_pend_log(sqlcap *c, tb_error *err);
/* Write ahead: append the .pend records of the queued transactions not written
 * yet to c->iobuf and, once it holds SQLCAP_IOBUF bytes, write it and start its
 * writeback, so the fsync of sqlcap_pend_log finds little left. Durable only
 * after sqlcap_pend_log. */
TB_MUST_USE tb_code sqlcap_pend_ahead(sqlcap *c, tb_error *err);
/* Resume: bring the shadow (at *sp) forward through the .pend records up to
 * and including start, then empty the .pend file. *sp is updated. */
TB_MUST_USE tb_code sqlcap_pend_replay(sqlcap *c, tb_position *sp, const tb_position *start, tb_error *err);
/* polling (sqlcap_poll.c) */
typedef struct sqlcap_frame {
    uint32_t pgno, commit, salt1, salt2, ck1, ck2;
} sqlcap_frame;
/* Header of WAL frame i (1-based) into f; with page (pgsz bytes, preceded by 24
 * bytes of room that receive the header) also its page, in one read. */
TB_MUST_USE tb_code sqlcap_frame_hdr(sqlcap *c, uint32_t i, sqlcap_frame *f, uint8_t *page, tb_error *err);
/* Consume committed frames c->frame+1 .. upto (at most one batch of events).
 * Offline: stop at the first frame whose salts or checksum chain fail.
 * *done = consumed everything. */
TB_MUST_USE tb_code sqlcap_consume(sqlcap *c, uint32_t upto, bool bigend, bool offline, bool *done, tb_error *err);
/* One leapfrog step: begin the other read transaction, consume up to the
 * mxFrame read after it, release the old one only when all was consumed. */
TB_MUST_USE tb_code sqlcap_poll(sqlcap *c, tb_error *err);
/* Update the statistics from the header a poll read (and log them every 10 s). */
void sqlcap_report(sqlcap *c, const sqlcap_shmhdr *h);
/* bounded WAL (sqlcap_bound.c): a reset window is due and its interval has passed */
bool sqlcap_window_ready(const sqlcap *c, const sqlcap_shmhdr *h, int64_t now);
/* After a poll that read h: try the reset window that is due, if any (sqlite-wal.md 2.13). */
void sqlcap_maybe_checkpoint(sqlcap *c, const sqlcap_shmhdr *h);
/* While events wait for the consumer (no poll runs): at most every 20 ms, the
 * barrier windows of the bound when due, so the WAL is reset whatever the
 * consumer's pace (the events consumed meanwhile queue behind). */
void sqlcap_bound_check(sqlcap *c);
/* Inside a consume, between transactions: when the WAL holds half the bound,
 * take the write lock at once (the hard limit: the application's writers wait
 * from here until the window is done); sqlcap_bound_finish completes it. */
void sqlcap_bound_hard(sqlcap *c);
/* At the end of a poll: complete a window whose lock sqlcap_bound_hard took. */
void sqlcap_bound_finish(sqlcap *c);
/* WARN (at most every 10 s) with the cause while the WAL holds more than the bound. */
void sqlcap_bound_warn(sqlcap *c, const sqlcap_shmhdr *h, int64_t now);
/* Between polls (at most every 250 ms): the database file or its WAL replaced
 * or deleted -> TB_ERR_STATE with the recovery; the application gone (no other
 * process has the database open) -> the WAL backfilled completely once read
 * (sqlcap_watch.c). */
TB_MUST_USE tb_code sqlcap_watch(sqlcap *c, tb_error *err);
/* A read-write connection of the reader's (checkpoints, the barrier), or NULL. */
sqlite3 *sqlcap_rw_conn(sqlcap *c);

/* deliver=false: events are dropped and (mode B) the shadow advances at once. */
TB_MUST_USE tb_code sqlcap_apply_txn(sqlcap *c, sqlcap_map *txn, uint32_t frame, uint32_t ck1, uint32_t ck2, uint32_t npages,
                         bool deliver, tb_error *err);

/* trigger mode (sqlcap_trig.c) */
TB_MUST_USE tb_code sqlcap_trig_open(sqlcap *c, const tb_position *start, tb_error *err);
TB_MUST_USE tb_code sqlcap_trig_poll(sqlcap *c, tb_error *err);
TB_MUST_USE tb_code sqlcap_trig_ack(sqlcap *c, const tb_position *pos, tb_error *err);
void sqlcap_trig_close(sqlcap *c);
/* the snapshot in trigger mode (sqlcap_snapshot_begin and _count, sqlcap_next while snapping) and sqlcap_scan_tables */
TB_MUST_USE tb_code sqlcap_trig_snapshot_begin(sqlcap *c, tb_position *pos, tb_error *err);
TB_MUST_USE tb_code sqlcap_trig_snapshot_count(sqlcap *c, sqlcap_count_fn fn, void *opaque, tb_error *err);
TB_MUST_USE tb_code sqlcap_trig_snap_step(sqlcap *c, tb_error *err);
/* End of a snapshot step, WAL and trigger mode: c->evq holds the rows read in this step (their
 * position and snapshot flag set). The row held back by the previous step goes first; done (every
 * table read): the last row is marked snapshot=last and ends its transaction; else the last row is
 * held back, since the tables still to read may all be empty and then it is the snapshot's last.
 * So the end is marked whatever tables are empty. False when nothing is left to hand out but the
 * snapshot is not done (read on). TB_ERR_NOMEM in *rc. */
bool sqlcap_snap_hold(sqlcap *c, bool done, tb_code *rc);
TB_MUST_USE tb_code sqlcap_trig_scan(sqlcap *c, sqlcap_table_fn on_table, sqlcap_row_fn on_row, void *opaque,
                                     tb_error *err);

#endif
