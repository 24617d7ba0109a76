/*
 * binlog_gtid: executed GTID sets, MySQL and MariaDB flavours.
 *
 * MySQL: uuid -> (tag -> sorted disjoint intervals [start, end)); text form
 *   "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:mytag:1-2,uuid2:7" (untagged
 *   intervals first, then each tag; end shown inclusive).
 * MariaDB: domain -> last (server, seq); text form "0-1-7,1-2-3" by domain.
 */
#include "binlog_int.h"
#include "tb_num.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gt_ival {
    int64_t start, end;
} gt_ival;

typedef struct gt_sid {
    uint8_t uuid[16];
    char tag[40];
    gt_ival *iv;
    size_t n, cap;
} gt_sid;

typedef struct gt_dom {
    uint32_t domain, server;
    uint64_t seq;
} gt_dom;

struct bl_gtids {
    gt_sid *sids;
    size_t nsids;
    gt_dom *doms;
    size_t ndoms;
};

bl_gtids *bl_gtids_new(void)
{
    return calloc(1, sizeof(bl_gtids));
}

void bl_gtids_clear(bl_gtids *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nsids; i++)
        free(g->sids[i].iv);
    free(g->sids);
    free(g->doms);
    memset(g, 0, sizeof(*g));
}

void bl_gtids_free(bl_gtids *g)
{
    bl_gtids_clear(g);
    free(g);
}

bool bl_gtids_empty(const bl_gtids *g)
{
    return g->nsids == 0 && g->ndoms == 0;
}

static int sid_cmp(const gt_sid *a, const uint8_t *uuid, const char *tag)
{
    int c = memcmp(a->uuid, uuid, 16);
    return c ? c : strcmp(a->tag, tag);
}

tb_code bl_gtids_add_mysql(bl_gtids *g, const uint8_t uuid[16], const char *tag, int64_t start, int64_t end)
{
    if (end <= start || strlen(tag) >= sizeof(g->sids[0].tag))
        return TB_ERR_INVALID;
    size_t i = 0;
    while (i < g->nsids && sid_cmp(&g->sids[i], uuid, tag) < 0)
        i++;
    if (i == g->nsids || sid_cmp(&g->sids[i], uuid, tag) != 0) {
        gt_sid *s = realloc(g->sids, (g->nsids + 1) * sizeof(*s));
        if (!s)
            return TB_ERR_NOMEM;
        g->sids = s;
        memmove(&s[i + 1], &s[i], (g->nsids - i) * sizeof(*s));
        memset(&s[i], 0, sizeof(*s));
        memcpy(s[i].uuid, uuid, 16);
        strcpy(s[i].tag, tag);
        g->nsids++;
    }
    gt_sid *s = &g->sids[i];
    /* fast path: extends the last interval */
    if (s->n && s->iv[s->n - 1].end == start) {
        s->iv[s->n - 1].end = end;
        return TB_OK;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        gt_ival *iv = realloc(s->iv, cap * sizeof(*iv));
        if (!iv)
            return TB_ERR_NOMEM;
        s->iv = iv;
        s->cap = cap;
    }
    size_t k = 0;
    while (k < s->n && s->iv[k].start < start)
        k++;
    memmove(&s->iv[k + 1], &s->iv[k], (s->n - k) * sizeof(gt_ival));
    s->iv[k].start = start;
    s->iv[k].end = end;
    s->n++;
    /* merge overlaps */
    size_t o = 0;
    for (size_t r = 1; r < s->n; r++) {
        if (s->iv[r].start <= s->iv[o].end) {
            if (s->iv[r].end > s->iv[o].end)
                s->iv[o].end = s->iv[r].end;
        } else {
            s->iv[++o] = s->iv[r];
        }
    }
    s->n = o + 1;
    return TB_OK;
}

bool bl_gtids_mariadb_seq(const bl_gtids *g, uint32_t domain, uint64_t *seq)
{
    for (size_t i = 0; i < g->ndoms; i++)
        if (g->doms[i].domain == domain) {
            *seq = g->doms[i].seq;
            return true;
        }
    return false;
}

tb_code bl_gtids_set_mariadb(bl_gtids *g, uint32_t domain, uint32_t server, uint64_t seq)
{
    size_t i = 0;
    while (i < g->ndoms && g->doms[i].domain < domain)
        i++;
    if (i == g->ndoms || g->doms[i].domain != domain) {
        gt_dom *d = realloc(g->doms, (g->ndoms + 1) * sizeof(*d));
        if (!d)
            return TB_ERR_NOMEM;
        g->doms = d;
        memmove(&d[i + 1], &d[i], (g->ndoms - i) * sizeof(*d));
        g->ndoms++;
    }
    g->doms[i].domain = domain;
    g->doms[i].server = server;
    g->doms[i].seq = seq;
    return TB_OK;
}

static void uuid_text(const uint8_t *u, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[u[i] >> 4];
        out[o++] = hex[u[i] & 15];
    }
    out[o] = '\0';
}

static tb_code format_set(const bl_gtids *g, bool mariadb, tb_buf *out);

tb_code bl_gtids_format(const bl_gtids *g, bool mariadb, tb_buf *out)
{
    tb_code rc = tb_buf_reserve(out, 1);
    if (rc == TB_OK)
        rc = format_set(g, mariadb, out);
    if (rc == TB_OK)
        out->data[out->len] = '\0'; /* also when nothing was written */
    return rc;
}

static tb_code format_set(const bl_gtids *g, bool mariadb, tb_buf *out)
{
    tb_code rc = TB_OK;
    if (mariadb) {
        for (size_t i = 0; i < g->ndoms && rc == TB_OK; i++)
            rc = tb_buf_printf(out, "%s%u-%u-%llu", i ? "," : "", g->doms[i].domain, g->doms[i].server,
                               (unsigned long long)g->doms[i].seq);
        return rc;
    }
    for (size_t i = 0; i < g->nsids && rc == TB_OK; i++) {
        const gt_sid *s = &g->sids[i];
        bool same = i > 0 && memcmp(g->sids[i - 1].uuid, s->uuid, 16) == 0;
        if (!same) {
            char u[37];
            uuid_text(s->uuid, u);
            rc = tb_buf_printf(out, "%s%s", i ? "," : "", u);
        }
        if (rc == TB_OK && s->tag[0])
            rc = tb_buf_printf(out, ":%s", s->tag);
        for (size_t k = 0; k < s->n && rc == TB_OK; k++) {
            if (s->iv[k].end - 1 == s->iv[k].start)
                rc = tb_buf_printf(out, ":%lld", (long long)s->iv[k].start);
            else
                rc = tb_buf_printf(out, ":%lld-%lld", (long long)s->iv[k].start, (long long)s->iv[k].end - 1);
        }
    }
    return rc;
}

static bool parse_uuid(const char *s, size_t n, uint8_t out[16])
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-')
            continue;
        if (k >= 32 || !isxdigit((unsigned char)s[i]))
            return false;
        int v = isdigit((unsigned char)s[i]) ? s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10);
        if (k % 2 == 0)
            out[k / 2] = (uint8_t)(v << 4);
        else
            out[k / 2] |= (uint8_t)v;
        k++;
    }
    return k == 32;
}

/* "domain-server-seq", each part decimal digits only (tb_parse_u64_n): "0-1-7xyz" and "0-1--5"
 * are refused, not read as 0-1-7 and 0-1-18446744073709551611. */
static bool parse_mariadb_gtid(const char *item, uint64_t *d, uint64_t *s, uint64_t *q)
{
    const char *a = strchr(item, '-');
    const char *b = a ? strchr(a + 1, '-') : NULL;
    if (!a || !b)
        return false;
    return tb_parse_u64_n(item, (size_t)(a - item), UINT32_MAX, d) &&
           tb_parse_u64_n(a + 1, (size_t)(b - a - 1), UINT32_MAX, s) && tb_parse_u64(b + 1, UINT64_MAX, q);
}

/* "N" or "N-M" of a MySQL GTID set: 1 <= N <= M, and M + 1 (the exclusive end kept in a
 * gt_ival) still fits an int64_t: MySQL's largest GNO is 2^63 - 2. */
static bool parse_mysql_interval(const char *part, int64_t *a, int64_t *b)
{
    const uint64_t max = (uint64_t)BL_GNO_MAX;
    const char *dash = strchr(part, '-');
    uint64_t x, y;
    if (dash) {
        if (!tb_parse_u64_n(part, (size_t)(dash - part), max, &x) || !tb_parse_u64(dash + 1, max, &y))
            return false;
    } else {
        if (!tb_parse_u64(part, max, &x))
            return false;
        y = x;
    }
    if (x < 1 || y < x)
        return false;
    *a = (int64_t)x;
    *b = (int64_t)y;
    return true;
}

tb_code bl_gtids_parse(bl_gtids *g, const char *text, bool mariadb, tb_error *err)
{
    bl_gtids_clear(g);
    if (!text)
        return TB_OK;
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = TB_OK;
    for (char *item = strtok_r(copy, ",", &save); item && rc == TB_OK; item = strtok_r(NULL, ",", &save)) {
        /* Servers break long sets into lines (SHOW BINLOG EVENTS, gtid_executed): white space
         * around an item is not part of it; inside one, it is an error. */
        while (isspace((unsigned char)*item))
            item++;
        for (size_t n = strlen(item); n > 0 && isspace((unsigned char)item[n - 1]); n--)
            item[n - 1] = '\0';
        if (!*item)
            continue;
        if (mariadb) {
            uint64_t d, s, q;
            if (!parse_mariadb_gtid(item, &d, &s, &q))
                rc = tb_error_set(err, TB_ERR_CONFIG, false,
                                  "bad MariaDB GTID '%s' (want domain-server-seq: three decimal numbers, "
                                  "domain and server below 2^32)",
                                  item);
            else
                rc = bl_gtids_set_mariadb(g, (uint32_t)d, (uint32_t)s, q);
            continue;
        }
        char *save2 = NULL;
        char *part = strtok_r(item, ":", &save2);
        uint8_t uuid[16];
        if (!part || !parse_uuid(part, strlen(part), uuid)) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "bad MySQL GTID set item '%s' (want uuid:1-5)", item);
            break;
        }
        char tag[40] = "";
        while ((part = strtok_r(NULL, ":", &save2)) && rc == TB_OK) {
            if (isalpha((unsigned char)part[0]) || part[0] == '_') {
                if (strlen(part) >= sizeof(tag)) {
                    rc = tb_error_set(err, TB_ERR_CONFIG, false, "GTID tag too long: '%s'", part);
                    break;
                }
                strcpy(tag, part);
                continue;
            }
            int64_t a, b;
            if (!parse_mysql_interval(part, &a, &b))
                rc = tb_error_set(err, TB_ERR_CONFIG, false,
                                  "bad GTID interval '%s' in '%s' (want N or N-M: decimal numbers, "
                                  "1 <= N <= M < 2^63-1)",
                                  part, text);
            else if (bl_gtids_add_mysql(g, uuid, tag, a, b + 1) != TB_OK)
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        }
    }
    free(copy);
    return rc;
}

static const gt_sid *sid_find(const bl_gtids *g, const uint8_t *uuid, const char *tag)
{
    for (size_t i = 0; i < g->nsids; i++)
        if (sid_cmp(&g->sids[i], uuid, tag) == 0)
            return &g->sids[i];
    return NULL;
}

/* The interval of s holding [start, end) whole, or NULL (intervals are
 * sorted, disjoint and merged, so one interval must hold it). */
static const gt_ival *ival_cover(const gt_sid *s, int64_t start, int64_t end)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) { /* first interval whose end is past start */
        size_t mid = lo + (hi - lo) / 2;
        if (s->iv[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->iv[lo].start <= start && end <= s->iv[lo].end ? &s->iv[lo] : NULL;
}

bool bl_gtids_contains_mysql(const bl_gtids *g, const uint8_t uuid[16], const char *tag, int64_t gno)
{
    const gt_sid *s = g ? sid_find(g, uuid, tag) : NULL;
    return s && ival_cover(s, gno, gno + 1);
}

bool bl_gtids_subset_mysql(const bl_gtids *a, const bl_gtids *b)
{
    for (size_t i = 0; i < a->nsids; i++) {
        const gt_sid *sa = &a->sids[i], *sb = sid_find(b, sa->uuid, sa->tag);
        for (size_t k = 0; k < sa->n; k++)
            if (!sb || !ival_cover(sb, sa->iv[k].start, sa->iv[k].end))
                return false;
    }
    return true;
}

int binlog_gtid_covers(const char *have, const char *want, bool mariadb)
{
    bl_gtids *h = bl_gtids_new(), *w = bl_gtids_new();
    tb_error e;
    int r = -1;
    if (h && w && have && want && bl_gtids_parse(h, have, mariadb, &e) == TB_OK &&
        bl_gtids_parse(w, want, mariadb, &e) == TB_OK) {
        r = 1;
        if (!mariadb)
            r = bl_gtids_subset_mysql(w, h);
        for (size_t i = 0; mariadb && i < w->ndoms; i++) {
            uint64_t seq;
            if (!bl_gtids_mariadb_seq(h, w->doms[i].domain, &seq) || seq < w->doms[i].seq)
                r = 0;
        }
    }
    bl_gtids_free(h);
    bl_gtids_free(w);
    return r;
}

tb_code bl_gtid_start_file(const char *const *files, const char *const *previous, size_t n, const char *start,
                           size_t *pick, tb_error *err)
{
    tb_code rc = TB_OK;
    bl_gtids *want = bl_gtids_new(), *prev = bl_gtids_new();
    if (!want || !prev) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if ((rc = bl_gtids_parse(want, start, false, err)) != TB_OK)
        goto out;
    for (size_t i = n; i-- > 0;) {
        if ((rc = bl_gtids_parse(prev, previous[i], false, err)) != TB_OK) {
            rc = tb_error_prefix(err, TB_ERR_SOURCE, "binlog %s: Previous_gtids: ", files[i]);
            goto out;
        }
        if (bl_gtids_subset_mysql(prev, want)) {
            *pick = i;
            goto out;
        }
    }
    if (n == 0)
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "GTID set %s: the server lists no binlog", start);
    else
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false,
                          "GTID set %s: even the oldest binlog, %s, comes after transactions the set lacks "
                          "(purged from the server)",
                          start, files[0]);
out:
    bl_gtids_free(want);
    bl_gtids_free(prev);
    return rc;
}

/* ------------------------------------------------------------ MariaDB compression */
#include <zlib.h>

tb_code bl_unzip_mariadb(const uint8_t *p, size_t len, tb_buf *out)
{
    tb_buf_reset(out);
    if (len < 1 || (p[0] & 0x80) == 0)
        return TB_ERR_CORRUPT;
    unsigned n = p[0] & 0x07;
    if (n < 1 || n > 4 || len < 1 + n)
        return TB_ERR_CORRUPT;
    uint64_t ulen = 0;
    for (unsigned i = 0; i < n; i++)
        ulen = (ulen << 8) | p[1 + i];
    if (ulen > ((uint64_t)1 << 30))
        return TB_ERR_CORRUPT;
    tb_code rc = tb_buf_reserve(out, (size_t)ulen + 1);
    if (rc != TB_OK)
        return rc;
    uLongf dlen = (uLongf)ulen;
    if (uncompress((Bytef *)out->data, &dlen, p + 1 + n, (uLong)(len - 1 - n)) != Z_OK || dlen != ulen)
        return TB_ERR_CORRUPT;
    out->len = (size_t)dlen;
    out->data[out->len] = '\0';
    return TB_OK;
}
