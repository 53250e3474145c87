# Shell helpers shared by scripts/fidelity.sh and scripts/race.sh (sourced, not run).

# W-Amp as RocksDB's stats define it, (flush + compaction bytes written) / flush bytes, to
# three digits: from RocksDB's cumulative compaction and flush lines, and from zkv's
# compaction stats table (Write(GB) of the Sum and L0 rows).
wamp_rocksdb() {
  awk '/^Flush\(GB\): cumulative/ { f = $3 + 0 }
    /^Cumulative compaction:/ { w = $3; if ($4 == "MB") w /= 1024; if ($4 == "KB") w /= 1048576 }
    END { if (f > 0) printf "%.2f\n", w / f; else print "-" }' "$1"
}

wamp_zkv() {
  awk '$1 == "L0" && f == "" { f = $9 }
    $1 == "Sum" { if (f > 0) printf "%.2f\n", $9 / f; else print "-"; exit }' "$1"
}

median() {
  tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
    else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Peak resident set size in MiB from a `/usr/bin/time -v` report.
peak_mib() {
  awk -F': ' '/Maximum resident set size/ { printf "%d\n", $2 / 1024 }' "$1"
}
