/*
 * snap_values: MySQL/MariaDB result values -> evt values (internal).
 *
 * THE ONLY FILE OF snapshot/ THAT CONVERTS VALUES. It must agree with the
 * binlog decoder (DESIGN 5: a row looks the same from both; the parity
 * test checks it). schema/evt_mysql.h holds the binlog-side conversions of
 * packed forms (DECIMAL binary, temporal2, charsets); a SELECT never sees
 * those forms: the server sends DECIMAL as its exact text, temporals as
 * MYSQL_TIME and text converted to utf8mb4 by its own tables (latin1 as
 * cp1252, like evt_mysql_to_utf8). The charset kinds come from evt_mysql.
 *
 * Rows are read with the binary protocol (prepared statements), which gives
 * exact integers, the float/double bits, MYSQL_TIME for temporals and the
 * server's DECIMAL text. The session uses utf8mb4 results, so text columns
 * arrive in UTF-8 whatever their charset; binary columns arrive as bytes.
 *
 * Per column a snap_colbuf holds the fetch buffer (grown when a value does
 * not fit; the caller re-fetches the column). Free with snap_colbuf_free.
 */
#ifndef SNAP_VALUES_H
#define SNAP_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <mysql.h>

#include "evt.h"
#include "tb_error.h"

typedef enum snap_fetch_as { SNAP_AS_INT, SNAP_AS_FLOAT, SNAP_AS_DOUBLE, SNAP_AS_TIME, SNAP_AS_BYTES } snap_fetch_as;

typedef struct snap_colbuf {
    snap_fetch_as as;
    union {
        long long i;
        float f;
        double d;
        MYSQL_TIME tm;
    } n;
    char *buf;            /* SNAP_AS_BYTES: owned */
    unsigned long cap;
    unsigned long len;
    my_bool is_null;
    my_bool error;
} snap_colbuf;

/* Set up cb and the result binding b for column col. */
TB_MUST_USE tb_code snap_colbuf_bind(snap_colbuf *cb, MYSQL_BIND *b, const evt_column *col, tb_error *err);
void snap_colbuf_free(snap_colbuf *cb); /* NULL-safe */

/* Grow cb to hold cb->len bytes (after a truncated fetch) and point b at the
 * new buffer; the caller then re-binds and re-fetches the column. */
TB_MUST_USE tb_code snap_colbuf_grow(snap_colbuf *cb, MYSQL_BIND *b, tb_error *err);

/* Store the fetched value into ev's after image at column index ci. */
void snap_value_set(evt_event *ev, size_t ci, const evt_column *col, const snap_colbuf *cb);

#endif
