#!/bin/sh
# The command a torture worker runs under `baton run`: appends WRITES entries
# `<scope>/<holder>/<epoch>/<seq>` to the scope's receipt with fenced `baton ledger record`s, GAP_MS apart,
# and reports each write the store confirmed to LOG (one JSON line). A lost reply is retried (the write is
# idempotent); LOCK_LOST (exit 3) ends the command, as baton's fencing demands.
# After write n it creates shared resource `shared-<k>` for the n-th k of SHARED (space-separated; keys every
# scope may try to create at once): `ledger intend` then `ledger record`; OWNED_BY_OTHER_SCOPE (another scope
# owns it) is logged as `refused` and the command goes on.
# Usage: cli-writes.sh WRITES GAP_MS LOG [SHARED]   (BATON_BIN, and what `baton run` exports, in the environment)
set -u
writes=$1 gap=$2 log=$3 shared=${4:-}
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
  k=$(echo "$shared" | awk -v n="$seq" '{print $n}')
  if [ -n "$k" ] && [ "$k" != "-" ]; then
    attempt=0
    while :; do
      out=$("$BATON_BIN" ledger intend --adapter torture --key "shared-$k" --json 2>>"$log.stderr" &&
        "$BATON_BIN" ledger record --adapter torture --key "shared-$k" --id "$BATON_SCOPE" --json 2>>"$log.stderr")
      rc=$?
      [ "$rc" -eq 0 ] && { printf '{"event":"shared","key":"shared-%s"}\n' "$k" >>"$log"; break; }
      case "$out" in *OWNED_BY_OTHER_SCOPE*) printf '{"event":"refused","key":"shared-%s"}\n' "$k" >>"$log"; break ;; esac
      [ "$rc" -eq 3 ] && exit 3
      attempt=$((attempt + 1))
      [ "$attempt" -ge 3 ] && exit "$rc"
    done
  fi
  sleep "$(awk "BEGIN{print $gap/1000}")"
  seq=$((seq + 1))
done
