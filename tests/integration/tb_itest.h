/*
 * tb_itest.h: small helpers for integration tests that run against scripts/testenv
 * (DESIGN.md 11). Header-only (static inline), for Criterion tests built with tb_add_test;
 * include it as "../integration/tb_itest.h" from other test folders.
 *
 *   tb_itest_env("TRIBUTARY_TEST_KAFKA")   the variable's value; FAILS the test when unset
 *   tb_itest_unique(buf, cap, "prefix")    a name unique to this run (topics, databases)
 *   tb_itest_now_ms()                      monotonic milliseconds, for polling with a deadline
 *   tb_itest_testenv("stop-kafka")         run scripts/testenv <cmd> on this environment
 *                                          (stop-/start-/kill-kafka, -mysql; status); asserts
 *                                          it succeeded. start-* returns once the server answers.
 *   tb_itest_restore_servers()             start whichever server is stopped (scripts/testenv
 *                                          restore): the .fini of every test that stops or kills
 *                                          one, and the suite's .init (a case that timed out ran
 *                                          no .fini)
 *
 * Integration tests never skip: a missing variable is a failure (cr_assert_fail).
 * Tests that stop or restart a server run one executable at a time (integration tests are
 * RUN_SERIAL in ctest), so they do not disturb other integration tests; tests/integration/
 * itest_run.sh, which ctest runs them with, starts a server an earlier test left stopped.
 */
#ifndef TB_ITEST_H
#define TB_ITEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* The value of environment variable name (borrowed from the environment); fails the test when
 * it is unset or empty. */
static inline const char *tb_itest_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        cr_assert_fail("%s is not set: run integration tests under scripts/test, or after "
                       "eval \"$(scripts/testenv up)\"",
                       name);
    return v;
}

/* Write "<prefix>_<pid>_<seconds>_<counter><random>" into out: unique per run and call. */
static inline void tb_itest_unique(char *out, size_t cap, const char *prefix)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned r = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16);
    snprintf(out, cap, "%s_%ld_%ld_%u%05u", prefix, (long)getpid(), (long)ts.tv_sec, counter++,
             r % 100000u);
}

static inline long long tb_itest_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run `scripts/testenv <cmd> $TRIBUTARY_TEST_DIR` and assert that it succeeded. cmd is one of
 * the testenv commands (a fixed word, not user input). Its log goes to the test's stderr. */
static inline void tb_itest_testenv(const char *cmd)
{
    const char *dir = tb_itest_env("TRIBUTARY_TEST_DIR");
    char line[4096];
    int n = snprintf(line, sizeof line, "'%s/scripts/testenv' %s '%s' >&2", TB_SOURCE_DIR, cmd, dir);
    cr_assert(n > 0 && (size_t)n < sizeof line, "testenv command line too long");
    cr_assert(strchr(dir, '\'') == NULL && strchr(cmd, '\'') == NULL, "quote in %s", dir);
    fflush(NULL);
    int st = system(line);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "scripts/testenv %s failed (%d)",
              cmd, st);
}

/* Start whichever server of the environment is not running and wait until it answers; nothing
 * when both run. For a test's .fini (whatever its outcome: an assertion that failed between a
 * stop-* and its start-* leaves the server down otherwise) and a suite's .init. */
static inline void tb_itest_restore_servers(void)
{
    tb_itest_testenv("restore");
}

#endif
