/*
 * e2e_util.h: helpers of the end-to-end fault tests (tests/e2e/). Header-only,
 * for one Criterion executable.
 *
 *   e2e_mysql()                    a new connection to the testenv MariaDB (caller closes)
 *   e2e_sql(m, fmt, ...)           run a statement, assert it succeeded
 *   e2e_query_text(m, sql, &buf)   every row as "c1|c2|..\n" appended to buf (NULL as \N)
 *   e2e_spawn(argv, log)           fork/exec the built tributary, stdout+stderr appended to log
 *   e2e_wait(pid, ms)              wait for a child with a deadline; its exit code, -1 if killed,
 *                                  -2 if still running at the deadline
 *   e2e_status_gtid(path, out)     the committed GTID set in a status file (canonical)
 *   e2e_server_gtid(m, out)        the server's @@gtid_binlog_pos (canonical: e2e_gtid_canon)
 *   e2e_gtid_reached(got, want)    every domain of want at or past its sequence number in got
 *   e2e_last_gtid(m, out)          the GTID of the session's last transaction
 *   e2e_count_changes(...)         read_committed consumer: change events and duplicates by
 *                                  source position
 *   e2e_free_port()                a TCP port on 127.0.0.1 that was free a moment ago
 *   e2e_http_get(port, path, body) GET over HTTP/1.0: the status code, the body
 *   e2e_metric_value(port, sample) the value of the /metrics sample that starts with sample, -1 absent
 *   e2e_table_metric(port, family, db, table, label, value)  that of family{connector="<db>",
 *                                  table="<db>.<table>"[,label="value"]} (a test's connector is named
 *                                  after its database)
 *
 * Forked helpers (workload) never call Criterion: they _exit().
 */
#ifndef E2E_UTIL_H
#define E2E_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <mysql.h>

#include "tb_cast.h"
#include "../integration/tb_itest.h"
#include "json_oracle.h"
#include "test_child.h"
#include "tb_buf.h"
#include "tb_file.h"

#define E2E_BIN TB_BINARY_DIR "/app/tributary"

static inline MYSQL *e2e_mysql_try(void)
{
    MYSQL *m = mysql_init(NULL);
    if (!m)
        return NULL;
    unsigned int t = 5;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
    mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &t);
    mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &t);
    const char *port = getenv("TRIBUTARY_TEST_MYSQL_PORT");
    if (!mysql_real_connect(m, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_USER"),
                            getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL, port ? (unsigned)atoi(port) : 0, NULL,
                            0)) {
        mysql_close(m);
        return NULL;
    }
    return m;
}

/* Caller closes with mysql_close. Fails the test when it cannot connect. */
static inline MYSQL *e2e_mysql(void)
{
    tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST");
    tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT");
    tb_itest_env("TRIBUTARY_TEST_MYSQL_USER");
    tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD");
    MYSQL *m = NULL;
    long long deadline = tb_itest_now_ms() + 30000;
    while (!(m = e2e_mysql_try()) && tb_itest_now_ms() < deadline)
        usleep(200000);
    cr_assert_not_null(m, "cannot connect to the testenv MariaDB");
    return m;
}

static inline void e2e_sql(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void e2e_sql(MYSQL *m, const char *fmt, ...)
{
    char q[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    cr_assert_eq(mysql_query(m, q), 0, "%s: %s", q, mysql_error(m));
}

/* Append every row of sql's result as "c1|c2|...\n" to out. */
static inline void e2e_query_text(MYSQL *m, const char *sql, tb_buf *out)
{
    cr_assert_eq(mysql_query(m, sql), 0, "%s: %s", sql, mysql_error(m));
    MYSQL_RES *res = mysql_store_result(m);
    cr_assert_not_null(res, "%s: %s", sql, mysql_error(m));
    unsigned n = mysql_num_fields(res);
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res))) {
        for (unsigned i = 0; i < n; i++) {
            if (i)
                tb_buf_putc(out, '|');
            tb_buf_puts(out, row[i] ? row[i] : "\\N");
        }
        tb_buf_putc(out, '\n');
    }
    mysql_free_result(res);
}

/* Children started by e2e_spawn/e2e_track, killed by e2e_kill_children()
 * (the .fini of every test), so a failed test leaves nothing running. */
static pid_t e2e_children[256];
static size_t e2e_nchildren;

static inline void e2e_track(pid_t pid)
{
    if (e2e_nchildren == sizeof e2e_children / sizeof e2e_children[0]) {
        /* full (a long test starts many): drop the children that have ended, without reaping
         * them (a test may still wait for one) */
        size_t k = 0;
        for (size_t i = 0; i < e2e_nchildren; i++) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)e2e_children[i], &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
                e2e_children[k++] = e2e_children[i]; /* still running */
        }
        e2e_nchildren = k;
    }
    if (e2e_nchildren < sizeof e2e_children / sizeof e2e_children[0])
        e2e_children[e2e_nchildren++] = pid;
}

static inline void e2e_kill_children(void)
{
    for (size_t i = 0; i < e2e_nchildren; i++)
        if (waitpid(e2e_children[i], NULL, WNOHANG) == 0) {
            kill(e2e_children[i], SIGKILL);
            waitpid(e2e_children[i], NULL, 0);
        }
    e2e_nchildren = 0;
}

/* The .fini of the tests that stop or kill a server, whatever their outcome: the children first,
 * then the servers started again (tb_itest_restore_servers), so that a failure between a stop-*
 * and its start-* does not take the next tests down with it; also the .init of their suites (a
 * case that timed out ran no .fini). */
static inline void e2e_fini_servers(void)
{
    e2e_kill_children();
    tb_itest_restore_servers();
}

/* fork/exec tributary with args (NULL-terminated, without argv[0]); stdout
 * and stderr appended to log_path. Returns the child's pid. Not inlined: GCC's
 * -Warray-bounds (Release) follows the loop past the NULL of a caller's array. */
static __attribute__((noinline, unused)) pid_t e2e_spawn(const char *const *args, const char *log_path)
{
    char *argv[16];
    size_t n = 0;
    argv[n++] = TB_UNCONST(E2E_BIN); /* execv does not write its arguments */
    for (size_t i = 0; n < 15 && args[i]; i++)
        argv[n++] = TB_UNCONST(args[i]);
    argv[n] = NULL;
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execv(E2E_BIN, argv);
        _exit(127);
    }
    e2e_track(pid);
    return pid;
}

/* Wait up to ms for pid: its exit code, -1 when a signal ended it, -2 when it
 * still runs at the deadline. */
static inline int e2e_wait(pid_t pid, long long ms)
{
    long long deadline = tb_itest_now_ms() + ms;
    for (;;) {
        int st = 0;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (w < 0)
            return -1;
        if (tb_itest_now_ms() >= deadline)
            return -2;
        usleep(20000);
    }
}

/* Remove a test's temporary folder (kept when the test fails, for its logs;
 * kept always with TB_E2E_KEEP set). Only a folder right under /tmp is removed;
 * any other path fails the test, so that a folder is never left behind unseen. */
static inline void e2e_rmtree(const char *dir)
{
    char cmd[600];
    if (getenv("TB_E2E_KEEP"))
        return;
    const char *name = strncmp(dir, "/tmp/", 5) == 0 ? dir + 5 : NULL;
    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strchr(dir, '\'') || snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= (int)sizeof cmd)
        cr_assert_fail("e2e_rmtree: %s is not a folder right under /tmp: not removed", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "e2e: could not remove %s\n", dir);
}

/* Whole file into out (cleared first); false when it cannot be read. */
static inline bool e2e_slurp(const char *path, tb_buf *out)
{
    tb_buf_reset(out);
    if (tb_file_read(path, SIZE_MAX, out, NULL) != TB_OK)
        return false;
    tb_buf_putc(out, '\0');
    out->len--;
    return true;
}

/* Fail when a tributary log holds a sanitizer report (the binary is built
 * with the test tree's sanitizers; its stderr goes to the log, not to ctest). */
static inline void e2e_assert_clean_log(const char *path)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    if (e2e_slurp(path, &b)) {
        const char *s = tb_buf_cstr(&b);
        const char *bad[] = {"ERROR: LeakSanitizer", "ERROR: AddressSanitizer", "runtime error: "};
        for (size_t i = 0; i < 3; i++) {
            const char *hit = strstr(s, bad[i]);
            cr_assert_null(hit, "%s: sanitizer report:\n%.2000s", path, hit);
        }
    }
    tb_buf_free(&b);
}

/* The number of times needle occurs in text. */
static inline size_t e2e_count_text(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* The number of event lines in text (the stdout sink's JSON lines,
 * {"topic":...,"key":...,"value":...}, among log lines) whose member at path
 * equals the JSON `expected` (NULL: is absent); path NULL: every event line.
 * Each is read with Jansson. */
static inline size_t e2e_count_events(const char *text, const char *const *path, const char *expected)
{
    size_t n = 0;
    for (const char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
        nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (strncmp(l, "{\"topic\":", 9) != 0)
            continue;
        json_t *v = jo_parse(l, len);
        n += !path || jo_equal_at(v, path, expected);
        json_decref(v);
    }
    return n;
}

/* One MariaDB GTID list item "D-S-N" of the text at *p: its domain and sequence number, *p moved
 * past it and its comma; false at the end or on anything else. */
static inline bool e2e_gtid_item(const char **p, unsigned long *dom, unsigned long long *seq, const char **start,
                                 size_t *len)
{
    const char *s = *p;
    while (*s == ' ' || *s == ',' || *s == '\n')
        s++;
    if (!*s)
        return false;
    char *end;
    *start = s;
    *dom = strtoul(s, &end, 10);
    if (end == s || *end != '-')
        return false;
    strtoul(end + 1, &end, 10); /* server id */
    if (*end != '-')
        return false;
    *seq = strtoull(end + 1, &end, 10);
    if (*end && *end != ',' && *end != ' ' && *end != '\n')
        return false;
    *len = (size_t)(end - s);
    *p = end;
    return true;
}

/* A MariaDB GTID list in one text form, in place: its items sorted by domain. The server gives
 * @@gtid_binlog_pos with several domains in an order of its own, and a position taken by a
 * snapshot keeps that order until the first streamed transaction; compare canonical texts.
 * Text that is not such a list (MySQL's uuid:interval sets) is left as it is. */
static inline void e2e_gtid_canon(char *g)
{
    struct { unsigned long dom; const char *s; size_t len; } it[64];
    size_t n = 0, total = strlen(g);
    unsigned long d;
    unsigned long long q;
    const char *p = g;
    while (n < 64 && e2e_gtid_item(&p, &d, &q, &it[n].s, &it[n].len))
        it[n++].dom = d;
    while (*p == ' ' || *p == ',' || *p == '\n')
        p++;
    if (*p || n < 2)
        return;
    for (size_t i = 1; i < n; i++) /* insertion sort by domain */
        for (size_t j = i; j > 0 && it[j - 1].dom > it[j].dom; j--) {
            __typeof__(it[0]) t = it[j];
            it[j] = it[j - 1];
            it[j - 1] = t;
        }
    char *out = malloc(total + 1);
    cr_assert_not_null(out);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            out[o++] = ',';
        memcpy(out + o, it[i].s, it[i].len);
        o += it[i].len;
    }
    out[o] = '\0';
    memcpy(g, out, o + 1);
    free(out);
}

/* The one value a query of one row and column gives (its text; \N for NULL) into out (cap
 * bytes); m NULL: over a connection of its own. */
static inline void e2e_query_cell(MYSQL *m, const char *sql, char *out, size_t cap)
{
    MYSQL *own = m ? NULL : e2e_mysql();
    tb_buf g;
    tb_buf_init(&g, 0);
    e2e_query_text(m ? m : own, sql, &g);
    if (own)
        mysql_close(own);
    snprintf(out, cap, "%.*s", (int)(g.len ? g.len - 1 : 0), tb_buf_cstr(&g));
    tb_buf_free(&g);
}

/* The server's @@global.gtid_binlog_pos into out (cap bytes), canonical (e2e_gtid_canon);
 * m NULL: over a connection of its own. */
static inline void e2e_server_gtid(MYSQL *m, char *out, size_t cap)
{
    e2e_query_cell(m, "SELECT @@global.gtid_binlog_pos", out, cap);
    e2e_gtid_canon(out);
}

/* The GTID of the last transaction of m's session (@@session.last_gtid) into out. */
static inline void e2e_last_gtid(MYSQL *m, char *out, size_t cap)
{
    e2e_query_cell(m, "SELECT @@session.last_gtid", out, cap);
}

/* Whether MariaDB GTID list got has reached want: every domain of want is in got with the same
 * or a higher sequence number (tests running at the same time add their own transactions). */
static inline bool e2e_gtid_reached(const char *got, const char *want)
{
    unsigned long d, gd;
    unsigned long long q, gq;
    const char *s;
    size_t len;
    for (const char *p = want; e2e_gtid_item(&p, &d, &q, &s, &len);) {
        bool found = false;
        for (const char *r = got; !found && e2e_gtid_item(&r, &gd, &gq, &s, &len);)
            found = gd == d && gq >= q;
        if (!found)
            return false;
    }
    return true;
}

/* The GTID set of the committed position in a status file, into out (cap
 * bytes), canonical (e2e_gtid_canon); false when there is none yet. */
static inline bool e2e_status_gtid(const char *path, char *out, size_t cap)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = false;
    if (e2e_slurp(path, &b) && b.len > 0) {
        /* the file is replaced by rename: a whole JSON text */
        json_t *v = jo_parse(b.data, b.len);
        const char *g = json_string_value(jo_get(v, JO_PATH("position", "gtid")));
        if (g && strlen(g) < cap) {
            memcpy(out, g, strlen(g) + 1);
            e2e_gtid_canon(out);
            ok = true;
        }
        json_decref(v);
    }
    tb_buf_free(&b);
    return ok;
}

/* Copy the text after `field` up to one of the stop characters into out. */
static inline void e2e_field(const char *msg, size_t len, const char *field, const char *stops, tb_buf *out)
{
    size_t fl = strlen(field);
    for (size_t i = 0; i + fl <= len; i++) {
        if (memcmp(msg + i, field, fl) == 0) {
            size_t j = i + fl;
            while (j < len && !strchr(stops, msg[j]))
                j++;
            tb_buf_append(out, msg + i + fl, j - i - fl);
            return;
        }
    }
    tb_buf_puts(out, "?");
}

typedef struct e2e_counts {
    uint64_t changes;    /* change events (op c/u/d) seen by a read_committed consumer */
    uint64_t duplicates; /* of them, seen before at the same source position */
    uint64_t snapshot;   /* snapshot reads (op r), not counted as changes */
} e2e_counts;

static inline int e2e_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Consume every partition of the topics (NULL-terminated) from the start to
 * their end with isolation.level=read_committed; count change events by
 * source position (transaction id, file, pos, row, op). */
static inline e2e_counts e2e_count_changes(const char *brokers, const char *const *topics)
{
    e2e_counts c = {0, 0, 0};
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "group.id", "e2e-count", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "consumer: %s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    for (size_t t = 0; topics[t]; t++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topics[t], NULL);
        const rd_kafka_metadata_t *md = NULL;
        cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR, "metadata %s", topics[t]);
        cr_assert_eq(md->topic_cnt, 1);
        cr_assert_eq(md->topics[0].err, RD_KAFKA_RESP_ERR_NO_ERROR, "topic %s: %s", topics[t],
                     rd_kafka_err2str(md->topics[0].err));
        for (int p = 0; p < md->topics[0].partition_cnt; p++)
            rd_kafka_topic_partition_list_add(parts, topics[t], md->topics[0].partitions[p].id)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
    }
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    int left = parts->cnt;
    size_t cap = 1 << 16, n = 0;
    char **keys = malloc(cap * sizeof(char *));
    cr_assert_not_null(keys);
    tb_buf k;
    tb_buf_init(&k, 0);
    long long deadline = tb_itest_now_ms() + 120000;
    while (left > 0) {
        cr_assert(tb_itest_now_ms() < deadline, "consumer did not reach the end of the topics in 120 s");
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            left--;
        } else if (m->err) {
            cr_assert_fail("consume: %s", rd_kafka_message_errstr(m));
        } else if (m->payload && m->len > 0) {
            const char *v = m->payload;
            tb_buf_reset(&k);
            e2e_field(v, m->len, "\"op\":\"", "\"", &k);
            if (strcmp(tb_buf_cstr(&k), "r") == 0) {
                c.snapshot++;
            } else {
                tb_buf_putc(&k, '|');
                e2e_field(v, m->len, "\"transaction\":{\"id\":\"", "\"", &k);
                tb_buf_putc(&k, '|');
                e2e_field(v, m->len, "\"file\":\"", "\"", &k);
                tb_buf_putc(&k, '|');
                e2e_field(v, m->len, "\"pos\":", ",}", &k);
                tb_buf_putc(&k, '|');
                e2e_field(v, m->len, "\"row\":", ",}", &k);
                if (n == cap) {
                    cap *= 2;
                    keys = realloc(keys, cap * sizeof(char *));
                    cr_assert_not_null(keys);
                }
                keys[n] = strdup(tb_buf_cstr(&k));
                cr_assert_not_null(keys[n]);
                n++;
            }
        }
        rd_kafka_message_destroy(m);
    }
    qsort(keys, n, sizeof(char *), e2e_cmp_str);
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i], keys[i - 1]) == 0)
            c.duplicates++;
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    c.changes = n;
    free(keys);
    tb_buf_free(&k);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return c;
}

/* A TCP port on 127.0.0.1 that was free a moment ago. */
static inline unsigned e2e_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* GET http://127.0.0.1:port<path> (HTTP/1.0): the status code (0 when the
 * connection fails), the body into body. */
static inline int e2e_http_get(unsigned port, const char *path, tb_buf *body)
{
    tb_buf_reset(body);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    tb_buf raw;
    tb_buf_init(&raw, 0);
    char chunk[8192];
    ssize_t got;
    while ((got = read(fd, chunk, sizeof chunk)) > 0)
        tb_buf_append(&raw, chunk, (size_t)got);
    close(fd);
    tb_buf_putc(&raw, '\0');
    int status = 0;
    const char *s = raw.data;
    const char *sep = s ? strstr(s, "\r\n\r\n") : NULL;
    if (s && sscanf(s, "HTTP/1.%*d %d", &status) == 1 && sep)
        tb_buf_puts(body, sep + 4);
    tb_buf_free(&raw);
    tb_buf_putc(body, '\0');
    body->len--;
    return status;
}

/* The value of the metric sample that starts with prefix (through the labels' "{...}"), -1 if absent. */
static inline long long e2e_metric_value(unsigned port, const char *sample)
{
    tb_buf body;
    tb_buf_init(&body, 0);
    cr_assert_eq(e2e_http_get(port, "/metrics", &body), 200);
    const char *hit = strstr(tb_buf_cstr(&body), sample);
    long long v = hit ? atoll(hit + strlen(sample)) : -1;
    tb_buf_free(&body);
    return v;
}

static inline long long e2e_table_metric(unsigned port, const char *family, const char *db, const char *table,
                                         const char *label, const char *value)
{
    char sample[600];
    if (label)
        snprintf(sample, sizeof sample, "%s{connector=\"%s\",table=\"%s.%s\",%s=\"%s\"} ", family, db, db, table,
                 label, value);
    else
        snprintf(sample, sizeof sample, "%s{connector=\"%s\",table=\"%s.%s\"} ", family, db, db, table);
    return e2e_metric_value(port, sample);
}

#endif
