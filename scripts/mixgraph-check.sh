#!/usr/bin/env bash
# Checks zkv's mixgraph workload against RocksDB's db_bench (Debian's rocksdb-tools, RocksDB
# 7.8): runs `db_bench --benchmarks=mixgraph` with the parameters of RocksDB's example
# (the FAST'20 paper's appendix) on a fresh database, reads every put back from its WAL
# with `ldb dump_wal`, draws the same workload from zkv's generator
# (crates/bench/examples/mixgraph_check.rs) and runs it with `zkv bench`, then compares:
# the shares of gets, puts and seeks in the two summary lines, the value sizes (mean,
# quantiles, fraction at or below a few sizes), the share of puts in each key range, and,
# when every operation is a put, the skew inside the hottest range (the keys of the power
# law's first seeds). Frequencies must agree within five standard deviations of the two
# samples, the mean value size within five standard errors; the other figures are shown
# side by side.
#
# The WAL shows puts only, so keys and value sizes are compared over the puts of both
# sides. db_bench draws an operation's kind, key and value size from one number, so the
# puts' keys are not distributed as all operations' keys (with the 85/14/1 mix the
# hottest range gets 82.6 % of the puts and 80.7 % of all operations, and the hottest keys
# of a range are never put); the `paper-keys-puts` case, all puts, shows the key
# distribution itself.
#
# Cases: `paper` is RocksDB's example as given (no key_dist_a/b: db_bench then draws
# uniform keys and leaves the key ranges unused); `paper-keys` adds the power law of the
# example's key-range variant (-key_dist_a=0.002312 -key_dist_b=0.3467), which makes the
# key ranges shape the keys; `paper-keys-puts` is that with puts only.
#
# Installs rocksdb-tools with apt-get when db_bench or ldb is missing. Prints each case's
# table, then "mixgraph-check: N passed, M failed"; exits non-zero on any failure.
#
# Environment: MIXGRAPH_CHECK_NUM (key space, default 1000000), MIXGRAPH_CHECK_READS
# (operations per case, default 1000000; half of it for the all-puts case),
# MIXGRAPH_CHECK_CASES (default: paper paper-keys paper-keys-puts).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NUM=${MIXGRAPH_CHECK_NUM:-1000000}
READS=${MIXGRAPH_CHECK_READS:-1000000}
CASES=${MIXGRAPH_CHECK_CASES:-"paper paper-keys paper-keys-puts"}

# RocksDB's example command of mixgraph, less its cache and direct-I/O options.
PAPER=(
  -keyrange_dist_a=14.18 -keyrange_dist_b=-2.917 -keyrange_dist_c=0.0164
  -keyrange_dist_d=-0.08082 -keyrange_num=30 -value_k=0.2615 -value_sigma=25.45
  -iter_k=2.517 -iter_sigma=14.236 -sine_mix_rate_interval_milliseconds=5000 -sine_a=1000
  -sine_b=0.000073 -sine_d=4500 -perf_level=2 -key_size=48
)
MIX=(-mix_get_ratio=0.85 -mix_put_ratio=0.14 -mix_seek_ratio=0.01)
PUTS=(-mix_get_ratio=0 -mix_put_ratio=1 -mix_seek_ratio=0)
KEYS=(-key_dist_a=0.002312 -key_dist_b=0.3467)

log() { echo "mixgraph-check: $*" >&2; }

install_tools() {
  if command -v db_bench >/dev/null && command -v ldb >/dev/null; then
    return
  fi
  log "installing rocksdb-tools"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rocksdb-tools >/dev/null
}

case_params() { # NAME -> the case's db_bench flags, one a line
  case $1 in
    paper) printf '%s\n' "${PAPER[@]}" "${MIX[@]}" "-reads=$READS" ;;
    paper-keys) printf '%s\n' "${PAPER[@]}" "${MIX[@]}" "${KEYS[@]}" "-reads=$READS" ;;
    paper-keys-puts) printf '%s\n' "${PAPER[@]}" "${PUTS[@]}" "${KEYS[@]}" "-reads=$((READS / 2))" ;;
    *) log "unknown case $1"; exit 2 ;;
  esac
  printf '%s\n' "-num=$NUM"
}

# db_bench's flags as zkv bench spells them (-keyrange_num=30 -> --keyrange-num 30); the
# ones that shape no operation are left out.
zkv_flags() {
  local p name
  for p in "$@"; do
    name=${p#-}
    name=${name%%=*}
    case $name in perf_level) continue ;; esac
    printf '%s\n' "--${name//_/-}" "${p#*=}"
  done
}

# db_bench on a fresh database whose memtable holds the whole run, so that the WAL keeps
# every put; then the puts, as "key value_size" lines.
run_db_bench() { # CASE PARAM...
  local name=$1 db
  shift
  db=$(mktemp -d "${TMPDIR:-/tmp}/zkv-mixgraph-XXXXXX")
  db_bench --benchmarks=mixgraph --db="$db" --compression_type=none \
    --write_buffer_size=$((1 << 30)) --seed=1 "$@" >"$WORK/$name.db_bench.txt" 2>&1
  local wal
  wal=$(ls "$db"/*.log)
  ldb dump_wal --walfile="$wal" --print_value | "$CHECK" wal >"$WORK/$name.db_bench.puts"
  rm -rf "$db"
}

run_zkv() { # CASE PARAM...
  local name=$1
  shift
  "$CHECK" draw --seed 1 "$@" >"$WORK/$name.zkv.puts"
  local flags
  mapfile -t flags < <(zkv_flags "$@")
  # The sine flags without --sine-mix-rate change nothing, as in db_bench: zkv says so on
  # stderr, kept in the case's .zkv.err.
  "$ZKV" bench --workload mixgraph --mode deterministic --seed 1 "${flags[@]}" \
    >"$WORK/$name.zkv.txt" 2>"$WORK/$name.zkv.err"
}

main() {
  install_tools
  cargo build -q --release --bin zkv -p zkv
  cargo build -q --release -p zkv-bench --example mixgraph_check
  local target
  target=$(cargo metadata -q --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
  ZKV=$target/release/zkv
  CHECK=$target/release/examples/mixgraph_check
  WORK=$target/mixgraph-check
  mkdir -p "$WORK"
  local passed=0 failed=0 name params
  for name in $CASES; do
    mapfile -t params < <(case_params "$name")
    log "$name: db_bench"
    run_db_bench "$name" "${params[@]}"
    log "$name: zkv"
    run_zkv "$name" "${params[@]}"
    echo "== $name: ${params[*]}"
    "$CHECK" compare "${params[@]}" -- "$WORK/$name.db_bench.puts" "$WORK/$name.zkv.puts" \
      "$WORK/$name.db_bench.txt" "$WORK/$name.zkv.txt" >"$WORK/$name.result.txt" || true
    grep -v '^mixgraph-check:' "$WORK/$name.result.txt"
    local line
    line=$(grep '^mixgraph-check:' "$WORK/$name.result.txt" || echo "mixgraph-check: 0 passed, 1 failed")
    passed=$((passed + $(echo "$line" | sed 's/.*: \([0-9]*\) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')))
  done
  echo "mixgraph-check: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}

main "$@"
