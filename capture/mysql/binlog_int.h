/*
 * binlog_int: internals shared by the decoder's files (not a public API).
 */
#ifndef BINLOG_INT_H
#define BINLOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "binlog.h"
#include "evt.h"
#include "evt_json.h"
#include "evt_mysql.h"
#include "tb_buf.h"
#include "tb_error.h"

/* ------------------------------------------------------------ event types */
enum {
    BL_UNKNOWN = 0, BL_START_V3 = 1, BL_QUERY = 2, BL_STOP = 3, BL_ROTATE = 4, BL_INTVAR = 5,
    BL_LOAD = 6, BL_SLAVE = 7, BL_CREATE_FILE = 8, BL_APPEND_BLOCK = 9, BL_EXEC_LOAD = 10,
    BL_DELETE_FILE = 11, BL_NEW_LOAD = 12, BL_RAND = 13, BL_USER_VAR = 14, BL_FDE = 15, BL_XID = 16,
    BL_BEGIN_LOAD_QUERY = 17, BL_EXECUTE_LOAD_QUERY = 18, BL_TABLE_MAP = 19,
    BL_PRE_GA_WRITE_ROWS = 20, BL_PRE_GA_UPDATE_ROWS = 21, BL_PRE_GA_DELETE_ROWS = 22,
    BL_WRITE_ROWS_V1 = 23, BL_UPDATE_ROWS_V1 = 24, BL_DELETE_ROWS_V1 = 25, BL_INCIDENT = 26,
    BL_HEARTBEAT = 27, BL_IGNORABLE = 28, BL_ROWS_QUERY = 29, BL_WRITE_ROWS = 30, BL_UPDATE_ROWS = 31,
    BL_DELETE_ROWS = 32, BL_GTID = 33, BL_ANONYMOUS_GTID = 34, BL_PREVIOUS_GTIDS = 35,
    BL_TRANSACTION_CONTEXT = 36, BL_VIEW_CHANGE = 37, BL_XA_PREPARE = 38, BL_PARTIAL_UPDATE_ROWS = 39,
    BL_TRANSACTION_PAYLOAD = 40, BL_HEARTBEAT_V2 = 41, BL_GTID_TAGGED = 42,
    BL_MARIA_ANNOTATE_ROWS = 160, BL_MARIA_BINLOG_CHECKPOINT = 161, BL_MARIA_GTID = 162,
    BL_MARIA_GTID_LIST = 163, BL_MARIA_START_ENCRYPTION = 164, BL_MARIA_QUERY_COMPRESSED = 165,
    BL_MARIA_WRITE_ROWS_COMPRESSED_V1 = 166, BL_MARIA_UPDATE_ROWS_COMPRESSED_V1 = 167,
    BL_MARIA_DELETE_ROWS_COMPRESSED_V1 = 168, BL_MARIA_WRITE_ROWS_COMPRESSED = 169,
    BL_MARIA_UPDATE_ROWS_COMPRESSED = 170, BL_MARIA_DELETE_ROWS_COMPRESSED = 171,
};

#define BL_HEADER_LEN 19
#define BL_FLAG_IN_USE 0x0001
#define BL_FLAG_ARTIFICIAL 0x0020
#define BL_FLAG_IGNORABLE 0x0080

/* ------------------------------------------------------------ little readers */
static inline uint16_t bl_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t bl_u24(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16); }
/* CRC32 as zlib's crc32(crc, p, len) computes it (binlog event checksums), folded with
 * PCLMULQDQ where the CPU has it (binlog_crc.c). */
uint32_t bl_crc32(uint32_t crc, const uint8_t *p, size_t len);
/* Its folding constants, reflect32(x^n mod P) << 1 for n = 544, 480, 160, 96 (zeros where the
 * folding is not built): for the test that derives them again. */
extern const uint64_t bl_crc32_fold_k[4];
static inline uint32_t bl_u32(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24); }
static inline uint64_t bl_u48(const uint8_t *p) { return (uint64_t)bl_u32(p) | ((uint64_t)bl_u16(p + 4) << 32); }
static inline uint64_t bl_u64(const uint8_t *p) { return (uint64_t)bl_u32(p) | ((uint64_t)bl_u32(p + 4) << 32); }
static inline uint64_t bl_uN(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i > 0; i--)
        v = (v << 8) | p[i - 1];
    return v;
}

/* Length-encoded integer at *p (bounded by end). false if truncated or 0xFB/0xFF. */
static inline bool bl_lenenc(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (*p >= end)
        return false;
    uint8_t b = **p;
    unsigned n;
    if (b < 251) {
        *v = b;
        (*p)++;
        return true;
    }
    if (b == 252) n = 2;
    else if (b == 253) n = 3;
    else if (b == 254) n = 8;
    else return false;
    if ((size_t)(end - *p) < 1 + n)
        return false;
    *v = bl_uN(*p + 1, n);
    *p += 1 + n;
    return true;
}

/* ------------------------------------------------------------ table maps */
typedef struct bl_col {
    uint8_t type;         /* binlog type code as in TABLE_MAP */
    uint8_t real;         /* real type: STRING -> STRING/ENUM/SET */
    uint16_t meta;        /* see evt_mysql.h */
    uint32_t max_len;     /* STRING: max byte length */
    bool nullable;
    bool is_unsigned;
    uint8_t csk;          /* evt_my_charset_kind */
    const char *charset;  /* static string or NULL */
    uint32_t geom_type;
} bl_col;

typedef struct bl_tmap {
    uint64_t table_id;
    evt_table *table;     /* one reference */
    size_t ncols;
    bl_col *cols;
    uint8_t *raw;         /* the TABLE_MAP body as received, to spot a re-sent identical map */
    size_t raw_len;
    size_t njson;         /* JSON columns (for PARTIAL_UPDATE_ROWS bitmaps) */
    bool has_signedness;
} bl_tmap;

/* Parse a TABLE_MAP body (after the common header, without checksum) into a
 * new map (caller frees with bl_tmap_free). `id_len` is 4 or 6. mariadb
 * tells how YEAR counts for signedness. err names nothing: the caller
 * prefixes file and offset. */
TB_MUST_USE tb_code bl_tmap_parse(const uint8_t *body, size_t len, unsigned id_len, bool mariadb, bl_tmap **out,
                      tb_error *err);
void bl_tmap_free(bl_tmap *m);
/* Replace the map's descriptor by one named after `info` (a table as
 * information_schema describes it: names, key, signedness, charsets, labels),
 * for maps without COLUMN_NAME metadata. TB_ERR_NOT_FOUND when the column
 * counts differ (the binlog is then decoded with @1..@n). */
TB_MUST_USE tb_code bl_tmap_apply_info(bl_tmap *m, const evt_table *info, tb_error *err);

/* ------------------------------------------------------------ rows */
typedef struct bl_rowctx {
    evt_mysql_conv *conv;
    tb_buf scratch;       /* text conversion */
    tb_buf json;          /* JSON text */
    tb_buf json2;         /* partial JSON: before image text */
    const char **labels;  /* SET scratch */
    size_t *lens;
    size_t cap_labels;
    float *vec;
    size_t cap_vec;
    const uint8_t **jraw; /* binary JSON of the before image, per column (partial updates) */
    size_t *jraw_len;
    size_t cap_jraw;
    bool warned_partial;
} bl_rowctx;

void bl_rowctx_init(bl_rowctx *c);
void bl_rowctx_free(bl_rowctx *c);

/* Decode one row image at *p (bounded by end) into image img of e, using the
 * present-columns bitmap `present`. partial_bits (PARTIAL_UPDATE_ROWS after
 * image) marks JSON columns that hold a diff to apply to the before image of
 * the same event; NULL otherwise. Advances *p. Errors name table and column. */
TB_MUST_USE tb_code bl_row_decode(bl_rowctx *c, const bl_tmap *m, const uint8_t **p, const uint8_t *end,
                      const uint8_t *present, const uint8_t *partial_bits, evt_event *e, evt_image img,
                      tb_error *err);

/* ------------------------------------------------------------ JSON */
/* MySQL binary JSON -> JSON text appended to out. */
TB_MUST_USE tb_code bl_json_to_text(const uint8_t *p, size_t len, tb_buf *out, tb_error *err);
/* Apply a MySQL JSON diff list (PARTIAL_JSON) to the binary JSON `before`,
 * writing the new document's JSON text to out. */
TB_MUST_USE tb_code bl_json_apply_diff(const uint8_t *before, size_t before_len, const uint8_t *diff, size_t diff_len,
                           tb_buf *out, tb_error *err);

/* ------------------------------------------------------------ GTID sets */
typedef struct bl_gtids bl_gtids;
bl_gtids *bl_gtids_new(void);
void bl_gtids_free(bl_gtids *g);
void bl_gtids_clear(bl_gtids *g);
/* MySQL: add [start, end) for uuid (16 bytes) and tag ("" = untagged). */
/* MySQL's largest GNO: 2^63 - 2 (the exclusive end of an interval, GNO + 1, fits an int64_t) */
#define BL_GNO_MAX (INT64_MAX - 1)
TB_MUST_USE tb_code bl_gtids_add_mysql(bl_gtids *g, const uint8_t uuid[16], const char *tag, int64_t start, int64_t end);
/* MariaDB: set domain's last GTID. */
TB_MUST_USE tb_code bl_gtids_set_mariadb(bl_gtids *g, uint32_t domain, uint32_t server, uint64_t seq);
/* The sequence number of domain's GTID in a MariaDB state; false when it has none. */
bool bl_gtids_mariadb_seq(const bl_gtids *g, uint32_t domain, uint64_t *seq);
/* Parse a text set (either flavor) into g (replacing it). */
TB_MUST_USE tb_code bl_gtids_parse(bl_gtids *g, const char *text, bool mariadb, tb_error *err);
/* Text form appended to out ("" when empty). */
TB_MUST_USE tb_code bl_gtids_format(const bl_gtids *g, bool mariadb, tb_buf *out);
bool bl_gtids_empty(const bl_gtids *g);
/* MySQL: gno of uuid/tag is in g (g may be NULL: false). */
bool bl_gtids_contains_mysql(const bl_gtids *g, const uint8_t uuid[16], const char *tag, int64_t gno);
/* MySQL: every GTID of a is in b. */
bool bl_gtids_subset_mysql(const bl_gtids *a, const bl_gtids *b);
/* Starting a MySQL stream from GTID set start without COM_BINLOG_DUMP_GTID:
 * files[0..n) are the server's binlogs oldest first (SHOW BINARY LOGS),
 * previous[i] the text of files[i]'s Previous_gtids event ("" or NULL:
 * empty). *pick = the newest file whose Previous_gtids is inside start:
 * everything before it was executed, and from it on the decoder skips what
 * start holds (binlog_dec_skip_executed). No such file: TB_ERR_NOT_FOUND, the
 * transactions after start were purged (the error names the oldest file). */
TB_MUST_USE tb_code bl_gtid_start_file(const char *const *files, const char *const *previous, size_t n, const char *start,
                           size_t *pick, tb_error *err);

/* Unpack a MariaDB compressed buffer (1 header byte 0x80|n, n bytes big-endian
 * length, zlib stream) into out (replaced). */
TB_MUST_USE tb_code bl_unzip_mariadb(const uint8_t *p, size_t len, tb_buf *out);

/* ------------------------------------------------------------ decoder state */
/* Shared by binlog_dec.c (input, rows, transactions) and binlog_events.c. */
typedef struct bl_ver {
    char *key;        /* "db\x01table" */
    evt_table *table; /* one reference */
} bl_ver;

/* A prepared XA transaction whose XA COMMIT or XA ROLLBACK has not come yet
 * (binlog_xa.c): its TABLE_MAP and rows events as the binlog had them, each
 * framed as offset 8 | length 4 | the event without its checksum. */
typedef struct bl_xa {
    char *xid;          /* canonical "gtrid-hex,bqual-hex,formatID" */
    tb_buf evs;
    tb_position before; /* the resume position before its prepared group */
} bl_xa;

struct binlog_dec {
    binlog_dec_opts o;
    char *label;
    char *file;
    /* FDE */
    bool have_fde, checksum, mariadb;
    uint8_t ph[256];
    char version[64];
    /* input */
    const uint8_t *cur;
    size_t cur_len;
    uint64_t cur_off;
    bool cur_pending;
    uint64_t ev_off;      /* offset of the outer event being processed */
    uint64_t ev_end;      /* offset after it */
    /* transaction payload */
    tb_buf payload;
    size_t pay_pos;
    bool pay_active;
    /* rows */
    bool rows_active;
    const uint8_t *rp, *rend;
    bl_tmap *rtm;
    evt_op rop;
    bool rpartial, rupdate;
    bool rows_partial; /* the rows event's images lack columns of the table (evt_event_set_partial) */
    uint8_t cols1[512], cols2[512];
    uint64_t rows_off;
    uint32_t rows_index;     /* rows of the current rows event decoded so far */
    uint32_t rows_server_id;
    tb_buf unz;
    /* tables */
    bl_tmap **maps;
    size_t nmaps, capmaps;
    bl_ver *vers;
    size_t nvers;
    /* transaction */
    bool in_tx;
    char txid[160];
    int64_t tx_ts_ms;
    bool tx_ts_set;       /* tx_ts_ms and txid come from a GTID event */
    uint64_t tx_rows;
    int gt_kind; /* 0 none, 1 mysql, 2 mariadb */
    uint8_t gt_uuid[16];
    char gt_tag[40];
    int64_t gt_gno;
    uint32_t gt_domain, gt_server;
    uint64_t gt_seq;
    bl_gtids *gtids;
    bool skip_executed;   /* MySQL GTID start: transactions already in gtids are decoded, not emitted */
    bool tx_skip;         /* the open transaction is one of those */
    uint64_t tx_skipped;
    tb_position pos;
    tb_buf tmp;
    binlog_stmt stmt;     /* the last QUERY event's statement (binlog_query.c) */
    /* XA (binlog_xa.c) */
    bl_xa *xa;            /* pending prepared transactions, oldest first */
    size_t nxa, capxa;
    bool xa_collect;      /* the open group is an XA transaction's prepared part */
    tb_buf xa_cur;        /* its events so far */
    tb_position xa_cur_before;
    long xa_replay;       /* index of the entry being replayed at its XA COMMIT, -1 none */
    size_t xa_rpos;
    uint8_t xa_hdr[BL_HEADER_LEN];
    uint64_t xa_off, xa_end;
    /* output */
    evt_event *ev[2];
    int held, ready;
    bl_rowctx rc;
};

#define FAIL(err, code, ...) tb_error_set(err, code, false, __VA_ARGS__)

void bl_dec_tx_begin(binlog_dec *d, const uint8_t *hdr);
TB_MUST_USE tb_code bl_dec_commit(binlog_dec *d, const uint8_t *hdr);
void bl_dec_drop_maps(binlog_dec *d);
TB_MUST_USE tb_code bl_on_fde(binlog_dec *d, const uint8_t *ev, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_query(binlog_dec *d, int type, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_gtid(binlog_dec *d, int type, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_gtid_tagged(binlog_dec *d, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_previous_gtids(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_maria_gtid_list(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err);
TB_MUST_USE tb_code bl_on_payload(binlog_dec *d, const uint8_t *body, size_t len, tb_error *err);

/* XA (binlog_xa.c). */
void bl_xa_init(binlog_dec *d);
void bl_xa_free(binlog_dec *d);
/* The open group is a prepared XA transaction's (MariaDB GTID flag, MySQL XA START). */
TB_MUST_USE tb_code bl_xa_start(binlog_dec *d);
/* Keep a TABLE_MAP or rows event of the prepared group (checksum stripped when strip). */
TB_MUST_USE tb_code bl_xa_keep(binlog_dec *d, const uint8_t *ev, size_t len, bool strip, uint64_t off);
/* XA_PREPARE event: the prepared group ends (kept until its XA COMMIT), or,
 * one_phase, commits now. */
TB_MUST_USE tb_code bl_xa_on_prepare(binlog_dec *d, const uint8_t *hdr, const uint8_t *body, size_t len, tb_error *err);
/* XA COMMIT / XA ROLLBACK query q[0..n). */
TB_MUST_USE tb_code bl_xa_on_end(binlog_dec *d, bool commit, const uint8_t *hdr, const char *q, size_t n, tb_error *err);
/* The entry being replayed is done: remove it. */
void bl_xa_replayed(binlog_dec *d);
/* The position a consumer may commit: before the oldest pending prepared group. */
const tb_position *bl_xa_commit_pos(const binlog_dec *d);

#endif
