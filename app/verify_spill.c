/*
 * verify_spill: a table compared in hash partitions on disk, for a table
 * whose other side has more keys than verify.memory.max.bytes lets the
 * digest map hold (verify.h, MEMORY). A grace hash join:
 *
 * FILES
 *  VSPILL_FANOUT partitions per level; the partition of a key hash at level L
 *  is its 4 bits below the top 4L (level 0: the top 4). Each partition has
 *  two temporary files (mkstemp in TMPDIR, default /tmp, unlinked at once,
 *  so nothing is left behind whatever way the process ends), of records in
 *  host byte order, written in the order read:
 *    other side  16 bytes: key hash, word (vmap_apply: digest | LIVE | LATE,
 *                or VMAP_TOMB), so a key's last record in its file is its
 *                latest state
 *    source      24 bytes: key hash, row digest, digest of the row's second
 *                form (value.encoding=debezium; 0 none)
 *
 * JOIN
 *  Per partition: its other-side records are applied to the map in order
 *  (sized for the file's records, within the map's max_bytes); when the
 *  keys do not fit, both files are split into the partitions of the next
 *  level and those are joined instead. Then each source record of the
 *  partition is handed to the caller with the map, then the end (the keys no
 *  source row visited). Every file is read once per level it goes through.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verify.h"

#define VSPILL_FANOUT 16
#define VSPILL_BITS 4
#define VSPILL_MAX_LEVEL 14 /* 4 * 15 bits of the hash; identical hashes are one key */

typedef struct vspill_part {
    FILE *target, *source;
    uint64_t ntarget, nsource; /* records written */
} vspill_part;

struct vspill {
    unsigned level;
    vspill_part parts[VSPILL_FANOUT];
    uint64_t bytes;
};

static unsigned part_of(uint64_t khash, unsigned level)
{
    return (unsigned)(khash >> (64 - VSPILL_BITS * (level + 1))) & (VSPILL_FANOUT - 1);
}

static tb_code temp_file(FILE **out, tb_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tributary-verify.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return tb_error_set(err, TB_ERR_IO, false, "temporary file in %s: %s", dir && *dir ? dir : "/tmp",
                            strerror(errno));
    unlink(path); /* gone when closed, or when the process ends */
    if (!(*out = fdopen(fd, "w+b"))) {
        close(fd);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    return TB_OK;
}

tb_code vspill_open(unsigned level, vspill **out, tb_error *err)
{
    *out = NULL;
    if (level > VSPILL_MAX_LEVEL)
        return tb_error_set(err, TB_ERR_STATE, false, "hash partitions nested too deep");
    vspill *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    s->level = level;
    tb_code rc = TB_OK;
    for (int i = 0; rc == TB_OK && i < VSPILL_FANOUT; i++)
        if ((rc = temp_file(&s->parts[i].target, err)) == TB_OK)
            rc = temp_file(&s->parts[i].source, err);
    if (rc != TB_OK) {
        vspill_close(s);
        return rc;
    }
    *out = s;
    return TB_OK;
}

void vspill_close(vspill *s)
{
    if (!s)
        return;
    for (int i = 0; i < VSPILL_FANOUT; i++) {
        if (s->parts[i].target)
            fclose(s->parts[i].target);
        if (s->parts[i].source)
            fclose(s->parts[i].source);
    }
    free(s);
}

uint64_t vspill_bytes(const vspill *s) { return s ? s->bytes : 0; }

static tb_code put(vspill *s, FILE *f, const uint64_t *rec, size_t n, tb_error *err)
{
    if (fwrite(rec, sizeof(*rec), n, f) != n)
        return tb_error_set(err, TB_ERR_IO, false, "writing a temporary file: %s", strerror(errno));
    s->bytes += n * sizeof(*rec);
    return TB_OK;
}

tb_code vspill_target(vspill *s, uint64_t khash, uint64_t word, tb_error *err)
{
    vspill_part *p = &s->parts[part_of(khash, s->level)];
    const uint64_t rec[2] = {khash, word};
    p->ntarget++;
    return put(s, p->target, rec, 2, err);
}

tb_code vspill_source(vspill *s, uint64_t khash, uint64_t d1, uint64_t d2, tb_error *err)
{
    vspill_part *p = &s->parts[part_of(khash, s->level)];
    const uint64_t rec[3] = {khash, d1, d2};
    p->nsource++;
    return put(s, p->source, rec, 3, err);
}

/* Back to the start of a file written, for reading. */
static tb_code rewind_file(FILE *f, tb_error *err)
{
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        return tb_error_set(err, TB_ERR_IO, false, "a temporary file: %s", strerror(errno));
    return TB_OK;
}

/* n records of `words` words each from f (the count was kept when writing: a short read is an error). */
static tb_code get(FILE *f, uint64_t *rec, size_t words, tb_error *err)
{
    if (fread(rec, sizeof(*rec), words, f) != words)
        return tb_error_set(err, TB_ERR_IO, false, "reading a temporary file: %s",
                            ferror(f) ? strerror(errno) : "shorter than written");
    return TB_OK;
}

/* Split partition p (at s's level) into the partitions of the next level and join those. */
static tb_code split(const vspill *s, vspill_part *p, vmap *m, vspill_row_fn row, vspill_end_fn end, void *opaque,
                     tb_error *err)
{
    vspill *child = NULL;
    uint64_t rec[3];
    vmap_free(m);
    tb_code rc = vspill_open(s->level + 1, &child, err);
    if (rc == TB_OK && (rc = rewind_file(p->target, err)) == TB_OK)
        rc = rewind_file(p->source, err);
    for (uint64_t i = 0; rc == TB_OK && i < p->ntarget; i++)
        if ((rc = get(p->target, rec, 2, err)) == TB_OK)
            rc = vspill_target(child, rec[0], rec[1], err);
    for (uint64_t i = 0; rc == TB_OK && i < p->nsource; i++)
        if ((rc = get(p->source, rec, 3, err)) == TB_OK)
            rc = vspill_source(child, rec[0], rec[1], rec[2], err);
    if (rc == TB_OK)
        rc = vspill_join(child, m, row, end, opaque, err);
    vspill_close(child);
    return rc;
}

/* One partition: its other side into m, or split when it does not fit; then its source rows. */
static tb_code join_part(const vspill *s, vspill_part *p, vmap *m, vspill_row_fn row, vspill_end_fn end,
                         void *opaque, tb_error *err)
{
    uint64_t rec[3];
    vmap_free(m);
    tb_code rc = vmap_reserve(m, p->ntarget);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory for the keys of the other side");
    if ((rc = rewind_file(p->target, err)) != TB_OK || (rc = rewind_file(p->source, err)) != TB_OK)
        return rc;
    for (uint64_t i = 0; i < p->ntarget; i++) {
        if ((rc = get(p->target, rec, 2, err)) != TB_OK)
            return rc;
        vmap_slot *slot = vmap_put(m, rec[0]);
        if (!slot && m->full)
            return split(s, p, m, row, end, opaque, err);
        if (!slot)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the keys of the other side");
        vmap_apply(slot, rec[1]);
    }
    for (uint64_t i = 0; i < p->nsource; i++) {
        if ((rc = get(p->source, rec, 3, err)) != TB_OK)
            return rc;
        if ((rc = row(opaque, m, rec[0], rec[1], rec[2], err)) != TB_OK)
            return rc;
    }
    return end(opaque, m, err);
}

tb_code vspill_join(vspill *s, vmap *m, vspill_row_fn row, vspill_end_fn end, void *opaque, tb_error *err)
{
    tb_code rc = TB_OK;
    for (int i = 0; rc == TB_OK && i < VSPILL_FANOUT; i++) {
        vspill_part *p = &s->parts[i];
        if (p->ntarget == 0 && p->nsource == 0)
            continue;
        rc = join_part(s, p, m, row, end, opaque, err);
    }
    vmap_free(m);
    return rc;
}
