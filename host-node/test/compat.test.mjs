// Beside the original tool (issue 18), deterministically: a lock.json the original creates (link(2), without
// the mutex) between baton's load and its commit is never replaced; baton decides again and answers LOCK_HELD
// naming it. The races of the same thing are tests/cross-host/sponson-compat.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync, linkSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { transact } = require('../js/dir-store.cjs');
const { call } = require('../js/core.cjs');

/** What the original writes: a complete temp file linked to lock.json (fails if one exists). */
function originalCreates(cellDir, holder) {
  const now = Date.now();
  const tmp = path.join(cellDir, 'lock.json.sponson.tmp');
  writeFileSync(tmp, `${JSON.stringify({ holder, acquiredAt: new Date(now).toISOString(), expiresAt: new Date(now + 600_000).toISOString() }, null, 2)}\n`);
  linkSync(tmp, path.join(cellDir, 'lock.json'));
  rmSync(tmp);
}

test('a lock the original creates between our load and our commit is never replaced: decide again, LOCK_HELD', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-compat-')));
  const cellDir = path.join(root, 'preview', 'pr-1');
  // The cell exists (a free scope that ran before): the store decides under its mutex from the start.
  mkdirSync(cellDir, { recursive: true });
  let decisions = 0;
  const outcome = await transact(root, { env: 'preview', scope: 'pr-1' }, (cell, nowMs) => {
    decisions += 1;
    const answer = call('lock-acquire', { cell, holder: 'baton-1', ttlMs: 60_000, nowMs });
    if (decisions === 1) originalCreates(cellDir, 'run-5ca1ab1e'); // the original's link lands now
    return answer;
  }).catch((e) => e);
  assert.equal(decisions, 2, 'decided again on what is there now');
  assert.equal(outcome.code, 'LOCK_HELD');
  assert.equal(outcome.details.lock.holder, 'run-5ca1ab1e');
  assert.equal(JSON.parse(readFileSync(path.join(cellDir, 'lock.json'), 'utf8')).holder, 'run-5ca1ab1e');
  // The prefix before the conflict (epoch.json) landed, as a crash there would leave it; no temp file is left.
  assert.deepEqual(readdirSync(cellDir).sort(), ['epoch.json', 'lock.json']);
});
