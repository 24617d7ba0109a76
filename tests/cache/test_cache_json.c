/*
 * Unit tests of cache_json, the cache's zero-allocation JSON scanner.
 *
 *   cj/valid_texts, cj/invalid_texts_name_offset: grammar (RFC 8259)
 *   cj/iterate_members_with_escapes: fast skipping of validated text keeps
 *       escaped quotes and backslashes inside strings
 *   cj/string_decode: escapes, surrogate pairs, \udcXX -> raw byte (DESIGN 5)
 *   cj/int64_bounds: INT64_MIN/MAX fit, one beyond does not
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "cache_json.h"

static tb_code parse(const char *s, cj_val *v, tb_error *e)
{
    return cj_parse(s, strlen(s), v, e);
}

Test(cj, valid_texts)
{
    const char *ok[] = {"{}", "[]", " {\"a\" : [1, -2.5e+3, true, false, null, \"x\"]} ", "\"\\u00e9\\n\"", "0",
                        "-0.0", "{\"a\":{\"b\":{\"c\":[[]]}}}", "18446744073709551615", NULL};
    for (int i = 0; ok[i]; i++) {
        cj_val v;
        tb_error e;
        cr_expect_eq(parse(ok[i], &v, &e), TB_OK, "%s: %s", ok[i], e.msg);
    }
}

Test(cj, invalid_texts_name_offset)
{
    const char *bad[] = {"", "{", "{\"a\":}", "{\"a\" 1}", "[1,]", "01", "1.", "-", "\"abc", "\"\\x\"", "tru",
                         "{\"a\":1}x", "\"\x01\"", "{a:1}", "[1 2]", NULL};
    for (int i = 0; bad[i]; i++) {
        cj_val v;
        tb_error e;
        cr_expect_eq(parse(bad[i], &v, &e), TB_ERR_INVALID, "accepted: %s", bad[i]);
        cr_expect(strstr(e.msg, "at byte") != NULL, "%s", e.msg);
    }
    tb_error e;
    cj_val v;
    parse("{\"a\":[1,2,}", &v, &e);
    cr_expect(strstr(e.msg, "at byte 10") != NULL, "%s", e.msg);
    /* nesting is bounded */
    char deep[300];
    memset(deep, '[', 200);
    deep[200] = 0;
    cr_expect_eq(parse(deep, &v, &e), TB_ERR_INVALID);
}

Test(cj, iterate_members_with_escapes)
{
    const char *t = "{\"a\\\"b\":\"x\\\\\",\"c\":\"q\\\"}{\",\"n\":-12.5e3,\"o\":{\"k\":\"}\"},\"z\":[1,\"]\"],\"i\":7}";
    cj_val v, m;
    tb_error e;
    cr_assert_eq(parse(t, &v, &e), TB_OK, "%s", e.msg);
    cr_expect_eq(cj_count(&v), 6);
    cr_assert(cj_obj_get(&v, "a\"b", &m));
    cr_expect_eq(m.type, CJ_STRING);
    cr_expect(m.escaped);
    cr_expect_eq(m.len, 3);
    cr_assert(cj_obj_get(&v, "c", &m));
    cr_expect_eq(m.len, 5); /* q\"}{ */
    cr_assert(cj_obj_get(&v, "n", &m));
    cr_expect_eq(m.type, CJ_NUMBER);
    cr_expect(!m.is_int);
    cr_assert(cj_obj_get(&v, "o", &m));
    cr_expect_eq(m.type, CJ_OBJECT);
    cr_expect_eq(m.len, 9);
    cr_assert(cj_obj_get(&v, "z", &m));
    cr_expect_eq(cj_count(&m), 2);
    cr_assert(cj_obj_get(&v, "i", &m));
    int64_t i;
    cr_expect(m.is_int && cj_int64(&m, &i) && i == 7);
    cr_expect(!cj_obj_get(&v, "missing", &m));
}

Test(cj, string_decode)
{
    const char *s = "a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\udcff";
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cj_str_decode(s, strlen(s), &b), TB_OK);
    const char want[] = "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xff";
    cr_expect_eq(b.len, sizeof(want) - 1);
    cr_expect(memcmp(b.data, want, b.len) == 0);
    tb_buf_free(&b);
}

Test(cj, int64_bounds)
{
    const char *t[] = {"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
                       "18446744073709551615", "1.0"};
    bool fits[] = {true, true, false, false, false, false};
    for (int i = 0; i < 6; i++) {
        cj_val v;
        int64_t x;
        cr_assert_eq(parse(t[i], &v, NULL), TB_OK);
        cr_expect_eq(cj_int64(&v, &x), fits[i], "%s", t[i]);
        if (i == 0)
            cr_expect_eq(x, INT64_MAX);
        if (i == 1)
            cr_expect_eq(x, INT64_MIN);
    }
}

Test(cj, parse_top_picks_members)
{
    const char *names[] = {"after", "op", "missing"};
    cj_val vals[3], v;
    bool found[3];
    size_t n;
    tb_error e;
    const char *t = " {\"before\":null,\"after\":{\"id\":1},\"source\":{\"a\":\"}\"},\"op\":\"c\",\"o\\u0070\":1} ";
    cr_assert_eq(cj_parse_top(t, strlen(t), &v, names, 3, vals, found, &n, &e), TB_OK, "%s", e.msg);
    cr_expect_eq(v.type, CJ_OBJECT);
    cr_expect_eq(n, 5);
    cr_expect(found[0] && vals[0].type == CJ_OBJECT && vals[0].len == 8);
    cr_expect(found[1] && vals[1].type == CJ_STRING && vals[1].len == 1 && vals[1].ptr[0] == 'c');
    cr_expect(!found[2]);
    /* errors are those of cj_parse, with the offset */
    const char *bad = "{\"after\":{\"id\":1},\"op\":\"c\"";
    cr_expect_eq(cj_parse_top(bad, strlen(bad), &v, names, 3, vals, found, &n, &e), TB_ERR_INVALID);
    cr_expect(strstr(e.msg, "at byte 26") != NULL, "%s", e.msg);
    const char *trail = "{} {}";
    cr_expect_eq(cj_parse_top(trail, strlen(trail), &v, names, 3, vals, found, &n, &e), TB_ERR_INVALID);
    /* not an object: plain parse */
    cr_expect_eq(cj_parse_top("[1]", 3, &v, names, 3, vals, found, &n, &e), TB_OK);
    cr_expect_eq(v.type, CJ_ARRAY);
}
