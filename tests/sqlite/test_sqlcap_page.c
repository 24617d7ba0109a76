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
#include <unistd.h>

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

/* A 3-page database file of 512-byte pages whose page 2 is a table interior
 * page (type 5) with ncells cells pointing to child and its right child to
 * right; page 3 is an empty table leaf. The tree walk from root 2 is returned. */
static tb_code walk(unsigned ncells, uint32_t child, uint32_t right, sqlcap_u32s *inner, sqlcap_u32s *leaves,
                    tb_error *err)
{
    uint8_t img[3 * 512] = {0};
    uint8_t *p2 = img + 512, *p3 = img + 1024;
    p2[0] = 5;
    p2[3] = (uint8_t)(ncells >> 8);
    p2[4] = (uint8_t)ncells;
    p2[8] = (uint8_t)(right >> 24), p2[9] = (uint8_t)(right >> 16), p2[10] = (uint8_t)(right >> 8);
    p2[11] = (uint8_t)right;
    for (unsigned c = 0; c < ncells; c++) { /* every cell at offset 400: child, rowid varint c */
        p2[12 + 2 * c] = 400 >> 8;
        p2[13 + 2 * c] = 400 & 0xff;
    }
    p2[400] = (uint8_t)(child >> 24), p2[401] = (uint8_t)(child >> 16), p2[402] = (uint8_t)(child >> 8);
    p2[403] = (uint8_t)child;
    p2[404] = 1;
    p3[0] = 13;
    char path[] = "/tmp/test_sqlcap_page.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    cr_assert_eq(write(fd, img, sizeof img), (ssize_t)sizeof img);
    sqlcap_pages pg = {.dbfd = fd, .walfd = -1, .basefd = fd, .pgsz = 512, .usable = 512};
    sqlcap_view v = {.pg = &pg, .npages = 3};
    tb_code rc = sqlcap_tree_pages(&v, 2, inner, leaves, err);
    close(fd);
    return rc;
}

Test(sqlcap_page, tree_walk_of_a_well_formed_interior_page)
{
    sqlcap_u32s inner = {0}, leaves = {0};
    tb_error err = {0};
    cr_assert_eq(walk(1, 3, 3, &inner, &leaves, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(inner.n, 1);
    cr_assert_eq(inner.v[0], 2);
    cr_assert_eq(leaves.n, 2);
    free(inner.v);
    free(leaves.v);
}

/* A child pointer past the database (or 0) is corruption, not a page number
 * handed to the callers' per-page maps (which are sized by the database's
 * page count: fuzz_sqlite_wal wrote past them). */
Test(sqlcap_page, tree_walk_child_outside_the_database_is_corrupt)
{
    uint32_t bad[][2] = {{3, 99999}, {0xffffffffu, 3}, {0, 3}, {3, 4}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sqlcap_u32s inner = {0}, leaves = {0};
        tb_error err = {0};
        cr_assert_eq(walk(1, bad[i][0], bad[i][1], &inner, &leaves, &err), TB_ERR_CORRUPT, "children %u, %u",
                     bad[i][0], bad[i][1]);
        cr_assert(strstr(err.msg, "outside the database"), "%s", err.msg);
        cr_assert_eq(leaves.n, 0);
        free(inner.v);
        free(leaves.v);
    }
}

/* A page whose children are itself is a cycle: each level would multiply the
 * last; it is refused once a level has more pages than the database. */
Test(sqlcap_page, tree_walk_cycle_is_corrupt)
{
    sqlcap_u32s inner = {0}, leaves = {0};
    tb_error err = {0};
    cr_assert_eq(walk(20, 2, 2, &inner, &leaves, &err), TB_ERR_CORRUPT);
    cr_assert(strstr(err.msg, "more children than"), "%s", err.msg);
    free(inner.v);
    free(leaves.v);
}
