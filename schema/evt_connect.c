/*
 * evt_connect: Kafka Connect JSON schemas (value.schemas=true, key.schemas=true),
 * as Connect's JsonConverter reads them (DESIGN 4): type names int8 int16
 * int32 int64 float double boolean string bytes array struct, logical types
 * by name, version and parameters, "optional" for nullable columns.
 *
 * A schema declares what the payload holds, in either encoding:
 *
 *   column type          debezium encoding (Debezium 3.6's schema)         tributary encoding
 *   TINYINT              int16                                             int8 (unsigned int16)
 *   SMALLINT             int16 (unsigned int32)                            same
 *   MEDIUMINT            int32                                             same
 *   INT                  int32 (unsigned int64)                            same
 *   BIGINT               int64                                             same
 *   BIGINT UNSIGNED      long: int64; precise: Decimal(20,0)               Decimal(20,0) (the exact number;
 *                                                                          JsonConverter reads numbers as Decimal)
 *   DECIMAL(p,s)         precise: Decimal (bytes, scale, precision);       string
 *                        string: string; double: double
 *   FLOAT, DOUBLE        float, double (FLOAT(M,D): double)                float, double
 *   DATE                 int32 io.debezium.time.Date (connect: Connect Date) string
 *   TIME                 int64 io.debezium.time.MicroTime (connect: int32  string
 *                        Connect Time)
 *   DATETIME(fsp)        int64 io.debezium.time.Timestamp (fsp <= 3) or    string
 *                        MicroTimestamp (connect: Connect Timestamp)
 *   TIMESTAMP            string io.debezium.time.ZonedTimestamp            same
 *   YEAR                 int32 io.debezium.time.Year                       same
 *   ENUM                 string io.debezium.data.Enum, allowed=<labels>    same
 *   SET                  string io.debezium.data.EnumSet, allowed=<labels> array of string
 *   BIT(1)               boolean                                           same
 *   BIT(n)               bytes io.debezium.data.Bits, length=n             int64 (n = 64: Decimal(20,0))
 *   BINARY..BLOB         bytes (binary.handling.mode other than bytes:     bytes
 *                        string)
 *   UUID (MariaDB)       string io.debezium.data.Uuid                      string
 *   JSON                 string io.debezium.data.Json                      same (the payload holds the
 *                                                                          document, not text: a known limit)
 *   GEOMETRY             struct io.debezium.data.geometry.Geometry {wkb, srid}  same {srid, wkb}
 *   POINT                struct io.debezium.data.geometry.Point {x, y, wkb, srid}  as GEOMETRY
 *   VECTOR               array of float                                    same
 *   SQLite INTEGER, REAL int64, double                                     same
 *   other text           string                                            same
 *
 * Struct names: "<topic>.Key", "<topic>.Value", "<topic>.Envelope" (topic =
 * <prefix>.<db>.<table>), source "io.debezium.connector.<connector>.Source".
 */
#include "evt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_ARGS(lit) "\"" lit "\":", sizeof("\"" lit "\":") - 1

static void str_member(evt_jw *w, const char *key, size_t klen, const char *s)
{
    evt_jw_key_lit(w, key, klen);
    evt_jw_str(w, s, strlen(s));
}

/* Opens the field's object: {"type":T,"optional":B[,"name":N,"version":1][,"field":F]
 * The caller adds members and closes it. */
static void field_open(evt_jw *w, const char *type, bool optional, const char *name, int version, const char *field)
{
    evt_jw_obj_begin(w);
    str_member(w, KEY_ARGS("type"), type);
    EVT_JW_KEY(w, "optional");
    evt_jw_bool(w, optional);
    if (name) {
        str_member(w, KEY_ARGS("name"), name);
        if (version) {
            EVT_JW_KEY(w, "version");
            evt_jw_int(w, version);
        }
    }
    if (field)
        str_member(w, KEY_ARGS("field"), field);
}

static void simple(evt_jw *w, const char *type, bool optional, const char *field)
{
    field_open(w, type, optional, NULL, 0, field);
    evt_jw_obj_end(w);
}

static void decimal_params(evt_jw *w, unsigned scale, unsigned precision)
{
    char a[16], b[16];
    snprintf(a, sizeof a, "%u", scale);
    snprintf(b, sizeof b, "%u", precision);
    EVT_JW_KEY(w, "parameters");
    evt_jw_obj_begin(w);
    str_member(w, KEY_ARGS("scale"), a);
    str_member(w, KEY_ARGS("connect.decimal.precision"), b);
    evt_jw_obj_end(w);
}

static void labels_param(evt_jw *w, const evt_column *c)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    for (size_t k = 0; k < c->nlabels; k++) {
        if (k)
            tb_buf_putc(&b, ',');
        tb_buf_puts(&b, c->labels[k]);
    }
    EVT_JW_KEY(w, "parameters");
    evt_jw_obj_begin(w);
    str_member(w, KEY_ARGS("allowed"), tb_buf_cstr(&b));
    evt_jw_obj_end(w);
    tb_buf_free(&b);
}

/* Opens a column's field (field_open with the column's name) and, under
 * value.encoding=debezium, gives it the column's default as Debezium's schema
 * does ("default": the value as the payload would hold it). */
static void col_open(evt_jw *w, const evt_codec_opts *o, const evt_column *c, const char *type, bool optional,
                     const char *name, int version)
{
    field_open(w, type, optional, name, version, c->name);
    evt_dbz_dflt d;
    tb_error inner;
    inner.code = TB_OK;
    if (o && o->encoding == EVT_ENC_DEBEZIUM && evt_dbz_default(o, c, &d)) {
        EVT_JW_KEY(w, "default");
        evt_dbz_value(w, o, c, &d.v, true, &inner);
        return;
    }
    /* the tributary encoding (Avro): a literal default, where the value's JSON is of the field's
     * Connect type (not BIGINT UNSIGNED or BIT, numbers in a Decimal, nor JSON, spatial or vector) */
    evt_codec_opts plain = {.dbz = {.bigint_precise = true}};
    if (o && o->encoding != EVT_ENC_DEBEZIUM && o->schema_defaults && !c->default_expr &&
        !(c->type == EVT_T_BIGINT && c->is_unsigned) && c->type != EVT_T_BIT && c->type != EVT_T_JSON &&
        c->type != EVT_T_GEOMETRY && c->type != EVT_T_VECTOR && evt_dbz_default(&plain, c, &d)) {
        EVT_JW_KEY(w, "default");
        evt_json_put_value(w, &d.v, &inner);
    }
}

static void column_schema(evt_jw *w, const evt_codec_opts *o, const evt_column *c, bool optional)
{
    bool dbz = o && o->encoding == EVT_ENC_DEBEZIUM;
    const evt_dbz_opts *d = o ? &o->dbz : NULL;
    bool u = c->is_unsigned;
    const char *type = "string", *name = NULL;
    switch (c->type) {
    case EVT_T_TINYINT: type = dbz || u ? "int16" : "int8"; break;
    case EVT_T_SMALLINT: type = u ? "int32" : "int16"; break;
    case EVT_T_MEDIUMINT: type = "int32"; break;
    case EVT_T_INT: type = u ? "int64" : "int32"; break;
    case EVT_T_BIGINT:
        if (u && (!dbz || d->bigint_precise)) {
            col_open(w, o, c, "bytes", optional, "org.apache.kafka.connect.data.Decimal", 1);
            decimal_params(w, 0, 20);
            evt_jw_obj_end(w);
            return;
        }
        type = "int64";
        break;
    case EVT_T_SQLITE_INTEGER: type = "int64"; break;
    case EVT_T_FLOAT: type = dbz && evt_dbz_float_scale(c) >= 0 ? "double" : "float"; break;
    case EVT_T_DOUBLE:
    case EVT_T_SQLITE_REAL:
    case EVT_T_SQLITE_NUMERIC: type = "double"; break;
    case EVT_T_DECIMAL:
        if (dbz && d->decimal == EVT_DBZ_DEC_PRECISE) {
            col_open(w, o, c, "bytes", optional, "org.apache.kafka.connect.data.Decimal", 1);
            decimal_params(w, c->scale, c->precision);
            evt_jw_obj_end(w);
            return;
        }
        type = dbz && d->decimal == EVT_DBZ_DEC_DOUBLE ? "double" : "string";
        break;
    case EVT_T_DATE:
        if (dbz) {
            type = "int32";
            name = d->time_connect ? "org.apache.kafka.connect.data.Date" : "io.debezium.time.Date";
        }
        break;
    case EVT_T_TIME:
        if (dbz) {
            type = d->time_connect ? "int32" : "int64";
            name = d->time_connect ? "org.apache.kafka.connect.data.Time" : "io.debezium.time.MicroTime";
        }
        break;
    case EVT_T_DATETIME:
        if (dbz) {
            type = "int64";
            name = d->time_connect ? "org.apache.kafka.connect.data.Timestamp"
                   : c->scale <= 3 ? "io.debezium.time.Timestamp"
                                   : "io.debezium.time.MicroTimestamp";
        }
        break;
    case EVT_T_TIMESTAMP: name = "io.debezium.time.ZonedTimestamp"; break;
    case EVT_T_YEAR: type = "int32"; name = "io.debezium.time.Year"; break;
    case EVT_T_ENUM:
    case EVT_T_SET:
        if (c->type == EVT_T_SET && !dbz) {
            col_open(w, o, c, "array", optional, NULL, 0);
            EVT_JW_KEY(w, "items");
            simple(w, "string", false, NULL);
            evt_jw_obj_end(w);
            return;
        }
        col_open(w, o, c, "string", optional, c->type == EVT_T_ENUM ? "io.debezium.data.Enum" : "io.debezium.data.EnumSet",
                   1);
        labels_param(w, c);
        evt_jw_obj_end(w);
        return;
    case EVT_T_BIT:
        if (c->length == 1)
            type = "boolean";
        else if (dbz) {
            char len[16];
            snprintf(len, sizeof len, "%u", c->length ? c->length : 64);
            col_open(w, o, c, "bytes", optional, "io.debezium.data.Bits", 1);
            EVT_JW_KEY(w, "parameters");
            evt_jw_obj_begin(w);
            str_member(w, KEY_ARGS("length"), len);
            evt_jw_obj_end(w);
            evt_jw_obj_end(w);
            return;
        } else if (c->length == 0 || c->length == 64) {
            col_open(w, o, c, "bytes", optional, "org.apache.kafka.connect.data.Decimal", 1);
            decimal_params(w, 0, 20);
            evt_jw_obj_end(w);
            return;
        } else
            type = "int64";
        break;
    case EVT_T_BINARY:
    case EVT_T_VARBINARY:
    case EVT_T_BLOB:
    case EVT_T_SQLITE_BLOB: type = dbz && d->binary != EVT_DBZ_BIN_BYTES ? "string" : "bytes"; break;
    case EVT_T_JSON: name = "io.debezium.data.Json"; break;
    case EVT_T_VECTOR:
        col_open(w, o, c, "array", optional, dbz ? "io.debezium.data.FloatVector" : NULL, 1);
        EVT_JW_KEY(w, "items");
        simple(w, "float", false, NULL);
        evt_jw_obj_end(w);
        return;
    case EVT_T_GEOMETRY:
        if (dbz && evt_dbz_is_point(c)) { /* Debezium's Point: a Geometry with x and y first */
            col_open(w, o, c, "struct", optional, "io.debezium.data.geometry.Point", 1);
            str_member(w, KEY_ARGS("doc"), "Geometry (POINT)");
            EVT_JW_KEY(w, "fields");
            evt_jw_arr_begin(w);
            simple(w, "double", false, "x");
            simple(w, "double", false, "y");
            simple(w, "bytes", true, "wkb");
            simple(w, "int32", true, "srid");
            evt_jw_arr_end(w);
            evt_jw_obj_end(w);
            return;
        }
        col_open(w, o, c, "struct", optional, "io.debezium.data.geometry.Geometry", 1);
        EVT_JW_KEY(w, "fields");
        evt_jw_arr_begin(w);
        if (dbz) {
            simple(w, "bytes", false, "wkb");
            simple(w, "int32", true, "srid");
        } else {
            simple(w, "int32", true, "srid");
            simple(w, "bytes", false, "wkb");
        }
        evt_jw_arr_end(w);
        evt_jw_obj_end(w);
        return;
    case EVT_T_CHAR:
        if (dbz && c->source_type && strcasecmp(c->source_type, "uuid") == 0)
            name = "io.debezium.data.Uuid"; /* MariaDB's UUID */
        break;
    default: break;
    }
    col_open(w, o, c, type, optional, name, name ? 1 : 0);
    evt_jw_obj_end(w);
}

/* A failure (out of memory) is the writer's sticky error, reported by evt_jw_finish. */
static void topic_name(evt_jw *w, const evt_codec_opts *o, const evt_table *t, const char *suffix, tb_buf *b)
{
    tb_buf_reset(b);
    tb_code rc = evt_json_topic(o, t, b);
    if (rc == TB_OK)
        rc = tb_buf_puts(b, suffix);
    if (rc != TB_OK)
        evt_jw_fail(w, rc);
}

/* struct "<topic>.Value" of the table's columns; field NULL at top level. */
static void row_schema(evt_jw *w, const evt_codec_opts *o, const evt_table *t, bool optional, const char *field)
{
    tb_buf n;
    tb_buf_init(&n, 0);
    topic_name(w, o, t, ".Value", &n);
    field_open(w, "struct", optional, tb_buf_cstr(&n), 0, field);
    tb_buf_free(&n);
    EVT_JW_KEY(w, "fields");
    evt_jw_arr_begin(w);
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        const evt_column *c = evt_table_column(t, i);
        column_schema(w, o, c, c->nullable);
    }
    evt_jw_arr_end(w);
    evt_jw_obj_end(w);
}

void evt_connect_key_schema(evt_jw *w, const evt_codec_opts *o, const evt_table *t, bool rowid)
{
    tb_buf n;
    tb_buf_init(&n, 0);
    topic_name(w, o, t, ".Key", &n);
    field_open(w, "struct", false, tb_buf_cstr(&n), 0, NULL);
    tb_buf_free(&n);
    EVT_JW_KEY(w, "fields");
    evt_jw_arr_begin(w);
    for (size_t k = 0; k < evt_table_npk(t); k++)
        column_schema(w, o, evt_table_column(t, evt_table_pk_col(t, k)), rowid);
    if (rowid) /* a key holding NULL: optional columns and the row's rowid, optional too so that the
                * schema reads the keys without it (a registry's BACKWARD compatibility) */
        simple(w, "int64", true, EVT_KEY_ROWID);
    evt_jw_arr_end(w);
    evt_jw_obj_end(w);
}

static void source_schema(evt_jw *w, const evt_codec_opts *o, const evt_event *e)
{
    bool dbz = o && o->encoding == EVT_ENC_DEBEZIUM;
    char name[96];
    snprintf(name, sizeof(name), "io.debezium.connector.%s.Source", evt_connector_name(evt_event_connector(e)));
    field_open(w, "struct", false, name, dbz ? 1 : 0, "source");
    EVT_JW_KEY(w, "fields");
    evt_jw_arr_begin(w);
    simple(w, "string", false, "version");
    simple(w, "string", false, "connector");
    simple(w, "string", false, "name");
    simple(w, "int64", false, "ts_ms");
    if (dbz) {
        field_open(w, "string", true, "io.debezium.data.Enum", 1, "snapshot");
        EVT_JW_KEY(w, "parameters");
        evt_jw_obj_begin(w);
        str_member(w, KEY_ARGS("allowed"), "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental");
        evt_jw_obj_end(w);
        str_member(w, KEY_ARGS("default"), "false");
        evt_jw_obj_end(w);
        simple(w, "string", false, "db");
        simple(w, "string", true, "sequence");
        simple(w, "int64", true, "ts_us");
        simple(w, "int64", true, "ts_ns");
    } else {
        simple(w, "string", true, "snapshot");
        simple(w, "string", false, "db");
    }
    simple(w, "string", true, "table");
    const tb_position *p = evt_event_position(e);
    if (p->kind == TB_POS_MYSQL) {
        simple(w, "int64", false, "server_id");
        if (dbz)
            simple(w, "string", true, "gtid");
        simple(w, "string", false, "file");
        simple(w, "int64", false, "pos");
        simple(w, dbz ? "int32" : "int64", false, "row");
        if (dbz) {
            simple(w, "int64", true, "thread");
            simple(w, "string", true, "query");
        } else
            simple(w, "string", true, "gtid");
    } else if (p->kind == TB_POS_SQLITE_WAL) {
        simple(w, "int64", false, "salt1");
        simple(w, "int64", false, "salt2");
        simple(w, "int64", false, "frame");
        simple(w, "int64", false, "gen_seq");
    } else if (p->kind == TB_POS_SQLITE_LOG)
        simple(w, "int64", false, "seq");
    evt_jw_arr_end(w);
    evt_jw_obj_end(w);
}

void evt_connect_value_schema(evt_jw *w, const evt_codec_opts *o, const evt_event *e)
{
    const evt_table *t = evt_event_table(e);
    if (o && o->row_format) {
        row_schema(w, o, t, false, NULL);
        return;
    }
    bool dbz = o && o->encoding == EVT_ENC_DEBEZIUM;
    tb_buf n;
    tb_buf_init(&n, 0);
    topic_name(w, o, t, ".Envelope", &n);
    field_open(w, "struct", false, tb_buf_cstr(&n), dbz ? 2 : 0, NULL);
    tb_buf_free(&n);
    EVT_JW_KEY(w, "fields");
    evt_jw_arr_begin(w);
    row_schema(w, o, t, true, "before");
    row_schema(w, o, t, true, "after");
    source_schema(w, o, e);
    if (dbz) {
        field_open(w, "struct", true, "event.block", 1, "transaction");
        EVT_JW_KEY(w, "fields");
        evt_jw_arr_begin(w);
        simple(w, "string", false, "id");
        simple(w, "int64", false, "total_order");
        simple(w, "int64", false, "data_collection_order");
        evt_jw_arr_end(w);
        evt_jw_obj_end(w);
        simple(w, "string", false, "op");
        simple(w, "int64", true, "ts_ms");
        simple(w, "int64", true, "ts_us");
        simple(w, "int64", true, "ts_ns");
    } else {
        simple(w, "string", false, "op");
        simple(w, "int64", true, "ts_ms");
        field_open(w, "struct", true, NULL, 0, "transaction");
        EVT_JW_KEY(w, "fields");
        evt_jw_arr_begin(w);
        simple(w, "string", false, "id");
        evt_jw_arr_end(w);
        evt_jw_obj_end(w);
    }
    evt_jw_arr_end(w);
    evt_jw_obj_end(w);
}
