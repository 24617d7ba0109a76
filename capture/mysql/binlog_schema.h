/*
 * binlog_schema: a table descriptor from information_schema (internal to
 * capture/mysql; see binlog_schema.c).
 */
#ifndef BINLOG_SCHEMA_H
#define BINLOG_SCHEMA_H

#include <mysql.h>
#include "evt.h"
#include "tb_error.h"

/* *out: a new descriptor (caller unrefs) with names, COLUMN_TYPE as source
 * type, nullability, signedness, charsets, ENUM/SET labels and the primary
 * key; NULL when the table does not exist. */
TB_MUST_USE tb_code binlog_schema_lookup(MYSQL *m, const char *db, const char *table, evt_table **out, tb_error *err);

#endif
