/* Run the built `tributary` binary and capture its exit status, stdout and stderr. */
#ifndef TESTS_APP_RUN_UTIL_H
#define TESTS_APP_RUN_UTIL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_cast.h"
#include "tb_buf.h"
#include "tb_file.h"

#define TRIBUTARY_BIN TB_BINARY_DIR "/app/tributary"

extern char **environ;

typedef struct run_result {
    int status;  /* exit code, or -1 if killed */
    tb_buf out;  /* stdout */
    tb_buf err;  /* stderr */
} run_result;

static void run_result_free(run_result *r)
{
    tb_buf_free(&r->out);
    tb_buf_free(&r->err);
}

static void run_slurp(const char *path, tb_buf *b)
{
    tb_error err;
    cr_assert_eq(tb_file_read(path, SIZE_MAX, b, &err), TB_OK, "%s", err.msg);
    tb_buf_putc(b, '\0');
    b->len--; /* keep a terminator even when empty */
}

/* Run tributary with args (NULL-terminated) and extra environment entries
 * (NULL-terminated, may be NULL). TRIBUTARY_* variables of the test's own
 * environment other than TRIBUTARY_TEST_* are not passed on. */
static run_result run_tributary(const char *const *args, const char *const *extra_env)
{
    run_result r;
    tb_buf_init(&r.out, 0);
    tb_buf_init(&r.err, 0);
    char outp[] = "/tmp/tb-run-out-XXXXXX", errp[] = "/tmp/tb-run-err-XXXXXX";
    int ofd = mkstemp(outp), efd = mkstemp(errp);
    cr_assert(ofd >= 0 && efd >= 0);

    size_t nargs = 0, nenv = 0, nextra = 0;
    while (args[nargs])
        nargs++;
    while (environ[nenv])
        nenv++;
    while (extra_env && extra_env[nextra])
        nextra++;
    char **argv = calloc(nargs + 2, sizeof(char *));
    char **envp = calloc(nenv + nextra + 1, sizeof(char *));
    cr_assert(argv && envp);
    argv[0] = TB_UNCONST(TRIBUTARY_BIN); /* execv does not write its arguments */
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = TB_UNCONST(args[i]);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "TRIBUTARY_", 10) != 0 || strncmp(environ[i], "TRIBUTARY_TEST_", 15) == 0)
            envp[k++] = environ[i];
    for (size_t i = 0; i < nextra; i++)
        envp[k++] = TB_UNCONST(extra_env[i]);

    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(ofd, 1);
        dup2(efd, 2);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execve(TRIBUTARY_BIN, argv, envp);
        _exit(127);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    close(ofd);
    close(efd);
    run_slurp(outp, &r.out);
    run_slurp(errp, &r.err);
    unlink(outp);
    unlink(errp);
    free(argv);
    free(envp);
    return r;
}

/* Number of '\n' in s. */
static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#endif
