/*
 * binlog_tmap: TABLE_MAP events -> column layout + evt_table descriptor.
 *
 * TABLE_MAP (type 19) body, after the 19-byte header:
 *   post-header: table_id  6 bytes LE (4 when the FDE's post-header length is 6)
 *                flags     2 bytes
 *   body:        db_len 1, db, 0x00, table_len 1, table, 0x00,
 *                column_count       lenenc
 *                column_types       column_count bytes (binlog type codes)
 *                metadata_len       lenenc, then per column 0, 1 or 2 bytes:
 *                  FLOAT/DOUBLE: 1 (size); BLOB/GEOMETRY/JSON/VECTOR: 1 (length bytes);
 *                  VARCHAR/VAR_STRING: 2 LE (max bytes); BIT: 2 (bits%8, bytes);
 *                  NEWDECIMAL: 2 (precision, scale); STRING/ENUM/SET: 2 (real type, length);
 *                  TIME2/DATETIME2/TIMESTAMP2: 1 (fsp)
 *                null_bitmap        (column_count + 7) / 8 bytes, bit i = column i nullable
 *                optional metadata  TLVs to the end: type 1 byte, length lenenc, value
 *   optional metadata types (MySQL 8 / MariaDB 10.5+ binlog_row_metadata):
 *    1 SIGNEDNESS      bitmap, MSB first, one bit per numeric column (1 = unsigned)
 *    2 DEFAULT_CHARSET default collation lenenc, then (char column index, collation) lenenc pairs
 *    3 COLUMN_CHARSET  collation lenenc per character column
 *    4 COLUMN_NAME     per column: length lenenc + name
 *    5 SET_STR_VALUE   per SET column: count lenenc, then (length lenenc + label) each
 *    6 ENUM_STR_VALUE  same for ENUM columns
 *    7 GEOMETRY_TYPE   lenenc per GEOMETRY column
 *    8 SIMPLE_PRIMARY_KEY       column index lenenc, in key order
 *    9 PRIMARY_KEY_WITH_PREFIX  (column index, prefix length) lenenc pairs
 *   10 ENUM_AND_SET_DEFAULT_CHARSET, 11 ENUM_AND_SET_COLUMN_CHARSET: as 2/3 over ENUM/SET columns
 *   12 COLUMN_VISIBILITY bitmap over all columns
 *   other types are skipped.
 *  Numeric columns: TINY SHORT INT24 LONG LONGLONG FLOAT DOUBLE NEWDECIMAL
 *  (and YEAR on MariaDB). Character columns: STRING (real type not ENUM/SET),
 *  VARCHAR, VAR_STRING, the BLOB types (and GEOMETRY on MariaDB).
 */
#include "binlog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bl_tmap_free(bl_tmap *m)
{
    if (!m)
        return;
    evt_table_unref(m->table);
    free(m->cols);
    free(m->raw);
    free(m);
}

static bool is_numeric(const bl_col *c, bool mariadb)
{
    switch (c->type) {
    case EVT_MY_TINY: case EVT_MY_SHORT: case EVT_MY_INT24: case EVT_MY_LONG: case EVT_MY_LONGLONG:
    case EVT_MY_FLOAT: case EVT_MY_DOUBLE: case EVT_MY_NEWDECIMAL: case EVT_MY_DECIMAL:
        return true;
    case EVT_MY_YEAR:
        return mariadb;
    default:
        return false;
    }
}

static bool is_character(const bl_col *c, bool mariadb)
{
    switch (c->type) {
    case EVT_MY_STRING: return c->real == EVT_MY_STRING;
    case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING: case EVT_MY_BLOB: case EVT_MY_TINY_BLOB:
    case EVT_MY_MEDIUM_BLOB: case EVT_MY_LONG_BLOB:
        return true;
    case EVT_MY_GEOMETRY:
        return mariadb;
    default:
        return false;
    }
}

static bool is_enum_set(const bl_col *c)
{
    return c->real == EVT_MY_ENUM || c->real == EVT_MY_SET;
}

typedef struct tm_labels {
    char **items;
    size_t n;
} tm_labels;

static void labels_free(tm_labels *l, size_t ncols)
{
    if (!l)
        return;
    for (size_t i = 0; i < ncols; i++) {
        for (size_t k = 0; k < l[i].n; k++)
            free(l[i].items[k]);
        free(l[i].items);
    }
    free(l);
}

/* Apply a charset TLV (DEFAULT_CHARSET or COLUMN_CHARSET style) to the columns selected by pick. */
static bool apply_charsets(bl_col *cols, size_t ncols, const uint8_t *p, const uint8_t *end, bool is_default,
                           bool mariadb, bool enumset, uint32_t *collations)
{
    size_t sel[4096];
    size_t nsel = 0;
    for (size_t i = 0; i < ncols && nsel < 4096; i++)
        if (enumset ? is_enum_set(&cols[i]) : is_character(&cols[i], mariadb))
            sel[nsel++] = i;
    uint64_t v;
    if (is_default) {
        if (!bl_lenenc(&p, end, &v))
            return false;
        for (size_t k = 0; k < nsel; k++)
            collations[sel[k]] = (uint32_t)v;
        while (p < end) {
            uint64_t idx, coll;
            if (!bl_lenenc(&p, end, &idx) || !bl_lenenc(&p, end, &coll))
                return false;
            if (idx < nsel)
                collations[sel[idx]] = (uint32_t)coll;
        }
    } else {
        for (size_t k = 0; k < nsel && p < end; k++) {
            if (!bl_lenenc(&p, end, &v))
                return false;
            collations[sel[k]] = (uint32_t)v;
        }
    }
    return true;
}

/* TB_OK, TB_ERR_CORRUPT when the TLV is malformed, TB_ERR_NOMEM when memory ran out. */
static tb_code read_labels(tm_labels *labels, const bl_col *cols, size_t ncols, int want, const uint8_t *p,
                           const uint8_t *end)
{
    for (size_t i = 0; i < ncols && p < end; i++) {
        if (cols[i].real != want)
            continue;
        for (size_t k = 0; k < labels[i].n; k++) /* a repeated TLV replaces the earlier one */
            free(labels[i].items[k]);
        free(labels[i].items);
        labels[i].items = NULL;
        labels[i].n = 0;
        uint64_t n;
        if (!bl_lenenc(&p, end, &n) || n > (uint64_t)(end - p))
            return TB_ERR_CORRUPT;
        labels[i].items = calloc(n ? n : 1, sizeof(char *));
        if (!labels[i].items)
            return TB_ERR_NOMEM;
        for (uint64_t k = 0; k < n; k++) {
            uint64_t l;
            if (!bl_lenenc(&p, end, &l) || l > (uint64_t)(end - p))
                return TB_ERR_CORRUPT;
            char *s = malloc(l + 1);
            if (!s)
                return TB_ERR_NOMEM;
            memcpy(s, p, l);
            s[l] = '\0';
            labels[i].items[labels[i].n++] = s;
            p += l;
        }
    }
    return TB_OK;
}

/* Labels are in the ENUM/SET charset (collation coll): turn them into UTF-8
 * in place. st is scratch. */
static tb_code labels_to_utf8(char **items, size_t n, uint32_t coll, evt_mysql_conv **conv, tb_buf *st)
{
    const char *cs = coll ? evt_mysql_collation_charset(coll) : NULL;
    evt_my_charset_kind k = evt_mysql_charset_kind(cs);
    if (k != EVT_CS_LATIN1 && k != EVT_CS_ICONV)
        return TB_OK;
    if (!*conv && !(*conv = evt_mysql_conv_new()))
        return TB_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        tb_buf_reset(st);
        tb_code rc = evt_mysql_to_utf8(*conv, cs, items[i], strlen(items[i]), st);
        if (rc != TB_OK)
            return rc;
        char *u = strdup(tb_buf_cstr(st));
        if (!u)
            return TB_ERR_NOMEM;
        free(items[i]);
        items[i] = u;
    }
    return TB_OK;
}

static uint32_t utf8_chars(const char *s)
{
    uint32_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* "enum('a','b''c')" / "set(...)" as information_schema.COLUMNS.COLUMN_TYPE
 * spells it (a quote doubled), into st (replaced); *length = the longest
 * label (ENUM) or all labels and their commas (SET), in characters, as its
 * CHARACTER_MAXIMUM_LENGTH. */
static tb_code enum_type_text(bool is_enum, char *const *items, size_t n, tb_buf *st, uint32_t *length)
{
    tb_buf_reset(st);
    tb_code rc = tb_buf_puts(st, is_enum ? "enum(" : "set(");
    uint32_t len = 0;
    for (size_t i = 0; i < n && rc == TB_OK; i++) {
        uint32_t l = utf8_chars(items[i]);
        len = is_enum ? (l > len ? l : len) : len + l + (i > 0);
        rc = tb_buf_puts(st, i ? ",'" : "'");
        for (const char *p = items[i]; *p && rc == TB_OK; p++)
            rc = *p == '\'' ? tb_buf_puts(st, "''") : tb_buf_putc(st, *p);
        if (rc == TB_OK)
            rc = tb_buf_putc(st, '\'');
    }
    if (rc == TB_OK)
        rc = tb_buf_putc(st, ')');
    *length = len;
    return rc;
}

static tb_code build_table(bl_tmap *m, const char *db, const char *name, char **names, tm_labels *labels,
                           uint32_t *enum_coll, const size_t *pk, size_t npk, const evt_table *info, tb_error *err)
{
    evt_table *t = evt_table_new(db, name, m->ncols);
    if (!t)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = TB_OK;
    tb_buf st;
    tb_buf_init(&st, 0);
    evt_mysql_conv *conv = NULL;
    for (size_t i = 0; i < m->ncols && rc == TB_OK; i++) {
        const bl_col *c = &m->cols[i];
        bool binary = c->csk == EVT_CS_BINARY;
        tb_buf_reset(&st);
        if ((rc = evt_mysql_source_type(c->type, c->meta, c->is_unsigned, binary, &st)) != TB_OK)
            break;
        char placeholder[24];
        const char *cname = names ? names[i] : NULL;
        if (!cname) {
            snprintf(placeholder, sizeof(placeholder), "@%zu", i + 1);
            cname = placeholder;
        }
        uint32_t length = 0, precision = 0, scale = 0;
        /* character columns: the metadata counts bytes, the schema characters */
        unsigned mb = binary ? 1 : evt_mysql_charset_mbmaxlen(c->charset);
        switch (c->type) {
        case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING: length = c->meta / mb; break;
        case EVT_MY_STRING: length = c->max_len / mb; break;
        case EVT_MY_BIT: length = (c->meta & 0xFF) * 8u + (c->meta >> 8); break;
        case EVT_MY_NEWDECIMAL: precision = c->meta >> 8; scale = c->meta & 0xFF; break;
        case EVT_MY_TIME2: case EVT_MY_DATETIME2: case EVT_MY_TIMESTAMP2: scale = c->meta; break;
        case EVT_MY_BLOB: case EVT_MY_TINY_BLOB: case EVT_MY_MEDIUM_BLOB: case EVT_MY_LONG_BLOB:
            length = c->meta >= 1 && c->meta <= 4 ? (uint32_t)((1ull << (8 * c->meta)) - 1) : 0;
            break;
        default: break;
        }
        if (!binary && mb > 1 && (c->type == EVT_MY_VARCHAR || c->type == EVT_MY_VAR_STRING ||
                                  (c->type == EVT_MY_STRING && c->real == EVT_MY_STRING))) {
            tb_buf_reset(&st);
            rc = tb_buf_printf(&st, "%s(%u)", c->type == EVT_MY_STRING ? "char" : "varchar", length);
        }
        const char *cs = c->charset;
        bool is_year = c->type == EVT_MY_YEAR;
        if (rc == TB_OK && labels && labels[i].n && (c->real == EVT_MY_ENUM || c->real == EVT_MY_SET)) {
            /* the labels (UTF-8 by now, see below) spell the type as information_schema does */
            rc = labels_to_utf8(labels[i].items, labels[i].n, enum_coll[i], &conv, &st);
            if (rc == TB_OK)
                rc = enum_type_text(c->real == EVT_MY_ENUM, labels[i].items, labels[i].n, &st, &length);
            if (enum_coll[i])
                cs = evt_mysql_collation_charset(enum_coll[i]);
        }
        if (rc == TB_OK && c->type == EVT_MY_GEOMETRY && c->geom_type > 0 && c->geom_type <= 7) {
            static const char *const geom[] = {"geometry", "point", "linestring", "polygon", "multipoint",
                                               "multilinestring", "multipolygon", "geometrycollection"};
            tb_buf_reset(&st);
            rc = tb_buf_puts(&st, geom[c->geom_type]);
        }
        if (rc != TB_OK)
            break;
        const char *stype = tb_buf_cstr(&st);
        if (info && evt_table_column(info, i)->source_type)
            stype = evt_table_column(info, i)->source_type; /* the catalog's (mymeta_describe) */
        /* YEAR is flagged unsigned in MariaDB's signedness map; it is a year, not an unsigned number */
        rc = evt_table_set_column(t, i, cname, evt_mysql_type_of(c->type, c->meta, binary), stype, c->nullable,
                                  c->is_unsigned && !is_year);
        if (rc != TB_OK)
            break;
        rc = evt_table_set_column_details(t, i, length, precision, scale, cs);
        if (rc == TB_OK && labels && labels[i].n)
            rc = evt_table_set_labels(t, i, (const char *const *)labels[i].items, labels[i].n);
    }
    if (rc == TB_OK && npk)
        rc = evt_table_set_pk(t, pk, npk);
    if (rc == TB_OK && info)
        rc = evt_table_set_row_end(t, evt_table_row_end(info)); /* the same columns, by index */
    evt_table_set_names_known(t, names != NULL);
    evt_mysql_conv_free(conv);
    tb_buf_free(&st);
    if (rc != TB_OK) {
        evt_table_unref(t);
        return tb_error_set(err, rc, false, "table %s.%s: cannot build the descriptor (%s)", db, name,
                            tb_code_name(rc));
    }
    m->table = t;
    return TB_OK;
}

tb_code bl_tmap_parse(const uint8_t *body, size_t len, unsigned id_len, bool mariadb, bl_tmap **out,
                      tb_error *err)
{
    const uint8_t *p = body, *end = body + len;
    bl_tmap *m = NULL;
    char **names = NULL;
    tm_labels *labels = NULL;
    uint32_t *coll = NULL, *enum_coll = NULL;
    size_t *pk = NULL, npk = 0, nc = 0;
    char db[256], name[256];
    tb_code rc = TB_OK;
    *out = NULL;

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) { rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP truncated"); goto out; } } while (0)
    NEED(id_len + 2 + 1);
    m = calloc(1, sizeof(*m));
    if (!m) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    m->table_id = bl_uN(p, id_len);
    p += id_len + 2;
    unsigned dl = *p++;
    NEED(dl + 2);
    memcpy(db, p, dl);
    db[dl] = '\0';
    p += dl + 1;
    unsigned tl = *p++;
    NEED(tl + 1);
    memcpy(name, p, tl);
    name[tl] = '\0';
    p += tl + 1;
    /* names as they appear in error messages: printable ASCII only (a damaged
     * event would otherwise print garbage); the descriptor gets the real bytes */
    char sdb[256], sname[256];
    for (size_t i = 0; i <= dl; i++)
        sdb[i] = i == dl ? '\0' : (db[i] >= 0x20 && db[i] < 0x7f) ? db[i] : '?';
    for (size_t i = 0; i <= tl; i++)
        sname[i] = i == tl ? '\0' : (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
    uint64_t ncols;
    if (!bl_lenenc(&p, end, &ncols) || ncols == 0 || ncols > 4096 || ncols > (uint64_t)(end - p)) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: bad column count", sdb, sname);
        goto out;
    }
    m->ncols = nc = (size_t)ncols;
    m->cols = calloc(m->ncols, sizeof(bl_col));
    coll = calloc(m->ncols, sizeof(uint32_t));
    enum_coll = calloc(m->ncols, sizeof(uint32_t));
    if (!m->cols || !coll || !enum_coll) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->ncols; i++)
        m->cols[i].type = m->cols[i].real = p[i];
    p += m->ncols;
    uint64_t mlen;
    if (!bl_lenenc(&p, end, &mlen) || mlen > (uint64_t)(end - p)) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: bad metadata length", sdb, sname);
        goto out;
    }
    const uint8_t *mp = p, *mend = p + mlen;
    for (size_t i = 0; i < m->ncols; i++) {
        bl_col *c = &m->cols[i];
        unsigned n = 0;
        switch (c->type) {
        case EVT_MY_FLOAT: case EVT_MY_DOUBLE: case EVT_MY_BLOB: case EVT_MY_TINY_BLOB: case EVT_MY_MEDIUM_BLOB:
        case EVT_MY_LONG_BLOB: case EVT_MY_GEOMETRY: case EVT_MY_JSON: case EVT_MY_VECTOR:
        case EVT_MY_TIME2: case EVT_MY_DATETIME2: case EVT_MY_TIMESTAMP2:
            n = 1;
            break;
        case EVT_MY_VARCHAR: case EVT_MY_VAR_STRING: case EVT_MY_BIT: case EVT_MY_NEWDECIMAL:
        case EVT_MY_STRING: case EVT_MY_ENUM: case EVT_MY_SET:
            n = 2;
            break;
        default:
            n = 0;
        }
        if ((size_t)(mend - mp) < n) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: column metadata truncated at column %zu",
                              sdb, sname, i + 1);
            goto out;
        }
        if (n == 1)
            c->meta = mp[0];
        else if (n == 2)
            c->meta = (c->type == EVT_MY_VARCHAR || c->type == EVT_MY_VAR_STRING) ? bl_u16(mp)
                                                                                  : (uint16_t)(mp[0] << 8 | mp[1]);
        mp += n;
        if (c->type == EVT_MY_STRING || c->type == EVT_MY_ENUM || c->type == EVT_MY_SET) {
            c->real = (uint8_t)evt_mysql_string_real_type(c->meta, &c->max_len);
            if (c->type != EVT_MY_STRING)
                c->real = c->type, c->max_len = c->meta & 0xFF;
        }
        if (c->type == EVT_MY_JSON)
            m->njson++;
    }
    p = mend;
    size_t nb = (m->ncols + 7) / 8;
    if ((size_t)(end - p) < nb) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: null bitmap truncated", sdb, sname);
        goto out;
    }
    for (size_t i = 0; i < m->ncols; i++)
        m->cols[i].nullable = (p[i / 8] >> (i % 8)) & 1;
    p += nb;

    /* optional metadata */
    while (p < end) {
        uint8_t type = *p++;
        uint64_t l;
        if (!bl_lenenc(&p, end, &l) || l > (uint64_t)(end - p)) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: optional metadata %u truncated", sdb,
                              sname, type);
            goto out;
        }
        const uint8_t *v = p, *vend = p + l;
        p = vend;
        bool ok = true;
        switch (type) {
        case 1: { /* SIGNEDNESS */
            size_t k = 0;
            m->has_signedness = true;
            for (size_t i = 0; i < m->ncols; i++) {
                if (!is_numeric(&m->cols[i], mariadb))
                    continue;
                if (k / 8 < l)
                    m->cols[i].is_unsigned = (v[k / 8] >> (7 - k % 8)) & 1;
                k++;
            }
            break;
        }
        case 2: case 3:
            ok = apply_charsets(m->cols, m->ncols, v, vend, type == 2, mariadb, false, coll);
            break;
        case 10: case 11:
            ok = apply_charsets(m->cols, m->ncols, v, vend, type == 10, mariadb, true, enum_coll);
            break;
        case 4: /* COLUMN_NAME (a repeated TLV replaces the earlier one) */
            for (size_t i = 0; names && i < m->ncols; i++)
                free(names[i]);
            free(names);
            names = calloc(m->ncols, sizeof(char *));
            if (!names) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            for (size_t i = 0; i < m->ncols && ok; i++) {
                uint64_t sl;
                if (!bl_lenenc(&v, vend, &sl) || sl > (uint64_t)(vend - v)) {
                    ok = false;
                    break;
                }
                names[i] = strndup((const char *)v, sl);
                if (!names[i]) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                    goto out;
                }
                v += sl;
            }
            break;
        case 5: case 6: {
            if (!labels && !(labels = calloc(m->ncols, sizeof(tm_labels)))) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            tb_code lrc = read_labels(labels, m->cols, m->ncols, type == 5 ? EVT_MY_SET : EVT_MY_ENUM, v, vend);
            if (lrc == TB_ERR_NOMEM) { /* not "malformed": the event may be fine */
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            ok = lrc == TB_OK;
            break;
        }
        case 7:
            for (size_t i = 0; i < m->ncols && v < vend && ok; i++) {
                uint64_t g = 0;
                if (m->cols[i].type != EVT_MY_GEOMETRY)
                    continue;
                ok = bl_lenenc(&v, vend, &g);
                m->cols[i].geom_type = (uint32_t)g;
            }
            break;
        case 8: case 9:
            free(pk);
            npk = 0;
            pk = calloc(m->ncols, sizeof(size_t));
            if (!pk) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            while (v < vend && ok && npk < m->ncols) {
                uint64_t idx, prefix;
                ok = bl_lenenc(&v, vend, &idx) && idx < m->ncols;
                if (ok && type == 9)
                    ok = bl_lenenc(&v, vend, &prefix);
                if (ok)
                    pk[npk++] = (size_t)idx;
            }
            break;
        default:
            break;
        }
        if (!ok) {
            rc = tb_error_set(err, TB_ERR_CORRUPT, false, "TABLE_MAP %s.%s: optional metadata %u malformed", sdb,
                              sname, type);
            goto out;
        }
    }
    for (size_t i = 0; i < m->ncols; i++) {
        bl_col *c = &m->cols[i];
        if (coll[i]) {
            c->charset = evt_mysql_collation_charset(coll[i]);
            c->csk = (uint8_t)evt_mysql_charset_kind(c->charset);
        }
    }
    rc = build_table(m, db, name, names, labels, enum_coll, pk, npk, NULL, err);
    if (rc != TB_OK)
        goto out;
    m->raw = malloc(len ? len : 1);
    if (!m->raw) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    memcpy(m->raw, body, len);
    m->raw_len = len;
    *out = m;
    m = NULL;
out:
#undef NEED
    for (size_t i = 0; names && i < nc; i++)
        free(names[i]);
    free(names);
    labels_free(labels, nc);
    free(coll);
    free(enum_coll);
    free(pk);
    bl_tmap_free(m);
    return rc;
}

tb_code bl_tmap_apply_info(bl_tmap *m, const evt_table *info, tb_error *err)
{
    size_t n = m->ncols;
    if (evt_table_ncols(info) != n)
        return tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s.%s has %zu columns in information_schema, %zu in the binlog",
                            evt_table_db(m->table), evt_table_name(m->table), evt_table_ncols(info), n);
    tb_code rc = TB_OK;
    char **names = calloc(n, sizeof(char *));
    tm_labels *labels = calloc(n, sizeof(tm_labels));
    uint32_t *enum_coll = calloc(n, sizeof(uint32_t));
    size_t *pk = calloc(n, sizeof(size_t)), npk = evt_table_npk(info);
    if (!names || !labels || !enum_coll || !pk) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const evt_column *ic = evt_table_column(info, i);
        bl_col *c = &m->cols[i];
        names[i] = (char *)ic->name;
        if (!m->has_signedness)
            c->is_unsigned = ic->is_unsigned;
        if (!c->charset && ic->charset) {
            c->charset = evt_mysql_charset_static(ic->charset); /* must outlive info */
            c->csk = (uint8_t)evt_mysql_charset_kind(c->charset);
        }
        if (ic->labels && (c->real == EVT_MY_ENUM || c->real == EVT_MY_SET)) {
            labels[i].items = ic->labels; /* borrowed: build_table copies */
            labels[i].n = ic->nlabels;
        }
    }
    for (size_t k = 0; k < npk && k < n; k++)
        pk[k] = evt_table_pk_col(info, k);
    evt_table *old = m->table;
    m->table = NULL;
    rc = build_table(m, evt_table_db(old), evt_table_name(old), names, labels, enum_coll, pk, npk, info, err);
    if (rc != TB_OK)
        m->table = old;
    else
        evt_table_unref(old);
out:
    free(names);
    free(labels);
    free(enum_coll);
    free(pk);
    return rc;
}
