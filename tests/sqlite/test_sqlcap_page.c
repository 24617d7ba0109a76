/*
 * test_sqlcap_page: the cell decoder (sqlcap_page_rows_img) on hand-made page
 * images: a well-formed table leaf decodes, and a page whose cell count or cell
 * offsets do not fit the page is refused as corrupt without reading past it
 * (the buffer is exactly one page: ASan reports any read beyond).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlcap_int.h"

typedef struct seen {
    int n;
    int64_t rowid;
    size_t len;
} seen;

static tb_code count_cell(void *opaque, uint32_t pgno, int64_t rowid, const uint8_t *payload, size_t len,
                          const sqlcap_u32s *ovfl, tb_error *err)
{
    (void)pgno, (void)payload, (void)ovfl, (void)err;
    seen *s = opaque;
    s->n++;
    s->rowid = rowid;
    s->len = len;
    return TB_OK;
}

/* A 512-byte table leaf (type 13) with ncells in its header and one real cell
 * (rowid 7, record: header 2 bytes, one 1-byte integer 42) at offset 500. */
static uint8_t *leaf(unsigned ncells)
{
    uint8_t *p = calloc(1, 512);
    cr_assert(p);
    p[0] = 13;
    p[3] = (uint8_t)(ncells >> 8);
    p[4] = (uint8_t)ncells;
    p[5] = 500 >> 8;
    p[6] = 500 & 0xff;
    p[8] = 500 >> 8;
    p[9] = 500 & 0xff;
    const uint8_t cell[] = {3, 7, 2, 1, 42};
    memcpy(p + 500, cell, sizeof cell);
    return p;
}

static tb_code decode(uint8_t *img, seen *s, tb_error *err)
{
    sqlcap_pages pg = {.dbfd = -1, .walfd = -1, .basefd = -1, .pgsz = 512, .usable = 512};
    sqlcap_view v = {.pg = &pg, .npages = 2};
    return sqlcap_page_rows_img(&v, 2, img, NULL, 0, count_cell, s, err);
}

Test(sqlcap_page, well_formed_leaf_decodes)
{
    uint8_t *img = leaf(1);
    seen s = {0};
    tb_error err = {0};
    cr_assert_eq(decode(img, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.rowid, 7);
    cr_assert_eq(s.len, 3);
    free(img);
}

Test(sqlcap_page, cell_count_past_the_page_is_corrupt)
{
    unsigned counts[] = {65535, 253, 300};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        uint8_t *img = leaf(counts[i]);
        seen s = {0};
        tb_error err = {0};
        cr_assert_eq(decode(img, &s, &err), TB_ERR_CORRUPT, "%u cells", counts[i]);
        cr_assert(strstr(err.msg, "do not fit"), "%s", err.msg);
        cr_assert_eq(s.n, 0);
        free(img);
    }
}

Test(sqlcap_page, index_interior_cell_at_the_page_end_is_corrupt)
{
    uint8_t *img = calloc(1, 512);
    cr_assert(img);
    img[0] = 2; /* index interior: 12-byte header, cells begin with a 4-byte child */
    img[4] = 1;
    img[12] = 510 >> 8;
    img[13] = 510 & 0xff;
    seen s = {0};
    tb_error err = {0};
    cr_assert_eq(decode(img, &s, &err), TB_ERR_CORRUPT);
    cr_assert_eq(s.n, 0);
    free(img);
}
