/* Built by test_install.sh against the installed tributary-cache alone
 * (tributary_cache.h, pkg-config): `cache_reader FILE TABLE KEY` prints the
 * library's version, the row of TABLE keyed KEY, every row of TABLE and
 * each table with its columns, one line each; or "error <code>: <message>". */
#include <stdio.h>
#include <string.h>
#include <tributary_cache.h>

static int print_row(const char *row, size_t len, void *opaque)
{
    (void)opaque;
    printf("row %.*s\n", (int)len, row);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    printf("version %s %s\n", tbc_version(), TBC_VERSION);
    tbc_error err;
    tbc_db *db = NULL;
    if (tbc_open(argv[1], &db, &err) != TBC_OK) {
        printf("error %d: %s\n", (int)err.code, err.msg);
        return 1;
    }
    char *row = NULL;
    size_t len = 0;
    tbc_code rc = tbc_get(db, argv[2], argv[3], &row, &len, &err);
    if (rc == TBC_OK && strlen(row) == len)
        printf("get %s\n", row);
    else
        printf("error %d: %s\n", (int)err.code, err.msg);
    tbc_free(row);
    if (rc == TBC_OK && (rc = tbc_iter(db, argv[2], print_row, NULL, &err)) != TBC_OK)
        printf("error %d: %s\n", (int)err.code, err.msg);
    for (size_t i = 0; i < tbc_ntables(db); i++) {
        tbc_table_info t;
        if (tbc_table(db, i, &t) != TBC_OK)
            return 1;
        printf("table %s version %lld columns %zu key %zu\n", t.name, t.version, t.ncols, t.npk);
        for (size_t c = 0; c < t.ncols; c++) {
            tbc_column_info ci;
            if (tbc_column(db, i, c, &ci) != TBC_OK)
                return 1;
            printf("column %s %s %d\n", ci.name, ci.type, ci.pk);
        }
    }
    tbc_close(db);
    return rc == TBC_OK ? 0 : 1;
}
