/* tb_dl: a library loaded at its first use; a missing library or symbol is an
 * error that names it, what needed it and the package to install. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "tb_dl.h"

Test(dl, resolves_functions)
{
    double (*f_cos)(double) = NULL;
    double (*f_sqrt)(double) = NULL;
    const tb_dl_sym syms[] = {TB_DL_SYM("cos", f_cos), TB_DL_SYM("sqrt", f_sqrt)};
    tb_error err = {0};
    cr_assert_eq(tb_dl_load("libm.so.6", syms, 2, "a test", "libc6", &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(f_cos);
    cr_assert_not_null(f_sqrt);
    cr_assert_eq(f_cos(0.0), 1.0);
    cr_assert_eq(f_sqrt(81.0), 9.0);
}

Test(dl, missing_library_names_it_and_the_package)
{
    void (*f)(void) = NULL;
    const tb_dl_sym syms[] = {TB_DL_SYM("anything", f)};
    tb_error err = {0};
    cr_assert_eq(
        tb_dl_load("libtributary-no-such-lib.so.7", syms, 1, "the schema registry client", "libnothing9", &err),
        TB_ERR_CONFIG);
    cr_assert_not_null(strstr(err.msg, "the schema registry client"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "libtributary-no-such-lib.so.7"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "install libnothing9"), "%s", err.msg);
    cr_assert_null(f);
}

Test(dl, missing_symbol_names_it)
{
    double (*f_cos)(double) = NULL;
    void (*f_none)(void) = NULL;
    const tb_dl_sym syms[] = {TB_DL_SYM("cos", f_cos), TB_DL_SYM("tributary_no_such_function", f_none)};
    tb_error err = {0};
    cr_assert_eq(tb_dl_load("libm.so.6", syms, 2, "a test", "libc6", &err), TB_ERR_CONFIG);
    cr_assert_not_null(strstr(err.msg, "tributary_no_such_function"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "libm.so.6"), "%s", err.msg);
    cr_assert_null(f_none);
    cr_assert_null(f_cos, "a symbol resolved before the missing one is not left pointing into the closed library");
}

static double (*need_cos)(double);
static const tb_dl_sym need_syms[] = {TB_DL_SYM("cos", need_cos)};
static tb_dl_lib need_lib = TB_DL_LIB("libm.so.6", need_syms, "a test", "libc6");
static void (*gone_fn)(void);
static const tb_dl_sym gone_syms[] = {TB_DL_SYM("anything", gone_fn)};
static tb_dl_lib gone_lib = TB_DL_LIB("libtributary-no-such-lib.so.7", gone_syms, "a test", "libnothing9");

static void *need_from_thread(void *arg)
{
    tb_error err = {0};
    *(tb_code *)arg = tb_dl_need(&need_lib, &err);
    return NULL;
}

/* tb_dl_need loads once, from any thread, and answers every later call as the first. */
Test(dl, need_loads_once_and_repeats_its_answer)
{
    pthread_t th[4];
    tb_code rc[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, need_from_thread, &rc[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(rc[i], TB_OK);
    }
    cr_assert_eq(need_cos(0.0), 1.0);
    tb_error err = {0};
    cr_assert_eq(tb_dl_need(&gone_lib, &err), TB_ERR_CONFIG);
    cr_assert_not_null(strstr(err.msg, "install libnothing9"), "%s", err.msg);
    tb_error again = {0};
    cr_assert_eq(tb_dl_need(&gone_lib, &again), TB_ERR_CONFIG);
    cr_assert_str_eq(again.msg, err.msg);
}
