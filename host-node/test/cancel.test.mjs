// Cancellation of runs in Node, the way CI runners cancel a job (GitHub Actions: SIGINT, SIGTERM 7.5 s
// later, SIGKILL of the whole tree 2.5 s after that): the run machine aborts `lease.signal`, gives a callback
// that ignores it up at the end of the grace, writes the receipt `cancelled` and releases, all before the
// runner's SIGKILL; then the process exits 128 + n. Real child processes on a real dir store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openStore, withLease } from 'baton-lease';
import { quiet, rejection } from '../test-helpers.mjs';

const pkgUrl = pathToFileURL(path.join(fileURLToPath(new URL('..', import.meta.url)), 'js/index.mjs')).href;
const GRACE_MS = 5_000;

function fresh() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-cancel-')));
  return { root, store: openStore(`dir:${root}`) };
}

const ctx = (scope, pr) => ({ env: 'preview', scope, branch: `feat/${scope}`, sha: 'abc1234', pr });

/**
 * A child script: withLease on each of `scopes` at once, each callback awaiting `work` (JS text, with
 * `lease` in scope). It prints JSON lines: `{ev:'started'}` per run, `{ev:'sigint'|'sigterm', t}` when the
 * process receives one, `{ev:'abort', code}`, and `{ev:'op', op, t}` for each store transaction
 * (`t`: the child's monotonic clock, the one the run machine reads). With `unhandled`, nobody handles
 * what withLease rejects with.
 */
function script(root, scopes, work, { unhandled = false } = {}) {
  return `import { openStore, withLease } from ${JSON.stringify(pkgUrl)};
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
process.on('SIGINT', () => out({ ev: 'sigint', t: performance.now() }));
process.on('SIGTERM', () => out({ ev: 'sigterm', t: performance.now() }));
const dir = openStore(${JSON.stringify(`dir:${root}`)});
const store = {
  list: (env) => dir.list(env),
  read: (cell, op, request) => dir.read(cell, op, request),
  async transact(cell, op, request) {
    out({ ev: 'op', op: op === 'cell-steps' ? request.steps.map((s) => s.op).join('+') : op, scope: cell.scope, t: performance.now() });
    return dir.transact(cell, op, request);
  },
};
const runs = ${JSON.stringify(scopes)}.map((scope, i) =>
  withLease(store, { context: { env: 'preview', scope, branch: 'feat/' + scope, sha: 'abc1234', pr: i + 1 }, onWarning() {} }, async (lease) => {
    lease.signal.addEventListener('abort', () => out({ ev: 'abort', scope, code: lease.signal.reason.code }));
    out({ ev: 'started', scope });
    ${work}
  })${unhandled ? '' : ".then(() => out({ ev: 'resolved' }), (e) => out({ ev: 'rejected', scope, code: e.code, message: e.message }))"},
);
${unhandled ? '' : "await Promise.all(runs);\nout({ ev: 'after' });"}
`;
}

/** Spawns the script in a process group of its own; `lines` collects its parsed stdout. */
function start(root, file, text) {
  writeFileSync(file, text);
  const proc = spawn(process.execPath, [file], { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  let stderr = '';
  let buffer = '';
  proc.stdout.on('data', (d) => {
    buffer += d;
    const parts = buffer.split('\n');
    buffer = parts.pop();
    for (const p of parts) lines.push(JSON.parse(p));
  });
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, at: performance.now() })));
  return { proc, lines, exited, stderr: () => stderr };
}

async function until(pred, ms, what) {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The scope's receipt as stored. */
const receipt = (root, scope) => JSON.parse(readFileSync(path.join(root, 'preview', scope, 'latest.json'), 'utf8'));

test("a runner's cancellation of a callback that ignores the abort: lock free and receipt cancelled within 10 s, exit 130", async () => {
  const { root, store } = fresh();
  const child = start(root, path.join(root, 'child.mjs'), script(root, ['pr-1'], 'await new Promise((r) => setTimeout(r, 60_000));'));
  await until(() => child.lines.some((l) => l.ev === 'started'), 20_000, 'the callback to start');
  assert.equal((await store.readLock({ env: 'preview', scope: 'pr-1' })).holder.startsWith('run-'), true);

  // The runner: SIGINT, SIGTERM 7.5 s later, SIGKILL of the tree 2.5 s after that (each if still running).
  const sigintAt = performance.now();
  let exit = null;
  child.exited.then((e) => {
    exit = e;
  });
  child.proc.kill('SIGINT');
  let freeAt = null;
  while (exit === null && performance.now() - sigintAt < 10_000) {
    if (freeAt === null && (await store.readLock({ env: 'preview', scope: 'pr-1' })) === null) freeAt = performance.now();
    if (performance.now() - sigintAt >= 7_500 && !child.lines.some((l) => l.ev === 'sigterm')) child.proc.kill('SIGTERM');
    await sleep(50);
  }
  if (exit === null) {
    process.kill(-child.proc.pid, 'SIGKILL');
    await child.exited;
  }
  freeAt ??= (await store.readLock({ env: 'preview', scope: 'pr-1' })) === null ? performance.now() : null;
  const log = child.lines;
  const detail = `${JSON.stringify(log)}\n${child.stderr()}`;

  assert.ok(exit !== null, `the child exited before the runner's SIGKILL\n${detail}`);
  assert.equal(exit.code, 130, `exit 128 + SIGINT\n${detail}`);
  assert.ok(exit.at - sigintAt < 10_000, `exited ${(exit.at - sigintAt).toFixed(0)} ms after the first signal`);
  assert.ok(freeAt !== null && freeAt - sigintAt < 10_000, 'the lock is free within 10 s of the first signal');
  assert.equal(await store.readLock({ env: 'preview', scope: 'pr-1' }), null);
  assert.equal(receipt(root, 'pr-1').status, 'cancelled');
  assert.equal(receipt(root, 'pr-1').inProgress, undefined, 'the final receipt landed');

  // The abort came first; nothing was written or released before the callback was given up (the grace).
  const sigint = log.find((l) => l.ev === 'sigint');
  assert.deepEqual(log.find((l) => l.ev === 'abort'), { ev: 'abort', scope: 'pr-1', code: 'INTERRUPTED' });
  // After the signal: the final receipt and the release, one transaction (`cell-steps`).
  const late = log.filter((l) => l.ev === 'op' && l.t > sigint.t);
  assert.deepEqual(late.map((l) => l.op), ['run-finish+lock-release'], detail);
  for (const op of late) assert.ok(op.t >= sigint.t + GRACE_MS - 2, `${op.op} ${(op.t - sigint.t).toFixed(0)} ms after SIGINT, before the grace ended`);
  assert.ok(freeAt - sigintAt >= GRACE_MS - 100, `the lock was free ${(freeAt - sigintAt).toFixed(0)} ms after SIGINT: during the grace`);
  const rejected = log.find((l) => l.ev === 'rejected');
  assert.equal(rejected.code, 'INTERRUPTED', 'withLease rejects with the verdict');
  assert.equal(log.some((l) => l.ev === 'after'), true, 'the caller saw the outcome before the exit');
});

test('SIGTERM reaches every run in progress: each stops, records cancelled and releases; the process exits 143', async () => {
  const { root, store } = fresh();
  // These callbacks honour the abort: they end as soon as it comes.
  const work = 'await new Promise((r) => { const t = setTimeout(r, 60_000); lease.signal.addEventListener("abort", () => { clearTimeout(t); r(); }); });';
  const child = start(root, path.join(root, 'child.mjs'), script(root, ['pr-1', 'pr-2'], work));
  await until(() => child.lines.filter((l) => l.ev === 'started').length === 2, 20_000, 'both callbacks to start');
  const sentAt = performance.now();
  child.proc.kill('SIGTERM');
  const exit = await Promise.race([child.exited, sleep(10_000).then(() => null)]);
  if (exit === null) process.kill(-child.proc.pid, 'SIGKILL');
  const detail = `${JSON.stringify(child.lines)}\n${child.stderr()}`;
  assert.ok(exit !== null, detail);
  assert.equal(exit.code, 143, detail);
  assert.ok(exit.at - sentAt < GRACE_MS, 'callbacks that stop at once are not waited for the whole grace');
  for (const scope of ['pr-1', 'pr-2']) {
    assert.equal(receipt(root, scope).status, 'cancelled', scope);
    assert.equal(await store.readLock({ env: 'preview', scope }), null, scope);
  }
  assert.equal(child.lines.filter((l) => l.ev === 'rejected' && l.code === 'INTERRUPTED').length, 2, detail);
});

test('handlers are installed only while a run goes on, and not at all with handleSignals: false', async () => {
  const { store } = fresh();
  const before = process.listenerCount('SIGINT');
  const beforeTerm = process.listenerCount('SIGTERM');
  await withLease(store, { context: ctx('pr-3', 3), ...quiet }, async () => {
    assert.equal(process.listenerCount('SIGINT'), before + 1);
    assert.equal(process.listenerCount('SIGTERM'), beforeTerm + 1);
  });
  assert.equal(process.listenerCount('SIGINT'), before, 'removed when the run ended');
  await withLease(store, { context: ctx('pr-3', 3), handleSignals: false, ...quiet }, async () => {
    assert.equal(process.listenerCount('SIGINT'), before);
  });
  assert.equal(receipt(store.path, 'pr-3').status, 'complete');
});

test('a signal while waiting for a held lock ends the wait: nothing ran, the other holder is untouched, exit 130 (the rejection unhandled)', async () => {
  const { root, store } = fresh();
  const other = await store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'other', ttlMs: 60_000 });
  const text = script(root, ['pr-1'], 'out({ ev: "ran" });', { unhandled: true }).replace("onWarning() {} }", 'onWarning() {}, wait: true, pollMs: 100, onWait: () => out({ ev: "waiting" }) }');
  const child = start(root, path.join(root, 'child.mjs'), text);
  await until(() => child.lines.some((l) => l.ev === 'waiting'), 20_000, 'the child to wait');
  child.proc.kill('SIGINT');
  const exit = await Promise.race([child.exited, sleep(10_000).then(() => null)]);
  if (exit === null) process.kill(-child.proc.pid, 'SIGKILL');
  const detail = `${JSON.stringify(child.lines)}\n${child.stderr()}`;
  assert.equal(exit?.code, 130, detail);
  assert.equal(child.lines.some((l) => l.ev === 'ran'), false, 'the callback never ran');
  assert.doesNotMatch(child.stderr(), /BatonError/, 'the unhandled INTERRUPTED does not end the process with 1');
  const { expiresInMs: _left, expiresIn: _text, ...lock } = await store.readLock({ env: 'preview', scope: 'pr-1' });
  assert.deepEqual(lock, { ...other.lock, expired: false }, 'the other holder is untouched');
});

test('a lost lease gives a callback that ignores the abort up after its grace: LOCK_LOST, the new holder untouched', async () => {
  const { store } = fresh();
  const context = ctx('pr-4', 4);
  let ended = false;
  const outcome = withLease(store, { context, ttlMs: 600, ...quiet }, async (lease) => {
    await store.breakLock({ env: 'preview', scope: 'pr-4', holder: 'ops', ttlMs: 60_000, reason: 'stuck' });
    // Ignores the abort; unref'd so that it does not hold the test runner.
    await new Promise((r) => setTimeout(r, 30_000).unref());
    ended = true;
  });
  const e = await rejection(outcome);
  assert.equal(e.code, 'LOCK_LOST');
  assert.equal(ended, false, 'given up, not waited for');
  assert.equal((await store.readLock({ env: 'preview', scope: 'pr-4' })).holder, 'ops');
  assert.equal(receipt(store.path, 'pr-4').inProgress, true, 'nothing written after the loss');
});
