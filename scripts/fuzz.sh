#!/usr/bin/env bash
# Fuzzes every parser of outside input (fuzz/: lock.json, receipts, context detection, durations, store specs,
# path and ref segments, any operation through api::invoke) and prints the executions per target.
#
#   bash scripts/fuzz.sh short   what CI runs (about 3 minutes on a fresh machine, well under one after):
#                                - the stable route: every target body over its corpus plus 20,000 seeded
#                                  mutations (core/tests/fuzz_corpus.rs, release build);
#                                - libFuzzer (cargo fuzz) for 5 s per target, starting from the corpus.
#   bash scripts/fuzz.sh long    for people: libFuzzer for 300 s per target, the stable route with 200,000
#                                mutations per target.
#
# libFuzzer runs on the stable toolchain: cargo-fuzz passes unstable rustc flags, which RUSTC_BOOTSTRAP=1
# allows, and no sanitizer is used (`-s none`: the core is safe Rust, `unsafe_code = "deny"`). cargo-fuzz is
# installed once into the tools directory (like wasm-bindgen-cli, ~30 s) and needs a C++ compiler for
# libFuzzer itself. New inputs libFuzzer finds go to a temporary directory, never into the committed corpus;
# a crash leaves its input in fuzz/artifacts/<target>/ (fix it, then add the input to fuzz/corpus/<target>/).
#
# Environment: BATON_FUZZ_SECONDS (libFuzzer seconds per target), BATON_FUZZ_CASES (stable-route mutations per
# target), BATON_FUZZ_TARGETS ("names invoke_any": only these), BATON_FUZZ_ENGINE=stable (skip libFuzzer),
# BATON_FUZZ_STEPS (default "stable build run": the stable route, building the libFuzzer targets, running
# them; scripts/test.sh runs "stable build" in the background while the Node tests wait on processes, then
# "run" on its own, so the timed libFuzzer runs have the machine).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
TOOLS="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-tools}"
CARGO_FUZZ_VERSION=0.13.2

mode="${1:-short}"
case "$mode" in
  short) seconds="${BATON_FUZZ_SECONDS:-5}"; cases="${BATON_FUZZ_CASES:-20000}" ;;
  long) seconds="${BATON_FUZZ_SECONDS:-300}"; cases="${BATON_FUZZ_CASES:-200000}" ;;
  *) echo "usage: bash scripts/fuzz.sh [short|long]" >&2; exit 2 ;;
esac
# Every [[bin]] of fuzz/Cargo.toml is a target.
all_targets=$(awk '/^\[\[bin\]\]/ {bin = 1; next} bin && /^name = / {gsub(/name = |"/, ""); print; bin = 0}' fuzz/Cargo.toml)
targets="${BATON_FUZZ_TARGETS:-$all_targets}"
steps=" ${BATON_FUZZ_STEPS:-stable build run} "
engine="${BATON_FUZZ_ENGINE:-libfuzzer}"
[ "$engine" != stable ] || steps=${steps//" build "/ }
[ "$engine" != stable ] || steps=${steps//" run "/ }
logs=$(mktemp -d "${TMPDIR:-/tmp}/baton-fuzz.XXXXXX")
builder=
trap '[ -z "$builder" ] || kill "$builder" 2>/dev/null; rm -rf "$logs"' EXIT
failed=0

# Building the libFuzzer targets (fuzz/target, a build of its own) runs beside the stable route: the route's
# mutations run on one thread (18 s once built), the build takes the other core.
build_targets() {
  if ! "$TOOLS/bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION into $TOOLS (about 30 s, once)" >&2
    cargo install -q cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$TOOLS"
  fi
  (cd fuzz && RUSTC_BOOTSTRAP=1 "$TOOLS/bin/cargo-fuzz" build -s none >"$logs/build.log" 2>&1) ||
    { cat "$logs/build.log" >&2; echo "fuzz: building the fuzz targets FAILED" >&2; return 1; }
}
if [[ $steps == *" build "* ]]; then
  build_targets & builder=$!
fi

# 1. The stable route.
if [[ $steps == *" stable "* ]]; then
  echo "fuzz: stable route, corpus + $cases mutations per target (release build)" >&2
  for t in $targets; do
    if ! BATON_FUZZ_CASES="$cases" BATON_FUZZ_TARGET="$t" \
      cargo test --release -q -p baton-core --test fuzz_corpus -- --nocapture every_target_over \
      >"$logs/stable-$t.log" 2>&1; then
      cat "$logs/stable-$t.log" >&2
      echo "fuzz: the stable route FAILED for $t" >&2
      failed=1
    fi
  done
fi

if [ -n "$builder" ]; then
  wait "$builder" || exit 1
  builder=
fi

# 2. libFuzzer.
if [[ $steps == *" run "* ]]; then
  build_targets || exit 1 # nothing to do when the build step ran before
  echo "fuzz: libFuzzer, $seconds s per target" >&2
  # Two targets at a time (the machines CI runs on have two cores; each libFuzzer run uses one).
  libfuzz() {
    local t=$1
    mkdir -p "$logs/corpus-$t"
    if ! (cd fuzz && RUSTC_BOOTSTRAP=1 "$TOOLS/bin/cargo-fuzz" run -s none "$t" "$logs/corpus-$t" "corpus/$t" -- \
      -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
      >"$logs/libfuzzer-$t.log" 2>&1); then
      tail -n 40 "$logs/libfuzzer-$t.log" >&2
      echo "fuzz: libFuzzer FAILED for $t (input in fuzz/artifacts/$t/)" >&2
      return 1
    fi
  }
  pending=()
  for t in $targets; do
    libfuzz "$t" & pending+=($!)
    if [ "${#pending[@]}" -ge 2 ]; then
      wait "${pending[0]}" || failed=1
      pending=("${pending[@]:1}")
    fi
  done
  for p in "${pending[@]}"; do wait "$p" || failed=1; done
fi

# 3. Executions per target.
printf '\n%-14s %26s %26s\n' target "stable route (executions)" "libFuzzer (executions)" >&2
for t in $targets; do
  # `|| true`: a step not in this run left no log, and sed's failure must not end the script (pipefail).
  stable=$(sed -n "s/^fuzz_corpus: $t .* = \([0-9]*\) executions$/\1/p" "$logs/stable-$t.log" 2>/dev/null | head -n 1 || true)
  lf=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)$/\1/p' "$logs/libfuzzer-$t.log" 2>/dev/null | tail -n 1 || true)
  if [[ $steps != *" run "* ]]; then lf="not in this run"; else lf="${lf:-FAILED} in ${seconds} s"; fi
  [[ $steps == *" stable "* ]] || stable="not in this run"
  printf '%-14s %26s %26s\n' "$t" "${stable:-FAILED}" "$lf" >&2
done
if [ "$failed" != 0 ]; then
  echo "fuzz: FAILED" >&2
  exit 1
fi
echo "fuzz: no property broken, no panic" >&2
