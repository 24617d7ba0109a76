/*
 * verify: `tributary verify`, the source compared with its topics and its
 * cache (DESIGN 10a). Internal to app/: cmd_verify.c drives the passes,
 * verify_map.c holds the digest map, verify_spill.c compares a table too
 * large for it in hash partitions on disk, verify_source.c reads the
 * source, verify_target.c reads a topic or the cache as a table.
 *
 * MEMORY
 *  The other side of a table (its topic read as a table, or its cache
 *  table) is held as a digest map: one 16-byte slot per distinct key
 *  (64-bit hash of the key bytes, 61-bit digest of the row image bytes and
 *  three flags), open addressing, at most 3/4 full, capacity a power of two:
 *  21 to 43 bytes per key. The map never takes more than
 *  verify.memory.max.bytes (32 MiB: 2^21 slots, 1.5M keys): a topic read
 *  sizes it once from its record count (an upper bound on its keys); the
 *  cache, whose size is not known before, grows it by doubling while the old
 *  and the new table together fit. A table with more keys than fit is
 *  compared in hash partitions on disk (verify_spill.c): its records from
 *  then on, and the source's rows, go as 16- and 24-byte records to
 *  temporary files, 16 partitions by the key hash's top bits (recursively,
 *  by the next bits, for a partition that still does not fit), and each
 *  partition is then compared in the map alone. The cost: temporary disk of
 *  16 bytes per topic record and 24 per source row (10M rows: about 400 MB,
 *  in TMPDIR, unlinked at creation), read back once; under
 *  value.encoding=debezium, every source row rendered twice. Re-check
 *  passes hold only the keys that differed (with their latest bytes) and
 *  are not bounded by the setting. The source is streamed one row at a
 *  time (snapshot/ and capture/sqlite readers) and never held. Keys that
 *  differ are kept as 64-bit hashes (at most VERIFY_RECHECK_MAX per run) to
 *  be checked again; only the first N of each kind keep their bytes, for
 *  the report. The topic reader's prefetch queue is 1 MiB and its fetches
 *  256 KiB a partition (ksink.h, ksink_topic_scan).
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
/* In a record word (vmap_apply) SEEN, which only the source sets, means a tombstone. */
#define VMAP_TOMB VMAP_SEEN

typedef struct vmap {
    vmap_slot *slots;
    size_t cap;       /* 0 or a power of two */
    size_t n;         /* slots in use (live or not) */
    size_t max_bytes; /* the slots never take more (growth included); 0: no limit */
    bool full;        /* vmap_put failed for want of room under max_bytes, not of memory */
} vmap;

void vmap_init(vmap *m);
void vmap_free(vmap *m); /* also empties it; max_bytes stays */
/* 64-bit hash of key bytes, never 0. */
uint64_t vmap_hash(const void *p, size_t n);
/* Size an empty map for n keys (at most max_bytes; a later vmap_put may
 * still grow it when that leaves room). TB_ERR_NOMEM. */
TB_MUST_USE tb_code vmap_reserve(vmap *m, uint64_t n);
/* The slot of khash, added (vdig 0) when new; NULL when it cannot grow: out
 * of memory, or (m->full) no room under max_bytes. A slot pointer is valid
 * until the next vmap_put. */
vmap_slot *vmap_put(vmap *m, uint64_t khash);
vmap_slot *vmap_find(const vmap *m, uint64_t khash);
/* The digest part of a slot (without the flags), and a digest of bytes. */
static inline uint64_t vmap_digest(const void *p, size_t n) { return vmap_hash(p, n) << 3; }
static inline uint64_t vmap_dig(const vmap_slot *s) { return s->vdig & ~(uint64_t)7; }
/* One record of the other side, as a word: its row digest | VMAP_LIVE (NULL
 * row: 0), | VMAP_LATE when late; a tombstone is VMAP_TOMB. Applied to the
 * key's slot in the order read: a tombstone keeps only LATE (the delete
 * event before it said where the delete is), any other record replaces. */
static inline void vmap_apply(vmap_slot *s, uint64_t word)
{
    s->vdig = (word & VMAP_TOMB) ? (s->vdig & VMAP_LATE) : word;
}

/* A source row (its key hash and row digest) against the map; marks the
 * key's slot SEEN unless missing. *slot: the key's slot or NULL. */
typedef enum vverdict { VV_EQUAL, VV_MISSING, VV_DIFFERENT, VV_LATE } vverdict;
vverdict vmap_judge(vmap *m, uint64_t khash, uint64_t dig, vmap_slot **slot);

/* ------------------------------------------------------------ hash partitions on disk */

/* A table compared in hash partitions (MEMORY; verify_spill.c). Records go
 * to temporary files (TMPDIR, default /tmp), unlinked at creation. */
typedef struct vspill vspill;
TB_MUST_USE tb_code vspill_open(unsigned level, vspill **out, tb_error *err);
/* A record of the other side (word as for vmap_apply), in the order read. */
TB_MUST_USE tb_code vspill_target(vspill *s, uint64_t khash, uint64_t word, tb_error *err);
/* A source row: its row digest and that of its second form (d2, 0: none). */
TB_MUST_USE tb_code vspill_source(vspill *s, uint64_t khash, uint64_t d1, uint64_t d2, tb_error *err);
/* Compare partition by partition: each one's other side loaded into m (emptied
 * first, within its max_bytes; a partition that does not fit is split by the
 * next bits of the hash), then row per source record of the partition, then
 * end (the keys no row visited are in m). m is empty afterwards. */
typedef tb_code (*vspill_row_fn)(void *opaque, vmap *m, uint64_t khash, uint64_t d1, uint64_t d2, tb_error *err);
typedef tb_code (*vspill_end_fn)(void *opaque, vmap *m, tb_error *err);
TB_MUST_USE tb_code vspill_join(vspill *s, vmap *m, vspill_row_fn row, vspill_end_fn end, void *opaque,
                                tb_error *err);
/* Bytes written to the files of this level. */
uint64_t vspill_bytes(const vspill *s);
void vspill_close(vspill *s); /* NULL-safe */

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
 * read's position `p`: MariaDB/MySQL by GTID (binlog_gtid_covers: every domain
 * of p at or past its number in c; MySQL, p's set within c's), else by binlog
 * file and offset; SQLite by WAL
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
 * follows the delete event that says where it is. total: the records the
 * read covers (the same in every call; 0 unknown), at least its keys. */
typedef struct vtarget_rec {
    const char *key, *row;
    size_t klen, rlen;
    bool late, tombstone;
    uint64_t total;
} vtarget_rec;
typedef tb_code (*vtarget_fn)(void *opaque, const vtarget_rec *rec, tb_error *err);

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
