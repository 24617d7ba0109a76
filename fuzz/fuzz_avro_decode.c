/*
 * fuzz_avro_decode: Avro bodies read from a topic (avro/av_dec.c, avro-c underneath) into JSON,
 * and the writer schema made back into a Connect schema (avro/av_msg.c, what the table cache reads
 * Avro topics with). Input: a writer schema (JSON text), a 0 byte, the body. Whatever the bytes,
 * nothing crashes or leaks, and what is accepted is valid JSON for evt_jv.
 * Seeds: fuzz/corpus/fuzz_avro_decode/ (the key and value schema of a table of every column type
 * with a message of each, as tributary wrote them under value.encoding=debezium).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "av_dec.h"
#include "av_msg.h"
#include "evt_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul)
        return 0;
    size_t slen = (size_t)(nul - data);
    tb_error err;
    tb_buf cs;
    tb_buf_init(&cs, 0);
    if (av_msg_connect_schema((const char *)data, slen, &cs, &err) == TB_OK) {
        evt_jv *v = NULL;
        if (evt_jv_parse(cs.data, cs.len, &v, &err) != TB_OK)
            abort(); /* a Connect schema that does not parse */
        evt_jv_free(v);
    }
    tb_buf_free(&cs);
    av_reader *r = NULL;
    if (av_reader_new((const char *)data, slen, &r, &err) != TB_OK)
        return 0;
    tb_buf out;
    tb_buf_init(&out, 0);
    if (av_reader_json(r, nul + 1, size - slen - 1, &out, &err) == TB_OK) {
        evt_jv *v = NULL;
        if (evt_jv_parse(out.data, out.len, &v, &err) != TB_OK)
            abort(); /* the reader wrote JSON that does not parse */
        evt_jv_free(v);
    }
    tb_buf_free(&out);
    av_reader_free(r);
    return 0;
}
