/*
 * libFuzzer target: the project's two JSON readers against each other and
 * against Jansson (built only with -DTB_FUZZ=ON, clang).
 *
 * evt_jv (schema/evt_jv.c, a tree) and the cache's zero-copy scanner
 * (cache/cache_json.c, spans) implement the same grammar, nesting limit
 * (EVT_JSON_MAX_DEPTH) and escape rules (DESIGN 5). For every input:
 *  - both accept it or both refuse it;
 *  - when they accept, they read the same value: types, number texts, decoded
 *    string bytes, member keys and order, elements;
 *  - Jansson, the independent oracle, accepts exactly what they accept and
 *    reads the same values, except where DESIGN 5 says tributary differs on
 *    purpose: surrogate escapes (the \udc80..\udcff byte escapes; any other
 *    lone surrogate reads as U+FFFD), raw bytes that are not UTF-8 (kept as
 *    they are), a raw NUL byte (Jansson takes it for the end of the text), integers beyond int64 and reals beyond double (kept as exact
 *    text), nesting deeper than EVT_JSON_MAX_DEPTH (Jansson allows 2048), a
 *    \u0000 inside an object key (Jansson refuses it; a column name cannot
 *    hold one, a JSON column's key can).
 * A disagreement aborts.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache_json.h"
#include "evt_json.h"

/* A disagreement: say which check (the line), then abort for libFuzzer. */
#define check(ok)                                                                          \
    do {                                                                                   \
        if (!(ok)) {                                                                       \
            fprintf(stderr, "fuzz_json_readers: the readers disagree (line %d)\n", __LINE__); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

static void same_string(const evt_jv *jv, const char *span, size_t len)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    check(cj_str_decode(span, len, &b) == TB_OK);
    size_t n = 0;
    const char *t = evt_jv_text(jv, &n);
    check(n == b.len && (n == 0 || memcmp(t, b.data, n) == 0));
    tb_buf_free(&b);
}

/* evt_jv and the cache scanner read the same value. */
static void same(const evt_jv *jv, const cj_val *cv)
{
    size_t n = 0;
    switch (evt_jv_type_of(jv)) {
    case EVT_JV_NULL: check(cv->type == CJ_NULL); break;
    case EVT_JV_BOOL: check(cv->type == (evt_jv_bool(jv) ? CJ_TRUE : CJ_FALSE)); break;
    case EVT_JV_NUMBER: {
        const char *t = evt_jv_text(jv, &n);
        check(cv->type == CJ_NUMBER && cv->len == n && memcmp(cv->ptr, t, n) == 0);
        break;
    }
    case EVT_JV_STRING:
        check(cv->type == CJ_STRING);
        same_string(jv, cv->ptr, cv->len);
        break;
    case EVT_JV_ARRAY: {
        check(cv->type == CJ_ARRAY && cj_count(cv) == evt_jv_size(jv));
        cj_iter it;
        cj_val e;
        size_t i = 0;
        cj_arr_begin(cv, &it);
        while (cj_arr_next(&it, &e))
            same(evt_jv_at(jv, i++), &e);
        check(i == evt_jv_size(jv));
        break;
    }
    case EVT_JV_OBJECT: {
        check(cv->type == CJ_OBJECT && cj_count(cv) == evt_jv_size(jv));
        cj_iter it;
        cj_val m;
        const char *k;
        size_t klen, i = 0;
        cj_obj_begin(cv, &it);
        while (cj_obj_next(&it, &k, &klen, &m)) {
            tb_buf kb;
            tb_buf_init(&kb, 0);
            check(cj_str_decode(k, klen, &kb) == TB_OK);
            size_t jn = 0;
            const char *jk = evt_jv_key_at(jv, i, &jn);
            check(jn == kb.len && (jn == 0 || memcmp(jk, kb.data, jn) == 0));
            tb_buf_free(&kb);
            same(evt_jv_at(jv, i++), &m);
        }
        check(i == evt_jv_size(jv));
        break;
    }
    }
}

/* Jansson reads the same value as evt_jv (objects: Jansson keeps the last of
 * duplicate keys, as evt_jv_get does). */
static void same_as_jansson(const evt_jv *jv, json_t *j)
{
    size_t n = 0;
    switch (evt_jv_type_of(jv)) {
    case EVT_JV_NULL: check(json_is_null(j)); break;
    case EVT_JV_BOOL: check(json_is_boolean(j) && json_is_true(j) == evt_jv_bool(jv)); break;
    case EVT_JV_NUMBER: {
        const char *t = evt_jv_text(jv, &n);
        char *txt = strndup(t, n);
        check(txt != NULL);
        if (json_is_integer(j))
            check(strtoll(txt, NULL, 10) == json_integer_value(j));
        else
            check(json_is_real(j) && strtod(txt, NULL) == json_real_value(j));
        free(txt);
        break;
    }
    case EVT_JV_STRING: {
        const char *t = evt_jv_text(jv, &n);
        check(json_is_string(j) && json_string_length(j) == n && memcmp(json_string_value(j), t, n) == 0);
        break;
    }
    case EVT_JV_ARRAY:
        check(json_is_array(j) && json_array_size(j) == evt_jv_size(jv));
        for (size_t i = 0; i < evt_jv_size(jv); i++)
            same_as_jansson(evt_jv_at(jv, i), json_array_get(j, i));
        break;
    case EVT_JV_OBJECT: {
        check(json_is_object(j) && json_object_size(j) <= evt_jv_size(jv));
        const char *key;
        json_t *val;
        json_object_foreach(j, key, val)
        {
            if (strlen(key) != 0 && memchr(key, '\0', strlen(key)) == NULL) {
                const evt_jv *m = evt_jv_get(jv, key);
                check(m != NULL);
                same_as_jansson(m, val);
            }
        }
        break;
    }
    }
}

/* Inputs where tributary and Jansson differ on purpose (see the header). */
static int jansson_differs_on_purpose(const char *text, size_t size, const json_error_t *je)
{
    for (size_t i = 0; i + 2 < size; i++)
        if (text[i] == '\\' && text[i + 1] == 'u' && (text[i + 2] == 'd' || text[i + 2] == 'D'))
            return 1; /* \uDxxx: surrogates */
    for (size_t i = 0; i < size; i++)
        if ((unsigned char)text[i] >= 0x80 || text[i] == '\0')
            return 1; /* raw bytes: Jansson insists on UTF-8, and stops reading at a NUL byte */
    return je && (strstr(je->text, "too big") || strstr(je->text, "overflow") || strstr(je->text, "nesting") ||
                  strstr(je->text, "NUL byte in object key"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    evt_jv *jv = NULL;
    tb_error err;
    bool jv_ok = evt_jv_parse(text, size, &jv, &err) == TB_OK;
    bool jv_too_deep = !jv_ok && strstr(err.msg, "nesting too deep") != NULL;
    cj_val cv;
    bool cj_ok = cj_parse(text, size, &cv, NULL) == TB_OK;
    check(jv_ok == cj_ok);
    if (jv_ok)
        same(jv, &cv);

    json_error_t je;
    json_t *j = json_loadb(text, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!jansson_differs_on_purpose(text, size, j ? NULL : &je) && !jv_too_deep) {
        check((j != NULL) == jv_ok);
        if (j && jv_ok)
            same_as_jansson(jv, j);
    }
    json_decref(j);
    evt_jv_free(jv);
    return 0;
}
