/*
 * snap_sql: connection and metadata-query helpers of the snapshotter.
 * See snap_sql.h.
 */
#include "snap_sql.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "myconn.h"
#include "tb_clock.h"
#include "tb_log.h"

tb_code snap_sql_fail(MYSQL *my, tb_error *err, const char *what)
{
    unsigned no = mysql_errno(my);
    return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(no), "%s: %s (mysql error %u)", what,
                        mysql_error(my), no);
}

tb_code snap_sql_exec(MYSQL *my, const char *sql, tb_error *err)
{
    if (mysql_real_query(my, sql, strlen(sql)) != 0)
        return snap_sql_fail(my, err, sql);
    MYSQL_RES *res = mysql_store_result(my);
    if (res)
        mysql_free_result(res);
    else if (mysql_field_count(my) != 0)
        return snap_sql_fail(my, err, sql);
    return TB_OK;
}

void snap_sql_release(const cfg *c, MYSQL *my)
{
    if (!my)
        return;
    myconn *mc = NULL;
    tb_error e;
    if (myconn_new(c, &mc, &e) == TB_OK)
        myconn_keep(mc, my); /* closed when it cannot be kept */
    else
        mysql_close(my);
    myconn_free(mc);
}

void snap_sql_release_kept(void)
{
    myconn_keep_close();
}

/* A connection of the source with the snapshotter's session (see snap_sql.h); rows: for reading
 * a table's rows, so never one opened with a read timeout (a catalog connection may be). */
static tb_code sql_connect(const cfg *c, bool rows, MYSQL **out, bool *mariadb, tb_error *err)
{
    tb_code rc = TB_OK;
    myconn *mc = NULL;
    MYSQL *my = NULL;
    *out = NULL;

    if ((rc = myconn_new(c, &mc, err)) != TB_OK)
        goto out;
    /* a connection kept by an earlier user (myconn_keep: the preflight, a catalog question)
     * serves after a ping: its session is set below in any case */
    myconn_opts o = {.purpose = "snapshot", .charset = "utf8mb4", .reuse = true, .any_timeout = !rows};
    if ((rc = myconn_connect(mc, &o, &my, err)) != TB_OK)
        goto out;
    const char *host = myconn_host(mc);
    unsigned port = myconn_port(mc);
    const char *ver = mysql_get_server_info(my);
    *mariadb = myconn_is_mariadb(my);
    /* Values as the binlog has them: UTC timestamps, utf8mb4 text, and long
     * write timeouts so a slow sink does not make the server drop a stream. */
    rc = snap_sql_exec(my,
                       "SET SESSION time_zone='+00:00', NAMES utf8mb4, SESSION net_write_timeout=3600, "
                       "SESSION net_read_timeout=3600, SESSION wait_timeout=86400",
                       err);
    if (rc != TB_OK)
        goto out;
    TB_DEBUG("snapshot", "connected to %s:%u (%s)", host ? host : "", port, ver ? ver : "?");
    *out = my;
    my = NULL;
out:
    if (my)
        mysql_close(my);
    myconn_free(mc);
    return rc;
}

tb_code snap_sql_connect(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err)
{
    return sql_connect(c, false, out, mariadb, err);
}

tb_code snap_sql_connect_rows(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err)
{
    return sql_connect(c, true, out, mariadb, err);
}

tb_code snap_sql_ident(tb_buf *b, const char *name)
{
    tb_code rc = tb_buf_putc(b, '`');
    for (const char *p = name; rc == TB_OK && *p; p++) {
        if (*p == '`')
            rc = tb_buf_putc(b, '`');
        if (rc == TB_OK)
            rc = tb_buf_putc(b, *p);
    }
    if (rc == TB_OK)
        rc = tb_buf_putc(b, '`');
    return rc;
}
