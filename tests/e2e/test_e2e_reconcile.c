/*
 * The reconcile step (DESIGN 6a) through the built tributary against the
 * testenv MariaDB and Kafka: after every resnapshot of a table, the keys its
 * topic holds that the table no longer has are deleted, so the topic read as
 * a KTable (e2e_table.h: latest record per key, tombstones delete, Jansson)
 * and the cache rebuilt from it equal the source by query.
 *
 * purged_when_needed (exactly_once off and on): rows deleted, updated and
 *   inserted while the connector is down, then the binlog holding them is
 *   purged; snapshot.mode=when_needed snapshots again and the deleted rows'
 *   keys are tombstoned. A table emptied while down loses every key.
 * incremental_after_silent_deletes: rows deleted with sql_log_bin=0 (no row
 *   events: the topic cannot know), then `tributary snapshot --incremental`;
 *   its end deletes their keys.
 * two_alters: ddl.alter.policy=resnapshot with ADD COLUMN a1, ADD COLUMN a2
 *   and DROP COLUMN w in a row: every row reaches the topic with a1 and a2,
 *   and the run never stops on the column that is gone.
 */
#include "e2e_reconcile.h"

/* Purge every binlog but the current one (a dump thread of the stopped
 * connector may still hold one for a moment: poll). */
static void rc_purge(MYSQL *m)
{
    e2e_sql(m, "FLUSH BINARY LOGS");
    long long deadline = tb_itest_now_ms() + 30000;
    for (;;) {
        tb_buf cur, logs;
        tb_buf_init(&cur, 0);
        tb_buf_init(&logs, 0);
        e2e_query_text(m, "SHOW MASTER STATUS", &cur);
        char *bar = strchr((char *)cur.data, '|');
        cr_assert_not_null(bar);
        *bar = '\0';
        e2e_sql(m, "PURGE BINARY LOGS TO '%s'", tb_buf_cstr(&cur));
        e2e_query_text(m, "SHOW BINARY LOGS", &logs);
        bool done = strncmp(tb_buf_cstr(&logs), tb_buf_cstr(&cur), strlen(tb_buf_cstr(&cur))) == 0;
        cr_assert(done || tb_itest_now_ms() < deadline, "binlogs not purged in 30 s:\n%s", tb_buf_cstr(&logs));
        tb_buf_free(&cur);
        tb_buf_free(&logs);
        if (done)
            break;
        usleep(200000);
    }
}

static void purged_when_needed(bool eos)
{
    rc_run r;
    rc_setup(&r, eos ? "e2erceos" : "e2erc", eos ? "exactly_once=true\n" : "");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 300);
    rc_table(m, r.db, "gone", 40);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    rc_stop(&r);

    /* while the connector is down: deletes, updates, inserts; a table emptied */
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 7 = 0", r.db);
    e2e_sql(m, "UPDATE %s.t SET v = 'changed' WHERE id %% 11 = 0", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1001, 'new', 1), (1002, 'new', 2)", r.db);
    e2e_sql(m, "DELETE FROM %s.gone", r.db);
    rc_purge(m);

    const char *more[] = {"--set", "snapshot.mode=when_needed", NULL};
    rc_start(&r, more);
    rc_caught_up(m, &r);
    e2e_sql(m, "DELETE FROM %s.t WHERE id = 1", r.db); /* streaming goes on after it */
    e2e_sql(m, "INSERT INTO %s.gone VALUES (7, 'back', 7)", r.db);
    rc_caught_up(m, &r);
    rc_stop(&r);
    cr_expect_geq(rc_log_count(&r, "snapshotting again"), 1, "no new snapshot; see %s", r.log);
    cr_expect_geq(rc_log_count(&r, "reconcile after snapshot"), 2, "no reconcile step logged; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "gone", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, purged_when_needed, .timeout = 300, .fini = e2e_kill_children)
{
    purged_when_needed(false);
}

Test(e2e_reconcile, purged_when_needed_exactly_once, .timeout = 300, .fini = e2e_kill_children)
{
    purged_when_needed(true);
}

Test(e2e_reconcile, incremental_after_silent_deletes, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercinc", "snapshot.chunk.size=40\n");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 200);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    /* rows removed without row events: the topic cannot know */
    e2e_sql(m, "SET SESSION sql_log_bin = 0");
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 5 = 0 OR id > 190", r.db);
    e2e_sql(m, "SET SESSION sql_log_bin = 1");
    char slog[400], table[160];
    snprintf(slog, sizeof slog, "%s/signal.log", r.dir);
    snprintf(table, sizeof table, "%s.t", r.db);
    const char *sargs[] = {"snapshot", "--incremental", "--table", table, "--config", r.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(sargs, slog), 30000);
    cr_assert_eq(rc, 0, "tributary snapshot --incremental failed (%d); see %s", rc, slog);
    long long deadline = tb_itest_now_ms() + 90000;
    while (rc_log_count(&r, "reconcile after incremental snapshot") < 1) {
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "no reconcile after the incremental snapshot; see %s", r.log);
        usleep(100000);
    }
    e2e_sql(m, "UPDATE %s.t SET v = 'after' WHERE id = 2", r.db);
    rc_caught_up(m, &r);
    rc_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, two_alters, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercalt", "snapshot.chunk.size=30\nddl.alter.policy=resnapshot\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 100);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN w INT DEFAULT 5", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 1", r.db);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a2 INT NOT NULL DEFAULT 2", r.db);
    e2e_sql(m, "ALTER TABLE %s.t DROP COLUMN w", r.db);
    /* until the topic holds every row as the table is now (the resnapshots run in the background) */
    static const char *const cols[] = {"id", "v", "n", "a1", "a2", NULL};
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t", r.db, r.db);
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) {
        tb_buf src, top;
        tb_buf_init(&src, 0);
        tb_buf_init(&top, 0);
        st_source_rows(m, r.db, "t", "id, v, n, a1, a2", &src);
        st_topic_table(topic, cols, &top);
        bool same = strcmp(tb_buf_cstr(&src), tb_buf_cstr(&top)) == 0;
        tb_buf_free(&src);
        tb_buf_free(&top);
        if (same)
            break;
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "the topic did not get a1 and a2 for every row in 120 s; see %s",
                  r.log);
        usleep(500000);
    }
    rc_caught_up(m, &r);
    rc_stop(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n, a1, a2", false);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}
