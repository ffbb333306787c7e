#!/usr/bin/env bash
# Runs under the scope's lease: BATON_ENV, BATON_SCOPE, BATON_HOLDER, BATON_EPOCH and BATON_STORE are set.
set -euo pipefail
echo "deploying ${BATON_SCOPE} to ${BATON_ENV} (epoch ${BATON_EPOCH})"
# Your deploy goes here, named after the scope so each pull request gets its own, e.g.:
#   vercel deploy --prebuilt --env SCOPE="${BATON_SCOPE}"
#   terraform apply -auto-approve -var "name=${BATON_SCOPE}"
echo "deploy ${BATON_ENV} ${BATON_SCOPE} ${BATON_EPOCH}" >> "${DEPLOY_LOG:-/dev/null}"
