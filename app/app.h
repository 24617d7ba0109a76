/*
 * app: the `tributary` command. main.c dispatches to one cmd_<name>() per
 * subcommand, each in its own file (cmd_run.c, cmd_decode.c, ...).
 *
 * Every command: returns the process exit code (0 ok, 1 runtime failure,
 * 2 bad configuration or usage), prints `--help` to
 * stdout, prints errors as one line on stderr via app_fail().
 */
#ifndef APP_H
#define APP_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include "cfg.h"
#include "tb_error.h"

int cmd_run(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_cache(int argc, char **argv);
/* cache publish: the topics rebuilt from the cache (app/cmd_cache_publish.c), called by cmd_cache. */
int cmd_cache_publish(int argc, char **argv);
int cmd_offsets(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_sqlite(int argc, char **argv);
/* verify: the source compared with its topics and cache (app/cmd_verify.c). */
int cmd_verify(int argc, char **argv);
/* decode --wal DBFILE (app/cmd_decode_wal.c), called by cmd_decode. */
int cmd_decode_wal(int argc, char **argv);

/* Common options of commands that take a configuration:
 *   --config FILE, --set key=value (repeatable), TRIBUTARY_* environment.
 * Consumes those options from argv (compacting it, updating *argc) and
 * returns a validated cfg (caller frees) or an error (code TB_ERR_CONFIG). */
TB_MUST_USE tb_code app_load_config(int *argc, char **argv, cfg **out, tb_error *err);

/* Commands that talk to Kafka, at start: log the librdkafka in use (INFO,
 * its rd_kafka_version_str()), and WARN when kafka.sasl.mechanisms names
 * SCRAM and that librdkafka is older than 2.6.1, whose SCRAM logins Kafka 4
 * brokers refuse: the WARN names the version and the two ways out. */
void app_kafka_client_check(const cfg *c);

/* topic.prefix as it appears in topic names (out, reset): every character Kafka rejects in a
 * topic name becomes '_', as evt_topic_name names every topic, so `run` and `cache` of one
 * configuration agree; a prefix that changes is logged once at WARN naming both forms.
 * Returns tb_buf_cstr(out). */
const char *app_topic_prefix(const cfg *c, tb_buf *out);

/* Print "tributary <cmd>: <msg>" on stderr and return tb_code_exit_status(err->code). */
int app_fail(const char *cmd, const tb_error *err);

/* True if argv[1..] contains -h or --help. */
int app_wants_help(int argc, char **argv);

/* One option of a subcommand: "--name VALUE" or "--name=VALUE" stores VALUE in
 * *value (borrowed from argv); with value NULL it is a flag that sets *flag. */
typedef struct app_optspec {
    const char *name;
    const char **value;
    bool *flag;
} app_optspec;

/* Parse argv[first..] against spec[0..n). TB_ERR_CONFIG naming the argument for
 * an unknown option, a value option without a value, or a stray argument. */
TB_MUST_USE tb_code app_parse_opts(int argc, char **argv, int first, const app_optspec *spec, size_t n, tb_error *err);

/* Set once by the SIGINT/SIGTERM handler installed by app_install_signals(). */
extern volatile sig_atomic_t app_stop_requested;
/* Called by the handler of a second SIGINT/SIGTERM just before the process
 * dies by the signal; must be async-signal-safe. NULL = nothing. */
extern void (*volatile app_on_second_signal)(void);
void app_install_signals(void);

#endif
