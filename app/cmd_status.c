/*
 * tributary status: print the status file that `tributary run` writes
 * (position, lag, events behind, throughput, snapshot state).
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "app_status.h"
#include "tb_file.h"

static void status_usage(void)
{
    printf("usage: tributary status --config FILE [--set key=value]... [--json] [--file PATH]\n"
           "\n"
           "Print the status that `tributary run` keeps in its status file: committed position,\n"
           "lag, events behind, throughput and snapshot state.\n"
           "\n"
           "  --config FILE   properties file of the connector (as given to `run`)\n"
           "  --set k=v       override a key (repeatable); TRIBUTARY_<KEY> variables also apply\n"
           "  --json          print the status file's JSON as is\n"
           "  --file PATH     read this status file instead of status.file (default:\n"
           "                  <dir of offsets.file>/<name>.status.json)\n"
           "\n"
           "exit codes (usable as a health check):\n"
           "  0  running and healthy: starting, snapshot, streaming, or standby\n"
           "  1  unhealthy or failed: reconnecting (source down), failed, unreadable status file\n"
           "  2  bad configuration or usage\n"
           "  3  not running: no status file, stopped, the process is gone (killed), or the file\n"
           "     has not been rewritten for 60 s (stale)\n");
}

int cmd_status(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        status_usage();
        return 0;
    }
    int rc = 0;
    cfg *c = NULL;
    tb_error err;
    tb_error_clear(&err);
    tb_buf path, json, text;
    tb_buf_init(&path, 0);
    tb_buf_init(&json, 0);
    tb_buf_init(&text, 0);

    if (app_load_config(&argc, argv, &c, &err) != TB_OK) {
        rc = app_fail("status", &err);
        goto out;
    }
    bool raw = false;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            raw = true;
        } else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else {
            tb_error_set(&err, TB_ERR_CONFIG, false, "unknown option '%s' (see tributary status --help)", argv[i]);
            rc = app_fail("status", &err);
            goto out;
        }
    }
    if ((file ? tb_buf_puts(&path, file) : app_status_path(c, &path)) != TB_OK) {
        tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
        rc = app_fail("status", &err);
        goto out;
    }
    tb_code code = tb_file_read(tb_buf_cstr(&path), 0, &json, &err);
    if (code == TB_ERR_NOT_FOUND) {
        tb_error_set(&err, TB_ERR_NOT_FOUND, false,
                     "no status file %s (has `tributary run` been started with this configuration?)",
                     tb_buf_cstr(&path));
        app_fail("status", &err);
        rc = 3;
        goto out;
    }
    if (code != TB_OK) {
        rc = app_fail("status", &err);
        goto out;
    }
    if (raw) {
        fwrite(json.data ? json.data : "", 1, json.len, stdout);
        if (json.len == 0 || json.data[json.len - 1] != '\n')
            putchar('\n');
    } else {
        if (app_status_format(tb_buf_cstr(&path), tb_buf_cstr(&json), json.len, tb_wall_ms(), &text, &err) !=
            TB_OK) {
            rc = app_fail("status", &err);
            goto out;
        }
        fwrite(text.data, 1, text.len, stdout);
    }
    const char *why = NULL;
    rc = app_status_health(tb_buf_cstr(&json), json.len, tb_wall_ms(), &why);
    if (!raw)
        printf("health:         %s (exit %d)\n", why, rc);
    if (fflush(stdout) != 0)
        rc = 1;
out:
    tb_buf_free(&path);
    tb_buf_free(&json);
    tb_buf_free(&text);
    cfg_free(c);
    return rc;
}
