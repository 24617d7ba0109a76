/* tributary snapshot: not implemented yet (lands with its issue). */
#include <stdio.h>

#include "app.h"

int cmd_snapshot(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary snapshot [options]\n(not implemented yet)\n");
        return 0;
    }
    fprintf(stderr, "tributary snapshot: not implemented yet\n");
    return 3;
}
