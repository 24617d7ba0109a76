/*
 * cache_read: read the local table cache from C (DESIGN 9).
 *
 *   cache_db *db;
 *   if (cache_db_open("cache.db", &db, &err) != TB_OK) ...
 *   tb_buf row; tb_buf_init(&row, 0);
 *   rc = cache_get(db, "shop.orders", "{\"id\":1}", &row, &err); // TB_ERR_NOT_FOUND if absent
 *   rc = cache_iter(db, "shop.orders", fn, opaque, &err);        // every row, key order
 *   cache_db_close(db);
 *
 * Rows come back as JSON objects in the wire format's value form (DESIGN 5):
 * columns in table order, integers exact (BIGINT UNSIGNED included), binary
 * columns as base64, JSON/SET/GEOMETRY columns as JSON. The internal
 * "_partition" column is left out. Plain SQL on the file works too:
 *   SELECT * FROM "shop.orders" WHERE id = 1;
 *
 * The handle opens the file read-only (a running `tributary cache` may write
 * it meanwhile: WAL mode lets readers and the writer proceed together). Table
 * definitions are read at open: reopen to see tables created later.
 * cache_db_close(NULL) is a no-op. One handle per thread.
 */
#ifndef CACHE_READ_H
#define CACHE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include "tb_buf.h"
#include "tb_error.h"
#include "tributary_cache.h"

typedef struct cache_db cache_db;

/* Open a cache file read-only. Caller closes *out with cache_db_close. */
TB_MUST_USE tb_code cache_db_open(const char *path, cache_db **out, tb_error *err);
void cache_db_close(cache_db *db);

/* The row of `table` ("db.table") whose key is key_json (e.g. {"id":1}),
 * appended to row_json_out as one JSON object. The key matches exactly: a JSON
 * object whose members are the key columns, each with a scalar value (null
 * finds the row whose key column is NULL; of a duplicate member the last
 * counts). TB_ERR_NOT_FOUND when there is no such row or table
 * (cache_db_has_table tells which); TB_ERR_INVALID when the key is not such
 * an object (a member that is not a key column, a key column missing, an
 * object or array value); TB_ERR_IO when the file cannot be read. */
TB_MUST_USE tb_code cache_get(cache_db *db, const char *table, const char *key_json, tb_buf *row_json_out, tb_error *err);

/* Whether the cache holds table `table` ("db.table"). */
bool cache_db_has_table(cache_db *db, const char *table);

/* Called per row; row_json is borrowed for the call. Return non-zero to stop. */
typedef int (*cache_row_fn)(const char *row_json, size_t len, void *opaque);

/* Every row of `table` in key order. TB_ERR_NOT_FOUND for an unknown table. */
TB_MUST_USE tb_code cache_iter(cache_db *db, const char *table, cache_row_fn fn, void *opaque, tb_error *err);

/* ---- table definitions (for `tributary cache publish`) */

/* One cache table as the metadata tables record it, and one of its columns:
 * the public API's structs (tributary_cache.h). Borrowed from the handle:
 * valid until cache_db_close. */
typedef tbc_table_info cache_table_info;
typedef tbc_column_info cache_column_info;

/* Number of tables (read at open), in name order. */
size_t cache_db_ntables(const cache_db *db);
/* Table i (0 <= i < cache_db_ntables) into *out; TB_ERR_NOT_FOUND past the end. */
TB_MUST_USE tb_code cache_db_table(const cache_db *db, size_t i, cache_table_info *out);
/* Column col (table order) of table i into *out; TB_ERR_NOT_FOUND past the end. */
TB_MUST_USE tb_code cache_db_column(const cache_db *db, size_t i, size_t col, cache_column_info *out);
/* The path the handle was opened with (borrowed). */
const char *cache_db_path(const cache_db *db);

#endif
