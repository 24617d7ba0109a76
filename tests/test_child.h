/*
 * test_child: for a process a test forks to run tributary (or a writer) beside it.
 *
 *   pid_t parent = getpid();
 *   pid_t pid = fork();
 *   if (pid == 0) {
 *       tb_test_child_dies_with(parent);   // first thing in the child
 *       ...exec...
 *   }
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
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

static inline void tb_test_child_dies_with(pid_t parent)
{
    /* the parent may have ended between fork and prctl: then nothing would signal us */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
}

#endif
