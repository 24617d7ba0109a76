/*
 * tributary decode: print the change events of a log as JSON lines, offline.
 *
 *   tributary decode --binlog FILE [--start-position N] [--format envelope|row] [--prefix P] [--name N]
 *                    [--config FILE] [--set key=value]
 *   tributary decode --wal DBFILE ...            (cmd_decode_wal.c)
 *
 * Each event becomes the lines of its messages (DESIGN 4, 10):
 * {"topic":…,"key":…,"value":…}. A corrupt or truncated binlog prints the
 * events before the damage, then one error line on stderr naming the file
 * and byte offset, and exits 1. Given a configuration (--config, --set),
 * tables without a primary key are keyed by key.columns.<db>.<table> as
 * `run` keys them; without one their key is null (DESIGN 4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "binlog.h"
#include "evt_json.h"
#include "tb_buf.h"

int cmd_decode_wal(int argc, char **argv); /* app/cmd_decode_wal.c */

static void decode_usage(FILE *out)
{
    fprintf(out, "usage: tributary decode --binlog FILE [--start-position N] [--format envelope|row]\n"
                 "                        [--prefix P] [--name N] [--config FILE] [--set key=value]\n"
                 "       tributary decode --wal DBFILE [options]   (see tributary decode --wal --help)\n"
                 "Print the change events of a MySQL/MariaDB binlog file as JSON lines\n"
                 "{\"topic\":...,\"key\":...,\"value\":...}, offline. With a configuration, tables without a\n"
                 "primary key are keyed by its key.columns.<db>.<table>, as `tributary run` keys them.\n");
}

static int decode_binlog(const char *path, uint64_t start, const evt_codec_opts *o, const cfg *keys)
{
    tb_error err;
    tb_error_clear(&err);
    binlog_reader *r = NULL;
    evt_rendered rend;
    evt_rendered_init(&rend);
    tb_buf line;
    tb_buf_init(&line, 0);
    tb_code rc = binlog_open_file(path, start, &r, &err);
    if (rc == TB_OK && keys)
        binlog_set_keys(r, keys);
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = binlog_next(r, 0, &ev, &err);
        if (rc != TB_OK || !ev)
            break;
        rc = evt_render(o, ev, &rend, &err);
        for (size_t i = 0; rc == TB_OK && i < rend.n; i++) {
            tb_buf_reset(&line);
            rc = evt_json_line(rend.topic, rend.msgs[i].key, rend.msgs[i].key_len, rend.msgs[i].value,
                               rend.msgs[i].value_len, &line);
            if (rc == TB_OK) {
                tb_buf_putc(&line, '\n');
                fwrite(line.data, 1, line.len, stdout);
            } else {
                tb_error_set(&err, rc, false, "cannot encode an event line");
            }
        }
    }
    fflush(stdout);
    int status = 0;
    if (rc != TB_OK)
        status = app_fail("decode", &err);
    binlog_close(r);
    evt_rendered_free(&rend);
    tb_buf_free(&line);
    return status;
}

static int decode_args(int argc, char **argv, const cfg *keys);

int cmd_decode(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--wal") == 0)
            return cmd_decode_wal(argc, argv);
    if (app_wants_help(argc, argv)) {
        decode_usage(stdout);
        return 0;
    }
    cfg *keys = NULL;
    for (int i = 1; i < argc && !keys; i++)
        if (strncmp(argv[i], "--config", 8) == 0 || strncmp(argv[i], "--set", 5) == 0) {
            tb_error err;
            tb_error_clear(&err);
            if (app_load_config(&argc, argv, &keys, &err) != TB_OK)
                return app_fail("decode", &err);
        }
    int status = decode_args(argc, argv, keys);
    cfg_free(keys);
    return status;
}

static int decode_args(int argc, char **argv, const cfg *keys)
{
    const char *path = NULL, *prefix = "tributary", *format = "envelope", *name = "tributary";
    uint64_t start = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--binlog") == 0 && v) {
            path = v;
            i++;
        } else if (strcmp(a, "--start-position") == 0 && v) {
            char *end = NULL;
            unsigned long long n = strtoull(v, &end, 10);
            if (!*v || *end) {
                fprintf(stderr, "tributary decode: --start-position wants a byte offset, not '%s'\n", v);
                return 2;
            }
            start = n;
            i++;
        } else if (strcmp(a, "--format") == 0 && v) {
            format = v;
            i++;
        } else if (strcmp(a, "--prefix") == 0 && v) {
            prefix = v;
            i++;
        } else if (strcmp(a, "--name") == 0 && v) {
            name = v;
            i++;
        } else {
            fprintf(stderr, "tributary decode: unknown or incomplete option '%s'\n", a);
            decode_usage(stderr);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "tributary decode: --binlog FILE or --wal DBFILE is required\n");
        decode_usage(stderr);
        return 2;
    }
    if (strcmp(format, "envelope") != 0 && strcmp(format, "row") != 0) {
        fprintf(stderr, "tributary decode: --format must be envelope or row, not '%s'\n", format);
        return 2;
    }
    evt_codec_opts o = {.topic_prefix = prefix, .name = name, .row_format = strcmp(format, "row") == 0};
    return decode_binlog(path, start, &o, keys);
}
