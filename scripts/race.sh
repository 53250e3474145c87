#!/usr/bin/env bash
# zkv bench against RocksDB's db_bench on the same workloads, interleaved round by round;
# prints each case's median ops/s per engine and zkv's ratio to RocksDB, with each engine's
# median W-Amp (RocksDB's definition, at the end of the run) and peak memory
# (docs/BENCHMARKS.md, "Engine: speed against RocksDB 7.8").
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
# shellcheck source=lib/measure.sh
source scripts/lib/measure.sh

out=${1:-target/race}
rounds=${RACE_ROUNDS:-3}
num=${RACE_NUM:-1000000}
shm=${RACE_SHM:-/dev/shm}
mkdir -p "$out"

"$(dirname "$0")/install-db-bench.sh" --time
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
  /usr/bin/time -v "$zkv" bench --workload "$workloads" --num "$n" --value-size "$value" \
    "${lsm_flags[@]}" "${dev_flags[@]}" > "$log" 2>&1
  rm -f "$shm/zkv-race.img"
}

run_rocksdb() { # value_size num workloads log
  local value=$1 n=$2 workloads=$3 log=$4
  rm -rf "$shm/rocksdb-race"
  /usr/bin/time -v db_bench --benchmarks="$workloads,stats" --num="$n" --value_size="$value" --key_size=16 \
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
      if [ "$engine" = rocksdb ]; then wamp=$(wamp_rocksdb "$log"); else wamp=$(wamp_zkv "$log"); fi
      echo "$name $engine r$round $(ops "$log" "$last") $wamp $(peak_mib "$log")" |
        tee -a "$out/ops.txt"
    done
  done
done

python3 - "$out/ops.txt" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, engine, _, ops, wamp, peak = line.split()
    e = runs.setdefault(name, {}).setdefault(engine, {"ops": [], "wamp": [], "peak": []})
    e["ops"].append(int(ops))
    e["wamp"].append(float(wamp) if wamp != "-" else float("nan"))
    e["peak"].append(int(peak))
engines = ["rocksdb", "zkv-file", "zkv-mem"]
print("| case | RocksDB 7.8 ops/s | zkv file: ops/s | ratio | zkv mem ops/s | ratio "
      "| W-Amp RocksDB / file / mem | peak MiB RocksDB / file / mem |")
print("|---|---|---|---|---|---|---|---|")
for name, e in runs.items():
    med = {k: {f: statistics.median(v[f]) for f in v} for k, v in e.items()}
    r = med["rocksdb"]["ops"]
    spread = lambda k: f"{int(med[k]['ops']):,} ({min(e[k]['ops']):,}–{max(e[k]['ops']):,})"
    wamp = " / ".join(f"{med[k]['wamp']:.2f}" for k in engines)
    peak = " / ".join(f"{int(med[k]['peak'])}" for k in engines)
    print(f"| {name} | {spread('rocksdb')} | {spread('zkv-file')} | {med['zkv-file']['ops'] / r:.2f} "
          f"| {spread('zkv-mem')} | {med['zkv-mem']['ops'] / r:.2f} | {wamp} | {peak} |")
EOF
