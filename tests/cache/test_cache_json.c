/*
 * Unit tests of cache_json, the cache's zero-allocation JSON scanner.
 *
 *   cj/valid_texts, cj/invalid_texts_name_offset: grammar (RFC 8259)
 *   cj/iterate_members_with_escapes: fast skipping of validated text keeps
 *       escaped quotes and backslashes inside strings
 *   cj/string_decode: escapes, surrogate pairs, \udcXX -> raw byte (DESIGN 5)
 *   cj/int64_bounds: INT64_MIN/MAX fit, one beyond does not
 *   cj/parse_top_members_takes_the_row: the members of one top-level object
 *       (raw keys, whole nested values), the count beyond the room, null /
 *       absent / repeated members, errors inside it
 *   cj/one_special_byte_at_every_position: the 16/8-byte string scanners
 *       stop exactly where a byte-by-byte scan would
 *   cj/same_as_evt_jv: lone surrogates and nesting depth read as evt_jv reads
 *       them, at the limit the writer has (EVT_JSON_MAX_DEPTH)
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cache_json.h"
#include "evt_json.h"

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
    size_t n, nmem;
    tb_error e;
    const char *t = " {\"before\":null,\"after\":{\"id\":1},\"source\":{\"a\":\"}\"},\"op\":\"c\",\"o\\u0070\":1} ";
    cr_assert_eq(cj_parse_top_members(t, strlen(t), &v, names, 3, vals, found, &n, 3, NULL, 0, &nmem, &e), TB_OK, "%s",
                 e.msg);
    cr_expect_eq(nmem, 0);
    cr_expect_eq(v.type, CJ_OBJECT);
    cr_expect_eq(n, 5);
    cr_expect(found[0] && vals[0].type == CJ_OBJECT && vals[0].len == 8);
    cr_expect(found[1] && vals[1].type == CJ_STRING && vals[1].len == 1 && vals[1].ptr[0] == 'c');
    cr_expect(!found[2]);
    /* errors are those of cj_parse, with the offset */
    const char *bad = "{\"after\":{\"id\":1},\"op\":\"c\"";
    cr_expect_eq(cj_parse_top_members(bad, strlen(bad), &v, names, 3, vals, found, &n, 3, NULL, 0, &nmem, &e),
                 TB_ERR_INVALID);
    cr_expect(strstr(e.msg, "at byte 26") != NULL, "%s", e.msg);
    const char *trail = "{} {}";
    cr_expect_eq(cj_parse_top_members(trail, strlen(trail), &v, names, 3, vals, found, &n, 3, NULL, 0, &nmem, &e),
                 TB_ERR_INVALID);
    /* not an object: plain parse */
    cr_expect_eq(cj_parse_top_members("[1]", 3, &v, names, 3, vals, found, &n, 3, NULL, 0, &nmem, &e), TB_OK);
    cr_expect_eq(v.type, CJ_ARRAY);
}

Test(cj, parse_top_members_takes_the_row)
{
    const char *names[] = {"before", "after", "op"};
    cj_val vals[3], v;
    bool found[3];
    size_t n, nmem;
    cj_member mem[3];
    tb_error e;
    const char *t = "{\"before\":{\"x\":0},\"after\":{\"id\":7,\"n\\u0061me\":\"a\\\"b\",\"o\":{\"p\":[1,{}]}},\"op\":\"u\"}";
    cr_assert_eq(cj_parse_top_members(t, strlen(t), &v, names, 3, vals, found, &n, 1, mem, 3, &nmem, &e), TB_OK, "%s",
                 e.msg);
    cr_assert_eq(nmem, 3);
    cr_expect(mem[0].klen == 2 && memcmp(mem[0].key, "id", 2) == 0 && mem[0].val.type == CJ_NUMBER &&
              mem[0].val.len == 1 && mem[0].val.ptr[0] == '7');
    cr_expect(cj_key_eq(mem[1].key, mem[1].klen, "name"), "escaped key kept raw"); /* \u0061 = a */
    cr_expect(mem[1].val.type == CJ_STRING && mem[1].val.escaped && mem[1].val.len == 4);
    cr_expect(mem[2].val.type == CJ_OBJECT && mem[2].val.len == 12, "nested values whole");
    cr_expect(found[1] && vals[1].type == CJ_OBJECT);
    /* more members than room: the count says so */
    cr_assert_eq(cj_parse_top_members(t, strlen(t), &v, names, 3, vals, found, &n, 1, mem, 2, &nmem, &e), TB_OK);
    cr_expect_eq(nmem, 3);
    /* not an object, absent, or the last of two occurrences */
    const char *u = "{\"after\":null,\"op\":\"d\"}";
    cr_assert_eq(cj_parse_top_members(u, strlen(u), &v, names, 3, vals, found, &n, 1, mem, 3, &nmem, &e), TB_OK);
    cr_expect_eq(nmem, 0);
    cr_assert_eq(cj_parse_top_members("{\"op\":1}", 8, &v, names, 3, vals, found, &n, 1, mem, 3, &nmem, &e), TB_OK);
    cr_expect_eq(nmem, 0);
    const char *w = "{\"after\":{\"a\":1,\"b\":2},\"after\":{\"c\":3}}";
    cr_assert_eq(cj_parse_top_members(w, strlen(w), &v, names, 3, vals, found, &n, 1, mem, 3, &nmem, &e), TB_OK);
    cr_expect(nmem == 1 && mem[0].key[0] == 'c');
    /* a bad value inside the row is still an error with its offset */
    const char *bad = "{\"after\":{\"id\":01}}";
    cr_expect_eq(cj_parse_top_members(bad, strlen(bad), &v, names, 3, vals, found, &n, 1, mem, 3, &nmem, &e),
                 TB_ERR_INVALID);
}

/* Strings are scanned 16 (SSE2) or 8 bytes at a time: one byte that ends a
 * plain run (an escape, an escaped quote, a control character) or a
 * non-ASCII byte, at every position of strings up to 40 bytes, inside an
 * object that is then iterated (fast skipping of validated text). */
Test(cj, one_special_byte_at_every_position)
{
    static const struct {
        const char *text;
        bool valid, escaped;
    } sp[] = {{"\\\"", true, true}, {"\\\\", true, true}, {"\\n", true, true}, {"\\u00e9", true, true},
              {"\xc3\xa9", true, false}, {"\x7f", true, false}, {"\x01", false, false}, {"\x1f", false, false}};
    for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++)
        for (size_t len = 0; len <= 40; len++)
            for (size_t pos = 0; pos <= len; pos++) {
                char text[96];
                size_t sl = strlen(sp[k].text), n = 0;
                memcpy(text, "{\"k\":\"", 6);
                n = 6;
                memset(text + n, 'a', pos);
                n += pos;
                memcpy(text + n, sp[k].text, sl);
                n += sl;
                memset(text + n, 'b', len - pos);
                n += len - pos;
                memcpy(text + n, "\",\"z\":1}", 8);
                n += 8;
                cj_val v, m;
                tb_error e;
                tb_code rc = cj_parse(text, n, &v, &e);
                cr_assert_eq(rc, sp[k].valid ? TB_OK : TB_ERR_INVALID, "special %zu, length %zu, position %zu", k,
                             len, pos);
                if (!sp[k].valid) {
                    cr_assert(strstr(e.msg, "control character") != NULL, "%s", e.msg);
                    continue;
                }
                cj_iter it;
                const char *key;
                size_t klen;
                cj_obj_begin(&v, &it);
                cr_assert(cj_obj_next(&it, &key, &klen, &m));
                cr_assert_eq(m.type, CJ_STRING);
                cr_assert_eq(m.len, len + sl, "special %zu, length %zu, position %zu", k, len, pos);
                cr_assert_eq(m.escaped, sp[k].escaped);
                cr_assert(cj_obj_next(&it, &key, &klen, &m));
                cr_assert(klen == 1 && key[0] == 'z' && m.type == CJ_NUMBER);
                cr_assert(!cj_obj_next(&it, &key, &klen, &m));
            }
}

/* A lone surrogate that is not a \udc80..\udcff byte escape decodes to U+FFFD
 * (DESIGN 5), as evt_jv decodes it; nesting up to the writer's limit is read,
 * one level more is refused, by both readers. */
Test(cj, same_as_evt_jv)
{
    const char *lone[] = {"\\ud800", "x\\udbffy", "\\udc00", "\\udfff", "\\ud83d\\u0041", NULL};
    for (int i = 0; lone[i]; i++) {
        tb_buf b;
        tb_buf_init(&b, 0);
        cr_assert_eq(cj_str_decode(lone[i], strlen(lone[i]), &b), TB_OK);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "\"%s\"", lone[i]);
        evt_jv *v = NULL;
        cr_assert_eq(evt_jv_parse(quoted, strlen(quoted), &v, NULL), TB_OK, "%s", quoted);
        size_t n = 0;
        const char *t = evt_jv_text(v, &n);
        cr_expect(n == b.len && memcmp(t, b.data, n) == 0, "%s: the two readers decode it differently", lone[i]);
        cr_expect_not_null(memmem(b.data, b.len, "\xef\xbf\xbd", 3), "%s: U+FFFD", lone[i]);
        evt_jv_free(v);
        tb_buf_free(&b);
    }

    for (int depth = EVT_JSON_MAX_DEPTH - 1; depth <= EVT_JSON_MAX_DEPTH + 1; depth++) {
        /* {"a":{"a":...{"a":[1]}...}} with `depth` containers, as the writer writes it */
        tb_buf doc;
        tb_buf_init(&doc, 0);
        evt_jw w;
        evt_jw_init(&w, &doc);
        for (int i = 0; i < depth - 1; i++) {
            evt_jw_obj_begin(&w);
            evt_jw_key(&w, "a", 1);
        }
        evt_jw_arr_begin(&w);
        evt_jw_int(&w, 1);
        evt_jw_arr_end(&w);
        for (int i = 0; i < depth - 1; i++)
            evt_jw_obj_end(&w);
        bool written = evt_jw_finish(&w) == TB_OK;
        cr_expect_eq(written, depth <= EVT_JSON_MAX_DEPTH, "writer at depth %d", depth);
        if (!written) {
            /* a text one level deeper than the writer writes: both readers refuse it */
            tb_buf_reset(&doc);
            for (int i = 0; i < depth; i++)
                tb_buf_putc(&doc, '[');
            for (int i = 0; i < depth; i++)
                tb_buf_putc(&doc, ']');
        }
        cj_val cv;
        evt_jv *jv = NULL;
        bool cj_ok = cj_parse(doc.data, doc.len, &cv, NULL) == TB_OK;
        bool jv_ok = evt_jv_parse(doc.data, doc.len, &jv, NULL) == TB_OK;
        cr_expect_eq(cj_ok, depth <= EVT_JSON_MAX_DEPTH, "cache scanner at depth %d", depth);
        cr_expect_eq(jv_ok, depth <= EVT_JSON_MAX_DEPTH, "evt_jv at depth %d", depth);
        evt_jv_free(jv);
        tb_buf_free(&doc);
    }
}
