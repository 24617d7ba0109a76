/*
 * tb_num: strict parsing of decimal numbers in text that came from a user or a server.
 *
 * strtoull and sscanf accept what a position or a GTID set must refuse: leading spaces and
 * signs ("-5" reads as 18446744073709551611), trailing junk ("7xyz" reads as 7) and values that
 * overflow (clamped, errno aside). tb_parse_u64 accepts one thing only: one or more ASCII digits,
 * nothing before or after them, with a value at most max.
 */
#ifndef TB_NUM_H
#define TB_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse the n bytes at s (not NUL-terminated: a span of a longer text) as a decimal number of
 * at most max. Returns false, *out untouched, for an empty span, any byte that is not a digit,
 * or a value above max. */
bool tb_parse_u64_n(const char *s, size_t n, uint64_t max, uint64_t *out);

/* The same for a NUL-terminated string. */
bool tb_parse_u64(const char *s, uint64_t max, uint64_t *out);

#endif
