/*
 * libFuzzer target for the SQLite page and record decoders (capture/sqlite,
 * built only with -DTB_FUZZ=ON, clang).
 *
 * The input is one page image: its first byte picks the page size (512 <<
 * (b % 8), 512 .. 65536) and the page number (1 when b & 8: the b-tree header
 * at offset 100), the rest is the page (zero-padded or cut to the page size,
 * copied into a buffer of exactly that size so that ASan sees any read past
 * it). Every cell sqlcap_page_rows_img hands out is decoded as a record; an
 * overflow chain reads pages that do not exist (an error, never a crash).
 * Seeds: fuzz/corpus/fuzz_sqlite_page (fuzz/corpus/gen_sqlite_seeds.py).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlcap_int.h"
#include "tb_log.h"

static tb_code fuzz_cell(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                         const sqlcap_u32s *ovfl, tb_error *err)
{
    (void)opaque, (void)pgno, (void)rowid, (void)ovfl, (void)err;
    sqlcap_val vals[64];
    size_t n = 0;
    /* copy so that reads past the payload are caught */
    uint8_t *p = malloc(len ? len : 1);
    if (!p)
        return TB_OK;
    memcpy(p, payload, len);
    if (sqlcap_record(p, len, vals, 64, &n) == TB_OK) {
        volatile size_t sum = 0;
        for (size_t i = 0; i < n; i++)
            if (vals[i].type == SQLCAP_TEXT || vals[i].type == SQLCAP_BLOB)
                for (size_t k = 0; k < vals[i].n; k++)
                    sum += vals[i].p[k];
        (void)sum;
    }
    free(p);
    return TB_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_log_set_level(TB_LOG_ERROR);
    if (size < 1)
        return 0;
    uint32_t pgsz = 512u << (data[0] % 8);
    uint32_t pgno = (data[0] & 8) ? 1 : 2;
    uint8_t reserved = (data[0] & 16) ? 8 : 0;
    uint8_t *page = calloc(1, pgsz);
    if (!page)
        return 0;
    size_t n = size - 1 < pgsz ? size - 1 : pgsz;
    memcpy(page, data + 1, n);
    sqlcap_pages pg = {.dbfd = -1, .walfd = -1, .basefd = -1, .pgsz = pgsz, .usable = pgsz - reserved};
    sqlcap_view v = {.pg = &pg, .npages = 4};
    tb_error err;
    (void)sqlcap_page_rows_img(&v, pgno, page, NULL, 0, fuzz_cell, NULL, &err);
    /* the same with every other cell skipped (the diff's fast path) */
    uint8_t skip[64];
    for (size_t i = 0; i < sizeof skip; i++)
        skip[i] = (uint8_t)(i & 1);
    (void)sqlcap_page_rows_img(&v, pgno, page, skip, sizeof skip, fuzz_cell, NULL, &err);
    free(page);
    return 0;
}
