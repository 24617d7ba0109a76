/*
 * e2e_reconcile: a connector run against the testenv MariaDB and Kafka
 * (sink=kafka, offsets in Kafka, a cache path) and the checks of the
 * reconcile tests: the source, its topic read as a KTable and the cache
 * equal by query (e2e_table.h).
 */
#ifndef E2E_RECONCILE_H
#define E2E_RECONCILE_H

#include <sys/stat.h>

#include "e2e_tables.h"

typedef st_run rc_run; /* e2e_tables.h; rc_setup writes a configuration of its own */

static inline void rc_setup(rc_run *r, const char *tag, const char *extra)
{
    st_paths(r, tag);
    FILE *f = fopen(r->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=^%s[.]\ntopic.prefix=%s\nkafka.bootstrap.servers=%s\n"
            "offsets.storage=kafka\noffsets.file=%s/offsets\noffsets.commit.interval.ms=100\nstatus.file=%s\n"
            "cache.path=%s\nsnapshot.mode=initial\nheartbeat.interval.ms=100\ntopic.partitions=3\n"
            "source.heartbeat.ms=500\n%s",
            r->db, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT"),
            tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"), tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            5000 + (unsigned)getpid() % 1000, r->db, r->db, tb_itest_env("TRIBUTARY_TEST_KAFKA"), r->dir, r->status,
            r->cache, extra ? extra : "");
    fclose(f);
}

static inline void rc_start(rc_run *r, const char *const *more)
{
    const char *args[16] = {"run", "--config", r->cfg};
    size_t n = 3;
    for (size_t i = 0; more && more[i] && n < 15; i++)
        args[n++] = more[i];
    args[n] = NULL;
    r->pid = e2e_spawn(args, r->log);
}

/* Until the committed GTID equals the server's (read again each time: the
 * connector's signalling rows move it too). */
static inline void rc_caught_up(MYSQL *m, const rc_run *r)
{
    char want[256], got[256] = "";
    long long deadline = tb_itest_now_ms() + 90000;
    for (;;) {
        e2e_server_gtid(m, want, sizeof want);
        if (e2e_status_gtid(r->status, got, sizeof got) && strcmp(got, want) == 0)
            break;
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        cr_assert(tb_itest_now_ms() < deadline, "committed %s, server %s; see %s", got, want, r->log);
        usleep(50000);
    }
}


static inline void rc_cache_build(const rc_run *r)
{
    const char *cargs[] = {"cache", "--config", r->cfg, "--until-caught-up", NULL};
    char clog[400];
    snprintf(clog, sizeof clog, "%s/cache.log", r->dir);
    int rc = e2e_wait(e2e_spawn(cargs, clog), 120000);
    cr_assert_eq(rc, 0, "tributary cache --until-caught-up failed (status %d); see %s", rc, clog);
    e2e_assert_clean_log(clog);
}

/* The source, the topic as a KTable and (with_cache) the cache hold the same rows of db.table. */
static inline void rc_assert_equal(const rc_run *r, MYSQL *m, const char *table, const char *const *cols,
                            const char *colsql, bool with_cache)
{
    char topic[256], ctable[256];
    snprintf(topic, sizeof topic, "%s.%s.%s", r->db, r->db, table);
    snprintf(ctable, sizeof ctable, "%s.%s", r->db, table);
    tb_buf src, top, cache;
    tb_buf_init(&src, 0);
    tb_buf_init(&top, 0);
    tb_buf_init(&cache, 0);
    st_source_rows(m, r->db, table, colsql, &src);
    st_topic_table(topic, cols, &top);
    cr_expect_str_eq(tb_buf_cstr(&top), tb_buf_cstr(&src), "%s: topic as a KTable differs from the source", table);
    if (with_cache) {
        st_cache_rows(r->cache, ctable, colsql, &cache);
        cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "%s: cache differs from the source", table);
    }
    fprintf(stderr, "e2e_reconcile: %s: source %zu bytes, topic %zu, cache %zu\n", table, src.len, top.len,
            cache.len);
    tb_buf_free(&src);
    tb_buf_free(&top);
    tb_buf_free(&cache);
}

static inline void rc_table(MYSQL *m, const char *db, const char *name, int nrows)
{
    e2e_sql(m, "CREATE TABLE %s.%s (id INT PRIMARY KEY, v VARCHAR(20), n INT)", db, name);
    for (int i = 1; i <= nrows; i += 50) {
        tb_buf q;
        tb_buf_init(&q, 0);
        tb_buf_printf(&q, "INSERT INTO %s.%s VALUES ", db, name);
        for (int j = i; j < i + 50 && j <= nrows; j++)
            tb_buf_printf(&q, "%s(%d, 'v%d', %d)", j > i ? "," : "", j, j, j);
        e2e_sql(m, "%s", tb_buf_cstr(&q));
        tb_buf_free(&q);
    }
}

#endif
