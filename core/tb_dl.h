/*
 * tb_dl: a shared library loaded at its first use.
 *
 * For a dependency that only some configurations need (libcurl for the schema
 * registry, libmicrohttpd for the metrics endpoint): a process that does not
 * use it neither maps it nor pays for its start-up (relocations, the
 * constructors of its own dependencies, the resident pages). Loaded once and
 * never unloaded.
 */
#ifndef TB_DL_H
#define TB_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "tb_error.h"

/* One function to resolve: its name and where its address goes (a function
 * pointer variable; written with memcpy, so any function pointer type). */
typedef struct {
    const char *name;
    void *slot;
} tb_dl_sym;

#define TB_DL_SYM(name, var) {(name), (void *)&(var)}

/* Load soname and resolve every symbol of syms, or fail naming the library,
 * what needs it (`needed_by`, e.g. "the schema registry") and the package
 * that has it (`package`, e.g. "libcurl4"); on failure every slot is NULL and
 * the library closed. Not thread-safe: tb_dl_need calls it once. */
tb_code tb_dl_load(const char *soname, const tb_dl_sym *syms, size_t n, const char *needed_by, const char *package,
                   tb_error *err);

/* A library a module loads at its first use: a static object per library,
 * with its symbols in a static array (TB_DL_LIB). */
typedef struct {
    const char *soname, *needed_by, *package;
    const tb_dl_sym *syms;
    size_t n;
    pthread_mutex_t mu;
    bool done;
    tb_error err;
} tb_dl_lib;

#define TB_DL_LIB(soname, syms, needed_by, package)                                                                \
    {(soname), (needed_by), (package), (syms), sizeof(syms) / sizeof((syms)[0]), PTHREAD_MUTEX_INITIALIZER, false, \
     {0}}

/* Load lib at the first call (thread-safe); every call returns the first
 * one's answer, and its error in err. */
tb_code tb_dl_need(tb_dl_lib *lib, tb_error *err);

#endif
