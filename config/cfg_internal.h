/*
 * Private helpers shared by the files of the config module (not for other
 * modules; tests may include it).
 */
#ifndef CFG_INTERNAL_H
#define CFG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "cfg.h"

/* "string", "int", "bool", "enum", "regex", "path", "ms". */
const char *cfg_type_name(cfg_type t);

/* The known key closest to `key` by edit distance when it is close enough to
 * be a likely typo, else NULL. Borrowed from the property table. Pattern rows
 * are offered with their prefix ("kafka."). */
const char *cfg_suggest(const char *key, char *scratch, size_t scratch_len);

/* Damerau-Levenshtein (optimal string alignment) distance, capped at 255. */
unsigned cfg_edit_distance(const char *a, const char *b);

#endif
