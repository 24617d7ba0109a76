/*
 * snap_keys: the keys a MySQL/MariaDB table has now, for the reconcile step
 * after a resnapshot (DESIGN 6a): the table is described as it is now
 * (snap_schema_describe), then `SELECT <key columns> FROM t` is read one row
 * at a time (constant memory), each row an event whose after image holds
 * the key columns of a descriptor of the key columns only, so the caller can
 * render its key as the sink does (the same names, types and order).
 *
 * Ownership: *desc (the table's full descriptor, as described) is one
 * reference for the caller, also on failure after the description (NULL
 * before). The events given to fn are borrowed for the call.
 */
#ifndef SNAP_KEYS_H
#define SNAP_KEYS_H

#include "cfg.h"
#include "evt.h"
#include "tb_error.h"

typedef tb_code (*snap_key_row_fn)(void *opaque, const evt_event *ev, tb_error *err);

TB_MUST_USE tb_code snap_keys_scan(const cfg *c, const char *db, const char *table, evt_table **desc, snap_key_row_fn fn,
                       void *opaque, tb_error *err);

#endif
