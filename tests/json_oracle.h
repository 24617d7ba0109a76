/*
 * json_oracle: Jansson as the independent oracle for the JSON this project
 * writes. Tests parse what the writer produced with Jansson and compare JSON
 * values (json_equal, json_unpack), never substrings of the text.
 *
 * Jansson cannot read two things the writer may produce (DESIGN 5): integers
 * above INT64_MAX (BIGINT UNSIGNED) and the lone-surrogate escapes \udc80..
 * \udcff of invalid UTF-8. Tests of those values compare exact text instead.
 *
 *   json_t *v = jo_parse(text, len);               // asserts it parses
 *   jo_assert_eq(text, len, "{\"id\":1}");          // equal as JSON values
 *   json_decref(v);
 */
#ifndef TB_JSON_ORACLE_H
#define TB_JSON_ORACLE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Parse one JSON text (any value, NUL bytes allowed in strings); fails the test
 * with Jansson's message when it does not parse. Caller: json_decref. */
static inline json_t *jo_parse(const char *text, size_t len)
{
    json_error_t e;
    json_t *v = json_loadb(text ? text : "", text ? len : 0, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    cr_assert_not_null(v, "not JSON (Jansson: %s at %d): %.*s", e.text, e.position, (int)(text ? len : 0),
                       text ? text : "");
    return v;
}

/* The text `actual` (len bytes) equals the JSON `expected` as a JSON value:
 * same types, numbers, strings, members (in any order) and elements (in order). */
static inline void jo_assert_eq(const char *actual, size_t len, const char *expected)
{
    json_t *a = jo_parse(actual, len);
    json_t *x = jo_parse(expected, strlen(expected));
    if (!json_equal(a, x)) {
        char *as = json_dumps(a, JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_COMPACT);
        char *xs = json_dumps(x, JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_COMPACT);
        json_decref(a);
        json_decref(x);
        cr_assert_fail("JSON differs:\n  actual   %s\n  expected %s", as ? as : "?", xs ? xs : "?");
    }
    json_decref(a);
    json_decref(x);
}

/* A member of an object by a path of keys ("after", "id", NULL), or NULL. Borrowed. */
static inline json_t *jo_get(json_t *v, const char *const *path)
{
    for (; v && *path; path++)
        v = json_object_get(v, *path);
    return v;
}

#endif
