/*
 * binlog_ref: runs the reference decoder (mariadb-binlog -vv) on a binlog
 * file and compares its rows with ours (tests only).
 */
#ifndef BINLOG_REF_H
#define BINLOG_REF_H

#include <stdbool.h>
#include <stddef.h>
#include "evt.h"
#include "tb_buf.h"

typedef struct ref_val {
    int col;       /* 1-based @N */
    char *text;    /* the value as printed (quotes kept), NULL for NULL */
} ref_val;

typedef struct ref_row {
    char op;       /* c u d */
    char *db, *table;
    ref_val *img[2]; /* EVT_BEFORE, EVT_AFTER */
    size_t nimg[2];
} ref_row;

typedef struct ref_rows {
    ref_row *rows;
    size_t n;
    int exit_status;
} ref_rows;

/* Run mariadb-binlog on path and parse its ### lines. false if it cannot run. */
bool ref_run(const char *path, ref_rows *out);
void ref_free(ref_rows *r);

/* Compare one of our events with a reference row. On mismatch returns false
 * and writes a description into why. */
bool ref_match(const ref_row *ref, const evt_event *e, tb_buf *why);

#endif
