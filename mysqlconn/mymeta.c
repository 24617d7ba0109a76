/* mymeta: MySQL/MariaDB table metadata (see mymeta.h). */
#include "mymeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tb_buf.h"

void mymeta_labels_free(char **labels, size_t n)
{
    if (!labels)
        return;
    for (size_t i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
}

/* The quoted text at *pp (at its opening quote) into b (reset first): a
 * doubled quote is one quote, a backslash escapes the next character.
 * *pp ends after the closing quote. TB_ERR_INVALID when it is not closed. */
static tb_code read_quoted(const char **pp, tb_buf *b)
{
    const char *p = *pp + 1;
    tb_code rc = TB_OK;
    tb_buf_reset(b);
    while (rc == TB_OK) {
        if (*p == '\0')
            return TB_ERR_INVALID;
        if (*p == '\'' && p[1] == '\'') {
            rc = tb_buf_putc(b, '\'');
            p += 2;
        } else if (*p == '\'') {
            p++;
            break;
        } else if (*p == '\\' && p[1] != '\0') {
            rc = tb_buf_putc(b, p[1]);
            p += 2;
        } else {
            rc = tb_buf_putc(b, *p++);
        }
    }
    *pp = p;
    return rc;
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
        if ((rc = read_quoted(&p, &b)) != TB_OK)
            goto out;
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

/* A number as a literal default is written ("5", "-1.50", "1e3"). */
static bool is_number(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return false;
    bool digit = false;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9')
            digit = true;
        else if (*s != '.' && *s != 'e' && *s != 'E' && *s != '-' && *s != '+')
            return false;
    }
    return digit;
}

tb_code mymeta_parse_default(const char *column_default, const char *extra, bool mariadb, char **text, bool *is_expr)
{
    *text = NULL;
    *is_expr = false;
    if (!column_default)
        return TB_OK;
    if (!mariadb) {
        /* MySQL writes a literal unquoted; an expression is marked in EXTRA
         * (8.0.13 on), CURRENT_TIMESTAMP before that */
        *is_expr = (extra && strstr(extra, "DEFAULT_GENERATED")) ||
                   strncasecmp(column_default, "current_timestamp", 17) == 0;
        *text = strdup(column_default);
        return *text ? TB_OK : TB_ERR_NOMEM;
    }
    if (strcmp(column_default, "NULL") == 0)
        return TB_OK;
    if (column_default[0] == '\'') {
        tb_buf b;
        tb_buf_init(&b, 0);
        const char *p = column_default;
        tb_code rc = read_quoted(&p, &b);
        if (rc == TB_OK && *p == '\0') {
            *text = strdup(tb_buf_cstr(&b));
            tb_buf_free(&b);
            return *text ? TB_OK : TB_ERR_NOMEM;
        }
        tb_buf_free(&b);
        if (rc == TB_ERR_NOMEM)
            return rc;
    }
    *is_expr = !is_number(column_default);
    *text = strdup(column_default);
    return *text ? TB_OK : TB_ERR_NOMEM;
}

/* ------------------------------------------------------------ system versioning */

void mymeta_period_table(mymeta_period *p, const char *table, const char *table_name, const char *table_type)
{
    if (table && table_name && table_type && strcmp(table, table_name) == 0 &&
        strcmp(table_type, "SYSTEM VERSIONED") == 0)
        p->versioned = true;
}

void mymeta_period_column(mymeta_period *p, const char *name, const char *generation_expression)
{
    if (!name || !generation_expression)
        return;
    if (strcmp(generation_expression, "ROW START") == 0)
        snprintf(p->start, sizeof p->start, "%s", name);
    else if (strcmp(generation_expression, "ROW END") == 0)
        snprintf(p->end, sizeof p->end, "%s", name);
}

bool mymeta_period_implicit(mymeta_period *p)
{
    p->implicit = p->versioned && !p->end[0];
    if (p->implicit) {
        snprintf(p->start, sizeof p->start, "row_start");
        snprintf(p->end, sizeof p->end, "row_end");
    }
    return p->implicit;
}

bool mymeta_period_keeps_key(const mymeta_period *p, const char *name)
{
    return !(p->versioned && p->end[0] && name && strcmp(name, p->end) == 0);
}
