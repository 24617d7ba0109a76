/*
 * fuzz_avro_encode: the Avro schema derivation and the binary encoder (avro/av_conv.c) on a
 * Kafka Connect wrapper {"schema":S,"payload":P}, the form av_ser gets from the codec. Whatever
 * the input, neither crashes nor leaks; whenever both succeed, avro-c accepts the schema, reads
 * the body back and finds no byte left over.
 * Seeds: fuzz/corpus/fuzz_avro_encode/ (messages of a table of every column type, both encodings).
 */
#include <avro.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "av_conv.h"
#include "evt_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    evt_jv *root = NULL;
    tb_error err;
    if (evt_jv_parse((const char *)data, size, &root, &err) != TB_OK)
        return 0;
    const evt_jv *cs = evt_jv_type_of(root) == EVT_JV_OBJECT ? evt_jv_get(root, "schema") : NULL;
    const evt_jv *p = cs ? evt_jv_get(root, "payload") : NULL;
    if (!cs || !p) {
        evt_jv_free(root);
        return 0;
    }
    tb_buf avsc, bin;
    tb_buf_init(&avsc, 0);
    tb_buf_init(&bin, 0);
    bool schema_ok = av_schema_from_connect(cs, &avsc, &err) == TB_OK;
    bool body_ok = av_encode(cs, p, &bin, &err) == TB_OK;
    avro_schema_t s = NULL;
    if (schema_ok && body_ok && avro_schema_from_json_length(avsc.data, avsc.len, &s) == 0) {
        avro_value_iface_t *iface = avro_generic_class_from_schema(s);
        avro_value_t v;
        if (iface && avro_generic_value_new(iface, &v) == 0) {
            avro_reader_t rd = avro_reader_memory(bin.data, (int64_t)bin.len);
            if (avro_value_read(rd, &v) != 0)
                abort(); /* the encoder wrote what its own schema cannot read */
            char extra;
            if (avro_read(rd, &extra, 1) == 0)
                abort(); /* bytes the schema does not account for */
            avro_reader_free(rd);
            avro_value_decref(&v);
        }
        avro_value_iface_decref(iface);
        avro_schema_decref(s);
    }
    tb_buf_free(&avsc);
    tb_buf_free(&bin);
    evt_jv_free(root);
    return 0;
}
