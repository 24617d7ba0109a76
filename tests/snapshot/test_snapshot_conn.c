/*
 * The kept catalog connection of snap_sql (integration, the testenv MariaDB): snap_sql_release
 * keeps one connection that the next snap_sql_connect of the same source takes instead of a new
 * connection and TLS handshake. What must hold: it is the same server thread with the session
 * snap_sql_connect set up; a connection with an open transaction, one the server killed, one of
 * other source settings is never handed out again; snap_sql_release_kept closes it. The server's
 * PROCESSLIST is the oracle for which connections are open.
 *
 * catalog_connection_serves_the_start: the connection of a run's start (myconn_catalog_opts:
 * the preflight's, opened early by myconn_warm) is taken by the catalog questions
 * (snap_sql_connect) and then by the binlog reader's schema lookups (the same options), never
 * by a reader of rows (snap_sql_connect_rows: a long scan must not meet its read timeout).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "myconn.h"
#include "snap_sql.h"
#include "snap_test_util.h"

static unsigned long connect_id(const cfg *c, MYSQL **my)
{
    bool mariadb = false;
    tb_error err;
    if (snap_sql_connect(c, my, &mariadb, &err) != TB_OK)
        cr_assert_fail("snap_sql_connect: %s", err.msg);
    cr_assert(mariadb);
    return mysql_thread_id(*my);
}

/* Whether the server has a connection of this id, waiting up to 30 s for it to be gone when
 * want_gone (a closed client's thread ends after its COM_QUIT is read). */
static bool open_on_server(MYSQL *admin, unsigned long id, bool want_gone)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %lu", id);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        bool open = st_sql_int(admin, sql) > 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!want_gone || !open || now.tv_sec - t0.tv_sec > 30)
            return open;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void check_session(MYSQL *my)
{
    cr_assert_eq(mysql_query(my, "SELECT @@session.time_zone"), 0, "%s", mysql_error(my));
    MYSQL_RES *res = mysql_store_result(my);
    cr_assert_not_null(res);
    MYSQL_ROW row = mysql_fetch_row(res);
    cr_assert(row && row[0]);
    cr_assert_str_eq(row[0], "+00:00");
    mysql_free_result(res);
}

Test(snapshot_conn, kept_taken_again_and_never_a_bad_one, .timeout = 300)
{
    cfg *c = st_cfg(NULL, NULL);
    MYSQL *admin = st_connect();
    MYSQL *my = NULL;

    /* released clean: the next connect is the same server thread, session intact */
    unsigned long a = connect_id(c, &my);
    snap_sql_release(c, my);
    unsigned long b = connect_id(c, &my);
    cr_assert_eq(a, b, "the kept connection %lu was not taken (got %lu)", a, b);
    check_session(my);

    /* released inside a transaction: closed, the next connect is a new one */
    cr_assert_eq(mysql_query(my, "START TRANSACTION"), 0, "%s", mysql_error(my));
    snap_sql_release(c, my);
    cr_assert_not(open_on_server(admin, b, true), "connection %lu with an open transaction left open", b);
    unsigned long d = connect_id(c, &my);
    cr_assert_neq(d, b);

    /* killed by the server while kept: not handed out, a live one instead */
    snap_sql_release(c, my);
    cr_assert(open_on_server(admin, d, false), "connection %lu not kept", d);
    char kill[64];
    snprintf(kill, sizeof kill, "KILL %lu", d);
    st_sql(admin, "%s", kill);
    unsigned long e = connect_id(c, &my);
    cr_assert_neq(e, d);
    check_session(my);

    /* other source settings: the kept one is not used for them (and is closed) */
    snap_sql_release(c, my);
    const char *extra[] = {"source.connect.timeout.ms=7001", NULL};
    cfg *other = st_cfg(NULL, extra);
    MYSQL *my2 = NULL;
    unsigned long f = connect_id(other, &my2);
    cr_assert_neq(f, e);
    cr_assert_not(open_on_server(admin, e, true), "kept connection %lu of other settings left open", e);

    /* release_kept closes what is kept */
    snap_sql_release(other, my2);
    cr_assert(open_on_server(admin, f, false));
    snap_sql_release_kept();
    cr_assert_not(open_on_server(admin, f, true), "connection %lu still open after snap_sql_release_kept", f);

    mysql_close(admin);
    cfg_free(other);
    cfg_free(c);
}

Test(snapshot_conn, catalog_connection_serves_the_start, .timeout = 300)
{
    cfg *c = st_cfg(NULL, NULL);
    MYSQL *admin = st_connect();
    myconn *mc = NULL;
    tb_error err;
    cr_assert_eq(myconn_new(c, &mc, &err), TB_OK, "%s", err.msg);
    myconn_warm_join(myconn_warm_start(c, 0)); /* opened and kept */
    myconn_opts pre = myconn_catalog_opts(mc, "preflight");
    MYSQL *my = NULL;
    cr_assert_eq(myconn_connect(mc, &pre, &my, &err), TB_OK, "%s", err.msg);
    unsigned long a = mysql_thread_id(my);
    myconn_keep(mc, my);
    /* a reader of rows does not take it */
    bool mariadb = false;
    MYSQL *rows = NULL;
    cr_assert_eq(snap_sql_connect_rows(c, &rows, &mariadb, &err), TB_OK, "%s", err.msg);
    cr_assert_neq(mysql_thread_id(rows), a, "a reader of rows took the connection with a read timeout");
    /* a catalog question does, with the snapshotter's session */
    unsigned long b = connect_id(c, &my);
    cr_assert_eq(b, a, "the catalog question did not take the start's connection");
    check_session(my);
    snap_sql_release(c, my);
    snap_sql_release(c, rows); /* kept beside it (rt 0) */
    /* the binlog reader's schema lookups take the catalog one, not the rows reader's */
    myconn_opts meta = myconn_catalog_opts(mc, "metadata");
    meta.any_timeout = false;
    cr_assert_eq(myconn_connect(mc, &meta, &my, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(mysql_thread_id(my), a, "the schema lookups did not take the start's connection");
    cr_assert_eq(mysql_query(my, "SELECT 1"), 0, "%s", mysql_error(my));
    mysql_free_result(mysql_store_result(my));
    mysql_close(my);
    snap_sql_release_kept();
    myconn_free(mc);
    mysql_close(admin);
    cfg_free(c);
}
