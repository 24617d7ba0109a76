/*
 * cache_apply: decode one message of the wire format and apply it to the
 * cache file (see the top of cache_apply.c). Internal to cache/.
 */
#ifndef CACHE_APPLY_H
#define CACHE_APPLY_H

#include "cache_int.h"

/* Called when an incompatible schema change dropped a table: the consumer must
 * replay `topic` from the beginning (its stored offsets are already gone). */
typedef tb_code (*cache_rewind_fn)(const char *topic, void *opaque, tb_error *err);

/* "<db>.<table>" of a table topic: the topic without "<prefix>." when prefix
 * is known, else its last two dot-separated parts. Written into out. */
TB_MUST_USE tb_code cache_table_name_of(const char *topic, const char *prefix, tb_buf *out);

/* A record of <prefix>.schema (value NULL: a tombstone, ignored). */
TB_MUST_USE tb_code cache_apply_schema(cache_store *s, const char *prefix, const char *key, size_t klen, const char *value,
                           size_t vlen, cache_rewind_fn rewind, void *opaque, tb_error *err);

/* A record of a table topic. TB_ERR_INVALID: the message itself is bad (the
 * caller applies cache.error.policy); other codes: the cache file failed. */
TB_MUST_USE tb_code cache_apply_msg(cache_store *s, const char *topic, const char *prefix, int32_t partition, const char *key,
                        size_t klen, const char *value, size_t vlen, tb_error *err);

#endif
