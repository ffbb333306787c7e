// Ownership claims through the package (core/src/claims, docs/claims.md), on real dir and git stores: of two
// leases in two scopes creating one resource at the same instant exactly one gets it and the other is
// OWNED_BY_OTHER_SCOPE before creating anything; forget frees the claim; a check with `change` asks it
// read-only; two old ledgers listing one resource are a conflict scopeStatus reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, mkdirSync, realpathSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { openStore, scopeStatus, withLease } from 'baton-lease';

const res = { adapter: 'fake', key: 'shared' };
const context = (scope) => ({ env: 'preview', scope, branch: null, sha: null, pr: null });
const quiet = { onWarning: () => {} };

function freshDir() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-claims-')));
  return { root, store: openStore(`dir:${root}`) };
}

/** The claims of a dir store: [scope, identity], sorted; a free record (`claim-free`) claims nothing. */
function claims(root) {
  const dir = path.join(root, '_claims');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((c) => existsSync(path.join(dir, c, 'claim.json')))
    .map((c) => JSON.parse(readFileSync(path.join(dir, c, 'claim.json'), 'utf8')))
    .filter((c) => c.free !== true)
    .map((c) => [c.scope, c.identity])
    .sort();
}

/** Two leases in pr-1 and pr-2 check, intend and record `res` together; resolves each outcome. */
async function raceOnce(store) {
  let release;
  const go = new Promise((r) => (release = r));
  let ready = 0;
  const run = (scope) =>
    withLease(store, { context: context(scope), handleSignals: false, ...quiet }, async (lease) => {
      ready += 1;
      if (ready === 2) release();
      await go;
      await lease.check(res, { change: true });
      await lease.intend(res);
      await lease.record(res, `made-by-${scope}`);
      return scope;
    }).then(
      (scope) => ({ scope, ok: true }),
      (e) => ({ ok: false, code: e.code, owner: e.details?.owner }),
    );
  return Promise.all([run('pr-1'), run('pr-2')]);
}

for (const kind of ['dir', 'git']) {
  test(`two leases in two scopes create one resource at once (${kind}): one owner, ten times`, async () => {
    for (let round = 0; round < 10; round++) {
      let store;
      let root = null;
      if (kind === 'dir') ({ root, store } = freshDir());
      else {
        const remote = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-claims-git-')));
        execFileSync('git', ['init', '--bare', '--quiet', remote]);
        store = openStore(`git:file://${remote}`);
      }
      const results = await raceOnce(store);
      const won = results.filter((r) => r.ok);
      const lost = results.filter((r) => !r.ok);
      assert.equal(won.length, 1, JSON.stringify(results));
      assert.deepEqual(lost.map((r) => [r.code, r.owner]), [['OWNED_BY_OTHER_SCOPE', won[0].scope]]);
      if (root) assert.deepEqual(claims(root), [[won[0].scope, 'fake|{}|shared']]);
      await store.close();
    }
  });
}

test('forget frees the claim; then another scope may create the resource', async () => {
  const { root, store } = freshDir();
  await withLease(store, { context: context('pr-1'), ...quiet }, async (lease) => {
    await lease.intend(res);
    await lease.record(res, 'one');
  });
  assert.deepEqual(claims(root), [['pr-1', 'fake|{}|shared']]);
  const refused = await withLease(store, { context: context('pr-2'), ...quiet }, (lease) => lease.check(res, { change: true })).catch((e) => e);
  assert.equal(refused.code, 'OWNED_BY_OTHER_SCOPE');
  await withLease(store, { context: context('pr-1'), ...quiet }, (lease) => lease.forget(res));
  assert.deepEqual(claims(root), []);
  await withLease(store, { context: context('pr-2'), ...quiet }, async (lease) => {
    assert.equal((await lease.check(res, { change: true })).relation, 'none');
    await lease.intend(res);
    await lease.record(res, 'two');
  });
  assert.deepEqual(claims(root), [['pr-2', 'fake|{}|shared']]);
});

test('two old ledgers listing one resource: scopeStatus reports the conflict, neither may take it', async () => {
  const { root, store } = freshDir();
  for (const scope of ['pr-1', 'pr-2']) {
    mkdirSync(path.join(root, 'preview', scope), { recursive: true });
    const receipt = {
      version: 2, runId: 'run-old', environment: 'preview', scope, status: 'complete', lines: {}, history: [], hashKey: '',
      ledger: [{ adapter: 'fake', op: '', provider: {}, key: 'shared', id: scope, hash: '', createdBy: 'sponson', line: '' }],
    };
    writeFileSync(path.join(root, 'preview', scope, 'latest.json'), JSON.stringify(receipt));
  }
  const status = await scopeStatus(store, context('pr-1'));
  assert.equal(status.conflicts.length, 1);
  assert.deepEqual(status.conflicts[0].scopes, ['pr-2']);
  assert.equal(status.conflicts[0].resource.key, 'shared');
  assert.ok(status.warnings.some((w) => w.startsWith('Conflict')), status.warnings.join('\n'));
  const e = await withLease(store, { context: context('pr-1'), ...quiet }, (lease) => lease.record(res, 'x')).catch((x) => x);
  assert.equal(e.code, 'OWNED_BY_OTHER_SCOPE');
  assert.equal(e.details.owner, 'pr-2');
  assert.deepEqual(claims(root), []);
});
