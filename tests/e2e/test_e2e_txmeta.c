/*
 * transaction.topic=true: `tributary run` writes BEGIN/END records
 * with per-table event counts to <topic.prefix>.transaction, Debezium-style.
 * Built binary against the testenv MariaDB and Kafka, at-least-once and
 * exactly_once.
 */
#include <sys/stat.h>

#include "e2e_util.h"

/* Every record value of topic (partition 0) from the start to its end, one per line. */
static void dump_topic(const char *brokers, const char *topic, tb_buf *out)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "e2e-txmeta", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = tb_itest_now_ms() + 30000;
    for (;;) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 30 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        bool eof = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
        cr_assert(eof || !m->err, "consume %s: %s", topic, rd_kafka_message_errstr(m));
        if (!eof && m->payload) {
            tb_buf_append(out, m->payload, m->len);
            tb_buf_putc(out, '\n');
        }
        rd_kafka_message_destroy(m);
        if (eof)
            break;
    }
    tb_buf_putc(out, '\0');
    out->len--;
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* Poll the status file until the committed GTID equals the server's. */
static void wait_caught_up(MYSQL *m, const char *status, pid_t pid, const char *log)
{
    char want[256], got[256] = "";
    e2e_server_gtid(m, want, sizeof want);
    long long deadline = tb_itest_now_ms() + 60000;
    while (!(e2e_status_gtid(status, got, sizeof got) && strcmp(got, want) == 0)) {
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "committed %s, server %s; see %s", got, want, log);
        usleep(50000);
    }
}

static void txmeta_case(bool exactly_once)
{
    char db[96], dir[256], cfgp[320], log[320], status[320];
    tb_itest_unique(db, sizeof db, exactly_once ? "e2etxe" : "e2etxa");
    snprintf(dir, sizeof dir, "/tmp/%s", db);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(cfgp, sizeof cfgp, "%s/run.properties", dir);
    snprintf(log, sizeof log, "%s/run.log", dir);
    snprintf(status, sizeof status, "%s/status.json", dir);
    const char *brokers = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", db);
    e2e_sql(m, "CREATE TABLE %s.t1 (id INT PRIMARY KEY, v INT)", db);
    e2e_sql(m, "CREATE TABLE %s.t2 (id INT PRIMARY KEY, v INT)", db);
    e2e_sql(m, "CREATE TABLE %s.skipped (id INT PRIMARY KEY, v INT)", db);
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=%s[.]t[12]\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=kafka\noffsets.commit.interval.ms=200\nstatus.file=%s\nsnapshot.mode=initial\n"
            "transaction.topic=true\nexactly.once=%s\nheartbeat.interval.ms=200\n",
            db, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            8000 + (unsigned)getpid() % 1000, db, db, brokers, status, exactly_once ? "true" : "false");
    fclose(f);
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = e2e_spawn(args, log);
    wait_caught_up(m, status, pid, log); /* streaming: the changes below are not snapshot rows */

    e2e_sql(m, "BEGIN");
    e2e_sql(m, "INSERT INTO %s.t1 VALUES (1, 1), (2, 2)", db);
    e2e_sql(m, "INSERT INTO %s.skipped VALUES (1, 1)", db);
    e2e_sql(m, "UPDATE %s.t2 SET v = 0 WHERE id = 0", db); /* no row: no event */
    e2e_sql(m, "INSERT INTO %s.t2 VALUES (7, 7)", db);
    e2e_sql(m, "COMMIT");
    e2e_sql(m, "INSERT INTO %s.skipped VALUES (2, 2)", db); /* a transaction without captured changes */
    e2e_sql(m, "UPDATE %s.t1 SET id = 3 WHERE id = 1", db);  /* key change: delete + create */
    wait_caught_up(m, status, pid, log);
    mysql_close(m);
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "tributary run did not stop cleanly; see %s", log);
    e2e_assert_clean_log(log);

    char topic[160];
    snprintf(topic, sizeof topic, "%s.transaction", db);
    tb_buf recs;
    tb_buf_init(&recs, 0);
    dump_topic(brokers, topic, &recs);
    fprintf(stderr, "e2e_txmeta[%s]: %s\n", exactly_once ? "exactly-once" : "at-least-once", tb_buf_cstr(&recs));
    const char *s = tb_buf_cstr(&recs);
    /* two transactions with captured changes: BEGIN, END, BEGIN, END (one record a line) */
    json_t *rec[5] = {NULL};
    size_t n = 0;
    for (const char *l = s, *nl; *l && (nl = strchr(l, '\n')); l = nl + 1) {
        cr_assert_lt(n, 4u, "more than two transactions:\n%s", s);
        rec[n++] = jo_parse(l, (size_t)(nl - l));
    }
    cr_assert_eq(n, 4u, "want BEGIN END BEGIN END:\n%s", s);
    static const char *const want_status[] = {"\"BEGIN\"", "\"END\"", "\"BEGIN\"", "\"END\""};
    for (size_t i = 0; i < 4; i++)
        cr_assert(jo_expect_at(rec[i], JO_PATH("status"), want_status[i]), "record %zu of\n%s", i, s);
    for (size_t i = 0; i < 4; i += 2) /* a BEGIN has no counts yet */
        cr_assert(jo_expect_at(rec[i], JO_PATH("event_count"), "null") &&
                      jo_expect_at(rec[i], JO_PATH("data_collections"), "null"),
                  "BEGIN %zu without null counts:\n%s", i / 2, s);
    char c1[512], c2[512];
    snprintf(c1, sizeof c1,
             "[{\"data_collection\":\"%s.t1\",\"event_count\":2},{\"data_collection\":\"%s.t2\",\"event_count\":1}]",
             db, db);
    snprintf(c2, sizeof c2, "[{\"data_collection\":\"%s.t1\",\"event_count\":1}]", db);
    cr_assert(jo_expect_at(rec[1], JO_PATH("event_count"), "3") && jo_expect_at(rec[1], JO_PATH("data_collections"), c1),
              "first END:\n%s", s);
    cr_assert(jo_expect_at(rec[3], JO_PATH("event_count"), "1") && jo_expect_at(rec[3], JO_PATH("data_collections"), c2),
              "second END:\n%s", s);
    for (size_t i = 0; i < 4; i++)
        json_decref(rec[i]);
    tb_buf_free(&recs);
    e2e_rmtree(dir);
}

Test(e2e_txmeta, at_least_once, .timeout = 120, .fini = e2e_kill_children)
{
    txmeta_case(false);
}

Test(e2e_txmeta, exactly_once, .timeout = 120, .fini = e2e_kill_children)
{
    txmeta_case(true);
}
