/* Unit tests of tb_file: write-all, whole-file reads and atomic replacement,
 * with their failure paths (read-only folder, full disk, EINTR, a rename that fails). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_file.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tb-file-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    chmod(dir, 0700);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Number of entries in dir (without . and ..). */
static int entries(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void expect_content(const char *path, const char *want)
{
    tb_buf b;
    tb_error err;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_file_read(path, 0, &b, &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(tb_buf_cstr(&b), want);
    tb_buf_free(&b);
}

Test(file, atomic_write_replaces_and_leaves_no_temp)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/offsets", dir);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, "one\n", 4, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(tb_file_write_atomic(path, "second\n", 7, &err), TB_OK, "%s", err.msg);
    expect_content(path, "second\n");
    cr_expect_eq(entries(), 1, "only the file is left in the folder");
    remove_dir();
}

Test(file, mode_is_the_given_mode_less_the_umask)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/state", dir);
    tb_error err;
    mode_t old = umask(0137); /* what file.mode=0640 sets */
    cr_assert_eq(tb_file_write_atomic(path, "x", 1, &err), TB_OK, "%s", err.msg);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0640, "mode %o", st.st_mode & 0777);
    tb_file_replace r;
    cr_assert_eq(tb_file_replace_begin(&r, path, 0600, 0, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(tb_file_replace_commit(&r, false, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "a narrower mode stays: %o", st.st_mode & 0777);
    umask(old);
    remove_dir();
}

Test(file, temporary_names_are_unique_and_abort_removes_them)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/f", dir);
    tb_error err;
    tb_file_replace a, b;
    cr_assert_eq(tb_file_replace_begin(&a, path, 0666, 0, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(tb_file_replace_begin(&b, path, 0666, 0, &err), TB_OK, "%s", err.msg);
    cr_expect_str_neq(a.tmp, b.tmp);
    cr_expect_eq(strncmp(a.tmp, path, strlen(path)), 0, "beside the file: %s", a.tmp);
    cr_expect_eq(entries(), 2);
    /* a stale temporary file of the same name (a crashed writer) is passed over */
    char stale[256];
    snprintf(stale, sizeof(stale), "%s.tmp.%ld.%u", path, (long)getpid(),
             (unsigned)strtoul(strrchr(b.tmp, '.') + 1, NULL, 10) + 1);
    int fd = open(stale, O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    tb_file_replace c;
    cr_assert_eq(tb_file_replace_begin(&c, path, 0666, 0, &err), TB_OK, "%s", err.msg);
    cr_expect_str_neq(c.tmp, stale);
    tb_file_replace_abort(&a);
    tb_file_replace_abort(&b);
    tb_file_replace_abort(&c);
    tb_file_replace_abort(&c); /* twice is harmless */
    cr_expect_eq(entries(), 1, "only the stale file is left");
    remove_dir();
}

Test(file, keep_open_appends_to_the_replaced_file)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/log", dir);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, "old", 3, &err), TB_OK, "%s", err.msg);
    tb_file_replace r;
    cr_assert_eq(tb_file_replace_begin(&r, path, 0600, O_APPEND, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(tb_write_all(r.fd, "new", 3), TB_OK);
    int fd = r.fd;
    cr_assert_eq(tb_file_replace_commit(&r, true, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(r.fd, -1);
    cr_assert_eq(tb_write_all(fd, "+more", 5), TB_OK);
    close(fd);
    expect_content(path, "new+more");
    cr_expect_eq(entries(), 1);
    remove_dir();
}

Test(file, failed_rename_unlinks_the_temporary_file)
{
    make_dir();
    char path[128], inner[160];
    snprintf(path, sizeof(path), "%s/taken", dir);
    snprintf(inner, sizeof(inner), "%s/x", path);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(mkdir(inner, 0700), 0); /* a folder that is not empty cannot be renamed over */
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, "data", 4, &err), TB_ERR_IO);
    cr_expect_not_null(strstr(err.msg, path), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "cannot rename"), "%s", err.msg);
    cr_expect_eq(entries(), 1, "the temporary file is gone");
    remove_dir();
}

/* Runs fn in a child process (it may drop privileges or lower limits) and
 * returns its exit status. */
static int in_child(int (*fn)(const char *), const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(fn(path));
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "child status %d", st);
    return WEXITSTATUS(st);
}

static int write_as_nobody(const char *path)
{
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
        return 10;
    tb_error err;
    tb_code rc = tb_file_write_atomic(path, "new", 3, &err);
    if (rc != TB_ERR_IO)
        return 11;
    if (!strstr(err.msg, path) || !strstr(err.msg, "cannot create the temporary file"))
        return 12;
    return 0;
}

Test(file, read_only_folder_is_an_error_naming_the_file_and_loses_nothing)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/status", dir);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, "old", 3, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(chmod(dir, 0555), 0);
    cr_expect_eq(in_child(write_as_nobody, path), 0);
    expect_content(path, "old");
    cr_expect_eq(entries(), 1);
    remove_dir();
}

static int write_past_the_limit(const char *path)
{
    /* a file size limit stands in for a full disk: write fails with EFBIG */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 10;
    static char big[65536];
    memset(big, 'x', sizeof(big));
    tb_error err;
    tb_code rc = tb_file_write_atomic(path, big, sizeof(big), &err);
    if (rc != TB_ERR_IO)
        return 11;
    if (!strstr(err.msg, path) || !strstr(err.msg, "cannot write"))
        return 12;
    return 0;
}

Test(file, full_disk_is_an_error_and_leaves_the_old_file)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/state", dir);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, "old", 3, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(in_child(write_past_the_limit, path), 0);
    expect_content(path, "old");
    cr_expect_eq(entries(), 1, "the temporary file is unlinked");
    remove_dir();
}

Test(file, write_all_reports_a_full_device)
{
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    errno = 0;
    cr_expect_eq(tb_write_all(fd, "abc", 3), TB_ERR_IO);
    cr_expect_eq(errno, ENOSPC);
    close(fd);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

typedef struct {
    int fd;
    size_t got;
    unsigned long sum;
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    char b[1000];
    ssize_t n;
    while ((n = read(d->fd, b, sizeof(b))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            d->sum = d->sum * 31 + (unsigned char)b[i];
        d->got += (size_t)n;
    }
    return NULL;
}

Test(file, write_all_goes_on_after_signals_and_short_writes)
{
    /* a pipe drained in small reads while a timer interrupts the writer: write()
     * returns short counts and EINTR; every byte must arrive, in order */
    enum { N = 8 << 20 };
    char *data = malloc(N);
    cr_assert_not_null(data);
    unsigned long want = 0;
    for (size_t i = 0; i < N; i++) {
        data[i] = (char)(i * 7 + i / 251);
        want = want * 31 + (unsigned char)data[i];
    }
    int p[2];
    cr_assert_eq(pipe(p), 0);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
    drain d = {p[0], 0, 0};
    pthread_t t;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &block, &old); /* the reader thread does not take the signal */
    cr_assert_eq(pthread_create(&t, NULL, drain_main, &d), 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
    tb_code rc = tb_write_all(p[1], data, N);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    close(p[1]);
    pthread_join(t, NULL);
    close(p[0]);
    cr_expect_eq(rc, TB_OK);
    cr_expect_eq(d.got, (size_t)N);
    cr_expect_eq(d.sum, want);
    cr_expect_gt(alarms, 0, "the timer interrupted the writer");
    free(data);
}

Test(file, read_whole_file_bounded_and_unchanged_on_failure)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof(path), "%s/big", dir);
    size_t n = 200000; /* more than one read */
    char *data = malloc(n);
    cr_assert_not_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (char)('a' + i % 26);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(path, data, n, &err), TB_OK, "%s", err.msg);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_buf_puts(&b, "pre:"), TB_OK);
    cr_assert_eq(tb_file_read(path, 0, &b, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(b.len, n + 4);
    cr_expect_eq(memcmp(b.data + 4, data, n), 0);

    tb_buf_reset(&b);
    cr_assert_eq(tb_buf_puts(&b, "pre:"), TB_OK);
    cr_expect_eq(tb_file_read(path, 100000, &b, &err), TB_ERR_IO);
    cr_expect_not_null(strstr(err.msg, "larger than 100000 bytes"), "%s", err.msg);
    cr_expect_str_eq(tb_buf_cstr(&b), "pre:", "out unchanged on failure");

    tb_buf small;
    tb_buf_init(&small, 1000);
    cr_expect_eq(tb_file_read(path, 0, &small, &err), TB_ERR_NOMEM);
    cr_expect_eq(small.len, 0);
    tb_buf_free(&small);

    cr_expect_eq(tb_file_read(dir, 0, &b, &err), TB_ERR_IO, "a folder cannot be read");
    cr_expect_not_null(strstr(err.msg, dir), "%s", err.msg);
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none", dir);
    cr_expect_eq(tb_file_read(missing, 0, &b, &err), TB_ERR_NOT_FOUND);
    cr_expect_not_null(strstr(err.msg, missing), "%s", err.msg);
    tb_buf_free(&b);
    free(data);
    remove_dir();
}
