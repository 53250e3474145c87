#!/usr/bin/env bash
# Fidelity check of zkv's leveled compaction against RocksDB's: runs the same workloads with
# the same settings on RocksDB's db_bench (Debian's rocksdb-tools, RocksDB 7.8, on tmpfs) and on
# `zkv bench` (threaded mode, in-memory zoned device), and prints both compaction stats tables
# and the write amplification side by side.
#
# Usage: scripts/fidelity.sh [OUT_DIR]     (default target/fidelity)
# Environment: FIDELITY_NUM (keys per workload, default 2000000), FIDELITY_CASES (default all:
#   fillrandom-sica fillrandom-minov overwrite-sica overwrite-minov).
#
# Settings: 16 B keys; fillrandom with 1000 B values (then readrandom in the min-overlap case),
# or fillseq then overwrite with 128 B values; write_buffer_size 8 MiB, target_file_size_base 8 MiB,
# max_bytes_for_level_base 32 MiB, multiplier 10, L0 trigger 4, no compression, no WAL, bloom 10
# bits; compaction_pri kByCompensatedSize (zkv `sica`) and kMinOverlappingRatio (`min-overlap`).
# Both engines wait for background compaction before the final statistics.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/target/fidelity}
NUM=${FIDELITY_NUM:-2000000}
CASES=${FIDELITY_CASES:-"fillrandom-sica fillrandom-minov overwrite-sica overwrite-minov"}
MIB=$((1 << 20))
mkdir -p "$OUT"
: >"$OUT/summary.txt"

# db_bench from rocksdb-tools, GNU time for the -v resource report.
missing=()
command -v db_bench >/dev/null || missing+=(rocksdb-tools)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
  echo "fidelity: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
(cd "$ROOT" && cargo build -q --release --bin zkv)
# The binary just built, wherever cargo's target directory is configured.
TARGET=$(cd "$ROOT" && cargo metadata -q --format-version 1 --no-deps |
  grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
ZKV=$TARGET/release/zkv

case_params() { # NAME -> "benchmarks value_size rocksdb_pri zkv_picker"
  case $1 in
    fillrandom-sica) echo "fillrandom 1000 0 sica" ;;
    fillrandom-minov) echo "fillrandom,readrandom 1000 3 min-overlap" ;;
    overwrite-sica) echo "fillseq,overwrite 128 0 sica" ;;
    overwrite-minov) echo "fillseq,overwrite 128 3 min-overlap" ;;
    *) echo "fidelity: unknown case $1" >&2; exit 2 ;;
  esac
}

run_rocksdb() { # NAME BENCHES VALUE_SIZE PRI
  local db=/dev/shm/zkv-fidelity-$1
  rm -rf "$db"
  /usr/bin/time -v db_bench --benchmarks="$2,waitforcompaction,stats" --num="$NUM" --key_size=16 \
    --value_size="$3" --write_buffer_size=$((8 * MIB)) --target_file_size_base=$((8 * MIB)) \
    --max_bytes_for_level_base=$((32 * MIB)) --max_bytes_for_level_multiplier=10 \
    --level0_file_num_compaction_trigger=4 --compression_type=none --disable_wal=1 \
    --compaction_pri="$4" --bloom_bits=10 --seed=1 --db="$db" >"$OUT/$1.rocksdb.txt" 2>&1
  rm -rf "$db"
}

run_zkv() { # NAME BENCHES VALUE_SIZE PICKER
  /usr/bin/time -v "$ZKV" bench --workload "$2" --num "$NUM" --key-size 16 --value-size "$3" \
    --write-buffer-size 8MiB --target-file-size-base 8MiB --max-bytes-for-level-base 32MiB \
    --max-bytes-for-level-multiplier 10 --level0-file-num-compaction-trigger 4 --disable-wal \
    --bloom-bits 10 --picker "$4" --mode threaded --wait-for-compaction --seed 1 \
    --device mem --zones 160 --zone-size 64MiB --json "$OUT/$1.zkv.json" >"$OUT/$1.zkv.txt" 2>&1
}

for c in $CASES; do
  # A separate assignment, so that set -e stops on an unknown case.
  params=$(case_params "$c")
  read -r benches vs pri picker <<<"$params"
  echo "== $c: RocksDB db_bench" >&2
  run_rocksdb "$c" "$benches" "$vs" "$pri"
  echo "== $c: zkv bench" >&2
  run_zkv "$c" "$benches" "$vs" "$picker"
  {
    echo "### $c"
    echo "RocksDB 7.8:"
    grep -E 'micros/op|^ *(Level|L[0-9]|Sum) ' "$OUT/$c.rocksdb.txt" | cut -c1-130
    echo "zkv:"
    grep -E 'micros/op|^ *(Level|L[0-9]|Sum) ' "$OUT/$c.zkv.txt" | cut -c1-130
    echo
  } | tee -a "$OUT/summary.txt"
done
