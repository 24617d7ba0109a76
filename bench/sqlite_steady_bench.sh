#!/usr/bin/env bash
# bench/sqlite_steady_bench.sh: a steady SQLite application (bench/sqlite_app.py: Python's sqlite3,
# busy timeout 5 s, default autocheckpoint, RATE tx/s of 1-4 rows, one in ten with a 3-20 KB value)
# for SECONDS, without and with `tributary run` attached (default settings: shadow copy, bounded
# WAL; sink=stdout to /dev/null, offsets in a file), RUNS times alternating. Prints each run and
# the medians: largest WAL, writer wall time per transaction, writer CPU, p99 commit latency,
# errors the application saw.
#
#   bench/sqlite_steady_bench.sh [SECONDS=90] [RUNS=3] [RATE=100]
# RATE 0: the unpaced writer (bench/sqlite_app.py: BEGIN IMMEDIATE transactions of 1-8 statements,
# values up to 29 kB, wal_autocheckpoint=300, no pause).
# TB_BENCH_HOG=1: a CPU hog keeps both cores busy while each run's writer runs (scripts/cpu-hog:
# one busy loop per core, started before the writer and stopped after it; each loop also ends by
# itself after SECONDS+30 s).
# TB_BENCH_BUILD_DIR: a build with app/tributary (default build-bench-sqlite, built Release here).
set -euo pipefail
secs="${1:-90}" runs="${2:-3}" rate="${3:-100}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/results.sh
. "$root/bench/results.sh"
build="${TB_BENCH_BUILD_DIR:-$root/build-bench-sqlite}"
if [[ ! -x "$build/app/tributary" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target tributary >/dev/null
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/sqlite-steady.XXXXXX")"
cpid=""
hog=()
[[ "${TB_BENCH_HOG:-0}" == 1 ]] && hog=("$root/scripts/cpu-hog" --seconds "$((secs + 30))")
cleanup() { [[ -n "$cpid" ]] && kill "$cpid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
results="$work/results.jsonl"
one() { # mode run
  local mode=$1 d="$work/$1-$2"
  mkdir -p "$d"
  python3 -c "import sqlite3; c=sqlite3.connect('$d/app.db'); c.execute('PRAGMA journal_mode=WAL'); c.close()"
  sync
  if [[ $mode == connector ]]; then
    "$build/app/tributary" run --set name=steady --set source.type=sqlite --set "source.path=$d/app.db" \
      --set sink=stdout --set offsets.storage=file --set "offsets.file=$d/offsets" >/dev/null 2>"$d/run.log" &
    cpid=$!
    for _ in $(seq 1 200); do [[ -s "$d/offsets" ]] && break; sleep 0.05; done # attached: start position stored
  fi
  "${hog[@]}" python3 "$root/bench/sqlite_app.py" "$d/app.db" "$secs" "$rate" >"$d/app.json" 2>"$d/app.err"
  if [[ -n "$cpid" ]]; then
    kill -TERM "$cpid"; wait "$cpid" || true; cpid=""
    # what the connector said about the WAL (resets it could not make, and why)
    grep -E "WARN|ERROR" "$d/run.log" | head -n 5 >&2 || true
  fi
  python3 -c "import json,sys; r=json.load(open('$d/app.json')); r['mode']='$mode'; r['run']=$2; print(json.dumps(r))" >>"$results"
  tail -n 1 "$results"
  rm -rf "$d"
}
for r in $(seq 1 "$runs"); do
  if (( r % 2 )); then one none "$r"; one connector "$r"; else one connector "$r"; one none "$r"; fi
done
{
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("medians over %d runs each (load average %s):" % (len(rows) // 2, " ".join(open("/proc/loadavg").read().split()[:3])))
for mode in ("none", "connector"):
    rs = [r for r in rows if r["mode"] == mode]
    m = lambda k: statistics.median(r[k] for r in rs)
    print("  %-9s largest WAL %.1f MB (runs: %s), wall/tx %.0f us, writer CPU %.2f s, p50 %.2f ms, p99 %.2f ms, "
          "max %.1f ms, errors %d, tx %d" % (mode, m("wal_max_bytes") / 1e6,
                                             " ".join("%.1f" % (r["wal_max_bytes"] / 1e6) for r in rs),
                                             m("wall_per_tx_us"), m("cpu_s"), m("p50_ms"), m("p99_ms"),
                                             max(r["max_ms"] for r in rs), sum(r["errors"] for r in rs), m("tx")))
PY
} | bench_summary "sqlite_steady_bench (rate $rate tx/s, hog ${TB_BENCH_HOG:-0})"
