#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh machine (Rust via rustup, Node and npm present).
# Idempotent: a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-tools}"

# Debian packages: protoc and etcd's .proto includes (the etcd-client crate compiles them), and etcd itself
# (3.4: `etcd` and `etcdctl`) for the tests, which start their own on loopback ports of their own.
missing=()
command -v protoc >/dev/null || missing+=(protobuf-compiler)
[ -e /usr/include/google/protobuf/descriptor.proto ] || missing+=(libprotobuf-dev)
command -v etcd >/dev/null || missing+=(etcd-server)
command -v etcdctl >/dev/null || missing+=(etcd-client)
command -v openssl >/dev/null || missing+=(openssl) # the etcd TLS test makes its certificates
# The Python host of the component example needs a venv (Debian's python3 has none without python3-venv).
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]} (apt-get)" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The package enables a system etcd on 2379 where systemd runs; the tests never use it (nor stop it).
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: adding the wasm32-unknown-unknown target" >&2
  rustup target add wasm32-unknown-unknown
fi
# rustfmt and clippy come with rustup's default profile; a minimal one lacks them (scripts/test.sh uses both).
for c in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$c"; then
    echo "setup: adding the $c component" >&2
    rustup component add "$c"
  fi
done

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

# The component examples' two hosts (docs/component.md, examples/component/): jco from npm and wasmtime
# from PyPI, pinned by examples/component/package-lock.json and python/requirements.txt. Installed once
# into $TOOLS (jco brings about 340 MB and takes about 20 s) and linked into examples/component/; skipped
# while the pins are unchanged and the install still works.
EX=examples/component
JCO="$TOOLS/component-jco"
want=$(sha256sum "$EX/package.json" "$EX/package-lock.json")
if [ "$(cat "$JCO/installed" 2>/dev/null)" != "$want" ] || ! "$JCO/node_modules/.bin/jco" --version >/dev/null 2>&1; then
  echo "setup: installing jco into $JCO (once)" >&2
  rm -rf "$JCO" && mkdir -p "$JCO" && cp "$EX/package.json" "$EX/package-lock.json" "$JCO/"
  (cd "$JCO" && npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$want" >"$JCO/installed"
fi
PYENV="$TOOLS/component-python"
want=$(sha256sum "$EX/python/requirements.txt")
if [ "$(cat "$PYENV/installed" 2>/dev/null)" != "$want" ] || ! "$PYENV/bin/python" -c 'import wasmtime.component' 2>/dev/null; then
  echo "setup: making a venv with wasmtime in $PYENV (once)" >&2
  rm -rf "$PYENV" && python3 -m venv "$PYENV"
  "$PYENV/bin/pip" install --quiet --disable-pip-version-check -r "$EX/python/requirements.txt"
  printf '%s\n' "$want" >"$PYENV/installed"
fi
# Links, not copies: a real directory left by a manual `npm install` there is replaced.
for link in "node_modules:$JCO/node_modules" ".venv:$PYENV"; do
  name="$EX/${link%%:*}"
  [ -L "$name" ] || rm -rf "$name"
  ln -sfn "${link#*:}" "$name"
done
