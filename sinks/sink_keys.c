/*
 * sink_keys: see sink_keys.h.
 */
#include "sink_keys.h"

#include "tb_kset.h"

enum { SK_LIVE = 1, SK_GONE = 2, SK_DONE = 3 }; /* state byte of a key read */

typedef struct sk_read {
    const struct tb_kset *keep; /* keys the caller keeps (NULL: none) */
    tb_kset seen;               /* every other key read, with its latest state */
    size_t live;                /* keys of seen whose latest record is not a tombstone */
    sink_keys_give_fn give;     /* second walk: called once per live key */
    void *opaque;
} sk_read;

/* First walk: the latest state of every key outside keep. */
static tb_code sk_note(void *opaque, const char *key, size_t klen, bool live, tb_error *err)
{
    sk_read *k = opaque;
    uint64_t d = tb_kset_digest(key, klen);
    if (k->keep && tb_kset_has(k->keep, d))
        return TB_OK;
    uint8_t *st;
    if (tb_kset_put(&k->seen, d, &st) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for its keys");
    uint8_t now = live ? SK_LIVE : SK_GONE;
    k->live += (now == SK_LIVE) - (*st == SK_LIVE);
    *st = now;
    return TB_OK;
}

/* Second walk: each key still held, once. */
static tb_code sk_give(void *opaque, const char *key, size_t klen, bool live, tb_error *err)
{
    (void)live;
    sk_read *k = opaque;
    uint8_t *st = tb_kset_find(&k->seen, tb_kset_digest(key, klen));
    if (!st || *st != SK_LIVE)
        return TB_OK;
    *st = SK_DONE;
    return k->give(k->opaque, key, klen, err);
}

tb_code sink_keys_held(sink_keys_walk_fn walk, void *src, const struct tb_kset *keep, sink_keys_give_fn give,
                       void *opaque, tb_error *err)
{
    sk_read k = {.keep = keep, .give = give, .opaque = opaque};
    tb_kset_init(&k.seen);
    tb_code rc = walk(src, sk_note, &k, err);
    if (rc == TB_OK && k.live > 0)
        rc = walk(src, sk_give, &k, err);
    tb_kset_free(&k.seen);
    return rc;
}
