/*
 * tb_buf: a bounded, growable byte buffer (after curl's dynbuf).
 *
 * Owns its memory. Always NUL-terminated after a successful append, so
 * data can be used as a C string when the content has no NUL bytes. Every
 * append fails (returns TB_ERR_NOMEM, content unchanged) when growing past
 * `max` bytes or when allocation fails: nothing is ever truncated silently.
 *
 *   tb_buf b; tb_buf_init(&b, 0);      // 0 = TB_BUF_DEFAULT_MAX
 *   tb_buf_append(&b, "x", 1);
 *   tb_buf_free(&b);                   // safe on a zeroed or freed buffer
 */
#ifndef TB_BUF_H
#define TB_BUF_H

#include <stddef.h>
#include <stdint.h>
#include "tb_error.h"

#define TB_BUF_DEFAULT_MAX ((size_t)1 << 31) /* 2 GiB */

typedef struct tb_buf {
    char *data;  /* NULL until the first append */
    size_t len;  /* bytes used, excluding the terminating NUL */
    size_t cap;  /* bytes allocated */
    size_t max;  /* hard bound on len */
} tb_buf;

void tb_buf_init(tb_buf *b, size_t max);
void tb_buf_free(tb_buf *b);                 /* b may be NULL; leaves b empty and reusable */
void tb_buf_reset(tb_buf *b);                /* len = 0, keeps memory */
TB_MUST_USE tb_code tb_buf_reserve(tb_buf *b, size_t extra);
tb_code tb_buf_append(tb_buf *b, const void *data, size_t len);
tb_code tb_buf_puts(tb_buf *b, const char *s);
tb_code tb_buf_putc(tb_buf *b, char c);
tb_code tb_buf_printf(tb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take ownership of the bytes (caller frees with free()); b becomes empty.
 * Returns an allocated "" for an empty buffer, NULL only on allocation failure. */
char *tb_buf_detach(tb_buf *b, size_t *len);
/* Pointer to the content as a C string ("" when empty). Borrowed. */
const char *tb_buf_cstr(const tb_buf *b);

/* Base64 (RFC 4648, with padding) of len bytes appended to b. */
TB_MUST_USE tb_code tb_buf_base64(tb_buf *b, const void *data, size_t len);
/* Decode base64 text into out (appended). TB_ERR_INVALID on bad input. */
TB_MUST_USE tb_code tb_base64_decode(const char *text, size_t len, tb_buf *out);

#endif
