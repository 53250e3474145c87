#!/usr/bin/env bash
# Rebuilds the tables and charts of docs/results/NAME from the run reports kept there
# (runs.tar.xz), without running anything, and checks that they are the ones committed.
#
#   bash scripts/rebuild-results.sh [NAME ...]    # default: every results directory
#
# Each rebuild untars the reports into a new directory and runs the `zkv repro` command
# that made them with --resume: every run is reused, so it takes seconds. The rebuilt
# README.md, summary.json and SVG charts stay in that directory (printed at the end);
# its tables are compared with the committed README.md's.
set -euo pipefail
cd "$(dirname "$0")/.."

# NAME -> the experiment and the flags its reports were made with.
declare -A COMMAND=(
  [caza22]="caza22 --repeat 3"
  [samezone24]="samezone24 --repeat 3"
  [caza22-unhalved]="caza22 --modes deterministic -- --num 18641350"
  [zone-drain]="zone-drain --modes deterministic"
  [prophet24-quick]="prophet24 --quick -- --sim-cost spread_outputs=0"
  [prophet24]="prophet24 -- --sim-cost spread_outputs=0"
  [samevictim24]="samevictim24 --repeat 3 -- --sim-cost spread_outputs=0"
)

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(caza22 samezone24 caza22-unhalved zone-drain prophet24-quick prophet24 samevictim24)

cargo build --release --quiet
zkv=$PWD/target/release/zkv
status=0
for name in "${names[@]}"; do
  [ -n "${COMMAND[$name]:-}" ] || { echo "unknown results directory: $name" >&2; exit 2; }
  read -r -a words <<< "${COMMAND[$name]}"
  experiment=${words[0]}
  rest=("${words[@]:1}")
  extra=()
  for i in "${!rest[@]}"; do
    if [ "${rest[$i]}" = "--" ]; then extra=("${rest[@]:$i}"); rest=("${rest[@]:0:$i}"); break; fi
  done
  out=$(mktemp -d "${TMPDIR:-/tmp}/zkv-results-$name.XXXX")
  tar -xJf "docs/results/$name/runs.tar.xz" -C "$out"
  "$zkv" repro "$experiment" "${rest[@]}" --resume --out "$out" "${extra[@]}" > "$out/stdout.txt" 2> "$out/stderr.txt"
  if grep -q ' s, ok\| s, FAILED' "$out/stderr.txt"; then
    echo "$name: some runs were run, not reused (see $out/stderr.txt)" >&2
    status=1
  fi
  # The tables: README.md without its command line (which has the time) and its list of
  # runs (which has each run's time).
  tables() { sed -e '3d' -e '/^## Runs$/,$d' "$1"; }
  if diff <(tables "$out/README.md") <(tables "docs/results/$name/README.md") > "$out/tables.diff"; then
    echo "$name: rebuilt in $out, the same tables as committed"
  else
    echo "$name: rebuilt in $out, tables DIFFER from docs/results/$name/README.md ($out/tables.diff)" >&2
    status=1
  fi
done
exit $status
