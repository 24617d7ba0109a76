/*
 * libFuzzer target for the text form of source positions (tb_position_parse: the offsets file,
 * `tributary offsets set --position`). Built only with -DTB_FUZZ=ON (clang).
 *
 * Checks, for every input: tb_position_parse never crashes and fills err when it refuses;
 * when it accepts, the position formats, the text reads back to an equal position, and that
 * position formats to the same text (format(parse(format(p))) == format(p)).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tb_position.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    tb_position p, q;
    tb_position_init(&p);
    tb_position_init(&q);
    tb_buf a, b;
    tb_buf_init(&a, 0);
    tb_buf_init(&b, 0);
    tb_error err;
    tb_error_clear(&err);
    if (tb_position_parse(text, &p, &err) == TB_OK) {
        check(tb_position_format(&p, &a) == TB_OK);
        tb_error e2;
        tb_error_clear(&e2);
        check(tb_position_parse(tb_buf_cstr(&a), &q, &e2) == TB_OK);
        check(tb_position_equal(&p, &q));
        check(tb_position_format(&q, &b) == TB_OK);
        check(a.len == b.len && memcmp(tb_buf_cstr(&a), tb_buf_cstr(&b), a.len) == 0);
    } else {
        check(err.msg[0] != '\0');
    }
    tb_buf_free(&a);
    tb_buf_free(&b);
    tb_position_free(&p);
    tb_position_free(&q);
    free(text);
    return 0;
}
