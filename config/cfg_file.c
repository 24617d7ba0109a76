/* cfg_file: small-file helpers (see cfg_file.h). */
#include "cfg_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFG_FILE_DEFAULT_MAX ((size_t)16 << 20)

static tb_code cfg_file_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return TB_ERR_IO;
        }
        data += n;
        len -= (size_t)n;
    }
    return TB_OK;
}

/* fsync the directory holding path so the rename itself is durable. */
static int cfg_file_sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = NULL;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir)
        return -1;
    int rc = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = -1;
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

tb_code cfg_file_write_atomic(const char *path, const void *data, size_t len, tb_error *err)
{
    tb_code rc = TB_OK;
    int fd = -1;
    char tmp[4096];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return tb_error_set(err, TB_ERR_INVALID, false, "%s: path too long", path);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot create: %s", tmp, strerror(errno));
        goto out;
    }
    if (cfg_file_write_all(fd, data, len) != TB_OK || fsync(fd) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot write: %s", tmp, strerror(errno));
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot close: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot rename %s over it: %s", path, tmp,
                          strerror(errno));
        goto out;
    }
    if (cfg_file_sync_dir(path) != 0)
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot fsync its directory: %s", path,
                          strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (rc != TB_OK)
        unlink(tmp);
    return rc;
}

tb_code cfg_file_read(const char *path, size_t max, tb_buf *out, tb_error *err)
{
    tb_code rc = TB_OK;
    if (max == 0)
        max = CFG_FILE_DEFAULT_MAX;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s: no such file", path);
        return tb_error_set(err, TB_ERR_IO, false, "%s: cannot open: %s", path, strerror(errno));
    }
    size_t total = 0;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        total += n;
        if (total > max) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: larger than %zu bytes", path, max);
            goto out;
        }
        if (tb_buf_append(out, chunk, n) != TB_OK) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory", path);
            goto out;
        }
    }
    if (ferror(f))
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot read: %s", path, strerror(errno));
out:
    fclose(f);
    return rc;
}
