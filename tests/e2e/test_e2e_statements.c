/*
 * Statements in the binlog that change rows without row events
 * (app/run_stmt.c, docs/statements.md), through the built tributary against
 * the testenv MariaDB.
 *
 * dml_as_statement: a session with binlog_format=STATEMENT writes to a
 * table that is not captured (the run goes on past it) and then inserts
 * into a captured one: the run stops with exit 1 and an error naming the
 * table, the statement's GTID and binlog position and its text; the
 * committed position stays before it, and a restart stops there again.
 *
 * partial_row_image: a writer session with binlog_row_image=MINIMAL updates a
 * captured table: the run stops the same way (exit 1, table, GTID, the
 * missing columns); with source.row.image.policy=warn the row goes out as
 * logged, its absent columns left out.
 *
 * truncate: rows snapshotted, inserted, updated and deleted around two
 * TRUNCATE TABLE statements (ddl.truncate.policy=tombstone), the second one
 * followed by kill -9 of the connector as soon as it has handled it, more
 * writes and a restart. Then the topic read as a KTable (latest record per
 * key, tombstones removing keys; values read with Jansson) and the cache
 * rebuilt from the topics (`tributary cache --until-caught-up`) both equal
 * the source, cell by cell; a table beside it that was not truncated is
 * untouched.
 *
 * sqlite_statements: the same for a SQLite source (WAL capture): DROP
 * TABLE, ALTER TABLE RENAME, ADD COLUMN ... DEFAULT, RENAME COLUMN and DROP
 * COLUMN, each followed by kill -9 and a restart (docs/statements.md,
 * SQLite).
 */
#include "e2e_tables.h"

/* The settings of a sink=stdout run of database db (the tables whose name matches include after
 * "db."), its offsets in a file, to cfgp. */
static void stdout_cfg(const char *cfgp, const char *db, const char *include, const char *offs, const char *status,
                       unsigned server_id, const char *snapshot_mode)
{
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=^%s[.]%s\ntopic.prefix=%s\nsink=stdout\n"
            "offsets.storage=file\noffsets.file=%s\noffsets.commit.interval.ms=100\nstatus.file=%s\n"
            "snapshot.mode=%s\nheartbeat.interval.ms=100\n",
            db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), server_id, db, include, db,
            offs, status, snapshot_mode);
    fclose(f);
}

/* After a run stopped at a change it cannot send: the committed position is still `before`,
 * and a restart (output to log) stops again, exit 1, saying want: nothing is skipped silently. */
static void stops_there_again(const char *status, const char *before, const char *const *args, const char *log,
                              const char *want)
{
    char got[256] = "";
    cr_assert(e2e_status_gtid(status, got, sizeof got));
    cr_expect_str_eq(got, before, "committed %s, want %s (before the change)", got, before);
    int rc = e2e_wait(e2e_spawn(args, log), 30000);
    cr_assert_eq(rc, 1, "restarted tributary run should stop again (got %d); see %s", rc, log);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(log, &b));
    cr_expect(strstr(tb_buf_cstr(&b), want), "restart did not stop at %s:\n%s", want, tb_buf_cstr(&b));
    e2e_assert_clean_log(log);
    tb_buf_free(&b);
}

/* The run again with line added to its configuration (output to out): caught up, sql run (NULL:
 * none) and caught up again, stopped by SIGTERM (exit 0); its output in b. */
static void run_again_with(MYSQL *m, const char *cfgp, const char *line, const char *const *args, const char *status,
                           const char *out, const char *sql, tb_buf *b)
{
    FILE *f = fopen(cfgp, "a");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", line);
    fclose(f);
    pid_t pid = e2e_spawn(args, out);
    wait_caught_up(m, status, pid, out);
    if (sql) {
        e2e_sql(m, "%s", sql);
        wait_caught_up(m, status, pid, out);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", out);
    e2e_assert_clean_log(out);
    tb_buf_reset(b);
    cr_assert(e2e_slurp(out, b));
}

Test(e2e_statements, dml_as_statement, .timeout = 120, .fini = e2e_kill_children)
{
    st_run p;
    st_paths(&p, "e2estmt");
    const char *db = p.db, *dir = p.dir, *cfgp = p.cfg, *log = p.log, *status = p.status;
    char offs[320], out[320];
    snprintf(offs, sizeof offs, "%s/offsets", dir);
    snprintf(out, sizeof out, "%s/events.jsonl", dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.cap (id INT PRIMARY KEY, v VARCHAR(20))", db);
    e2e_sql(m, "CREATE TABLE %s.other (id INT PRIMARY KEY, v VARCHAR(20))", db);
    stdout_cfg(cfgp, db, "cap$", offs, status, 9000 + (unsigned)getpid() % 1000, "never");
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = e2e_spawn(args, out);
    wait_caught_up(m, status, pid, out);

    e2e_sql(m, "INSERT INTO %s.cap VALUES (1, 'row')", db);
    e2e_sql(m, "SET SESSION binlog_format=STATEMENT");
    e2e_sql(m, "INSERT INTO %s.other VALUES (1, 'statement')", db); /* not captured: fine */
    e2e_sql(m, "USE %s", db);
    e2e_sql(m, "UPDATE other SET v = 'again' WHERE id = 1");
    wait_caught_up(m, status, pid, out);
    char before[256];
    e2e_server_gtid(m, before, sizeof before);

    e2e_sql(m, "INSERT /* by a STATEMENT session */ INTO cap VALUES (2, 'lost?')");
    char gtid[256]; /* the statement's own GTID: the server's list holds every domain */
    e2e_last_gtid(m, gtid, sizeof gtid);
    int rc = e2e_wait(pid, 30000);
    cr_assert_eq(rc, 1, "tributary run should stop with exit 1 (got %d); see %s", rc, out);
    e2e_assert_clean_log(out);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(out, &b));
    const char *s = tb_buf_cstr(&b);
    const char *e = strstr(s, "tributary run: ");
    cr_assert_not_null(e, "no error line in %s:\n%s", out, s);
    char want[512];
    snprintf(want, sizeof want, "%s.cap is captured, but this INSERT on it was logged as a statement", db);
    cr_expect(strstr(e, want), "error does not name the table: %s", e);
    snprintf(want, sizeof want, "GTID %s, binlog ", gtid);
    cr_expect(strstr(e, want), "error does not name GTID %s: %s", gtid, e);
    cr_expect(strstr(e, "Statement: 'INSERT /* by a STATEMENT session */ INTO cap VALUES (2, 'lost?')'"),
              "error does not quote the statement: %s", e);
    /* the row change before it was sent, the statements on `other` were not: the
     * event lines (read with Jansson) are the schema record of cap and its one row */
    char schema_topic[300], cap_topic[300];
    snprintf(schema_topic, sizeof schema_topic, "\"%s.schema\"", db);
    snprintf(cap_topic, sizeof cap_topic, "\"%s.%s.cap\"", db, db);
    size_t all = e2e_count_events(s, NULL, NULL), schemas = e2e_count_events(s, JO_PATH("topic"), schema_topic);
    cr_expect_eq(all - schemas, 1, "one row event (cap, id 1) and no other; see %s", out);
    cr_expect_eq(e2e_count_events(s, JO_PATH("topic"), cap_topic), 1, "see %s", out);
    cr_expect_eq(e2e_count_events(s, JO_PATH("value", "after"), "{\"id\":1,\"v\":\"row\"}"), 1,
                 "the row event before is missing; see %s", out);
    snprintf(want, sizeof want, "GTID %s, binlog ", gtid);
    stops_there_again(status, before, args, log, want);
    tb_buf_free(&b);
    e2e_sql(m, "DROP DATABASE %s", db);
    mysql_close(m);
    e2e_rmtree(dir);
}

/* A writer session with binlog_row_image=MINIMAL, the server's setting FULL (what the preflight
 * checks): rows of a table that is not captured pass; an UPDATE of a captured table stops the run
 * (exit 1) naming the table, the GTID, the missing columns and the fix, before anything of it is
 * sent, the committed position before it; a restart stops there again. With
 * source.row.image.policy=warn the same row goes out with the absent columns left out. */
Test(e2e_statements, partial_row_image, .timeout = 120, .fini = e2e_kill_children)
{
    st_run p;
    st_paths(&p, "e2eimg");
    const char *db = p.db, *dir = p.dir, *cfgp = p.cfg, *log = p.log, *status = p.status;
    char offs[320], out[320];
    snprintf(offs, sizeof offs, "%s/offsets", dir);
    snprintf(out, sizeof out, "%s/events.jsonl", dir);
    char warn[320];
    snprintf(warn, sizeof warn, "%s/warn.jsonl", dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.cap (id INT PRIMARY KEY, a INT, b VARCHAR(20))", db);
    e2e_sql(m, "CREATE TABLE %s.other (id INT PRIMARY KEY, a INT, b VARCHAR(20))", db);
    e2e_sql(m, "INSERT INTO %s.cap VALUES (1, 1, 'x'), (2, 2, 'y')", db);
    stdout_cfg(cfgp, db, "cap$", offs, status, 8000 + (unsigned)getpid() % 1000, "initial");
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = e2e_spawn(args, out);
    wait_caught_up(m, status, pid, out);

    e2e_sql(m, "SET SESSION binlog_row_image = MINIMAL");
    e2e_sql(m, "INSERT INTO %s.other VALUES (1, 1, 'x')", db); /* not captured: fine */
    e2e_sql(m, "UPDATE %s.other SET a = 2 WHERE id = 1", db);
    wait_caught_up(m, status, pid, out);
    char before[256];
    e2e_server_gtid(m, before, sizeof before);
    e2e_sql(m, "UPDATE %s.cap SET a = 10 WHERE id = 1", db);
    char gtid[256];
    e2e_last_gtid(m, gtid, sizeof gtid);
    e2e_sql(m, "SET SESSION binlog_row_image = FULL");

    int rc = e2e_wait(pid, 30000);
    cr_assert_eq(rc, 1, "tributary run should stop with exit 1 (got %d); see %s", rc, out);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(out, &b));
    const char *s = tb_buf_cstr(&b);
    const char *e = strstr(s, "tributary run: ");
    cr_assert_not_null(e, "no error line in %s:\n%s", out, s);
    char want[512];
    snprintf(want, sizeof want,
             "%s.cap is captured, but this UPDATE on it was logged with a partial row image (GTID %s, binlog ", db,
             gtid);
    cr_expect(strstr(e, want), "error does not name the table and GTID %s: %s", gtid, e);
    cr_expect(strstr(e, "the before image lacks a, b; the after image lacks id, b"), "missing columns: %s", e);
    cr_expect(strstr(e, "binlog_row_image=FULL globally, and no session override") &&
                  strstr(e, "source.row.image.policy=warn"),
              "error does not give the fixes: %s", e);
    cr_expect_eq(e2e_count_events(s, JO_PATH("value", "after"), "{\"a\":10}"), 0, "a partial row was sent: %s", out);
    stops_there_again(status, before, args, log, want);

    /* source.row.image.policy=warn: sent as logged, the absent columns left out */
    run_again_with(m, cfgp, "source.row.image.policy=warn", args, status, warn, NULL, &b);
    cr_expect_eq(e2e_count_events(tb_buf_cstr(&b), JO_PATH("value", "after"), "{\"a\":10}"), 1, "see %s", warn);
    cr_expect_eq(e2e_count_events(tb_buf_cstr(&b), JO_PATH("value", "before"), "{\"id\":1}"), 1, "see %s", warn);
    tb_buf_free(&b);
    e2e_sql(m, "DROP DATABASE %s", db);
    mysql_close(m);
    e2e_rmtree(dir);
}

/* source.fk.cascade.policy=fail: a DELETE of a parent row (the parent not captured) whose foreign
 * key deletes rows of a captured child inside the storage engine stops the run (exit 1) before it,
 * naming the parent, the child, the constraint, the GTID and the fixes; a restart stops there
 * again. An INSERT into the parent and a DELETE of a table without such a key go by. With warn,
 * the rows go on with one WARN naming the child. (resnapshot, the default: e2e_reconcile
 * fk_cascades.) */
Test(e2e_statements, fk_cascade_fail_and_warn, .timeout = 120, .fini = e2e_kill_children)
{
    st_run p;
    st_paths(&p, "e2efk");
    const char *db = p.db, *dir = p.dir, *cfgp = p.cfg, *log = p.log, *status = p.status;
    char offs[320], out[320], warn[320];
    snprintf(offs, sizeof offs, "%s/offsets", dir);
    snprintf(out, sizeof out, "%s/events.jsonl", dir);
    snprintf(warn, sizeof warn, "%s/warn.jsonl", dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.parent (id INT PRIMARY KEY)", db);
    e2e_sql(m, "CREATE TABLE %s.cap (id INT PRIMARY KEY, pid INT, CONSTRAINT cap_parent FOREIGN KEY (pid) "
               "REFERENCES %s.parent (id) ON DELETE CASCADE)", db, db);
    e2e_sql(m, "CREATE TABLE %s.plain (id INT PRIMARY KEY)", db);
    e2e_sql(m, "INSERT INTO %s.parent VALUES (1), (2)", db);
    e2e_sql(m, "INSERT INTO %s.cap VALUES (10, 1), (20, 2)", db);
    e2e_sql(m, "INSERT INTO %s.plain VALUES (1), (2)", db);
    stdout_cfg(cfgp, db, "(cap|plain)$", offs, status, 8000 + (unsigned)getpid() % 1000, "initial");
    FILE *f = fopen(cfgp, "a");
    cr_assert_not_null(f);
    fputs("source.fk.cascade.policy=fail\n", f);
    fclose(f);
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = e2e_spawn(args, out);
    wait_caught_up(m, status, pid, out);
    e2e_sql(m, "INSERT INTO %s.parent VALUES (3)", db);
    e2e_sql(m, "DELETE FROM %s.plain WHERE id = 1", db);
    wait_caught_up(m, status, pid, out);
    char before[256], gtid[256];
    e2e_server_gtid(m, before, sizeof before);
    e2e_sql(m, "DELETE FROM %s.parent WHERE id = 1", db);
    e2e_last_gtid(m, gtid, sizeof gtid);
    int rc = e2e_wait(pid, 30000);
    cr_assert_eq(rc, 1, "tributary run should stop with exit 1 (got %d); see %s", rc, out);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(out, &b));
    const char *e = strstr(tb_buf_cstr(&b), "tributary run: ");
    cr_assert_not_null(e, "no error line in %s", out);
    char want[512];
    snprintf(want, sizeof want, "%s.parent: this DELETE (GTID %s, binlog ", db, gtid);
    cr_expect(strstr(e, want), "error does not name the parent and the GTID %s: %s", gtid, e);
    char child[300];
    snprintf(child, sizeof child, "the captured table %s.cap through its foreign key cap_parent (ON DELETE CASCADE)",
             db);
    cr_expect(strstr(e, child), "error does not name the child and the constraint: %s", e);
    cr_expect(strstr(e, "source.fk.cascade.policy=resnapshot") && strstr(e, "source.fk.cascade.policy=warn"),
              "error does not give the fixes: %s", e);
    stops_there_again(status, before, args, log, want);

    char again[300];
    snprintf(again, sizeof again, "DELETE FROM %s.parent WHERE id = 2", db); /* warned about once a run */
    run_again_with(m, cfgp, "source.fk.cascade.policy=warn", args, status, warn, again, &b);
    snprintf(want, sizeof want, "WARN  run: %s.cap: rows of it changed by its foreign key cap_parent", db);
    cr_expect_eq(e2e_count_text(tb_buf_cstr(&b), want), 1, "want one \"%s\" in %s", want, warn);
    tb_buf_free(&b);
    e2e_sql(m, "DROP DATABASE %s", db);
    mysql_close(m);
    e2e_rmtree(dir);
}

Test(e2e_statements, truncate, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2etrunc", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)", r.db);
    e2e_sql(m, "CREATE TABLE %s.keep (id INT PRIMARY KEY, v VARCHAR(20), n INT)", r.db);
    for (int i = 1; i <= 20; i++) {
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'snap%d', %d)", r.db, i, i, i * 10);
        e2e_sql(m, "INSERT INTO %s.keep VALUES (%d, 'keep%d', %d)", r.db, i, i, i);
    }
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);

    /* streamed changes, then the first TRUNCATE, then more */
    for (int i = 21; i <= 30; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'ins%d', NULL)", r.db, i, i);
    e2e_sql(m, "UPDATE %s.t SET v = 'upd' WHERE id %% 3 = 0", r.db);
    e2e_sql(m, "DELETE FROM %s.t WHERE id %% 7 = 0", r.db);
    e2e_sql(m, "UPDATE %s.keep SET n = n + 1 WHERE id < 5", r.db);
    e2e_sql(m, "TRUNCATE TABLE %s.t", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (100, 'after', 1), (101, 'after', 2)", r.db);
    e2e_sql(m, "UPDATE %s.t SET n = 5 WHERE id = 100", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    cr_assert_eq(st_log_count(&r, "TRUNCATE TABLE at"), 1, "no TRUNCATE line in %s", r.log);
    /* 20 snapshotted + 10 inserted - 4 deleted (7, 14, 21, 28) */
    cr_assert_eq(st_log_count(&r, ": 26 keys of its topic deleted"), 1, "26 keys should be deleted; see %s", r.log);

    /* the second TRUNCATE: kill -9 as soon as the connector handled it */
    for (int i = 200; i <= 210; i++)
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'two', %d)", r.db, i, i);
    e2e_sql(m, "USE %s", r.db);
    e2e_sql(m, "TRUNCATE `t`");
    long long deadline = tb_itest_now_ms() + 30000;
    while (st_log_count(&r, "TRUNCATE TABLE at") < 2) {
        cr_assert(tb_itest_now_ms() < deadline, "second TRUNCATE not handled in 30 s; see %s", r.log);
        usleep(5000);
    }
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    e2e_sql(m, "INSERT INTO %s.t VALUES (300, 'restart', 3)", r.db);
    e2e_sql(m, "DELETE FROM %s.keep WHERE id = 2", r.db);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);

    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_truncates = 0;
    st_assert_equal(&r, m, "t", cols, "id, v, n");
    /* an "op":"t" record per TRUNCATE (the second one again when the restart read it again) */
    cr_expect(st_truncates >= 2, "%d truncate records in the topic, want 2 or more", st_truncates);
    st_truncates = 0;
    st_assert_equal(&r, m, "keep", cols, "id, v, n");
    cr_expect_eq(st_truncates, 0);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* TRUNCATE under value.encoding=debezium: the deletes that empty the topic carry the topic's own key
 * bytes and a before image holding the key as the encoding writes it (the reader checks both), so
 * the topic read as a table and the cache hold none of the truncated rows (an integer key, and a
 * composite key with a text member). */
static void truncate_encoded(const char *tag, const char *extra)
{
    st_run r;
    st_setup(&r, tag, extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "t", "snap", 12);
    e2e_sql(m, "CREATE TABLE %s.c (id INT, b VARCHAR(8), v INT, PRIMARY KEY (id, b))", r.db);
    for (int i = 1; i <= 6; i++)
        e2e_sql(m, "INSERT INTO %s.c VALUES (%d, 'k%d', %d)", r.db, i, i, i);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.t VALUES (13, 'ins', 13)", r.db);
    e2e_sql(m, "TRUNCATE TABLE %s.t", r.db);
    e2e_sql(m, "TRUNCATE TABLE %s.c", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (100, 'after', 1)", r.db);
    e2e_sql(m, "INSERT INTO %s.c VALUES (7, 'k7', 7)", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_equal(&r, m, "t", cols, "id, v, n");
    const char *ccols[] = {"id", "b", "v", NULL};
    st_assert_equal(&r, m, "c", ccols, "id, b, v");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_statements, truncate_debezium_encoding, .timeout = 240, .fini = e2e_kill_children)
{
    truncate_encoded("e2etrdbz", "value.encoding=debezium\nkey.schemas=false\n");
}

/* DROP TABLE with ddl.drop.policy=tombstone: the topic holds no key of the
 * dropped table (read as a KTable), the cache table is empty, and a table
 * dropped with nothing seen of it since the start is left with a WARN. */
Test(e2e_statements, drop_tombstone, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2edrop", "ddl.drop.policy=tombstone\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "gone", "g", 10);
    st_table(m, r.db, "keep", "k", 10);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.gone VALUES (11, 'g11', 11)", r.db);
    e2e_sql(m, "DELETE FROM %s.gone WHERE id = 1", r.db);
    e2e_sql(m, "DROP TABLE %s.gone", r.db);
    e2e_sql(m, "UPDATE %s.keep SET n = 0 WHERE id = 3", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    cr_assert_eq(st_log_count(&r, ": 10 keys of its topic deleted"), 1, "10 keys should be deleted; see %s", r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    /* the dropped table's source is empty: compare with an empty table of the same shape */
    e2e_sql(m, "CREATE TABLE %s.gone (id INT PRIMARY KEY, v VARCHAR(20), n INT)", r.db);
    st_assert_equal(&r, m, "gone", cols, "id, v, n");
    st_assert_equal(&r, m, "keep", cols, "id, v, n");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* DROP DATABASE with ddl.drop.policy=tombstone: each captured table of it is
 * dropped as by DROP TABLE (its topic holds no key, its schema record says
 * dropped, the cache has no row of it); a database with no captured table
 * dropped beside it is passed over without a WARN. */
Test(e2e_statements, drop_database, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2edropdb", "ddl.drop.policy=tombstone\n");
    MYSQL *m = e2e_mysql();
    char other[128];
    snprintf(other, sizeof other, "%s_other", r.db);
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE DATABASE %s", other);
    st_table(m, r.db, "a", "a", 10);
    st_table(m, r.db, "b", "b", 5);
    st_table(m, other, "c", "c", 3);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.a VALUES (11, 'streamed', 11)", r.db);
    e2e_sql(m, "DROP DATABASE %s", other);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, other), 0, "the database with no captured table is named in %s", r.log);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_gone(&r, "a", cols, false);
    st_assert_gone(&r, "b", cols, false);
    st_expect_dropped(&r, "a");
    st_expect_dropped(&r, "b");
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* ALTER TABLE ... ADD COLUMN ... DEFAULT with ddl.alter.policy=resnapshot
 * (the default): the rows written before it reach the topic and the cache
 * with the new column's default, through an incremental snapshot; an ALTER
 * that adds an index signals nothing. */
Test(e2e_statements, alter_add_column_default, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2ealter", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.u (id INT PRIMARY KEY, v VARCHAR(20))", r.db);
    for (int i = 1; i <= 10; i++)
        e2e_sql(m, "INSERT INTO %s.u VALUES (%d, 'v%d')", r.db, i, i);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.u VALUES (11, 'streamed')", r.db);
    e2e_sql(m, "ALTER TABLE %s.u ADD INDEX iv (v)", r.db);
    e2e_sql(m, "ALTER TABLE %s.u ADD COLUMN w VARCHAR(10) DEFAULT 'x'", r.db);
    e2e_sql(m, "INSERT INTO %s.u VALUES (12, 'after', 'y')", r.db);
    e2e_sql(m, "UPDATE %s.u SET v = 'upd' WHERE id = 2", r.db);
    long long deadline = tb_itest_now_ms() + 60000;
    while (st_log_count(&r, "incremental snapshot of") < 2) { /* signalled, then done */
        cr_assert(tb_itest_now_ms() < deadline, "no incremental snapshot done in 60 s; see %s", r.log);
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        usleep(50000);
    }
    st_wait_log(&r, " done: ", 60000, "incremental snapshot not done");
    wait_caught_up(m, r.status, r.pid, r.log);
    cr_assert_eq(st_log_count(&r, "incremental snapshot of it signalled, to send"), 1, "one ALTER should signal; see %s", r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "w", NULL};
    st_assert_equal(&r, m, "u", cols, "id, v, w");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* RENAME TABLE a TO b (and ALTER TABLE b RENAME TO c): the old names'
 * topics hold no key (read as KTables) and their cache tables are empty;
 * the last name's topic and cache table equal the source. */
Test(e2e_statements, rename, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2eren", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "a", "a", 10);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.a VALUES (11, 'streamed', 11)", r.db);
    e2e_sql(m, "RENAME TABLE %s.a TO %s.b", r.db, r.db);
    e2e_sql(m, "INSERT INTO %s.b VALUES (12, 'in b', 12)", r.db);
    e2e_sql(m, "UPDATE %s.b SET n = 0 WHERE id = 1", r.db);
    e2e_sql(m, "ALTER TABLE %s.b RENAME TO %s.c", r.db, r.db);
    e2e_sql(m, "DELETE FROM %s.c WHERE id = 2", r.db);
    long long deadline = tb_itest_now_ms() + 90000;
    while (st_log_count(&r, " done: ") < 2) { /* the snapshots of b and c */
        cr_assert(tb_itest_now_ms() < deadline, "incremental snapshots not done in 90 s; see %s", r.log);
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        usleep(50000);
    }
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    /* the old names: the cache renamed their table (renamed_from), or emptied it */
    st_assert_gone(&r, "a", cols, false);
    st_assert_gone(&r, "b", cols, false);
    st_assert_equal(&r, m, "c", cols, "id, v, n");
    st_expect_dropped(&r, "a");
    st_expect_dropped(&r, "b");
    st_expect_renamed(&r, "c", "b");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* kill -9 of the connector just after it handled an ALTER TABLE ... ADD
 * COLUMN ... DEFAULT (resnapshot signalled), more writes, a restart: the
 * topic as a KTable and the cache equal the source. */
Test(e2e_statements, alter_kill9, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2ealtk", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.u (id INT PRIMARY KEY, v VARCHAR(20))", r.db);
    for (int i = 1; i <= 50; i++)
        e2e_sql(m, "INSERT INTO %s.u VALUES (%d, 'v%d')", r.db, i, i);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "UPDATE %s.u SET v = 'before' WHERE id = 7", r.db);
    e2e_sql(m, "ALTER TABLE %s.u ADD COLUMN w INT NOT NULL DEFAULT 42", r.db);
    st_wait_log(&r, "incremental snapshot of it signalled", 30000, "ALTER not handled");
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    e2e_sql(m, "INSERT INTO %s.u VALUES (51, 'after', 1)", r.db);
    e2e_sql(m, "UPDATE %s.u SET v = 'after' WHERE id = 8", r.db);
    st_start(&r);
    char done[160];
    snprintf(done, sizeof done, "incremental snapshot of %s.u done: ", r.db);
    st_wait_log(&r, done, 90000, "incremental snapshot not done");
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "w", NULL};
    st_assert_equal(&r, m, "u", cols, "id, v, w");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* ALTER TABLE ... ADD COLUMN ... DEFAULT with ddl.alter.policy=warn (no
 * resnapshot): the schema record carries the defaults, and the cache gives
 * the rows written before the ALTER the literal defaults, as the source did,
 * cell by cell; an expression default (CURRENT_TIMESTAMP) is not applied. */
Test(e2e_statements, alter_default_cache, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2edflt", "ddl.alter.policy=warn\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m, "CREATE TABLE %s.u (id INT PRIMARY KEY, v VARCHAR(20))", r.db);
    for (int i = 1; i <= 10; i++)
        e2e_sql(m, "INSERT INTO %s.u VALUES (%d, 'v%d')", r.db, i, i);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.u VALUES (11, 'streamed')", r.db);
    e2e_sql(m, "ALTER TABLE %s.u ADD COLUMN w VARCHAR(10) DEFAULT 'it''s', ADD COLUMN k INT NOT NULL DEFAULT -7, "
               "ADD COLUMN d DECIMAL(6,2) DEFAULT 2.5, ADD COLUMN dt DATETIME DEFAULT '2024-01-31 10:11:12', "
               "ADD COLUMN e ENUM('s','m') DEFAULT 'm', ADD COLUMN st SET('a','b','c') DEFAULT 'a,c', "
               "ADD COLUMN z INT DEFAULT NULL, ADD COLUMN ts DATETIME DEFAULT CURRENT_TIMESTAMP",
           r.db);
    /* a row of the new version: its schema record (with the defaults) is written before it */
    e2e_sql(m, "INSERT INTO %s.u (id, v, w, k) VALUES (12, 'after', 'y', 1)", r.db);
    e2e_sql(m, "UPDATE %s.u SET v = 'upd' WHERE id = 2", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);

    json_t *rec = st_schema_record(&r, "u");
    cr_assert_not_null(rec);
    json_t *cols = json_object_get(rec, "columns");
    cr_assert_eq(json_array_size(cols), 10);
    const char *want[][2] = {{"w", "it's"}, {"k", "-7"}, {"d", "2.50"}, {"dt", "2024-01-31 10:11:12"},
                             {"e", "m"}, {"st", "a,c"}, {"z", NULL}, {"ts", "current_timestamp()"}};
    for (size_t i = 0; i < 8; i++) {
        json_t *c = json_array_get(cols, i + 2);
        cr_assert_str_eq(json_string_value(json_object_get(c, "name")), want[i][0]);
        if (want[i][1])
            cr_expect_str_eq(json_string_value(json_object_get(c, "default")), want[i][1], "column %s", want[i][0]);
        else
            cr_expect(json_is_null(json_object_get(c, "default")), "column %s", want[i][0]);
        cr_expect_eq(json_is_true(json_object_get(c, "default_expr")), i == 7, "column %s", want[i][0]);
    }
    json_decref(rec);

    st_cache_build(&r);
    const char *idv[] = {"id", "v", NULL};
    st_assert_equal(&r, m, "u", idv, "id, v");
    /* the cache holds temporals and SETs as the topic writes them */
    tb_buf src, cache;
    tb_buf_init(&src, 0);
    tb_buf_init(&cache, 0);
    char ctable[256];
    snprintf(ctable, sizeof ctable, "%s.u", r.db);
    st_source_rows(m, r.db, "u",
                   "id, v, w, k, d, REPLACE(dt, ' ', 'T'), e, CONCAT('[\"', REPLACE(st, ',', '\",\"'), '\"]'), z", &src);
    st_cache_rows(r.cache, ctable, "id, v, w, k, d, dt, e, st, z", &cache);
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "cache differs from the source:\ncache:\n%ssource:\n%s",
                     tb_buf_cstr(&cache), tb_buf_cstr(&src));
    /* the expression default is not applied: rows from before the ALTER hold NULL there */
    tb_buf_reset(&cache);
    st_cache_rows(r.cache, ctable, "id, ts IS NULL", &cache);
    cr_expect(strstr(tb_buf_cstr(&cache), "1|1\n") != NULL, "%s", tb_buf_cstr(&cache));
    tb_buf_free(&src);
    tb_buf_free(&cache);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* kill -9 of the connector just after it handled a DROP TABLE
 * (ddl.drop.policy=tombstone, cache.on.drop=drop), more writes, a restart
 * (which may read the DROP again, without a descriptor of the table: keyed
 * by its topic's keys): the dropped table's topic holds no key, its schema
 * record says dropped, the cache has no such table, and the table beside
 * it equals the source. */
Test(e2e_statements, drop_kill9, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2edrpk", "ddl.drop.policy=tombstone\ncache.on.drop=drop\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "gone", "g", 30);
    st_table(m, r.db, "keep", "k", 30);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.gone VALUES (31, 'g31', 31)", r.db);
    e2e_sql(m, "DELETE FROM %s.gone WHERE id = 1", r.db);
    e2e_sql(m, "UPDATE %s.keep SET n = -1 WHERE id = 5", r.db);
    e2e_sql(m, "DROP TABLE %s.gone", r.db);
    st_wait_log(&r, "keys of its topic deleted", 30000, "DROP not handled");
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    e2e_sql(m, "INSERT INTO %s.keep VALUES (31, 'after', 31)", r.db);
    e2e_sql(m, "DELETE FROM %s.keep WHERE id = 2", r.db);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_gone(&r, "gone", cols, true);
    st_expect_dropped(&r, "gone");
    st_assert_equal(&r, m, "keep", cols, "id, v, n");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* kill -9 of the connector just after it handled a RENAME TABLE, more
 * writes under the new name, a restart: the old name's topic holds no key
 * and its schema record says dropped, the new name's record says where it
 * came from, and the new name's topic (as a KTable) and cache table equal
 * the source. */
Test(e2e_statements, rename_kill9, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2erenk", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "a", "a", 30);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "UPDATE %s.a SET v = 'streamed' WHERE id = 3", r.db);
    e2e_sql(m, "RENAME TABLE %s.a TO %s.b", r.db, r.db);
    st_wait_log(&r, "incremental snapshot of it signalled", 30000, "RENAME not handled");
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    e2e_sql(m, "INSERT INTO %s.b VALUES (31, 'in b', 31)", r.db);
    e2e_sql(m, "UPDATE %s.b SET n = 0 WHERE id = 4", r.db);
    e2e_sql(m, "DELETE FROM %s.b WHERE id = 5", r.db);
    st_start(&r);
    char done[160];
    snprintf(done, sizeof done, "incremental snapshot of %s.b done: ", r.db);
    st_wait_log(&r, done, 90000, "incremental snapshot not done");
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_gone(&r, "a", cols, false);
    st_assert_equal(&r, m, "b", cols, "id, v, n");
    st_expect_dropped(&r, "a");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

static void count_truncate(const char *key, size_t klen, const char *value, size_t vlen, void *opaque)
{
    (void)key;
    (void)klen;
    size_t *n = opaque;
    static const char op_t[] = "\"op\":\"t\"";
    *n += value && memmem(value, vlen, op_t, sizeof op_t - 1) != NULL;
}

/* Statements read again after a restart (the decoder knows no table then) whose tables are
 * gone from the catalog since, dropped or renamed later in the binlog: while the connector was
 * stopped, a TRUNCATE then a RENAME, a TRUNCATE then a DROP, an ALTER then a RENAME. The run
 * streams past each of them: the old names' topics hold no key, the new names' topics and
 * cache tables equal the source; each TRUNCATE is described by the table's latest schema record
 * and writes its "op":"t" record, as it did when the table existed. */
Test(e2e_statements, read_again_after_the_table_is_gone, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2estgone", "ddl.drop.policy=tombstone\ncache.on.drop=drop\n");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "tr", "t", 30);
    st_table(m, r.db, "td", "d", 30);
    st_table(m, r.db, "ta", "a", 30);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    kill(r.pid, SIGTERM);
    cr_assert_eq(e2e_wait(r.pid, 30000), 0, "tributary run did not stop cleanly; see %s", r.log);

    e2e_sql(m, "TRUNCATE TABLE %s.tr", r.db);
    e2e_sql(m, "INSERT INTO %s.tr VALUES (40, 'after', 40), (41, 'after', 41)", r.db);
    e2e_sql(m, "RENAME TABLE %s.tr TO %s.tr2", r.db, r.db);
    e2e_sql(m, "TRUNCATE TABLE %s.td", r.db);
    e2e_sql(m, "DROP TABLE %s.td", r.db);
    e2e_sql(m, "ALTER TABLE %s.ta ADD COLUMN x INT NOT NULL DEFAULT 7", r.db);
    e2e_sql(m, "UPDATE %s.ta SET x = 8 WHERE id = 3", r.db);
    e2e_sql(m, "RENAME TABLE %s.ta TO %s.ta2", r.db, r.db);
    e2e_sql(m, "INSERT INTO %s.ta2 VALUES (50, 'in ta2', 50, 9)", r.db);

    st_start(&r);
    char done[160];
    long long deadline = tb_itest_now_ms() + 90000;
    for (const char *t = "tr2"; t; t = strcmp(t, "tr2") == 0 ? "ta2" : NULL) {
        snprintf(done, sizeof done, "incremental snapshot of %s.%s done: ", r.db, t);
        while (st_log_count(&r, done) < 1) {
            cr_assert(tb_itest_now_ms() < deadline, "incremental snapshot of %s not done in 90 s; see %s", t, r.log);
            cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
            usleep(50000);
        }
    }
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "the table is gone from the source since (dropped or renamed later in the "
                                  "binlog): described by its latest schema record"),
                 2, "%s: the two TRUNCATEs", r.log);
    for (const char *t = "tr"; t; t = strcmp(t, "tr") == 0 ? "td" : NULL) {
        char topic[300];
        size_t n = 0;
        snprintf(topic, sizeof topic, "%s.%s.%s", r.db, r.db, t);
        st_topic_each(topic, count_truncate, &n);
        cr_expect_eq(n, 1, "%s: %zu \"op\":\"t\" records", t, n);
    }
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL}, *cols_x[] = {"id", "v", "n", "x", NULL};
    st_assert_gone(&r, "tr", cols, false);
    st_assert_gone(&r, "td", cols, true);
    st_assert_gone(&r, "ta", cols, false);
    st_expect_dropped(&r, "td");
    st_assert_equal(&r, m, "tr2", cols, "id, v, n");
    st_assert_equal(&r, m, "ta2", cols_x, "id, v, n, x");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* What the table map cannot say of a column: its declared type. */
typedef struct gone_types {
    size_t records; /* schema records that describe the table */
    size_t uuid, inet6, inet4, fl; /* of them, those that say so */
    size_t rows, uuid_text;        /* row messages with a value of uu, and those with its text form */
} gone_types;

static const char *gone_col_type(json_t *rec, const char *name)
{
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(rec, "columns"), i, c)
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return json_string_value(json_object_get(c, "source_type"));
    return NULL;
}

static void gone_schema(json_t *rec, void *opaque)
{
    gone_types *g = opaque;
    if (!rec || json_array_size(json_object_get(rec, "columns")) == 0)
        return; /* a tombstone, a dropped table */
    g->records++;
    const char *uu = gone_col_type(rec, "uu"), *i6 = gone_col_type(rec, "i6"), *i4 = gone_col_type(rec, "i4"),
               *fl = gone_col_type(rec, "fl");
    g->uuid += uu && strcmp(uu, "uuid") == 0;
    g->inet6 += i6 && strcmp(i6, "inet6") == 0;
    g->inet4 += i4 && strcmp(i4, "inet4") == 0;
    g->fl += fl && strcmp(fl, "float(7,2)") == 0;
}

static void gone_row(const char *key, size_t klen, const char *value, size_t vlen, void *opaque)
{
    (void)key;
    (void)klen;
    gone_types *g = opaque;
    json_error_t je;
    json_t *v = value ? json_loadb(value, vlen, 0, &je) : NULL;
    const char *uu = json_string_value(json_object_get(json_object_get(v, "after"), "uu"));
    if (uu) {
        g->rows++;
        g->uuid_text += strlen(uu) == 36 && uu[8] == '-' && uu[13] == '-';
    }
    json_decref(v);
}

/* Rows of tables read again after a restart, when the catalog no longer has them (dropped or
 * renamed later in the binlog): the table map alone says BINARY(16) for a UUID or INET6 column,
 * BINARY(4) for INET4, and FLOAT for FLOAT(7,2). The schema topic's latest record of the table
 * says what the catalog said: every record and every row of the table is as it was written
 * while the table existed (the torture test found a topic holding both, which the cache could
 * not read). */
Test(e2e_statements, declared_types_of_a_table_gone_since, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2estdecl", "");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    const char *ddl = "(id INT PRIMARY KEY, uu UUID, i6 INET6, i4 INET4, fl FLOAT(7,2), d INT DEFAULT 5)";
    e2e_sql(m, "CREATE TABLE %s.tdrop %s", r.db, ddl);
    e2e_sql(m, "CREATE TABLE %s.tren %s", r.db, ddl);
    const char *row = "UUID(), '2001:db8::1', '10.1.2.3', 12.5, 1";
    for (const char *t = "tdrop"; t; t = strcmp(t, "tdrop") == 0 ? "tren" : NULL)
        e2e_sql(m, "INSERT INTO %s.%s VALUES (1, %s), (2, %s)", r.db, t, row, row);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    kill(r.pid, SIGTERM);
    cr_assert_eq(e2e_wait(r.pid, 30000), 0, "tributary run did not stop cleanly; see %s", r.log);

    for (const char *t = "tdrop"; t; t = strcmp(t, "tdrop") == 0 ? "tren" : NULL) {
        e2e_sql(m, "INSERT INTO %s.%s VALUES (3, %s)", r.db, t, row);
        e2e_sql(m, "UPDATE %s.%s SET uu = UUID(), fl = 3.25 WHERE id = 1", r.db, t);
    }
    e2e_sql(m, "DROP TABLE %s.tdrop", r.db);
    e2e_sql(m, "RENAME TABLE %s.tren TO %s.tren2", r.db, r.db);
    st_start(&r);
    char done[160];
    snprintf(done, sizeof done, "incremental snapshot of %s.tren2 done: ", r.db);
    st_wait_log(&r, done, 90000, "incremental snapshot of tren2 not done");
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "not in the catalog any more: described by its latest schema record"), 2,
                 "the two tables read again; see %s", r.log);
    for (const char *t = "tdrop"; t; t = strcmp(t, "tdrop") == 0 ? "tren" : NULL) {
        gone_types g = {0};
        st_schema_each(&r, t, gone_schema, &g);
        cr_expect(g.records > 0, "%s: no schema record", t);
        cr_expect(g.uuid == g.records && g.inet6 == g.records && g.inet4 == g.records && g.fl == g.records,
                  "%s: of %zu schema records, %zu say uuid, %zu inet6, %zu inet4, %zu float(7,2)", t, g.records,
                  g.uuid, g.inet6, g.inet4, g.fl);
        char topic[300];
        snprintf(topic, sizeof topic, "%s.%s.%s", r.db, r.db, t);
        st_topic_each(topic, gone_row, &g);
        cr_expect(g.rows >= 4, "%s: %zu rows with a uu value", t, g.rows); /* 2 read, 1 inserted, 1 updated */
        cr_expect_eq(g.uuid_text, g.rows, "%s: %zu of %zu values of uu are not a UUID's text", t,
                     g.rows - g.uuid_text, g.rows);
    }
    st_cache_build(&r);
    const char *cols[] = {"id", "uu", "i6", "i4", "fl", "d", NULL};
    st_assert_equal(&r, m, "tren2", cols, "id, uu, i6, i4, CAST(fl AS DOUBLE), d"); /* 12.5, not 12.50 */
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* The same with sink=stdout into a file: the output's own schema lines are the table's history
 * (stdout_sink_schema_last), read back as the Kafka sink reads its schema topic. */
Test(e2e_statements, declared_types_of_a_table_gone_since_stdout, .timeout = 240, .fini = e2e_kill_children)
{
    st_run r;
    st_paths(&r, "e2estdso");
    const char *db = r.db, *out = r.log; /* the lines and the log in one file, as on a terminal */
    char offs[320];
    snprintf(offs, sizeof offs, "%s/offsets", r.dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.tdrop (id INT PRIMARY KEY, uu UUID, i6 INET6, i4 INET4, fl FLOAT(7,2), d INT DEFAULT 5)",
            db);
    const char *row = "UUID(), '2001:db8::1', '10.1.2.3', 12.5, 1";
    e2e_sql(m, "INSERT INTO %s.tdrop VALUES (1, %s), (2, %s)", db, row, row);
    stdout_cfg(r.cfg, db, "", offs, r.status, 9100 + (unsigned)getpid() % 1000, "initial");
    const char *args[] = {"run", "--config", r.cfg, NULL};
    for (int pass = 0; pass < 2; pass++) { /* the second one appends to the same output */
        if (pass == 1) {
            e2e_sql(m, "INSERT INTO %s.tdrop VALUES (3, %s)", db, row);
            e2e_sql(m, "UPDATE %s.tdrop SET uu = UUID(), fl = 3.25 WHERE id = 1", db);
            e2e_sql(m, "DROP TABLE %s.tdrop", db);
        }
        pid_t pid = e2e_spawn(args, out);
        wait_caught_up(m, r.status, pid, out);
        kill(pid, SIGTERM);
        cr_assert_eq(e2e_wait(pid, 30000), 0, "tributary run did not stop cleanly; see %s", out);
    }

    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(out, &b));
    cr_expect_eq(e2e_count_text(tb_buf_cstr(&b), "not in the catalog any more: described by its latest schema record"),
                 1, "the table read again; see %s", out);
    char schema_topic[200], topic[300];
    snprintf(schema_topic, sizeof schema_topic, "%s.schema", db);
    snprintf(topic, sizeof topic, "%s.%s.tdrop", db, db);
    gone_types g = {0};
    for (char *line = b.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        json_error_t je;
        json_t *j = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, &je);
        const char *t = json_string_value(json_object_get(j, "topic"));
        json_t *v = json_object_get(j, "value");
        if (t && strcmp(t, schema_topic) == 0 &&
            strcmp(json_string_value(json_object_get(json_object_get(j, "key"), "table")), "tdrop") == 0)
            gone_schema(json_is_null(v) ? NULL : v, &g);
        else if (t && strcmp(t, topic) == 0 && json_is_object(v)) {
            char *text = json_dumps(v, JSON_COMPACT);
            gone_row(NULL, 0, text, strlen(text), &g);
            free(text);
        }
        json_decref(j);
    }
    tb_buf_free(&b);
    cr_expect(g.records > 0, "no schema record of tdrop; see %s", out);
    cr_expect(g.uuid == g.records && g.inet6 == g.records && g.inet4 == g.records && g.fl == g.records,
              "of %zu schema records, %zu say uuid, %zu inet6, %zu inet4, %zu float(7,2); see %s", g.records, g.uuid,
              g.inet6, g.inet4, g.fl, out);
    cr_expect(g.rows >= 4, "%zu rows with a uu value; see %s", g.rows, out); /* 2 read, 1 inserted, 1 updated */
    cr_expect_eq(g.uuid_text, g.rows, "%zu of %zu values of uu are not a UUID's text; see %s", g.rows - g.uuid_text,
                 g.rows, out);
    e2e_sql(m, "DROP DATABASE %s", db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* ------------------------------------------------------------ SQLite */

/* A SQLite source (WAL capture, shadow copy) of the run r: <dir>/src.db. */
static void sl_setup(st_run *r, const char *tag, const char *extra)
{
    st_paths(r, tag);
    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=sqlite\nsource.path=%s/src.db\nsource.database.name=%s\n"
            "source.sqlite.shadow.path=%s/shadow.db\nsource.sqlite.poll.ms=20\ntopic.prefix=%s\n"
            "kafka.bootstrap.servers=%s\noffsets.storage=kafka\noffsets.commit.interval.ms=100\nstatus.file=%s\n"
            "cache.path=%s\nsnapshot.mode=initial\nheartbeat.interval.ms=100\ntopic.partitions=3\n"
            "ha.enabled=false\n%s",
            r->db, r->dir, r->db, r->dir, r->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), r->status, r->cache,
            extra ? extra : "");
    fclose(f);
}

/* The application's connection to the source, open for the whole test as
 * an application's would be: the WAL is never deleted by a last connection
 * closing while the connector is down, so a restart continues exactly after
 * the committed position (a WAL reset meanwhile is the gap case of
 * sqlite-wal.md 2.11, not tested here). */
static sqlite3 *sl_app;

/* Run statements on the source through the application's connection. */
static void sl_sql(const st_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sl_sql(const st_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *q = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    cr_assert_not_null(q);
    if (!sl_app) {
        char path[400];
        snprintf(path, sizeof path, "%s/src.db", r->dir);
        cr_assert_eq(sqlite3_open(path, &sl_app), SQLITE_OK, "%s", path);
        sqlite3_busy_timeout(sl_app, 10000);
    }
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(sl_app, q, NULL, NULL, &msg), SQLITE_OK, "%s: %s", q, msg ? msg : "?");
    sqlite3_free(q);
}

static void sl_close(void)
{
    sqlite3_close(sl_app);
    sl_app = NULL;
}

/* Everything written so far has reached the topics: a new row of table
 * mark (id n) is waited for in its topic. */
static void sl_sync(const st_run *r, int n)
{
    sl_sql(r, "INSERT INTO mark VALUES (%d)", n);
    char topic[256], want[32];
    snprintf(topic, sizeof topic, "%s.%s.mark", r->db, r->db);
    snprintf(want, sizeof want, "\n%d\n", n);
    const char *cols[] = {"id", NULL};
    long long deadline = tb_itest_now_ms() + 60000;
    for (;;) {
        bool seen = false;
        if (st_topic_exists(topic)) {
            tb_buf top;
            tb_buf_init(&top, 0);
            tb_buf_putc(&top, '\n');
            st_topic_table(topic, cols, &top);
            seen = strstr(tb_buf_cstr(&top), want) != NULL;
            tb_buf_free(&top);
        }
        if (seen)
            break;
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        cr_assert(tb_itest_now_ms() < deadline, "mark %d not in its topic in 60 s; see %s", n, r->log);
        usleep(200000);
    }
}

/* Run sql on the source, then kill -9 the run as soon as its log holds
 * needle once more than before (its capture handled the statement). */
static void sl_sql_kill9(st_run *r, const char *sql, const char *needle)
{
    size_t before = st_log_count(r, needle);
    sl_sql(r, "%s", sql);
    long long deadline = tb_itest_now_ms() + 30000;
    while (st_log_count(r, needle) <= before) {
        cr_assert(tb_itest_now_ms() < deadline, "'%s' not logged in 30 s; see %s", needle, r->log);
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        usleep(2000);
    }
    kill(r->pid, SIGKILL);
    cr_assert_eq(e2e_wait(r->pid, 10000), -1);
}

/* The topic read as a KTable and the cache both hold exactly the rows of
 * table in the SQLite database at path (cols / colsql its columns); a table
 * absent there (dropped, renamed) must be empty in both. */
static bool sl_assert_equal(const st_run *r, const char *path, const char *table, const char *const *cols,
                            const char *colsql, bool in_source)
{
    char topic[256], ctable[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, r->db, table);
    snprintf(ctable, sizeof ctable, "%s.%s", r->db, table);
    tb_buf src, top, cache;
    tb_buf_init(&src, 0);
    tb_buf_init(&top, 0);
    tb_buf_init(&cache, 0);
    if (in_source)
        st_cache_rows(path, table, colsql, &src);
    tb_buf_putc(&src, '\0');
    src.len--;
    st_topic_table(topic, cols, &top);
    if (in_source || st_cache_has(r->cache, ctable))
        st_cache_rows(r->cache, ctable, colsql, &cache);
    tb_buf_putc(&cache, '\0');
    cache.len--;
    fprintf(stderr, "e2e_statements sqlite: %s: source %zu bytes, topic %zu, cache %zu\n", table, src.len, top.len,
            cache.len);
    cr_expect_str_eq(tb_buf_cstr(&top), tb_buf_cstr(&src), "%s: topic as a KTable differs from the source", table);
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "%s: cache differs from the source:\ncache:\n%ssource:\n%s",
                     table, tb_buf_cstr(&cache), tb_buf_cstr(&src));
    bool ok = strcmp(tb_buf_cstr(&top), tb_buf_cstr(&src)) == 0 && strcmp(tb_buf_cstr(&cache), tb_buf_cstr(&src)) == 0;
    tb_buf_free(&src);
    tb_buf_free(&top);
    tb_buf_free(&cache);
    return ok;
}

/* SQLite, WAL capture (docs/statements.md, SQLite): DROP TABLE with
 * ddl.drop.policy=tombstone, ALTER TABLE RENAME, ADD COLUMN ... DEFAULT,
 * RENAME COLUMN and DROP COLUMN with ddl.alter.policy=resnapshot, each among
 * row changes and each followed by kill -9 of the connector as soon as its
 * capture handled it, more writes and a restart. Then the topics read as
 * KTables and the cache rebuilt from them equal the source cell by cell; the
 * dropped table's and the old name's topics hold no key and their cache
 * tables are empty (the dropped one kept: cache.on.drop=keep), and the
 * dropped table's latest schema record says it was dropped. A RENAME from a name that is not captured sends the
 * rows under the new one; a RENAME to a name that is not captured empties
 * the old name's topic and makes no topic for the new one. */
static void sl_fini(void)
{
    e2e_kill_children();
    sl_close();
}

Test(e2e_statements, sqlite_statements, .timeout = 400, .fini = sl_fini)
{
    st_run r;
    sl_setup(&r, "e2esqlst", "ddl.drop.policy=tombstone\ntables.exclude=[.](x|q)$\n");
    char src[400];
    snprintf(src, sizeof src, "%s/src.db", r.dir);
    sl_sql(&r, "PRAGMA journal_mode=WAL;"
               "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
               "CREATE TABLE g (id INTEGER PRIMARY KEY, v TEXT);"
               "CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT, junk TEXT, t TEXT DEFAULT CURRENT_TIMESTAMP);"
               "CREATE TABLE mark (id INTEGER PRIMARY KEY);"
               "CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO x VALUES (1, 'x1'), (2, 'x2');"
               "CREATE TABLE p (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO p VALUES (1, 'p1'), (2, 'p2');"
               "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<30) "
               "INSERT INTO a SELECT i, printf('a%%d', i), i * 10 FROM s;"
               "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<30) "
               "INSERT INTO g SELECT i, printf('g%%d', i) FROM s;"
               "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<30) "
               "INSERT INTO u (id, v, junk) SELECT i, printf('u%%d', i), 'junk' FROM s;");
    st_start(&r);
    sl_sync(&r, 1);

    /* DROP TABLE among row changes; kill -9 once the capture handled it */
    sl_sql(&r, "INSERT INTO g VALUES (31, 'streamed'); DELETE FROM g WHERE id = 1; UPDATE g SET v = 'upd' WHERE id = 2;"
               "UPDATE a SET n = 0 WHERE id < 5");
    sl_sql_kill9(&r, "DROP TABLE g", "table g dropped: a delete for each of its 30 rows");
    sl_sql(&r, "INSERT INTO a VALUES (31, 'after drop', 31)");
    st_start(&r);
    sl_sync(&r, 2);

    /* ALTER TABLE RENAME, with a change in the same transaction */
    sl_sql(&r, "DELETE FROM a WHERE id = 3");
    sl_sql_kill9(&r, "BEGIN; ALTER TABLE a RENAME TO b; UPDATE b SET v = 'in rename' WHERE id = 4; COMMIT",
                 "table a renamed to b: a delete for each of its");
    sl_sql(&r, "INSERT INTO b VALUES (32, 'in b', 32); UPDATE b SET n = 1 WHERE id = 5");
    st_start(&r);
    sl_sync(&r, 3);
    /* a RENAME from a name not captured (x) and to one (q): only the captured side's events */
    sl_sql(&r, "ALTER TABLE x RENAME TO y; ALTER TABLE p RENAME TO q; UPDATE y SET v = 'in y' WHERE id = 1");
    sl_sync(&r, 30);

    /* ADD COLUMN ... DEFAULT: the old rows are not rewritten, they read the default */
    sl_sql(&r, "UPDATE u SET v = 'before add' WHERE id = 7");
    sl_sql_kill9(&r, "ALTER TABLE u ADD COLUMN w TEXT DEFAULT 'x'", "table u altered (");
    sl_sql(&r, "INSERT INTO u (id, v, w) VALUES (31, 'after add', 'y'); UPDATE u SET v = 'upd' WHERE id = 8");
    st_start(&r);
    sl_sync(&r, 4);

    /* RENAME COLUMN, then DROP COLUMN (SQLite rewrites every row) */
    sl_sql_kill9(&r, "ALTER TABLE u RENAME COLUMN v TO vv", "table u altered (");
    st_start(&r);
    sl_sync(&r, 5);
    sl_sql_kill9(&r, "ALTER TABLE u DROP COLUMN junk", "table u altered (");
    sl_sql(&r, "UPDATE u SET w = 'z' WHERE id = 9; DELETE FROM u WHERE id = 10");
    st_start(&r);
    sl_sync(&r, 6);
    st_stop(&r);

    /* the schema records: g is gone; where b came from; u's defaults as SQLite reads them */
    st_expect_dropped(&r, "g");
    st_expect_renamed(&r, "b", "a");
    json_t *rec = st_schema_record(&r, "u");
    cr_assert_not_null(rec);
    json_t *ucols = json_object_get(rec, "columns");
    cr_assert_eq(json_array_size(ucols), 4); /* id, vv, t, w */
    const char *want[][3] = {{"id", NULL, "0"}, {"vv", NULL, "0"}, {"t", "CURRENT_TIMESTAMP", "1"}, {"w", "x", "0"}};
    for (size_t i = 0; i < 4; i++) {
        json_t *c = json_array_get(ucols, i);
        cr_assert_str_eq(json_string_value(json_object_get(c, "name")), want[i][0]);
        if (want[i][1])
            cr_expect_str_eq(json_string_value(json_object_get(c, "default")), want[i][1], "column %s", want[i][0]);
        else
            cr_expect(json_is_null(json_object_get(c, "default")), "column %s", want[i][0]);
        cr_expect_eq(json_is_true(json_object_get(c, "default_expr")), want[i][2][0] == '1', "column %s", want[i][0]);
    }
    json_decref(rec);

    st_cache_build(&r);
    const char *cols_a[] = {"id", "v", "n", NULL}, *cols_g[] = {"id", "v", NULL};
    const char *cols_u[] = {"id", "vv", "w", NULL};
    char gtable[200];
    snprintf(gtable, sizeof gtable, "%s.g", r.db);
    cr_expect(st_cache_has(r.cache, gtable), "%s: cache.on.drop=keep, yet the cache dropped it", gtable);
    bool ok = sl_assert_equal(&r, src, "g", cols_g, "id, v", false);
    ok = sl_assert_equal(&r, src, "a", cols_a, "id, v, n", false) && ok;
    ok = sl_assert_equal(&r, src, "b", cols_a, "id, v, n", true) && ok;
    ok = sl_assert_equal(&r, src, "u", cols_u, "id, vv, w", true) && ok;
    ok = sl_assert_equal(&r, src, "y", cols_g, "id, v", true) && ok;
    ok = sl_assert_equal(&r, src, "p", cols_g, "id, v", false) && ok;
    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.x", r.db, r.db);
    cr_expect(!st_topic_exists(topic), "%s: a table not captured has a topic", topic);
    snprintf(topic, sizeof topic, "%s.%s.q", r.db, r.db);
    cr_expect(!st_topic_exists(topic), "%s: a table not captured has a topic", topic);
    if (ok)
        e2e_rmtree(r.dir); /* kept for its logs otherwise */
}

/* SQLite, ddl.drop.policy=warn (the default): a DROP TABLE of a captured
 * table leaves its topic as it is, WARNs naming the table and writes the
 * schema record that says it was dropped, in the DROP's transaction (also
 * across a kill -9 just after it); the DROP of a table tables.exclude
 * leaves out gives neither WARN nor record. The cache keeps the table with
 * its rows under cache.on.drop=keep and drops it under drop, although its
 * topic still holds the rows. */
Test(e2e_statements, sqlite_drop_warn, .timeout = 300, .fini = sl_fini)
{
    st_run r;
    sl_setup(&r, "e2esqldw", "tables.exclude=[.]x$\n");
    sl_sql(&r, "PRAGMA journal_mode=WAL;"
               "CREATE TABLE h (id INTEGER PRIMARY KEY, v TEXT);"
               "CREATE TABLE k (id INTEGER PRIMARY KEY, v TEXT);"
               "CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO x VALUES (1, 'x1');"
               "CREATE TABLE mark (id INTEGER PRIMARY KEY);"
               "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<20) "
               "INSERT INTO h SELECT i, printf('h%%d', i) FROM s;"
               "INSERT INTO k VALUES (1, 'k1'), (2, 'k2');");
    st_start(&r);
    sl_sync(&r, 1);
    sl_sql(&r, "DROP TABLE x; INSERT INTO k VALUES (3, 'k3')");
    sl_sync(&r, 2);
    sl_sql(&r, "UPDATE h SET v = 'upd' WHERE id = 2");
    sl_sql_kill9(&r, "DROP TABLE h", ".h: DROP TABLE at ");
    sl_sql(&r, "INSERT INTO k VALUES (4, 'k4')");
    st_start(&r);
    sl_sync(&r, 3);
    kill(r.pid, SIGTERM);
    cr_assert_eq(e2e_wait(r.pid, 30000), 0, "tributary run did not stop cleanly; see %s", r.log);

    char needle[300];
    snprintf(needle, sizeof needle, "%s.h: DROP TABLE at ", r.db);
    cr_expect_geq(st_log_count(&r, needle), 1, "no WARN for the DROP of h; see %s", r.log);
    cr_expect_eq(st_log_count(&r, ".x: DROP TABLE"), 0, "a WARN for x, which is not captured; see %s", r.log);
    cr_expect_eq(st_log_count(&r, "table x dropped"), 0, "a WARN for x, which is not captured; see %s", r.log);
    cr_expect_eq(st_log_count(&r, "table h dropped"), 0, "the capture's own WARN for h; see %s", r.log);
    st_expect_dropped(&r, "h");
    json_t *xr = st_schema_record(&r, "x");
    cr_expect_null(xr, "a schema record for x, which is not captured");
    json_decref(xr);

    /* the topic keeps h's rows (warn): 20 keys, id 2 updated */
    char topic[300], htable[200];
    snprintf(topic, sizeof topic, "%s.%s.h", r.db, r.db);
    snprintf(htable, sizeof htable, "%s.h", r.db);
    const char *cols_h[] = {"id", "v", NULL};
    tb_buf top, want;
    tb_buf_init(&top, 0);
    tb_buf_init(&want, 0);
    st_topic_table(topic, cols_h, &top);
    for (int i = 1; i <= 20; i++)
        if (i == 2)
            tb_buf_puts(&want, "2|upd\n");
        else
            tb_buf_printf(&want, "%d|h%d\n", i, i);
    cr_expect_str_eq(tb_buf_cstr(&top), tb_buf_cstr(&want), "%s: the topic should keep the rows", topic);

    /* cache.on.drop=keep (default): the table and its rows stay */
    st_cache_build(&r);
    cr_assert(st_cache_has(r.cache, htable), "%s: cache.on.drop=keep, yet the cache dropped it", htable);
    tb_buf cache;
    tb_buf_init(&cache, 0);
    st_cache_rows(r.cache, htable, "id, v", &cache);
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&want), "%s: the kept cache table lost rows", htable);
    tb_buf_free(&cache);

    /* cache.on.drop=drop: a cache built from the same topics has no table h, and k as the source */
    FILE *f = fopen(r.cfg, "a");
    cr_assert_not_null(f);
    snprintf(r.cache, sizeof r.cache, "%s/cache_drop.db", r.dir);
    fprintf(f, "cache.path=%s\ncache.on.drop=drop\n", r.cache);
    fclose(f);
    st_cache_build(&r);
    cr_expect(!st_cache_has(r.cache, htable), "%s: cache.on.drop=drop, yet the cache has it", htable);
    char src[400];
    snprintf(src, sizeof src, "%s/src.db", r.dir);
    bool ok = sl_assert_equal(&r, src, "k", cols_h, "id, v", true);
    tb_buf_free(&top);
    tb_buf_free(&want);
    if (ok)
        e2e_rmtree(r.dir); /* kept for its logs otherwise */
}
