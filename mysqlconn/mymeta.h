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
tb_code mymeta_parse_labels(const char *column_type, char ***labels, size_t *n);
void mymeta_labels_free(char **labels, size_t n); /* labels may be NULL */

/* A column's default from information_schema.COLUMNS: COLUMN_DEFAULT
 * (column_default, NULL for SQL NULL) and EXTRA (may be NULL) of a MariaDB
 * (mariadb) or MySQL server. *text: NULL when the column has no default or
 * its default is NULL; else malloc'd: a literal's value (MariaDB quotes a
 * string literal, 'it''s' -> it's; a number stays as written), or, with
 * *is_expr, the text of an expression the server evaluates per row
 * (MariaDB: what is neither quoted nor a number, e.g. current_timestamp();
 * MySQL: EXTRA says DEFAULT_GENERATED, or CURRENT_TIMESTAMP). TB_ERR_NOMEM. */
tb_code mymeta_parse_default(const char *column_default, const char *extra, bool mariadb, char **text, bool *is_expr);

#endif
