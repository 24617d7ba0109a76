/*
 * tributary: command-line entry point. Dispatches to the subcommands.
 */
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <mysql.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "app.h"

typedef struct app_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} app_cmd;

static const app_cmd commands[] = {
    {"run", cmd_run, "snapshot (per snapshot.mode) then stream changes to the sink"},
    {"snapshot", cmd_snapshot, "run an initial snapshot alone, or signal an incremental one"},
    {"cache", cmd_cache, "replay compacted topics into a local SQLite table cache (also: get, status, publish)"},
    {"offsets", cmd_offsets, "show or set the stored source position"},
    {"status", cmd_status, "show position, lag, throughput and snapshot state of a connector"},
    {"decode", cmd_decode, "print the events of a binlog file or SQLite WAL as JSON lines, offline"},
    {"verify", cmd_verify, "compare the source with its topics and cache, row by row (exit 0 equal, 1 differences)"},
    {"sqlite", cmd_sqlite, "SQLite trigger-mode maintenance (uninstall)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tributary <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n  tributary <command> --help     options of a command\n"
                 "  tributary --help-config        every configuration key (--markdown: docs/configuration.md)\n"
                 "  tributary --version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        /* The libraries in use at run time (shared libraries: not necessarily those built against). */
        printf("tributary %s\n", TB_VERSION);
        printf("librdkafka %s\n", rd_kafka_version_str());
        printf("MariaDB Connector/C %s\n", mysql_get_client_info());
        printf("SQLite %s\n", sqlite3_libversion());
        printf("Jansson %s\n", jansson_version_str());
        printf("libmicrohttpd %s\n", MHD_get_version());
        return 0;
    }
    if (strcmp(argv[1], "--help-config") == 0) {
        tb_buf b;
        tb_buf_init(&b, 0);
        int markdown = argc > 2 && strcmp(argv[2], "--markdown") == 0;
        tb_code rc = markdown ? cfg_help_markdown(&b) : cfg_help_text(&b);
        if (rc == TB_OK)
            fwrite(b.data ? b.data : "", 1, b.len, stdout);
        tb_buf_free(&b);
        return rc == TB_OK ? 0 : 1;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tributary: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
