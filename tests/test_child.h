/*
 * test_child: fork a process that runs beside a test (tributary, a writer) and dies with it.
 *
 *   pid_t pid = tb_test_fork();       // fflush(NULL), then fork
 *   cr_assert_geq(pid, 0);
 *   if (pid == 0) { ...exec or work...; _exit(0); }
 *
 * The child gets SIGKILL as soon as the test process ends, however it ends: a crash, Criterion's
 * kill at a timeout, or a test binary run by hand outside ctest (whose wrapper kills the test's
 * process group, tests/integration/itest_run.sh). Without it, a crashed test leaves its
 * connectors running, writing to the test servers and holding their leases. The death signal
 * follows the thread that forked: fork only from the test's own thread (Criterion runs a test's
 * body in its worker's main thread), never from a helper thread that ends before the child.
 */
#ifndef TB_TEST_CHILD_H
#define TB_TEST_CHILD_H

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

static inline pid_t tb_test_fork(void)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    /* the parent may have ended between fork and prctl: then nothing would signal the child */
    if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
        _exit(127);
    return pid;
}

#endif
