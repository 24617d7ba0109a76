/*
 * tb_error: the one error type of tributary.
 *
 * A function that can fail returns a tb_code (TB_OK == 0) and, when given a
 * non-NULL tb_error *, fills it once, at the place where the context (file,
 * offset, key, column) is known. The message is a fixed buffer inside the
 * struct: no allocation, nothing to free. Callers that add context use
 * tb_error_prefix(), which keeps the retriable flag and returns the code it
 * is given, so `return tb_error_prefix(err, rc, ...)` is right with err NULL.
 *
 * Each library's own error codes (rd_kafka_resp_err_t, mysql_errno, sqlite3
 * extended codes) are translated into a tb_code in exactly one place, in the
 * module that uses that library.
 */
#ifndef TB_ERROR_H
#define TB_ERROR_H

#include <stdbool.h>
#include <stdarg.h>

typedef enum tb_code {
    TB_OK = 0,
    TB_ERR_INVALID,     /* bad argument or bad input data */
    TB_ERR_CONFIG,      /* bad configuration or usage (exit code 2) */
    TB_ERR_IO,          /* file or socket I/O */
    TB_ERR_CORRUPT,     /* input is corrupt or truncated (names file + offset) */
    TB_ERR_NOMEM,       /* allocation failed or a bound was exceeded */
    TB_ERR_SOURCE,      /* source database error */
    TB_ERR_KAFKA,       /* Kafka error */
    TB_ERR_UNSUPPORTED, /* valid input we do not handle */
    TB_ERR_NOT_FOUND,   /* a looked-up thing does not exist */
    TB_ERR_STATE,       /* called in the wrong state */
    TB_ERR_STOPPED,     /* stop requested (signal) */
} tb_code;

#define TB_ERROR_MSG_MAX 1024

/* A call whose tb_code is dropped is a compile-time warning (an error with TB_WERROR): the
 * failure it reports would be lost. Where ignoring it is right (best effort, a failure that
 * cannot happen for the arguments), pass the result to tb_ignore and say why; GCC does not
 * accept a cast to void for this attribute. Tests define TB_MUST_USE empty. */
#ifndef TB_MUST_USE
#define TB_MUST_USE __attribute__((warn_unused_result))
#endif

static inline void tb_ignore(tb_code rc) { (void)rc; }


typedef struct tb_error {
    tb_code code;
    bool retriable;             /* true when retrying the same call may succeed */
    char msg[TB_ERROR_MSG_MAX]; /* human-readable, NUL-terminated */
} tb_error;

/* Reset to TB_OK with an empty message. err may be NULL. */
void tb_error_clear(tb_error *err);

/* Fill err (if not NULL) and return code. printf-style message. */
tb_code tb_error_set(tb_error *err, tb_code code, bool retriable, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
tb_code tb_error_vset(tb_error *err, tb_code code, bool retriable, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Prepend context ("file.cnf:12: ") to an already-set message and set its code
 * to `code` (the code the failed call returned). Returns `code`, err NULL or not. */
tb_code tb_error_prefix(tb_error *err, tb_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Stable lower-case name of a code, e.g. "corrupt". Never NULL. */
const char *tb_code_name(tb_code code);

/* Process exit code for an error: 0 ok, 2 config/usage, 1 otherwise (DESIGN 10). */
int tb_code_exit_status(tb_code code);

#endif
