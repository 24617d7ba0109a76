/*
 * The initial snapshot taken in chunks (snapshot.initial.method=chunked)
 * through the built tributary against the testenv MariaDB and Kafka: every
 * captured table is read by the incremental snapshot's machinery (primary-key
 * chunks between watermark rows) while streaming from the position the run
 * started at, its progress saved per chunk in the state file (offsets in
 * Kafka: <name>.incsnap beside offsets.file).
 *
 * kill9_resume (exactly_once off and on; and with snapshot.threads=3,
 *   every window then holding up to three chunks read at once): three tables, keyed by an integer,
 *   by an integer and a string (composite) and by a string (character key,
 *   ASCII and Cyrillic), written to by a forked writer throughout (updates,
 *   inserts, deletes, key changes). The run is killed with SIGKILL three
 *   times, each at a random chunk boundary (the state file reaching a random
 *   table and chunk); each next run must resume from exactly the saved
 *   chunk (its log names the table and the chunk count of the state file at
 *   the kill) and never start the snapshot again, a table finished before a
 *   kill is never read again (one "done" line per table over every run),
 *   and once the snapshot is done and the stream caught up, each topic read
 *   as a KTable and the cache rebuilt from the topics equal the source.
 *   The topics held no record at the start, so no table has a reconcile
 *   step (the state file keeps that across the kills), and the equality
 *   shows nothing needed one.
 * resnapshot_reconciles: a chunked snapshot into new topics (no reconcile
 *   step), then, with rows deleted and a table emptied while stopped and the
 *   position forgotten, a second one into the topics it filled: each table's
 *   step deletes exactly the keys the table lost.
 * statement_during_snapshot: killed in its first table; meanwhile the third
 *   table's rows are updated (streamed at the restart), and the table is
 *   dropped and made again with fewer rows (ddl.drop.policy=warn leaves the
 *   old keys in its topic): the statement ends the table's freshness, so
 *   its step after its last chunk deletes exactly the keys of the old table.
 * consistent_after_forgotten_chunked: a chunked initial snapshot killed
 *   halfway, its position then forgotten (`tributary offsets set --position
 *   none`) and the next run configured with the consistent method: that run
 *   drops the unfinished chunked snapshot of the state file (it read every
 *   table itself) instead of resuming it, and topics and cache equal the
 *   source.
 */
#include <jansson.h>
#include <time.h>

#include "e2e_reconcile.h"

#define CK_CHUNK 100
#define CK_KILLS 3

static const char *const ck_tables[] = {"ti", "tc", "ts"}; /* db.table order: tc, ti, ts */

/* ---------------------------------------------------------------- the writer (a forked child) */

static MYSQL *ck_connect_child(void)
{
    MYSQL *m = mysql_init(NULL);
    if (!m)
        _exit(3);
    unsigned port = (unsigned)atoi(getenv("TRIBUTARY_TEST_MYSQL_PORT"));
    if (!mysql_real_connect(m, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_USER"),
                            getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL, port, NULL, 0))
        _exit(4);
    mysql_set_character_set(m, "utf8mb4");
    return m;
}

/* Random changes of the three tables until killed: every statement commits on its own
 * (autocommit), so SIGTERM between two leaves the tables consistent. A statement that
 * fails (a duplicate key after a key change) is passed over. */
static void ck_writer(const char *db)
{
    MYSQL *m = ck_connect_child();
    unsigned seed = (unsigned)getpid();
    int next = 100000;
    char q[512];
    for (;;) {
        int id = 1 + (int)(rand_r(&seed) % 3200), op = (int)(rand_r(&seed) % 10), t = (int)(rand_r(&seed) % 3);
        const char *tn = ck_tables[t];
        if (op < 5)
            snprintf(q, sizeof q, "UPDATE %s.%s SET v = 'w%d', n = n + 1 WHERE id = %d", db, tn, next++, id);
        else if (op < 7)
            snprintf(q, sizeof q, "DELETE FROM %s.%s WHERE id = %d", db, tn, id);
        else if (op < 9) {
            int k = next++;
            if (t == 0)
                snprintf(q, sizeof q, "INSERT INTO %s.ti VALUES (%d, 'new', %d)", db, k, k);
            else if (t == 1)
                snprintf(q, sizeof q, "INSERT INTO %s.tc VALUES (%d, 'n%d', %d, 'new', %d)", db, k % 400, k, k, k);
            else
                snprintf(q, sizeof q, "INSERT INTO %s.ts VALUES ('new-%d', %d, 'new', %d)", db, k, k, k);
        } else { /* a key change */
            int k = next++;
            if (t == 0)
                snprintf(q, sizeof q, "UPDATE %s.ti SET id = %d WHERE id = %d", db, k, id);
            else if (t == 1)
                snprintf(q, sizeof q, "UPDATE %s.tc SET b = CONCAT(b, 'x') WHERE id = %d", db, id);
            else
                snprintf(q, sizeof q, "UPDATE %s.ts SET k = CONCAT('Ключ-', %d) WHERE id = %d", db, k, id);
        }
        (void)mysql_query(m, q);
    }
}

static pid_t ck_start_writer(const char *db)
{
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        ck_writer(db);
        _exit(0);
    }
    e2e_track(pid);
    return pid;
}

static void ck_stop_writer(pid_t pid)
{
    kill(pid, SIGTERM);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
}

/* ---------------------------------------------------------------- tables */

static void ck_tables_make(MYSQL *m, const char *db)
{
    e2e_sql(m, "SET NAMES utf8mb4");
    rc_table(m, db, "ti", 3000);
    e2e_sql(m, "CREATE TABLE %s.tc (a INT NOT NULL, b VARCHAR(40) NOT NULL, id INT NOT NULL UNIQUE, v VARCHAR(20), "
               "n INT, PRIMARY KEY (a, b))",
            db);
    e2e_sql(m, "CREATE TABLE %s.ts (k VARCHAR(40) NOT NULL PRIMARY KEY, id INT NOT NULL UNIQUE, v VARCHAR(20), n INT) "
               "DEFAULT CHARSET utf8mb4",
            db);
    for (int i = 1; i <= 2500; i += 50) {
        tb_buf qc, qs;
        tb_buf_init(&qc, 0);
        tb_buf_init(&qs, 0);
        tb_buf_printf(&qc, "INSERT INTO %s.tc VALUES ", db);
        tb_buf_printf(&qs, "INSERT INTO %s.ts VALUES ", db);
        for (int j = i; j < i + 50; j++) {
            tb_buf_printf(&qc, "%s(%d, 'b%d', %d, 'v%d', %d)", j > i ? "," : "", j / 7, j % 7, j, j, j);
            char k[64];
            if (j % 3 == 0)
                snprintf(k, sizeof k, "key-%05d", j);
            else if (j % 3 == 1)
                snprintf(k, sizeof k, "Ключ-%d", j);
            else
                snprintf(k, sizeof k, "z %d", j);
            tb_buf_printf(&qs, "%s('%s', %d, 'v%d', %d)", j > i ? "," : "", k, j, j, j);
        }
        e2e_sql(m, "%s", tb_buf_cstr(&qc));
        e2e_sql(m, "%s", tb_buf_cstr(&qs));
        tb_buf_free(&qc);
        tb_buf_free(&qs);
    }
}

/* ---------------------------------------------------------------- the state file */

typedef struct ck_state {
    bool have;       /* the file exists */
    bool initial;    /* the initial snapshot has tables left */
    size_t nqueue;
    char table[128]; /* queue[0] */
    char queue[512]; /* every queued table, each followed by ',' */
    long long chunks;
} ck_state;

static ck_state ck_read_state(const rc_run *r)
{
    ck_state s;
    memset(&s, 0, sizeof(s));
    json_error_t je;
    json_t *j = json_load_file(r->state, 0, &je);
    if (!j)
        return s; /* not written yet (it is replaced by a rename: never seen half written) */
    s.have = true;
    s.initial = json_is_true(json_object_get(j, "initial"));
    json_t *q = json_object_get(j, "queue");
    s.nqueue = json_array_size(q);
    if (s.nqueue)
        snprintf(s.table, sizeof s.table, "%s", json_string_value(json_array_get(q, 0)));
    for (size_t i = 0; i < s.nqueue; i++) {
        size_t l = strlen(s.queue);
        snprintf(s.queue + l, sizeof s.queue - l, "%s,", json_string_value(json_array_get(q, i)));
    }
    s.chunks = json_integer_value(json_object_get(j, "chunks"));
    json_decref(j);
    return s;
}

/* Progress as one number: tables finished (of 3), then chunks of the table in progress. */
static long long ck_progress(const ck_state *s)
{
    if (!s->have)
        return -1;
    if (!s->initial)
        return 3 * 1000;
    return (long long)(3 - s->nqueue) * 1000 + s->chunks;
}

static bool ck_snapshot_done(const rc_run *r)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool done = e2e_slurp(r->status, &b) && strstr(tb_buf_cstr(&b), "\"snapshot\":{\"state\":\"done\"");
    tb_buf_free(&b);
    return done;
}

static size_t ck_count_in(const char *path, const char *needle)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    size_t n = 0;
    if (e2e_slurp(path, &b))
        for (const char *p = tb_buf_cstr(&b); (p = strstr(p, needle)); p++)
            n++;
    tb_buf_free(&b);
    return n;
}

/* ---------------------------------------------------------------- the test */

static void kill9_resume(bool eos, int threads)
{
    rc_run r;
    char extra[256];
    snprintf(extra, sizeof extra, "snapshot.initial.method=chunked\nsnapshot.chunk.size=%d\nsnapshot.threads=%d\n%s",
             CK_CHUNK, threads, eos ? "exactly_once=true\n" : "");
    rc_setup(&r, eos ? "e2eckeos" : threads > 1 ? "e2eckthr" : "e2eck", extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    ck_tables_make(m, r.db);
    pid_t writer = ck_start_writer(r.db);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    char logs[CK_KILLS + 1][sizeof r.log];
    ck_state at_kill[CK_KILLS];
    memset(at_kill, 0, sizeof at_kill);
    for (int i = 0; i <= CK_KILLS; i++)
        snprintf(logs[i], sizeof logs[i], "%.250s/run%d.log", r.dir, i);
    for (int i = 0; i < CK_KILLS; i++) {
        /* a random boundary at or after the last one: table 0..2 done, then 0..15 chunks of the next */
        long long target = (long long)(rand_r(&seed) % 3) * 1000 + (long long)(rand_r(&seed) % 16);
        if (i > 0 && target <= ck_progress(&at_kill[i - 1]))
            target = ck_progress(&at_kill[i - 1]) + 1 + (long long)(rand_r(&seed) % 8);
        memcpy(r.log, logs[i], sizeof r.log); /* the same size */
        rc_start(&r, NULL);
        long long deadline = tb_itest_now_ms() + 180000;
        for (;;) {
            ck_state s = ck_read_state(&r);
            if (ck_progress(&s) >= target || (s.have && !s.initial && i > 0))
                break;
            cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
            cr_assert(tb_itest_now_ms() < deadline, "the snapshot did not reach %lld in 180 s; see %s", target, r.log);
            usleep(1000);
        }
        kill(r.pid, SIGKILL);
        cr_assert_eq(e2e_wait(r.pid, 10000), -1);
        at_kill[i] = ck_read_state(&r); /* what the next run loads */
        cr_log_info("kill %d at %s chunk %lld (progress %lld, target %lld)", i, at_kill[i].table, at_kill[i].chunks,
                    ck_progress(&at_kill[i]), target);
        if (!at_kill[i].initial)
            break; /* the snapshot ended before this kill */
    }
    memcpy(r.log, logs[CK_KILLS], sizeof r.log);
    rc_start(&r, NULL);
    long long deadline = tb_itest_now_ms() + 180000;
    for (;;) { /* done in this run, or saved as done before the last kill */
        ck_state st = ck_read_state(&r);
        if (ck_snapshot_done(&r) || (st.have && !st.initial))
            break;
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "the snapshot did not end in 180 s; see %s", r.log);
        usleep(20000);
    }
    ck_stop_writer(writer);
    rc_caught_up(m, &r);
    e2e_sql(m, "DELETE FROM %s.ti WHERE id = 2", r.db); /* streaming goes on after it */
    rc_caught_up(m, &r);
    st_stop(&r);

    /* every run after a kill resumed from the saved chunk, none started again */
    size_t starts = 0;
    for (int i = 0; i <= CK_KILLS; i++)
        starts += ck_count_in(logs[i], "initial snapshot (chunked) of");
    for (int i = 0; i < CK_KILLS; i++) {
        int next = i + 1;
        char want[300];
        if (!at_kill[i].have || ck_progress(&at_kill[i]) <= 0)
            continue; /* killed before the start position was committed: taken again from nothing */
        if (!at_kill[i].initial)
            break;
        snprintf(want, sizeof want, "resuming the initial (chunked) snapshot of %s after %lld chunk(s)",
                 at_kill[i].table, at_kill[i].chunks);
        cr_expect_eq(ck_count_in(logs[next], want), 1, "%s does not say \"%s\"", logs[next], want);
        cr_expect_eq(ck_count_in(logs[next], "initial snapshot (chunked) of"), 0,
                     "%s started the snapshot again after a kill with progress saved", logs[next]);
        /* a table whose end was saved before the kill is not read again */
        for (size_t t = 0; t < 3; t++) {
            char name[200], done[220];
            snprintf(name, sizeof name, "%s.%s,", r.db, ck_tables[t]);
            if (strstr(at_kill[i].queue, name))
                continue;
            snprintf(done, sizeof done, "incremental snapshot of %s.%s done", r.db, ck_tables[t]);
            cr_expect_eq(ck_count_in(logs[next], done), 0, "%s read %s.%s again, finished before the kill",
                         logs[next], r.db, ck_tables[t]);
        }
    }
    cr_expect_geq(starts, 1);
    /* new topics: no table had a reconcile step, in any run */
    for (size_t t = 0; t < 3; t++) {
        char none[300];
        snprintf(none, sizeof none, "%s.%s: no reconcile after the snapshot", r.db, ck_tables[t]);
        size_t n = 0;
        for (int i = 0; i <= CK_KILLS; i++)
            n += ck_count_in(logs[i], none);
        cr_expect_geq(n, 1, "no run said \"%s\"", none);
    }
    for (int i = 0; i <= CK_KILLS; i++)
        cr_expect_eq(ck_count_in(logs[i], "reconcile after incremental snapshot"), 0,
                     "%s has a reconcile step, though the topics were new", logs[i]);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "ti", (const char *const[]){"id", "v", "n", NULL}, "id, v, n", true);
    rc_assert_equal(&r, m, "tc", (const char *const[]){"id", "a", "b", "v", "n", NULL}, "id, a, b, v, n", true);
    rc_assert_equal(&r, m, "ts", (const char *const[]){"id", "k", "v", "n", NULL}, "id, k, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_snapshot_chunked, kill9_resume, .timeout = 600, .fini = e2e_kill_children)
{
    kill9_resume(false, 1);
}

Test(e2e_snapshot_chunked, kill9_resume_exactly_once, .timeout = 600, .fini = e2e_kill_children)
{
    kill9_resume(true, 1);
}

/* snapshot.threads=3: each window holds up to three chunks, read over three connections */
Test(e2e_snapshot_chunked, kill9_resume_threads, .timeout = 600, .fini = e2e_kill_children)
{
    kill9_resume(false, 3);
}

Test(e2e_snapshot_chunked, consistent_after_forgotten_chunked, .timeout = 600, .fini = e2e_kill_children)
{
    rc_run r;
    char extra[256];
    snprintf(extra, sizeof extra, "snapshot.initial.method=chunked\nsnapshot.chunk.size=%d\n", CK_CHUNK);
    rc_setup(&r, "e2eckcons", extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    ck_tables_make(m, r.db);
    char first[sizeof r.log];
    snprintf(first, sizeof first, "%.250s/chunked.log", r.dir);
    snprintf(r.log, sizeof r.log, "%s", first);
    rc_start(&r, NULL);
    long long deadline = tb_itest_now_ms() + 180000;
    for (;;) { /* killed in the second table */
        ck_state s = ck_read_state(&r);
        if (ck_progress(&s) >= 1005)
            break;
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "the snapshot did not reach its second table in 180 s; see %s", r.log);
        usleep(1000);
    }
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    cr_assert(ck_read_state(&r).initial, "the chunked snapshot ended before the kill");
    const char *oargs[] = {"offsets", "set", "--config", r.cfg, "--position", "none", NULL};
    char olog[400];
    snprintf(olog, sizeof olog, "%s/offsets.log", r.dir);
    cr_assert_eq(e2e_wait(e2e_spawn(oargs, olog), 60000), 0, "tributary offsets set failed; see %s", olog);
    e2e_sql(m, "DELETE FROM %s.ti WHERE id %% 9 = 0", r.db);
    e2e_sql(m, "UPDATE %s.ts SET v = 'after' WHERE id %% 5 = 0", r.db);
    snprintf(r.log, sizeof r.log, "%.250s/run.log", r.dir);
    const char *more[] = {"--set", "snapshot.initial.method=consistent", NULL};
    rc_start(&r, more);
    rc_caught_up(m, &r);
    st_stop(&r);
    cr_expect_eq(st_log_count(&r, "unfinished chunked initial snapshot of the state file is dropped"), 1,
                 "the consistent run did not drop the chunked snapshot; see %s", r.log);
    cr_expect_eq(st_log_count(&r, "initial snapshot (chunked) done"), 0, "the chunked snapshot went on; see %s", r.log);
    ck_state s = ck_read_state(&r);
    cr_expect(s.have && !s.initial && s.nqueue == 0, "the state file still holds the chunked snapshot");
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "ti", (const char *const[]){"id", "v", "n", NULL}, "id, v, n", true);
    rc_assert_equal(&r, m, "tc", (const char *const[]){"id", "a", "b", "v", "n", NULL}, "id, a, b, v, n", true);
    rc_assert_equal(&r, m, "ts", (const char *const[]){"id", "k", "v", "n", NULL}, "id, k, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Until the status file says the snapshot is done. */
static void ck_wait_done(const rc_run *r)
{
    long long deadline = tb_itest_now_ms() + 180000;
    while (!ck_snapshot_done(r)) {
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        cr_assert(tb_itest_now_ms() < deadline, "the snapshot did not end in 180 s; see %s", r->log);
        usleep(20000);
    }
}

/* A chunked run (chunks of CK_CHUNK, and the setting `more`) over the three tables, started
 * with its log in first.log; the connection to the source in *m. */
static void ck_begin(rc_run *r, const char *tag, const char *more, MYSQL **m)
{
    char extra[256];
    snprintf(extra, sizeof extra, "snapshot.initial.method=chunked\nsnapshot.chunk.size=%d\n%s\n", CK_CHUNK, more);
    rc_setup(r, tag, extra);
    *m = e2e_mysql();
    e2e_sql(*m, "CREATE DATABASE %s", r->db);
    ck_tables_make(*m, r->db);
    snprintf(r->log, sizeof r->log, "%.250s/first.log", r->dir);
    rc_start(r, NULL);
}

/* The next run, with its log in second.log, until its snapshot is done and the stream caught
 * up; then stopped. */
static void ck_second_run(rc_run *r, MYSQL *m)
{
    snprintf(r->log, sizeof r->log, "%.250s/second.log", r->dir);
    rc_start(r, NULL);
    ck_wait_done(r);
    rc_caught_up(m, r);
    st_stop(r);
}

/* The run's log says "<db>.<table>: <text>" n times. */
static void ck_expect_said(const rc_run *r, const char *table, const char *text, size_t n)
{
    char want[300];
    snprintf(want, sizeof want, "%s.%s: %s", r->db, table, text);
    cr_expect_eq(st_log_count(r, want), n, "%s says \"%s\" %zu times, not %zu", r->log, want, st_log_count(r, want), n);
}

/* The cache rebuilt from the topics; the three tables, their topics and the cache equal; the
 * database, the connection and the run's folder gone. */
static void ck_end_equal(rc_run *r, MYSQL *m)
{
    rc_cache_build(r);
    rc_assert_equal(r, m, "ti", (const char *const[]){"id", "v", "n", NULL}, "id, v, n", true);
    rc_assert_equal(r, m, "tc", (const char *const[]){"id", "a", "b", "v", "n", NULL}, "id, a, b, v, n", true);
    rc_assert_equal(r, m, "ts", (const char *const[]){"id", "k", "v", "n", NULL}, "id, k, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r->db);
    mysql_close(m);
    e2e_rmtree(r->dir);
}

Test(e2e_snapshot_chunked, resnapshot_reconciles, .timeout = 600, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m;
    ck_begin(&r, "e2eckrec", "snapshot.threads=2", &m);
    ck_wait_done(&r);
    rc_caught_up(m, &r);
    st_stop(&r);
    for (size_t t = 0; t < 3; t++)
        ck_expect_said(&r, ck_tables[t], "no reconcile after the snapshot", 1);
    cr_expect_eq(st_log_count(&r, "reconcile after incremental snapshot"), 0, "%s: a step into new topics", r.log);

    /* stopped: rows go; the position is forgotten; the snapshot is taken again into full topics */
    e2e_sql(m, "DELETE FROM %s.ti WHERE id %% 9 = 0", r.db); /* 333 of 3000 */
    e2e_sql(m, "DELETE FROM %s.tc", r.db);                    /* all 2500 */
    e2e_sql(m, "UPDATE %s.ts SET v = 'again' WHERE id %% 4 = 0", r.db);
    const char *oargs[] = {"offsets", "set", "--config", r.cfg, "--position", "none", NULL};
    char olog[400];
    snprintf(olog, sizeof olog, "%s/offsets.log", r.dir);
    cr_assert_eq(e2e_wait(e2e_spawn(oargs, olog), 60000), 0, "tributary offsets set failed; see %s", olog);
    ck_second_run(&r, m);
    ck_expect_said(&r, "ti", "reconcile after incremental snapshot: 333 key(s)", 1);
    ck_expect_said(&r, "tc", "reconcile after incremental snapshot: 2500 key(s)", 1);
    ck_expect_said(&r, "ts", "reconcile after incremental snapshot: its topic holds no key the table lacks", 1);
    cr_expect_eq(st_log_count(&r, "no reconcile after the snapshot"), 0, "%s skipped a step", r.log);
    ck_end_equal(&r, m);
}

Test(e2e_snapshot_chunked, statement_during_snapshot, .timeout = 600, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m;
    ck_begin(&r, "e2eckddl", "ddl.drop.policy=warn", &m);
    long long deadline = tb_itest_now_ms() + 180000;
    for (;;) { /* a chunk of the first table saved: the tables' freshness is in the state file */
        ck_state s = ck_read_state(&r);
        if (ck_progress(&s) >= 1)
            break;
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        cr_assert(tb_itest_now_ms() < deadline, "no chunk saved in 180 s; see %s", r.log);
        usleep(1000);
    }
    kill(r.pid, SIGKILL);
    cr_assert_eq(e2e_wait(r.pid, 10000), -1);
    ck_state s = ck_read_state(&r);
    char ts[200];
    snprintf(ts, sizeof ts, "%s.ts,", r.db);
    cr_assert(s.initial && strstr(s.queue, ts), "the snapshot passed ts before the kill (queue %s)", s.queue);

    /* while stopped: every row of ts changes (the restart streams them into its topic), then ts is
     * dropped and made again with its first 100 rows */
    e2e_sql(m, "UPDATE %s.ts SET n = n + 1", r.db);
    e2e_sql(m, "CREATE TEMPORARY TABLE %s.ts_keep AS SELECT * FROM %s.ts WHERE id <= 100", r.db, r.db);
    e2e_sql(m, "DROP TABLE %s.ts", r.db);
    e2e_sql(m, "CREATE TABLE %s.ts (k VARCHAR(40) NOT NULL PRIMARY KEY, id INT NOT NULL UNIQUE, v VARCHAR(20), n INT) "
               "DEFAULT CHARSET utf8mb4",
            r.db);
    e2e_sql(m, "INSERT INTO %s.ts SELECT * FROM %s.ts_keep", r.db, r.db);
    e2e_sql(m, "DROP TEMPORARY TABLE %s.ts_keep", r.db);
    ck_second_run(&r, m);
    ck_expect_said(&r, "ts", "a statement changed it during the initial snapshot", 1);
    ck_expect_said(&r, "ts", "reconcile after incremental snapshot: 2400 key(s)", 1);
    char first[sizeof r.log];
    snprintf(first, sizeof first, "%.250s/first.log", r.dir);
    for (size_t t = 0; t < 2; t++) { /* ti and tc: either run may have read their last chunk */
        char none[300], step[300];
        snprintf(none, sizeof none, "%s.%s: no reconcile after the snapshot", r.db, ck_tables[t]);
        snprintf(step, sizeof step, "%s.%s: reconcile after", r.db, ck_tables[t]);
        cr_expect_geq(ck_count_in(first, none) + st_log_count(&r, none), 1, "no run says \"%s\"", none);
        cr_expect_eq(ck_count_in(first, step) + st_log_count(&r, step), 0, "a run says \"%s\"", step);
    }
    ck_end_equal(&r, m);
}

/* snapshot.threads=2 for a user the server gives five connections (MAX_USER_CONNECTIONS): the
 * run's own take four, so every window read ahead is refused its second connection. The
 * snapshot goes on without reading ahead and ends equal to the source; the refusal is said
 * once (WARN), and reading ahead is tried again after 2, 4, 8 ... windows, not after each of
 * the ~40 windows (each try opens a connection and drops it). */
Test(e2e_snapshot_chunked, read_ahead_refused_connections, .timeout = 600, .fini = e2e_kill_children)
{
    MYSQL *admin = e2e_mysql();
    char user[64], more[400];
    snprintf(user, sizeof user, "tbahead%d", (int)getpid());
    e2e_sql(admin, "DROP USER IF EXISTS '%s'@'127.0.0.1'", user);
    e2e_sql(admin, "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 5", user);
    e2e_sql(admin, "GRANT ALL ON *.* TO '%s'@'127.0.0.1'", user);
    snprintf(more, sizeof more, "snapshot.threads=2\nsource.user=%s\nsource.password=pw\nlog.level=debug", user);
    rc_run r;
    MYSQL *m;
    ck_begin(&r, "e2eckahead", more, &m);
    ck_wait_done(&r);
    rc_caught_up(m, &r);
    st_stop(&r);
    size_t failed = st_log_count(&r, "ahead failed: ");
    size_t warned = st_log_count(&r, "WARN  incsnap: reading the next window");
    size_t windows = st_log_count(&r, " rows read, window ") + st_log_count(&r, " rows read ahead, window ");
    cr_expect_eq(warned, 1, "%s: the refusal said %zu times at WARN, not once", r.log, warned);
    cr_expect(failed >= 3 && failed <= 8, "%s: %zu reads ahead refused over %zu windows (2, 4, 8 ... apart: 3 to 8)",
              r.log, failed, windows);
    cr_expect(windows >= 30, "%s: %zu windows", r.log, windows);
    cr_log_info("%zu windows, %zu reads ahead refused", windows, failed);
    cr_expect_eq(st_log_count(&r, "max_user_connections"), failed, "%s: another refusal than the read ahead's", r.log);
    ck_end_equal(&r, m);
    e2e_sql(admin, "DROP USER '%s'@'127.0.0.1'", user);
    mysql_close(admin);
}

/* Table t of `rows` rows in a new database, snapshotted by a first run (snapshot.log) that is
 * stopped once caught up; the connection to the source is returned. */
static MYSQL *ck_table_snapshotted(rc_run *r, const char *tag, const char *extra, int rows)
{
    rc_setup(r, tag, extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r->db);
    rc_table(m, r->db, "t", rows);
    snprintf(r->log, sizeof r->log, "%.250s/snapshot.log", r->dir);
    rc_start(r, NULL);
    rc_caught_up(m, r);
    st_stop(r);
    return m;
}

/* A kill -9 after the commit that passes a RENAME's queued snapshot of the new name and before
 * the state file's write that follows it (TB_TEST_INCSNAP_KILL_BEFORE_SAVE, a hook of test
 * builds): the state file got the queued snapshot as pending before that commit, so the next
 * run, resuming past the RENAME, still snapshots the new name, whose topic otherwise never gets
 * the rows the RENAME took from the old one. */
Test(e2e_snapshot_chunked, kill_between_commit_and_state_write, .timeout = 240, .fini = e2e_kill_children)
{
    rc_run r; /* offsets in a file: committed is durable */
    /* 300 chunks of 10 rows: the snapshot lasts several commit intervals (100 ms) even in an
     * optimized build, so the commit the hook kills at falls inside it (checked below) */
    MYSQL *m = ck_table_snapshotted(&r, "e2eckkill", "snapshot.chunk.size=10\noffsets.storage=file\n", 3000);
    snprintf(r.log, sizeof r.log, "%.250s/first.log", r.dir);
    cr_assert_eq(setenv("TB_TEST_INCSNAP_KILL_BEFORE_SAVE", "1", 1), 0);
    rc_start(&r, NULL);
    cr_assert_eq(unsetenv("TB_TEST_INCSNAP_KILL_BEFORE_SAVE"), 0);
    st_wait_log(&r, "streaming from the binlog", 60000, "not streaming");
    e2e_sql(m, "RENAME TABLE %s.t TO %s.t2", r.db, r.db);
    int st = 0;
    long long deadline = tb_itest_now_ms() + 60000;
    while (waitpid(r.pid, &st, WNOHANG) == 0) {
        cr_assert(tb_itest_now_ms() < deadline, "the hook did not kill the run; see %s", r.log);
        usleep(20000);
    }
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the run was not killed at the hook; see %s", r.log);
    r.pid = 0;
    char done[300];
    snprintf(done, sizeof done, "incremental snapshot of %s.t2 done", r.db);
    cr_assert_eq(st_log_count(&r, done), 0,
                 "the first run finished the snapshot before the commit it was killed at, so nothing is left to "
                 "resume and the case is not tested (a slower snapshot is needed: more rows, smaller chunks); see %s",
                 r.log);
    snprintf(r.log, sizeof r.log, "%.250s/second.log", r.dir);
    rc_start(&r, NULL);
    st_wait_log(&r, done, 60000, "the snapshot of t2 was not resumed");
    cr_assert_eq(st_log_count(&r, "the state pending at the resumed position is in force"), 1,
                 "the pending state was not what resumed it; see %s", r.log);
    st_stop(&r);
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t2", (const char *const[]){"id", "v", "n", NULL}, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* A run stopped (SIGTERM) right after a RENAME signalled the incremental snapshot of the new
 * name, with no commit of the run loop in between (offsets.commit.interval.ms far away): the
 * final commit passes the signal, so the state file must hold the queued snapshot by then, and
 * the next run resumes it. Before, the state was saved only by the run loop's commits, and the
 * new name's topic (the RENAME emptied the old one) never got its rows. */
Test(e2e_snapshot_chunked, stop_right_after_the_signal, .timeout = 300, .fini = e2e_kill_children)
{
    rc_run r;
    MYSQL *m = ck_table_snapshotted(&r, "e2eckstop", "snapshot.chunk.size=100\n", 6000);
    FILE *f = fopen(r.cfg, "a"); /* from now on only the stop commits (the last value counts) */
    cr_assert_not_null(f);
    fprintf(f, "offsets.commit.interval.ms=600000\n");
    fclose(f);
    snprintf(r.log, sizeof r.log, "%.250s/first.log", r.dir);
    rc_start(&r, NULL);
    st_wait_log(&r, "streaming from the binlog", 60000, "not streaming");
    e2e_sql(m, "RENAME TABLE %s.t TO %s.t2", r.db, r.db);
    char queued[300], done[300];
    snprintf(queued, sizeof queued, "incremental snapshot of %s.t2 queued", r.db);
    snprintf(done, sizeof done, "incremental snapshot of %s.t2 done", r.db);
    st_wait_log(&r, queued, 60000, "the RENAME's snapshot was not queued");
    st_stop(&r);
    bool finished = st_log_count(&r, done) > 0;
    if (!finished) { /* stopped inside the snapshot: the state file holds it */
        json_error_t je;
        json_t *st = json_load_file(r.state, 0, &je);
        cr_assert_not_null(st, "%s: no state file after a stop inside a queued snapshot", r.state);
        char want[200];
        snprintf(want, sizeof want, "%s.t2", r.db);
        json_t *q = json_object_get(st, "queue");
        cr_expect(json_array_size(q) == 1 && json_string_value(json_array_get(q, 0)) &&
                      strcmp(json_string_value(json_array_get(q, 0)), want) == 0,
                  "%s: the queued snapshot of %s is not in the state file", r.state, want);
        json_decref(st);
    }
    cr_log_info("stopped %s the snapshot", finished ? "after" : "inside");
    snprintf(r.log, sizeof r.log, "%.250s/second.log", r.dir);
    rc_start(&r, NULL);
    long long deadline = tb_itest_now_ms() + 120000;
    while (!finished && st_log_count(&r, done) < 1) {
        cr_assert(tb_itest_now_ms() < deadline, "the snapshot of t2 was not resumed; see %s", r.log);
        cr_assert_eq(e2e_wait(r.pid, 0), -2, "tributary run stopped early; see %s", r.log);
        usleep(20000);
    }
    st_stop(&r); /* flushes and commits what the snapshot sent */
    rc_cache_build(&r);
    rc_assert_equal(&r, m, "t2", (const char *const[]){"id", "v", "n", NULL}, "id, v, n", true);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}
