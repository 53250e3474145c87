#!/usr/bin/env bash
# Fidelity check of zkv's leveled compaction against RocksDB's: runs the same workloads with
# the same settings on RocksDB's db_bench (Debian's rocksdb-tools, RocksDB 7.8, on tmpfs) and on
# `zkv bench` in both execution modes (threaded, and deterministic: the simulation on a virtual
# clock), in-memory zoned device, and prints the compaction stats tables and a W-Amp table with
# the three side by side.
#
# Usage: scripts/fidelity.sh [OUT_DIR]     (default target/fidelity)
# Environment:
#   FIDELITY_CASES  default: fillrandom-sica fillrandom-minov overwrite-sica overwrite-minov
#                   fillrandom-sica-rl20 overwrite-sica-rl20 (the -rl20 cases pace writes to
#                   20 MB/s: db_bench --benchmark_write_rate_limit, zkv
#                   --benchmark-write-rate-limit)
#   FIDELITY_SCALE  full (default): 2,000,000 keys, 8 MiB memtables and SSTs, 32 MiB L1;
#                   small: 200,000 keys, 2 MiB memtables and SSTs, 8 MiB L1 (the scale of the
#                   test suite's recorded comparison, tests/fidelity.rs; with 1 MiB memtables
#                   RocksDB's writer fills a second memtable before its flush starts in up to
#                   a quarter of its flushes, a thread-timing effect the comparison avoids)
#   FIDELITY_RUNS   runs of each engine and case (default 1); the W-Amp table gives the median
#   FIDELITY_MODES  zkv modes (default: threaded deterministic)
#   FIDELITY_BLOB_CASES  BlobDB cases (default: blob-fillrandom-1k blob-overwrite-1k
#                   blob-fillrandom-8k blob-overwrite-8k-paper, the last with the
#                   Same-Victim paper's threads: 2 flushes, 2 compactions, 4
#                   subcompactions; "" for none): the same settings with every value in
#                   blob files (min_blob_size 512, blob files of the buffer size) and blob
#                   garbage collection (age cutoff 0.25), 800 MB of values at full scale (80
#                   MB small); the blob table compares blob file bytes written and blobs
#                   relocated (RocksDB's statistics, zkv's report)
#
# Settings: 16 B keys; fillrandom with 1000 B values (then readrandom in the min-overlap case),
# or fillseq then overwrite with 128 B values; multiplier 10, L0 trigger 4, no compression, no
# WAL, bloom 10 bits; compaction_pri kByCompensatedSize (zkv `sica`) and kMinOverlappingRatio
# (`min-overlap`); one flush and one compaction thread (RocksDB's max_background_jobs 2). Both
# engines wait for background compaction before the final statistics.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/target/fidelity}
CASES=${FIDELITY_CASES:-"fillrandom-sica fillrandom-minov overwrite-sica overwrite-minov fillrandom-sica-rl20 overwrite-sica-rl20"}
RUNS=${FIDELITY_RUNS:-1}
MODES=${FIDELITY_MODES:-"threaded deterministic"}
MIB=$((1 << 20))
case ${FIDELITY_SCALE:-full} in
  full) NUM=2000000 BUF=$((8 * MIB)) L1=$((32 * MIB)) ;;
  small) NUM=200000 BUF=$((2 * MIB)) L1=$((8 * MIB)) ;;
  *) echo "fidelity: FIDELITY_SCALE is full or small" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
: >"$OUT/summary.txt"

# db_bench from rocksdb-tools, GNU time for the -v resource report.
"$ROOT/scripts/install-db-bench.sh" --time
(cd "$ROOT" && cargo build -q --release --bin zkv)
# The binary just built, wherever cargo's target directory is configured.
TARGET=$(cd "$ROOT" && cargo metadata -q --format-version 1 --no-deps |
  grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
ZKV=$TARGET/release/zkv

case_params() { # NAME -> "benchmarks value_size rocksdb_pri zkv_picker write_rate"
  case $1 in
    fillrandom-sica) echo "fillrandom 1000 0 sica 0" ;;
    fillrandom-minov) echo "fillrandom,readrandom 1000 3 min-overlap 0" ;;
    overwrite-sica) echo "fillseq,overwrite 128 0 sica 0" ;;
    overwrite-minov) echo "fillseq,overwrite 128 3 min-overlap 0" ;;
    fillrandom-sica-rl20) echo "fillrandom 1000 0 sica 20000000" ;;
    overwrite-sica-rl20) echo "fillseq,overwrite 128 0 sica 20000000" ;;
    *) echo "fidelity: unknown case $1" >&2; exit 2 ;;
  esac
}

run_rocksdb() { # OUT_FILE BENCHES VALUE_SIZE PRI RATE [NUM [EXTRA FLAGS...]]
  local db=/dev/shm/zkv-fidelity-$$
  local rate=()
  [ "$5" = 0 ] || rate=(--benchmark_write_rate_limit="$5")
  local num=${6:-$NUM}
  local extra=("${@:7}")
  rm -rf "$db"
  /usr/bin/time -v db_bench --benchmarks="$2,waitforcompaction,stats" --num="$num" --key_size=16 \
    --value_size="$3" --write_buffer_size="$BUF" --target_file_size_base="$BUF" \
    --max_bytes_for_level_base="$L1" --max_bytes_for_level_multiplier=10 \
    --level0_file_num_compaction_trigger=4 --compression_type=none --disable_wal=1 \
    --compaction_pri="$4" --bloom_bits=10 --seed=1 --db="$db" "${rate[@]}" "${extra[@]}" >"$1" 2>&1
  rm -rf "$db"
}

run_zkv() { # OUT_FILE BENCHES VALUE_SIZE PICKER RATE MODE [NUM [EXTRA FLAGS...]]
  local rate=()
  [ "$5" = 0 ] || rate=(--benchmark-write-rate-limit "$5")
  local num=${7:-$NUM}
  local extra=("${@:8}")
  /usr/bin/time -v "$ZKV" bench --workload "$2" --num "$num" --key-size 16 --value-size "$3" \
    --write-buffer-size "$BUF" --target-file-size-base "$BUF" --max-bytes-for-level-base "$L1" \
    --max-bytes-for-level-multiplier 10 --level0-file-num-compaction-trigger 4 --disable-wal \
    --bloom-bits 10 --picker "$4" --mode "$6" --wait-for-compaction --seed 1 \
    --device mem --zones 160 --zone-size 64MiB --json "${1%.txt}.json" "${rate[@]}" \
    "${extra[@]}" >"$1" 2>&1
}

# shellcheck source=lib/measure.sh
source "$ROOT/scripts/lib/measure.sh"

BLOB_CASES=${FIDELITY_BLOB_CASES-"blob-fillrandom-1k blob-overwrite-1k blob-fillrandom-8k blob-overwrite-8k-paper"}

blob_case_params() { # NAME -> "benchmarks value_size num concurrency"
  local volume=$((NUM * 400)) # 800 MB at full scale, 80 MB small
  case $1 in
    blob-fillrandom-1k) echo "fillrandom 1000 $((volume / 1000)) one" ;;
    blob-overwrite-1k) echo "fillrandom,overwrite 1000 $((volume / 2000)) one" ;;
    blob-fillrandom-8k) echo "fillrandom 8192 $((volume / 8192)) one" ;;
    blob-overwrite-8k-paper) echo "fillrandom,overwrite 8192 $((volume / 16384)) paper" ;;
    *) echo "fidelity: unknown blob case $1" >&2; exit 2 ;;
  esac
}

# "paper": BlobDB's threads as the Same-Victim paper configures them (2 flushes, 2
# compactions, L0 compactions in 4 subcompactions); "one": one flush and one compaction.
rocksdb_threads() { [ "$1" = one ] || echo "--max_background_flushes=2 --max_background_compactions=2 --subcompactions=4"; }
zkv_threads() { [ "$1" = one ] || echo "--flush-threads 2 --compaction-threads 2 --max-subcompactions 4"; }

# BlobDB: every value separated, blob files as large as the memtables, garbage collection
# of the oldest quarter (RocksDB's default cutoff).
ROCKSDB_BLOB=(--enable_blob_files=1 --min_blob_size=512 --blob_file_size="$BUF"
  --enable_blob_garbage_collection=1 --blob_garbage_collection_age_cutoff=0.25 --statistics=1)
ZKV_BLOB=(--enable-blob-files --min-blob-size 512 --blob-file-size "$BUF"
  --enable-blob-garbage-collection)

# RocksDB's statistics counter NAME in FILE.
rocksdb_stat() { awk -v n="$1" '$1 == n { print $4; exit }' "$2"; }
# zkv's report field NAME (an integer of the blob section) in FILE.
zkv_field() { grep -o "\"$1\": [0-9]*" "$2" | head -1 | awk '{ print $2 }'; }

table="| case | RocksDB 7.8 W-Amp |"
for m in $MODES; do table+=" zkv $m |"; done
for c in $CASES; do
  # A separate assignment, so that set -e stops on an unknown case.
  params=$(case_params "$c")
  read -r benches vs pri picker rate <<<"$params"
  row="| $c |"
  for r in $(seq "$RUNS"); do
    echo "== $c run $r: RocksDB db_bench" >&2
    run_rocksdb "$OUT/$c.$r.rocksdb.txt" "$benches" "$vs" "$pri" "$rate"
    for m in $MODES; do
      echo "== $c run $r: zkv bench --mode $m" >&2
      run_zkv "$OUT/$c.$r.zkv-$m.txt" "$benches" "$vs" "$picker" "$rate" "$m"
    done
  done
  values=""
  for r in $(seq "$RUNS"); do values+=" $(wamp_rocksdb "$OUT/$c.$r.rocksdb.txt")"; done
  row+=" $(echo "$values" | median) ($values ) |"
  for m in $MODES; do
    values=""
    for r in $(seq "$RUNS"); do values+=" $(wamp_zkv "$OUT/$c.$r.zkv-$m.txt")"; done
    row+=" $(echo "$values" | median) ($values ) |"
  done
  table+=$'\n'"$row"
  {
    echo "### $c (run 1)"
    echo "RocksDB 7.8:"
    grep -E 'micros/op|^ *(Level|L[0-9]|Sum) ' "$OUT/$c.1.rocksdb.txt" | cut -c1-130
    for m in $MODES; do
      echo "zkv $m:"
      grep -E 'micros/op|^ *(Level|L[0-9]|Sum) ' "$OUT/$c.1.zkv-$m.txt" | cut -c1-130
    done
    echo
  } | tee -a "$OUT/summary.txt"
done
{
  echo "W-Amp, median of $RUNS run(s) (each run's value in parentheses):"
  echo "$table" | sed '1a|---|---|'"$(for m in $MODES; do printf -- '---|'; done)"
} | tee -a "$OUT/summary.txt"

[ -n "$BLOB_CASES" ] || exit 0
blob_table="| case | blob bytes written: RocksDB 7.8 |"
for m in $MODES; do blob_table+=" zkv $m |"; done
blob_table+=" blobs relocated: RocksDB 7.8 |"
for m in $MODES; do blob_table+=" zkv $m |"; done
for c in $BLOB_CASES; do
  params=$(blob_case_params "$c")
  read -r benches vs num conc <<<"$params"
  echo "== $c: RocksDB db_bench" >&2
  # shellcheck disable=SC2046 # the thread flags are words
  run_rocksdb "$OUT/$c.rocksdb.txt" "$benches" "$vs" 0 0 "$num" "${ROCKSDB_BLOB[@]}" $(rocksdb_threads "$conc")
  for m in $MODES; do
    echo "== $c: zkv bench --mode $m" >&2
    # shellcheck disable=SC2046
    run_zkv "$OUT/$c.zkv-$m.txt" "$benches" "$vs" sica 0 "$m" "$num" "${ZKV_BLOB[@]}" $(zkv_threads "$conc")
  done
  row="| $c | $(rocksdb_stat rocksdb.blobdb.blob.file.bytes.written "$OUT/$c.rocksdb.txt") |"
  for m in $MODES; do row+=" $(zkv_field blob_bytes_written "$OUT/$c.zkv-$m.json") |"; done
  row+=" $(rocksdb_stat rocksdb.blobdb.gc.num.keys.relocated "$OUT/$c.rocksdb.txt") |"
  for m in $MODES; do row+=" $(zkv_field gc_relocated "$OUT/$c.zkv-$m.json") |"; done
  blob_table+=$'\n'"$row"
done
{
  echo
  echo "BlobDB (one run each):"
  echo "$blob_table" | sed '1a|---|---|'"$(for m in $MODES; do printf -- '---|'; done)"'---|'"$(for m in $MODES; do printf -- '---|'; done)"
} | tee -a "$OUT/summary.txt"
