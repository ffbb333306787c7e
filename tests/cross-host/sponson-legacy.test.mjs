// Beside the original tool during a migration (issue 18): a git store with the original's prefix
// (BATON_GIT_PREFIX=sponson-receipts) reads the original's legacy `sponson/receipts` branch as the original
// reads it (reference/sponson-behaviour.md §2.3), in the CLI and in the Node package: a live lock there is
// respected (LOCK_HELD naming it, nothing migrated under it), a receipt found only there is read and listed,
// the first write of a scope seeds its own ref from it, and the legacy branch itself is never written.
// Fixture: tests/compat/fixtures/legacy-branch (plus locks written here with expiries relative to now).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, cpSync, realpathSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../host-node/js/index.mjs';

const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const fixture = fileURLToPath(new URL('../compat/fixtures/legacy-branch', import.meta.url));
const SHARED = { BATON_GIT_PREFIX: 'sponson-receipts' };

const git = (dir, ...args) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
const lock = (holder, fromNowMs) => {
  const now = Date.now();
  return `${JSON.stringify({ holder, acquiredAt: new Date(now - 60_000).toISOString(), expiresAt: new Date(now + fromNowMs).toISOString() }, null, 2)}\n`;
};

/** A bare remote whose only branch is the original's legacy `sponson/receipts`, laid out from the fixture. */
function legacyRemote() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-legacy-')));
  const remote = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  execFileSync('git', ['init', '-q', '--bare', remote]);
  execFileSync('git', ['init', '-q', '-b', 'sponson/receipts', work]);
  cpSync(fixture, work, { recursive: true });
  for (const [scope, text] of [['pr-7', lock('run-1234abcd', 600_000)], ['pr-9', lock('run-deadbeef', -1_000)]]) {
    mkdirSync(path.join(work, 'preview', scope), { recursive: true });
    writeFileSync(path.join(work, 'preview', scope, 'lock.json'), text);
  }
  git(work, 'add', '-A');
  git(work, '-c', 'user.name=sponson', '-c', 'user.email=sponson@localhost', 'commit', '-qm', 'receipts');
  git(work, 'push', '-q', remote, 'sponson/receipts');
  return { root, remote, legacyTip: () => git(remote, 'rev-parse', 'refs/heads/sponson/receipts') };
}

/** `baton <args> --json` on the remote with the original's prefix; `{status, envelope}`. */
function cli(root, remote, args, env = SHARED) {
  const r = spawnSync(bin, [...args, '--store', `git:${remote}`, '--env', 'preview', '--json'], {
    cwd: root,
    env: { ...process.env, ...env, GIT_CONFIG_NOSYSTEM: '1' },
    encoding: 'utf8',
  });
  return { status: r.status, envelope: JSON.parse(r.stdout) };
}

const refs = (remote) => git(remote, 'for-each-ref', '--format=%(refname)').split('\n').filter(Boolean).sort();

test('CLI: a live lock on the legacy branch is respected, a legacy-only receipt is read, the branch is never written', () => {
  const { root, remote, legacyTip } = legacyRemote();
  const before = legacyTip();
  const held = cli(root, remote, ['lock', 'acquire', '--scope', 'pr-7', '--holder', 'baton-1', '--ttl', '60s']);
  assert.equal(held.status, 3, JSON.stringify(held.envelope));
  assert.equal(held.envelope.error.code, 'LOCK_HELD');
  assert.equal(held.envelope.error.lock.holder, 'run-1234abcd');
  assert.equal(cli(root, remote, ['lock', 'status', '--scope', 'pr-7']).envelope.lock.holder, 'run-1234abcd');
  assert.deepEqual(refs(remote), ['refs/heads/sponson/receipts'], 'nothing migrated under a live legacy lock');

  const shown = cli(root, remote, ['receipt', 'show', '--scope', 'pr-8']);
  assert.equal(shown.envelope.receipt.runId, 'run-0a1b2c3d');
  const listed = cli(root, remote, ['receipt', 'list', '--branch', 'x']);
  assert.deepEqual(listed.envelope.receipts.map((r) => [r.scope, r.runId, r.status]), [['pr-8', 'run-0a1b2c3d', 'complete']]);
  const ledger = cli(root, remote, ['ledger', 'list', '--scope', 'pr-8']);
  assert.deepEqual(ledger.envelope.owns.map((e) => [e.key, e.id, e.createdBy]), [['b1', 'br-1', 'sponson']]);

  // The first write of a scope starts its own ref from the legacy files; an expired legacy lock is taken over.
  const took = cli(root, remote, ['lock', 'acquire', '--scope', 'pr-9', '--holder', 'baton-2', '--ttl', '60s']);
  assert.equal(took.status, 0, JSON.stringify(took.envelope));
  assert.equal(took.envelope.preempted.holder, 'run-deadbeef');
  const got = cli(root, remote, ['lock', 'acquire', '--scope', 'pr-8', '--holder', 'baton-3', '--ttl', '60s']);
  assert.equal(got.status, 0, JSON.stringify(got.envelope));
  const own = 'refs/heads/sponson-receipts/preview/pr-8';
  assert.deepEqual(git(remote, 'ls-tree', '-r', '--name-only', own).split('\n'), ['README.md', 'preview/pr-8/epoch.json', 'preview/pr-8/latest.json', 'preview/pr-8/lock.json', 'preview/pr-8/run-0a1b2c3d.json']);
  assert.equal(git(remote, 'log', '--format=%s', `${own}~1`), 'Start receipts for preview/pr-8 (from sponson/receipts)');
  assert.equal(cli(root, remote, ['receipt', 'show', '--scope', 'pr-8']).envelope.receipt.runId, 'run-0a1b2c3d');
  assert.equal(legacyTip(), before, 'the legacy branch is never written');

  // Without the original's prefix the legacy branch is not baton's business.
  const plain = cli(root, remote, ['lock', 'acquire', '--scope', 'pr-7', '--holder', 'baton-4', '--ttl', '60s'], {});
  assert.equal(plain.status, 0, JSON.stringify(plain.envelope));
});

test('Node: a live lock on the legacy branch is respected, a legacy-only receipt is read, the branch is never written', async () => {
  const { remote, legacyTip } = legacyRemote();
  const before = legacyTip();
  const old = process.env.BATON_GIT_PREFIX;
  process.env.BATON_GIT_PREFIX = 'sponson-receipts';
  const store = openStore(`git:${remote}`);
  try {
    assert.equal((await store.readLock({ env: 'preview', scope: 'pr-7' })).holder, 'run-1234abcd');
    const held = await store.acquireLock({ env: 'preview', scope: 'pr-7', holder: 'node-1', ttlMs: 60_000 }).catch((e) => e);
    assert.equal(held.code, 'LOCK_HELD');
    assert.equal(held.details.lock.holder, 'run-1234abcd');
    const listed = await store.list('preview');
    assert.deepEqual(listed.map((c) => c.scope), ['pr-7', 'pr-8', 'pr-9']);
    assert.equal(JSON.parse(listed[1].text).runId, 'run-0a1b2c3d');
    const { preempted } = await store.acquireLock({ env: 'preview', scope: 'pr-9', holder: 'node-2', ttlMs: 60_000 });
    assert.equal(preempted.holder, 'run-deadbeef');
    await store.acquireLock({ env: 'preview', scope: 'pr-8', holder: 'node-3', ttlMs: 60_000 });
    const own = 'refs/heads/sponson-receipts/preview/pr-8';
    assert.ok(git(remote, 'ls-tree', '-r', '--name-only', own).split('\n').includes('preview/pr-8/run-0a1b2c3d.json'));
    assert.equal(git(remote, 'log', '--format=%s', `${own}~1`), 'Start receipts for preview/pr-8 (from sponson/receipts)');
    assert.deepEqual((await store.list('preview')).map((c) => c.scope), ['pr-7', 'pr-8', 'pr-9']);
    assert.equal(legacyTip(), before, 'the legacy branch is never written');
  } finally {
    await store.close();
    if (old === undefined) delete process.env.BATON_GIT_PREFIX;
    else process.env.BATON_GIT_PREFIX = old;
  }
});
