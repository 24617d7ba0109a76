#include "tb_buf.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_buf_init(tb_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : TB_BUF_DEFAULT_MAX;
}

void tb_buf_free(tb_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void tb_buf_reset(tb_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

tb_code tb_buf_reserve(tb_buf *b, size_t extra)
{
    assert((b->cap == 0 ? b->data == NULL && b->len == 0 : b->data != NULL && b->len < b->cap) &&
           "tb_buf: length within the capacity, room for the NUL");
    if (b->max == 0)
        b->max = TB_BUF_DEFAULT_MAX;
    if (extra > b->max || b->len > b->max - extra)
        return TB_ERR_NOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return TB_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return TB_ERR_NOMEM;
    p[b->len] = '\0'; /* a reserved buffer reads as its text so far, even before the first append */
    b->data = p;
    b->cap = cap;
    return TB_OK;
}

tb_code tb_buf_append(tb_buf *b, const void *data, size_t len)
{
    if (tb_buf_reserve(b, len) != TB_OK)
        return TB_ERR_NOMEM;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return TB_OK;
}

tb_code tb_buf_puts(tb_buf *b, const char *s) { return tb_buf_append(b, s, strlen(s)); }

tb_code tb_buf_putc(tb_buf *b, char c) { return tb_buf_append(b, &c, 1); }

tb_code tb_buf_printf(tb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return TB_ERR_INVALID;
    if (tb_buf_reserve(b, (size_t)n) != TB_OK)
        return TB_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return TB_OK;
}

char *tb_buf_detach(tb_buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

const char *tb_buf_cstr(const tb_buf *b) { return b->data ? b->data : ""; }

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

tb_code tb_buf_base64(tb_buf *b, const void *data, size_t len)
{
    const unsigned char *s = data;
    size_t out = (len + 2) / 3 * 4;
    if (tb_buf_reserve(b, out) != TB_OK)
        return TB_ERR_NOMEM;
    char *d = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *d++ = b64[v >> 18];
        *d++ = b64[(v >> 12) & 63];
        *d++ = b64[(v >> 6) & 63];
        *d++ = b64[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)s[i + 1] << 8;
        *d++ = b64[v >> 18];
        *d++ = b64[(v >> 12) & 63];
        *d++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
        *d++ = '=';
    }
    b->len += out;
    b->data[b->len] = '\0';
    return TB_OK;
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

tb_code tb_base64_decode(const char *text, size_t len, tb_buf *out)
{
    if (len % 4 != 0)
        return TB_ERR_INVALID;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)text[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad)
                    return TB_ERR_INVALID;
                v[k] = b64_val(c);
                if (v[k] < 0)
                    return TB_ERR_INVALID;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        unsigned char bytes[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w};
        if (tb_buf_append(out, bytes, (size_t)(3 - pad)) != TB_OK)
            return TB_ERR_NOMEM;
    }
    return TB_OK;
}
