/*
 * test_sqlcap_pin: the coarse pin (sqlcap_opts.repin_ms, default 1000 ms;
 * sqlite-wal.md 5) still lets the WAL rewind. The reader keeps its read mark
 * while it consumes, but once an application checkpoint has backfilled
 * everything it must leapfrog at once into WAL_READ_LOCK(0), so that the
 * application's next write resets the WAL (a new generation) and the change
 * after the reset arrives. A reader that kept its read-mark slot there would
 * block the reset (walRestartLog needs every read-mark slot free).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap.h"
#include "sqlcap_test_util.h"
#include "tb_buf.h"
#include "tb_log.h"

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Child: PASSIVE checkpoint; exit 0 when every frame was backfilled, 3 when not. */
static int checkpoint_child(const char *db)
{
    pid_t p = fork();
    if (p == 0) {
        sqlite3 *h;
        int log = -1, ck = -1;
        if (sqlite3_open(db, &h) != SQLITE_OK || sqlite3_exec(h, "SELECT 1 FROM sqlite_schema", NULL, NULL, NULL) ||
            sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck) != SQLITE_OK)
            _exit(1);
        sqlite3_close(h);
        _exit(log > 0 && log == ck ? 0 : 3);
    }
    return sqlcap_test_wait(p);
}

/* Events until none comes for quiet_ms; returns how many. */
static int drain(sqlcap *c, int quiet_ms)
{
    int n = 0;
    tb_error err;
    for (;;) {
        evt_event *ev;
        cr_assert_eq(sqlcap_next(c, quiet_ms, &ev, &err), TB_OK, "%s", err.msg);
        if (!ev)
            return n;
        n++;
    }
}

/* repin_ms 0: the default interval; a huge one leaves only the idle rule to
 * move the pin up to mxFrame before the application's checkpoint */
static void rewind_under_coarse_pin(bool shadow, int repin_ms)
{
    tb_log_set_level(TB_LOG_WARN);
    char dir[] = "/tmp/sqlcap_pin_XXXXXX", db[300];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/pin.db", dir);
    cr_assert_eq(sqlcap_test_sql_child(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);", 1),
                 0);
    sqlcap_opts o = {.path = db, .shadow = shadow, .poll_ms = 5, .repin_ms = repin_ms};
    sqlcap *c = NULL;
    tb_error err;
    cr_assert_eq(sqlcap_open_opts(&o, NULL, &c, &err), TB_OK, "%s", err.msg);
    /* a few commits first, consumed: the pin is then a read-mark slot near
     * the start of the WAL (on an empty WAL it would be lock 0, never kept) */
    cr_assert_eq(sqlcap_test_sql_child(db,
                                       "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<10) "
                                       "INSERT INTO t SELECT 10000 + i, 'first' FROM s;",
                                       1),
                 0);
    cr_assert_eq(drain(c, 50), 10);
    /* the application commits 500 transactions of one 3000-byte row each
     * (more than 1000 frames: its autocheckpoint then runs after every commit
     * and is held back by the pin) */
    tb_buf sql;
    tb_buf_init(&sql, 0);
    for (int i = 1; i <= 500; i++)
        cr_assert_eq(tb_buf_printf(&sql, "INSERT INTO t VALUES(%d, printf('%%.3000c', 'x'));", i), TB_OK);
    cr_assert_eq(sqlcap_test_sql_child(db, sql.data, 1), 0);
    tb_buf_free(&sql);
    cr_assert_eq(drain(c, 500), 500);
    sqlcap_stats st;
    sqlcap_get_stats(c, &st);
    uint64_t gens = st.generations;
    /* caught up. Once the writer is idle (100 ms) or within one repin interval
     * the pin moves to mxFrame; then an application checkpoint backfills
     * everything (retried until it does) */
    int64_t deadline = mono_ms() + 15000;
    int full = 3;
    while ((full = checkpoint_child(db)) == 3 && mono_ms() < deadline)
        cr_assert_eq(drain(c, 50), 0);
    cr_assert_eq(full, 0, "no application checkpoint backfilled the whole WAL in 15 s");
    /* the reader's next poll must leapfrog into lock 0 ... */
    cr_assert_eq(drain(c, 50), 0);
    /* ... so this write rewinds the WAL */
    cr_assert_eq(sqlcap_test_sql_child(db, "INSERT INTO t VALUES(1000, 'after the reset');", 1), 0);
    deadline = mono_ms() + 10000;
    int got = 0;
    while (!got && mono_ms() < deadline) {
        evt_event *ev;
        cr_assert_eq(sqlcap_next(c, 100, &ev, &err), TB_OK, "%s", err.msg);
        if (ev) {
            cr_assert_eq(evt_event_op(ev), EVT_OP_CREATE);
            cr_assert_eq(evt_event_value(ev, EVT_AFTER, 0)->v.i, 1000);
            got = 1;
        }
    }
    cr_assert(got, "the insert after the checkpoint never arrived");
    sqlcap_get_stats(c, &st);
    cr_expect_eq(st.generations, gens + 1, "the WAL was not rewound (generations %llu -> %llu)",
                 (unsigned long long)gens, (unsigned long long)st.generations);
    sqlcap_close(c);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

Test(sqlcap_pin, rewind_under_coarse_pin_mode_a) { rewind_under_coarse_pin(false, 0); }
Test(sqlcap_pin, rewind_under_coarse_pin_mode_b) { rewind_under_coarse_pin(true, 0); }
/* the pin stays where the first poll put it while the 500 commits are
 * consumed; only the idle rule (writer idle 100 ms) moves it to mxFrame within
 * the 15 s deadline */
Test(sqlcap_pin, idle_writer_pin_moves_up) { rewind_under_coarse_pin(true, 3600 * 1000); }
