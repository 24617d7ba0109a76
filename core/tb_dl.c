/*
 * tb_dl: a shared library loaded at its first use (tb_dl.h).
 */
#include "tb_dl.h"

#include <dlfcn.h>
#include <string.h>

tb_code tb_dl_load(const char *soname, const tb_dl_sym *syms, size_t n, const char *needed_by, const char *package,
                   tb_error *err)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%s needs the shared library %s, which cannot be loaded (%s): install %s", needed_by,
                            soname, why ? why : "not found", package);
    }
    for (size_t i = 0; i < n; i++) {
        dlerror();
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            const char *why = dlerror();
            tb_error_set(err, TB_ERR_CONFIG, false, "%s needs %s from %s, which that library lacks (%s): install %s",
                         needed_by, syms[i].name, soname, why ? why : "no such symbol", package);
            void *none = NULL;
            for (size_t k = 0; k < i; k++) /* no pointer into the library about to be closed */
                memcpy(syms[k].slot, &none, sizeof(none));
            dlclose(h);
            return TB_ERR_CONFIG;
        }
        memcpy(syms[i].slot, &f, sizeof(f)); /* a function pointer variable: same size and form on POSIX */
    }
    return TB_OK;
}

tb_code tb_dl_need(tb_dl_lib *lib, tb_error *err)
{
    pthread_mutex_lock(&lib->mu);
    if (!lib->done) {
        lib->err.code = TB_OK;
        (void)tb_dl_load(lib->soname, lib->syms, lib->n, lib->needed_by, lib->package, &lib->err);
        lib->done = true;
    }
    tb_code rc = lib->err.code;
    if (rc != TB_OK && err)
        *err = lib->err;
    pthread_mutex_unlock(&lib->mu);
    return rc;
}
