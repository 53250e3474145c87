#!/usr/bin/env bash
# Checks zkv's ports of YCSB's generators against YCSB's own: draws from YCSB 0.17.0's
# generators (its published jar, site.ycsb:core:0.17.0, driven by scripts/ycsb-check/Draw.java)
# and from zkv's (crates/bench/examples/draw.rs) with the same parameters, then compares:
# deterministic values (fnvhash64, zeta sums, incremental zeta, record keys, constants)
# exactly, sampled frequencies within five standard deviations of the two sample sizes.
#
# Installs a JDK and Maven with apt-get when missing, fetches the jar once into the local
# Maven repository, and caches the compiled Java under the cargo target directory, so a
# second run only draws and compares. Prints "ycsb-check: N passed, M failed" last and
# exits non-zero on any disagreement.
#
# Environment: YCSB_CHECK_DRAWS (draws per sampled case, default 1000000),
# YCSB_CHECK_SEED (zkv's seed, default 1), YCSB_CHECK_M2 (Maven repository,
# default ~/.m2/repository).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DRAWS=${YCSB_CHECK_DRAWS:-1000000}
SEED=${YCSB_CHECK_SEED:-1}
M2=${YCSB_CHECK_M2:-$HOME/.m2/repository}
# Cargo's target directory as cargo resolves it (CARGO_TARGET_DIR, relative or not, or
# build.target-dir in any cargo config), so the example run is the one just built.
TARGET=$(cargo metadata -q --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
WORK=$TARGET/ycsb-check
JAR=$M2/site/ycsb/core/0.17.0/core-0.17.0.jar
SRC=$ROOT/scripts/ycsb-check/Draw.java

CASES=(
  zipfian:1000:0.99 zipfian:100:0.5 zipfian:10:0.9
  scrambled:1000 scrambled:10
  latest:1000:0 latest:1000:50 latest:2:1
  uniform:0:999 uniform:5:14
  hotspot:0:999:0.2:0.8 hotspot:0:99:0.1:0.95
  ops:0.5:0.5:0:0:0 ops:0.95:0.05:0:0:0 ops:1:0:0:0:0
  ops:0.95:0:0.05:0:0 ops:0:0:0.05:0.95:0 ops:0.5:0:0:0:0.5
  fnv:0 fnv:1 fnv:42 fnv:-1 fnv:9223372036854775807 fnv:-9223372036854775808
  fnv:10000000000
  zeta:2:0.99 zeta:1000:0.99 zeta:100000:0.99 zeta:1000:0.5 zeta:12345:0.7
  grow:1000:1000 grow:1000:5000 grow:10:11 grow:100:100000
  key:0:1:hashed key:42:1:hashed key:42:20:hashed key:999:1:hashed
  key:5:8:ordered key:-7:4:ordered key:123456789:12:ordered
  const
)

log() { echo "ycsb-check: $*" >&2; }

install_tools() {
  if command -v javac >/dev/null && command -v mvn >/dev/null; then
    return
  fi
  log "installing a JDK and Maven"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq default-jdk-headless maven >/dev/null
}

fetch_jar() {
  if [ -f "$JAR" ]; then
    return
  fi
  log "fetching site.ycsb:core:0.17.0 from Maven Central"
  # -C: fail on a checksum mismatch instead of warning.
  mvn -q -B -C -Dstyle.color=never -Dmaven.repo.local="$M2" dependency:get \
    -Dartifact=site.ycsb:core:0.17.0 -Dtransitive=false >&2
}

compile_java() {
  mkdir -p "$WORK/classes"
  if [ "$WORK/classes/Draw.class" -nt "$SRC" ] && [ "$WORK/classes/Draw.class" -nt "$JAR" ]; then
    return
  fi
  javac -nowarn -d "$WORK/classes" -cp "$JAR" "$SRC"
}

main() {
  install_tools
  fetch_jar
  compile_java
  cargo build -q --release -p zkv-bench --example draw
  local draw=$TARGET/release/examples/draw
  # The two sides draw independently: run them side by side.
  java -cp "$JAR:$WORK/classes" Draw "$DRAWS" "${CASES[@]}" >"$WORK/ycsb.txt" &
  local java_pid=$!
  "$draw" --seed "$SEED" "$DRAWS" "${CASES[@]}" >"$WORK/zkv.txt"
  wait "$java_pid"
  local status=0
  "$draw" compare "$WORK/ycsb.txt" "$WORK/zkv.txt" >"$WORK/result.txt" || status=$?
  # Failures and the summary line; the passing checks stay in result.txt.
  grep -v '^ok ' "$WORK/result.txt" || true
  return "$status"
}

main "$@"
