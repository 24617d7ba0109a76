/*
 * binlog_preflight: source settings and grants (see binlog_preflight.h).
 */
#include "binlog_preflight.h"
#include "binlog.h"
#include "myconn.h"
#include "tb_log.h"

#include <mysqld_error.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void bl_preflight_opts_from_cfg(const cfg *c, bl_preflight_opts *o)
{
    memset(o, 0, sizeof(*o));
    const char *policy = cfg_get_str(c, CFGK_SOURCE_ROW_IMAGE_POLICY);
    const char *mode = cfg_get_str(c, CFGK_SNAPSHOT_MODE);
    const char *lock = cfg_get_str(c, CFGK_SNAPSHOT_LOCKING_MODE);
    o->row_image_warn = policy && strcmp(policy, "warn") == 0;
    o->snapshot = !mode || strcmp(mode, "never") != 0;
    o->lock_minimal = !lock || strcmp(lock, "minimal") == 0;
    const char *method = cfg_get_str(c, CFGK_SNAPSHOT_INITIAL_METHOD);
    o->chunked = o->snapshot && method && strcmp(method, "chunked") == 0;
}

/* ============================================================ grants */

enum {
    PV_ALL = 1 << 0,
    PV_REPL_SLAVE = 1 << 1,
    PV_REPL_CLIENT = 1 << 2, /* REPLICATION CLIENT, BINLOG MONITOR (its MariaDB 10.5 name) */
    PV_SUPER = 1 << 3,
    PV_SELECT = 1 << 4,
    PV_RELOAD = 1 << 5,
    PV_INSERT = 1 << 6,
};

typedef struct pv_set {
    unsigned global;  /* ON *.* */
    unsigned any;     /* on anything (a database, a table, a column) */
    bool roles;       /* a GRANT <role> TO line */
} pv_set;

static unsigned pv_bit(const char *s, size_t n)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"ALL", PV_ALL}, {"ALL PRIVILEGES", PV_ALL}, {"REPLICATION SLAVE", PV_REPL_SLAVE},
        {"REPLICATION REPLICA", PV_REPL_SLAVE}, {"REPLICATION CLIENT", PV_REPL_CLIENT},
        {"BINLOG MONITOR", PV_REPL_CLIENT}, {"SUPER", PV_SUPER}, {"SELECT", PV_SELECT},
        {"RELOAD", PV_RELOAD}, {"INSERT", PV_INSERT},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i].name) == n && strncasecmp(names[i].name, s, n) == 0)
            return names[i].bit;
    return 0;
}

/* Offset of `word` (e.g. " ON ") in s at bracket depth 0 and outside quotes,
 * or -1. */
static long find_word(const char *s, const char *word)
{
    size_t wl = strlen(word);
    int depth = 0;
    char q = 0;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (q) {
            if (c == q)
                q = 0;
            continue;
        }
        if (c == '`' || c == '\'' || c == '"')
            q = c;
        else if (c == '(')
            depth++;
        else if (c == ')' && depth > 0)
            depth--;
        else if (depth == 0 && strncasecmp(s + i, word, wl) == 0)
            return (long)i;
    }
    return -1;
}

static void pv_add_line(pv_set *pv, const char *g)
{
    if (strncasecmp(g, "GRANT ", 6) != 0)
        return;
    const char *privs = g + 6;
    long on = find_word(privs, " ON ");
    if (on < 0) {
        if (find_word(privs, " TO ") >= 0)
            pv->roles = true; /* GRANT `role` TO `user`@`host` */
        return;
    }
    const char *scope = privs + on + 4;
    while (*scope == ' ')
        scope++;
    if (strncasecmp(scope, "PROCEDURE ", 10) == 0 || strncasecmp(scope, "FUNCTION ", 9) == 0 ||
        strncasecmp(scope, "PACKAGE ", 8) == 0 || strncasecmp(privs, "PROXY", 5) == 0)
        return;
    if (strncasecmp(scope, "TABLE ", 6) == 0)
        scope += 6;
    bool global = strncmp(scope, "*.* ", 4) == 0 || strcmp(scope, "*.*") == 0;
    /* the privilege list: split at depth-0 commas, drop column lists */
    const char *p = privs, *end = privs + on;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *s = p;
        int depth = 0;
        while (p < end && (depth > 0 || *p != ',')) {
            if (*p == '(')
                depth++;
            else if (*p == ')' && depth > 0)
                depth--;
            p++;
        }
        const char *e = p;
        const char *paren = memchr(s, '(', (size_t)(e - s));
        if (paren)
            e = paren;
        while (e > s && e[-1] == ' ')
            e--;
        unsigned bit = pv_bit(s, (size_t)(e - s));
        pv->any |= bit;
        if (global)
            pv->global |= bit;
    }
}

static bool pv_has(const pv_set *pv, unsigned bits, bool global)
{
    unsigned have = global ? pv->global : pv->any | pv->global;
    return (have & (bits | PV_ALL)) != 0;
}

/* ============================================================ judging */

typedef struct judge {
    const char *label;
    bool quiet;
    tb_buf *lines;
    size_t problems;
    char first[TB_ERROR_MSG_MAX];
} judge;

static void say(judge *j, bool problem, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(judge *j, bool problem, const char *fmt, ...)
{
    char line[TB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!j->quiet) {
        if (problem)
            TB_ERROR("source", "%s: %s", j->label, line);
        else
            TB_WARN("source", "%s: %s", j->label, line);
    }
    if (j->lines)
        tb_buf_printf(j->lines, "%s %s\n", problem ? "ERROR" : "WARN", line);
    if (problem && j->problems++ == 0)
        snprintf(j->first, sizeof j->first, "%s", line);
}

static bool is_on(const char *v)
{
    return v && (strcasecmp(v, "ON") == 0 || strcmp(v, "1") == 0);
}

/* 'name'@'host' from "name@host" (the user name may hold an @: split at the last); NULL when
 * out of memory. The caller frees it. */
static char *quote_user(const char *user)
{
    const char *at = user ? strrchr(user, '@') : NULL;
    char *out = NULL;
    int n = at ? asprintf(&out, "'%.*s'@'%s'", (int)(at - user), user, at + 1)
               : asprintf(&out, "'%s'", user ? user : "?");
    return n < 0 ? NULL : out;
}

static void need_priv(judge *j, const pv_set *pv, const char *who, unsigned bits, bool global, const char *name,
                      const char *why, bool only_warn)
{
    if (pv_has(pv, bits, global))
        return;
    bool problem = !only_warn && !pv->roles;
    say(j, problem, "user %s lacks the %s privilege%s, needed to %s (not in SHOW GRANTS%s): run GRANT %s ON %s TO %s",
        who, name, global ? " on *.*" : "", why, pv->roles ? "; it may come from one of the user's roles" : "", name,
        global ? "*.*" : "*.* (or on the captured databases)", who);
}

tb_code bl_preflight_judge(const bl_preflight_in *in, const bl_preflight_opts *o, const char *label, bool quiet,
                           tb_buf *lines, tb_error *err)
{
    judge j = {.label = label, .quiet = quiet, .lines = lines};
    const char *opts = "the server's [mysqld] options (my.cnf)";
    if (!is_on(in->log_bin))
        say(&j, true,
            "log_bin is %s, needs ON (the server writes no binary log, so there are no changes to read): "
            "add log_bin=mysql-bin to %s and restart the server (log_bin cannot be changed at run time)",
            in->log_bin ? in->log_bin : "not reported", opts);
    if (!in->binlog_format || strcasecmp(in->binlog_format, "ROW") != 0)
        say(&j, true,
            "binlog_format is %s, needs ROW (in other formats row changes are logged as SQL statements, which "
            "are not captured and would be lost): run SET GLOBAL binlog_format=ROW and put binlog_format=ROW in %s; "
            "sessions opened before keep their format until they reconnect",
            in->binlog_format ? in->binlog_format : "not reported", opts);
    if (in->binlog_row_image && strcasecmp(in->binlog_row_image, "FULL") != 0)
        say(&j, !o->row_image_warn,
            "binlog_row_image is %s, needs FULL (a partial row image leaves columns out of the before and after "
            "images%s): run SET GLOBAL binlog_row_image=FULL and put binlog_row_image=FULL in %s",
            in->binlog_row_image,
            o->row_image_warn ? "; accepted because source.row.image.policy=warn"
                              : "; source.row.image.policy=warn accepts that",
            opts);
    if (!in->binlog_row_metadata || strcasecmp(in->binlog_row_metadata, "FULL") != 0)
        say(&j, false,
            "binlog_row_metadata is %s, FULL is recommended (without it column names and keys are read from "
            "information_schema when a table is first seen, and a DDL in between can shift them): run SET GLOBAL "
            "binlog_row_metadata=FULL and put binlog_row_metadata=FULL in %s",
            in->binlog_row_metadata ? in->binlog_row_metadata : "not available on this server", opts);
    if (in->grants) {
        pv_set pv = {0};
        for (size_t i = 0; i < in->ngrants; i++)
            if (in->grants[i])
                pv_add_line(&pv, in->grants[i]);
        char *who_text = quote_user(in->user);
        const char *who = who_text ? who_text : "the connector's user";
        need_priv(&j, &pv, who, PV_REPL_SLAVE, true, "REPLICATION SLAVE", "read the binlog", false);
        bool monitor = in->mariadb && in->version >= 100500;
        need_priv(&j, &pv, who, PV_REPL_CLIENT | PV_SUPER, true, monitor ? "BINLOG MONITOR" : "REPLICATION CLIENT",
                  "read the binlog position (SHOW MASTER STATUS)", false);
        if (o->snapshot)
            need_priv(&j, &pv, who, PV_SELECT, false, "SELECT", "snapshot the tables (snapshot.mode is not never)",
                      false);
        if (o->snapshot && o->lock_minimal && !in->mariadb)
            need_priv(&j, &pv, who, PV_RELOAD, true, "RELOAD",
                      "take the snapshot's brief lock (FLUSH TABLES WITH READ LOCK; or set snapshot.locking.mode=none)",
                      false);
        if (o->chunked)
            need_priv(&j, &pv, who, PV_INSERT, false, "INSERT",
                      "write the watermark rows of the chunked initial snapshot (snapshot.initial.method=chunked; "
                      "or set it to consistent) to <db>.tributary_signal",
                      false);
        else
            need_priv(&j, &pv, who, PV_INSERT, false, "INSERT",
                      "write the watermark rows of an incremental snapshot to <db>.tributary_signal", true);
        free(who_text);
    }
    if (j.problems == 0)
        return TB_OK;
    if (j.problems == 1)
        return tb_error_set(err, TB_ERR_CONFIG, false, "source %s: %s", label, j.first);
    return tb_error_set(err, TB_ERR_CONFIG, false, "source %s: %s (and %zu more problems, each logged above)", label,
                        j.first, j.problems - 1);
}

/* ============================================================ reading */

typedef struct rows {
    char **v;
    size_t n;
} rows;

static void rows_free(rows *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i]);
    free(r->v);
    r->v = NULL;
    r->n = 0;
}

/* Column col of every row of q (NULL values as ""). */
static tb_code query_col(MYSQL *m, const char *q, unsigned col, rows *out, tb_error *err)
{
    if (mysql_query(m, q) != 0)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: %s", q, mysql_error(m));
    MYSQL_RES *r = mysql_store_result(m);
    if (!r)
        return tb_error_set(err, TB_ERR_SOURCE, true, "%s: %s", q, mysql_error(m));
    tb_code rc = TB_OK;
    size_t n = (size_t)mysql_num_rows(r);
    out->v = calloc(n ? n : 1, sizeof(char *));
    if (!out->v)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    for (MYSQL_ROW row; rc == TB_OK && mysql_num_fields(r) > col && (row = mysql_fetch_row(r));) {
        if (!(out->v[out->n] = strdup(row[col] ? row[col] : "")))
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        else
            out->n++;
    }
    mysql_free_result(r);
    return rc;
}

tb_code bl_preflight_conn(MYSQL *m, const bl_preflight_opts *o, const char *label, bool quiet, tb_error *err)
{
    rows names = {0}, vals = {0}, user = {0}, grants = {0};
    bl_preflight_in in;
    memset(&in, 0, sizeof in);
    in.mariadb = myconn_is_mariadb(m);
    in.version = mysql_get_server_version(m);
    const char *q = "SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                    "('log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata')";
    tb_code rc = query_col(m, q, 0, &names, err);
    if (rc == TB_OK)
        rc = query_col(m, q, 1, &vals, err);
    if (rc != TB_OK) {
        tb_error_prefix(err, rc, "source %s: reading the binlog settings: ", label);
        goto out;
    }
    for (size_t i = 0; i < names.n && i < vals.n; i++) {
        const char *n = names.v[i], *v = vals.v[i];
        if (strcasecmp(n, "log_bin") == 0)
            in.log_bin = v;
        else if (strcasecmp(n, "binlog_format") == 0)
            in.binlog_format = v;
        else if (strcasecmp(n, "binlog_row_image") == 0)
            in.binlog_row_image = v;
        else if (strcasecmp(n, "binlog_row_metadata") == 0)
            in.binlog_row_metadata = v;
    }
    tb_error gerr;
    tb_error_clear(&gerr);
    if (query_col(m, "SELECT CURRENT_USER()", 0, &user, &gerr) == TB_OK && user.n == 1 &&
        query_col(m, "SHOW GRANTS", 0, &grants, &gerr) == TB_OK) {
        in.user = user.v[0];
        in.grants = (const char *const *)grants.v;
        in.ngrants = grants.n;
    } else if (gerr.code == TB_ERR_NOMEM) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    } else if (!quiet) {
        TB_WARN("source", "%s: the user's grants cannot be read, so they are not checked: %s", label, gerr.msg);
    }
    rc = bl_preflight_judge(&in, o, label, quiet, NULL, err);
out:
    rows_free(&names);
    rows_free(&vals);
    rows_free(&user);
    rows_free(&grants);
    return rc;
}

/* ============================================================ public */

tb_code binlog_preflight(const cfg *c, tb_error *err)
{
    myconn *mc = NULL;
    MYSQL *m = NULL;
    tb_code rc = myconn_new(c, &mc, err);
    if (rc != TB_OK)
        return rc;
    char label[300];
    snprintf(label, sizeof label, "%s:%u", myconn_host(mc), myconn_port(mc));
    myconn_opts co = myconn_catalog_opts(mc, "preflight");
    if ((rc = myconn_connect(mc, &co, &m, err)) != TB_OK)
        goto out;
    bl_preflight_opts o;
    bl_preflight_opts_from_cfg(c, &o);
    rc = bl_preflight_conn(m, &o, label, false, err);
    if (rc == TB_OK) { /* the catalog questions of the start (snap_sql_connect), then the binlog
                          * reader's schema lookups, take it */
        myconn_keep(mc, m);
        m = NULL;
    }
out:
    if (m)
        mysql_close(m);
    myconn_free(mc);
    return rc;
}
