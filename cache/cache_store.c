/*
 * cache_store: the SQLite side of the table cache (file layout in cache_int.h).
 * All SQL uses bound parameters and quoted identifiers; sqlite3 result codes
 * are translated into tb_code here (sqlite_fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"
#include "tb_clock.h"
#include "tb_hmap.h"
#include "tb_log.h"

static const char *const META_SQL =
    "CREATE TABLE IF NOT EXISTS _tributary_tables(tbl TEXT PRIMARY KEY, topic TEXT, inferred INTEGER NOT NULL,"
    " version INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS _tributary_columns(tbl TEXT NOT NULL, ord INTEGER NOT NULL, name TEXT NOT NULL,"
    " type TEXT NOT NULL, cls INTEGER NOT NULL, pk INTEGER NOT NULL, scale INTEGER NOT NULL DEFAULT -1,"
    " PRIMARY KEY(tbl, ord));"
    "CREATE TABLE IF NOT EXISTS _tributary_offsets(topic TEXT NOT NULL, partition INTEGER NOT NULL,"
    " next_offset INTEGER NOT NULL, high_watermark INTEGER NOT NULL DEFAULT -1, PRIMARY KEY(topic, partition));"
    "CREATE TABLE IF NOT EXISTS _tributary_state(key TEXT PRIMARY KEY, value INTEGER);";

tb_code cache_sqlite_error(cache_store *s, int code, const char *what, const char *msg, tb_error *err)
{
    if (!msg)
        msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(code);
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return tb_error_set(err, TB_ERR_IO, true,
                            "%s: %s: the cache file is locked by another process for more than %d ms "
                            "(cache.busy.timeout.ms): %s; find the process (fuser %s) and end its transaction, or "
                            "raise cache.busy.timeout.ms",
                            s->path, what, s->busy_ms, msg, s->path);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return tb_error_set(err, TB_ERR_CORRUPT, false,
                            "%s: %s: the cache file is corrupt (%s): it can be rebuilt from the topics: stop the "
                            "cache, delete %s with its -wal and -shm files, and start it again",
                            s->path, what, msg, s->path);
    case SQLITE_MISMATCH: /* a table whose sole key column is SQLite's rowid alias: cache files
                           * written before the key was declared INT */
        return tb_error_set(err, TB_ERR_IO, false,
                            "%s: %s: %s: the table's key column is declared INTEGER PRIMARY KEY (SQLite's rowid), "
                            "which holds only 64-bit integers, and a message keys a row by another value "
                            "(NULL, text, a larger number); the file was written by an earlier tributary, which "
                            "declared such keys so: stop the cache, delete %s with its -wal and -shm files, and "
                            "start it again to rebuild it",
                            s->path, what, msg, s->path);
    case SQLITE_READONLY:
        if (code == SQLITE_READONLY_DBMOVED)
            return tb_error_set(err, TB_ERR_IO, false,
                                "%s: %s: the cache file was deleted or moved while the cache ran: start the cache "
                                "again: it rebuilds the file from the topics",
                                s->path, what);
        break;
    default:
        break;
    }
    return tb_error_set(err, TB_ERR_IO, false, "%s: %s: %s", s->path, what, msg);
}

static tb_code sqlite_fail(cache_store *s, const char *what, tb_error *err)
{
    return cache_sqlite_error(s, s->db ? sqlite3_extended_errcode(s->db) : SQLITE_CANTOPEN, what, NULL, err);
}

tb_code cache_exec(cache_store *s, const char *sql, tb_error *err)
{
    char *msg = NULL;
    if (cache_store_flush(s, err) != TB_OK)
        return err ? err->code : TB_ERR_IO;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tb_code rc = cache_sqlite_error(s, sqlite3_extended_errcode(s->db), strncmp(sql, "PRAGMA", 6) == 0 ? "setting it up"
                                        : strncmp(sql, "CREATE TABLE IF", 15) == 0 ? "its own tables" : "SQL",
                                        msg ? msg : "SQL error", err);
        sqlite3_free(msg);
        return rc;
    }
    return TB_OK;
}

tb_code cache_quote_ident(tb_buf *b, const char *name)
{
    tb_code rc = tb_buf_putc(b, '"');
    for (const char *p = name; rc == TB_OK && *p; p++)
        rc = *p == '"' ? tb_buf_puts(b, "\"\"") : tb_buf_putc(b, *p);
    return rc == TB_OK ? tb_buf_putc(b, '"') : rc;
}

void cache_table_free(cache_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < CACHE_STMT_SLOTS; i++) {
        sqlite3_finalize(t->up[i].st);
        free(t->up[i].mask);
    }
    sqlite3_finalize(t->del);
    sqlite3_finalize(t->del_part);
    for (size_t i = 0; i < t->ncols; i++) {
        free(t->cols[i].name);
        free(t->cols[i].type);
        free(t->cols[i].dflt_sql);
    }
    free(t->cols);
    free(t->pk);
    free(t->name);
    free(t->topic);
    free(t->cx_kschema);
    free(t->cx_vschema);
    free(t);
}

/* ------------------------------------------------------------- the arena */

/* Blocks of memory handed out by cache_store_alloc, newest first. */
typedef struct cache_arena {
    struct cache_arena *next;
    size_t used, cap;
    char data[];
} cache_arena;

#define CACHE_ARENA_BLOCK 65536

char *cache_store_alloc(cache_store *s, size_t n)
{
    cache_arena *a = s->arena;
    n = (n + 7) & ~(size_t)7;
    if (!a || a->cap - a->used < n) {
        size_t cap = n > CACHE_ARENA_BLOCK ? n : CACHE_ARENA_BLOCK;
        cache_arena *b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = a;
        b->used = 0;
        b->cap = cap;
        s->arena = a = b;
    }
    char *p = a->data + a->used;
    a->used += n;
    return p;
}

void cache_store_release(cache_store *s)
{
    cache_arena *a = s->arena;
    if (!a)
        return;
    while (a->next) { /* keep one block */
        cache_arena *n = a->next;
        a->next = n->next;
        free(n);
    }
    a->used = 0;
}

static void table_reset_stmts(cache_table *t)
{
    for (int i = 0; i < CACHE_STMT_SLOTS; i++) {
        sqlite3_finalize(t->up[i].st);
        free(t->up[i].mask);
        t->up[i].st = NULL;
        t->up[i].mask = NULL;
    }
    sqlite3_finalize(t->del);
    sqlite3_finalize(t->del_part);
    t->del = t->del_part = NULL;
}

static tb_code load_tables(cache_store *s, tb_error *err)
{
    sqlite3_stmt *st = NULL, *sc = NULL;
    tb_code rc = TB_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT tbl, topic, inferred, version FROM _tributary_tables ORDER BY tbl", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           s->has_scale ? "SELECT name, type, cls, pk, scale FROM _tributary_columns WHERE tbl=?1 ORDER BY ord"
                                        : "SELECT name, type, cls, pk, -1 FROM _tributary_columns WHERE tbl=?1 ORDER BY ord",
                           -1, &sc, NULL) != SQLITE_OK) {
        rc = sqlite_fail(s, "reading table definitions", err);
        goto out;
    }
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        cache_table *t = calloc(1, sizeof(*t));
        cache_table **nt = realloc(s->tables, (s->ntables + 1) * sizeof(*nt));
        if (!t || !nt) {
            free(t);
            if (nt)
                s->tables = nt;
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        s->tables = nt;
        s->tables[s->ntables++] = t;
        t->name = strdup((const char *)sqlite3_column_text(st, 0));
        bool oom = !t->name;
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            oom |= !(t->topic = strdup((const char *)sqlite3_column_text(st, 1)));
        if (oom) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        t->inferred = sqlite3_column_int(st, 2) != 0;
        t->version = sqlite3_column_int64(st, 3);
        sqlite3_reset(sc);
        sqlite3_bind_text(sc, 1, t->name, -1, SQLITE_STATIC);
        int cstep;
        while ((cstep = sqlite3_step(sc)) == SQLITE_ROW) {
            cache_col *nc = realloc(t->cols, (t->ncols + 1) * sizeof(*nc));
            if (!nc) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            t->cols = nc;
            cache_col *c = &t->cols[t->ncols++];
            memset(c, 0, sizeof(*c));
            c->name = strdup((const char *)sqlite3_column_text(sc, 0));
            c->type = strdup((const char *)sqlite3_column_text(sc, 1));
            c->cls = (cache_class)sqlite3_column_int(sc, 2);
            c->pk = sqlite3_column_int(sc, 3);
            c->scale = (int16_t)sqlite3_column_int(sc, 4);
            if (!c->name || !c->type) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            if (c->pk > 0)
                t->npk++;
        }
        if (cstep != SQLITE_DONE) { /* a read error must not leave a table with fewer columns */
            rc = sqlite_fail(s, "reading column definitions", err);
            goto out;
        }
        if (!(t->pk = calloc(t->npk ? t->npk : 1, sizeof(size_t)))) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < t->ncols; i++)
            if (t->cols[i].pk > 0 && (size_t)t->cols[i].pk <= t->npk)
                t->pk[t->cols[i].pk - 1] = i;
    }
    if (rc == TB_OK && step != SQLITE_DONE)
        rc = sqlite_fail(s, "reading table definitions", err);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(sc);
    return rc;
}

/* The writer's lock: an exclusive flock on "<path>.lock", which holds the holder's pid. */
static tb_code take_lock(cache_store *s, tb_error *err)
{
    tb_buf lp;
    tb_buf_init(&lp, 0);
    tb_code rc = tb_buf_printf(&lp, "%s.lock", s->path);
    if (rc != TB_OK) {
        tb_buf_free(&lp);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    int fd = open(tb_buf_cstr(&lp), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot open the cache's lock file %s: %s", s->path,
                          tb_buf_cstr(&lp), strerror(errno));
    } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        rc = errno == EWOULDBLOCK
                 ? tb_error_set(err, TB_ERR_STATE, false,
                                "%s: the cache file is in use by another tributary cache (pid %s, lock file %s): one "
                                "cache process per file; stop that one, or give this one its own cache.path",
                                s->path, *pid ? pid : "unknown", tb_buf_cstr(&lp))
                 : tb_error_set(err, TB_ERR_IO, false, "%s: cannot lock %s: %s", s->path, tb_buf_cstr(&lp),
                                strerror(errno));
        close(fd);
        fd = -1;
    } else {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
            TB_WARN("cache", "%s: cannot write this process's pid: %s", tb_buf_cstr(&lp), strerror(errno));
    }
    s->lock_fd = fd;
    tb_buf_free(&lp);
    return rc;
}

tb_code cache_store_check_file(cache_store *s, tb_error *err)
{
    struct stat st;
    if (!s->ino)
        return TB_OK; /* in memory */
    if (stat(s->path, &st) != 0 && errno == ENOENT)
        return tb_error_set(err, TB_ERR_IO, false,
                            "%s: the cache file was deleted while the cache ran (what it wrote since is lost with it): "
                            "start the cache again: it rebuilds the file from the topics",
                            s->path);
    if (stat(s->path, &st) == 0 && ((unsigned long long)st.st_dev != s->dev || (unsigned long long)st.st_ino != s->ino))
        return tb_error_set(err, TB_ERR_IO, false,
                            "%s: the cache file was replaced by another file while the cache ran: start the cache "
                            "again to use the new file (or delete it: the cache rebuilds from the topics)",
                            s->path);
    return TB_OK;
}

tb_code cache_store_open(const char *path, bool readonly, cache_store **out, tb_error *err)
{
    return cache_store_open_busy(path, readonly, 5000, out, err);
}

tb_code cache_store_open_busy(const char *path, bool readonly, int busy_ms, cache_store **out, tb_error *err)
{
    tb_code rc = TB_OK;
    cache_store *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    s->lock_fd = -1;
    s->busy_ms = busy_ms > 0 ? busy_ms : 0;
    tb_buf_init(&s->scratch, 0);
    tb_buf_init(&s->sql, 0);
    bool in_memory = strcmp(path, ":memory:") == 0;
    if (!readonly && !in_memory && (rc = take_lock(s, err)) != TB_OK)
        goto out;
    /* one connection per thread: no per-call connection mutex */
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        rc = sqlite_fail(s, "cannot open the cache file", err);
        goto out;
    }
    struct stat st;
    if (!in_memory && stat(path, &st) == 0) {
        s->dev = (unsigned long long)st.st_dev;
        s->ino = (unsigned long long)st.st_ino;
    }
    sqlite3_busy_timeout(s->db, s->busy_ms);
    if (!readonly) {
        /* WAL: readers (cache get, plain SQL) run while the cache writes; synchronous=NORMAL
         * keeps every commit across a process kill (a power loss may lose the last batches,
         * together with their offsets: still exact) */
        if ((rc = cache_exec(s,
                             "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-32768;"
                             " PRAGMA journal_size_limit=67108864;", /* checkpoints: cache_ckpt.c */
                             err)) != TB_OK ||
            (rc = cache_exec(s, META_SQL, err)) != TB_OK)
            goto out;
        if (sqlite3_prepare_v2(s->db,
                               "INSERT INTO _tributary_offsets(topic, partition, next_offset, high_watermark)"
                               " VALUES(?1,?2,?3,?4) ON CONFLICT(topic, partition) DO UPDATE SET"
                               " next_offset=excluded.next_offset,"
                               " high_watermark=CASE WHEN excluded.high_watermark>=0 THEN excluded.high_watermark"
                               " ELSE high_watermark END",
                               -1, &s->st_offset, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(s->db,
                               "INSERT INTO _tributary_state(key, value) VALUES(?1,?2)"
                               " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                               -1, &s->st_state, NULL) != SQLITE_OK) {
            rc = sqlite_fail(s, "preparing statements", err);
            goto out;
        }
    }
    /* files written before columns had a scale: add it (read-only: read it as unknown) */
    sqlite3_stmt *ts = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM pragma_table_info('_tributary_columns') WHERE name='scale'",
                           -1, &ts, NULL) == SQLITE_OK &&
        sqlite3_step(ts) == SQLITE_ROW)
        s->has_scale = sqlite3_column_int(ts, 0) > 0;
    sqlite3_finalize(ts);
    if (!s->has_scale && !readonly) {
        if ((rc = cache_exec(s, "ALTER TABLE _tributary_columns ADD COLUMN scale INTEGER NOT NULL DEFAULT -1", err)) !=
            TB_OK)
            goto out;
        s->has_scale = true;
    }
    if ((rc = load_tables(s, err)) != TB_OK || (!readonly && (rc = cache_ckpt_start(s, err)) != TB_OK))
        goto out;
    s->applied = cache_store_get_state(s, "applied", 0);
    s->skipped = cache_store_get_state(s, "skipped", 0);
    s->dlq = cache_store_get_state(s, "dlq", 0);
out:
    if (rc != TB_OK)
        cache_store_close(s);
    else
        *out = s;
    return rc;
}

void cache_store_close(cache_store *s)
{
    if (!s)
        return;
    if (s->in_tx)
        cache_store_rollback(s);
    cache_ckpt_stop(s);
    for (size_t i = 0; i < s->ntables; i++)
        cache_table_free(s->tables[i]);
    free(s->tables);
    sqlite3_finalize(s->st_offset);
    sqlite3_finalize(s->st_state);
    sqlite3_close(s->db);
    tb_buf_free(&s->scratch);
    tb_buf_free(&s->sql);
    free(s->present);
    free(s->vals);
    free(s->last);
    free(s->cx_mem);
    while (s->arena) {
        cache_arena *n = s->arena->next;
        free(s->arena);
        s->arena = n;
    }
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    free(s->path);
    free(s);
}

tb_code cache_store_begin(cache_store *s, tb_error *err)
{
    if (s->in_tx)
        return TB_OK;
    tb_code rc = cache_exec(s, "BEGIN IMMEDIATE", err);
    s->in_tx = rc == TB_OK;
    return rc;
}

tb_code cache_store_commit(cache_store *s, tb_error *err)
{
    if (!s->in_tx)
        return TB_OK;
    tb_code rc;
    if ((rc = cache_store_put_state(s, "alive_at", tb_wall_ms(), err)) != TB_OK ||
        (rc = cache_store_put_state(s, "applied", s->applied, err)) != TB_OK ||
        (rc = cache_store_put_state(s, "skipped", s->skipped, err)) != TB_OK ||
        (rc = cache_store_put_state(s, "dlq", s->dlq, err)) != TB_OK ||
        (rc = cache_exec(s, "COMMIT", err)) != TB_OK)
        return rc;
    s->in_tx = false;
    return TB_OK;
}

void cache_store_rollback(cache_store *s)
{
    cache_store_discard(s);
    if (s->in_tx) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        s->in_tx = false;
        s->applied = cache_store_get_state(s, "applied", 0);
        s->skipped = cache_store_get_state(s, "skipped", 0);
        s->dlq = cache_store_get_state(s, "dlq", 0);
    }
}

/* The mapped name of a table named `name` (see cache_store_sql_name) into b: "<name>~<hash>", with
 * a leading "~" when name starts with SQLite's reserved "sqlite_", which the mapped name must not. */
static tb_code mapped_name(tb_buf *b, const char *name)
{
    tb_buf_reset(b);
    return tb_buf_printf(b, "%s%s~%016llx", sqlite3_strnicmp(name, "sqlite_", 7) == 0 ? "~" : "", name,
                         (unsigned long long)tb_hash_bytes(name, strlen(name)));
}

cache_table *cache_store_find(cache_store *s, const char *name)
{
    for (size_t i = 0; i < s->ntables; i++)
        if (strcmp(s->tables[i]->name, name) == 0)
            return s->tables[i];
    /* a name SQLite could not hold apart from another: under its mapped name */
    tb_buf b;
    tb_buf_init(&b, 0);
    cache_table *t = NULL;
    if (mapped_name(&b, name) == TB_OK)
        for (size_t i = 0; i < s->ntables && !t; i++)
            if (strcmp(s->tables[i]->name, tb_buf_cstr(&b)) == 0)
                t = s->tables[i];
    tb_buf_free(&b);
    return t;
}

tb_code cache_store_sql_name(cache_store *s, const cache_table *self, const char *name, char **out, tb_error *err)
{
    bool clash = sqlite3_strnicmp(name, "sqlite_", 7) == 0;
    for (size_t i = 0; i < s->ntables && !clash; i++)
        clash = s->tables[i] != self && sqlite3_stricmp(s->tables[i]->name, name) == 0;
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = clash ? mapped_name(&b, name) : tb_buf_puts(&b, name);
    *out = rc == TB_OK ? tb_buf_detach(&b, NULL) : NULL;
    tb_buf_free(&b);
    if (!*out)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (clash)
        TB_WARN("cache", "table \"%s\": SQLite cannot hold it apart from another table (table names are compared "
                         "without case; names starting with sqlite_ are reserved): cached as \"%s\"",
                name, *out);
    return TB_OK;
}

cache_table *cache_store_find_topic(cache_store *s, const char *topic)
{
    if (s->last_hit && s->last_hit->topic && strcmp(s->last_hit->topic, topic) == 0)
        return s->last_hit;
    for (size_t i = 0; i < s->ntables; i++)
        if (s->tables[i]->topic && strcmp(s->tables[i]->topic, topic) == 0)
            return s->last_hit = s->tables[i];
    return NULL;
}

static tb_code save_column(cache_store *s, cache_table *t, size_t i, tb_error *err)
{
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO _tributary_columns(tbl, ord, name, type, cls, pk, scale)"
                           " VALUES(?1,?2,?3,?4,?5,?6,?7)",
                           -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(s, "saving a column definition", err);
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
    sqlite3_bind_text(st, 3, t->cols[i].name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, t->cols[i].type ? t->cols[i].type : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, (int)t->cols[i].cls);
    sqlite3_bind_int(st, 6, t->cols[i].pk);
    sqlite3_bind_int(st, 7, t->cols[i].scale);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sqlite_fail(s, "saving a column definition", err);
    sqlite3_finalize(st);
    return rc;
}

static tb_code save_table(cache_store *s, cache_table *t, tb_error *err)
{
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO _tributary_tables(tbl, topic, inferred, version) VALUES(?1,?2,?3,?4)",
                           -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(s, "saving a table definition", err);
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    if (t->topic)
        sqlite3_bind_text(st, 2, t->topic, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, t->inferred);
    sqlite3_bind_int64(st, 4, t->version);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sqlite_fail(s, "saving a table definition", err);
    sqlite3_finalize(st);
    return rc;
}

tb_code cache_store_set_topic(cache_store *s, cache_table *t, const char *topic, tb_error *err)
{
    char *dup = strdup(topic);
    if (!dup)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    free(t->topic);
    t->topic = dup;
    s->last_hit = NULL;
    return save_table(s, t, err);
}

/* Every cache table has the cache's own column "_partition" (DESIGN 9): a
 * source column of that name (SQLite names ignore case) cannot be kept beside it. */
static tb_code reserved_column(const char *table, const char *name, tb_error *err)
{
    if (strcasecmp(name, "_partition") != 0)
        return TB_OK;
    return tb_error_set(err, TB_ERR_UNSUPPORTED, false,
                        "table \"%s\": column \"%s\" has the name of the cache's own column \"_partition\" (the Kafka "
                        "partition of each row; names are compared without case): rename the column at the source, or "
                        "leave the table out of cache.topics",
                        table, name);
}

/* Two columns SQLite cannot hold apart (it compares column names without case): the message or
 * record that names both is refused (TB_ERR_INVALID: cache.error.policy), not the cache file. */
static tb_code same_column(const char *table, const char *a, const char *b, tb_error *err)
{
    return tb_error_set(err, TB_ERR_INVALID, false,
                        "table \"%s\": columns \"%s\" and \"%s\" differ only in case, which SQLite cannot hold "
                        "apart (column names are compared without case)",
                        table, a, b);
}

/* A table of ncols source columns beside the cache's own "_partition", which SQLite may not
 * hold (SQLITE_LIMIT_COLUMN, 2000 in its default build): refused as reserved_column refuses
 * its column (the cache stops, naming the table and the fix). */
static tb_code too_many_columns(const cache_store *s, const char *table, size_t ncols, tb_error *err)
{
    int max = sqlite3_limit(s->db, SQLITE_LIMIT_COLUMN, -1);
    if (ncols + 1 <= (size_t)max)
        return TB_OK;
    return tb_error_set(err, TB_ERR_UNSUPPORTED, false,
                        "table \"%s\": %zu columns, but SQLite holds at most %d a table, the cache's own "
                        "\"_partition\" included: leave the table out of cache.topics",
                        table, ncols, max);
}

tb_code cache_store_create(cache_store *s, cache_table *t, tb_error *err)
{
    tb_code lrc = t->npk ? too_many_columns(s, t->name, t->ncols, err)
                         : tb_error_set(err, TB_ERR_INVALID, false,
                                        "table \"%s\" (topic %s): its key names no column of the row (only the "
                                        "rowid of a key holding NULL, or nothing): the cache keeps a table by its key",
                                        t->name, t->topic ? t->topic : "(none)");
    if (lrc != TB_OK) {
        cache_table_free(t);
        return lrc;
    }
    for (size_t i = 0; i < t->ncols; i++)
        for (size_t j = i + 1; j < t->ncols; j++)
            if (sqlite3_stricmp(t->cols[i].name, t->cols[j].name) == 0) {
                tb_code rc = same_column(t->name, t->cols[i].name, t->cols[j].name, err);
                cache_table_free(t);
                return rc;
            }
    tb_code rc = cache_store_flush(s, err);
    tb_buf *q = &s->sql;
    char *sqlname = NULL;
    if (rc == TB_OK && (rc = cache_store_sql_name(s, t, t->name, &sqlname, err)) == TB_OK) {
        free(t->name);
        t->name = sqlname;
    }
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
        rc = reserved_column(t->name, t->cols[i].name, err);
    if (rc != TB_OK) {
        cache_table_free(t);
        return rc;
    }
    tb_buf_reset(q);
    rc = tb_buf_puts(q, "CREATE TABLE ");
    rc = rc ? rc : cache_quote_ident(q, t->name);
    rc = rc ? rc : tb_buf_putc(q, '(');
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++) {
        rc = cache_quote_ident(q, t->cols[i].name);
        const char *decl = cache_class_decl(t->cols[i].cls);
        if (t->npk == 1 && t->pk[0] == i && strcmp(decl, "INTEGER") == 0)
            decl = "INT"; /* the same affinity, but not SQLite's rowid alias, which refuses NULL and any
                           * value that is not a 64-bit integer (a datatype mismatch at the upsert) */
        if (rc == TB_OK && *decl)
            rc = tb_buf_printf(q, " %s", decl);
        if (rc == TB_OK && t->cols[i].dflt_sql)
            rc = tb_buf_printf(q, " DEFAULT %s", t->cols[i].dflt_sql);
        rc = rc ? rc : tb_buf_puts(q, ", ");
    }
    rc = rc ? rc : tb_buf_puts(q, "\"_partition\" INTEGER, PRIMARY KEY(");
    for (size_t k = 0; rc == TB_OK && k < t->npk; k++) {
        if (k)
            rc = tb_buf_putc(q, ',');
        rc = rc ? rc : cache_quote_ident(q, t->cols[t->pk[k]].name);
    }
    rc = rc ? rc : tb_buf_puts(q, "))");
    if (rc != TB_OK) {
        cache_table_free(t);
        return tb_error_set(err, rc, false, "table \"%s\": building its definition", t->name);
    }
    cache_table **nt = realloc(s->tables, (s->ntables + 1) * sizeof(*nt));
    if (!nt) {
        cache_table_free(t);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    s->tables = nt;
    s->tables[s->ntables++] = t;
    if ((rc = cache_exec(s, tb_buf_cstr(q), err)) != TB_OK)
        return tb_error_prefix(err, rc, "table \"%s\": ", t->name);
    if ((rc = save_table(s, t, err)) != TB_OK)
        return rc;
    for (size_t i = 0; rc == TB_OK && i < t->ncols; i++)
        rc = save_column(s, t, i, err);
    return rc;
}

static tb_code exec_bound_name(cache_store *s, const char *sql, const char *name, tb_error *err)
{
    sqlite3_stmt *st = NULL;
    tb_code rc = cache_store_flush(s, err);
    if (rc != TB_OK)
        return rc;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(s, sql, err);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sqlite_fail(s, sql, err);
    sqlite3_finalize(st);
    return rc;
}

tb_code cache_store_drop(cache_store *s, cache_table *t, tb_error *err)
{
    tb_code rc;
    if ((rc = cache_store_flush(s, err)) != TB_OK) /* before its statements go */
        return rc;
    table_reset_stmts(t);
    tb_buf_reset(&s->sql);
    if ((rc = tb_buf_puts(&s->sql, "DROP TABLE IF EXISTS ")) != TB_OK ||
        (rc = cache_quote_ident(&s->sql, t->name)) != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    if ((rc = cache_exec(s, tb_buf_cstr(&s->sql), err)) != TB_OK ||
        (rc = exec_bound_name(s, "DELETE FROM _tributary_tables WHERE tbl=?1", t->name, err)) != TB_OK ||
        (rc = exec_bound_name(s, "DELETE FROM _tributary_columns WHERE tbl=?1", t->name, err)) != TB_OK)
        return rc;
    for (size_t i = 0; i < s->ntables; i++)
        if (s->tables[i] == t) {
            s->tables[i] = s->tables[--s->ntables];
            break;
        }
    if (s->last_hit == t)
        s->last_hit = NULL;
    cache_table_free(t);
    return TB_OK;
}

tb_code cache_store_add_column(cache_store *s, cache_table *t, const char *name, const char *type,
                               cache_class cls, const char *dflt_sql, tb_error *err)
{
    tb_code rc;
    if ((rc = reserved_column(t->name, name, err)) != TB_OK ||
        (rc = too_many_columns(s, t->name, t->ncols + 1, err)) != TB_OK)
        return rc;
    for (size_t i = 0; i < t->ncols; i++)
        if (sqlite3_stricmp(t->cols[i].name, name) == 0)
            return same_column(t->name, t->cols[i].name, name, err);
    if ((rc = cache_store_flush(s, err)) != TB_OK) /* pending rows: bound for the columns as they were */
        return rc;
    cache_col *nc = realloc(t->cols, (t->ncols + 1) * sizeof(*nc));
    if (!nc)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    t->cols = nc;
    cache_col *c = &t->cols[t->ncols];
    memset(c, 0, sizeof(*c));
    c->name = strdup(name);
    c->type = strdup(type ? type : "");
    c->cls = cls;
    c->scale = -1;
    c->dflt_sql = dflt_sql ? strdup(dflt_sql) : NULL;
    if (!c->name || !c->type || (dflt_sql && !c->dflt_sql)) {
        free(c->name);
        free(c->type);
        free(c->dflt_sql);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    t->ncols++;
    table_reset_stmts(t);
    tb_buf_reset(&s->sql);
    rc = tb_buf_puts(&s->sql, "ALTER TABLE ");
    rc = rc ? rc : cache_quote_ident(&s->sql, t->name);
    rc = rc ? rc : tb_buf_puts(&s->sql, " ADD COLUMN ");
    rc = rc ? rc : cache_quote_ident(&s->sql, name);
    if (rc == TB_OK && *cache_class_decl(cls))
        rc = tb_buf_printf(&s->sql, " %s", cache_class_decl(cls));
    /* SQLite gives the rows already in the table the default (they were written before the
     * source added the column, which filled them with it), and so do later rows without it */
    if (rc == TB_OK && dflt_sql)
        rc = tb_buf_printf(&s->sql, " DEFAULT %s", dflt_sql);
    if (rc != TB_OK)
        return tb_error_set(err, rc, false, "out of memory");
    if ((rc = cache_exec(s, tb_buf_cstr(&s->sql), err)) != TB_OK)
        return tb_error_prefix(err, rc, "table \"%s\": adding column \"%s\": ", t->name, name);
    TB_INFO("cache", "table \"%s\": added column \"%s\" %s%s%s", t->name, name, *c->type ? c->type : "(untyped)",
            dflt_sql ? ", existing rows take its default " : "", dflt_sql ? dflt_sql : "");
    return save_column(s, t, t->ncols - 1, err);
}

tb_code cache_store_update_column(cache_store *s, cache_table *t, size_t i, const char *type,
                                  cache_class cls, tb_error *err)
{
    if (cache_store_flush(s, err) != TB_OK) /* pending rows: bound with the column's class as it was */
        return err ? err->code : TB_ERR_IO;
    char *dup = strdup(type ? type : "");
    if (!dup)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    free(t->cols[i].type);
    t->cols[i].type = dup;
    t->cols[i].cls = cls;
    return save_column(s, t, i, err);
}

tb_code cache_store_rename(cache_store *s, cache_table *t, const char *name, size_t db_len, const char *topic,
                           tb_error *err)
{
    tb_code rc;
    if ((rc = cache_store_flush(s, err)) != TB_OK)
        return rc;
    char *n = NULL, *tp = strdup(topic);
    if ((rc = cache_store_sql_name(s, t, name, &n, err)) != TB_OK) {
        free(tp);
        return rc;
    }
    name = n;
    if (!tp) {
        free(n);
        free(tp);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    table_reset_stmts(t);
    tb_buf_reset(&s->sql);
    rc = tb_buf_puts(&s->sql, "ALTER TABLE ");
    rc = rc ? rc : cache_quote_ident(&s->sql, t->name);
    rc = rc ? rc : tb_buf_puts(&s->sql, " RENAME TO ");
    rc = rc ? rc : cache_quote_ident(&s->sql, name);
    if (rc != TB_OK) {
        free(n);
        free(tp);
        return tb_error_set(err, rc, false, "out of memory");
    }
    if ((rc = cache_exec(s, tb_buf_cstr(&s->sql), err)) != TB_OK ||
        (rc = exec_bound_name(s, "DELETE FROM _tributary_tables WHERE tbl=?1", t->name, err)) != TB_OK) {
        rc = tb_error_prefix(err, rc, "table \"%s\": renaming it to \"%s\": ", t->name, name);
        free(n);
        free(tp);
        return rc;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "UPDATE _tributary_columns SET tbl=?1 WHERE tbl=?2", -1, &st, NULL) != SQLITE_OK) {
        free(n);
        free(tp);
        return sqlite_fail(s, "renaming a table's columns", err);
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sqlite_fail(s, "renaming a table's columns", err);
    sqlite3_finalize(st);
    free(t->name);
    free(t->topic);
    t->name = n;
    t->db_len = db_len;
    t->topic = tp;
    s->last_hit = NULL;
    return rc != TB_OK ? rc : save_table(s, t, err);
}
