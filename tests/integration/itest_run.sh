#!/usr/bin/env bash
# itest_run.sh SOURCE_DIR COMMAND [ARGS...]: how ctest runs every integration test (tb_add_test
# and tb_add_test_run in tests/CMakeLists.txt).
#
# Before the test, a server of the environment that is not running (an earlier test stopped or
# killed it and then failed, or timed out, before it restarted it) is started again
# (scripts/testenv restore), so that one failure never takes the tests after it down with it.
# After the test, a server left stopped fails the test, naming it (the test's teardown must
# restart what it stopped), and is started again; anything the test left running is killed. Without TRIBUTARY_TEST_DIR the command runs
# as is (integration tests then fail, naming the variable).
set -u
src="$1"
shift
name="$(basename "$1")"
dir="${TRIBUTARY_TEST_DIR:-}"
testenv="$src/scripts/testenv"

if [[ -n "$dir" && -d "$dir" ]] && ! st="$("$testenv" status "$dir" 2>&1)"; then
  echo "itest_run: before $name: $(printf '%s' "$st" | grep stopped | tr '\n' ' ')(an earlier test left it stopped): starting it" >&2
  if ! "$testenv" restore "$dir"; then
    echo "itest_run: $name not run: the test servers cannot be started again (scripts/testenv restore $dir failed)" >&2
    exit 1
  fi
fi

# The test runs in a process group of its own, killed as a whole once the test ends: a test that
# timed out (Criterion kills its worker) leaves the tributary processes it started, which hold
# ctest's output pipe open, so ctest would wait for them for ever instead of going on.
setsid "$@" &
pid=$!
trap 'kill -KILL -- "-$pid" 2>/dev/null; exit 143' TERM INT
wait "$pid"
rc=$?
kill -KILL -- "-$pid" 2>/dev/null || true
trap - TERM INT

if [[ -n "$dir" && -d "$dir" ]] && ! st="$("$testenv" status "$dir" 2>&1)"; then
  echo "itest_run: FAIL: $name left a test server stopped: $(printf '%s' "$st" | grep stopped | tr '\n' ' ')(its teardown must start what it stopped: tb_itest_restore_servers); starting it" >&2
  "$testenv" restore "$dir" || true
  ((rc == 0)) && rc=1
fi
exit "$rc"
