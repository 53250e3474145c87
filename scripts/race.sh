#!/usr/bin/env bash
# zkv bench against RocksDB's db_bench on the same workloads, interleaved round by round;
# prints each case's median ops/s per engine and zkv's ratio to RocksDB (docs/BENCHMARKS.md,
# "Speed against RocksDB").
#
#   bash scripts/race.sh [OUT_DIR]        # RACE_ROUNDS=3 RACE_NUM=1000000 by default
#
# RocksDB (Debian's rocksdb-tools 7.8.3, installed if missing) keeps its database on tmpfs
# (/dev/shm); zkv runs on a zone image in the same tmpfs (`file:`, reads and writes are
# system calls as RocksDB's are) and on its in-memory device (`mem`). Both: 16 B keys,
# 8 MiB memtables and SSTs, 32 MiB L1, bloom 10, no compression, no WAL, two background
# jobs (one flush, one compaction thread), one client thread, the default 8 MiB block cache.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-target/race}
rounds=${RACE_ROUNDS:-3}
num=${RACE_NUM:-1000000}
shm=${RACE_SHM:-/dev/shm}
mkdir -p "$out"

if ! command -v db_bench > /dev/null; then
  apt-get install -y rocksdb-tools > "$out/apt.log" 2>&1
fi
cargo build --release --quiet
zkv=$PWD/target/release/zkv

# Each case: a name, its workloads, the value size and the number of operations.
cases=(
  "fillrandom-1000|fillrandom|1000|$num"
  "readrandom-1000|fillrandom,readrandom|1000|$num"
  "fillseq-128|fillseq|128|$((2 * num))"
  "overwrite-128|fillseq,overwrite|128|$((2 * num))"
)

lsm_flags=(--key-size 16 --write-buffer-size 8MiB --target-file-size-base 8MiB
  --max-bytes-for-level-base 32MiB --bloom-bits 10 --disable-wal)

run_zkv() { # device value_size num workloads log
  local device=$1 value=$2 n=$3 workloads=$4 log=$5
  local dev_flags=(--device mem --zones 400 --zone-size 64MiB)
  if [ "$device" = file ]; then
    rm -f "$shm/zkv-race.img"
    dev_flags=(--device "file:$shm/zkv-race.img" --zones 400 --zone-size 64MiB)
  fi
  "$zkv" bench --workload "$workloads" --num "$n" --value-size "$value" "${lsm_flags[@]}" \
    "${dev_flags[@]}" > "$log" 2>&1
  rm -f "$shm/zkv-race.img"
}

run_rocksdb() { # value_size num workloads log
  local value=$1 n=$2 workloads=$3 log=$4
  rm -rf "$shm/rocksdb-race"
  db_bench --benchmarks="$workloads" --num="$n" --value_size="$value" --key_size=16 \
    --write_buffer_size=8388608 --target_file_size_base=8388608 \
    --max_bytes_for_level_base=33554432 --bloom_bits=10 --compression_type=none \
    --disable_wal=1 --max_background_jobs=2 --threads=1 --seed=1 \
    --db="$shm/rocksdb-race" > "$log" 2>&1
  rm -rf "$shm/rocksdb-race"
}

# ops/s of the last workload's db_bench line in a log (both engines print the same line).
ops() { grep -E "^${2} +:" "$1" | tail -1 | sed -E 's/.* ([0-9]+) ops\/sec.*/\1/'; }

for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name workloads value n <<< "$c"
    last=${workloads##*,}
    for engine in rocksdb zkv-file zkv-mem; do
      log="$out/$name.$engine.r$round.log"
      case $engine in
        rocksdb) run_rocksdb "$value" "$n" "$workloads" "$log" ;;
        zkv-file) run_zkv file "$value" "$n" "$workloads" "$log" ;;
        zkv-mem) run_zkv mem "$value" "$n" "$workloads" "$log" ;;
      esac
      echo "$name $engine r$round $(ops "$log" "$last")" | tee -a "$out/ops.txt"
    done
  done
done

python3 - "$out/ops.txt" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, engine, _, ops = line.split()
    runs.setdefault(name, {}).setdefault(engine, []).append(int(ops))
print("| case | RocksDB 7.8 ops/s | zkv file: ops/s | ratio | zkv mem ops/s | ratio |")
print("|---|---|---|---|---|---|")
for name, e in runs.items():
    med = {k: statistics.median(v) for k, v in e.items()}
    r = med["rocksdb"]
    spread = lambda k: f"{int(med[k]):,} ({min(e[k]):,}–{max(e[k]):,})"
    print(f"| {name} | {spread('rocksdb')} | {spread('zkv-file')} | {med['zkv-file'] / r:.2f} "
          f"| {spread('zkv-mem')} | {med['zkv-mem'] / r:.2f} |")
EOF
