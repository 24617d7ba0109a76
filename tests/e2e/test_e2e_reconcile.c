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
 * tables_gone_while_purged: a table renamed and one dropped while the
 *   connector is down, their statements purged: the snapshot's end deletes
 *   every key of the old names' topics (ddl.drop.policy=tombstone) and says
 *   they were dropped.
 * kill_in_reconcile (exactly_once off and on): the same after a purge, with
 *   kill -9 inside the reconcile step: the next run snapshots and reconciles
 *   again, and topic and cache equal the source.
 * incremental_after_silent_deletes: rows deleted with sql_log_bin=0 (no row
 *   events: the topic cannot know), then `tributary snapshot --incremental`;
 *   its end deletes their keys (exactly_once off and on).
 * two_alters: ddl.alter.policy=resnapshot with ADD COLUMN a1, ADD COLUMN a2
 *   and DROP COLUMN w in a row: every row reaches the topic with a1 and a2,
 *   and the run never stops on the column that is gone; the cache rebuilt
 *   from the topic has the table's columns and rows (exactly_once off and on).
 * alter_during_resnapshot: ADD COLUMN a2 (and updates, deletes) while the
 *   resnapshot of ADD COLUMN a1 is half done: every row ends with both.
 * key_change (exactly_once off and on): a table without a primary key keyed
 *   by key.columns (n) gains one (ADD PRIMARY KEY (id)), then loses it
 *   again (DROP PRIMARY KEY): each time, under ddl.alter.policy=resnapshot,
 *   every row is sent under the new key and the records under the old key
 *   are deleted, so the topic read as a KTable never holds a row twice;
 *   changes after each ALTER follow, and the cache equals the source.
 * kafka_away_during_ddl: the broker stopped while streaming, then an ALTER
 *   under ddl.alter.policy=resnapshot (its reconcile reads the topic), rows
 *   deleted, a table created (its topic is made) and one renamed (the old
 *   name's keys read and deleted, the new topic made): the run waits for
 *   Kafka, WARNing what it waits for, instead of stopping; once the broker
 *   is back the topics and the cache equal the source.
 * rename_empty_then_restart: an empty table renamed while streaming (no
 *   row ever goes to the new name's topic): the new name's topic is made
 *   with its schema record, so the next run does not find it gone; rows
 *   written after the restart reach it.
 * topic_gone (MySQL) and sqlite_topic_gone: a captured table's topic deleted
 *   while the connector is down (rows deleted and added meanwhile): the next
 *   run refuses to start (exit 1, naming the topic) and does not make the
 *   topic; with topic.missing.policy=resnapshot (MySQL) it makes it again
 *   with a WARN and an incremental snapshot fills it; on SQLite the fix the
 *   refusal names (forget the stored position) snapshots every table again.
 *   The topics and the cache then equal the source.
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
    st_stop(&r);

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
    st_stop(&r);
    cr_expect_geq(st_log_count(&r, "snapshotting again"), 1, "no new snapshot; see %s", r.log);
    cr_expect_geq(st_log_count(&r, "reconcile after snapshot"), 2, "no reconcile step logged; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "gone", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* A snapshot into topics that hold nothing yet (made by this run) has no reconcile step: it is
 * their only writer until it ends, so they hold its keys and no other (an INFO per table). The
 * same snapshot taken again into those topics (the position forgotten while rows were deleted and
 * a table emptied at the source) does have it, and the topics and the cache end equal to the
 * tables. */
Test(e2e_reconcile, first_snapshot_into_empty_topics, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercfs", "");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 200);
    rc_table(m, r.db, "u", 50);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "no reconcile after the snapshot: its topic held no record before it"), 2,
                 "see %s", r.log);
    cr_expect_eq(st_log_count(&r, "reconcile after snapshot"), 0, "see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "u", cols, "id, v, n", true);

    /* the position forgotten while rows go: the snapshot again, into topics that hold them */
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 5 = 0", r.db);
    e2e_sql(m, "DELETE FROM %s.u", r.db);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' offsets set --config '%s' --position none >> '%s/offsets.log' 2>&1", E2E_BIN, r.cfg,
             r.dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(r.log, sizeof r.log, "%.250s/again.log", r.dir);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "no reconcile after the snapshot"), 0, "see %s", r.log);
    cr_expect_eq(st_log_count(&r, "t: reconcile after snapshot: 40 key(s) its topic held"), 1, "see %s", r.log);
    cr_expect_eq(st_log_count(&r, "u: reconcile after snapshot: 50 key(s) its topic held"), 1, "see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "u", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* At least once: the producer fails fatally while streaming (librdkafka 2.0's sequence
 * desynchronization after brokers refused writes, raised here by the test hook of ksink.h,
 * TB_TEST_KAFKA_FATAL_AFTER): the run replaces it, reads the binlog again from the committed
 * position and goes on; the topic (read as a KTable) and the cache end equal to the table, and
 * the run stops cleanly. */
Test(e2e_reconcile, fatal_producer_error, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercfat", "");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 100);
    setenv("TB_TEST_KAFKA_FATAL_AFTER", "200", 1); /* after the snapshot's 101 messages, in the stream */
    rc_start(&r, NULL);
    unsetenv("TB_TEST_KAFKA_FATAL_AFTER");
    rc_caught_up(m, &r);
    for (int i = 0; i < 60; i++) {
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'new', %d)", r.db, 1000 + i, i);
        e2e_sql(m, "UPDATE %s.t SET n = n + 1 WHERE id = %d", r.db, 1 + i);
        e2e_sql(m, "DELETE FROM %s.t WHERE id = %d", r.db, 50 + i % 40);
        e2e_sql(m, "UPDATE %s.t SET v = 'again' WHERE id = %d", r.db, 1000 + i / 2);
    }
    rc_caught_up(m, &r);
    cr_expect_eq(st_log_count(&r, "a new producer goes on, from the committed position\n"), 1, "see %s", r.log);
    cr_expect_eq(st_log_count(&r, "a new Kafka producer replaced the one that failed"), 1, "see %s", r.log);
    cr_expect_eq(st_log_count(&r, "reading the source again from"), 1, "see %s", r.log);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
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

/* The st_* helpers of e2e_tables.h over an rc_run (the same fields). */
static st_run rc_as_st(const rc_run *r)
{
    st_run s;
    memset(&s, 0, sizeof(s));
    snprintf(s.db, sizeof s.db, "%s", r->db);
    snprintf(s.dir, sizeof s.dir, "%s", r->dir);
    snprintf(s.cfg, sizeof s.cfg, "%s", r->cfg);
    snprintf(s.log, sizeof s.log, "%s", r->log);
    snprintf(s.status, sizeof s.status, "%s", r->status);
    snprintf(s.cache, sizeof s.cache, "%s", r->cache);
    s.pid = r->pid;
    return s;
}

/* A table renamed and another dropped while the connector is down, the
 * binlog holding both statements purged: the snapshot when_needed takes
 * again reads neither old name. Its end walks the tables the schema topic
 * describes: both old names' topics lose every key (ddl.drop.policy=
 * tombstone) and get the record that says dropped; the new name's topic
 * holds its rows; the cache equals the source and holds no row under the
 * old names. */
Test(e2e_reconcile, tables_gone_while_purged, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercgone", "ddl.drop.policy=tombstone\n");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 60);
    rc_table(m, r.db, "ren", 30);
    rc_table(m, r.db, "drp", 20);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    st_stop(&r);

    e2e_sql(m, "RENAME TABLE %s.ren TO %s.ren2", r.db, r.db);
    e2e_sql(m, "DELETE FROM %s.ren2 WHERE id %% 3 = 0", r.db);
    e2e_sql(m, "DROP TABLE %s.drp", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 5 = 0", r.db);
    rc_purge(m);

    const char *more[] = {"--set", "snapshot.mode=when_needed", NULL};
    rc_start(&r, more);
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "no longer has it after the snapshot"), 2,
                 "the two tables gone are not named once each; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "ren2", cols, "id, v, n", true);
    st_run s = rc_as_st(&r);
    st_assert_gone(&s, "ren", cols, false);
    st_assert_gone(&s, "drp", cols, false);
    st_expect_dropped(&s, "ren");
    st_expect_dropped(&s, "drp");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* kill -9 inside the reconcile step (after its first log line, before its result): the
 * position after the snapshot is not committed, so the next run snapshots and reconciles
 * again, and the topic ends equal to the table (exactly_once: the open transaction, rows
 * and deletes, is aborted). Tried up to 5 times until a kill lands before the result. */
static void kill_in_reconcile(bool eos)
{
    rc_run r;
    rc_setup(&r, eos ? "e2erckeos9" : "e2erck9", eos ? "exactly_once=true\n" : "");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 3000);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    st_stop(&r);
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 7 = 0", r.db);
    rc_purge(m);
    const char *more[] = {"--set", "snapshot.mode=when_needed", NULL};
    char saved[sizeof r.log];
    snprintf(saved, sizeof saved, "%s", r.log);
    int landed = 0;
    for (int i = 0; i < 5 && !landed; i++) {
        snprintf(r.log, sizeof r.log, "%.250s/killed%d.log", r.dir, i);
        rc_start(&r, more);
        st_wait_log(&r, "reconcile after snapshot: reading the keys", 120000, "no reconcile step began");
        kill(r.pid, SIGKILL);
        cr_assert_eq(e2e_wait(r.pid, 10000), -1);
        landed = st_log_count(&r, "key(s) its topic held") == 0 && st_log_count(&r, "holds no key the table") == 0;
    }
    cr_assert(landed, "no kill landed inside the reconcile step in 5 tries; see %s", r.log);
    snprintf(r.log, sizeof r.log, "%s", saved);
    rc_start(&r, more);
    rc_caught_up(m, &r);
    e2e_sql(m, "DELETE FROM %s.t WHERE id = 1", r.db); /* streaming goes on after it */
    rc_caught_up(m, &r);
    st_stop(&r);
    /* 428 keys, fewer when deletes of the killed run were acknowledged before the kill */
    cr_expect_geq(st_log_count(&r, "key(s) its topic held") + st_log_count(&r, "holds no key the table"), 1,
                  "the run after the kill did not end a reconcile step; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, kill_in_reconcile, .timeout = 400, .fini = e2e_kill_children)
{
    kill_in_reconcile(false);
}

Test(e2e_reconcile, kill_in_reconcile_exactly_once, .timeout = 400, .fini = e2e_kill_children)
{
    kill_in_reconcile(true);
}

static void incremental_after_silent_deletes(bool eos)
{
    rc_run r;
    rc_setup(&r, eos ? "e2ercince" : "e2ercinc", eos ? "snapshot.chunk.size=40\nexactly_once=true\n" : "snapshot.chunk.size=40\n");
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
    st_wait_log(&r, "reconcile after incremental snapshot", 90000, "no reconcile after the incremental snapshot");
    e2e_sql(m, "UPDATE %s.t SET v = 'after' WHERE id = 2", r.db);
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, incremental_after_silent_deletes, .timeout = 300, .fini = e2e_kill_children)
{
    incremental_after_silent_deletes(false);
}

Test(e2e_reconcile, incremental_after_silent_deletes_exactly_once, .timeout = 300, .fini = e2e_kill_children)
{
    incremental_after_silent_deletes(true);
}

static size_t rc_nlines(const char *s)
{
    size_t n = 0;
    for (; (s = strchr(s, '\n')); s++)
        n++;
    return n;
}

/* The lines of a that b lacks (both "…\n" lines), at most max of them, into out. */
static size_t rc_lines_missing(const char *a, const char *b, size_t max, tb_buf *out)
{
    size_t n = 0;
    for (const char *l = a; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
        bool found = false;
        for (const char *p = b; !found && *p;) {
            const char *pe = strchr(p, '\n');
            size_t plen = pe ? (size_t)(pe - p) + 1 : strlen(p);
            found = plen == len && memcmp(p, l, len) == 0;
            p += plen;
        }
        if (!found && n++ < max)
            tb_buf_append(out, l, len);
        l += len;
    }
    return n;
}

/* Until the topic read as a KTable equals db.table (resnapshots run in the background). On
 * failure the rows each side lacks and the end of the run's log go to the output (CI keeps no
 * /tmp folder), and what the test holds is released first: the assertion ends the worker, whose
 * LeakSanitizer would otherwise report the buffers and the connection as a leak of its own. */
/* Until the topic of db.table (db: a database the run captures) read as a KTable equals the source. */
static void rc_wait_topic_equal_in(MYSQL *m, const rc_run *r, const char *db, const char *table,
                                   const char *const *cols, const char *colsql, const char *what)
{
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, db, table);
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) {
        tb_buf src, top;
        tb_buf_init(&src, 0);
        tb_buf_init(&top, 0);
        st_source_rows(m, db, table, colsql, &src);
        st_topic_table(topic, cols, &top);
        bool same = strcmp(tb_buf_cstr(&src), tb_buf_cstr(&top)) == 0;
        if (!same && tb_itest_now_ms() >= deadline) {
            tb_buf only_src, only_top, log;
            tb_buf_init(&only_src, 0);
            tb_buf_init(&only_top, 0);
            tb_buf_init(&log, 0);
            size_t ns = rc_lines_missing(tb_buf_cstr(&src), tb_buf_cstr(&top), 20, &only_src);
            size_t nt = rc_lines_missing(tb_buf_cstr(&top), tb_buf_cstr(&src), 20, &only_top);
            const char *tail = "";
            if (e2e_slurp(r->log, &log) && log.len > 0) {
                tail = tb_buf_cstr(&log) + (log.len > 12000 ? log.len - 12000 : 0);
                fprintf(stderr, "e2e_reconcile: %s: the end of %s:\n%s\n", what, r->log, tail);
            }
            char msg[4000];
            snprintf(msg, sizeof msg,
                     "%s: the topic as a KTable does not equal the source after 120 s (see %s): source %zu row(s), "
                     "topic %zu; %zu row(s) of the source not in the topic:\n%s%zu row(s) of the topic not in the "
                     "source:\n%s",
                     what, r->log, rc_nlines(tb_buf_cstr(&src)), rc_nlines(tb_buf_cstr(&top)), ns,
                     tb_buf_cstr(&only_src), nt, tb_buf_cstr(&only_top));
            tb_buf_free(&only_src);
            tb_buf_free(&only_top);
            tb_buf_free(&log);
            tb_buf_free(&src);
            tb_buf_free(&top);
            mysql_close(m);
            cr_assert_fail("%s", msg);
        }
        tb_buf_free(&src);
        tb_buf_free(&top);
        if (same)
            break;
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        usleep(500000);
    }
}

static void rc_wait_topic_equal(MYSQL *m, const rc_run *r, const char *table, const char *const *cols,
                                const char *colsql, const char *what)
{
    rc_wait_topic_equal_in(m, r, r->db, table, cols, colsql, what);
}

static void two_alters(bool eos)
{
    rc_run r;
    rc_setup(&r, eos ? "e2ercalte" : "e2ercalt",
             eos ? "snapshot.chunk.size=30\nddl.alter.policy=resnapshot\nexactly.once=true\n"
                 : "snapshot.chunk.size=30\nddl.alter.policy=resnapshot\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 100);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN w INT DEFAULT 5", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 1", r.db);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a2 INT NOT NULL DEFAULT 2", r.db);
    e2e_sql(m, "ALTER TABLE %s.t DROP COLUMN w", r.db);
    static const char *const cols[] = {"id", "v", "n", "a1", "a2", NULL};
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n, a1, a2", "a1 and a2 for every row");
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n, a1, a2", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, two_alters, .timeout = 300, .fini = e2e_kill_children)
{
    two_alters(false);
}

Test(e2e_reconcile, two_alters_exactly_once, .timeout = 300, .fini = e2e_kill_children)
{
    two_alters(true);
}

/* Each database has a signalling table of its own, which numbers its rows itself: an ALTER in a
 * second database signals a resnapshot whose id is lower than those the first database's table
 * has reached (its signals and the watermarks of its chunks), and it must be followed all the same. */
Test(e2e_reconcile, alters_in_two_databases, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    char db2[120];
    MYSQL *m = e2e_mysql();
    rc_setup(&r, "e2erc2db", "snapshot.chunk.size=30\nddl.alter.policy=resnapshot\n");
    snprintf(db2, sizeof db2, "%s_b", r.db);
    FILE *f = fopen(r.cfg, "a"); /* the later line wins: both databases */
    cr_assert_not_null(f);
    fprintf(f, "tables.include=^%s(_b)?[.]\n", r.db);
    fclose(f);
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE DATABASE %s", db2);
    rc_table(m, r.db, "t", 100);
    rc_table(m, db2, "t", 100);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    static const char *const cols[] = {"id", "v", "n", "a1", NULL};
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 1", r.db);
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n, a1", "the first database's table, a1 for every row");
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 2", db2);
    rc_wait_topic_equal_in(m, &r, db2, "t", cols, "id, v, n, a1", "the second database's table, a1 for every row");
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n, a1", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    e2e_sql(m, "DROP DATABASE %s", db2);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Foreign keys whose ON DELETE / ON UPDATE actions change rows without row events (MariaDB logs
 * only the parent's row): under source.fk.cascade.policy=resnapshot, the default, every captured
 * table the action reaches is snapshotted again, and its reconcile step deletes what the cascade
 * deleted. The parent is not captured; g is reached through c's own action; s is a SET NULL
 * child; x, whose key has no action, and an UPDATE of a column no key references signal nothing.
 * m, not captured either, gets its key to p while the run streams, after the keys were first read:
 * mg, captured, is reached through it. tree references itself: a delete takes its subtree. */
Test(e2e_reconcile, fk_cascades, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m = e2e_mysql();
    unsigned port = e2e_free_port();
    char extra[128];
    snprintf(extra, sizeof extra, "snapshot.chunk.size=30\nmetrics.listen=127.0.0.1:%u\n", port);
    rc_setup(&r, "e2ercfk", extra);
    FILE *f = fopen(r.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "tables.exclude=^%s[.](p|m)$\n", r.db);
    fclose(f);
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.p (id INT PRIMARY KEY, v VARCHAR(20))", r.db);
    e2e_sql(m, "CREATE TABLE %s.c (id INT PRIMARY KEY, pid INT, v VARCHAR(20), FOREIGN KEY (pid) REFERENCES %s.p (id) "
               "ON DELETE CASCADE ON UPDATE CASCADE)", r.db, r.db);
    e2e_sql(m, "CREATE TABLE %s.g (id INT PRIMARY KEY, cid INT, v VARCHAR(20), CONSTRAINT g_c FOREIGN KEY (cid) "
               "REFERENCES %s.c (id) ON DELETE CASCADE)", r.db, r.db);
    e2e_sql(m, "CREATE TABLE %s.s (id INT PRIMARY KEY, pid INT NULL, v VARCHAR(20), FOREIGN KEY (pid) REFERENCES "
               "%s.p (id) ON DELETE SET NULL)", r.db, r.db);
    e2e_sql(m, "CREATE TABLE %s.x (id INT PRIMARY KEY, pid INT, v VARCHAR(20), FOREIGN KEY (pid) REFERENCES %s.p (id))",
            r.db, r.db);
    /* a tree: a row's delete takes its subtree with it, in the same table */
    e2e_sql(m, "CREATE TABLE %s.tree (id INT PRIMARY KEY, up INT NULL, v VARCHAR(20), FOREIGN KEY (up) REFERENCES "
               "%s.tree (id) ON DELETE CASCADE)", r.db, r.db);
    /* m, not captured, gets its key to p while the run streams: mg, captured, is reached through it */
    e2e_sql(m, "CREATE TABLE %s.m (id INT PRIMARY KEY, pid INT, v VARCHAR(20))", r.db);
    e2e_sql(m, "CREATE TABLE %s.mg (id INT PRIMARY KEY, mid INT, v VARCHAR(20), FOREIGN KEY (mid) REFERENCES %s.m (id) "
               "ON DELETE CASCADE)", r.db, r.db);
    e2e_sql(m, "USE %s", r.db); /* the sequence engine's tables are in every database */
    e2e_sql(m, "INSERT INTO %s.p SELECT seq, CONCAT('p', seq) FROM seq_1_to_10", r.db);
    e2e_sql(m, "INSERT INTO %s.c SELECT seq, seq %% 10 + 1, CONCAT('c', seq) FROM seq_1_to_40", r.db);
    e2e_sql(m, "INSERT INTO %s.g SELECT seq, seq, CONCAT('g', seq) FROM seq_1_to_40", r.db);
    e2e_sql(m, "INSERT INTO %s.s SELECT seq, seq %% 2 + 1, CONCAT('s', seq) FROM seq_1_to_20", r.db);
    e2e_sql(m, "INSERT INTO %s.x SELECT seq, 10, CONCAT('x', seq) FROM seq_1_to_5", r.db);
    e2e_sql(m, "INSERT INTO %s.m SELECT seq, seq %% 5 + 5, CONCAT('m', seq) FROM seq_1_to_20", r.db);
    e2e_sql(m, "INSERT INTO %s.tree SELECT seq, IF(seq = 1, NULL, seq DIV 2), CONCAT('n', seq) FROM seq_1_to_63",
            r.db); /* a binary tree: n's parent is n / 2 */
    e2e_sql(m, "INSERT INTO %s.mg SELECT seq, seq %% 20 + 1, CONCAT('mg', seq) FROM seq_1_to_40", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    const char *sig = "incremental snapshot of it signalled";
    e2e_sql(m, "UPDATE %s.p SET v = 'renamed' WHERE id = 4", r.db); /* no referenced column changes */
    rc_caught_up(m, &r);
    cr_expect_eq(st_log_count(&r, sig), 0, "an UPDATE of a column no key references signalled a snapshot; see %s",
                 r.log);
    e2e_sql(m, "DELETE FROM %s.p WHERE id IN (1, 2)", r.db);   /* c, then g, deleted; s set to NULL */
    e2e_sql(m, "UPDATE %s.p SET id = 103 WHERE id = 3", r.db); /* c.pid follows */
    static const char *const cols_c[] = {"id", "pid", "v", NULL}, *const cols_g[] = {"id", "cid", "v", NULL};
    rc_wait_topic_equal(m, &r, "c", cols_c, "id, pid, v", "c after the cascades");
    rc_wait_topic_equal(m, &r, "g", cols_g, "id, cid, v", "g after the cascade through c");
    rc_wait_topic_equal(m, &r, "s", cols_c, "id, pid, v", "s after SET NULL");
    /* a RENAME and a DROP DATABASE of tables no key joins leave the keys as they were read */
    const char *loaded = "foreign key(s) of captured tables change rows";
    size_t loads = st_log_count(&r, loaded);
    cr_expect_geq(loads, 1, "the keys were never read; see %s", r.log);
    e2e_sql(m, "CREATE DATABASE %s_o", r.db);
    e2e_sql(m, "CREATE TABLE %s_o.stage (id INT PRIMARY KEY)", r.db);
    e2e_sql(m, "RENAME TABLE %s_o.stage TO %s_o.live", r.db, r.db);
    e2e_sql(m, "DROP DATABASE %s_o", r.db);
    e2e_sql(m, "DELETE FROM %s.p WHERE id = 4", r.db);
    rc_caught_up(m, &r);
    cr_expect_eq(st_log_count(&r, loaded), loads, "the keys were read again after statements on other tables");
    /* the keys were read at the first DELETE; a key added to a table that is not captured is read
     * at the next one */
    e2e_sql(m, "ALTER TABLE %s.m ADD CONSTRAINT m_p FOREIGN KEY (pid) REFERENCES %s.p (id) ON DELETE CASCADE", r.db,
            r.db);
    e2e_sql(m, "DELETE FROM %s.p WHERE id = 5", r.db); /* m's rows of p 5, then theirs in mg */
    static const char *const cols_mg[] = {"id", "mid", "v", NULL};
    rc_wait_topic_equal(m, &r, "mg", cols_mg, "id, mid, v", "mg after the cascade through m, whose key came later");
    e2e_sql(m, "DELETE FROM %s.tree WHERE id = 3", r.db); /* 3, 6, 7, 12-15, 24-31, 48-63: only 3 is logged */
    static const char *const cols_tree[] = {"id", "up", "v", NULL};
    rc_wait_topic_equal(m, &r, "tree", cols_tree, "id, up, v", "tree after a subtree's delete");
    rc_caught_up(m, &r);
    /* each snapshot the actions asked for, by table, seen from outside */
    long long total = 0;
    static const char *const reached[] = {"c", "g", "s", "mg", "tree"};
    for (size_t i = 0; i < sizeof reached / sizeof *reached; i++) {
        long long v = e2e_table_metric(port, "tributary_resnapshots_total", r.db, reached[i], "reason", "fk_action");
        cr_expect_geq(v, 1, "%s: no snapshot counted for its foreign key's action", reached[i]);
        total += v;
    }
    char sample_x[300];
    snprintf(sample_x, sizeof sample_x, "tributary_resnapshots_total{connector=\"%s\",table=\"%s.x\"", r.db, r.db);
    cr_expect_eq(e2e_metric_value(port, sample_x), -1, "x, whose key has no action, counted");
    st_stop(&r);
    cr_expect_eq(total, st_log_count(&r, sig), "the counters do not add up to the signals logged; see %s", r.log);
    char want[300];
    snprintf(want, sizeof want, "%s.x: rows of it changed", r.db);
    cr_expect_eq(st_log_count(&r, want), 0, "x has no action, yet it was snapshotted again; see %s", r.log);
    cr_expect_geq(st_log_count(&r, sig), 3, "fewer signals than tables reached (c, g, s); see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "c", cols_c, "id, pid, v", true);
    rc_assert_equal(&r, m, "g", cols_g, "id, cid, v", true);
    rc_assert_equal(&r, m, "s", cols_c, "id, pid, v", true);
    rc_assert_equal(&r, m, "x", cols_c, "id, pid, v", true);
    rc_assert_equal(&r, m, "mg", cols_mg, "id, mid, v", true);
    rc_assert_equal(&r, m, "tree", cols_tree, "id, up, v", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* MariaDB's generated columns: VIRTUAL and PERSISTENT values are in the binlog's full row image
 * and in the snapshot's SELECT alike, so the topic and the cache hold them as the source computes
 * them; an ALTER that adds one (or changes its expression) gives every row a new value without
 * row events: a resnapshot (ddl.alter.policy default). */
Test(e2e_reconcile, generated_columns, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m = e2e_mysql();
    rc_setup(&r, "e2ercgen", "snapshot.chunk.size=20\n");
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "USE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.g (id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL, p BIGINT AS (a + 100) "
               "PERSISTENT, s VARCHAR(12) AS (CONCAT('s', a)) VIRTUAL, j JSON AS (JSON_OBJECT('a', a)) VIRTUAL)",
            r.db);
    e2e_sql(m, "INSERT INTO %s.g (id, a) SELECT seq, seq * 3 FROM seq_1_to_50", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    e2e_sql(m, "INSERT INTO %s.g (id, a) VALUES (51, 7), (52, NULL)", r.db);
    e2e_sql(m, "UPDATE %s.g SET a = a + 1 WHERE id %% 3 = 0", r.db);
    e2e_sql(m, "DELETE FROM %s.g WHERE id %% 5 = 0", r.db);
    static const char *const cols[] = {"id", "a", "v", "p", "s", NULL};
    rc_wait_topic_equal(m, &r, "g", cols, "id, a, v, p, s", "g after row changes");
    e2e_sql(m, "ALTER TABLE %s.g ADD COLUMN w INT AS (a * 10) VIRTUAL", r.db);
    e2e_sql(m, "ALTER TABLE %s.g MODIFY COLUMN v INT AS (a * 3) VIRTUAL", r.db);
    static const char *const cols_w[] = {"id", "a", "v", "p", "s", "w", NULL};
    rc_wait_topic_equal(m, &r, "g", cols_w, "id, a, v, p, s, w", "g after an ALTER of its generated columns");
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "g", cols_w, "id, a, v, p, s, w", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Partition statements that take rows away or bring them in without row events: DROP PARTITION,
 * TRUNCATE PARTITION, EXCHANGE PARTITION (the other table's rows change too) and CONVERT PARTITION
 * TO TABLE (a new table made with the partition's rows). Under ddl.alter.policy=resnapshot, the
 * default, each table's topic, and the cache, end equal to the source. */
Test(e2e_reconcile, partitions, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m = e2e_mysql();
    unsigned port = e2e_free_port();
    char extra[128];
    snprintf(extra, sizeof extra, "snapshot.chunk.size=40\nmetrics.listen=127.0.0.1:%u\n", port);
    rc_setup(&r, "e2ercpart", extra);
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "USE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), n INT) PARTITION BY RANGE (id) ("
               "PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200), "
               "PARTITION p2 VALUES LESS THAN (300), PARTITION p3 VALUES LESS THAN MAXVALUE)", r.db);
    e2e_sql(m, "INSERT INTO %s.t SELECT seq, CONCAT('t', seq), seq FROM seq_1_to_399", r.db);
    e2e_sql(m, "CREATE TABLE %s.x (id INT PRIMARY KEY, v VARCHAR(20), n INT)", r.db);
    e2e_sql(m, "INSERT INTO %s.x SELECT seq, CONCAT('x', seq), -seq FROM seq_250_to_270", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    static const char *const cols[] = {"id", "v", "n", NULL};
    e2e_sql(m, "ALTER TABLE %s.t DROP PARTITION p0", r.db);
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n", "t after DROP PARTITION");
    e2e_sql(m, "ALTER TABLE %s.t TRUNCATE PARTITION p1", r.db);
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n", "t after TRUNCATE PARTITION");
    e2e_sql(m, "ALTER TABLE %s.t EXCHANGE PARTITION p2 WITH TABLE %s.x", r.db, r.db);
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n", "t after EXCHANGE PARTITION");
    rc_wait_topic_equal(m, &r, "x", cols, "id, v, n", "x after EXCHANGE PARTITION");
    e2e_sql(m, "ALTER TABLE %s.t CONVERT PARTITION p3 TO TABLE %s.y", r.db, r.db);
    char done[300];
    snprintf(done, sizeof done, "incremental snapshot of %s.y done", r.db); /* y's topic is made by it */
    st_wait_log(&r, done, 90000, "no snapshot of the table CONVERT PARTITION made");
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n", "t after CONVERT PARTITION");
    rc_wait_topic_equal(m, &r, "y", cols, "id, v, n", "y made by CONVERT PARTITION");
    rc_caught_up(m, &r);
    cr_expect_eq(e2e_table_metric(port, "tributary_resnapshots_total", r.db, "t", "reason", "alter"), 4,
                 "t: not one snapshot counted for each of its 4 statements");
    cr_expect_eq(e2e_table_metric(port, "tributary_resnapshots_total", r.db, "x", "reason", "alter"), 1,
                 "x: its EXCHANGE not counted once");
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "x", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "y", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* A writer of random parent DELETEs, key UPDATEs and INSERTs, with child INSERTs, into the
 * tables of fk_random (child process; runs until killed). */
static void fk_writer(const char *pdb, const char *cdb, unsigned seed)
{
    MYSQL *m = e2e_mysql_try();
    if (!m)
        _exit(3);
    int next = 1000;
    char q[512];
    for (;;) {
        int op = (int)(rand_r(&seed) % 10), id = 1 + (int)(rand_r(&seed) % 60);
        if (op < 3)
            snprintf(q, sizeof q, "DELETE FROM %s.p WHERE id = %d", pdb, id);
        else if (op < 5)
            snprintf(q, sizeof q, "UPDATE %s.p SET id = %d WHERE id = %d", pdb, next++, id);
        else if (op < 7)
            snprintf(q, sizeof q, "INSERT IGNORE INTO %s.p VALUES (%d, 'new')", pdb, id);
        else if (op < 9)
            snprintf(q, sizeof q, "INSERT IGNORE INTO %s.c SELECT %d, id, 'w' FROM %s.p ORDER BY RAND() LIMIT 1", cdb,
                     next++, pdb);
        else
            snprintf(q, sizeof q, "INSERT IGNORE INTO %s.g SELECT %d, id, 'w' FROM %s.c ORDER BY RAND() LIMIT 1", cdb,
                     next++, cdb);
        (void)mysql_query(m, q);
    }
}

/* Foreign key actions under kill -9: the parent in a database that is not captured, its children
 * in another (their signals go to that database's signalling table), a writer changing parent
 * keys all along while the run is killed at random moments; at the end the children's topics and
 * the cache equal the source. */
Test(e2e_reconcile, fk_random_kill9, .timeout = 400, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m = e2e_mysql();
    rc_setup(&r, "e2ercfkk", "snapshot.chunk.size=20\n");
    char pdb[120];
    snprintf(pdb, sizeof pdb, "%s_p", r.db);
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE DATABASE %s", pdb);
    e2e_sql(m, "CREATE TABLE %s.p (id INT PRIMARY KEY, v VARCHAR(20))", pdb);
    e2e_sql(m, "CREATE TABLE %s.c (id INT PRIMARY KEY, pid INT, v VARCHAR(20), FOREIGN KEY (pid) REFERENCES %s.p (id) "
               "ON DELETE CASCADE ON UPDATE CASCADE)", r.db, pdb);
    e2e_sql(m, "CREATE TABLE %s.g (id INT PRIMARY KEY, cid INT NULL, v VARCHAR(20), FOREIGN KEY (cid) REFERENCES "
               "%s.c (id) ON DELETE SET NULL)", r.db, r.db);
    e2e_sql(m, "USE %s", r.db);
    e2e_sql(m, "INSERT INTO %s.p SELECT seq, 'p' FROM seq_1_to_60", pdb);
    e2e_sql(m, "INSERT INTO %s.c SELECT seq, seq %% 60 + 1, 'c' FROM seq_1_to_200", r.db);
    e2e_sql(m, "INSERT INTO %s.g SELECT seq, seq, 'g' FROM seq_1_to_200", r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    cr_log_info("fk_random_kill9: seed %u", seed);
    pid_t wl = tb_test_fork();
    cr_assert_geq(wl, 0);
    if (wl == 0) {
        fk_writer(pdb, r.db, seed);
        _exit(0);
    }
    e2e_track(wl);
    for (int k = 0; k < 3; k++) {
        /* a random moment: up to 3 s of writes, then the run killed and started again */
        long long until = tb_itest_now_ms() + 500 + (long long)(rand_r(&seed) % 2500);
        while (tb_itest_now_ms() < until) {
            cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
            usleep(50000);
        }
        kill(r.pid, SIGKILL);
        cr_assert_eq(e2e_wait(r.pid, 10000), -1);
        rc_start(&r, NULL);
    }
    kill(wl, SIGKILL);
    cr_assert_eq(waitpid(wl, NULL, 0), wl);
    static const char *const cols_c[] = {"id", "pid", "v", NULL}, *const cols_g[] = {"id", "cid", "v", NULL};
    rc_wait_topic_equal(m, &r, "c", cols_c, "id, pid, v", "c after cascades and kills");
    rc_wait_topic_equal(m, &r, "g", cols_g, "id, cid, v", "g after SET NULL through c, and kills");
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "c", cols_c, "id, pid, v", true);
    rc_assert_equal(&r, m, "g", cols_g, "id, cid, v", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    e2e_sql(m, "DROP DATABASE %s", pdb);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, kafka_away_during_ddl, .timeout = 400, .init = tb_itest_restore_servers,
     .fini = e2e_fini_servers)
{
    rc_run r;
    rc_setup(&r, "e2ercaway", "ddl.alter.policy=resnapshot\nsnapshot.mode=when_needed\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 100);
    rc_table(m, r.db, "r", 30);
    rc_start(&r, NULL);
    e2e_track(r.pid);
    rc_caught_up(m, &r);
    tb_itest_testenv("stop-kafka");
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 1", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id <= 10", r.db);
    rc_table(m, r.db, "t2", 20);
    e2e_sql(m, "RENAME TABLE %s.r TO %s.r2", r.db, r.db); /* the old name's keys read, the new topic made */
    /* the reconcile's read or the new topic waits: the WARN names it (a request takes 30 s to time out) */
    long long deadline = tb_itest_now_ms() + 180000;
    while (st_log_count(&r, "waiting for Kafka, trying again until it answers") == 0) {
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped while Kafka was away; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "no WARN of the wait for Kafka in 180 s; see %s", r.log);
        usleep(200000);
    }
    tb_itest_testenv("start-kafka");
    static const char *const cols[] = {"id", "v", "n", "a1", NULL};
    static const char *const cols2[] = {"id", "v", "n", NULL};
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n, a1", "t after Kafka came back");
    rc_wait_topic_equal(m, &r, "t2", cols2, "id, v, n", "t2 after Kafka came back");
    rc_wait_topic_equal(m, &r, "r2", cols2, "id, v, n", "r2 after Kafka came back");
    rc_caught_up(m, &r);
    st_stop(&r);
    char old_topic[256];
    snprintf(old_topic, sizeof old_topic, "%s.%s.r", r.db, r.db);
    tb_buf gone;
    tb_buf_init(&gone, 0);
    st_topic_table(old_topic, cols2, &gone);
    cr_expect_str_eq(tb_buf_cstr(&gone), "", "the renamed table's old topic still holds rows:\n%s", tb_buf_cstr(&gone));
    tb_buf_free(&gone);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n, a1", true);
    rc_assert_equal(&r, m, "t2", cols2, "id, v, n", true);
    rc_assert_equal(&r, m, "r2", cols2, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, rename_empty_then_restart, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercrnem", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 0);
    rc_table(m, r.db, "o", 3); /* the run's other table, with rows */
    rc_start(&r, NULL);
    e2e_track(r.pid);
    rc_caught_up(m, &r);
    e2e_sql(m, "RENAME TABLE %s.t TO %s.t2", r.db, r.db);
    rc_caught_up(m, &r);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t2", r.db, r.db);
    cr_assert(st_topic_exists(topic), "topic %s not made with the new name's schema record; see %s", topic, r.log);
    st_stop(&r);
    rc_start(&r, NULL);
    e2e_track(r.pid);
    rc_caught_up(m, &r);
    e2e_sql(m, "INSERT INTO %s.t2 VALUES (1, 'v1', 1), (2, 'v2', 2)", r.db);
    static const char *const cols[] = {"id", "v", "n", NULL};
    rc_wait_topic_equal(m, &r, "t2", cols, "id, v, n", "t2 after the restart");
    rc_caught_up(m, &r);
    st_stop(&r);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* An ALTER while the resnapshot of the ALTER before it runs (its state file says chunks are
 * done and the table still queued): the resnapshot reads the table's schema at each chunk, the
 * second ALTER queues another, and the topic and the cache end with every row's new columns,
 * with the changes made meanwhile. */
Test(e2e_reconcile, alter_during_resnapshot, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercdur", "snapshot.chunk.size=20\nddl.alter.policy=resnapshot\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 6000);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a1 INT NOT NULL DEFAULT 1", r.db);
    const char *state = r.state;
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) { /* mid-way: some chunks done, the table still queued */
        json_error_t je;
        json_t *st = json_load_file(state, 0, &je);
        json_int_t chunks = json_integer_value(json_object_get(st, "chunks"));
        size_t queued = json_array_size(json_object_get(st, "queue"));
        json_decref(st);
        if (chunks >= 2 && queued >= 1)
            break;
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "the resnapshot never showed its progress in %s; see %s", state, r.log);
        usleep(20000);
    }
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN a2 INT NOT NULL DEFAULT 2", r.db);
    e2e_sql(m, "UPDATE %s.t SET v = 'during', a2 = 9 WHERE id %% 500 = 0", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 333 = 0", r.db);
    static const char *const cols[] = {"id", "v", "n", "a1", "a2", NULL};
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n, a1, a2", "a1 and a2 for every row");
    rc_caught_up(m, &r);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n, a1, a2", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

static void key_change(bool eos)
{
    rc_run r;
    char extra[400];
    rc_setup(&r, eos ? "e2erckeos" : "e2erck", NULL);
    snprintf(extra, sizeof extra, "snapshot.chunk.size=25\nddl.alter.policy=resnapshot\nkey.columns.%s.k=n\n%s", r.db,
             eos ? "exactly_once=true\n" : "");
    FILE *f = fopen(r.cfg, "a");
    cr_assert_not_null(f);
    fputs(extra, f);
    fclose(f);
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.k (id INT NOT NULL, v VARCHAR(20), n INT NOT NULL)", r.db);
    e2e_sql(m, "INSERT INTO %s.k SELECT seq, CONCAT('v', seq), 1000 + seq FROM %s.seq_1_to_90", r.db, r.db);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    rc_wait_topic_equal(m, &r, "k", cols, "id, v, n", "keyed by key.columns (n)");

    /* a primary key: every row gets the key {"id":...}; the {"n":...} records go */
    e2e_sql(m, "ALTER TABLE %s.k ADD PRIMARY KEY (id)", r.db);
    e2e_sql(m, "UPDATE %s.k SET v = 'after-pk' WHERE id IN (3, 40)", r.db);
    e2e_sql(m, "DELETE FROM %s.k WHERE id IN (5, 77)", r.db);
    rc_wait_topic_equal(m, &r, "k", cols, "id, v, n", "after ADD PRIMARY KEY");
    cr_assert_geq(st_log_count(&r, "reconcile after incremental snapshot"), 1, "no reconcile step; see %s", r.log);

    /* and without it again: keyed by key.columns once more; the {"id":...} records go */
    e2e_sql(m, "ALTER TABLE %s.k DROP PRIMARY KEY", r.db);
    e2e_sql(m, "INSERT INTO %s.k VALUES (200, 'new', 1200)", r.db);
    e2e_sql(m, "UPDATE %s.k SET v = 'after-drop' WHERE id = 41", r.db);
    rc_wait_topic_equal(m, &r, "k", cols, "id, v, n", "after DROP PRIMARY KEY");
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "ERROR"), 0, "the run logged an ERROR; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "k", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, key_change, .timeout = 400, .fini = e2e_kill_children)
{
    key_change(false);
}

Test(e2e_reconcile, key_change_exactly_once, .timeout = 400, .fini = e2e_kill_children)
{
    key_change(true);
}

/* ------------------------------------------------------------ topics that disappear */

/* Delete topic (Admin API), and wait until the broker says it is gone. */
static void rc_delete_topic(const char *topic)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "DeleteTopics %s: no answer in 30 s", topic);
    const rd_kafka_DeleteTopics_result_t *res = rd_kafka_event_DeleteTopics_result(ev);
    cr_assert_not_null(res, "DeleteTopics %s: %s", topic, rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_DeleteTopics_result_topics(res, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_topic_result_error(tr[0]), RD_KAFKA_RESP_ERR_NO_ERROR, "DeleteTopics %s: %s", topic,
                 rd_kafka_topic_result_error_string(tr[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_DeleteTopic_destroy(dt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

/* The run refuses: exits 1 by itself, says which topic is gone, and leaves it gone. */
static void rc_refused(rc_run *r, const char *topic)
{
    static int nth;
    char log[sizeof r->log], saved[sizeof r->log];
    snprintf(saved, sizeof saved, "%s", r->log);
    snprintf(log, sizeof log, "%.250s/refused%d.log", r->dir, ++nth);
    snprintf(r->log, sizeof r->log, "%s", log);
    rc_start(r, NULL);
    int rc = e2e_wait(r->pid, 120000);
    cr_assert_eq(rc, 1, "tributary run with a deleted topic: status %d, not 1; see %s", rc, log);
    char want[400];
    snprintf(want, sizeof want, "topic %s of table", topic);
    cr_expect_eq(st_log_count(r, want), 1, "the refusal does not name %s; see %s", topic, log);
    cr_expect_geq(st_log_count(r, "topic.missing.policy=resnapshot"), 1, "no fix named; see %s", log);
    cr_expect(!st_topic_exists(topic), "the refused run made %s again", topic);
    snprintf(r->log, sizeof r->log, "%s", saved);
}

Test(e2e_reconcile, topic_gone, .timeout = 400, .fini = e2e_kill_children)
{
    rc_run r;
    rc_setup(&r, "e2ercgone", "snapshot.chunk.size=40\n");
    static const char *const cols[] = {"id", "v", "n", NULL};
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    rc_table(m, r.db, "t", 150);
    rc_table(m, r.db, "keep", 30);
    rc_start(&r, NULL);
    rc_caught_up(m, &r);
    st_stop(&r);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t", r.db, r.db);
    rc_delete_topic(topic);
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 4 = 0", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (500, 'down', 5)", r.db);
    e2e_sql(m, "UPDATE %s.keep SET v = 'down' WHERE id = 3", r.db);
    rc_refused(&r, topic);
    rc_refused(&r, topic); /* and again: nothing was made the first time */

    const char *more[] = {"--set", "topic.missing.policy=resnapshot", NULL};
    rc_start(&r, more);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!st_topic_exists(topic)) {
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "%s not made again in 60 s; see %s", topic, r.log);
        usleep(100000);
    }
    rc_wait_topic_equal(m, &r, "t", cols, "id, v, n", "the topic made again");
    e2e_sql(m, "UPDATE %s.t SET v = 'after' WHERE id = 1", r.db); /* streaming goes on into it */
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "was gone (deleted while the table is captured)"), 1, "no WARN; see %s", r.log);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t", cols, "id, v, n", true);
    rc_assert_equal(&r, m, "keep", cols, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* ------------------------------------------------------------ SQLite gap */

static sqlite3 *rc_app; /* the application's connection */

static void rc_sl(const char *path, const char *sql)
{
    if (!rc_app) {
        cr_assert_eq(sqlite3_open(path, &rc_app), SQLITE_OK, "%s", path);
        sqlite3_busy_timeout(rc_app, 10000);
    }
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(rc_app, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
}

static void rc_sl_fini(void)
{
    e2e_kill_children();
    sqlite3_close(rc_app);
    rc_app = NULL;
}

/* Until the topic of table t holds exactly want ("id|v\n" lines). */
static void rc_sl_wait_topic(const rc_run *r, const char *t, const char *want)
{
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, r->db, t);
    static const char *const cols[] = {"id", "v", NULL};
    long long deadline = tb_itest_now_ms() + 90000;
    for (;;) {
        tb_buf top;
        tb_buf_init(&top, 0);
        if (st_topic_exists(topic))
            st_topic_table(topic, cols, &top);
        bool same = top.len > 0 && strcmp(tb_buf_cstr(&top), want) == 0;
        tb_buf_free(&top);
        if (same)
            return;
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        cr_assert(tb_itest_now_ms() < deadline, "topic %s did not reach the expected rows; see %s", topic, r->log);
        usleep(300000);
    }
}

/* Rows from..from+29 written and delivered (with exactly_once: in an open
 * Kafka transaction, which a consumer never sees), then kill -9. */
static void late_rows(rc_run *r, const char *path, int from, tb_buf *want, bool eos)
{
    char q[300];
    snprintf(q, sizeof q,
             "WITH RECURSIVE s(i) AS (SELECT %d UNION ALL SELECT i+1 FROM s WHERE i<%d) "
             "INSERT INTO t SELECT i, 'late' || i FROM s;",
             from, from + 29);
    rc_sl(path, q);
    if (!eos) {
        for (int i = from; i < from + 30; i++)
            tb_buf_printf(want, "%d|late%d\n", i, i);
        rc_sl_wait_topic(r, "t", tb_buf_cstr(want));
    } else
        usleep(500000);
    kill(r->pid, SIGKILL);
    cr_assert_eq(e2e_wait(r->pid, 10000), -1);
}

/* Rows delivered after the committed position (a long commit interval),
 * kill -9, then while the connector is down the application deletes them
 * and the WAL is reset (checkpointed and truncated, then written again): the
 * restart's gap transaction (a net diff from the committed position) does
 * not see them; its reconcile step deletes them. */
static void sqlite_gap(bool eos)
{
    rc_run r;
    char extra[2400], path[400];
    rc_setup(&r, eos ? "e2ercgape" : "e2ercgap", NULL);
    snprintf(path, sizeof path, "%s/src.db", r.dir);
    snprintf(extra, sizeof extra,
             "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=%s\n"
             "source.sqlite.shadow.path=%s/shadow.db\nsource.sqlite.poll.ms=20\ntopic.prefix=%s\n"
             "kafka.bootstrap.servers=%s\noffsets.storage=kafka\noffsets.commit.interval.ms=%d\n"
             "status.file=%s\ncache.path=%s\nsnapshot.mode=initial\nheartbeat.interval.ms=100\n"
             "topic.partitions=3\nha.enabled=false\n%s",
             r.db, path, r.db, r.dir, r.db, tb_itest_env("TRIBUTARY_TEST_KAFKA"),
             eos ? 300 : 600000, /* exactly_once: a consumer sees committed transactions only */
             r.status, r.cache, eos ? "exactly_once=true\n" : "");
    FILE *f = fopen(r.cfg, "w");
    cr_assert_not_null(f);
    fputs(extra, f);
    fclose(f);
    rc_sl(path, "PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<20) "
                "INSERT INTO t SELECT i, 'v' || i FROM s;");
    rc_start(&r, NULL);
    tb_buf want;
    tb_buf_init(&want, 0);
    for (int i = 1; i <= 20; i++)
        tb_buf_printf(&want, "%d|v%d\n", i, i);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    /* 1. a crash before the first committed position: rows delivered (not committed:
     * offsets.commit.interval.ms is long), kill -9, the rows deleted; the restart
     * snapshots again and its reconcile step deletes them */
    late_rows(&r, path, 100, &want, eos);
    rc_sl(path, "DELETE FROM t WHERE id >= 100");
    rc_start(&r, NULL);
    tb_buf_reset(&want);
    for (int i = 1; i <= 20; i++)
        tb_buf_printf(&want, "%d|v%d\n", i, i);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    if (!eos)
        cr_expect_geq(st_log_count(&r, "reconcile after snapshot: 30 key(s)"), 1, "see %s", r.log);
    st_stop(&r); /* commits the position */
    /* 2. a gap: rows delivered after the committed position, kill -9, then while it
     * is down the rows go, the WAL is reset, the application writes on */
    rc_start(&r, NULL);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    late_rows(&r, path, 200, &want, eos);
    rc_sl(path, "DELETE FROM t WHERE id >= 100; PRAGMA wal_checkpoint(TRUNCATE);");
    rc_sl(path, "INSERT INTO t VALUES (21, 'v21'); DELETE FROM t WHERE id = 1;");
    rc_start(&r, NULL);
    tb_buf_reset(&want);
    for (int i = 2; i <= 21; i++)
        tb_buf_printf(&want, "%d|v%d\n", i, i);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    cr_expect_geq(st_log_count(&r, "net-diff gap"), 1, "no gap was taken; see %s", r.log);
    cr_expect_geq(st_log_count(&r, eos ? "reconcile after gap" : "reconcile after gap: 30 key(s)"), 1,
                  "no reconcile after the gap; see %s", r.log);
    st_stop(&r);
    rc_cache_build(&r);
    tb_buf cache;
    tb_buf_init(&cache, 0);
    char ctable[200];
    snprintf(ctable, sizeof ctable, "%s.t", r.db);
    st_cache_rows(r.cache, ctable, "id, v", &cache);
    tb_buf src;
    tb_buf_init(&src, 0);
    st_cache_rows(path, "t", "id, v", &src); /* the SQLite source, by query */
    cr_expect_str_eq(tb_buf_cstr(&src), tb_buf_cstr(&want));
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "the cache differs from the source");
    tb_buf_free(&cache);
    tb_buf_free(&src);
    tb_buf_free(&want);
    e2e_rmtree(r.dir);
}

Test(e2e_reconcile, sqlite_gap, .timeout = 300, .fini = rc_sl_fini)
{
    sqlite_gap(false);
}

Test(e2e_reconcile, sqlite_gap_exactly_once, .timeout = 300, .fini = rc_sl_fini)
{
    sqlite_gap(true);
}

Test(e2e_reconcile, sqlite_topic_gone, .timeout = 300, .fini = rc_sl_fini)
{
    rc_run r;
    char extra[2400], path[400];
    rc_setup(&r, "e2ercsgone", NULL);
    snprintf(path, sizeof path, "%s/src.db", r.dir);
    snprintf(extra, sizeof extra,
             "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=%s\n"
             "source.sqlite.shadow.path=%s/shadow.db\nsource.sqlite.poll.ms=20\ntopic.prefix=%s\n"
             "kafka.bootstrap.servers=%s\noffsets.storage=kafka\noffsets.commit.interval.ms=100\n"
             "status.file=%s\ncache.path=%s\nsnapshot.mode=initial\nheartbeat.interval.ms=100\n"
             "topic.partitions=3\nha.enabled=false\n",
             r.db, path, r.db, r.dir, r.db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), r.status, r.cache);
    FILE *f = fopen(r.cfg, "w");
    cr_assert_not_null(f);
    fputs(extra, f);
    fclose(f);
    rc_sl(path, "PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"
                "CREATE TABLE keep (id INTEGER PRIMARY KEY, v TEXT);"
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<20) "
                "INSERT INTO t SELECT i, 'v' || i FROM s;"
                "INSERT INTO keep VALUES (1, 'k1'), (2, 'k2');");
    rc_start(&r, NULL);
    tb_buf want;
    tb_buf_init(&want, 0);
    for (int i = 1; i <= 20; i++)
        tb_buf_printf(&want, "%d|v%d\n", i, i);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    rc_sl_wait_topic(&r, "keep", "1|k1\n2|k2\n");
    st_stop(&r);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t", r.db, r.db);
    rc_delete_topic(topic);
    rc_sl(path, "DELETE FROM t WHERE id > 10; DELETE FROM keep WHERE id = 2;");
    rc_refused(&r, topic);
    /* the fix the refusal names: forget the stored position */
    char olog[400];
    snprintf(olog, sizeof olog, "%s/offsets.log", r.dir);
    const char *oargs[] = {"offsets", "set", "--config", r.cfg, "--position", "none", NULL};
    int rc = e2e_wait(e2e_spawn(oargs, olog), 60000);
    cr_assert_eq(rc, 0, "tributary offsets set --position none failed (%d); see %s", rc, olog);
    rc_start(&r, NULL);
    tb_buf_reset(&want);
    for (int i = 1; i <= 10; i++)
        tb_buf_printf(&want, "%d|v%d\n", i, i);
    rc_sl_wait_topic(&r, "t", tb_buf_cstr(&want));
    rc_sl_wait_topic(&r, "keep", "1|k1\n"); /* the reconcile step of the snapshot deletes 2 */
    st_stop(&r);
    rc_cache_build(&r);
    static const char *const tables[] = {"t", "keep"};
    for (int i = 0; i < 2; i++) {
        tb_buf cache, src;
        tb_buf_init(&cache, 0);
        tb_buf_init(&src, 0);
        char ctable[200];
        snprintf(ctable, sizeof ctable, "%s.%s", r.db, tables[i]);
        st_cache_rows(r.cache, ctable, "id, v", &cache);
        st_cache_rows(path, tables[i], "id, v", &src); /* the SQLite source, by query */
        cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "%s: the cache differs from the source", tables[i]);
        tb_buf_free(&cache);
        tb_buf_free(&src);
    }
    tb_buf_free(&want);
    e2e_rmtree(r.dir);
}
