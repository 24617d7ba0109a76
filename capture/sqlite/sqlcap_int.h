/*
 * sqlcap internals: shared by the files of capture/sqlite only.
 *
 * Files:
 *   sqlcap_file.c   WAL header/frame and -shm header parsing, checksums, u32 map
 *   sqlcap_tree.c   page views, b-tree walks, cells, records, schema decoding
 *   sqlcap_diff.c   row diff of one transaction (sqlite-wal.md 2.5-2.7) -> events
 *   sqlcap_rows.c   row maps of a table diff, event building, recycled events
 *   sqlcap.c        lifecycle, resume and gap, delivery, API
 *   sqlcap_poll.c   reading committed frames, polling under the leapfrog pin
 *   sqlcap_state.c  pinning primitives, positions, shadow copy, .pend
 *   sqlcap_pend.c   .pend records, their writer thread (writes, fsyncs), position text
 *   sqlcap_shadow_bg.c  group shadow advances in a helper thread; the worker helpers
 *   sqlcap_trig.c   trigger mode (sqlite-wal.md 3)
 */
#ifndef SQLCAP_INT_H
#define SQLCAP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "evt.h"
#include "sqlcap.h"
#include "tb_buf.h"
#include "tb_error.h"
#include "tb_position.h"

#define SQLCAP_FAC "sqlite"

/* ------------------------------------------------------------ u32 -> u64 map */

/* Open addressing, key 0 is "empty" (page numbers start at 1). */
typedef struct sqlcap_map {
    uint32_t *keys;
    uint64_t *vals;
    size_t cap, n;
} sqlcap_map;

TB_MUST_USE tb_code sqlcap_map_put(sqlcap_map *m, uint32_t k, uint64_t v);
bool sqlcap_map_get(const sqlcap_map *m, uint32_t k, uint64_t *v);
bool sqlcap_map_del(sqlcap_map *m, uint32_t k);
void sqlcap_map_clear(sqlcap_map *m);
void sqlcap_map_free(sqlcap_map *m);

/* ------------------------------------------------------------ file formats */

static inline uint32_t sqlcap_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint16_t sqlcap_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline void sqlcap_put_be32(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

typedef struct sqlcap_walhdr {
    uint32_t magic, version, pgsz, ckpt_seq, salt1, salt2, ck1, ck2;
    bool valid;           /* magic, version and checksum ok */
} sqlcap_walhdr;

typedef struct sqlcap_shmhdr {
    uint32_t change, mxframe, npage, pgsz, fck1, fck2, salt1, salt2;
    uint32_t nbackfill;
    uint32_t readmark[5];
} sqlcap_shmhdr;

/* Running WAL checksum (FF 4.2). native: words in host order. */
void sqlcap_cksum(bool bigend, const uint8_t *data, size_t len, uint32_t *s0, uint32_t *s1);
/* Parse 32 bytes of WAL header. */
void sqlcap_walhdr_parse(const uint8_t b[32], sqlcap_walhdr *h);
/* Read and validate the -shm header (both copies, isInit, aCksum). TB_ERR_CORRUPT
 * (retriable) while the writer is updating it; TB_ERR_IO on read errors. */
TB_MUST_USE tb_code sqlcap_shm_read(int shmfd, sqlcap_shmhdr *h, tb_error *err);

/* Append the text form of a TB_POS_SQLITE_WAL position to out: the same bytes
 * as tb_position_format, without printf (one per .pend record). Other kinds
 * go to tb_position_format. */
TB_MUST_USE tb_code sqlcap_pos_text(const tb_position *p, tb_buf *out);

/* ------------------------------------------------------------ values, tables */

enum { SQLCAP_NULL = 0, SQLCAP_INT, SQLCAP_REAL, SQLCAP_TEXT, SQLCAP_BLOB };

typedef struct sqlcap_val {
    int type;
    int64_t i;
    double d;
    const uint8_t *p; /* TEXT/BLOB bytes, borrowed */
    size_t n;
} sqlcap_val;

/* One captured table at one schema version. Owned by the sqlcap_schema list. */
typedef struct sqlcap_tbl {
    int id;                 /* stable while the table exists; owner[] uses id+2 */
    char *name;
    char *sql;
    uint32_t root;
    bool without_rowid;
    bool captured;          /* false: internal (sqlite_*, _cdc_log) or refused */
    size_t ncols;
    char **colnames;
    int *affinity;          /* 'I' integer, 'R' real, 'T' text, 'B' blob/none, 'N' numeric */
    sqlcap_val *dflt;       /* column defaults (owned copies in dflt_buf) */
    uint8_t **dflt_buf;
    long ipk;               /* INTEGER PRIMARY KEY column, or -1 */
    bool synth_rowid;       /* no declared key: trailing synthetic "rowid" column is the key */
    size_t npk;
    size_t *pk;             /* key columns (table order index), key order */
    size_t *store;          /* record position -> column: WITHOUT ROWID (key first), or a rowid
                             * table with VIRTUAL columns (not in the record); NULL: the same */
    size_t nstore;
    uint8_t *gen;           /* per column: 0 plain, 2 VIRTUAL, 3 STORED generated (table_xinfo hidden) */
    struct sqlcap_gen *gv;  /* VIRTUAL columns' evaluator (sqlcap_gen_eval), NULL when none */
    evt_table *et;          /* descriptor (one reference) */
    bool null_key_noted;    /* the INFO of a row whose key holds NULL was logged (sqlcap_key_null_note) */
} sqlcap_tbl;

void sqlcap_tbl_free(sqlcap_tbl *t);

/* ------------------------------------------------------------ page views */

/* Where a page image comes from. A view layers: txn map -> overlay -> base. */
#define SQLCAP_FROM_DB  0xFFFFFFFFFFFFFFFFull /* txn map value: read from the db file */

typedef struct sqlcap_pages {
    int dbfd;            /* live database file (never closed while running) */
    int walfd;           /* -wal file */
    int basefd;          /* mode A: dbfd; mode B: shadow file */
    uint32_t pgsz;
    uint32_t usable;     /* page size minus reserved bytes */
    sqlcap_map *overlay; /* pgno -> WAL frame (mode A) or image pointer (mode B) */
    bool overlay_images;
    const sqlcap_map *fcache; /* WAL frame -> page image (pgsz bytes) of the transaction being
                               * applied, read once by sqlcap_consume; NULL otherwise */
} sqlcap_pages;

typedef struct sqlcap_view {
    const sqlcap_pages *pg;
    const sqlcap_map *txn; /* NULL for V0; pgno -> WAL frame or SQLCAP_FROM_DB */
    uint32_t npages;       /* database size in pages in this view */
} sqlcap_view;

/* Read page pgno of the view into buf (pgsz bytes). Pages past npages or past
 * the end of the file read as zeros. */
TB_MUST_USE tb_code sqlcap_view_read(const sqlcap_view *v, uint32_t pgno, uint8_t *buf, tb_error *err);
TB_MUST_USE tb_code sqlcap_wal_read_page(int walfd, uint32_t pgsz, uint32_t frame, uint8_t *buf, tb_error *err);
/* Page pgno of the view without a copy when it is in memory (the transaction's
 * frames, mode B overlay images): *out points there (borrowed, valid while
 * that source is), else the page is read into buf (pgsz bytes) and *out = buf. */
TB_MUST_USE tb_code sqlcap_view_ptr(const sqlcap_view *v, uint32_t pgno, uint8_t *buf, const uint8_t **out, tb_error *err);

/* The array v (n elements of elem bytes, capacity *cap) with room for one
 * more: v itself, or v moved to twice the capacity (first when *cap is 0),
 * *cap updated. NULL when out of memory: v and *cap are left as they were. */
void *sqlcap_grow(void *v, size_t n, size_t *cap, size_t elem, size_t first);

/* A growable list of page numbers. */
typedef struct sqlcap_u32s {
    uint32_t *v;
    size_t n, cap;
} sqlcap_u32s;
/* Room for extra more entries. */
TB_MUST_USE tb_code sqlcap_u32s_reserve(sqlcap_u32s *l, size_t extra);
/* Append x (the slow path grows the array). */
TB_MUST_USE tb_code sqlcap_u32s_grow(sqlcap_u32s *l, uint32_t x);
static inline tb_code sqlcap_u32s_push(sqlcap_u32s *l, uint32_t x)
{
    if (l->n < l->cap) {
        l->v[l->n++] = x;
        return TB_OK;
    }
    return sqlcap_u32s_grow(l, x);
}
void sqlcap_u32s_free(sqlcap_u32s *l);

/* All b-tree pages (interior and leaves) of the tree at root, in view v.
 * leaves receives leaf pages, inner the interior pages. */
TB_MUST_USE tb_code sqlcap_tree_pages(const sqlcap_view *v, uint32_t root, sqlcap_u32s *inner, sqlcap_u32s *leaves,
                          tb_error *err);

/* Callback for every row cell on one page: payload (assembled, borrowed until
 * return), rowid (table trees), overflow pages of the cell. */
typedef tb_code (*sqlcap_cell_fn)(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload,
                                  size_t len, const sqlcap_u32s *ovfl, tb_error *err);
/* Decode the row cells of one page (table leaf, index leaf or index interior). */
TB_MUST_USE tb_code sqlcap_page_rows(const sqlcap_view *v, uint32_t pgno, sqlcap_cell_fn fn, void *opaque, tb_error *err);
/* Same, skipping cells c < nskip with skip[c] != 0. */
TB_MUST_USE tb_code sqlcap_page_rows_skip(const sqlcap_view *v, uint32_t pgno, const uint8_t *skip, size_t nskip, sqlcap_cell_fn fn,
                              void *opaque, tb_error *err);
/* For page pgno in both views: mark cells whose local bytes are identical in
 * both versions and that do not spill (the same row, unchanged: it can be left
 * out of both sides of the diff). *pa, *pb receive the two page images: in
 * memory where the views have them (valid while the views' sources are), else
 * read into abuf, bbuf (pgsz bytes each). skip0, skip1 need pgsz/4+1 bytes; n0,
 * n1 receive the cell counts (0 = no filtering possible). */
TB_MUST_USE tb_code sqlcap_page_same_cells(const sqlcap_view *v0, const sqlcap_view *v1, uint32_t pgno, uint8_t *abuf, uint8_t *bbuf,
                               const uint8_t **pa, const uint8_t **pb, uint8_t *skip0, size_t *n0, uint8_t *skip1,
                               size_t *n1, void *scratch, tb_error *err);
/* Bytes of scratch sqlcap_page_same_cells needs for page size pgsz (caller-owned,
 * reusable; zeroed before its first use: calloc). */
size_t sqlcap_same_cells_scratch(uint32_t pgsz);
/* sqlcap_page_rows_skip on a page image already read (img, pgsz bytes; NULL = read it). */
TB_MUST_USE tb_code sqlcap_page_rows_img(const sqlcap_view *v, uint32_t pgno, const uint8_t *img, const uint8_t *skip, size_t nskip,
                             sqlcap_cell_fn fn, void *opaque, tb_error *err);

/* Decode a record into vals (ncols_max slots). *ncols = values present. The
 * values borrow from payload. */
TB_MUST_USE tb_code sqlcap_record(const uint8_t *payload, size_t len, sqlcap_val *vals, size_t ncols_max, size_t *ncols);

/* A row of table t decoded to t's column order: defaults for missing
 * columns, IPK from rowid, REAL affinity conversion, VIRTUAL generated
 * columns computed (sqlcap_gen_eval: their TEXT/BLOB values stay valid
 * until the table's fourth next decode). vals has t->ncols slots. */
TB_MUST_USE tb_code sqlcap_row_decode(const sqlcap_tbl *t, int64_t rowid, const uint8_t *payload, size_t len,
                          sqlcap_val *vals, tb_error *err);
/* The same without computing VIRTUAL columns (left NULL): enough for the key
 * (a generated column is never part of a PRIMARY KEY). */
TB_MUST_USE tb_code sqlcap_row_decode_stored(const sqlcap_tbl *t, int64_t rowid, const uint8_t *payload, size_t len,
                                 sqlcap_val *vals, tb_error *err);
/* Compute the VIRTUAL generated columns of t (t->gv) of a decoded row from
 * its other columns, in the private SQLite (sqlcap_schema.c). */
TB_MUST_USE tb_code sqlcap_gen_eval(const sqlcap_tbl *t, sqlcap_val *vals, tb_error *err);

/* ------------------------------------------------------------ schema */

typedef struct sqlcap_schema {
    sqlcap_tbl **tbls;
    size_t n, cap;
} sqlcap_schema;

/* Read sqlite_schema in view v and build table infos (decoding via a private
 * in-memory SQLite). prev (may be NULL) lets unchanged tables keep their id
 * and descriptor. dbname is the evt_table db. next_id is advanced for new tables. */
TB_MUST_USE tb_code sqlcap_schema_load(const sqlcap_view *v, const sqlcap_schema *prev, const char *dbname, int *next_id,
                           sqlite3 *mem, sqlcap_schema *out, sqlcap_u32s *ovfl_pages, tb_error *err);
void sqlcap_schema_free(sqlcap_schema *s);
/* Column affinity of a declared type ('I','R','T','B','N') and its evt_type. */
int sqlcap_affinity(const char *decl);
evt_type sqlcap_evt_type(int aff, const char *decl);
/* name\0root\0sql\0 of every table, in b-tree order: cheap change detection. */
TB_MUST_USE tb_code sqlcap_schema_sig(const sqlcap_view *v, tb_buf *out, sqlcap_u32s *ovfl_pages, tb_error *err);
sqlcap_tbl *sqlcap_schema_find(const sqlcap_schema *s, const char *name);

/* ------------------------------------------------------------ diff engine */

typedef struct sqlcap_engine sqlcap_engine;

typedef struct sqlcap_evlist {
    evt_event **v;
    size_t n, cap, next;
} sqlcap_evlist;
void sqlcap_evlist_clear(sqlcap_evlist *l); /* frees the events */

/* The state at the position P: schema, page owners. */
sqlcap_engine *sqlcap_engine_new(sqlcap_pages *pg, const char *dbname);
void sqlcap_engine_free(sqlcap_engine *e);
/* Rows for statements without row events (sqlcap_opts.ddl_*): drop: a delete
 * per row of a dropped table; rename: a delete per row under the old name and
 * a read under the new; alter: a read per row of a table whose ALTER changed
 * what its rows read as; marks: a dropped table's event after its rows
 * (sqlcap_opts.drop_events), and no WARN of its own at a DROP. */
void sqlcap_engine_set_ddl(sqlcap_engine *e, bool drop, bool rename, bool alter, bool marks);
/* sqlcap_opts.new_table_events: an event with no row image for a captured
 * table created or renamed empty. */
void sqlcap_engine_set_table_marks(sqlcap_engine *e, bool on);
/* Build schema and owners from the view at P (O(database) once). */
TB_MUST_USE tb_code sqlcap_engine_attach(sqlcap_engine *e, uint32_t npages, tb_error *err);
/* Diff one transaction: txn = pgno -> source, new size. Appends events
 * (without positions) to out and advances the state to after the txn. The
 * overlay is NOT updated here (the caller does that afterwards). */
TB_MUST_USE tb_code sqlcap_engine_txn(sqlcap_engine *e, const sqlcap_map *txn, uint32_t new_npages, sqlcap_evlist *out,
                          tb_error *err);
const sqlcap_schema *sqlcap_engine_schema(const sqlcap_engine *e);
/* Emit op=r events for every row of table t in the view at P, leaf by leaf:
 * leaf index *cursor (0 to start); returns the next cursor or 0 when done. */
/* The rows of table t in the view at P: the cells of its leaf pages (and of its interior pages
 * for WITHOUT ROWID), one read of each such page. */
TB_MUST_USE tb_code sqlcap_engine_count(sqlcap_engine *e, const sqlcap_tbl *t, int64_t *rows, tb_error *err);
TB_MUST_USE tb_code sqlcap_engine_scan(sqlcap_engine *e, const sqlcap_tbl *t, size_t *cursor, sqlcap_evlist *out,
                           tb_error *err);

/* ------------------------------------------------------------ row maps, events (sqlcap_rows.c) */

/* Rows of one side of a table diff, by canonical key; key and payload bytes in arena. */
typedef struct sqlcap_rowent {
    uint64_t h;
    size_t koff, klen, poff, plen;
    int64_t rowid;
    long next;
    bool matched;
} sqlcap_rowent;

typedef struct sqlcap_rowmap {
    sqlcap_rowent *e;
    size_t n, cap;
    long *bucket;
    size_t nb;
    tb_buf arena;
} sqlcap_rowmap;

/* Free / empty (keeping memory, unless huge) a row map. */
void sqlcap_rowmap_free(sqlcap_rowmap *m);
void sqlcap_rowmap_reset(sqlcap_rowmap *m);
/* Index of the entry with key k (hash h), or -1. */
long sqlcap_rowmap_find(const sqlcap_rowmap *m, const uint8_t *k, size_t kn, uint64_t h);
/* Add a row (key and payload copied into the arena). TB_ERR_NOMEM on failure. */
TB_MUST_USE tb_code sqlcap_rowmap_add(sqlcap_rowmap *m, const uint8_t *k, size_t kn, const uint8_t *p, size_t pn, int64_t rowid);
/* Canonical key bytes of a decoded row (t->pk columns) into out (reset first). */
TB_MUST_USE tb_code sqlcap_key(const sqlcap_tbl *t, const sqlcap_val *vals, tb_buf *out);
/* A key column of the row is NULL (a rowid table with a declared key allows it). Such rows are
 * told apart by their rowid: inside the capture the diff's key is this tag and the rowid (8 bytes
 * big endian), which no key tuple starts with (sqlcap_key's tags are the SQLCAP_* classes); on the
 * wire their message key takes the rowid as member EVT_KEY_ROWID (sqlcap_make_event). */
#define SQLCAP_KEY_ROWID_TAG 0xFE
bool sqlcap_key_has_null(const sqlcap_tbl *t, const sqlcap_val *vals);
/* Once per table version and run: INFO, naming the table and its key columns, that rows whose key
 * holds NULL are keyed with their rowid as well; vals: a row image (NULL: none). */
void sqlcap_key_null_note(const sqlcap_tbl *t, const sqlcap_val *vals);
/* The same for an event of trigger mode (no sqlcap_tbl): a key column NULL in either image of ev
 * (only a rowid table's declared key can hold one); *noted: the table's flag. */
void sqlcap_event_key_null_note(const evt_table *et, const evt_event *ev, bool *noted);

/* Delivered events kept for reuse by sqlcap_make_event. */
typedef struct sqlcap_evpool {
    evt_event **v;
    size_t n, cap;
} sqlcap_evpool;
/* Keep ev for reuse (up to a limit, else freed); takes ownership; ev may be NULL. */
void sqlcap_evpool_put(sqlcap_evpool *p, evt_event *ev);
/* Free the kept events and the pool's array. */
void sqlcap_evpool_free(sqlcap_evpool *p);
/* Append ev to l (l owns it); TB_ERR_NOMEM (ev freed) or when ev is NULL. */
TB_MUST_USE tb_code sqlcap_evpush(sqlcap_evlist *l, evt_event *ev);

/* Set column c of image img from a value of any storage class. TEXT and BLOB
 * follow the declared type (blob_col: the column is declared BLOB): bytes in a
 * BLOB column, a string of the same bytes in any other column (DESIGN 5). */
void sqlcap_set_val(evt_event *ev, evt_image img, size_t c, bool blob_col, const sqlcap_val *v);
/* Build an event for table t from decoded rows (NULL image = absent), reusing
 * an event of pool p when there is one (p may be NULL). rowid: the row's (its
 * key takes it when a key column holds NULL). The caller owns it. */
evt_event *sqlcap_make_event(sqlcap_evpool *p, const sqlcap_tbl *t, evt_op op, const sqlcap_val *before,
                             const sqlcap_val *after, int64_t rowid);
/* Give a finished event (any origin) back to e for reuse (kept up to a limit,
 * else freed); e NULL: freed. Takes ownership; ev may be NULL. */
void sqlcap_engine_recycle(sqlcap_engine *e, evt_event *ev);

#endif
