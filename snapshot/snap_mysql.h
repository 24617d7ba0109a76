/*
 * snap_mysql: the consistent view and its binlog position (internal; the
 * public API is snap.h). Also used by the incremental snapshot for the
 * server id and flavour.
 */
#ifndef SNAP_MYSQL_H
#define SNAP_MYSQL_H

#include <stdbool.h>
#include <mysql.h>

#include "snap.h"

/* Start a consistent-snapshot transaction on `my` and read its exact binlog
 * position into pos (overwritten). See snap.h for the method per flavour. */
TB_MUST_USE tb_code snap_mysql_begin(MYSQL *my, bool mariadb, bool lock_minimal, tb_position *pos, tb_error *err);

/* The server's current binlog position (SHOW MASTER STATUS + GTID), e.g. to
 * know when a reader has caught up. */
TB_MUST_USE tb_code snap_mysql_current_position(MYSQL *my, bool mariadb, tb_position *pos, tb_error *err);

#endif
