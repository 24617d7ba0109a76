/*
 * `tributary snapshot` end to end (integration): a snapshot to the stdout
 * sink (JSON lines, summary, hand-off position stored in the offsets file,
 * or in the offsets topic with offsets.storage=kafka), and the incremental
 * signal row.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../app/run_util.h"
#pragma GCC diagnostic pop
#include "json_oracle.h"
#include "snap_test_util.h"

__attribute__((format(printf, 1, 2))) static char *arg(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        cr_assert_fail("asprintf");
    return s;
}

Test(snapshot_cli, snapshot_to_stdout_then_signal, .timeout = 120)
{
    MYSQL *my = st_connect();
    st_sql(my, "DROP DATABASE IF EXISTS snaptest_cli");
    st_sql(my, "CREATE DATABASE snaptest_cli");
    st_sql(my, "CREATE TABLE snaptest_cli.a (id INT PRIMARY KEY, v VARCHAR(10))");
    st_sql(my, "CREATE TABLE snaptest_cli.b (id INT PRIMARY KEY)");
    st_sql(my, "INSERT INTO snaptest_cli.a VALUES (1, 'x'), (2, 'y'), (3, NULL)");
    char *dir = st_tmpdir();
    char *a_host = arg("source.host=%s", getenv("TRIBUTARY_TEST_MYSQL_HOST"));
    char *a_port = arg("source.port=%s", getenv("TRIBUTARY_TEST_MYSQL_PORT"));
    char *a_user = arg("source.user=%s", getenv("TRIBUTARY_TEST_MYSQL_USER"));
    char *a_off = arg("offsets.file=%s/offsets", dir);
    char *e_pw = arg("TRIBUTARY_SOURCE_PASSWORD=%s", getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    const char *env[] = {e_pw, NULL};
    const char *args[] = {"snapshot", "--set", a_host, "--set", a_port, "--set", a_user, "--set", "sink=stdout",
                          "--set", "offsets.storage=file", "--set", a_off, "--set", "topic.prefix=cli",
                          "--set", "tables.include=^snaptest_cli\\.", NULL};
    run_result r = run_tributary(args, env);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err.data);

    /* 1 schema record + 3 rows; the last row says snapshot=last */
    size_t rows = 0, schema = 0, last = 0;
    for (char *line = strtok(r.out.data, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *v = jo_parse_s(line);
        const char *topic = json_string_value(json_object_get(v, "topic"));
        cr_assert_not_null(topic, "a line without a topic: %s", line);
        if (strcmp(topic, "cli.schema") == 0) {
            schema++;
            cr_assert(jo_expect_at(v, JO_PATH("key"), "{\"db\":\"snaptest_cli\",\"table\":\"a\"}"), "%s", line);
        } else if (strcmp(topic, "cli.snaptest_cli.a") == 0) {
            rows++;
            cr_assert(jo_expect_at(v, JO_PATH("value", "op"), "\"r\""), "%s", line);
            const char *snap = json_string_value(jo_get(v, JO_PATH("value", "source", "snapshot")));
            cr_assert(snap && (strcmp(snap, "true") == 0 || strcmp(snap, "last") == 0), "%s", line);
            if (strcmp(snap, "last") == 0)
                last = rows;
        } else
            cr_assert_fail("unexpected line %s", line);
        json_decref(v);
    }
    cr_assert_eq(rows, 3);
    cr_assert_eq(schema, 1);
    cr_assert_eq(last, 3, "the last row carries snapshot=last");
    const char *sum = strstr(r.err.data, "snapshot done: 2 table(s), 3 rows");
    cr_assert_not_null(sum, "summary missing: %s", r.err.data);
    const char *from = strstr(sum, "stream from ");
    cr_assert_not_null(from);
    from += strlen("stream from ");
    size_t plen = strcspn(from, "\n");

    /* the hand-off position is the stored offset */
    tb_buf off;
    tb_buf_init(&off, 0);
    char *offp = arg("%s/offsets", dir);
    run_slurp(offp, &off);
    cr_assert(off.len >= plen && strncmp(off.data, from, plen) == 0, "offsets file '%s' vs '%.*s'", off.data,
              (int)plen, from);
    tb_buf_free(&off);
    run_result_free(&r);

    /* incremental: a signal row in snaptest_cli.tributary_signal */
    const char *sargs[] = {"snapshot", "--incremental", "--table", "snaptest_cli.a", "--set", a_host, "--set", a_port,
                           "--set", a_user, "--set", "sink=stdout", "--set", "offsets.storage=file", "--set", a_off,
                           NULL};
    r = run_tributary(sargs, env);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err.data);
    cr_assert_eq(st_sql_int(my, "SELECT COUNT(*) FROM snaptest_cli.tributary_signal WHERE type='execute-snapshot' "
                                "AND data='snaptest_cli.a'"),
                 1);
    run_result_free(&r);

    /* usage errors: exit 2 */
    const char *bad[] = {"snapshot", "--incremental", "--set", a_host, "--set", "sink=stdout", "--set",
                         "offsets.storage=file", NULL};
    r = run_tributary(bad, env);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err.data);
    run_result_free(&r);

    st_rmdir(dir);
    free(dir);
    free(offp);
    free(a_host);
    free(a_port);
    free(a_user);
    free(a_off);
    free(e_pw);
    mysql_close(my);
}

/* sink=stdout with offsets.storage=kafka: the hand-off position goes to the
 * offsets topic, where `tributary offsets show` reads it back. */
Test(snapshot_cli, snapshot_to_stdout_offsets_in_kafka, .timeout = 120)
{
    MYSQL *my = st_connect();
    st_sql(my, "DROP DATABASE IF EXISTS snaptest_clik");
    st_sql(my, "CREATE DATABASE snaptest_clik");
    st_sql(my, "CREATE TABLE snaptest_clik.a (id INT PRIMARY KEY)");
    st_sql(my, "INSERT INTO snaptest_clik.a VALUES (1), (2)");
    char name[64];
    snprintf(name, sizeof name, "name=clik%ld", (long)getpid());
    char *a_host = arg("source.host=%s", getenv("TRIBUTARY_TEST_MYSQL_HOST"));
    char *a_port = arg("source.port=%s", getenv("TRIBUTARY_TEST_MYSQL_PORT"));
    char *a_user = arg("source.user=%s", getenv("TRIBUTARY_TEST_MYSQL_USER"));
    char *a_kafka = arg("kafka.bootstrap.servers=%s", getenv("TRIBUTARY_TEST_KAFKA"));
    char *e_pw = arg("TRIBUTARY_SOURCE_PASSWORD=%s", getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    const char *env[] = {e_pw, NULL};
    const char *args[] = {"snapshot", "--set", a_host, "--set", a_port, "--set", a_user, "--set", "sink=stdout",
                          "--set", "offsets.storage=kafka", "--set", a_kafka, "--set", name,
                          "--set", "topic.prefix=clik", "--set", "tables.include=^snaptest_clik\\.", NULL};
    run_result r = run_tributary(args, env);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err.data);
    const char *from = strstr(r.err.data, "stream from ");
    cr_assert_not_null(from, "summary missing: %s", r.err.data);
    from += strlen("stream from ");
    size_t plen = strcspn(from, "\n");
    char *want = strndup(from, plen);
    run_result_free(&r);

    const char *sargs[] = {"offsets", "show", "--set", a_kafka, "--set", name, "--set", "offsets.storage=kafka",
                           "--set", "source.type=mysql", NULL};
    r = run_tributary(sargs, env);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err.data);
    const char *text = strstr(r.out.data, "text: ");
    cr_assert_not_null(text, "no position shown: %s", r.out.data);
    text += strlen("text: ");
    cr_assert(strncmp(text, want, plen) == 0 && (text[plen] == '\n' || text[plen] == 0),
              "offsets topic holds '%.*s', the snapshot handed off at '%s'", (int)strcspn(text, "\n"), text, want);
    run_result_free(&r);
    free(want);
    free(a_host);
    free(a_port);
    free(a_user);
    free(a_kafka);
    free(e_pw);
    mysql_close(my);
}
