// Leases across hosts on one real etcd (started once for this file on loopback ports of its own, stopped at
// the end): `baton run --store etcd:...` (native, etcd-client) and the Node package's withLease (etcd3)
// exclude each other both ways, wait for each other, fence each other out, and serialise a
// read-modify-write so that no update is lost.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore, acquireLease, withLease } from '../../host-node/js/index.mjs';
import { startEtcd } from '../../host-node/test-etcd.mjs';

const pkgDir = fileURLToPath(new URL('../../host-node', import.meta.url));
const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const fresh = () => realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-xetcd-')));

let etcd;
const stores = [];
/** A Node store on the test's etcd (closed after the file). */
const store = () => {
  const s = openStore(etcd.spec);
  stores.push(s);
  return s;
};

before(async () => {
  etcd = await startEtcd('cross-host');
});
after(async () => {
  for (const s of stores) await s.close();
  await etcd?.stop();
});

/** Runs `baton run --json <flags> -- sh -c script` on the etcd; resolves {status, envelope, stderr}. */
function batonRun(scope, flags, script) {
  const child = spawn(bin, ['run', '--store', etcd.spec, '--scope', scope, '--json', ...flags, '--', 'sh', '-c', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = once(child, 'close').then(([status]) => ({ status, envelope: out ? JSON.parse(out) : null, stderr: err }));
  return { child, done, stderr: () => err };
}

async function until(what, f, ms = 15_000) {
  const start = Date.now();
  while (!(await f())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a Node withLease on etcd refuses baton run, which then waits for it with --wait', async () => {
  const scope = 'x-node-first';
  const dir = fresh();
  let release;
  const released = new Promise((r) => (release = r));
  let lease;
  const holding = withLease(store(), { env: 'preview', scope, ttlMs: 5000 }, async (l) => {
    lease = l;
    writeFileSync(path.join(dir, 'held'), '');
    await released;
  });
  await until('Node to hold the lease', () => existsSync(path.join(dir, 'held')));
  const refused = await batonRun(scope, [], 'touch ran').done;
  assert.equal(refused.status, 3, refused.stderr);
  assert.equal(refused.envelope.error.code, 'LOCK_HELD');
  assert.equal(refused.envelope.error.lock.holder, lease.holder);

  const waiting = batonRun(scope, ['--wait', '--poll-interval', '100ms'], 'echo "$BATON_EPOCH"');
  await until('baton run to report it is waiting', () => /waiting for preview\/x-node-first: held by /.test(waiting.stderr()));
  release();
  await holding;
  const done = await waiting.done;
  assert.equal(done.status, 0, done.stderr);
  assert.equal(done.envelope.lock.epoch, lease.epoch + 1);
});

test('baton run on etcd holds the scope against Node withLease, which acquires once the run released', async () => {
  const scope = 'x-run-first';
  const dir = fresh();
  const run = batonRun(scope, [], `touch ${dir}/started; while [ ! -e ${dir}/stop ]; do sleep 0.05; done`);
  await until('the command to start', () => existsSync(path.join(dir, 'started')));
  const s = store();
  const held = await withLease(s, { env: 'preview', scope }, () => assert.fail('ran while baton run held the lease')).catch((e) => e);
  assert.equal(held.code, 'LOCK_HELD');
  const waits = [];
  const waiting = acquireLease(s, { env: 'preview', scope, wait: true, pollMs: 100, onWait: (w) => waits.push(w) });
  await until('Node to wait', () => waits.length > 0);
  assert.match(waits[0].holder, /^run-/);
  writeFileSync(path.join(dir, 'stop'), '');
  const done = await run.done;
  assert.equal(done.status, 0, done.stderr);
  const lease = await waiting;
  assert.equal(lease.epoch, done.envelope.lock.epoch + 1);
  await lease.release();
});

test('a lock broken by the native CLI on etcd fences the Node holder out', async () => {
  const scope = 'x-break';
  const s = store();
  const lease = await acquireLease(s, { env: 'preview', scope, ttlMs: 60_000 });
  await lease.write('state.json', '"mine"');
  const broke = spawn(bin, ['lock', 'break', '--store', etcd.spec, '--scope', scope, '--reason', 'test', '--holder', 'breaker', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [status] = await once(broke, 'exit');
  assert.equal(status, 0);
  const refused = await lease.write('state.json', '"too late"').catch((e) => e);
  assert.equal(refused.code, 'LOCK_LOST');
  assert.equal(etcd.etcdctl(['get', `/baton/preview/${scope}/state.json`, '--print-value-only']).stdout, '"mine"\n');
  await lease.release();
  assert.equal((await s.readLock({ env: 'preview', scope })).holder, 'breaker', "the breaker's lock is untouched");
});

test('three baton runs and three Node processes on etcd serialise: no update is lost', async () => {
  const scope = 'x-counter';
  const dir = fresh();
  const counter = path.join(dir, 'counter');
  writeFileSync(counter, '0');
  // A read-modify-write that loses updates unless the lease excludes every other holder.
  const bump = `n=$(cat ${counter}); sleep 0.1; echo $((n+1)) > ${counter}`;
  const node = `
    const fs = require('node:fs');
    const { openStore, withLease } = require(${JSON.stringify(pkgDir)});
    const store = openStore(${JSON.stringify(etcd.spec)});
    withLease(store, { env: 'preview', scope: ${JSON.stringify(scope)}, wait: true, pollMs: 50 }, async () => {
      const n = Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8'));
      await new Promise((r) => setTimeout(r, 100));
      fs.writeFileSync(${JSON.stringify(counter)}, String(n + 1));
    }).then(() => store.close()).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`;
  const runs = [0, 1, 2].map(() => batonRun(scope, ['--wait', '--poll-interval', '50ms'], bump).done);
  const nodes = [0, 1, 2].map(() => {
    const child = spawn(process.execPath, ['-e', node], { stdio: ['ignore', 'ignore', 'inherit'] });
    return once(child, 'exit').then(([code]) => code);
  });
  const results = await Promise.all([...runs, ...nodes]);
  assert.deepEqual(results.slice(0, 3).map((r) => r.status), [0, 0, 0], results.slice(0, 3).map((r) => r.stderr).join('\n'));
  assert.deepEqual(results.slice(3), [0, 0, 0]);
  assert.equal(readFileSync(counter, 'utf8').trim(), '6');
});

test('eight Node scopes on etcd at once each get their own lease and receipt', async () => {
  const s = store();
  const scopes = Array.from({ length: 8 }, (_, i) => `x-many-${i}`);
  const leases = await Promise.all(scopes.map((scope) => withLease(s, { env: 'preview', scope }, (l) => l.epoch)));
  assert.deepEqual(leases, scopes.map(() => 1));
  for (const scope of scopes) assert.equal(await s.readLock({ env: 'preview', scope }), null, `${scope} released`);
});
