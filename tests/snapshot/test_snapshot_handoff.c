/*
 * Hand-off (integration): a writer runs inserts, updates, deletes and key
 * changes throughout a snapshot of a 200k-row table; streaming from the
 * snapshot's position until caught up with the server, the rows rebuilt from
 * the events equal the source table exactly.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <string.h>

#include "binlog.h"
#include "snap.h"
#include "snap_test_util.h"

#define NROWS 200000

typedef struct ops_at_least {
    st_writer *w;
    uint64_t n;
} ops_at_least;

static bool writer_reached(void *arg)
{
    ops_at_least *o = arg;
    return st_writer_ops(o->w) >= o->n;
}

Test(snapshot_handoff, writer_during_snapshot_then_stream, .timeout = 600)
{
    MYSQL *my = st_connect();
    st_make_table(my, "snaptest_ho", "t", NROWS);
    st_writer *w = st_writer_start("snaptest_ho", "t", NROWS, NROWS + 1);
    ops_at_least o = {w, 20};
    cr_assert(st_wait(writer_reached, &o, 30000), "writer did not start");

    const char *extra[] = {"tables.include=^snaptest_ho\\.t$", NULL};
    cfg *c = st_cfg(NULL, extra);
    tb_error err;
    snap *s = NULL;
    cr_assert_eq(snap_open(c, &s, &err), TB_OK, "snap_open: %s", err.msg);
    uint64_t ops_before = st_writer_ops(w);
    st_map *m = st_map_new();
    uint64_t nsnap = 0, nlast = 0;
    for (;;) {
        evt_event *ev = NULL;
        cr_assert_eq(snap_next(s, &ev, &err), TB_OK, "snap_next: %s", err.msg);
        if (!ev)
            break;
        cr_assert_eq(evt_event_op(ev), EVT_OP_READ);
        cr_assert(tb_position_equal(evt_event_position(ev), snap_position(s)));
        if (evt_event_snapshot(ev) == EVT_SNAPSHOT_LAST)
            nlast++;
        st_map_apply(m, ev);
        nsnap++;
    }
    uint64_t ops_during = st_writer_ops(w) - ops_before;
    tb_position start;
    tb_position_init(&start);
    tb_position_copy(&start, snap_position(s));
    snap_close(s);
    cr_log_info("snapshot: %llu rows; writer ops during the snapshot: %llu", (unsigned long long)nsnap,
                (unsigned long long)ops_during);
    cr_assert_eq(nlast, 1, "exactly one event carries snapshot=last");
    cr_assert_gt(ops_during, 0, "the writer must run during the snapshot");
    cr_assert_geq(nsnap, NROWS / 2);

    o.n = st_writer_ops(w) + 200;
    cr_assert(st_wait(writer_reached, &o, 60000), "writer stalled");
    uint64_t ops = st_writer_stop(w);

    tb_position end;
    tb_position_init(&end);
    st_current_position(my, &end);
    st_reader *r = st_reader_open(c, &start);
    uint64_t nstream = 0;
    for (int idle = 0; !st_pos_ge(st_reader_position(r), &end);) {
        evt_event *ev = st_reader_next(r, 200);
        if (!ev) {
            cr_assert_lt(++idle, 300, "streaming did not catch up");
            continue;
        }
        const evt_table *t = evt_event_table(ev);
        if (strcmp(evt_table_db(t), "snaptest_ho") != 0 || strcmp(evt_table_name(t), "t") != 0)
            continue;
        st_map_apply(m, ev);
        nstream++;
    }
    st_reader_close(r);
    cr_log_info("writer ops %llu; streamed events %llu", (unsigned long long)ops, (unsigned long long)nstream);
    cr_assert_gt(nstream, 0);

    st_map *truth = st_map_from_snapshot("snaptest_ho", "t");
    cr_assert_eq(st_map_size(truth), (size_t)st_sql_int(my, "SELECT COUNT(*) FROM snaptest_ho.t"));
    cr_assert_eq(st_map_diff(m, truth, "rebuilt vs source"), 0, "the rebuilt table differs from the source");

    st_map_free(truth);
    st_map_free(m);
    tb_position_free(&start);
    tb_position_free(&end);
    cfg_free(c);
    mysql_close(my);
}
