#!/usr/bin/env bash
# Runs under the scope's lease: BATON_ENV, BATON_SCOPE, BATON_HOLDER, BATON_EPOCH and BATON_STORE are set,
# and `baton-lease` is on PATH (the action's steps, `npx baton-lease run`).
set -euo pipefail
echo "deploying ${BATON_SCOPE} to ${BATON_ENV} (epoch ${BATON_EPOCH})"
# Your deploy goes here, named after the scope so each pull request gets its own, e.g.:
#   url="$(vercel deploy --prebuilt)"   or   terraform apply -auto-approve -var "name=${BATON_SCOPE}"
url="https://${BATON_SCOPE}.preview.example.com"
# What it created: this scope owns it from now on, and `destroy` / `gc --destroy` hand it back to delete.
# (Fenced: it lands only while this run still holds the lease at its epoch.)
baton-lease ledger record --adapter preview-app --key "app-${BATON_SCOPE}" --id "${url}"
echo "deploy ${BATON_ENV} ${BATON_SCOPE} ${BATON_EPOCH}" >> "${DEPLOY_LOG:-/dev/null}"
