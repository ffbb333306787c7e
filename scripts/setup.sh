#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh machine (Rust via rustup, Node and npm present).
# Idempotent: a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-tools}"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: adding the wasm32-unknown-unknown target" >&2
  rustup target add wasm32-unknown-unknown
fi

# The wasm-bindgen CLI must equal the wasm-bindgen crate in Cargo.lock, so read it from there.
WBG=$(awk '$0=="name = \"wasm-bindgen\"" {getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
if ! "$TOOLS/bin/wasm-bindgen" --version 2>/dev/null | grep -qx "wasm-bindgen $WBG"; then
  echo "setup: installing wasm-bindgen-cli $WBG into $TOOLS (about two minutes, once)" >&2
  # No --locked: the crate's own lock pins a webpki-roots the registry does not serve.
  cargo install wasm-bindgen-cli --version "=$WBG" --root "$TOOLS"
fi

(cd host-node && npm ci --no-audit --no-fund --loglevel=error)
# The torture harness's baseline (proper-lockfile), pinned by torture/package-lock.json.
(cd torture && npm ci --no-audit --no-fund --loglevel=error)
