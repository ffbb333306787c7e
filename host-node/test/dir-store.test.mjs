// The dir store against real files and real processes: lock transactions, corrupt and expired locks, the
// cell mutex (stale owners broken, live owners waited for, never broken by age), and races between
// processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, existsSync, mkdirSync, realpathSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatonError, openStore } from 'baton-lease';
import { rejection } from '../test-helpers.mjs';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const cell = { env: 'preview', scope: 'pr-1' };

/** A fresh store in a fresh temp dir, with the directory of `cell`. */
function fresh(opts = {}) {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-store-')));
  const store = openStore(`dir:${root}`, opts);
  const dir = path.join(root, cell.env, cell.scope);
  return { root, store, dir, file: (name) => path.join(dir, name) };
}


/** Field 22 of /proc/<pid>/stat, the process start time the mutex records. */
function procStart(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[19];
}

const mutexLine = (owner) => `${JSON.stringify({ host: os.hostname(), token: '0123456789abcdef', ...owner })}\n`;

/** The pid of a process that has exited (and was reaped). */
function deadPid() {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid;
}

test('acquire, refuse, release by a non-holder is a no-op, release, reacquire with a higher epoch', async () => {
  const { store, file, dir } = fresh();
  const a = await store.acquireLock({ ...cell, holder: 'a', ttlMs: 60_000 });
  assert.equal(a.lock.holder, 'a');
  assert.equal(a.lock.epoch, 1);
  assert.equal(a.preempted, null);
  assert.deepEqual(JSON.parse(readFileSync(file('lock.json'), 'utf8')), a.lock);
  assert.equal(Date.parse(a.lock.expiresAt) - Date.parse(a.lock.acquiredAt), 60_000);

  for (const holder of ['b', 'a']) {
    const held = await rejection(store.acquireLock({ ...cell, holder, ttlMs: 60_000 }));
    assert.equal(held.code, 'LOCK_HELD');
    assert.equal(held.details.lock.holder, 'a');
  }
  const notOurs = await store.releaseLock({ ...cell, holder: 'b' });
  assert.equal(notOurs.released, false);
  assert.equal(notOurs.current.holder, 'a');
  assert.equal((await store.releaseLock({ ...cell, holder: 'a', epoch: 2 })).released, false, 'wrong epoch');
  assert.ok(existsSync(file('lock.json')));

  assert.deepEqual(await store.releaseLock({ ...cell, holder: 'a', epoch: 1 }), { released: true, current: null });
  assert.equal(existsSync(file('lock.json')), false);
  assert.equal(await store.readLock(cell), null);
  const b = await store.acquireLock({ ...cell, holder: 'b', ttlMs: 60_000 });
  assert.equal(b.lock.epoch, 2, 'the epoch survives the release');
  assert.deepEqual(JSON.parse(readFileSync(file('epoch.json'), 'utf8')), { epoch: 2 });
  assert.deepEqual(readdirSync(dir).sort(), ['epoch.json', 'lock.json'], 'no mutex or temp file is left behind');
});

test('names are validated before any file is touched, and special ones stay inside the root', async () => {
  const { store, root } = fresh();
  const e = await rejection(store.acquireLock({ env: 'pre view', scope: 'x', holder: 'a', ttlMs: 1000 }));
  assert.equal(e.code, 'USAGE');
  assert.equal((await rejection(store.readLock({ env: 'preview', scope: 'a/b' }))).code, 'USAGE');
  assert.deepEqual(readdirSync(root), []);
  await store.acquireLock({ env: '..', scope: '.hidden', holder: 'a', ttlMs: 1000 });
  assert.deepEqual(readdirSync(path.join(root, '=2e2e')), ['=2e68696464656e']);
});

test('an expired lock is taken over and reported as preempted', async () => {
  const { store } = fresh();
  await store.acquireLock({ ...cell, holder: 'crashed', ttlMs: 1 });
  await sleep(5);
  const view = await store.readLock(cell);
  assert.equal(view.holder, 'crashed');
  assert.equal(view.expired, true);
  assert.ok(view.expiresInMs <= 0);
  const g = await store.acquireLock({ ...cell, holder: 'b', ttlMs: 60_000 });
  assert.equal(g.preempted.holder, 'crashed');
  assert.equal(g.lock.epoch, 2);
  assert.equal((await store.readLock(cell)).expired, false);
});

test('renew extends the lease of the holder at its epoch, and nobody else', async () => {
  const { store } = fresh();
  const { lock } = await store.acquireLock({ ...cell, holder: 'a', ttlMs: 1000 });
  await sleep(2);
  const renewed = (await store.renewLock({ ...cell, holder: 'a', epoch: lock.epoch, ttlMs: 60_000 })).lock;
  assert.equal(renewed.acquiredAt, lock.acquiredAt);
  assert.equal(renewed.epoch, lock.epoch);
  assert.ok(Date.parse(renewed.expiresAt) > Date.parse(lock.expiresAt));
  assert.equal((await store.readLock(cell)).expiresAt, renewed.expiresAt);
  assert.equal((await rejection(store.renewLock({ ...cell, holder: 'b', epoch: 1, ttlMs: 1000 }))).code, 'LOCK_LOST');
  assert.equal((await rejection(store.renewLock({ ...cell, holder: 'a', epoch: 2, ttlMs: 1000 }))).code, 'LOCK_LOST');
  assert.equal((await rejection(store.renewLock({ ...cell, holder: 'a', epoch: 1, ttlMs: 0 }))).code, 'USAGE');
});

test('a corrupt lock is never taken over, only broken on purpose', async () => {
  const { store, file } = fresh();
  mkdirSync(path.dirname(file('lock.json')), { recursive: true });
  writeFileSync(file('lock.json'), '{"holder": "x", "expiresAt": "never"');
  const acquire = await rejection(store.acquireLock({ ...cell, holder: 'b', ttlMs: 1000 }));
  assert.equal(acquire.code, 'LOCK_CORRUPT');
  assert.equal(acquire.details.scope, 'pr-1');
  assert.ok(acquire.hint);
  assert.equal((await rejection(store.readLock(cell))).code, 'LOCK_CORRUPT');
  assert.deepEqual(await store.releaseLock({ ...cell, holder: 'x' }), { released: false, current: null });
  assert.equal(readFileSync(file('lock.json'), 'utf8'), '{"holder": "x", "expiresAt": "never"', 'left as it was');

  assert.equal((await rejection(store.breakLock({ ...cell, holder: 'ops', ttlMs: 1000, reason: ' ' }))).code, 'USAGE');
  const g = await store.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'stuck since friday' });
  assert.equal(g.lock.holder, 'ops');
  assert.equal(g.lock.broke.reason, 'stuck since friday');
  assert.equal(typeof g.lock.broke.corrupt, 'string');
  assert.equal(g.preempted, null);
  assert.equal((await store.readLock(cell)).holder, 'ops');
});

test('invalid UTF-8 in lock.json is reported as corrupt', async () => {
  const { store, file } = fresh();
  mkdirSync(path.dirname(file('lock.json')), { recursive: true });
  writeFileSync(file('lock.json'), Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
  assert.equal((await rejection(store.readLock(cell))).code, 'LOCK_CORRUPT');
});

test('breakLock takes over a live lock, and its holder then loses it', async () => {
  const { store } = fresh();
  const a = await store.acquireLock({ ...cell, holder: 'a', ttlMs: 60_000 });
  const g = await store.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'a is stuck' });
  assert.equal(g.preempted.holder, 'a');
  assert.equal(g.lock.epoch, a.lock.epoch + 1);
  assert.equal(g.lock.broke.previous.holder, 'a');
  const lost = await rejection(store.renewLock({ ...cell, holder: 'a', epoch: a.lock.epoch, ttlMs: 1000 }));
  assert.equal(lost.code, 'LOCK_LOST');
  assert.equal(lost.details.current.holder, 'ops');
});

test('a stale mutex does not wedge the cell: dead pid, reused pid, or not ours at all', async () => {
  const stale = [
    mutexLine({ pid: deadPid(), start: '1' }),
    mutexLine({ pid: deadPid(), start: null }),
    mutexLine({ pid: process.pid, start: String(Number(procStart(process.pid)) + 1) }), // pid reused since
    'garbage that is not JSON',
    '{"pid": "12"}',
  ];
  for (const content of stale) {
    const { store, file } = fresh({ mutexWaitMs: 5000 });
    mkdirSync(path.dirname(file('lock.mutex')), { recursive: true });
    writeFileSync(file('lock.mutex'), content);
    const t0 = performance.now();
    const g = await store.acquireLock({ ...cell, holder: 'a', ttlMs: 1000 });
    assert.equal(g.lock.epoch, 1, content);
    assert.ok(performance.now() - t0 < 2000, `took ${performance.now() - t0} ms for ${content}`);
    assert.deepEqual(readdirSync(path.dirname(file('lock.mutex'))).sort(), ['epoch.json', 'lock.json'], 'no tomb is left');
  }
});

test('a mutex left by a zombie (exited, never reaped) is broken at once', async (t) => {
  // The background child exits after its parent has become `sleep`, which never waits for it, so it stays a
  // zombie, pid and start time listed. (A child that exits at once may be reaped by `sh` before the exec.)
  const parent = spawn('sh', ['-c', '(sleep 0.3; exit 0) & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => parent.kill('SIGKILL'));
  const [line] = await once(parent.stdout, 'data');
  const pid = Number(String(line).trim());
  const state = () => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[0];
  };
  for (let i = 0; state() !== 'Z'; i++) {
    assert.ok(i < 500, 'the child never became a zombie');
    await sleep(10);
  }
  const { store, file } = fresh({ mutexWaitMs: 5000 });
  mkdirSync(path.dirname(file('lock.mutex')), { recursive: true });
  writeFileSync(file('lock.mutex'), mutexLine({ pid, start: procStart(pid) }));
  const t0 = performance.now();
  const g = await store.acquireLock({ ...cell, holder: 'a', ttlMs: 1000 });
  assert.equal(g.lock.epoch, 1);
  assert.ok(performance.now() - t0 < 2000, `broken at once, not waited for: ${performance.now() - t0} ms`);
  assert.equal(existsSync(file('lock.mutex')), false);
});

test('a mutex held by a live process is never broken: the transaction waits, then STORE_CONTENDED', async (t) => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await once(child, 'spawn');
  const cases = [
    ['start time', { pid: child.pid, start: procStart(child.pid) }],
    ['no start time (kill 0)', { pid: child.pid, start: null }],
    ['another host, even with a dead pid', { pid: deadPid(), start: '1', host: 'elsewhere.example' }],
  ];
  for (const [label, owner] of cases) {
    const { store, file } = fresh({ mutexWaitMs: 300 });
    mkdirSync(path.dirname(file('lock.mutex')), { recursive: true });
    const content = mutexLine(owner);
    writeFileSync(file('lock.mutex'), content);
    const t0 = performance.now();
    const e = await rejection(store.acquireLock({ ...cell, holder: 'a', ttlMs: 1000 }));
    const waited = performance.now() - t0;
    assert.equal(e.code, 'STORE_CONTENDED', label);
    assert.ok(waited >= 300 && waited < 3000, `${label}: waited ${waited} ms`);
    assert.deepEqual(e.details, { environment: 'preview', scope: 'pr-1', path: file('lock.mutex'), holderPid: owner.pid });
    assert.match(e.message, new RegExp(`^Timed out after 0\\.3 s waiting for the mutex of preview/pr-1 \\(.*\\), held by pid ${owner.pid}\\.$`));
    assert.equal(readFileSync(file('lock.mutex'), 'utf8'), content, `${label}: the mutex is untouched`);
    assert.equal(existsSync(file('lock.json')), false);
  }

  // Once the owner is gone its mutex is broken and the cell works again.
  const { store, file } = fresh({ mutexWaitMs: 5000 });
  mkdirSync(path.dirname(file('lock.mutex')), { recursive: true });
  writeFileSync(file('lock.mutex'), mutexLine({ pid: child.pid, start: procStart(child.pid) }));
  const pending = store.acquireLock({ ...cell, holder: 'a', ttlMs: 1000 });
  await sleep(200);
  assert.ok(existsSync(file('lock.mutex')), 'still waiting while the owner lives');
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal((await pending).lock.holder, 'a');
});

test('the wait bound comes from BATON_MUTEX_WAIT_MS when not given', async () => {
  const saved = process.env.BATON_MUTEX_WAIT_MS;
  process.env.BATON_MUTEX_WAIT_MS = '100';
  try {
    const { store, file } = fresh();
    mkdirSync(path.dirname(file('lock.mutex')), { recursive: true });
    writeFileSync(file('lock.mutex'), mutexLine({ pid: process.ppid, start: procStart(process.ppid) }));
    const e = await rejection(store.readLock(cell));
    assert.equal(e.code, 'STORE_CONTENDED');
    assert.match(e.message, /after 0\.1 s/);
  } finally {
    if (saved === undefined) delete process.env.BATON_MUTEX_WAIT_MS;
    else process.env.BATON_MUTEX_WAIT_MS = saved;
  }
});

test('concurrent transactions in one process are serialised by the mutex', async () => {
  const { store } = fresh();
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.acquireLock({ ...cell, holder: `h${i}`, ttlMs: 60_000 })));
  const won = results.filter((r) => r.status === 'fulfilled');
  assert.equal(won.length, 1);
  const winner = won[0].value.lock.holder;
  for (const r of results.filter((r) => r.status === 'rejected')) {
    assert.equal(r.reason.code, 'LOCK_HELD');
    assert.equal(r.reason.details.lock.holder, winner);
  }
});

/** Runs `n` node processes that call acquireLock on one cell at the same instant; returns their outcomes. */
async function race(root, n) {
  const startAt = Date.now() + 700;
  const script = `
    const { openStore } = require(${JSON.stringify(pkgDir)});
    const [root, holder, startAt] = process.argv.slice(1);
    setTimeout(async () => {
      try {
        const g = await openStore('dir:' + root).acquireLock({ env: 'preview', scope: 'pr-1', holder, ttlMs: 60000 });
        console.log(JSON.stringify({ ok: g }));
      } catch (e) {
        console.log(JSON.stringify({ code: e.code, details: e.details, message: e.message }));
      }
    }, Number(startAt) - Date.now());`;
  const runs = Array.from({ length: n }, (_, i) => {
    const child = spawn(process.execPath, ['-e', script, root, `p${i}`, String(startAt)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    return once(child, 'close').then(([code]) => {
      assert.equal(code, 0);
      return JSON.parse(out);
    });
  });
  return Promise.all(runs);
}

test('8 processes race for a fresh cell: exactly one wins, the others see LOCK_HELD naming it', async () => {
  const { root, file } = fresh();
  const outcomes = await race(root, 8);
  const won = outcomes.filter((o) => o.ok);
  assert.equal(won.length, 1, JSON.stringify(outcomes));
  const winner = won[0].ok.lock;
  assert.equal(winner.epoch, 1);
  assert.equal(won[0].ok.preempted, null);
  for (const o of outcomes.filter((o) => !o.ok)) {
    assert.equal(o.code, 'LOCK_HELD', o.message);
    assert.equal(o.details.lock.holder, winner.holder);
  }
  assert.deepEqual(JSON.parse(readFileSync(file('lock.json'), 'utf8')), winner);
});

test('8 processes race for an expired lock: exactly one takes it over', async () => {
  const { root, store, file } = fresh();
  await store.acquireLock({ ...cell, holder: 'crashed', ttlMs: 1 });
  const outcomes = await race(root, 8);
  const won = outcomes.filter((o) => o.ok);
  assert.equal(won.length, 1, JSON.stringify(outcomes));
  assert.equal(won[0].ok.preempted.holder, 'crashed');
  assert.equal(won[0].ok.lock.epoch, 2);
  for (const o of outcomes.filter((o) => !o.ok)) {
    assert.equal(o.code, 'LOCK_HELD', o.message);
    assert.equal(o.details.lock.holder, won[0].ok.lock.holder);
  }
  assert.equal(JSON.parse(readFileSync(file('lock.json'), 'utf8')).holder, won[0].ok.lock.holder);
  assert.deepEqual(JSON.parse(readFileSync(file('epoch.json'), 'utf8')), { epoch: 2 });
});
