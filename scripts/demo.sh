#!/usr/bin/env bash
# baton's main job on the embedded default store: `baton run -- CMD` in this repository.
# Installs what it needs (scripts/setup.sh), builds the release binary, then runs a command under the
# lease of this checkout's scope and shows the lock before, during and after.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build-wasm.sh
cargo build --release -q -p baton-native
BATON="$PWD/target/release/baton"
# The demo uses the embedded store even on a CI machine, where `baton run` would default to the origin remote.
unset CI BATON_STORE

echo "== the scope of this checkout" >&2
"$BATON" scope --json
echo "== baton run: the command runs under the lease, on the embedded store (.baton/ at the repository root)" >&2
"$BATON" run --ttl 30s -- sh -c '
  echo "command: running as $BATON_HOLDER, epoch $BATON_EPOCH, scope $BATON_ENV/$BATON_SCOPE" >&2
  "$0" lock status
  echo "deployed at $(date -u +%FT%TZ)" | "$0" write demo.txt
  echo "another run of this scope now gets LOCK_HELD:" >&2
  "$0" lock acquire --holder someone-else || echo "  (exit $?, as it should be)" >&2
' "$BATON"
echo "== after the run the lease is released" >&2
"$BATON" lock status
