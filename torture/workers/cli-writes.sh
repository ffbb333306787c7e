#!/bin/sh
# The command a torture worker runs under `baton run`: appends WRITES entries
# `<scope>/<holder>/<epoch>/<seq>` to the scope's receipt with fenced `baton ledger record`s, GAP_MS apart,
# and reports each write the store confirmed to LOG (one JSON line). A lost reply is retried (the write is
# idempotent); LOCK_LOST (exit 3) ends the command, as baton's fencing demands.
# Usage: cli-writes.sh WRITES GAP_MS LOG   (BATON_BIN, and what `baton run` exports, in the environment)
set -u
writes=$1 gap=$2 log=$3
# baton runs this command in its own process group ($$ leads it): the harness signals that group too.
printf '{"event":"pgid","pgid":%s}\n' "$$" >>"$log"
printf '{"event":"lease","holder":"%s","epoch":%s}\n' "$BATON_HOLDER" "$BATON_EPOCH" >>"$log"
seq=1
while [ "$seq" -le "$writes" ]; do
  key="$BATON_SCOPE/$BATON_HOLDER/$BATON_EPOCH/$seq"
  attempt=0
  until "$BATON_BIN" ledger record --adapter torture --key "$key" --id x >/dev/null 2>>"$log.stderr"; do
    rc=$?
    attempt=$((attempt + 1))
    [ "$rc" -eq 3 ] && exit 3
    [ "$attempt" -ge 3 ] && exit "$rc"
  done
  printf '{"event":"ack","key":"%s"}\n' "$key" >>"$log"
  sleep "$(awk "BEGIN{print $gap/1000}")"
  seq=$((seq + 1))
done
