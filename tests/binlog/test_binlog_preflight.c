/*
 * The source checks of binlog_preflight.c on what a server could answer:
 * settings (log_bin, binlog_format, binlog_row_image with
 * source.row.image.policy, binlog_row_metadata) and SHOW GRANTS texts as
 * MariaDB 10.11 and MySQL 8 print them. The live checks against the test
 * MariaDB are in tests/e2e/test_e2e_source.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "binlog_int.h"
#include "binlog_preflight.h"
#include "myconn.h"

static const char *const ROOT_GRANTS[] = {
    "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` IDENTIFIED BY PASSWORD '*X' WITH GRANT OPTION",
    "GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION",
};

static bl_preflight_in good_in(void)
{
    bl_preflight_in in;
    memset(&in, 0, sizeof in);
    in.mariadb = true;
    in.version = 101106;
    in.log_bin = "ON";
    in.binlog_format = "ROW";
    in.binlog_row_image = "FULL";
    in.binlog_row_metadata = "FULL";
    in.user = "root@localhost";
    in.grants = ROOT_GRANTS;
    in.ngrants = 2;
    return in;
}

static bl_preflight_opts default_opts(void)
{
    bl_preflight_opts o = {.row_image_warn = false, .snapshot = true, .lock_minimal = true};
    return o;
}

/* Judge; lines and err filled; returns the code. */
static tb_code judge(const bl_preflight_in *in, const bl_preflight_opts *o, tb_buf *lines, tb_error *err)
{
    tb_buf_reset(lines);
    tb_error_clear(err);
    return bl_preflight_judge(in, o, "h:1", true, lines, err);
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

Test(preflight, good_server_passes)
{
    bl_preflight_in in = good_in();
    bl_preflight_opts o = default_opts();
    tb_buf lines;
    tb_buf_init(&lines, 0);
    tb_error err;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", tb_buf_cstr(&lines));
    cr_assert_eq(lines.len, 0, "%s", tb_buf_cstr(&lines));
    tb_buf_free(&lines);
}

Test(preflight, statement_format_is_refused)
{
    const char *formats[] = {"STATEMENT", "MIXED"};
    for (size_t i = 0; i < 2; i++) {
        bl_preflight_in in = good_in();
        in.binlog_format = formats[i];
        bl_preflight_opts o = default_opts();
        tb_buf lines;
        tb_buf_init(&lines, 0);
        tb_error err;
        cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
        cr_assert_not(err.retriable);
        char want[64];
        snprintf(want, sizeof want, "binlog_format is %s, needs ROW", formats[i]);
        cr_assert(strstr(err.msg, want), "%s", err.msg);
        cr_assert(strstr(err.msg, "SET GLOBAL binlog_format=ROW"), "%s", err.msg);
        cr_assert(strstr(err.msg, "source h:1: "), "%s", err.msg);
        cr_assert_eq(count(tb_buf_cstr(&lines), "ERROR "), 1, "%s", tb_buf_cstr(&lines));
        tb_buf_free(&lines);
    }
}

Test(preflight, log_bin_off_and_several_problems)
{
    bl_preflight_in in = good_in();
    in.log_bin = "OFF";
    in.binlog_format = "MIXED";
    bl_preflight_opts o = default_opts();
    tb_buf lines;
    tb_buf_init(&lines, 0);
    tb_error err;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "log_bin is OFF, needs ON"), "%s", err.msg);
    cr_assert(strstr(err.msg, "and 1 more problems"), "%s", err.msg);
    const char *l = tb_buf_cstr(&lines);
    cr_assert_eq(count(l, "ERROR "), 2, "%s", l);
    cr_assert(strstr(l, "ERROR binlog_format is MIXED"), "%s", l);
    tb_buf_free(&lines);
}

Test(preflight, row_image_policy)
{
    const char *images[] = {"MINIMAL", "NOBLOB"};
    for (size_t i = 0; i < 2; i++) {
        bl_preflight_in in = good_in();
        in.binlog_row_image = images[i];
        bl_preflight_opts o = default_opts();
        tb_buf lines;
        tb_buf_init(&lines, 0);
        tb_error err;
        cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG, "%s", images[i]);
        cr_assert(strstr(err.msg, "binlog_row_image is "), "%s", err.msg);
        cr_assert(strstr(err.msg, "needs FULL"), "%s", err.msg);
        cr_assert(strstr(err.msg, "SET GLOBAL binlog_row_image=FULL"), "%s", err.msg);
        cr_assert(strstr(err.msg, "source.row.image.policy=warn"), "%s", err.msg);
        o.row_image_warn = true;
        cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK);
        cr_assert(strstr(tb_buf_cstr(&lines), "WARN binlog_row_image is "), "%s", tb_buf_cstr(&lines));
        tb_buf_free(&lines);
    }
}

Test(preflight, minimal_metadata_warns)
{
    bl_preflight_in in = good_in();
    in.binlog_row_metadata = "MINIMAL";
    bl_preflight_opts o = default_opts();
    tb_buf lines;
    tb_buf_init(&lines, 0);
    tb_error err;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK);
    cr_assert(strstr(tb_buf_cstr(&lines), "WARN binlog_row_metadata is MINIMAL"), "%s", tb_buf_cstr(&lines));
    in.binlog_row_metadata = NULL; /* older servers have no such variable */
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK);
    cr_assert(strstr(tb_buf_cstr(&lines), "not available on this server"), "%s", tb_buf_cstr(&lines));
    tb_buf_free(&lines);
}

Test(preflight, mariadb_grants)
{
    /* what MariaDB 10.11 prints for GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT */
    const char *ok[] = {"GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `cdc`@`%` IDENTIFIED BY PASSWORD '*A'",
                        "GRANT INSERT ON `shop`.* TO `cdc`@`%`"};
    bl_preflight_in in = good_in();
    in.user = "cdc@%";
    in.grants = ok;
    in.ngrants = 2;
    bl_preflight_opts o = default_opts();
    tb_buf lines;
    tb_buf_init(&lines, 0);
    tb_error err;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(lines.len, 0, "%s", tb_buf_cstr(&lines));

    const char *sel_only[] = {"GRANT USAGE ON *.* TO `cdc`@`%`", "GRANT SELECT ON `shop`.* TO `cdc`@`%`"};
    in.grants = sel_only;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    const char *l = tb_buf_cstr(&lines);
    cr_assert(strstr(l, "ERROR user 'cdc'@'%' lacks the REPLICATION SLAVE privilege on *.*"), "%s", l);
    cr_assert(strstr(l, "run GRANT REPLICATION SLAVE ON *.* TO 'cdc'@'%'"), "%s", l);
    cr_assert(strstr(l, "ERROR user 'cdc'@'%' lacks the BINLOG MONITOR privilege"), "%s", l);
    cr_assert(strstr(l, "WARN user 'cdc'@'%' lacks the INSERT privilege"), "%s", l);
    cr_assert_null(strstr(l, "SELECT privilege"), "%s", l); /* a database-level SELECT does */
    cr_assert_eq(count(l, "ERROR "), 2, "%s", l);

    /* a global privilege given on one database only does not count */
    const char *db_level[] = {"GRANT SELECT, REPLICATION SLAVE ON *.* TO `cdc`@`%`",
                              "GRANT ALL PRIVILEGES ON `shop`.* TO `cdc`@`%`"};
    in.grants = db_level;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "BINLOG MONITOR"), "%s", err.msg);

    /* older MariaDB: REPLICATION CLIENT is the name */
    in.version = 100411;
    in.grants = sel_only;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(tb_buf_cstr(&lines), "lacks the REPLICATION CLIENT privilege"), "%s", tb_buf_cstr(&lines));

    /* no snapshot: SELECT is not needed */
    const char *repl[] = {"GRANT REPLICATION SLAVE, BINLOG MONITOR, INSERT ON *.* TO `cdc`@`%`"};
    in.version = 101106;
    in.grants = repl;
    in.ngrants = 1;
    o.snapshot = false;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    o.snapshot = true;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "lacks the SELECT privilege"), "%s", err.msg);

    /* snapshot.initial.method=chunked writes watermark rows: INSERT is needed, not only advised */
    const char *no_insert[] = {"GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `cdc`@`%`"};
    in.grants = no_insert;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    cr_assert(strstr(tb_buf_cstr(&lines), "WARN user 'cdc'@'%' lacks the INSERT privilege"), "%s", tb_buf_cstr(&lines));
    o.chunked = true;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "lacks the INSERT privilege"), "%s", err.msg);
    cr_assert(strstr(err.msg, "snapshot.initial.method=chunked"), "%s", err.msg);
    in.grants = repl;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG); /* still no SELECT */
    in.grants = ok;
    in.ngrants = 2;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    tb_buf_free(&lines);
}

Test(preflight, mysql_grants)
{
    const char *ok[] = {"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",
                        "GRANT INSERT (`a`, `b`) ON `shop`.`t` TO `cdc`@`%`"};
    bl_preflight_in in = good_in();
    in.mariadb = false;
    in.version = 80036;
    in.user = "cdc@%";
    in.grants = ok;
    in.ngrants = 2;
    bl_preflight_opts o = default_opts();
    tb_buf lines;
    tb_buf_init(&lines, 0);
    tb_error err;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(lines.len, 0, "%s", tb_buf_cstr(&lines));

    const char *no_reload[] = {"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT, INSERT ON *.* TO `cdc`@`%`"};
    in.grants = no_reload;
    in.ngrants = 1;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "lacks the RELOAD privilege on *.*"), "%s", err.msg);
    cr_assert(strstr(err.msg, "snapshot.locking.mode=none"), "%s", err.msg);
    o.lock_minimal = false;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);

    /* privileges that may come from a role: warnings only */
    const char *roles[] = {"GRANT USAGE ON *.* TO `cdc`@`%`", "GRANT `cdc_role`@`%` TO `cdc`@`%`"};
    in.grants = roles;
    in.ngrants = 2;
    cr_assert_eq(judge(&in, &o, &lines, &err), TB_OK, "%s", err.msg);
    cr_assert(strstr(tb_buf_cstr(&lines), "may come from one of the user's roles"), "%s", tb_buf_cstr(&lines));
    tb_buf_free(&lines);
}

/* A failing statement on the replication connection is retried only when a
 * reconnect can help: a permission error used to be retried forever. */
Test(preflight, sql_errors_retriable_or_not)
{
    cr_assert(myconn_errno_retriable(2013)); /* lost connection during query */
    cr_assert(myconn_errno_retriable(2006)); /* server has gone away */
    cr_assert(myconn_errno_retriable(1205)); /* lock wait timeout */
    cr_assert(myconn_errno_retriable(1053)); /* server shutdown in progress */
    cr_assert_not(myconn_errno_retriable(1227)); /* access denied; you need the ... privilege */
    cr_assert_not(myconn_errno_retriable(1045)); /* access denied for user */
    cr_assert_not(myconn_errno_retriable(1064)); /* syntax error */
    cr_assert_not(myconn_errno_retriable(1193)); /* unknown system variable */
}
