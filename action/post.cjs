'use strict';
/**
 * The action's post step (the runner runs it after the job's steps, also when one failed or the job was
 * cancelled: `post-if: always()`). For a job-long lease: stops the renewer (SIGTERM: it releases and
 * exits), waits for it (at most 15 s, then SIGKILL), prints its log, and then makes sure the lock is not
 * left behind: a lock still held by this job's holder at its epoch (a renewer that was killed, or crashed)
 * is released here. A lock that is no longer ours is left alone: post never releases what it did not hold.
 * Nothing to do after `run:` or `mode: gc` (they released before their step ended).
 */
const fs = require('node:fs');
const { state } = require('./runner.cjs');
const { pkg } = require('./lease-inputs.cjs');

const { openStore } = pkg('js/dir-store.cjs');
const { startTime } = pkg('js/process.cjs');

const note = (text) => process.stderr.write(`baton: ${text}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function stopRenewer(pid) {
  if (startTime(pid) === null) return note(`the renewer (pid ${pid}) had already ended`);
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + 15_000;
  while (startTime(pid) !== null) {
    if (Date.now() > until) {
      note(`the renewer (pid ${pid}) did not stop within 15 s: killing it`);
      process.kill(pid, 'SIGKILL');
      await sleep(100);
      return;
    }
    await sleep(50);
  }
}

async function main() {
  const pid = Number(state('renewer'));
  if (!Number.isSafeInteger(pid) || pid <= 0) return 0;
  await stopRenewer(pid);
  const logFile = state('renewer-log');
  if (logFile && fs.existsSync(logFile)) {
    process.stdout.write(`::group::baton renewer log\n${fs.readFileSync(logFile, 'utf8')}::endgroup::\n`);
  }
  const [holder, env, scope, spec] = ['holder', 'env', 'scope', 'store'].map(state);
  const epoch = Number(state('epoch'));
  if (!holder) return 0; // it never held the lease
  const store = openStore(spec);
  try {
    // A no-op unless this holder still holds it at this epoch (one compare-and-swap in the store).
    const { released } = await store.releaseLock({ env, scope, holder, epoch });
    note(released ? `released ${env}/${scope} (${holder}, epoch ${epoch})` : `${env}/${scope} is not held by ${holder} at epoch ${epoch} (any more)`);
  } finally {
    await store.close();
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`error ${e.code ?? 'INTERNAL'}: the baton post step failed: ${e.message}\n`);
    process.exitCode = 1;
  },
);
