// Leases against a real dir store: acquire, fenced writes, waiting, renewal pacing with a slow store, the
// holder's deadline (must-stop), loss, release retries, withLease, and what keeps a process alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BatonError, acquireLease, openStore, withLease } from 'baton-lease';
import { rejection, quiet } from '../test-helpers.mjs';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const cell = { env: 'preview', scope: 'pr-1' };

/** A fresh store in a fresh temp dir. */
function fresh() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-lease-')));
  const store = openStore(`dir:${root}`);
  return { root, store, file: (name) => path.join(root, cell.env, cell.scope, name) };
}


/** The BatonError `fn` throws. */
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof BatonError, `not a BatonError: ${e && e.stack}`);
    return e;
  }
  assert.fail('expected a throw');
}

/** Waits until `pred()` holds, checking every 5 ms, at most `ms`. */
async function until(pred, ms = 5000, what = 'the condition') {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/**
 * Resolves when `signal` aborts. A held lease's timers are unref'd (a lease never keeps Node alive by
 * itself), so waiting for nothing but the signal needs a ref'd timer of its own, as real work would be.
 */
async function aborted(signal, ms = 5000) {
  const keepAlive = setTimeout(() => {}, ms);
  try {
    await once(signal, 'abort');
  } finally {
    clearTimeout(keepAlive);
  }
}

/**
 * `store` behind a wrapper: each transaction waits `latencyMs` first, then fails with what `fail(op)`
 * returns (if anything) or goes to the store. Records every transaction (`log`) and how many of the lease
 * machine's (lock-*) were in flight at once (`maxInFlight`).
 */
function wrap(store, { latencyMs = 0, fail = () => null } = {}) {
  const stats = { log: [], inFlight: 0, maxInFlight: 0, renewing: false };
  stats.store = {
    kind: store.kind,
    path: store.path,
    async transact(target, op, request) {
      const machine = op.startsWith('lock-');
      const entry = { op, start: performance.now(), end: undefined, ok: undefined };
      stats.log.push(entry);
      if (machine) stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
      if (op === 'lock-renew') stats.renewing = true;
      try {
        if (latencyMs > 0) await sleep(latencyMs);
        const error = fail(op, request);
        if (error) throw error;
        const answer = await store.transact(target, op, request);
        entry.ok = true;
        return answer;
      } catch (e) {
        entry.ok = false;
        throw e;
      } finally {
        entry.end = performance.now();
        if (machine) stats.inFlight -= 1;
        if (op === 'lock-renew') stats.renewing = false;
      }
    },
  };
  stats.count = (op, ok) => stats.log.filter((e) => e.op === op && (ok === undefined || e.ok === ok)).length;
  return stats;
}

test('acquire: epoch, lock, a fenced write lands, release is idempotent, the next lease gets a higher epoch', async () => {
  const { store, file } = fresh();
  const lease = await acquireLease(store, { ...cell, ttlMs: 60_000, ...quiet });
  assert.match(lease.holder, /^run-[0-9a-f]{8}$/);
  assert.equal(lease.epoch, 1);
  assert.equal(lease.lock.holder, lease.holder);
  assert.equal(lease.lock.epoch, 1);
  assert.equal(lease.preempted, null);
  assert.deepEqual(lease.warnings, []);
  assert.equal(lease.signal.aborted, false);
  assert.equal(lease.assertHeld(), 1);
  assert.equal((await store.readLock(cell)).holder, lease.holder);

  const written = await lease.write('result.json', '{"ok":true}');
  assert.equal(written.lock.epoch, 1);
  assert.equal(readFileSync(file('result.json'), 'utf8'), '{"ok":true}');
  assert.equal((await rejection(lease.write('lock.json', '{}'))).code, 'USAGE', "baton's own files cannot be written");

  const first = lease.release();
  assert.equal(lease.release(), first, 'the same promise');
  assert.deepEqual(await first, { released: true });
  assert.deepEqual(await lease.release(), { released: true });
  assert.equal(existsSync(file('lock.json')), false);
  assert.equal(thrown(() => lease.assertHeld()).code, 'LOCK_LOST');
  assert.equal((await rejection(lease.write('result.json', 'late'))).code, 'LOCK_LOST');
  assert.equal(readFileSync(file('result.json'), 'utf8'), '{"ok":true}', 'nothing written after the release');
  assert.equal(lease.signal.aborted, false, 'a release is not an abort');

  const next = await acquireLease(store, { ...cell, holder: 'run-next', ...quiet });
  assert.equal(next.epoch, 2);
  assert.equal(next.holder, 'run-next');
  await next.release();
});

test('a second lease on a held cell is LOCK_HELD, naming the holder', async () => {
  const { store } = fresh();
  const a = await acquireLease(store, { ...cell, holder: 'a', ...quiet });
  const held = await rejection(acquireLease(store, { ...cell, holder: 'b', ...quiet }));
  assert.equal(held.code, 'LOCK_HELD');
  assert.equal(held.details.lock.holder, 'a');
  assert.equal(a.assertHeld(), 1, 'the holder is not disturbed');
  await a.release();
});

test('with wait, onWait reports each attempt and the lease is acquired once the holder releases', async () => {
  const { store } = fresh();
  const a = await acquireLease(store, { ...cell, holder: 'a', ...quiet });
  const waits = [];
  const started = performance.now();
  const pending = acquireLease(store, { ...cell, holder: 'b', wait: true, pollMs: 50, waitTimeoutMs: 10_000, onWait: (w) => waits.push(w), ...quiet });
  await until(() => waits.length >= 3, 5000, 'three waits');
  assert.deepEqual(Object.keys(waits[0]).sort(), ['expiresAt', 'holder', 'remainingMs', 'waitedMs']);
  assert.equal(waits[0].holder, 'a');
  assert.equal(waits[0].expiresAt, a.lock.expiresAt);
  assert.ok(waits[1].waitedMs > waits[0].waitedMs, 'waitedMs grows');
  assert.ok(waits[2].remainingMs < waits[0].remainingMs && waits[0].remainingMs <= 10_000, 'remainingMs shrinks');
  await a.release();
  const b = await pending;
  assert.equal(b.holder, 'b');
  assert.equal(b.epoch, 2);
  assert.equal(b.preempted, null);
  assert.ok(performance.now() - started < 5000);
  await b.release();
});

test('a wait that times out is LOCK_HELD, saying how long it waited', async () => {
  const { store } = fresh();
  const a = await acquireLease(store, { ...cell, holder: 'a', ...quiet });
  const started = performance.now();
  const e = await rejection(acquireLease(store, { ...cell, holder: 'b', wait: true, pollMs: 50, waitTimeoutMs: 300, ...quiet }));
  const waited = performance.now() - started;
  assert.equal(e.code, 'LOCK_HELD');
  assert.match(e.message, /Gave up after waiting/);
  assert.ok(e.details.waitedMs >= 300, `waitedMs ${e.details.waitedMs}`);
  assert.ok(waited >= 290 && waited < 3000, `waited ${waited} ms`);
  assert.equal((await store.readLock(cell)).holder, 'a');
  await a.release();
});

test('onWait throwing gives the wait up: the acquire rejects with it and nothing is left in the store', async () => {
  const { store } = fresh();
  const a = await acquireLease(store, { ...cell, holder: 'a', ...quiet });
  const stop = new Error('enough');
  const started = performance.now();
  await assert.rejects(
    acquireLease(store, { ...cell, holder: 'b', wait: true, pollMs: 20, onWait: ({ waitedMs }) => { if (waitedMs >= 60) throw stop; }, ...quiet }),
    (e) => e === stop,
  );
  assert.ok(performance.now() - started < 3000);
  const lock = await store.readLock(cell);
  assert.equal(lock.holder, 'a');
  assert.equal(lock.epoch, 1);
  await a.release();
  assert.equal(await store.readLock(cell), null);
});

test('bad options and bad calls are USAGE rejections', async () => {
  const { store } = fresh();
  const cases = [
    [store, { scope: 'pr-1' }],
    [store, { ...cell, ttlMs: 0 }],
    [store, { ...cell, ttlMs: 1000, marginMs: 1000 }],
    [store, { ...cell, ttlMs: 1000, renewEveryMs: 900 }],
    [store, { ...cell, ttlMs: 1.5 }],
    [store, { ...cell, ttlMs: '1000' }],
    [store, { ...cell, wait: 'yes' }],
    [store, { ...cell, wait: true, waitTimeoutMs: 0 }],
    [store, { ...cell, ttl: 1000 }],
    [store, { ...cell, onWait: 'x' }],
    [store, { env: 'preview', scope: 'a/b' }],
    [store, { ...cell, holder: ' ' }],
    [store, null],
    [{}, cell],
  ];
  for (const [s, opts] of cases) {
    const e = await rejection(acquireLease(s, opts));
    assert.equal(e.code, 'USAGE', `${JSON.stringify(opts)}: ${e.code} ${e.message}`);
  }
  assert.equal((await rejection(withLease(store, cell, 'not a function'))).code, 'USAGE');
  assert.equal(await store.readLock(cell), null, 'nothing was acquired');
});

test('renewals keep the lock: expiresAt moves forward and nobody can take over after the TTL', async () => {
  const { store } = fresh();
  const events = [];
  const lease = await acquireLease(store, { ...cell, holder: 'a', ttlMs: 600, onEvent: (e) => events.push(e), ...quiet });
  const firstExpiry = Date.parse(lease.lock.expiresAt);
  await sleep(1000);
  const renewed = events.filter((e) => e.kind === 'renewed');
  assert.ok(renewed.length >= 3, `${renewed.length} renewals in 1 s with a 600 ms TTL`);
  const stored = await store.readLock(cell);
  assert.equal(stored.holder, 'a');
  assert.equal(stored.epoch, 1);
  assert.equal(stored.expired, false);
  assert.ok(Date.parse(stored.expiresAt) > firstExpiry + 500, `${stored.expiresAt} vs ${new Date(firstExpiry).toISOString()}`);
  // The renewals go on meanwhile (every 200 ms; one may have landed during the read above): the latest
  // event now, which the lease records in the same step as its lock.
  const latest = events.filter((e) => e.kind === 'renewed').at(-1);
  assert.equal(lease.lock.expiresAt, latest.lock.expiresAt, 'lease.lock follows the renewals');
  const other = await rejection(acquireLease(store, { ...cell, holder: 'b', ...quiet }));
  assert.equal(other.code, 'LOCK_HELD', 'no takeover: the lock never expired');
  assert.equal(lease.assertHeld(), 1);
  assert.equal(lease.signal.aborted, false);
  assert.deepEqual(await lease.release(), { released: true });
  assert.ok(!events.some((e) => ['renew-failed', 'must-stop', 'lost'].includes(e.kind)), JSON.stringify(events.map((e) => e.kind)));
});

test('pacing: a store slower than the renewal period never sees two lease transactions at once; a write is not queued', async () => {
  const { store } = fresh();
  const latencyMs = 300;
  const slow = wrap(store, { latencyMs });
  const events = [];
  // Renewal every 100 ms after the previous one settled, against a 300 ms store: a timer-driven renewal
  // would pile up three requests; the machine's pacing keeps one. TTL - margin (2400 ms) is far above
  // 300 + 100, so an event loop slowed by the other test files (CI runs three at a time) never reaches the
  // deadline: this test is about pacing, not about the deadline (must-stop has its own).
  const lease = await acquireLease(slow.store, { ...cell, holder: 'a', ttlMs: 3000, renewEveryMs: 100, onEvent: (e) => events.push(e.kind), ...quiet });
  await until(() => slow.renewing, 2000, 'a renewal in flight');
  // The renewal in flight when the write is asked for: a write queued behind it would start only after it
  // settled. An ordering of the store's own records, not a wall-clock bound (CI machines are loaded).
  const inFlight = slow.log.findLast((e) => e.op === 'lock-renew');
  assert.equal(inFlight.end, undefined, 'the renewal is still in flight');
  await lease.write('data.txt', 'hello');
  const write = slow.log.find((e) => e.op === 'fenced-write');
  assert.ok(
    inFlight.end === undefined || write.start < inFlight.end,
    `the write went to the store ${(write.start - inFlight.end).toFixed(0)} ms after the renewal in flight settled: queued behind it`,
  );
  const overlapped = slow.log.filter((e) => e.op === 'lock-renew' && e.start < write.end && (e.end ?? Infinity) > write.start);
  assert.ok(overlapped.length >= 1, 'the write ran alongside a renewal');

  await sleep(1300);
  assert.equal(slow.maxInFlight, 1, 'at most one lease transaction in flight');
  const renewals = slow.log.filter((e) => e.op === 'lock-renew');
  assert.ok(renewals.length >= 3, `${renewals.length} renewals`);
  for (let i = 1; i < renewals.length; i++) {
    assert.ok(renewals[i].start >= renewals[i - 1].end + 90, `renewal ${i} sent ${(renewals[i].start - renewals[i - 1].end).toFixed(0)} ms after the previous settled`);
  }
  assert.equal(lease.signal.aborted, false, 'no must-stop: every renewal landed in time');
  assert.equal(lease.assertHeld(), 1);

  // A release asked while a renewal is in flight waits for it, then goes out.
  await until(() => slow.renewing, 2000, 'a renewal in flight');
  assert.deepEqual(await lease.release(), { released: true });
  assert.equal(slow.maxInFlight, 1);
  const [lastRenew, release] = slow.log.filter((e) => e.op.startsWith('lock-')).slice(-2);
  assert.equal(lastRenew.op, 'lock-renew');
  assert.equal(release.op, 'lock-release');
  assert.ok(release.start >= lastRenew.end);
  assert.equal(await store.readLock(cell), null);
  assert.ok(!events.includes('renew-failed'));
});

test('must-stop: when renewals keep failing, the signal aborts with LOCK_LOST before the TTL runs out', async () => {
  const { store, file } = fresh();
  const failing = wrap(store, {
    fail: (op) => (op === 'lock-renew' ? new BatonError('STORE_CONTENDED', 'the store is too busy') : null),
  });
  const events = [];
  const started = performance.now();
  const lease = await acquireLease(failing.store, { ...cell, holder: 'a', ttlMs: 600, onEvent: (e) => events.push(e), ...quiet });
  await aborted(lease.signal);
  const elapsed = performance.now() - started;
  // The deadline is send time + TTL - margin = 480 ms: well before anyone else could take the lock over.
  assert.ok(elapsed >= 470 && elapsed < 600, `aborted after ${elapsed.toFixed(0)} ms`);
  const reason = lease.signal.reason;
  assert.ok(reason instanceof BatonError);
  assert.equal(reason.code, 'LOCK_LOST');
  assert.match(reason.message, /renewals were not getting through/);
  // Half a margin past the deadline, counted from when the timer fired (which may be a little late).
  const grace = reason.details.graceMs;
  assert.ok(grace <= 60, `graceMs ${grace}: never more than half the margin`);
  assert.equal(reason.details.epoch, 1);
  assert.ok(events.filter((e) => e.kind === 'renew-failed').length >= 1);
  assert.equal(events.filter((e) => e.kind === 'must-stop').length, 1);
  assert.equal(thrown(() => lease.assertHeld()), reason);
  assert.equal(await rejection(lease.write('data.txt', 'late')), reason);
  assert.equal(existsSync(file('data.txt')), false);
  assert.deepEqual(await lease.release(), { released: true }, 'the lock was still ours in the store');
  assert.equal(await store.readLock(cell), null);
});

test('a blocked event loop: assertHeld past the deadline stops the lease at once, before any timer fired', async () => {
  const { store } = fresh();
  const lease = await acquireLease(store, { ...cell, holder: 'a', ttlMs: 600, ...quiet });
  const end = performance.now() + 650;
  while (performance.now() < end) {
    // busy: no timer can fire, no renewal can go out
  }
  assert.equal(lease.signal.aborted, false, 'nothing ran yet');
  const e = thrown(() => lease.assertHeld());
  assert.equal(e.code, 'LOCK_LOST');
  assert.equal(lease.signal.aborted, true);
  assert.equal(lease.signal.reason, e);
  assert.match(e.message, /renewals were not getting through/);
  assert.deepEqual(await lease.release(), { released: true });
});

test('lost: a broken lock is noticed at the next renewal; writes are refused; the new holder is left alone', async () => {
  const { store, file } = fresh();
  const events = [];
  const lease = await acquireLease(store, { ...cell, holder: 'a', ttlMs: 600, onEvent: (e) => events.push(e.kind), ...quiet });
  const broken = await store.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'stuck deploy' });
  await aborted(lease.signal);
  assert.ok(events.includes('lost'));
  assert.ok(!events.includes('must-stop'));
  const reason = lease.signal.reason;
  assert.equal(reason.code, 'LOCK_LOST');
  // Noticed at the first renewal (~200 ms): the work may go on until half a margin past the holder's own
  // deadline (480 + 60 ms after the acquire was sent), never later.
  const grace = reason.details.graceMs;
  assert.ok(grace > 60 && grace <= 540 - 190, `graceMs ${grace}`);
  assert.equal(thrown(() => lease.assertHeld()).code, 'LOCK_LOST');
  assert.equal((await rejection(lease.write('data.txt', 'x'))).code, 'LOCK_LOST');
  assert.equal(existsSync(file('data.txt')), false);
  const before = readFileSync(file('lock.json'), 'utf8');
  assert.deepEqual(await lease.release(), { released: false });
  assert.equal(readFileSync(file('lock.json'), 'utf8'), before, "the other holder's lock is untouched");
  const lock = await store.readLock(cell);
  assert.equal(lock.holder, 'ops');
  assert.equal(lock.epoch, broken.lock.epoch);
});

test("the store's fence is authoritative: a write after a break is refused before any renewal noticed it", async () => {
  const { store, file } = fresh();
  const lease = await acquireLease(store, { ...cell, holder: 'a', ttlMs: 60_000, ...quiet });
  await store.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'stuck' });
  assert.equal(lease.assertHeld(), 1, 'the machine does not know yet');
  const e = await rejection(lease.write('data.txt', 'x'));
  assert.equal(e.code, 'LOCK_LOST');
  assert.equal(existsSync(file('data.txt')), false);
  assert.equal(lease.signal.aborted, true, 'the refusal stops the work');
  assert.equal(lease.signal.reason, e);
  assert.equal(thrown(() => lease.assertHeld()), e);
  assert.deepEqual(await lease.release(), { released: false });
  assert.equal((await store.readLock(cell)).holder, 'ops');
});

test('a release that keeps failing is retried 3 times, then resolves with a warning', async () => {
  const { store } = fresh();
  const failing = wrap(store, {
    fail: (op) => (op === 'lock-release' ? new BatonError('STORE_PERMISSION', 'read-only file system') : null),
  });
  const warned = [];
  const lease = await acquireLease(failing.store, { ...cell, holder: 'a', onWarning: (w) => warned.push(w) });
  const started = performance.now();
  const result = await lease.release();
  const took = performance.now() - started;
  assert.equal(result.released, false);
  assert.match(result.warning, /^Could not release the lock for preview\/pr-1 \(read-only file system\); it stays held until about \S+Z/);
  assert.equal(failing.count('lock-release'), 4, 'one attempt and three retries');
  assert.ok(took >= 1390 && took < 4000, `retries took ${took.toFixed(0)} ms (200 + 400 + 800)`);
  assert.deepEqual(lease.warnings, [result.warning]);
  assert.deepEqual(warned, [result.warning]);
  assert.deepEqual(await lease.release(), result);
  assert.equal((await store.readLock(cell)).holder, 'a', 'the lock stays until it expires');
});

test('a takeover of an expired lock is a warning on the lease', async () => {
  const { store } = fresh();
  await store.acquireLock({ ...cell, holder: 'gone', ttlMs: 1 });
  await sleep(5);
  const warned = [];
  const lease = await acquireLease(store, { ...cell, holder: 'a', onWarning: (w) => warned.push(w) });
  assert.equal(lease.epoch, 2);
  assert.equal(lease.preempted.holder, 'gone');
  assert.match(lease.warnings[0], /^Took over an expired lock held by gone since /);
  assert.deepEqual(warned, lease.warnings);
  await lease.release();
});

test('withLease: returns what the work returned, releases on success and on throw, LOCK_LOST when lost', async () => {
  const { store } = fresh();
  let seen;
  const value = await withLease(store, { ...cell, holder: 'a', ...quiet }, async (lease) => {
    seen = lease;
    await lease.write('out.txt', 'done');
    return 42;
  });
  assert.equal(value, 42);
  assert.equal(seen.holder, 'a');
  assert.equal(await store.readLock(cell), null, 'released after success');

  const boom = new Error('boom');
  await assert.rejects(
    withLease(store, { ...cell, holder: 'b', ...quiet }, async () => {
      assert.equal((await store.readLock(cell)).holder, 'b');
      throw boom;
    }),
    (e) => e === boom,
  );
  assert.equal(await store.readLock(cell), null, 'released after a throw');

  const lost = await rejection(
    withLease(store, { ...cell, holder: 'c', ttlMs: 600, ...quiet }, async (lease) => {
      await store.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'test' });
      await aborted(lease.signal);
      return 'finished anyway';
    }),
  );
  assert.equal(lost.code, 'LOCK_LOST', 'a lost lease fails the work even though fn resolved');
  assert.equal((await store.readLock(cell)).holder, 'ops');

  const held = await rejection(withLease(store, { ...cell, holder: 'd', ...quiet }, () => assert.fail('must not run')));
  assert.equal(held.code, 'LOCK_HELD');
});

/**
 * Runs `script` in a child node process; resolves {code, signal, stdout, stderr, ms}; kills it after
 * `timeoutMs`. `onStderr(all so far)` sees its stderr as it comes.
 */
async function child(script, { esm = false, timeoutMs = 10_000, onStderr = () => {} } = {}) {
  const started = performance.now();
  const args = esm ? ['--input-type=module', '-e', script] : ['-e', script];
  const proc = spawn(process.execPath, args, { cwd: os.tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => {
    stderr += d;
    onStderr(stderr);
  });
  const killer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await once(proc, 'exit');
  clearTimeout(killer);
  return { code, signal, stdout, stderr, ms: performance.now() - started };
}

const cjs = (root, body) => `
const { openStore, acquireLease } = require(${JSON.stringify(pkgDir)});
const store = openStore(${JSON.stringify(`dir:${root}`)});
const cell = ${JSON.stringify(cell)};
${body}`;

test('a script that only awaits a waiting acquireLease still completes (CommonJS and top-level await)', async () => {
  const { root, store } = fresh();
  for (const esm of [false, true]) {
    // The child waits for our lock (polling every 100 ms: between two attempts its only pending work is the
    // poll timer); we release it once the child has waited twice.
    const ours = await store.acquireLock({ ...cell, holder: 'parent', ttlMs: 60_000 });
    const body = `
let waits = 0;
const lease = await acquireLease(store, { ...cell, holder: 'child', wait: true, pollMs: 100, waitTimeoutMs: 8000, onWait: () => process.stderr.write(\`wait \${++waits}\\n\`) });
console.log(JSON.stringify({ epoch: lease.epoch, waits }));
console.log(JSON.stringify(await lease.release()));`;
    const script = esm
      ? `import { openStore, acquireLease } from ${JSON.stringify(pathToFileURL(path.join(pkgDir, 'js/index.mjs')).href)};
const store = openStore(${JSON.stringify(`dir:${root}`)}); const cell = ${JSON.stringify(cell)};${body}`
      : cjs(root, `(async () => {${body}})();`);
    let releasing = null;
    const r = await child(script, {
      esm,
      onStderr: (err) => {
        if (releasing === null && err.includes('wait 2\n')) releasing = store.releaseLock({ ...cell, holder: 'parent', epoch: ours.lock.epoch });
      },
    });
    const label = esm ? 'ESM' : 'CommonJS';
    assert.deepEqual(await releasing, { released: true, current: null }, `${label}: the child waited\n${r.stderr}`);
    assert.equal(r.code, 0, `${label}: exit ${r.code} ${r.signal ?? ''}\n${r.stderr}`);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2, `${label}: the work after the acquire ran\n${r.stdout}${r.stderr}`);
    const got = JSON.parse(lines[0]);
    assert.equal(got.epoch, ours.lock.epoch + 1);
    assert.ok(got.waits >= 2, `${label}: it waited (${got.waits})`);
    assert.deepEqual(JSON.parse(lines[1]), { released: true });
    assert.equal(await store.readLock(cell), null);
  }
});

test('a forgotten waiting acquireLease does not keep Node alive', async () => {
  const { root, store } = fresh();
  await store.acquireLock({ ...cell, holder: 'other', ttlMs: 60_000 });
  const r = await child(cjs(root, `
acquireLease(store, { ...cell, holder: 'child', wait: true, pollMs: 100, waitTimeoutMs: 60000 });
setTimeout(() => console.log('tick'), 300);`));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'tick\n');
  assert.ok(r.ms < 5000, `exited after ${r.ms.toFixed(0)} ms`);
  assert.equal((await store.readLock(cell)).holder, 'other');
});

test('after release nothing keeps the process alive, and neither does a forgotten held lease', async () => {
  const { root, store } = fresh();
  const released = await child(cjs(root, `
(async () => {
  const lease = await acquireLease(store, { ...cell, holder: 'child' });
  await lease.write('x.txt', 'x');
  console.log(JSON.stringify(await lease.release()));
})();`));
  assert.equal(released.code, 0, released.stderr);
  assert.equal(released.stdout, '{"released":true}\n');
  assert.ok(released.ms < 5000, `exited after ${released.ms.toFixed(0)} ms (TTL 15 min, renewal every 5)`);
  assert.equal(await store.readLock(cell), null);

  const forgotten = await child(cjs(root, `
acquireLease(store, { ...cell, holder: 'forgetful' }).then((l) => console.log(l.epoch));`));
  assert.equal(forgotten.code, 0, forgotten.stderr);
  assert.equal(forgotten.stdout, '2\n');
  assert.ok(forgotten.ms < 5000, `exited after ${forgotten.ms.toFixed(0)} ms`);
  assert.equal((await store.readLock(cell)).holder, 'forgetful', 'held until it expires');
});
