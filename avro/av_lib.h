/*
 * av_lib: the functions of libavro (Avro C) that tributary calls, resolved
 * when the first Avro reader or serializer is made (tb_dl.h). A run that
 * writes and reads JSON does not map libavro and what it needs (liblzma,
 * libsnappy and the C++ runtime: about 1.7 MiB resident). avro.h still gives
 * the types and the macros (avro_value_get_*, avro_typeof, ...), which call
 * through the value's interface, not these symbols.
 */
#ifndef AV_LIB_H
#define AV_LIB_H

#include <avro.h>

#include "tb_error.h"

typedef struct {
    const char *(*strerror)(void);
    int (*schema_from_json_length)(const char *json, size_t len, avro_schema_t *out);
    int (*schema_decref)(avro_schema_t s);
    avro_schema_t (*schema_link_target)(avro_schema_t s);
    size_t (*schema_record_size)(const avro_schema_t s);
    avro_schema_t (*schema_record_field_get_by_index)(const avro_schema_t s, int index);
    const char *(*schema_enum_get)(const avro_schema_t s, int index);
    int (*schema_enum_number_of_symbols)(const avro_schema_t s);
    int64_t (*schema_fixed_size)(const avro_schema_t s);
    size_t (*schema_union_size)(const avro_schema_t s);
    avro_schema_t (*schema_union_branch)(avro_schema_t s, int index);
    avro_schema_t (*schema_map_values)(avro_schema_t s);
    avro_schema_t (*schema_array_items)(avro_schema_t s);
    avro_value_iface_t *(*generic_class_from_schema)(avro_schema_t s);
    int (*generic_value_new)(avro_value_iface_t *iface, avro_value_t *dest);
    void (*value_decref)(avro_value_t *v);
    int (*value_read)(avro_reader_t r, avro_value_t *dest);
    avro_reader_t (*reader_memory)(const char *buf, int64_t len);
    int (*read)(avro_reader_t r, void *buf, int64_t len);
    void (*reader_free)(avro_reader_t r);
} av_lib_fns;

/* Set by av_lib_load; call it before any other use. */
extern av_lib_fns av_lib;

/* Load libavro once (thread-safe); an error names the library and the package. */
tb_code av_lib_load(tb_error *err);

#endif
