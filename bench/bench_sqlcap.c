/*
 * bench_sqlcap: SQLite capture benchmark (not a test).
 *
 *   bench_sqlcap [DIR] [NTX] [RUNS]     defaults: /tmp, 2000, 5
 *
 * 1. Writer overhead: the same writer workload (NTX transactions of 10 row
 *    changes: 60% insert, 25% update, 15% delete; WAL, synchronous=NORMAL,
 *    autocheckpoint 1000) timed with no reader, with the WAL reader attached
 *    (separate process, shadow on, acking every 1000 events) and with trigger
 *    mode (separate process draining and acking), interleaved per run; medians
 *    and ratios. WAL file size after each writer run = WAL growth.
 *    Also "pin only": a process holding one read transaction (no consuming),
 *    which separates the cost of the pin (WAL growth) from the reader's CPU.
 *    BENCH_SQLCAP_AUTOCHECKPOINT=N sets the writer's wal_autocheckpoint;
 *    BENCH_SQLCAP_READER_CHECKPOINT=1 turns on the reader's reset windows
 *    (source.sqlite.checkpoint=on).
 *    BENCH_SQLCAP_ONLY=overhead or =throughput runs only part 1 or part 2.
 *    BENCH_SQLCAP_REPIN_MS=N sets sqlcap_opts.repin_ms (0: the default coarse
 *    pin, -1: leapfrog at every poll, the behaviour before the coarse pin).
 *    BENCH_SQLCAP_PACE_US=N: the writer sleeps N us after each commit (a writer
 *    the reader keeps up with; part 1 only).
 *    BENCH_SQLCAP_CPU_SPLIT=1: writer on CPU 0, reader process on CPU 1
 *    (sched_setaffinity), to tell CPU contention from protocol cost.
 *    BENCH_SQLCAP_PHASES=letters picks runs (n no reader, w WAL reader, p pin
 *    only, t trigger; B, A: capture mode B, mode A), e.g. to profile one.
 * 2. Capture throughput: the WAL reader attaches and pins, the writer writes
 *    the whole workload, then the reader drains the backlog: rows/s of
 *    sqlcap_next (events fully built) in mode B and mode A.
 */
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqlcap.h"
#include "tb_log.h"

static volatile sig_atomic_t stop_flag;

/* BENCH_SQLCAP_CPU_SPLIT=1: pin the calling process to one CPU (writer 0, reader 1) */
static void bench_cpu(int cpu)
{
    const char *e = getenv("BENCH_SQLCAP_CPU_SPLIT");
    if (!e || atoi(e) != 1)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fprintf(stderr, "bench_sqlcap: sched_setaffinity(cpu %d) failed\n", cpu);
}
static void on_term(int sig) { (void)sig; stop_flag = 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_sqlcap: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

/* A fresh database for one run. The previous run's files are removed and the
 * rest of their dirty pages written back first (sync), so that writeback does
 * not land inside this run's timing: after the 92 MB WALs of the overhead part
 * the writer-overhead medians went from +4% to +20-29% wall until it settled. */
static void setup_db(const char *path)
{
    char buf[512];
    const char *suffix[] = {"", "-wal", "-shm", ".tbshadow", ".tbshadow.pos", ".tbshadow.redo", ".tbshadow.pend"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        snprintf(buf, sizeof buf, "%s%s", path, suffix[i]);
        remove(buf);
    }
    sync();
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE bench(id INTEGER PRIMARY KEY, a INT, b TEXT, c REAL);"
                         "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<10000) "
                         "INSERT INTO bench SELECT i, i*7, printf('initial row %d', i), i/3.0 FROM s;",
                     NULL, NULL, NULL) != SQLITE_OK)
        die(db, "setup");
    sqlite3_close(db);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double last_writer_cpu; /* CPU seconds (user+sys) of the last writer_run: less sensitive to other load */

static double writer_run(const char *path, int ntx, unsigned seed, long *wal_bytes)
{
    sqlite3 *db;
    sqlite3_stmt *ins, *upd, *del;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die(db, "open");
    sqlite3_busy_timeout(db, 60000);
    sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    const char *ac = getenv("BENCH_SQLCAP_AUTOCHECKPOINT"); /* writer's wal_autocheckpoint (default 1000) */
    if (ac) {
        char *q = sqlite3_mprintf("PRAGMA wal_autocheckpoint=%d", atoi(ac));
        sqlite3_exec(db, q, NULL, NULL, NULL);
        sqlite3_free(q);
    }
    sqlite3_prepare_v2(db, "INSERT INTO bench VALUES(?, ?, ?, ?)", -1, &ins, NULL);
    sqlite3_prepare_v2(db, "UPDATE bench SET a = a + 1, b = ? WHERE id = ?", -1, &upd, NULL);
    sqlite3_prepare_v2(db, "DELETE FROM bench WHERE id = ?", -1, &del, NULL);
    srand(seed);
    long next = 100000;
    /* BENCH_SQLCAP_PACE_US=N: sleep N us after each commit (a writer the reader can keep up with) */
    long pace_us = getenv("BENCH_SQLCAP_PACE_US") ? atol(getenv("BENCH_SQLCAP_PACE_US")) : 0;
    double t0 = now_s(), c0 = cpu_s();
    for (int t = 0; t < ntx; t++) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (int r = 0; r < 10; r++) {
            int k = rand() % 100;
            char txt[64];
            snprintf(txt, sizeof txt, "value %d %d", t, r);
            sqlite3_stmt *st = k < 60 ? ins : k < 85 ? upd : del;
            if (st == ins) {
                sqlite3_bind_int64(ins, 1, next++);
                sqlite3_bind_int(ins, 2, rand());
                sqlite3_bind_text(ins, 3, txt, -1, SQLITE_TRANSIENT);
                sqlite3_bind_double(ins, 4, rand() / 7.0);
            } else if (st == upd) {
                sqlite3_bind_text(upd, 1, txt, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int64(upd, 2, 1 + rand() % 10000);
            } else {
                sqlite3_bind_int64(del, 1, 1 + rand() % 10000);
            }
            if (sqlite3_step(st) != SQLITE_DONE)
                die(db, "step");
            sqlite3_reset(st);
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            die(db, "commit");
        if (pace_us > 0) {
            struct timespec ps = {0, pace_us * 1000L};
            nanosleep(&ps, NULL);
        }
    }
    double dt = now_s() - t0;
    last_writer_cpu = cpu_s() - c0;
    char wal[512];
    struct stat sb;
    snprintf(wal, sizeof wal, "%s-wal", path);
    *wal_bytes = stat(wal, &sb) == 0 ? (long)sb.st_size : 0;
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
    sqlite3_finalize(del);
    sqlite3_close(db);
    return dt;
}

/* Reader child: attach, report ready; optionally wait for "go"; consume until
 * SIGTERM (follow mode) or until caught up (drain mode); report events, seconds. */
/* A process that only holds one read transaction open (the pure pin, no consuming). */
static pid_t spawn_pin(const char *path)
{
    int ready[2];
    if (pipe(ready))
        exit(1);
    pid_t p = fork();
    if (p == 0) {
        sqlite3 *db;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_exec(db, "BEGIN; SELECT count(*) FROM bench", NULL, NULL, NULL) != SQLITE_OK)
            _exit(1);
        if (write(ready[1], "R", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char ch;
    if (read(ready[0], &ch, 1) != 1)
        exit(1);
    close(ready[0]);
    return p;
}

static pid_t spawn_reader(const char *path, bool trigger, bool shadow, bool drain, int *go_fd, int *res_fd)
{
    int ready[2], go[2], res[2];
    if (pipe(ready) || pipe(go) || pipe(res))
        exit(1);
    pid_t p = fork();
    if (p == 0) {
        signal(SIGTERM, on_term);
        bench_cpu(1);
        sqlcap_opts o = {.path = path, .trigger_mode = trigger, .shadow = shadow, .poll_ms = 10,
                         .checkpoint = getenv("BENCH_SQLCAP_READER_CHECKPOINT") != NULL,
                         .checkpoint_barrier = getenv("BENCH_SQLCAP_READER_CHECKPOINT") &&
                                               strcmp(getenv("BENCH_SQLCAP_READER_CHECKPOINT"), "barrier") == 0,
                         .repin_ms = getenv("BENCH_SQLCAP_REPIN_MS") ? atoi(getenv("BENCH_SQLCAP_REPIN_MS")) : 0};
        sqlcap *c;
        tb_error err;
        if (sqlcap_open_opts(&o, NULL, &c, &err) != TB_OK) {
            fprintf(stderr, "reader: %s\n", err.msg);
            _exit(1);
        }
        if (write(ready[1], "R", 1) != 1)
            _exit(1);
        char ch;
        if (drain && read(go[0], &ch, 1) != 1)
            _exit(1);
        long events = 0;
        struct timespec c0;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        double t0 = now_s(), tl = t0;
        while (!stop_flag) {
            evt_event *ev;
            if (sqlcap_next(c, drain ? 300 : 50, &ev, &err) != TB_OK) {
                fprintf(stderr, "reader: %s\n", err.msg);
                _exit(1);
            }
            if (!ev) {
                if (drain)
                    break;
                continue;
            }
            events++;
            tl = now_s();
            if (evt_event_last_in_tx(ev) && events % 1000 < 10) {
                tb_position p2;
                tb_position_init(&p2);
                tb_position_copy(&p2, evt_event_position(ev));
                sqlcap_ack(c, &p2, &err);
                tb_position_free(&p2);
            }
        }
        double secs = tl - t0;
        struct timespec cpu;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        double cpus = (double)(cpu.tv_sec - c0.tv_sec) + (cpu.tv_nsec - c0.tv_nsec) / 1e9;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        sqlcap_stats cs;
        sqlcap_get_stats(c, &cs);
        if (!drain && !trigger)
            fprintf(stderr, "  wal reader at SIGTERM: lag %llu frames, %llu WAL generations seen, %llu events, "
                    "%llu pin moves\n", (unsigned long long)cs.lag_frames, (unsigned long long)cs.generations,
                    (unsigned long long)events, (unsigned long long)cs.pin_moves);
        if (drain)
            fprintf(stderr, "  reader drained %ld events in %.3f s wall, %.3f s cpu (%.0f rows per cpu-second), "
                    "%.3f s user, %.3f s sys, %ld minor faults (whole process)\n", events, secs, cpus,
                    cpus > 0 ? events / cpus : 0, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
                    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_minflt);
        if (write(res[1], &events, sizeof events) < 0 || write(res[1], &secs, sizeof secs) < 0)
            _exit(1);
        sqlcap_close(c);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    close(res[1]);
    char ch;
    if (read(ready[0], &ch, 1) != 1) {
        fprintf(stderr, "bench_sqlcap: reader failed to start\n");
        exit(1);
    }
    close(ready[0]);
    *go_fd = go[1];
    *res_fd = res[0];
    return p;
}

static void reader_result(pid_t p, int go_fd, int res_fd, bool term, long *events, double *secs)
{
    if (term)
        kill(p, SIGTERM);
    if (go_fd >= 0)
        close(go_fd);
    if (read(res_fd, events, sizeof *events) != sizeof *events || read(res_fd, secs, sizeof *secs) != sizeof *secs)
        *events = 0, *secs = 0;
    close(res_fd);
    int st;
    waitpid(p, &st, 0);
}

/* One writer run on a fresh database with a follow-mode reader attached (WAL
 * reader with shadow, or trigger mode): wall seconds; *cpu, *wal as writer_run. */
static double writer_with_reader(const char *path, int ntx, int r, bool trigger, double *cpu, long *wal)
{
    int go, res;
    long ev;
    double secs;
    setup_db(path);
    pid_t p = spawn_reader(path, trigger, !trigger, false, &go, &res);
    double t = writer_run(path, ntx, (unsigned)r, wal);
    *cpu = last_writer_cpu;
    reader_result(p, go, res, true, &ev, &secs);
    return t;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    int ntx = argc > 2 ? atoi(argv[2]) : 2000;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (runs > 32)
        runs = 32;
    char path[512];
    snprintf(path, sizeof path, "%s/bench_sqlcap.db", dir);
    tb_log_set_level(getenv("BENCH_SQLCAP_DEBUG") ? TB_LOG_DEBUG : TB_LOG_WARN);
    bench_cpu(0);
    double tn[32], tw[32], tt[32], tp[32], cn[32], cw[32], ct[32], cp[32];
    long wal_n = 0, wal_w = 0, wal_t = 0, wal_p = 0;
    printf("bench_sqlcap: %d transactions x 10 row changes, %d runs, SQLite %s\n", ntx, runs, sqlite3_libversion());
    /* BENCH_SQLCAP_ONLY=throughput: part 2 only (profiling); =overhead: part 1 only */
    const char *only = getenv("BENCH_SQLCAP_ONLY");
    bool part1 = !only || strcmp(only, "overhead") == 0, part2 = !only || strcmp(only, "throughput") == 0;
    /* BENCH_SQLCAP_PHASES: letters of the runs to do (writer runs: n no reader,
     * w WAL reader, p pin only, t trigger mode; capture: B mode B, A mode A;
     * default all), e.g. for profiling one */
    const char *phases = getenv("BENCH_SQLCAP_PHASES") ? getenv("BENCH_SQLCAP_PHASES") : "nwptBA";
    memset(tn, 0, sizeof tn), memset(tw, 0, sizeof tw), memset(tp, 0, sizeof tp), memset(tt, 0, sizeof tt);
    memset(cn, 0, sizeof cn), memset(cw, 0, sizeof cw), memset(cp, 0, sizeof cp), memset(ct, 0, sizeof ct);
    for (int r = 0; part1 && r < runs; r++) {
        pid_t p;
        if (strchr(phases, 'n')) {
            setup_db(path);
            tn[r] = writer_run(path, ntx, (unsigned)r, &wal_n);
            cn[r] = last_writer_cpu;
        }
        if (strchr(phases, 'w'))
            tw[r] = writer_with_reader(path, ntx, r, false, &cw[r], &wal_w);
        if (strchr(phases, 'p')) {
            setup_db(path);
            p = spawn_pin(path);
            tp[r] = writer_run(path, ntx, (unsigned)r, &wal_p);
            cp[r] = last_writer_cpu;
            kill(p, SIGKILL);
            waitpid(p, NULL, 0);
        }
        if (strchr(phases, 't'))
            tt[r] = writer_with_reader(path, ntx, r, true, &ct[r], &wal_t);
        printf("run %d: no reader %.3f s, wal reader %.3f s, pin only %.3f s, trigger mode %.3f s\n", r + 1, tn[r], tw[r],
               tp[r], tt[r]);
    }
    if (!part1)
        goto throughput;
    double mn = median(tn, runs), mw = median(tw, runs), mt = median(tt, runs), mp = median(tp, runs);
    printf("writer time (median): pin only (one held read transaction, no consuming) %.3f s (x%.3f)\n", mp, mp / mn);
    printf("writer time (median): no reader %.3f s | wal reader %.3f s (x%.3f, %+.1f%%) | trigger %.3f s (x%.3f)\n", mn,
           mw, mw / mn, (mw / mn - 1) * 100, mt, mt / mn);
    double qn = median(cn, runs), qw = median(cw, runs), qt = median(ct, runs), qp = median(cp, runs);
    printf("writer CPU (median): no reader %.3f s | wal reader %.3f s (x%.3f, %+.1f%%) | pin only %.3f s (x%.3f) | "
           "trigger %.3f s (x%.3f)\n", qn, qw, qw / qn, (qw / qn - 1) * 100, qp, qp / qn, qt, qt / qn);
    printf("WAL size after the writer run: no reader %ld bytes | wal reader %ld bytes | pin only %ld bytes | trigger %ld bytes\n",
           wal_n, wal_w, wal_p, wal_t);
throughput:
    for (int mode = 0; part2 && mode < 2; mode++) {
        if (!strchr(phases, mode == 0 ? 'B' : 'A'))
            continue;
        double rate[32];
        long evs = 0;
        for (int r = 0; r < runs; r++) {
            int go, res;
            double secs;
            setup_db(path);
            pid_t p = spawn_reader(path, false, mode == 0, true, &go, &res);
            long wb;
            writer_run(path, ntx, (unsigned)r, &wb);
            if (write(go, "G", 1) != 1)
                return 1;
            reader_result(p, -1, res, false, &evs, &secs);
            close(go);
            rate[r] = secs > 0 ? evs / secs : 0;
        }
        printf("capture throughput (%s, backlog of %d txns, %ld row events): %.0f rows/s (median of %d)\n",
               mode == 0 ? "mode B, shadow" : "mode A, no shadow", ntx, evs, median(rate, runs), runs);
    }
    setup_db(path);
    remove(path);
    return 0;
}
