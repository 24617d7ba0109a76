/* mymeta: MySQL/MariaDB table metadata (see mymeta.h). */
#include "mymeta.h"

#include <stdlib.h>
#include <string.h>

#include "tb_buf.h"

void mymeta_labels_free(char **labels, size_t n)
{
    if (!labels)
        return;
    for (size_t i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
}

tb_code mymeta_parse_labels(const char *column_type, char ***labels, size_t *n)
{
    *labels = NULL;
    *n = 0;
    const char *p = strchr(column_type, '(');
    if (!p)
        return TB_ERR_INVALID;
    p++;
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = TB_OK;
    while (*p == '\'') {
        p++;
        tb_buf_reset(&b);
        for (;;) {
            if (*p == '\0') {
                rc = TB_ERR_INVALID;
                goto out;
            }
            if (*p == '\'' && p[1] == '\'') {
                rc = tb_buf_putc(&b, '\'');
                p += 2;
            } else if (*p == '\'') {
                p++;
                break;
            } else if (*p == '\\' && p[1] != '\0') {
                rc = tb_buf_putc(&b, p[1]);
                p += 2;
            } else {
                rc = tb_buf_putc(&b, *p++);
            }
            if (rc != TB_OK)
                goto out;
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 8;
            char **nv = realloc(v, cap * sizeof(*nv));
            if (!nv) {
                rc = TB_ERR_NOMEM;
                goto out;
            }
            v = nv;
        }
        if (!(v[cnt] = strdup(tb_buf_cstr(&b)))) {
            rc = TB_ERR_NOMEM;
            goto out;
        }
        cnt++;
        if (*p == ',')
            p++;
    }
    if (*p != ')')
        rc = TB_ERR_INVALID;
out:
    tb_buf_free(&b);
    if (rc != TB_OK) {
        mymeta_labels_free(v, cnt);
        return rc;
    }
    *labels = v;
    *n = cnt;
    return TB_OK;
}
