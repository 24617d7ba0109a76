/*
 * libFuzzer target: MySQL binary JSON (capture/mysql/binlog_json.c), the
 * decoder of JSON column values in rows events and of PARTIAL_JSON diffs
 * (built only with -DTB_FUZZ=ON, clang).
 *
 * Input: byte 0 picks the entry point.
 *   even: bl_json_to_text on the rest (one binary JSON value);
 *   odd:  bl_json_apply_diff: bytes 1-2 are the before image's length
 *         (little-endian), then the before image, then the diff list.
 * Checks: no crash, leak or undefined behaviour; an accepted value yields
 * one JSON text that tributary's reader (evt_jv) accepts; a refusal carries a
 * message.
 * Seeds: fuzz/corpus/fuzz_binlog_json/ (made by fuzz/corpus/make_binlog_json_seeds.py).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binlog_int.h"
#include "evt_json.h"

#define check(ok)                                                                         \
    do {                                                                                  \
        if (!(ok)) {                                                                      \
            fprintf(stderr, "fuzz_binlog_json: check failed at line %d\n", __LINE__);     \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    tb_buf out;
    tb_buf_init(&out, 0);
    tb_error err;
    err.msg[0] = '\0';
    tb_code rc;
    if (!(data[0] & 1)) {
        rc = bl_json_to_text(data + 1, size - 1, &out, &err);
    } else {
        if (size < 3) {
            tb_buf_free(&out);
            return 0;
        }
        size_t blen = (size_t)data[1] | (size_t)data[2] << 8;
        if (blen > size - 3)
            blen = size - 3;
        rc = bl_json_apply_diff(data + 3, blen, data + 3 + blen, size - 3 - blen, &out, &err);
    }
    if (rc == TB_OK) {
        evt_jv *v = NULL;
        tb_error perr;
        if (evt_jv_parse(out.data ? out.data : "", out.len, &v, &perr) != TB_OK) {
            fprintf(stderr, "fuzz_binlog_json: not JSON (%s): %.*s\n", perr.msg, (int)(out.len > 300 ? 300 : out.len),
                    out.data ? out.data : "");
            abort();
        }
        evt_jv_free(v);
    } else {
        check(err.msg[0] != '\0');
    }
    tb_buf_free(&out);
    return 0;
}
