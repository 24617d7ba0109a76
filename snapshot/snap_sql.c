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

/* The connection snap_sql_release keeps: its source (to match the next snap_sql_connect's) and
 * since when it is idle. */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static MYSQL *kept_my;
static myconn *kept_mc;
static int64_t kept_since_ms;

/* The kept connection when it serves mc and answers a ping, else NULL (it is closed). */
static MYSQL *take_kept(const myconn *mc)
{
    pthread_mutex_lock(&kept_mu);
    MYSQL *my = kept_my;
    myconn *kmc = kept_mc;
    int64_t since = kept_since_ms;
    kept_my = NULL;
    kept_mc = NULL;
    pthread_mutex_unlock(&kept_mu);
    if (my && !(myconn_same(kmc, mc) && tb_mono_ms() - since < SNAP_SQL_KEEP_MS && mysql_ping(my) == 0)) {
        mysql_close(my);
        my = NULL;
    }
    myconn_free(kmc);
    return my;
}

void snap_sql_release(const cfg *c, MYSQL *my)
{
    if (!my)
        return;
    unsigned status = 0;
    myconn *mc = NULL;
    tb_error e;
    /* not kept: an open transaction, a result not read to its end */
    if (my->status == MYSQL_STATUS_READY && mariadb_get_infov(my, MARIADB_CONNECTION_SERVER_STATUS, &status) == 0 &&
        !(status & SERVER_STATUS_IN_TRANS) && myconn_new(c, &mc, &e) == TB_OK) {
        pthread_mutex_lock(&kept_mu);
        if (!kept_my) {
            kept_my = my;
            kept_mc = mc;
            kept_since_ms = tb_mono_ms();
            my = NULL;
            mc = NULL;
        }
        pthread_mutex_unlock(&kept_mu);
    }
    myconn_free(mc);
    if (my)
        mysql_close(my);
}

void snap_sql_release_kept(void)
{
    pthread_mutex_lock(&kept_mu);
    MYSQL *my = kept_my;
    myconn *mc = kept_mc;
    kept_my = NULL;
    kept_mc = NULL;
    pthread_mutex_unlock(&kept_mu);
    if (my)
        mysql_close(my);
    myconn_free(mc);
}

tb_code snap_sql_connect(const cfg *c, MYSQL **out, bool *mariadb, tb_error *err)
{
    tb_code rc = TB_OK;
    myconn *mc = NULL;
    MYSQL *my = NULL;
    *out = NULL;

    if ((rc = myconn_new(c, &mc, err)) != TB_OK)
        goto out;
    if ((my = take_kept(mc)) != NULL) {
        *mariadb = myconn_is_mariadb(my);
        *out = my;
        my = NULL;
        goto out;
    }
    myconn_opts o = {.purpose = "snapshot", .charset = "utf8mb4"};
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
