#!/usr/bin/env bash
# `baton-lease destroy` / `gc --destroy` (or the `baton` CLI's) run this under the scope's lease, with what
# the scope owns on stdin: a JSON list of {adapter, key, id, provider, createdBy}, newest first. Delete each
# and report it with `baton-lease ledger forget`: an entry left makes the destroy fail (nothing is dropped
# on a guess), and the next destroy or gc tries again.
set -euo pipefail
node -e 'for (const e of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log([e.adapter, e.key, e.id ?? "", JSON.stringify(e.provider ?? {})].join("\t"))' |
  while IFS=$'\t' read -r adapter key id provider; do
    echo "deleting ${adapter} ${key} (${id}) of ${BATON_SCOPE}"
    # Your teardown of that resource goes here, e.g.: vercel remove "${id}" --yes
    baton-lease ledger forget --adapter "${adapter}" --key "${key}" --provider "${provider}"
  done
echo "destroy ${BATON_ENV} ${BATON_SCOPE}" >> "${DEPLOY_LOG:-/dev/null}"
