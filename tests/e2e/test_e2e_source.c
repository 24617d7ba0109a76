/*
 * End-to-end checks of what the MySQL/MariaDB source refuses or reports, with
 * the built binary against the testenv MariaDB (sink=stdout and
 * offsets.storage=file unless Kafka is the point):
 *   - binlog_format=STATEMENT set globally: `run` exits 2 naming
 *     binlog_format, its value, ROW and the SET GLOBAL that fixes it; also when
 *     the setting changes while streaming (checked again on reconnect);
 *   - a user without the replication grants: exit 2 naming each missing
 *     privilege and the GRANT statement.
 * Every test restores the server settings it changed in its .fini.
 */
#include <sys/stat.h>

#include "e2e_util.h"

typedef struct src_env {
    char db[96];
    char dir[256];
    char cfg[320];
    char log[320];
    char status[320];
    char offsets[320];
} src_env;

static void src_setup(src_env *e, const char *prefix, const char *extra)
{
    memset(e, 0, sizeof(*e));
    tb_itest_unique(e->db, sizeof e->db, prefix);
    snprintf(e->dir, sizeof e->dir, "/tmp/%s", e->db);
    cr_assert_eq(mkdir(e->dir, 0700), 0, "mkdir %s: %s", e->dir, strerror(errno));
    snprintf(e->cfg, sizeof e->cfg, "%s/run.properties", e->dir);
    snprintf(e->log, sizeof e->log, "%s/run.log", e->dir);
    snprintf(e->status, sizeof e->status, "%s/status.json", e->dir);
    snprintf(e->offsets, sizeof e->offsets, "%s/offsets.txt", e->dir);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e->db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v INT NOT NULL)", e->db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1, 1), (2, 2)", e->db);
    mysql_close(m);
    FILE *f = fopen(e->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\nsource.heartbeat.ms=500\nheartbeat.interval.ms=500\ntables.include=%s[.].*\n"
            "topic.prefix=%s\nsink=stdout\noffsets.storage=file\noffsets.file=%s\noffsets.commit.interval.ms=200\n"
            "status.file=%s\nsource.reconnect.backoff.max.ms=500\n%s",
            e->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            7000 + (unsigned)getpid() % 1000, e->db, e->db, e->offsets, e->status, extra ? extra : "");
    fclose(f);
}

static bool log_has(const char *path, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = e2e_slurp(path, &b) && strstr(tb_buf_cstr(&b), needle) != NULL;
    tb_buf_free(&b);
    return ok;
}

static void assert_log_has(const char *path, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(path, &b), "%s", path);
    cr_assert(strstr(tb_buf_cstr(&b), needle), "%s does not say \"%s\":\n%.4000s", path, needle, tb_buf_cstr(&b));
    tb_buf_free(&b);
}

/* ------------------------------------------------------------ settings */

static void restore_binlog_format(void)
{
    e2e_kill_children();
    MYSQL *m = e2e_mysql_try();
    if (m) {
        if (mysql_query(m, "SET GLOBAL binlog_format=ROW") != 0)
            fprintf(stderr, "could not restore binlog_format: %s\n", mysql_error(m));
        mysql_close(m);
    }
}

Test(e2e_source, statement_format_refused_at_start, .timeout = 120, .fini = restore_binlog_format)
{
    src_env e;
    src_setup(&e, "e2efmt", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "SET GLOBAL binlog_format=STATEMENT");
    mysql_close(m);
    const char *args[] = {"run", "--config", e.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(args, e.log), 60000);
    cr_assert_eq(rc, 2, "exit %d, want 2; see %s", rc, e.log);
    assert_log_has(e.log, "binlog_format is STATEMENT, needs ROW");
    assert_log_has(e.log, "SET GLOBAL binlog_format=ROW");
    cr_assert_not(log_has(e.log, "\"op\":\"r\""), "a snapshot was sent before the check; see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* The id of the connection that streams the binlog to our server_id, 0 if none. */
static unsigned long dump_thread(MYSQL *m)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_query_text(m, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'", &b);
    unsigned long id = strtoul(tb_buf_cstr(&b), NULL, 10);
    tb_buf_free(&b);
    return id;
}

Test(e2e_source, statement_format_refused_on_reconnect, .timeout = 120, .fini = restore_binlog_format)
{
    src_env e;
    src_setup(&e, "e2efmt2", "snapshot.mode=never\n");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    MYSQL *m = e2e_mysql();
    long long deadline = tb_itest_now_ms() + 30000;
    unsigned long id = 0;
    while ((id = dump_thread(m)) == 0) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "no binlog dump connection after 30 s; see %s", e.log);
        usleep(50000);
    }
    e2e_sql(m, "SET GLOBAL binlog_format=STATEMENT");
    e2e_sql(m, "KILL CONNECTION %lu", id);
    mysql_close(m);
    int rc = e2e_wait(pid, 60000);
    cr_assert_eq(rc, 2, "exit %d, want 2; see %s", rc, e.log);
    assert_log_has(e.log, "replication connection lost");
    assert_log_has(e.log, "binlog_format is STATEMENT, needs ROW");
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ grants */

static void drop_user(void)
{
    e2e_kill_children();
    MYSQL *m = e2e_mysql_try();
    if (m) {
        if (mysql_query(m, "DROP USER IF EXISTS 'tbpreflight'@'127.0.0.1'") != 0)
            fprintf(stderr, "could not drop the test user: %s\n", mysql_error(m));
        mysql_close(m);
    }
}

Test(e2e_source, missing_grants_named, .timeout = 120, .fini = drop_user)
{
    src_env e;
    char extra[256];
    snprintf(extra, sizeof extra, "source.user=tbpreflight\nsource.password=pw-%d\n", (int)getpid());
    src_setup(&e, "e2egrant", extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "DROP USER IF EXISTS 'tbpreflight'@'127.0.0.1'");
    e2e_sql(m, "CREATE USER 'tbpreflight'@'127.0.0.1' IDENTIFIED BY 'pw-%d'", (int)getpid());
    e2e_sql(m, "GRANT SELECT ON %s.* TO 'tbpreflight'@'127.0.0.1'", e.db);
    mysql_close(m);
    const char *args[] = {"run", "--config", e.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(args, e.log), 60000);
    cr_assert_eq(rc, 2, "exit %d, want 2; see %s", rc, e.log);
    assert_log_has(e.log, "user 'tbpreflight'@'127.0.0.1' lacks the REPLICATION SLAVE privilege on *.*");
    assert_log_has(e.log, "GRANT REPLICATION SLAVE ON *.* TO 'tbpreflight'@'127.0.0.1'");
    assert_log_has(e.log, "lacks the BINLOG MONITOR privilege on *.*");
    cr_assert_not(log_has(e.log, "lacks the SELECT privilege"), "database-level SELECT is enough; see %s", e.log);

    /* granted as the message says: the run starts and snapshots */
    m = e2e_mysql();
    e2e_sql(m, "GRANT REPLICATION SLAVE, BINLOG MONITOR, INSERT ON *.* TO 'tbpreflight'@'127.0.0.1'");
    mysql_close(m);
    cr_assert_eq(truncate(e.log, 0), 0);
    pid_t pid = e2e_spawn(args, e.log);
    long long deadline = tb_itest_now_ms() + 30000;
    while (!log_has(e.log, "streaming from the binlog")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "not streaming after 30 s; see %s", e.log);
        usleep(50000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", e.log);
    cr_assert(log_has(e.log, "\"op\":\"r\""), "no snapshot rows; see %s", e.log);
    cr_assert_not(log_has(e.log, "lacks the"), "see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}
