/*
 * End-to-end security tests against the testenv servers (DESIGN 11: TLS on MariaDB, a REQUIRE SSL
 * user, the broker's SASL_SSL listener). They run the built tributary.
 *
 *   security/tls_and_sasl_ssl: `tributary run` reads MariaDB over TLS with verify_identity (the
 *     testenv CA) as the REQUIRE SSL user and produces over SASL_SSL (password from
 *     kafka.sasl.password.file); `tributary cache` replays the topics over SASL_SSL; the cache
 *     table equals the source table (the source database is the oracle) after a snapshot and
 *     streamed inserts, updates and deletes. The log says TLS version and cipher, verified.
 *     The MySQL password, given with --set, is overwritten in /proc/PID/cmdline once parsed.
 *     Under umask 022, offsets, status and cache files (and -wal/-shm) are created 0600. The
 *     status file says "source_encrypted": true.
 *   security/client_certificate: the REQUIRE X509 user gets in with source.ssl.cert/key, and is
 *     refused without them (a hint names the keys).
 *   security/refusals: each refused with exit 1 and a one-line reason: ssl.mode=disabled for
 *     the REQUIRE SSL user; verify_ca against a foreign CA; verify_identity for a host name the
 *     certificate does not hold (127.1 reaches 127.0.0.1); a wrong SASL password; a broker
 *     certificate that does not chain to kafka.ssl.ca.location. Each within seconds: a refused
 *     Kafka login is not retried. `tributary cache` refuses the wrong SASL password as well.
 *   security/scram_sha_512: SCRAM-SHA-512 over TLS with a librdkafka of 2.6.1 or newer (the
 *     confluent-kafka wheel's, scripts/deps, through LD_LIBRARY_PATH): run and cache deliver,
 *     their logs name that librdkafka, a wrong SCRAM password is refused; the installed
 *     librdkafka, when older, gets a WARN at start naming its version.
 */
#include <dlfcn.h>
#include <jansson.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "e2e_util.h"

static void sec_fini(void)
{
    e2e_kill_children();
}

TestSuite(security, .fini = sec_fini);

typedef struct sec_env {
    char dir[128], cfg[192], log[192], db[96], prefix[96], name[96];
} sec_env;

static void sec_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* A temp folder, a database with table t, and the password files. */
static void sec_setup(sec_env *e, MYSQL *m)
{
    snprintf(e->dir, sizeof e->dir, "/tmp/e2e-sec-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    tb_itest_unique(e->db, sizeof e->db, "sec");
    snprintf(e->prefix, sizeof e->prefix, "%s", e->db);
    snprintf(e->name, sizeof e->name, "%s", e->db);
    e2e_sql(m, "CREATE DATABASE `%s`", e->db);
    e2e_sql(m, "CREATE TABLE `%s`.t (id INT PRIMARY KEY, v VARCHAR(40))", e->db);
    char p[256], text[256];
    snprintf(p, sizeof p, "%s/mysql.password", e->dir);
    snprintf(text, sizeof text, "%s\n", tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    sec_write(p, text);
    snprintf(p, sizeof p, "%s/kafka.password", e->dir);
    snprintf(text, sizeof text, "%s\n", tb_itest_env("TRIBUTARY_TEST_KAFKA_SASL_PASSWORD"));
    sec_write(p, text);
    snprintf(p, sizeof p, "%s/wrong.password", e->dir);
    sec_write(p, "not-the-password\n");
}

/* The configuration: TLS to MariaDB as the REQUIRE SSL user (its password from a file, or
 * from the command line when !pw_file), SASL_SSL to Kafka, then `extra` (later keys win). */
static void sec_config(sec_env *e, const char *file, bool pw_file, const char *extra)
{
    snprintf(e->cfg, sizeof e->cfg, "%s/%s", e->dir, file);
    FILE *f = fopen(e->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\ntopic.prefix=%s\ntables.include=%s\\..*\n"
            "source.host=%s\nsource.port=%s\nsource.user=%s\n%s%s%s"
            "source.ssl.mode=verify_identity\nsource.ssl.ca=%s\n"
            "kafka.bootstrap.servers=%s\nkafka.security.protocol=SASL_SSL\nkafka.sasl.mechanisms=%s\n"
            "kafka.sasl.username=%s\nkafka.sasl.password.file=%s/kafka.password\nkafka.ssl.ca.location=%s\n"
            "offsets.storage=file\noffsets.file=%s/offsets\nstatus.file=%s/status.json\nheartbeat.interval.ms=500\n%s",
            e->name, e->prefix, e->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"), tb_itest_env("TRIBUTARY_TEST_MYSQL_TLS_USER"),
            pw_file ? "source.password.file=" : "", pw_file ? e->dir : "", pw_file ? "/mysql.password\n" : "",
            tb_itest_env("TRIBUTARY_TEST_MYSQL_SSL_CA"), tb_itest_env("TRIBUTARY_TEST_KAFKA_SASL_SSL"),
            tb_itest_env("TRIBUTARY_TEST_KAFKA_SASL_MECHANISM"), tb_itest_env("TRIBUTARY_TEST_KAFKA_SASL_USER"),
            e->dir, tb_itest_env("TRIBUTARY_TEST_KAFKA_SSL_CA"), e->dir, e->dir, extra);
    fclose(f);
}

/* Wait until the log holds needle (fails after ms, or when pid exited). */
static void sec_wait_log(const char *log, const char *needle, pid_t pid, long long ms)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    long long deadline = tb_itest_now_ms() + ms;
    for (;;) {
        if (e2e_slurp(log, &b) && strstr(tb_buf_cstr(&b), needle))
            break;
        cr_assert(pid <= 0 || waitpid(pid, NULL, WNOHANG) == 0, "tributary exited before '%s'; log:\n%.4000s",
                  needle, tb_buf_cstr(&b));
        cr_assert(tb_itest_now_ms() < deadline, "no '%s' in %s within %lld ms:\n%.4000s", needle, log, ms,
                  tb_buf_cstr(&b));
        usleep(50000);
    }
    tb_buf_free(&b);
}

/* Rows of table t in the cache file, as "id|v\n" lines in id order (empty when absent). */
static void sec_cache_rows(const char *path, const char *db, tb_buf *out)
{
    tb_buf_reset(out);
    sqlite3 *s = NULL;
    if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(s);
        return;
    }
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT id, v FROM \"%s.t\" ORDER BY id", db);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *v = sqlite3_column_text(st, 1);
            tb_buf_printf(out, "%lld|%s\n", (long long)sqlite3_column_int64(st, 0), v ? (const char *)v : "\\N");
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(s);
}

/* `tributary cache --until-caught-up` (config e->cfg) into cache, run again until its table t
 * holds want (the source's rows, "id|v" lines); fails after 120 s or when a run fails. */
static void sec_cache_until_equal(sec_env *e, const char *cache, const char *clog, tb_buf *want)
{
    tb_buf got, logb;
    tb_buf_init(&got, 0);
    tb_buf_init(&logb, 0);
    long long deadline = tb_itest_now_ms() + 120000;
    for (;;) {
        const char *args[] = {"cache", "--config", e->cfg, "--db", cache, "--until-caught-up", NULL};
        int rc = e2e_wait(e2e_spawn(args, clog), 60000);
        e2e_slurp(clog, &logb);
        cr_assert_eq(rc, 0, "tributary cache failed (%d):\n%.4000s", rc, tb_buf_cstr(&logb));
        sec_cache_rows(cache, e->db, &got);
        if (strcmp(tb_buf_cstr(&got), tb_buf_cstr(want)) == 0)
            break;
        cr_assert(tb_itest_now_ms() < deadline, "the cache never equalled the source:\nsource:\n%s\ncache:\n%s",
                  tb_buf_cstr(want), tb_buf_cstr(&got));
        usleep(300000);
    }
    tb_buf_free(&got);
    tb_buf_free(&logb);
}

/* Assert path (when it exists, or always when must) has mode 0600. */
static void sec_private(const char *path, bool must)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        cr_assert(!must, "%s: %s", path, strerror(errno));
        return;
    }
    cr_expect_eq(st.st_mode & 0777, 0600, "%s has mode %o, want 0600", path, (unsigned)(st.st_mode & 0777));
}

Test(security, tls_and_sasl_ssl, .timeout = 300)
{
    umask(022); /* the usual umask: the files tributary creates must still be private */
    MYSQL *m = e2e_mysql();
    sec_env e;
    sec_setup(&e, m);
    sec_config(&e, "run.properties", false, "");
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (1, 'one'), (2, 'two'), (3, 'three')", e.db);

    snprintf(e.log, sizeof e.log, "%s/run.log", e.dir);
    /* the MySQL password on the command line: gone from /proc/PID/cmdline once parsed */
    char pwarg[160];
    snprintf(pwarg, sizeof pwarg, "source.password=%s", tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    const char *run[] = {"run", "--config", e.cfg, "--set", pwarg, NULL};
    pid_t pid = e2e_spawn(run, e.log);
    sec_wait_log(e.log, "(replication): TLS TLSv1.", pid, 60000);
    char cmdpath[64];
    snprintf(cmdpath, sizeof cmdpath, "/proc/%d/cmdline", (int)pid);
    tb_buf cmdline;
    tb_buf_init(&cmdline, 0);
    cr_assert(e2e_slurp(cmdpath, &cmdline));
    for (size_t i = 0; i < cmdline.len; i++)
        if (cmdline.data[i] == '\0')
            cmdline.data[i] = ' ';
    const char *pw = tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD");
    cr_expect_null(strstr(tb_buf_cstr(&cmdline), pw), "the password is readable in %s: %s", cmdpath,
                   tb_buf_cstr(&cmdline));
    cr_expect_not_null(strstr(tb_buf_cstr(&cmdline), "source.password=xxxxxxxx"), "%s: %s", cmdpath,
                       tb_buf_cstr(&cmdline));
    tb_buf_free(&cmdline);

    /* the status file says the replication connection is encrypted (Jansson reads it) */
    char status[256];
    snprintf(status, sizeof status, "%s/status.json", e.dir);
    bool encrypted = false;
    long long sdeadline = tb_itest_now_ms() + 30000;
    while (!encrypted && tb_itest_now_ms() < sdeadline) {
        json_t *st = json_load_file(status, 0, NULL);
        encrypted = st && json_is_true(json_object_get(st, "source_encrypted"));
        json_decref(st);
        if (!encrypted)
            usleep(100000);
    }
    cr_expect(encrypted, "%s never said source_encrypted: true", status);
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (4, 'four'), (5, 'five')", e.db);
    e2e_sql(m, "UPDATE `%s`.t SET v = 'TWO' WHERE id = 2", e.db);
    e2e_sql(m, "DELETE FROM `%s`.t WHERE id = 3", e.db);

    tb_buf want, logb;
    tb_buf_init(&want, 0);
    tb_buf_init(&logb, 0);
    char q[256];
    snprintf(q, sizeof q, "SELECT id, v FROM `%s`.t ORDER BY id", e.db);
    e2e_query_text(m, q, &want);

    /* the cache over SASL_SSL, run until caught up, again until it holds what the source holds */
    char cache[256], clog[256];
    snprintf(cache, sizeof cache, "%s/cache.db", e.dir);
    snprintf(clog, sizeof clog, "%s/cache.log", e.dir);
    sec_cache_until_equal(&e, cache, clog, &want);

    kill(pid, SIGTERM);
    int rc = e2e_wait(pid, 30000);
    e2e_slurp(e.log, &logb);
    cr_assert_eq(rc, 0, "run exit %d:\n%.4000s", rc, tb_buf_cstr(&logb));
    const char *l = tb_buf_cstr(&logb);
    cr_expect(strstr(l, "(snapshot): TLS TLSv1.") && strstr(l, "certificate and host name verified"),
              "no TLS line for the snapshot connection:\n%.4000s", l);
    cr_expect(strstr(l, ", cipher ") != NULL, "no cipher in the log:\n%.4000s", l);
    e2e_assert_clean_log(e.log);
    e2e_assert_clean_log(clog);
    char f[300];
    snprintf(f, sizeof f, "%s/offsets", e.dir);
    sec_private(f, true);
    snprintf(f, sizeof f, "%s/status.json", e.dir);
    sec_private(f, true);
    sec_private(cache, true);
    snprintf(f, sizeof f, "%s-wal", cache);
    sec_private(f, false);
    snprintf(f, sizeof f, "%s-shm", cache);
    sec_private(f, false);
    tb_buf_free(&want);
    tb_buf_free(&logb);
    e2e_sql(m, "DROP DATABASE `%s`", e.db);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* Run with the configuration plus extra; expect exit 1 and a first error line holding every
 * needle (NULL-terminated). */
static void sec_refused(sec_env *e, const char *what, const char *extra, const char *const *needles)
{
    char file[64];
    snprintf(file, sizeof file, "%s.properties", what);
    sec_config(e, file, true, extra);
    snprintf(e->log, sizeof e->log, "%s/%s.log", e->dir, what);
    const char *run[] = {"run", "--config", e->cfg, NULL};
    int rc = e2e_wait(e2e_spawn(run, e->log), 120000);
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(e->log, &b);
    cr_assert_eq(rc, 1, "%s: exit %d, want 1:\n%.4000s", what, rc, tb_buf_cstr(&b));
    const char *line = strstr(tb_buf_cstr(&b), "tributary run: ");
    cr_assert_not_null(line, "%s: no error line:\n%.4000s", what, tb_buf_cstr(&b));
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    for (size_t i = 0; needles[i]; i++)
        cr_expect(memmem(line, len, needles[i], strlen(needles[i])) != NULL, "%s: '%s' not in: %.*s", what,
                  needles[i], (int)len, line);
    e2e_assert_clean_log(e->log);
    tb_buf_free(&b);
}

Test(security, refusals, .timeout = 300)
{
    MYSQL *m = e2e_mysql();
    sec_env e;
    sec_setup(&e, m);
    char extra[512];

    const char *disabled[] = {"Access denied", "source.ssl.mode=disabled", "REQUIRE SSL", NULL};
    sec_refused(&e, "disabled", "source.ssl.mode=disabled\n", disabled);

    snprintf(extra, sizeof extra, "source.ssl.mode=verify_ca\nsource.ssl.ca=%s/tls/foreign-ca.pem\n",
             tb_itest_env("TRIBUTARY_TEST_DIR"));
    const char *foreign[] = {"TLS certificate verification failed", "certificate", "foreign-ca.pem", NULL};
    sec_refused(&e, "foreign_ca", extra, foreign);

    const char *name[] = {"source 127.1:", "TLS certificate verification failed", "does not name host '127.1'",
                          NULL};
    sec_refused(&e, "host_name", "source.host=127.1\n", name);

    snprintf(extra, sizeof extra, "kafka.sasl.password.file=%s/wrong.password\n", e.dir);
    const char *sasl[] = {"Kafka authentication failed", "kafka.sasl.password", NULL};
    sec_refused(&e, "sasl_password", extra, sasl);

    /* the cache refuses a wrong SASL password too, instead of retrying for ever */
    char cache[256], clog[256];
    snprintf(cache, sizeof cache, "%s/cache.db", e.dir);
    snprintf(clog, sizeof clog, "%s/cache_sasl.log", e.dir);
    const char *cargs[] = {"cache", "--config", e.cfg, "--db", cache, "--until-caught-up", NULL};
    int crc = e2e_wait(e2e_spawn(cargs, clog), 60000);
    tb_buf cb;
    tb_buf_init(&cb, 0);
    e2e_slurp(clog, &cb);
    cr_expect_eq(crc, 1, "cache with a wrong SASL password: exit %d:\n%.4000s", crc, tb_buf_cstr(&cb));
    cr_expect_not_null(strstr(tb_buf_cstr(&cb), "tributary cache: Kafka authentication failed"), "%.4000s",
                       tb_buf_cstr(&cb));
    tb_buf_free(&cb);

    snprintf(extra, sizeof extra, "kafka.ssl.ca.location=%s/tls/foreign-ca.pem\n", tb_itest_env("TRIBUTARY_TEST_DIR"));
    const char *kca[] = {"Kafka TLS certificate verification failed", "certificate verify failed", NULL};
    sec_refused(&e, "kafka_foreign_ca", extra, kca);

    e2e_sql(m, "DROP DATABASE `%s`", e.db);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* Incremental-snapshot signals are scoped to their connector: a signal written for connector
 * "<name>_other" is left alone by the running connector <name> (a DEBUG line says so, nothing is
 * queued); a signal for <name> itself is executed. Its state file is 0600 under umask 022. */
Test(security, signals_scoped_to_their_connector, .timeout = 300)
{
    umask(022);
    MYSQL *m = e2e_mysql();
    sec_env e;
    sec_setup(&e, m);
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (1, 'one'), (2, 'two'), (3, 'three')", e.db);
    sec_config(&e, "run.properties", true, "sink=stdout\nsnapshot.mode=never\nlog.level=debug\n");
    snprintf(e.log, sizeof e.log, "%s/run.log", e.dir);
    const char *run[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(run, e.log);
    sec_wait_log(e.log, "run: streaming from the binlog", pid, 60000);

    char table[160], other[160], slog[256];
    snprintf(table, sizeof table, "%s.t", e.db);
    snprintf(other, sizeof other, "name=%s_other", e.name);
    snprintf(slog, sizeof slog, "%s/signal.log", e.dir);
    const char *sig_other[] = {"snapshot", "--incremental", "--table", table, "--config", e.cfg, "--set", other, NULL};
    cr_assert_eq(e2e_wait(e2e_spawn(sig_other, slog), 60000), 0, "signal for the other connector failed");
    char needle[300];
    snprintf(needle, sizeof needle, "is for connector '%s_other', not '%s': left alone", e.name, e.name);
    sec_wait_log(e.log, needle, pid, 60000);

    const char *sig_own[] = {"snapshot", "--incremental", "--table", table, "--config", e.cfg, NULL};
    cr_assert_eq(e2e_wait(e2e_spawn(sig_own, slog), 60000), 0, "signal for the connector failed");
    snprintf(needle, sizeof needle, "incremental snapshot of %s done", table);
    sec_wait_log(e.log, needle, pid, 60000);
    /* the state is saved once a position after the chunk is committed */
    char state[300];
    snprintf(state, sizeof state, "%s/offsets.incsnap", e.dir);
    long long deadline = tb_itest_now_ms() + 30000;
    while (access(state, F_OK) != 0 && tb_itest_now_ms() < deadline)
        usleep(50000);

    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0);
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(e.log, &b);
    const char *l = tb_buf_cstr(&b);
    /* one snapshot, the connector's own: queued once */
    const char *q = strstr(l, "incremental snapshot of");
    cr_assert_not_null(q);
    snprintf(needle, sizeof needle, "incremental snapshot of %s queued", table);
    const char *first = strstr(l, needle);
    cr_assert_not_null(first, "%.4000s", l);
    cr_expect_null(strstr(first + 1, needle), "queued twice:\n%.4000s", l);
    sec_private(state, true); /* the incremental-snapshot state, under umask 022 */
    e2e_assert_clean_log(e.log);
    tb_buf_free(&b);
    e2e_sql(m, "DROP DATABASE `%s`", e.db);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* A client certificate (source.ssl.cert/key, signed by the testenv CA) lets the REQUIRE X509 user
 * in; without it the user is refused with a hint naming the two keys. */
Test(security, client_certificate, .timeout = 300)
{
    MYSQL *m = e2e_mysql();
    sec_env e;
    sec_setup(&e, m);
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (1, 'one'), (2, 'two')", e.db);
    const char *dir = tb_itest_env("TRIBUTARY_TEST_DIR");
    char extra[1024];
    snprintf(extra, sizeof extra,
             "source.user=tributary_x509\nsink=stdout\nsnapshot.mode=initial_only\n"
             "source.ssl.cert=%s/tls/client.pem\nsource.ssl.key=%s/tls/client.key\n",
             dir, dir);
    sec_config(&e, "x509.properties", true, extra);
    snprintf(e.log, sizeof e.log, "%s/x509.log", e.dir);
    const char *run[] = {"run", "--config", e.cfg, NULL};
    int rc = e2e_wait(e2e_spawn(run, e.log), 120000);
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(e.log, &b);
    cr_assert_eq(rc, 0, "run with a client certificate: exit %d:\n%.4000s", rc, tb_buf_cstr(&b));
    cr_expect_eq(e2e_count_events(tb_buf_cstr(&b), JO_PATH("value", "after"), "{\"id\":2,\"v\":\"two\"}"), 1,
                 "%.4000s", tb_buf_cstr(&b));
    tb_buf_free(&b);
    e2e_assert_clean_log(e.log);

    const char *no_cert[] = {"Access denied", "tributary_x509", "REQUIRE X509", "source.ssl.cert", NULL};
    sec_refused(&e, "no_client_cert", "source.user=tributary_x509\nsink=stdout\nsnapshot.mode=initial_only\n",
                no_cert);
    e2e_sql(m, "DROP DATABASE `%s`", e.db);
    mysql_close(m);
    e2e_rmtree(e.dir);
}

/* A line of the log at path holding needle (NULL-terminated copy into out), false when none. */
static bool sec_log_line(const char *path, const char *needle, char *out, size_t cap)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool found = false;
    if (e2e_slurp(path, &b)) {
        const char *hit = strstr(tb_buf_cstr(&b), needle);
        if (hit) {
            const char *bol = hit;
            while (bol > b.data && bol[-1] != '\n')
                bol--;
            const char *eol = strchr(hit, '\n');
            size_t len = eol ? (size_t)(eol - bol) : strlen(bol);
            snprintf(out, cap, "%.*s", (int)len, bol);
            found = true;
        }
    }
    tb_buf_free(&b);
    return found;
}

/* SCRAM-SHA-512 over TLS, end to end, with a librdkafka that can log in with it to Kafka 4
 * (2.6.1 or newer: the one scripts/deps takes from the confluent-kafka wheel), loaded through
 * LD_LIBRARY_PATH: the log of `run` and of `cache` names that librdkafka's version (asked of the
 * library itself, dlopen), the changes are delivered and the cache equals the source table; a
 * wrong SCRAM password is refused at once (exit 1, one line). Then with the installed librdkafka:
 * older than 2.6.1 (Debian 12's 2.0.2), a SCRAM configuration gets a WARN at start naming its
 * version and the way out, and is refused; 2.6.1 or newer, no such WARN. */
Test(security, scram_sha_512, .timeout = 300)
{
    const char *libdir = tb_itest_env("TRIBUTARY_TEST_RDKAFKA_SCRAM_LIBDIR");
    char lib[512];
    snprintf(lib, sizeof lib, "%s/librdkafka.so.1", libdir);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s: %s (scripts/deps fetches it)", lib, dlerror());
    const char *(*ver_str)(void) = (const char *(*)(void))dlsym(h, "rd_kafka_version_str");
    int (*ver)(void) = (int (*)(void))dlsym(h, "rd_kafka_version");
    cr_assert(ver_str && ver, "%s: no rd_kafka_version", lib);
    char want_ver[64];
    snprintf(want_ver, sizeof want_ver, "librdkafka %s\n", ver_str());
    cr_assert_geq(ver(), 0x02060100, "%s is librdkafka %s, older than 2.6.1", lib, ver_str());
    dlclose(h);

    MYSQL *m = e2e_mysql();
    sec_env e;
    sec_setup(&e, m);
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (1, 'one'), (2, 'two')", e.db);
    cr_assert_eq(setenv("LD_LIBRARY_PATH", libdir, 1), 0);
    sec_config(&e, "scram.properties", true, "kafka.sasl.mechanisms=SCRAM-SHA-512\n");
    snprintf(e.log, sizeof e.log, "%s/scram.log", e.dir);
    const char *run[] = {"run", "--config", e.cfg, NULL};
    pid_t pid = e2e_spawn(run, e.log);
    sec_wait_log(e.log, "run: streaming from the binlog", pid, 60000);
    char line[1024];
    cr_assert(sec_log_line(e.log, want_ver, line, sizeof line), "no '%s' in %s", want_ver, e.log);
    e2e_sql(m, "INSERT INTO `%s`.t VALUES (3, 'three')", e.db);
    e2e_sql(m, "UPDATE `%s`.t SET v = 'TWO' WHERE id = 2", e.db);
    e2e_sql(m, "DELETE FROM `%s`.t WHERE id = 1", e.db);
    tb_buf want;
    tb_buf_init(&want, 0);
    char q[256];
    snprintf(q, sizeof q, "SELECT id, v FROM `%s`.t ORDER BY id", e.db);
    e2e_query_text(m, q, &want);
    char cache[256], clog[256];
    snprintf(cache, sizeof cache, "%s/cache.db", e.dir);
    snprintf(clog, sizeof clog, "%s/cache.log", e.dir);
    sec_cache_until_equal(&e, cache, clog, &want);
    cr_assert(sec_log_line(clog, want_ver, line, sizeof line), "no '%s' in %s", want_ver, clog);
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "see %s", e.log);
    cr_assert(!sec_log_line(e.log, "older than 2.6.1", line, sizeof line), "%s", line);
    e2e_assert_clean_log(e.log);
    e2e_assert_clean_log(clog);

    /* a wrong SCRAM password: refused, not retried */
    char extra[512];
    snprintf(extra, sizeof extra, "kafka.sasl.mechanisms=SCRAM-SHA-512\nkafka.sasl.password.file=%s/wrong.password\n",
             e.dir);
    const char *wrong[] = {"Kafka authentication failed", "SCRAM-SHA-512", "kafka.sasl.password", NULL};
    sec_refused(&e, "scram_wrong_password", extra, wrong);

    /* the installed librdkafka */
    cr_assert_eq(unsetenv("LD_LIBRARY_PATH"), 0);
    char old_ver[64];
    snprintf(old_ver, sizeof old_ver, "librdkafka %s\n", rd_kafka_version_str());
    if (rd_kafka_version() < 0x02060100) {
        const char *old[] = {"Kafka authentication failed", NULL};
        sec_refused(&e, "scram_old_librdkafka", "kafka.sasl.mechanisms=SCRAM-SHA-512\n", old);
        char needle[128];
        snprintf(needle, sizeof needle, "kafka.sasl.mechanisms=SCRAM-SHA-512 with librdkafka %s: ", rd_kafka_version_str());
        cr_assert(sec_log_line(e.log, needle, line, sizeof line), "no WARN '%s' in %s", needle, e.log);
        cr_expect(strstr(line, "WARN") && strstr(line, "older than 2.6.1") && strstr(line, "LD_LIBRARY_PATH") &&
                      strstr(line, "kafka.sasl.mechanisms=PLAIN"),
                  "%s", line);
    } else {
        sec_config(&e, "scram_installed.properties", true, "kafka.sasl.mechanisms=SCRAM-SHA-512\nsink=stdout\n"
                                                            "snapshot.mode=initial_only\n");
        snprintf(e.log, sizeof e.log, "%s/scram_installed.log", e.dir);
        cr_assert_eq(e2e_wait(e2e_spawn(run, e.log), 120000), 0, "see %s", e.log);
        cr_assert(!sec_log_line(e.log, "older than 2.6.1", line, sizeof line), "%s", line);
    }
    cr_assert(sec_log_line(e.log, old_ver, line, sizeof line), "no '%s' in %s", old_ver, e.log);
    tb_buf_free(&want);
    e2e_sql(m, "DROP DATABASE `%s`", e.db);
    mysql_close(m);
    e2e_rmtree(e.dir);
}
