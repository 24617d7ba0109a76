/*
 * tb_file: the one place for whole-file reads, write-all loops and the
 * atomic replacement of a file.
 *
 * Atomic replacement (the offsets file, the status file, the incremental-snapshot
 * state, the SQLite shadow's .pos and .pend):
 *
 *   tb_file_replace r;
 *   if (tb_file_replace_begin(&r, path, 0666, 0, err) != TB_OK) return ...;
 *   ... write r.fd (tb_write_all) ...
 *   rc = tb_file_replace_commit(&r, false, err);   // or tb_file_replace_abort(&r)
 *
 * begin creates a temporary file with a name no other writer uses,
 * "<path>.tmp.<pid>.<n>" in the folder of path (O_EXCL, so two processes or two
 * threads replacing the same file never share one); commit fsyncs it, renames it
 * over path and fsyncs the folder, so a reader, or a restart after a crash, sees
 * the old content or the new one, never a torn file. On any failure (and on
 * abort) the temporary file is closed and unlinked and path is left as it was.
 *
 * File mode: files are created with `mode` less the process umask. The command
 * sets the umask from file.mode (0600 by default, widened on purpose; DESIGN 10
 * "Files"), so 0666 gives what file.mode allows; a narrower mode (0600) keeps a
 * file private whatever file.mode says (nothing in tributary does that).
 *
 * Errors are TB_ERR_IO (TB_ERR_NOMEM for memory), not retriable, and name the path.
 */
#ifndef TB_FILE_H
#define TB_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tb_buf.h"
#include "tb_error.h"

/* Write all n bytes of p to fd, going on after EINTR and short writes.
 * TB_OK, or TB_ERR_IO with errno set (a write that writes nothing is EIO).
 * Async-signal-safe: usable from a signal handler. */
TB_MUST_USE tb_code tb_write_all(int fd, const void *p, size_t n);

/* Append the whole content of path to out: at most max bytes (0 = 16 MiB).
 * TB_ERR_NOT_FOUND when the file does not exist, TB_ERR_IO when it cannot be
 * read or is larger than max, TB_ERR_NOMEM when out cannot hold it. On failure
 * out holds what it held before. */
TB_MUST_USE tb_code tb_file_read(const char *path, size_t max, tb_buf *out, tb_error *err);

typedef struct tb_file_replace {
    int fd;     /* the temporary file, open for writing; -1 when none */
    char *tmp;  /* its name (owned) */
    char *path; /* the file it replaces (owned) */
} tb_file_replace;

/* Create the temporary file for replacing path: mode (less the umask), opened
 * O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | extra_flags (e.g. O_APPEND). On
 * failure r needs no abort. */
TB_MUST_USE tb_code tb_file_replace_begin(tb_file_replace *r, const char *path, mode_t mode, int extra_flags, tb_error *err);

/* fsync the temporary file, rename it over path, fsync the folder. keep_open:
 * r->fd stays open (now the file at path) and the caller closes it; otherwise it
 * is closed. On failure the temporary file is gone and r->fd is closed. Either
 * way r holds nothing more to free (abort is a no-op after it). */
TB_MUST_USE tb_code tb_file_replace_commit(tb_file_replace *r, bool keep_open, tb_error *err);

/* Close and unlink the temporary file. Safe after a failed begin or a commit. */
void tb_file_replace_abort(tb_file_replace *r);

/* Replace path with len bytes of data (begin, write, commit with mode 0666). */
TB_MUST_USE tb_code tb_file_write_atomic(const char *path, const void *data, size_t len, tb_error *err);

#endif
