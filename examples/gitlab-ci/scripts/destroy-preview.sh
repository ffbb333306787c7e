#!/usr/bin/env bash
# `baton destroy` / `baton gc --destroy` run this under the scope's lease, with what the scope owns on stdin:
# a JSON list of {adapter, key, id, provider, createdBy}, newest first. Delete each and report it with
# `baton ledger forget --adapter A --key K` (entries left make the destroy fail: nothing is dropped on a guess).
set -euo pipefail
owned="$(cat)"
echo "destroying ${BATON_SCOPE}: ${owned}"
# Your teardown goes here, e.g.: terraform destroy -auto-approve -var "name=${BATON_SCOPE}"
echo "destroy ${BATON_ENV} ${BATON_SCOPE}" >> "${DEPLOY_LOG:-/dev/null}"
