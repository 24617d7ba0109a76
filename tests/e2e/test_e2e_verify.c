/*
 * `tributary verify` against the real MariaDB, SQLite and Kafka (DESIGN 10a):
 * drift planted by hand (a tombstone produced into a topic, an extra key, a
 * changed value, a value with a column missing, a row deleted from the
 * cache) is found exactly, in both value encodings, for a composite key and
 * a key.columns table; a live connector under a steady write load shows no
 * difference. verify's --json output is read with Jansson. With a digest map
 * capped far below a table's keys the report is the same (hash partitions on
 * disk); with metrics.listen, /metrics is scraped and parsed line by line.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "tb_cast.h"
#include "e2e_util.h"

typedef struct vt_env {
    char db[96], dir[256], cfg[300], log[300], out[300], cache[300], src[300];
    pid_t run, cachep;
} vt_env;

static void vt_fini(void) { e2e_kill_children(); }

static void vt_setup(vt_env *e, const char *prefix)
{
    memset(e, 0, sizeof(*e));
    tb_itest_unique(e->db, sizeof e->db, prefix);
    snprintf(e->dir, sizeof e->dir, "/tmp/e2e_%s", e->db);
    cr_assert_eq(mkdir(e->dir, 0700), 0, "mkdir %s: %s", e->dir, strerror(errno));
    snprintf(e->cfg, sizeof e->cfg, "%s/run.properties", e->dir);
    snprintf(e->log, sizeof e->log, "%s/run.log", e->dir);
    snprintf(e->out, sizeof e->out, "%s/verify.json", e->dir);
    snprintf(e->cache, sizeof e->cache, "%s/cache.db", e->dir);
    snprintf(e->src, sizeof e->src, "%s/src.db", e->dir);
}

/* The connector's configuration: MariaDB (sqlite false) or the SQLite file e->src. */
static void vt_config(vt_env *e, bool sqlite, const char *extra)
{
    FILE *f = fopen(e->cfg, "w");
    cr_assert_not_null(f);
    if (sqlite)
        fprintf(f, "name=%s\nsource.type=sqlite\nsource.path=%s\nsource.database.name=%s\n"
                   "source.sqlite.shadow.path=%s/shadow.db\nsource.sqlite.poll.ms=20\n",
                e->db, e->src, e->db, e->dir);
    else
        fprintf(f,
                "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
                "source.server.id=%u\nsource.heartbeat.ms=500\ntables.include=%s[.].*\n",
                e->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
                tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
                9000 + (unsigned)getpid() % 1000, e->db);
    fprintf(f,
            "topic.prefix=%s\nkafka.bootstrap.servers=%s\nsink=kafka\noffsets.storage=kafka\n"
            "offsets.commit.interval.ms=100\nheartbeat.interval.ms=200\ntopic.partitions=3\nha.enabled=false\n"
            "status.file=%s/status.json\ncache.path=%s\n%s",
            e->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), e->dir, e->cache, extra ? extra : "");
    fclose(f);
}

static void vt_start(vt_env *e)
{
    const char *args[] = {"run", "--config", e->cfg, NULL};
    e->run = e2e_spawn(args, e->log);
}

static void vt_start_cache(vt_env *e)
{
    char log[320];
    snprintf(log, sizeof log, "%s/cache.log", e->dir);
    const char *args[] = {"cache", "--config", e->cfg, NULL};
    e->cachep = e2e_spawn(args, log);
}

/* Run verify with args (NULL-terminated, after --config); its JSON report is
 * parsed into *report (may be NULL). Returns the exit code. */
static int vt_verify(vt_env *e, const char *const *args, json_t **report)
{
    const char *argv[14] = {"verify", "--config", e->cfg, "--json", "--wait-ms", "20000"};
    size_t n = 6;
    for (size_t i = 0; args && args[i] && n < 13; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    unlink(e->out);
    char cmd[1024];
    size_t at = (size_t)snprintf(cmd, sizeof cmd, "'%s'", E2E_BIN);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(cmd + at, sizeof cmd - at, " '%s'", argv[i]);
    snprintf(cmd + at, sizeof cmd - at, " > '%s' 2>> '%s/verify.log'", e->out, e->dir);
    int st = system(cmd);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (report) {
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert(e2e_slurp(e->out, &b), "no output from verify");
        *report = b.len ? jo_parse(b.data, b.len) : NULL;
        tb_buf_free(&b);
    }
    return code;
}

/* Wait until verify says equal (the connector and the cache caught up). */
static void vt_wait_equal(vt_env *e, const char *against)
{
    const char *args[] = {"--against", against, NULL};
    long long deadline = tb_itest_now_ms() + 120000;
    int code;
    while ((code = vt_verify(e, args, NULL)) != 0 && tb_itest_now_ms() < deadline)
        usleep(300000);
    cr_assert_eq(code, 0, "verify --against %s never found the topics equal (exit %d); see %s", against, code,
                 e->dir);
}

/* The result of table `table` in the report's results[ri]. */
static json_t *vt_table(json_t *report, size_t ri, const char *table)
{
    json_t *tabs = json_object_get(json_array_get(json_object_get(report, "results"), ri), "tables");
    size_t i;
    json_t *t;
    json_array_foreach(tabs, i, t) if (strcmp(json_string_value(json_object_get(t, "table")), table) == 0) return t;
    cr_assert_fail("table %s not in the report", table);
    return NULL;
}

static void vt_expect(json_t *t, long long missing, long long extra, long long different)
{
    char *txt = json_dumps(t, JSON_COMPACT);
    cr_expect_eq(json_integer_value(json_object_get(t, "missing")), missing, "missing in %s", txt);
    cr_expect_eq(json_integer_value(json_object_get(t, "extra")), extra, "extra in %s", txt);
    cr_expect_eq(json_integer_value(json_object_get(t, "different")), different, "different in %s", txt);
    free(txt);
}

/* The key of the first sample of a kind equals the JSON `key`. */
static void vt_expect_key(json_t *t, const char *kind, const char *key)
{
    json_t *s = json_array_get(json_object_get(json_object_get(t, "samples"), kind), 0);
    cr_assert_not_null(s, "no %s sample", kind);
    json_t *want = jo_parse(key, strlen(key));
    cr_expect(json_equal(json_object_get(s, "key"), want), "%s key: want %s", kind, key);
    json_decref(want);
}

/* Produce one record (value NULL: a tombstone) with the connector's partitioner. */
static void vt_produce(const char *topic, const char *key, const char *value)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_topic_conf_t *tc = rd_kafka_topic_conf_new();
    rd_kafka_topic_conf_set(tc, "partitioner", "murmur2_random", errstr, sizeof errstr);
    rd_kafka_conf_set_default_topic_conf(conf, tc);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_resp_err_t err =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(TB_UNCONST(key), strlen(key)),
                          RD_KAFKA_V_VALUE(TB_UNCONST(value), value ? strlen(value) : 0),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    cr_assert_eq(err, 0, "produce: %s", rd_kafka_err2str(err));
    cr_assert_eq(rd_kafka_flush(rk, 30000), 0);
    rd_kafka_destroy(rk);
}

static void vt_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    cr_assert_geq(e2e_wait(pid, 60000), 0, "did not stop");
}

TestSuite(verify, .timeout = 600, .fini = vt_fini);

/* ------------------------------------------------------------ MariaDB */

Test(verify, mariadb_drift)
{
    vt_env e;
    vt_setup(&e, "vfy");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), f FLOAT, d DECIMAL(6,2), ts TIMESTAMP(3) NULL)",
            e.db);
    e2e_sql(m, "CREATE TABLE %s.c (a INT, b VARCHAR(8), x INT, PRIMARY KEY (b, a))", e.db);
    e2e_sql(m, "CREATE TABLE %s.nk (code VARCHAR(8) NOT NULL, v INT)", e.db);
    e2e_sql(m, "CREATE TABLE %s.empty (id INT PRIMARY KEY)", e.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1,'a',1.5,'1.50','2024-01-01 00:00:00.123'),(2,'b',NULL,NULL,NULL),"
               "(3,'c',0.1,'-3.25',NULL)", e.db);
    e2e_sql(m, "INSERT INTO %s.c VALUES (1,'x',1),(2,'x',2),(1,'y',3)", e.db);
    e2e_sql(m, "INSERT INTO %s.nk VALUES ('k1',1),('k2',2)", e.db);
    char extra[256];
    snprintf(extra, sizeof extra, "key.columns.%s.nk=code\n", e.db);
    vt_config(&e, false, extra);
    vt_start(&e);
    /* streamed changes after the snapshot */
    e2e_sql(m, "INSERT INTO %s.t VALUES (4,'d',4.25,'4.00',NOW(3))", e.db);
    e2e_sql(m, "UPDATE %s.t SET v='bb' WHERE id=2", e.db);
    e2e_sql(m, "UPDATE %s.c SET x=20 WHERE a=2", e.db);
    e2e_sql(m, "DELETE FROM %s.nk WHERE code='k1'", e.db);
    e2e_sql(m, "INSERT INTO %s.nk VALUES ('k3',3)", e.db);
    vt_wait_equal(&e, "topics");

    json_t *r = NULL;
    cr_assert_eq(vt_verify(&e, NULL, &r), 0);
    cr_expect_eq(json_integer_value(json_object_get(vt_table(r, 0, "t"), "rows")), 4);
    cr_expect_eq(json_integer_value(json_object_get(vt_table(r, 0, "c"), "rows")), 3);
    cr_expect_eq(json_integer_value(json_object_get(vt_table(r, 0, "nk"), "rows")), 2);
    cr_expect_eq(json_integer_value(json_object_get(vt_table(r, 0, "empty"), "rows")), 0);
    json_decref(r);

    /* drift: a tombstone, an extra key, a changed value, a value with a column missing */
    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    vt_produce(topic, "{\"id\":1}", NULL);
    vt_produce(topic, "{\"id\":2}",
               "{\"before\":null,\"after\":{\"id\":2,\"v\":\"bb\",\"d\":null,\"ts\":null},\"op\":\"u\"}");
    snprintf(topic, sizeof topic, "%s.%s.c", e.db, e.db);
    vt_produce(topic, "{\"b\":\"zz\",\"a\":9}",
               "{\"before\":null,\"after\":{\"a\":9,\"b\":\"zz\",\"x\":0},\"op\":\"c\"}");
    snprintf(topic, sizeof topic, "%s.%s.nk", e.db, e.db);
    vt_produce(topic, "{\"code\":\"k2\"}", "{\"before\":null,\"after\":{\"code\":\"k2\",\"v\":22},\"op\":\"u\"}");

    cr_assert_eq(vt_verify(&e, NULL, &r), 1);
    json_t *t = vt_table(r, 0, "t");
    vt_expect(t, 1, 0, 1);
    vt_expect_key(t, "missing", "{\"id\":1}");
    vt_expect_key(t, "different", "{\"id\":2}");
    json_t *s = json_array_get(json_object_get(json_object_get(t, "samples"), "different"), 0);
    jo_expect_at(s, JO_PATH("topic"), "{\"id\":2,\"v\":\"bb\",\"d\":null,\"ts\":null}");
    jo_expect_at(s, JO_PATH("source"), "{\"id\":2,\"v\":\"bb\",\"f\":null,\"d\":null,\"ts\":null}");
    json_t *c = vt_table(r, 0, "c");
    vt_expect(c, 0, 1, 0);
    vt_expect_key(c, "extra", "{\"b\":\"zz\",\"a\":9}");
    json_t *nk = vt_table(r, 0, "nk");
    vt_expect(nk, 0, 0, 1);
    vt_expect_key(nk, "different", "{\"code\":\"k2\"}");
    vt_expect(vt_table(r, 0, "empty"), 0, 0, 0);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(json_object_get(r, "results"), 0),
                                                    "differences")),
                 4);
    json_decref(r);

    /* --tables keeps to the tables it names */
    const char *only[] = {"--tables", "[.]c$", NULL};
    cr_assert_eq(vt_verify(&e, only, &r), 1);
    json_t *tabs = json_object_get(json_array_get(json_object_get(r, "results"), 0), "tables");
    cr_expect_eq(json_array_size(tabs), 1);
    vt_expect(vt_table(r, 0, "c"), 0, 1, 0);
    json_decref(r);

    /* usage errors: exit 2 */
    const char *bad[] = {"--against", "nowhere", NULL};
    cr_expect_eq(vt_verify(&e, bad, NULL), 2);
    const char *bad2[] = {"--against", "cache", "--repair", NULL};
    cr_expect_eq(vt_verify(&e, bad2, NULL), 2);
    /* a source that cannot be reached: exit 3 */
    const char *gone[] = {"--set", "source.port=1", "--set", "source.connect.retry.ms=0", NULL};
    cr_expect_eq(vt_verify(&e, gone, NULL), 3);

    /* --repair writes what makes the topics equal, then compares again: equal */
    const char *fix[] = {"--repair", NULL};
    cr_assert_eq(vt_verify(&e, fix, &r), 0);
    json_t *res = json_array_get(json_object_get(r, "results"), 0);
    cr_expect_eq(json_integer_value(json_object_get(res, "repaired_upserts")), 3);
    cr_expect_eq(json_integer_value(json_object_get(res, "repaired_tombstones")), 1);
    cr_expect_eq(json_integer_value(json_object_get(res, "differences")), 0);
    json_decref(r);
    cr_assert_eq(vt_verify(&e, NULL, NULL), 0);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ the cache */

Test(verify, cache_drift)
{
    vt_env e;
    vt_setup(&e, "vfyc");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), n BIGINT UNSIGNED, j JSON)", e.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1,'a',18446744073709551615,'{\"x\":[1,2]}'),(2,'b',NULL,NULL),"
               "(3,'c',0,'null')", e.db);
    vt_config(&e, false, NULL);
    vt_start(&e);
    vt_start_cache(&e);
    e2e_sql(m, "UPDATE %s.t SET v='aa' WHERE id=1", e.db);
    vt_wait_equal(&e, "both");

    /* a row missing from the cache (the cache stopped, its file changed by hand) */
    vt_stop(e.cachep);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(e.cache, &db), SQLITE_OK);
    char q[300];
    snprintf(q, sizeof q, "DELETE FROM \"%s.t\" WHERE id=3", e.db);
    cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    snprintf(q, sizeof q, "UPDATE \"%s.t\" SET v='changed' WHERE id=2", e.db);
    cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);

    json_t *r = NULL;
    const char *both[] = {"--against", "both", NULL};
    cr_assert_eq(vt_verify(&e, both, &r), 1);
    vt_expect(vt_table(r, 0, "t"), 0, 0, 0); /* the topic is right */
    json_t *t = vt_table(r, 1, "t");
    vt_expect(t, 1, 0, 1);
    vt_expect_key(t, "missing", "{\"id\":3}");
    vt_expect_key(t, "different", "{\"id\":2}");
    json_decref(r);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ value.encoding=debezium */

Test(verify, debezium_encoding)
{
    vt_env e;
    vt_setup(&e, "vfyd");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, f FLOAT, ts TIMESTAMP(3) NULL, d DECIMAL(8,3), dt DATE,"
               " b VARBINARY(8))", e.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (1,3.14159,'2024-01-01 10:00:00.100','1.500','2024-02-29',x'0001'),"
               "(2,NULL,NULL,NULL,NULL,NULL)", e.db);
    vt_config(&e, false, "value.encoding=debezium\nkey.schemas=false\n");
    vt_start(&e);
    e2e_sql(m, "INSERT INTO %s.t VALUES (3,2.71828,'2024-01-01 10:00:00.120','-0.001','1970-01-01',x'ff')", e.db);
    e2e_sql(m, "UPDATE %s.t SET f=1.1 WHERE id=2", e.db);
    vt_wait_equal(&e, "topics");

    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    vt_produce(topic, "{\"id\":3}", "{\"before\":null,\"after\":{\"id\":3,\"f\":2.71828,\"ts\":null,\"d\":null,"
                                    "\"dt\":0,\"b\":null},\"op\":\"u\"}");
    vt_produce(topic, "{\"id\":1}", NULL);
    json_t *r = NULL;
    cr_assert_eq(vt_verify(&e, NULL, &r), 1);
    json_t *t = vt_table(r, 0, "t");
    vt_expect(t, 1, 0, 1);
    vt_expect_key(t, "missing", "{\"id\":1}");
    vt_expect_key(t, "different", "{\"id\":3}");
    json_decref(r);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ SQLite */

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

Test(verify, sqlite_drift)
{
    vt_env e;
    vt_setup(&e, "vfys");
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(e.src, &db), SQLITE_OK);
    sq_exec(db, "PRAGMA journal_mode=WAL");
    sq_exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, r REAL, b BLOB)");
    sq_exec(db, "CREATE TABLE c (a INTEGER, b TEXT, x, PRIMARY KEY (a, b)) WITHOUT ROWID");
    sq_exec(db, "INSERT INTO t VALUES (1,'a',0.5,x'00ff'),(2,'b',NULL,NULL),(3,'c',-1e300,'text')");
    sq_exec(db, "INSERT INTO c VALUES (1,'x',1),(1,'y','two'),(2,'x',NULL)");
    vt_config(&e, true, NULL);
    vt_start(&e);
    sq_exec(db, "BEGIN; UPDATE t SET v='bb' WHERE id=2; DELETE FROM c WHERE a=2; INSERT INTO c VALUES (3,'z',3);"
                " COMMIT");
    vt_wait_equal(&e, "topics");
    sq_exec(db, "INSERT INTO t VALUES (4,'d',4,NULL)");
    vt_wait_equal(&e, "topics");

    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    vt_produce(topic, "{\"id\":3}", NULL);
    snprintf(topic, sizeof topic, "%s.%s.c", e.db, e.db);
    vt_produce(topic, "{\"a\":7,\"b\":\"q\"}", "{\"before\":null,\"after\":{\"a\":7,\"b\":\"q\",\"x\":1},\"op\":\"c\"}");
    vt_produce(topic, "{\"a\":1,\"b\":\"y\"}", "{\"before\":null,\"after\":{\"a\":1,\"b\":\"y\",\"x\":2},\"op\":\"u\"}");
    json_t *r = NULL;
    cr_assert_eq(vt_verify(&e, NULL, &r), 1);
    json_t *t = vt_table(r, 0, "t");
    vt_expect(t, 1, 0, 0);
    vt_expect_key(t, "missing", "{\"id\":3}");
    json_t *c = vt_table(r, 0, "c");
    vt_expect(c, 0, 1, 1);
    vt_expect_key(c, "extra", "{\"a\":7,\"b\":\"q\"}");
    vt_expect_key(c, "different", "{\"a\":1,\"b\":\"y\"}");
    json_decref(r);
    const char *fix[] = {"--repair", NULL};
    cr_assert_eq(vt_verify(&e, fix, &r), 0);
    json_t *res = json_array_get(json_object_get(r, "results"), 0);
    cr_expect_eq(json_integer_value(json_object_get(res, "repaired_upserts")), 2);
    cr_expect_eq(json_integer_value(json_object_get(res, "repaired_tombstones")), 1);
    json_decref(r);
    cr_assert_eq(vt_verify(&e, NULL, NULL), 0);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    sqlite3_close(db);
    e2e_rmtree(e.dir);
}

/* Rows whose declared key holds NULL (a rowid table allows it): each is keyed with its rowid as
 * well, so the topic, the cache and verify hold them apart. The cache is read with SQL against
 * the source (an oracle beside verify, which renders the source's keys with the connector's
 * encoder), with the run streaming changes to one NULL-key row while others share its key. */
Test(verify, sqlite_null_keys)
{
    vt_env e;
    vt_setup(&e, "vfyn");
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(e.src, &db), SQLITE_OK);
    sq_exec(db, "PRAGMA journal_mode=WAL");
    sq_exec(db, "CREATE TABLE n (k TEXT PRIMARY KEY, v INTEGER)");
    sq_exec(db, "CREATE TABLE m (a INTEGER, b TEXT, v, PRIMARY KEY (a, b))");
    sq_exec(db, "INSERT INTO n VALUES (NULL,1),(NULL,2),('a',3),(NULL,4)");
    sq_exec(db, "INSERT INTO m VALUES (1,NULL,1),(1,NULL,2),(NULL,NULL,3),(1,'x',4)");
    vt_config(&e, true, NULL);
    vt_start(&e);
    vt_start_cache(&e);
    vt_wait_equal(&e, "both");
    sq_exec(db, "BEGIN; UPDATE n SET v=20 WHERE v=2; DELETE FROM n WHERE v=1; INSERT INTO n VALUES (NULL,5);"
                " UPDATE n SET k=NULL WHERE k='a'; UPDATE m SET v=30 WHERE v=3; DELETE FROM m WHERE v=1; COMMIT");
    sq_exec(db, "UPDATE n SET k='b' WHERE v=4; INSERT INTO m VALUES (1,NULL,5)");
    vt_wait_equal(&e, "both");

    /* the cache, read with SQL, holds the source's rows: none collapsed */
    static const char *const sel[2] = {"SELECT group_concat(coalesce(k,'~') || ':' || v, ',') FROM (SELECT k, v FROM ",
                                       "SELECT group_concat(coalesce(a,'~') || coalesce(b,'~') || ':' || v, ',') FROM "
                                       "(SELECT a, b, v FROM "};
    static const char *const tab[2] = {"n", "m"};
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open(e.cache, &c), SQLITE_OK);
    for (int i = 0; i < 2; i++) {
        char want[256] = "", got[256] = "", sql[300];
        sqlite3_stmt *st = NULL;
        char *sq = sqlite3_mprintf("%s\"%w\" ORDER BY v)", sel[i], tab[i]);
        cr_assert_eq(sqlite3_prepare_v2(db, sq, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
        sqlite3_free(sq);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        snprintf(want, sizeof want, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        cr_assert_str_eq(want, i ? "1~:2,1x:4,1~:5,~~:30" : "~:3,b:4,~:5,~:20", "the source as the test made it");
        snprintf(sql, sizeof sql, "%s\"%s.%s\" ORDER BY v)", sel[i], e.db, tab[i]);
        cr_assert_eq(sqlite3_prepare_v2(c, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(c));
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        snprintf(got, sizeof got, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        cr_expect_str_eq(got, want, "table %s: the cache holds %s, the source %s (see %s)", tab[i], got, want,
                         e.dir);
    }
    sqlite3_close(c);

    /* a NULL-key record gone from the topic is found missing under its key with the rowid */
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rowid FROM n WHERE v=20", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char key[64], topic[300];
    snprintf(key, sizeof key, "{\"k\":null,\"__rowid\":%lld}", (long long)sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    snprintf(topic, sizeof topic, "%s.%s.n", e.db, e.db);
    vt_produce(topic, key, NULL);
    json_t *r = NULL;
    const char *topics[] = {"--against", "topics", NULL};
    cr_assert_eq(vt_verify(&e, topics, &r), 1);
    json_t *t = vt_table(r, 0, "n");
    vt_expect(t, 1, 0, 0);
    vt_expect_key(t, "missing", key);
    vt_expect(vt_table(r, 0, "m"), 0, 0, 0);
    json_decref(r);
    vt_stop(e.cachep);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    sqlite3_close(db);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ no false positives */

typedef struct vt_load {
    const char *db;
    volatile int stop;
    long long writes;
} vt_load;

static void *load_main(void *arg)
{
    vt_load *l = arg;
    MYSQL *m = e2e_mysql_try();
    unsigned seed = 7;
    for (long long i = 0; m && !l->stop; i++) {
        char q[512];
        int id = (int)(rand_r(&seed) % 300);
        switch (rand_r(&seed) % 4) {
        case 0:
            snprintf(q, sizeof q, "REPLACE INTO %s.t VALUES (%d, %lld, 'w')", l->db, id, i);
            break;
        case 1:
            snprintf(q, sizeof q, "UPDATE %s.t SET v=v+1 WHERE id BETWEEN %d AND %d", l->db, id, id + 20);
            break;
        case 2:
            snprintf(q, sizeof q, "DELETE FROM %s.t WHERE id=%d", l->db, id);
            break;
        default:
            snprintf(q, sizeof q, "UPDATE %s.t SET id=id+1000 WHERE id=%d", l->db, id); /* a key change */
            break;
        }
        if (mysql_query(m, q) == 0)
            l->writes++;
        usleep(2000);
    }
    if (m)
        mysql_close(m);
    return NULL;
}

Test(verify, live_load_no_false_positive)
{
    vt_env e;
    vt_setup(&e, "vfyl");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v BIGINT, s VARCHAR(8))", e.db);
    e2e_sql(m, "USE %s", e.db);
    e2e_sql(m, "INSERT INTO t SELECT seq, seq, 's' FROM seq_1_to_300");
    vt_config(&e, false, NULL);
    vt_start(&e);
    vt_wait_equal(&e, "topics");
    vt_load l = {.db = e.db};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, load_main, &l), 0);
    for (int k = 0; k < 3; k++) {
        json_t *r = NULL;
        int code = vt_verify(&e, NULL, &r);
        char *txt = r ? json_dumps(r, JSON_COMPACT) : NULL;
        cr_expect_eq(code, 0, "verify under load: exit %d: %s", code, txt ? txt : "");
        fprintf(stderr, "verify under load: in flight %lld, passes %lld\n",
                (long long)json_integer_value(json_object_get(vt_table(r, 0, "t"), "in_flight")),
                (long long)json_integer_value(json_object_get(json_array_get(json_object_get(r, "results"), 0), "passes")));
        free(txt);
        json_decref(r);
    }
    l.stop = 1;
    pthread_join(th, NULL);
    cr_expect_gt(l.writes, 50, "the load wrote %lld times", l.writes);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ metrics */

/* One sample of a Prometheus text exposition (format 0.0.4), parsed: the
 * name, up to 8 label pairs, the value. */
typedef struct prom_sample {
    char name[128];
    char lk[8][64], lv[8][256];
    int nl;
    double value;
} prom_sample;

/* Parse one sample line; false for a line that is not one (comments, blank). */
static bool prom_parse_line(const char *line, size_t len, prom_sample *s)
{
    memset(s, 0, sizeof(*s));
    size_t i = 0, n = 0;
    if (len == 0 || line[0] == '#')
        return false;
    while (i < len && (isalnum((unsigned char)line[i]) || line[i] == '_' || line[i] == ':')) {
        cr_assert_lt(n, sizeof s->name - 1, "metric name too long: %.*s", (int)len, line);
        s->name[n++] = line[i++];
    }
    cr_assert_gt(n, 0, "no metric name: %.*s", (int)len, line);
    if (i < len && line[i] == '{') {
        i++;
        while (i < len && line[i] != '}') {
            cr_assert_lt(s->nl, 8);
            size_t k = 0;
            while (i < len && line[i] != '=')
                s->lk[s->nl][k++] = line[i++];
            cr_assert(i + 1 < len && line[i + 1] == '"', "label without a quoted value: %.*s", (int)len, line);
            i += 2;
            size_t v = 0;
            while (i < len && line[i] != '"') {
                if (line[i] == '\\' && i + 1 < len) {
                    i++;
                    s->lv[s->nl][v++] = line[i] == 'n' ? '\n' : line[i];
                } else {
                    s->lv[s->nl][v++] = line[i];
                }
                i++;
            }
            cr_assert(i < len, "unterminated label value: %.*s", (int)len, line);
            i++; /* the closing quote */
            s->nl++;
            if (i < len && line[i] == ',')
                i++;
        }
        cr_assert(i < len, "unterminated label set: %.*s", (int)len, line);
        i++;
    }
    cr_assert(i < len && line[i] == ' ', "no value: %.*s", (int)len, line);
    char num[64];
    size_t m = len - i - 1 < sizeof num - 1 ? len - i - 1 : sizeof num - 1;
    memcpy(num, line + i + 1, m);
    num[m] = '\0';
    char *end;
    s->value = strtod(num, &end);
    cr_assert(end != num && *end == '\0', "value '%s' does not parse: %.*s", num, (int)len, line);
    return true;
}

/* The value of the one sample named `name` whose labels are exactly the
 * NULL-terminated pairs in `labels` ("k", "v", ...); NAN when none. */
static double prom_value(const char *body, const char *name, const char *const *labels)
{
    int want = 0;
    while (labels[2 * want])
        want++;
    double found = NAN;
    int hits = 0;
    for (const char *p = body; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        prom_sample s;
        if (prom_parse_line(p, len, &s) && strcmp(s.name, name) == 0 && s.nl == want) {
            int match = 0;
            for (int i = 0; i < want; i++)
                for (int j = 0; j < s.nl; j++)
                    match += strcmp(s.lk[j], labels[2 * i]) == 0 && strcmp(s.lv[j], labels[2 * i + 1]) == 0;
            if (match == want) {
                found = s.value;
                hits++;
            }
        }
        p += len + (nl ? 1 : 0);
    }
    cr_assert_leq(hits, 1, "%d samples of %s with the same labels", hits, name);
    return found;
}

/* verify with metrics.listen: /metrics and /health while it runs; after the
 * report it serves until one scrape has read the final values
 * (--metrics-linger-ms), which this test reads and parses line by line. */
Test(verify, metrics_endpoint)
{
    vt_env e;
    vt_setup(&e, "vfym");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20))", e.db);
    e2e_sql(m, "USE %s", e.db);
    e2e_sql(m, "INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_50");
    vt_config(&e, false, NULL);
    vt_start(&e);
    vt_wait_equal(&e, "topics");

    /* drift: a tombstone (missing), a key the source lacks (extra), a changed value (different) */
    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    vt_produce(topic, "{\"id\":1}", NULL);
    vt_produce(topic, "{\"id\":900}", "{\"before\":null,\"after\":{\"id\":900,\"v\":\"x\"},\"op\":\"c\"}");
    vt_produce(topic, "{\"id\":2}", "{\"before\":null,\"after\":{\"id\":2,\"v\":\"changed\"},\"op\":\"u\"}");

    char log[320];
    snprintf(log, sizeof log, "%s/verify-metrics.log", e.dir);
    unsigned port = e2e_free_port(); /* verify's own (the connector serves none) */
    char listen[64];
    snprintf(listen, sizeof listen, "metrics.listen=127.0.0.1:%u", port);
    const char *args[] = {"verify", "--config", e.cfg, "--json", "--wait-ms", "20000", "--metrics-linger-ms",
                          "120000", "--set", listen, NULL};
    pid_t v = e2e_spawn(args, log);
    tb_buf body;
    tb_buf_init(&body, 0);
    const char *done[] = {"connector", e.db, "state", "done", NULL};
    bool healthy_seen = false;
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) { /* polls until verify says it is done (then it serves the final values) */
        int st = e2e_http_get(port, "/metrics", &body);
        if (st == 200 && prom_value(tb_buf_cstr(&body), "tributary_verify_state", done) == 1)
            break;
        if (!healthy_seen) {
            tb_buf h;
            tb_buf_init(&h, 0);
            healthy_seen = e2e_http_get(port, "/health", &h) == 200;
            tb_buf_free(&h);
        }
        cr_assert(tb_itest_now_ms() < deadline, "verify never said done (last scrape %d):\n%s", st,
                  tb_buf_cstr(&body));
        usleep(50000);
    }
    cr_expect(healthy_seen, "/health never answered 200 while verify ran");
    cr_expect_eq(e2e_wait(v, 60000), 1, "verify: exit 1 (differences) after the final scrape; see %s", log);
    const char *text = tb_buf_cstr(&body);
    char table[128];
    snprintf(table, sizeof table, "%s.t", e.db);
    const char *miss[] = {"connector", e.db, "table", table, "against", "topics", "kind", "missing", NULL};
    const char *ext[] = {"connector", e.db, "table", table, "against", "topics", "kind", "extra", NULL};
    const char *dif[] = {"connector", e.db, "table", table, "against", "topics", "kind", "different", NULL};
    const char *rows[] = {"connector", e.db, "table", table, "against", "topics", NULL};
    const char *passes[] = {"connector", e.db, "against", "topics", NULL};
    const char *cpasses[] = {"connector", e.db, "against", "cache", NULL};
    const char *none[] = {"connector", e.db, NULL};
    cr_expect_eq(prom_value(text, "tributary_verify_differences", miss), 1, "%s", text);
    cr_expect_eq(prom_value(text, "tributary_verify_differences", ext), 1, "%s", text);
    cr_expect_eq(prom_value(text, "tributary_verify_differences", dif), 1, "%s", text);
    cr_expect_eq(prom_value(text, "tributary_verify_in_flight_keys", rows), 0, "%s", text);
    double np = prom_value(text, "tributary_verify_passes_total", passes);
    cr_expect(np >= 2 && np <= 4, "passes %g:\n%s", np, text);
    cr_expect_eq(prom_value(text, "tributary_verify_passes_total", cpasses), 0, "%s", text);
    /* the first pass compares the 50 rows, each re-check pass the two keys the source has */
    cr_expect_eq(prom_value(text, "tributary_verify_rows_total", rows), 50 + 2 * (np - 1), "%s", text);
    cr_expect_eq(prom_value(text, "tributary_verify_connector_behind", none), 0, "%s", text);
    const char *failed[] = {"connector", e.db, "state", "failed", NULL};
    cr_expect_eq(prom_value(text, "tributary_verify_state", failed), 0, "%s", text);
    cr_expect(prom_value(text, "tributary_process_resident_memory_bytes", none) > 0, "%s", text);
    /* promtool (Debian's prometheus package) checks the exposition */
    char mfile[400], cmd[900];
    snprintf(mfile, sizeof mfile, "%s/metrics.txt", e.dir);
    FILE *f = fopen(mfile, "w");
    cr_assert_not_null(f);
    fwrite(body.data, 1, body.len, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s' >&2", mfile);
    cr_expect_eq(system(cmd), 0, "promtool check metrics failed on:\n%s", text);
    tb_buf_free(&body);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* ------------------------------------------------------------ bounded memory */

/* A digest map capped far below the table's keys (verify.memory.max.bytes,
 * 1024 slots: 768 keys) makes verify compare in hash partitions on disk: the
 * report (counts and samples of every kind) is the one of the comparison in
 * memory. */
Test(verify, partitioned_same_report)
{
    vt_env e;
    vt_setup(&e, "vfyp");
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", e.db);
    e2e_sql(m, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)", e.db);
    e2e_sql(m, "USE %s", e.db);
    e2e_sql(m, "INSERT INTO t SELECT seq, CONCAT('v', seq), seq * 3 FROM seq_1_to_3000");
    e2e_sql(m, "CREATE TABLE %s.small (id INT PRIMARY KEY)", e.db);
    e2e_sql(m, "INSERT INTO %s.small VALUES (1),(2)", e.db);
    vt_config(&e, false, NULL);
    vt_start(&e);
    e2e_sql(m, "UPDATE %s.t SET n = n + 1 WHERE id %% 7 = 0", e.db); /* records after the snapshot's */
    vt_wait_equal(&e, "topics");

    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", e.db, e.db);
    char key[64], val[256];
    for (int id = 100; id <= 2900; id += 700) { /* 5 missing */
        snprintf(key, sizeof key, "{\"id\":%d}", id);
        vt_produce(topic, key, NULL);
    }
    for (int id = 5001; id <= 5003; id++) { /* 3 extra */
        snprintf(key, sizeof key, "{\"id\":%d}", id);
        snprintf(val, sizeof val, "{\"before\":null,\"after\":{\"id\":%d,\"v\":\"x\",\"n\":0},\"op\":\"c\"}", id);
        vt_produce(topic, key, val);
    }
    for (int id = 11; id <= 2011; id += 500) { /* 5 different */
        snprintf(key, sizeof key, "{\"id\":%d}", id);
        snprintf(val, sizeof val, "{\"before\":null,\"after\":{\"id\":%d,\"v\":\"drift\",\"n\":%d},\"op\":\"u\"}", id,
                 id * 3);
        vt_produce(topic, key, val);
    }
    json_t *mem = NULL, *part = NULL;
    const char *show[] = {"--show", "100", NULL};
    cr_assert_eq(vt_verify(&e, show, &mem), 1);
    const char *capped[] = {"--show", "100", "--set", "verify.memory.max.bytes=16384", NULL};
    cr_assert_eq(vt_verify(&e, capped, &part), 1);
    json_t *tm = json_object_get(json_array_get(json_object_get(mem, "results"), 0), "tables");
    json_t *tp = json_object_get(json_array_get(json_object_get(part, "results"), 0), "tables");
    char *a = json_dumps(tm, JSON_COMPACT | JSON_SORT_KEYS), *b = json_dumps(tp, JSON_COMPACT | JSON_SORT_KEYS);
    cr_expect(json_equal(tm, tp), "in memory:\n%s\nin partitions:\n%s", a, b);
    vt_expect(vt_table(mem, 0, "t"), 5, 3, 5);
    cr_expect_eq(json_integer_value(json_object_get(vt_table(part, 0, "t"), "rows")), 3000);
    cr_expect_eq(json_array_size(json_object_get(json_object_get(vt_table(part, 0, "t"), "samples"), "different")), 5);
    free(a);
    free(b);
    json_decref(mem);
    json_decref(part);
    /* the capped run did compare in partitions (it says so) */
    char vlog[320];
    snprintf(vlog, sizeof vlog, "%s/verify.log", e.dir);
    tb_buf l;
    tb_buf_init(&l, 0);
    cr_assert(e2e_slurp(vlog, &l));
    cr_expect(strstr(tb_buf_cstr(&l), "compared in hash partitions on disk") != NULL, "%s", tb_buf_cstr(&l));
    tb_buf_free(&l);
    vt_stop(e.run);
    e2e_assert_clean_log(e.log);
    mysql_close(m);
    e2e_rmtree(e.dir);
}
