/*
 * Shared helpers of the subcommands: configuration loading from argv and the
 * environment, one-line failures, signal handling, the librdkafka check.
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tb_cast.h"
#include "app.h"
#include "evt_json.h"
#include "tb_log.h"

extern char **environ;

volatile sig_atomic_t app_stop_requested;
void (*volatile app_on_second_signal)(void);

int app_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

tb_code app_parse_opts(int argc, char **argv, int first, const app_optspec *spec, size_t n, tb_error *err)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        size_t k = 0;
        for (; k < n; k++) {
            size_t len = strlen(spec[k].name);
            if (strncmp(a, spec[k].name, len) != 0 || (a[len] != '\0' && (a[len] != '=' || !spec[k].value)))
                continue;
            if (!spec[k].value) {
                *spec[k].flag = true;
            } else if (a[len] == '=') {
                *spec[k].value = a + len + 1;
            } else if (i + 1 < argc) {
                *spec[k].value = argv[++i];
            } else {
                return tb_error_set(err, TB_ERR_CONFIG, false, "%s needs a value (see --help)", a);
            }
            break;
        }
        if (k == n)
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s '%s' (see --help)",
                                a[0] == '-' ? "unknown option" : "unexpected argument", a);
    }
    return TB_OK;
}

int app_fail(const char *cmd, const tb_error *err)
{
    /* One line, whatever the message holds. */
    fprintf(stderr, "tributary %s: ", cmd);
    for (const char *p = err->msg; *p; p++)
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
    fputc('\n', stderr);
    return tb_code_exit_status(err->code);
}

/* First SIGINT/SIGTERM: ask for a clean stop (the loops poll
 * app_stop_requested). A second one: die by the signal at once (nothing is
 * committed that Kafka has not acknowledged, so this is safe, only slower to
 * resume); app_on_second_signal, when set, runs first (the status file's
 * last record). Only async-signal-safe calls here. */
static void on_signal(int sig)
{
    if (app_stop_requested) {
        void (*last)(void) = app_on_second_signal;
        if (last)
            last();
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    app_stop_requested = 1;
}

void app_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Value of option `name` at argv[*i] ("--name V" or "--name=V"); advances *i
 * past a separate value. Returns NULL if argv[*i] is not this option; sets
 * *missing when the option has no value. */
static const char *app_opt(int argc, char **argv, int *i, const char *name, bool *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    *missing = false;
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return a;
    }
    (*i)++;
    return argv[*i];
}

tb_code app_load_config(int *argc, char **argv, cfg **out, tb_error *err)
{
    tb_code rc = TB_OK;
    *out = NULL;
    int n = *argc;
    const char **files = calloc((size_t)n + 1, sizeof(*files));
    const char **sets = calloc((size_t)n + 1, sizeof(*sets));
    size_t nfiles = 0, nsets = 0;
    cfg *c = cfg_new();
    if (!files || !sets || !c) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }

    /* Collect --config and --set, compacting the other arguments. argv[0]
     * (the command name) stays; "--" ends option scanning. */
    int w = 1;
    bool done = false;
    for (int i = 1; i < n; i++) {
        bool missing = false;
        const char *v;
        if (done) {
            argv[w++] = argv[i];
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            done = true;
            argv[w++] = argv[i];
            continue;
        }
        if ((v = app_opt(n, argv, &i, "--config", &missing)) != NULL) {
            if (missing) {
                rc = tb_error_set(err, TB_ERR_CONFIG, false, "--config needs a file name");
                goto out;
            }
            files[nfiles++] = v;
        } else if ((v = app_opt(n, argv, &i, "--set", &missing)) != NULL) {
            if (missing) {
                rc = tb_error_set(err, TB_ERR_CONFIG, false, "--set needs key=value");
                goto out;
            }
            sets[nsets++] = v;
        } else {
            argv[w++] = argv[i];
        }
    }
    argv[w] = NULL;
    *argc = w;

    for (size_t i = 0; i < nfiles; i++)
        if ((rc = cfg_load_file(c, files[i], err)) != TB_OK)
            goto out;
    if ((rc = cfg_load_env(c, environ, err)) != TB_OK)
        goto out;
    for (size_t i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i]) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "--set '%s': expected key=value", sets[i]);
            goto out;
        }
        char *key = strndup(sets[i], (size_t)(eq - sets[i]));
        if (!key) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        rc = cfg_set(c, key, eq + 1, "--set", err);
        /* A secret given on the command line is readable by every local user in ps and
         * /proc/PID/cmdline: once stored, its characters in the argument are overwritten, as the
         * mysql client does (the argument strings are the process's own, writable memory). */
        if (rc == TB_OK && cfg_key_is_secret(key)) {
            char *value = TB_UNCONST(eq + 1); /* the process's own argument memory (see above) */
            memset(value, 'x', strlen(value));
        }
        free(key);
        if (rc != TB_OK)
            goto out;
    }
    if ((rc = cfg_validate(c, err)) != TB_OK) {
        if (nfiles == 0)
            tb_error_prefix(err, rc, "no --config FILE given, and the environment and --set do not make a complete "
                                     "configuration: ");
        goto out;
    }

    /* Private files whatever the caller's umask: the cache holds a copy of the source rows,
     * offsets and status name its positions. file.mode (default 0600) becomes the umask, the
     * read bits also granting search on folders; files are created 0666 and SQLite's 0644
     * (its -wal/-shm copy the database's mode), so they come out as file.mode allows. */
    unsigned fmode = 0600;
    cfg_file_mode(c, &fmode);
    umask((mode_t)(0777 & ~(fmode | ((fmode & 0444) >> 2))));

    tb_log_level level;
    if (tb_log_parse_level(cfg_get_str(c, CFGK_LOG_LEVEL), &level))
        tb_log_set_level(level);
    *out = c;
    c = NULL;
out:
    cfg_free(c);
    free(files);
    free(sets);
    return rc;
}

/* librdkafka before 2.6.1 ends a SCRAM exchange with a proof that Kafka 4
 * brokers refuse as invalid credentials (the client nonce repeated in the
 * client-final message); 2.6.1 fixed it. */
#define APP_RDKAFKA_SCRAM_FIXED 0x02060100

void app_kafka_client_check(const cfg *c)
{
    const char *mech = NULL;
    if (cfg_is_set(c, "kafka.sasl.mechanisms"))
        mech = cfg_get_str(c, "kafka.sasl.mechanisms");
    else if (cfg_is_set(c, "kafka.sasl.mechanism"))
        mech = cfg_get_str(c, "kafka.sasl.mechanism");
    TB_INFO("kafka", "librdkafka %s", rd_kafka_version_str());
    if (mech && strncasecmp(mech, "SCRAM", 5) == 0 && rd_kafka_version() < APP_RDKAFKA_SCRAM_FIXED)
        TB_WARN("kafka",
                "kafka.sasl.mechanisms=%s with librdkafka %s: Kafka 4 brokers refuse SCRAM logins from librdkafka "
                "older than 2.6.1 (\"Authentication failed during authentication due to invalid credentials\"). "
                "Run with librdkafka 2.6.1 or newer (installed, or its librdkafka.so.1 found through "
                "LD_LIBRARY_PATH), or use kafka.sasl.mechanisms=PLAIN over kafka.security.protocol=SASL_SSL",
                mech, rd_kafka_version_str());
}

const char *app_topic_prefix(const cfg *c, tb_buf *out)
{
    const char *raw = cfg_get_str(c, CFGK_TOPIC_PREFIX);
    tb_buf_reset(out);
    if (!raw || evt_topic_name(NULL, NULL, raw, out) != TB_OK) {
        tb_buf_reset(out);
        tb_buf_puts(out, raw ? raw : "");
    }
    if (raw && strcmp(raw, tb_buf_cstr(out)) != 0)
        TB_WARN("config",
                "topic.prefix '%s' has characters Kafka does not allow in a topic name: the topics are named with "
                "'%s' (only [a-zA-Z0-9._-] are kept); set topic.prefix=%s to say so",
                raw, tb_buf_cstr(out), tb_buf_cstr(out));
    return tb_buf_cstr(out);
}
