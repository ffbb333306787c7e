// Leases across hosts on one dir store: `baton run` (native, the component in wasmtime) and the Node
// package's acquireLease/withLease (the core through wasm-bindgen) exclude each other, wait for each other,
// and fence each other out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore, acquireLease, withLease } from '../../host-node/js/index.mjs';

const pkgDir = fileURLToPath(new URL('../../host-node', import.meta.url));
const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const fresh = () => realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-xlease-')));
const scope = { env: 'preview', scope: 'pr-7' };

/** Runs `baton run --json <flags> -- sh -c script`; resolves {status, envelope}. */
function batonRun(root, flags, script) {
  const child = spawn(bin, ['run', '--store', `dir:${root}`, '--scope', scope.scope, '--json', ...flags, '--', 'sh', '-c', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = once(child, 'close').then(([status]) => ({ status, envelope: out ? JSON.parse(out) : null, stderr: err }));
  return { child, done };
}

async function until(what, f, ms = 10_000) {
  const start = Date.now();
  while (!(await f())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the native CLI exists', () => assert.ok(existsSync(bin), `no native CLI at ${bin}`));

test('a Node lease refuses baton run, which then waits for it with --wait', async () => {
  const root = fresh();
  const store = openStore(`dir:${root}`);
  const lease = await acquireLease(store, { ...scope, ttlMs: 5000 });
  const refused = await batonRun(root, [], 'touch ran').done;
  assert.equal(refused.status, 3);
  assert.equal(refused.envelope.error.code, 'LOCK_HELD');
  assert.equal(refused.envelope.error.lock.holder, lease.holder);

  const waiting = batonRun(root, ['--wait', '--poll-interval', '100ms'], 'echo "$BATON_EPOCH"');
  await until('baton run to report it is waiting', () => waiting.child.stderr && /waiting for preview\/pr-7: held by run-/.test(readStderr(waiting)));
  await lease.release();
  const done = await waiting.done;
  assert.equal(done.status, 0, done.stderr);
  assert.equal(done.envelope.lock.epoch, lease.epoch + 1);
});

// Collects a child's stderr as it arrives (for progress checks while it runs).
const stderrOf = new WeakMap();
function readStderr(run) {
  if (!stderrOf.has(run)) {
    stderrOf.set(run, '');
    run.child.stderr.on('data', (d) => stderrOf.set(run, stderrOf.get(run) + d));
  }
  return stderrOf.get(run);
}

test('baton run holds the scope against Node, which acquires once the run released', async () => {
  const root = fresh();
  const dir = fresh();
  const run = batonRun(root, [], `touch ${dir}/started; while [ ! -e ${dir}/stop ]; do sleep 0.05; done`);
  await until('the command to start', () => existsSync(path.join(dir, 'started')));
  const store = openStore(`dir:${root}`);
  const held = await acquireLease(store, { ...scope }).catch((e) => e);
  assert.equal(held.code, 'LOCK_HELD');
  const waits = [];
  const waiting = acquireLease(store, { ...scope, wait: true, pollMs: 100, onWait: (w) => waits.push(w) });
  await until('Node to wait', () => waits.length > 0);
  assert.match(waits[0].holder, /^run-/);
  writeFileSync(path.join(dir, 'stop'), '');
  const done = await run.done;
  assert.equal(done.status, 0, done.stderr);
  const lease = await waiting;
  assert.equal(lease.epoch, done.envelope.lock.epoch + 1);
  await lease.release();
});

test('a lock broken by the native CLI fences the Node holder out', async () => {
  const root = fresh();
  const store = openStore(`dir:${root}`);
  const lease = await acquireLease(store, { ...scope, ttlMs: 60_000 });
  await lease.write('state.json', '"mine"');
  const broke = spawn(bin, ['lock', 'break', '--store', `dir:${root}`, '--scope', scope.scope, '--reason', 'test', '--holder', 'breaker', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [status] = await once(broke, 'exit');
  assert.equal(status, 0);
  const refused = await lease.write('state.json', '"too late"').catch((e) => e);
  assert.equal(refused.code, 'LOCK_LOST');
  assert.equal(readFileSync(path.join(root, 'preview', 'pr-7', 'state.json'), 'utf8'), '"mine"');
  await lease.release();
  assert.equal((await store.readLock(scope)).holder, 'breaker', "the breaker's lock is untouched");
});

test('three baton runs and three Node processes with --wait serialise: no update is lost', async () => {
  const root = fresh();
  const dir = fresh();
  const counter = path.join(dir, 'counter');
  writeFileSync(counter, '0');
  // A read-modify-write that loses updates unless the lease excludes every other holder.
  const bump = `n=$(cat ${counter}); sleep 0.1; echo $((n+1)) > ${counter}`;
  const node = `
    const fs = require('node:fs');
    const { openStore, withLease } = require(${JSON.stringify(pkgDir)});
    withLease(openStore(${JSON.stringify(`dir:${root}`)}), { env: 'preview', scope: 'pr-7', wait: true, pollMs: 50 }, async () => {
      const n = Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8'));
      await new Promise((r) => setTimeout(r, 100));
      fs.writeFileSync(${JSON.stringify(counter)}, String(n + 1));
    }).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`;
  const runs = [0, 1, 2].map(() => batonRun(root, ['--wait', '--poll-interval', '50ms'], bump).done);
  const nodes = [0, 1, 2].map(() => {
    const child = spawn(process.execPath, ['-e', node], { stdio: ['ignore', 'ignore', 'inherit'] });
    return once(child, 'exit').then(([status]) => status);
  });
  const results = await Promise.all([...runs, ...nodes]);
  assert.deepEqual(results.slice(0, 3).map((r) => r.status), [0, 0, 0], results.map((r) => r.stderr).join('\n'));
  assert.deepEqual(results.slice(3), [0, 0, 0]);
  assert.equal(readFileSync(counter, 'utf8').trim(), '6');
});
