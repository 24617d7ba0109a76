/*
 * sreg: the schema registry client (sreg.h).
 */
#include "sreg.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_buf.h"
#include "tb_dl.h"

struct sreg {
    CURL *curl;
    char *url;
    tb_buf body;  /* the last answer */
    tb_buf path;  /* the request's URL */
    long timeout_ms;
};

/* libcurl, loaded at the first registry client (tb_dl.h): a run without a
 * registry does not map it and its dozen dependencies (about 3 MiB resident,
 * 3 ms of start-up). The headers give the types and constants. */
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode cc);
    char *(*easy_escape)(CURL *c, const char *s, int len);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} lc;
static const tb_dl_sym curl_syms[] = {
    TB_DL_SYM("curl_global_init", lc.global_init),     TB_DL_SYM("curl_easy_init", lc.easy_init),
    TB_DL_SYM("curl_easy_cleanup", lc.easy_cleanup),   TB_DL_SYM("curl_easy_setopt", lc.easy_setopt),
    TB_DL_SYM("curl_easy_perform", lc.easy_perform),   TB_DL_SYM("curl_easy_getinfo", lc.easy_getinfo),
    TB_DL_SYM("curl_easy_strerror", lc.easy_strerror), TB_DL_SYM("curl_easy_escape", lc.easy_escape),
    TB_DL_SYM("curl_free", lc.free),                   TB_DL_SYM("curl_slist_append", lc.slist_append),
    TB_DL_SYM("curl_slist_free_all", lc.slist_free_all),
};
static tb_dl_lib curl_lib = TB_DL_LIB("libcurl.so.4", curl_syms, "the schema registry client", "libcurl4");
static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init;
static void curl_init_once(void) { g_curl_init = lc.global_init(CURL_GLOBAL_DEFAULT); }

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    tb_buf *b = ud;
    return tb_buf_append(b, p, size * n) == TB_OK ? size * n : 0;
}

void sreg_close(sreg *r)
{
    if (!r)
        return;
    if (r->curl)
        lc.easy_cleanup(r->curl);
    free(r->url);
    tb_buf_free(&r->body);
    tb_buf_free(&r->path);
    free(r);
}

tb_code sreg_open(const sreg_opts *o, sreg **out, tb_error *err)
{
    *out = NULL;
    if (!o->url || !*o->url)
        return tb_error_set(err, TB_ERR_CONFIG, false, "schema.registry.url is not set");
    tb_code lrc = tb_dl_need(&curl_lib, err);
    if (lrc != TB_OK)
        return lrc;
    pthread_once(&g_curl_once, curl_init_once);
    if (g_curl_init != CURLE_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: libcurl cannot initialise (%s)",
                            lc.easy_strerror(g_curl_init));
    sreg *r = calloc(1, sizeof(*r));
    if (!r)
        return tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: out of memory");
    tb_buf_init(&r->body, 16u << 20);
    tb_buf_init(&r->path, 0);
    r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    size_t n = strlen(o->url);
    while (n && o->url[n - 1] == '/')
        n--;
    r->url = strndup(o->url, n);
    r->curl = lc.easy_init();
    if (!r->url || !r->curl) {
        sreg_close(r);
        return tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: cannot create the HTTP client");
    }
    CURL *c = r->curl;
    lc.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    lc.easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    lc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
    lc.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    lc.easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    lc.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (o->user && *o->user) {
        lc.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        lc.easy_setopt(c, CURLOPT_USERNAME, o->user); /* libcurl copies option strings */
        lc.easy_setopt(c, CURLOPT_PASSWORD, o->password ? o->password : "");
    }
    if (o->ca_file && *o->ca_file)
        lc.easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
    *out = r;
    return TB_OK;
}

/* The registry's error message ({"error_code":N,"message":"…"}), or the body. */
static const char *answer_message(sreg *r, json_t **hold)
{
    *hold = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, NULL);
    const char *m = json_string_value(json_object_get(*hold, "message"));
    return m ? m : tb_buf_cstr(&r->body);
}

/* One request: method GET (body NULL) or POST/PUT with a JSON body. *status
 * is the HTTP status; TB_ERR_IO retriable when there was no answer. */
static tb_code request(sreg *r, const char *method, const char *body, long *status, tb_error *err)
{
    CURL *c = r->curl;
    struct curl_slist *h = NULL;
    tb_buf_reset(&r->body);
    lc.easy_setopt(c, CURLOPT_URL, tb_buf_cstr(&r->path));
    h = lc.slist_append(h, "Accept: application/vnd.schemaregistry.v1+json, application/json");
    if (body) {
        h = lc.slist_append(h, "Content-Type: application/vnd.schemaregistry.v1+json");
        lc.easy_setopt(c, CURLOPT_POSTFIELDS, body);
        lc.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    } else {
        lc.easy_setopt(c, CURLOPT_HTTPGET, 1L);
        lc.easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
    }
    lc.easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode cc = lc.easy_perform(c);
    lc.easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    lc.slist_free_all(h);
    if (cc != CURLE_OK)
        return tb_error_set(err, TB_ERR_IO, true, "schema registry %s: %s", r->url, lc.easy_strerror(cc));
    lc.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (*status >= 500 || *status == 429) {
        json_t *j;
        const char *m = answer_message(r, &j);
        tb_code rc = tb_error_set(err, TB_ERR_IO, true, "schema registry %s answered HTTP %ld: %.300s", r->url,
                                  *status, m);
        json_decref(j);
        return rc;
    }
    return TB_OK;
}

static tb_code set_path(sreg *r, const char *a, const char *subject, const char *b)
{
    tb_buf_reset(&r->path);
    tb_code rc = tb_buf_printf(&r->path, "%s%s", r->url, a);
    if (rc == TB_OK && subject) {
        char *esc = lc.easy_escape(r->curl, subject, 0);
        if (!esc)
            return TB_ERR_NOMEM;
        rc = tb_buf_puts(&r->path, esc);
        lc.free(esc);
    }
    if (rc == TB_OK && b)
        rc = tb_buf_puts(&r->path, b);
    return rc;
}

tb_code sreg_compatibility(sreg *r, const char *subject, char **level, tb_error *err)
{
    *level = NULL;
    for (int pass = 0; pass < 2; pass++) {
        long status = 0;
        tb_code rc = pass == 0 ? set_path(r, "/config/", subject, NULL) : set_path(r, "/config", NULL, NULL);
        if (rc != TB_OK)
            return tb_error_set(err, rc, false, "schema registry: out of memory");
        if ((rc = request(r, "GET", NULL, &status, err)) != TB_OK)
            return rc;
        if (status == 200) {
            json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, NULL);
            const char *l = json_string_value(json_object_get(j, "compatibilityLevel"));
            if (!l)
                l = json_string_value(json_object_get(j, "compatibility"));
            *level = strdup(l ? l : "unknown");
            json_decref(j);
            return *level ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: out of memory");
        }
    }
    *level = strdup("unknown");
    return *level ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: out of memory");
}

tb_code sreg_register(sreg *r, const char *subject, const char *schema, uint32_t *id, tb_error *err)
{
    tb_code rc;
    long status = 0;
    json_t *req = json_pack("{s:s}", "schema", schema);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body || set_path(r, "/subjects/", subject, "/versions") != TB_OK) {
        free(body);
        return tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: out of memory");
    }
    rc = request(r, "POST", body, &status, err);
    free(body);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "registering subject %s: ", subject);
    json_t *j;
    const char *msg = answer_message(r, &j);
    if (status == 200) {
        json_int_t v = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
        if (v <= 0 || v > (json_int_t)UINT32_MAX)
            return tb_error_set(err, TB_ERR_IO, true, "schema registry %s: no schema id in its answer for subject %s",
                                r->url, subject);
        *id = (uint32_t)v;
        return TB_OK;
    }
    char *m = strdup(msg);
    json_decref(j);
    if (status == 409) {
        char *level = NULL;
        tb_error lerr;
        if (sreg_compatibility(r, subject, &level, &lerr) != TB_OK)
            level = NULL;
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "schema registry refused a new schema for subject %s: incompatible under compatibility "
                          "level %s (HTTP 409: %.400s)",
                          subject, level ? level : "unknown", m ? m : "");
        free(level);
    } else
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "schema registry %s refused subject %s: HTTP %ld: %.400s",
                          r->url, subject, status, m ? m : "");
    free(m);
    return rc;
}

tb_code sreg_schema_by_id(sreg *r, uint32_t id, char **schema, tb_error *err)
{
    *schema = NULL;
    long status = 0;
    char p[48];
    snprintf(p, sizeof p, "/schemas/ids/%u", id);
    if (set_path(r, p, NULL, NULL) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "schema registry: out of memory");
    tb_code rc = request(r, "GET", NULL, &status, err);
    if (rc != TB_OK)
        return tb_error_prefix(err, rc, "schema id %u: ", id);
    json_t *j;
    const char *msg = answer_message(r, &j);
    if (status != 200) {
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "schema registry %s: schema id %u: HTTP %ld: %.300s", r->url,
                          id, status, msg);
        json_decref(j);
        return rc;
    }
    const char *s = json_string_value(json_object_get(j, "schema"));
    *schema = s ? strdup(s) : NULL;
    json_decref(j);
    if (!*schema)
        return tb_error_set(err, TB_ERR_IO, true, "schema registry %s: no schema in its answer for id %u", r->url, id);
    return TB_OK;
}
