// Issue 17: the mutex break is safe for any number of contenders. Several processes meet a stale mutex at the
// same instant, round after round (a dead owner's, the original tool's of a dead owner, half a file); each
// proves it is the only holder by creating a marker exclusively. Two owners at once would show as a marker
// that already exists. BATON_MUTEX_ROUNDS (default 1000) rounds, 8 contenders each (BATON_MUTEX_CONTENDERS; with the old rename-and-link-back break, 8 found two holders within 300 rounds, 4 did not).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync, existsSync, realpathSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const contender = fileURLToPath(new URL('./fixtures/mutex-contender.cjs', import.meta.url));
const ROUNDS = Number(process.env.BATON_MUTEX_ROUNDS ?? 1000);
const CONTENDERS = Number(process.env.BATON_MUTEX_CONTENDERS ?? 8);
const PERIOD_MS = 12;

/** Stale mutex contents, one per round in turn: a dead process (with and without a start time), half a file. */
function staleContents() {
  const dead = spawnSync('true').pid;
  return [
    `${JSON.stringify({ pid: dead, start: '1', host: os.hostname(), token: 'deaddeaddeaddead', at: 1 })}\n`,
    JSON.stringify({ pid: dead, token: '0123456789abcdef', at: Date.now() }),
    '{"pid": 12',
  ];
}

test(`${CONTENDERS} processes meet a stale mutex at once, ${ROUNDS} rounds: never two holders, nothing left behind`, { timeout: 300_000 }, async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-mutex-')));
  const stale = staleContents();
  for (let r = 0; r < ROUNDS; r += 1) {
    mkdirSync(path.join(root, `c${r}`));
    writeFileSync(path.join(root, `c${r}`, 'lock.mutex'), stale[r % stale.length]);
  }
  const t0 = Date.now() + 1500;
  const started = performance.now();
  const children = Array.from({ length: CONTENDERS }, () => {
    const child = spawn(process.execPath, [contender, root, String(ROUNDS), String(t0), String(PERIOD_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    return once(child, 'close').then(([code]) => ({ code, ...JSON.parse(out || '{}') }));
  });
  const results = await Promise.all(children);
  console.log(`# ${ROUNDS} rounds of ${CONTENDERS} contenders in ${Math.round(performance.now() - started)} ms`);
  for (const r of results) assert.deepEqual(r, { code: 0, rounds: ROUNDS, overlaps: 0 });
  const left = [];
  for (let r = 0; r < ROUNDS; r += 1) left.push(...readdirSync(path.join(root, `c${r}`)).map((f) => `c${r}/${f}`));
  assert.deepEqual(left, [], 'no mutex, claim, tomb or temp file is left behind');
});

test('a held mutex says `at` and refreshes it, so the original tool (stale after 10 s) sees it as live', { timeout: 30_000 }, async () => {
  const { takeMutex, releaseMutex } = await import('../js/mutex.cjs');
  const cellDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-mutex-at-')));
  const file = path.join(cellDir, 'lock.mutex');
  const held = await takeMutex(cellDir, { env: 'preview', scope: 'at' });
  const first = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(first), ['pid', 'start', 'host', 'token', 'at']);
  assert.equal(first.pid, process.pid);
  await new Promise((resolve) => setTimeout(resolve, 2600));
  const later = JSON.parse(readFileSync(file, 'utf8'));
  assert.ok(later.at > first.at, `at refreshed: ${first.at} -> ${later.at}`);
  assert.deepEqual({ ...later, at: first.at }, first, 'only `at` changes');
  await releaseMutex(held);
  assert.equal(existsSync(file), false, 'released after a refresh');
});
