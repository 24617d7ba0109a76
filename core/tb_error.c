#include "tb_error.h"

#include <stdio.h>
#include <string.h>

void tb_error_clear(tb_error *err)
{
    if (!err)
        return;
    err->code = TB_OK;
    err->retriable = false;
    err->msg[0] = '\0';
}

tb_code tb_error_vset(tb_error *err, tb_code code, bool retriable, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    err->code = code;
    err->retriable = retriable;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    return code;
}

tb_code tb_error_set(tb_error *err, tb_code code, bool retriable, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_error_vset(err, code, retriable, fmt, ap);
    va_end(ap);
    return code;
}

tb_code tb_error_prefix(tb_error *err, tb_code code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    char prefix[TB_ERROR_MSG_MAX];
    char old[TB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    size_t plen = strlen(prefix);
    /* The message already names what the prefix starts with ("source h:p: cannot
     * connect" under "source h:p: ..."): the common leading part, up to a ": ",
     * is said once. */
    size_t common = 0;
    for (size_t i = 0; i + 1 < plen && prefix[i] == old[i]; i++)
        if (prefix[i] == ':' && prefix[i + 1] == ' ' && old[i + 1] == ' ')
            common = i + 2;
    memmove(old, old + common, sizeof(old) - common);
    size_t olen = strnlen(old, sizeof(old) - 1);
    if (plen > sizeof(err->msg) - 1)
        plen = sizeof(err->msg) - 1;
    if (olen > sizeof(err->msg) - 1 - plen)
        olen = sizeof(err->msg) - 1 - plen;
    memcpy(err->msg, prefix, plen);
    memcpy(err->msg + plen, old, olen);
    err->msg[plen + olen] = '\0';
    return code;
}

const char *tb_code_name(tb_code code)
{
    switch (code) {
    case TB_OK: return "ok";
    case TB_ERR_INVALID: return "invalid";
    case TB_ERR_CONFIG: return "config";
    case TB_ERR_IO: return "io";
    case TB_ERR_CORRUPT: return "corrupt";
    case TB_ERR_NOMEM: return "nomem";
    case TB_ERR_SOURCE: return "source";
    case TB_ERR_KAFKA: return "kafka";
    case TB_ERR_UNSUPPORTED: return "unsupported";
    case TB_ERR_NOT_FOUND: return "not_found";
    case TB_ERR_STATE: return "state";
    case TB_ERR_STOPPED: return "stopped";
    }
    return "unknown";
}

int tb_code_exit_status(tb_code code)
{
    switch (code) {
    case TB_OK: return 0;
    case TB_ERR_CONFIG: return 2;
    default: return 1;
    }
}
