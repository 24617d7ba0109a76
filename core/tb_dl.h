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
 * that has it (`package`, e.g. "libcurl4"). Not thread-safe: call it once,
 * e.g. under pthread_once. */
tb_code tb_dl_load(const char *soname, const tb_dl_sym *syms, size_t n, const char *needed_by, const char *package,
                   tb_error *err);

#endif
