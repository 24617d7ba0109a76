/*
 * snap_schema: table discovery and descriptors from information_schema
 * (internal to snapshot/).
 *
 *  - snap_filter: tables.include / tables.exclude (POSIX extended regexes
 *    over "db.table", unanchored like the regexes elsewhere in tributary);
 *    the system schemas and the signalling tables (`tributary_signal`) are
 *    never snapshotted.
 *  - snap_schema_list: the base tables that pass the filter, sorted by
 *    db.table, with information_schema.TABLES.TABLE_ROWS as the estimate.
 *  - snap_schema_describe: the catalog's descriptor (mymeta_describe in
 *    mysqlconn/, the reader the binlog decoder uses too), sealed, version 1,
 *    keyed by its primary key or else key.columns.<db>.<table>. A table with
 *    neither is refused (TB_ERR_CONFIG); one that does not exist is
 *    TB_ERR_NOT_FOUND.
 *
 * Ownership: the list is freed with snap_tinfo_free_all(); the evt_table is
 * one reference the caller drops with evt_table_unref().
 */
#ifndef SNAP_SCHEMA_H
#define SNAP_SCHEMA_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <mysql.h>

#include "cfg.h"
#include "evt.h"
#include "tb_error.h"

#define SNAP_SIGNAL_TABLE "tributary_signal"

typedef struct snap_filter {
    regex_t inc, exc;
    bool has_inc, has_exc;
} snap_filter;

TB_MUST_USE tb_code snap_filter_init(snap_filter *f, const cfg *c, tb_error *err);
bool snap_filter_match(const snap_filter *f, const char *db, const char *table);
void snap_filter_free(snap_filter *f); /* NULL-safe */

typedef struct snap_tinfo {
    char *db, *table;     /* owned */
    uint64_t rows_est;    /* TABLE_ROWS (an estimate for InnoDB) */
    char *engine;         /* owned; may be NULL */
} snap_tinfo;

TB_MUST_USE tb_code snap_schema_list(MYSQL *my, const snap_filter *f, snap_tinfo **out, size_t *n, tb_error *err);
void snap_tinfo_free_all(snap_tinfo *t, size_t n);

TB_MUST_USE tb_code snap_schema_describe(MYSQL *my, const cfg *c, const char *db, const char *table, evt_table **out,
                             tb_error *err);


#endif
