/*
 * app_metrics_http: the HTTP endpoint of app_metrics.h on libmicrohttpd (one
 * internal polling thread; GET /metrics and GET /health).
 *
 * Slow and many connections. A connection that stays idle APP_HTTP_IDLE_S is
 * closed (libmicrohttpd's connection timeout). At most APP_HTTP_MAX
 * connections are open; once APP_HTTP_MAX - APP_HTTP_ROOM are, each new one
 * closes the oldest open one first, preferring one whose request is still
 * incomplete (a slowloris trickling its headers), so a probe always finds a
 * place and is answered at once, whatever holds the others. Every callback
 * here runs on libmicrohttpd's one thread: the connection table needs no lock.
 *
 * libmicrohttpd's messages go to tb_log (WARN, facility "http"), at most
 * APP_HTTP_LOG_BURST in APP_HTTP_LOG_WINDOW_S seconds; the rest are counted
 * and their number logged when the window ends.
 *
 * metrics.token: every request must carry "Authorization: Bearer <token>"
 * (compared in constant time), else 401. Bound to an address other than
 * loopback without a token: a WARN at start.
 *
 * libmicrohttpd is loaded when an endpoint starts (tb_dl.h): a run without
 * metrics.listen does not map it and its TLS library (about 1.5 MiB resident).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "app_metrics_int.h"
#include "tb_dl.h"
#include "tb_log.h"

/* libmicrohttpd's functions, resolved by mhd_load. */
static struct {
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
                                                           enum MHD_ConnectionInfoType k, ...);
    const char *(*lookup_connection_value)(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key);
    struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header, const char *content);
    enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r);
    void (*destroy_response)(struct MHD_Response *r);
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                       MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *d);
    const char *(*get_version)(void);
} mhd;
static const tb_dl_sym mhd_syms[] = {
    TB_DL_SYM("MHD_get_connection_info", mhd.get_connection_info),
    TB_DL_SYM("MHD_lookup_connection_value", mhd.lookup_connection_value),
    TB_DL_SYM("MHD_create_response_from_buffer", mhd.create_response_from_buffer),
    TB_DL_SYM("MHD_add_response_header", mhd.add_response_header),
    TB_DL_SYM("MHD_queue_response", mhd.queue_response),
    TB_DL_SYM("MHD_destroy_response", mhd.destroy_response),
    TB_DL_SYM("MHD_start_daemon", mhd.start_daemon),
    TB_DL_SYM("MHD_stop_daemon", mhd.stop_daemon),
    TB_DL_SYM("MHD_get_version", mhd.get_version),
};
static tb_dl_lib mhd_lib = TB_DL_LIB("libmicrohttpd.so.12", mhd_syms, "metrics.listen (the HTTP endpoint)",
                                     "libmicrohttpd12");

static tb_code mhd_load(tb_error *err) { return tb_dl_need(&mhd_lib, err); }

const char *app_metrics_http_version(void)
{
    return mhd_load(NULL) == TB_OK ? mhd.get_version() : "(cannot be loaded)";
}

#define APP_HTTP_MAX 64         /* open connections at most */
#define APP_HTTP_ROOM 8         /* kept free for new connections (probes) */
#define APP_HTTP_IDLE_S 5       /* an idle connection is closed after this */
#define APP_HTTP_LOG_BURST 5    /* libmicrohttpd's lines per window */
#define APP_HTTP_LOG_WINDOW_S 10

typedef struct app_http_conn {
    struct MHD_Connection *conn; /* NULL: a free slot */
    int fd;
    uint64_t seq;                /* order of arrival */
    bool headers_done;           /* a request's headers arrived */
} app_http_conn;

struct app_http {
    app_http_conn conns[APP_HTTP_MAX + 4];
    size_t nconns;
    uint64_t seq;
    uint64_t evicted;
    char *token;                 /* NULL: none */
    pthread_mutex_t log_mu;      /* the logger may run on any thread */
    int64_t log_window_ms;
    unsigned log_n;
    uint64_t log_dropped;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libmicrohttpd's own messages (its formats) */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct app_http *h = cls;
    int64_t now = mono_ms();
    uint64_t dropped = 0;
    bool print;
    pthread_mutex_lock(&h->log_mu);
    if (now - h->log_window_ms >= APP_HTTP_LOG_WINDOW_S * 1000) {
        dropped = h->log_dropped;
        h->log_dropped = 0;
        h->log_window_ms = now;
        h->log_n = 0;
    }
    print = h->log_n < APP_HTTP_LOG_BURST;
    if (print)
        h->log_n++;
    else
        h->log_dropped++;
    pthread_mutex_unlock(&h->log_mu);
    if (dropped)
        TB_WARN("http", "%llu more messages of the HTTP server in the last %d s were not logged",
                (unsigned long long)dropped, APP_HTTP_LOG_WINDOW_S);
    if (!print)
        return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = 0;
    TB_WARN("http", "%s", line);
}

/* Whether the peer of fd has gone (its end read, or the socket failed): nothing it sent is
 * waiting to be answered. */
static bool peer_gone(int fd)
{
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Close a connection whose peer has gone if there is one (a flood of connections opened and
 * closed at once, not yet read by the server, must not push out a probe that came before them);
 * else the oldest, preferring one whose request is incomplete (slow senders). */
static void evict_one(struct app_http *h)
{
    app_http_conn *best = NULL;
    for (size_t i = 0; i < sizeof(h->conns) / sizeof(h->conns[0]); i++) {
        app_http_conn *c = &h->conns[i];
        if (!c->conn || c->fd < 0)
            continue;
        if (!c->headers_done && peer_gone(c->fd)) { /* a request read whole is answered */
            best = c;
            break;
        }
        if (!best || (best->headers_done && !c->headers_done) ||
            (best->headers_done == c->headers_done && c->seq < best->seq))
            best = c;
    }
    if (!best)
        return;
    shutdown(best->fd, SHUT_RDWR); /* libmicrohttpd sees the end and closes it */
    best->fd = -1;                 /* not chosen twice */
    h->evicted++;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct app_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        app_http_conn *c = *socket_context;
        if (c) {
            c->conn = NULL;
            h->nconns--;
        }
        *socket_context = NULL;
        return;
    }
    if (h->nconns >= APP_HTTP_MAX - APP_HTTP_ROOM)
        evict_one(h);
    const union MHD_ConnectionInfo *ci = mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    for (size_t i = 0; i < sizeof(h->conns) / sizeof(h->conns[0]); i++) {
        app_http_conn *c = &h->conns[i];
        if (c->conn)
            continue;
        c->conn = conn;
        c->fd = ci ? ci->connect_fd : -1;
        c->seq = ++h->seq;
        c->headers_done = false;
        h->nconns++;
        *socket_context = c;
        return;
    }
    *socket_context = NULL; /* cannot happen: libmicrohttpd's own limit is below the table's size */
}

/* Whether the request carries the token (constant time in the token's length). */
static bool authorized(const struct app_http *h, struct MHD_Connection *conn)
{
    if (!h->token)
        return true;
    const char *a = mhd.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncmp(a, "Bearer ", 7) != 0)
        return false;
    a += 7;
    size_t n = strlen(h->token), an = strlen(a);
    unsigned char diff = an != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(h->token[i] ^ (i < an ? a[i] : 0));
    return diff == 0;
}

tb_code app_metrics_parse_listen(const char *s, char *host, size_t host_cap, unsigned *port, tb_error *err)
{
    const char *colon;
    const char *h = s;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            goto bad;
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            goto bad;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= host_cap)
        goto bad;
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || *end || colon[1] == '\0' || p < 0 || p > 65535)
        goto bad;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (unsigned)p;
    return TB_OK;
bad:
    return tb_error_set(err, TB_ERR_CONFIG, false,
                        "metrics.listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:9464, or [::1]:9464)", s);
}

bool app_metrics_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) ||
               (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return strcmp(host, "localhost") == 0;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type, tb_buf *body)
{
    struct MHD_Response *r = mhd.create_response_from_buffer(body->len, body->data ? body->data : (void *)"",
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ok = mhd.queue_response(conn, status, r);
    mhd.destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **req)
{
    (void)version;
    (void)upload_data;
    app_metrics *m = cls;
    if (!*req) { /* first call: headers only */
        *req = (void *)1;
        const union MHD_ConnectionInfo *ci = mhd.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        app_http_conn *c = ci ? ci->socket_context : NULL;
        if (c)
            c->headers_done = true;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is not read */
        return MHD_YES;
    }
    tb_buf b;
    tb_buf_init(&b, 0);
    enum MHD_Result rc;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!authorized(m->http, conn)) {
        tb_buf_puts(&b, "unauthorized: send Authorization: Bearer <metrics.token>\n");
        struct MHD_Response *r = mhd.create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_COPY);
        rc = MHD_NO;
        if (r) {
            mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
            mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
            rc = mhd.queue_response(conn, MHD_HTTP_UNAUTHORIZED, r);
            mhd.destroy_response(r);
        }
    } else if (strcmp(url, "/metrics") == 0 && get) {
        if (app_metrics_render(m, &b) == TB_OK) {
            rc = respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
            *req = (void *)2; /* counted in on_completed once the body is sent */
        } else { /* out of memory: a cut exposition would read as series gone */
            tb_buf_reset(&b);
            tb_buf_puts(&b, "out of memory rendering the metrics\n");
            rc = respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", &b);
        }
    } else if (strcmp(url, "/health") == 0 && get) {
        int status = app_metrics_health(m, tb_wall_ms(), &b);
        rc = respond(conn, (unsigned)status, "application/json", &b);
    } else if (strcmp(url, "/metrics") == 0 || strcmp(url, "/health") == 0) {
        tb_buf_puts(&b, "only GET\n");
        rc = respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", &b);
    } else {
        tb_buf_puts(&b, "not found: try /metrics or /health\n");
        rc = respond(conn, MHD_HTTP_NOT_FOUND, "text/plain", &b);
    }
    tb_buf_free(&b);
    return rc;
}

/* A request ended: a /metrics body sent whole counts as a scrape (app_metrics_scrapes). */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req, enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    app_metrics *m = cls;
    if (req && *req == (void *)2 && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        atomic_fetch_add(&m->scrapes, 1);
}

tb_code app_metrics_start(const cfg *c, app_metrics_role role, app_metrics **out, tb_error *err)
{
    *out = NULL;
    const char *listen = cfg_get_str(c, CFGK_METRICS_LISTEN);
    if (!listen || !*listen)
        return TB_OK;
    char host[256];
    unsigned port;
    tb_code rc = app_metrics_parse_listen(listen, host, sizeof host, &port, err);
    if (rc == TB_OK)
        rc = mhd_load(err);
    if (rc != TB_OK)
        return rc;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        flags |= MHD_USE_IPv6;
    } else {
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "metrics.listen: host '%s' is not a numeric IP address (use 127.0.0.1, 0.0.0.0, ::1 "
                            "or localhost)",
                            host);
    }
    bool loopback = app_metrics_is_loopback(host);
    struct app_http *h = calloc(1, sizeof(*h));
    if (!h)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    pthread_mutex_init(&h->log_mu, NULL);
    h->log_window_ms = mono_ms();
    if ((rc = cfg_get_secret(c, CFGK_METRICS_TOKEN, &h->token, err)) != TB_OK) {
        pthread_mutex_destroy(&h->log_mu);
        free(h);
        return rc;
    }
    if (h->token && !*h->token) { /* metrics.token= set to nothing: not "no token" without a word */
        free(h->token);
        pthread_mutex_destroy(&h->log_mu);
        free(h);
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "metrics.token is set but empty: set the token (or metrics.token.file), or remove the "
                            "key to serve /metrics and /health without one");
    }
    /* said before the bind, whether or not it succeeds: the setting is the mistake */
    if (!loopback && !h->token)
        TB_WARN("metrics",
                "metrics.listen=%s is reachable from other hosts and no metrics.token is set: anyone who can reach "
                "it reads the metrics and health; set metrics.token.file (clients send Authorization: Bearer), or "
                "bind 127.0.0.1",
                listen);
    app_metrics *m = app_metrics_new(cfg_get_str(c, CFGK_NAME), role);
    if (!m) {
        free(h->token);
        pthread_mutex_destroy(&h->log_mu);
        free(h);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    m->http = h;
    m->httpd = mhd.start_daemon(flags | MHD_USE_AUTO, (uint16_t)port, NULL, NULL, on_request, m,
                                MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_SOCK_ADDR, &ss,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)APP_HTTP_IDLE_S, MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned)APP_HTTP_MAX, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_NOTIFY_COMPLETED,
                                on_completed, m, MHD_OPTION_END);
    if (!m->httpd) {
        app_metrics_stop(m);
        return tb_error_set(err, TB_ERR_IO, false,
                            "metrics.listen=%s: cannot listen there (address in use, or not an address of this "
                            "host?)",
                            listen);
    }
    TB_INFO("metrics", "serving /metrics and /health on http://%s%s%s:%u%s", strchr(host, ':') ? "[" : "", host,
            strchr(host, ':') ? "]" : "", port, h->token ? " (bearer token required)" : "");
    *out = m;
    return TB_OK;
}

void app_metrics_stop(app_metrics *m)
{
    if (!m)
        return;
    if (m->httpd)
        mhd.stop_daemon(m->httpd);
    if (m->http) {
        free(m->http->token);
        pthread_mutex_destroy(&m->http->log_mu);
        free(m->http);
    }
    app_metrics_free(m);
}
