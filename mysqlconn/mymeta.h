/*
 * mymeta: reading MySQL/MariaDB table metadata as information_schema spells it, shared by
 * capture/mysql (the binlog decoder's catalog lookups) and snapshot/: the one reader of a
 * table's description (mymeta_describe) and the pieces it is made of.
 *
 * Ownership: mymeta_describe's descriptor is one reference for the caller (evt_table_unref);
 * label lists are freed with mymeta_labels_free, default texts with free().
 */
#ifndef MYMETA_H
#define MYMETA_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>

#include "evt.h"
#include "tb_error.h"

/* The descriptor of db.table as the catalog says it now (mymeta_describe.c): names, types,
 * source types, nullability, signedness, lengths, precision and scale, charsets, defaults,
 * ENUM/SET labels, the primary key (for a system-versioned table without its period's end
 * column, which is marked with evt_table_set_row_end) and an implicit period's columns. The
 * schema record of the snapshot and of the binlog path is made from it (DESIGN 4). *out is new
 * and unsealed, version 0, names known; its key may be empty (no primary key: the caller decides,
 * key.columns.<db>.<table> or a refusal). Errors: TB_ERR_NOT_FOUND when the table has no columns
 * (it does not exist), myconn_query's (TB_ERR_SOURCE, retriable on a broken connection),
 * TB_ERR_NOMEM. Reads one table version's description: not for per-event use. */
TB_MUST_USE tb_code mymeta_describe(MYSQL *my, const char *db, const char *table, evt_table **out,
                                    tb_error *err);

/* information_schema.COLUMNS.DATA_TYPE (any case) -> evt type; EVT_T_UNKNOWN for a type
 * tributary does not know (read as text). */
evt_type mymeta_type(const char *data_type);

/* The labels of an ENUM or SET column from its COLUMN_TYPE, e.g.
 * "enum('a','b''c','x\\y')" -> a, b'c, x\y. Inside a label a quote is doubled and a
 * backslash escapes the next character (information_schema writes a label's
 * backslash as two). *labels: n malloc'd strings, free with mymeta_labels_free.
 * TB_ERR_INVALID when column_type is not such a list; TB_ERR_NOMEM. */
TB_MUST_USE tb_code mymeta_parse_labels(const char *column_type, char ***labels, size_t *n);
void mymeta_labels_free(char **labels, size_t n); /* labels may be NULL */

/* A column's default from information_schema.COLUMNS: COLUMN_DEFAULT
 * (column_default, NULL for SQL NULL) and EXTRA (may be NULL) of a MariaDB
 * (mariadb) or MySQL server. *text: NULL when the column has no default or
 * its default is NULL; else malloc'd: a literal's value (MariaDB quotes a
 * string literal, 'it''s' -> it's; a number stays as written), or, with
 * *is_expr, the text of an expression the server evaluates per row
 * (MariaDB: what is neither quoted nor a number, e.g. current_timestamp();
 * MySQL: EXTRA says DEFAULT_GENERATED, or CURRENT_TIMESTAMP). TB_ERR_NOMEM. */
TB_MUST_USE tb_code mymeta_parse_default(const char *column_default, const char *extra, bool mariadb, char **text, bool *is_expr);

/* MariaDB system-versioned tables (WITH SYSTEM VERSIONING, TABLE_TYPE 'SYSTEM VERSIONED'). The
 * server keeps every row's history in the table and makes the period's end column part of the
 * primary key; a SELECT shows the current rows only (row end at its maximum). tributary captures
 * the current rows under the declared key: the period's columns are ordinary columns of the
 * value, the end column is not part of the key, and the binlog's history rows are passed over
 * (binlog_dec.c). Implicit periods (WITH SYSTEM VERSIONING alone) have invisible columns
 * row_start and row_end, TIMESTAMP(6), that information_schema.COLUMNS does not list and the
 * binlog has last; mymeta_describe adds them (mymeta_period_implicit). */
typedef struct mymeta_period {
    bool versioned; /* TABLE_TYPE is SYSTEM VERSIONED */
    bool implicit;  /* the server's invisible row_start and row_end */
    char start[65], end[65];
} mymeta_period;

/* How mymeta_describe finds the period: its information_schema.COLUMNS query asks a MariaDB
 * server for each column's GENERATION_EXPRESSION ('ROW START', 'ROW END' for an explicit
 * period), then for the table's type (information_schema.TABLES: TABLE_NAME, TABLE_TYPE). That
 * comparison is case-insensitive, so the name that comes back is compared exactly
 * (mymeta_period_table): `Orders` and `orders` may both exist. */
/* One row of the COLUMNS query: the column's name and GENERATION_EXPRESSION (may be NULL). */
void mymeta_period_column(mymeta_period *p, const char *name, const char *generation_expression);
/* One row of the TABLES query asked for table `table`: its TABLE_NAME and TABLE_TYPE. */
void mymeta_period_table(mymeta_period *p, const char *table, const char *table_name, const char *table_type);
/* After the last row: true when the table has an implicit period, whose columns row_start and
 * row_end (TIMESTAMP(6) NOT NULL, in this order) the caller appends to the table's columns. */
bool mymeta_period_implicit(mymeta_period *p);
/* Whether a primary-key column of information_schema.KEY_COLUMN_USAGE is the key's: every one
 * but the period's end column. */
bool mymeta_period_keeps_key(const mymeta_period *p, const char *name);

#endif
