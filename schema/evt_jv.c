/*
 * evt_jv: a small strict JSON reader (RFC 8259), used by the cache to read
 * records, by `offsets show` and by the writer to embed JSON column values
 * canonically.
 *
 * One recursive-descent parser with two sinks: it either builds a tree (all
 * nodes and bytes in one arena owned by the root: evt_jv_free(root) frees
 * everything) or streams straight into an evt_jw (evt_jw_json: re-serialise
 * without building a tree).
 *
 * Accepted: exactly one value with optional whitespace around it; nesting up
 * to EVT_JV_MAX_DEPTH levels. Rejected (error with the byte offset): anything
 * else, including control characters inside strings, bad escapes, leading
 * zeros, trailing commas, NaN/Infinity, trailing garbage.
 * Numbers are kept as their exact text. Strings decode to bytes:
 *  - \uXXXX escapes become UTF-8; a surrogate pair becomes one code point;
 *  - a lone \udc80..\udcff becomes the single raw byte 0x80..0xff (the
 *    writer's escape for invalid UTF-8, see evt_jw.c), so any byte string
 *    survives write -> parse unchanged;
 *  - any other lone surrogate (never written by evt_jw) becomes U+FFFD;
 *  - raw bytes >= 0x80 are kept as they are, valid UTF-8 or not.
 * Duplicate object keys are kept in order; evt_jv_get returns the last one.
 */
#include "evt_internal.h"

#include <stdlib.h>
#include <string.h>

#define EVT_JV_MAX_DEPTH EVT_JSON_MAX_DEPTH

typedef struct jv_member {
    const char *key; /* NULL in arrays */
    size_t klen;
    evt_jv *val;
} jv_member;

struct evt_jv {
    evt_jv_type type;
    bool b;
    const char *text; /* NUMBER text, STRING bytes (NUL-terminated) */
    size_t len;
    size_t n; /* ARRAY/OBJECT */
    jv_member *m;
    evt_arena *owner; /* root only: the arena holding the whole tree */
};

typedef struct jp {
    const char *s;
    size_t len, pos;
    int depth;
    evt_jw *w;   /* stream mode */
    evt_arena *a; /* tree mode */
    tb_buf str;  /* scratch for strings with escapes */
    jv_member *stk;
    size_t nstk, capstk;
    tb_code rc;
    tb_error *err;
} jp;

static bool fail(jp *p, tb_code code, const char *what)
{
    if (p->rc == TB_OK) {
        p->rc = code;
        tb_error_set(p->err, code, false, "JSON: %s at byte offset %zu", what, p->pos);
    }
    return false;
}

static void skip_ws(jp *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static evt_jv *node(jp *p, evt_jv_type type)
{
    evt_jv *v = evt_arena_alloc(p->a, sizeof(evt_jv));
    if (!v) {
        fail(p, TB_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(v, 0, sizeof(*v));
    v->type = type;
    return v;
}

static const char *arena_copy(jp *p, const char *s, size_t n)
{
    char *c = evt_arena_alloc(p->a, n + 1);
    if (!c) {
        fail(p, TB_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[pos..pos+4); -1 if not. */
static long hex4(const jp *p, size_t pos)
{
    if (pos + 4 > p->len)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p->s[pos + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static bool put_cp(jp *p, unsigned long cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (tb_buf_append(&p->str, u, n) != TB_OK)
        return fail(p, TB_ERR_NOMEM, "out of memory");
    return true;
}

/* At an opening quote. On success *out and *olen is the decoded bytes: a slice of
 * the input when there was no escape, else p->str (valid until the next string). */
static bool parse_string(jp *p, const char **out, size_t *olen)
{
    p->pos++; /* '"' */
    size_t st = p->pos;
    bool esc = false;
    tb_buf_reset(&p->str);
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, TB_ERR_INVALID, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(p, TB_ERR_INVALID, "control character in string");
        if (c != '\\') {
            p->pos++;
            continue;
        }
        /* escape: move the plain run into the scratch first */
        if (tb_buf_append(&p->str, p->s + st, p->pos - st) != TB_OK)
            return fail(p, TB_ERR_NOMEM, "out of memory");
        esc = true;
        if (p->pos + 1 >= p->len)
            return fail(p, TB_ERR_INVALID, "unterminated string");
        char e = p->s[p->pos + 1];
        char r = 0;
        switch (e) {
        case '"': r = '"'; break;
        case '\\': r = '\\'; break;
        case '/': r = '/'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'n': r = '\n'; break;
        case 'r': r = '\r'; break;
        case 't': r = '\t'; break;
        case 'u': break;
        default: return fail(p, TB_ERR_INVALID, "bad escape in string");
        }
        if (e != 'u') {
            if (tb_buf_putc(&p->str, r) != TB_OK)
                return fail(p, TB_ERR_NOMEM, "out of memory");
            p->pos += 2;
            st = p->pos;
            continue;
        }
        long cp = hex4(p, p->pos + 2);
        if (cp < 0)
            return fail(p, TB_ERR_INVALID, "bad \\u escape in string");
        p->pos += 6;
        bool ok;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = -1;
            if (p->pos + 1 < p->len && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u')
                lo = hex4(p, p->pos + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                p->pos += 6;
                ok = put_cp(p, 0x10000 + (((unsigned long)cp - 0xD800) << 10) + ((unsigned long)lo - 0xDC00));
            } else
                ok = put_cp(p, 0xFFFD);
        } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
            ok = tb_buf_putc(&p->str, (char)(cp - 0xDC00)) == TB_OK;
            if (!ok)
                fail(p, TB_ERR_NOMEM, "out of memory");
        } else if (cp >= 0xDC00 && cp <= 0xDFFF)
            ok = put_cp(p, 0xFFFD);
        else
            ok = put_cp(p, (unsigned long)cp);
        if (!ok)
            return false;
        st = p->pos;
    }
    if (esc) {
        if (tb_buf_append(&p->str, p->s + st, p->pos - st) != TB_OK)
            return fail(p, TB_ERR_NOMEM, "out of memory");
        *out = tb_buf_cstr(&p->str);
        *olen = p->str.len;
    } else {
        *out = p->s + st;
        *olen = p->pos - st;
    }
    p->pos++; /* closing quote */
    return true;
}

static bool parse_number(jp *p, const char **out, size_t *olen)
{
    size_t st = p->pos;
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')
            p->pos++;
        else
            break;
    }
    if (!evt_json_number_ok(p->s + st, p->pos - st)) {
        p->pos = st;
        return fail(p, TB_ERR_INVALID, "bad number");
    }
    *out = p->s + st;
    *olen = p->pos - st;
    return true;
}

static bool push(jp *p, const char *key, size_t klen, evt_jv *val)
{
    if (p->nstk == p->capstk) {
        size_t cap = p->capstk ? p->capstk * 2 : 32;
        jv_member *n = realloc(p->stk, cap * sizeof(jv_member));
        if (!n)
            return fail(p, TB_ERR_NOMEM, "out of memory");
        p->stk = n;
        p->capstk = cap;
    }
    p->stk[p->nstk++] = (jv_member){key, klen, val};
    return true;
}

static bool parse_value(jp *p, evt_jv **out);

static bool parse_container(jp *p, bool obj, evt_jv **out)
{
    if (++p->depth > EVT_JV_MAX_DEPTH)
        return fail(p, TB_ERR_INVALID, "nesting too deep");
    char close = obj ? '}' : ']';
    size_t base = p->nstk;
    if (p->w)
        obj ? evt_jw_obj_begin(p->w) : evt_jw_arr_begin(p->w);
    p->pos++;
    skip_ws(p);
    bool first = true;
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, TB_ERR_INVALID, obj ? "unterminated object" : "unterminated array");
        if (p->s[p->pos] == close && first)
            break;
        if (!first) {
            if (p->s[p->pos] == close)
                break;
            if (p->s[p->pos] != ',')
                return fail(p, TB_ERR_INVALID, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            p->pos++;
            skip_ws(p);
        }
        first = false;
        const char *key = NULL;
        size_t klen = 0;
        if (obj) {
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, TB_ERR_INVALID, "expected a string key");
            const char *k;
            if (!parse_string(p, &k, &klen))
                return false;
            if (p->w)
                evt_jw_key(p->w, k, klen);
            else if (!(key = arena_copy(p, k, klen)))
                return false;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail(p, TB_ERR_INVALID, "expected ':'");
            p->pos++;
        }
        evt_jv *v = NULL;
        if (!parse_value(p, p->w ? NULL : &v))
            return false;
        if (!p->w && !push(p, key, klen, v))
            return false;
        skip_ws(p);
    }
    p->pos++;
    p->depth--;
    if (p->w) {
        obj ? evt_jw_obj_end(p->w) : evt_jw_arr_end(p->w);
        return true;
    }
    evt_jv *v = node(p, obj ? EVT_JV_OBJECT : EVT_JV_ARRAY);
    if (!v)
        return false;
    v->n = p->nstk - base;
    if (v->n) {
        v->m = evt_arena_alloc(p->a, v->n * sizeof(jv_member));
        if (!v->m)
            return fail(p, TB_ERR_NOMEM, "out of memory");
        memcpy(v->m, p->stk + base, v->n * sizeof(jv_member));
    }
    p->nstk = base;
    *out = v;
    return true;
}

static bool literal(jp *p, const char *word, size_t n)
{
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, TB_ERR_INVALID, "unexpected character");
    p->pos += n;
    return true;
}

static bool parse_value(jp *p, evt_jv **out)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, TB_ERR_INVALID, "unexpected end of input");
    char c = p->s[p->pos];
    const char *t;
    size_t n;
    evt_jv *v = NULL;
    switch (c) {
    case '{':
    case '[':
        return parse_container(p, c == '{', out);
    case '"':
        if (!parse_string(p, &t, &n))
            return false;
        if (p->w) {
            evt_jw_str(p->w, t, n);
            return true;
        }
        if (!(v = node(p, EVT_JV_STRING)) || !(v->text = arena_copy(p, t, n)))
            return false;
        v->len = n;
        break;
    case 't':
    case 'f':
        if (!literal(p, c == 't' ? "true" : "false", c == 't' ? 4 : 5))
            return false;
        if (p->w) {
            evt_jw_bool(p->w, c == 't');
            return true;
        }
        if (!(v = node(p, EVT_JV_BOOL)))
            return false;
        v->b = c == 't';
        break;
    case 'n':
        if (!literal(p, "null", 4))
            return false;
        if (p->w) {
            evt_jw_null(p->w);
            return true;
        }
        if (!(v = node(p, EVT_JV_NULL)))
            return false;
        break;
    default:
        if (c != '-' && (c < '0' || c > '9'))
            return fail(p, TB_ERR_INVALID, "unexpected character");
        if (!parse_number(p, &t, &n))
            return false;
        if (p->w) {
            evt_jw_raw_json(p->w, t, n);
            return true;
        }
        if (!(v = node(p, EVT_JV_NUMBER)) || !(v->text = arena_copy(p, t, n)))
            return false;
        v->len = n;
        break;
    }
    *out = v;
    return true;
}

static tb_code run(jp *p, evt_jv **out)
{
    if (!p->s && p->len)
        return fail(p, TB_ERR_INVALID, "no input"), p->rc;
    if (parse_value(p, out)) {
        skip_ws(p);
        if (p->pos != p->len)
            fail(p, TB_ERR_INVALID, "trailing characters after the value");
    }
    tb_buf_free(&p->str);
    free(p->stk);
    return p->rc;
}

tb_code evt_jv_parse(const char *text, size_t len, evt_jv **out, tb_error *err)
{
    *out = NULL;
    evt_arena *a = calloc(1, sizeof(evt_arena));
    if (!a)
        return tb_error_set(err, TB_ERR_NOMEM, false, "JSON: out of memory");
    jp p = {.s = text, .len = text ? len : 0, .a = a, .err = err};
    tb_buf_init(&p.str, 0);
    evt_jv *root = NULL;
    tb_code rc = run(&p, &root);
    if (rc != TB_OK) {
        evt_arena_free(a);
        free(a);
        return rc;
    }
    root->owner = a;
    *out = root;
    return TB_OK;
}

void evt_jv_free(evt_jv *v)
{
    if (!v || !v->owner)
        return;
    evt_arena *a = v->owner;
    evt_arena_free(a); /* v lives in a */
    free(a);
}

tb_code evt_jw_json_ex(evt_jw *w, const char *json, size_t len, tb_error *err)
{
    if (w->err)
        return w->err;
    jp p = {.s = json, .len = json ? len : 0, .w = w, .err = err};
    tb_buf_init(&p.str, 0);
    tb_code rc = run(&p, NULL);
    if (rc != TB_OK) {
        evt_jw_fail(w, rc);
        return rc;
    }
    if (w->err)
        tb_error_set(err, w->err, false, "JSON: cannot write value (%s)", tb_code_name(w->err));
    return w->err;
}

/* ============================================================ accessors */

evt_jv_type evt_jv_type_of(const evt_jv *v) { return v ? v->type : EVT_JV_NULL; }
bool evt_jv_bool(const evt_jv *v) { return v && v->type == EVT_JV_BOOL && v->b; }

const char *evt_jv_text(const evt_jv *v, size_t *len)
{
    if (!v || (v->type != EVT_JV_NUMBER && v->type != EVT_JV_STRING)) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->len;
    return v->text;
}

size_t evt_jv_size(const evt_jv *v)
{
    return v && (v->type == EVT_JV_ARRAY || v->type == EVT_JV_OBJECT) ? v->n : 0;
}

const evt_jv *evt_jv_at(const evt_jv *v, size_t i)
{
    return i < evt_jv_size(v) ? v->m[i].val : NULL;
}

const char *evt_jv_key_at(const evt_jv *v, size_t i, size_t *len)
{
    if (!v || v->type != EVT_JV_OBJECT || i >= v->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->m[i].klen;
    return v->m[i].key;
}

const evt_jv *evt_jv_get(const evt_jv *v, const char *key)
{
    if (!v || v->type != EVT_JV_OBJECT || !key)
        return NULL;
    size_t kl = strlen(key);
    for (size_t i = v->n; i-- > 0;)
        if (v->m[i].klen == kl && memcmp(v->m[i].key, key, kl) == 0)
            return v->m[i].val;
    return NULL;
}

static void write_rec(const evt_jv *v, evt_jw *w)
{
    switch (v->type) {
    case EVT_JV_NULL: evt_jw_null(w); return;
    case EVT_JV_BOOL: evt_jw_bool(w, v->b); return;
    case EVT_JV_NUMBER: evt_jw_raw_json(w, v->text, v->len); return;
    case EVT_JV_STRING: evt_jw_str(w, v->text, v->len); return;
    case EVT_JV_ARRAY:
        evt_jw_arr_begin(w);
        for (size_t i = 0; i < v->n && !w->err; i++)
            write_rec(v->m[i].val, w);
        evt_jw_arr_end(w);
        return;
    case EVT_JV_OBJECT:
        evt_jw_obj_begin(w);
        for (size_t i = 0; i < v->n && !w->err; i++) {
            evt_jw_key(w, v->m[i].key, v->m[i].klen);
            write_rec(v->m[i].val, w);
        }
        evt_jw_obj_end(w);
        return;
    }
}

tb_code evt_jv_write(const evt_jv *v, evt_jw *w)
{
    if (!v) {
        evt_jw_fail(w, TB_ERR_INVALID);
        return w->err;
    }
    write_rec(v, w);
    return w->err;
}
