/*
 * snap_inc_int: internals shared by snap_incremental.c (chunks, windows) and
 * snap_inc_state.c (signal rows, state file). Not part of the API.
 */
#ifndef SNAP_INC_INT_H
#define SNAP_INC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mysql.h>
#include <pthread.h>

#include "snap_inc_key.h"
#include "snap_incremental.h"
#include "snap_rows.h"
#include "tb_buf.h"
#include "tb_hmap.h"

#define SNAP_INC_FAC "incsnap"

typedef enum snap_inc_phase { PH_IDLE = 0, PH_WAIT_LOW, PH_WINDOW, PH_RELEASE } snap_inc_phase;

typedef struct snap_inc_part snap_inc_part; /* one key range of a window (snap_incremental.c) */

/* A chunk read between its watermarks. Its rows stay in client memory as the
 * server sent them, in the stored results src[0..nsrc) (one, or one per part
 * in key order; rows src_end[j-1]..src_end[j] are src[j]'s), and are read into
 * one event when needed (row_at): a chunk costs its rows' wire bytes, not an
 * event each. */
typedef struct snap_inc_chunk {
    int64_t id_lo, id_hi; /* its watermark rows */
    snap_rows **src;      /* max(1, nconns) slots */
    size_t *src_end;
    size_t nsrc;
    size_t nrows;
    bool last;            /* fewer rows than the chunk size: the table ends */
    unsigned set;         /* the connection set its rows were read on (snap_inc.set) */
} snap_inc_chunk;

/* The next chunk of the same table, read by a thread on the snapshot's
 * connections (`my`, and the parts') while the run loop releases the current
 * one (snap_incremental.c: ahead_*). */
typedef struct snap_inc_ahead {
    bool started;         /* the thread was started, its chunk not yet taken or dropped */
    bool joined;          /* ... and it has ended */
    pthread_t th;
    snap_inc_chunk ch;
    evt_table *t;         /* the table as the thread described it */
    snap_key key;         /* the chunk's rows come after this key */
    unsigned set;         /* the connection set it is read on */
    char *db, *table, *db_table;
    tb_code rc;
    tb_error err;
    bool changed;         /* rc: the SQL failed because the table changed after the thread described it */
    uint64_t failures;    /* reads ahead that failed in this run (a changed table not counted) */
    unsigned streak;      /* ... in a row: the next is tried 2^streak windows later (at most 64) */
    uint64_t windows;     /* windows read in this run (each a chance to read the next one ahead) */
    uint64_t retry_at;    /* the window from which reading ahead is tried again */
} snap_inc_ahead;

typedef struct snap_inc_save {
    tb_position pos;  /* save once this is committed */
    char *json;       /* state to write */
} snap_inc_save;

struct snap_inc {
    const cfg *c;
    char *state_path;
    char *legacy_path; /* offsets.storage=kafka: where earlier versions kept the state (NULL: none) */
    void (*test_after_describe)(void *); /* snap_inc_test_after_describe */
    void *test_opaque;
    /* Two sets of nconns connections each ([0] the one the watermarks and the first range use).
     * snap_inc_poll reads on set 0; a window read ahead is read on the set the current chunk's
     * rows are not on, so that no connection is used by two threads at once (reading a stored
     * row writes its connection's error state). */
    MYSQL **set[2];
    bool mariadb;
    int64_t chunk_size;
    size_t nconns;        /* snapshot.threads: connections reading a window's key ranges at once */
    snap_inc_part *parts; /* nconns of them: a key range and its stored rows each */
    /* persistent state (as of the last release, maybe not saved yet) */
    /* per database, the last execute-snapshot signal read from its signalling table: each
     * database's `tributary_signal` numbers its rows itself, so ids of two databases never compare */
    struct snap_inc_sig {
        char *db;
        int64_t id;
    } *sigs;
    size_t nsigs;
    char **queue;
    size_t nqueue;
    snap_key key;
    bool has_key;
    uint64_t chunks, rows;
    uint64_t dropped;
    bool initial;         /* the queue holds an initial snapshot's tables (snap_inc_begin_initial) */
    char **fresh;         /* "db.table" of the initial snapshot whose topics held no record at its start */
    size_t nfresh;
    /* current table: described again before every chunk */
    evt_table *t;
    evt_table *finished;  /* the table whose last chunk was released, not yet taken */
    bool finished_fresh;  /* ... and it was fresh until then */
    /* in-flight chunk */
    snap_inc_phase ph;
    snap_inc_chunk cur;
    evt_event *ev;        /* the event cur's rows are read into (row_at) */
    size_t at_src, at_row; /* the row the next read of cur returns */
    snap_inc_ahead ahead;
    tb_hmap seen;         /* canonical JSON keys the stream changed during the window: rows with
                           * them are not released (row_live) */
    size_t rel;           /* next row to release */
    size_t last_live;     /* index of the last row to release, SIZE_MAX if none */
    tb_position hw;       /* position of the high watermark */
    int64_t hw_ts_ms;     /* its commit time */
    tb_buf kbuf;
    /* saves waiting for a commit */
    snap_inc_save *saves;
    size_t nsaves;
    char *disk_base;      /* the state the file holds as of the committed position (state_json) */
    bool queued_unsaved;  /* a table joined the queue since the file was last written */
    tb_position test_pending; /* TB_TEST_HOOKS: the last save snap_inc_before_commit wrote as pending */
};

/* CREATE TABLE IF NOT EXISTS `db`.tributary_signal (...); a table made before signals named
 * their connector gets the connector column. */
TB_MUST_USE tb_code snap_inc_ensure_signal_table(MYSQL *my, const char *db, tb_error *err);
/* Insert a signal row for connector (the `name` key); *id = its AUTO_INCREMENT id. */
TB_MUST_USE tb_code snap_inc_insert_signal(MYSQL *my, const char *db, const char *connector, const char *type, const char *data,
                               int64_t *id, tb_error *err);
TB_MUST_USE tb_code snap_inc_queue_push(snap_inc *si, const char *db_table); /* no-op when queued already */
void snap_inc_queue_pop(snap_inc *si); /* queue[0] leaves, and stops being fresh */
/* Whether db_table is fresh; snap_inc_fresh_drop: it is not any more (a no-op when it was not). */
bool snap_inc_fresh_has(const snap_inc *si, const char *db_table);
/* The last execute-snapshot signal id read from db's signalling table (0: none). */
int64_t snap_inc_sig_last(const snap_inc *si, const char *db, size_t dblen);
/* A signal of db's signalling table with this id was read: *fresh tells whether it is newer than
 * the last one (then it becomes the last). TB_ERR_NOMEM. */
TB_MUST_USE tb_code snap_inc_sig_seen(snap_inc *si, const char *db, size_t dblen, int64_t id, bool *fresh);
void snap_inc_fresh_drop(snap_inc *si, const char *db_table);
/* Read si->state_path (a missing file is an empty state); resume: the position the run
 * resumes from (NULL or none: the file's committed state), which picks the file's latest
 * pending state at or before it (snap_inc_before_commit). */
TB_MUST_USE tb_code snap_inc_load_state(snap_inc *si, const tb_position *resume, tb_error *err);
/* snap_inc_begin_initial's state (the chunk in flight cleared by the caller): queue, progress,
 * pending saves reset, written to the state file now. */
TB_MUST_USE tb_code snap_inc_state_initial(snap_inc *si, char *const *tables, const bool *fresh, size_t n,
                                           tb_error *err);
/* Remember the current state, to be written once `pos` is committed. */
TB_MUST_USE tb_code snap_inc_push_save(snap_inc *si, const tb_position *pos, tb_error *err);

#endif
