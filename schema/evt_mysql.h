/*
 * evt_mysql: MySQL/MariaDB value helpers shared by the binlog decoder
 * (capture/mysql) and the snapshotter (snapshot/), so that a row looks the
 * same whether it was read with SELECT or decoded from the binlog (DESIGN 5).
 *
 *  - charsets: collation id -> charset, text -> UTF-8 (utf8mb3/utf8mb4 pass
 *    through, latin1 by MySQL's own cp1252 table, binary stays bytes, every
 *    other charset through iconv);
 *  - DECIMAL: the binary form of a NEWDECIMAL column -> exact text with
 *    exactly `scale` decimals;
 *  - temporals: the packed binlog encodings -> evt_temporal;
 *  - column types: binlog type code + metadata -> evt_type and a source type.
 *
 * Nothing here allocates except evt_mysql_conv (iconv handle cache) and the
 * tb_buf a caller passes in.
 */
#ifndef EVT_MYSQL_H
#define EVT_MYSQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "evt.h"
#include "tb_buf.h"
#include "tb_error.h"

/* ------------------------------------------------------------ binlog type codes */

enum {
    EVT_MY_DECIMAL = 0, EVT_MY_TINY = 1, EVT_MY_SHORT = 2, EVT_MY_LONG = 3, EVT_MY_FLOAT = 4,
    EVT_MY_DOUBLE = 5, EVT_MY_NULL = 6, EVT_MY_TIMESTAMP = 7, EVT_MY_LONGLONG = 8, EVT_MY_INT24 = 9,
    EVT_MY_DATE = 10, EVT_MY_TIME = 11, EVT_MY_DATETIME = 12, EVT_MY_YEAR = 13, EVT_MY_NEWDATE = 14,
    EVT_MY_VARCHAR = 15, EVT_MY_BIT = 16, EVT_MY_TIMESTAMP2 = 17, EVT_MY_DATETIME2 = 18,
    EVT_MY_TIME2 = 19, EVT_MY_TYPED_ARRAY = 20,
    EVT_MY_VECTOR = 242, EVT_MY_INVALID = 243, EVT_MY_BOOL = 244, EVT_MY_JSON = 245,
    EVT_MY_NEWDECIMAL = 246, EVT_MY_ENUM = 247, EVT_MY_SET = 248, EVT_MY_TINY_BLOB = 249,
    EVT_MY_MEDIUM_BLOB = 250, EVT_MY_LONG_BLOB = 251, EVT_MY_BLOB = 252, EVT_MY_VAR_STRING = 253,
    EVT_MY_STRING = 254, EVT_MY_GEOMETRY = 255,
};

/* ------------------------------------------------------------ charsets */

typedef enum evt_my_charset_kind {
    EVT_CS_UNKNOWN = 0, /* no charset information: bytes passed through as (possibly invalid) UTF-8 */
    EVT_CS_UTF8,        /* utf8mb3, utf8mb4, ascii: pass through */
    EVT_CS_LATIN1,      /* MySQL latin1 (cp1252 with the 5 undefined bytes mapped to U+0081..) */
    EVT_CS_BINARY,      /* bytes: base64 in JSON */
    EVT_CS_ICONV,       /* converted with iconv */
} evt_my_charset_kind;

/* Charset name of a collation id ("utf8mb4", "latin1", "binary", ...); NULL if unknown. */
const char *evt_mysql_collation_charset(uint32_t collation_id);
/* Kind of a charset name (NULL or unknown name -> EVT_CS_UNKNOWN). */
evt_my_charset_kind evt_mysql_charset_kind(const char *charset);
/* The library's own static copy of a charset name (NULL if unknown). */
const char *evt_mysql_charset_static(const char *charset);
/* Most bytes one character takes in the charset (utf8mb4 4, utf8mb3 3, ucs2
 * 2, latin1 1, ...); 1 for NULL or an unknown name. Turns the byte lengths of
 * the binlog's column metadata into the character lengths of CHAR(n). */
unsigned evt_mysql_charset_mbmaxlen(const char *charset);

/* A small cache of iconv handles, one per charset. Not thread-safe: one per
 * decoder / snapshot connection. evt_mysql_conv_free(NULL) is a no-op. */
typedef struct evt_mysql_conv evt_mysql_conv;
evt_mysql_conv *evt_mysql_conv_new(void);
void evt_mysql_conv_free(evt_mysql_conv *c);

/* Convert text in `charset` (a MySQL charset name) to UTF-8, appended to out.
 * utf8/ascii/unknown: copied as is. latin1: own table. Others: iconv; an
 * invalid sequence is copied byte for byte (the JSON writer then keeps it as
 * \udcXX), so no data is ever lost; a charset iconv does not know is copied
 * as is. Returns TB_ERR_NOMEM on allocation failure. */
TB_MUST_USE tb_code evt_mysql_to_utf8(evt_mysql_conv *c, const char *charset, const char *in, size_t len, tb_buf *out);

/* ------------------------------------------------------------ DECIMAL */

/* Bytes a NEWDECIMAL(precision, scale) takes in binary form; 0 if invalid. */
size_t evt_mysql_decimal_bin_size(unsigned precision, unsigned scale);
/* Binary NEWDECIMAL -> text "-123.4500" (exactly `scale` decimals, at least one
 * integer digit). out must hold precision + 3 bytes (<= 70). Returns the text
 * length, or 0 when len is too small or the value is malformed. */
size_t evt_mysql_decimal_text(const uint8_t *bin, size_t len, unsigned precision, unsigned scale,
                              char *out, size_t out_size);

/* ------------------------------------------------------------ temporals */

/* Each fills *t (zeroed first) from a binlog cell. fsp is 0..6 where given.
 * They never fail: malformed input gives out-of-range fields, printed as is. */
void evt_mysql_date_from_u24(uint32_t v, evt_temporal *t);                 /* DATE / NEWDATE */
void evt_mysql_time_from_i24(int32_t v, evt_temporal *t);                  /* old TIME: [-]HHMMSS */
void evt_mysql_datetime_from_u64(uint64_t v, evt_temporal *t);             /* old DATETIME YYYYMMDDhhmmss */
void evt_mysql_timestamp_from_epoch(int64_t sec, uint32_t usec, unsigned fsp, evt_temporal *t); /* UTC */
/* DATETIME2 / TIME2 / TIMESTAMP2 (MySQL 5.6+ binary forms). p points at the
 * cell; the needed size is evt_mysql_temporal2_size(type, fsp). */
size_t evt_mysql_temporal2_size(int binlog_type, unsigned fsp);
void evt_mysql_datetime2(const uint8_t *p, unsigned fsp, evt_temporal *t);
void evt_mysql_time2(const uint8_t *p, unsigned fsp, evt_temporal *t);
void evt_mysql_timestamp2(const uint8_t *p, unsigned fsp, evt_temporal *t);

/* ------------------------------------------------------------ types */

/* Column metadata `meta` as the TABLE_MAP event gives it, packed in a uint16:
 * VARCHAR/VAR_STRING: max byte length (little-endian on the wire);
 * two-byte metadata of NEWDECIMAL (precision, scale), STRING (real type, length),
 * BIT (bits % 8, bytes): first byte << 8 | second byte;
 * one-byte metadata (FLOAT/DOUBLE size, BLOB/JSON/GEOMETRY/VECTOR length bytes,
 * fsp of the temporal2 types): the byte. */

/* evt_type of a binlog column type (the real type for STRING-with-ENUM/SET
 * metadata must be passed in, see evt_mysql_string_real_type). `binary` says
 * the column's charset is binary (BINARY/VARBINARY/BLOB vs CHAR/VARCHAR/TEXT). */
evt_type evt_mysql_type_of(int binlog_type, uint16_t meta, bool binary);
/* For STRING columns: the real type (STRING, ENUM or SET) and max byte length. */
int evt_mysql_string_real_type(uint16_t meta, uint32_t *max_len);
/* A source type text, e.g. "int unsigned", "decimal(10,2)", "datetime(3)",
 * "varchar(255)" (length in bytes when the charset is unknown), appended to out. */
TB_MUST_USE tb_code evt_mysql_source_type(int binlog_type, uint16_t meta, bool is_unsigned, bool binary, tb_buf *out);

/* MariaDB's UUID, INET6 and INET4 columns (10.7+) are stored, and logged in
 * the binlog, as BINARY(16) / BINARY(16) / BINARY(4) (the binlog strips the
 * trailing 0x00 bytes); information_schema and SELECT give their text form.
 * evt_mysql_text_type: 1 uuid, 2 inet6, 3 inet4 for such a source_type, else 0
 * (source_type may be NULL). evt_mysql_text_form: the text form of the stored
 * bytes p[0..n) (n up to the type's size; the rest is 0x00), as the server
 * prints it: uuid "123e4567-e89b-12d3-a456-426614174000", inet6 as inet_ntop
 * ("2001:db8::1", "::ffff:1.2.3.4"), inet4 "192.168.1.1"; out is replaced.
 * TB_ERR_INVALID when n is over the size. */
int evt_mysql_text_type(const char *source_type);
TB_MUST_USE tb_code evt_mysql_text_form(int text_type, const uint8_t *p, size_t n, tb_buf *out);

#endif
