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
 *   jo_expect_at(v, JO_PATH("after", "id"), "1");  // one member, named in a failure
 *   json_decref(v);
 */
#ifndef TB_JSON_ORACLE_H
#define TB_JSON_ORACLE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse one JSON text with Jansson's decoding flags (JSON_DECODE_ANY and
 * JSON_ALLOW_NUL are added); fails the test with Jansson's message when it does
 * not parse. JSON_DECODE_INT_AS_REAL reads a text that holds integers above
 * INT64_MAX, as doubles: for its other members. Caller: json_decref. */
static inline json_t *jo_parse_flags(const char *text, size_t len, size_t flags)
{
    json_error_t e;
    json_t *v = json_loadb(text ? text : "", text ? len : 0, flags | JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    cr_assert_not_null(v, "not JSON (Jansson: %s at %d): %.*s", e.text, e.position, (int)(text ? len : 0),
                       text ? text : "");
    return v;
}

/* Parse one JSON text (any value, NUL bytes allowed in strings). */
static inline json_t *jo_parse(const char *text, size_t len)
{
    return jo_parse_flags(text, len, 0);
}

/* jo_parse of a NUL-terminated text. */
static inline json_t *jo_parse_s(const char *text)
{
    return jo_parse(text, text ? strlen(text) : 0);
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

/* The compact text of v (keys in insertion order), malloc'd; steals v (one
 * json_decref). For building test input from a parsed template. */
static inline char *jo_dump_take(json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    cr_assert_not_null(s, "json_dumps");
    json_decref(v);
    return s;
}

/* The element of the array `arr` whose member `key` is the string `value`, or NULL. Borrowed. */
static inline json_t *jo_find(json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *el;
    json_array_foreach(arr, i, el) {
        const char *s = json_string_value(json_object_get(el, key));
        if (s && strcmp(s, value) == 0)
            return el;
    }
    return NULL;
}

/* A member of an object by a path of keys ("after", "id", NULL), or NULL. Borrowed. */
static inline json_t *jo_get(json_t *v, const char *const *path)
{
    for (; v && *path; path++)
        v = json_object_get(v, *path);
    return v;
}

/* A path for jo_get and jo_expect_at: JO_PATH("after", "id"). */
#define JO_PATH(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The path as text for messages: "after.id" (a static buffer). */
static inline const char *jo_path_text(const char *const *path)
{
    static char s[256];
    size_t n = 0;
    s[0] = '\0';
    for (; *path && n < sizeof s - 1; path++)
        n += (size_t)snprintf(s + n, sizeof s - n, "%s%s", n ? "." : "", *path);
    return s;
}

/* Whether the member of v at path equals the JSON `expected` (NULL: is absent),
 * without failing the test: for searching. */
static inline bool jo_equal_at(json_t *v, const char *const *path, const char *expected)
{
    json_t *got = jo_get(v, path);
    if (!expected)
        return got == NULL;
    json_t *x = jo_parse(expected, strlen(expected));
    bool ok = got && json_equal(got, x);
    json_decref(x);
    return ok;
}

/* The member of v at path equals the JSON `expected` as a JSON value; `expected`
 * NULL: the member is absent. A failure names the path and shows both values.
 * Returns whether it holds (a cr_expect: the test goes on). */
static inline bool jo_expect_at(json_t *v, const char *const *path, const char *expected)
{
    json_t *got = jo_get(v, path);
    char *gs = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    bool ok;
    if (!expected) {
        ok = got == NULL;
        cr_expect(ok, "%s: want no such member, got %s", jo_path_text(path), gs ? gs : "?");
    } else {
        json_t *x = jo_parse(expected, strlen(expected));
        ok = got && json_equal(got, x);
        cr_expect(ok, "%s: got %s, want %s", jo_path_text(path), gs ? gs : "(absent)", expected);
        json_decref(x);
    }
    free(gs);
    return ok;
}

/* jo_expect_at on a JSON text (parsed with jo_parse). */
static inline bool jo_expect_text_at(const char *text, size_t len, const char *const *path, const char *expected)
{
    json_t *v = jo_parse(text, len);
    bool ok = jo_expect_at(v, path, expected);
    if (!ok)
        cr_log_error("in %.*s", (int)len, text);
    json_decref(v);
    return ok;
}

#endif
