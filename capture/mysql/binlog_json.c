/*
 * binlog_json: MySQL binary JSON (the JSON column's storage and binlog form)
 * -> JSON text, and PARTIAL_JSON diffs applied to a before image.
 *
 * BINARY JSON. A value is a type byte followed by its data:
 *   0x00 small object, 0x01 large object, 0x02 small array, 0x03 large array:
 *        count, size (2 bytes each when small, 4 when large), then for an object
 *        count key entries (key offset 2|4, key length 2), then count value
 *        entries (type 1 + offset 2|4, or the value inlined in that slot for
 *        literals, int16, uint16 and, when large, int32/uint32), then the keys
 *        and the values. Offsets are relative to the byte after the type byte.
 *   0x04 literal: 0x00 null, 0x01 true, 0x02 false
 *   0x05 int16, 0x06 uint16, 0x07 int32, 0x08 uint32, 0x09 int64, 0x0a uint64,
 *   0x0b double (little-endian)
 *   0x0c string: length as 7-bit groups (low first, high bit = more), bytes
 *   0x0f opaque: MySQL field type 1 byte, length as for strings, data:
 *        NEWDECIMAL: precision 1, scale 1, binary decimal -> a JSON number
 *        DATE/DATETIME/TIMESTAMP/TIME: 8-byte packed value -> a JSON string
 *          "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS.ffffff", "HH:MM:SS.ffffff"
 *        anything else -> "base64:typeNN:<base64>" (as MySQL prints it)
 *
 * JSON DIFF (PARTIAL_UPDATE_ROWS, binlog_row_value_options=PARTIAL_JSON).
 * The column value (after its usual length prefix) is a list of diffs:
 *   operation 1 byte (0 REPLACE, 1 INSERT, 2 REMOVE), path length lenenc,
 *   path (MySQL JSON path: $, .key, ."quoted key", [n]), and unless REMOVE:
 *   value length lenenc, value (binary JSON).
 */
#include "binlog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JN_MAX_DEPTH 100

enum { JN_NULL, JN_TRUE, JN_FALSE, JN_INT, JN_UINT, JN_DOUBLE, JN_NUMTEXT, JN_STR, JN_ARR, JN_OBJ };

typedef struct jn {
    uint8_t t;
    union {
        int64_t i;
        uint64_t u;
        double d;
    } n;
    const char *s;   /* STR / NUMTEXT: borrowed from the input or from own[] / heap */
    size_t slen;
    char *heap;      /* owned text when generated and long */
    char own[48];
    /* ARR / OBJ */
    struct jn **kids;
    const char **keys;
    size_t *klens;
    size_t n_kids, cap;
} jn;

static void jn_free(jn *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_kids; i++)
        jn_free(j->kids[i]);
    free(j->kids);
    free(j->keys);
    free(j->klens);
    free(j->heap);
    free(j);
}

static jn *jn_new(uint8_t t)
{
    jn *j = calloc(1, sizeof(*j));
    if (j)
        j->t = t;
    return j;
}

static bool jn_reserve(jn *j, size_t n)
{
    if (n <= j->cap)
        return true;
    size_t cap = j->cap ? j->cap * 2 : 4;
    while (cap < n)
        cap *= 2;
    jn **k = realloc(j->kids, cap * sizeof(*k));
    if (!k)
        return false;
    j->kids = k;
    const char **ks = realloc(j->keys, cap * sizeof(*ks));
    if (!ks)
        return false;
    j->keys = ks;
    size_t *kl = realloc(j->klens, cap * sizeof(*kl));
    if (!kl)
        return false;
    j->klens = kl;
    j->cap = cap;
    return true;
}

static bool varlen(const uint8_t **p, const uint8_t *end, size_t *out)
{
    size_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        v |= (size_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Packed MySQL datetime/time (longlong) -> text. */
static size_t packed_temporal_text(int ftype, int64_t packed, char *out, size_t size)
{
    bool neg = packed < 0;
    uint64_t v = neg ? 0 - (uint64_t)packed : (uint64_t)packed; /* no -INT64_MIN */
    uint32_t usec = (uint32_t)(v % (1u << 24));
    uint64_t ip = v >> 24;
    if (ftype == EVT_MY_TIME) {
        uint64_t h = (ip >> 12) % (1u << 10), mi = (ip >> 6) % 64, s = ip % 64;
        return (size_t)snprintf(out, size, "%s%02u:%02u:%02u.%06u", neg ? "-" : "", (unsigned)h, (unsigned)mi,
                                (unsigned)s, usec);
    }
    uint64_t ymd = ip >> 17, ym = ymd >> 5, hms = ip % (1u << 17);
    unsigned y = (unsigned)(ym / 13), mo = (unsigned)(ym % 13), d = (unsigned)(ymd % 32);
    if (ftype == EVT_MY_DATE)
        return (size_t)snprintf(out, size, "%04u-%02u-%02u", y, mo, d);
    return (size_t)snprintf(out, size, "%04u-%02u-%02u %02u:%02u:%02u.%06u", y, mo, d, (unsigned)(hms >> 12),
                            (unsigned)((hms >> 6) % 64), (unsigned)(hms % 64), usec);
}

static jn *parse_value(uint8_t type, const uint8_t *base, size_t len, int depth, size_t *budget, tb_error *err);

static jn *jerr(tb_error *err, const char *what)
{
    tb_error_set(err, TB_ERR_CORRUPT, false, "binary JSON: %s", what);
    return NULL;
}

/* Container at base[0..len) (after its type byte). */
static jn *parse_container(bool obj, bool large, const uint8_t *base, size_t len, int depth, size_t *budget,
                          tb_error *err)
{
    if (depth > JN_MAX_DEPTH)
        return jerr(err, "nested too deep");
    size_t osz = large ? 4 : 2;
    if (len < 2 * osz)
        return jerr(err, "container header truncated");
    size_t count = large ? bl_u32(base) : bl_u16(base);
    size_t size = large ? bl_u32(base + osz) : bl_u16(base + osz);
    if (size > len)
        return jerr(err, "container size exceeds its value");
    size_t key_entry = osz + 2, val_entry = 1 + osz;
    size_t hdr = 2 * osz + (obj ? count * key_entry : 0) + count * val_entry;
    if (count > size || hdr > size)
        return jerr(err, "container entries exceed its size");
    jn *j = jn_new(obj ? JN_OBJ : JN_ARR);
    if (!j || !jn_reserve(j, count ? count : 1)) {
        jn_free(j);
        tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (obj) {
            const uint8_t *ke = base + 2 * osz + i * key_entry;
            size_t koff = large ? bl_u32(ke) : bl_u16(ke);
            size_t klen = bl_u16(ke + osz);
            if (koff > size || klen > size - koff) {
                jn_free(j);
                return jerr(err, "object key out of bounds");
            }
            j->keys[i] = (const char *)base + koff;
            j->klens[i] = klen;
        } else {
            j->keys[i] = NULL;
            j->klens[i] = 0;
        }
        const uint8_t *ve = base + 2 * osz + (obj ? count * key_entry : 0) + i * val_entry;
        uint8_t vt = ve[0];
        jn *kid = NULL;
        bool inl = vt == 0x04 || vt == 0x05 || vt == 0x06 || (large && (vt == 0x07 || vt == 0x08));
        if (inl) {
            kid = parse_value(vt, ve + 1, osz, depth + 1, budget, err);
        } else {
            size_t voff = large ? bl_u32(ve + 1) : bl_u16(ve + 1);
            if (voff >= size) {
                jn_free(j);
                return jerr(err, "value offset out of bounds");
            }
            kid = parse_value(vt, base + voff, size - voff, depth + 1, budget, err);
        }
        if (!kid) {
            jn_free(j);
            return NULL;
        }
        j->kids[j->n_kids++] = kid;
    }
    return j;
}

static jn *parse_value(uint8_t type, const uint8_t *p, size_t len, int depth, size_t *budget, tb_error *err)
{
    jn *j = NULL;
    /* Offsets may alias (several entries pointing at one value): without a
     * budget a small input could expand exponentially. A real document has
     * at most one value per byte. */
    if (*budget == 0)
        return jerr(err, "more values than bytes (aliased offsets)");
    (*budget)--;
    const uint8_t *end = p + len;
    switch (type) {
    case 0x00: case 0x01: case 0x02: case 0x03:
        return parse_container(type == 0x00 || type == 0x01, type == 0x01 || type == 0x03, p, len, depth, budget, err);
    case 0x04:
        if (len < 1)
            return jerr(err, "literal truncated");
        if (p[0] > 2)
            return jerr(err, "bad literal");
        j = jn_new(p[0] == 0 ? JN_NULL : p[0] == 1 ? JN_TRUE : JN_FALSE);
        break;
    case 0x05: case 0x06:
        if (len < 2)
            return jerr(err, "int16 truncated");
        if ((j = jn_new(type == 0x05 ? JN_INT : JN_UINT))) {
            if (type == 0x05) j->n.i = (int16_t)bl_u16(p);
            else j->n.u = bl_u16(p);
        }
        break;
    case 0x07: case 0x08:
        if (len < 4)
            return jerr(err, "int32 truncated");
        if ((j = jn_new(type == 0x07 ? JN_INT : JN_UINT))) {
            if (type == 0x07) j->n.i = (int32_t)bl_u32(p);
            else j->n.u = bl_u32(p);
        }
        break;
    case 0x09: case 0x0a:
        if (len < 8)
            return jerr(err, "int64 truncated");
        if ((j = jn_new(type == 0x09 ? JN_INT : JN_UINT))) {
            if (type == 0x09) j->n.i = (int64_t)bl_u64(p);
            else j->n.u = bl_u64(p);
        }
        break;
    case 0x0b:
        if (len < 8)
            return jerr(err, "double truncated");
        if ((j = jn_new(JN_DOUBLE))) {
            uint64_t u = bl_u64(p);
            memcpy(&j->n.d, &u, 8);
        }
        break;
    case 0x0c: {
        size_t l;
        const uint8_t *q = p;
        if (!varlen(&q, end, &l) || l > (size_t)(end - q))
            return jerr(err, "string truncated");
        if ((j = jn_new(JN_STR))) {
            j->s = (const char *)q;
            j->slen = l;
        }
        break;
    }
    case 0x0f: {
        if (len < 1)
            return jerr(err, "opaque truncated");
        int ft = p[0];
        const uint8_t *q = p + 1;
        size_t l;
        if (!varlen(&q, end, &l) || l > (size_t)(end - q))
            return jerr(err, "opaque truncated");
        if (ft == EVT_MY_NEWDECIMAL) {
            if (l < 2)
                return jerr(err, "opaque decimal truncated");
            if (!(j = jn_new(JN_NUMTEXT)))
                break;
            /* up to 65 digits, a sign, a point and a leading zero: more than own[] holds */
            char text[96];
            size_t tl = evt_mysql_decimal_text(q + 2, l - 2, q[0], q[1], text, sizeof(text));
            if (tl == 0) {
                jn_free(j);
                return jerr(err, "bad opaque decimal");
            }
            if (tl < sizeof(j->own)) {
                memcpy(j->own, text, tl + 1);
                j->s = j->own;
            } else if ((j->heap = strndup(text, tl)) != NULL) {
                j->s = j->heap;
            } else {
                jn_free(j);
                j = NULL;
                break;
            }
            j->slen = tl;
        } else if ((ft == EVT_MY_DATE || ft == EVT_MY_DATETIME || ft == EVT_MY_TIMESTAMP || ft == EVT_MY_TIME ||
                    ft == EVT_MY_DATETIME2 || ft == EVT_MY_TIMESTAMP2 || ft == EVT_MY_TIME2) && l >= 8) {
            if (!(j = jn_new(JN_STR)))
                break;
            int kind = (ft == EVT_MY_TIME || ft == EVT_MY_TIME2) ? EVT_MY_TIME
                       : ft == EVT_MY_DATE ? EVT_MY_DATE : EVT_MY_DATETIME;
            j->slen = packed_temporal_text(kind, (int64_t)bl_u64(q), j->own, sizeof(j->own));
            j->s = j->own;
        } else {
            tb_buf b;
            tb_buf_init(&b, 0);
            if (tb_buf_printf(&b, "base64:type%d:", ft) != TB_OK || tb_buf_base64(&b, q, l) != TB_OK ||
                !(j = jn_new(JN_STR))) {
                tb_buf_free(&b);
                break;
            }
            j->heap = tb_buf_detach(&b, &j->slen);
            j->s = j->heap;
            if (!j->heap) {
                jn_free(j);
                j = NULL;
            }
        }
        break;
    }
    default:
        return jerr(err, "unknown value type");
    }
    if (!j)
        tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return j;
}

static void jn_write(const jn *j, evt_jw *w)
{
    switch (j->t) {
    case JN_NULL: evt_jw_null(w); break;
    case JN_TRUE: evt_jw_bool(w, true); break;
    case JN_FALSE: evt_jw_bool(w, false); break;
    case JN_INT: evt_jw_int(w, j->n.i); break;
    case JN_UINT: evt_jw_uint(w, j->n.u); break;
    case JN_DOUBLE: evt_jw_double(w, j->n.d); break;
    case JN_NUMTEXT: evt_jw_raw_number(w, j->s, j->slen); break;
    case JN_STR: evt_jw_str(w, j->s, j->slen); break;
    case JN_ARR:
        evt_jw_arr_begin(w);
        for (size_t i = 0; i < j->n_kids; i++)
            jn_write(j->kids[i], w);
        evt_jw_arr_end(w);
        break;
    case JN_OBJ:
        evt_jw_obj_begin(w);
        for (size_t i = 0; i < j->n_kids; i++) {
            evt_jw_key(w, j->keys[i], j->klens[i]);
            jn_write(j->kids[i], w);
        }
        evt_jw_obj_end(w);
        break;
    }
}

static jn *parse_doc(const uint8_t *p, size_t len, tb_error *err)
{
    if (len < 1)
        return jerr(err, "empty value");
    size_t budget = len;
    return parse_value(p[0], p + 1, len - 1, 0, &budget, err);
}

static tb_code write_doc(const jn *j, tb_buf *out, tb_error *err)
{
    evt_jw w;
    evt_jw_init(&w, out);
    jn_write(j, &w);
    tb_code rc = evt_jw_finish(&w);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "JSON value cannot be written (%s)", tb_code_name(rc));
    return TB_OK;
}

tb_code bl_json_to_text(const uint8_t *p, size_t len, tb_buf *out, tb_error *err)
{
    jn *j = parse_doc(p, len, err);
    if (!j)
        return err ? err->code : TB_ERR_CORRUPT;
    tb_code rc = write_doc(j, out, err);
    jn_free(j);
    return rc;
}

/* ------------------------------------------------------------ diffs */

typedef struct jleg {
    bool is_index;
    size_t index;
    const char *key;  /* raw path text for the key (may contain escapes when quoted) */
    size_t klen;
    bool quoted;
} jleg;

static bool key_eq(const jleg *l, const char *k, size_t kl)
{
    if (!l->quoted)
        return l->klen == kl && memcmp(l->key, k, kl) == 0;
    /* quoted: compare with backslash escapes \" and \\ resolved */
    size_t i = 0, o = 0;
    while (i < l->klen) {
        char c = l->key[i++];
        if (c == '\\' && i < l->klen)
            c = l->key[i++];
        if (o >= kl || k[o] != c)
            return false;
        o++;
    }
    return o == kl;
}

/* Split a path into legs; returns count or -1. */
static int parse_path(const char *s, size_t n, jleg *legs, int max)
{
    size_t i = 0;
    int nl = 0;
    while (i < n && s[i] == ' ')
        i++;
    if (i >= n || s[i] != '$')
        return -1;
    i++;
    while (i < n) {
        if (nl >= max)
            return -1;
        jleg *l = &legs[nl];
        memset(l, 0, sizeof(*l));
        if (s[i] == '.') {
            i++;
            if (i < n && s[i] == '"') {
                size_t st = ++i;
                while (i < n && s[i] != '"') {
                    if (s[i] == '\\')
                        i++;
                    i++;
                }
                if (i >= n)
                    return -1;
                l->key = s + st;
                l->klen = i - st;
                l->quoted = true;
                i++;
            } else {
                size_t st = i;
                while (i < n && s[i] != '.' && s[i] != '[')
                    i++;
                l->key = s + st;
                l->klen = i - st;
            }
        } else if (s[i] == '[') {
            i++;
            size_t v = 0;
            bool digits = false;
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                v = v * 10 + (size_t)(s[i++] - '0');
                digits = true;
                if (v > (1u << 30))
                    return -1;
            }
            if (!digits || i >= n || s[i] != ']')
                return -1;
            i++;
            l->is_index = true;
            l->index = v;
        } else {
            return -1;
        }
        nl++;
    }
    return nl;
}

static jn **find_child(jn *parent, const jleg *l, size_t *pos)
{
    if (l->is_index) {
        if (parent->t != JN_ARR || l->index >= parent->n_kids)
            return NULL;
        *pos = l->index;
        return &parent->kids[l->index];
    }
    if (parent->t != JN_OBJ)
        return NULL;
    for (size_t i = 0; i < parent->n_kids; i++)
        if (key_eq(l, parent->keys[i], parent->klens[i])) {
            *pos = i;
            return &parent->kids[i];
        }
    return NULL;
}

/* Key text of a leg as stored in the tree: unquoted legs point into the diff
 * (alive for the call); quoted ones with escapes are kept raw (rare). */
static tb_code apply_one(jn **root, int op, const jleg *legs, int nl, jn *val, tb_error *err)
{
    if (nl == 0) {
        if (op == 2)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff removes the whole document");
        jn_free(*root);
        *root = val;
        return TB_OK;
    }
    jn *parent = *root;
    size_t pos;
    for (int i = 0; i < nl - 1; i++) {
        jn **c = find_child(parent, &legs[i], &pos);
        if (!c)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff path not found in the before image");
        parent = *c;
    }
    const jleg *last = &legs[nl - 1];
    jn **slot = find_child(parent, last, &pos);
    if (op == 0) { /* REPLACE */
        if (!slot)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff replaces a missing value");
        jn_free(*slot);
        *slot = val;
        return TB_OK;
    }
    if (op == 2) { /* REMOVE */
        if (!slot)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff removes a missing value");
        jn_free(*slot);
        memmove(&parent->kids[pos], &parent->kids[pos + 1], (parent->n_kids - pos - 1) * sizeof(jn *));
        memmove(&parent->keys[pos], &parent->keys[pos + 1], (parent->n_kids - pos - 1) * sizeof(char *));
        memmove(&parent->klens[pos], &parent->klens[pos + 1], (parent->n_kids - pos - 1) * sizeof(size_t));
        parent->n_kids--;
        return TB_OK;
    }
    /* INSERT */
    if (slot) { /* object key exists, or array index: insert before it */
        if (parent->t == JN_OBJ) {
            jn_free(*slot);
            *slot = val;
            return TB_OK;
        }
    }
    if ((parent->t == JN_OBJ && last->is_index) || (parent->t == JN_ARR && !last->is_index) ||
        (parent->t != JN_OBJ && parent->t != JN_ARR))
        return tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff inserts into a scalar");
    if (!jn_reserve(parent, parent->n_kids + 1))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    size_t at = parent->n_kids;
    if (parent->t == JN_ARR && last->index < at)
        at = last->index;
    memmove(&parent->kids[at + 1], &parent->kids[at], (parent->n_kids - at) * sizeof(jn *));
    memmove(&parent->keys[at + 1], &parent->keys[at], (parent->n_kids - at) * sizeof(char *));
    memmove(&parent->klens[at + 1], &parent->klens[at], (parent->n_kids - at) * sizeof(size_t));
    parent->kids[at] = val;
    parent->keys[at] = last->is_index ? NULL : last->key;
    parent->klens[at] = last->is_index ? 0 : last->klen;
    parent->n_kids++;
    return TB_OK;
}

tb_code bl_json_apply_diff(const uint8_t *before, size_t before_len, const uint8_t *diff, size_t diff_len,
                           tb_buf *out, tb_error *err)
{
    tb_code rc = TB_OK;
    jn *root = parse_doc(before, before_len, err);
    if (!root)
        return err ? err->code : TB_ERR_CORRUPT;
    const uint8_t *p = diff, *end = diff + diff_len;
    while (p < end) {
        int op = *p++;
        uint64_t pl, vl = 0;
        if (op > 2 || !bl_lenenc(&p, end, &pl) || pl > (uint64_t)(end - p)) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff malformed");
            goto out;
        }
        jleg legs[64];
        int nl = parse_path((const char *)p, (size_t)pl, legs, 64);
        p += pl;
        if (nl < 0) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff path malformed");
            goto out;
        }
        jn *val = NULL;
        if (op != 2) {
            if (!bl_lenenc(&p, end, &vl) || vl > (uint64_t)(end - p)) {
                rc = tb_error_set(err, TB_ERR_CORRUPT, false, "JSON diff value truncated");
                goto out;
            }
            val = parse_doc(p, (size_t)vl, err);
            if (!val) {
                rc = err ? err->code : TB_ERR_CORRUPT;
                goto out;
            }
            p += vl;
        }
        rc = apply_one(&root, op, legs, nl, val, err);
        if (rc != TB_OK) {
            jn_free(val);
            goto out;
        }
    }
    rc = write_doc(root, out, err);
out:
    jn_free(root);
    return rc;
}
