/*
 * cfg_filter: which tables a run captures, from tables.include / tables.exclude (POSIX extended
 * regexes over "db.table", unanchored like the regexes elsewhere in tributary). The system
 * schemas (mysql, information_schema, performance_schema, sys) and the signalling tables
 * (CFG_SIGNAL_TABLE in any database) never match. One filter serves the snapshot's table list,
 * the binlog stream and the run's catalog questions alike.
 *
 * Ownership: cfg_filter_init compiles the regexes into f (the cfg may be freed afterwards);
 * cfg_filter_free releases them. A filter is read-only after init: matching from several
 * threads at once is safe.
 */
#ifndef CFG_FILTER_H
#define CFG_FILTER_H

#include <regex.h>
#include <stdbool.h>

#include "cfg.h"
#include "tb_error.h"

/* The table of incremental-snapshot signals (`tributary snapshot --incremental`), in any
 * database: never captured. */
#define CFG_SIGNAL_TABLE "tributary_signal"

typedef struct cfg_filter {
    regex_t inc, exc;
    bool has_inc, has_exc;
} cfg_filter;

/* TB_ERR_CONFIG naming the key when a regex does not compile. */
TB_MUST_USE tb_code cfg_filter_init(cfg_filter *f, const cfg *c, tb_error *err);
bool cfg_filter_match(const cfg_filter *f, const char *db, const char *table);
void cfg_filter_free(cfg_filter *f); /* NULL-safe; a freed filter may be freed again */

#endif
