# bench/results.sh: the results table the benchmarks write themselves (sourced, not run; bench/lib.sh
# sources it, and every benchmark under bench/ does, directly or through lib.sh).
#
#   . "$(dirname "${BASH_SOURCE[0]}")/results.sh"   at the top of a benchmark, before its arguments
#                                                   are shifted: it keeps the command line
#   { echo ...; echo ...; } | bench_summary NAME    the benchmark's closing figures (medians and
#                                                   ratios) go to stdout as before, and one row is
#                                                   added to the table in bench/RESULTS.md
#
# A row: the time (UTC), the commit of this tree ("+" when the tree differs from it, bench/RESULTS.md
# aside), the benchmark, the command (with the TB_*, CACHE_BENCH_* and SNAP_* variables it was run
# with), the load average (1, 5 and 15 minutes) as the run ended, and the figures, one line each.
# Newest last, above the marker line. TB_BENCH_RESULTS: another file to write the table into, or 0
# to write none (a trial run).

bench_results_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench_results_cmd="$(
  for v in $(compgen -e | grep -E '^(TB_|CACHE_BENCH_|SNAP_)' | sort); do printf '%s=%q ' "$v" "${!v}"; done
  printf 'bench/%s' "$(basename "$0")"
  for a in "$@"; do printf ' %q' "$a"; done
)"

# The row's cell text: pipes escaped, lines joined with <br>.
bench_results_cell() { sed -e 's/|/\\|/g' | awk 'NF { printf "%s%s", (n++ ? "<br>" : ""), $0 }'; }

bench_summary() {
  local name="$1" out file rev dirty
  out="$(cat)"
  printf '%s\n' "$out"
  file="${TB_BENCH_RESULTS:-$bench_results_root/bench/RESULTS.md}"
  [[ "$file" == 0 ]] && return 0
  rev="$(git -C "$bench_results_root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  dirty="$(git -C "$bench_results_root" status --porcelain --untracked-files=no -- . ':!bench/RESULTS.md' 2>/dev/null)"
  [[ -n "$dirty" ]] && rev="$rev+"
  local row
  row="| $(date -u '+%Y-%m-%d %H:%M') | $rev | $name | \`$(printf '%s' "$bench_results_cmd" | bench_results_cell)\` |"
  row+=" $(cut -d' ' -f1-3 /proc/loadavg) | $(printf '%s\n' "$out" | bench_results_cell) |"
  BENCH_ROW="$row" python3 - "$file" <<'PY'
import os, sys
path, row = sys.argv[1], os.environ["BENCH_ROW"]
marker = "<!-- bench/results.sh adds rows above this line -->"
head = ("## Results table\n\nWritten by the benchmarks themselves (bench/results.sh): one row a run, newest last.\n\n"
        "| when (UTC) | commit | benchmark | command | load 1/5/15 min | figures |\n|---|---|---|---|---|---|\n")
try:
    text = open(path).read()
except FileNotFoundError:
    text = "# Benchmark results\n\n"
if marker not in text:
    text = text.rstrip("\n") + "\n\n" + head + marker + "\n"
text = text.replace(marker, row + "\n" + marker, 1)
open(path, "w").write(text)
PY
  echo "bench_summary: a row for $name added to $file" >&2
}
