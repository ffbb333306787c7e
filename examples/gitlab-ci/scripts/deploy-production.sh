#!/usr/bin/env bash
# Runs under production's lease (`run:` of the action, or `baton run`): exits with the deploy's own code.
set -euo pipefail
echo "deploying production (epoch ${BATON_EPOCH})"
# Your production deploy goes here, e.g.: terraform apply -auto-approve
echo "deploy ${BATON_ENV} ${BATON_SCOPE} ${BATON_EPOCH}" >> "${DEPLOY_LOG:-/dev/null}"
