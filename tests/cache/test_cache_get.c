/*
 * test_cache_get: `tributary cache get` (the built binary) on a cache file
 * made with cache_apply_schema/cache_apply_msg: the key matches exactly
 * (every key column, nothing else, scalar values; a duplicate member counts
 * as the last, a null finds the row keyed NULL) and the exit code tells a
 * missing row from a bad key, a missing table and an unreadable file
 * (docs/cache.md, "Reading the cache"). Printed rows are compared with
 * Jansson.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_tmp.h"
#include "cache_apply.h"

static char path[64], out[80];

static void put(cache_store *s, const char *key, const char *value)
{
    tb_error err;
    cr_assert_eq(cache_apply_msg(s, "p.db.t", "p", 0, key, strlen(key), value, strlen(value), &err), TB_OK, "%s",
                 err.msg);
    cr_assert_eq(cache_store_flush(s, &err), TB_OK, "%s", err.msg);
    cache_store_release(s);
}

static void make_cache(void)
{
    cache_store *s = NULL;
    tb_error err;
    cache_tmp_path(path, sizeof path, "test_cache_get");
    snprintf(out, sizeof out, "/tmp/test_cache_get_%d.out", (int)getpid());
    cr_assert_eq(cache_store_open(path, false, &s, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cache_store_begin(s, &err), TB_OK);
    const char *rec = "{\"db\":\"db\",\"table\":\"t\",\"version\":1,\"names_known\":true,\"columns\":[{\"name\":\"k\","
                      "\"type\":\"varchar\"},{\"name\":\"n\",\"type\":\"int\"},{\"name\":\"v\",\"type\":\"int\"}],"
                      "\"primary_key\":[\"k\",\"n\"]}";
    cr_assert_eq(cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err), TB_OK, "%s", err.msg);
    put(s, "{\"k\":\"a\",\"n\":1}", "{\"k\":\"a\",\"n\":1,\"v\":10}");
    put(s, "{\"k\":\"b\",\"n\":2}", "{\"k\":\"b\",\"n\":2,\"v\":20}");
    put(s, "{\"k\":null,\"n\":3}", "{\"k\":null,\"n\":3,\"v\":30}");
    cr_assert_eq(cache_store_commit(s, &err), TB_OK, "%s", err.msg);
    cache_store_close(s);
}

/* Exit code of cache get; *v: the printed row's v (-1 when none printed). */
static int get(const char *db, const char *table, const char *key, long *v)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/app/tributary cache get --db %s --table %s --key '%s' > %s 2>/dev/null",
             TB_BINARY_DIR, db, table, key, out);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s", cmd);
    *v = -1;
    json_error_t je;
    json_t *row = json_load_file(out, JSON_DISABLE_EOF_CHECK, &je);
    if (row) {
        json_t *jv = json_object_get(row, "v");
        cr_assert(json_is_integer(jv), "%s", cmd);
        *v = (long)json_integer_value(jv);
        json_decref(row);
    }
    unlink(out);
    return WEXITSTATUS(st);
}

Test(cache_get, exact_keys_and_exit_codes, .timeout = 120)
{
    long v;
    make_cache();
    cr_expect_eq(get(path, "db.t", "{\"k\":\"b\",\"n\":2}", &v), 0);
    cr_expect_eq(v, 20);
    cr_expect_eq(get(path, "db.t", "{\"n\":2,\"k\":\"b\"}", &v), 0, "members in any order");
    cr_expect_eq(v, 20);
    /* no such row: 1 */
    cr_expect_eq(get(path, "db.t", "{\"k\":\"b\",\"n\":3}", &v), 1);
    cr_expect_eq(v, -1);
    /* a member that is not a key column: a bad key (2), not a match on the others */
    cr_expect_eq(get(path, "db.t", "{\"k\":\"b\",\"n\":2,\"v\":20}", &v), 2);
    cr_expect_eq(v, -1);
    /* a key column missing: 2 */
    cr_expect_eq(get(path, "db.t", "{\"k\":\"b\"}", &v), 2);
    /* a duplicate member: the last counts */
    cr_expect_eq(get(path, "db.t", "{\"k\":\"a\",\"n\":1,\"k\":\"b\",\"n\":2}", &v), 0);
    cr_expect_eq(v, 20);
    /* a nested value: a type error (2), not "no row" */
    cr_expect_eq(get(path, "db.t", "{\"k\":{\"x\":1},\"n\":2}", &v), 2);
    cr_expect_eq(get(path, "db.t", "{\"k\":[\"b\"],\"n\":2}", &v), 2);
    /* null finds the row keyed NULL */
    cr_expect_eq(get(path, "db.t", "{\"k\":null,\"n\":3}", &v), 0);
    cr_expect_eq(v, 30);
    /* not an object, not JSON: 2 */
    cr_expect_eq(get(path, "db.t", "[1]", &v), 2);
    cr_expect_eq(get(path, "db.t", "{\"k\":", &v), 2);
    /* no such table: 3; no such file: 4 */
    cr_expect_eq(get(path, "db.nope", "{\"k\":\"b\",\"n\":2}", &v), 3);
    cr_expect_eq(get("/tmp/test_cache_get_no_such_file.db", "db.t", "{\"k\":\"b\",\"n\":2}", &v), 4);
    cache_tmp_rm(path);
}
