/*
 * tributary_cache.h: the C API to read a table cache that `tributary cache`
 * writes (DESIGN 9). Shared library libtributary-cache (pkg-config
 * tributary-cache); it exports the tbc_ functions below and nothing else,
 * and needs SQLite and Jansson only.
 *
 *   tbc_db *db;
 *   tbc_error err;
 *   if (tbc_open("cache.db", &db, &err) != TBC_OK) ...           // err.msg says why
 *   char *row; size_t len;
 *   rc = tbc_get(db, "shop.orders", "{\"id\":1}", &row, &len, &err); // TBC_NOT_FOUND if absent
 *   ... tbc_free(row);
 *   rc = tbc_iter(db, "shop.orders", fn, opaque, &err);          // every row, key order
 *   tbc_close(db);
 *
 * Rows are JSON objects in the wire format's value form (DESIGN 5): columns
 * in table order, integers exact (BIGINT UNSIGNED included), binary columns
 * as base64, JSON/SET/GEOMETRY columns as JSON. The handle opens the file
 * read-only (a running `tributary cache` may write it meanwhile). Table
 * definitions are read at open: open again to see tables created later.
 * tbc_close(NULL) is a no-op. One handle per thread.
 *
 * Versions: TBC_VERSION_* is the API this header declares; tbc_version()
 * the library's. The major number changes when a call changes
 * incompatibly (and with it the library's soname, libtributary-cache.so.N).
 */
#ifndef TRIBUTARY_CACHE_H
#define TRIBUTARY_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TBC_VERSION_MAJOR 0
#define TBC_VERSION_MINOR 1
#define TBC_VERSION_PATCH 0
#define TBC_VERSION "0.1.0"

#if defined(__GNUC__)
#define TBC_API __attribute__((visibility("default")))
#else
#define TBC_API
#endif

/* Result of a call. */
typedef enum tbc_code {
    TBC_OK = 0,
    TBC_NOT_FOUND = 1, /* no such row or table */
    TBC_INVALID = 2,   /* a bad argument: a key that is not the table's key (see tbc_get) */
    TBC_IO = 3,        /* the file cannot be opened or read */
    TBC_CORRUPT = 4,   /* the file is not a cache, or is damaged */
    TBC_NOMEM = 5,     /* out of memory */
    TBC_ERROR = 6      /* anything else (err.msg says what) */
} tbc_code;

typedef struct tbc_error {
    tbc_code code;
    char msg[1024]; /* one line naming the input and the fix; "" on success */
} tbc_error;

typedef struct tbc_db tbc_db;

/* "0.1.0": the library's version. */
TBC_API const char *tbc_version(void);

/* Open a cache file read-only. Close *out with tbc_close. */
TBC_API tbc_code tbc_open(const char *path, tbc_db **out, tbc_error *err);
TBC_API void tbc_close(tbc_db *db);
/* The file the handle reads. */
TBC_API const char *tbc_path(const tbc_db *db);

/* The row of `table` ("db.table") whose key is key_json (e.g. {"id":1}): a
 * JSON object whose members are the key columns, each with a scalar value
 * (null finds the row whose key column is NULL). *row_json: a new
 * NUL-terminated string the caller frees with tbc_free; *len its length
 * (len may be NULL). TBC_NOT_FOUND when there is no such row or table
 * (tbc_has_table tells which); TBC_INVALID when the key is not such an
 * object. */
TBC_API tbc_code tbc_get(tbc_db *db, const char *table, const char *key_json, char **row_json, size_t *len,
                         tbc_error *err);
TBC_API void tbc_free(void *p);

/* Whether the cache holds table `table` ("db.table"). */
TBC_API bool tbc_has_table(tbc_db *db, const char *table);

/* Called per row; row_json is borrowed for the call. Return non-zero to stop. */
typedef int (*tbc_row_fn)(const char *row_json, size_t len, void *opaque);
/* Every row of `table` in key order. TBC_NOT_FOUND for an unknown table. */
TBC_API tbc_code tbc_iter(tbc_db *db, const char *table, tbc_row_fn fn, void *opaque, tbc_error *err);

/* The tables, as the cache's metadata records them. Strings are borrowed
 * from the handle: valid until tbc_close. */
typedef struct tbc_table_info {
    const char *name;  /* "<db>.<table>" */
    const char *topic; /* the topic it was replayed from; NULL if none recorded */
    bool inferred;     /* columns inferred from rows (no schema record was seen): types are "" */
    long long version; /* schema version recorded from the schema record */
    size_t ncols;
    size_t npk;
} tbc_table_info;
typedef struct tbc_column_info {
    const char *name;
    const char *type;  /* type name from the schema record ("bigint", ...); "" when inferred */
    int pk;            /* 1-based position in the key, 0 = not a key column */
    bool is_unsigned;  /* BIGINT UNSIGNED (exact digits above 2^63) */
    bool is_bool;      /* BIT(1): read back as true/false */
} tbc_column_info;
TBC_API size_t tbc_ntables(const tbc_db *db);
/* Table i (0 <= i < tbc_ntables), or column col of it. TBC_NOT_FOUND out of range. */
TBC_API tbc_code tbc_table(const tbc_db *db, size_t i, tbc_table_info *out);
TBC_API tbc_code tbc_column(const tbc_db *db, size_t i, size_t col, tbc_column_info *out);

#ifdef __cplusplus
}
#endif

#endif
