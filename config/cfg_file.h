/*
 * cfg_file: reading and atomically replacing the small files that
 * configuration keys name (offsets.file, status.file, *.password.file).
 *
 * cfg_file_write_atomic() writes to "<path>.tmp.<pid>" in the same directory,
 * fsyncs it, renames it over path and fsyncs the directory, so a reader (or a
 * restart after a crash) sees either the old content or the new one, never a
 * torn file.
 */
#ifndef CFG_FILE_H
#define CFG_FILE_H

#include <stddef.h>
#include "tb_buf.h"
#include "tb_error.h"

/* Replace path with len bytes of data. Errors (TB_ERR_IO) name the path. */
tb_code cfg_file_write_atomic(const char *path, const void *data, size_t len, tb_error *err);

/* Append the whole content of path to out (at most max bytes, 0 = 16 MiB).
 * TB_ERR_NOT_FOUND when the file does not exist, TB_ERR_IO otherwise. */
tb_code cfg_file_read(const char *path, size_t max, tb_buf *out, tb_error *err);

#endif
