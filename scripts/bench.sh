#!/usr/bin/env bash
# Benchmarks: per-call decision cost (native, component, Node), cold start of `baton scope` vs
# `git --version`, the lease cycle on the dir store vs flock(1) and proper-lockfile, on the git store vs raw
# pushes, and on the etcd store vs three raw etcd transactions and `etcdctl lock` (native, then Node with
# etcd3). Every figure is a ratio to a baseline measured in the same run; nothing is asserted.
# BATON_BENCH_BEFORE=<another baton binary> (say, a build of an older commit) adds that build's cold start
# to the same run.
# The text goes to stdout and to $BATON_BENCH_OUT/bench.txt (default target/bench); the figures, each with
# its baseline, to figures.json there, drawn as one chart, figures.svg (scripts/bench-chart.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${BATON_BENCH_OUT:-target/bench}"
mkdir -p "$OUT"
export BATON_BENCH_JSON="$PWD/$OUT/figures.jsonl"
rm -f "$BATON_BENCH_JSON"
bash scripts/setup.sh
bash scripts/build-wasm.sh
# The binary alone, as people install it (the examples' dev-dependencies would give its wasmtime a compiler).
cargo build --release -q -p baton-native --bin baton
cargo build --release -q -p baton-native --example bench --example bench_ownership --example bench_git --example bench_claims --example bench_etcd
(cd host-node/bench && npm install --no-audit --no-fund --loglevel=error >/dev/null)
NODE_FIGURES=$(node host-node/bench/bench.mjs)
echo "node: $NODE_FIGURES" >&2
{
BATON_BENCH_NODE="$NODE_FIGURES" BATON_BIN="$PWD/target/release/baton" target/release/examples/bench
echo
BATON_BENCH_NODE="$NODE_FIGURES" target/release/examples/bench_ownership
echo
BATON_BIN="$PWD/target/release/baton" target/release/examples/bench_git
echo
target/release/examples/bench_claims
BATON_BIN="$PWD/target/release/baton" target/release/examples/bench_etcd
echo
node host-node/bench/etcd.mjs
} | tee "$OUT/bench.txt"
node scripts/bench-chart.mjs "$BATON_BENCH_JSON" "$OUT"
