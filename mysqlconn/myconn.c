/*
 * myconn: opening MySQL/MariaDB source connections, with TLS (see myconn.h).
 */
#include "myconn.h"

#include <dlfcn.h>
#include <errmsg.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <mysqld_error.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tb_clock.h"
#include "tb_log.h"

enum myconn_mode { MODE_DISABLED, MODE_PREFERRED, MODE_REQUIRED, MODE_VERIFY_CA, MODE_VERIFY_IDENTITY };

struct myconn {
    char *host, *user, *password;
    unsigned port;
    int64_t connect_timeout_ms;
    enum myconn_mode mode;
    const char *mode_name; /* static */
    char *ca, *capath, *cert, *key, *crl, *cipher, *tls_version;
};

static const char *const mode_names[] = {"disabled", "preferred", "required", "verify_ca", "verify_identity"};

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

void myconn_free(myconn *mc)
{
    if (!mc)
        return;
    free(mc->host);
    free(mc->user);
    wipe_free(mc->password);
    free(mc->ca);
    free(mc->capath);
    free(mc->cert);
    free(mc->key);
    free(mc->crl);
    free(mc->cipher);
    free(mc->tls_version);
    free(mc);
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

bool myconn_same(const myconn *a, const myconn *b)
{
    return a && b && a->port == b->port && a->mode == b->mode && a->connect_timeout_ms == b->connect_timeout_ms &&
           same_str(a->host, b->host) && same_str(a->user, b->user) && same_str(a->password, b->password) &&
           same_str(a->ca, b->ca) && same_str(a->capath, b->capath) && same_str(a->cert, b->cert) &&
           same_str(a->key, b->key) && same_str(a->crl, b->crl) && same_str(a->cipher, b->cipher) &&
           same_str(a->tls_version, b->tls_version);
}

/* A copy of s into *out (NULL stays NULL); false when out of memory. */
static bool dup_str(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return !s || *out;
}

/* A copy of mc (NULL: out of memory). */
static myconn *myconn_dup(const myconn *mc)
{
    myconn *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->port = mc->port;
    d->connect_timeout_ms = mc->connect_timeout_ms;
    d->mode = mc->mode;
    d->mode_name = mc->mode_name;
    if (!dup_str(mc->host, &d->host) || !dup_str(mc->user, &d->user) || !dup_str(mc->password, &d->password) ||
        !dup_str(mc->ca, &d->ca) || !dup_str(mc->capath, &d->capath) || !dup_str(mc->cert, &d->cert) ||
        !dup_str(mc->key, &d->key) || !dup_str(mc->crl, &d->crl) || !dup_str(mc->cipher, &d->cipher) ||
        !dup_str(mc->tls_version, &d->tls_version)) {
        myconn_free(d);
        return NULL;
    }
    return d;
}

int64_t myconn_catalog_timeout_ms(const myconn *mc)
{
    return mc->connect_timeout_ms > 60000 ? mc->connect_timeout_ms : 60000;
}

myconn_opts myconn_catalog_opts(const myconn *mc, const char *purpose)
{
    return (myconn_opts){.purpose = purpose, .quiet = true, .reuse = true, .any_timeout = true,
                         .read_timeout_ms = myconn_catalog_timeout_ms(mc), .charset = "utf8mb4"};
}

/* ------------------------------------------------------------ kept connections (myconn_keep) */

typedef struct kept_conn {
    MYSQL *my;
    myconn *mc;
    int64_t since_ms;
} kept_conn;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static kept_conn kept[MYCONN_KEEP_MAX];

/* The read timeout Connector/C gives a connection opened with read_timeout_ms (seconds). */
static unsigned read_timeout_s(int64_t read_timeout_ms)
{
    return read_timeout_ms > 0 ? (unsigned)((read_timeout_ms + 999) / 1000) : 0;
}

void myconn_keep(const myconn *mc, MYSQL *my)
{
    if (!my)
        return;
    unsigned status = 0;
    myconn *copy = NULL;
    if (my->status == MYSQL_STATUS_READY && mariadb_get_infov(my, MARIADB_CONNECTION_SERVER_STATUS, &status) == 0 &&
        !(status & SERVER_STATUS_IN_TRANS) && (copy = myconn_dup(mc))) {
        pthread_mutex_lock(&kept_mu);
        for (size_t i = 0; i < MYCONN_KEEP_MAX; i++)
            if (!kept[i].my) {
                kept[i] = (kept_conn){my, copy, tb_mono_ms()};
                my = NULL;
                copy = NULL;
                break;
            }
        pthread_mutex_unlock(&kept_mu);
    }
    myconn_free(copy);
    if (my)
        mysql_close(my);
}

void myconn_keep_close(void)
{
    kept_conn all[MYCONN_KEEP_MAX];
    pthread_mutex_lock(&kept_mu);
    memcpy(all, kept, sizeof all);
    memset(kept, 0, sizeof kept);
    pthread_mutex_unlock(&kept_mu);
    for (size_t i = 0; i < MYCONN_KEEP_MAX; i++) {
        if (all[i].my)
            mysql_close(all[i].my);
        myconn_free(all[i].mc);
    }
}

/* Whether kept connection my, of mc's source, may serve o (see myconn_opts.any_timeout). */
static bool serves(const MYSQL *my, const myconn *mc, const myconn_opts *o)
{
    unsigned rt = my->options.read_timeout;
    if (o->any_timeout)
        return rt == 0 || rt >= read_timeout_s(myconn_catalog_timeout_ms(mc));
    return rt == read_timeout_s(o->read_timeout_ms);
}

/* A kept connection that serves mc and o and answers a ping, else NULL. Those kept longer than
 * MYCONN_KEEP_MS or for other source settings are closed. */
static MYSQL *take_kept(const myconn *mc, const myconn_opts *o)
{
    kept_conn stale[MYCONN_KEEP_MAX], got = {0};
    size_t nstale = 0;
    int64_t now = tb_mono_ms();
    pthread_mutex_lock(&kept_mu);
    for (size_t i = 0; i < MYCONN_KEEP_MAX; i++) {
        if (!kept[i].my)
            continue;
        if (now - kept[i].since_ms >= MYCONN_KEEP_MS || !myconn_same(kept[i].mc, mc)) { /* never to serve */
            stale[nstale++] = kept[i];
            kept[i] = (kept_conn){0};
        } else if (!got.my && serves(kept[i].my, mc, o)) {
            got = kept[i];
            kept[i] = (kept_conn){0};
        }
    }
    pthread_mutex_unlock(&kept_mu);
    for (size_t i = 0; i < nstale; i++) {
        mysql_close(stale[i].my);
        myconn_free(stale[i].mc);
    }
    myconn_free(got.mc);
    if (got.my && (mysql_ping(got.my) != 0 || (o->charset && mysql_set_character_set(got.my, o->charset) != 0))) {
        mysql_close(got.my);
        got.my = NULL;
    }
    return got.my;
}

/* A copy of a set string key, NULL when unset or empty; false when out of memory. */
static bool dup_key(const cfg *c, const char *key, char **out)
{
    const char *v = cfg_get_str(c, key);
    *out = NULL;
    if (!v || !*v)
        return true;
    *out = strdup(v);
    return *out != NULL;
}

tb_code myconn_new(const cfg *c, myconn **out, tb_error *err)
{
    tb_code rc = TB_OK;
    *out = NULL;
    myconn *mc = calloc(1, sizeof(*mc));
    if (!mc)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    const char *host = cfg_get_str(c, CFGK_SOURCE_HOST), *user = cfg_get_str(c, CFGK_SOURCE_USER);
    mc->host = strdup(host && *host ? host : "127.0.0.1");
    mc->user = strdup(user ? user : "root");
    mc->port = (unsigned)cfg_get_int(c, CFGK_SOURCE_PORT);
    mc->connect_timeout_ms = cfg_get_int(c, CFGK_SOURCE_CONNECT_TIMEOUT_MS);
    const char *mode = cfg_get_str(c, CFGK_SOURCE_SSL_MODE);
    mc->mode = MODE_PREFERRED;
    for (size_t i = 0; i < sizeof(mode_names) / sizeof(*mode_names); i++)
        if (mode && strcmp(mode, mode_names[i]) == 0)
            mc->mode = (enum myconn_mode)i;
    mc->mode_name = mode_names[mc->mode];
    if (!mc->host || !mc->user || !dup_key(c, CFGK_SOURCE_SSL_CA, &mc->ca) ||
        !dup_key(c, CFGK_SOURCE_SSL_CAPATH, &mc->capath) || !dup_key(c, CFGK_SOURCE_SSL_CERT, &mc->cert) ||
        !dup_key(c, CFGK_SOURCE_SSL_KEY, &mc->key) || !dup_key(c, CFGK_SOURCE_SSL_CRL, &mc->crl) ||
        !dup_key(c, CFGK_SOURCE_SSL_CIPHER, &mc->cipher) || !dup_key(c, CFGK_SOURCE_SSL_TLS_VERSION, &mc->tls_version)) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if ((mc->mode == MODE_VERIFY_CA || mc->mode == MODE_VERIFY_IDENTITY) && !mc->ca && !mc->capath) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "source.ssl.mode=%s needs source.ssl.ca (a CA file) or source.ssl.capath to verify the "
                          "server certificate against",
                          mc->mode_name);
        goto out;
    }
    if ((rc = cfg_get_secret(c, CFGK_SOURCE_PASSWORD, &mc->password, err)) != TB_OK)
        goto out;
    *out = mc;
    mc = NULL;
out:
    myconn_free(mc);
    return rc;
}

const char *myconn_host(const myconn *mc)
{
    return mc->host;
}

unsigned myconn_port(const myconn *mc)
{
    return mc->port;
}

bool myconn_is_mariadb(MYSQL *my)
{
    const char *ver = mysql_get_server_info(my);
    return ver && strstr(ver, "MariaDB") != NULL;
}

bool myconn_encrypted(MYSQL *my)
{
    return my && mysql_get_ssl_cipher(my) != NULL;
}

/* ------------------------------------------------------------ the system CA store
 *
 * Connector/C 3.3 gives each TLS connection an SSL_CTX of its own and, when no CA file or
 * folder is set, loads the system CA store into it (SSL_CTX_set_default_verify_paths), under
 * its one process-wide TLS lock, even though it then verifies nothing: without a CA it sets
 * SSL_VERIFY_NONE and checks no verify result unless the host name is to be verified, which
 * tributary asks for only with a CA (myconn_new refuses verify_ca / verify_identity without
 * one). With OpenSSL 3 that load parses every certificate of the bundle: about 20 ms of CPU
 * per connection here, one connection after the other because of the lock, on the start-up's
 * path to the first message. tributary defines the function (the executable's definition
 * comes first for every library that calls it): on a thread inside myconn_connect for a
 * source with no CA (store_unused) it loads nothing and returns success; everywhere else
 * (librdkafka's TLS, any other caller) it calls OpenSSL's. myconn_ca_store_skipped counts
 * the loads it saved (tests: that the definition is the one used). */
static _Thread_local bool store_unused;
static atomic_ulong store_skipped;
static int (*store_load)(SSL_CTX *);
static pthread_once_t store_once = PTHREAD_ONCE_INIT;

static void store_resolve(void)
{
    void *f = dlsym(RTLD_NEXT, "SSL_CTX_set_default_verify_paths");
    memcpy(&store_load, &f, sizeof store_load);
}

/* used: a link-time optimized link would otherwise keep the definition to the executable (no
 * library on its command line asks for it), and Connector/C would call OpenSSL's; app/CMakeLists.txt
 * checks after each link that the executable exports it. */
__attribute__((used)) int SSL_CTX_set_default_verify_paths(SSL_CTX *ctx)
{
    if (store_unused) {
        atomic_fetch_add(&store_skipped, 1);
        return 1;
    }
    pthread_once(&store_once, store_resolve);
    return store_load ? store_load(ctx) : 0;
}

unsigned long myconn_ca_store_skipped(void)
{
    return atomic_load(&store_skipped);
}

/* Give the TLS settings to Connector/C (nothing for disabled). */
static void set_tls(const myconn *mc, MYSQL *my)
{
    if (mc->mode == MODE_DISABLED)
        return;
    my_bool on = 1, off = 0;
    if (mc->ca)
        mysql_optionsv(my, MYSQL_OPT_SSL_CA, mc->ca);
    if (mc->capath)
        mysql_optionsv(my, MYSQL_OPT_SSL_CAPATH, mc->capath);
    if (mc->cert)
        mysql_optionsv(my, MYSQL_OPT_SSL_CERT, mc->cert);
    if (mc->key)
        mysql_optionsv(my, MYSQL_OPT_SSL_KEY, mc->key);
    if (mc->crl)
        mysql_optionsv(my, MYSQL_OPT_SSL_CRL, mc->crl);
    if (mc->cipher)
        mysql_optionsv(my, MYSQL_OPT_SSL_CIPHER, mc->cipher);
    if (mc->tls_version)
        mysql_optionsv(my, MARIADB_OPT_TLS_VERSION, mc->tls_version);
    /* ENFORCE sets Connector/C's use_ssl: try TLS when the server offers it. Connector/C 3.3
     * falls back to plaintext when the server has no TLS (unless the name is verified), so
     * myconn_connect checks the outcome for required and stricter. The chain is checked by
     * OpenSSL whenever a CA is given; VERIFY_SERVER_CERT adds the host name. */
    mysql_optionsv(my, MYSQL_OPT_SSL_ENFORCE, &on);
    mysql_optionsv(my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, mc->mode == MODE_VERIFY_IDENTITY ? &on : &off);
}

/* The one-line reason for a failed connect, into err. */
static tb_code connect_error(const myconn *mc, MYSQL *my, tb_error *err)
{
    unsigned e = mysql_errno(my);
    const char *msg = mysql_error(my);
    if (e == CR_SSL_CONNECTION_ERROR) {
        bool verify = strstr(msg, "verif") || strstr(msg, "Validation") || strstr(msg, "certificate") ||
                      strstr(msg, "issuer");
        /* Connector/C checks the name after the handshake (which checked the chain), and says
         * only "Validation of SSL server certificate failed" when the name does not match. */
        bool name = mc->mode == MODE_VERIFY_IDENTITY && strstr(msg, "Validation of SSL server certificate");
        /* a certificate that does not verify stays so; a broken handshake (a server going down
         * mid-way) may not */
        return tb_error_set(err, TB_ERR_SOURCE, !verify, "source %s:%u: %s: %s%s%s%s (source.ssl.mode=%s%s%s)",
                            mc->host, mc->port, verify ? "TLS certificate verification failed" : "TLS failed", msg,
                            name ? ": the server certificate does not name host '" : "", name ? mc->host : "",
                            name ? "'" : "", mc->mode_name, mc->ca ? ", source.ssl.ca=" : "", mc->ca ? mc->ca : "");
    }
    bool denied = e == ER_ACCESS_DENIED_ERROR || e == ER_DBACCESS_DENIED_ERROR;
    const char *hint = "";
    if (e == ER_ACCESS_DENIED_ERROR && mc->mode == MODE_DISABLED)
        hint = " (source.ssl.mode=disabled: an account that REQUIRE SSL is refused without TLS)";
    else if (e == ER_ACCESS_DENIED_ERROR && !mc->cert)
        hint = " (an account that REQUIRE X509 also needs source.ssl.cert and source.ssl.key)";
    return tb_error_set(err, TB_ERR_SOURCE, !denied, "source %s:%u: cannot connect: %s (mysql error %u)%s",
                        mc->host, mc->port, msg, e, hint);
}

tb_code myconn_connect(const myconn *mc, const myconn_opts *o, MYSQL **out, tb_error *err)
{
    static const myconn_opts defaults = {.purpose = "source"};
    if (!o)
        o = &defaults;
    *out = NULL;
    if (o->reuse && (*out = take_kept(mc, o)) != NULL) {
        TB_DEBUG("mysql", "source %s:%u (%s): a kept connection", mc->host, mc->port, o->purpose ? o->purpose : "source");
        return TB_OK;
    }
    MYSQL *my = mysql_init(NULL);
    if (!my)
        return tb_error_set(err, TB_ERR_NOMEM, false, "mysql_init failed");
    unsigned ct = (unsigned)((mc->connect_timeout_ms + 999) / 1000);
    if (ct == 0)
        ct = 1;
    mysql_optionsv(my, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
    if (o->read_timeout_ms > 0) {
        unsigned rt = read_timeout_s(o->read_timeout_ms);
        mysql_optionsv(my, MYSQL_OPT_READ_TIMEOUT, &rt);
    }
    if (o->charset)
        mysql_optionsv(my, MYSQL_SET_CHARSET_NAME, o->charset);
    set_tls(mc, my);
    store_unused = !mc->ca && !mc->capath;
    MYSQL *ok = mysql_real_connect(my, mc->host, mc->user, mc->password, NULL, mc->port, NULL, 0);
    store_unused = false;
    if (!ok) {
        tb_code rc = connect_error(mc, my, err);
        mysql_close(my);
        return rc;
    }
    const char *purpose = o->purpose ? o->purpose : "source";
    const char *cipher = mysql_get_ssl_cipher(my);
    if (!cipher && mc->mode >= MODE_REQUIRED) {
        mysql_close(my);
        return tb_error_set(err, TB_ERR_SOURCE, false,
                            "source %s:%u: the server does not offer TLS, and source.ssl.mode=%s requires it", mc->host,
                            mc->port, mc->mode_name);
    }
    tb_log_level lvl = o->quiet ? TB_LOG_DEBUG : TB_LOG_INFO;
    if (cipher) {
        const char *version = NULL;
        if (mariadb_get_infov(my, MARIADB_CONNECTION_TLS_VERSION, &version) != 0)
            version = NULL;
        tb_log(lvl, "mysql", "source %s:%u (%s): TLS %s, cipher %s, %s (source.ssl.mode=%s)", mc->host, mc->port,
               purpose, version ? version : "?", cipher,
               mc->mode == MODE_VERIFY_IDENTITY      ? "certificate and host name verified"
               : mc->ca || mc->capath ? "certificate verified" : "certificate not verified",
               mc->mode_name);
    } else {
        tb_log(mc->mode == MODE_DISABLED || o->quiet ? TB_LOG_DEBUG : TB_LOG_WARN, "mysql",
               "source %s:%u (%s): not encrypted (source.ssl.mode=%s)", mc->host, mc->port, purpose, mc->mode_name);
    }
    *out = my;
    return TB_OK;
}

bool myconn_errno_retriable(unsigned e)
{
    return (e >= 2000 && e < 3000) || e == ER_LOCK_WAIT_TIMEOUT || e == ER_LOCK_DEADLOCK || e == ER_CON_COUNT_ERROR ||
           e == ER_SERVER_SHUTDOWN || e == ER_QUERY_INTERRUPTED || e == 0;
}

/* ------------------------------------------------------------ myconn_warm */

struct myconn_warm {
    myconn *mc;
    size_t n;
    /* The second connection starts once the first is kept (or failed): Connector/C sets up
     * each TLS context under one process-wide lock, loading the default CA store when no CA
     * is given, so two at once end together, and the first, the one the start's catalog
     * questions wait for, comes later than alone. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool first_done;
    struct warm_one {
        pthread_t th;
        myconn_opts o;
        const myconn *mc;
        struct myconn_warm *w;
        bool after_first;
    } one[2];
};

static void *warm_main(void *arg)
{
    struct warm_one *w = arg;
    if (w->after_first) {
        pthread_mutex_lock(&w->w->mu);
        while (!w->w->first_done)
            pthread_cond_wait(&w->w->cv, &w->w->mu);
        pthread_mutex_unlock(&w->w->mu);
    }
    mysql_thread_init();
    MYSQL *my = NULL;
    tb_error err;
    if (myconn_connect(w->mc, &w->o, &my, &err) == TB_OK)
        myconn_keep(w->mc, my);
    else
        TB_DEBUG("mysql", "early %s connection: %s (it is made again when needed)", w->o.purpose, err.msg);
    mysql_thread_end();
    if (!w->after_first) {
        pthread_mutex_lock(&w->w->mu);
        w->w->first_done = true;
        pthread_cond_broadcast(&w->w->cv);
        pthread_mutex_unlock(&w->w->mu);
    }
    return NULL;
}

myconn_warm *myconn_warm_start(const cfg *c, int64_t also_rt_ms)
{
    myconn_warm *w = calloc(1, sizeof(*w));
    tb_error err;
    if (!w || myconn_new(c, &w->mc, &err) != TB_OK) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->one[0].o = myconn_catalog_opts(w->mc, "preflight");
    w->one[0].o.reuse = false;
    /* the INFO line of the replication connection's TLS, as when binlog_open opens it */
    w->one[1].o = (myconn_opts){.purpose = "replication", .read_timeout_ms = also_rt_ms};
    size_t want = also_rt_ms > 0 ? 2 : 1;
    for (size_t i = 0; i < want; i++) {
        w->one[i].mc = w->mc;
        w->one[i].w = w;
        w->one[i].after_first = i > 0;
        if (pthread_create(&w->one[i].th, NULL, warm_main, &w->one[i]) != 0)
            break;
        w->n++;
    }
    return w;
}

void myconn_warm_wait_first(myconn_warm *w)
{
    if (!w || w->n == 0)
        return;
    pthread_mutex_lock(&w->mu);
    while (!w->first_done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void myconn_warm_join(myconn_warm *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        pthread_join(w->one[i].th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    myconn_free(w->mc);
    free(w);
}
