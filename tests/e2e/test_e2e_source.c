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
#include <dirent.h>
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
            "source.server.id=%u\nsource.heartbeat.interval.ms=500\nheartbeat.interval.ms=500\ntables.include=%s[.].*\n"
            "topic.prefix=%s\n%s%s\noffsets.commit.interval.ms=200\n"
            "status.file=%s\nsource.reconnect.backoff.max.ms=500\n%s",
            e->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            7000 + (unsigned)getpid() % 1000, e->db, e->db,
            extra && strstr(extra, "sink=kafka") ? "" : "sink=stdout\noffsets.storage=file\noffsets.file=",
            extra && strstr(extra, "sink=kafka") ? "" : e->offsets, e->status, extra ? extra : "");
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

/* The number of event lines in a log (e2e_count_events) whose member at path equals expected. */
static size_t log_events(const char *log, const char *const *path, const char *expected)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    size_t n = e2e_slurp(log, &b) ? e2e_count_events(tb_buf_cstr(&b), path, expected) : 0;
    tb_buf_free(&b);
    return n;
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
    cr_assert_eq(log_events(e.log, NULL, NULL), 0, "a snapshot was sent before the check; see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* Whether process pid holds a TCP socket whose local port is port: the inodes of its
 * sockets (/proc/<pid>/fd) looked up in /proc/net/tcp. */
static bool pid_has_local_port(pid_t pid, unsigned port)
{
    char path[64], link[64];
    unsigned long inodes[256];
    size_t n = 0;
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    while ((de = readdir(d)) && n < sizeof inodes / sizeof inodes[0]) {
        char fd[sizeof path + sizeof de->d_name + 1];
        snprintf(fd, sizeof fd, "%s/%s", path, de->d_name);
        ssize_t len = readlink(fd, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = '\0';
        unsigned long ino;
        if (sscanf(link, "socket:[%lu]", &ino) == 1)
            inodes[n++] = ino;
    }
    closedir(d);
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned lport;
        unsigned long ino;
        if (sscanf(line, " %*u: %*x:%x %*x:%*x %*x %*x:%*x %*x:%*x %*x %*u %*u %lu", &lport, &ino) != 2)
            continue; /* the header */
        for (size_t i = 0; i < n && !found; i++)
            found = inodes[i] == ino && lport == port;
    }
    fclose(f);
    return found;
}

/* The id of the connection that streams the binlog to process pid, 0 if none: another
 * connector on the same server has a Binlog Dump connection of its own. */
static unsigned long dump_thread(MYSQL *m, pid_t pid)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_query_text(m, "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'", &b);
    unsigned long id = 0;
    for (char *line = b.data; !id && line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        const char *colon = strrchr(line, ':');
        if (colon && pid_has_local_port(pid, (unsigned)strtoul(colon + 1, NULL, 10)))
            id = strtoul(line, NULL, 10);
        line = next;
    }
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
    while ((id = dump_thread(m, pid)) == 0) {
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
    cr_assert_gt(log_events(e.log, JO_PATH("value", "op"), "\"r\""), 0, "no snapshot rows; see %s", e.log);
    cr_assert_not(log_has(e.log, "lacks the"), "see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ key.columns through Kafka and the cache */

#include <sqlite3.h>

static void wait_committed(const src_env *e, pid_t pid)
{
    char want[256], got[256] = "";
    e2e_server_gtid(NULL, want, sizeof want);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(e2e_status_gtid(e->status, got, sizeof got) && strcmp(got, want) == 0)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", e->log);
        cr_assert(tb_itest_now_ms() < deadline, "committed %s, server %s; see %s", got, want, e->log);
        usleep(50000);
    }
}

/* Every record of topic (one partition), appended to the array out as
 * {"key_text": the key's bytes, "key": the key read with Jansson, "value": the
 * value read with Jansson (null for a tombstone)}. */
static void topic_records(const char *brokers, const char *topic, json_t *out)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "e2e-source", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = tb_itest_now_ms() + 60000;
    for (bool eof = false; !eof;) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 60 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eof = true;
        else if (m->err)
            cr_assert_fail("%s: %s", topic, rd_kafka_message_errstr(m));
        else {
            json_t *rec = json_object();
            json_object_set_new(rec, "key_text", json_stringn(m->key ? m->key : "", m->key_len));
            json_object_set_new(rec, "key", jo_parse(m->key, m->key_len));
            json_object_set_new(rec, "value", m->payload ? jo_parse(m->payload, m->len) : json_null());
            json_array_append_new(out, rec);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* The number of records of topic_records whose key has exactly the bytes key
 * (NULL: any key) and whose member at path equals the JSON `expected`. */
static size_t count_records(json_t *recs, const char *key, const char *const *path, const char *expected)
{
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(recs, i, r) {
        const char *k = json_string_value(json_object_get(r, "key_text"));
        n += (!key || strcmp(k, key) == 0) && jo_equal_at(r, path, expected);
    }
    return n;
}

/* All records, for a failure message (a static buffer). */
static const char *records_text(json_t *recs)
{
    static char s[8192];
    char *d = json_dumps(recs, JSON_COMPACT);
    snprintf(s, sizeof s, "%s", d ? d : "?");
    free(d);
    return s;
}

/* A table without a primary key, keyed by key.columns: snapshot rows and
 * streamed changes carry the same keys, no key is null, a delete leaves a
 * tombstone for its key, a key change retires the old key, and the cache
 * replays the topic into the table the source holds. */
Test(e2e_source, key_columns_without_primary_key, .timeout = 240, .fini = e2e_kill_children)
{
    src_env e;
    char extra[1024];
    snprintf(extra, sizeof extra, "sink=kafka\noffsets.storage=kafka\nkafka.bootstrap.servers=%s\n",
             tb_itest_env("TRIBUTARY_TEST_KAFKA"));
    src_setup(&e, "e2ekey", extra);
    char cache[400];
    snprintf(cache, sizeof cache, "%s/cache.db", e.dir);
    FILE *f = fopen(e.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "key.columns.%s.nopk=code\ncache.path=%s\n", e.db, cache);
    fclose(f);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE TABLE %s.nopk (v INT NOT NULL, code VARCHAR(10) NOT NULL)", e.db);
    e2e_sql(m, "INSERT INTO %s.nopk VALUES (1, 'a'), (2, 'b'), (3, 'c')", e.db);
    mysql_close(m);

    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_committed(&e, pid);
    m = e2e_mysql();
    e2e_sql(m, "INSERT INTO %s.nopk VALUES (4, 'd')", e.db);
    e2e_sql(m, "UPDATE %s.nopk SET v = 10 WHERE code = 'a'", e.db);
    e2e_sql(m, "UPDATE %s.nopk SET code = 'bb' WHERE code = 'b'", e.db);
    e2e_sql(m, "DELETE FROM %s.nopk WHERE code = 'c'", e.db);
    mysql_close(m);
    wait_committed(&e, pid);
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 60000), 0, "see %s", e.log);
    e2e_assert_clean_log(e.log);

    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.nopk", e.db, e.db);
    json_t *recs = json_array();
    topic_records(tb_itest_env("TRIBUTARY_TEST_KAFKA"), topic, recs);
    const char *r = records_text(recs);
    cr_assert_eq(count_records(recs, NULL, JO_PATH("key"), "null"), 0, "a null key:\n%s", r);
    /* snapshot and stream key the same row alike */
    cr_assert_eq(count_records(recs, "{\"code\":\"a\"}", JO_PATH("value", "before"), "null"), 1,
                 "no snapshot record keyed {\"code\":\"a\"}:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"a\"}", JO_PATH("value", "after"), "{\"v\":1,\"code\":\"a\"}"), 1,
                 "no snapshot record keyed {\"code\":\"a\"}:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"a\"}", JO_PATH("value", "before"), "{\"v\":1,\"code\":\"a\"}"), 1,
                 "no update keyed {\"code\":\"a\"}:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"a\"}", JO_PATH("value", "after"), "{\"v\":10,\"code\":\"a\"}"), 1,
                 "no update keyed {\"code\":\"a\"}:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"c\"}", JO_PATH("value"), "null"), 1,
                 "no tombstone for the deleted key:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"b\"}", JO_PATH("value"), "null"), 1,
                 "no tombstone for the changed key:\n%s", r);
    cr_assert_eq(count_records(recs, "{\"code\":\"bb\"}", JO_PATH("value", "after"), "{\"v\":2,\"code\":\"bb\"}"), 1,
                 "no record for the new key:\n%s", r);
    json_decref(recs);

    /* the cache replays it */
    const char *cargs[] = {"cache", "--config", e.cfg, "--until-caught-up", NULL};
    char clog[400];
    snprintf(clog, sizeof clog, "%s/cache.log", e.dir);
    int rc = e2e_wait(e2e_spawn(cargs, clog), 120000);
    cr_assert_eq(rc, 0, "tributary cache failed (%d); see %s", rc, clog);
    e2e_assert_clean_log(clog);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(cache, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", cache);
    char q[256];
    snprintf(q, sizeof q, "SELECT code, v FROM \"%s.nopk\" ORDER BY code", e.db);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s: %s", q, sqlite3_errmsg(db));
    tb_buf got, want;
    tb_buf_init(&got, 0);
    tb_buf_init(&want, 0);
    while (sqlite3_step(st) == SQLITE_ROW)
        tb_buf_printf(&got, "%s|%s\n", (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    sqlite3_close(db);
    m = e2e_mysql();
    char sq[256];
    snprintf(sq, sizeof sq, "SELECT code, v FROM %s.nopk ORDER BY code", e.db);
    e2e_query_text(m, sq, &want);
    mysql_close(m);
    tb_buf_putc(&got, '\0');
    tb_buf_putc(&want, '\0');
    cr_assert_str_eq(tb_buf_cstr(&got), tb_buf_cstr(&want), "cache vs source");
    cr_assert_str_eq(tb_buf_cstr(&want), "a|10\nbb|2\nd|4\n");
    tb_buf_free(&got);
    tb_buf_free(&want);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ schema records across restarts */

/* The values of the records of topic_records whose key is db.table's
 * schema key {"db":…,"table":…}, in topic order (a new array). */
static json_t *schema_records(json_t *recs, const char *db, const char *table)
{
    json_t *out = json_array(), *r;
    size_t i;
    json_array_foreach(recs, i, r) {
        json_t *k = json_object_get(r, "key");
        const char *kd = json_string_value(json_object_get(k, "db"));
        const char *kt = json_string_value(json_object_get(k, "table"));
        if (json_object_size(k) == 2 && kd && kt && strcmp(kd, db) == 0 && strcmp(kt, table) == 0)
            json_array_append(out, json_object_get(r, "value"));
    }
    return out;
}

/* The schema record of a table version is written once, not again by every
 * run: a run (snapshot, then a streamed change), a second run with no DDL:
 * the schema topic holds one record for the table; an ALTER in a third run
 * adds a second one (version 2), and a fourth run writes none. */
Test(e2e_source, schema_record_written_once_across_restarts, .timeout = 240, .fini = e2e_kill_children)
{
    src_env e;
    const char *kafka = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    char extra[1024];
    snprintf(extra, sizeof extra, "sink=kafka\noffsets.storage=kafka\nkafka.bootstrap.servers=%s\nddl.alter.policy=warn\n",
             kafka);
    src_setup(&e, "e2eschema", extra);
    const char *args[] = {"run", "--config", e.cfg, NULL};
    char topic[300];
    snprintf(topic, sizeof topic, "%s.schema", e.db);
    for (int run = 0; run < 4; run++) {
        pid_t pid = e2e_spawn(args, e.log);
        wait_committed(&e, pid);
        MYSQL *m = e2e_mysql();
        if (run == 2)
            e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN w INT NULL", e.db);
        e2e_sql(m, "INSERT INTO %s.t (id, v) VALUES (%d, %d)", e.db, 10 + run, run);
        mysql_close(m);
        wait_committed(&e, pid);
        kill(pid, SIGTERM);
        cr_assert_eq(e2e_wait(pid, 60000), 0, "run %d did not stop cleanly; see %s", run, e.log);
        json_t *recs = json_array();
        topic_records(kafka, topic, recs);
        json_t *values = schema_records(recs, e.db, "t");
        size_t n = json_array_size(values);
        cr_assert_eq(n, run < 2 ? 1u : 2u, "after run %d: %zu schema records of %s.t: %s", run, n, e.db,
                     records_text(values));
        cr_assert(jo_expect_at(json_array_get(values, 0), JO_PATH("version"), "1"), "%s", records_text(values));
        if (n == 2) {
            json_t *second = json_array_get(values, 1);
            cr_assert(jo_expect_at(second, JO_PATH("version"), "2"), "%s", records_text(values));
            cr_assert_not_null(jo_find(json_object_get(second, "columns"), "name", "w"),
                               "the second record lacks the new column: %s", records_text(values));
            cr_assert_null(jo_find(json_object_get(json_array_get(values, 0), "columns"), "name", "w"),
                           "%s", records_text(values));
        }
        json_decref(values);
        json_decref(recs);
    }
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ topic names */

/* A table whose name is not a legal topic name beside a plain one: both
 * stream, the odd one to its sanitized topic, its events keep the real name. */
Test(e2e_source, odd_table_names_get_topics, .timeout = 240, .fini = e2e_kill_children)
{
    src_env e;
    char extra[512];
    snprintf(extra, sizeof extra, "sink=kafka\noffsets.storage=kafka\nkafka.bootstrap.servers=%s\n",
             tb_itest_env("TRIBUTARY_TEST_KAFKA"));
    src_setup(&e, "e2etopic", extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE TABLE %s.`we\"ird't` (id INT PRIMARY KEY, v INT NOT NULL)", e.db);
    e2e_sql(m, "CREATE TABLE %s.`caf\xc3\xa9 `` x` (id INT PRIMARY KEY)", e.db);
    e2e_sql(m, "INSERT INTO %s.`we\"ird't` VALUES (1, 1)", e.db);
    mysql_close(m);
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    wait_committed(&e, pid);
    m = e2e_mysql();
    e2e_sql(m, "INSERT INTO %s.`we\"ird't` VALUES (2, 2)", e.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (3, 3)", e.db);
    e2e_sql(m, "INSERT INTO %s.`caf\xc3\xa9 `` x` VALUES (7)", e.db);
    mysql_close(m);
    wait_committed(&e, pid);
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 60000), 0, "see %s", e.log);
    e2e_assert_clean_log(e.log);

    const char *brokers = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    char topic[300];
    json_t *recs = json_array();
    snprintf(topic, sizeof topic, "%s.%s.we_ird_t", e.db, e.db);
    topic_records(brokers, topic, recs);
    cr_assert_eq(count_records(recs, "{\"id\":1}", JO_PATH("value", "after"), "{\"id\":1,\"v\":1}"), 1, "%s: %s", topic,
                 records_text(recs));
    cr_assert_eq(count_records(recs, "{\"id\":2}", JO_PATH("value", "after"), "{\"id\":2,\"v\":2}"), 1, "%s: %s", topic,
                 records_text(recs));
    cr_assert_eq(count_records(recs, NULL, JO_PATH("value", "source", "table"), "\"we\\\"ird't\""), 2,
                 "the real name: %s", records_text(recs));
    json_array_clear(recs);
    snprintf(topic, sizeof topic, "%s.%s.caf____x", e.db, e.db);
    topic_records(brokers, topic, recs);
    cr_assert_eq(count_records(recs, "{\"id\":7}", JO_PATH("value", "after"), "{\"id\":7}"), 1, "%s: %s", topic,
                 records_text(recs));
    cr_assert_eq(count_records(recs, NULL, JO_PATH("value", "source", "table"), "\"caf\xc3\xa9 ` x\""), 1, "%s: %s",
                 topic, records_text(recs));
    json_array_clear(recs);
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    topic_records(brokers, topic, recs);
    cr_assert_eq(count_records(recs, "{\"id\":3}", JO_PATH("value", "after"), "{\"id\":3,\"v\":3}"), 1, "%s: %s", topic,
                 records_text(recs));
    json_decref(recs);
    e2e_rmtree(e.dir);
}

/* Two tables whose names map to one topic: refused at start naming both,
 * before anything is sent. */
Test(e2e_source, topic_collision_refused, .timeout = 120, .fini = e2e_kill_children)
{
    src_env e;
    src_setup(&e, "e2ecoll", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE TABLE %s.`a b` (id INT PRIMARY KEY)", e.db);
    e2e_sql(m, "CREATE TABLE %s.a_b (id INT PRIMARY KEY)", e.db);
    mysql_close(m);
    const char *args[] = {"run", "--config", e.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(args, e.log), 60000);
    cr_assert_eq(rc, 2, "exit %d, want 2; see %s", rc, e.log);
    char want[1024];
    snprintf(want, sizeof want, "tables %s.a b and %s.a_b both map to topic %s.%s.a_b", e.db, e.db, e.db, e.db);
    assert_log_has(e.log, want);
    cr_assert_eq(log_events(e.log, NULL, NULL), 0, "events were sent; see %s", e.log);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ start-up retries */

TestSuite(e2e_source, .init = tb_itest_restore_servers);

/* MariaDB down when the connector starts: it retries (a WARN per attempt
 * naming the address) and streams once the server is back. */
Test(e2e_source, source_down_at_start_is_retried, .timeout = 240, .fini = e2e_fini_servers)
{
    src_env e;
    src_setup(&e, "e2eretry", "source.connect.retry.ms=120000\n");
    tb_itest_testenv("stop-mysql");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    char want[200];
    snprintf(want, sizeof want, "source %s:%s: attempt 2 failed, retrying", tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"),
             tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"));
    long long deadline = tb_itest_now_ms() + 30000;
    while (!log_has(e.log, want)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped while the source was down; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "no \"%s\" after 30 s; see %s", want, e.log);
        usleep(50000);
    }
    tb_itest_testenv("start-mysql");
    deadline = tb_itest_now_ms() + 60000;
    while (!log_has(e.log, "streaming from the binlog")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "not streaming 60 s after the source came back; see %s", e.log);
        usleep(50000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", e.log);
    cr_assert_gt(log_events(e.log, JO_PATH("value", "op"), "\"r\""), 0, "no snapshot; see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* Kafka down when the connector starts with file offsets (nothing read from Kafka for the
 * position): the sink's first request is retried like the source (a WARN per attempt naming
 * the bootstrap servers), nothing is read from the source meanwhile, and it snapshots and
 * streams once the broker is back. */
Test(e2e_source, kafka_down_at_start_is_retried_with_file_offsets, .timeout = 240, .fini = e2e_fini_servers)
{
    src_env e;
    char extra[600];
    snprintf(extra, sizeof extra,
             "sink=kafka\nkafka.bootstrap.servers=%s\noffsets.storage=file\nha.enabled=false\n"
             "source.connect.retry.ms=120000\n",
             tb_itest_env("TRIBUTARY_TEST_KAFKA"));
    src_setup(&e, "e2ekretry", extra);
    FILE *f = fopen(e.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "offsets.file=%s\n", e.offsets);
    fclose(f);
    tb_itest_testenv("stop-kafka");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(args, e.log);
    char want[300];
    snprintf(want, sizeof want, "Kafka at %s: attempt 2 failed, retrying", tb_itest_env("TRIBUTARY_TEST_KAFKA"));
    long long deadline = tb_itest_now_ms() + 60000;
    while (!log_has(e.log, want)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped while Kafka was down; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "no \"%s\" after 60 s; see %s", want, e.log);
        usleep(50000);
    }
    cr_assert_not(log_has(e.log, "snapshot"), "the source was read while Kafka was down; see %s", e.log);
    tb_itest_testenv("start-kafka");
    deadline = tb_itest_now_ms() + 90000;
    while (!log_has(e.log, "streaming from the binlog")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", e.log);
        cr_assert(tb_itest_now_ms() < deadline, "not streaming 90 s after Kafka came back; see %s", e.log);
        usleep(50000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", e.log);
    e2e_assert_clean_log(e.log);
    e2e_rmtree(e.dir);
}

/* source.connect.retry.ms=0: a source or Kafka that cannot be reached fails
 * at once, naming the address and the bootstrap servers. */
Test(e2e_source, unreachable_fails_naming_the_address, .timeout = 120, .fini = e2e_kill_children)
{
    src_env e;
    src_setup(&e, "e2enoreach", "source.connect.retry.ms=0\nsource.port=1\n");
    const char *args[] = {"run", "--config", e.cfg, NULL};
    long long t0 = tb_itest_now_ms();
    int rc = e2e_wait(e2e_spawn(args, e.log), 60000);
    cr_assert_eq(rc, 1, "exit %d; see %s", rc, e.log);
    cr_assert_lt(tb_itest_now_ms() - t0, 20000, "not at once; see %s", e.log);
    assert_log_has(e.log, "tributary run: source 127.0.0.1:1: ");
    cr_assert_not(log_has(e.log, "attempt 1 failed"), "retried; see %s", e.log);

    src_env k;
    src_setup(&k, "e2enokafka",
              "sink=kafka\noffsets.storage=kafka\nkafka.bootstrap.servers=127.0.0.1:1\nsource.connect.retry.ms=1000\n");
    const char *kargs[] = {"run", "--config", k.cfg, NULL};
    rc = e2e_wait(e2e_spawn(kargs, k.log), 100000);
    cr_assert(rc == 1, "exit %d; see %s", rc, k.log);
    /* one attempt (librdkafka's own 30 s timeout) outlasts the 1 s window: no second one */
    assert_log_has(k.log, "tributary run: Kafka at 127.0.0.1:1: not reachable within source.connect.retry.ms");
    e2e_assert_clean_log(e.log);
    e2e_assert_clean_log(k.log);
    e2e_rmtree(e.dir);
    e2e_rmtree(k.dir);
}

/* A table filter that captures no table of the source: a WARN at start naming the filter (a run
 * with zero tables looks healthy otherwise), MySQL and SQLite alike; none when it captures one. */
static void filter_warn_run(const char *cfgpath, const char *log, bool want_warn, const char *started)
{
    const char *args[] = {"run", "--config", cfgpath, NULL};
    pid_t pid = e2e_spawn(args, log);
    long long deadline = tb_itest_now_ms() + 60000;
    const char *ready = want_warn ? "captures no table of the source" : started; /* logged after the check */
    while (!log_has(log, ready)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "no \"%s\" after 60 s; see %s", ready, log);
        usleep(50000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", log);
    cr_assert_eq(log_has(log, "captures no table of the source"), want_warn, "see %s", log);
}

Test(e2e_source, filter_that_matches_nothing_warns, .timeout = 240, .fini = e2e_kill_children)
{
    src_env e;
    src_setup(&e, "e2enomatch", NULL);
    FILE *f = fopen(e.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "tables.include=^%s_typo[.]\n", e.db); /* the later line wins */
    fclose(f);
    filter_warn_run(e.cfg, e.log, true, NULL);
    assert_log_has(e.log, "tables.include=^e2enomatch");

    /* SQLite: a table t, a filter for u, then one for t */
    char path[400], scfg[400], slog[400], slog2[400];
    snprintf(path, sizeof path, "%s/app.db", e.dir);
    snprintf(scfg, sizeof scfg, "%s/sqlite.properties", e.dir);
    snprintf(slog, sizeof slog, "%s/sqlite.log", e.dir);
    snprintf(slog2, sizeof slog2, "%s/sqlite2.log", e.dir);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY);", NULL, NULL,
                              NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    for (int i = 0; i < 2; i++) {
        f = fopen(scfg, "w");
        cr_assert_not_null(f);
        fprintf(f,
                "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=app\nsink=stdout\n"
                "offsets.storage=file\noffsets.file=%s/sqlite%d.offsets\nsource.sqlite.shadow.path=%s/shadow%d.db\n"
                "status.file=%s/sqlite%d.status\ntables.include=^app[.]%s$\n",
                e.db, path, e.dir, i, e.dir, i, e.dir, i, i == 0 ? "u" : "t");
        fclose(f);
        filter_warn_run(scfg, i == 0 ? slog : slog2, i == 0, ": capturing (wal mode");
    }
    e2e_rmtree(e.dir);
}

/* An idle SQLite database restarted: the application's last connection closing while the
 * connector is down checkpoints and resets the WAL; the restart finds the database as at its
 * committed position and says so at INFO, with no WARN (a WARN is for a gap that merged
 * changes); rows written after it stream as usual. */
Test(e2e_source, sqlite_idle_restart_is_quiet, .timeout = 240, .fini = e2e_kill_children)
{
    src_env e;
    src_setup(&e, "e2eidle", NULL);
    char path[400], scfg[400], log1[400], log2[400];
    snprintf(path, sizeof path, "%s/app.db", e.dir);
    snprintf(scfg, sizeof scfg, "%s/sqlite.properties", e.dir);
    snprintf(log1, sizeof log1, "%s/first.log", e.dir);
    snprintf(log2, sizeof log2, "%s/second.log", e.dir);
    FILE *f = fopen(scfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=app\nsink=stdout\n"
            "offsets.storage=file\noffsets.file=%s/sqlite.offsets\nsource.sqlite.shadow.path=%s/shadow.db\n"
            "status.file=%s/sqlite.status\nsource.sqlite.poll.ms=20\n",
            e.db, path, e.dir, e.dir, e.dir);
    fclose(f);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"
                                  "INSERT INTO t VALUES (1, 'one');", NULL, NULL, NULL),
                 SQLITE_OK);
    const char *args[] = {"run", "--config", scfg, NULL};
    pid_t pid = e2e_spawn(args, log1);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!log_has(log1, "\"one\"")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", log1);
        cr_assert(tb_itest_now_ms() < deadline, "row 1 not printed; see %s", log1);
        usleep(20000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", log1);
    sqlite3_close(db); /* the last connection: SQLite checkpoints and removes the WAL */
    struct stat sb;
    char wal[420];
    snprintf(wal, sizeof wal, "%s-wal", path);
    cr_assert(stat(wal, &sb) != 0, "the WAL is still there after the last connection closed");
    pid = e2e_spawn(args, log2);
    deadline = tb_itest_now_ms() + 60000;
    while (!log_has(log2, ": capturing (wal mode")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", log2);
        cr_assert(tb_itest_now_ms() < deadline, "not capturing after 60 s; see %s", log2);
        usleep(20000);
    }
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "INSERT INTO t VALUES (2, 'two');", NULL, NULL, NULL), SQLITE_OK);
    deadline = tb_itest_now_ms() + 60000;
    while (!log_has(log2, "\"two\"")) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped; see %s", log2);
        cr_assert(tb_itest_now_ms() < deadline, "row 2 not printed; see %s", log2);
        usleep(20000);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", log2);
    sqlite3_close(db);
    cr_expect(log_has(log2, "an empty gap transaction"), "no INFO for the reset WAL; see %s", log2);
    cr_expect(!log_has(log2, " WARN "), "a WARN on an idle restart; see %s", log2);
    cr_expect(!log_has(log2, "\"one\""), "row 1 sent again; see %s", log2);
    e2e_assert_clean_log(log2);
    e2e_rmtree(e.dir);
}
