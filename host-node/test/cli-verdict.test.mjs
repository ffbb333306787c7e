// One journey, one verdict: a destroy that leaves resources or intents behind fails the same way through
// `baton destroy` (the native CLI) and through Node's `destroy` (both drive the core's run machine): the
// same code, message, exit code and receipt status. Needs the native CLI (`cargo build -p baton-native`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { destroy, openStore, withLease } from 'baton-lease';
import { quiet, rejection } from '../test-helpers.mjs';

const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const skip = existsSync(bin) ? false : `needs the native CLI at ${bin} (cargo build -p baton-native, or BATON_BIN)`;
const context = { env: 'preview', scope: 'pr-11', branch: 'feat/eleven', sha: 'abc1234', pr: 11 };
const db = { adapter: 'neon', key: 'db-pr-11', provider: { project: 'p1' } };

/** A store whose scope owns `db` (recorded) or has it as an intent of a run that failed during the create. */
async function journey(intent) {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-verdict-')));
  const store = openStore(`dir:${root}`);
  await withLease(store, { context, ...quiet }, async (lease) => {
    if (intent) await lease.intend(db);
    else await lease.record(db, 'br_11');
  }).catch(() => {});
  return { root, store, receipt: () => JSON.parse(readFileSync(path.join(root, 'preview', 'pr-11', 'latest.json'), 'utf8')) };
}

/** `baton destroy` with a command that deletes nothing: {exit, error, status}. */
function cliDestroy(root) {
  const args = ['destroy', '--json', '--store', `dir:${root}`, '--env', 'preview', '--scope', 'pr-11', '--branch', 'feat/eleven', '--sha', 'abc1234', '--pr', '11', '--', 'sh', '-c', 'cat >/dev/null'];
  const r = spawnSync(bin, args, { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  const envelope = JSON.parse(r.stdout);
  return { exit: r.status, error: envelope.error, stderr: r.stderr };
}

// Both hosts carry out the core's run machine, so the code, the message and the exit are the core's.
for (const [intent, code] of [
  [false, 'COMMAND_FAILED'],
  [true, 'INTENT_UNRESOLVED'],
]) {
  test(`a destroy that leaves ${intent ? 'an intent' : 'a resource'}: ${code} from the CLI and from Node alike`, { skip }, async () => {
    const cli = await journey(intent);
    const native = cliDestroy(cli.root);
    assert.equal(native.error?.code, code, native.stderr);

    const node = await journey(intent);
    let lease = null;
    const e = await rejection(
      destroy(node.store, { context, ...quiet }, async (resources, l) => {
        lease = l;
        assert.deepEqual(resources.map((r) => r.key), ['db-pr-11']);
      }),
    );
    assert.equal(e.code, code);
    assert.equal(e.message, native.error.message, 'the same message');
    assert.equal(lease.verdict.exit, native.exit, 'the same exit code');
    assert.equal(node.receipt().status, cli.receipt().status);
    assert.equal(node.receipt().status, 'failed');
    assert.deepEqual(node.receipt().ledger.map((r) => r.key), cli.receipt().ledger.map((r) => r.key));
    for (const s of [cli.store, node.store]) assert.equal(await s.readLock({ env: 'preview', scope: 'pr-11' }), null);
  });
}
