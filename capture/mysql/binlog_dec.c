/*
 * binlog_dec: the binlog event decoder (see binlog.h), our own code.
 *
 * EVENT LAYOUT (binlog v4, MySQL 5.0+ and MariaDB)
 *   header, 19 bytes little-endian:
 *     timestamp 4 | type 1 | server_id 4 | event_size 4 (header + body + checksum)
 *     | log_pos 4 (offset of the next event) | flags 2
 *       flags: 0x0001 LOG_EVENT_BINLOG_IN_USE_F (FDE: file not closed),
 *              0x0020 artificial (live: fake ROTATE), 0x0080 LOG_EVENT_IGNORABLE_F
 *   body (event_size - 19 - checksum bytes)
 *   checksum: CRC32 (zlib polynomial) over header + body, 4 bytes LE, present
 *     when the FORMAT_DESCRIPTION event says binlog_checksum=CRC32. The FDE of
 *     an unclosed file has IN_USE set but its CRC was computed with the flag
 *     clear (the server clears it in place on close), so we clear it to verify.
 *
 * BODIES (post-header lengths come from the FDE table, index type - 1)
 *   FORMAT_DESCRIPTION (15): binlog_version 2, server_version 50 (NUL padded),
 *     create_timestamp 4, header_length 1, post_header_len[n]; servers from
 *     MySQL 5.6.1 / MariaDB 5.3 append checksum_alg 1 (0 off, 1 CRC32) and a
 *     4-byte checksum (always present on the FDE itself).
 *   ROTATE (4): position 8, next file name (rest).
 *   QUERY (2): thread_id 4, exec_time 4, db_len 1, error_code 2,
 *     status_vars_len 2; status vars; db; NUL; query text (rest). The text
 *     is classified (binlog_query.c): BEGIN opens a transaction, COMMIT /
 *     ROLLBACK close it; any other statement goes to the statement callback,
 *     drops the cached table maps and, outside a transaction, is a
 *     transaction of its own (DDL). MariaDB QUERY_COMPRESSED (165): the query text is
 *     compressed (1 byte 0x80|n, n bytes big-endian length, zlib stream).
 *   XID (16): xid 8. Commits.  XA_PREPARE (38): commits the prepared part.
 *   TABLE_MAP (19): see binlog_tmap.c.
 *   Rows events: v0 20-22 and v1 23-25 (post-header: table_id 6, flags 2),
 *     v2 30-32 and PARTIAL_UPDATE_ROWS 39 (+ extra_len 2 counting itself, and
 *     extra data: MySQL 8 partition / NDB info, skipped), MariaDB compressed
 *     166-168 (v1) and 169-171 (v2). Body: column count lenenc, columns-present
 *     bitmap, for updates a second (after image) bitmap, then rows to the end
 *     (compressed as one block in the MariaDB compressed types). A row is one
 *     image (write: after, delete: before) or two (update: before, after);
 *     PARTIAL_UPDATE_ROWS puts before the after image: value_options lenenc
 *     and, when bit 0 (PARTIAL_JSON) is set, a bitmap over the JSON columns
 *     marking values that are JSON diffs (binlog_json.c). Images: binlog_rows.c.
 *     table_id 0xFFFFFF..(dummy) events carry no rows.
 *   GTID (33), ANONYMOUS_GTID (34): flags 1, sid 16, gno 8, [lc type 1,
 *     last_committed 8, sequence_number 8, [immediate_commit_ts 7 (bit 55:
 *     original_commit_ts 7 follows) ...]].
 *   GTID_TAGGED_LOG (42, MySQL 8.3+): self-describing serialization: varlen
 *     integers (the count of trailing 1 bits of the first byte = extra bytes,
 *     value = little-endian bytes >> (extra + 1); 0xFF = 8 bytes follow);
 *     signed fields zigzag-encoded. Message: format version, size, last
 *     non-ignorable field id, then (field id, value) pairs: 0 flags, 1 uuid
 *     (16 varlen bytes), 2 gno (signed), 3 tag (length + bytes), 4
 *     last_committed, 5 sequence_number, 6 immediate_commit_timestamp, ...
 *   PREVIOUS_GTIDS (35): n_sids 8 (if byte 7 == 1: tagged format, count in
 *     bits 8..55), per sid: uuid 16, [tag: varlen length + bytes], n_intervals
 *     8, intervals (start 8, end 8 exclusive).
 *   TRANSACTION_PAYLOAD (40): TLV fields (type lenenc, length lenenc, value):
 *     1 payload size, 2 compression (0 zstd, 255 none), 3 uncompressed size;
 *     type 0 ends the header; then the payload: whole events without checksums.
 *   MariaDB GTID (162): seq_no 8, domain_id 4, flags 1 (0x01 standalone: no
 *     BEGIN follows; otherwise the GTID event itself opens the transaction).
 *   MariaDB GTID_LIST (163): count 4 (low 28 bits), then (domain 4, server 4,
 *     seq 8) each. BINLOG_CHECKPOINT (161): name length 4, name.
 *     ANNOTATE_ROWS (160): the statement text.
 *   INCIDENT (26): incident 2, message length 1, message: stops the decoder.
 *   Skipped: STOP, INTVAR, RAND, USER_VAR, ROWS_QUERY, HEARTBEAT(_V2), load
 *     data events, TRANSACTION_CONTEXT, VIEW_CHANGE, IGNORABLE, START_V3,
 *     ANNOTATE_ROWS, BINLOG_CHECKPOINT. Unknown types: skipped when flagged
 *     ignorable, otherwise an error.
 */
#include "binlog_int.h"
#include "tb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zstd.h>

void binlog_dec_opts_init(binlog_dec_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->label = "binlog";
    o->verify_checksum = true;
    o->incident_is_error = true;
}

binlog_dec *binlog_dec_new(const binlog_dec_opts *o)
{
    binlog_dec *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    if (o)
        d->o = *o;
    else
        binlog_dec_opts_init(&d->o);
    d->label = strdup(d->o.label ? d->o.label : "binlog");
    d->file = strdup(d->o.file ? d->o.file : "");
    d->gtids = bl_gtids_new();
    tb_buf_init(&d->payload, 0);
    tb_buf_init(&d->unz, 0);
    tb_buf_init(&d->tmp, 0);
    tb_position_init(&d->pos);
    bl_rowctx_init(&d->rc);
    bl_xa_init(d);
    d->held = d->ready = -1;
    d->pos.kind = TB_POS_MYSQL;
    d->pos.pos = 4;
    if (!d->label || !d->file || !d->gtids || tb_position_set_file(&d->pos, d->file) != TB_OK) {
        binlog_dec_free(d);
        return NULL;
    }
    return d;
}

void bl_dec_drop_maps(binlog_dec *d)
{
    for (size_t i = 0; i < d->nmaps; i++)
        bl_tmap_free(d->maps[i]);
    d->nmaps = 0;
}

void binlog_dec_free(binlog_dec *d)
{
    if (!d)
        return;
    bl_dec_drop_maps(d);
    free(d->maps);
    for (size_t i = 0; i < d->nvers; i++) {
        free(d->vers[i].key);
        evt_table_unref(d->vers[i].table);
    }
    free(d->vers);
    evt_event_free(d->ev[0]);
    evt_event_free(d->ev[1]);
    bl_rowctx_free(&d->rc);
    bl_gtids_free(d->gtids);
    tb_buf_free(&d->payload);
    tb_buf_free(&d->unz);
    tb_buf_free(&d->tmp);
    binlog_stmt_free(&d->stmt);
    bl_xa_free(d);
    tb_position_free(&d->pos);
    free(d->label);
    free(d->file);
    free(d);
}

const tb_position *binlog_dec_position(const binlog_dec *d) { return &d->pos; }
const tb_position *binlog_dec_commit_position(const binlog_dec *d) { return bl_xa_commit_pos(d); }
bool binlog_dec_is_mariadb(const binlog_dec *d) { return d->mariadb; }
uint64_t binlog_dec_skipped(const binlog_dec *d) { return d->tx_skipped; }
void binlog_dec_skip_executed(binlog_dec *d, bool on) { d->skip_executed = on; }

evt_table *binlog_dec_table(const binlog_dec *d, const char *db, const char *table)
{
    size_t dl = strlen(db);
    for (size_t i = 0; i < d->nvers; i++) {
        const char *k = d->vers[i].key;
        if (strncmp(k, db, dl) == 0 && k[dl] == 1 && strcmp(k + dl + 1, table) == 0)
            return d->vers[i].table;
    }
    return NULL;
}

void binlog_dec_set_stmt_fn(binlog_dec *d, binlog_stmt_fn fn, void *opaque)
{
    d->o.stmt_fn = fn;
    d->o.stmt_opaque = opaque;
}

static tb_code set_file(binlog_dec *d, const char *name, size_t len)
{
    char *f = strndup(name, len);
    if (!f)
        return TB_ERR_NOMEM;
    free(d->file);
    d->file = f;
    return TB_OK;
}

tb_code binlog_dec_set_position(binlog_dec *d, const tb_position *p)
{
    tb_error err;
    if (!p || p->kind != TB_POS_MYSQL)
        return TB_OK;
    if (tb_position_copy(&d->pos, p) != TB_OK)
        return TB_ERR_NOMEM;
    d->mariadb = p->mariadb;
    if (p->file && set_file(d, p->file, strlen(p->file)) != TB_OK)
        return TB_ERR_NOMEM;
    return bl_gtids_parse(d->gtids, p->gtid_set, p->mariadb, &err);
}

/* ------------------------------------------------------------ errors */


/* ------------------------------------------------------------ tx bookkeeping */

void bl_dec_tx_begin(binlog_dec *d, const uint8_t *hdr)
{
    if (d->in_tx)
        return;
    d->in_tx = true;
    d->tx_rows = 0;
    if (!d->tx_ts_set) { /* no GTID event announced this transaction */
        d->tx_ts_ms = (int64_t)bl_u32(hdr) * 1000;
        if (d->gt_kind == 0)
            snprintf(d->txid, sizeof(d->txid), "%s:%llu", d->file, (unsigned long long)d->ev_off);
    }
    d->tx_ts_set = false;
}

tb_code bl_dec_commit(binlog_dec *d, const uint8_t *hdr)
{
    tb_code rc = TB_OK;
    if (d->gt_kind == 1)
        rc = bl_gtids_add_mysql(d->gtids, d->gt_uuid, d->gt_tag, d->gt_gno, d->gt_gno + 1);
    else if (d->gt_kind == 2)
        rc = bl_gtids_set_mariadb(d->gtids, d->gt_domain, d->gt_server, d->gt_seq);
    if (rc != TB_OK)
        return rc;
    d->pos.kind = TB_POS_MYSQL;
    d->pos.mariadb = d->mariadb;
    d->pos.server_id = bl_u32(hdr + 5);
    d->pos.pos = d->ev_end;
    d->pos.row = 0;
    if (tb_position_set_file(&d->pos, d->file) != TB_OK)
        return TB_ERR_NOMEM;
    if (!bl_gtids_empty(d->gtids)) {
        tb_buf_reset(&d->tmp);
        if (bl_gtids_format(d->gtids, d->mariadb, &d->tmp) != TB_OK ||
            tb_position_set_gtid(&d->pos, tb_buf_cstr(&d->tmp)) != TB_OK)
            return TB_ERR_NOMEM;
    }
    if (d->held >= 0) {
        evt_event *e = d->ev[d->held];
        evt_event_set_last_in_tx(e, true);
        evt_event_set_position(e, bl_xa_commit_pos(d));
        d->ready = d->held;
        d->held = -1;
    }
    d->in_tx = false;
    d->gt_kind = 0;
    d->tx_rows = 0;
    d->tx_ts_set = false;
    d->tx_skip = false;
    return TB_OK;
}

void binlog_dec_drop_tx(binlog_dec *d)
{
    d->held = d->ready = -1;
    d->rows_active = d->pay_active = d->cur_pending = false;
    d->in_tx = false;
    d->gt_kind = 0;
    d->tx_rows = 0;
    d->tx_skip = false;
    d->xa_collect = false; /* a prepared group read again from its start */
    d->xa_replay = -1;     /* its entry stays; the XA COMMIT is read again */
}

tb_code binlog_dec_finish(binlog_dec *d, evt_event **out)
{
    *out = NULL;
    if (d->ready >= 0) {
        *out = d->ev[d->ready];
        d->ready = -1;
        return TB_OK;
    }
    if (d->held >= 0) {
        evt_event_set_last_in_tx(d->ev[d->held], true);
        *out = d->ev[d->held];
        d->held = -1;
    }
    return TB_OK;
}

/* ------------------------------------------------------------ table maps */

static bl_tmap *find_map(binlog_dec *d, uint64_t id)
{
    for (size_t i = d->nmaps; i > 0; i--)
        if (d->maps[i - 1]->table_id == id)
            return d->maps[i - 1];
    return NULL;
}

/* A table without a primary key: key.columns.<db>.<table> from the decoder's
 * config, as the snapshot reads it (snap_schema.c), so that both paths key
 * its rows alike. Needs column names; a named column the table lacks is a
 * configuration error. */
static tb_code apply_key_columns(binlog_dec *d, bl_tmap *m, tb_error *err)
{
    evt_table *t = m->table;
    if (!d->o.keys || evt_table_npk(t) > 0 || !evt_table_names_known(t))
        return TB_OK;
    char **cols = NULL;
    size_t n = 0;
    if (cfg_key_columns(d->o.keys, evt_table_db(t), evt_table_name(t), &cols, &n) != TB_OK)
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    tb_code rc = TB_OK;
    size_t *idx = n ? calloc(n, sizeof(*idx)) : NULL;
    if (n && !idx)
        rc = FAIL(err, TB_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < n && rc == TB_OK; k++) {
        long ix = evt_table_find(t, cols[k]);
        if (ix < 0)
            rc = FAIL(err, TB_ERR_CONFIG, "table %s.%s: key.columns.%s.%s names column '%s', which the table does not have",
                      evt_table_db(t), evt_table_name(t), evt_table_db(t), evt_table_name(t), cols[k]);
        else
            idx[k] = (size_t)ix;
    }
    if (rc == TB_OK && n && evt_table_set_pk(t, idx, n) != TB_OK)
        rc = FAIL(err, TB_ERR_NOMEM, "out of memory");
    free(idx);
    cfg_list_free(cols, n);
    return rc;
}

/* What the TABLE_MAP cannot say of a column's declared type, found by name in
 * `from` (the catalog, or the table's previous version), so that the
 * descriptor, the schema record and the values are the snapshot's:
 *  - MariaDB UUID / INET6 / INET4 columns, which the TABLE_MAP calls
 *    BINARY(16) / BINARY(4): typed as the snapshot types them (their text
 *    form, binlog_rows.c);
 *  - FLOAT(M,D): the TABLE_MAP says FLOAT; the declared text keeps M and D
 *    (value.encoding=debezium types it as a double, evt_dbz.c). */
static tb_code adopt_declared_types(evt_table *t, const evt_table *from)
{
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        const evt_column *c = evt_table_column(t, i);
        bool text = c->type == EVT_T_BINARY && (c->length == 16 || c->length == 4);
        if (!text && c->type != EVT_T_FLOAT)
            continue;
        long j = evt_table_find(from, c->name);
        const evt_column *fc = j < 0 ? NULL : evt_table_column(from, (size_t)j);
        if (!fc)
            continue;
        if (text && evt_mysql_text_type(fc->source_type)) {
            /* as the snapshot describes them (snap_values.c): char, no length, no charset */
            if (evt_table_set_column(t, i, fc->name, EVT_T_CHAR, fc->source_type, c->nullable, false) != TB_OK ||
                evt_table_set_column_details(t, i, 0, 0, 0, NULL) != TB_OK)
                return TB_ERR_NOMEM;
        } else if (!text && fc->source_type && strncasecmp(fc->source_type, "float(", 6) == 0 &&
                   strchr(fc->source_type, ',')) { /* FLOAT(M,D) by its declared text */
            /* the name is copied before the old one is freed; the details stay */
            if (evt_table_set_column(t, i, c->name, EVT_T_FLOAT, fc->source_type, c->nullable, c->is_unsigned) != TB_OK)
                return TB_ERR_NOMEM;
        }
    }
    return TB_OK;
}

/* A system-versioned table (mysqlconn/mymeta.h), as from (the catalog's
 * descriptor, or the table's previous version) says: t (unsealed) gets the
 * period's end column marked, by name, and left out of its key, which the
 * binlog's metadata gives with it. Nothing when from is not versioned. */
static tb_code take_period(evt_table *t, const evt_table *from)
{
    long re = evt_table_row_end(from);
    if (re < 0)
        return TB_OK;
    long j = evt_table_find(t, evt_table_column(from, (size_t)re)->name);
    if (j < 0)
        return TB_OK;
    size_t n = evt_table_npk(t), m = 0;
    size_t *idx = n ? malloc(n * sizeof(*idx)) : NULL;
    if (n && !idx)
        return TB_ERR_NOMEM;
    for (size_t k = 0; k < n; k++)
        if (evt_table_pk_col(t, k) != (size_t)j)
            idx[m++] = evt_table_pk_col(t, k);
    tb_code rc = m != n ? evt_table_set_pk(t, idx, m) : TB_OK;
    free(idx);
    return rc == TB_OK ? evt_table_set_row_end(t, j) : rc;
}

/* The defaults of info's columns, by name, into t (unsealed); its period too. */
static tb_code take_defaults(evt_table *t, const evt_table *info, tb_error *err)
{
    if (adopt_declared_types(t, info) != TB_OK || take_period(t, info) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    for (size_t i = 0; i < evt_table_ncols(t); i++) {
        long j = evt_table_find(info, evt_table_column(t, i)->name);
        const evt_column *ic = j < 0 ? NULL : evt_table_column(info, (size_t)j);
        if (ic && evt_table_set_default(t, i, ic->default_text, ic->default_expr) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    return TB_OK;
}

/* A new version of a table: the binlog does not carry column defaults, the
 * catalog says them now (a DDL since the event can have changed them; a
 * table gone since has none). A failed lookup leaves them unknown (WARN). */
static void lookup_defaults(binlog_dec *d, evt_table *t)
{
    evt_table *info = NULL;
    tb_error serr;
    tb_error_clear(&serr);
    tb_code rc = d->o.schema_fn(d->o.schema_opaque, evt_table_db(t), evt_table_name(t), &info, &serr);
    if (rc == TB_OK && info)
        rc = take_defaults(t, info, &serr);
    if (rc != TB_OK)
        TB_WARN("binlog", "%s.%s: column defaults not read from information_schema (%s): its schema record says "
                "none", evt_table_db(t), evt_table_name(t), serr.msg);
    evt_table_unref(info);
}

static tb_code on_table_map(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err)
{
    unsigned id_len = d->ph[BL_TABLE_MAP - 1] == 6 ? 4 : 6;
    if (len < id_len)
        return FAIL(err, TB_ERR_CORRUPT, "TABLE_MAP truncated");
    uint64_t id = bl_uN(body, id_len);
    bl_tmap *old = find_map(d, id);
    if (old && old->raw_len == len && memcmp(old->raw, body, len) == 0)
        return TB_OK;
    bl_tmap *m = NULL;
    tb_code rc = bl_tmap_parse(body, len, id_len, d->mariadb, &m, err);
    if (rc != TB_OK)
        return rc;
    bool looked_up = false;
    if (!evt_table_names_known(m->table) && d->o.schema_fn) {
        evt_table *info = NULL;
        tb_error serr;
        tb_error_clear(&serr);
        rc = d->o.schema_fn(d->o.schema_opaque, evt_table_db(m->table), evt_table_name(m->table), &info, &serr);
        if (rc == TB_OK && info)
            rc = bl_tmap_apply_info(m, info, &serr);
        if (rc == TB_OK && info)
            rc = take_defaults(m->table, info, &serr);
        looked_up = true;
        evt_table_unref(info);
        if (rc == TB_OK && info)
            TB_WARN("binlog", "%s.%s: the binlog has no column names (binlog_row_metadata is not FULL); names and "
                    "key taken from information_schema now: a DDL between the event and now can shift columns",
                    evt_table_db(m->table), evt_table_name(m->table));
        else
            TB_WARN("binlog", "%s.%s: no column names in the binlog and none from information_schema (%s); "
                    "columns are @1..@n", evt_table_db(m->table), evt_table_name(m->table),
                    rc == TB_OK ? "table not found" : serr.msg);
    }
    if ((rc = apply_key_columns(d, m, err)) != TB_OK) {
        bl_tmap_free(m);
        return rc;
    }
    /* one descriptor per shape: reuse the previous one when nothing changed */
    const char *db = evt_table_db(m->table), *tn = evt_table_name(m->table);
    char *key = NULL;
    if (asprintf(&key, "%s%c%s", db, 1, tn) < 0) {
        bl_tmap_free(m);
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    bl_ver *v = NULL;
    for (size_t i = 0; i < d->nvers; i++)
        if (strcmp(d->vers[i].key, key) == 0)
            v = &d->vers[i];
    if (v && (adopt_declared_types(m->table, v->table) != TB_OK || take_period(m->table, v->table) != TB_OK)) {
        free(key);
        bl_tmap_free(m);
        return FAIL(err, TB_ERR_NOMEM, "out of memory");
    }
    if (v && evt_table_same_shape(v->table, m->table)) {
        evt_table_unref(m->table);
        m->table = evt_table_ref(v->table);
        free(key);
    } else {
        if (!looked_up && d->o.schema_fn && evt_table_names_known(m->table))
            lookup_defaults(d, m->table);
        evt_table_set_version(m->table, v ? evt_table_version(v->table) + 1 : 1);
        evt_table_seal(m->table);
        if (!v) {
            bl_ver *nv = realloc(d->vers, (d->nvers + 1) * sizeof(*nv));
            if (!nv) {
                free(key);
                bl_tmap_free(m);
                return FAIL(err, TB_ERR_NOMEM, "out of memory");
            }
            d->vers = nv;
            v = &d->vers[d->nvers++];
            v->key = key;
            v->table = NULL;
        } else {
            free(key);
        }
        evt_table_unref(v->table);
        v->table = evt_table_ref(m->table);
    }
    if (old) {
        for (size_t i = 0; i < d->nmaps; i++)
            if (d->maps[i] == old)
                d->maps[i] = m;
        bl_tmap_free(old);
        return TB_OK;
    }
    if (d->nmaps == d->capmaps) {
        size_t cap = d->capmaps ? d->capmaps * 2 : 16;
        bl_tmap **nm = realloc(d->maps, cap * sizeof(*nm));
        if (!nm) {
            bl_tmap_free(m);
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        }
        d->maps = nm;
        d->capmaps = cap;
    }
    d->maps[d->nmaps++] = m;
    return TB_OK;
}

/* ------------------------------------------------------------ rows */

/* Whether the first n bits of b are all set. */
static bool bits_all(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n / 8; i++)
        if (b[i] != 0xFF)
            return false;
    return n % 8 == 0 || (b[n / 8] & ((1u << (n % 8)) - 1)) == (1u << (n % 8)) - 1;
}

static tb_code on_rows(binlog_dec *d, int type, const uint8_t *hdr, const uint8_t *body, size_t len,
                       tb_error *err)
{
    bool v2 = type == BL_WRITE_ROWS || type == BL_UPDATE_ROWS || type == BL_DELETE_ROWS ||
              type == BL_PARTIAL_UPDATE_ROWS || type >= BL_MARIA_WRITE_ROWS_COMPRESSED;
    bool compressed = type >= BL_MARIA_WRITE_ROWS_COMPRESSED_V1 && type <= BL_MARIA_DELETE_ROWS_COMPRESSED;
    int base = type;
    if (type >= BL_MARIA_WRITE_ROWS_COMPRESSED)
        base = BL_WRITE_ROWS + (type - BL_MARIA_WRITE_ROWS_COMPRESSED);
    else if (compressed)
        base = BL_WRITE_ROWS_V1 + (type - BL_MARIA_WRITE_ROWS_COMPRESSED_V1);
    else if (type >= BL_PRE_GA_WRITE_ROWS && type <= BL_PRE_GA_DELETE_ROWS)
        base = BL_WRITE_ROWS_V1 + (type - BL_PRE_GA_WRITE_ROWS);
    unsigned ph = type < 256 ? d->ph[type - 1] : 0;
    unsigned id_len = ph == 6 ? 4 : 6;
    const uint8_t *p = body, *end = body + len;
    if (len < id_len + 2u + (v2 ? 2u : 0u))
        return FAIL(err, TB_ERR_CORRUPT, "rows event truncated");
    uint64_t id = bl_uN(p, id_len);
    p += id_len + 2;
    if (v2) {
        unsigned extra = bl_u16(p);
        if (extra < 2 || (size_t)(end - p) < extra)
            return FAIL(err, TB_ERR_CORRUPT, "rows event extra data truncated");
        p += extra;
    }
    if (id == 0xFFFFFF || id == 0xFFFFFFFFFFFFull) /* dummy event: end of statement, no rows */
        return TB_OK;
    bl_tmap *m = find_map(d, id);
    if (!m)
        return FAIL(err, TB_ERR_CORRUPT, "rows event for table_id %llu without a TABLE_MAP before it",
                    (unsigned long long)id);
    uint64_t ncols;
    if (!bl_lenenc(&p, end, &ncols) || ncols > m->ncols)
        return FAIL(err, TB_ERR_CORRUPT, "rows event for %s.%s: bad column count", evt_table_db(m->table),
                    evt_table_name(m->table));
    size_t nb = (size_t)(ncols + 7) / 8;
    bool update = base == BL_UPDATE_ROWS || base == BL_UPDATE_ROWS_V1 || type == BL_PARTIAL_UPDATE_ROWS;
    if ((size_t)(end - p) < nb * (update ? 2 : 1))
        return FAIL(err, TB_ERR_CORRUPT, "rows event for %s.%s: column bitmap truncated", evt_table_db(m->table),
                    evt_table_name(m->table));
    memset(d->cols1, 0, sizeof(d->cols1));
    memset(d->cols2, 0, sizeof(d->cols2));
    memcpy(d->cols1, p, nb);
    p += nb;
    if (update) {
        memcpy(d->cols2, p, nb);
        p += nb;
    }
    if (ncols % 8) { /* bits past the column count are not columns */
        d->cols1[nb - 1] &= (uint8_t)((1u << (ncols % 8)) - 1);
        d->cols2[nb - 1] &= (uint8_t)((1u << (ncols % 8)) - 1);
    }
    /* binlog_row_image MINIMAL or NOBLOB (the server's or the writing session's): an image
     * without some of the table's columns */
    d->rows_partial = ncols < m->ncols || !bits_all(d->cols1, (size_t)ncols) ||
                      (update && !bits_all(d->cols2, (size_t)ncols));
    if (compressed) {
        tb_code rc = bl_unzip_mariadb(p, (size_t)(end - p), &d->unz);
        if (rc != TB_OK)
            return FAIL(err, rc, "compressed rows event for %s.%s does not decompress", evt_table_db(m->table),
                        evt_table_name(m->table));
        p = (const uint8_t *)d->unz.data;
        end = p + d->unz.len;
    }
    if (base == BL_WRITE_ROWS || base == BL_WRITE_ROWS_V1)
        d->rop = EVT_OP_CREATE;
    else if (base == BL_DELETE_ROWS || base == BL_DELETE_ROWS_V1)
        d->rop = EVT_OP_DELETE;
    else
        d->rop = EVT_OP_UPDATE;
    d->rupdate = update;
    d->rpartial = type == BL_PARTIAL_UPDATE_ROWS;
    d->rtm = m;
    d->rp = p;
    d->rend = end;
    d->rows_off = d->ev_off;
    d->rows_index = 0;
    d->rows_server_id = bl_u32(hdr + 5);
    d->rows_active = p < end;
    bl_dec_tx_begin(d, hdr);
    return TB_OK;
}

/* Whether the image's period end (column re) is its type's maximum: the row
 * is current. TIMESTAMP(6): 2038-01-19 03:14:07.999999 UTC, or 2106-02-07
 * 06:28:15.999999 where the server's TIMESTAMP reaches 2106 (MariaDB 11.5 on
 * 64-bit); BIGINT UNSIGNED (transaction-precise): 18446744073709551615. */
static bool period_current(const evt_event *e, evt_image img, size_t re)
{
    const evt_value *v = evt_event_value(e, img, re);
    if (v->kind == EVT_V_UINT)
        return v->v.u == UINT64_MAX;
    if (v->kind != EVT_V_TIMESTAMP)
        return true; /* absent (a MINIMAL image) or not a period type: keep the change */
    const evt_temporal *t = &v->v.t;
    return t->usec == 999999 && ((t->year == 2038 && t->month == 1 && t->day == 19 && t->hour == 3 &&
                                  t->minute == 14 && t->second == 7) ||
                                 (t->year == 2106 && t->month == 2 && t->day == 7 && t->hour == 6 &&
                                  t->minute == 28 && t->second == 15));
}

/* A row of a system-versioned table (mysqlconn/mymeta.h; re: its period's end
 * column, -1 not versioned) as a change of the table's current rows: false to
 * pass it over (a history row written, changed or deleted: DELETE HISTORY);
 * an update that moves the current row into the history (how the server logs
 * a DELETE) becomes the delete of its before image. */
static bool period_row(evt_event *e, long re)
{
    if (re < 0)
        return true;
    switch (evt_event_op(e)) {
    case EVT_OP_CREATE: return period_current(e, EVT_AFTER, (size_t)re);
    case EVT_OP_DELETE: return period_current(e, EVT_BEFORE, (size_t)re);
    case EVT_OP_UPDATE:
        if (!period_current(e, EVT_BEFORE, (size_t)re))
            return false;
        if (!period_current(e, EVT_AFTER, (size_t)re))
            tb_ignore(evt_event_update_to_delete(e)); /* e is an update here: it cannot fail */
        return true;
    default: return true;
    }
}

static tb_code decode_row(binlog_dec *d, tb_error *err)
{
    bl_tmap *m = d->rtm;
    int slot = d->held == 0 ? 1 : 0;
    evt_event *e = d->ev[slot];
    if (!e) {
        e = d->ev[slot] = evt_event_new(d->rop, m->table);
        if (!e)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
    } else {
        evt_event_reset(e, d->rop, m->table);
    }
    tb_code rc;
    const uint8_t *row_start = d->rp;
    if (d->rop == EVT_OP_CREATE) {
        rc = bl_row_decode(&d->rc, m, &d->rp, d->rend, d->cols1, NULL, e, EVT_AFTER, err);
    } else {
        rc = bl_row_decode(&d->rc, m, &d->rp, d->rend, d->cols1, NULL, e, EVT_BEFORE, err);
        if (rc == TB_OK && d->rupdate) {
            const uint8_t *partial = NULL;
            if (d->rpartial) {
                uint64_t opts;
                if (!bl_lenenc(&d->rp, d->rend, &opts))
                    rc = FAIL(err, TB_ERR_CORRUPT, "partial update value options truncated");
                else if (opts & 1) {
                    size_t nb = (m->njson + 7) / 8;
                    if ((size_t)(d->rend - d->rp) < nb) {
                        rc = FAIL(err, TB_ERR_CORRUPT, "partial update JSON bitmap truncated");
                    } else { /* never past the end: the row pointer stays inside the event */
                        partial = d->rp;
                        d->rp += nb;
                    }
                }
            }
            if (rc == TB_OK)
                rc = bl_row_decode(&d->rc, m, &d->rp, d->rend, d->cols2, partial, e, EVT_AFTER, err);
        }
    }
    if (rc == TB_OK && d->rp == row_start) /* no column present: would repeat forever */
        rc = FAIL(err, TB_ERR_CORRUPT, "rows event for %s.%s with no columns in its images", evt_table_db(m->table),
                  evt_table_name(m->table));
    if (rc == TB_OK && evt_event_error(e)) {
        const tb_error *be = evt_event_error(e);
        rc = tb_error_set(err, be->code, false, "%s", be->msg);
    }
    if (rc != TB_OK) {
        d->rows_active = false;
        return rc;
    }
    d->rows_active = d->rp < d->rend;
    uint32_t index = d->rows_index++; /* the row's place in its rows event */
    if (d->tx_skip)
        return TB_OK; /* executed before the start GTID set: decoded to move on, not emitted */
    if (!period_row(e, evt_table_row_end(m->table)))
        return TB_OK; /* a system-versioned table's history row */
    d->tx_rows++;
    tb_position rp = {0};
    rp.kind = TB_POS_MYSQL;
    rp.mariadb = d->mariadb;
    rp.server_id = d->rows_server_id;
    rp.file = d->file;
    rp.pos = d->rows_off;
    rp.row = d->tx_rows;
    evt_event_set_position(e, &rp);
    evt_event_set_source_row(e, d->rows_off, index, d->gt_kind != 0);
    evt_event_set_connector(e, d->mariadb ? EVT_CONN_MARIADB : EVT_CONN_MYSQL);
    evt_event_set_txid(e, d->txid);
    evt_event_set_commit_ts_ms(e, d->tx_ts_ms);
    evt_event_set_last_in_tx(e, false);
    evt_event_set_partial(e, d->rows_partial);
    if (d->held >= 0)
        d->ready = d->held;
    d->held = slot;
    return TB_OK;
}

static const char *type_name(int t)
{
    switch (t) {
    case BL_QUERY: return "QUERY";
    case BL_ROTATE: return "ROTATE";
    case BL_FDE: return "FORMAT_DESCRIPTION";
    case BL_XID: return "XID";
    case BL_TABLE_MAP: return "TABLE_MAP";
    case BL_GTID: return "GTID";
    case BL_ANONYMOUS_GTID: return "ANONYMOUS_GTID";
    case BL_PREVIOUS_GTIDS: return "PREVIOUS_GTIDS";
    case BL_TRANSACTION_PAYLOAD: return "TRANSACTION_PAYLOAD";
    case BL_GTID_TAGGED: return "GTID_TAGGED_LOG";
    case BL_INCIDENT: return "INCIDENT";
    case BL_MARIA_GTID: return "MARIADB_GTID";
    case BL_MARIA_GTID_LIST: return "MARIADB_GTID_LIST";
    default:
        if ((t >= 20 && t <= 25) || (t >= 30 && t <= 32) || t == 39 || (t >= 166 && t <= 171))
            return "ROWS";
        return "event";
    }
}

static bool is_rows_type(int t)
{
    return (t >= 20 && t <= 25) || (t >= 30 && t <= 32) || t == 39 || (t >= 166 && t <= 171);
}

/* One whole event (outer, or inner from a TRANSACTION_PAYLOAD). */
static tb_code process_event(binlog_dec *d, const uint8_t *ev, size_t len, bool inner, tb_error *err)
{
    if (len < BL_HEADER_LEN)
        return FAIL(err, TB_ERR_CORRUPT, "event shorter than its header (%zu bytes)", len);
    int type = ev[4];
    uint16_t flags = bl_u16(ev + 17);
    if (bl_u32(ev + 9) != len)
        return FAIL(err, TB_ERR_CORRUPT, "event size %u does not match %zu", bl_u32(ev + 9), len);
    if (type == BL_FDE && !inner)
        return bl_on_fde(d, ev, len, err);
    size_t blen = len - BL_HEADER_LEN;
    bool strip = !inner && d->checksum;
    if (!inner && !d->have_fde && type == BL_ROTATE && len >= BL_HEADER_LEN + 8 + 4) {
        /* a fake ROTATE before the FDE (live): its checksum, if any, cannot be announced yet */
        strip = bl_crc32(0, ev, len - 4) == bl_u32(ev + len - 4);
    }
    if (strip) {
        if (blen < 4)
            return FAIL(err, TB_ERR_CORRUPT, "event too short for its checksum");
        blen -= 4;
        if (d->o.verify_checksum && bl_crc32(0, ev, len - 4) != bl_u32(ev + len - 4))
            return FAIL(err, TB_ERR_CORRUPT, "%s event checksum mismatch", type_name(type));
    }
    const uint8_t *body = ev + BL_HEADER_LEN;
    if (d->xa_collect && (type == BL_TABLE_MAP || is_rows_type(type))) {
        tb_code rc = bl_xa_keep(d, ev, len, strip, d->ev_off);
        return rc == TB_OK ? TB_OK : FAIL(err, rc, "%s event cannot be kept for its XA COMMIT", type_name(type));
    }
    switch (type) {
    case BL_ROTATE: {
        unsigned ph = d->ph[BL_ROTATE - 1] ? d->ph[BL_ROTATE - 1] : 8;
        if (blen < ph || blen < 8) /* the position is 8 bytes whatever the FDE claims */
            return FAIL(err, TB_ERR_CORRUPT, "ROTATE truncated");
        if (set_file(d, (const char *)body + ph, blen - ph) != TB_OK)
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        /* The dump's artificial ROTATE names the file it reads but not where: at a GTID start its
         * offset is 4, the file's start. The position stays the one set to start from until a
         * real event moves it (a resume by file and offset from 4 would read the file again). */
        bool artificial = (bl_u16(ev + 17) & 0x0020) != 0;
        if (!d->in_tx && !(artificial && d->pos.file)) {
            if (tb_position_set_file(&d->pos, d->file) != TB_OK)
                return FAIL(err, TB_ERR_NOMEM, "out of memory");
            d->pos.pos = bl_u64(body);
        }
        return TB_OK;
    }
    case BL_QUERY: case BL_MARIA_QUERY_COMPRESSED:
        return bl_on_query(d, type, ev, body, blen, err);
    case BL_XID:
        return bl_dec_commit(d, ev) == TB_OK ? TB_OK : FAIL(err, TB_ERR_NOMEM, "out of memory");
    case BL_XA_PREPARE:
        return bl_xa_on_prepare(d, ev, body, blen, err);
    case BL_TABLE_MAP:
        return on_table_map(d, body, blen, err);
    case BL_PRE_GA_WRITE_ROWS: case BL_PRE_GA_UPDATE_ROWS: case BL_PRE_GA_DELETE_ROWS:
    case BL_WRITE_ROWS_V1: case BL_UPDATE_ROWS_V1: case BL_DELETE_ROWS_V1:
    case BL_WRITE_ROWS: case BL_UPDATE_ROWS: case BL_DELETE_ROWS: case BL_PARTIAL_UPDATE_ROWS:
    case BL_MARIA_WRITE_ROWS_COMPRESSED_V1: case BL_MARIA_UPDATE_ROWS_COMPRESSED_V1:
    case BL_MARIA_DELETE_ROWS_COMPRESSED_V1: case BL_MARIA_WRITE_ROWS_COMPRESSED:
    case BL_MARIA_UPDATE_ROWS_COMPRESSED: case BL_MARIA_DELETE_ROWS_COMPRESSED:
        return on_rows(d, type, ev, body, blen, err);
    case BL_GTID: case BL_ANONYMOUS_GTID:
        return bl_on_gtid(d, type, ev, body, blen, err);
    case BL_GTID_TAGGED:
        return bl_on_gtid_tagged(d, ev, body, blen, err);
    case BL_PREVIOUS_GTIDS:
        return bl_on_previous_gtids(d, body, blen, err);
    case BL_TRANSACTION_PAYLOAD:
        if (inner)
            return FAIL(err, TB_ERR_CORRUPT, "TRANSACTION_PAYLOAD inside a TRANSACTION_PAYLOAD");
        return bl_on_payload(d, body, blen, err);
    case BL_MARIA_GTID: {
        if (blen < 13)
            return FAIL(err, TB_ERR_CORRUPT, "MariaDB GTID truncated");
        d->gt_kind = 2;
        d->gt_seq = bl_u64(body);
        d->gt_domain = bl_u32(body + 8);
        d->gt_server = bl_u32(ev + 5);
        snprintf(d->txid, sizeof(d->txid), "%u-%u-%llu", d->gt_domain, d->gt_server,
                 (unsigned long long)d->gt_seq);
        d->in_tx = false;
        d->tx_ts_ms = (int64_t)bl_u32(ev) * 1000;
        d->tx_ts_set = true;
        if (!(body[12] & 0x01)) /* not standalone: the GTID event is the BEGIN */
            bl_dec_tx_begin(d, ev);
        if ((body[12] & 0x40) && bl_xa_start(d) != TB_OK) /* FL_PREPARED_XA: binlog_xa.c */
            return FAIL(err, TB_ERR_NOMEM, "out of memory");
        return TB_OK;
    }
    case BL_MARIA_GTID_LIST:
        return bl_on_maria_gtid_list(d, body, blen, err);
    case BL_INCIDENT: {
        unsigned code = blen >= 2 ? bl_u16(body) : 0;
        size_t ml = blen >= 3 ? body[2] : 0;
        if (ml > blen - 3)
            ml = blen >= 3 ? blen - 3 : 0;
        if (d->o.incident_is_error)
            return tb_error_set(err, TB_ERR_SOURCE, false,
                                "INCIDENT event (incident %u: '%.*s'): the source lost changes here; stopping",
                                code, (int)ml, blen >= 3 ? (const char *)body + 3 : "");
        return TB_OK;
    }
    case BL_MARIA_START_ENCRYPTION:
        return FAIL(err, TB_ERR_UNSUPPORTED, "encrypted binlog (START_ENCRYPTION event) is not supported");
    case BL_START_V3: case BL_STOP: case BL_INTVAR: case BL_LOAD: case BL_SLAVE: case BL_CREATE_FILE:
    case BL_APPEND_BLOCK: case BL_EXEC_LOAD: case BL_DELETE_FILE: case BL_NEW_LOAD: case BL_RAND:
    case BL_USER_VAR: case BL_BEGIN_LOAD_QUERY: case BL_EXECUTE_LOAD_QUERY: case BL_HEARTBEAT:
    case BL_IGNORABLE: case BL_ROWS_QUERY: case BL_TRANSACTION_CONTEXT: case BL_VIEW_CHANGE:
    case BL_HEARTBEAT_V2: case BL_MARIA_ANNOTATE_ROWS: case BL_MARIA_BINLOG_CHECKPOINT:
        return TB_OK;
    default:
        if (flags & BL_FLAG_IGNORABLE)
            return TB_OK;
        return FAIL(err, TB_ERR_UNSUPPORTED, "unknown event type %d (not flagged ignorable)", type);
    }
}

static tb_code prefix_err(binlog_dec *d, tb_code rc, uint64_t off, const uint8_t *ev, size_t len, bool inner,
                          tb_error *err)
{
    if (!err)
        return rc;
    int type = len >= 5 ? ev[4] : -1;
    if (inner)
        return tb_error_prefix(err, rc, "%s: byte offset %llu (%s event inside the TRANSACTION_PAYLOAD there): ",
                               d->label, (unsigned long long)off, type_name(type));
    return tb_error_prefix(err, rc, "%s: byte offset %llu (%s, type %d): ", d->label, (unsigned long long)off,
                           type_name(type), type);
}

tb_code binlog_dec_feed(binlog_dec *d, const uint8_t *ev, size_t len, uint64_t off, tb_error *err)
{
    if (d->cur_pending || d->rows_active || d->pay_active || d->xa_replay >= 0)
        return tb_error_set(err, TB_ERR_STATE, false, "%s: event fed before the previous one was drained",
                            d->label);
    d->cur = ev;
    d->cur_len = len;
    d->cur_off = off;
    d->cur_pending = true;
    return TB_OK;
}

tb_code binlog_dec_next(binlog_dec *d, evt_event **out, tb_error *err)
{
    *out = NULL;
    for (;;) {
        if (d->ready >= 0) {
            *out = d->ev[d->ready];
            d->ready = -1;
            return TB_OK;
        }
        if (d->rows_active) {
            tb_code rc = decode_row(d, err);
            if (rc != TB_OK) {
                d->pay_active = false;
                return prefix_err(d, rc, d->ev_off, d->cur, d->cur_len, false, err);
            }
            continue;
        }
        if (d->pay_active) {
            const uint8_t *p = (const uint8_t *)d->payload.data + d->pay_pos;
            size_t left = d->payload.len - d->pay_pos;
            if (left < BL_HEADER_LEN || bl_u32(p + 9) < BL_HEADER_LEN || bl_u32(p + 9) > left) {
                d->pay_active = false;
                tb_error_set(err, TB_ERR_CORRUPT, false, "inner event at payload byte %zu is truncated", d->pay_pos);
                return prefix_err(d, TB_ERR_CORRUPT, d->ev_off, d->cur, d->cur_len, false, err);
            }
            size_t elen = bl_u32(p + 9);
            d->pay_pos += elen;
            d->pay_active = d->pay_pos < d->payload.len;
            tb_code rc = process_event(d, p, elen, true, err);
            if (rc != TB_OK) {
                d->pay_active = false;
                d->rows_active = false;
                return prefix_err(d, rc, d->ev_off, p, elen, true, err);
            }
            continue;
        }
        if (d->xa_replay >= 0) { /* the kept events of an XA transaction, at its XA COMMIT */
            const bl_xa *x = &d->xa[d->xa_replay];
            if (d->xa_rpos + 12 + BL_HEADER_LEN <= x->evs.len) {
                const uint8_t *f = (const uint8_t *)x->evs.data + d->xa_rpos;
                uint64_t off = bl_u64(f);
                size_t elen = bl_u32(f + 8);
                d->xa_rpos += 12 + elen;
                d->ev_off = off;
                d->ev_end = off + elen;
                tb_code rc = process_event(d, f + 12, elen, true, err);
                if (rc != TB_OK) {
                    d->xa_replay = -1;
                    d->rows_active = false;
                    return prefix_err(d, rc, off, f + 12, elen, false, err);
                }
                continue;
            }
            d->ev_off = d->xa_off;
            d->ev_end = d->xa_end;
            bl_xa_replayed(d);
            if (bl_dec_commit(d, d->xa_hdr) != TB_OK)
                return FAIL(err, TB_ERR_NOMEM, "out of memory");
            continue;
        }
        if (d->cur_pending) {
            d->cur_pending = false;
            d->ev_off = d->cur_off;
            d->ev_end = d->cur_off + d->cur_len;
            tb_code rc = process_event(d, d->cur, d->cur_len, false, err);
            if (rc != TB_OK)
                return prefix_err(d, rc, d->cur_off, d->cur, d->cur_len, false, err);
            continue;
        }
        return TB_OK;
    }
}
