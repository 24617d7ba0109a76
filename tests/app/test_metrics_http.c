/*
 * test_metrics_http: the HTTP endpoint (app/app_metrics_http.c) on 127.0.0.1
 * under slow and many connections: a slowloris (200 connections trickling
 * their headers) and a connection flood (connections opened and closed as fast
 * as one thread can, bounded in count and time), during which /health is
 * probed every 100-200 ms and must answer within 1 s each time;
 * libmicrohttpd's messages reach the leveled logger, rate-limited; a bearer
 * token when metrics.token is set; which hosts count as loopback.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "app_metrics_int.h"
#include "tb_log.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static app_metrics *start(const char *token, unsigned *port)
{
    cfg *c = cfg_new();
    tb_error err;
    app_metrics *m = NULL;
    cr_assert_eq(cfg_set(c, "metrics.listen", "127.0.0.1:0", "t", &err), TB_OK);
    if (token)
        cr_assert_eq(cfg_set(c, "metrics.token", token, "t", &err), TB_OK);
    cr_assert_eq(app_metrics_start(c, APP_METRICS_CACHE, &m, &err), TB_OK, "%s", err.msg);
    cfg_free(c);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert_not_null(di);
    *port = di->port;
    return m;
}

static int dial(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* GET url with an optional Authorization header: the status code, or -1 when no response came within
 * 1 s of the connect (*took: seconds). */
static int probe(unsigned port, const char *url, const char *auth, double *took)
{
    double t0 = now_s();
    int fd = dial(port), code = -1;
    if (fd >= 0) {
        char req[256], buf[512];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n", url,
                         auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");
        if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
            size_t got = 0;
            while (got < 12 && now_s() - t0 < 1.0) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, 50) <= 0)
                    continue;
                ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            buf[got] = 0;
            if (got >= 12 && strncmp(buf, "HTTP/1.1 ", 9) == 0)
                code = atoi(buf + 9);
        }
        close(fd);
    }
    *took = now_s() - t0;
    return *took < 1.0 ? code : -1;
}

static _Atomic int log_lines, http_lines;

static void count_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)level;
    (void)opaque;
    atomic_fetch_add(&log_lines, 1);
    if (strstr(line, " http: "))
        atomic_fetch_add(&http_lines, 1);
}

Test(metrics_http, slowloris_leaves_health_answering, .timeout = 120)
{
    unsigned port;
    app_metrics *m = start(NULL, &port);
    enum { SLOW = 200 };
    int fds[SLOW];
    int open_n = 0;
    for (int i = 0; i < SLOW; i++) {
        fds[i] = dial(port);
        if (fds[i] >= 0) {
            open_n++;
            send(fds[i], "GET /health HTTP/1.1\r\nHost: x\r\n", 31, MSG_NOSIGNAL);
        }
    }
    cr_assert_gt(open_n, 100);
    double worst = 0, t_end = now_s() + 4.0;
    int probes = 0;
    while (now_s() < t_end) {
        for (int i = 0; i < SLOW; i++) /* one more header line each: never a whole request */
            if (fds[i] >= 0 && send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
                close(fds[i]);
                fds[i] = dial(port); /* the attacker comes back */
                if (fds[i] >= 0)
                    send(fds[i], "GET /health HTTP/1.1\r\nHost: x\r\n", 31, MSG_NOSIGNAL);
            }
        double took;
        int code = probe(port, "/health", NULL, &took);
        cr_expect(code == 200 || code == 503, "probe %d: no answer within 1 s (%.3f s, code %d)", probes, took, code);
        if (took > worst)
            worst = took;
        probes++;
        usleep(200000);
    }
    cr_expect_geq(probes, 5);
    cr_log_info("slowloris: %d probes, slowest %.3f s", probes, worst);
    for (int i = 0; i < SLOW; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    app_metrics_stop(m);
}

typedef struct flood {
    unsigned port;
    _Atomic bool stop;
    int n;
} flood;

static void *flood_run(void *arg)
{
    flood *f = arg;
    double t_end = now_s() + 4.0;
    while (!f->stop && f->n < 3000 && now_s() < t_end) {
        int fd = dial(f->port);
        if (fd >= 0) {
            if (f->n % 2)
                send(fd, "GET /nope HTTP/1.1\r\n", 20, MSG_NOSIGNAL | MSG_DONTWAIT);
            close(fd);
        }
        f->n++;
    }
    return NULL;
}

Test(metrics_http, connection_flood_leaves_health_answering, .timeout = 120)
{
    unsigned port;
    atomic_store(&log_lines, 0);
    atomic_store(&http_lines, 0);
    tb_log_set_sink(count_sink, NULL);
    app_metrics *m = start(NULL, &port);
    flood f = {.port = port};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, flood_run, &f), 0);
    double t_end = now_s() + 3.5, worst = 0;
    int probes = 0;
    while (now_s() < t_end) {
        double took;
        int code = probe(port, "/health", NULL, &took);
        cr_expect(code == 200 || code == 503, "probe %d: no answer within 1 s (%.3f s, code %d)", probes, took, code);
        if (took > worst)
            worst = took;
        probes++;
        usleep(100000);
    }
    f.stop = true;
    pthread_join(th, NULL);
    app_metrics_stop(m);
    tb_log_set_sink(NULL, NULL);
    cr_expect_geq(probes, 5);
    /* libmicrohttpd's lines: through the logger, at most 5 per 10 s window and a count of the rest */
    cr_expect_leq(atomic_load(&http_lines), 5 + 2, "%d lines of the HTTP server logged", atomic_load(&http_lines));
    cr_log_info("flood: %d connections, %d probes, slowest %.3f s, %d log lines", f.n, probes, worst,
                atomic_load(&log_lines));
}

Test(metrics_http, bearer_token)
{
    unsigned port;
    double took;
    app_metrics *m = start("s3cret-token", &port);
    cr_expect_eq(probe(port, "/health", NULL, &took), 401);
    cr_expect_eq(probe(port, "/metrics", NULL, &took), 401);
    cr_expect_eq(probe(port, "/health", "Bearer wrong", &took), 401);
    cr_expect_eq(probe(port, "/health", "Bearer s3cret-token-longer", &took), 401);
    cr_expect_eq(probe(port, "/health", "Basic czNjcmV0LXRva2Vu", &took), 401);
    int code = probe(port, "/health", "Bearer s3cret-token", &took);
    cr_expect(code == 200 || code == 503, "%d", code);
    cr_expect_eq(probe(port, "/metrics", "Bearer s3cret-token", &took), 200);
    app_metrics_stop(m);
    m = start(NULL, &port);
    cr_expect_eq(probe(port, "/metrics", NULL, &took), 200, "no token: open");
    app_metrics_stop(m);
}

/* metrics.token set to nothing is refused (it would serve without one, unsaid) */
Test(metrics_http, empty_token_refused)
{
    cfg *c = cfg_new();
    tb_error err;
    app_metrics *m = NULL;
    cr_assert_eq(cfg_set(c, "metrics.listen", "127.0.0.1:0", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "metrics.token", "", "t", &err), TB_OK);
    cr_assert_eq(app_metrics_start(c, APP_METRICS_RUN, &m, &err), TB_ERR_CONFIG);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "metrics.token is set but empty") != NULL, "%s", err.msg);
    cfg_free(c);
}

Test(metrics_http, loopback_hosts)
{
    const char *yes[] = {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"};
    const char *no[] = {"0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "::ffff:10.0.0.1", "fe80::1"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_expect(app_metrics_is_loopback(yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_expect_not(app_metrics_is_loopback(no[i]), "%s", no[i]);
}

/* A WARN line of the metrics facility holding "reachable from other hosts". */
static _Atomic int public_warns;
static void public_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)opaque;
    if (level == TB_LOG_WARN && strstr(line, "reachable from other hosts and no metrics.token is set"))
        atomic_fetch_add(&public_warns, 1);
}

/* metrics.listen beyond loopback without a token WARNs (with one, or on loopback, it does not).
 * The addresses are TEST-NET-1 (RFC 5737), on no host: the bind fails and nothing is served or
 * sent beyond loopback; the WARN is about the setting and comes first. */
Test(metrics_http, public_bind_warns_without_token)
{
    struct {
        const char *listen, *token;
        int warns;
    } cases[] = {{"192.0.2.1:0", NULL, 1}, {"[2001:db8::1]:0", NULL, 1}, {"192.0.2.1:0", "t0ken", 0},
                 {"127.0.0.1:0", NULL, 0}};
    tb_log_set_sink(public_sink, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cfg *c = cfg_new();
        tb_error err;
        app_metrics *m = NULL;
        atomic_store(&public_warns, 0);
        cr_assert_eq(cfg_set(c, "metrics.listen", cases[i].listen, "t", &err), TB_OK);
        if (cases[i].token)
            cr_assert_eq(cfg_set(c, "metrics.token", cases[i].token, "t", &err), TB_OK);
        tb_code rc = app_metrics_start(c, APP_METRICS_RUN, &m, &err);
        if (strncmp(cases[i].listen, "127.", 4) == 0)
            cr_expect_eq(rc, TB_OK, "%s", err.msg);
        else
            cr_expect_eq(rc, TB_ERR_IO, "%s: not an address of this host", cases[i].listen);
        cr_expect_eq(atomic_load(&public_warns), cases[i].warns, "metrics.listen=%s, token %s", cases[i].listen,
                     cases[i].token ? "set" : "unset");
        app_metrics_stop(m);
        cfg_free(c);
    }
    tb_log_set_sink(NULL, NULL);
}
