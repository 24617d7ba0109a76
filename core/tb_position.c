#include "tb_position.h"
#include "tb_num.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void tb_position_init(tb_position *p) { memset(p, 0, sizeof(*p)); }

void tb_position_free(tb_position *p)
{
    if (!p)
        return;
    free(p->file);
    free(p->gtid_set);
    memset(p, 0, sizeof(*p));
}

static tb_code dup_str(char **dst, const char *src)
{
    char *copy = NULL;
    if (src) {
        copy = strdup(src);
        if (!copy)
            return TB_ERR_NOMEM;
    }
    free(*dst);
    *dst = copy;
    return TB_OK;
}

tb_code tb_position_set_file(tb_position *p, const char *file) { return dup_str(&p->file, file); }
tb_code tb_position_set_gtid(tb_position *p, const char *gtid) { return dup_str(&p->gtid_set, gtid); }

tb_code tb_position_copy(tb_position *dst, const tb_position *src)
{
    if (dst == src)
        return TB_OK;
    tb_position tmp = *src;
    tmp.file = NULL;
    tmp.gtid_set = NULL;
    if (dup_str(&tmp.file, src->file) != TB_OK || dup_str(&tmp.gtid_set, src->gtid_set) != TB_OK) {
        tb_position_free(&tmp);
        return TB_ERR_NOMEM;
    }
    tb_position_free(dst);
    *dst = tmp;
    return TB_OK;
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !*a)
        return !b || !*b;
    return b && strcmp(a, b) == 0;
}

bool tb_position_equal(const tb_position *a, const tb_position *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case TB_POS_NONE:
        return true;
    case TB_POS_MYSQL:
        return a->mariadb == b->mariadb && a->server_id == b->server_id && str_eq(a->file, b->file) &&
               a->pos == b->pos && a->row == b->row && str_eq(a->gtid_set, b->gtid_set);
    case TB_POS_SQLITE_WAL:
        return a->salt1 == b->salt1 && a->salt2 == b->salt2 && a->frame == b->frame &&
               a->cksum1 == b->cksum1 && a->cksum2 == b->cksum2 && a->db_pages == b->db_pages &&
               a->gen_seq == b->gen_seq && a->inode == b->inode;
    case TB_POS_SQLITE_LOG:
        return a->seq == b->seq;
    }
    return false;
}

static tb_code put_escaped(tb_buf *out, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        tb_code rc;
        if (*c == '%' || *c == ';' || *c == '=' || *c <= 0x20 || *c >= 0x7f)
            rc = tb_buf_printf(out, "%%%02X", *c);
        else
            rc = tb_buf_putc(out, (char)*c);
        if (rc != TB_OK)
            return rc;
    }
    return TB_OK;
}

tb_code tb_position_format(const tb_position *p, tb_buf *out)
{
    tb_code rc;
    switch (p->kind) {
    case TB_POS_NONE:
        return tb_buf_puts(out, "none");
    case TB_POS_MYSQL:
        rc = tb_buf_printf(out, "%s;server_id=%" PRIu32 ";file=", p->mariadb ? "mariadb" : "mysql",
                           p->server_id);
        if (rc == TB_OK)
            rc = put_escaped(out, p->file ? p->file : "");
        if (rc == TB_OK)
            rc = tb_buf_printf(out, ";pos=%" PRIu64 ";row=%" PRIu64 ";gtid=", p->pos, p->row);
        if (rc == TB_OK)
            rc = put_escaped(out, p->gtid_set ? p->gtid_set : "");
        return rc;
    case TB_POS_SQLITE_WAL:
        return tb_buf_printf(out,
                             "sqlite-wal;salt1=%" PRIu32 ";salt2=%" PRIu32 ";frame=%" PRIu32
                             ";cksum1=%" PRIu32 ";cksum2=%" PRIu32 ";db_pages=%" PRIu32
                             ";gen_seq=%" PRIu64 ";inode=%" PRIu64,
                             p->salt1, p->salt2, p->frame, p->cksum1, p->cksum2, p->db_pages,
                             p->gen_seq, p->inode);
    case TB_POS_SQLITE_LOG:
        return tb_buf_printf(out, "sqlite-log;seq=%" PRId64, p->seq);
    }
    return TB_ERR_INVALID;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode a percent-encoded value of length len into a new string. */
static char *unescape(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%') {
            if (i + 2 >= len) {
                free(out);
                return NULL;
            }
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0) {
                free(out);
                return NULL;
            }
            out[o++] = (char)(h << 4 | l);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}


tb_code tb_position_parse(const char *text, tb_position *p, tb_error *err)
{
    tb_position tmp;
    tb_position_init(&tmp);
    const char *semi = strchr(text, ';');
    size_t klen = semi ? (size_t)(semi - text) : strlen(text);
    if (klen == 4 && strncmp(text, "none", 4) == 0 && !semi) {
        tb_position_free(p);
        return TB_OK;
    } else if (klen == 5 && strncmp(text, "mysql", 5) == 0) {
        tmp.kind = TB_POS_MYSQL;
    } else if (klen == 7 && strncmp(text, "mariadb", 7) == 0) {
        tmp.kind = TB_POS_MYSQL;
        tmp.mariadb = true;
    } else if (klen == 10 && strncmp(text, "sqlite-wal", 10) == 0) {
        tmp.kind = TB_POS_SQLITE_WAL;
    } else if (klen == 10 && strncmp(text, "sqlite-log", 10) == 0) {
        tmp.kind = TB_POS_SQLITE_LOG;
    } else {
        return tb_error_set(err, TB_ERR_INVALID, false,
                            "position '%s': unknown kind (expected none, mysql, mariadb, sqlite-wal or sqlite-log)",
                            text);
    }
    const char *cur = semi;
    while (cur && *cur == ';') {
        cur++;
        const char *next = strchr(cur, ';');
        size_t len = next ? (size_t)(next - cur) : strlen(cur);
        const char *eq = memchr(cur, '=', len);
        if (!eq) {
            tb_position_free(&tmp);
            return tb_error_set(err, TB_ERR_INVALID, false, "position '%s': field '%.*s' has no '='",
                                text, (int)len, cur);
        }
        size_t nlen = (size_t)(eq - cur);
        char *val = unescape(eq + 1, len - nlen - 1);
        if (!val) {
            tb_position_free(&tmp);
            return tb_error_set(err, TB_ERR_INVALID, false, "position '%s': bad escape in field '%.*s'",
                                text, (int)nlen, cur);
        }
        bool ok = true;
        uint64_t v = 0;
#define FIELD(name) (nlen == sizeof(name) - 1 && strncmp(cur, name, nlen) == 0)
        if (tmp.kind == TB_POS_MYSQL && FIELD("server_id")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.server_id = (uint32_t)v;
        } else if (tmp.kind == TB_POS_MYSQL && FIELD("file")) {
            free(tmp.file);
            tmp.file = *val ? val : NULL;
            if (tmp.file)
                val = NULL;
        } else if (tmp.kind == TB_POS_MYSQL && FIELD("pos")) {
            ok = tb_parse_u64(val, UINT64_MAX, &tmp.pos);
        } else if (tmp.kind == TB_POS_MYSQL && FIELD("row")) {
            ok = tb_parse_u64(val, UINT64_MAX, &tmp.row);
        } else if (tmp.kind == TB_POS_MYSQL && FIELD("gtid")) {
            free(tmp.gtid_set);
            tmp.gtid_set = *val ? val : NULL;
            if (tmp.gtid_set)
                val = NULL;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("salt1")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.salt1 = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("salt2")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.salt2 = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("frame")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.frame = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("cksum1")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.cksum1 = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("cksum2")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.cksum2 = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("db_pages")) {
            ok = tb_parse_u64(val, UINT32_MAX, &v);
            tmp.db_pages = (uint32_t)v;
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("gen_seq")) {
            ok = tb_parse_u64(val, UINT64_MAX, &tmp.gen_seq);
        } else if (tmp.kind == TB_POS_SQLITE_WAL && FIELD("inode")) {
            ok = tb_parse_u64(val, UINT64_MAX, &tmp.inode);
        } else if (tmp.kind == TB_POS_SQLITE_LOG && FIELD("seq")) {
            ok = tb_parse_u64(val, INT64_MAX, &v);
            tmp.seq = (int64_t)v;
        } else {
            free(val);
            tb_position_free(&tmp);
            return tb_error_set(err, TB_ERR_INVALID, false, "position '%s': unknown field '%.*s'", text,
                                (int)nlen, cur);
        }
#undef FIELD
        free(val);
        if (!ok) {
            tb_position_free(&tmp);
            return tb_error_set(err, TB_ERR_INVALID, false,
                                "position '%s': field '%.*s' is not a number in range", text, (int)nlen, cur);
        }
        cur = next;
    }
    tb_position_free(p);
    *p = tmp;
    return TB_OK;
}
