/*
 * av_ser: the Confluent wire format with registered schemas (av_ser.h).
 */
#include "av_ser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <avro.h>

#include "av_conv.h"
#include "av_dec.h"
#include "av_lib.h"
#include "evt_json.h"
#include "sreg.h"
#include "tb_clock.h"
#include "tb_hmap.h"
#include "tb_log.h"

typedef struct av_entry {
    uint32_t id;
    evt_jv *cs; /* the Connect schema */
} av_entry;

struct av_ser {
    sreg *reg;
    tb_hmap cache;   /* subject "\0" Connect schema text -> av_entry */
    tb_hmap readers; /* schema id (4 bytes, host order) -> av_reader */
    tb_buf key, avsc;
    long retry_timeout_ms;
    volatile sig_atomic_t *stop;
    bool down;
    int64_t down_since_ms; /* wall ms of the first failed attempt of the current wait; 0 = answers */
    char down_why[sizeof(((tb_error *)0)->msg)]; /* "<url>: <error>" of the latest failed attempt */
    void (*wait)(void *opaque);
    void *wait_opaque;
    uint64_t registered;
    char *url; /* schema.registry.url, for down_why */
#ifdef TB_TEST_HOOKS
    char *stop_after; /* TB_TEST_AVRO_STOP_AFTER_REGISTER (av_ser.h): SIGSTOP after registering it */
#endif
};

static void entry_free(void *p)
{
    av_entry *e = p;
    if (!e)
        return;
    evt_jv_free(e->cs);
    free(e);
}

static void reader_free(void *p) { av_reader_free(p); }

void av_ser_close(av_ser *s)
{
    if (!s)
        return;
    sreg_close(s->reg);
    tb_hmap_free(&s->cache, entry_free);
    tb_hmap_free(&s->readers, reader_free);
    tb_buf_free(&s->key);
    tb_buf_free(&s->avsc);
    free(s->url);
#ifdef TB_TEST_HOOKS
    free(s->stop_after);
#endif
    free(s);
}

tb_code av_ser_open(const cfg *c, av_ser **out, tb_error *err)
{
    *out = NULL;
    tb_code rc = av_lib_load(err);
    if (rc != TB_OK)
        return rc;
    char *password = NULL;
    rc = cfg_get_secret(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_PASSWORD, &password, err);
    if (rc != TB_OK)
        return rc;
    av_ser *s = calloc(1, sizeof(*s));
    if (!s) {
        free(password);
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
    }
    tb_hmap_init(&s->cache);
    tb_hmap_init(&s->readers);
    tb_buf_init(&s->key, 0);
    tb_buf_init(&s->avsc, 0);
    s->retry_timeout_ms = cfg_get_int(c, CFGK_SCHEMA_REGISTRY_RETRY_TIMEOUT_MS);
    sreg_opts o = {
        .url = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_URL),
        .user = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_USER),
        .password = password,
        .ca_file = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_SSL_CA_LOCATION),
        .timeout_ms = cfg_get_int(c, CFGK_SCHEMA_REGISTRY_REQUEST_TIMEOUT_MS),
    };
    s->url = strdup(o.url ? o.url : "");
    for (size_t n = s->url ? strlen(s->url) : 0; n && s->url[n - 1] == '/'; n--)
        s->url[n - 1] = 0; /* as sreg names it */
    rc = s->url ? sreg_open(&o, &s->reg, err) : tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
    if (password) {
        memset(password, 0, strlen(password));
        free(password);
    }
    if (rc != TB_OK) {
        av_ser_close(s);
        return rc;
    }
#ifdef TB_TEST_HOOKS
    const char *hook = getenv("TB_TEST_AVRO_STOP_AFTER_REGISTER");
    if (hook && *hook && !(s->stop_after = strdup(hook))) {
        av_ser_close(s);
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
    }
#endif
    *out = s;
    return TB_OK;
}

void av_ser_set_stop(av_ser *s, volatile sig_atomic_t *stop) { s->stop = stop; }
void av_ser_set_wait(av_ser *s, void (*fn)(void *opaque), void *opaque)
{
    s->wait = fn;
    s->wait_opaque = opaque;
}
bool av_ser_registry_down(const av_ser *s, int64_t *since_ms, const char **why)
{
    if (!s || !s->down)
        return false;
    if (since_ms)
        *since_ms = s->down_since_ms;
    if (why)
        *why = s->down_why;
    return true;
}
uint64_t av_ser_registered(const av_ser *s) { return s ? s->registered : 0; }

/* The end of the JSON value that starts at p (a string-aware brace count over
 * the codec's own canonical output), or NULL. */
static const char *value_end(const char *p, const char *end)
{
    int depth = 0;
    bool str = false;
    for (; p < end; p++) {
        char ch = *p;
        if (str) {
            if (ch == '\\')
                p++;
            else if (ch == '"')
                str = false;
            continue;
        }
        if (ch == '"')
            str = true;
        else if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']') {
            if (--depth == 0)
                return p + 1;
            if (depth < 0)
                return NULL;
        } else if (depth == 0 && (ch == ',' || ch == '}'))
            return p;
    }
    return depth == 0 ? p : NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* s->down_why: "<url>: <error>" from the client's message ("… schema registry <url>: <error>" or
 * "… schema registry <url> answered HTTP <n>: …", sreg.h). */
static void down_reason(av_ser *s, const char *msg)
{
    char pre[sizeof s->down_why];
    snprintf(pre, sizeof pre, "schema registry %s", s->url);
    const char *at = strstr(msg, pre);
    if (!at) {
        snprintf(s->down_why, sizeof s->down_why, "%s: %s", s->url, msg);
        return;
    }
    const char *rest = at + strlen(pre);
    if (rest[0] == ':')
        rest++;
    while (*rest == ' ')
        rest++;
    snprintf(s->down_why, sizeof s->down_why, "%s: %s", s->url, rest);
}

/* One registry call of the retry loop. */
typedef tb_code (*reg_call)(av_ser *s, void *ctx, tb_error *err);

/* Run call, retrying while the registry cannot answer (av_ser.h). */
static tb_code with_retries(av_ser *s, const char *what, const char *doing, reg_call call, void *ctx, tb_error *err)
{
    int64_t t0 = tb_mono_ms(), last_warn = 0;
    long wait = 100;
    for (int attempt = 1;; attempt++) {
        tb_code rc = call(s, ctx, err);
        if (rc == TB_OK) {
            if (s->down)
                TB_INFO("avro", "schema registry answers again: %s (attempt %d)", doing, attempt);
            s->down = false;
            s->down_since_ms = 0;
            return TB_OK;
        }
        if (!err || !err->retriable) {
            s->down = false;
            s->down_since_ms = 0;
            return tb_error_prefix(err, rc, "%s: ", what);
        }
        /* status, /health and metrics say so while the wait lasts (av_ser_registry_down) */
        if (!s->down)
            s->down_since_ms = tb_wall_ms();
        s->down = true;
        down_reason(s, err->msg);
        int64_t now = tb_mono_ms();
        if (now - t0 >= s->retry_timeout_ms) {
            s->down = false;
            s->down_since_ms = 0;
            return tb_error_prefix(err, rc, "%s: gave up after %ld ms (schema.registry.retry.timeout.ms): ", what,
                                   s->retry_timeout_ms);
        }
        if (last_warn == 0 || now - last_warn >= 30000) {
            TB_WARN("avro", "%s: cannot %s, retrying (nothing is sent meanwhile): %s", what, doing, err->msg);
            last_warn = now;
        }
        for (long slept = 0; slept < wait; slept += 50) {
            if (s->stop && *s->stop) {
                s->down = false;
                s->down_since_ms = 0;
                return tb_error_set(err, TB_ERR_STOPPED, false, "stop requested while waiting for the schema registry");
            }
            if (s->wait && slept % 1000 == 0)
                s->wait(s->wait_opaque);
            sleep_ms(50);
        }
        wait = wait * 2 > 5000 ? 5000 : wait * 2;
    }
}

typedef struct reg_ctx {
    const char *subject;
    uint32_t *id;
} reg_ctx;

static tb_code call_register(av_ser *s, void *ctx, tb_error *err)
{
    reg_ctx *c = ctx;
    return sreg_register(s->reg, c->subject, tb_buf_cstr(&s->avsc), c->id, err);
}

/* Register s->avsc under subject, retrying while the registry cannot answer. */
static tb_code register_retrying(av_ser *s, const char *subject, const char *what, uint32_t *id, tb_error *err)
{
    reg_ctx c = {subject, id};
    char doing[512];
    snprintf(doing, sizeof doing, "register subject %s", subject);
    return with_retries(s, what, doing, call_register, &c, err);
}

typedef struct fetch_ctx {
    uint32_t id;
    char *schema;
} fetch_ctx;

static tb_code call_fetch(av_ser *s, void *ctx, tb_error *err)
{
    fetch_ctx *c = ctx;
    return sreg_schema_by_id(s->reg, c->id, &c->schema, err);
}

tb_code av_ser_decode(av_ser *s, const char *what, const void *msg, size_t len, tb_buf *out, tb_error *err)
{
    const uint8_t *p = msg;
    if (len < 5 || p[0] != 0)
        return tb_error_set(err, TB_ERR_CORRUPT, false, "%s: not a message in the Confluent wire format (magic byte %s)",
                            what, len ? (p[0] ? "not 0" : "0, but shorter than 5 bytes") : "missing");
    uint32_t id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    void **slot = tb_hmap_find(&s->readers, &id, sizeof id);
    if (!slot || !*slot) {
        fetch_ctx c = {id, NULL};
        char doing[64];
        snprintf(doing, sizeof doing, "fetch schema id %u", id);
        tb_code rc = with_retries(s, what, doing, call_fetch, &c, err);
        if (rc != TB_OK)
            return rc;
        av_reader *r = NULL;
        rc = av_reader_new(c.schema, strlen(c.schema), &r, err);
        free(c.schema);
        if (rc != TB_OK)
            return tb_error_prefix(err, rc, "%s: schema id %u: ", what, id);
        if (tb_hmap_put(&s->readers, &id, sizeof id, &slot) != TB_OK) {
            av_reader_free(r);
            return tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
        }
        *slot = r;
    }
    tb_code rc = av_reader_json(*slot, p + 5, len - 5, out, err);
    return rc == TB_OK ? TB_OK : tb_error_prefix(err, rc, "%s: schema id %u: ", what, id);
}

static tb_code lookup(av_ser *s, const char *subject, const char *what, const char *st, size_t sn, av_entry **out,
                      tb_error *err)
{
    tb_buf_reset(&s->key);
    if (tb_buf_append(&s->key, subject, strlen(subject) + 1) != TB_OK || tb_buf_append(&s->key, st, sn) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
    void **slot = tb_hmap_find(&s->cache, s->key.data, s->key.len);
    if (slot && *slot) {
        *out = *slot;
        return TB_OK;
    }
    av_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
    tb_code rc = evt_jv_parse(st, sn, &e->cs, err);
    if (rc != TB_OK)
        goto fail;
    tb_buf_reset(&s->avsc);
    if ((rc = av_schema_from_connect(e->cs, &s->avsc, err)) != TB_OK) {
        rc = tb_error_prefix(err, rc, "%s: ", what);
        goto fail;
    }
    /* avro-c parses it as every consumer will: a name clash or a bad name fails here, not there */
    avro_schema_t parsed = NULL;
    if (av_lib.schema_from_json_length(s->avsc.data, s->avsc.len, &parsed) != 0) {
        rc = tb_error_set(err, TB_ERR_INVALID, false, "%s: the Avro schema of subject %s is not valid Avro: %s", what,
                          subject, av_lib.strerror());
        goto fail;
    }
    av_lib.schema_decref(parsed);
    if ((rc = register_retrying(s, subject, what, &e->id, err)) != TB_OK)
        goto fail;
    if (tb_hmap_put(&s->cache, s->key.data, s->key.len, &slot) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "Avro: out of memory");
        goto fail;
    }
    *slot = e;
    s->registered++;
    TB_INFO("avro", "subject %s: schema id %u (%s)", subject, e->id, what);
#ifdef TB_TEST_HOOKS
    /* tests only (av_ser.h): stopped here, registered, nothing of it encoded or sent */
    if (s->stop_after && strcmp(s->stop_after, subject) == 0)
        raise(SIGSTOP);
#endif
    *out = e;
    return TB_OK;
fail:
    entry_free(e);
    return rc;
}

tb_code av_ser_encode(av_ser *s, const char *subject, const char *what, const char *json, size_t len, tb_buf *out,
                      tb_error *err)
{
    static const char head[] = "{\"schema\":", mid[] = ",\"payload\":";
    const char *end = json + len;
    if (len < sizeof head || memcmp(json, head, sizeof head - 1) != 0)
        return tb_error_set(err, TB_ERR_INVALID, false, "%s: not a schema and payload wrapper", what);
    const char *st = json + sizeof head - 1;
    const char *se = value_end(st, end);
    if (!se || (size_t)(end - se) < sizeof mid || memcmp(se, mid, sizeof mid - 1) != 0)
        return tb_error_set(err, TB_ERR_INVALID, false, "%s: not a schema and payload wrapper", what);
    const char *pt = se + sizeof mid - 1;
    if (end[-1] != '}')
        return tb_error_set(err, TB_ERR_INVALID, false, "%s: not a schema and payload wrapper", what);
    av_entry *e = NULL;
    tb_code rc = lookup(s, subject, what, st, (size_t)(se - st), &e, err);
    if (rc != TB_OK)
        return rc;
    evt_jv *payload = NULL;
    if ((rc = evt_jv_parse(pt, (size_t)(end - 1 - pt), &payload, err)) != TB_OK)
        return tb_error_prefix(err, rc, "%s: payload: ", what);
    uint8_t hdr[5] = {0, (uint8_t)(e->id >> 24), (uint8_t)(e->id >> 16), (uint8_t)(e->id >> 8), (uint8_t)e->id};
    size_t start = out->len;
    if ((rc = tb_buf_append(out, hdr, 5)) == TB_OK)
        rc = av_encode(e->cs, payload, out, err);
    evt_jv_free(payload);
    if (rc != TB_OK) {
        out->len = start;
        return tb_error_prefix(err, rc, "%s: subject %s: ", what, subject);
    }
    return TB_OK;
}
