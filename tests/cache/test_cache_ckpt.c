/*
 * Unit tests of cache_ckpt, the cache file's background WAL checkpoints.
 *
 *   ckpt/background_copies_into_the_file: after commits that put more than
 *       4096 pages into the WAL, the checkpoint thread copies them into the
 *       database file while the writer keeps its connection open (a second
 *       connection that never read the file used to make every checkpoint a
 *       silent no-op: the WAL then grew until the inline checkpoint)
 *   ckpt/wal_restarts: after more than 16384 WAL pages the WAL starts over
 *       (its header's checkpoint sequence number moves), so it stays bounded
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_apply.h"
#include "cache_tmp.h"
#include "cache_int.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void tmp_path(char *out, size_t n, const char *what)
{
    snprintf(out, n, "/tmp/cache-ckpt-%s-%ld.db", what, (long)getpid());
}

/* One transaction of about 500 new 4 KiB pages. */
static void write_pages(cache_store *s)
{
    tb_error e;
    cr_assert_eq(cache_store_begin(s, &e), TB_OK, "%s", e.msg);
    cr_assert_eq(cache_exec(s,
                            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 500)"
                            " INSERT INTO big SELECT randomblob(3500) FROM c",
                            &e),
                 TB_OK, "%s", e.msg);
    cr_assert_eq(cache_store_commit(s, &e), TB_OK, "%s", e.msg);
}

Test(ckpt, background_copies_into_the_file)
{
    char db[256];
    tb_error e;
    cache_store *s = NULL;
    tmp_path(db, sizeof(db), "copy");
    cache_tmp_rm(db);
    cr_assert_eq(cache_store_open(db, false, &s, &e), TB_OK, "%s", e.msg);
    cr_assert_eq(cache_exec(s, "CREATE TABLE big(x BLOB)", &e), TB_OK, "%s", e.msg);
    long long before = file_size(db);
    for (int i = 0; i < 12; i++) /* ~6000 pages: the thread is woken once, at 4096 */
        write_pages(s);
    double deadline = now_s() + 30;
    while (file_size(db) < 4096LL * 4000 && now_s() < deadline)
        usleep(10000);
    cr_expect_geq(file_size(db), 4096LL * 4000, "database file %lld bytes (was %lld): no background checkpoint",
                  file_size(db), before);
    cache_store_close(s);
    cache_tmp_rm(db);
}

Test(ckpt, wal_restarts)
{
    char db[256], wal[300];
    unsigned char hdr[16];
    tb_error e;
    cache_store *s = NULL;
    tmp_path(db, sizeof(db), "restart");
    snprintf(wal, sizeof(wal), "%s-wal", db);
    cache_tmp_rm(db);
    cr_assert_eq(cache_store_open(db, false, &s, &e), TB_OK, "%s", e.msg);
    cr_assert_eq(cache_exec(s, "CREATE TABLE big(x BLOB)", &e), TB_OK, "%s", e.msg);
    write_pages(s);
    FILE *f = fopen(wal, "rb");
    cr_assert(f && fread(hdr, 1, sizeof(hdr), f) == sizeof(hdr), "cannot read %s", wal);
    fclose(f);
    unsigned seq0 = (unsigned)hdr[12] << 24 | (unsigned)hdr[13] << 16 | (unsigned)hdr[14] << 8 | hdr[15];
    for (int i = 0; i < 70; i++) /* ~35000 pages: beyond twice the inline limit */
        write_pages(s);
    f = fopen(wal, "rb");
    cr_assert(f && fread(hdr, 1, sizeof(hdr), f) == sizeof(hdr), "cannot read %s", wal);
    fclose(f);
    unsigned seq1 = (unsigned)hdr[12] << 24 | (unsigned)hdr[13] << 16 | (unsigned)hdr[14] << 8 | hdr[15];
    cr_expect_neq(seq1, seq0, "the WAL never started over (checkpoint sequence %u)", seq0);
    cr_expect_lt(file_size(wal), 4096LL * 2 * 16384 + 4096LL * 600, "WAL of %lld bytes", file_size(wal));
    cache_store_close(s);
    cache_tmp_rm(db);
}

/* A source column named like the cache's own "_partition" column (in any case)
 * is refused with an error that names the table, the column and the fix,
 * instead of a failed CREATE TABLE. */
Test(store, reserved_partition_column)
{
    char db[256];
    tb_error e;
    cache_store *s = NULL;
    tmp_path(db, sizeof(db), "reserved");
    cache_tmp_rm(db);
    cr_assert_eq(cache_store_open(db, false, &s, &e), TB_OK, "%s", e.msg);
    const char *rec = "{\"db\":\"shop\",\"table\":\"p\",\"version\":1,\"names_known\":true,\"columns\":["
                      "{\"name\":\"id\",\"type\":\"int\",\"source_type\":\"int\",\"nullable\":false,\"pk\":1},"
                      "{\"name\":\"_Partition\",\"type\":\"int\",\"source_type\":\"int\",\"nullable\":true,\"pk\":0}"
                      "],\"primary_key\":[\"id\"]}";
    tb_code rc = cache_apply_schema(s, "tb", NULL, 0, rec, strlen(rec), NULL, NULL, &e);
    cr_assert_eq(rc, TB_ERR_UNSUPPORTED, "rc %d: %s", rc, e.msg);
    cr_assert(strstr(e.msg, "shop.p") && strstr(e.msg, "\"_Partition\"") && strstr(e.msg, "rename"), "%s", e.msg);
    cr_assert_null(cache_store_find(s, "shop.p"), "no table was created");
    cache_store_close(s);
    cache_tmp_rm(db);
}
