/* tributary run: not implemented yet (lands with its issue). */
#include <stdio.h>

#include "app.h"

int cmd_run(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary run [options]\n(not implemented yet)\n");
        return 0;
    }
    fprintf(stderr, "tributary run: not implemented yet\n");
    return 3;
}
