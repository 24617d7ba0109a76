/*
 * av_lib: libavro loaded at its first use (av_lib.h).
 */
#include "av_lib.h"

#include "tb_dl.h"

av_lib_fns av_lib;

static const tb_dl_sym syms[] = {
    TB_DL_SYM("avro_strerror", av_lib.strerror),
    TB_DL_SYM("avro_schema_from_json_length", av_lib.schema_from_json_length),
    TB_DL_SYM("avro_schema_decref", av_lib.schema_decref),
    TB_DL_SYM("avro_schema_link_target", av_lib.schema_link_target),
    TB_DL_SYM("avro_schema_record_size", av_lib.schema_record_size),
    TB_DL_SYM("avro_schema_record_field_get_by_index", av_lib.schema_record_field_get_by_index),
    TB_DL_SYM("avro_schema_enum_get", av_lib.schema_enum_get),
    TB_DL_SYM("avro_schema_enum_number_of_symbols", av_lib.schema_enum_number_of_symbols),
    TB_DL_SYM("avro_schema_fixed_size", av_lib.schema_fixed_size),
    TB_DL_SYM("avro_schema_union_size", av_lib.schema_union_size),
    TB_DL_SYM("avro_schema_union_branch", av_lib.schema_union_branch),
    TB_DL_SYM("avro_schema_map_values", av_lib.schema_map_values),
    TB_DL_SYM("avro_schema_array_items", av_lib.schema_array_items),
    TB_DL_SYM("avro_generic_class_from_schema", av_lib.generic_class_from_schema),
    TB_DL_SYM("avro_generic_value_new", av_lib.generic_value_new),
    TB_DL_SYM("avro_value_decref", av_lib.value_decref),
    TB_DL_SYM("avro_value_read", av_lib.value_read),
    TB_DL_SYM("avro_reader_memory", av_lib.reader_memory),
    TB_DL_SYM("avro_read", av_lib.read),
    TB_DL_SYM("avro_reader_free", av_lib.reader_free),
};
static tb_dl_lib lib = TB_DL_LIB("libavro.so.23", syms,
                                 "Avro (key.converter or value.converter avro, or a cache of Avro topics)",
                                 "libavro23");

tb_code av_lib_load(tb_error *err) { return tb_dl_need(&lib, err); }
