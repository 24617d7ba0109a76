/*
 * sqlcap_file: the WAL and wal-index (-shm) formats, and a small u32 map.
 *
 * WAL FILE (fileformat2 4.1)
 *   header, 32 bytes, big-endian u32:
 *     0 magic 0x377f0682 (checksum words little-endian) / 0x377f0683 (big-endian)
 *     4 version 3007000   8 page size   12 checkpoint seq   16 salt-1   20 salt-2
 *     24,28 checksum of bytes 0..23
 *   frame i (1-based) at 32 + (i-1)*(pgsz+24): 24-byte header then the page:
 *     0 page number   4 commit: db size in pages after commit, 0 otherwise
 *     8,12 salts (copies)   16,20 cumulative checksum over the header
 *     checksum, then every frame's header bytes 0..7 and page data.
 *   checksum: words x[] in the magic's byte order; for i=0,2,..:
 *     s0 += x[i] + s1; s1 += x[i+1] + s0.
 *
 * WAL-INDEX (-shm, walformat 2.1), native byte order except the salts:
 *   0..47 WalIndexHdr copy 1, 48..95 copy 2:
 *     0 iVersion 4 unused 8 iChange 12 isInit(u8) 13 bigEndCksum(u8)
 *     14 szPage(u16: 65536 stored as 1) 16 mxFrame 20 nPage 24,28 aFrameCksum
 *     32,36 aSalt (raw bytes of the WAL header salts) 40,44 aCksum over 0..39
 *   96 nBackfill 100..119 aReadMark[0..4] 120..127 lock bytes 128 nBackfillAttempted
 *   then hash blocks of 32 KiB: block 0 holds aPgno[4062] at offset 136,
 *   block k>0 holds aPgno[4096] at k*32768; aPgno[j] is the page of a frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlcap_int.h"

/* ---------------------------------------------------------------- map */

static size_t sqlcap_map_slot(uint32_t k, size_t cap)
{
    return (size_t)((k * 2654435761u) & (uint32_t)(cap - 1));
}

static tb_code sqlcap_map_grow(sqlcap_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint32_t *nk = calloc(ncap, sizeof *nk);
    uint64_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return TB_ERR_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t s = sqlcap_map_slot(m->keys[i], ncap);
        while (nk[s])
            s = (s + 1) & (ncap - 1);
        nk[s] = m->keys[i];
        nv[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return TB_OK;
}

tb_code sqlcap_map_put(sqlcap_map *m, uint32_t k, uint64_t v)
{
    if ((m->n + 1) * 2 > m->cap && sqlcap_map_grow(m) != TB_OK)
        return TB_ERR_NOMEM;
    size_t s = sqlcap_map_slot(k, m->cap);
    while (m->keys[s] && m->keys[s] != k)
        s = (s + 1) & (m->cap - 1);
    if (!m->keys[s]) {
        m->keys[s] = k;
        m->n++;
    }
    m->vals[s] = v;
    return TB_OK;
}

bool sqlcap_map_get(const sqlcap_map *m, uint32_t k, uint64_t *v)
{
    if (!m || !m->cap)
        return false;
    size_t s = sqlcap_map_slot(k, m->cap);
    while (m->keys[s]) {
        if (m->keys[s] == k) {
            if (v)
                *v = m->vals[s];
            return true;
        }
        s = (s + 1) & (m->cap - 1);
    }
    return false;
}

bool sqlcap_map_del(sqlcap_map *m, uint32_t k)
{
    if (!m->cap)
        return false;
    size_t s = sqlcap_map_slot(k, m->cap);
    while (m->keys[s] && m->keys[s] != k)
        s = (s + 1) & (m->cap - 1);
    if (!m->keys[s])
        return false;
    m->keys[s] = 0;
    m->n--;
    /* re-insert the rest of the cluster (backward-shift free deletion) */
    size_t j = (s + 1) & (m->cap - 1);
    while (m->keys[j]) {
        uint32_t kk = m->keys[j];
        uint64_t vv = m->vals[j];
        m->keys[j] = 0;
        m->n--;
        tb_ignore(sqlcap_map_put(m, kk, vv)); /* cannot grow: n decreased */
        j = (j + 1) & (m->cap - 1);
    }
    return true;
}

void sqlcap_map_clear(sqlcap_map *m)
{
    if (m->cap)
        memset(m->keys, 0, m->cap * sizeof *m->keys);
    m->n = 0;
}

void sqlcap_map_free(sqlcap_map *m)
{
    if (!m)
        return;
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void *sqlcap_grow(void *v, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(v, nc * elem);
    if (nv)
        *cap = nc;
    return nv;
}

tb_code sqlcap_u32s_grow(sqlcap_u32s *l, uint32_t x)
{
    uint32_t *nv = sqlcap_grow(l->v, l->n, &l->cap, sizeof *nv, 16);
    if (!nv)
        return TB_ERR_NOMEM;
    l->v = nv;
    l->v[l->n++] = x;
    return TB_OK;
}

tb_code sqlcap_u32s_reserve(sqlcap_u32s *l, size_t extra)
{
    if (l->n + extra <= l->cap)
        return TB_OK;
    size_t ncap = l->cap ? l->cap : 16;
    while (ncap < l->n + extra)
        ncap *= 2;
    uint32_t *nv = realloc(l->v, ncap * sizeof *nv);
    if (!nv)
        return TB_ERR_NOMEM;
    l->v = nv;
    l->cap = ncap;
    return TB_OK;
}

void sqlcap_u32s_free(sqlcap_u32s *l)
{
    if (!l)
        return;
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------------- checksums */

/* One checksum step is linear over Z/2^32: (a, b) -> M (a, b) + (x0, x0 + x1)
 * with M = [[1, 1], [1, 2]] (a += x0 + b; b += x1 + a). So n steps from (a, b)
 * give M^n (a, b) + (the same n steps from (0, 0)): four quarters of a page
 * run as four independent chains (4x the instruction-level parallelism of the
 * one dependency chain) and are joined with M^(steps per quarter). */
static void sqlcap_mat_mul(const uint32_t x[4], const uint32_t y[4], uint32_t out[4])
{
    uint32_t r[4] = {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
                     x[2] * y[1] + x[3] * y[3]};
    memcpy(out, r, sizeof r);
}

static void sqlcap_mat_pow(size_t n, uint32_t out[4])
{
    uint32_t r[4] = {1, 0, 0, 1}, m[4] = {1, 1, 1, 2};
    for (; n; n >>= 1) {
        if (n & 1)
            sqlcap_mat_mul(r, m, r);
        sqlcap_mat_mul(m, m, m);
    }
    memcpy(out, r, sizeof r);
}

static inline uint32_t sqlcap_word(const uint8_t *p, bool swap)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return swap ? __builtin_bswap32(x) : x;
}

/* q steps from (0, 0) on each of the four quarters at p, p+s, p+2s, p+3s
 * (s = 8q bytes). swap is a constant at each call: no test in the loop. */
static inline __attribute__((always_inline)) void sqlcap_lanes4(const uint8_t *p, size_t q, bool swap, uint32_t ca[4],
                                                                uint32_t cb[4])
{
    size_t s = q * 8;
    uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    for (const uint8_t *e = p + s; p < e; p += 8) {
        a0 += sqlcap_word(p, swap) + b0;
        a1 += sqlcap_word(p + s, swap) + b1;
        a2 += sqlcap_word(p + 2 * s, swap) + b2;
        a3 += sqlcap_word(p + 3 * s, swap) + b3;
        b0 += sqlcap_word(p + 4, swap) + a0;
        b1 += sqlcap_word(p + s + 4, swap) + a1;
        b2 += sqlcap_word(p + 2 * s + 4, swap) + a2;
        b3 += sqlcap_word(p + 3 * s + 4, swap) + a3;
    }
    ca[0] = a0, ca[1] = a1, ca[2] = a2, ca[3] = a3;
    cb[0] = b0, cb[1] = b1, cb[2] = b2, cb[3] = b3;
}

void sqlcap_cksum(bool bigend, const uint8_t *data, size_t len, uint32_t *s0, uint32_t *s1)
{
    uint32_t a = *s0, b = *s1;
    /* words in the byte order of the magic: native loads, swapped when that
     * order is not the host's */
    uint16_t probe = 1;
    bool host_le = *(const uint8_t *)&probe == 1;
    bool swap = bigend == host_le;
    size_t steps = len / 8, q = steps >= 64 ? steps / 4 : 0, i = 0;
    if (q) {
        uint32_t ca[4], cb[4], mq[4];
        if (swap)
            sqlcap_lanes4(data, q, true, ca, cb);
        else
            sqlcap_lanes4(data, q, false, ca, cb);
        sqlcap_mat_pow(q, mq);
        for (int j = 0; j < 4; j++) {
            uint32_t na = mq[0] * a + mq[1] * b + ca[j], nb = mq[2] * a + mq[3] * b + cb[j];
            a = na;
            b = nb;
        }
        i = 4 * q * 8;
    }
    for (; i + 8 <= len; i += 8) {
        a += sqlcap_word(data + i, swap) + b;
        b += sqlcap_word(data + i + 4, swap) + a;
    }
    *s0 = a;
    *s1 = b;
}

void sqlcap_walhdr_parse(const uint8_t b[32], sqlcap_walhdr *h)
{
    h->magic = sqlcap_be32(b);
    h->version = sqlcap_be32(b + 4);
    h->pgsz = sqlcap_be32(b + 8);
    h->ckpt_seq = sqlcap_be32(b + 12);
    h->salt1 = sqlcap_be32(b + 16);
    h->salt2 = sqlcap_be32(b + 20);
    h->ck1 = sqlcap_be32(b + 24);
    h->ck2 = sqlcap_be32(b + 28);
    h->valid = false;
    if ((h->magic & 0xFFFFFFFEu) != 0x377f0682u || h->version != 3007000)
        return;
    uint32_t s0 = 0, s1 = 0;
    sqlcap_cksum(h->magic & 1, b, 24, &s0, &s1);
    h->valid = s0 == h->ck1 && s1 == h->ck2 && h->pgsz >= 512 && h->pgsz <= 65536 && !(h->pgsz & (h->pgsz - 1));
}

/* ---------------------------------------------------------------- shm */

static uint32_t sqlcap_ne32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

tb_code sqlcap_shm_read(int shmfd, sqlcap_shmhdr *h, tb_error *err)
{
    uint8_t b[136];
    ssize_t r = pread(shmfd, b, sizeof b, 0);
    if (r < 0)
        return tb_error_set(err, TB_ERR_IO, true, "-shm: read header: %s", strerror(errno));
    if (r < (ssize_t)sizeof b)
        return tb_error_set(err, TB_ERR_CORRUPT, true, "-shm: header short (%zd bytes)", r);
    if (memcmp(b, b + 48, 48) != 0)
        return tb_error_set(err, TB_ERR_CORRUPT, true, "-shm: header copies differ (writer busy)");
    if (b[12] != 1)
        return tb_error_set(err, TB_ERR_CORRUPT, true, "-shm: header not initialised");
    uint32_t s0 = 0, s1 = 0;
    /* aCksum is over native-order words */
    const union { uint32_t u; uint8_t c[4]; } probe = {1};
    sqlcap_cksum(probe.c[0] == 0, b, 40, &s0, &s1);
    if (s0 != sqlcap_ne32(b + 40) || s1 != sqlcap_ne32(b + 44))
        return tb_error_set(err, TB_ERR_CORRUPT, true, "-shm: header checksum mismatch");
    h->change = sqlcap_ne32(b + 8);
    uint16_t sz;
    memcpy(&sz, b + 14, 2);
    h->pgsz = (uint32_t)(sz & 0xfe00) | ((uint32_t)(sz & 0x0001) << 16);
    h->mxframe = sqlcap_ne32(b + 16);
    h->npage = sqlcap_ne32(b + 20);
    h->fck1 = sqlcap_ne32(b + 24);
    h->fck2 = sqlcap_ne32(b + 28);
    h->salt1 = sqlcap_be32(b + 32);
    h->salt2 = sqlcap_be32(b + 36);
    h->nbackfill = sqlcap_ne32(b + 96);
    for (int i = 0; i < 5; i++)
        h->readmark[i] = sqlcap_ne32(b + 100 + 4 * i);
    return TB_OK;
}

tb_code sqlcap_wal_read_page(int walfd, uint32_t pgsz, uint32_t frame, uint8_t *buf, tb_error *err)
{
    off_t off = 32 + (off_t)(frame - 1) * (pgsz + 24) + 24;
    ssize_t r = pread(walfd, buf, pgsz, off);
    if (r != (ssize_t)pgsz)
        return tb_error_set(err, TB_ERR_IO, true, "-wal: read frame %u at offset %lld: %s", frame,
                            (long long)off, r < 0 ? strerror(errno) : "short read");
    return TB_OK;
}
