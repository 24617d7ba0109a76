/*
 * snap_inc_key: a primary-key value kept between chunks of an incremental
 * snapshot: taken from an event, bound as statement parameters, and saved
 * to / loaded from the state file as JSON (internal).
 *
 * JSON form: an array with one object per key column:
 *   {"t":"i","v":"-5"}  {"t":"u","v":"18446744073709551615"}  {"t":"d","v":"0.5"}
 *   {"t":"s","v":"text"}  {"t":"b","v":"<base64>"}
 *   {"t":"T","v":[kind,year,month,day,hour,minute,second,usec,negative]}
 * Ownership: snap_key owns its strings; snap_key_free() (NULL-safe) frees them.
 */
#ifndef SNAP_INC_KEY_H
#define SNAP_INC_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <mysql.h>

#include "evt.h"
#include "evt_json.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct snap_kpart {
    char t;            /* i u d s b T */
    long long i;       /* i, u (bits) */
    double d;
    char *s;           /* s, b: owned bytes */
    unsigned long len;
    MYSQL_TIME tm;
    int kind;          /* evt_kind of a temporal */
} snap_kpart;

typedef struct snap_key {
    snap_kpart *p;
    size_t n;
} snap_key;

void snap_key_free(snap_key *k);
/* Key of ev's after image (table's key columns). */
TB_MUST_USE tb_code snap_key_from_event(snap_key *k, const evt_event *ev, tb_error *err);
/* Bind parameter b for part i (b borrows k). */
void snap_key_bind(snap_key *k, size_t i, MYSQL_BIND *b);
void snap_key_to_json(const snap_key *k, evt_jw *w);
TB_MUST_USE tb_code snap_key_from_json(snap_key *k, const evt_jv *v, tb_error *err);

#endif
