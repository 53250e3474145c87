#!/usr/bin/env bash
# zkv bench against RocksDB's db_bench on the same workloads, interleaved round by round;
# prints each case's median ops/s per engine and zkv's ratio to RocksDB, with each engine's
# median W-Amp (RocksDB's definition, at the end of the run) and peak memory
# (docs/BENCHMARKS.md, "Engine: speed against RocksDB 7.8").
#
#   bash scripts/race.sh [OUT_DIR]        # RACE_ROUNDS=3 RACE_NUM=1000000 by default
#   RACE_MATRIX=full bash scripts/race.sh [OUT_DIR]   # every case of the matrix below
#   RACE_CASES='regex' ...                # only the cases whose name matches
#   RACE_ENGINES='rocksdb zkv-file' ...   # a subset of rocksdb, zkv-file, zkv-mem
#   RACE_WRITE_RATE=BYTES_PER_SEC ...     # both engines' --benchmark_write_rate_limit (all
#                                         # writes, readwhilewriting's writer included)
#   RACE_TABLE_ONLY=1 bash scripts/race.sh DIR   # no runs: the table again from DIR/ops.txt
#
# The full matrix: fillrandom 1000 B, fillseq and overwrite 128 B, readrandom and
# readwhilewriting (after a fillrandom of 1000 B), each with 1 and 4 client threads
# (db_bench's --threads: every thread runs the whole count), the WAL off and on (no sync),
# compression none and lz4 (values compressible to half, db_bench's default ratio); a
# case's name says which, e.g. `readwhilewriting-t4-wal-lz4`. The default is the four
# one-thread cases without WAL or compression.
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

if [ -z "${RACE_TABLE_ONLY:-}" ]; then
  "$(dirname "$0")/install-db-bench.sh" --time
  cargo build --release --quiet
fi
zkv=$PWD/target/release/zkv

# Each case: a name, its workloads, the value size, the number of operations per thread,
# the client threads, the WAL (0 off, 1 on without sync) and the compression type.
case_of() { # name workloads value num threads wal compression
  echo "$1|$2|$3|$4|$5|$6|$7"
}
if [ "${RACE_MATRIX:-}" = full ]; then
  cases=()
  for threads in 1 4; do
    for wal in 0 1; do
      for comp in none lz4; do
        tag="t$threads-$([ "$wal" = 1 ] && echo wal || echo nowal)-$comp"
        cases+=(
          "$(case_of "fillrandom-1000-$tag" fillrandom 1000 "$num" "$threads" "$wal" "$comp")"
          "$(case_of "fillseq-128-$tag" fillseq 128 $((2 * num)) "$threads" "$wal" "$comp")"
          "$(case_of "overwrite-128-$tag" fillseq,overwrite 128 $((2 * num)) "$threads" "$wal" "$comp")"
          "$(case_of "readrandom-1000-$tag" fillrandom,readrandom 1000 "$num" "$threads" "$wal" "$comp")"
          "$(case_of "readwhilewriting-1000-$tag" fillrandom,readwhilewriting 1000 "$num" "$threads" "$wal" "$comp")"
        )
      done
    done
  done
else
  cases=(
    "$(case_of fillrandom-1000 fillrandom 1000 "$num" 1 0 none)"
    "$(case_of readrandom-1000 fillrandom,readrandom 1000 "$num" 1 0 none)"
    "$(case_of fillseq-128 fillseq 128 $((2 * num)) 1 0 none)"
    "$(case_of overwrite-128 fillseq,overwrite 128 $((2 * num)) 1 0 none)"
  )
fi
read -r -a engines <<< "${RACE_ENGINES:-rocksdb zkv-file zkv-mem}"

lsm_flags=(--key-size 16 --write-buffer-size 8MiB --target-file-size-base 8MiB
  --max-bytes-for-level-base 32MiB --bloom-bits 10)

run_zkv() { # device value_size num workloads threads wal compression log
  local device=$1 value=$2 n=$3 workloads=$4 threads=$5 wal=$6 comp=$7 log=$8
  local dev_flags=(--device mem --zones 400 --zone-size 64MiB)
  if [ "$device" = file ]; then
    rm -f "$shm/zkv-race.img"
    dev_flags=(--device "file:$shm/zkv-race.img" --zones 400 --zone-size 64MiB)
  fi
  local extra=(--threads "$threads")
  [ "$wal" = 0 ] && extra+=(--disable-wal)
  [ "$comp" != none ] && extra+=(--compression-type "$comp" --compression-ratio 0.5)
  [ -n "${RACE_WRITE_RATE:-}" ] && extra+=(--benchmark-write-rate-limit "$RACE_WRITE_RATE")
  /usr/bin/time -v "$zkv" bench --workload "$workloads" --num "$n" --value-size "$value" \
    "${lsm_flags[@]}" "${extra[@]}" "${dev_flags[@]}" > "$log" 2>&1
  rm -f "$shm/zkv-race.img"
}

run_rocksdb() { # value_size num workloads threads wal compression log
  local value=$1 n=$2 workloads=$3 threads=$4 wal=$5 comp=$6 log=$7
  rm -rf "$shm/rocksdb-race"
  /usr/bin/time -v db_bench --benchmarks="$workloads,stats" --num="$n" --value_size="$value" --key_size=16 \
    --write_buffer_size=8388608 --target_file_size_base=8388608 \
    --max_bytes_for_level_base=33554432 --bloom_bits=10 --compression_type="$comp" \
    --compression_ratio=$([ "$comp" = none ] && echo 1 || echo 0.5) \
    --disable_wal=$((1 - wal)) --max_background_jobs=2 --threads="$threads" --seed=1 \
    --benchmark_write_rate_limit="${RACE_WRITE_RATE:-0}" --db="$shm/rocksdb-race" > "$log" 2>&1
  rm -rf "$shm/rocksdb-race"
}

# ops/s of the last workload's db_bench line in a log (both engines print the same line).
ops() { grep -E "^${2} +:" "$1" | tail -1 | sed -E 's/.* ([0-9]+) ops\/sec.*/\1/'; }

[ -n "${RACE_TABLE_ONLY:-}" ] && rounds=0
for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name workloads value n threads wal comp <<< "$c"
    [[ "$name" =~ ${RACE_CASES:-.} ]] || continue
    last=${workloads##*,}
    for engine in "${engines[@]}"; do
      log="$out/$name.$engine.r$round.log"
      case $engine in
        rocksdb) run_rocksdb "$value" "$n" "$workloads" "$threads" "$wal" "$comp" "$log" ;;
        zkv-file) run_zkv file "$value" "$n" "$workloads" "$threads" "$wal" "$comp" "$log" ;;
        zkv-mem) run_zkv mem "$value" "$n" "$workloads" "$threads" "$wal" "$comp" "$log" ;;
        *) echo "race.sh: unknown engine '$engine' (rocksdb, zkv-file, zkv-mem)" >&2; exit 2 ;;
      esac
      if [ "$engine" = rocksdb ]; then wamp=$(wamp_rocksdb "$log"); else wamp=$(wamp_zkv "$log"); fi
      rate=$(ops "$log" "$last")
      peak=$(peak_mib "$log")
      echo "$name $engine r$round ${rate:--} ${wamp:--} ${peak:--}" |
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
    e["ops"].append(int(ops) if ops.isdigit() else float("nan"))
    e["wamp"].append(float(wamp) if wamp != "-" else float("nan"))
    e["peak"].append(int(peak) if peak.isdigit() else float("nan"))
engines = ["rocksdb", "zkv-file", "zkv-mem"]
print("| case | RocksDB 7.8 ops/s | zkv file: ops/s | ratio | zkv mem ops/s | ratio "
      "| W-Amp RocksDB / file / mem | peak MiB RocksDB / file / mem |")
print("|---|---|---|---|---|---|---|---|")
for name, e in runs.items():
    med = {k: {f: statistics.median(v[f]) for f in v} for k, v in e.items()}
    def spread(k):
        if k not in e:
            return "-"
        return f"{int(med[k]['ops']):,} ({min(e[k]['ops']):,}–{max(e[k]['ops']):,})"
    def ratio(k):
        if k not in med or "rocksdb" not in med:
            return "-"
        return f"{med[k]['ops'] / med['rocksdb']['ops']:.2f}"
    cell = lambda k, f, fmt: fmt.format(med[k][f]) if k in med else "-"
    wamp = " / ".join(cell(k, "wamp", "{:.2f}") for k in engines)
    peak = " / ".join(cell(k, "peak", "{:.0f}") for k in engines)
    print(f"| {name} | {spread('rocksdb')} | {spread('zkv-file')} | {ratio('zkv-file')} "
          f"| {spread('zkv-mem')} | {ratio('zkv-mem')} | {wamp} | {peak} |")
EOF
