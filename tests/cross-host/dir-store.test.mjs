// The dir store shared with the native `baton` CLI: both hosts implement docs/dir-store.md on the same
// files, so their locks and mutexes exclude each other. Needs the CLI: scripts/test.sh builds it and passes
// BATON_BIN; without a binary these tests fail (they are the cross-host guarantee, never skipped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, mkdirSync, realpathSync } from 'node:fs';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../host-node/js/index.mjs';

const pkgDir = fileURLToPath(new URL('../../host-node', import.meta.url));
const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
test('the native CLI exists', () => assert.ok(existsSync(bin), `no native CLI at ${bin}: run cargo build -p baton-native or set BATON_BIN`));
const cell = { env: 'preview', scope: 'pr-1' };
const fresh = () => realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-xhost-')));

/** Runs `baton lock <args> --json` on the store at `root`; returns the envelope and the exit code. */
function cli(root, args, env = {}) {
  const child = spawn(bin, ['lock', ...args, '--store', `dir:${root}`, '--env', cell.env, '--scope', cell.scope, '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return once(child, 'close').then(([status, signal]) => {
    try {
      return { status, envelope: JSON.parse(out) };
    } catch {
      // --json always prints an envelope: say what the process did instead.
      throw new Error(`baton lock ${args.join(' ')} printed no envelope (exit ${status}, signal ${signal}): stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)}`);
    }
  });
}

/** One Node process running acquireLock at `startAt`; resolves to `{ok: grant}` or `{code, details}`. */
function nodeAcquire(root, holder, startAt) {
  const script = `
    const { openStore } = require(${JSON.stringify(pkgDir)});
    setTimeout(() => openStore(${JSON.stringify(`dir:${root}`)}).acquireLock({ env: 'preview', scope: 'pr-1', holder: ${JSON.stringify(holder)}, ttlMs: 60000 })
      .then((g) => console.log(JSON.stringify({ ok: g })), (e) => console.log(JSON.stringify({ code: e.code, details: e.details }))),
      ${startAt} - Date.now());`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return once(child, 'close').then(() => JSON.parse(out));
}

test('Node and the native CLI read and release each other\'s locks', async () => {
  const root = fresh();
  const native = await cli(root, ['acquire', '--holder', 'native-1', '--ttl', '60s']);
  assert.equal(native.status, 0);
  const store = openStore(`dir:${root}`);
  const view = await store.readLock(cell);
  assert.equal(view.holder, 'native-1');
  assert.equal(view.epoch, native.envelope.lock.epoch);
  const held = await store.acquireLock({ ...cell, holder: 'node-1', ttlMs: 1000 }).catch((e) => e);
  assert.equal(held.code, 'LOCK_HELD');
  assert.deepEqual(await store.releaseLock({ ...cell, holder: 'native-1', epoch: view.epoch }), { released: true, current: null });
  const { lock } = await store.acquireLock({ ...cell, holder: 'node-1', ttlMs: 60_000 });
  assert.equal(lock.epoch, 2);
  const refused = await cli(root, ['acquire', '--holder', 'native-2', '--ttl', '60s']);
  assert.equal(refused.status, 3);
  assert.equal(refused.envelope.error.code, 'LOCK_HELD');
  assert.equal(refused.envelope.error.lock.holder, 'node-1');
});

test('a mutex held by a live Node process stops the native CLI, which never breaks it', async () => {
  const root = fresh();
  const dir = path.join(root, cell.env, cell.scope);
  mkdirSync(dir, { recursive: true });
  const stat = readFileSync(`/proc/${process.pid}/stat`, 'utf8');
  const start = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[19];
  const content = `${JSON.stringify({ pid: process.pid, start, host: os.hostname(), token: 'feedfacefeedface' })}\n`;
  writeFileSync(path.join(dir, 'lock.mutex'), content);
  const r = await cli(root, ['acquire', '--holder', 'native', '--ttl', '60s'], { BATON_MUTEX_WAIT_MS: '300' });
  assert.equal(r.envelope.error.code, 'STORE_CONTENDED');
  assert.equal(r.envelope.error.holderPid, process.pid);
  assert.equal(readFileSync(path.join(dir, 'lock.mutex'), 'utf8'), content);
});

test('4 Node processes and 4 native CLIs race for one cell: exactly one wins', async () => {
  const root = fresh();
  execFileSync(bin, ['lock', 'acquire', '--store', `dir:${root}`, '--env', cell.env, '--scope', cell.scope, '--holder', 'crashed', '--ttl', '500ms']);
  const startAt = Date.now() + 700;
  const nodes = [0, 1, 2, 3].map((i) => nodeAcquire(root, `node-${i}`, startAt));
  const natives = new Promise((resolve) => setTimeout(resolve, startAt - Date.now())).then(() =>
    Promise.all([0, 1, 2, 3].map((i) => cli(root, ['acquire', '--holder', `native-${i}`, '--ttl', '60s']))),
  );
  const outcomes = [
    ...(await Promise.all(nodes)).map((o) => (o.ok ? { winner: o.ok.lock, preempted: o.ok.preempted } : { code: o.code, holder: o.details.lock?.holder })),
    ...(await natives).map(({ envelope: e }) => (e.ok ? { winner: e.lock, preempted: e.preempted } : { code: e.error.code, holder: e.error.lock?.holder })),
  ];
  const won = outcomes.filter((o) => o.winner);
  assert.equal(won.length, 1, JSON.stringify(outcomes));
  assert.equal(won[0].winner.epoch, 2);
  assert.equal(won[0].preempted.holder, 'crashed');
  for (const o of outcomes.filter((o) => !o.winner)) assert.deepEqual(o, { code: 'LOCK_HELD', holder: won[0].winner.holder });
  assert.equal(JSON.parse(readFileSync(path.join(root, cell.env, cell.scope, 'lock.json'), 'utf8')).holder, won[0].winner.holder);
});
