/*
 * Helpers shared by the SQLite capture tests and their writer process.
 * Header-only (static functions) so the writer binary needs no test library.
 */
#ifndef SQLCAP_TEST_UTIL_H
#define SQLCAP_TEST_UTIL_H

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

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

#endif
