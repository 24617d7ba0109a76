/*
 * libFuzzer target for `tributary decode --wal` end to end (capture/sqlite in
 * offline mode, built only with -DTB_FUZZ=ON, clang).
 *
 * The input is a database file and its WAL: a 4-byte big-endian length, that
 * many bytes of database file, the rest is the WAL. Before decoding, the
 * harness gives every whole frame the WAL header's salts and recomputes the
 * header checksum and the frames' checksum chain (when the input's first
 * length byte is even), so mutated pages reach the WAL, schema, b-tree, diff
 * and record decoders instead of stopping at the first checksum. The files
 * are written to a private directory (in /dev/shm when there is one), then
 * decoded as decode --wal does: sqlcap_open_opts(offline) and sqlcap_next
 * until the end, every event rendered to JSON lines. It must never crash,
 * leak or read out of bounds; errors are fine. Seeds: fuzz/corpus/fuzz_sqlite_wal
 * (fuzz/corpus/gen_sqlite_seeds.py).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evt_json.h"
#include "sqlcap.h"
#include "sqlcap_int.h"
#include "tb_buf.h"
#include "tb_log.h"

static char dir[64], dbpath[96], walpath[100];

/* the private directory goes when the fuzzer exits */
static void remove_dir(void)
{
    unlink(dbpath);
    unlink(walpath);
    rmdir(dir);
}

static int write_file(const char *path, const uint8_t *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, d + done, n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    return done == n ? 0 : -1;
}

/* Salts into every frame, header and frame checksums recomputed (sqlite-wal.md 1.2). */
static void fix_wal(uint8_t *w, size_t n)
{
    if (n < 32)
        return;
    uint32_t magic = sqlcap_be32(w), pgsz = sqlcap_be32(w + 8);
    bool be = magic & 1;
    if (pgsz < 512 || pgsz > 65536 || (pgsz & (pgsz - 1)))
        return;
    uint32_t s0 = 0, s1 = 0;
    sqlcap_cksum(be, w, 24, &s0, &s1);
    sqlcap_put_be32(w + 24, s0);
    sqlcap_put_be32(w + 28, s1);
    for (size_t off = 32; off + 24 + pgsz <= n; off += 24 + pgsz) {
        memcpy(w + off + 8, w + 16, 8);
        sqlcap_cksum(be, w + off, 8, &s0, &s1);
        sqlcap_cksum(be, w + off + 24, pgsz, &s0, &s1);
        sqlcap_put_be32(w + off + 16, s0);
        sqlcap_put_be32(w + off + 20, s1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_log_set_level(TB_LOG_ERROR);
    if (!dir[0]) {
        struct stat sb;
        snprintf(dir, sizeof dir, "%s/fuzz_sqlite_wal-XXXXXX", stat("/dev/shm", &sb) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
            abort();
        snprintf(dbpath, sizeof dbpath, "%s/f.db", dir);
        snprintf(walpath, sizeof walpath, "%s/f.db-wal", dir);
        atexit(remove_dir);
    }
    if (size < 4)
        return 0;
    size_t dblen = sqlcap_be32(data);
    if (dblen > size - 4)
        dblen = size - 4;
    size_t wlen = size - 4 - dblen;
    uint8_t *wal = malloc(wlen ? wlen : 1);
    if (!wal)
        return 0;
    memcpy(wal, data + 4 + dblen, wlen);
    if (!(data[0] & 1))
        fix_wal(wal, wlen);
    if (write_file(dbpath, data + 4, dblen) != 0 || write_file(walpath, wal, wlen) != 0) {
        free(wal);
        return 0;
    }
    free(wal);
    sqlcap_opts o = {.path = dbpath, .offline = true};
    sqlcap *c = NULL;
    tb_error err;
    tb_code rc = sqlcap_open_opts(&o, NULL, &c, &err);
    evt_codec_opts co = {.topic_prefix = "f", .name = "decode"};
    evt_rendered r;
    tb_buf line;
    evt_rendered_init(&r);
    tb_buf_init(&line, 0);
    for (int k = 0; rc == TB_OK && k < 100000; k++) {
        evt_event *ev = NULL;
        rc = sqlcap_next(c, 0, &ev, &err);
        if (rc != TB_OK || !ev)
            break;
        if ((rc = evt_render(&co, ev, &r, &err)) != TB_OK)
            break;
        for (size_t i = 0; i < r.n && rc == TB_OK; i++) {
            tb_buf_reset(&line);
            rc = evt_json_line(r.topic, r.msgs[i].key, r.msgs[i].key_len, r.msgs[i].value, r.msgs[i].value_len, &line);
        }
    }
    evt_rendered_free(&r);
    tb_buf_free(&line);
    sqlcap_close(c);
    return 0;
}
