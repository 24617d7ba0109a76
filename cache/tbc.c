/*
 * tbc: the public read API (tributary_cache.h) over the cache's own reader
 * (cache_read.h). Built into libtributary-cache with every other symbol
 * hidden (cache/CMakeLists.txt), so a program that links it sees tbc_ names
 * only.
 */
#include "tributary_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_read.h"
#include "tb_buf.h"
#include "tb_error.h"

/* The handle is the reader's own, under the public name. */
struct tbc_db {
    cache_db *db;
};

static tbc_code code_of(tb_code rc)
{
    switch (rc) {
    case TB_OK:
        return TBC_OK;
    case TB_ERR_NOT_FOUND:
        return TBC_NOT_FOUND;
    case TB_ERR_INVALID:
    case TB_ERR_CONFIG:
        return TBC_INVALID;
    case TB_ERR_IO:
        return TBC_IO;
    case TB_ERR_CORRUPT:
        return TBC_CORRUPT;
    case TB_ERR_NOMEM:
        return TBC_NOMEM;
    default:
        return TBC_ERROR;
    }
}

/* The result of a reader call, its message copied into err (may be NULL). */
static tbc_code result(tb_code rc, const tb_error *e, tbc_error *err)
{
    tbc_code c = code_of(rc);
    if (err) {
        err->code = c;
        snprintf(err->msg, sizeof err->msg, "%s", rc == TB_OK ? "" : e->msg);
    }
    return c;
}

const char *tbc_version(void)
{
    return TBC_VERSION;
}

tbc_code tbc_open(const char *path, tbc_db **out, tbc_error *err)
{
    tb_error e;
    tb_error_clear(&e);
    *out = NULL;
    if (!path)
        return result(tb_error_set(&e, TB_ERR_INVALID, false, "no cache file named"), &e, err);
    tbc_db *h = calloc(1, sizeof(*h));
    if (!h)
        return result(tb_error_set(&e, TB_ERR_NOMEM, false, "out of memory"), &e, err);
    tb_code rc = cache_db_open(path, &h->db, &e);
    if (rc != TB_OK) {
        free(h);
        return result(rc, &e, err);
    }
    *out = h;
    return result(TB_OK, &e, err);
}

void tbc_close(tbc_db *db)
{
    if (!db)
        return;
    cache_db_close(db->db);
    free(db);
}

const char *tbc_path(const tbc_db *db)
{
    return cache_db_path(db->db);
}

tbc_code tbc_get(tbc_db *db, const char *table, const char *key_json, char **row_json, size_t *len, tbc_error *err)
{
    tb_error e;
    tb_error_clear(&e);
    *row_json = NULL;
    if (len)
        *len = 0;
    tb_buf row;
    tb_buf_init(&row, 0);
    tb_code rc = cache_get(db->db, table, key_json, &row, &e);
    if (rc == TB_OK) {
        size_t n = row.len;
        char *s = tb_buf_detach(&row, NULL);
        if (!s)
            s = strdup("");
        if (!s)
            rc = tb_error_set(&e, TB_ERR_NOMEM, false, "out of memory");
        *row_json = s;
        if (len && s)
            *len = n;
    }
    tb_buf_free(&row);
    return result(rc, &e, err);
}

void tbc_free(void *p)
{
    free(p);
}

bool tbc_has_table(tbc_db *db, const char *table)
{
    return cache_db_has_table(db->db, table);
}

tbc_code tbc_iter(tbc_db *db, const char *table, tbc_row_fn fn, void *opaque, tbc_error *err)
{
    tb_error e;
    tb_error_clear(&e);
    return result(cache_iter(db->db, table, fn, opaque, &e), &e, err);
}

size_t tbc_ntables(const tbc_db *db)
{
    return cache_db_ntables(db->db);
}

tbc_code tbc_table(const tbc_db *db, size_t i, tbc_table_info *out)
{
    tb_error e;
    tb_error_clear(&e);
    return result(cache_db_table(db->db, i, out), &e, NULL);
}

tbc_code tbc_column(const tbc_db *db, size_t i, size_t col, tbc_column_info *out)
{
    tb_error e;
    tb_error_clear(&e);
    return result(cache_db_column(db->db, i, col, out), &e, NULL);
}
