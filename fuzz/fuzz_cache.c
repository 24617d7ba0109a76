/*
 * libFuzzer target: the table cache's message path (cache/cache_apply.c,
 * cache/cache_connect.c), the decoder of what anyone who may write a topic
 * writes (built only with -DTB_FUZZ=ON, clang).
 *
 * An input is a sequence of Kafka messages, one a line:
 *   TOPIC \t KEY \t VALUE \n
 * TOPIC "<prefix>.schema" is a schema record (cache_apply_schema), any other
 * topic a table message (cache_apply_msg) with <prefix> the topic up to its
 * first dot; a line without a second tab, or with an empty VALUE, is a
 * tombstone; an empty KEY is a message without a key. The lines are applied
 * in order to one cache in memory, in transactions of a few messages, as
 * `tributary cache` applies a batch, so schema records, Connect schemas that
 * change between messages, both encodings of keys and values, tombstones and
 * truncates meet the tables the earlier lines made. TOPIC "<x>.schemahistory"
 * is a record of Debezium's schema history (cache_history_add), read by the
 * Connect schemas of the lines after it (cache.debezium.history.topic).
 *
 * A message may be refused (TB_ERR_INVALID, the cache applies
 * cache.error.policy; TB_ERR_UNSUPPORTED, a table the cache cannot hold: it
 * stops naming the fix), never crash, leak or overflow; any other error is a
 * failure of the cache file, which a message must not cause: it aborts.
 * Seeds: fuzz/corpus/fuzz_cache/ (fuzz/corpus/make_cache_seeds.py: the
 * golden Debezium fixtures and tributary's own messages).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_apply.h"
#include "cache_int.h"
#include "tb_log.h"

#define FUZZ_BATCH 4

static tb_code no_rewind(const char *topic, void *opaque, tb_error *err)
{
    (void)topic;
    (void)opaque;
    (void)err;
    return TB_OK;
}

static void check_rc(tb_code rc, const tb_error *err, const char *what)
{
    if (rc == TB_OK || rc == TB_ERR_INVALID || rc == TB_ERR_UNSUPPORTED || rc == TB_ERR_NOMEM)
        return;
    fprintf(stderr, "fuzz_cache: %s: a message failed the cache file: %s (code %d)\n", what, err->msg, (int)rc);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet++)
        tb_log_set_level(TB_LOG_ERROR);
    cache_store *s = NULL;
    tb_error err;
    tb_error_clear(&err);
    if (cache_store_open(":memory:", false, &s, &err) != TB_OK) {
        fprintf(stderr, "fuzz_cache: cannot open a cache in memory: %s\n", err.msg);
        abort();
    }
    if (!(s->history = cache_history_new()))
        abort();
    char *copy = malloc(size + 1); /* NUL-terminated topic names, spans for the rest */
    if (!copy)
        abort();
    memcpy(copy, data, size);
    copy[size] = 0;
    int n = 0;
    check_rc(cache_store_begin(s, &err), &err, "begin");
    for (char *line = copy, *end = copy + size; line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *stop = nl ? nl : end;
        char *t1 = memchr(line, '\t', (size_t)(stop - line));
        char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(stop - t1 - 1)) : NULL;
        const char *key = t1 ? t1 + 1 : NULL, *value = t2 ? t2 + 1 : NULL;
        size_t klen = key ? (size_t)((t2 ? t2 : stop) - key) : 0, vlen = value ? (size_t)(stop - value) : 0;
        *stop = 0;
        if (t1)
            *t1 = 0;
        const char *topic = line;
        line = stop + 1;
        if (!*topic || strlen(topic) != (size_t)((t1 ? t1 : stop) - topic))
            continue; /* no topic name (or a NUL in it: Kafka has none) */
        size_t tl = strlen(topic);
        const char *dot = strchr(topic, '.');
        char prefix[256];
        size_t pl = dot ? (size_t)(dot - topic) : 0;
        if (pl >= sizeof(prefix))
            continue;
        memcpy(prefix, topic, pl);
        prefix[pl] = 0;
        tb_code rc;
        tb_error_clear(&err);
        if (tl > 14 && strcmp(topic + tl - 14, ".schemahistory") == 0) {
            rc = vlen ? cache_history_add(s->history, value, vlen, &err) : TB_OK;
        } else if (tl > 7 && strcmp(topic + tl - 7, ".schema") == 0) {
            memcpy(prefix, topic, tl - 7 < sizeof(prefix) ? tl - 7 : 0);
            prefix[tl - 7 < sizeof(prefix) ? tl - 7 : 0] = 0;
            rc = cache_apply_schema(s, prefix, key, klen, vlen ? value : NULL, vlen, no_rewind, NULL, &err);
        } else {
            rc = cache_apply_msg(s, topic, pl ? prefix : NULL, n % 3, klen ? key : NULL, klen, vlen ? value : NULL,
                                 vlen, &err);
        }
        check_rc(rc, &err, "apply");
        tb_error_clear(&err);
        check_rc(cache_store_flush(s, &err), &err, "flush");
        cache_store_release(s);
        if (++n % FUZZ_BATCH == 0) {
            check_rc(cache_store_commit(s, &err), &err, "commit");
            check_rc(cache_store_begin(s, &err), &err, "begin");
        }
    }
    tb_error_clear(&err);
    check_rc(cache_store_commit(s, &err), &err, "commit");
    cache_history_free(s->history);
    s->history = NULL;
    cache_store_close(s);
    free(copy);
    return 0;
}
