/*
 * myconn_query: the one prepared-statement runner of the source connections, for catalog and
 * status questions (see myconn.h).
 */
#include "tb_cast.h"
#include "myconn.h"

#include <stdlib.h>
#include <string.h>

tb_code myconn_stmt_fail(MYSQL_STMT *st, tb_error *err, const char *what)
{
    unsigned no = mysql_stmt_errno(st);
    return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(no), "%s: %s (mysql error %u)", what,
                        mysql_stmt_error(st), no);
}

tb_code myconn_query(MYSQL *my, const char *sql, const char *const *params, size_t nparams,
                       myconn_row_fn fn, void *opaque, tb_error *err)
{
    tb_code rc = TB_OK;
    MYSQL_STMT *st = mysql_stmt_init(my);
    MYSQL_BIND *pb = NULL, *rb = NULL;
    unsigned long *plen = NULL, *rlen = NULL;
    char *rnull = NULL;
    char **cols = NULL;
    MYSQL_RES *meta = NULL;
    unsigned ncols = 0;

    if (!st)
        return tb_error_set(err, TB_ERR_NOMEM, false, "mysql_stmt_init failed");
    if (mysql_stmt_prepare(st, sql, strlen(sql)) != 0) {
        rc = myconn_stmt_fail(st, err, sql);
        goto out;
    }
    if (nparams > 0) {
        pb = calloc(nparams, sizeof(*pb));
        plen = calloc(nparams, sizeof(*plen));
        if (!pb || !plen) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < nparams; i++) {
            plen[i] = (unsigned long)strlen(params[i]);
            pb[i].buffer_type = MYSQL_TYPE_STRING;
            pb[i].buffer = TB_UNCONST(params[i]); /* an input parameter: read only */
            pb[i].buffer_length = plen[i];
            pb[i].length = &plen[i];
        }
        if (mysql_stmt_bind_param(st, pb) != 0) {
            rc = myconn_stmt_fail(st, err, sql);
            goto out;
        }
    }
    if (mysql_stmt_execute(st) != 0) {
        rc = myconn_stmt_fail(st, err, sql);
        goto out;
    }
    meta = mysql_stmt_result_metadata(st);
    if (!meta)
        goto out; /* no result set */
    ncols = mysql_num_fields(meta);
    bool update_max = true;
    mysql_stmt_attr_set(st, STMT_ATTR_UPDATE_MAX_LENGTH, &update_max);
    if (mysql_stmt_store_result(st) != 0) {
        rc = myconn_stmt_fail(st, err, sql);
        goto out;
    }
    rb = calloc(ncols, sizeof(*rb));
    rlen = calloc(ncols, sizeof(*rlen));
    rnull = calloc(ncols, 1);
    cols = calloc(ncols, sizeof(*cols));
    if (!rb || !rlen || !rnull || !cols) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    MYSQL_FIELD *fields = mysql_fetch_fields(meta);
    for (unsigned i = 0; i < ncols; i++) {
        unsigned long cap = fields[i].max_length + 1;
        if (cap < 32)
            cap = 32; /* numbers converted to text */
        cols[i] = malloc(cap);
        if (!cols[i]) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        rb[i].buffer_type = MYSQL_TYPE_STRING;
        rb[i].buffer = cols[i];
        rb[i].buffer_length = cap;
        rb[i].length = &rlen[i];
        rb[i].is_null = &rnull[i];
    }
    if (mysql_stmt_bind_result(st, rb) != 0) {
        rc = myconn_stmt_fail(st, err, sql);
        goto out;
    }
    char **view = calloc(ncols, sizeof(*view));
    if (!view) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (;;) {
        int f = mysql_stmt_fetch(st);
        if (f == MYSQL_NO_DATA)
            break;
        if (f == 1) {
            rc = myconn_stmt_fail(st, err, sql);
            break;
        }
        for (unsigned i = 0; i < ncols; i++) {
            if (rnull[i]) {
                view[i] = NULL;
            } else {
                unsigned long n = rlen[i] < rb[i].buffer_length ? rlen[i] : rb[i].buffer_length - 1;
                cols[i][n] = '\0';
                view[i] = cols[i];
            }
        }
        rc = fn(opaque, view, rlen, ncols, err);
        if (rc != TB_OK)
            break;
    }
    free(view);
out:
    if (meta)
        mysql_free_result(meta);
    if (cols)
        for (unsigned i = 0; i < ncols; i++)
            free(cols[i]);
    free(cols);
    free(rnull);
    free(rlen);
    free(rb);
    free(plen);
    free(pb);
    mysql_stmt_close(st);
    return rc;
}
