// The git store (`git:<remote>`) on local bare remotes over file://: one orphan ref per cell holding a
// README and the cell's files, the push as compare-and-swap (contenders in separate processes), leases and
// fencing, the succession journey, rejected pushes keeping the receipt locally, list, the working clone,
// and credentials that never reach an error. Every check reads the remote with git itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, statSync, readdirSync, chmodSync, realpathSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatonError, acquireLease, destroy, openStore, scopeStatus, withLease } from 'baton-lease';
import { rejection, quiet, ctx, branchCtx, prCtx, db, url, brief, closedPort } from '../test-helpers.mjs';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const PREFIX = 'refs/heads/baton-receipts';

/** A fresh bare remote and a store on it; `show(ref, file)` reads a file of a ref on the remote (or null). */
function fresh() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-gitstore-')));
  const bare = path.join(root, 'remote.git');
  execFileSync('git', ['init', '-q', '--bare', bare]);
  const remote = `file://${bare}`;
  const store = openStore(`git:${remote}`, { cwd: root });
  const run = (...args) => execFileSync('git', ['--git-dir', bare, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const show = (ref, file) => {
    try {
      return run('show', `${PREFIX}/${ref}:${file}`);
    } catch {
      return null;
    }
  };
  const refs = () => run('for-each-ref', '--format=%(refname)').split('\n').filter(Boolean).sort();
  const receipt = (scope, env = 'preview') => JSON.parse(show(`${env}/${scope}`, `${env}/${scope}/latest.json`));
  return { root, bare, remote, store, run, show, refs, receipt };
}



/** Runs a CommonJS script in a child node process; resolves {code, stdout, stderr}. */
async function child(script, timeoutMs = 60_000) {
  const proc = spawn(process.execPath, ['-e', script], { cwd: os.tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const [code] = await once(proc, 'close');
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** A child script that opens the store at `remote` and runs `body` (with `store` and `cell`), then closes. */
const cjs = (remote, body) => `
const { openStore } = require(${JSON.stringify(path.join(pkgDir, 'js/index.cjs'))});
const store = openStore(${JSON.stringify(`git:${remote}`)});
(async () => { ${body} })().then(
  (r) => { console.log(JSON.stringify({ ok: r })); return store.close(); },
  (e) => { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); return store.close(); },
);`;

test('locks on a git remote: acquire, held, release, takeover of an expired lock, each epoch greater', async () => {
  const { store, show, refs, run } = fresh();
  assert.equal(store.kind, 'git');
  const cell = { env: 'preview', scope: 'pr-1' };
  const a = await store.acquireLock({ ...cell, holder: 'run-a', ttlMs: 60_000 });
  assert.equal(a.lock.epoch, 1);
  assert.equal(a.preempted, null);
  assert.deepEqual(refs(), [`${PREFIX}/preview/pr-1`], 'one orphan ref per cell');
  assert.match(show('preview/pr-1', 'README.md'), /^# baton receipts\n/, 'the README at the root');
  assert.equal(JSON.parse(show('preview/pr-1', 'preview/pr-1/lock.json')).holder, 'run-a');
  assert.equal(JSON.parse(show('preview/pr-1', 'preview/pr-1/epoch.json')).epoch, 1);

  const held = await rejection(store.acquireLock({ ...cell, holder: 'run-b', ttlMs: 60_000 }));
  assert.equal(held.code, 'LOCK_HELD');
  assert.match(held.message, /run-a/);

  await store.renewLock({ ...cell, holder: 'run-a', epoch: 1, ttlMs: 60_000 });
  assert.deepEqual(await store.releaseLock({ ...cell, holder: 'run-a', epoch: 1 }), { released: true, current: null });
  assert.equal(show('preview/pr-1', 'preview/pr-1/lock.json'), null, 'released: lock.json is gone from the ref');
  assert.equal(await store.readLock(cell), null);

  const b = await store.acquireLock({ ...cell, holder: 'run-b', ttlMs: 1 });
  assert.equal(b.lock.epoch, 2, 'a re-acquire after release gets a greater epoch');
  await sleep(20);
  const c = await store.acquireLock({ ...cell, holder: 'run-c', ttlMs: 60_000 });
  assert.equal(c.lock.epoch, 3);
  assert.equal(c.preempted.holder, 'run-b', 'the expired lock was taken over');

  const log = run('log', '--format=%s', `${PREFIX}/preview/pr-1`).trim().split('\n').reverse();
  assert.deepEqual(log, [
    'Start receipts for preview/pr-1',
    'lock preview/pr-1 run-a (epoch 1)',
    'renew preview/pr-1 run-a',
    'unlock preview/pr-1 run-a',
    'lock preview/pr-1 run-b (epoch 2)',
    'lock preview/pr-1 run-c (epoch 3)',
  ]);
  assert.equal(run('rev-list', '--max-parents=0', `${PREFIX}/preview/pr-1`).trim().split('\n').length, 1, 'an orphan history');

  // A second store object (another runner) sees the same cell; a stale remembered tip is never trusted.
  const other = openStore(`git:${store.path}`);
  assert.equal((await other.readLock(cell)).holder, 'run-c');
  await other.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'stuck' });
  const lost = await rejection(store.renewLock({ ...cell, holder: 'run-c', epoch: 3, ttlMs: 60_000 }));
  assert.equal(lost.code, 'LOCK_LOST', 'the renewal on the remembered tip is refused, and decided again on the fresh one');
  assert.equal((await store.readLock(cell)).holder, 'ops');
  await Promise.all([store.close(), other.close()]);
});

test('a transaction decides on the files it pushed, whatever a decide did to the cell it was given', async () => {
  const { store, show } = fresh();
  const cell = { env: 'preview', scope: 'pr-3' };
  await store.acquireLock({ ...cell, holder: 'run-a', ttlMs: 60_000 });
  // A decide that changes the snapshot it is handed (its own business) and writes a data file.
  await store.transactWith(cell, (snapshot) => {
    delete snapshot.files['lock.json'];
    return { changes: [{ op: 'write', file: 'note.json', content: '{}' }] };
  });
  assert.equal(JSON.parse(show('preview/pr-3', 'preview/pr-3/lock.json')).holder, 'run-a', 'the commit kept the lock');
  // The next transaction on this handle decides on the pushed tip without reading it back: run-a's lock.
  const held = await rejection(store.acquireLock({ ...cell, holder: 'run-b', ttlMs: 60_000 }));
  assert.equal(held.code, 'LOCK_HELD');
  await store.close();
});

test('a ref deleted while its lock is held is a deleted lock: the holder gets LOCK_LOST and nothing is re-created', async () => {
  const { store, run, refs } = fresh();
  const cell = { env: 'preview', scope: 'pr-2' };
  await store.acquireLock({ ...cell, holder: 'run-a', ttlMs: 60_000 });
  run('update-ref', '-d', `${PREFIX}/preview/pr-2`);
  const e = await rejection(store.renewLock({ ...cell, holder: 'run-a', epoch: 1, ttlMs: 60_000 }));
  assert.equal(e.code, 'LOCK_LOST');
  assert.deepEqual(refs(), []);
  await store.close();
});

test('8 processes acquire one fresh scope at once: exactly one wins, the others get LOCK_HELD naming it', async () => {
  const { remote, store, show } = fresh();
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      child(cjs(remote, `return (await store.acquireLock({ env: 'preview', scope: 'pr-9', holder: 'run-${i}', ttlMs: 60000 })).lock;`)),
    ),
  );
  const outs = results.map((r) => {
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout.trim());
  });
  const winners = outs.filter((o) => o.ok);
  assert.equal(winners.length, 1, JSON.stringify(outs));
  const winner = winners[0].ok.holder;
  assert.equal(winners[0].ok.epoch, 1);
  for (const o of outs.filter((x) => !x.ok)) {
    assert.equal(o.code, 'LOCK_HELD', JSON.stringify(o));
    assert.match(o.message, new RegExp(winner));
  }
  assert.equal(JSON.parse(show('preview/pr-9', 'preview/pr-9/lock.json')).holder, winner);
  await store.close();
});

test('8 processes write 8 scopes at once without an error; list sees them all', async () => {
  const { remote, store, show } = fresh();
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      child(
        cjs(
          remote,
          `const cell = { env: 'preview', scope: 'pr-${i + 10}' };
           const { lock } = await store.acquireLock({ ...cell, holder: 'run-${i}', ttlMs: 60000 });
           await store.fencedWrite({ ...cell, holder: 'run-${i}', epoch: lock.epoch, file: 'out.txt', content: 'from ${i}' });
           return store.releaseLock({ ...cell, holder: 'run-${i}', epoch: lock.epoch });`,
        ),
      ),
    ),
  );
  for (const r of results) {
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { ok: { released: true, current: null } });
  }
  for (let i = 0; i < 8; i += 1) assert.equal(show(`preview/pr-${i + 10}`, `preview/pr-${i + 10}/out.txt`), `from ${i}`);
  const listed = await store.list('preview');
  assert.deepEqual(listed.map((s) => s.scope), Array.from({ length: 8 }, (_, i) => `pr-${i + 10}`).sort());
  await store.close();
});

test('a lease renews on git; after another holder broke the lock its fenced write gets LOCK_LOST', async () => {
  const { store, remote, show } = fresh();
  const cell = { env: 'preview', scope: 'pr-3' };
  const events = [];
  const lease = await acquireLease(store, { ...cell, holder: 'run-a', ttlMs: 3000, renewEveryMs: 300, onEvent: (e) => events.push(e.kind), ...quiet });
  await lease.write('state.json', '{"n":1}');
  const first = JSON.parse(show('preview/pr-3', 'preview/pr-3/lock.json')).expiresAt;
  await sleep(1000);
  assert.ok(events.filter((k) => k === 'renewed').length >= 2, `renewed on git: ${events}`);
  assert.ok(JSON.parse(show('preview/pr-3', 'preview/pr-3/lock.json')).expiresAt > first, 'the renewal reached the remote');
  assert.equal(show('preview/pr-3', 'preview/pr-3/state.json'), '{"n":1}');

  const ops = openStore(`git:${remote}`);
  await ops.breakLock({ ...cell, holder: 'ops', ttlMs: 60_000, reason: 'stuck' });
  const e = await rejection(lease.write('state.json', '{"n":2}'));
  assert.equal(e.code, 'LOCK_LOST');
  assert.equal(show('preview/pr-3', 'preview/pr-3/state.json'), '{"n":1}', 'nothing written after the break');
  await lease.release();
  assert.equal(JSON.parse(show('preview/pr-3', 'preview/pr-3/lock.json')).holder, 'ops', 'the release left the new holder alone');
  await Promise.all([store.close(), ops.close()]);
});


test('the succession journey on a git store: a branch run, the PR inherits and takes over, destroys', async () => {
  const { store, receipt, show, run } = fresh();

  const branchHolder = await withLease(store, { context: branchCtx, ...quiet }, async (lease) => {
    assert.equal(lease.predecessor, null);
    await lease.intend(db);
    assert.equal(receipt('branch-feat-search').ledger[0].createdBy, 'intent', 'the intent is on the remote before the create');
    await lease.record(db, 'br_1');
    await lease.intend(url);
    await lease.record(url, 'env_1');
    return lease.holder;
  });
  const branch = receipt('branch-feat-search');
  assert.equal(branch.status, 'complete');
  assert.equal(branch.runId, branchHolder);
  assert.deepEqual(branch.ledger.map(brief), [
    { adapter: 'neon', key: 'db-feat-search', id: 'br_1', createdBy: 'baton' },
    { adapter: 'vercel', key: 'API_URL', id: 'env_1', createdBy: 'baton' },
  ]);
  assert.ok(show('preview/branch-feat-search', `preview/branch-feat-search/${branchHolder}.json`), 'the run file is written too');
  assert.equal(show('preview/branch-feat-search', 'preview/branch-feat-search/lock.json'), null, 'released');
  // The final receipt and the release are one commit.
  assert.match(run('log', '-1', '--format=%s', `${PREFIX}/preview/branch-feat-search`), /^receipt preview\/branch-feat-search run-\S+ \(complete\), unlock run-/);
  assert.ok(
    run('log', '--format=%s', `${PREFIX}/preview/branch-feat-search`).includes(`receipt preview/branch-feat-search ${branchHolder} (complete)`),
  );

  let prHolder;
  await withLease(store, { context: prCtx, ...quiet }, async (lease) => {
    prHolder = lease.holder;
    assert.equal(lease.predecessor, 'branch-feat-search');
    assert.deepEqual(lease.warnings, [
      "Inherited 2 resources from scope `branch-feat-search` (this pull request's head branch). Destroying this scope removes them.",
    ]);
    assert.equal(receipt('pr-42').inProgress, true, 'the begin checkpoint is on the remote');
    const during = await scopeStatus(store, prCtx);
    assert.equal(during.lockState, 'live');
    assert.equal(during.handoverPending, true);
    assert.deepEqual(during.inherited.map((r) => r.key), ['db-feat-search', 'API_URL']);
  });

  const handed = receipt('branch-feat-search');
  assert.equal(handed.supersededBy, 'pr-42');
  assert.deepEqual(handed.ledger, []);
  assert.equal(handed.runId, `handover-${prHolder}`);
  const pr = receipt('pr-42');
  assert.equal(pr.status, 'complete');
  assert.deepEqual(pr.ledger.map(brief), [
    { adapter: 'neon', key: 'db-feat-search', id: 'br_1', createdBy: 'baton' },
    { adapter: 'vercel', key: 'API_URL', id: 'env_1', createdBy: 'baton' },
  ]);
  const after = await scopeStatus(store, prCtx);
  assert.equal(after.handoverPending, false);
  assert.deepEqual(after.owns.map((r) => r.key), ['db-feat-search', 'API_URL']);
  assert.equal(after.lockState, 'none');

  const branchDestroy = await destroy(store, { context: branchCtx, ...quiet }, async (resources) => {
    assert.deepEqual(resources, []);
  });
  assert.equal(branchDestroy.status, 'complete');
  assert.equal(receipt('pr-42').ledger.length, 2, "the branch's destroy left PR 42 alone");

  const deleted = [];
  const prDestroy = await destroy(store, { context: prCtx, ...quiet }, async (resources, lease) => {
    for (const r of resources) {
      deleted.push(r.key);
      await lease.forget(r);
    }
  });
  assert.deepEqual(deleted, ['API_URL', 'db-feat-search'], 'newest first');
  assert.equal(prDestroy.status, 'complete');
  assert.deepEqual(receipt('pr-42').ledger, []);
  assert.equal(receipt('pr-42').destroy, true);
  await store.close();
});

test('a remote that rejects every push: STORE_REJECTED, and the receipt is kept locally (details.keptAt)', async () => {
  const { store, bare, root, receipt } = fresh();
  const context = ctx('pr-5', 'feat/five', 5);
  const lease = await acquireLease(store, { context, ...quiet });
  const begun = receipt('pr-5');
  const hook = path.join(bare, 'hooks', 'pre-receive');
  writeFileSync(hook, '#!/bin/sh\necho "no pushes today" >&2\nexit 1\n');
  chmodSync(hook, 0o755);
  const e = await rejection(lease.finish('complete'));
  assert.equal(e.code, 'STORE_REJECTED', e.message);
  assert.match(e.message, /remote rejected the push \(remote: no pushes today\)/);
  const kept = path.join(root, '.baton', 'unpushed', 'preview', 'pr-5', `${lease.holder}.json`);
  assert.equal(e.details.keptAt, kept);
  assert.ok(e.message.endsWith(` Receipt kept locally in ${kept}.`), e.message);
  const copy = JSON.parse(readFileSync(kept, 'utf8'));
  assert.equal(copy.runId, lease.holder);
  assert.equal(copy.status, 'complete');
  assert.deepEqual(receipt('pr-5'), begun, 'the remote still has the checkpoint');

  // Once pushes land again, the kept copy is removed and the empty directories pruned.
  writeFileSync(hook, '#!/bin/sh\nexit 0\n');
  await lease.finish('complete');
  assert.equal(receipt('pr-5').status, 'complete');
  assert.equal(existsSync(kept), false);
  assert.equal(existsSync(path.join(root, '.baton', 'unpushed')), false, 'pruned');
  await lease.release();
  await store.close();
});

test('list: one ref per scope, decoded; scopes differing only by case both listed, with their receipts', async () => {
  const { store, refs } = fresh();
  for (const scope of ['branch-Feature', 'x.lock']) {
    await store.acquireLock({ env: 'preview', scope, holder: 'h', ttlMs: 60_000 });
  }
  await withLease(store, { context: ctx('branch-feature', 'feature'), ...quiet }, async () => {});
  await store.acquireLock({ env: 'production', scope: 'main', holder: 'h', ttlMs: 60_000 });
  assert.ok(refs().includes(`${PREFIX}/preview/=782e6c6f636b`), 'a name git cannot take is hex-encoded');
  const listed = await store.list('preview');
  assert.deepEqual(listed.map((s) => s.scope), ['branch-Feature', 'branch-feature', 'x.lock']);
  assert.equal(listed[0].text, null, 'no receipt yet');
  assert.equal(JSON.parse(listed[1].text).scope, 'branch-feature');
  assert.deepEqual(await store.list('staging'), []);
  assert.deepEqual((await store.list('production')).map((s) => s.scope), ['main']);
  await store.close();
});

test('the working clone: created on first use, owner-only, named after the remote; close() removes it', async () => {
  const { store, remote } = fresh();
  assert.equal(store.workdir, null, 'nothing is created before the first operation');
  await store.readLock({ env: 'preview', scope: 'pr-1' });
  const dir = store.workdir;
  const hash = createHash('sha256').update(remote).digest('hex').slice(0, 12);
  assert.equal(path.dirname(dir), os.tmpdir());
  assert.match(path.basename(dir), new RegExp(`^baton-git-${hash}-`));
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  await store.close();
  assert.equal(existsSync(dir), false);
  assert.equal(store.workdir, null);
  // Still usable: the next operation makes a fresh clone.
  await store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'h', ttlMs: 60_000 });
  assert.notEqual(store.workdir, dir);
  await store.close();
  assert.equal(readdirSync(os.tmpdir()).filter((n) => n.startsWith(`baton-git-${hash}-`)).length, 0);
});

test('credentials in the remote URL never reach an error, a detail, or the store label', async () => {
  const port = await closedPort();
  const store = openStore(`git:http://user:secret@127.0.0.1:${port}/r.git`, { cwd: os.tmpdir() });
  assert.equal(store.path, `http://[REDACTED]@127.0.0.1:${port}/r.git`);
  for (const attempt of [
    () => store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'h', ttlMs: 60_000 }),
    () => store.readLock({ env: 'preview', scope: 'pr-1' }),
    () => store.list('preview'),
  ]) {
    const e = await rejection(attempt());
    assert.equal(e.code, 'STORE_PERMISSION', e.message);
    for (const text of [e.message, e.stack, JSON.stringify(e.details), String(e.hint)]) {
      assert.equal(text.includes('secret'), false, text);
    }
    assert.match(e.message, /\[REDACTED\]@127\.0\.0\.1/);
  }
  await store.close();
  const usage = await rejection(Promise.resolve().then(() => openStore('nope:https://user:secret@h/r')));
  assert.equal(usage.code, 'USAGE');
  assert.equal(usage.message.includes('secret'), false);
});

test('BATON_STORE names a git store; BATON_GIT_PREFIX and BATON_STORE_BUDGET_MS are judged by the core', async () => {
  const { remote, run } = fresh();
  const saved = { ...process.env };
  try {
    process.env.BATON_STORE = `git:${remote}`;
    process.env.BATON_GIT_PREFIX = 'ci/locks';
    process.env.BATON_STORE_BUDGET_MS = '5000';
    const store = openStore();
    assert.equal(store.kind, 'git');
    assert.equal(store.prefix, 'ci/locks');
    assert.equal(store.budgetMs, 5000);
    await store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'h', ttlMs: 60_000 });
    assert.match(run('for-each-ref', '--format=%(refname)'), /^refs\/heads\/ci\/locks\/preview\/pr-1$/m);
    await store.close();
    process.env.BATON_STORE_BUDGET_MS = 'soon';
    assert.equal((await rejection(Promise.resolve().then(() => openStore()))).code, 'USAGE');
  } finally {
    for (const key of ['BATON_STORE', 'BATON_GIT_PREFIX', 'BATON_STORE_BUDGET_MS']) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
});

/** The native CLI, when it is built (scripts/test.sh builds it): BATON_BIN, else target/{release,debug}/baton. */
const nativeBin = [process.env.BATON_BIN, path.join(pkgDir, '../target/release/baton'), path.join(pkgDir, '../target/debug/baton')].find(
  (p) => typeof p === 'string' && p !== '' && existsSync(p),
);

test('the native CLI and this package share a git store: locks and receipts either way', { skip: nativeBin === undefined && 'the native CLI is not built' }, async () => {
  const { root, remote, store, run } = fresh();
  const baton = (...args) => {
    try {
      return { code: 0, out: JSON.parse(execFileSync(nativeBin, [...args, '--store', `git:${remote}`, '--json'], { cwd: root, encoding: 'utf8' })) };
    } catch (e) {
      return { code: e.status, out: JSON.parse(e.stdout) };
    }
  };
  assert.equal(baton('lock', 'acquire', '--env', 'preview', '--scope', 'pr-1', '--holder', 'native').code, 0);
  const held = await rejection(store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'node', ttlMs: 60_000 }));
  assert.equal(held.code, 'LOCK_HELD');
  assert.equal(held.details.lock.holder, 'native');
  assert.equal(baton('lock', 'release', '--env', 'preview', '--scope', 'pr-1', '--holder', 'native').out.released, true);
  assert.equal((await store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'node', ttlMs: 60_000 })).lock.epoch, 2);
  const nodeSees = baton('lock', 'acquire', '--env', 'preview', '--scope', 'pr-1', '--holder', 'native');
  assert.notEqual(nodeSees.code, 0);
  assert.equal(nodeSees.out.error.lock.holder, 'node');

  const holder = await withLease(store, { context: ctx('branch-x', 'x'), ...quiet }, async (lease) => {
    await lease.intend(db);
    await lease.record(db, 'br_1');
    return lease.holder;
  });
  const listed = baton('receipt', 'list', '--env', 'preview', '--scope', 'any').out.receipts;
  assert.deepEqual(listed.map((r) => [r.scope, r.runId, r.status]), [['branch-x', holder, 'complete']]);
  assert.deepEqual(
    run('log', '--format=%s', `${PREFIX}/preview/pr-1`).trim().split('\n').reverse(),
    ['Start receipts for preview/pr-1', 'lock preview/pr-1 native (epoch 1)', 'unlock preview/pr-1 native', 'lock preview/pr-1 node (epoch 2)'],
    'the same history whichever host wrote it',
  );
  await store.close();
});

test('a relative remote is a path from the store\'s directory, as for the CLI; a NUL in the remote is refused', async () => {
  const { root, bare, run } = fresh();
  // `remote.git` relative to `root`, the store's cwd (git itself runs in the working clone).
  const store = openStore('git:remote.git', { cwd: root });
  const lease = await acquireLease(store, { env: 'preview', scope: 'pr-rel', ttlMs: 60_000 });
  await lease.release();
  assert.ok(run('for-each-ref', '--format=%(refname)').includes(`${PREFIX}/preview/pr-rel`), `the ref is on ${bare}`);
  await assert.rejects(
    async () => acquireLease(openStore('git:/x\0y', { cwd: root }), { env: 'preview', scope: 'pr-nul', ttlMs: 60_000 }),
    (e) => e instanceof BatonError && e.code === 'USAGE' && /NUL/.test(e.message),
  );
});
