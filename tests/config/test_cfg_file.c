/* Unit tests of cfg_file: atomic replace and bounded reads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg_file.h"

Test(cfg_file, atomic_write_replaces_and_leaves_no_temp)
{
    char dir[] = "/tmp/tb-cfgfile-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/offsets", dir);
    tb_error err;
    cr_assert_eq(cfg_file_write_atomic(path, "one\n", 4, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_file_write_atomic(path, "second\n", 7, &err), TB_OK, "%s", err.msg);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_file_read(path, 0, &b, &err), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "second\n");
    tb_buf_free(&b);
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    struct stat st;
    cr_assert_neq(stat(tmp, &st), 0, "temp file removed by the rename");
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(cfg_file, errors_name_the_path)
{
    tb_error err;
    cr_assert_eq(cfg_file_write_atomic("/nonexistent-dir/x", "a", 1, &err), TB_ERR_IO);
    cr_assert_not_null(strstr(err.msg, "/nonexistent-dir/x.tmp."));
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_file_read("/nonexistent-dir/x", 0, &b, &err), TB_ERR_NOT_FOUND);
    cr_assert_str_eq(err.msg, "/nonexistent-dir/x: no such file");
    cr_assert_eq(cfg_file_read("/etc/passwd", 4, &b, &err), TB_ERR_IO);
    cr_assert_not_null(strstr(err.msg, "larger than 4 bytes"));
    tb_buf_free(&b);
}
