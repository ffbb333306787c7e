// Ownership through the package, on real dir stores: runs on leases record what they create, a pull request
// inherits its head branch's resources and takes them over, foreign resources are refused or adopted,
// destroy deletes exactly what a scope owns, crashed runs leave intents a successor resolves, production
// needs an approver, stores laid out by the original tool are read, and parent-object locks serialise
// read-modify-write across processes. Every check reads the receipts on disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync, existsSync, mkdirSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BatonError,
  acquireLease,
  acquireObjectLease,
  destroy,
  openStore,
  scopeStatus,
  withLease,
  withObjectLease,
} from 'baton-lease';
import { rejection, quiet, ctx, sha, branchCtx, prCtx, db, url, brief } from '../test-helpers.mjs';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));

/** A fresh store in a fresh temp dir; `receipt(scope)` parses `preview/<scope>/latest.json`. */
function fresh() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-own-')));
  const store = openStore(`dir:${root}`);
  const dir = (scope, env = 'preview') => path.join(root, env, scope);
  const receipt = (scope, env = 'preview') => JSON.parse(readFileSync(path.join(dir(scope, env), 'latest.json'), 'utf8'));
  return { root, store, dir, receipt };
}

/** Lease options collecting warnings in `.warnings` (not an option: not enumerable) instead of printing them. */
function collector() {
  const warnings = [];
  return Object.defineProperty({ onWarning: (m) => warnings.push(m) }, 'warnings', { value: warnings });
}




test('the succession journey: a branch run, the PR inherits and takes over, destroys delete exactly what each owns', async () => {
  const { store, dir, receipt } = fresh();

  // 1. A run on branch feat/search records two resources (intent, then record, each).
  const branchWarnings = collector();
  const branchHolder = await withLease(store, { context: branchCtx, ...branchWarnings }, async (lease) => {
    assert.equal(lease.predecessor, null, 'a branch scope has no predecessor');
    await lease.intend(db);
    assert.equal(receipt('branch-feat-search').ledger[0].createdBy, 'intent', 'the intent is on disk before the create');
    await lease.record(db, 'br_1');
    await lease.intend(url);
    await lease.record(url, 'env_1');
    return lease.holder;
  });
  assert.deepEqual(branchWarnings.warnings, []);
  const branch = receipt('branch-feat-search');
  assert.equal(branch.status, 'complete');
  assert.equal(branch.runId, branchHolder);
  assert.equal(branch.inProgress, undefined);
  assert.deepEqual(branch.ledger.map(brief), [
    { adapter: 'neon', key: 'db-feat-search', id: 'br_1', createdBy: 'baton' },
    { adapter: 'vercel', key: 'API_URL', id: 'env_1', createdBy: 'baton' },
  ]);
  assert.deepEqual(branch.history.map((h) => h.sha), [sha('a')]);
  assert.match(branch.hashKey, /^[0-9a-f]{32}$/);
  assert.ok(existsSync(path.join(dir('branch-feat-search'), `${branchHolder}.json`)), 'the run file is written too');
  assert.equal(existsSync(path.join(dir('branch-feat-search'), 'lock.json')), false, 'released');

  // 2. A run for PR 42 of that branch inherits both, with the warning.
  const prWarnings = collector();
  let prHolder;
  await withLease(store, { context: prCtx, ...prWarnings }, async (lease) => {
    prHolder = lease.holder;
    assert.equal(lease.predecessor, 'branch-feat-search');
    assert.deepEqual(lease.warnings, [
      "Inherited 2 resources from scope `branch-feat-search` (this pull request's head branch). Destroying this scope removes them.",
    ]);
    assert.deepEqual(prWarnings.warnings, lease.warnings, 'onWarning saw it too');
    const checkpoint = receipt('pr-42');
    assert.equal(checkpoint.inProgress, true, 'the begin checkpoint is on disk');
    assert.equal(checkpoint.status, 'failed', 'a checkpoint says failed until the run finishes');
    assert.deepEqual(checkpoint.ledger.map((e) => [e.key, e.inheritedFrom]), [
      ['db-feat-search', 'branch-feat-search'],
      ['API_URL', 'branch-feat-search'],
    ]);
    assert.equal(lease.receipt.runId, prHolder);
    // The PR may change what it inherited.
    assert.deepEqual(await lease.check(db, { change: true }), { relation: 'inherited', createdBy: 'baton', adopted: false });
    // While the run is on, the handover is pending and the branch still owns them.
    const during = await scopeStatus(store, prCtx);
    assert.equal(during.lockState, 'live');
    assert.equal(during.handoverPending, true);
    assert.deepEqual(during.inherited.map((r) => r.key), ['db-feat-search', 'API_URL']);
    assert.deepEqual(receipt('branch-feat-search'), branch, 'the branch receipt is untouched until the PR succeeds');
  });

  // 3. After it succeeded: the branch scope is superseded with an empty ledger; PR 42 owns both.
  const handed = receipt('branch-feat-search');
  assert.equal(handed.supersededBy, 'pr-42');
  assert.deepEqual(handed.ledger, []);
  assert.equal(handed.runId, `handover-${prHolder}`);
  assert.ok(existsSync(path.join(dir('branch-feat-search'), `handover-${prHolder}.json`)));
  assert.equal(existsSync(path.join(dir('branch-feat-search'), 'lock.json')), false, 'the handover lock is released');
  const pr = receipt('pr-42');
  assert.equal(pr.status, 'complete');
  assert.equal(pr.inProgress, undefined);
  assert.deepEqual(pr.ledger.map(brief), [
    { adapter: 'neon', key: 'db-feat-search', id: 'br_1', createdBy: 'baton' },
    { adapter: 'vercel', key: 'API_URL', id: 'env_1', createdBy: 'baton' },
  ]);
  assert.deepEqual(pr.history.map((h) => h.sha), [sha('b')]);
  const after = await scopeStatus(store, prCtx);
  assert.equal(after.handoverPending, false);
  assert.deepEqual(after.owns.map((r) => r.key), ['db-feat-search', 'API_URL']);
  assert.deepEqual(after.inherited, []);
  assert.equal(after.lockState, 'none');
  assert.deepEqual(after.warnings, []);

  // 4. Destroying the branch scope deletes nothing.
  const branchDestroy = await destroy(store, { context: branchCtx, ...quiet }, async (resources) => {
    assert.deepEqual(resources, []);
  });
  assert.equal(branchDestroy.status, 'complete');
  assert.deepEqual(branchDestroy.unresolved, []);
  assert.match(receipt('branch-feat-search').runId, /^destroy-[0-9a-f]{8}$/);
  assert.equal(receipt('branch-feat-search').destroy, true);
  assert.equal(receipt('pr-42').ledger.length, 2, "the branch's destroy left PR 42 alone");

  // 5. Destroying pr-42 deletes both, newest first.
  const deleted = [];
  const prDestroy = await destroy(store, { context: prCtx, ...quiet }, async (resources, lease) => {
    assert.match(lease.holder, /^destroy-[0-9a-f]{8}$/);
    for (const r of resources) {
      deleted.push(brief(r));
      assert.deepEqual(await lease.forget(r), { forgotten: true });
    }
  });
  assert.deepEqual(deleted, [
    { adapter: 'vercel', key: 'API_URL', id: 'env_1', createdBy: 'baton' },
    { adapter: 'neon', key: 'db-feat-search', id: 'br_1', createdBy: 'baton' },
  ]);
  assert.equal(prDestroy.status, 'complete');
  const gone = receipt('pr-42');
  assert.equal(gone.status, 'complete');
  assert.equal(gone.destroy, true);
  assert.deepEqual(gone.ledger, []);
  assert.equal(existsSync(path.join(dir('pr-42'), 'lock.json')), false);
});

test('a PR whose head branch is main inherits nothing, and the main scope stays as it was', async () => {
  const { store, receipt } = fresh();
  const mainCtx = ctx('main', 'main', null, { sha: sha('c') });
  const shared = { adapter: 'vercel', key: 'SHARED', provider: { team: 't1' } };
  await withLease(store, { context: mainCtx, ...quiet }, async (lease) => {
    await lease.record(shared, 'env_shared');
  });
  const before = receipt('main');
  const fromMain = ctx('pr-7', 'main', 7);
  const seen = collector();
  await withLease(store, { context: fromMain, ...seen }, async (lease) => {
    assert.equal(lease.predecessor, null);
    assert.deepEqual(lease.receipt.ledger, []);
    // main's resources are another scope's: relying is fine, changing is not.
    const e = await rejection(lease.check(shared, { change: true }));
    assert.equal(e.code, 'OWNED_BY_OTHER_SCOPE');
    assert.equal(e.details.owner, 'main');
  });
  assert.deepEqual(seen.warnings, []);
  assert.deepEqual(receipt('pr-7').ledger, []);
  assert.equal(receipt('pr-7').predecessor, undefined);
  assert.deepEqual(receipt('main'), before, 'no handover to a PR from main');
  const status = await scopeStatus(store, fromMain);
  assert.equal(status.predecessor, null);
  assert.equal(status.foreignCount, 1);
});

test('a busy predecessor: the handover is a warning, the next run hands over; a failed run never does', async () => {
  const { store, receipt } = fresh();
  const bCtx = ctx('branch-feat-x', 'feat/x');
  const pCtx = ctx('pr-5', 'feat/x', 5);
  await withLease(store, { context: bCtx, ...quiet }, async (lease) => {
    await lease.record(db, 'br_x');
  });

  // A failed PR run inherits, but hands nothing over.
  const boom = new Error('deploy failed');
  await assert.rejects(
    withLease(store, { context: pCtx, ...quiet }, async (lease) => {
      assert.equal(lease.receipt.ledger.length, 1);
      throw boom;
    }),
    (e) => e === boom,
  );
  assert.equal(receipt('pr-5').status, 'failed');
  assert.equal(receipt('pr-5').inProgress, undefined, 'the failed run wrote its final receipt');
  assert.equal(receipt('branch-feat-x').supersededBy, undefined);
  assert.equal(receipt('branch-feat-x').ledger.length, 1);

  // The branch scope is busy while the PR succeeds.
  const busy = await store.acquireLock({ env: 'preview', scope: 'branch-feat-x', holder: 'branch-run-2', ttlMs: 60_000 });
  const lease = await acquireLease(store, { context: pCtx, ...quiet });
  const finished = await lease.finish('complete');
  const message = 'Scope `branch-feat-x` is busy; its resources will be handed over to `pr-5` on the next run.';
  assert.equal(finished.status, 'complete');
  assert.equal(finished.handedOver, 0);
  assert.deepEqual(finished.warnings, [message]);
  assert.ok(lease.warnings.includes(message));
  assert.equal(finished.receipt.status, 'complete');
  assert.equal(await lease.finish('failed'), finished, 'finishing again gives the same result');
  await lease.release();
  assert.equal(receipt('pr-5').status, 'complete');
  assert.equal(receipt('branch-feat-x').ledger.length, 1, 'nothing handed over');
  assert.equal(receipt('branch-feat-x').supersededBy, undefined);
  assert.deepEqual((await store.readLock({ env: 'preview', scope: 'branch-feat-x' })).holder, 'branch-run-2', "the busy holder's lock is untouched");
  assert.equal((await scopeStatus(store, pCtx)).handoverPending, true);

  // Once it is free, the next PR run hands over (and inherits nothing new: it already has them).
  await store.releaseLock({ env: 'preview', scope: 'branch-feat-x', holder: 'branch-run-2', epoch: busy.lock.epoch });
  const next = await acquireLease(store, { context: pCtx, ...quiet });
  assert.deepEqual(next.warnings, []);
  const done = await next.finish('complete');
  await next.release();
  assert.equal(done.handedOver, 1);
  assert.deepEqual(done.warnings, []);
  assert.equal(receipt('branch-feat-x').supersededBy, 'pr-5');
  assert.deepEqual(receipt('branch-feat-x').ledger, []);
  assert.deepEqual(receipt('pr-5').ledger.map(brief), [{ adapter: 'neon', key: 'db-feat-search', id: 'br_x', createdBy: 'baton' }]);
  assert.equal((await scopeStatus(store, pCtx)).handoverPending, false);
});

test("foreign resources: changing another PR's resource is refused, relying on it is adopted, destroy leaves it", async () => {
  const { store, receipt } = fresh();
  const shared = { adapter: 'vercel', key: 'SHARED_FLAG', provider: { team: 't1' } };
  await withLease(store, { context: ctx('pr-42', 'feat/a', 42), ...quiet }, async (lease) => {
    await lease.intend(shared);
    await lease.record(shared, 'env_shared');
  });
  const owner = receipt('pr-42');

  await withLease(store, { context: ctx('pr-43', 'feat/b', 43), ...quiet }, async (lease) => {
    const e = await rejection(lease.check(shared, { change: true }));
    assert.equal(e.code, 'OWNED_BY_OTHER_SCOPE');
    assert.equal(e.details.owner, 'pr-42');
    assert.match(e.message, /`pr-42`/);
    assert.deepEqual(receipt('pr-43').ledger, [], 'a refused change records nothing');
    // The same key with another provider block is another resource.
    assert.deepEqual(await lease.check({ ...shared, provider: { team: 't2' } }, { change: true }), { relation: 'none', adopted: false });
    assert.deepEqual(await lease.check(shared), { relation: 'foreign', owner: 'pr-42', adopted: true });
    assert.deepEqual(receipt('pr-43').ledger.map(brief), [{ adapter: 'vercel', key: 'SHARED_FLAG', id: '', createdBy: 'adopted' }]);
    assert.equal((await lease.check(shared)).createdBy, 'adopted', 'relied on already');
    assert.equal((await rejection(lease.check(shared, { change: true }))).code, 'OWNED_BY_OTHER_SCOPE', 'adopting does not allow changing');
    // Creating it is refused the same way before any intent.
    assert.equal((await rejection(lease.check(shared, { change: true }))).details.owner, 'pr-42');
  });
  assert.deepEqual(receipt('pr-43').ledger.map((e) => e.createdBy), ['adopted']);

  let called = 0;
  const r = await destroy(store, { context: ctx('pr-43', 'feat/b', 43), ...quiet }, async (resources) => {
    called += 1;
    assert.deepEqual(resources, [], 'an adopted resource is never passed to be deleted');
  });
  assert.equal(called, 1);
  assert.equal(r.status, 'complete');
  assert.deepEqual(receipt('pr-43').ledger, [], 'the adopted entry is forgotten');
  assert.deepEqual(receipt('pr-42'), owner, 'the owner is untouched');
});

/** Runs `script` in a child node process with stdout piped; `out()` is its stdout so far. */
function startChild(script) {
  const proc = spawn(process.execPath, ['-e', script], { cwd: os.tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = once(proc, 'exit');
  const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  exited.then(() => clearTimeout(killer));
  return { proc, exited, out: () => stdout, err: () => stderr };
}

/** Waits until `pred()` holds, checking every 5 ms, at most `ms`. */
async function until(pred, ms = 10_000, what = 'the condition') {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const childPrelude = (root) => `
const { openStore, acquireLease, withObjectLease, acquireObjectLease } = require(${JSON.stringify(pkgDir)});
const fs = require('node:fs');
const store = openStore(${JSON.stringify(`dir:${root}`)});
const quiet = { onWarning: () => {} };
`;

test('crash and resume: an intent survives a killed run; the next run takes over and claims it', async () => {
  const { root, store, receipt } = fresh();
  const context = ctx('pr-9', 'feat/nine', 9, { sha: sha('d') });
  const child = startChild(`${childPrelude(root)}
(async () => {
  const lease = await acquireLease(store, { context: ${JSON.stringify(context)}, holder: 'run-crashed', ttlMs: 1500, ...quiet });
  await lease.intend(${JSON.stringify(db)});
  console.log('intended');
  setInterval(() => {}, 1000);
})();`);
  await until(() => child.out().includes('intended') || child.proc.exitCode !== null, 10_000, 'the intent');
  assert.equal(child.out(), 'intended\n', child.err());
  child.proc.kill('SIGKILL'); // the create was in flight: nothing finishes, nothing is released
  await child.exited;

  const crashed = receipt('pr-9');
  assert.equal(crashed.runId, 'run-crashed');
  assert.equal(crashed.inProgress, true);
  assert.equal(crashed.status, 'failed');
  assert.deepEqual(crashed.ledger.map(brief), [{ adapter: 'neon', key: 'db-feat-search', id: '', createdBy: 'intent' }]);
  assert.equal((await rejection(acquireLease(store, { context, ...quiet }))).code, 'LOCK_HELD', 'held until it expires');

  const seen = collector();
  const lease = await acquireLease(store, { context, wait: true, pollMs: 100, waitTimeoutMs: 10_000, ...seen });
  assert.equal(lease.preempted.holder, 'run-crashed');
  assert.match(seen.warnings[0], /^Took over an expired lock held by run-crashed/);
  assert.equal(lease.receipt.lockPreempted, 'run-crashed');
  const resumed = receipt('pr-9');
  assert.equal(resumed.runId, lease.holder);
  assert.deepEqual(resumed.ledger.map(brief), [{ adapter: 'neon', key: 'db-feat-search', id: '', createdBy: 'intent' }], "the successor's receipt still has the intent");
  assert.deepEqual(await lease.check(db, { change: true }), { relation: 'own', createdBy: 'intent', adopted: false });
  // The resource turned out to exist: the successor claims it.
  await lease.record(db, 'br_found');
  assert.deepEqual(receipt('pr-9').ledger.map(brief), [{ adapter: 'neon', key: 'db-feat-search', id: 'br_found', createdBy: 'baton' }]);
  assert.equal((await lease.finish('complete')).status, 'complete');
  await lease.release();
  assert.equal(receipt('pr-9').lockPreempted, 'run-crashed');
});

test('destroy never drops an unresolved intent: INTENT_UNRESOLVED after the receipt landed, and the intent stays', async () => {
  const { store, receipt } = fresh();
  const context = ctx('pr-11', 'feat/eleven', 11);
  const lost = { adapter: 'neon', key: 'maybe-created', provider: { project: 'p1' } };
  // The create threw after the intent: the run failed, the intent stays.
  await assert.rejects(
    withLease(store, { context, ...quiet }, async (lease) => {
      await lease.record(db, 'br_ok');
      await lease.intend(lost);
      throw new Error('timeout during create');
    }),
    /timeout during create/,
  );
  assert.deepEqual(receipt('pr-11').ledger.map((e) => e.createdBy), ['baton', 'intent']);

  const offered = [];
  const e = await rejection(
    destroy(store, { context, ...quiet }, async (resources, lease) => {
      for (const r of resources) {
        offered.push([r.key, r.createdBy]);
        // The owned one is deleted; the intent cannot be located (the provider read failed): left alone.
        if (r.createdBy === 'baton') await lease.forget(r);
      }
    }),
  );
  assert.deepEqual(offered, [['maybe-created', 'intent'], ['db-feat-search', 'baton']], 'newest first, intents included');
  assert.equal(e.code, 'INTENT_UNRESOLVED');
  assert.match(e.message, /may have created neon:maybe-created but the destroy did not resolve it/, 'the core\'s message, as the CLI prints it');
  assert.deepEqual(e.details.unresolved.map((r) => r.key), ['maybe-created']);
  const after = receipt('pr-11');
  assert.equal(after.destroy, true);
  assert.equal(after.status, 'failed');
  assert.equal(after.inProgress, undefined, 'the final receipt landed before the error');
  assert.deepEqual(after.ledger.map(brief), [{ adapter: 'neon', key: 'maybe-created', id: '', createdBy: 'intent' }]);
  assert.equal(await store.readLock({ env: 'preview', scope: 'pr-11' }), null, 'released');

  // A destroy whose callback throws: the receipt says failed, the error is the callback's, nothing forgotten.
  const boom = new Error('provider down');
  await assert.rejects(destroy(store, { context, ...quiet }, async () => Promise.reject(boom)), (x) => x === boom);
  assert.equal(receipt('pr-11').status, 'failed');
  assert.equal(receipt('pr-11').ledger.length, 1);

  // Found absent on a later look: forgotten, and the destroy completes.
  const done = await destroy(store, { context, ...quiet }, async (resources, lease) => {
    assert.deepEqual(resources.map((r) => r.key), ['maybe-created']);
    assert.deepEqual(await lease.forget(resources[0]), { forgotten: true });
  });
  assert.equal(done.status, 'complete');
  assert.deepEqual(receipt('pr-11').ledger, []);

  // Owned entries the callback left: the destroy fails COMMAND_FAILED, as `baton destroy` does.
  await withLease(store, { context, ...quiet }, (lease) => lease.record(db, 'br_2'));
  const partial = await rejection(destroy(store, { context, ...quiet }, async () => {}));
  assert.equal(partial.code, 'COMMAND_FAILED');
  assert.match(partial.message, /exited 0 but 1 resource\(s\) were not reported deleted/);
  assert.equal(partial.details.receipt.status, 'failed', "the verdict's fields are in the details");
  assert.equal(partial.details.released, true);
  assert.equal(receipt('pr-11').status, 'failed');
  assert.equal(receipt('pr-11').ledger.length, 1);
  assert.equal(await store.readLock({ env: 'preview', scope: 'pr-11' }), null, 'released');
});

test('production needs a non-blank approver, refused before any lock or file; the approver is recorded trimmed', async () => {
  const { root, store, receipt } = fresh();
  const prod = { env: 'production', scope: 'main', branch: 'main', sha: sha('e'), pr: null };
  for (const approvedBy of [undefined, '', '   ']) {
    const e = await rejection(acquireLease(store, { context: prod, approvedBy, ...quiet }));
    assert.equal(e.code, 'ENV_NOT_APPROVED');
    assert.equal(e.details.environment, 'production');
    let called = false;
    const d = await rejection(destroy(store, { context: prod, approvedBy, ...quiet }, () => (called = true)));
    assert.equal(d.code, 'ENV_NOT_APPROVED');
    assert.equal(called, false);
    const w = await rejection(withLease(store, { context: prod, approvedBy, ...quiet }, () => assert.fail('must not run')));
    assert.equal(w.code, 'ENV_NOT_APPROVED');
  }
  assert.deepEqual(readdirSync(root), [], 'no lock, no directory, nothing');

  await withLease(store, { context: prod, approvedBy: '  alice  ', ...quiet }, async (lease) => {
    assert.equal(lease.receipt.approvedBy, 'alice');
  });
  assert.equal(receipt('main', 'production').approvedBy, 'alice');
  assert.equal(receipt('main', 'production').status, 'complete');
  const d = await destroy(store, { context: prod, approvedBy: 'bob', ...quiet }, async () => {});
  assert.equal(d.receipt.approvedBy, 'bob');

  // Not required elsewhere, and then not recorded.
  await withLease(store, { context: ctx('pr-1', 'x', 1), approvedBy: 'carol', ...quiet }, async () => {});
  assert.equal(receipt('pr-1').approvedBy, undefined);
});

/** sha256(identity) truncated to 32 hex digits: the original tool's parent-lock scope. */
const parentScope = (identity) => createHash('sha256').update(identity, 'utf8').digest('hex').slice(0, 32);

test("a store laid out by the original tool is read: lock.json without epoch, v2 receipts by 'sponson', parent locks", async () => {
  const { root, store, dir, receipt } = fresh();
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  // Written as the original serialises: 2-space JSON plus a newline, in <root>/<env>/<scope>/.
  const write = (file, value) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  };
  const lock = { holder: 'run-1a2b3c4d', acquiredAt: iso(now - 1000), expiresAt: iso(now + 60_000) };
  write(path.join(dir('pr-9'), 'lock.json'), lock);
  const original = {
    version: 2,
    runId: 'run-1a2b3c4d',
    environment: 'preview',
    scope: 'pr-9',
    status: 'complete',
    startedAt: iso(now - 90_000),
    finishedAt: iso(now - 80_000),
    plan: { hash: 'f00d', path: 'sponson.yaml' },
    ctx: { env: 'preview', git: { branch: 'feat/nine', sha: sha('9'), short_sha: '9999999' }, pr: { number: 9 }, scope: 'pr-9' },
    lines: { db: { id: 'db', adapter: 'neon', op: 'branch', status: 'applied', createdBy: 'sponson', resources: [{ key: 'br-9', id: 'br_123', hash: 'h' }] } },
    ledger: [
      { adapter: 'neon', op: 'branch', provider: { project: 'p' }, key: 'br-9', id: 'br_123', hash: 'deadbeef', createdBy: 'sponson', line: 'db' },
      { adapter: 'vercel', op: 'env', provider: { team: 't' }, key: 'DATABASE_URL', id: 'env_9', hash: 'beef', createdBy: 'adopted', line: 'env', outputs: { kept: true } },
    ],
    history: [{ sha: sha('9'), at: iso(now - 80_000) }],
    hashKey: '00112233445566778899aabbccddeeff',
  };
  write(path.join(dir('pr-9'), 'latest.json'), original);
  const identity = 'fake:list:callbacks';
  write(path.join(root, '_locks', parentScope(identity), 'lock.json'), { holder: 'run-1a2b3c4d', acquiredAt: iso(now), expiresAt: iso(now + 60_000) });

  const cell = { env: 'preview', scope: 'pr-9' };
  const read = await store.readLock(cell);
  assert.equal(read.holder, 'run-1a2b3c4d');
  assert.equal(read.epoch, 0);
  assert.equal(read.expired, false);
  const nine = ctx('pr-9', 'feat/nine', 9);
  const status = await scopeStatus(store, nine);
  assert.equal(status.lockState, 'live');
  assert.equal(status.lock.holder, 'run-1a2b3c4d');
  assert.equal(status.receipt.runId, 'run-1a2b3c4d');
  assert.equal(status.receipt.status, 'complete');
  assert.deepEqual(status.owns.map((r) => [r.key, r.id, r.createdBy]), [
    ['br-9', 'br_123', 'sponson'], // as written: the original's marker is printed as it is
    ['DATABASE_URL', 'env_9', 'adopted'],
  ]);
  assert.match(status.warnings[0], /run-1a2b3c4d/);
  assert.deepEqual(await store.list('preview'), [{ scope: 'pr-9', text: readFileSync(path.join(dir('pr-9'), 'latest.json'), 'utf8') }]);

  // The original's locks exclude baton's: the scope lock and the parent-object lock.
  const held = await rejection(acquireLease(store, { context: nine, ...quiet }));
  assert.equal(held.code, 'LOCK_HELD');
  assert.equal(held.details.lock.holder, 'run-1a2b3c4d');
  const parent = await rejection(acquireObjectLease(store, identity, quiet));
  assert.equal(parent.code, 'LOCK_HELD');
  assert.equal(parent.details.parent, identity);
  assert.match(parent.message, /parent object fake:list:callbacks/);

  // Once the original's lock has expired, a run takes over, with the original ledger (and its fields).
  write(path.join(dir('pr-9'), 'lock.json'), { ...lock, expiresAt: iso(now - 1) });
  const lease = await acquireLease(store, { context: nine, ...quiet });
  assert.equal(lease.epoch, 1);
  assert.equal(lease.receipt.lockPreempted, 'run-1a2b3c4d');
  assert.equal(lease.receipt.hashKey, original.hashKey, "the scope's hash key is kept");
  assert.deepEqual(lease.receipt.ledger.map((e) => [e.key, e.createdBy]), [
    ['br-9', 'sponson'],
    ['DATABASE_URL', 'adopted'],
  ]);
  assert.deepEqual(lease.receipt.ledger[1].outputs, { kept: true }, 'unknown entry fields survive');
  assert.deepEqual(await lease.check({ adapter: 'neon', key: 'br-9', provider: { project: 'p' } }, { change: true }), {
    relation: 'own',
    createdBy: 'baton',
    adopted: false,
  });
  await lease.finish('complete');
  await lease.release();
  assert.deepEqual(receipt('pr-9').history.map((h) => h.sha), [sha('9')], 'history kept (no sha this run)');

  const offered = [];
  await destroy(store, { context: nine, ...quiet }, async (resources, l) => {
    for (const r of resources) {
      offered.push(r.key);
      await l.forget(r);
    }
  });
  assert.deepEqual(offered, ['br-9'], "the original's owned resource is deleted, its adopted one only forgotten");
  assert.deepEqual(receipt('pr-9').ledger, []);
});

test('parent-object locks: one lease per object across processes and leases; a secret in the identity is refused', async () => {
  const { root, store } = fresh();
  const identity = 'auth0:tenant-a:client:abc123';
  const first = await acquireObjectLease(store, identity, { holder: 'run-one', ...quiet });
  assert.equal(first.env, '_locks');
  assert.equal(first.scope, parentScope(identity));
  assert.ok(existsSync(path.join(root, '_locks', parentScope(identity), 'lock.json')), 'the original layout');
  const e = await rejection(acquireObjectLease(store, identity, { holder: 'run-two', ...quiet }));
  assert.equal(e.code, 'LOCK_HELD');
  assert.equal(e.details.parent, identity);
  assert.equal(e.details.lock.holder, 'run-one');
  // Another object is another lock.
  const other = await acquireObjectLease(store, 'auth0:tenant-a:client:xyz', quiet);
  await other.release();
  await first.release();

  // Another process holds it: we wait until it lets go.
  const child = startChild(`${childPrelude(root)}
(async () => {
  const lease = await acquireObjectLease(store, ${JSON.stringify(identity)}, { holder: 'child', ...quiet });
  console.log('held');
  setTimeout(async () => { await lease.release(); console.log('released'); }, 400);
})();`);
  await until(() => child.out().includes('held') || child.proc.exitCode !== null, 10_000, 'the child lease');
  assert.equal(child.out(), 'held\n', child.err());
  assert.equal((await rejection(acquireObjectLease(store, identity, quiet))).details.lock.holder, 'child');
  const waited = await acquireObjectLease(store, identity, { wait: true, pollMs: 50, waitTimeoutMs: 10_000, ...quiet });
  assert.ok(child.out().includes('released'), 'acquired only after the other process released');
  await waited.release();
  await child.exited;

  // A secret value in the identity: refused, nothing written.
  const leaked = 'http://user:hunter22@lists.example/callbacks';
  const s = await rejection(acquireObjectLease(store, leaked, { secrets: ['hunter22'], ...quiet }));
  assert.equal(s.code, 'USAGE');
  assert.match(s.message, /secret/);
  assert.equal(existsSync(path.join(root, '_locks', parentScope(leaked))), false);
  const w = await rejection(withObjectLease(store, leaked, { secrets: ['hunter22'] }, () => assert.fail('must not run')));
  assert.equal(w.code, 'USAGE');
  assert.equal((await rejection(acquireObjectLease(store, '  ', quiet))).code, 'USAGE');
  assert.equal((await rejection(acquireObjectLease(store, identity, { scope: 'x', ...quiet }))).code, 'USAGE');
});

test('read-modify-write of one list by 6 concurrent processes under withObjectLease loses no item (and does without it)', async () => {
  const { root } = fresh();
  const list = path.join(root, 'callbacks.json');
  const identity = 'fake:list:callbacks';
  /** The body of one writer: read the list, wait a little (a provider round trip), write it back plus one. */
  const rmw = (item) => `
  const items = JSON.parse(fs.readFileSync(${JSON.stringify(list)}, 'utf8'));
  await new Promise((r) => setTimeout(r, 40));
  items.push(${JSON.stringify(item)});
  fs.writeFileSync(${JSON.stringify(list)}, JSON.stringify(items));`;

  // The control: without the lock, concurrent writers lose items (so the check below can fail).
  writeFileSync(list, '[]');
  await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      (async () => {
        const items = JSON.parse(readFileSync(list, 'utf8'));
        await sleep(40);
        items.push(`free-${i}`);
        writeFileSync(list, JSON.stringify(items));
      })(),
    ),
  );
  assert.ok(JSON.parse(readFileSync(list, 'utf8')).length < 6, 'without the lock items are lost');

  writeFileSync(list, '[]');
  const children = Array.from({ length: 6 }, (_, i) =>
    startChild(`${childPrelude(root)}
(async () => {
  await withObjectLease(store, ${JSON.stringify(identity)}, { holder: 'writer-${i}', wait: true, pollMs: 20, waitTimeoutMs: 30000, ...quiet }, async (lease) => {
    lease.assertHeld();${rmw(`item-${i}`)}
  });
  console.log('done');
})().catch((e) => { console.error(e); process.exit(1); });`),
  );
  for (const c of children) {
    const [code] = await c.exited;
    assert.equal(code, 0, c.err());
    assert.equal(c.out(), 'done\n');
  }
  const items = JSON.parse(readFileSync(list, 'utf8'));
  assert.deepEqual([...items].sort(), Array.from({ length: 6 }, (_, i) => `item-${i}`), 'every item is there');
  assert.equal(existsSync(path.join(root, '_locks', parentScope(identity), 'lock.json')), false, 'all released');
});

test('store.list: the scopes of an environment, decoded, sorted, with their receipts; not directories that are not scopes', async () => {
  const { root, store } = fresh();
  assert.deepEqual(await store.list('preview'), [], 'no environment yet');
  await withLease(store, { context: ctx('pr-2', 'b', 2), ...quiet }, (l) => l.record(db, 'x'));
  const hidden = await acquireLease(store, { env: 'preview', scope: '.hidden', ...quiet });
  await hidden.release();
  const envDir = path.join(root, 'preview');
  assert.ok(existsSync(path.join(envDir, '=2e68696464656e')), 'a special name is =hex on disk');
  for (const d of ['not a scope!', '_locks', '=zz', '=70722d32', 'branch-a']) mkdirSync(path.join(envDir, d), { recursive: true });
  writeFileSync(path.join(envDir, 'stray-file'), 'x');
  const listed = await store.list('preview');
  assert.deepEqual(listed.map((o) => o.scope), ['.hidden', 'branch-a', 'pr-2']);
  assert.equal(listed[0].text, null);
  assert.equal(listed[1].text, null);
  assert.equal(JSON.parse(listed[2].text).ledger[0].id, 'x');
  assert.equal((await rejection(store.list('bad/env'))).code, 'USAGE');
});

test('runs on leases: misuse is USAGE, ownership without a context, finishing closes the run', async () => {
  const { store, receipt } = fresh();
  const plain = await acquireLease(store, { env: 'preview', scope: 'pr-3', ...quiet });
  for (const p of [plain.intend(db), plain.record(db, 'x'), plain.forget(db), plain.check(db), plain.finish('complete')]) {
    assert.equal((await rejection(p)).code, 'USAGE');
  }
  assert.equal(plain.receipt, null);
  assert.equal(plain.context, null);
  await plain.release();
  assert.equal(existsSync(path.join(store.path, 'preview', 'pr-3', 'latest.json')), false, 'a plain lease writes no receipt');

  const usage = async (options) => assert.equal((await rejection(acquireLease(store, { ...options, ...quiet }))).code, 'USAGE');
  await usage({ context: ctx('pr-3', 'x', 3), scope: 'pr-4' });
  await usage({ env: 'preview', scope: 'pr-3', approvedBy: 'alice' });
  await usage({ env: 'preview', scope: 'pr-3', handleSignals: false });
  await usage({ env: 'preview', scope: 'pr-3', cancelGraceMs: 1000 });
  await usage({ context: ctx('pr-3', 'x', 3), handleSignals: 'no' });
  await usage({ context: { env: 'preview' } });
  await usage({ context: ctx('pr-3', 'x', -3) });
  await usage({ context: ctx('pr-3', 'x', 3), ownership: 'yes' });
  const noList = { transact: (cell, op, request) => store.transact(cell, op, request) };
  assert.equal((await rejection(acquireLease(noList, { context: ctx('pr-3', 'x', 3), ...quiet }))).code, 'USAGE');

  const lease = await acquireLease(store, { env: 'preview', scope: 'pr-3', ownership: true, ...quiet });
  assert.deepEqual(lease.context, { env: 'preview', scope: 'pr-3', branch: null, sha: null, pr: null });
  for (const bad of [{ key: 'k' }, { adapter: 'a', key: 'k', provider: [] }, { adapter: ' ', key: 'k' }, 'neon:k']) {
    assert.equal((await rejection(lease.intend(bad))).code, 'USAGE', JSON.stringify(bad));
  }
  assert.equal((await rejection(lease.record(db))).code, 'USAGE', 'record needs the id');
  assert.equal((await rejection(lease.finish('done'))).code, 'USAGE');
  await lease.intend(db);
  assert.deepEqual(await lease.forget({ ...db, id: '', createdBy: 'intent' }), { forgotten: true }, 'a plan entry can be passed as it is');
  assert.deepEqual(await lease.forget(db), { forgotten: false });
  await lease.record(url, 'env_3');
  const finished = await lease.finish('complete');
  assert.equal(finished.status, 'complete');
  assert.equal((await rejection(lease.intend(db))).code, 'USAGE', 'the receipt is final');
  await lease.release();
  assert.deepEqual(receipt('pr-3').ledger.map(brief), [{ adapter: 'vercel', key: 'API_URL', id: 'env_3', createdBy: 'baton' }]);
  assert.equal(receipt('pr-3').ctx.git.branch, null);

  // withLease leaves a run the work finished itself alone; a run finished `failed` is a failed run.
  const failed = await rejection(
    withLease(store, { context: ctx('pr-3', 'x', 3), ...quiet }, async (l) => {
      await l.finish('failed');
    }),
  );
  assert.equal(failed.code, 'COMMAND_FAILED');
  assert.equal(receipt('pr-3').status, 'failed');
  assert.equal(await store.readLock({ env: 'preview', scope: 'pr-3' }), null, 'released');
  const value = await withLease(store, { context: ctx('pr-3', 'x', 3), ...quiet }, async (l) => {
    assert.equal((await l.finish('complete')).status, 'complete');
    return 'done';
  });
  assert.equal(value, 'done');
  assert.equal(receipt('pr-3').status, 'complete');
});

test('a lost lease writes nothing more: ledger operations and the finish are refused (LOCK_LOST)', async () => {
  const { store, receipt } = fresh();
  const context = ctx('pr-8', 'feat/eight', 8);
  const lease = await acquireLease(store, { context, ...quiet });
  await lease.intend(db);
  await store.breakLock({ env: 'preview', scope: 'pr-8', holder: 'ops', ttlMs: 60_000, reason: 'stuck' });
  // The break itself is recorded in the receipt (lockBreaks); nothing of the lost run lands after it.
  const checkpoint = receipt('pr-8');
  assert.equal(checkpoint.lockBreaks.at(-1).reason, 'stuck');
  const e = await rejection(lease.record(db, 'br_8'));
  assert.equal(e.code, 'LOCK_LOST');
  assert.equal(lease.signal.aborted, true);
  assert.equal((await rejection(lease.finish('complete'))).code, 'LOCK_LOST');
  assert.deepEqual(receipt('pr-8'), checkpoint, 'nothing written after the loss');
  await lease.release();

  await store.releaseLock({ env: 'preview', scope: 'pr-8', holder: 'ops' });
  const w = await rejection(
    withLease(store, { context, ...quiet }, async (l) => {
      await store.breakLock({ env: 'preview', scope: 'pr-8', holder: 'ops', ttlMs: 60_000, reason: 'again' });
      return 'done';
    }),
  );
  assert.equal(w.code, 'LOCK_LOST', 'the finish of a lost run fails the work');
  assert.equal(receipt('pr-8').inProgress, true, 'the final receipt did not land');
});

test("a run that cannot start (its scope's receipt is corrupt) releases the lock; the receipt is kept", async () => {
  const { store, dir } = fresh();
  mkdirSync(dir('pr-6'), { recursive: true });
  writeFileSync(path.join(dir('pr-6'), 'latest.json'), '{"version": 2, "broken"');
  const e = await rejection(acquireLease(store, { context: ctx('pr-6', 'x', 6), ...quiet }));
  assert.equal(e.code, 'RECEIPT_CORRUPT');
  assert.equal(await store.readLock({ env: 'preview', scope: 'pr-6' }), null, 'released');
  assert.equal(readFileSync(path.join(dir('pr-6'), 'latest.json'), 'utf8'), '{"version": 2, "broken"');
  // A corrupt receipt of another scope is skipped by the others' listing (it cannot tell what it owns).
  await withLease(store, { context: ctx('pr-7', 'y', 7), ...quiet }, async (lease) => {
    assert.deepEqual(await lease.check(db, { change: true }), { relation: 'none', adopted: false });
  });
});

test('a handover that fails is a warning: the run stays complete and the next run tries again', async () => {
  const { store, dir, receipt } = fresh();
  const bCtx = ctx('branch-feat-y', 'feat/y');
  const pCtx = ctx('pr-12', 'feat/y', 12);
  await withLease(store, { context: bCtx, ...quiet }, (lease) => lease.record(db, 'br_y'));
  // The predecessor's lock cannot be read (LOCK_CORRUPT): the handover cannot take it.
  writeFileSync(path.join(dir('branch-feat-y'), 'lock.json'), '{"holder": ');
  const seen = collector();
  const lease = await acquireLease(store, { context: pCtx, ...seen });
  const finished = await lease.finish('complete');
  await lease.release();
  assert.equal(finished.status, 'complete');
  assert.equal(finished.handedOver, 0);
  // The run's warnings so far: the inheritance, then the handover put off.
  assert.equal(finished.warnings.length, 2);
  assert.match(finished.warnings[0], /^Inherited 1 resource/);
  assert.match(finished.warnings[1], /^Could not hand over the resources of scope `branch-feat-y`: The lock of preview\/branch-feat-y/);
  assert.deepEqual(seen.warnings, finished.warnings);
  assert.equal(receipt('pr-12').status, 'complete');
  assert.equal(receipt('branch-feat-y').ledger.length, 1, 'nothing handed over');

  // Repaired (an expired lock now): the next PR run hands over.
  writeFileSync(path.join(dir('branch-feat-y'), 'lock.json'), JSON.stringify({ holder: 'x', expiresAt: new Date(0).toISOString() }));
  await withLease(store, { context: pCtx, ...quiet }, async () => {});
  assert.equal(receipt('branch-feat-y').supersededBy, 'pr-12');
  assert.deepEqual(receipt('branch-feat-y').ledger, []);
});
