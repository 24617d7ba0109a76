/*
 * snap_rows: stream the rows of one SELECT into events (internal).
 *
 * The SELECT's result columns must be the table's columns in table order
 * (snap_rows_select_sql builds that list). Rows are fetched one at a time
 * with the binary protocol and without mysql_stmt_store_result, so memory
 * stays constant whatever the table size; per-column buffers grow to the
 * largest value seen. snap_rows_store instead reads the whole result into
 * client memory (mysql_stmt_store_result: the rows' wire bytes, far less than
 * their events), after which the rows can be read again in any order.
 *
 * Ownership: snap_rows_open returns an object freed by snap_rows_close
 * (NULL-safe); it borrows `my` and takes a reference to the table. While it is
 * open no other statement may run on `my`, unless its result is stored.
 */
#ifndef SNAP_ROWS_H
#define SNAP_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <mysql.h>

#include "evt.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct snap_rows snap_rows;

/* Append "SELECT `c1`,`c2`,... FROM `db`.`t`" to out. */
TB_MUST_USE tb_code snap_rows_select_sql(const evt_table *t, tb_buf *out);

/* Prepare and execute sql (params: nparams bound parameters, may be NULL). */
TB_MUST_USE tb_code snap_rows_open(MYSQL *my, evt_table *t, const char *sql, MYSQL_BIND *params, unsigned nparams,
                       snap_rows **out, tb_error *err);

/* Fill the after image of ev (reset by the caller to op r and this table)
 * with the next row. *got = false at the end of the result. */
TB_MUST_USE tb_code snap_rows_next(snap_rows *r, evt_event *ev, bool *got, tb_error *err);

/* Read the rest of the result into client memory; *nrows = its rows. `my`
 * is free for other statements afterwards while r stays open. */
TB_MUST_USE tb_code snap_rows_store(snap_rows *r, uint64_t *nrows, tb_error *err);

/* A stored result only: the next snap_rows_next returns row i (0-based). */
void snap_rows_seek(snap_rows *r, uint64_t i);

void snap_rows_close(snap_rows *r);

#endif
