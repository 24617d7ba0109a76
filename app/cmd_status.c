/* tributary status: not implemented yet (lands with its issue). */
#include <stdio.h>

#include "app.h"

int cmd_status(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary status [options]\n(not implemented yet)\n");
        return 0;
    }
    fprintf(stderr, "tributary status: not implemented yet\n");
    return 3;
}
