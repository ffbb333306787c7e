#!/usr/bin/env bash
# Every test of every host: the core (unit, conformance corpus, simulation), the wasmtime component and the
# CLI, the Node package, the component's worked examples (jco, Python wasmtime), the cross-host tests, the
# fuzz targets (short), the torture harness (short profile), formatting, clippy on native and wasm32, tsc
# --strict.
# Installs what it needs first (scripts/setup.sh). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Each step's header says how long the run has taken so far (CI must stay under 25 minutes cold).
start=$SECONDS
step() { printf '\n== %s  [%d s]\n' "$*" "$((SECONDS - start))" >&2; }

step "setup";                bash scripts/setup.sh
step "format";               cargo fmt --all --check
step "module cycles";        node scripts/module-cycles.mjs core/src host-native/src
step "build the wasm";       bash scripts/build-wasm.sh
# Clippy (native) lints as the tests build: clippy-driver compiles the workspace's own crates (lints, then
# code, as `cargo clippy` runs it but with code generation), rustc compiles every dependency, so the tests'
# build is the lint and nothing is checked a second time (`cargo clippy` would compile every dependency again
# in check mode: 150 s cold). CLIPPY_ARGS is how cargo-clippy hands clippy-driver its flags; cargo gives the
# wrapper only to workspace members and keeps it out of the dependencies' fingerprints.
clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
  { echo "clippy-driver not found: run scripts/setup.sh (it installs clippy)" >&2; exit 1; }
lint_build() { RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" "$@"; }
# The fault tests (torture, the cross-host races) run the release CLI with the test faults (BATON_TEST_*),
# kept apart from target/release/baton, which is built without them.
faults_bin="$PWD/target/test-faults/baton"
# baton-node's tests are apart: they turn on baton-core's `ts` feature, which in the workspace run would
# rebuild the core and the CLI a second time (feature unification).
workspace_tests() { lint_build env BATON_FAULTS_BIN="$faults_bin" cargo test --workspace --exclude baton-node --quiet "$@"; }
step "build (release, test faults)"
                             cargo build --release --quiet -p baton-native --bin baton --features test-faults
                             mkdir -p target/test-faults && cp target/release/baton target/test-faults/baton
# Built first, run below (with the background steps going): the build is the lint, the run waits far more
# than it computes.
step "cargo test: build (the workspace's crates built through clippy: -D warnings)"
                             workspace_tests --no-run

# The steps below that compute and never wait (the simulation, the fuzz targets' stable route and libFuzzer
# build, baton-node's build and tests, clippy on wasm32) run in the background at the lowest CPU priority
# (nice 19), while the foreground tests wait on processes, git and etcd: the waiting tests keep the CPU
# whenever they want it (a nice-19 process gets about 1.5% of a core against a nice-0 one), the background
# takes the rest. The foreground is busier than it looks (cross-host: 190 s of CPU in 120 s), so the gain is
# what it leaves: about 120 s in a cold run here. Their output is printed when they are joined. libFuzzer's
# timed runs (5 s per target) are not among them: they run after the join, with the machine to themselves.
background_log=$(mktemp "${TMPDIR:-/tmp}/baton-test-background.XXXXXX")
background_steps() {
  renice -n 19 -p "$BASHPID" >/dev/null
  step "[background] simulation (100,000 schedules, release)"
                             BATON_SIM_SCHEDULES=100000 cargo test --release --quiet -p baton-core --test sim
  step "[background] fuzz: the stable route and the libFuzzer targets' build"
                             BATON_FUZZ_STEPS="stable build" bash scripts/fuzz.sh short
  step "[background] TypeScript declarations generated from the Rust types (host-node/types.d.ts is not stale), baton-node's tests"
                             lint_build cargo test --quiet -p baton-node
  step "[background] clippy (wasm32)"
                             cargo clippy -p baton-core -p baton-component -p baton-node --target wasm32-unknown-unknown --quiet -- -D warnings
  step "[background] done"
}
# Its own process group (job control on while it starts), so that a failing run stops all of it.
set -m
background_steps >"$background_log" 2>&1 &
background=$!
set +m
trap 'kill -- -"$background" 2>/dev/null || true; echo "== background steps (stopped):" >&2; cat "$background_log" >&2; rm -f "$background_log"' EXIT

# Four tests at a time in each test binary: the CLI's tests wait on processes, git and etcd far more than
# they compute (each on temporary directories and loopback ports of its own), which takes 40% off.
step "cargo test: run"
                             RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" workspace_tests
step "node package";         (cd host-node && npm test && npm run --silent typecheck)
step "component examples (jco under Node, wasmtime under Python, no JSON request in the component)"
                             (cd examples/component && npm test)
# The Node and cross-host test files wait on processes, git and etcd far more than they compute: three files
# at a time (each on loopback ports and temporary directories of its own) halve their wall time.
step "cross-host";           BATON_BIN="$faults_bin" node --test --test-concurrency=3 tests/cross-host/
step "torture checker";      node --test torture/
step "torture (short profile: dir, git and etcd stores, proper-lockfile baseline, sabotaged-store control)"
                             BATON_BIN="$faults_bin" node torture/torture.mjs --profile short --sabotage
step "joining the background steps"
background_ok=1
wait "$background" || background_ok=0
trap - EXIT
sed 's/^/  /' "$background_log" >&2
rm -f "$background_log"
[ "$background_ok" = 1 ] || { echo "a background step FAILED (above)" >&2; exit 1; }
step "fuzz: libFuzzer (5 s per target)"
                             BATON_FUZZ_STEPS=run bash scripts/fuzz.sh short
step "all tests passed"
