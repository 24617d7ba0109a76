/*
 * evt_json: change events as Kafka records (DESIGN.md 4, 5, 10).
 *
 * WIRE FORMAT
 * ===========
 * All JSON is compact (no whitespace), UTF-8, written by evt_jw (evt_jw.c
 * has the string and number rules). Object members appear in the order
 * shown here; columns in table order (keys: key order).
 *
 * Topic:  "<topic.prefix>.<db>.<table>"   (no prefix: "<db>.<table>"), sanitized as
 *         Debezium does: every character outside [a-zA-Z0-9._-] becomes '_' (one
 *         per character, also for a multi-byte UTF-8 one); a name over 249 bytes
 *         (Kafka's limit) keeps its first 232 bytes and gets "_" and 16 hex digits
 *         of the FNV-1a hash of the unsanitized name (evt_topic_name)
 *         "<topic.prefix>.schema"          schema records
 *
 * Key:    {"<pk1>":v1,"<pk2>":v2,...}      primary-key columns in key order;
 *         a pure function of the key values (same bytes whatever the order of
 *         the table's columns or the run). `null` when the table has no key.
 *         A key column absent from the image (MINIMAL after image) comes
 *         from the other image.
 *
 * Value, value.format=envelope (Debezium compatible):
 *   {"before":ROW|null,"after":ROW|null,
 *    "source":{"version":"0.1.0","connector":"mysql|mariadb|sqlite","name":N,
 *              "ts_ms":<commit time, ms>,"snapshot":"true|last|false",
 *              "db":D,"table":T, POSITION},
 *    "op":"c|u|d|r","ts_ms":<processing time, ms>,
 *    "transaction":null|{"id":"<txid>"}}
 *   POSITION by tb_position kind:
 *     MySQL/MariaDB  "server_id":N,"file":"<binlog file or empty>","pos":N,
 *                    "row":N,"gtid":G|null
 *                    binlog rows: pos = offset of the rows event, row = index
 *                    in it, G = the transaction's GTID (evt_event_source_row);
 *                    snapshot reads: the snapshot position, G = executed set
 *     SQLite WAL     "salt1":N,"salt2":N,"frame":N,"gen_seq":N
 *     SQLite trigger "seq":N
 *     none           (nothing)
 *   c/r: before null; d: after null; u: both.
 * Value, value.format=row: ROW (the after image); a delete has no value.
 * ROW = {"<col>":VALUE,...} in table order; a column absent from a partial
 *   image is left out (never null).
 *
 * VALUE (DESIGN 5), by value kind:
 *   INT, UINT          number, exact ("-9223372036854775808", "18446744073709551615")
 *   FLOAT, DOUBLE      number, shortest round-trip text ("0.1", "1e300", "5e-324");
 *                      non-finite (SQLite REAL can hold +-Inf): the strings
 *                      "Infinity", "-Infinity", "NaN"; in a column of no class
 *                      (sqlite_numeric) a number with a fraction or exponent
 *                      ("2.0") and {"$real":"Infinity"} (evt_json_put_real)
 *   BOOL (BIT(1))      true|false
 *   DECIMAL            string, as formatted by the source ("12.50")
 *   STRING             string (invalid UTF-8 bytes as \udc80..\udcff, lossless)
 *   BYTES              string, base64 (RFC 4648, padded)
 *   DATE               "YYYY-MM-DD"
 *   DATETIME           "YYYY-MM-DDTHH:MM:SS[.f]"  exactly fsp fraction digits
 *   TIMESTAMP          "YYYY-MM-DDTHH:MM:SS[.f]Z" (UTC); the zero value has no Z
 *   TIME               "[-]HH:MM:SS[.f]"  hours may exceed 24 ("-838:59:59")
 *   zero dates         as the server prints them: "0000-00-00", "0000-00-00T00:00:00"
 *   SET                ["a","b"]
 *   JSON               the document itself, re-serialised compactly (number text kept)
 *   GEOMETRY           {"srid":N,"wkb":"<base64>"}
 *   VECTOR             [f1,f2,...] (float32, shortest text)
 *   NULL               null
 * YEAR and ENUM arrive as INT and STRING; SQLite INTEGER/REAL/TEXT/BLOB as
 * INT/DOUBLE/STRING/BYTES.
 *
 * Truncate (evt_render_truncate, envelope format only): key {} (no row has an
 *   empty key; with key.schemas {"schema":null,"payload":{}}), value the
 *   envelope with before and after null and "op":"t" (Debezium's truncate
 *   event, which has a null key: a compacted topic refuses that), then a
 *   tombstone of {}, so compaction removes the key again.
 * Tombstone: key, no value (Kafka null). Messages per event (evt_render):
 *   c, r, u (same key)  (key, value)
 *   d                   envelope: (key, delete envelope), (key, null); row: (key, null)
 *   u (key changed)     envelope: (old, delete envelope), (old, null), (new, create envelope)
 *                       row:      (old, null), (new, ROW)
 *
 * value.schemas=true, key.schemas=true (Kafka Connect JsonConverter): the
 * schemas of evt_connect.c (that table supersedes the list below).
 *   {"schema":SCHEMA,"payload":<the value above, unchanged>}
 *   envelope SCHEMA: struct "<topic>.Envelope" with fields before/after
 *   (optional struct "<topic>.Value"), source (struct
 *   "io.debezium.connector.<connector>.Source"), op (string), ts_ms (int64),
 *   transaction (optional struct {id}). Row format: struct "<topic>.Value".
 *   Column types: TINYINT int8 (unsigned int16), SMALLINT int16 (unsigned
 *   int32), MEDIUMINT int32, INT int32 (unsigned int64), BIGINT int64,
 *   FLOAT float32, DOUBLE float64, YEAR int32, BIT(1) boolean, BIT(n) int64,
 *   BINARY/VARBINARY/BLOB bytes, SET array<string>, VECTOR array<float32>,
 *   GEOMETRY struct {srid int32, wkb bytes} (io.debezium.data.geometry.Geometry),
 *   TIMESTAMP string io.debezium.time.ZonedTimestamp, JSON string
 *   io.debezium.data.Json (the payload holds the document itself, not a
 *   string: a JsonConverter reading it with schemas needs JSON columns as
 *   text; known limitation), SQLite INTEGER int64, REAL/NUMERIC float64,
 *   BLOB bytes, everything else string. optional = the column is nullable.
 *   Keys are never wrapped.
 *
 * value.encoding=debezium: values per evt_dbz.c, keys too; the envelope and
 * source block in Debezium's layout (put_source_tail_dbz, DESIGN 4).
 *
 * Schema record (topic "<prefix>.schema"):
 *   key   {"db":D,"table":T}
 *   value {"db":D,"table":T,"version":N,"names_known":true|false,
 *          "columns":[{"name":C,"type":"<evt_type_name>","source_type":S|null,
 *                      "nullable":B,"unsigned":B,"pk":<1-based key ordinal, 0>,
 *                      "length":N,"precision":N,"scale":N,"charset":S|null,
 *                      "labels":[...]|null,"default":S|null,"default_expr":B},...],
 *          "primary_key":["<col>",...],"dropped":B,
 *          "renamed_from":null|{"db":D,"table":T}}
 *   default: the column's default as the source reports it, null when it has
 *   none or it is NULL: a literal's value as text ("x" for 'x', "1.50", "0"),
 *   or with default_expr true the text of an expression the source evaluates
 *   when it writes a row ("current_timestamp()"); an expression is never
 *   applied by a consumer. dropped: the table was dropped (then version 0,
 *   no columns, no key). renamed_from: the table's name before a RENAME.
 *
 * Printed line (stdout sink, `decode`): {"topic":T,"key":KEY,"value":VALUE|null}
 * (KEY and VALUE embedded verbatim). Positions as JSON: see evt_position_json.c.
 *
 * DECISIONS FOR DESIGN 5 (values)
 *  - Invalid UTF-8 in text: each byte that starts no valid UTF-8 sequence is
 *    written as the lone surrogate escape \udc80..\udcff (PEP 383
 *    "surrogateescape"). Lossless: evt_jv turns it back into the byte, so a
 *    latin1-mislabelled or binary-in-VARCHAR value reaches the cache
 *    unchanged. Unambiguous: valid UTF-8 never encodes a surrogate and the
 *    writer never writes \ud800..\udbff. Other JSON readers see U+DCxx.
 *    Valid UTF-8, 4-byte sequences (emoji) included, is written as is.
 *  - Non-finite FLOAT/DOUBLE (only SQLite REAL can hold them): the strings
 *    "Infinity", "-Infinity", "NaN" (JSON has no such numbers), where the
 *    column's type says real; in a column that holds any class
 *    (sqlite_numeric) a string is TEXT, so there a REAL keeps its class:
 *    "2.0", {"$real":"Infinity"} (DESIGN 5 "REAL in a column of no class").
 *  - Number text: integral doubles below 2^53 print as integers ("42");
 *    exponents without '+' or leading zeros ("1e300", "5e-324"); -0.0 is "-0".
 *  - The zero TIMESTAMP is not an instant: "0000-00-00T00:00:00" without Z.
 *  - BIT(n>1) is a number (UINT), BIT(1) a boolean: the capture decides by
 *    the value kind it sets.
 */
#include "tb_cast.h"
#include "evt_internal.h"
#include "evt_json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_clock.h"

#define EVT_SOURCE_VERSION "0.1.0"

/* ============================================================ values */

static void put_nonfinite_or(evt_jw *w, double d, bool is_float, float f)
{
    char tmp[32];
    size_t n;
    if (is_float)
        n = evt_fmt_float(f, tmp);
    else
        n = evt_fmt_double(d, tmp);
    if (tmp[0] == 'N' || tmp[0] == 'I' || (tmp[0] == '-' && tmp[1] == 'I'))
        evt_jw_str(w, tmp, n);
    else
        evt_jw_raw_json(w, tmp, n);
}

void evt_json_put_real(evt_jw *w, double d, bool keep_class)
{
    if (!keep_class) {
        put_nonfinite_or(w, d, false, 0);
        return;
    }
    char tmp[40];
    size_t n = evt_fmt_double(d, tmp);
    if (!isfinite(d)) { /* {"$real":"Infinity"}: no string, so never the TEXT 'Infinity' */
        evt_jw_obj_begin(w);
        EVT_JW_KEY(w, EVT_JSON_REAL_TAG);
        evt_jw_str(w, tmp, n);
        evt_jw_obj_end(w);
        return;
    }
    if (!memchr(tmp, '.', n) && !memchr(tmp, 'e', n)) { /* "2" would read back as the integer 2 */
        memcpy(tmp + n, ".0", 3);
        n += 2;
    }
    evt_jw_raw_json(w, tmp, n);
}

/* A value of a column of type `type`: a REAL in a column of no declared type
 * or NUMERIC affinity (sqlite_numeric, which holds any class) keeps its class
 * (evt_json_put_real); every other value by its kind alone. */
static void put_value(evt_jw *w, const evt_value *v, tb_error *err);
static inline void put_col_value(evt_jw *w, evt_type type, const evt_value *v, tb_error *err)
{
    if (v->kind == EVT_V_DOUBLE && type == EVT_T_SQLITE_NUMERIC)
        evt_json_put_real(w, v->v.d, true);
    else
        put_value(w, v, err);
}

/* Write one value; on failure the writer's error is set and err says why. */

void evt_json_put_value(evt_jw *w, const evt_value *v, tb_error *err) { put_value(w, v, err); }

static void put_value(evt_jw *w, const evt_value *v, tb_error *err)
{
    char tmp[48];
    switch (v->kind) {
    case EVT_V_ABSENT:
    case EVT_V_NULL: evt_jw_null(w); return;
    case EVT_V_INT: evt_jw_int(w, v->v.i); return;
    case EVT_V_UINT: evt_jw_uint(w, v->v.u); return;
    case EVT_V_FLOAT: put_nonfinite_or(w, 0, true, v->v.f); return;
    case EVT_V_DOUBLE: put_nonfinite_or(w, v->v.d, false, 0); return;
    case EVT_V_BOOL: evt_jw_bool(w, v->v.b); return;
    case EVT_V_DECIMAL:
    case EVT_V_STRING: evt_jw_str(w, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_BYTES: evt_jw_base64(w, v->v.s.ptr, v->v.s.len); return;
    case EVT_V_DATE:
    case EVT_V_DATETIME:
    case EVT_V_TIMESTAMP:
    case EVT_V_TIME: {
        size_t n = evt_fmt_temporal(v->kind, &v->v.t, tmp);
        evt_jw_str(w, tmp, n);
        return;
    }
    case EVT_V_SET:
        evt_jw_arr_begin(w);
        for (size_t k = 0; k < v->v.set.n; k++)
            evt_jw_str(w, v->v.set.items[k], v->v.set.lens[k]);
        evt_jw_arr_end(w);
        return;
    case EVT_V_JSON: evt_jw_json_ex(w, v->v.s.ptr, v->v.s.len, err); return;
    case EVT_V_GEOMETRY:
        evt_jw_obj_begin(w);
        EVT_JW_KEY(w, "srid");
        evt_jw_uint(w, v->v.geo.srid);
        EVT_JW_KEY(w, "wkb");
        evt_jw_base64(w, v->v.geo.wkb, v->v.geo.len);
        evt_jw_obj_end(w);
        return;
    case EVT_V_VECTOR:
        evt_jw_arr_begin(w);
        for (size_t k = 0; k < v->v.vec.n; k++)
            put_nonfinite_or(w, 0, true, v->v.vec.items[k]);
        evt_jw_arr_end(w);
        return;
    }
    evt_jw_fail(w, TB_ERR_INVALID);
}

/* Raw text helpers for the envelope's fixed members (room reserved by the caller). */
static inline char *raw_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define RAW_LIT(p, lit) raw_lit((p), lit, sizeof(lit) - 1)

/* One member "<col>":VALUE of a row or key object, comma first unless it is
 * the object's first. Common kinds are written raw, in one reservation;
 * the others through put_value. On failure the writer's error is set and
 * inner may say why. Inlined into the row and key loops (a call per column
 * cost a fifth of it). */
static inline __attribute__((always_inline)) void put_member(evt_jw *w, const evt_table *t, size_t i,
                                                             const evt_value *v, bool first, tb_error *inner)
{
    if (!t->keyoff || i >= t->ncols) { /* not sealed: the generic writer does the key */
        const evt_column *c = evt_table_column(t, i);
        evt_jw_key(w, c->name, (size_t)-1);
        put_col_value(w, c->type, v, inner);
        return;
    }
    size_t vlen = v->kind == EVT_V_STRING || v->kind == EVT_V_DECIMAL ? v->v.s.len : 0;
    bool long_text = vlen > 4096; /* the key here, the string in pieces */
    const char *frag = t->keyfrag + t->keyoff[i];
    size_t fl = t->keyoff[i + 1] - t->keyoff[i];
    tb_buf spill = {0}; /* used only when w's buffer is bounded (jw_raw_room) */
    char *p = jw_raw_room(w, 1 + fl + EVT_KEYFRAG_PAD + 50 + (long_text ? 0 : EVT_JW_ESC_ROOM(vlen) + 2), &spill);
    if (!p)
        return;
    if (!first)
        *p++ = ',';
    if (fl <= EVT_KEYFRAG_PAD)
        memcpy(p, frag, EVT_KEYFRAG_PAD); /* padded: one move; the bytes past fl are overwritten next */
    else
        memcpy(p, frag, fl);
    p += fl;
    bool generic = false;
    switch (v->kind) {
    case EVT_V_ABSENT:
    case EVT_V_NULL: p = raw_lit(p, "null", 4); break;
    case EVT_V_INT: p = jw_i64_raw(p, v->v.i); break;
    case EVT_V_UINT: p = jw_u64_raw(p, v->v.u); break;
    case EVT_V_BOOL: p = v->v.b ? raw_lit(p, "true", 4) : raw_lit(p, "false", 5); break;
    case EVT_V_DECIMAL:
    case EVT_V_STRING:
        if (long_text)
            generic = true;
        else
            p = jw_str_raw(p, v->v.s.ptr, vlen);
        break;
    case EVT_V_DATE:
    case EVT_V_DATETIME:
    case EVT_V_TIMESTAMP:
    case EVT_V_TIME: /* digits and separators only: nothing to escape */
        *p++ = '"';
        p += evt_fmt_temporal(v->kind, &v->v.t, p);
        *p++ = '"';
        break;
    case EVT_V_DOUBLE: /* a finite number as its text (32 bytes at most); the rest as put_col_value writes them */
        if (isfinite(v->v.d) && evt_table_column(t, i)->type != EVT_T_SQLITE_NUMERIC)
            p += evt_fmt_double(v->v.d, p);
        else
            generic = true;
        break;
    default: generic = true; break;
    }
    jw_raw_done(w, p, &spill);
    if (generic && !w->err) { /* the value through the writer, as that of the key just written */
        w->after_key = true;
        put_col_value(w, evt_table_column(t, i)->type, v, inner);
    }
}

/* The writer failed inside column c: name table and column in err. */
static tb_code col_error(evt_jw *w, const evt_table *t, const evt_column *c, tb_error *err, tb_error *inner)
{
    if (inner->code != TB_OK)
        return tb_error_set(err, w->err, false, "%s.%s column %s: %s", evt_table_db(t), evt_table_name(t), c->name,
                            inner->msg);
    return tb_error_set(err, w->err, false, "%s.%s column %s: cannot encode value (%s)", evt_table_db(t),
                        evt_table_name(t), c->name, tb_code_name(w->err));
}

static bool dbz(const evt_codec_opts *o) { return o && o->encoding == EVT_ENC_DEBEZIUM; }

/* One member "<col>":VALUE in Debezium's encoding (no raw fast path). */
static void put_member_dbz(evt_jw *w, const evt_codec_opts *o, const evt_event *e, const evt_column *c,
                           const evt_value *v, tb_error *inner)
{
    evt_jw_key(w, c->name, (size_t)-1);
    evt_dbz_dflt d;
    if (v->kind == EVT_V_NULL && !o->dbz.keep_null && evt_dbz_default(o, c, &d))
        evt_dbz_value(w, o, c, &d.v, true, inner); /* JsonConverter's replace.null.with.default */
    else
        evt_dbz_value(w, o, c, v, evt_event_snapshot(e) != EVT_SNAPSHOT_FALSE, inner);
}

static tb_code put_row(evt_jw *w, const evt_codec_opts *o, const evt_event *e, evt_image img, tb_error *err)
{
    const evt_table *t = evt_event_table(e);
    size_t n = evt_table_ncols(t);
    tb_error inner;
    inner.code = TB_OK;
    bool first = true;
    const evt_value *vals = evt_event_values(e, img);
    if (!vals)
        n = 0; /* no such image: {} (callers check evt_event_has_image first) */
    evt_jw_obj_begin(w);
    if (dbz(o)) {
        for (size_t i = 0; i < n; i++) {
            if (vals[i].kind == EVT_V_ABSENT)
                continue;
            put_member_dbz(w, o, e, evt_table_column(t, i), &vals[i], &inner);
            if (w->err)
                return col_error(w, t, evt_table_column(t, i), err, &inner);
        }
        evt_jw_obj_end(w);
        return TB_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const evt_value *v = &vals[i];
        if (v->kind == EVT_V_ABSENT)
            continue;
        put_member(w, t, i, v, first, &inner);
        first = false;
        if (w->err)
            return col_error(w, t, evt_table_column(t, i), err, &inner);
    }
    jw_comma_set(w, !first);
    evt_jw_obj_end(w);
    return TB_OK; /* a writer error here is reported by finish() */
}

/* Whether the key of image img takes the member EVT_KEY_ROWID: the event carries its row's rowid
 * (of img, else of the other image, as a key column's value) and a key column holds NULL
 * (evt_event_set_rowid). */
static bool key_rowid(const evt_event *e, evt_image img, int64_t *rowid)
{
    if (!evt_event_rowid(e, img, rowid) && !evt_event_rowid(e, img == EVT_AFTER ? EVT_BEFORE : EVT_AFTER, rowid))
        return false;
    const evt_table *t = evt_event_table(e);
    for (size_t k = 0; k < evt_table_npk(t); k++) {
        size_t col = evt_table_pk_col(t, k);
        const evt_value *v = evt_event_value(e, img, col);
        if (v->kind == EVT_V_ABSENT)
            v = evt_event_value(e, img == EVT_AFTER ? EVT_BEFORE : EVT_AFTER, col);
        if (v->kind == EVT_V_NULL)
            return true;
    }
    return false;
}

static tb_code put_key(evt_jw *w, const evt_codec_opts *o, const evt_event *e, evt_image img, tb_error *err)
{
    const evt_table *t = evt_event_table(e);
    size_t npk = evt_table_npk(t);
    if (npk == 0) {
        evt_jw_null(w);
        return TB_OK;
    }
    tb_error inner;
    inner.code = TB_OK;
    evt_jw_obj_begin(w);
    for (size_t k = 0; k < npk; k++) {
        size_t col = evt_table_pk_col(t, k);
        const evt_column *c = evt_table_column(t, col);
        const evt_value *v = evt_event_value(e, img, col);
        if (v->kind == EVT_V_ABSENT)
            v = evt_event_value(e, img == EVT_AFTER ? EVT_BEFORE : EVT_AFTER, col);
        if (v->kind == EVT_V_ABSENT) {
            evt_jw_fail(w, TB_ERR_INVALID);
            return tb_error_set(err, TB_ERR_INVALID, false, "%s.%s key column %s: absent from the row images",
                                evt_table_db(t), evt_table_name(t), c->name);
        }
        if (dbz(o))
            put_member_dbz(w, o, e, c, v, &inner);
        else
            put_member(w, t, col, v, k == 0, &inner);
        if (w->err)
            return col_error(w, t, c, err, &inner);
    }
    if (!dbz(o))
        jw_comma_set(w, true);
    int64_t rowid;
    if (key_rowid(e, img, &rowid)) {
        evt_jw_key(w, EVT_KEY_ROWID, sizeof(EVT_KEY_ROWID) - 1);
        evt_jw_int(w, rowid);
    }
    evt_jw_obj_end(w);
    return TB_OK;
}

static tb_code check_event(const evt_event *e, tb_error *err)
{
    if (!e)
        return tb_error_set(err, TB_ERR_INVALID, false, "no event");
    const tb_error *ee = evt_event_error(e);
    if (ee) {
        if (err)
            *err = *ee;
        return ee->code;
    }
    return TB_OK;
}

static tb_code finish(evt_jw *w, const evt_event *e, tb_code rc, tb_error *err)
{
    tb_code f = evt_jw_finish(w);
    if (rc == TB_OK && f != TB_OK) {
        const evt_table *t = evt_event_table(e);
        rc = tb_error_set(err, f, false, "%s.%s: cannot encode event (%s)", evt_table_db(t), evt_table_name(t),
                          tb_code_name(f));
    }
    return rc;
}

/* The key; with key.schemas wrapped as {"schema":<Key struct>,"payload":…}
 * (a keyless table's null key stays null, as JsonConverter writes it). */
static tb_code key_into(const evt_codec_opts *o, const evt_event *e, evt_image img, tb_buf *out, tb_error *err)
{
    tb_code rc = check_event(e, err);
    if (rc != TB_OK)
        return rc;
    size_t wlen;
    const char *wire = evt_event_wire_key(e, &wlen);
    if (wire && img == EVT_BEFORE && evt_event_op(e) == EVT_OP_DELETE) /* a key read from the topic */
        return tb_buf_append(out, wire, wlen) == TB_OK ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    evt_jw w;
    evt_jw_init(&w, out);
    bool wrap = o && o->key_schemas && evt_table_npk(evt_event_table(e)) > 0;
    if (wrap) {
        evt_jw_obj_begin(&w);
        EVT_JW_KEY(&w, "schema");
        int64_t rowid;
        evt_connect_key_schema(&w, o, evt_event_table(e), key_rowid(e, img, &rowid));
        EVT_JW_KEY(&w, "payload");
    }
    rc = put_key(&w, o, e, img, err);
    if (wrap)
        evt_jw_obj_end(&w);
    return finish(&w, e, rc, err);
}

tb_code evt_json_key(const evt_event *e, evt_image img, tb_buf *out, tb_error *err)
{
    return key_into(NULL, e, img, out, err);
}

tb_code evt_render_key(const evt_codec_opts *o, const evt_event *e, evt_image img, tb_buf *out, tb_error *err)
{
    return key_into(o, e, img, out, err);
}

tb_code evt_json_row(const evt_event *e, evt_image img, tb_buf *out, tb_error *err)
{
    tb_code rc = check_event(e, err);
    if (rc != TB_OK)
        return rc;
    evt_jw w;
    evt_jw_init(&w, out);
    if (!evt_event_has_image(e, img))
        evt_jw_null(&w);
    else
        rc = put_row(&w, NULL, e, img, err);
    return finish(&w, e, rc, err);
}

/* ============================================================ Connect schemas */

/* ============================================================ envelope */

static int64_t now_ms(const evt_codec_opts *o)
{
    if (o && o->now_ms)
        return o->now_ms;
    return tb_wall_ms();
}


/* key text then the string, or null for NULL */
static inline char *raw_cstr(char *p, const char *s, size_t n)
{
    return s ? jw_str_raw(p, s, n) : RAW_LIT(p, "null");
}

static inline size_t opt_len(const char *s) { return s ? strlen(s) : 0; }

/* A millisecond time as text, remembered per thread and slot: the processing
 * time (coarse clock) and a binlog commit time (whole seconds) repeat for
 * thousands of events in a row. */
enum { TS_NOW, TS_COMMIT };
static char *ts_raw(char *p, int slot, int64_t v)
{
    static _Thread_local struct {
        int64_t v;
        uint8_t n;
        char text[23];
    } last[2] = {{-1, 0, {0}}, {-1, 0, {0}}};
    if (v != last[slot].v || last[slot].n == 0) {
        last[slot].n = (uint8_t)(jw_i64_raw(last[slot].text, v) - last[slot].text);
        last[slot].v = v;
    }
    memcpy(p, last[slot].text, 16);
    if (last[slot].n > 16)
        memcpy(p + 16, last[slot].text + 16, (size_t)last[slot].n - 16);
    return p + last[slot].n;
}

/* The source block from "source" to its first member that changes row by row
 * (a binlog position: up to "pos"; the other kinds: up to the table), at p;
 * returns the end. Room: see put_source_tail. */
static char *src_head_raw(char *p, const char *conn, size_t conn_len, const char *name, size_t name_len, int64_t cts,
                          unsigned si, const evt_table *t, const tb_position *pos, const char *file, size_t file_len)
{
    /* constant members as precomputed text */
#define SNAP_LIT(v) {",\"snapshot\":\"" v "\"", sizeof(",\"snapshot\":\"" v "\"") - 1}
    static const struct {
        const char *text;
        size_t len;
    } snap[] = {SNAP_LIT("false"), SNAP_LIT("true"), SNAP_LIT("last")};
#undef SNAP_LIT
    p = RAW_LIT(p, "\"source\":{\"version\":\"" EVT_SOURCE_VERSION "\",\"connector\":\"");
    p = raw_lit(p, conn, conn_len); /* a fixed lowercase name */
    p = RAW_LIT(p, "\",\"name\":");
    p = jw_str_raw(p, name, name_len);
    p = RAW_LIT(p, ",\"ts_ms\":");
    p = ts_raw(p, TS_COMMIT, cts);
    p = raw_lit(p, snap[si].text, snap[si].len);
    *p++ = ',';
    if (t->srcfrag)
        p = raw_lit(p, t->srcfrag, t->srcfrag_len);
    else {
        const char *db = evt_table_db(t), *table = evt_table_name(t);
        p = RAW_LIT(p, "\"db\":");
        p = raw_cstr(p, db, opt_len(db));
        p = RAW_LIT(p, ",\"table\":");
        p = raw_cstr(p, table, opt_len(table));
    }
    if (pos->kind == TB_POS_MYSQL) {
        p = RAW_LIT(p, ",\"server_id\":");
        p = jw_u64_raw(p, pos->server_id);
        p = RAW_LIT(p, ",\"file\":");
        p = jw_str_raw(p, file, file_len);
        p = RAW_LIT(p, ",\"pos\":");
    }
    return p;
}

/* src_head_raw's last text and what it was made of, per thread: the rows of a
 * transaction (and of a snapshot) repeat it. The inputs are kept by value and
 * compared so, never by address alone: a table, a file name or the options
 * may be freed and their memory reused. A head whose inputs do not fit is
 * written each time. */
enum { SRC_MEMO_NAME = 128, SRC_MEMO_FRAG = 320, SRC_MEMO_FILE = 128, SRC_MEMO_TEXT = 1536 };
typedef struct {
    const char *conn; /* a static name (evt_connector_name) */
    int64_t cts;
    uint64_t server_id;
    unsigned si;
    int kind;
    uint32_t name_len, frag_len, file_len, text_len; /* text_len 0: nothing remembered */
    char name[SRC_MEMO_NAME], frag[SRC_MEMO_FRAG], file[SRC_MEMO_FILE], text[SRC_MEMO_TEXT];
} src_memo;

static inline bool src_memo_fits(const evt_table *t, size_t name_len, size_t file_len)
{
    return t->srcfrag && name_len <= SRC_MEMO_NAME && t->srcfrag_len <= SRC_MEMO_FRAG && file_len <= SRC_MEMO_FILE;
}

static bool src_memo_hit(const src_memo *m, const char *conn, const char *name, size_t name_len, int64_t cts,
                         unsigned si, const evt_table *t, const tb_position *pos, const char *file, size_t file_len)
{
    return m->text_len && m->conn == conn && m->cts == cts && m->si == si && m->kind == (int)pos->kind &&
           (pos->kind != TB_POS_MYSQL || m->server_id == pos->server_id) && m->name_len == name_len &&
           m->frag_len == t->srcfrag_len && m->file_len == file_len && memcmp(m->name, name, name_len) == 0 &&
           memcmp(m->frag, t->srcfrag, t->srcfrag_len) == 0 && (!file_len || memcmp(m->file, file, file_len) == 0);
}

static void src_memo_keep(src_memo *m, const char *conn, const char *name, size_t name_len, int64_t cts, unsigned si,
                          const evt_table *t, const tb_position *pos, const char *file, size_t file_len,
                          const char *text, size_t text_len)
{
    m->text_len = 0;
    if (text_len > SRC_MEMO_TEXT)
        return;
    m->conn = conn;
    m->cts = cts;
    m->si = si;
    m->kind = (int)pos->kind;
    m->server_id = pos->server_id;
    m->name_len = (uint32_t)name_len;
    m->frag_len = (uint32_t)t->srcfrag_len;
    m->file_len = (uint32_t)file_len;
    memcpy(m->name, name, name_len);
    memcpy(m->frag, t->srcfrag, t->srcfrag_len);
    if (file_len)
        memcpy(m->file, file, file_len);
    memcpy(m->text, text, text_len);
    m->text_len = (uint32_t)text_len;
}

/* A transaction id's quoted, escaped text at p, remembered per thread by
 * value: every row of a transaction writes it twice (gtid, transaction). */
static char *tx_raw(char *p, const char *tx, size_t len)
{
    static _Thread_local struct {
        uint32_t len, qlen; /* qlen 0: nothing remembered */
        char raw[64];
        char q[EVT_JW_ESC_ROOM(64) + 2];
    } m;
    if (len > sizeof m.raw)
        return jw_str_raw(p, tx, len);
    if (m.qlen == 0 || m.len != len || memcmp(m.raw, tx, len) != 0) {
        m.qlen = (uint32_t)(jw_str_raw(m.q, tx, len) - m.q);
        memcpy(m.raw, tx, len);
        m.len = (uint32_t)len;
    }
    memcpy(p, m.q, m.qlen);
    return p + m.qlen;
}

/* "source":{...},"op":"c","ts_ms":N,"transaction":... : everything after the
 * row images, written raw in one reservation (the members never change
 * shape, only their values). The caller closes the envelope. */
static void put_source_tail(evt_jw *w, const evt_codec_opts *o, const evt_event *e, evt_op op)
{
    static _Thread_local src_memo memo;
    const evt_table *t = evt_event_table(e);
    const tb_position *pos = evt_event_position(e);
    const char *conn = evt_connector_name(evt_event_connector(e));
    const char *name = o && o->name ? o->name : "";
    const char *file = pos->kind == TB_POS_MYSQL ? (pos->file ? pos->file : "") : NULL;
    const char *tx = evt_event_txid(e);
    const char *gtid;
    uint64_t at_pos = pos->pos, at_row = pos->row;
    uint32_t srow;
    if (evt_event_source_row(e, &at_pos, &srow)) { /* a binlog row: its own place and its transaction's GTID */
        at_row = srow;
        gtid = evt_event_txid_is_gtid(e) ? tx : NULL;
    } else
        gtid = pos->kind == TB_POS_MYSQL && pos->gtid_set && *pos->gtid_set ? pos->gtid_set : NULL;
    const char *db = t->srcfrag ? NULL : evt_table_db(t), *table = t->srcfrag ? NULL : evt_table_name(t);
    size_t conn_len = strlen(conn), name_len = strlen(name), file_len = opt_len(file), gtid_len = opt_len(gtid),
           tx_len = opt_len(tx), db_len = opt_len(db), table_len = opt_len(table);
    size_t need = 256 + t->srcfrag_len + 6 * 24 + conn_len +
                  EVT_JW_ESC_ROOM(name_len + file_len + gtid_len + tx_len + db_len + table_len) + 6 * 16;
    int64_t cts = evt_event_commit_ts_ms(e);
    unsigned si = (unsigned)evt_event_snapshot(e) <= 2 ? (unsigned)evt_event_snapshot(e) : 0;
    if (!jw_pre(w, 0)) /* the comma before "source" */
        return;
    tb_buf spill = {0}; /* used only when w's buffer is bounded (jw_raw_room) */
    char *p = jw_raw_room(w, need, &spill);
    if (!p)
        return;
    if (!src_memo_fits(t, name_len, file_len))
        p = src_head_raw(p, conn, conn_len, name, name_len, cts, si, t, pos, file, file_len);
    else if (src_memo_hit(&memo, conn, name, name_len, cts, si, t, pos, file, file_len)) {
        memcpy(p, memo.text, memo.text_len);
        p += memo.text_len;
    } else {
        char *head = p;
        p = src_head_raw(p, conn, conn_len, name, name_len, cts, si, t, pos, file, file_len);
        src_memo_keep(&memo, conn, name, name_len, cts, si, t, pos, file, file_len, head, (size_t)(p - head));
    }
    switch (pos->kind) {
    case TB_POS_MYSQL: /* the head ends with "pos": */
        p = jw_u64_raw(p, at_pos);
        p = RAW_LIT(p, ",\"row\":");
        p = jw_u64_raw(p, at_row);
        p = RAW_LIT(p, ",\"gtid\":");
        p = gtid && gtid == tx ? tx_raw(p, tx, tx_len) : raw_cstr(p, gtid, gtid_len);
        break;
    case TB_POS_SQLITE_WAL:
        p = RAW_LIT(p, ",\"salt1\":");
        p = jw_u64_raw(p, pos->salt1);
        p = RAW_LIT(p, ",\"salt2\":");
        p = jw_u64_raw(p, pos->salt2);
        p = RAW_LIT(p, ",\"frame\":");
        p = jw_u64_raw(p, pos->frame);
        p = RAW_LIT(p, ",\"gen_seq\":");
        p = jw_u64_raw(p, pos->gen_seq);
        break;
    case TB_POS_SQLITE_LOG:
        p = RAW_LIT(p, ",\"seq\":");
        p = jw_i64_raw(p, pos->seq);
        break;
    case TB_POS_NONE: break;
    }
    p = RAW_LIT(p, "},\"op\":\"");
    *p++ = (char)op;
    p = RAW_LIT(p, "\",\"ts_ms\":");
    p = ts_raw(p, TS_NOW, now_ms(o));
    p = RAW_LIT(p, ",\"transaction\":");
    if (tx) {
        p = RAW_LIT(p, "{\"id\":");
        p = tx_raw(p, tx, tx_len);
        *p++ = '}';
    } else
        p = RAW_LIT(p, "null");
    jw_raw_done(w, p, &spill);
}

/* Debezium's snapshot marker: "first", "first_in_data_collection",
 * "last_in_data_collection", "last", "true" or "false". */
static const char *dbz_snapshot(const evt_event *e)
{
    evt_snapshot_flag f = evt_event_snapshot(e);
    unsigned edges = evt_event_snapshot_edges(e);
    if (f == EVT_SNAPSHOT_FALSE)
        return "false";
    if (edges & EVT_SNAP_FIRST)
        return "first";
    if (f == EVT_SNAPSHOT_LAST)
        return "last";
    if (edges & EVT_SNAP_FIRST_IN_TABLE)
        return "first_in_data_collection";
    if (edges & EVT_SNAP_LAST_IN_TABLE)
        return "last_in_data_collection";
    return "true";
}

static void put_i(evt_jw *w, const char *key, size_t klen, int64_t v)
{
    evt_jw_key_lit(w, key, klen);
    evt_jw_int(w, v);
}

/* The envelope's members after the row images in Debezium's layout:
 * "source":{version, connector, name, ts_ms, snapshot, db, sequence, ts_us,
 * ts_ns, table, server_id, gtid, file, pos, row, thread, query},
 * "transaction", "op", "ts_ms", "ts_us", "ts_ns". Snapshot reads carry
 * server_id 0 and gtid null, as Debezium's do. */
static void put_source_tail_dbz(evt_jw *w, const evt_codec_opts *o, const evt_event *e, evt_op op)
{
    const evt_table *t = evt_event_table(e);
    const tb_position *pos = evt_event_position(e);
    bool snap = evt_event_snapshot(e) != EVT_SNAPSHOT_FALSE;
    int64_t cts = evt_event_commit_ts_ms(e), now = now_ms(o);
    EVT_JW_KEY(w, "source");
    evt_jw_obj_begin(w);
    put_cstr(w, EVT_JW_KEY_ARGS("version"), EVT_SOURCE_VERSION);
    put_cstr(w, EVT_JW_KEY_ARGS("connector"), evt_connector_name(evt_event_connector(e)));
    put_cstr(w, EVT_JW_KEY_ARGS("name"), o && o->name ? o->name : "");
    put_i(w, EVT_JW_KEY_ARGS("ts_ms"), cts);
    put_cstr(w, EVT_JW_KEY_ARGS("snapshot"), dbz_snapshot(e));
    put_cstr(w, EVT_JW_KEY_ARGS("db"), evt_table_db(t));
    put_cstr(w, EVT_JW_KEY_ARGS("sequence"), NULL);
    put_i(w, EVT_JW_KEY_ARGS("ts_us"), cts * 1000);
    put_i(w, EVT_JW_KEY_ARGS("ts_ns"), cts * 1000000);
    put_cstr(w, EVT_JW_KEY_ARGS("table"), evt_table_name(t));
    uint64_t at_pos = pos->pos, at_row = pos->row;
    uint32_t srow;
    const char *gtid = NULL;
    if (evt_event_source_row(e, &at_pos, &srow)) {
        at_row = srow;
        gtid = evt_event_txid_is_gtid(e) ? evt_event_txid(e) : NULL;
    } else if (!snap && pos->gtid_set && *pos->gtid_set)
        gtid = pos->gtid_set;
    switch (pos->kind) {
    case TB_POS_MYSQL:
        put_u(w, EVT_JW_KEY_ARGS("server_id"), snap ? 0 : pos->server_id);
        put_cstr(w, EVT_JW_KEY_ARGS("gtid"), gtid);
        put_cstr(w, EVT_JW_KEY_ARGS("file"), pos->file ? pos->file : "");
        put_u(w, EVT_JW_KEY_ARGS("pos"), at_pos);
        put_u(w, EVT_JW_KEY_ARGS("row"), at_row);
        put_cstr(w, EVT_JW_KEY_ARGS("thread"), NULL);
        put_cstr(w, EVT_JW_KEY_ARGS("query"), NULL);
        break;
    case TB_POS_SQLITE_WAL:
        put_u(w, EVT_JW_KEY_ARGS("salt1"), pos->salt1);
        put_u(w, EVT_JW_KEY_ARGS("salt2"), pos->salt2);
        put_u(w, EVT_JW_KEY_ARGS("frame"), pos->frame);
        put_u(w, EVT_JW_KEY_ARGS("gen_seq"), pos->gen_seq);
        break;
    case TB_POS_SQLITE_LOG: put_i(w, EVT_JW_KEY_ARGS("seq"), pos->seq); break;
    case TB_POS_NONE: break;
    }
    evt_jw_obj_end(w);
    EVT_JW_KEY(w, "transaction"); /* Debezium's default: provide.transaction.metadata=false */
    evt_jw_null(w);
    char opc[1] = {(char)op};
    EVT_JW_KEY(w, "op");
    evt_jw_str(w, opc, 1);
    put_i(w, EVT_JW_KEY_ARGS("ts_ms"), now);
    put_i(w, EVT_JW_KEY_ARGS("ts_us"), now * 1000);
    put_i(w, EVT_JW_KEY_ARGS("ts_ns"), now * 1000000);
}

/* Envelope with the given op; before/after written when requested and present. */
static tb_code put_envelope(evt_jw *w, const evt_codec_opts *o, const evt_event *e, evt_op op, bool before,
                            bool after, tb_error *err)
{
    tb_code rc = TB_OK;
    evt_jw_obj_begin(w);
    EVT_JW_KEY(w, "before");
    if (before && evt_event_has_image(e, EVT_BEFORE))
        rc = put_row(w, o, e, EVT_BEFORE, err);
    else
        evt_jw_null(w);
    EVT_JW_KEY(w, "after");
    if (rc == TB_OK && after && evt_event_has_image(e, EVT_AFTER))
        rc = put_row(w, o, e, EVT_AFTER, err);
    else
        evt_jw_null(w);
    if (rc != TB_OK)
        return rc;
    if (dbz(o))
        put_source_tail_dbz(w, o, e, op);
    else
        put_source_tail(w, o, e, op);
    evt_jw_obj_end(w);
    return TB_OK;
}

/* The value of one message: envelope (op, images) or row (after image),
 * wrapped for Kafka Connect when o->schemas. */
static tb_code put_message_value(const evt_codec_opts *o, const evt_event *e, evt_op op, bool before, bool after,
                                 tb_buf *out, tb_error *err)
{
    evt_jw w;
    evt_jw_init(&w, out);
    bool row = o && o->row_format;
    bool wrap = o && o->schemas;
    tb_code rc = TB_OK;
    if (wrap) {
        evt_jw_obj_begin(&w);
        EVT_JW_KEY(&w, "schema");
        evt_connect_value_schema(&w, o, e);
        EVT_JW_KEY(&w, "payload");
    }
    if (w.err == TB_OK) {
        if (row)
            rc = put_row(&w, o, e, EVT_AFTER, err);
        else
            rc = put_envelope(&w, o, e, op, before, after, err);
    }
    if (wrap)
        evt_jw_obj_end(&w);
    return finish(&w, e, rc, err);
}

tb_code evt_json_value(const evt_codec_opts *o, const evt_event *e, tb_buf *out, tb_error *err)
{
    tb_code rc = check_event(e, err);
    if (rc != TB_OK)
        return rc;
    evt_op op = evt_event_op(e);
    if (o && o->row_format && op == EVT_OP_DELETE)
        return tb_error_set(err, TB_ERR_NOT_FOUND, false, "row format: a delete has no value (tombstone)");
    return put_message_value(o, e, op, true, true, out, err);
}

/* ============================================================ render */

void evt_rendered_init(evt_rendered *r)
{
    memset(r, 0, sizeof(*r));
    for (int k = 0; k < 4; k++)
        tb_buf_init(&r->bufs[k], 0);
}

void evt_rendered_free(evt_rendered *r)
{
    if (!r)
        return;
    free(r->topic);
    r->topic = NULL;
    evt_table_unref(r->topic_table);
    r->topic_table = NULL;
    free(r->topic_prefix);
    r->topic_prefix = NULL;
    for (int k = 0; k < 4; k++)
        tb_buf_free(&r->bufs[k]);
    r->n = 0;
}

/* Keep r->topic when it was built for this very table (a reference is held,
 * so the pointer cannot name another table) and prefix: no work per event. */
static tb_code render_topic(const evt_codec_opts *o, const evt_table *t, evt_rendered *r)
{
    const char *prefix = o && o->topic_prefix ? o->topic_prefix : "";
    if (r->topic && r->topic_table == t && r->topic_prefix && strcmp(r->topic_prefix, prefix) == 0)
        return TB_OK;
    tb_buf *b = &r->bufs[3]; /* free until the messages are built */
    tb_buf_reset(b);
    tb_code rc = evt_json_topic(o, t, b);
    if (rc != TB_OK)
        return rc;
    char *copy = strdup(tb_buf_cstr(b)), *pcopy = strdup(prefix);
    if (!copy || !pcopy) {
        free(copy);
        free(pcopy);
        return TB_ERR_NOMEM;
    }
    free(r->topic);
    r->topic = copy;
    free(r->topic_prefix);
    r->topic_prefix = pcopy;
    evt_table_unref(r->topic_table);
    r->topic_table = evt_table_ref(TB_UNCONST(t)); /* the count is atomic; the table itself stays const */
    return TB_OK;
}

static void msg(evt_rendered *r, const tb_buf *k, const tb_buf *v)
{
    evt_msg *m = &r->msgs[r->n++];
    m->key = tb_buf_cstr(k);
    m->key_len = k->len;
    m->value = v ? tb_buf_cstr(v) : NULL;
    m->value_len = v ? v->len : 0;
}

/* Empty r, check e and name its topic. */
static tb_code render_start(const evt_codec_opts *o, const evt_event *e, evt_rendered *r, tb_error *err)
{
    r->n = 0;
    tb_code rc = check_event(e, err);
    if (rc != TB_OK)
        return rc;
    const evt_table *t = evt_event_table(e);
    if ((rc = render_topic(o, t, r)) != TB_OK)
        return tb_error_set(err, rc, false, "%s.%s: cannot build the topic name", evt_table_db(t),
                            evt_table_name(t));
    return TB_OK;
}

tb_code evt_render(const evt_codec_opts *o, const evt_event *e, evt_rendered *r, tb_error *err)
{
    tb_code rc = render_start(o, e, r, err);
    if (rc != TB_OK)
        return rc;
    for (int k = 0; k < 4; k++)
        tb_buf_reset(&r->bufs[k]);
    tb_buf *k0 = &r->bufs[0], *v0 = &r->bufs[1], *k1 = &r->bufs[2], *v1 = &r->bufs[3];
    bool row = o && o->row_format;
    evt_op op = evt_event_op(e);
    if (op == EVT_OP_DELETE) {
        if ((rc = key_into(o, e, EVT_BEFORE, k0, err)) != TB_OK)
            return rc;
        if (!row) {
            if ((rc = put_message_value(o, e, op, true, false, v0, err)) != TB_OK)
                return rc;
            msg(r, k0, v0);
        }
        msg(r, k0, NULL);
        return TB_OK;
    }
    /* A key change is a change of the key as written: key columns whose
     * values differ but encode alike (DATETIME(6) under Debezium's connect
     * time precision, milliseconds) keep the key, and the update is one. */
    bool split = op == EVT_OP_UPDATE && !evt_event_key_unchanged(e);
    if (split) {
        if ((rc = key_into(o, e, EVT_BEFORE, k0, err)) != TB_OK || (rc = key_into(o, e, EVT_AFTER, k1, err)) != TB_OK)
            return rc;
        split = k0->len != k1->len || memcmp(k0->data, k1->data, k0->len) != 0;
    }
    if (!split) {
        tb_buf_reset(k0);
        if ((rc = key_into(o, e, EVT_AFTER, k0, err)) != TB_OK ||
            (rc = put_message_value(o, e, op, true, true, v0, err)) != TB_OK)
            return rc;
        msg(r, k0, v0);
        return TB_OK;
    }
    /* primary-key change: delete (+ tombstone) the old key, create the new one */
    if (!row) {
        if ((rc = put_message_value(o, e, EVT_OP_DELETE, true, false, v0, err)) != TB_OK)
            return rc;
        msg(r, k0, v0);
    }
    msg(r, k0, NULL);
    if ((rc = put_message_value(o, e, EVT_OP_CREATE, false, true, v1, err)) != TB_OK) {
        r->n = 0;
        return rc;
    }
    msg(r, k1, v1);
    return TB_OK;
}

tb_code evt_render_truncate(const evt_codec_opts *o, const evt_event *e, evt_rendered *r, tb_error *err)
{
    tb_code rc = render_start(o, e, r, err);
    if (rc != TB_OK)
        return rc;
    if (o && o->row_format)
        return TB_OK; /* a row-shaped topic has no place for it: the tombstones say it */
    for (int k = 0; k < 4; k++)
        tb_buf_reset(&r->bufs[k]);
    tb_buf *k0 = &r->bufs[0], *v0 = &r->bufs[1];
    /* no row has an empty key: it can name no row, and Kafka compacts it away after the tombstone */
    if ((rc = tb_buf_puts(k0, o && o->key_schemas ? "{\"schema\":null,\"payload\":{}}" : "{}")) != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    if ((rc = put_message_value(o, e, EVT_OP_TRUNCATE, false, false, v0, err)) != TB_OK)
        return rc;
    msg(r, k0, v0);
    msg(r, k0, NULL);
    return TB_OK;
}

tb_code evt_json_line(const char *topic, const char *key, size_t key_len, const char *value, size_t value_len,
                      tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    put_cstr(&w, EVT_JW_KEY_ARGS("topic"), topic ? topic : "");
    EVT_JW_KEY(&w, "key");
    if (key && key_len)
        evt_jw_raw_json(&w, key, key_len);
    else
        evt_jw_null(&w);
    EVT_JW_KEY(&w, "value");
    if (value && value_len)
        evt_jw_raw_json(&w, value, value_len);
    else
        evt_jw_null(&w);
    evt_jw_obj_end(&w);
    return evt_jw_finish(&w);
}
