/*
 * tb_position: where a source is, at a transaction boundary.
 *
 * MySQL/MariaDB: binlog file + offset of the next event to read after the
 * transaction, the executed GTID set (MySQL "uuid:1-5[:tag:1-3],uuid2:1-9";
 * MariaDB "0-1-7,1-2-3"), the server id of the source, and the index of the
 * row within the event (for events that are resumed mid-transaction; 0 at a
 * boundary). SQLite WAL: generation salts, commit frame, that frame's stored
 * checksum, database size in pages, our generation counter, and the -wal inode.
 * SQLite trigger mode: change-log sequence.
 *
 * Text form (stable; used in offsets files, `offsets show|set` and logs):
 *   none
 *   mysql;server_id=1;file=mysql-bin.000003;pos=1234;row=0;gtid=<set>
 *   mariadb;server_id=1;file=mysql-bin.000003;pos=1234;row=0;gtid=0-1-7
 *   sqlite-wal;salt1=1;salt2=2;frame=10;cksum1=3;cksum2=4;db_pages=5;gen_seq=0;inode=99
 *   sqlite-log;seq=42
 * Values are percent-encoded where they contain '%', ';', '=' or bytes
 * outside printable ASCII. Key order is fixed on output; any order is read.
 * The JSON form lives in schema/ (evt_position_to_json), since core uses libc only.
 *
 * Ownership: a tb_position owns `file` and `gtid_set`. tb_position_free()
 * releases them (NULL-safe); tb_position_copy() makes a deep copy.
 */
#ifndef TB_POSITION_H
#define TB_POSITION_H

#include <stdbool.h>
#include <stdint.h>
#include "tb_buf.h"
#include "tb_error.h"

typedef enum tb_pos_kind {
    TB_POS_NONE = 0,
    TB_POS_MYSQL,      /* MySQL or MariaDB binlog; see `mariadb` */
    TB_POS_SQLITE_WAL,
    TB_POS_SQLITE_LOG,
} tb_pos_kind;

typedef struct tb_position {
    tb_pos_kind kind;
    /* TB_POS_MYSQL */
    bool mariadb;       /* GTID flavour and connector name */
    uint32_t server_id;
    char *file;         /* owned; NULL when resuming by GTID only */
    uint64_t pos;
    uint64_t row;
    char *gtid_set;     /* owned; NULL or "" when GTIDs are off */
    /* TB_POS_SQLITE_WAL */
    uint32_t salt1, salt2;
    uint32_t frame;     /* commit frame number (1-based), 0 = start of generation */
    uint32_t cksum1, cksum2;
    uint32_t db_pages;
    uint64_t gen_seq;
    uint64_t inode;
    /* TB_POS_SQLITE_LOG */
    int64_t seq;
} tb_position;

void tb_position_init(tb_position *p);       /* kind NONE, all zero */
void tb_position_free(tb_position *p);       /* frees owned strings; p may be NULL; leaves NONE */
TB_MUST_USE tb_code tb_position_copy(tb_position *dst, const tb_position *src); /* dst is overwritten (freed first) */
TB_MUST_USE tb_code tb_position_set_file(tb_position *p, const char *file);   /* copies */
TB_MUST_USE tb_code tb_position_set_gtid(tb_position *p, const char *gtid_set); /* copies; NULL clears */
bool tb_position_equal(const tb_position *a, const tb_position *b);

/* Append the text form to out. */
tb_code tb_position_format(const tb_position *p, tb_buf *out);
/* Parse the text form into p (which is freed first). err names the bad part. */
TB_MUST_USE tb_code tb_position_parse(const char *text, tb_position *p, tb_error *err);

#endif
