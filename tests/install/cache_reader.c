/* Built by test_install.sh against the installed tributary-cache: reads one row
 * of the cache file given as argv[1] and prints it, or prints the error. */
#include <stdio.h>
#include <cache_read.h>

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    tb_error err;
    cache_db *db = NULL;
    if (cache_db_open(argv[1], &db, &err) != TB_OK) {
        printf("error %s: %s\n", tb_code_name(err.code), err.msg);
        return 1;
    }
    tb_buf row;
    tb_buf_init(&row, 0);
    tb_code rc = cache_get(db, argv[2], argv[3], &row, &err);
    if (rc == TB_OK)
        printf("%s\n", tb_buf_cstr(&row));
    else
        printf("error %s: %s\n", tb_code_name(err.code), err.msg);
    tb_buf_free(&row);
    cache_db_close(db);
    return rc == TB_OK ? 0 : 1;
}
