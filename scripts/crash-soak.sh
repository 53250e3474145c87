#!/usr/bin/env bash
# Crash soak: the crash harness (crates/stress, docs/RELIABILITY.md "Crash harness") built
# in release and run for HOURS hours over every crash kind (process kills, power cuts,
# emulator kill points), both WAL modes and both execution modes. Prints a progress line
# periodically and the totals at the end; exits non-zero on any lost acknowledged write,
# resurrected delete, non-prefix state or other failure.
#
# Usage: scripts/crash-soak.sh HOURS [zkv-stress flags]
#   scripts/crash-soak.sh 8
#   scripts/crash-soak.sh 0.5 --seed 42 --kinds kill,power --dir /var/tmp/soak --jobs 4
# Without --seed a random seed is used (printed first: pass it again to replay the same
# workloads and crash points; threaded runs still differ in thread timing). Without --dir
# the stores live in a temporary directory, removed after a clean run and kept (and
# named) after a failure, with the images and the last child's log and stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

hours=${1:?usage: scripts/crash-soak.sh HOURS [zkv-stress flags]}
shift

has_flag() {
    local flag=$1
    shift
    for arg in "$@"; do
        [[ $arg == "$flag" || $arg == "$flag="* ]] && return 0
    done
    return 1
}

extra=()
if ! has_flag --seed "$@"; then
    seed=$(( (RANDOM << 15 | RANDOM) % 1000000 ))
    extra+=(--seed "$seed")
    echo "seed=$seed"
fi
tmp=""
if ! has_flag --dir "$@"; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkv-soak.XXXXXX")
    extra+=(--dir "$tmp")
fi
if ! has_flag --progress "$@"; then
    # About 20 progress lines per run, at most one a minute, at least every 5 s.
    every=$(awk -v h="$hours" 'BEGIN { s = h * 3600 / 20; if (s > 60) s = 60; if (s < 5) s = 5; printf "%d", s }')
    extra+=(--progress "$every")
fi

cargo build --release -p zkv-stress
status=0
target/release/zkv-stress --hours "$hours" "${extra[@]}" "$@" || status=$?
if [[ -n $tmp ]]; then
    if [[ $status -eq 0 ]]; then
        rm -rf "$tmp"
    else
        echo "crash-soak: failed (exit $status); stores kept in $tmp" >&2
    fi
fi
exit "$status"
