/*
 * A cache file of a test and its removal. Opening a cache makes more than the
 * SQLite file: SQLite's -wal and -shm (and -journal), and the cache's own
 * <file>.lock (cache/cache_store.c), which it leaves in place on close. A test
 * removes them all, or every run leaves files in /tmp.
 */
#ifndef CACHE_TMP_H
#define CACHE_TMP_H

#include <stdio.h>
#include <unistd.h>

/* The SQLite file at db and every file beside it that the cache or SQLite made. */
static inline void cache_tmp_rm(const char *db)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal", ".lock"};
    char p[600];
    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++)
        if (snprintf(p, sizeof p, "%s%s", db, suffix[i]) < (int)sizeof p)
            unlink(p);
}

/* /tmp/<name>_<pid>.db, with whatever an earlier process of the same id left removed. */
static inline void cache_tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "/tmp/%s_%d.db", name, (int)getpid());
    cache_tmp_rm(out);
}

#endif
