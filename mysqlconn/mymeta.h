/*
 * mymeta: reading MySQL/MariaDB table metadata as information_schema spells it,
 * shared by capture/mysql (the binlog's schema lookups) and snapshot/.
 */
#ifndef MYMETA_H
#define MYMETA_H

#include <stdbool.h>
#include <stddef.h>

#include "tb_error.h"

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
 * binlog has last; both readers add them (mymeta_period_implicit). */
typedef struct mymeta_period {
    bool versioned; /* TABLE_TYPE is SYSTEM VERSIONED */
    bool implicit;  /* the server's invisible row_start and row_end */
    char start[65], end[65];
} mymeta_period;

/* The expression both readers add to their information_schema.COLUMNS query of a MariaDB server,
 * after their own (MySQL: MYMETA_PERIOD_COLUMNS_MYSQL): the column's GENERATION_EXPRESSION
 * ('ROW START', 'ROW END' for an explicit period). */
#define MYMETA_PERIOD_COLUMNS "GENERATION_EXPRESSION"
#define MYMETA_PERIOD_COLUMNS_MYSQL "NULL"
/* Then, on MariaDB, the table's type, with the schema and the table as its two parameters. The
 * comparison is case-insensitive, so the name that comes back is compared exactly
 * (mymeta_period_table): `Orders` and `orders` may both exist. */
#define MYMETA_PERIOD_TABLE_SQL \
    "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"

/* One row of the COLUMNS query: the column's name and GENERATION_EXPRESSION (may be NULL). */
void mymeta_period_column(mymeta_period *p, const char *name, const char *generation_expression);
/* One row of MYMETA_PERIOD_TABLE_SQL asked for table `table`: its TABLE_NAME and TABLE_TYPE. */
void mymeta_period_table(mymeta_period *p, const char *table, const char *table_name, const char *table_type);
/* After the last row: true when the table has an implicit period, whose columns row_start and
 * row_end (TIMESTAMP(6) NOT NULL, in this order) the caller appends to the table's columns. */
bool mymeta_period_implicit(mymeta_period *p);
/* Whether a primary-key column of information_schema.KEY_COLUMN_USAGE is the key's: every one
 * but the period's end column. */
bool mymeta_period_keeps_key(const mymeta_period *p, const char *name);

#endif
