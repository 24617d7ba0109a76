/*
 * app_metrics_http: the HTTP endpoint of app_metrics.h on libmicrohttpd (one
 * internal polling thread; GET /metrics and GET /health).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "app_metrics_int.h"
#include "tb_log.h"

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

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type, tb_buf *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(body->len, body->data ? body->data : (void *)"",
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
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
    if (strcmp(url, "/metrics") == 0 && get) {
        app_metrics_render(m, &b);
        rc = respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
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

tb_code app_metrics_start(const cfg *c, app_metrics_role role, app_metrics **out, tb_error *err)
{
    *out = NULL;
    const char *listen = cfg_get_str(c, "metrics.listen");
    if (!listen || !*listen)
        return TB_OK;
    char host[256];
    unsigned port;
    tb_code rc = app_metrics_parse_listen(listen, host, sizeof host, &port, err);
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
    app_metrics *m = app_metrics_new(cfg_get_str(c, "name"), role);
    if (!m)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    m->httpd = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, &ss,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned)32, MHD_OPTION_END);
    if (!m->httpd) {
        app_metrics_free(m);
        return tb_error_set(err, TB_ERR_IO, false,
                            "metrics.listen=%s: cannot listen there (address in use, or not an address of this "
                            "host?)",
                            listen);
    }
    TB_INFO("metrics", "serving /metrics and /health on http://%s%s%s:%u", strchr(host, ':') ? "[" : "", host,
            strchr(host, ':') ? "]" : "", port);
    *out = m;
    return TB_OK;
}

void app_metrics_stop(app_metrics *m)
{
    if (!m)
        return;
    if (m->httpd)
        MHD_stop_daemon(m->httpd);
    app_metrics_free(m);
}
