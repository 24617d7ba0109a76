/*
 * Helpers of the snapshot tests: the testenv connection, a cfg for it, SQL
 * shortcuts, and a table image (map from canonical key JSON to row JSON)
 * that events are applied to.
 */
#ifndef SNAP_TEST_UTIL_H
#define SNAP_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mysql.h>

#include "cfg.h"
#include "evt.h"
#include "tb_position.h"

/* Set in forked helper processes: failures log and _exit(70) instead of
 * reporting to Criterion. */
extern bool st_in_child;

/* Fails the test unless the TRIBUTARY_TEST_MYSQL_* variables are set. */
void st_require_env(void);
/* A cfg for the testenv MariaDB (sink=stdout, offsets.storage=file in dir),
 * plus extra "key=value" settings (NULL-terminated). Caller frees. */
cfg *st_cfg(const char *offsets_dir, const char *const *extra);
MYSQL *st_connect(void);
void st_sql(MYSQL *my, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t st_sql_int(MYSQL *my, const char *sql);
/* Current binlog end of the server. */
void st_current_position(MYSQL *my, tb_position *pos);
/* a >= b (same server; binlog files sort by name). */
bool st_pos_ge(const tb_position *a, const tb_position *b);
/* A fresh temp dir (caller frees the string; removed by st_rmdir). */
char *st_tmpdir(void);
void st_rmdir(const char *dir);

/* ---- table image */
typedef struct st_map st_map;
st_map *st_map_new(void);
void st_map_free(st_map *m);
void st_map_put(st_map *m, const char *key, const char *row);
void st_map_del(st_map *m, const char *key);
const char *st_map_get(const st_map *m, const char *key);
size_t st_map_size(const st_map *m);
/* Apply a change event (c/u/r: put after; d: delete before; key change: both). */
void st_map_apply(st_map *m, const evt_event *ev);
/* Compare; on difference log up to 5 examples and return the number of differing keys. */
size_t st_map_diff(const st_map *a, const st_map *b, const char *what);
/* The image of one table read by a fresh snapshot (tables.include=^db\.table$). */
st_map *st_map_from_snapshot(const char *db, const char *table);

#endif

/* ---- background writer: a child process running random inserts, updates
 * and deletes (autocommit, some in 3-statement transactions) on
 * db.table (id INT PRIMARY KEY, k INT, s VARCHAR(64), n BIGINT), ids above
 * first_new_id for inserts. */
typedef struct st_writer st_writer;
st_writer *st_writer_start(const char *db, const char *table, int64_t max_id, int64_t first_new_id);
uint64_t st_writer_ops(const st_writer *w);
/* Stop and wait; returns the number of operations done. Fails the test if the writer failed. */
uint64_t st_writer_stop(st_writer *w);
/* Poll fn(arg) every 20 ms until it is true or timeout_ms passes. */
bool st_wait(bool (*fn)(void *), void *arg, int timeout_ms);
/* Create db.table with n rows (ids 1..n) of the writer's shape. */
void st_make_table(MYSQL *my, const char *db, const char *table, int64_t n);

/* ---- binlog reader for the tests: live replication (binlog_open) from
 * `start`, failing the test on errors. Events are borrowed until the next call. */
typedef struct st_reader st_reader;
st_reader *st_reader_open(const cfg *c, const tb_position *start);
/* Next event or NULL after timeout_ms without one. Fails the test on errors. */
evt_event *st_reader_next(st_reader *r, int timeout_ms);
/* Position after the last complete transaction returned. */
const tb_position *st_reader_position(const st_reader *r);
void st_reader_close(st_reader *r);
