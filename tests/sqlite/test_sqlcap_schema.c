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

/* ------------------------------------------------------------ statements without row events */

/* A value as sqlcap_test_row_text writes SQLite's ("i:5", "t:<hex>", "n", ...). */
static void value_text(const evt_value *v, sqlite3_str *s)
{
    switch (v->kind) {
    case EVT_V_INT: sqlite3_str_appendf(s, "i:%lld", (long long)v->v.i); break;
    case EVT_V_DOUBLE: {
        char b[64];
        snprintf(b, sizeof b, "r:%a", v->v.d);
        sqlite3_str_appendall(s, b);
        break;
    }
    case EVT_V_NULL: sqlite3_str_appendall(s, "n"); break;
    case EVT_V_STRING:
    case EVT_V_BYTES:
        sqlite3_str_appendall(s, v->kind == EVT_V_BYTES ? "b:" : "t:");
        for (size_t k = 0; k < v->v.s.len; k++)
            sqlite3_str_appendf(s, "%02x", (unsigned char)v->v.s.ptr[k]);
        break;
    default: sqlite3_str_appendf(s, "?%d", (int)v->kind); break;
    }
}

/* The next n events as "op table|<image as row text>" lines (the before image
 * of a delete, else the after image); then nothing more within 300 ms. */
static void next_lines(sqlcap *c, char **out, int n)
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
        sqlite3_str *s = sqlite3_str_new(NULL);
        sqlite3_str_appendf(s, "%c %s|", (char)op, evt_table_name(t));
        for (size_t col = 0; col < evt_table_ncols(t); col++) {
            if (col)
                sqlite3_str_appendchar(s, 1, '|');
            value_text(evt_event_value(ev, img, col), s);
        }
        out[k++] = sqlite3_str_finish(s);
    }
    evt_event *ev = NULL;
    cr_assert_eq(sqlcap_next(c, 300, &ev, &err), TB_OK, "%s", err.msg);
    cr_expect_null(ev, "unexpected extra event %c %s", ev ? (char)evt_event_op(ev) : '?',
                   ev ? evt_table_name(evt_event_table(ev)) : "");
}

/* The rows of sql as SQLite reads them, each prefixed with prefix, from a
 * child process (the capture's process must not open and close the file). */
static void source_lines(const char *db, const char *sql, const char *prefix, char **out, int n)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t p = fork();
    if (p == 0) {
        close(fds[0]);
        sqlite3 *h;
        sqlite3_stmt *st;
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
            _exit(1);
        FILE *f = fdopen(fds[1], "w");
        while (sqlite3_step(st) == SQLITE_ROW) {
            char *r = sqlcap_test_row_text(st);
            fprintf(f, "%s%s\n", prefix, r);
            sqlite3_free(r);
        }
        fclose(f);
        _exit(0);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[4096];
    int k = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        cr_assert_lt(k, n, "more rows than expected from %s", sql);
        out[k++] = sqlite3_mprintf("%s", line);
    }
    fclose(f);
    cr_assert_eq(sqlcap_test_wait(p), 0, "query failed: %s", sql);
    cr_assert_eq(k, n, "%s: %d rows, want %d", sql, k, n);
}

static void expect_lines(char **got, char **want, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        cr_expect_str_eq(got[i], want[i], "%s: event %d", what, i);
        sqlite3_free(got[i]);
        sqlite3_free(want[i]);
    }
}

/* With the ddl options of `tributary run` (sqlcap_open from a configuration
 * with ddl.drop.policy=tombstone, ddl.alter.policy=resnapshot): RENAME
 * gives a delete per row under the old name and a read per row under the new
 * one; ADD COLUMN with defaults gives a read per row whose values are the
 * defaults as SQLite reads the old (short) records, with the column's
 * affinity (TEXT DEFAULT 5 reads '5', INTEGER DEFAULT '7' reads 7); ADD
 * COLUMN without a default gives nothing; RENAME COLUMN and DROP COLUMN
 * (which rewrites every row) give a read per row and no other event; DROP
 * TABLE gives a delete per row it had, WITHOUT ROWID too. Every row is
 * compared with what SQLite itself reads from the file. */
static void ddl_rows_case(bool shadow)
{
    tb_log_set_level(TB_LOG_WARN);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/ddl.db", tdir);
    child_sql(db, "PRAGMA journal_mode=WAL; CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT);"
                  "CREATE TABLE k(id INT PRIMARY KEY, n INT) WITHOUT ROWID;"
                  "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<300) "
                  "INSERT INTO a SELECT i, printf('row%d', i) FROM s;"
                  "INSERT INTO k VALUES(1, 10), (2, 20);");
    sqlcap_opts o = {.path = db, .shadow = shadow, .poll_ms = 5, .ddl_drop_rows = true, .ddl_rename_rows = true,
                     .ddl_alter_rows = true};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    char **got = calloc(600, sizeof *got), **want = calloc(600, sizeof *want);
    cr_assert(got && want);

    child_sql(db, "ALTER TABLE a RENAME TO b");
    next_lines(c, got, 600);
    /* deletes under the old name (before images as the rows were), then reads under the new */
    source_lines(db, "SELECT id, v FROM b ORDER BY id", "d a|", want, 300);
    source_lines(db, "SELECT id, v FROM b ORDER BY id", "r b|", want + 300, 300);
    expect_lines(got, want, 600, "rename");

    child_sql(db, "BEGIN; ALTER TABLE b ADD COLUMN w TEXT DEFAULT 5; ALTER TABLE b ADD COLUMN x INTEGER DEFAULT '7';"
                  "ALTER TABLE b ADD COLUMN y REAL DEFAULT 2; ALTER TABLE b ADD COLUMN z BLOB DEFAULT x'00ff'; COMMIT");
    next_lines(c, got, 300);
    source_lines(db, "SELECT id, v, w, x, y, z FROM b ORDER BY id", "r b|", want, 300);
    cr_expect(strstr(want[0], "|t:35|i:7|r:0x1p+1|b:00ff"), "SQLite reads %s", want[0]);
    expect_lines(got, want, 300, "add column with defaults");

    child_sql(db, "ALTER TABLE b ADD COLUMN q TEXT");
    child_sql(db, "UPDATE b SET q = 'set' WHERE id = 5");
    next_lines(c, got, 1);
    source_lines(db, "SELECT id, v, w, x, y, z, q FROM b WHERE id = 5", "u b|", want, 1);
    expect_lines(got, want, 1, "add column without a default: only the update");

    child_sql(db, "ALTER TABLE b RENAME COLUMN v TO vv");
    next_lines(c, got, 300);
    source_lines(db, "SELECT id, vv, w, x, y, z, q FROM b ORDER BY id", "r b|", want, 300);
    expect_lines(got, want, 300, "rename column");

    child_sql(db, "ALTER TABLE b DROP COLUMN x");
    next_lines(c, got, 300);
    source_lines(db, "SELECT id, vv, w, y, z, q FROM b ORDER BY id", "r b|", want, 300);
    expect_lines(got, want, 300, "drop column");

    source_lines(db, "SELECT id, n FROM k ORDER BY id", "d k|", want, 2);
    child_sql(db, "DROP TABLE k");
    next_lines(c, got, 2);
    expect_lines(got, want, 2, "drop table");

    child_sql(db, "INSERT INTO b(id, vv) VALUES(1000, 'after')");
    next_lines(c, got, 1);
    source_lines(db, "SELECT id, vv, w, y, z, q FROM b WHERE id = 1000", "c b|", want, 1);
    expect_lines(got, want, 1, "insert after");
    free(got);
    free(want);
    sqlcap_close(c);
    rm_tmpdir();
}

Test(sqlcap_schema, ddl_rows) { ddl_rows_case(false); }
Test(sqlcap_schema, ddl_rows_shadow) { ddl_rows_case(true); }

/* WARN lines logged while a test runs (tb_log_set_sink). */
static char warns[8192];

static void warn_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)opaque;
    if (level == TB_LOG_WARN && strlen(warns) + strlen(line) + 2 < sizeof warns) {
        strcat(warns, line);
        strcat(warns, "\n");
    }
}

/* Poll c until the WARN log holds needle (10 s); no event may come meanwhile. */
static void wait_warn(sqlcap *c, const char *needle)
{
    tb_error err;
    int64_t deadline = wall_ms() + 10000;
    while (!strstr(warns, needle)) {
        evt_event *ev = NULL;
        cr_assert_eq(sqlcap_next(c, 50, &ev, &err), TB_OK, "%s", err.msg);
        cr_assert_null(ev, "unexpected event %c %s", ev ? (char)evt_event_op(ev) : '?',
                       ev ? evt_table_name(evt_event_table(ev)) : "");
        cr_assert_lt(wall_ms(), deadline, "no WARN with '%s'; WARNs:\n%s", needle, warns);
    }
}

/* The policies' `warn` (WAL mode without the ddl options) and trigger mode,
 * which cannot send these rows: no events, and a WARN naming the table for
 * a DROP and for an ALTER that changes what rows read as. */
static void ddl_warn_case(bool trigger)
{
    tb_log_set_level(TB_LOG_WARN);
    warns[0] = 0;
    tb_log_set_sink(warn_sink, NULL);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/warn.db", tdir);
    child_sql(db, trigger ? "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT);"
                            "INSERT INTO a VALUES(1, 'x'); INSERT INTO b VALUES(1, 'y');"
                          : "PRAGMA journal_mode=WAL; CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT);"
                            "CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES(1, 'x');"
                            "INSERT INTO b VALUES(1, 'y');");
    sqlcap_opts o = {.path = db, .trigger_mode = trigger, .poll_ms = 5};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    child_sql(db, "DROP TABLE a");
    wait_warn(c, trigger ? "table a is gone (dropped or renamed)" : "table a dropped: its topic is left as it is");
    child_sql(db, "ALTER TABLE b ADD COLUMN w TEXT DEFAULT 'x'");
    wait_warn(c, trigger ? "table b altered: rows written before keep their old values"
                         : "table b altered (a column added with a default, renamed or dropped): its rows keep");
    tb_log_set_sink(NULL, NULL);
    sqlcap_close(c);
    rm_tmpdir();
}

Test(sqlcap_schema, ddl_warn_wal) { ddl_warn_case(false); }
Test(sqlcap_schema, ddl_warn_trigger) { ddl_warn_case(true); }

/* Trigger mode: changes logged just before their table was dropped or
 * renamed, drained after, are still delivered (under the name they were
 * made under), with the table's WARN. */
Test(sqlcap_schema, trigger_changes_before_drop_or_rename)
{
    tb_log_set_level(TB_LOG_WARN);
    warns[0] = 0;
    tb_log_set_sink(warn_sink, NULL);
    mk_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/trg.db", tdir);
    child_sql(db, "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT);"
                  "INSERT INTO b VALUES(1, 'y');");
    sqlcap_opts o = {.path = db, .trigger_mode = true, .poll_ms = 1000};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    /* one process, one go: the reader cannot drain in between */
    child_sql(db, "INSERT INTO a VALUES(2, 'z'); DROP TABLE a; UPDATE b SET v = 'u' WHERE id = 1;"
                  "ALTER TABLE b RENAME TO b2");
    char *got[3];
    next_lines(c, got, 2);
    /* after the triggers were regenerated: the new name */
    child_sql(db, "INSERT INTO b2 VALUES(3, 'new')");
    next_lines(c, got + 2, 1);
    cr_expect_str_eq(got[0], "c a|i:2|t:7a");
    cr_expect_str_eq(got[1], "u b|i:1|t:75");
    cr_expect_str_eq(got[2], "c b2|i:3|t:6e6577");
    for (int i = 0; i < 3; i++)
        sqlite3_free(got[i]);
    cr_expect(strstr(warns, "table a is gone (dropped or renamed)"), "WARNs:\n%s", warns);
    cr_expect(strstr(warns, "table b is gone (dropped or renamed)"), "WARNs:\n%s", warns);
    cr_expect_null(strstr(warns, "unknown table"), "WARNs:\n%s", warns);
    tb_log_set_sink(NULL, NULL);
    sqlcap_close(c);
    rm_tmpdir();
}
