// Helpers shared by the package tests (outside test/, so the runner does not count it as a test file).
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { BatonError } from 'baton-lease';

/** The BatonError the promise rejects with (fails the test when it resolves or rejects otherwise). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof BatonError, `not a BatonError: ${e && e.stack}`);
    return e;
  }
  assert.fail('expected a rejection');
}

/** Lease options that drop warnings (tests that check warnings collect them instead). */
export const quiet = { onWarning: () => {} };

/** A detected context. */
export const ctx = (scope, branch, pr = null, extra = {}) => ({ env: 'preview', scope, branch, sha: null, pr, ...extra });
export const sha = (c) => c.repeat(40);
/** The succession journey's two runs: branch feat/search, then its pull request 42. */
export const branchCtx = ctx('branch-feat-search', 'feat/search', null, { sha: sha('a'), defaultBranch: 'main' });
export const prCtx = ctx('pr-42', 'feat/search', 42, { sha: sha('b'), defaultBranch: 'main' });
/** Two resources the journey creates. */
export const db = { adapter: 'neon', key: 'db-feat-search', provider: { project: 'p1' }, op: 'branch', label: 'database branch' };
export const url = { adapter: 'vercel', key: 'API_URL', provider: { team: 't1', project: 'web' }, op: 'env' };

/** What a ledger entry says, for comparisons. */
export const brief = (e) => ({ adapter: e.adapter, key: e.key, id: e.id, createdBy: e.createdBy });

/** A TCP port on 127.0.0.1 that nothing listens on: bound once to get a free port, then closed. */
export async function closedPort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}
