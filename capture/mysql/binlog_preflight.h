/*
 * binlog_preflight: what the source must provide before a snapshot or a
 * binlog stream can be trusted, checked at start and on every (re)connect
 * of the replication client. Internal to capture/mysql; app/ uses
 * binlog_preflight() of binlog.h.
 *
 * Settings (SHOW GLOBAL VARIABLES):
 *   log_bin              ON                 else a problem
 *   binlog_format        ROW                else a problem (STATEMENT/MIXED log
 *                                           changes as SQL text: lost silently)
 *   binlog_row_image     FULL               else a problem, or a warning with
 *                                           source.row.image.policy=warn
 *   binlog_row_metadata  FULL               else a warning (information_schema
 *                                           fallback, mymeta_describe)
 * Grants (SHOW GRANTS for CURRENT_USER()), on *.* unless said otherwise:
 *   REPLICATION SLAVE                       read the binlog
 *   MariaDB >= 10.5: BINLOG MONITOR; MySQL and older MariaDB: REPLICATION
 *   CLIENT (SUPER also counts)              read the binlog position
 *   SELECT, on *.* or on some database      snapshot (snapshot.mode != never)
 *   MySQL with snapshot.locking.mode=minimal: RELOAD   the snapshot's brief lock
 *   INSERT, anywhere                        incremental snapshots write their
 *                                           watermark rows to the signal table
 *                                           (a warning: needed only once one is
 *                                           asked for)
 * ALL [PRIVILEGES] grants everything. A privilege missing while the user holds
 * roles is a warning (it may come from a role). Each problem is one line that
 * names the setting or privilege, its value, what is needed and the statement
 * that fixes it; problems are TB_ERR_CONFIG (exit code 2), not retriable.
 */
#ifndef BINLOG_PREFLIGHT_H
#define BINLOG_PREFLIGHT_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>

#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct bl_preflight_opts {
    bool row_image_warn; /* source.row.image.policy=warn */
    bool snapshot;       /* snapshot.mode is not `never`: SELECT is needed */
    bool lock_minimal;   /* snapshot.locking.mode=minimal: RELOAD on MySQL */
    bool chunked;        /* snapshot.initial.method=chunked (and a snapshot): INSERT is needed, not advised */
} bl_preflight_opts;

void bl_preflight_opts_from_cfg(const cfg *c, bl_preflight_opts *o);

/* What the server said; NULL strings are "not reported". Borrowed. */
typedef struct bl_preflight_in {
    bool mariadb;
    unsigned long version;       /* mysql_get_server_version(): 100511 = 10.5.11 */
    const char *log_bin, *binlog_format, *binlog_row_image, *binlog_row_metadata;
    const char *user;            /* CURRENT_USER(), "name@host" */
    const char *const *grants;   /* SHOW GRANTS rows; NULL: grants unknown (not checked) */
    size_t ngrants;
} bl_preflight_in;

/* Judge `in`: each problem and warning is logged (facility "source", label
 * first, e.g. "127.0.0.1:3306") unless quiet; each line is also appended to
 * lines (may be NULL), "ERROR " or "WARN " first, one per line. TB_OK when
 * there is no problem, else TB_ERR_CONFIG naming the first problem (and how
 * many there are). */
TB_MUST_USE tb_code bl_preflight_judge(const bl_preflight_in *in, const bl_preflight_opts *o, const char *label, bool quiet,
                           tb_buf *lines, tb_error *err);

/* Read settings and grants over m and judge them. A failing query of the
 * settings is TB_ERR_SOURCE (retriable); a failing SHOW GRANTS is a warning. */
TB_MUST_USE tb_code bl_preflight_conn(MYSQL *m, const bl_preflight_opts *o, const char *label, bool quiet, tb_error *err);

#endif
