/*
 * Live replication against the test environment's MariaDB (scripts/testenv):
 * every column type with edge values, multi-statement transactions,
 * log_bin_compress=ON, resume by GTID and by file/pos, a server restart
 * mid-stream, a DDL mid-stream. The binlog file the server wrote is also
 * decoded offline and compared with mariadb-binlog -vv.
 *
 * Needs TRIBUTARY_TEST_MYSQL_HOST/PORT/USER/PASSWORD (and TRIBUTARY_TEST_DIR
 * for the restart test); fails when they are missing.
 */
#include <criterion/criterion.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binlog.h"
#include "binlog_ref.h"
#include "../integration/tb_itest.h"
#include "cfg.h"
#include "evt_json.h"
#include "tb_log.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        cr_assert_fail("%s is not set: run `eval \"$(scripts/testenv up)\"` first", name);
    return v;
}

static MYSQL *db_connect(void)
{
    MYSQL *m = mysql_init(NULL);
    cr_assert_not_null(m);
    if (!mysql_real_connect(m, env("TRIBUTARY_TEST_MYSQL_HOST"), env("TRIBUTARY_TEST_MYSQL_USER"),
                            env("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL,
                            (unsigned)atoi(env("TRIBUTARY_TEST_MYSQL_PORT")), NULL, 0))
        cr_assert_fail("connect: %s", mysql_error(m));
    mysql_set_character_set(m, "utf8mb4");
    return m;
}

static void exec(MYSQL *m, const char *q)
{
    if (mysql_query(m, q) != 0)
        cr_assert_fail("%.200s: %s", q, mysql_error(m));
    MYSQL_RES *r = mysql_store_result(m);
    mysql_free_result(r);
}

static char *query1(MYSQL *m, const char *q)
{
    if (mysql_query(m, q) != 0)
        cr_assert_fail("%s: %s", q, mysql_error(m));
    MYSQL_RES *r = mysql_store_result(m);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    char *v = row && row[0] ? strdup(row[0]) : NULL;
    mysql_free_result(r);
    return v;
}

/* Run a .sql file of ";\n"-terminated statements with tbtest renamed to db. */
static void run_sql_file(MYSQL *m, const char *path, const char *db)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    tb_buf all, stmt;
    tb_buf_init(&all, 0);
    tb_buf_init(&stmt, 0);
    char line[8192];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "--", 2) == 0)
            continue;
        tb_buf_puts(&all, line);
    }
    fclose(f);
    exec(m, "SET sql_mode=''");
    const char *p = tb_buf_cstr(&all);
    while (*p) {
        const char *end = strstr(p, ";\n");
        size_t n = end ? (size_t)(end - p) : strlen(p);
        tb_buf_reset(&stmt);
        /* rename the database */
        for (size_t i = 0; i < n; i++) {
            if (strncmp(p + i, "tbtest", 6) == 0) {
                tb_buf_puts(&stmt, db);
                i += 5;
            } else {
                tb_buf_putc(&stmt, p[i]);
            }
        }
        const char *s = tb_buf_cstr(&stmt);
        while (*s == '\n' || *s == ' ')
            s++;
        if (*s)
            exec(m, s);
        p += n + (end ? 2 : 0);
    }
    tb_buf_free(&all);
    tb_buf_free(&stmt);
}

/* server_id NULL: source.server.id stays unset (derived from name). */
static cfg *make_cfg(const char *server_id)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_set(c, "source.host", env("TRIBUTARY_TEST_MYSQL_HOST"), "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.port", env("TRIBUTARY_TEST_MYSQL_PORT"), "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.user", env("TRIBUTARY_TEST_MYSQL_USER"), "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.password", env("TRIBUTARY_TEST_MYSQL_PASSWORD"), "test", &err), TB_OK, "%s",
                 err.msg);
    if (server_id)
        cr_assert_eq(cfg_set(c, "source.server.id", server_id, "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.heartbeat.interval.ms", "1000", "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.reconnect.backoff.max.ms", "1000", "test", &err), TB_OK, "%s", err.msg);
    return c;
}

typedef struct got {
    char op;
    char table[128];
    char *before, *after; /* JSON rows */
    char *txid;
    bool last;
    tb_position pos;
    uint32_t version;
    size_t ncols;
    char stypes[256]; /* the columns' source types, joined by commas */
} got;

static void got_free(got *g, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(g[i].before);
        free(g[i].after);
        free(g[i].txid);
        tb_position_free(&g[i].pos);
    }
}

static char *row_json(const evt_event *e, evt_image img)
{
    if (!evt_event_has_image(e, img))
        return strdup("null");
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(evt_json_row(e, img, &b, &err), TB_OK, "%s", err.msg);
    return tb_buf_detach(&b, NULL);
}

/* Read n events of database db within a deadline. Events of other databases are skipped. */
static void read_events(binlog_reader *r, const char *db, got *out, size_t n, int seconds)
{
    time_t deadline = time(NULL) + seconds;
    size_t k = 0;
    tb_error err;
    while (k < n) {
        if (time(NULL) > deadline)
            cr_assert_fail("only %zu of %zu events of %s within %d s", k, n, db, seconds);
        evt_event *e = NULL;
        tb_code rc = binlog_next(r, 500, &e, &err);
        cr_assert_eq(rc, TB_OK, "binlog_next: %s", err.msg);
        if (!e || strcmp(evt_table_db(evt_event_table(e)), db) != 0)
            continue;
        got *g = &out[k++];
        memset(g, 0, sizeof(*g));
        g->op = (char)evt_event_op(e);
        snprintf(g->table, sizeof(g->table), "%s", evt_table_name(evt_event_table(e)));
        g->before = row_json(e, EVT_BEFORE);
        g->after = row_json(e, EVT_AFTER);
        g->txid = strdup(evt_event_txid(e) ? evt_event_txid(e) : "");
        g->last = evt_event_last_in_tx(e);
        tb_position_init(&g->pos);
        tb_position_copy(&g->pos, evt_event_position(e));
        g->version = evt_table_version(evt_event_table(e));
        g->ncols = evt_table_ncols(evt_event_table(e));
        for (size_t i = 0, at = 0; i < g->ncols && at < sizeof(g->stypes); i++) {
            const char *st = evt_table_column(evt_event_table(e), i)->source_type;
            at += (size_t)snprintf(g->stypes + at, sizeof(g->stypes) - at, "%s%s", i ? "," : "", st ? st : "?");
        }
        cr_assert_eq(evt_event_connector(e), EVT_CONN_MARIADB);
    }
}

static void expect_in(const char *json, const char *needle)
{
    cr_assert(strstr(json, needle), "missing %s in %.3000s", needle, json);
}

/* The file the server is writing now and the binlog directory. */
static void server_binlog(MYSQL *m, char *dir, size_t dsz, char *file, size_t fsz)
{
    char *base = query1(m, "SELECT @@log_bin_basename");
    cr_assert_not_null(base);
    char *slash = strrchr(base, '/');
    *slash = '\0';
    snprintf(dir, dsz, "%s", base);
    free(base);
    mysql_query(m, "SHOW MASTER STATUS");
    MYSQL_RES *r = mysql_store_result(m);
    MYSQL_ROW row = mysql_fetch_row(r);
    snprintf(file, fsz, "%s", row[0]);
    mysql_free_result(r);
}

Test(live, every_type_and_edge_values, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_types");
    /* a new file: the offline comparison below reads all of it, so rows other tests wrote to the
     * server before this one (their XA transactions, sent at XA COMMIT, in another order than the
     * file's) are not in it */
    exec(m, "FLUSH BINARY LOGS");
    cfg *c = make_cfg("4201");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    char dir[1024], file[256];
    server_binlog(m, dir, sizeof(dir), file, sizeof(file));
    run_sql_file(m, TB_SOURCE_DIR "/tests/binlog/alltypes.sql", "tb_live_types");
    got g[6];
    read_events(r, "tb_live_types", g, 6, 30);
    /* row 1: edge values */
    const char *a = g[0].after;
    cr_assert_eq(g[0].op, 'c');
    expect_in(a, "\"ti\":-128,\"tiu\":255,\"si\":-32768,\"siu\":65535,\"mi\":-8388608,\"miu\":16777215");
    expect_in(a, "\"i\":-2147483648,\"iu\":4294967295,\"bi\":-9223372036854775808,\"biu\":18446744073709551615");
    expect_in(a, "\"yr\":1901,\"f\":-1.5,\"d\":2.2250738585072014e-308");
    expect_in(a, "\"dec65\":\"-12345678901234567890123456789012345.123456789012345678901234567890\",\"dec52\":\"999.99\"");
    expect_in(a, "\"dt\":\"1000-01-01\",\"t0\":\"-838:59:59\",\"t6\":\"838:59:59.000000\",\"t3\":\"-25:00:00.500\"");
    expect_in(a, "\"dt1\":\"2024-02-29T23:59:59.9\",\"dt2\":\"2024-02-29T23:59:59.99\",\"dt3\":\"2024-02-29T23:59:59.999\"");
    expect_in(a, "\"dt4\":\"2024-02-29T23:59:59.9999\",\"dt5\":\"2024-02-29T23:59:59.99999\",\"dt6\":\"9999-12-31T23:59:59.999999\"");
    expect_in(a, "\"ts0\":\"1970-01-01T00:00:01Z\",\"ts3\":\"2038-01-19T03:14:07.999Z\",\"ts6\":\"2001-09-09T01:46:40.123456Z\"");
    expect_in(a, "\"vc\":\"emoji \xf0\x9f\x98\x80 \xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9\",\"l1\":\"caf\xc3\xa9" "\"");
    expect_in(a, "\"bin8\":\"AAECAwAAAAA=\",\"vb\":\"AP9/gA==\"");
    expect_in(a, "\"b1\":true,\"b12\":2730,\"b64\":18446744073709551615,\"e\":\"large\",\"s\":[\"a\",\"c\",\"z\",\"k1\"]");
    expect_in(a, "\"g\":{\"srid\":4326,\"wkb\":\"AQIAAAADAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D8AAAAAAAAAQAAAAAAAAABA\"}");
    cr_assert_gt(strlen(a), 70000 + 93336, "BLOB/TEXT over 64 KB are complete");
    /* row 2: NULLs; row 3: zero dates */
    expect_in(g[1].after, "\"ti\":null,\"tiu\":null");
    expect_in(g[2].after, "\"yr\":0");
    expect_in(g[2].after, "\"dt\":\"0000-00-00\",");
    expect_in(g[2].after, "\"dt0\":\"0000-00-00T00:00:00\"");
    expect_in(g[2].after, "\"s\":[]");
    /* multi-statement transaction: update, delete, insert; one txid, last only on the last */
    cr_assert_eq(g[3].op, 'u');
    cr_assert_eq(g[4].op, 'd');
    cr_assert_eq(g[5].op, 'c');
    expect_in(g[3].after, "\"ti\":126,");
    expect_in(g[3].after, "\"l1\":\"na\xc3\xafve\"");
    cr_assert_str_eq(g[3].txid, g[5].txid);
    cr_assert(!g[3].last && !g[4].last && g[5].last);
    cr_assert(g[0].last && g[1].last && g[2].last);
    cr_assert_not_null(g[5].pos.gtid_set);
    got_free(g, 6);
    binlog_close(r);

    /* the same file offline: every row agrees with mariadb-binlog -vv */
    exec(m, "FLUSH BINARY LOGS");
    char path[1400];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    ref_rows ref;
    cr_assert(ref_run(path, &ref));
    cr_assert_eq(ref.exit_status, 0);
    cr_assert(binlog_open_file(path, 0, &r, &err) == TB_OK, "%s", err.msg);
    size_t n = 0;
    for (;;) {
        evt_event *e = NULL;
        cr_assert_eq(binlog_next(r, 0, &e, &err), TB_OK, "%s", err.msg);
        if (!e)
            break;
        cr_assert_lt(n, ref.n);
        tb_buf why;
        tb_buf_init(&why, 0);
        cr_assert(ref_match(&ref.rows[n], e, &why), "%s row %zu: %s", path, n + 1, tb_buf_cstr(&why));
        tb_buf_free(&why);
        n++;
    }
    cr_assert_eq(n, ref.n);
    cr_assert_geq(n, 6);
    ref_free(&ref);
    binlog_close(r);
    cfg_free(c);
    mysql_close(m);
}

Test(live, compressed_binlog_events, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_zip");
    cfg *c = make_cfg("4202");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    exec(m, "SET GLOBAL log_bin_compress=ON");
    exec(m, "SET GLOBAL log_bin_compress_min_len=10");
    run_sql_file(m, TB_SOURCE_DIR "/tests/binlog/alltypes.sql", "tb_live_zip");
    exec(m, "SET GLOBAL log_bin_compress=OFF");
    got g[6];
    read_events(r, "tb_live_zip", g, 6, 30);
    expect_in(g[0].after, "\"biu\":18446744073709551615");
    expect_in(g[0].after, "\"dt6\":\"9999-12-31T23:59:59.999999\"");
    cr_assert_eq(g[3].op, 'u');
    cr_assert_eq(g[4].op, 'd');
    got_free(g, 6);
    binlog_close(r);
    cfg_free(c);
    mysql_close(m);
}

Test(live, resume_by_gtid_and_by_file_position, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_resume");
    exec(m, "CREATE DATABASE tb_live_resume");
    exec(m, "CREATE TABLE tb_live_resume.t (id INT PRIMARY KEY, v VARCHAR(20))");
    cfg *c = make_cfg("4203");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    for (int i = 1; i <= 3; i++) {
        char q[200];
        snprintf(q, sizeof(q), "INSERT INTO tb_live_resume.t VALUES (%d, 'v%d')", i, i);
        exec(m, q);
    }
    got g[3];
    read_events(r, "tb_live_resume", g, 2, 30);
    cr_assert(g[1].last);
    tb_position after2;
    tb_position_init(&after2);
    tb_position_copy(&after2, &g[1].pos);
    cr_assert(after2.mariadb);
    cr_assert_not_null(after2.gtid_set);
    cr_assert_not_null(after2.file);
    binlog_close(r);
    /* by GTID */
    cr_assert_eq(binlog_open(c, &after2, &r, &err), TB_OK, "%s", err.msg);
    read_events(r, "tb_live_resume", &g[2], 1, 30);
    cr_assert_str_eq(g[2].after, "{\"id\":3,\"v\":\"v3\"}");
    binlog_close(r);
    got_free(&g[2], 1);
    /* by file + position */
    tb_position_set_gtid(&after2, NULL);
    cr_assert_eq(binlog_open(c, &after2, &r, &err), TB_OK, "%s", err.msg);
    read_events(r, "tb_live_resume", &g[2], 1, 30);
    cr_assert_str_eq(g[2].after, "{\"id\":3,\"v\":\"v3\"}");
    binlog_close(r);
    got_free(g, 3);
    tb_position_free(&after2);
    cfg_free(c);
    mysql_close(m);
}

Test(live, ddl_mid_stream_bumps_the_schema_version, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_ddl");
    exec(m, "CREATE DATABASE tb_live_ddl");
    exec(m, "CREATE TABLE tb_live_ddl.t (id INT PRIMARY KEY, a INT)");
    cfg *c = make_cfg("4204");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    exec(m, "INSERT INTO tb_live_ddl.t VALUES (1, 10)");
    exec(m, "ALTER TABLE tb_live_ddl.t ADD COLUMN b VARCHAR(10) FIRST");
    exec(m, "INSERT INTO tb_live_ddl.t VALUES ('x', 2, 20)");
    got g[2];
    read_events(r, "tb_live_ddl", g, 2, 30);
    cr_assert_str_eq(g[0].after, "{\"id\":1,\"a\":10}");
    cr_assert_str_eq(g[1].after, "{\"b\":\"x\",\"id\":2,\"a\":20}");
    cr_assert_eq(g[0].ncols, 2);
    cr_assert_eq(g[1].ncols, 3);
    cr_assert_eq(g[1].version, g[0].version + 1);
    got_free(g, 2);
    binlog_close(r);
    cfg_free(c);
    mysql_close(m);
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Events that reach the client together (a transaction of many statements,
 * then silence) are all handed out at once: none waits in Connector/C's
 * read-ahead buffer for the next packet, which would be the heartbeat, 60 s
 * away here. Then a close while the source is idle is prompt. */
Test(live, events_read_together_are_handed_out_without_waiting, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_burst");
    exec(m, "CREATE DATABASE tb_live_burst");
    exec(m, "CREATE TABLE tb_live_burst.t (id INT PRIMARY KEY, v VARCHAR(20))");
    cfg *c = make_cfg("4212");
    tb_error err;
    cr_assert_eq(cfg_set(c, "source.heartbeat.interval.ms", "60000", "test", &err), TB_OK, "%s", err.msg);
    binlog_reader *r = NULL;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    enum { N = 300 };
    exec(m, "START TRANSACTION");
    for (int i = 1; i <= N; i++) {
        char q[200];
        snprintf(q, sizeof(q), "INSERT INTO tb_live_burst.t VALUES (%d, 'v%d')", i, i);
        exec(m, q);
    }
    exec(m, "COMMIT");
    long long t0 = mono_ms();
    static got g[N];
    /* waiting for the next packet (the 60 s heartbeat) would take a minute: half of that
     * tells the two apart on a loaded machine */
    read_events(r, "tb_live_burst", g, N, 40);
    long long took = mono_ms() - t0;
    cr_assert_lt(took, 30000, "%d events took %lld ms", N, took);
    for (int i = 0; i < N; i++) {
        char want[60];
        snprintf(want, sizeof want, "{\"id\":%d,\"v\":\"v%d\"}", i + 1, i + 1);
        cr_assert_str_eq(g[i].after, want);
        cr_assert_eq(g[i].last, i == N - 1, "event %d: last_in_tx %d", i, g[i].last);
    }
    got_free(g, N);
    /* idle now: closing wakes the reading thread at once */
    t0 = mono_ms();
    binlog_close(r);
    took = mono_ms() - t0;
    cr_assert_lt(took, 20000, "closing an idle reader took %lld ms (the heartbeat is 60 s)", took);
    cfg_free(c);
    mysql_close(m);
}

static void testenv(const char *what)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/testenv' %s '%s' >/dev/null 2>&1", TB_SOURCE_DIR, what,
             env("TRIBUTARY_TEST_DIR"));
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

Test(live, server_restart_mid_stream, .timeout = 180, .fini = tb_itest_restore_servers)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_restart");
    exec(m, "CREATE DATABASE tb_live_restart");
    exec(m, "CREATE TABLE tb_live_restart.t (id INT PRIMARY KEY)");
    cfg *c = make_cfg("4205");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    exec(m, "INSERT INTO tb_live_restart.t VALUES (1)");
    exec(m, "BEGIN");
    exec(m, "INSERT INTO tb_live_restart.t VALUES (2)");
    exec(m, "INSERT INTO tb_live_restart.t VALUES (3)");
    exec(m, "COMMIT");
    got g[6];
    read_events(r, "tb_live_restart", g, 3, 30);
    mysql_close(m);
    testenv("stop-mysql");
    /* the reader notices the loss and retries while the server is down */
    for (int i = 0; i < 4; i++) {
        evt_event *e = NULL;
        cr_assert_eq(binlog_next(r, 250, &e, &err), TB_OK, "%s", err.msg);
        cr_assert_null(e);
    }
    testenv("start-mysql");
    m = db_connect();
    exec(m, "INSERT INTO tb_live_restart.t VALUES (4)");
    exec(m, "INSERT INTO tb_live_restart.t VALUES (5)");
    read_events(r, "tb_live_restart", &g[3], 2, 60);
    cr_assert_str_eq(g[3].after, "{\"id\":4}", "nothing repeated, nothing lost: got %s", g[3].after);
    cr_assert_str_eq(g[4].after, "{\"id\":5}");
    /* and nothing else arrives */
    evt_event *e = NULL;
    cr_assert_eq(binlog_next(r, 1500, &e, &err), TB_OK, "%s", err.msg);
    cr_assert(e == NULL || strcmp(evt_table_db(evt_event_table(e)), "tb_live_restart") != 0);
    got_free(g, 5);
    binlog_close(r);
    cfg_free(c);
    mysql_close(m);
}

Test(live, minimal_metadata_names_from_information_schema, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_minimal");
    exec(m, "CREATE DATABASE tb_live_minimal");
    exec(m, "CREATE TABLE tb_live_minimal.t (a INT, id INT UNSIGNED NOT NULL, e ENUM('x','y''s'), y YEAR, "
            "PRIMARY KEY (id))");
    cfg *c = make_cfg("4206");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    exec(m, "SET GLOBAL binlog_row_metadata=MINIMAL");
    MYSQL *w = db_connect(); /* a session that sees the new global value */
    exec(w, "INSERT INTO tb_live_minimal.t VALUES (-1, 4294967295, 'y''s', 2024)");
    mysql_close(w);
    exec(m, "SET GLOBAL binlog_row_metadata=FULL");
    got g[1];
    read_events(r, "tb_live_minimal", g, 1, 30);
    cr_assert_str_eq(g[0].after, "{\"a\":-1,\"id\":4294967295,\"e\":\"y's\",\"y\":2024}");
    /* the catalog's types as the snapshot spells them: no display widths (mymeta_describe) */
    cr_assert_str_eq(g[0].stypes, "int,int unsigned,enum('x','y''s'),year");
    got_free(g, 1);
    binlog_close(r);
    cfg_free(c);
    mysql_close(m);
}

Test(live, a_position_the_server_does_not_have_is_gone, .timeout = 60)
{
    cfg *c = make_cfg("4207");
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.mariadb = true;
    p.pos = 4;
    tb_position_set_file(&p, "mysql-bin.999999");
    binlog_reader *r = NULL;
    tb_error err;
    tb_code rc = binlog_open(c, &p, &r, &err);
    for (int i = 0; rc == TB_OK && i < 20; i++) {
        evt_event *e = NULL;
        rc = binlog_next(r, 500, &e, &err);
    }
    cr_assert_neq(rc, TB_OK, "streaming from a file the server does not have must fail");
    if (r) {
        cr_assert(binlog_position_gone(r), "%s", err.msg);
        cr_assert_str_eq(binlog_position(r)->file, "mysql-bin.999999");
    }
    cr_assert_not(binlog_position_gone(NULL));
    binlog_close(r);
    tb_position_free(&p);
    cfg_free(c);
}

/* The documented derivation, 2^30 + (FNV-1a 32 of the name mod 2^30); the
 * values were computed independently (Python, from the formula). */
Test(live, server_id_derived_from_the_name, .timeout = 60)
{
    cfg *c = make_cfg(NULL);
    tb_error err;
    bool derived = false;
    cr_assert_eq(binlog_server_id(c, &derived), 1728862233u); /* name "tributary" (the default) */
    cr_assert(derived);
    cr_assert_eq(cfg_set(c, "name", "shop", "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(binlog_server_id(c, NULL), 1749541033u);
    cr_assert_eq(cfg_set(c, "name", "orders", "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(binlog_server_id(c, NULL), 1918801644u);
    cr_assert_eq(cfg_set(c, "source.server.id", "77", "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(binlog_server_id(c, &derived), 77u);
    cr_assert_not(derived);
    cfg_free(c);
}

/* Two connectors with different names and no source.server.id stream from
 * one server at the same time: both see every change (no eviction). */
Test(live, two_names_without_a_server_id_stream_side_by_side, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_names");
    exec(m, "CREATE DATABASE tb_live_names");
    exec(m, "CREATE TABLE tb_live_names.t (id INT PRIMARY KEY)");
    cfg *c1 = make_cfg(NULL), *c2 = make_cfg(NULL);
    tb_error err;
    cr_assert_eq(cfg_set(c1, "name", "live_names_one", "test", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c2, "name", "live_names_two", "test", &err), TB_OK, "%s", err.msg);
    binlog_reader *r1 = NULL, *r2 = NULL;
    cr_assert_eq(binlog_open(c1, NULL, &r1, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(binlog_open(c2, NULL, &r2, &err), TB_OK, "%s", err.msg);
    for (int i = 1; i <= 20; i++) {
        char q[100];
        snprintf(q, sizeof q, "INSERT INTO tb_live_names.t VALUES (%d)", i);
        exec(m, q);
    }
    got g1[20], g2[20];
    read_events(r1, "tb_live_names", g1, 20, 30);
    read_events(r2, "tb_live_names", g2, 20, 30);
    for (int i = 0; i < 20; i++) {
        char want[40];
        snprintf(want, sizeof want, "{\"id\":%d}", i + 1);
        cr_assert_str_eq(g1[i].after, want);
        cr_assert_str_eq(g2[i].after, want);
    }
    got_free(g1, 20);
    got_free(g2, 20);
    binlog_close(r1);
    binlog_close(r2);
    cfg_free(c1);
    cfg_free(c2);
    mysql_close(m);
}

/* A second replica with the same server id: the server ends the first one's
 * stream (error 4052), which then stops with an error naming
 * source.server.id instead of reconnecting (and evicting the other). */
Test(live, same_server_id_stops_instead_of_reconnecting, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_sameid");
    exec(m, "CREATE DATABASE tb_live_sameid");
    exec(m, "CREATE TABLE tb_live_sameid.t (id INT PRIMARY KEY)");
    cfg *c = make_cfg("4211");
    binlog_reader *r1 = NULL, *r2 = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r1, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(binlog_open(c, NULL, &r2, &err), TB_OK, "%s", err.msg);
    exec(m, "INSERT INTO tb_live_sameid.t VALUES (1)");
    /* the first reader fails within the deadline, and stays failed */
    time_t deadline = time(NULL) + 30;
    tb_code rc = TB_OK;
    while (rc == TB_OK) {
        cr_assert(time(NULL) <= deadline, "the evicted reader did not stop within 30 s");
        evt_event *e = NULL;
        tb_error_clear(&err);
        rc = binlog_next(r1, 500, &e, &err);
    }
    cr_assert_eq(rc, TB_ERR_SOURCE);
    cr_assert_not(err.retriable);
    cr_assert(strstr(err.msg, "source.server.id"), "%s", err.msg);
    cr_assert(strstr(err.msg, "4052"), "%s", err.msg);
    cr_assert(strstr(err.msg, "4211"), "%s", err.msg);
    cr_assert_not(binlog_position_gone(r1));
    /* the second one streams undisturbed */
    exec(m, "INSERT INTO tb_live_sameid.t VALUES (2)");
    got g[2];
    read_events(r2, "tb_live_sameid", g, 2, 30);
    cr_assert_str_eq(g[0].after, "{\"id\":1}");
    cr_assert_str_eq(g[1].after, "{\"id\":2}");
    got_free(g, 2);
    binlog_close(r1);
    binlog_close(r2);
    cfg_free(c);
    mysql_close(m);
}

/* ---------------------------------------------------------------- the start by GTID, at an offset */

/* connect_once's "streaming from ..." INFO lines, the last one kept. */
static char streaming_line[1024];

static void keep_streaming_line(tb_log_level level, const char *line, void *opaque)
{
    (void)level;
    (void)opaque;
    if (strstr(line, "streaming from"))
        snprintf(streaming_line, sizeof streaming_line, "%s", line);
    fprintf(stderr, "%s\n", line);
}

/* Open at start, insert `insert_id` (0: none) once connected, and return the id of the first
 * row of tb_live_offset.t read; streaming_line says how the dump started. */
static int first_id_from(cfg *c, MYSQL *m, const tb_position *start, int insert_id)
{
    binlog_reader *r = NULL;
    tb_error err;
    streaming_line[0] = '\0';
    cr_assert_eq(binlog_open(c, start, &r, &err), TB_OK, "%s", err.msg);
    if (insert_id) {
        char q[200];
        snprintf(q, sizeof q, "INSERT INTO tb_live_offset.t VALUES (%d)", insert_id);
        exec(m, q);
    }
    got g;
    read_events(r, "tb_live_offset", &g, 1, 30);
    binlog_close(r);
    int id = 0;
    cr_assert_eq(sscanf(g.after, "{\"id\":%d}", &id), 1, "%s", g.after);
    got_free(&g, 1);
    return id;
}

/* A MariaDB start by GTID streams from the stored file and offset (no scan of the binlog file up
 * to the GTID) only when the offset is in the history the GTID state was taken from: the next
 * transaction's GTID event is there, or the log ends there with that state. A position whose
 * offset and GTID state disagree, either way, starts by GTID: nothing is replayed twice or
 * skipped. */
Test(live, a_gtid_start_takes_the_offset_only_in_the_same_history, .timeout = 120)
{
    MYSQL *m = db_connect();
    exec(m, "DROP DATABASE IF EXISTS tb_live_offset");
    exec(m, "CREATE DATABASE tb_live_offset");
    exec(m, "CREATE TABLE tb_live_offset.t (id INT PRIMARY KEY)");
    cfg *c = make_cfg("4209");
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open(c, NULL, &r, &err), TB_OK, "%s", err.msg);
    exec(m, "INSERT INTO tb_live_offset.t VALUES (1)");
    exec(m, "INSERT INTO tb_live_offset.t VALUES (2)");
    got g[2];
    read_events(r, "tb_live_offset", g, 2, 30);
    binlog_close(r);
    const tb_position *p1 = &g[0].pos, *p2 = &g[1].pos;
    cr_assert(g[0].last && g[1].last);
    cr_assert(p1->file && p1->gtid_set && p2->file && p2->gtid_set);
    char at1[300], at2[300];
    snprintf(at1, sizeof at1, ", at %s:%llu ", p1->file, (unsigned long long)p1->pos);
    snprintf(at2, sizeof at2, ", at %s:%llu ", p2->file, (unsigned long long)p2->pos);
    tb_log_set_sink(keep_streaming_line, NULL);

    /* the next transaction's GTID event at the offset */
    cr_expect_eq(first_id_from(c, m, p1, 0), 2);
    cr_expect(strstr(streaming_line, at1), "not from the offset: %s", streaming_line);
    /* the end of the log, with the server's GTID state */
    cr_expect_eq(first_id_from(c, m, p2, 3), 3);
    cr_expect(strstr(streaming_line, at2), "not from the offset: %s", streaming_line);

    /* p1's offset with p2's GTID state: by GTID, from after 2 (the offset would give 2 again) */
    tb_position mixed;
    tb_position_init(&mixed);
    cr_assert_eq(tb_position_copy(&mixed, p1), TB_OK);
    cr_assert_eq(tb_position_set_gtid(&mixed, p2->gtid_set), TB_OK);
    cr_expect_eq(first_id_from(c, m, &mixed, 0), 3);
    cr_expect(strstr(streaming_line, "streaming from GTID") && !strstr(streaming_line, ", at "),
              "not by GTID: %s", streaming_line);
    /* the end of the log with p1's GTID state: by GTID, from after 1 (the offset would skip 2 and 3) */
    char *end_file = NULL, *end_pos = NULL;
    mysql_query(m, "SHOW MASTER STATUS");
    MYSQL_RES *res = mysql_store_result(m);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    cr_assert(row && row[0] && row[1]);
    end_file = strdup(row[0]);
    end_pos = strdup(row[1]);
    mysql_free_result(res);
    cr_assert_eq(tb_position_copy(&mixed, p1), TB_OK);
    cr_assert_eq(tb_position_set_file(&mixed, end_file), TB_OK);
    mixed.pos = strtoull(end_pos, NULL, 10);
    cr_expect_eq(first_id_from(c, m, &mixed, 0), 2);
    cr_expect(strstr(streaming_line, "streaming from GTID") && !strstr(streaming_line, ", at "),
              "not by GTID: %s", streaming_line);

    tb_log_set_sink(NULL, NULL);
    free(end_file);
    free(end_pos);
    tb_position_free(&mixed);
    got_free(g, 2);
    cfg_free(c);
    mysql_close(m);
}
