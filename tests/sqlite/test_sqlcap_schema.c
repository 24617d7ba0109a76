/*
 * SQLite capture: table renames, dropped tables, DELETE without WHERE (the
 * truncate optimization), dynamic typing (values by the
 * declared type) and commit timestamps (observation time), in WAL mode (mode A
 * and B) and trigger mode. Changes are made by child processes, as an
 * application would; the reader runs in the test process.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap.h"
#include "sqlcap_test_util.h"
#include "tb_log.h"

static char tdir[256];

static void mk_tmpdir(void)
{
    snprintf(tdir, sizeof tdir, "/tmp/sqlcap_schema_XXXXXX");
    cr_assert_not_null(mkdtemp(tdir));
}

static void rm_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup of %s failed\n", tdir);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run SQL in a separate process (an application connection). */
static void child_sql(const char *db, const char *sql)
{
    cr_assert_eq(sqlcap_test_sql_child(db, sql, 1), 0, "child_sql failed: %s", sql);
}

/* One event summarised: "c b 4" (op, table, first key column as integer). */
typedef struct got_ev {
    char sum[64];
    int64_t ts;
    evt_value v[2][4]; /* kinds and scalars only */
    char bytes[2][4][32];
    size_t blen[2][4];
} got_ev;

/* Collect n events (deadline 10 s); every event must carry a commit time within [t0, now]. */
static void collect(sqlcap *c, got_ev *out, int n, int64_t t0)
{
    tb_error err;
    int64_t deadline = wall_ms() + 10000;
    for (int k = 0; k < n;) {
        evt_event *ev = NULL;
        cr_assert_eq(sqlcap_next(c, 100, &ev, &err), TB_OK, "%s", err.msg);
        if (!ev) {
            cr_assert_lt(wall_ms(), deadline, "timed out after %d of %d events", k, n);
            continue;
        }
        evt_op op = evt_event_op(ev);
        const evt_table *t = evt_event_table(ev);
        evt_image img = op == EVT_OP_DELETE ? EVT_BEFORE : EVT_AFTER;
        snprintf(out[k].sum, sizeof out[k].sum, "%c %s %lld", (char)op, evt_table_name(t),
                 (long long)evt_event_value(ev, img, 0)->v.i);
        out[k].ts = evt_event_commit_ts_ms(ev);
        cr_expect(out[k].ts >= t0 && out[k].ts <= wall_ms(), "event %s: commit time %lld not in [%lld, now]",
                  out[k].sum, (long long)out[k].ts, (long long)t0);
        for (int i = 0; i < 2; i++)
            for (size_t col = 0; col < 4 && col < evt_table_ncols(t); col++) {
                const evt_value *v = evt_event_value(ev, (evt_image)i, col);
                out[k].v[i][col] = *v;
                if (v->kind == EVT_V_STRING || v->kind == EVT_V_BYTES) {
                    size_t m = v->v.s.len < 32 ? v->v.s.len : 32;
                    memcpy(out[k].bytes[i][col], v->v.s.ptr, m);
                    out[k].blen[i][col] = v->v.s.len;
                }
            }
        k++;
    }
    /* and nothing else */
    evt_event *ev = NULL;
    cr_assert_eq(sqlcap_next(c, 300, &ev, &err), TB_OK, "%s", err.msg);
    cr_expect_null(ev, "unexpected extra event %c %s", ev ? (char)evt_event_op(ev) : '?',
                   ev ? evt_table_name(evt_event_table(ev)) : "");
}

static void rename_case(bool shadow)
{
    tb_log_set_level(TB_LOG_WARN);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/ren.db", tdir);
    child_sql(db, "PRAGMA journal_mode=WAL; CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT);"
                  "CREATE TABLE keep(k TEXT PRIMARY KEY, n INT) WITHOUT ROWID;"
                  "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<300) "
                  "INSERT INTO a SELECT i, printf('row%d', i) FROM s;"
                  "INSERT INTO keep VALUES('x', 1);");
    sqlcap_opts o = {.path = db, .shadow = shadow, .poll_ms = 5};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    int64_t t0 = wall_ms();
    /* a plain rename: no row events at all */
    child_sql(db, "ALTER TABLE a RENAME TO b");
    child_sql(db, "UPDATE b SET v='x' WHERE id=2");
    /* rename and row changes in one transaction: the changes under the new name */
    child_sql(db, "BEGIN; ALTER TABLE b RENAME TO c; DELETE FROM c WHERE id=3; INSERT INTO c VALUES(301,'n');"
                  "UPDATE c SET v='y' WHERE id=4; COMMIT");
    /* drop and create another definition in one transaction: not a rename */
    child_sql(db, "BEGIN; DROP TABLE keep; CREATE TABLE z(k TEXT PRIMARY KEY, n INT, m INT) WITHOUT ROWID;"
                  "INSERT INTO z VALUES('y', 2, 3); COMMIT");
    got_ev g[5];
    collect(c, g, 5, t0);
    cr_expect_str_eq(g[0].sum, "u b 2");
    cr_expect_eq(g[0].v[0][1].kind, EVT_V_STRING);
    cr_expect(g[0].blen[0][1] == 4 && memcmp(g[0].bytes[0][1], "row2", 4) == 0, "before-image of the renamed table");
    cr_expect_str_eq(g[1].sum, "d c 3");
    cr_expect_str_eq(g[2].sum, "u c 4");
    cr_expect_str_eq(g[3].sum, "c c 301");
    cr_expect_eq(g[4].v[1][0].kind, EVT_V_STRING);
    cr_expect(strncmp(g[4].sum, "c z ", 4) == 0, "insert into the new table z, got %s", g[4].sum);
    for (int i = 1; i < 5; i++)
        cr_expect_geq(g[i].ts, g[i - 1].ts, "commit times do not go back");
    sqlcap_close(c);
    rm_tmpdir();
}

Test(sqlcap_schema, rename_is_not_drop_create) { rename_case(false); }
Test(sqlcap_schema, rename_is_not_drop_create_shadow) { rename_case(true); }

/* TEXT in a BLOB column -> bytes; BLOB in a TEXT or untyped column -> a string
 * of the same bytes; numbers stay numbers. */
static void check_types(const got_ev *g)
{
    /* row 1: b BLOB = 'hi' (TEXT), s TEXT = x'00ff41' (BLOB), n = x'41' (BLOB) */
    cr_expect_eq(g[0].v[1][1].kind, EVT_V_BYTES, "TEXT in a BLOB column is bytes");
    cr_expect(g[0].blen[1][1] == 2 && memcmp(g[0].bytes[1][1], "hi", 2) == 0);
    cr_expect_eq(g[0].v[1][2].kind, EVT_V_STRING, "BLOB in a TEXT column is a string of its bytes");
    cr_expect(g[0].blen[1][2] == 3 && memcmp(g[0].bytes[1][2], "\x00\xff\x41", 3) == 0);
    cr_expect_eq(g[0].v[1][3].kind, EVT_V_STRING, "BLOB in an untyped column is a string of its bytes");
    cr_expect(g[0].blen[1][3] == 1 && g[0].bytes[1][3][0] == 'A');
    /* row 2: b BLOB = 42 (INTEGER), s = 'ok', n = 1.5 */
    cr_expect_eq(g[1].v[1][1].kind, EVT_V_INT, "INTEGER in a BLOB column stays a number");
    cr_expect_eq(g[1].v[1][1].v.i, 42);
    cr_expect_eq(g[1].v[1][2].kind, EVT_V_STRING);
    cr_expect_eq(g[1].v[1][3].kind, EVT_V_DOUBLE);
    /* row 3: b BLOB = x'0001' (BLOB) */
    cr_expect_eq(g[2].v[1][1].kind, EVT_V_BYTES);
    cr_expect(g[2].blen[1][1] == 2 && memcmp(g[2].bytes[1][1], "\x00\x01", 2) == 0);
}

#define TYPES_SQL                                                                                                     \
    "INSERT INTO t VALUES(1, 'hi', x'00ff41', x'41'); INSERT INTO t VALUES(2, 42, 'ok', 1.5);"                         \
    "INSERT INTO t VALUES(3, x'0001', NULL, NULL);"

Test(sqlcap_schema, values_by_declared_type_wal)
{
    tb_log_set_level(TB_LOG_WARN);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/ty.db", tdir);
    child_sql(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB, s TEXT, n);");
    sqlcap_opts o = {.path = db, .poll_ms = 5};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    int64_t t0 = wall_ms();
    child_sql(db, TYPES_SQL);
    got_ev g[3];
    collect(c, g, 3, t0);
    check_types(g);
    sqlcap_close(c);
    rm_tmpdir();
}

Test(sqlcap_schema, values_by_declared_type_trigger)
{
    tb_log_set_level(TB_LOG_WARN);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/tt.db", tdir);
    child_sql(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB, s TEXT, n);");
    sqlcap_opts o = {.path = db, .trigger_mode = true, .poll_ms = 5};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    int64_t t0 = wall_ms();
    child_sql(db, TYPES_SQL);
    got_ev g[3];
    collect(c, g, 3, t0);
    check_types(g);
    sqlcap_close(c);
    rm_tmpdir();
}

/* DELETE FROM t without WHERE: SQLite's truncate optimization clears the
 * table's b-tree at once (no per-row work in the writer); the capture must
 * still yield one delete per row, with its before image, and nothing for a
 * table beside it. 1000 rows span many pages (interior and leaf). */
static void delete_all_case(bool shadow)
{
    tb_log_set_level(TB_LOG_WARN);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/delall.db", tdir);
    child_sql(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
                  "CREATE TABLE w(k TEXT PRIMARY KEY, n INT) WITHOUT ROWID;"
                  "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<1000) "
                  "INSERT INTO t SELECT i, printf('row%05d', i) FROM s;"
                  "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<500) "
                  "INSERT INTO w SELECT printf('k%05d', i), i FROM s;");
    sqlcap_opts o = {.path = db, .shadow = shadow, .poll_ms = 5};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    int64_t t0 = wall_ms();
    child_sql(db, "DELETE FROM t");
    child_sql(db, "DELETE FROM w");
    child_sql(db, "INSERT INTO t VALUES(5000, 'after')");
    got_ev *g = calloc(1501, sizeof(*g));
    cr_assert_not_null(g);
    collect(c, g, 1501, t0);
    bool seen[1001] = {false};
    for (int i = 0; i < 1000; i++) {
        int id = 0;
        cr_assert_eq(sscanf(g[i].sum, "d t %d", &id), 1, "event %d: want a delete of t, got %s", i, g[i].sum);
        cr_assert(id >= 1 && id <= 1000 && !seen[id], "event %d: %s", i, g[i].sum);
        seen[id] = true;
        char want[16];
        snprintf(want, sizeof want, "row%05d", id);
        cr_expect(g[i].blen[0][1] == 8 && memcmp(g[i].bytes[0][1], want, 8) == 0, "before image of %d", id);
    }
    for (int i = 1000; i < 1500; i++)
        cr_assert_eq(strncmp(g[i].sum, "d w ", 4), 0, "event %d: want a delete of w, got %s", i, g[i].sum);
    cr_expect_str_eq(g[1500].sum, "c t 5000");
    free(g);
    sqlcap_close(c);
    rm_tmpdir();
}

Test(sqlcap_schema, delete_all_rows_one_delete_each) { delete_all_case(false); }
Test(sqlcap_schema, delete_all_rows_one_delete_each_shadow) { delete_all_case(true); }
