/*
 * snap_schema: table discovery and descriptors from information_schema
 * (internal to snapshot/).
 *
 *  - snap_schema_list: the base tables that pass the filter (cfg_filter,
 *    config/cfg_filter.h: tables.include / tables.exclude), sorted by
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

#include <stdbool.h>
#include <stdint.h>
#include <mysql.h>

#include "cfg.h"
#include "cfg_filter.h"
#include "evt.h"
#include "tb_error.h"

#define SNAP_SIGNAL_TABLE CFG_SIGNAL_TABLE /* the filter never matches it */

typedef struct snap_tinfo {
    char *db, *table;     /* owned */
    uint64_t rows_est;    /* TABLE_ROWS (an estimate for InnoDB) */
    char *engine;         /* owned; may be NULL */
} snap_tinfo;

TB_MUST_USE tb_code snap_schema_list(MYSQL *my, const cfg_filter *f, snap_tinfo **out, size_t *n, tb_error *err);
void snap_tinfo_free_all(snap_tinfo *t, size_t n);

TB_MUST_USE tb_code snap_schema_describe(MYSQL *my, const cfg *c, const char *db, const char *table, evt_table **out,
                             tb_error *err);


#endif
