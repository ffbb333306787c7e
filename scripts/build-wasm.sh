#!/usr/bin/env bash
# Builds both WebAssembly artifacts of the core:
#   target/baton-core.component.wasm  the component (no imports), embedded by the `baton` binary
#   host-node/pkg/                    the wasm-bindgen module of the npm package
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-tools}"
P="${BATON_WASM_PROFILE:-wasm}"
# The component: the core module linked by wasm-component-ld, which ships with rustup. Passed per crate
# (not as a global linker) so the wasm-bindgen crate is not affected.
cargo rustc -q -p baton-component --target wasm32-unknown-unknown --profile "$P" -- -C linker=wasm-component-ld
cp "target/wasm32-unknown-unknown/$P/baton_component.wasm" target/baton-core.component.wasm
# The npm package's module.
cargo build -q -p baton-node --target wasm32-unknown-unknown --profile "$P"
"$TOOLS/bin/wasm-bindgen" --target nodejs --remove-name-section --remove-producers-section \
  --out-dir host-node/pkg "target/wasm32-unknown-unknown/$P/baton_node.wasm"
