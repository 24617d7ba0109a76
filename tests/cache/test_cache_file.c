/*
 * test_cache_file: the cache file guarded (DESIGN 9, docs/cache.md "The
 * cache file"): one writer per file (a second one, in this process or
 * another, is refused naming the holder's pid), a file deleted or replaced
 * under a running store detected, a corrupt file and a lock held too long
 * reported with the fix, after the configured wait. SQLite itself is the
 * other party (a second connection holding a write transaction; a page
 * overwritten with garbage).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache_apply.h"
#include "cache_tmp.h"

static char path[64], lockp[80];

static void paths(void)
{
    cache_tmp_path(path, sizeof path, "test_cache_file");
    snprintf(lockp, sizeof lockp, "%s.lock", path);
}

static void cleanup(void)
{
    cache_tmp_rm(path);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(cache_file, one_writer_per_file)
{
    paths();
    cache_store *a = NULL, *b = NULL;
    tb_error err;
    cr_assert_eq(cache_store_open(path, false, &a, &err), TB_OK, "%s", err.msg);
    /* a second writer in this process */
    cr_assert_eq(cache_store_open(path, false, &b, &err), TB_ERR_STATE);
    cr_assert_null(b);
    char want[160];
    snprintf(want, sizeof want, "(pid %d, lock file %s)", (int)getpid(), lockp);
    cr_expect_not_null(strstr(err.msg, want), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "in use by another tributary cache"), "%s", err.msg);
    /* and in another process */
    pid_t pid = fork();
    if (pid == 0) {
        cache_store *c = NULL;
        tb_error e;
        _exit(cache_store_open(path, false, &c, &e) == TB_ERR_STATE && strstr(e.msg, want) ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other process was not refused");
    /* readers are not writers */
    cache_store *r = NULL;
    cr_assert_eq(cache_store_open(path, true, &r, &err), TB_OK, "%s", err.msg);
    cache_store_close(r);
    /* once the first closes, the file is free */
    cache_store_close(a);
    cr_assert_eq(cache_store_open(path, false, &b, &err), TB_OK, "%s", err.msg);
    cache_store_close(b);
    cleanup();
}

Test(cache_file, deleted_or_replaced)
{
    paths();
    cache_store *s = NULL;
    tb_error err;
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_check_file(s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(cache_store_check_file(s, &err), TB_ERR_IO);
    cr_expect_not_null(strstr(err.msg, "was deleted while the cache ran"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "rebuilds the file from the topics"), "%s", err.msg);
    int fd = open(path, O_CREAT | O_WRONLY, 0600); /* another file under the name */
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(cache_store_check_file(s, &err), TB_ERR_IO);
    cr_expect_not_null(strstr(err.msg, "was replaced"), "%s", err.msg);
    cache_store_close(s);
    cleanup();
}

Test(cache_file, corrupt_names_the_rebuild)
{
    paths();
    cache_store *s = NULL;
    tb_error err;
    /* not a database at all */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 2048; i++)
        fputs("garbage!", f);
    fclose(f);
    cr_assert_neq(cache_store_open(path, false, &s, &err), TB_OK);
    cr_expect_eq(err.code, TB_ERR_CORRUPT, "%d %s", err.code, err.msg);
    cr_expect_not_null(strstr(err.msg, "the cache file is corrupt"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "rebuilt from the topics"), "%s", err.msg);
    cleanup();
    /* a database whose table pages were overwritten */
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK, "%s", err.msg);
    const char *rec = "{\"db\":\"d\",\"table\":\"t\",\"version\":1,\"names_known\":true,\"columns\":[{\"name\":\"id\","
                      "\"type\":\"int\"},{\"name\":\"v\",\"type\":\"varchar\"}],\"primary_key\":[\"id\"]}";
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_OK, "%s", err.msg);
    char key[32], val[128];
    for (int i = 0; i < 400; i++) {
        snprintf(key, sizeof key, "{\"id\":%d}", i);
        snprintf(val, sizeof val, "{\"id\":%d,\"v\":\"%0100d\"}", i, i);
        cr_assert_eq(cache_apply_msg(s, "p.d.t", "p", 0, key, strlen(key), val, strlen(val), &err), TB_OK, "%s",
                     err.msg);
        cr_assert_eq(cache_store_flush(s, &err), TB_OK, "%s", err.msg);
        cache_store_release(s);
    }
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL), SQLITE_OK);
    cache_store_close(s);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    char junk[4096];
    memset(junk, 0xA5, sizeof junk);
    for (off_t pg = 2; pg < 12; pg++)
        cr_assert_eq(pwrite(fd, junk, sizeof junk, pg * 4096), (ssize_t)sizeof junk);
    close(fd);
    tb_code rc = cache_store_open(path, false, &s, &err);
    if (rc == TB_OK) { /* the damage shows where the pages are read */
        rc = cache_store_begin(s, &err);
        for (int i = 0; rc == TB_OK && i < 400; i++) {
            snprintf(key, sizeof key, "{\"id\":%d}", i);
            snprintf(val, sizeof val, "{\"id\":%d,\"v\":\"x\"}", i);
            rc = cache_apply_msg(s, "p.d.t", "p", 0, key, strlen(key), val, strlen(val), &err);
            if (rc == TB_OK)
                rc = cache_store_flush(s, &err);
            cache_store_release(s);
        }
        if (rc == TB_OK)
            rc = cache_store_commit(s, &err);
        cache_store_close(s);
    }
    cr_assert_eq(rc, TB_ERR_CORRUPT, "%d: %s", rc, err.msg);
    cr_expect_not_null(strstr(err.msg, "delete"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "rebuilt from the topics"), "%s", err.msg);
    cleanup();
}

Test(cache_file, locked_waits_the_configured_time)
{
    paths();
    cache_store *s = NULL;
    tb_error err;
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
    /* another process's connection holds a write transaction */
    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE; CREATE TABLE x(a)", NULL, NULL, NULL), SQLITE_OK);
    double t0 = now_s();
    tb_code rc = cache_store_open_busy(path, false, 300, &s, &err);
    if (rc == TB_OK) {
        rc = cache_store_begin(s, &err);
        cache_store_close(s);
    }
    double dt = now_s() - t0;
    cr_assert_eq(rc, TB_ERR_IO, "%d %s", rc, err.msg);
    cr_expect(err.retriable);
    cr_expect_not_null(strstr(err.msg, "locked by another process for more than 300 ms (cache.busy.timeout.ms)"),
                       "%s", err.msg);
    cr_expect(dt >= 0.25 && dt < 4.5, "waited %.2f s, not about the configured 0.3 s", dt);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    cleanup();
}
