/* tb_file: whole-file reads, write-all, atomic replacement (see tb_file.h). */
#include "tb_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TB_FILE_DEFAULT_MAX ((size_t)16 << 20)

tb_code tb_write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return TB_ERR_IO;
        if (w == 0) {
            errno = EIO;
            return TB_ERR_IO;
        }
        b += w;
        n -= (size_t)w;
    }
    return TB_OK;
}

tb_code tb_file_read(const char *path, size_t max, tb_buf *out, tb_error *err)
{
    if (max == 0)
        max = TB_FILE_DEFAULT_MAX;
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == ENOENT)
            return tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s: no such file", path);
        return tb_error_set(err, TB_ERR_IO, false, "%s: cannot open: %s", path, strerror(errno));
    }
    tb_code rc = TB_OK;
    size_t at = out->len, total = 0;
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        total += (size_t)n;
        if (total > max) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: larger than %zu bytes", path, max);
            break;
        }
        if (tb_buf_append(out, chunk, (size_t)n) != TB_OK) {
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory (%zu bytes read)", path, total);
            break;
        }
    }
    close(fd);
    if (rc != TB_OK && out->data) {
        out->len = at;
        out->data[at] = '\0';
    }
    return rc;
}

/* fsync the folder holding path, so that a rename in it is durable. */
static int tb_file_sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = -1;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    free(dir);
    errno = saved;
    return rc;
}

static _Atomic unsigned tb_file_tmp_seq;

tb_code tb_file_replace_begin(tb_file_replace *r, const char *path, mode_t mode, int extra_flags, tb_error *err)
{
    r->fd = -1;
    r->tmp = NULL;
    r->path = strdup(path);
    size_t cap = strlen(path) + 48;
    r->tmp = malloc(cap);
    if (!r->path || !r->tmp) {
        tb_file_replace_abort(r);
        return tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory", path);
    }
    /* O_EXCL: a name left by a crashed writer of the same pid, or taken by another
     * thread, is passed over */
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned seq = atomic_fetch_add(&tb_file_tmp_seq, 1);
        snprintf(r->tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), seq);
        r->fd = open(r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | extra_flags, mode);
        if (r->fd >= 0)
            return TB_OK;
        if (errno != EEXIST && errno != EINTR)
            break;
    }
    tb_error_set(err, TB_ERR_IO, false, "%s: cannot create the temporary file %s: %s", path, r->tmp,
                 strerror(errno));
    free(r->tmp);
    r->tmp = NULL; /* not created: nothing to unlink */
    tb_file_replace_abort(r);
    return TB_ERR_IO;
}

tb_code tb_file_replace_commit(tb_file_replace *r, bool keep_open, tb_error *err)
{
    tb_code rc = TB_OK;
    if (r->fd < 0 || !r->tmp || !r->path)
        return tb_error_set(err, TB_ERR_STATE, false, "file replacement committed without a temporary file");
    if (fsync(r->fd) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot fsync the temporary file %s: %s", r->path, r->tmp,
                          strerror(errno));
        goto out;
    }
    if (!keep_open) {
        int fd = r->fd;
        r->fd = -1;
        if (close(fd) != 0) {
            rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot close the temporary file %s: %s", r->path,
                              r->tmp, strerror(errno));
            goto out;
        }
    }
    if (rename(r->tmp, r->path) != 0) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot rename %s over it: %s", r->path, r->tmp,
                          strerror(errno));
        goto out;
    }
    free(r->tmp);
    r->tmp = NULL; /* renamed: nothing to unlink from here on */
    if (tb_file_sync_dir(r->path) != 0)
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot fsync its folder: %s", r->path, strerror(errno));
out:
    if (rc == TB_OK && keep_open)
        r->fd = -1; /* the caller's now */
    tb_file_replace_abort(r);
    return rc;
}

void tb_file_replace_abort(tb_file_replace *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (r->tmp)
        unlink(r->tmp);
    free(r->tmp);
    free(r->path);
    r->tmp = r->path = NULL;
}

tb_code tb_file_write_atomic(const char *path, const void *data, size_t len, tb_error *err)
{
    tb_file_replace r;
    tb_code rc = tb_file_replace_begin(&r, path, 0666, 0, err);
    if (rc != TB_OK)
        return rc;
    if (tb_write_all(r.fd, data, len) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_IO, false, "%s: cannot write the temporary file %s: %s", path, r.tmp,
                          strerror(errno));
        tb_file_replace_abort(&r);
        return rc;
    }
    return tb_file_replace_commit(&r, false, err);
}
