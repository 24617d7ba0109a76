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
 */
#include <sys/stat.h>

#include "e2e_util.h"

/* The server's current GTID position (gtid_binlog_pos) into out. */
static void server_gtid(MYSQL *m, char *out, size_t cap)
{
    tb_buf g;
    tb_buf_init(&g, 0);
    e2e_query_text(m, "SELECT @@global.gtid_binlog_pos", &g);
    snprintf(out, cap, "%.*s", (int)(g.len ? g.len - 1 : 0), tb_buf_cstr(&g));
    tb_buf_free(&g);
}

/* Poll the status file until the committed GTID equals the server's. */
static void wait_caught_up(MYSQL *m, const char *status, pid_t pid, const char *log)
{
    char want[256], got[256] = "";
    server_gtid(m, want, sizeof want);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(e2e_status_gtid(status, got, sizeof got) && strcmp(got, want) == 0)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "committed %s, server %s; see %s", got, want, log);
        usleep(50000);
    }
}

Test(e2e_statements, dml_as_statement, .timeout = 120, .fini = e2e_kill_children)
{
    char db[96], dir[256], cfgp[320], log[320], status[320], offs[320], out[320];
    tb_itest_unique(db, sizeof db, "e2estmt");
    snprintf(dir, sizeof dir, "/tmp/%s", db);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(cfgp, sizeof cfgp, "%s/run.properties", dir);
    snprintf(log, sizeof log, "%s/run.log", dir);
    snprintf(status, sizeof status, "%s/status.json", dir);
    snprintf(offs, sizeof offs, "%s/offsets", dir);
    snprintf(out, sizeof out, "%s/events.jsonl", dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.cap (id INT PRIMARY KEY, v VARCHAR(20))", db);
    e2e_sql(m, "CREATE TABLE %s.other (id INT PRIMARY KEY, v VARCHAR(20))", db);
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=^%s[.]cap$\ntopic.prefix=%s\nsink=stdout\n"
            "offsets.storage=file\noffsets.file=%s\noffsets.commit.interval.ms=100\nstatus.file=%s\n"
            "snapshot.mode=never\nheartbeat.interval.ms=100\n",
            db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            9000 + (unsigned)getpid() % 1000, db, db, offs, status);
    fclose(f);
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
    server_gtid(m, before, sizeof before);

    e2e_sql(m, "INSERT /* by a STATEMENT session */ INTO cap VALUES (2, 'lost?')");
    char gtid[256];
    server_gtid(m, gtid, sizeof gtid);
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
    /* the row change before it was sent, the statements on `other` were not */
    tb_buf evs;
    tb_buf_init(&evs, 0);
    for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, "{\"topic\":", 9) == 0)
            tb_buf_append(&evs, l, strchr(l, '\n') ? (size_t)(strchr(l, '\n') - l + 1) : strlen(l));
    tb_buf_putc(&evs, '\0');
    const char *ev = evs.data;
    cr_expect(strstr(ev, "\"after\":{\"id\":1,\"v\":\"row\"}"), "the row event before is missing:\n%s", ev);
    cr_expect_null(strstr(ev, "statement"), "a change of a table not captured was sent:\n%s", ev);
    cr_expect_null(strstr(ev, "lost?"), "the statement's row was sent:\n%s", ev);
    tb_buf_free(&evs);
    char got[256] = "";
    cr_assert(e2e_status_gtid(status, got, sizeof got));
    cr_expect_str_eq(got, before, "committed %s, want %s (before the statement)", got, before);

    /* a restart stops at the same statement: nothing is skipped silently */
    pid = e2e_spawn(args, log);
    rc = e2e_wait(pid, 30000);
    cr_assert_eq(rc, 1, "restarted tributary run should stop again (got %d); see %s", rc, log);
    cr_assert(e2e_slurp(log, &b));
    snprintf(want, sizeof want, "GTID %s, binlog ", gtid);
    cr_expect(strstr(tb_buf_cstr(&b), want), "restart did not stop at %s:\n%s", gtid, tb_buf_cstr(&b));
    e2e_assert_clean_log(log);
    tb_buf_free(&b);
    e2e_sql(m, "DROP DATABASE %s", db);
    mysql_close(m);
    e2e_rmtree(dir);
}
