#!/usr/bin/env bash
# Coverage-guided fuzzing of zkv's decoders (fuzz/, docs/FUZZING.md).
#
#   bash scripts/fuzz.sh replay             fmt and clippy of fuzz/, then every target over
#                                           its whole corpus (cargo test, plain Rust)
#   bash scripts/fuzz.sh fuzz SECONDS [T..] AFL++ on each target (or the ones named) for
#                                           SECONDS; exits non-zero if any input crashed
#   bash scripts/fuzz.sh build              only install AFL++ and build the targets
#   bash scripts/fuzz.sh corpus             rewrite the generated seeds (fuzz/corpus/*/seed-*)
#
# `fuzz` installs what it needs when it is missing: cargo-afl from crates.io (which builds
# AFL++ from the sources it ships, with the C compiler), nothing else. Crashing inputs are
# copied to fuzz/artifacts/<target>/; the fuzzer's output stays in fuzz/out/<target>/.
# Environment: FUZZ_JOBS (targets fuzzed at once, default: the number of cores),
# FUZZ_TIMEOUT_MS (per input, default 1000), FUZZ_KEEP_OUT=1 (resume from the old output).
set -euo pipefail
cd "$(dirname "$0")/.."

AFL_VERSION=0.18.2
FUZZ=fuzz
PLAIN_TARGET="$FUZZ/target/plain"
AFL_TARGET="$FUZZ/target/afl"

targets() {
    ls "$FUZZ/src/bin" | sed -n 's/\.rs$//p' | grep -v '^make-corpus$'
}

need_cargo_afl() {
    if cargo afl --version 2>/dev/null | grep -q "$AFL_VERSION"; then
        return
    fi
    if ! command -v cc >/dev/null || ! command -v make >/dev/null; then
        echo "fuzz.sh: cargo-afl builds AFL++ with a C compiler and make; installing them"
        apt-get update -qq && apt-get install -y -qq gcc make >/dev/null
    fi
    echo "== installing cargo-afl $AFL_VERSION (builds AFL++)"
    cargo install cargo-afl --locked --version "$AFL_VERSION"
}

need_afl_runtime() {
    # cargo-afl builds AFL++ on install; a new toolchain needs it built again.
    local out
    if ! out=$(cargo afl config --build 2>&1); then
        grep -q "already built" <<<"$out" || { echo "$out"; exit 1; }
    fi
}

build_afl() {
    need_cargo_afl
    need_afl_runtime
    echo "== building the instrumented targets"
    CARGO_TARGET_DIR="$AFL_TARGET" cargo afl build --release --features afl \
        --manifest-path "$FUZZ/Cargo.toml" --bins
}

# Fuzzes target $1 for $2 seconds; writes its row of the summary to fuzz/out/$1.row.
fuzz_one() {
    local t=$1 seconds=$2 out="$FUZZ/out/$1" seeds stats
    [ "${FUZZ_KEEP_OUT:-}" = 1 ] || rm -rf "$out"
    rm -f "$out.row"
    # AFL++ hard-links its inputs into its queue: give it a copy of the corpus.
    seeds=$(mktemp -d)
    cp "$FUZZ/corpus/$t"/* "$seeds/"
    cargo afl fuzz -V "$seconds" -t "${FUZZ_TIMEOUT_MS:-1000}" -i "$seeds" -o "$out" \
        -- "$AFL_TARGET/release/$t" >"$out.log" 2>&1 || true
    rm -rf "$seeds"
    stats="$out/default/fuzzer_stats"
    [ -f "$stats" ] || return 0
    printf '%-18s %10s %9s %7s %7s %6s %6s\n' "$t" "$(stat_of "$stats" execs_done)" \
        "$(stat_of "$stats" execs_per_sec)" "$(stat_of "$stats" corpus_count)" \
        "$(stat_of "$stats" edges_found)" "$(stat_of "$stats" saved_crashes)" \
        "$(stat_of "$stats" saved_hangs)" >"$out.row"
}

# Replays target $1's saved crashes in a plain build, printing each input in hex (a CI log
# is all that is left of a CI run) and what the replay says. Succeeds if none crashes
# there: the crash depended on AFL++'s persistent loop, not on the input alone.
replay_crashes() {
    local t=$1 f reproduced=0
    CARGO_TARGET_DIR="$PLAIN_TARGET" cargo build -q --release --manifest-path "$FUZZ/Cargo.toml" \
        --bin "$t"
    for f in "$FUZZ/artifacts/$t"/id*; do
        echo "-- $t crash input $(basename "$f") ($(wc -c <"$f") bytes, hex):"
        od -An -tx1 -v "$f" | head -c 8192
        if "$PLAIN_TARGET/release/$t" "$f" >"$f.replay" 2>&1; then
            echo "-- the plain replay of this input does not crash"
        else
            reproduced=1
            echo "-- the plain replay crashes:"
            tail -20 "$f.replay"
        fi
    done
    [ "$reproduced" = 0 ]
}

stat_of() { # FILE KEY
    sed -n "s/^$2 *: *//p" "$1"
}

case "${1:-}" in
replay)
    # The fuzz crate is outside the main workspace, so CI's fmt and clippy steps miss it.
    echo "== fmt and clippy of the fuzz crate"
    cargo fmt --manifest-path "$FUZZ/Cargo.toml" -- --check
    CARGO_TARGET_DIR="$PLAIN_TARGET" cargo clippy --release --manifest-path "$FUZZ/Cargo.toml" \
        --all-targets -- -D warnings
    echo "== replaying the corpus (fuzz/corpus) through every target"
    CARGO_TARGET_DIR="$PLAIN_TARGET" cargo test --release --manifest-path "$FUZZ/Cargo.toml" \
        --lib --test corpus -- --nocapture
    ;;
corpus)
    CARGO_TARGET_DIR="$PLAIN_TARGET" cargo run --release --manifest-path "$FUZZ/Cargo.toml" \
        --bin make-corpus
    ;;
build)
    build_afl
    ;;
fuzz)
    seconds="${2:?usage: fuzz.sh fuzz SECONDS [TARGET...]}"
    shift 2
    chosen=("$@")
    [ ${#chosen[@]} -gt 0 ] || mapfile -t chosen < <(targets)
    build_afl
    export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
    export AFL_FAST_CAL=1
    jobs="${FUZZ_JOBS:-$(nproc)}"
    mkdir -p "$FUZZ/out"
    echo "== fuzzing ${#chosen[@]} targets for ${seconds}s each, $jobs at a time"
    for t in "${chosen[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
        fuzz_one "$t" "$seconds" &
    done
    wait
    failed=()
    flaky=()
    printf '%-18s %10s %9s %7s %7s %6s %6s\n' target execs execs/s corpus edges crash hangs
    for t in "${chosen[@]}"; do
        row="$FUZZ/out/$t.row"
        if [ ! -s "$row" ]; then
            echo "fuzz.sh: afl-fuzz failed on $t:"
            tail -20 "$FUZZ/out/$t.log"
            failed+=("$t")
            continue
        fi
        cat "$row"
        read -r _ _ _ _ _ crashes _ <"$row"
        if [ "$crashes" != 0 ]; then
            mkdir -p "$FUZZ/artifacts/$t"
            cp "$FUZZ/out/$t"/default/crashes/id* "$FUZZ/artifacts/$t/"
            replay_crashes "$t" && flaky+=("$t") || failed+=("$t")
        fi
    done
    if [ ${#flaky[@]} -gt 0 ]; then
        echo "fuzz.sh: AFL++ saw crashes in ${flaky[*]} that the plain replay does not"
        echo "  reproduce (inputs printed above and kept in fuzz/artifacts/)"
    fi
    if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzz.sh: crashes in: ${failed[*]} (inputs in fuzz/artifacts/; reproduce with"
        echo "  cargo run --release --manifest-path fuzz/Cargo.toml --bin TARGET -- FILE)"
        exit 1
    fi
    echo "fuzz.sh: ${#chosen[@]} targets, no crash"
    ;;
*)
    sed -n '2,15p' "$0"
    exit 2
    ;;
esac
