/*
 * verify: `tributary verify`, the source compared with its topics and its
 * cache (DESIGN 10a). Internal to app/: cmd_verify.c drives the passes,
 * verify_map.c holds the digest map, verify_source.c reads the source,
 * verify_target.c reads a topic or the cache as a table.
 *
 * MEMORY
 *  The other side of a table (its topic read as a table, or its cache
 *  table) is held as a digest map: one 16-byte slot per distinct key
 *  (64-bit hash of the key bytes, 62-bit digest of the row image bytes and
 *  two flags), open addressing, at most 3/4 full, capacity a power of two:
 *  16 to 32 bytes per key (1M keys: 32 MiB; 10M keys: 256 MiB). The source
 *  is streamed one row at a time (snapshot/ and capture/sqlite readers) and
 *  never held. Keys that differ are kept as 64-bit hashes (at most
 *  VERIFY_RECHECK_MAX per run) to be checked again; only the first N of each
 *  kind keep their bytes, for the report.
 *
 * OWNERSHIP
 *  vmap_init/vmap_free (NULL-safe); vsrc_open returns an object freed with
 *  vsrc_close (NULL-safe); events from vsrc_next are borrowed until the next
 *  call. Strings of vsrc_table are borrowed until vsrc_close.
 */
#ifndef VERIFY_H
#define VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "evt.h"
#include "evt_json.h"
#include "tb_buf.h"
#include "tb_error.h"
#include "tb_position.h"

#define VERIFY_RECHECK_MAX 1000000

/* ------------------------------------------------------------ digest map */

typedef struct vmap_slot {
    uint64_t khash;  /* 0: empty slot */
    uint64_t vdig;   /* digest << 3 | VMAP_LIVE | VMAP_SEEN | VMAP_LATE */
} vmap_slot;

#define VMAP_LIVE 1u /* the key holds a row (its latest record is not a delete) */
#define VMAP_SEEN 2u /* the source has a row with this key */
#define VMAP_LATE 4u /* its latest record is of a change after the source read's position */

typedef struct vmap {
    vmap_slot *slots;
    size_t cap;  /* 0 or a power of two */
    size_t n;    /* slots in use (live or not) */
} vmap;

void vmap_init(vmap *m);
void vmap_free(vmap *m);
/* 64-bit hash of key bytes, never 0. */
uint64_t vmap_hash(const void *p, size_t n);
/* The slot of khash, added (vdig 0) when new; NULL on out of memory. A slot
 * pointer is valid until the next vmap_put. */
vmap_slot *vmap_put(vmap *m, uint64_t khash);
vmap_slot *vmap_find(const vmap *m, uint64_t khash);
/* The digest part of a slot (without the flags), and a digest of bytes. */
static inline uint64_t vmap_digest(const void *p, size_t n) { return vmap_hash(p, n) << 3; }
static inline uint64_t vmap_dig(const vmap_slot *s) { return s->vdig & ~(uint64_t)7; }

/* A sorted set of key hashes (the keys to check again). */
typedef struct vkeys {
    uint64_t *h;
    size_t n, cap;
    bool overflow; /* more than VERIFY_RECHECK_MAX were added */
} vkeys;
TB_MUST_USE tb_code vkeys_add(vkeys *k, uint64_t h);
void vkeys_sort(vkeys *k);
bool vkeys_has(const vkeys *k, uint64_t h); /* after vkeys_sort */
void vkeys_free(vkeys *k);

/* ------------------------------------------------------------ positions */

/* Whether the connector's committed position `c` is at or past the source
 * read's position `p`: MariaDB/MySQL by GTID (every domain or server of p at
 * or past its number in c), else by binlog file and offset; SQLite by WAL
 * frame in p's generation (a committed position in another generation than
 * p's and than `start`, the committed position seen before the read, is
 * taken as later), or by change-log sequence. */
bool verify_pos_passed(const tb_position *p, const tb_position *c, const tb_position *start);

/* ------------------------------------------------------------ source */

typedef struct vsrc vsrc;

/* Open a consistent read of the source's captured tables (tables.include /
 * exclude) that match only_re (POSIX ERE over "db.table", NULL = all). For
 * MySQL/MariaDB it sets tables.include of c to only_re (the snapshot reads
 * only those tables); c must outlive the read. */
TB_MUST_USE tb_code vsrc_open(cfg *c, const char *only_re, vsrc **out, tb_error *err);
/* The source read's position (borrowed). */
const tb_position *vsrc_position(const vsrc *s);
/* The tables the read covers, in the order their rows come. */
size_t vsrc_ntables(const vsrc *s);
void vsrc_table(const vsrc *s, size_t i, const char **db, const char **table);
/* The next row (op r event, after image), *ev NULL at the end. */
TB_MUST_USE tb_code vsrc_next(vsrc *s, evt_event **ev, tb_error *err);
void vsrc_close(vsrc *s);

/* ------------------------------------------------------------ the other side */

/* One record of the other side: the key bytes and the row image bytes (NULL:
 * the key holds no row). late: the record is of a change after the source
 * read's position; tombstones (no position) have late false: a tombstone
 * follows the delete event that says where it is. */
typedef tb_code (*vtarget_fn)(void *opaque, const char *key, size_t klen, const char *row, size_t rlen, bool late,
                              bool tombstone, tb_error *err);

/* Read the topic of a table as a table: fn per record in order (tombstones
 * and delete events with row NULL; the truncate record of key {} skipped),
 * with the row image taken from the value as o describes it (envelope
 * `after`, or the row; Kafka Connect's payload unwrapped). at: the source
 * read's position, against which an envelope's source position says whether
 * a record is late (NULL, or value.format=row: never late). */
TB_MUST_USE tb_code vtarget_topic(const cfg *c, const evt_codec_opts *o, const char *topic, const tb_position *at,
                      vtarget_fn fn, void *opaque, tb_error *err);

/* Whether an envelope's `source` object names a place after at (MySQL:
 * binlog file and offset of the rows event; SQLite: the commit frame in
 * at's WAL generation, or the change-log sequence). No position: false. */
bool vtarget_after(const char *source, size_t len, const tb_position *at);
/* Read the cache table "<db>.<table>" of the cache file: fn per row with its
 * canonical key. A cache without that table holds no rows (*present false). */
TB_MUST_USE tb_code vtarget_cache(const char *path, const char *db, const char *table, bool *present, vtarget_fn fn,
                      void *opaque, tb_error *err);

#endif
