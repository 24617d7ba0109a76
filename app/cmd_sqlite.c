/*
 * tributary sqlite uninstall --config F [--set k=v]: remove everything trigger
 * mode installed in source.path (_cdc_log, _cdc_repl and every _cdc_* trigger).
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "sqlcap.h"

static void cmd_sqlite_usage(void)
{
    printf("usage: tributary sqlite uninstall --config FILE [--set key=value]...\n"
           "Remove the change-log table _cdc_log, the table _cdc_repl and the _cdc_* triggers that\n"
           "source.sqlite.mode=trigger installed in the database named by source.path, when the connector\n"
           "stops for good (while it is only stopped they keep logging changes for its next start).\n");
}

int cmd_sqlite(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        cmd_sqlite_usage();
        return 0;
    }
    tb_error err;
    tb_error_clear(&err);
    cfg *c = NULL;
    if (app_load_config(&argc, argv, &c, &err) != TB_OK)
        return app_fail("sqlite", &err);
    int status = 0;
    const char *path = cfg_get_str(c, CFGK_SOURCE_PATH);
    if (argc < 2 || strcmp(argv[1], "uninstall") != 0) {
        tb_error_set(&err, TB_ERR_CONFIG, false, "expected the subcommand `uninstall` (see --help)");
        status = app_fail("sqlite", &err);
    } else if (!path) {
        tb_error_set(&err, TB_ERR_CONFIG, false, "source.path is not set");
        status = app_fail("sqlite", &err);
    } else {
        int ntrig = 0;
        bool had_log = false;
        if (sqlcap_trigger_uninstall(path, &ntrig, &had_log, &err) != TB_OK)
            status = app_fail("sqlite", &err);
        else if (ntrig == 0 && !had_log)
            printf("%s: no tributary change-log table or triggers; nothing to remove\n", path);
        else
            printf("%s: removed %s%d trigger%s\n", path, had_log ? "the tables _cdc_log and _cdc_repl and " : "", ntrig,
                   ntrig == 1 ? "" : "s");
    }
    cfg_free(c);
    return status;
}
