/*
 * cache_value: from a JSON value of the wire format (DESIGN 5) to an SQLite
 * value, losslessly:
 *   integer that fits int64    -> INTEGER
 *   larger integer (uint64)    -> TEXT with its exact digits
 *   other number               -> REAL (the writer prints the shortest text
 *                                 that reads back to the same double)
 *   string                     -> TEXT (decoded); BLOB when the column is binary
 *                                 (base64 decoded)
 *   true / false               -> INTEGER 1 / 0
 *   object / array             -> TEXT, the JSON text as received (canonical)
 *   null                       -> NULL
 * A JSON column (JSON, SET, GEOMETRY, VECTOR) stores the JSON text of any value.
 * Non-finite reals (only SQLite holds them; evt_json_put_real): in a REAL
 * column (float, double, sqlite_real) the strings "Infinity", "-Infinity",
 * "NaN", in a column of no class (sqlite_numeric) the object
 * {"$real":"Infinity"|"-Infinity"|"NaN"}, are REAL +-Inf (SQLite's 9e999,
 * -9e999) and NaN, which SQLite stores as NULL, as it does at the source.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "evt_json.h"

/* The real a non-finite text names ("Infinity", "-Infinity", "NaN"); false for any other text. */
static bool nonfinite_text(const cj_val *s, double *d)
{
    if (s->type != CJ_STRING || s->escaped)
        return false;
    if (s->len == 8 && memcmp(s->ptr, "Infinity", 8) == 0)
        *d = INFINITY;
    else if (s->len == 9 && memcmp(s->ptr, "-Infinity", 9) == 0)
        *d = -INFINITY;
    else if (s->len == 3 && memcmp(s->ptr, "NaN", 3) == 0)
        *d = NAN;
    else
        return false;
    return true;
}

bool cache_nonfinite(const cj_val *v, cache_class cls, double *d)
{
    cj_val s;
    if (cls == CC_REAL)
        return nonfinite_text(v, d);
    return cls == CC_ANY && v->type == CJ_OBJECT && cj_count(v) == 1 && cj_obj_get(v, EVT_JSON_REAL_TAG, &s) &&
           nonfinite_text(&s, d);
}

static tb_code bind_rc(int rc, const char *col, tb_error *err)
{
    if (rc == SQLITE_OK)
        return TB_OK;
    return tb_error_set(err, TB_ERR_IO, false, "column \"%s\": cannot bind value: %s", col, sqlite3_errstr(rc));
}

tb_code cache_bind(sqlite3_stmt *st, int idx, cache_class cls, const cj_val *v, tb_buf *scratch,
                   const char *col, tb_error *err)
{
    int rc = SQLITE_OK;
    if (cls == CC_JSON && v->type != CJ_NULL) {
        if (v->type == CJ_STRING) /* the quotes are part of the JSON text */
            rc = sqlite3_bind_text(st, idx, v->ptr - 1, (int)v->len + 2, SQLITE_STATIC);
        else
            rc = sqlite3_bind_text(st, idx, v->ptr, (int)v->len, SQLITE_STATIC);
        return bind_rc(rc, col, err);
    }
    switch (v->type) {
    case CJ_NULL:
        rc = sqlite3_bind_null(st, idx);
        break;
    case CJ_TRUE:
    case CJ_FALSE:
        rc = sqlite3_bind_int(st, idx, v->type == CJ_TRUE);
        break;
    case CJ_NUMBER: {
        int64_t i;
        if (cls == CC_TEXT) {
            rc = sqlite3_bind_text(st, idx, v->ptr, (int)v->len, SQLITE_STATIC);
        } else if (v->is_int && cls != CC_REAL) {
            if (cj_int64(v, &i))
                rc = sqlite3_bind_int64(st, idx, i);
            else
                rc = sqlite3_bind_text(st, idx, v->ptr, (int)v->len, SQLITE_STATIC);
        } else {
            char tmp[64];
            if (v->len >= sizeof(tmp))
                return tb_error_set(err, TB_ERR_INVALID, false, "column \"%s\": number too long", col);
            memcpy(tmp, v->ptr, v->len);
            tmp[v->len] = 0;
            rc = sqlite3_bind_double(st, idx, strtod(tmp, NULL));
        }
        break;
    }
    case CJ_STRING: {
        double d;
        if (cache_nonfinite(v, cls, &d)) {
            rc = sqlite3_bind_double(st, idx, d); /* NaN binds as NULL */
        } else if (cls == CC_BLOB) {
            tb_buf_reset(scratch);
            if (tb_base64_decode(v->ptr, v->len, scratch) != TB_OK)
                return tb_error_set(err, TB_ERR_INVALID, false, "column \"%s\": binary value is not base64", col);
            rc = sqlite3_bind_blob(st, idx, scratch->data ? scratch->data : "", (int)scratch->len, SQLITE_TRANSIENT);
        } else if (!v->escaped) {
            rc = sqlite3_bind_text(st, idx, v->ptr, (int)v->len, SQLITE_STATIC);
        } else {
            tb_buf_reset(scratch);
            if (cj_str_decode(v->ptr, v->len, scratch) != TB_OK)
                return tb_error_set(err, TB_ERR_INVALID, false, "column \"%s\": bad string escape", col);
            rc = sqlite3_bind_text(st, idx, tb_buf_cstr(scratch), (int)scratch->len, SQLITE_TRANSIENT);
        }
        break;
    }
    case CJ_ARRAY:
    case CJ_OBJECT: {
        double d;
        if (cache_nonfinite(v, cls, &d))
            rc = sqlite3_bind_double(st, idx, d);
        else
            rc = sqlite3_bind_text(st, idx, v->ptr, (int)v->len, SQLITE_STATIC);
        break;
    }
    }
    return bind_rc(rc, col, err);
}

cache_class cache_class_of(const char *type, const char *source_type, bool is_unsigned)
{
    static const struct { const char *name; cache_class cls; } map[] = {
        {"tinyint", CC_INT}, {"smallint", CC_INT}, {"mediumint", CC_INT}, {"int", CC_INT},
        {"bigint", CC_INT}, {"year", CC_INT}, {"sqlite_integer", CC_INT},
        {"float", CC_REAL}, {"double", CC_REAL}, {"sqlite_real", CC_REAL},
        {"decimal", CC_TEXT}, {"char", CC_TEXT}, {"varchar", CC_TEXT}, {"text", CC_TEXT},
        {"date", CC_TEXT}, {"datetime", CC_TEXT}, {"timestamp", CC_TEXT}, {"time", CC_TEXT},
        {"enum", CC_TEXT}, {"sqlite_text", CC_TEXT},
        {"binary", CC_BLOB}, {"varbinary", CC_BLOB}, {"blob", CC_BLOB}, {"sqlite_blob", CC_BLOB},
        {"set", CC_JSON}, {"json", CC_JSON}, {"geometry", CC_JSON}, {"vector", CC_JSON},
    };
    if (!type || !*type)
        return CC_ANY;
    if (strcmp(type, "bit") == 0) {
        if (source_type && (strcmp(source_type, "bit(1)") == 0 || strcmp(source_type, "bit") == 0))
            return CC_BOOL;
        return CC_UINT64; /* BIT(64) reaches 2^64-1: no INTEGER affinity, which would make it a REAL */
    }
    if (strcmp(type, "bigint") == 0 && is_unsigned)
        return CC_UINT64;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i].name, type) == 0)
            return map[i].cls;
    return CC_ANY;
}

const char *cache_class_decl(cache_class c)
{
    switch (c) {
    case CC_INT:
    case CC_BOOL: return "INTEGER";
    case CC_REAL: return "REAL";
    case CC_TEXT:
    case CC_JSON: return "TEXT";
    case CC_BLOB: return "BLOB";
    case CC_UINT64: /* no affinity: INTEGER affinity would turn 18446744073709551615 into a REAL */
    case CC_ANY:
    default: return "";
    }
}
