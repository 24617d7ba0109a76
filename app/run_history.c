/*
 * run_history: after the server refused the stored position (error 1236),
 * tell a purged history from a diverged one. Purged: the server had the
 * transactions the position covers and removed the binlogs that hold them.
 * Diverged: the server never had some of them (a failover to a server that
 * lacks transactions already published): the topic holds changes the new
 * primary does not have, so a snapshot alone would leave them there; the
 * reconcile step after the snapshot deletes them (DESIGN 6a).
 *
 *  MariaDB: the stored GTID list (domain-server-seq per domain) against
 *    @@gtid_binlog_pos: a domain the server has no GTID of, or whose last
 *    sequence number is below the stored one, was not written by it.
 *  MySQL: GTID_SUBSET(stored, @@gtid_executed) is false.
 * A server that cannot be asked, or a position without GTIDs, counts as
 * purged (the message says what it could not tell).
 */
#include <string.h>

#include "app_run.h"
#include "binlog.h"
#include "myconn.h"
#include "snap_sql.h"

static tb_code first_col(void *opaque, char **col, unsigned long *len, unsigned ncols, tb_error *err)
{
    (void)err;
    tb_buf *out = opaque;
    if (ncols > 0 && col[0]) {
        tb_buf_reset(out);
        tb_buf_append(out, col[0], len[0]);
    }
    return TB_OK;
}

bool run_history_diverged(const cfg *c, const tb_position *stored, tb_buf *server)
{
    tb_buf_reset(server);
    if (!stored->gtid_set || !*stored->gtid_set)
        return false;
    MYSQL *my = NULL;
    bool mariadb = false;
    bool diverged = false;
    tb_error e;
    tb_error_clear(&e);
    if (snap_sql_connect(c, &my, &mariadb, &e) != TB_OK)
        return false;
    if (mariadb) {
        if (myconn_query(my, "SELECT @@global.gtid_binlog_pos", NULL, 0, first_col, server, &e) == TB_OK)
            diverged = binlog_gtid_covers(tb_buf_cstr(server), stored->gtid_set, true) == 0;
    } else {
        tb_buf sub;
        tb_buf_init(&sub, 0);
        const char *params[] = {stored->gtid_set};
        if (myconn_query(my, "SELECT @@global.gtid_executed", NULL, 0, first_col, server, &e) == TB_OK &&
            myconn_query(my, "SELECT GTID_SUBSET(?, @@global.gtid_executed)", params, 1, first_col, &sub, &e) ==
                TB_OK)
            diverged = strcmp(tb_buf_cstr(&sub), "0") == 0;
        tb_buf_free(&sub);
    }
    snap_sql_release(c, my);
    return diverged;
}
