#!/usr/bin/env bash
# Builds the GitHub Action's bundle: the npm package exactly as `npm pack` in host-node/ gives it, unpacked
# into action/dist/baton-lease/ (committed: the runner fetches the repository and runs it with no network).
# Run it after changing host-node/ or the core (after scripts/build-wasm.sh), and commit action/dist/.
# `tests/cross-host/action-bundle.test.mjs` fails while the committed bundle differs from a fresh one.
# Usage: scripts/build-action.sh [OUT_DIR]   (default: action/dist/baton-lease)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-action/dist/baton-lease}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd host-node && npm pack --silent --pack-destination "$tmp" >/dev/null)
tar -xzf "$tmp"/baton-lease-*.tgz -C "$tmp"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$tmp/package" "$out"
