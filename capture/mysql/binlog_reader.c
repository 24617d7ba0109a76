/*
 * binlog_reader: change events from a binlog file (offline) or from a live
 * replication connection (binlog_live.c), through one API (binlog.h).
 *
 * A binlog file is the 4-byte magic 0xFE 'b' 'i' 'n' followed by events
 * back to back (see binlog_dec.c for the event layout). The file is read
 * into memory once; events are fed to the decoder in place.
 */
#include "binlog_int.h"
#include "binlog_live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct binlog_reader {
    binlog_dec *dec;
    binlog_live *live;     /* live mode */
    /* file mode */
    char *path;
    uint8_t *data;
    size_t size;
    uint64_t off;
    uint64_t start;
    uint64_t fed_off;
    uint64_t dropped;      /* bytes of the mapping given back with MADV_DONTNEED */
    bool mapped, at_end, failed;
};

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

tb_code binlog_open_file(const char *path, uint64_t start_pos, binlog_reader **out, tb_error *err)
{
    *out = NULL;
    binlog_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = TB_OK;
    int fd = -1;
    r->path = strdup(path);
    if (!r->path) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    r->size = (size_t)st.st_size;
    if (r->size > 0) {
        void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot map: %s", path, strerror(errno));
            goto out;
        }
        r->data = m;
        r->mapped = true;
        madvise(m, r->size, MADV_SEQUENTIAL);
    }
    if (r->size < 4 || memcmp(r->data, "\xfe" "bin", 4) != 0) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "%s: byte offset 0: not a binlog file (no 0xFE 'bin' magic)",
                          path);
        goto out;
    }
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = path;
    o.file = base_name(path);
    r->dec = binlog_dec_new(&o);
    if (!r->dec) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    r->off = 4;
    r->start = start_pos;
    *out = r;
    r = NULL;
out:
    if (fd >= 0)
        close(fd);
    binlog_close(r);
    return rc;
}

static tb_code file_next(binlog_reader *r, evt_event **ev, tb_error *err)
{
    for (;;) {
        tb_code rc = binlog_dec_next(r->dec, ev, err);
        if (rc != TB_OK)
            return rc;
        if (*ev) {
            if (r->fed_off < r->start)
                continue;
            return TB_OK;
        }
        if (r->at_end)
            return TB_OK;
        if (r->off == r->size) {
            tb_ignore(binlog_dec_finish(r->dec, ev)); /* only hands over a held event */
            if (*ev)
                return TB_OK;
            r->at_end = true;
            return TB_OK;
        }
        size_t left = r->size - (size_t)r->off;
        if (left < BL_HEADER_LEN)
            return tb_error_set(err, TB_ERR_CORRUPT, false,
                                "%s: byte offset %llu: truncated event header (%zu of 19 bytes)", r->path,
                                (unsigned long long)r->off, left);
        const uint8_t *p = r->data + r->off;
        uint32_t len = bl_u32(p + 9);
        if (len < BL_HEADER_LEN)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: byte offset %llu: event size %u is too small",
                                r->path, (unsigned long long)r->off, len);
        if (len > left)
            return tb_error_set(err, TB_ERR_CORRUPT, false,
                                "%s: byte offset %llu: truncated event (size %u, %zu bytes left in the file)",
                                r->path, (unsigned long long)r->off, len, left);
        /* events behind us are never read again: give their pages back so that
         * the resident set stays small on big files */
        if (r->mapped && r->off - r->dropped >= ((uint64_t)16 << 20)) {
            uint64_t upto = r->off & ~(uint64_t)4095;
            madvise(r->data + r->dropped, (size_t)(upto - r->dropped), MADV_DONTNEED);
            r->dropped = upto;
        }
        rc = binlog_dec_feed(r->dec, p, len, r->off, err);
        if (rc != TB_OK)
            return rc;
        r->fed_off = r->off;
        r->off += len;
    }
}

tb_code binlog_next(binlog_reader *r, int timeout_ms, evt_event **ev, tb_error *err)
{
    *ev = NULL;
    if (r->failed)
        return tb_error_set(err, TB_ERR_STATE, false, "binlog reader stopped after an error");
    tb_code rc = r->live ? binlog_live_next(r->live, r->dec, timeout_ms, ev, err) : file_next(r, ev, err);
    if (rc != TB_OK)
        r->failed = true;
    return rc;
}

void binlog_set_keys(binlog_reader *r, const cfg *keys)
{
    if (r && r->dec)
        r->dec->o.keys = keys;
}

bool binlog_position_gone(const binlog_reader *r)
{
    return r && binlog_live_position_gone(r->live);
}

bool binlog_connected(const binlog_reader *r, int64_t *down_since_ms)
{
    if (r && !r->live) {
        if (down_since_ms)
            *down_since_ms = 0;
        return true;
    }
    return binlog_live_connected(r ? r->live : NULL, down_since_ms);
}

void binlog_check_connection(binlog_reader *r)
{
    if (r && r->live)
        binlog_live_check(r->live, r->dec);
}

tb_code binlog_behind_bytes(binlog_reader *r, int64_t *bytes, tb_error *err)
{
    *bytes = -1;
    if (!r)
        return TB_OK;
    if (!r->live) {
        *bytes = (int64_t)(r->size - r->off);
        return TB_OK;
    }
    return binlog_live_behind(r->live, r->dec, bytes, err);
}

bool binlog_encrypted(const binlog_reader *r)
{
    return r && binlog_live_encrypted(r->live);
}

bool binlog_at_end(const binlog_reader *r)
{
    return r->at_end;
}

const tb_position *binlog_position(const binlog_reader *r)
{
    return r && r->dec ? binlog_dec_commit_position(r->dec) : NULL;
}

const binlog_dec *binlog_reader_decoder(const binlog_reader *r)
{
    return r->dec;
}

void binlog_set_stmt_fn(binlog_reader *r, binlog_stmt_fn fn, void *opaque)
{
    binlog_dec_set_stmt_fn(r->dec, fn, opaque);
}

void binlog_set_history_fn(binlog_reader *r, binlog_schema_fn fn, void *opaque)
{
    if (r->live)
        binlog_live_set_history_fn(r->live, fn, opaque);
}

void binlog_close(binlog_reader *r)
{
    if (!r)
        return;
    binlog_live_free(r->live);
    binlog_dec_free(r->dec);
    if (r->mapped)
        munmap(r->data, r->size);
    free(r->path);
    free(r);
}

tb_code binlog_open(const cfg *c, const tb_position *start, binlog_reader **out, tb_error *err)
{
    *out = NULL;
    binlog_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = binlog_live_open(c, start, &r->live, &r->dec, err);
    if (rc != TB_OK) {
        binlog_close(r);
        return rc;
    }
    *out = r;
    return TB_OK;
}
