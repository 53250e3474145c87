#!/usr/bin/env bash
# Installs what runs RocksDB's db_bench next to zkv (`zkv compare --schemes ...,rocksdb`,
# scripts/fidelity.sh): Debian's and Ubuntu's rocksdb-tools (RocksDB 7.8 on Debian 12), with
# apt-get, when db_bench is not on PATH; with --time, GNU time too (its -v resource report).
# Does nothing when everything is there.
#
# Usage: scripts/install-db-bench.sh [--time]
set -euo pipefail

missing=()
command -v db_bench >/dev/null || missing+=(rocksdb-tools)
if [ "${1:-}" = --time ] && [ ! -x /usr/bin/time ]; then missing+=(time); fi
[ ${#missing[@]} -gt 0 ] || exit 0
if ! command -v apt-get >/dev/null; then
  echo "install-db-bench: no apt-get here; install RocksDB's db_bench (package ${missing[*]}) and put it on PATH, or set ZKV_DB_BENCH to it" >&2
  exit 1
fi
echo "install-db-bench: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
