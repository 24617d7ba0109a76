/*
 * Diverged history (DESIGN 6 and 6a), through the built tributary against
 * the testenv MariaDB and Kafka: the connector published transactions that
 * the server it then reads never had (a failover to a lagging replica,
 * played here on one server: the last transactions are undone without
 * binlog, RESET MASTER starts a new history, and the "new primary" writes
 * transactions of its own). A restart with snapshot.mode=initial stops with
 * exit 1 and a message that says the history diverged (not "purged"), with
 * the GTIDs of both sides; snapshot.mode=when_needed then snapshots again,
 * and the reconcile step leaves the topic (read as a KTable) and the cache
 * equal to the new primary. With exactly_once off and on.
 *
 * Alone in its executable: RESET MASTER changes the server's history for
 * every connector reading it.
 */
#include "e2e_reconcile.h"

static void failover(bool eos)
{
    rc_run r;
    rc_setup(&r, eos ? "e2edive" : "e2ediv", eos ? "exactly_once=true\n" : "");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 100);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    /* the old primary's last transactions, published by the connector */
    e2e_sql(m, "INSERT INTO %s.t VALUES (101, 'old', 1), (102, 'old', 2)", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id <= 10", r.db);
    e2e_sql(m, "UPDATE %s.t SET v = 'old' WHERE id = 20", r.db);
    rc_caught_up(m, &r);
    st_stop(&r);
    char old_gtid[256];
    e2e_server_gtid(m, old_gtid, sizeof old_gtid);

    /* the new primary never had them, and has a history of its own */
    e2e_sql(m, "SET SESSION sql_log_bin = 0");
    e2e_sql(m, "DELETE FROM %s.t WHERE id > 100", r.db);
    for (int i = 1; i <= 10; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'v%d', %d)", r.db, i, i, i);
    e2e_sql(m, "UPDATE %s.t SET v = 'v20' WHERE id = 20", r.db);
    e2e_sql(m, "SET SESSION sql_log_bin = 1");
    e2e_sql(m, "RESET MASTER");
    e2e_sql(m, "INSERT INTO %s.t VALUES (200, 'new', 1)", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id = 50", r.db);
    char new_gtid[256];
    e2e_server_gtid(m, new_gtid, sizeof new_gtid);

    /* snapshot.mode=initial: stop, naming the divergence and both GTIDs */
    rc_start(&r, NULL);
    int rc = e2e_wait(r.pid, 90000);
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(r.log, &b);
    cr_assert_eq(rc, 1, "exit status %d, want 1; log:\n%s", rc, tb_buf_cstr(&b));
    const char *s = tb_buf_cstr(&b);
    cr_expect(strstr(s, "diverged"), "the message does not say the history diverged:\n%s", s);
    cr_expect(strstr(s, old_gtid), "the message does not name the stored GTID %s:\n%s", old_gtid, s);
    cr_expect(strstr(s, new_gtid), "the message does not name the server's GTID %s:\n%s", new_gtid, s);
    cr_expect(!strstr(s, "purged or reset"), "a diverged history reported as purged:\n%s", s);
    fprintf(stderr, "e2e_diverged: snapshot.mode=initial says:\n%s", strstr(s, "tributary run:") ? strstr(s, "tributary run:") : s);
    tb_buf_free(&b);

    /* snapshot.mode=when_needed: snapshot again and reconcile */
    const char *more[] = {"--set", "snapshot.mode=when_needed", NULL};
    rc_start(&r, more);
    rc_caught_up(m, &r);
    e2e_sql(m, "UPDATE %s.t SET v = 'after' WHERE id = 30", r.db);
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_geq(st_log_count(&r, "key(s) its topic held that the table no longer has"), 1,
                  "no reconcile deleted the old primary's rows; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_diverged, failover_to_a_server_that_lacks_transactions, .timeout = 300, .fini = e2e_kill_children)
{
    failover(false);
}

Test(e2e_diverged, failover_to_a_server_that_lacks_transactions_exactly_once, .timeout = 300,
     .fini = e2e_kill_children)
{
    failover(true);
}
