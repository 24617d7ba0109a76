/*
 * binlog_ref: the comparator between mariadb-binlog -vv output and our
 * decoded events (tests only). mariadb-binlog prints each row as
 *   ### INSERT INTO `db`.`t` / ### UPDATE `db`.`t` / ### DELETE FROM `db`.`t`
 *   ### WHERE (before image) / ### SET (after image)
 *   ###   @N=value, then a comment with TYPE meta=... nullable=... is_null=...
 * Values: integers signed (with "(unsigned)" in parentheses when negative),
 * DECIMAL as text, FLOAT/DOUBLE %g-like, strings quoted with bytes < 0x20 as
 * \xNN, DATE 'YYYY:MM:DD', DATETIME 'YYYY-MM-DD hh:mm:ss', TIMESTAMP as epoch
 * seconds, ENUM as the index, SET and BIT as b'0101...', YEAR as a number.
 */
#include "binlog_ref.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evt_json.h"
#include "evt_mysql.h"

static char *dup_between(const char *s, char a, char b)
{
    const char *p = strchr(s, a);
    if (!p)
        return strdup("");
    const char *q = strchr(p + 1, b);
    if (!q)
        return strdup(p + 1);
    return strndup(p + 1, (size_t)(q - p - 1));
}

static void add_val(ref_row *r, int img, int col, const char *text)
{
    r->img[img] = realloc(r->img[img], (r->nimg[img] + 1) * sizeof(ref_val));
    ref_val *v = &r->img[img][r->nimg[img]++];
    v->col = col;
    v->text = text ? strdup(text) : NULL;
}

/* Remove dir and the files in it (LOAD DATA temporaries of mariadb-binlog). */
static void rm_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        char p[4096];
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

bool ref_run(const char *path, ref_rows *out)
{
    memset(out, 0, sizeof(*out));
    /* binlogs with LOAD DATA events make mariadb-binlog write SQL_LOAD_MB-*
     * files; keep them in a directory of our own instead of /tmp */
    const char *tmp = getenv("TMPDIR");
    char load_dir[4096];
    snprintf(load_dir, sizeof(load_dir), "%s/tb-binlog-ref.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(load_dir))
        return false;
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "mariadb-binlog --no-defaults -vv --base64-output=decode-rows --print-table-metadata --local-load='%s' "
             "'%s' 2>/dev/null",
             load_dir, path);
    FILE *f = popen(cmd, "r");
    if (!f) {
        rm_flat_dir(load_dir);
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int img = 1;
    size_t cap_rows = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (strncmp(line, "### ", 4) != 0)
            continue;
        const char *l = line + 4;
        char op = 0;
        if (strncmp(l, "INSERT INTO ", 12) == 0) op = 'c';
        else if (strncmp(l, "UPDATE ", 7) == 0) op = 'u';
        else if (strncmp(l, "DELETE FROM ", 12) == 0) op = 'd';
        if (op) {
            if (out->n == cap_rows) {
                cap_rows = cap_rows ? cap_rows * 2 : 64;
                out->rows = realloc(out->rows, cap_rows * sizeof(ref_row));
            }
            ref_row *r = &out->rows[out->n++];
            memset(r, 0, sizeof(*r));
            r->op = op;
            const char *name = strchr(l, '`');
            r->db = dup_between(name, '`', '`');
            const char *dot = strstr(name, "`.`");
            r->table = dot ? dup_between(dot + 2, '`', '`') : strdup("");
            img = op == 'c' ? 1 : 0;
            continue;
        }
        if (strcmp(l, "WHERE") == 0) { img = 0; continue; }
        if (strcmp(l, "SET") == 0) { img = 1; continue; }
        if (strncmp(l, "  @", 3) == 0 && out->n > 0) {
            int col = atoi(l + 3);
            const char *eq = strchr(l, '=');
            if (!eq)
                continue;
            char *val = strdup(eq + 1);
            char *c = strstr(val, " /* ");
            char *last = NULL;
            while (c) {
                last = c;
                c = strstr(c + 1, " /* ");
            }
            if (last)
                *last = '\0';
            size_t vl = strlen(val);
            while (vl > 0 && val[vl - 1] == ' ')
                val[--vl] = '\0';
            add_val(&out->rows[out->n - 1], img, col, strcmp(val, "NULL") == 0 ? NULL : val);
            free(val);
        }
    }
    free(line);
    int st = pclose(f);
    out->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    rm_flat_dir(load_dir);
    return true;
}

void ref_free(ref_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        for (int k = 0; k < 2; k++) {
            for (size_t j = 0; j < r->rows[i].nimg[k]; j++)
                free(r->rows[i].img[k][j].text);
            free(r->rows[i].img[k]);
        }
        free(r->rows[i].db);
        free(r->rows[i].table);
    }
    free(r->rows);
    memset(r, 0, sizeof(*r));
}

/* Unquote 'text' with \xNN escapes (NN < 0x20). */
static size_t unquote(const char *t, char *out)
{
    size_t n = strlen(t), o = 0;
    if (n >= 2 && t[0] == '\'' && t[n - 1] == '\'') {
        t++;
        n -= 2;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '\\' && i + 3 < n + 1 && i + 3 <= n && t[i + 1] == 'x' && isxdigit((unsigned char)t[i + 2]) &&
            isxdigit((unsigned char)t[i + 3])) {
            char hex[3] = {t[i + 2], t[i + 3], 0};
            long v = strtol(hex, NULL, 16);
            if (v < 0x20) {
                out[o++] = (char)v;
                i += 3;
                continue;
            }
        }
        out[o++] = t[i];
    }
    out[o] = '\0';
    return o;
}

static int64_t epoch_of(const evt_temporal *t)
{
    /* days from civil */
    int64_t y = t->year, m = t->month, d = t->day;
    if (y == 0 && m == 0 && d == 0)
        return 0;
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + t->hour * 3600 + t->minute * 60 + t->second;
}

static bool bits_value(const char *t, uint64_t *v)
{
    if (strncmp(t, "b'", 2) != 0)
        return false;
    *v = 0;
    for (const char *p = t + 2; *p && *p != '\''; p++)
        *v = (*v << 1) | (uint64_t)(*p == '1');
    return true;
}

static bool value_match(const evt_value *v, const evt_column *col, const char *t, tb_buf *why)
{
    char buf[128];
    if (!t)
        return v->kind == EVT_V_NULL;
    switch (v->kind) {
    case EVT_V_INT: {
        long long x = strtoll(t, NULL, 10);
        if (col->type == EVT_T_YEAR) /* stored 0 ('0000') is printed as 1900 + 0 by the reference */
            return x == v->v.i || (x == 1900 && v->v.i == 0);
        return x == v->v.i;
    }
    case EVT_V_UINT: {
        uint64_t b;
        if (bits_value(t, &b))
            return b == v->v.u;
        const char *par = strchr(t, '(');
        unsigned long long x = par ? strtoull(par + 1, NULL, 10) : strtoull(t, NULL, 10);
        if (!par && t[0] == '-')
            return false;
        return x == v->v.u;
    }
    case EVT_V_BOOL: {
        uint64_t b;
        return bits_value(t, &b) && (b != 0) == v->v.b;
    }
    case EVT_V_FLOAT: case EVT_V_DOUBLE: {
        double x = strtod(t, NULL), y = v->kind == EVT_V_FLOAT ? v->v.f : v->v.d;
        return fabs(x - y) <= 1e-5 * fmax(fabs(x), fabs(y)) + 1e-300;
    }
    case EVT_V_DECIMAL:
        return strlen(t) == v->v.s.len && memcmp(t, v->v.s.ptr, v->v.s.len) == 0;
    case EVT_V_STRING: case EVT_V_BYTES: {
        if (col->type == EVT_T_ENUM && col->labels) { /* reference prints the index */
            long idx = strtol(t, NULL, 10);
            const char *want = idx >= 1 && (size_t)idx <= col->nlabels ? col->labels[idx - 1] : "";
            return strlen(want) == v->v.s.len && memcmp(want, v->v.s.ptr, v->v.s.len) == 0;
        }
        char *raw = malloc(strlen(t) + 1);
        size_t rl = unquote(t, raw);
        bool ok = rl == v->v.s.len && memcmp(raw, v->v.s.ptr, rl) == 0;
        if (!ok && col->type == EVT_T_BINARY && rl <= v->v.s.len && memcmp(raw, v->v.s.ptr, rl) == 0) {
            /* the binlog (and so the reference) drops BINARY(n)'s 0x00 padding; we restore it */
            ok = true;
            for (size_t k = rl; k < v->v.s.len; k++)
                ok = ok && v->v.s.ptr[k] == 0;
        }
        if (!ok && col->charset && evt_mysql_charset_kind(col->charset) != EVT_CS_UTF8) {
            tb_buf u;
            tb_buf_init(&u, 0);
            evt_mysql_conv *cv = evt_mysql_conv_new();
            evt_mysql_to_utf8(cv, col->charset, raw, rl, &u);
            ok = u.len == v->v.s.len && memcmp(u.data ? u.data : "", v->v.s.ptr, u.len) == 0;
            evt_mysql_conv_free(cv);
            tb_buf_free(&u);
        }
        free(raw);
        return ok;
    }
    case EVT_V_GEOMETRY: { /* printed as the stored bytes: SRID (4, little-endian) + WKB */
        char *raw = malloc(strlen(t) + 1);
        size_t rl = unquote(t, raw);
        uint8_t srid[4] = {(uint8_t)v->v.geo.srid, (uint8_t)(v->v.geo.srid >> 8), (uint8_t)(v->v.geo.srid >> 16),
                           (uint8_t)(v->v.geo.srid >> 24)};
        bool ok = rl == 4 + v->v.geo.len && memcmp(raw, srid, 4) == 0 && memcmp(raw + 4, v->v.geo.wkb, v->v.geo.len) == 0;
        free(raw);
        return ok;
    }
    case EVT_V_SET: {
        /* printed as the storage bytes (little-endian order), each byte MSB first */
        uint64_t b = 0;
        if (strncmp(t, "b'", 2) != 0 || !col->labels)
            return false;
        const char *bits = t + 2;
        size_t nbits = strcspn(bits, "'");
        for (size_t k = 0; k < nbits / 8 && k < 8; k++)
            for (size_t j = 0; j < 8; j++)
                b |= (uint64_t)(bits[8 * k + j] == '1') << (8 * k + 7 - j);
        size_t k = 0;
        for (size_t i = 0; i < col->nlabels && i < 64; i++) {
            if (!((b >> i) & 1))
                continue;
            if (k >= v->v.set.n || strcmp(col->labels[i], v->v.set.items[k]) != 0)
                return false;
            k++;
        }
        return k == v->v.set.n;
    }
    case EVT_V_TIMESTAMP: {
        double x = strtod(t, NULL);
        double y = (double)epoch_of(&v->v.t) + v->v.t.usec / 1e6;
        return fabs(x - y) < 1e-7;
    }
    case EVT_V_DATE: case EVT_V_DATETIME: case EVT_V_TIME: {
        size_t n = evt_fmt_temporal(v->kind, &v->v.t, buf);
        buf[n] = '\0';
        char *raw = malloc(strlen(t) + 1);
        unquote(t, raw);
        for (char *p = raw; *p; p++) {
            if (*p == ' ')
                *p = 'T';
            if (v->kind != EVT_V_TIME && *p == ':' && p - raw < 10)
                *p = '-';
        }
        bool ok = strcmp(raw, buf) == 0;
        if (!ok)
            tb_buf_printf(why, "[ours %s, theirs %s] ", buf, raw);
        free(raw);
        return ok;
    }
    default:
        return false;
    }
}

bool ref_match(const ref_row *ref, const evt_event *e, tb_buf *why)
{
    const evt_table *t = evt_event_table(e);
    if ((char)evt_event_op(e) != ref->op || strcmp(evt_table_db(t), ref->db) != 0 ||
        strcmp(evt_table_name(t), ref->table) != 0) {
        tb_buf_printf(why, "row is %c %s.%s, reference %c %s.%s", (char)evt_event_op(e), evt_table_db(t),
                      evt_table_name(t), ref->op, ref->db, ref->table);
        return false;
    }
    /* the flag that stops a run at a partial row image (binlog_row_image MINIMAL or NOBLOB): set
     * exactly when the reference prints fewer columns than the table has in an image */
    bool ref_partial = false;
    for (int img = 0; img < 2; img++)
        ref_partial |= evt_event_has_image(e, (evt_image)img) && ref->nimg[img] < evt_table_ncols(t);
    if (ref_partial != evt_event_partial(e)) {
        tb_buf_printf(why, "partial image flag %d, reference images of %zu and %zu of %zu columns",
                      (int)evt_event_partial(e), ref->nimg[0], ref->nimg[1], evt_table_ncols(t));
        return false;
    }
    for (int img = 0; img < 2; img++) {
        if (!evt_event_has_image(e, (evt_image)img)) {
            if (ref->nimg[img]) {
                tb_buf_printf(why, "image %d missing", img);
                return false;
            }
            continue;
        }
        size_t present = 0;
        for (size_t c = 0; c < evt_table_ncols(t); c++)
            present += evt_event_value(e, (evt_image)img, c)->kind != EVT_V_ABSENT;
        if (present != ref->nimg[img]) {
            tb_buf_printf(why, "image %d has %zu columns, reference %zu", img, present, ref->nimg[img]);
            return false;
        }
        for (size_t k = 0; k < ref->nimg[img]; k++) {
            const ref_val *rv = &ref->img[img][k];
            if (rv->col < 1 || (size_t)rv->col > evt_table_ncols(t)) {
                tb_buf_printf(why, "reference column @%d out of range", rv->col);
                return false;
            }
            const evt_value *v = evt_event_value(e, (evt_image)img, (size_t)rv->col - 1);
            const evt_column *col = evt_table_column(t, (size_t)rv->col - 1);
            if (!value_match(v, col, rv->text, why)) {
                tb_buf_printf(why, "image %d column @%d (%s, %s): reference %s, ours kind %d", img, rv->col,
                              col->name, col->source_type ? col->source_type : "?", rv->text ? rv->text : "NULL",
                              (int)v->kind);
                return false;
            }
        }
    }
    return true;
}
