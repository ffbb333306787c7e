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
step "build";                cargo build --quiet -p baton-native
# The fault tests (torture, the cross-host races) run the release CLI with the test faults (BATON_TEST_*),
# kept apart from target/release/baton, which is built without them.
step "build (release, test faults)"
                             cargo build --release --quiet -p baton-native --bin baton --features test-faults
                             mkdir -p target/test-faults && cp target/release/baton target/test-faults/baton
# baton-node's one test is apart: it turns on baton-core's `ts` feature, which in the workspace run would
# rebuild the core and the CLI a second time (feature unification).
# Four tests at a time in each test binary: the CLI's tests wait on processes, git and etcd far more than
# they compute (each on temporary directories and loopback ports of its own), which takes 40% off.
step "cargo test";           RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" BATON_FAULTS_BIN="$PWD/target/test-faults/baton" \
                             cargo test --workspace --exclude baton-node --quiet
step "TypeScript declarations generated from the Rust types (host-node/types.d.ts is not stale)"
                             cargo test --quiet -p baton-node --test ts_types
step "simulation (100,000 schedules, release)"
                             BATON_SIM_SCHEDULES=100000 cargo test --release --quiet -p baton-core --test sim
step "fuzz (stable route + 5 s of libFuzzer per target)"; bash scripts/fuzz.sh short
step "clippy (native)";      cargo clippy --workspace --all-targets --quiet -- -D warnings
step "clippy (wasm32)";      cargo clippy -p baton-core -p baton-component -p baton-node --target wasm32-unknown-unknown --quiet -- -D warnings
step "node package";         (cd host-node && npm test && npm run --silent typecheck)
step "component examples (jco under Node, wasmtime under Python, the JSON surface left)"
                             (cd examples/component && npm test)
# The Node and cross-host test files wait on processes, git and etcd far more than they compute: three files
# at a time (each on loopback ports and temporary directories of its own) halve their wall time.
step "cross-host";           BATON_BIN="$PWD/target/test-faults/baton" node --test --test-concurrency=3 tests/cross-host/
step "torture checker";      node --test torture/
step "torture (short profile: dir, git and etcd stores, proper-lockfile baseline, sabotaged-store control)"
                             BATON_BIN="$PWD/target/test-faults/baton" node torture/torture.mjs --profile short --sabotage
step "all tests passed"
