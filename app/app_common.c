/* Shared helpers of the subcommands. */
#include <signal.h>
#include <string.h>

#include "app.h"

volatile int app_stop_requested;

int app_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

int app_fail(const char *cmd, const tb_error *err)
{
    fprintf(stderr, "tributary %s: %s\n", cmd, err->msg);
    return tb_code_exit_status(err->code);
}

static void on_signal(int sig)
{
    (void)sig;
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

tb_code app_load_config(int *argc, char **argv, cfg **out, tb_error *err)
{
    (void)argc;
    (void)argv;
    *out = NULL;
    return tb_error_set(err, TB_ERR_NOT_IMPLEMENTED, false, "configuration loading not implemented yet");
}
