/* Helpers of the snapshot tests. See snap_test_util.h. */
#include "snap_test_util.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evt_json.h"
#include "snap.h"
#include "snap_mysql.h"
#include "tb_buf.h"
#include "tb_log.h"
#include "test_child.h"

bool st_in_child;

/* Criterion must not be called from a forked helper process (it reports to
 * the runner by pid): there a failure is logged and ends the process. */
#define ST_FAIL(...) do { \
        if (st_in_child) { tb_log(TB_LOG_ERROR, "test-child", __VA_ARGS__); _exit(70); } \
        cr_assert_fail(__VA_ARGS__); \
    } while (0)

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        cr_assert_fail("%s is not set: run the integration tests inside scripts/testenv", name);
    return v;
}

void st_require_env(void)
{
    env("TRIBUTARY_TEST_MYSQL_HOST");
    env("TRIBUTARY_TEST_MYSQL_PORT");
    env("TRIBUTARY_TEST_MYSQL_USER");
    env("TRIBUTARY_TEST_MYSQL_PASSWORD");
}

static void set(cfg *c, const char *k, const char *v)
{
    tb_error err;
    if (cfg_set(c, k, v, "test", &err) != TB_OK)
        ST_FAIL("cfg_set %s: %s", k, err.msg);
}

cfg *st_cfg(const char *offsets_dir, const char *const *extra)
{
    st_require_env();
    cfg *c = cfg_new();
    cr_assert_not_null(c);
    set(c, "source.host", env("TRIBUTARY_TEST_MYSQL_HOST"));
    set(c, "source.port", env("TRIBUTARY_TEST_MYSQL_PORT"));
    set(c, "source.user", env("TRIBUTARY_TEST_MYSQL_USER"));
    set(c, "source.password", env("TRIBUTARY_TEST_MYSQL_PASSWORD"));
    set(c, "sink", "stdout");
    set(c, "offsets.storage", "file");
    char path[4096];
    snprintf(path, sizeof(path), "%s/offsets", offsets_dir ? offsets_dir : "/tmp");
    set(c, "offsets.file", path);
    /* a replica server id of this process: concurrent tests must not share one */
    char sid[32];
    snprintf(sid, sizeof(sid), "%ld", 1000000L + (long)getpid() % 1000000L);
    set(c, "source.server.id", sid);
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *eq = strchr(extra[i], '=');
        cr_assert_not_null(eq, "bad extra setting %s", extra[i]);
        char *k = strndup(extra[i], (size_t)(eq - extra[i]));
        set(c, k, eq + 1);
        free(k);
    }
    return c;
}

MYSQL *st_connect(void)
{
    st_require_env();
    MYSQL *my = mysql_init(NULL);
    cr_assert_not_null(my);
    mysql_optionsv(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(my, env("TRIBUTARY_TEST_MYSQL_HOST"), env("TRIBUTARY_TEST_MYSQL_USER"),
                            env("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL,
                            (unsigned)atoi(env("TRIBUTARY_TEST_MYSQL_PORT")), NULL, 0))
        cr_assert_fail("connect: %s", mysql_error(my));
    st_sql(my, "SET SESSION sql_mode='', time_zone='+00:00'");
    return my;
}

void st_sql(MYSQL *my, const char *fmt, ...)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        cr_assert_fail("vasprintf");
    va_end(ap);
    if (mysql_query(my, s) != 0)
        cr_assert_fail("%s: %s", s, mysql_error(my));
    do {
        MYSQL_RES *r = mysql_store_result(my);
        if (r)
            mysql_free_result(r);
    } while (mysql_next_result(my) == 0);
    free(s);
    tb_buf_free(&b);
}

int64_t st_sql_int(MYSQL *my, const char *sql)
{
    if (mysql_query(my, sql) != 0)
        cr_assert_fail("%s: %s", sql, mysql_error(my));
    MYSQL_RES *r = mysql_store_result(my);
    cr_assert_not_null(r, "%s: no result", sql);
    MYSQL_ROW row = mysql_fetch_row(r);
    int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
    mysql_free_result(r);
    return v;
}

void st_current_position(MYSQL *my, tb_position *pos)
{
    tb_error err;
    if (snap_mysql_current_position(my, true, pos, &err) != TB_OK)
        cr_assert_fail("current position: %s", err.msg);
}

bool st_pos_ge(const tb_position *a, const tb_position *b)
{
    if (!a->file || !b->file)
        return false;
    int c = strcmp(a->file, b->file);
    if (c != 0)
        return c > 0;
    return a->pos >= b->pos;
}

char *st_tmpdir(void)
{
    char *d = strdup("/tmp/tb-snaptest.XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

void st_rmdir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        cr_log_warn("could not remove %s", dir);
}

/* ============================================================ map */

typedef struct st_ent {
    char *key, *row;
} st_ent;

struct st_map {
    st_ent *v;
    size_t cap, n, used; /* used = live + tombstones */
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static char TOMB[] = "";

st_map *st_map_new(void)
{
    st_map *m = calloc(1, sizeof(*m));
    m->cap = 1024;
    m->v = calloc(m->cap, sizeof(*m->v));
    return m;
}

void st_map_free(st_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->v[i].key && m->v[i].key != TOMB) {
            free(m->v[i].key);
            free(m->v[i].row);
        }
    }
    free(m->v);
    free(m);
}

static void grow(st_map *m)
{
    st_ent *old = m->v;
    size_t oc = m->cap;
    m->cap *= 2;
    m->v = calloc(m->cap, sizeof(*m->v));
    m->used = 0;
    m->n = 0;
    for (size_t i = 0; i < oc; i++) {
        if (old[i].key && old[i].key != TOMB) {
            size_t h = hash(old[i].key) & (m->cap - 1);
            while (m->v[h].key)
                h = (h + 1) & (m->cap - 1);
            m->v[h] = old[i];
            m->n++;
            m->used++;
        }
    }
    free(old);
}

static st_ent *find(const st_map *m, const char *key)
{
    size_t h = hash(key) & (m->cap - 1);
    while (m->v[h].key) {
        if (m->v[h].key != TOMB && strcmp(m->v[h].key, key) == 0)
            return &m->v[h];
        h = (h + 1) & (m->cap - 1);
    }
    return NULL;
}

void st_map_put(st_map *m, const char *key, const char *row)
{
    st_ent *e = find(m, key);
    if (e) {
        free(e->row);
        e->row = strdup(row);
        return;
    }
    if ((m->used + 1) * 2 > m->cap)
        grow(m);
    size_t h = hash(key) & (m->cap - 1);
    while (m->v[h].key && m->v[h].key != TOMB)
        h = (h + 1) & (m->cap - 1);
    if (!m->v[h].key)
        m->used++;
    m->v[h].key = strdup(key);
    m->v[h].row = strdup(row);
    m->n++;
}

void st_map_del(st_map *m, const char *key)
{
    st_ent *e = find(m, key);
    if (!e)
        return;
    free(e->key);
    free(e->row);
    e->key = TOMB;
    e->row = NULL;
    m->n--;
}

const char *st_map_get(const st_map *m, const char *key)
{
    st_ent *e = find(m, key);
    return e ? e->row : NULL;
}

size_t st_map_size(const st_map *m)
{
    return m->n;
}

void st_map_apply(st_map *m, const evt_event *ev)
{
    tb_buf k, r;
    tb_buf_init(&k, 0);
    tb_buf_init(&r, 0);
    tb_error err;
    evt_op op = evt_event_op(ev);
    if (op == EVT_OP_DELETE || (op == EVT_OP_UPDATE && !evt_event_key_unchanged(ev))) {
        cr_assert_eq(evt_json_key(ev, EVT_BEFORE, &k, &err), TB_OK, "%s", err.msg);
        st_map_del(m, tb_buf_cstr(&k));
        tb_buf_reset(&k);
    }
    if (op != EVT_OP_DELETE) {
        cr_assert_eq(evt_json_key(ev, EVT_AFTER, &k, &err), TB_OK, "%s", err.msg);
        cr_assert_eq(evt_json_row(ev, EVT_AFTER, &r, &err), TB_OK, "%s", err.msg);
        st_map_put(m, tb_buf_cstr(&k), tb_buf_cstr(&r));
    }
    tb_buf_free(&k);
    tb_buf_free(&r);
}

/* Log the columns in which two row JSONs differ (values cut to 120 bytes). */
static void log_row_diff(const char *what, const char *key, const char *a, const char *b)
{
    evt_jv *ja = NULL, *jb = NULL;
    tb_error err;
    if (!b || evt_jv_parse(a, strlen(a), &ja, &err) != TB_OK || evt_jv_parse(b, strlen(b), &jb, &err) != TB_OK) {
        cr_log_error("%s: key %s: %.300s vs %.300s", what, key, a, b ? b : "(missing)");
        goto out;
    }
    for (size_t i = 0; i < evt_jv_size(ja); i++) {
        size_t kl;
        const char *k = evt_jv_key_at(ja, i, &kl);
        char *name = strndup(k, kl);
        const evt_jv *vb = evt_jv_get(jb, name);
        tb_buf ta, tb2;
        tb_buf_init(&ta, 0);
        tb_buf_init(&tb2, 0);
        evt_jw w;
        evt_jw_init(&w, &ta);
        evt_jv_write(evt_jv_at(ja, i), &w);
        if (vb) {
            evt_jw_init(&w, &tb2);
            evt_jv_write(vb, &w);
        }
        if (!vb || strcmp(tb_buf_cstr(&ta), tb_buf_cstr(&tb2)) != 0)
            cr_log_error("%s: key %s column %s: %.120s vs %.120s", what, key, name, tb_buf_cstr(&ta),
                         vb ? tb_buf_cstr(&tb2) : "(absent)");
        tb_buf_free(&ta);
        tb_buf_free(&tb2);
        free(name);
    }
    if (evt_jv_size(jb) != evt_jv_size(ja))
        cr_log_error("%s: key %s: %zu vs %zu columns", what, key, evt_jv_size(ja), evt_jv_size(jb));
out:
    evt_jv_free(ja);
    evt_jv_free(jb);
}

size_t st_map_diff(const st_map *a, const st_map *b, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < a->cap; i++) {
        const st_ent *e = &a->v[i];
        if (!e->key || e->key == TOMB)
            continue;
        const char *o = st_map_get(b, e->key);
        if (!o || strcmp(o, e->row) != 0) {
            if (bad < 5)
                log_row_diff(what, e->key, e->row, o);
            bad++;
        }
    }
    for (size_t i = 0; i < b->cap; i++) {
        const st_ent *e = &b->v[i];
        if (!e->key || e->key == TOMB)
            continue;
        if (!st_map_get(a, e->key)) {
            if (bad < 5)
                cr_log_error("%s: key %s only on the right: %.300s", what, e->key, e->row);
            bad++;
        }
    }
    if (bad)
        cr_log_error("%s: %zu key(s) differ; %zu vs %zu rows", what, bad, a->n, b->n);
    return bad;
}

st_map *st_map_from_snapshot(const char *db, const char *table)
{
    char inc[512];
    snprintf(inc, sizeof(inc), "tables.include=^%s\\.%s$", db, table);
    const char *extra[] = {inc, NULL};
    cfg *c = st_cfg(NULL, extra);
    snap *s = NULL;
    tb_error err;
    if (snap_open(c, &s, &err) != TB_OK)
        cr_assert_fail("snap_open: %s", err.msg);
    st_map *m = st_map_new();
    for (;;) {
        evt_event *ev = NULL;
        if (snap_next(s, &ev, &err) != TB_OK)
            cr_assert_fail("snap_next: %s", err.msg);
        if (!ev)
            break;
        st_map_apply(m, ev);
    }
    snap_close(s);
    cfg_free(c);
    return m;
}

/* ============================================================ writer */

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

struct st_writer {
    pid_t pid;
    volatile uint64_t *shared; /* [0] ops, [1] stop flag, [2] error */
};

static void writer_main(volatile uint64_t *sh, const char *db, const char *table, int64_t max_id, int64_t next_id)
{
    MYSQL *my = mysql_init(NULL);
    if (!my || !mysql_real_connect(my, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_USER"),
                                   getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), db,
                                   (unsigned)atoi(getenv("TRIBUTARY_TEST_MYSQL_PORT")), NULL, 0)) {
        sh[2] = 1;
        _exit(1);
    }
    unsigned seed = (unsigned)getpid();
    char sql[512];
    while (!sh[1]) {
        int r = rand_r(&seed) % 100;
        int64_t id = 1 + rand_r(&seed) % (max_id > next_id ? max_id : next_id);
        bool tx = r >= 90;
        if (tx && mysql_query(my, "BEGIN") != 0)
            break;
        int nstmt = tx ? 3 : 1;
        for (int i = 0; i < nstmt; i++) {
            int kind = rand_r(&seed) % 10;
            if (kind < 4)
                snprintf(sql, sizeof(sql), "UPDATE `%s` SET n = n + 1, s = MD5(RAND()) WHERE id = %lld", table,
                         (long long)id);
            else if (kind < 7)
                snprintf(sql, sizeof(sql), "INSERT INTO `%s` VALUES (%lld, %d, MD5(RAND()), 0)", table,
                         (long long)next_id++, rand_r(&seed) % 1000);
            else if (kind < 9)
                snprintf(sql, sizeof(sql), "DELETE FROM `%s` WHERE id = %lld", table, (long long)id);
            else /* primary-key change */
                snprintf(sql, sizeof(sql), "UPDATE IGNORE `%s` SET id = %lld WHERE id = %lld", table,
                         (long long)next_id++, (long long)id);
            if (mysql_query(my, sql) != 0) {
                sh[2] = mysql_errno(my);
                _exit(1);
            }
            id = 1 + rand_r(&seed) % next_id;
        }
        if (tx && mysql_query(my, "COMMIT") != 0)
            break;
        sh[0] += 1;
        struct timespec ts = {0, 1000 * 1000}; /* throttle: < 1k ops/s */
        nanosleep(&ts, NULL);
    }
    mysql_close(my);
    _exit(0);
}

st_writer *st_writer_start(const char *db, const char *table, int64_t max_id, int64_t first_new_id)
{
    st_writer *w = calloc(1, sizeof(*w));
    w->shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(w->shared, MAP_FAILED);
    w->pid = tb_test_fork();
    cr_assert_geq(w->pid, 0);
    if (w->pid == 0) {
        writer_main(w->shared, db, table, max_id, first_new_id);
    }
    return w;
}

uint64_t st_writer_ops(const st_writer *w)
{
    return w->shared[0];
}

uint64_t st_writer_stop(st_writer *w)
{
    w->shared[1] = 1;
    int status = 0;
    waitpid(w->pid, &status, 0);
    uint64_t ops = w->shared[0];
    uint64_t e = w->shared[2];
    munmap((void *)(uintptr_t)w->shared, 4096); /* the mapping (volatile while shared); the writer has exited */
    free(w);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer failed (mysql error %llu)",
              (unsigned long long)e);
    return ops;
}

bool st_wait(bool (*fn)(void *), void *arg, int timeout_ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (fn(arg))
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
            return false;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void st_make_table(MYSQL *my, const char *db, const char *table, int64_t n)
{
    st_sql(my, "DROP DATABASE IF EXISTS `%s`", db);
    st_sql(my, "CREATE DATABASE `%s`", db);
    st_sql(my, "CREATE TABLE `%s`.`%s` (id INT NOT NULL PRIMARY KEY, k INT, s VARCHAR(64), n BIGINT) ENGINE=InnoDB",
           db, table);
    st_sql(my, "INSERT INTO `%s`.`%s` SELECT seq, seq %% 1000, MD5(seq), 0 FROM `%s`.seq_1_to_%lld", db, table,
           db, (long long)n);
}

/* ============================================================ reader */

#include "binlog.h"

struct st_reader {
    binlog_reader *r;
    tb_position pos;    /* after the last complete transaction */
};

st_reader *st_reader_open(const cfg *c, const tb_position *start)
{
    st_reader *sr = calloc(1, sizeof(*sr));
    tb_position_init(&sr->pos);
    tb_position_copy(&sr->pos, start);
    tb_error err;
    if (binlog_open(c, start, &sr->r, &err) != TB_OK)
        ST_FAIL("binlog_open: %s", err.msg);
    return sr;
}

evt_event *st_reader_next(st_reader *sr, int timeout_ms)
{
    tb_error err;
    evt_event *ev = NULL;
    if (binlog_next(sr->r, timeout_ms, &ev, &err) != TB_OK)
        ST_FAIL("binlog_next: %s", err.msg);
    const tb_position *p = binlog_position(sr->r);
    if (p->kind != TB_POS_NONE)
        tb_position_copy(&sr->pos, p);
    return ev;
}

const tb_position *st_reader_position(const st_reader *sr)
{
    return &sr->pos;
}

void st_reader_close(st_reader *sr)
{
    if (!sr)
        return;
    binlog_close(sr->r);
    tb_position_free(&sr->pos);
    free(sr);
}
