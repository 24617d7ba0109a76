/*
 * libFuzzer target for the binlog decoder (built only with -DTB_FUZZ=ON, clang).
 *
 * The input is a binlog, with or without its 4-byte magic: events back to
 * back (seed the corpus with the fixture files). Checksums are not
 * verified, so mutated events reach the event, TABLE_MAP, row image, JSON
 * and payload decoders. Every produced event is rendered to JSON (the
 * envelope and the key), which must succeed: a decoded event is always
 * well formed. The decoder must never crash, leak or read out of bounds.
 * Inputs of odd length run with binlog_dec_skip_executed on (transactions
 * whose GTID a PREVIOUS_GTIDS event already holds are decoded, not emitted).
 * Seeds: tests/fixtures/binlog and fuzz/corpus/fuzz_binlog/ (inputs it found
 * crashes with, kept as regression seeds).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binlog.h"
#include "binlog_int.h"
#include "evt_json.h"
#include "tb_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_log_set_level(TB_LOG_ERROR); /* the decoder's warnings would flood the output */
    if (size >= 4 && memcmp(data, "\xfe" "bin", 4) == 0) {
        data += 4;
        size -= 4;
    }
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = "fuzz";
    o.file = "fuzz.000001";
    o.verify_checksum = false;
    binlog_dec *d = binlog_dec_new(&o);
    if (!d)
        return 0;
    binlog_dec_skip_executed(d, size & 1);
    evt_codec_opts co = {.topic_prefix = "f", .name = "f"};
    evt_rendered r;
    evt_rendered_init(&r);
    size_t off = 0;
    tb_error err;
    while (size - off >= BL_HEADER_LEN) {
        uint32_t len = bl_u32(data + off + 9);
        if (len < BL_HEADER_LEN || len > size - off)
            break;
        /* copy so that reads past the event are caught by ASan */
        uint8_t *ev = malloc(len);
        if (!ev)
            break;
        memcpy(ev, data + off, len);
        tb_code rc = binlog_dec_feed(d, ev, len, 4 + off, &err);
        while (rc == TB_OK) {
            evt_event *e = NULL;
            rc = binlog_dec_next(d, &e, &err);
            if (rc != TB_OK || !e)
                break;
            if (evt_render(&co, e, &r, &err) != TB_OK)
                abort(); /* a decoded event must always render */
        }
        free(ev);
        off += len;
        if (rc != TB_OK)
            break;
    }
    evt_event *e = NULL;
    tb_ignore(binlog_dec_finish(d, &e)); /* only hands over a held event */
    if (e && evt_render(&co, e, &r, &err) != TB_OK)
        abort();
    evt_rendered_free(&r);
    binlog_dec_free(d);
    return 0;
}
