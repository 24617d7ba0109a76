/*
 * Incremental snapshot (integration): a connector process streams the binlog
 * of a 200k-row table from the current position (no initial snapshot) while
 * a writer changes the table; `snapshot --incremental` is signalled; the
 * connector is killed with SIGKILL in the middle of the snapshot and started
 * again; it must continue from the last finished chunk (not from scratch),
 * and once it has caught up the table rebuilt from its output equals the
 * source table.
 *
 * The connector (a child process) is what the run loop does, reduced to the
 * essentials: binlog_next -> snap_inc_observe -> write the released chunk
 * rows -> write the event -> at each transaction end save the position and call
 * snap_inc_committed -> snap_inc_poll. Its "sink" is a file of lines
 * "P\t<key>\t<row>" (upsert) / "D\t<key>\t" (delete) / "R\t<key>\t<row>"
 * (snapshot read), each written with one write(2), so a SIGKILL never leaves
 * half a line.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "binlog.h"
#include "evt_json.h"
#include "json_oracle.h"
#include "test_child.h"
#include "snap_inc_int.h"
#include "snap_incremental.h"
#include "snap_test_util.h"
#include "tb_file.h"
#include "tb_log.h"

#define NROWS 200000
#define CHUNK 4000

/* ============================================================ connector */

static int emit(int fd, const evt_event *ev, tb_buf *line)
{
    tb_buf k, r;
    tb_buf_init(&k, 0);
    tb_buf_init(&r, 0);
    tb_buf_reset(line);
    evt_op op = evt_event_op(ev);
    int rc = 0;
    if (op == EVT_OP_DELETE || (op == EVT_OP_UPDATE && !evt_event_key_unchanged(ev))) {
        if (evt_json_key(ev, EVT_BEFORE, &k, NULL) != TB_OK)
            rc = -1;
        tb_buf_printf(line, "D\t%s\t\n", tb_buf_cstr(&k));
        tb_buf_reset(&k);
    }
    if (rc == 0 && op != EVT_OP_DELETE) {
        if (evt_json_key(ev, EVT_AFTER, &k, NULL) != TB_OK || evt_json_row(ev, EVT_AFTER, &r, NULL) != TB_OK)
            rc = -1;
        tb_buf_printf(line, "%c\t%s\t%s\n", op == EVT_OP_READ ? 'R' : 'P', tb_buf_cstr(&k), tb_buf_cstr(&r));
    }
    if (rc == 0)
        rc = tb_write_all(fd, line->data, line->len) == TB_OK ? 0 : -1;
    tb_buf_free(&k);
    tb_buf_free(&r);
    return rc;
}

static int save_pos(const char *dir, const tb_position *p)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/pos.tmp", dir);
    snprintf(path, sizeof(path), "%s/pos", dir);
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_position_format(p, &b);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    /* no fsync: the test kills processes, not machines */
    int rc = fd >= 0 && tb_write_all(fd, b.data, b.len) == TB_OK ? 0 : -1;
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = rename(tmp, path);
    tb_buf_free(&b);
    return rc;
}

static bool load_pos(const char *dir, tb_position *p)
{
    char path[4200], text[4096];
    snprintf(path, sizeof(path), "%s/pos", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, fp);
    fclose(fp);
    text[n] = '\0';
    return tb_position_parse(text, p, NULL) == TB_OK;
}

static bool is_t(const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    return strcmp(evt_table_db(t), "snaptest_inc") == 0 && strcmp(evt_table_name(t), "t") == 0;
}

#define DIE(code, ...) do { tb_log(TB_LOG_ERROR, "connector", __VA_ARGS__); _exit(code); } while (0)

static void connector(const char *dir, const tb_position *start0)
{
    char state[4200], out[4200];
    snprintf(state, sizeof(state), "%s/state.json", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    char chunk[64];
    snprintf(chunk, sizeof(chunk), "snapshot.chunk.size=%d", CHUNK);
    const char *extra[] = {chunk, NULL};
    cfg *c = st_cfg(dir, extra);
    tb_error err;
    snap_inc *si = NULL;
    if (snap_inc_open(c, state, NULL, &si, &err) != TB_OK)
        DIE(2, "snap_inc_open: %s", err.msg);
    tb_position start;
    tb_position_init(&start);
    if (!load_pos(dir, &start))
        tb_position_copy(&start, start0);
    st_reader *r = st_reader_open(c, &start);
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        DIE(4, "open %s", out);
    tb_buf line;
    tb_buf_init(&line, 0);
    struct timespec last_save = {0, 0};
    tb_position unsaved;
    tb_position_init(&unsaved);
    for (;;) {
        evt_event *ev = st_reader_next(r, 100);
        if (!ev && unsaved.kind != TB_POS_NONE) { /* idle: commit what we have */
            if (save_pos(dir, &unsaved) != 0 || snap_inc_committed(si, &unsaved, &err) != TB_OK)
                DIE(8, "save position");
            tb_position_free(&unsaved);
        }
        if (ev) {
            if (snap_inc_observe(si, ev, &err) != TB_OK)
                DIE(6, "observe: %s", err.msg);
            /* released chunk rows go before the high watermark's own event */
            evt_event *rowev = NULL;
            bool released = false;
            while (snap_inc_next_event(si, &rowev, &err) == TB_OK && rowev) {
                released = true;
                if (emit(fd, rowev, &line) != 0)
                    DIE(7, "emit");
            }
            if (is_t(ev) && emit(fd, ev, &line) != 0)
                DIE(7, "emit");
            /* commit like the run loop: every 100 ms, and right after a chunk */
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            int64_t ms = (now.tv_sec - last_save.tv_sec) * 1000 + (now.tv_nsec - last_save.tv_nsec) / 1000000;
            if (evt_event_last_in_tx(ev) && !(released || ms >= 100))
                tb_position_copy(&unsaved, evt_event_position(ev));
            if (evt_event_last_in_tx(ev) && (released || ms >= 100)) {
                last_save = now;
                tb_position_free(&unsaved);
                if (save_pos(dir, evt_event_position(ev)) != 0)
                    DIE(8, "save position");
                if (snap_inc_committed(si, evt_event_position(ev), &err) != TB_OK)
                    DIE(9, "committed: %s", err.msg);
            }
        }
        if (snap_inc_poll(si, &err) != TB_OK)
            DIE(10, "poll: %s", err.msg);
    }
}

static pid_t start_connector(const char *dir, const tb_position *start0)
{
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        st_in_child = true;
        connector(dir, start0);
    }
    return pid;
}

/* ============================================================ parent */

typedef struct watch {
    const char *dir;
    pid_t pid;
    long chunks;      /* "chunks" of the state file, -1 if unreadable */
    bool queue_empty;
    bool done_seen;   /* the state file has gone back to an empty queue */
    uint64_t min_target;
    tb_position *target;
} watch;

static void read_state(watch *w)
{
    char path[4200], text[65536];
    snprintf(path, sizeof(path), "%s/state.json", w->dir);
    w->chunks = -1;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return;
    size_t n = fread(text, 1, sizeof(text) - 1, fp);
    fclose(fp);
    text[n] = '\0';
    /* {"last_signal_id":N,"queue":[...],"chunks":N,"rows":N,"key":...}, read with Jansson */
    json_error_t je;
    json_t *v = json_loadb(text, n, 0, &je);
    cr_assert_not_null(v, "%s is not JSON (%s): %s", path, je.text, text);
    json_t *chunks = json_object_get(v, "chunks"), *queue = json_object_get(v, "queue");
    cr_assert(json_is_integer(chunks) && json_is_array(queue), "%s: no chunks or queue: %s", path, text);
    w->chunks = (long)json_integer_value(chunks);
    w->queue_empty = json_array_size(queue) == 0;
    json_decref(v);
}

static bool child_alive(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
}

static bool chunks_reached(void *arg)
{
    watch *w = arg;
    cr_assert(child_alive(w->pid), "the connector died");
    read_state(w);
    return w->chunks >= 10;
}

static bool snapshot_done(void *arg)
{
    watch *w = arg;
    cr_assert(child_alive(w->pid), "the connector died");
    read_state(w);
    return w->chunks == 0 && w->queue_empty;
}

static bool caught_up(void *arg)
{
    watch *w = arg;
    cr_assert(child_alive(w->pid), "the connector died");
    tb_position p;
    tb_position_init(&p);
    bool ok = load_pos(w->dir, &p) && st_pos_ge(&p, w->target);
    tb_position_free(&p);
    return ok;
}

static void kill9(pid_t pid)
{
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
}

/* Rebuild the table from the connector's output. */
static st_map *replay(const char *dir, uint64_t *reads)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/out", dir);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    st_map *m = st_map_new();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    *reads = 0;
    while ((n = getline(&line, &cap, fp)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        char *k = strchr(line, '\t');
        cr_assert_not_null(k, "bad line %s", line);
        *k++ = '\0';
        char *row = strchr(k, '\t');
        cr_assert_not_null(row);
        *row++ = '\0';
        if (line[0] == 'D') {
            st_map_del(m, k);
        } else {
            st_map_put(m, k, row);
            if (line[0] == 'R')
                (*reads)++;
        }
    }
    free(line);
    fclose(fp);
    return m;
}

Test(snapshot_incremental, kill9_in_the_middle_then_resume, .timeout = 900)
{
    MYSQL *my = st_connect();
    st_make_table(my, "snaptest_inc", "t", NROWS);
    char *dir = st_tmpdir();
    tb_position start0, target;
    tb_position_init(&start0);
    tb_position_init(&target);
    st_current_position(my, &start0);

    st_writer *wr = st_writer_start("snaptest_inc", "t", NROWS, NROWS + 1);
    watch w = {.dir = dir};
    w.pid = start_connector(dir, &start0);

    const char *extra[] = {NULL};
    cfg *c = st_cfg(dir, extra);
    tb_error err;
    cr_assert_eq(snap_inc_signal(c, "snaptest_inc.t", &err), TB_OK, "signal: %s", err.msg);

    cr_assert(st_wait(chunks_reached, &w, 300000), "the incremental snapshot did not reach 10 chunks");
    long chunks_at_kill = w.chunks;
    uint64_t ops_at_kill = st_writer_ops(wr);
    kill9(w.pid);
    cr_log_info("killed the connector after %ld saved chunk(s), %llu writer ops", chunks_at_kill,
                (unsigned long long)ops_at_kill);
    read_state(&w);
    cr_assert_eq(w.chunks, chunks_at_kill);

    w.pid = start_connector(dir, &start0);
    cr_assert(st_wait(snapshot_done, &w, 600000), "the incremental snapshot did not finish after the restart");
    uint64_t ops_during = st_writer_ops(wr) - ops_at_kill;
    uint64_t ops = st_writer_stop(wr);
    cr_assert_gt(ops_during, 0, "the writer must run while the snapshot runs");

    st_current_position(my, &target);
    w.target = &target;
    cr_assert(st_wait(caught_up, &w, 300000), "the connector did not catch up");
    kill9(w.pid);

    uint64_t reads = 0;
    st_map *m = replay(dir, &reads);
    int64_t count = st_sql_int(my, "SELECT COUNT(*) FROM snaptest_inc.t");
    int64_t maxid = st_sql_int(my, "SELECT MAX(id) FROM snaptest_inc.t");
    cr_log_info("writer ops %llu; snapshot rows written %llu; table rows %lld", (unsigned long long)ops,
                (unsigned long long)reads, (long long)count);
    /* Resumed, not restarted: at most one chunk is read twice (plus rows the
     * writer added, which later chunks read). */
    cr_assert_lt(reads, (uint64_t)maxid + 2 * CHUNK, "too many snapshot rows: the snapshot restarted?");
    cr_assert_gt(reads, (uint64_t)NROWS / 2);

    st_map *truth = st_map_from_snapshot("snaptest_inc", "t");
    cr_assert_eq(st_map_size(truth), (size_t)count);
    cr_assert_eq(st_map_diff(m, truth, "rebuilt vs source"), 0, "the rebuilt table differs from the source");

    st_map_free(truth);
    st_map_free(m);
    cfg_free(c);
    tb_position_free(&start0);
    tb_position_free(&target);
    st_rmdir(dir);
    free(dir);
    mysql_close(my);
}

/* ============================================================ the window, deterministic */

static bool is_window_t(const evt_event *ev)
{
    const evt_table *t = evt_event_table(ev);
    return t && strcmp(evt_table_db(t), "snaptest_win") == 0 && strcmp(evt_table_name(t), "t") == 0;
}

/* The rows a chunk released, in order: id and whether it carries snapshot=last. */
typedef struct win_out {
    long ids[32];
    bool last[32];
    size_t n;
} win_out;

static void release_into(snap_inc *si, win_out *o)
{
    evt_event *rowev = NULL;
    tb_error err;
    while (snap_inc_next_event(si, &rowev, &err) == TB_OK && rowev) {
        cr_assert_lt(o->n, 32u);
        const evt_value *v = evt_event_value(rowev, EVT_AFTER, (size_t)evt_table_find(evt_event_table(rowev), "id"));
        o->ids[o->n] = v->kind == EVT_V_INT ? (long)v->v.i : (long)v->v.u;
        o->last[o->n] = evt_event_snapshot(rowev) == EVT_SNAPSHOT_LAST;
        o->n++;
    }
}

static bool signal_of_type(const evt_event *ev, const char *type)
{
    const evt_table *t = evt_event_table(ev);
    if (!t || strcmp(evt_table_name(t), "tributary_signal") != 0 || evt_event_op(ev) != EVT_OP_CREATE)
        return false;
    long ci = evt_table_find(t, "type");
    const evt_value *v = ci >= 0 ? evt_event_value(ev, EVT_AFTER, (size_t)ci) : NULL;
    return v && v->kind == EVT_V_STRING && v->v.s.len == strlen(type) && memcmp(v->v.s.ptr, type, v->v.s.len) == 0;
}

/* A table db.t of `rows` rows, a folder, its configuration (with the settings `extra`) and an
 * incremental snapshot whose state is in the folder. */
static snap_inc *table_snap(MYSQL *my, const char *db, int rows, const char *const *extra, char **dir, cfg **c)
{
    st_make_table(my, db, "t", rows);
    *dir = st_tmpdir();
    *c = st_cfg(*dir, extra);
    tb_error err;
    snap_inc *si = NULL;
    char state[4200];
    snprintf(state, sizeof state, "%s/state.json", *dir);
    cr_assert_eq(snap_inc_open(*c, state, NULL, &si, &err), TB_OK, "%s", err.msg);
    return si;
}

/* A 10-row table (table_snap). */
static snap_inc *small_table_snap(MYSQL *my, const char *db, char **dir, cfg **c)
{
    const char *extra[] = {NULL};
    return table_snap(my, db, 10, extra, dir, c);
}

/* Changes the stream made to chunk rows inside the window (between the low and the high
 * watermark in binlog order) keep those rows from being released: an update, a key moved
 * onto a row of the chunk, and a delete. The rows are made to land inside the window by
 * giving the table's changes to snap_inc_observe only after the low watermark was seen
 * (read by a second reader from the first position), which is where a writer racing the
 * chunk's SELECT puts them. The row that would have ended the table is among them, so the
 * snapshot=last mark moves to the last row released. */
Test(snapshot_incremental, window_drops_rows_the_stream_changed, .timeout = 120)
{
    MYSQL *my = st_connect();
    char *dir = NULL;
    cfg *c = NULL;
    snap_inc *si = small_table_snap(my, "snaptest_win", &dir, &c);
    tb_error err;
    tb_position p0, pl;
    tb_position_init(&p0);
    tb_position_init(&pl);
    st_current_position(my, &p0);
    /* in binlog order before the chunk's SELECT, which therefore reads 1, 2, 4, 6, 7, 8, 9, 1005 */
    st_sql(my, "UPDATE snaptest_win.t SET n = 7 WHERE id = 3");
    st_sql(my, "UPDATE snaptest_win.t SET id = 1005 WHERE id = 5");
    st_sql(my, "DELETE FROM snaptest_win.t WHERE id = 10");
    cr_assert_eq(snap_inc_signal(c, "snaptest_win.t", &err), TB_OK, "signal: %s", err.msg);

    /* pass 1: everything but the table's changes, up to the low watermark */
    win_out o = {0};
    st_reader *r = st_reader_open(c, &p0);
    bool polled = false;
    int nt = 0;
    evt_event *ev = NULL;
    for (;;) {
        ev = st_reader_next(r, 10000);
        cr_assert_not_null(ev, "no low watermark in the binlog");
        if (is_window_t(ev)) {
            nt++;
            continue;
        }
        cr_assert_eq(snap_inc_observe(si, ev, &err), TB_OK, "%s", err.msg);
        if (polled && signal_of_type(ev, "snapshot-window-open"))
            break;
        if (!polled && signal_of_type(ev, "execute-snapshot")) {
            cr_assert_eq(snap_inc_poll(si, &err), TB_OK, "poll: %s", err.msg); /* L, the SELECT, H */
            polled = true;
        }
    }
    cr_assert_eq(nt, 3, "the table's three changes come before the signal");
    /* the rest of the low watermark's transaction, then where to go on from */
    while (!evt_event_last_in_tx(ev)) {
        ev = st_reader_next(r, 10000);
        cr_assert_not_null(ev);
        cr_assert_eq(snap_inc_observe(si, ev, &err), TB_OK, "%s", err.msg);
    }
    cr_assert_eq(tb_position_copy(&pl, st_reader_position(r)), TB_OK);
    st_reader_close(r);

    /* pass 2: the table's changes, now inside the window */
    r = st_reader_open(c, &p0);
    for (int seen = 0; seen < 3;) {
        ev = st_reader_next(r, 10000);
        cr_assert_not_null(ev);
        if (!is_window_t(ev))
            continue;
        cr_assert_eq(snap_inc_observe(si, ev, &err), TB_OK, "%s", err.msg);
        seen++;
    }
    st_reader_close(r);

    /* pass 3: from after the low watermark to the high watermark, which releases the chunk */
    r = st_reader_open(c, &pl);
    bool closed = false;
    while (!closed) {
        ev = st_reader_next(r, 10000);
        cr_assert_not_null(ev, "no high watermark in the binlog");
        cr_assert_eq(snap_inc_observe(si, ev, &err), TB_OK, "%s", err.msg);
        release_into(si, &o);
        closed = signal_of_type(ev, "snapshot-window-close");
    }
    st_reader_close(r);
    release_into(si, &o);

    long want[] = {1, 2, 4, 6, 7, 8, 9};
    cr_assert_eq(o.n, sizeof want / sizeof want[0], "released %zu rows", o.n);
    for (size_t i = 0; i < o.n; i++) {
        cr_expect_eq(o.ids[i], want[i], "row %zu: id %ld, want %ld", i, o.ids[i], want[i]);
        cr_expect_eq(o.last[i], i + 1 == o.n, "row %zu (id %ld): snapshot=last %d", i, o.ids[i], o.last[i]);
    }
    snap_inc_close(si);
    cfg_free(c);
    tb_position_free(&p0);
    tb_position_free(&pl);
    st_rmdir(dir);
    free(dir);
    mysql_close(my);
}

/* ============================================================ the table changed under a chunk */

typedef struct chg_hook {
    snap_inc *si;
    MYSQL *other;
    int ran;
} chg_hook;

/* Between the chunk's description and its SELECT, once: another session drops a column. */
static void drop_column(void *arg)
{
    chg_hook *h = arg;
    st_sql(h->other, "ALTER TABLE snaptest_chg.t DROP COLUMN n");
    h->ran++;
    snap_inc_test_after_describe(h->si, NULL, NULL);
}

/* The binlog from p0 fed to si (snap_inc_observe, the rows it releases, snap_inc_poll once the
 * execute-snapshot signal was seen) until `want` rows are released; *without_n: how many of
 * them lack column n. Returns the number of polls. */
static int release_rows(snap_inc *si, const cfg *c, const tb_position *p0, size_t want, size_t *without_n)
{
    tb_error err;
    st_reader *r = st_reader_open(c, p0);
    bool signalled = false;
    int polls = 0;
    size_t released = 0;
    *without_n = 0;
    while (released < want) {
        evt_event *ev = st_reader_next(r, 10000);
        cr_assert_not_null(ev, "the snapshot was not released (%zu rows, %d polls)", released, polls);
        cr_assert_eq(snap_inc_observe(si, ev, &err), TB_OK, "%s", err.msg);
        evt_event *row = NULL;
        while (snap_inc_next_event(si, &row, &err) == TB_OK && row) {
            *without_n += evt_table_find(evt_event_table(row), "n") < 0;
            released++;
        }
        signalled = signalled || signal_of_type(ev, "execute-snapshot");
        if (signalled && snap_inc_wants_poll(si)) {
            cr_assert_eq(snap_inc_poll(si, &err), TB_OK, "poll %d: %s", polls + 1, err.msg);
            polls++;
        }
    }
    st_reader_close(r);
    cr_expect_eq(released, want);
    return polls;
}

/* Another session's ALTER between the description of the table and the chunk's SELECT (which
 * then names a column the table no longer has) is not an error of the run: the chunk is read
 * again as the table is now, and every row is released without the dropped column. */
Test(snapshot_incremental, table_changed_between_description_and_select, .timeout = 120)
{
    MYSQL *my = st_connect();
    char *dir = NULL;
    cfg *c = NULL;
    snap_inc *si = small_table_snap(my, "snaptest_chg", &dir, &c);
    tb_error err;
    chg_hook h = {.si = si, .other = st_connect()};
    snap_inc_test_after_describe(si, drop_column, &h);
    tb_position p0;
    tb_position_init(&p0);
    st_current_position(my, &p0);
    cr_assert_eq(snap_inc_signal(c, "snaptest_chg.t", &err), TB_OK, "signal: %s", err.msg);

    size_t without_n = 0;
    int polls = release_rows(si, c, &p0, 10, &without_n);
    cr_expect_eq(h.ran, 1);
    cr_expect_eq(without_n, 10, "%zu of 10 released rows lack the dropped column", without_n);
    cr_expect_eq(polls, 2, "%d polls: one whose SELECT failed, one that read the chunk", polls);
    snap_inc_close(si);
    cfg_free(c);
    tb_position_free(&p0);
    st_rmdir(dir);
    free(dir);
    mysql_close(h.other);
    mysql_close(my);
}

typedef struct ahead_hook {
    MYSQL *other;
    pthread_t main;
    atomic_int ran;
} ahead_hook;

/* On the thread reading the next window ahead, once: another session drops a column between
 * its description of the table and its SELECT. */
static void drop_column_ahead(void *arg)
{
    ahead_hook *h = arg;
    if (pthread_equal(pthread_self(), h->main) || atomic_load(&h->ran) > 0)
        return;
    st_sql(h->other, "ALTER TABLE snaptest_ahead.t DROP COLUMN n");
    atomic_fetch_add(&h->ran, 1);
}

/* The same race on the thread that reads the next window ahead (snapshot.threads=2): the
 * window is read again as the table is now, and that is no failure of reading ahead (no WARN,
 * no windows without reading ahead after it), which goes on for the windows after. */
Test(snapshot_incremental, table_changed_under_the_window_read_ahead, .timeout = 120)
{
    MYSQL *my = st_connect();
    char *dir = NULL;
    cfg *c = NULL;
    const char *extra[] = {"snapshot.threads=2", "snapshot.chunk.size=5", NULL};
    snap_inc *si = table_snap(my, "snaptest_ahead", 40, extra, &dir, &c);
    tb_error err;
    ahead_hook h = {.other = st_connect(), .main = pthread_self()};
    snap_inc_test_after_describe(si, drop_column_ahead, &h);
    tb_position p0;
    tb_position_init(&p0);
    st_current_position(my, &p0);
    cr_assert_eq(snap_inc_signal(c, "snaptest_ahead.t", &err), TB_OK, "signal: %s", err.msg);

    size_t without_n = 0;
    release_rows(si, c, &p0, 40, &without_n);
    cr_expect_eq(atomic_load(&h.ran), 1, "the column was not dropped on the thread reading ahead");
    cr_expect_geq(without_n, 30, "%zu rows released without the dropped column", without_n);
    cr_expect_eq(si->ahead.failures, 0, "the changed table counted as %llu failure(s) of reading ahead",
                 (unsigned long long)si->ahead.failures);
    cr_expect_eq(si->ahead.streak, 0);
    snap_inc_close(si);
    cfg_free(c);
    tb_position_free(&p0);
    st_rmdir(dir);
    free(dir);
    mysql_close(h.other);
    mysql_close(my);
}
