// Bad input, nothing lost (docs/bad-input.md), for the Node package: corrupt, truncated and newer locks
// and receipts, invalid names, a store path that is a file, a read-only store and a full disk. Every test
// checks the error code and that the store's files are byte for byte what they were (no temp file left).
// The read-only store and the full disk run a child node in a private mount namespace (`unshare -m`, as
// root, as CI runs it): if the namespace cannot be made the test fails saying so, it never skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, existsSync, mkdirSync, realpathSync, renameSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore, withLease } from 'baton-lease';
import { rejection, quiet, ctx } from '../test-helpers.mjs';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const cell = { env: 'preview', scope: 'pr-1' };

/** A fresh store whose cell preview/pr-1 holds `files` (name -> string or Buffer). */
function fresh(files = {}) {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-bad-')));
  const store = openStore(`dir:${path.join(root, 'store')}`, { mutexWaitMs: 2000 });
  const dir = path.join(root, 'store', 'preview', 'pr-1');
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(path.join(dir, name), bytes);
  return { root, store, dir };
}

/** Every file under `dir`: relative path -> bytes (hex), so changed, deleted and left-over files all show. */
function snapshot(dir) {
  const out = {};
  const walk = (d) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = readFileSync(p).toString('hex');
    }
  };
  walk(dir);
  return out;
}

const iso = (ms) => new Date(ms).toISOString();
const liveLock = (holder) =>
  `${JSON.stringify({ holder, acquiredAt: iso(Date.now()), expiresAt: iso(Date.now() + 3_600_000), epoch: 3 }, null, 2)}\n`;
const EPOCH = '{\n  "epoch": 3\n}\n';
const receipt = (version) =>
  `${JSON.stringify(
    { version, runId: 'run-1', environment: 'preview', scope: 'pr-1', status: 'complete', lines: {}, ledger: [{ adapter: 'a', key: 'k', createdBy: 'baton', id: '1' }], history: [], hashKey: '' },
    null,
    2,
  )}\n`;
const resource = { adapter: 'a', key: 'k2', provider: {} };

test('a corrupt lock is LOCK_CORRUPT for every operation and is kept byte for byte', async () => {
  const garbage = Buffer.from([0xff, 0xfe, ...Buffer.from('{holder: nobody knows')]);
  const { root, store } = fresh({ 'lock.json': garbage, 'epoch.json': EPOCH, 'latest.json': receipt(2) });
  const before = snapshot(root);
  let e = await rejection(store.acquireLock({ ...cell, holder: 'b', ttlMs: 60_000 }));
  assert.equal(e.code, 'LOCK_CORRUPT');
  assert.match(e.message, /baton lock break --env preview --scope pr-1/);
  assert.equal((await rejection(store.readLock(cell))).code, 'LOCK_CORRUPT');
  e = await rejection(withLease(store, { ...quiet, context: ctx('pr-1', 'x', 1) }, async () => assert.fail('ran')));
  assert.equal(e.code, 'LOCK_CORRUPT');
  assert.equal((await store.releaseLock({ ...cell, holder: 'a' })).released, false);
  assert.deepEqual(snapshot(root), before);
  // Broken on purpose: never an epoch at or below the recorded one.
  const broke = await store.breakLock({ ...cell, holder: 'b', ttlMs: 60_000, reason: 'garbage' });
  assert.equal(broke.lock.epoch, 4);
});

test('a truncated lock is LOCK_CORRUPT and kept', async () => {
  const full = liveLock('a');
  const { root, store } = fresh({ 'lock.json': full.slice(0, full.length / 2), 'epoch.json': EPOCH });
  const before = snapshot(root);
  const e = await rejection(store.acquireLock({ ...cell, holder: 'b', ttlMs: 60_000 }));
  assert.equal(e.code, 'LOCK_CORRUPT');
  assert.match(e.details.reason, /^not valid JSON/);
  assert.deepEqual(snapshot(root), before);
});

test('a lock from a newer tool is never taken over or rewritten, even when its expiresAt has passed', async () => {
  const newer = '{"version": 2, "holder": "future", "expiresAt": "2020-01-01T00:00:00.000Z", "epoch": 3, "leases": [1]}\n';
  const { root, store } = fresh({ 'lock.json': newer, 'epoch.json': EPOCH });
  const before = snapshot(root);
  const e = await rejection(store.acquireLock({ ...cell, holder: 'b', ttlMs: 60_000 }));
  assert.equal(e.code, 'LOCK_CORRUPT');
  assert.match(e.message, /newer tool.*Upgrade baton/);
  assert.equal(e.details.version, 2);
  assert.equal((await rejection(store.renewLock({ ...cell, holder: 'future', epoch: 3, ttlMs: 60_000 }))).code, 'LOCK_LOST');
  assert.equal((await store.releaseLock({ ...cell, holder: 'future', epoch: 3 })).released, false);
  assert.deepEqual(snapshot(root), before);
});

for (const [what, bytes, code] of [
  ['corrupt', Buffer.from('\xff{"version": 2, "ledger": oops', 'latin1'), 'RECEIPT_CORRUPT'],
  ['truncated', receipt(2).slice(0, -40), 'RECEIPT_CORRUPT'],
  ['newer', receipt(3), 'RECEIPT_VERSION'],
]) {
  test(`a ${what} receipt is ${code}: no ledger write, no run, kept byte for byte`, async () => {
    const { root, store, dir } = fresh({ 'lock.json': liveLock('h'), 'epoch.json': EPOCH, 'latest.json': bytes });
    const before = snapshot(root);
    const e = await rejection(store.transact(cell, 'ledger-record', { holder: 'h', epoch: 3, resource, id: '2' }));
    assert.equal(e.code, code);
    if (code === 'RECEIPT_VERSION') assert.match(e.message, /upgrade baton/);
    else assert.match(e.message, /repair or move it by hand/);
    assert.deepEqual(snapshot(root), before);
    await store.releaseLock({ ...cell, holder: 'h' });
    let ran = false;
    const r = await rejection(withLease(store, { ...quiet, context: ctx('pr-1', 'x', 1) }, async () => (ran = true)));
    assert.equal(r.code, code);
    assert.equal(ran, false);
    assert.deepEqual(readFileSync(path.join(dir, 'latest.json')), Buffer.from(bytes));
    assert.equal(existsSync(path.join(dir, 'lock.json')), false, 'the lease was released');
    if (what === 'corrupt') {
      renameSync(path.join(dir, 'latest.json'), path.join(root, 'moved.json'));
      await withLease(store, { ...quiet, context: ctx('pr-1', 'x', 1) }, async () => {});
    }
  });
}

test('invalid scope and environment names are USAGE and create nothing', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-bad-names-')));
  const store = openStore(`dir:${path.join(root, 'store')}`);
  for (const [env, scope] of [['preview', '../etc'], ['a/b', 'pr-1'], ['pré', 'pr-1'], ['preview', 'pr 1'], ['', 'pr-1']]) {
    const e = await rejection(store.acquireLock({ env, scope, holder: 'h', ttlMs: 60_000 }));
    assert.equal(e.code, 'USAGE', `${env}/${scope}: ${e.message}`);
    assert.match(e.message, /is not a valid name/);
    const l = await rejection(withLease(store, { ...quiet, context: { ...ctx(scope, 'x'), env } }, async () => assert.fail('ran')));
    assert.equal(l.code, 'USAGE');
  }
  assert.equal(existsSync(path.join(root, 'store')), false);
  assert.equal(existsSync(path.join(root, 'etc')), false);
});

test('a store path that is a file is USAGE and the file is kept', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-bad-file-')));
  const file = path.join(root, 'store');
  writeFileSync(file, 'my notes\n');
  const store = openStore(`dir:${file}`);
  const e = await rejection(store.acquireLock({ ...cell, holder: 'h', ttlMs: 60_000 }));
  assert.equal(e.code, 'USAGE', e.message);
  assert.match(e.message, /is a file, not a directory/);
  assert.equal(readFileSync(file, 'utf8'), 'my notes\n');
});

/**
 * Runs `script` (CommonJS, with `store` opened on `$S` and `cell`) in a child node inside a private mount
 * namespace after `mount` (shell commands using `$S`); returns what the script printed as JSON lines.
 */
function inNamespace(root, mount, script) {
  const child = `
const { openStore } = require(${JSON.stringify(path.join(pkgDir, 'js/index.cjs'))});
const store = openStore('dir:' + process.env.S, { mutexWaitMs: 2000 });
const cell = { env: 'preview', scope: 'pr-1' };
const out = (name, p) => p.then((r) => ({ name, ok: true, r }), (e) => ({ name, code: e.code, message: e.message }));
(async () => { ${script} })().then((rs) => console.log(JSON.stringify(rs)));`;
  writeFileSync(path.join(root, 'child.cjs'), child);
  const r = spawnSync('unshare', ['-m', 'sh', '-c', `${mount} && echo mounted && "${process.execPath}" child.cjs`], {
    cwd: root,
    env: { ...process.env, S: path.join(root, 'store') },
    encoding: 'utf8',
  });
  assert.match(r.stdout ?? '', /mounted/, `the test needs a private mount namespace (unshare -m, as root): ${r.stderr} ${r.error}`);
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('['));
  assert.equal(lines.length, 1, r.stdout + r.stderr);
  return Object.fromEntries(JSON.parse(lines[0]).map((x) => [x.name, x]));
}

test('a read-only store is STORE_PERMISSION, nothing changes, and the same write lands once writable', async () => {
  const { root, store, dir } = fresh({ 'lock.json': liveLock('h'), 'epoch.json': EPOCH, 'latest.json': receipt(2) });
  const before = snapshot(root);
  const rs = inNamespace(
    root,
    'mount --bind "$S" "$S" && mount -o remount,ro,bind "$S"',
    `return [
       await out('record', store.transact(cell, 'ledger-record', { holder: 'h', epoch: 3, resource: ${JSON.stringify(resource)}, id: '2' })),
       await out('acquire', store.acquireLock({ env: 'preview', scope: 'pr-2', holder: 'x', ttlMs: 1000 })),
       await out('read', store.read(cell, 'lock-read')),
     ];`,
  );
  for (const name of ['record', 'acquire']) {
    assert.equal(rs[name].code, 'STORE_PERMISSION', JSON.stringify(rs[name]));
    assert.match(rs[name].message, /EROFS.*readable and writable/);
  }
  assert.equal(rs.read.ok, true, 'reading works');
  delete before['child.cjs'];
  const after = snapshot(root);
  delete after['child.cjs'];
  assert.deepEqual(after, before);
  await store.transact(cell, 'ledger-record', { holder: 'h', epoch: 3, resource, id: '2' });
  assert.equal(JSON.parse(readFileSync(path.join(dir, 'latest.json'), 'utf8')).ledger[1].key, 'k2');
});

test('a full disk during a receipt write is STORE_REJECTED, keeps the old receipt and leaves no temp file', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-bad-full-')));
  const rs = inNamespace(
    root,
    'mkdir -p "$S" && mount -t tmpfs -o size=1m tmpfs "$S"',
    `const fs = require('node:fs');
     const { execSync } = require('node:child_process');
     const snap = (d) => Object.fromEntries(fs.readdirSync(d, { recursive: true }).filter((f) => fs.statSync(d + '/' + f).isFile() && f !== 'filler').map((f) => [f, fs.readFileSync(d + '/' + f, 'hex')]));
     const lock = await store.acquireLock({ ...cell, holder: 'h', ttlMs: 3600000 });
     const small = await out('small', store.transact(cell, 'ledger-record', { holder: 'h', epoch: lock.lock.epoch, resource: { adapter: 'a', key: 'k', provider: {} }, id: '1' }));
     const before = snap(process.env.S);
     const avail = Number(execSync('df -B4096 --output=avail "$S" | tail -1').toString().trim());
     execSync('dd if=/dev/zero of="$S/filler" bs=4096 count=' + (avail - 8) + ' 2>/dev/null');
     const big = { adapter: 'a', key: 'big', provider: {}, label: 'x'.repeat(100000) };
     const full = await out('full', store.transact(cell, 'ledger-record', { holder: 'h', epoch: lock.lock.epoch, resource: big, id: '2' }));
     fs.unlinkSync(process.env.S + '/filler');
     const after = snap(process.env.S);
     const freed = await out('freed', store.transact(cell, 'ledger-record', { holder: 'h', epoch: lock.lock.epoch, resource: big, id: '2' }));
     return [small, full, freed, { name: 'snapshots', before, after }];`,
  );
  assert.equal(rs.small.ok, true, JSON.stringify(rs.small));
  assert.equal(rs.full.code, 'STORE_REJECTED', JSON.stringify(rs.full));
  assert.match(rs.full.message, /ENOSPC.*free space there/);
  assert.ok(Object.keys(rs.snapshots.before).includes('preview/pr-1/latest.json'), JSON.stringify(Object.keys(rs.snapshots.before)));
  assert.deepEqual(rs.snapshots.after, rs.snapshots.before, 'the old receipt is intact and no temp file is left');
  assert.equal(rs.freed.ok, true, JSON.stringify(rs.freed));
  assert.equal(statSync(root).isDirectory(), true);
});
