#!/usr/bin/env bash
# bench/instr_bench.sh: instructions per row of a `tributary run` catch-up, counted by valgrind's
# callgrind. Not a test.
#
#   bench/instr_bench.sh [RUNS]      (default 3; medians are printed at the end)
#   TB_INSTR_BASELINE=REV bench/instr_bench.sh [RUNS]
#                                    also builds git revision REV (bench_build_rev in bench/lib.sh)
#                                    and runs it and this tree in turn (baseline first in odd
#                                    rounds, second in even ones), then prints the ratio
#                                    this/baseline of each figure
#
# Why: CPU seconds on a shared two-core machine move by 30-60% with the load of the hour
# (bench/RESULTS.md), and this VM has no hardware counters (`perf stat -e instructions` is "not
# supported"). An instruction count does not depend on the load, so a change of 2-3% in the
# per-row cost is visible in one run. It is not time: a cache miss or a lock wait costs no
# instructions, and valgrind runs the threads one at a time, so librdkafka's broker thread,
# which waits on timers and sockets, is timed differently than in a real run. The figure that
# is stable is the run's own thread (the binlog decoding, the rendering, the hand-over to
# librdkafka and its delivery reports); the others are printed for information.
#
# Uses the testenv in the environment (eval "$(scripts/testenv up)") or starts its own. Builds a
# Release tree in build-bench-instr (TB_BENCH_BUILD_DIR). Per run, with a fresh database and
# connector name: the connector takes its (empty) snapshot and stops; TB_INSTR_ROWS rows (default
# 100000) of the 5-column table of bench/e2e_bench.sh are written in 1000-row transactions; the
# connector is started under `valgrind --tool=callgrind --separate-threads=yes` and stopped once
# its committed GTID equals @@gtid_binlog_pos. Offsets are kept in a file and the lease is off:
# under valgrind everything runs ~50x slower, and only the per-row path is measured.
#
# Figures, per row: the run's thread, less the status-file writes (run_write_status, whose count
# follows the wall clock: ~50 times more of them under valgrind than in a real run); the other
# threads (the binlog reader, librdkafka's); the process. Needs valgrind (apt-get install
# valgrind).
# Environment: TB_INSTR_ROWS (100000), TB_INSTR_PROPS (extra properties for the connector, e.g.
# "kafka.compression.type=none"), TB_INSTR_KEEP (a folder: the callgrind files of each run are
# moved there, one a thread, for callgrind_annotate).
set -euo pipefail
runs=${1:-3}
rows=${TB_INSTR_ROWS:-100000}
command -v valgrind >/dev/null || { echo "instr_bench: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_keep_work=1
bench_setup instr
bench_build tributary e2e_load
load=$build/bench/e2e_load


# inclusive instructions of function $2 in callgrind file $1 (0 when it never ran)
incl() {
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
        awk -v f=":$2 " '!found && index($0, f) { gsub(/,/, "", $1); print $1; found = 1 } END { if (!found) print 0 }'
}

# one_run TAG BINARY I: one catch-up of BINARY under callgrind, a line of figures appended to
# $work/results.TAG
one_run() {
    local tag=$1 tb=$2 i=$3
    local name=instrb_$$_${tag}_$i
    local cfg=$work/$name.properties
    { bench_source_props "$name" $((7100 + i)); cat <<PROPS
offsets.storage=file
offsets.file=$work/$name.offsets
ha.enabled=false
status.file=$work/$name.status.json
snapshot.mode=initial
log.level=warn
PROPS
    } > "$cfg"
    for kv in ${TB_INSTR_PROPS:-}; do echo "$kv" >> "$cfg"; done
    "$load" topic "$TRIBUTARY_TEST_KAFKA" "$name.$name.bulk" 1
    mysql_q "CREATE DATABASE $name"
    "$load" bulk "$name" bulk 0 1 >/dev/null
    "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 60
    stop_run
    "$load" bulk "$name" bulk "$rows" 1000 >&2
    local out=$work/$name.cg
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
        "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 3600
    stop_run
    local main=$out-01 total=0 t
    [ -s "$main" ] || { echo "run $i ($tag): no callgrind output $main" >&2; exit 1; }
    for f in "$out"-*; do
        t=$(awk '/^(summary|totals):/ && !t { t = $2 } END { print t + 0 }' "$f")
        total=$((total + t))
    done
    local m status
    m=$(awk '/^(summary|totals):/ && !t { t = $2 } END { print t + 0 }' "$main")
    status=$(incl "$main" run_write_status)
    local own=$((m - status)) others=$((total - m))
    echo "run $i ($tag): $rows rows, run thread $m instructions ($status in status writes), other threads $others" >&2
    awk -v r="$rows" -v a="$own" -v b="$others" -v c="$((total - status))" \
        'BEGIN { printf "%.0f %.0f %.0f\n", a / r, b / r, c / r }' >> "$work/results.$tag"
    if [[ -n "${TB_INSTR_KEEP:-}" ]]; then
        mkdir -p "$TB_INSTR_KEEP"
        mv "$out"-* "$TB_INSTR_KEEP/"
        echo "run $i ($tag): callgrind files in $TB_INSTR_KEEP/$name.cg-*" >&2
    else
        rm -f "$out"-*
    fi
}

bench_tags "${TB_INSTR_BASELINE:-}"
bench_rounds "$runs" one_run

{
for tag in "${tags[@]}"; do
    r="$work/results.$tag"
    what="this tree"
    [[ "$tag" == base ]] && what="baseline $base_rev"
    echo "== tributary run ($what), MariaDB -> Kafka catch-up of $rows rows under callgrind, medians of $runs runs"
    echo "instructions a row (start-up included), run thread less status writes: $(col "$r" 1)"
    echo "instructions a row, other threads:                                        $(col "$r" 2)"
    echo "instructions a row, process (less status writes):                         $(col "$r" 3)"
done
if [[ -n "${TB_INSTR_BASELINE:-}" ]]; then
    echo "== this tree / baseline $base_rev (medians; interleaved, baseline first in odd rounds, second in even ones)"
    bench_ratios 16 "1:run thread" "2:other threads" "3:process"
fi
} | bench_summary instr_bench
bench_ok=1
