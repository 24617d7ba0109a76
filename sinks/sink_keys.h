/*
 * sink_keys: the keys a topic holds that a caller's set of digests does
 * not, whatever the sink reads the topic from (ksink: Kafka; stdout_sink:
 * its own output file). One piece of code for the reconcile step's and the
 * statements' key reads (DESIGN 6a).
 *
 * The sink gives a walk: a function that reads the topic once, in order,
 * calling back per record with a key and whether that record is a
 * tombstone. sink_keys_held() walks it once to note the latest state of
 * every key outside `keep` (a digest and a state byte per key: tb_kset, 12
 * to 24 bytes a key; no key's bytes are kept) and, when some are held
 * (their latest record is not a tombstone), a second time to hand each
 * held key's bytes to `give` once, from any of its records (a key's bytes
 * are canonical: every record of it carries the same). The second walk must
 * read the same records as the first (to the same end).
 *
 * Digests are tb_kset_digest() of the key's bytes as the walk gives them;
 * the caller's `keep` must be made the same way (the sink's key_digest).
 */
#ifndef SINK_KEYS_H
#define SINK_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include "tb_error.h"

struct tb_kset;

/* One record of the topic with a key; live: not a tombstone. */
typedef tb_code (*sink_keys_rec_fn)(void *opaque, const char *key, size_t klen, bool live, tb_error *err);
/* Read the topic once, calling fn per record with a key. */
typedef tb_code (*sink_keys_walk_fn)(void *src, sink_keys_rec_fn fn, void *opaque, tb_error *err);
/* Called once per key held. */
typedef tb_code (*sink_keys_give_fn)(void *opaque, const char *key, size_t klen, tb_error *err);

/* Hand give every key walk's topic holds whose digest keep (NULL: none) lacks. */
TB_MUST_USE tb_code sink_keys_held(sink_keys_walk_fn walk, void *src, const struct tb_kset *keep,
                                   sink_keys_give_fn give, void *opaque, tb_error *err);

#endif
