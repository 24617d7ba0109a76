/*
 * libFuzzer target for the JSON codec (built only with -DTB_FUZZ=ON, clang).
 *
 * Checks, for every input:
 *  - evt_jv_parse never crashes; when it accepts, re-serialising is stable
 *    (write(parse(write(parse(x)))) == write(parse(x))) and the streaming
 *    path (evt_jw_json) writes exactly what the tree path writes;
 *  - the input taken as a byte string survives evt_jw_str -> evt_jv_parse
 *    unchanged (the \udcXX escape for invalid UTF-8);
 *  - evt_position_from_json never crashes;
 *  - a schema record evt_json_schema_parse accepts, written again (evt_json_schema_value), reads
 *    back to a descriptor that writes the same text;
 *  - the first 8 (4) bytes as a double (float) format to text that reads
 *    back to the same bits and is valid JSON number text.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    tb_buf a, b, c;
    tb_buf_init(&a, 0);
    tb_buf_init(&b, 0);
    tb_buf_init(&c, 0);
    evt_jw w;

    evt_jv *v = NULL;
    if (evt_jv_parse(text, size, &v, NULL) == TB_OK) {
        evt_jw_init(&w, &a);
        check(evt_jv_write(v, &w) == TB_OK && evt_jw_finish(&w) == TB_OK);
        evt_jw_init(&w, &c);
        evt_jw_json(&w, text, size);
        check(evt_jw_finish(&w) == TB_OK);
        check(a.len == c.len && memcmp(a.data, c.data, a.len) == 0);
        evt_jv *v2 = NULL;
        check(evt_jv_parse(a.data, a.len, &v2, NULL) == TB_OK);
        evt_jw_init(&w, &b);
        check(evt_jv_write(v2, &w) == TB_OK && evt_jw_finish(&w) == TB_OK);
        check(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        evt_jv_free(v2);
    } else {
        evt_jw_init(&w, &c);
        evt_jw_json(&w, text, size);
        check(evt_jw_finish(&w) != TB_OK);
    }
    evt_jv_free(v);

    /* bytes -> JSON string -> bytes */
    tb_buf_reset(&b);
    evt_jw_init(&w, &b);
    evt_jw_str(&w, text, size);
    check(evt_jw_finish(&w) == TB_OK);
    v = NULL;
    check(evt_jv_parse(b.data, b.len, &v, NULL) == TB_OK);
    size_t n = 0;
    const char *back = evt_jv_text(v, &n);
    check(evt_jv_type_of(v) == EVT_JV_STRING && n == size && (size == 0 || memcmp(back, data, size) == 0));
    evt_jv_free(v);

    tb_position p;
    tb_position_init(&p);
    (void)evt_position_from_json(text, size, &p, NULL);
    tb_position_free(&p);

    evt_table *st = NULL;
    if (evt_json_schema_parse("d", "t", text, size, &st, NULL) == TB_OK) {
        tb_buf s1, s2;
        tb_buf_init(&s1, 0);
        tb_buf_init(&s2, 0);
        evt_table *st2 = NULL;
        check(evt_json_schema_value(st, &s1) == TB_OK);
        check(evt_json_schema_parse("d", "t", s1.data, s1.len, &st2, NULL) == TB_OK);
        check(evt_json_schema_value(st2, &s2) == TB_OK);
        check(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
        evt_table_unref(st2);
        tb_buf_free(&s1);
        tb_buf_free(&s2);
    }
    evt_table_unref(st);

    if (size >= 8) {
        double dv;
        memcpy(&dv, data, 8);
        char num[32];
        size_t nn = evt_fmt_double(dv, num);
        check(nn == strlen(num));
        if (isfinite(dv)) {
            double dback = strtod(num, NULL);
            check(memcmp(&dback, &dv, 8) == 0);
            tb_buf_reset(&a);
            evt_jw_init(&w, &a);
            evt_jw_raw_number(&w, num, nn);
            check(evt_jw_finish(&w) == TB_OK);
            /* same text as the plain %.15g/%.16g/%.17g loop */
            if (fabs(dv) >= 2.2250738585072014e-308 && !(dv == floor(dv) && fabs(dv) < 9007199254740992.0)) {
                char ref[40];
                for (int prec = 15; prec <= 17; prec++) {
                    snprintf(ref, sizeof ref, "%.*g", prec, dv);
                    if (strtod(ref, NULL) == dv)
                        break;
                }
                char *e = strchr(ref, 'e');
                if (e) {
                    char *src = e + 1, *dst = e + 1;
                    if (*src == '+')
                        src++;
                    else if (*src == '-')
                        *dst++ = *src++;
                    while (*src == '0' && src[1])
                        src++;
                    memmove(dst, src, strlen(src) + 1);
                }
                check(strcmp(ref, num) == 0);
            }
        }
        /* short decimals: m / 10^k exercises the printf-free path */
        uint64_t m;
        memcpy(&m, data, 8);
        double q = (double)(m % 1000000000000000ull) / pow(10, data[0] % 16);
        evt_fmt_double(q, num);
        check(strtod(num, NULL) == q);
        char ref[40];
        snprintf(ref, sizeof ref, "%.15g", q);
        if (strtod(ref, NULL) == q && !strchr(ref, 'e'))
            check(strcmp(ref, num) == 0);
    }
    if (size >= 4) {
        float fv;
        memcpy(&fv, data, 4);
        char num[32];
        evt_fmt_float(fv, num);
        if (isfinite(fv)) {
            float fback = strtof(num, NULL);
            check(memcmp(&fback, &fv, 4) == 0);
        }
    }

    tb_buf_free(&a);
    tb_buf_free(&b);
    tb_buf_free(&c);
    return 0;
}
