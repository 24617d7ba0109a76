/*
 * Helpers shared by the SQLite capture tests and their writer process.
 * Header-only (static functions) so the writer binary needs no test library.
 */
#ifndef SQLCAP_TEST_UTIL_H
#define SQLCAP_TEST_UTIL_H

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Canonical typed text of the current row of st: "i:5|r:0x1.8p+1|t:616263|b:00|n" (sqlite3_free). */
static inline char *sqlcap_test_row_text(sqlite3_stmt *st)
{
    sqlite3_str *s = sqlite3_str_new(NULL);
    int n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        if (i)
            sqlite3_str_appendchar(s, 1, '|');
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: sqlite3_str_appendf(s, "i:%lld", (long long)sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: {
            char b[64];
            snprintf(b, sizeof b, "r:%a", sqlite3_column_double(st, i));
            sqlite3_str_appendall(s, b);
            break;
        }
        case SQLITE_NULL: sqlite3_str_appendall(s, "n"); break;
        default: {
            int blob = sqlite3_column_type(st, i) == SQLITE_BLOB;
            const unsigned char *p = blob ? sqlite3_column_blob(st, i) : sqlite3_column_text(st, i);
            int len = sqlite3_column_bytes(st, i);
            sqlite3_str_appendall(s, blob ? "b:" : "t:");
            for (int k = 0; k < len; k++)
                sqlite3_str_appendf(s, "%02x", p[k]);
        }
        }
    }
    return sqlite3_str_finish(s);
}

/* Exit status of child p (128 + signal when killed). */
static inline int sqlcap_test_wait(pid_t p)
{
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Run sql on db in a child process (its own locks, as an application's
 * connection): its exit status, 0 on success. close_db: close the connection
 * (else the child exits with it open). */
static inline int sqlcap_test_sql_child(const char *db, const char *sql, int close_db)
{
    pid_t p = fork();
    if (p == 0) {
        sqlite3 *h;
        if (sqlite3_open(db, &h) != SQLITE_OK || sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "sql child: %s\n", sqlite3_errmsg(h));
            _exit(1);
        }
        if (close_db)
            sqlite3_close(h);
        _exit(0);
    }
    return p < 0 ? -1 : sqlcap_test_wait(p);
}

#endif
