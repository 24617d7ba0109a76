/*
 * tributary cache: replay compacted topics into the local SQLite table cache
 * (DESIGN 9), and its read-side subcommands `get` and `status`.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "app_metrics.h"
#include "cache.h"
#include "cache_read.h"
#include "tb_log.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tributary cache [--config FILE] [--set key=value]... [options]\n"
            "       tributary cache get --db PATH --table DB.TABLE --key JSON\n"
            "       tributary cache status --db PATH [--brokers HOST:PORT]\n"
            "       tributary cache publish --db PATH --brokers HOST:PORT [--prefix P] [--tables REGEX]\n"
            "\n"
            "Consumes the matching compacted topics from the beginning (then keeps following) and\n"
            "keeps one SQLite table per topic: \"<db>.<table>\". Each batch and the consumed offsets\n"
            "are one transaction, so a restart resumes exactly where it stopped.\n"
            "\n"
            "options (each is also a configuration key):\n"
            "  --brokers B          kafka.bootstrap.servers\n"
            "  --topics REGEX       cache.topics (default ^<topic.prefix>\\.)\n"
            "  --db PATH            cache.path\n"
            "  --prefix P           topic.prefix\n"
            "  --mode global|group  cache.mode\n"
            "  --group ID           cache.group.id\n"
            "  --until-caught-up    exit 0 once every partition reached the high watermark seen at start\n"
            "\n"
            "get: print the row with that key as JSON (exit 1 no such row, 2 a key that is not the\n"
            "     table's key, 3 no such table, 4 the file cannot be read).\n"
            "status: stored offset vs high watermark per partition, and whether the cache caught up.\n"
            "publish: the other direction: the topics rebuilt from the cache (see cache publish --help).\n");
}

/* The options above as --set overrides, so the configuration sees them. */
static const struct { const char *opt, *key; } aliases[] = {
    {"--brokers", "kafka.bootstrap.servers"}, {"--topics", CFGK_CACHE_TOPICS}, {"--db", CFGK_CACHE_PATH},
    {"--prefix", CFGK_TOPIC_PREFIX},          {"--mode", CFGK_CACHE_MODE},     {"--group", CFGK_CACHE_GROUP_ID},
};

typedef struct props {
    const char **kv;
    size_t n, cap;
} props;

static void add_prop(const char *key, const char *value, void *opaque)
{
    props *p = opaque;
    if (p->n + 3 > p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        const char **kv = realloc(p->kv, cap * sizeof(*kv));
        if (!kv)
            return;
        p->kv = kv;
        p->cap = cap;
    }
    p->kv[p->n++] = key;
    p->kv[p->n++] = value;
    p->kv[p->n] = NULL;
}

/* Progress of cache_run: the metrics (metrics.listen), and on a terminal a
 * line that rewrites itself. */
typedef struct cache_watch {
    app_metrics *metrics;
    bool tty;
} cache_watch;

static void on_progress(const cache_progress *p, void *opaque)
{
    cache_watch *w = opaque;
    if (w->metrics) {
        app_metrics_lag *lags = p->nparts ? calloc(p->nparts, sizeof(*lags)) : NULL;
        for (size_t i = 0; lags && i < p->nparts; i++)
            lags[i] = (app_metrics_lag){p->parts[i].topic, p->parts[i].partition, p->parts[i].lag};
        app_metrics_cache v = {.state = p->caught_up ? "caught_up" : "catching_up", .messages = (uint64_t)p->applied,
                               .remaining = p->remaining, .caught_up = p->caught_up, .parts = lags,
                               .nparts = lags ? p->nparts : 0};
        app_metrics_set_cache(w->metrics, &v);
        free(lags);
    }
    if (!w->tty)
        return;
    char eta[32] = "?";
    if (p->caught_up)
        snprintf(eta, sizeof(eta), "caught up");
    else if (p->eta_s >= 0)
        snprintf(eta, sizeof(eta), "ETA %llds", (long long)(p->eta_s < 1e15 ? p->eta_s + 0.5 : 1e15));
    fprintf(stderr, "\rcache: %lld messages, %.0f rows/s, %lld to go, %s   ", (long long)p->messages,
            p->rows_per_s, (long long)p->remaining, eta);
    if (p->caught_up)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Exit codes of `cache get` (docs/cache.md): 0 the row was printed. */
enum {
    CACHE_GET_NO_ROW = 1,   /* the table has no row with this key */
    CACHE_GET_BAD_KEY = 2,  /* usage, or a key that does not match the table's key columns */
    CACHE_GET_NO_TABLE = 3, /* the cache holds no such table */
    CACHE_GET_FILE = 4,     /* the cache file cannot be opened or read */
};

static int cmd_get(int argc, char **argv)
{
    const char *db_path = NULL, *table = NULL, *key = NULL;
    tb_error err;
    cache_db *db = NULL;
    tb_buf row;
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary cache get --db PATH --table DB.TABLE --key JSON\n"
               "Print the cached row whose key is JSON (e.g. '{\"id\":42}') as one JSON object;\n"
               "exit 0 printed, 1 no row with this key, 2 usage or a key that does not match the\n"
               "table's key columns exactly, 3 no such table, 4 the cache file cannot be read.\n");
        return 0;
    }
    const app_optspec spec[] = {{"--db", &db_path, NULL}, {"--table", &table, NULL}, {"--key", &key, NULL}};
    if (app_parse_opts(argc, argv, 1, spec, sizeof(spec) / sizeof(spec[0]), &err) != TB_OK)
        return app_fail("cache get", &err);
    if (!db_path || !table || !key) {
        fprintf(stderr, "tributary cache get: needs --db PATH --table DB.TABLE --key JSON\n");
        return 2;
    }
    tb_buf_init(&row, 0);
    int exit_code = CACHE_GET_FILE;
    tb_code rc = cache_db_open(db_path, &db, &err);
    if (rc == TB_OK) {
        rc = cache_get(db, table, key, &row, &err);
        exit_code = rc == TB_OK              ? 0
                    : rc == TB_ERR_INVALID   ? CACHE_GET_BAD_KEY
                    : rc == TB_ERR_NOT_FOUND ? (cache_db_has_table(db, table) ? CACHE_GET_NO_ROW : CACHE_GET_NO_TABLE)
                                             : CACHE_GET_FILE;
    }
    if (rc == TB_OK)
        printf("%s\n", tb_buf_cstr(&row));
    else
        fprintf(stderr, "tributary cache get: %s\n", err.msg);
    cache_db_close(db);
    tb_buf_free(&row);
    return exit_code;
}

static int cmd_status_sub(int argc, char **argv)
{
    const char *db_path = NULL, *brokers = NULL;
    tb_error err;
    tb_buf out;
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary cache status --db PATH [--brokers HOST:PORT]\n"
               "Per partition: the offset the cache has applied and, with --brokers, the high watermark,\n"
               "and whether the cache has caught up.\n");
        return 0;
    }
    const app_optspec spec[] = {{"--db", &db_path, NULL}, {"--brokers", &brokers, NULL}};
    if (app_parse_opts(argc, argv, 1, spec, sizeof(spec) / sizeof(spec[0]), &err) != TB_OK)
        return app_fail("cache status", &err);
    if (!db_path) {
        fprintf(stderr, "tributary cache status: needs --db PATH\n");
        return 2;
    }
    tb_buf_init(&out, 0);
    tb_code rc = cache_status(db_path, brokers, &out, &err);
    if (rc == TB_OK)
        fputs(tb_buf_cstr(&out), stdout);
    tb_buf_free(&out);
    return rc == TB_OK ? 0 : app_fail("cache status", &err);
}

int cmd_cache(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "get") == 0)
        return cmd_get(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "status") == 0)
        return cmd_status_sub(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "publish") == 0)
        return cmd_cache_publish(argc - 1, argv + 1);
    if (app_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tb_error err;
    tb_code rc = TB_OK;
    cfg *c = NULL;
    props kp = {0};
    tb_buf topics_re, prefix_buf, *sets = NULL;
    bool until = false;
    int nargc = 0, ret = 0;
    cache_watch watch = {0};
    char *registry_password = NULL;
    char **nargv = calloc((size_t)argc * 2 + 2, sizeof(*nargv));
    sets = calloc((size_t)argc + 1, sizeof(*sets));
    tb_buf_init(&topics_re, 0);
    tb_buf_init(&prefix_buf, 0);
    if (!nargv || !sets) {
        rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    nargv[nargc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        size_t a;
        for (a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++)
            if (strcmp(argv[i], aliases[a].opt) == 0)
                break;
        if (a < sizeof(aliases) / sizeof(aliases[0])) {
            if (i + 1 >= argc) {
                rc = tb_error_set(&err, TB_ERR_CONFIG, false, "%s needs a value", argv[i]);
                goto out;
            }
            tb_buf *b = &sets[i];
            tb_buf_init(b, 0);
            if (tb_buf_printf(b, "%s=%s", aliases[a].key, argv[i + 1]) != TB_OK) {
                rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            i++;
            nargv[nargc++] = "--set";
            nargv[nargc++] = b->data;
        } else if (strcmp(argv[i], "--until-caught-up") == 0) {
            until = true;
        } else {
            nargv[nargc++] = argv[i];
        }
    }
    nargv[nargc] = NULL;
    if ((rc = app_load_config(&nargc, nargv, &c, &err)) != TB_OK)
        goto out;
    if (nargc > 1) {
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "unexpected argument '%s' (see --help)", nargv[1]);
        goto out;
    }
    app_kafka_client_check(c);
    cache_opts o;
    cache_opts_init(&o);
    o.db_path = cfg_get_str(c, CFGK_CACHE_PATH);
    o.name = cfg_get_str(c, CFGK_NAME);
    const char *pfx = app_topic_prefix(c, &prefix_buf); /* as `run` names the topics */
    if (cfg_is_set(c, CFGK_TOPIC_PREFIX))
        o.topic_prefix = pfx;
    if (cfg_is_set(c, CFGK_CACHE_TOPICS)) {
        o.topics = cfg_get_str(c, CFGK_CACHE_TOPICS);
    } else {
        tb_buf_putc(&topics_re, '^');
        for (const char *p = pfx; *p; p++) { /* the prefix literally */
            if (strchr(".[]()*+?{}|^$\\", *p))
                tb_buf_putc(&topics_re, '\\');
            tb_buf_putc(&topics_re, *p);
        }
        tb_buf_puts(&topics_re, "\\.");
        o.topics = tb_buf_cstr(&topics_re);
        o.topic_prefix = pfx;
    }
    o.mode = strcmp(cfg_get_str(c, CFGK_CACHE_MODE), "group") == 0 ? CACHE_MODE_GROUP : CACHE_MODE_GLOBAL;
    o.group_id = cfg_get_str(c, CFGK_CACHE_GROUP_ID);
    o.drop_on_revoke = strcmp(cfg_get_str(c, CFGK_CACHE_ON_REVOKE), "drop") == 0;
    o.drop_on_drop = strcmp(cfg_get_str(c, CFGK_CACHE_ON_DROP), "drop") == 0;
    const char *pol = cfg_get_str(c, CFGK_CACHE_ERROR_POLICY);
    o.error_policy = strcmp(pol, "skip") == 0 ? CACHE_ERR_SKIP : strcmp(pol, "dlq") == 0 ? CACHE_ERR_DLQ : CACHE_ERR_FAIL;
    o.batch_size = (int)cfg_get_int(c, CFGK_CACHE_BATCH_SIZE);
    o.busy_timeout_ms = (int)cfg_get_int(c, CFGK_CACHE_BUSY_TIMEOUT_MS);
    o.offline_fail = strcmp(cfg_get_str(c, CFGK_CACHE_OFFLINE_POLICY), "fail") == 0;
    const char *dd = cfg_get_str(c, CFGK_CACHE_DEBEZIUM_DECIMAL_HANDLING_MODE);
    const char *dt = cfg_get_str(c, CFGK_CACHE_DEBEZIUM_TIME_PRECISION_MODE);
    const char *db = cfg_get_str(c, CFGK_CACHE_DEBEZIUM_BINARY_HANDLING_MODE);
    o.dbz.decimal = strcmp(dd, "string") == 0 ? CACHE_DBZ_STRING : strcmp(dd, "double") == 0 ? CACHE_DBZ_DOUBLE : CACHE_DBZ_PRECISE;
    o.dbz.time = strcmp(dt, "connect") == 0 ? CACHE_DBZ_CONNECT : strcmp(dt, "adaptive") == 0 ? CACHE_DBZ_ADAPTIVE
                                                                                               : CACHE_DBZ_ADAPTIVE_TIME_US;
    o.dbz.binary = strcmp(db, "hex") == 0               ? CACHE_DBZ_HEX
                   : strcmp(db, "base64-url-safe") == 0 ? CACHE_DBZ_BASE64_URL
                   : strcmp(db, "base64") == 0          ? CACHE_DBZ_BASE64
                                                        : CACHE_DBZ_BYTES;
    if (cfg_is_set(c, CFGK_CACHE_DEBEZIUM_HISTORY_TOPIC))
        o.dbz_history_topic = cfg_get_str(c, CFGK_CACHE_DEBEZIUM_HISTORY_TOPIC);
    o.until_caught_up = until;
    /* Avro topics: the run's schema registry settings */
    o.registry_url = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_URL);
    o.registry_user = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_USER);
    o.registry_ca = cfg_get_str(c, CFGK_SCHEMA_REGISTRY_SSL_CA_LOCATION);
    o.registry_timeout_ms = (long)cfg_get_int(c, CFGK_SCHEMA_REGISTRY_REQUEST_TIMEOUT_MS);
    o.registry_retry_ms = cfg_get_int(c, CFGK_SCHEMA_REGISTRY_RETRY_TIMEOUT_MS);
    if ((rc = cfg_get_secret(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_PASSWORD, &registry_password, &err)) != TB_OK)
        goto out;
    o.registry_password = registry_password;
    cfg_each_prefixed(c, "kafka.", add_prop, &kp);
    o.kafka_props = kp.kv;
    o.stop = &app_stop_requested;
    if ((rc = app_metrics_start(c, APP_METRICS_CACHE, &watch.metrics, &err)) != TB_OK)
        goto out;
    watch.tty = isatty(STDERR_FILENO);
    if (watch.tty || watch.metrics) {
        o.progress = on_progress;
        o.progress_opaque = &watch;
    }
    app_install_signals();
    rc = cache_run(&o, &err);
    if (watch.metrics) {
        app_metrics_cache v = {.state = rc == TB_OK ? "stopped" : "failed", .remaining = -1};
        app_metrics_set_cache(watch.metrics, &v);
    }
out:
    app_metrics_stop(watch.metrics);
    ret = rc == TB_OK ? 0 : app_fail("cache", &err);
    for (int i = 0; sets && i < argc; i++)
        tb_buf_free(&sets[i]);
    free(sets);
    free(nargv);
    free(kp.kv);
    tb_buf_free(&topics_re);
    tb_buf_free(&prefix_buf);
    if (registry_password) {
        explicit_bzero(registry_password, strlen(registry_password));
        free(registry_password);
    }
    cfg_free(c);
    return ret;
}
