/* make_cache FILE: a cache file as `tributary cache` writes it (the cache's
 * own writer, cache_apply_schema/cache_apply_msg): table db.t keyed (k, n),
 * rows ("a",1,10) and ("b",2,20), for test_install.sh's reader. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_apply.h"

static int put(cache_store *s, const char *key, const char *value, tb_error *err)
{
    if (cache_apply_msg(s, "p.db.t", "p", 0, key, strlen(key), value, strlen(value), err) != TB_OK ||
        cache_store_flush(s, err) != TB_OK)
        return 1;
    cache_store_release(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    cache_store *s = NULL;
    tb_error err;
    unlink(argv[1]);
    const char *rec = "{\"db\":\"db\",\"table\":\"t\",\"version\":1,\"names_known\":true,\"columns\":[{\"name\":\"k\","
                      "\"type\":\"varchar\"},{\"name\":\"n\",\"type\":\"int\"},{\"name\":\"v\",\"type\":\"int\"}],"
                      "\"primary_key\":[\"k\",\"n\"]}";
    if (cache_store_open(argv[1], false, &s, &err) != TB_OK || cache_store_begin(s, &err) != TB_OK ||
        cache_apply_schema(s, "p", "{}", 2, rec, strlen(rec), NULL, NULL, &err) != TB_OK ||
        put(s, "{\"k\":\"a\",\"n\":1}", "{\"k\":\"a\",\"n\":1,\"v\":10}", &err) ||
        put(s, "{\"k\":\"b\",\"n\":2}", "{\"k\":\"b\",\"n\":2,\"v\":20}", &err) || cache_store_commit(s, &err) != TB_OK) {
        fprintf(stderr, "make_cache: %s\n", err.msg);
        cache_store_close(s);
        return 1;
    }
    cache_store_close(s);
    return 0;
}
