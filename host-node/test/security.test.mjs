// Security of the Node package: store files readable by the owner only (whatever the umask), credentials in
// a git remote URL never in an error (message, stack, hint, details, cause: everything util.inspect shows)
// on any path that involves the remote, production never locked or written without a named approver, and
// parent-object identities carrying a secret refused without echoing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readdirSync, existsSync, statSync, realpathSync, chmodSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { inspect } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { destroy, openStore, withLease, withObjectLease } from 'baton-lease';
import { rejection, quiet, ctx, closedPort } from '../test-helpers.mjs';

const require = createRequire(import.meta.url);
const SECRET = 's3cr3t-t0ken';
const tmp = (name) => realpathSync(mkdtempSync(path.join(os.tmpdir(), `baton-sec-${name}-`)));
const mode = (p) => statSync(p).mode & 0o777;

/** [relative path, mode, isDir] of everything under `root`. */
function modes(root) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      out.push([path.relative(root, p), mode(p), e.isDirectory()]);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

function assertOwnerOnly(root) {
  const all = modes(root);
  assert.ok(all.length > 0, root);
  for (const [p, m, dir] of all) assert.equal(m, dir ? 0o700 : 0o600, `${p}: ${m.toString(8)}`);
}

test('dir store files are 0600 and directories 0700 under umask 022, the cell mutex too', async () => {
  const old = process.umask(0o022);
  try {
    const root = tmp('modes');
    const store = openStore(`dir:${path.join(root, 'store')}`);
    await withLease(store, { ...quiet, context: ctx('pr-1', 'x', 1) }, async (lease) => {
      await lease.record({ adapter: 'a', key: 'k' }, 'id-1');
      await lease.write('state.txt', 'x');
    });
    await store.acquireLock({ env: 'preview', scope: 'pr-2', holder: 'h', ttlMs: 60_000 });
    assert.ok(existsSync(path.join(root, 'store/preview/pr-1/latest.json')));
    assertOwnerOnly(path.join(root, 'store'));
    assert.equal(mode(path.join(root, 'store')), 0o700);
    const { takeMutex, releaseMutex } = require('../js/mutex.cjs');
    const held = await takeMutex(path.join(root, 'store/preview/pr-2'), { env: 'preview', scope: 'pr-2' });
    assert.equal(mode(held.path), 0o600);
    await releaseMutex(held);
  } finally {
    process.umask(old);
  }
});

/** A bare remote reached through a URL with a credential: git rewrites it to the local path (insteadOf). */
function credentialRemote() {
  const root = tmp('creds');
  const bare = path.join(root, 'remote.git');
  execFileSync('git', ['init', '-q', '--bare', bare]);
  const url = `https://ci:${SECRET}@git.example.invalid/org/repo.git`;
  const config = path.join(root, 'gitconfig');
  writeFileSync(config, `[url "file://${bare}"]\n\tinsteadOf = ${url}\n`);
  return { root, bare, url, config };
}

/** Asserts that nothing of `e` names the secret: everything util.inspect prints (stack, cause, details). */
function clean(e, what) {
  const text = [inspect(e, { depth: 10, showHidden: true }), e.message, String(e.stack), JSON.stringify(e.details), String(e.hint)].join('\n');
  assert.equal(text.includes(SECRET), false, `${what}: ${text}`);
}

test('git working clones are 0700 and receipts kept after a rejected push 0600', async () => {
  const old = process.umask(0o022);
  const { root, bare, url, config } = credentialRemote();
  process.env.GIT_CONFIG_GLOBAL = config;
  try {
    const store = openStore(`git:${url}`, { cwd: root });
    await store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'h', ttlMs: 60_000 });
    assert.equal(mode(store.workdir), 0o700);
    const receiptsOnly = 'while read old new ref; do if git log -1 --format=%s "$new" | grep -q "^receipt"; then echo frozen >&2; exit 1; fi; done';
    writeFileSync(path.join(bare, 'hooks/pre-receive'), `#!/bin/sh\n${receiptsOnly}\n`);
    chmodSync(path.join(bare, 'hooks/pre-receive'), 0o755);
    const e = await rejection(withLease(store, { ...quiet, context: ctx('pr-2', 'x', 2) }, async () => {}));
    clean(e, 'rejected');
    await store.close();
    assertOwnerOnly(path.join(root, '.baton'));
  } finally {
    delete process.env.GIT_CONFIG_GLOBAL;
    process.umask(old);
  }
});

/** A local HTTP server answering every request with `status`. */
async function http(status) {
  const script = `
const http = require('node:http');
http.createServer((req, res) => {
  const h = ${status} === 401 ? { 'WWW-Authenticate': 'Basic realm="r"' } : {};
  res.writeHead(${status}, h); res.end();
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
  const proc = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [chunk] = await once(proc.stdout, 'data');
  return { port: Number(String(chunk).trim()), stop: () => proc.kill() };
}

test('credentials never show when the remote is unreachable, unknown, 404, 401 or refuses the ssh key', async () => {
  const closed = await closedPort();
  const [notFound, unauthorized] = [await http(404), await http(401)];
  process.env.GIT_SSH_COMMAND = 'f() { echo "$1: Permission denied (publickey)." >&2; exit 255; }; f';
  try {
    for (const [what, remote] of [
      ['connection refused', `http://user:${SECRET}@127.0.0.1:${closed}/r.git`],
      ['unknown host', `https://x-access-token:${SECRET}@no-such-host.invalid/r.git`],
      ['404', `http://user:${SECRET}@127.0.0.1:${notFound.port}/r.git`],
      ['401', `http://user:${SECRET}@127.0.0.1:${unauthorized.port}/r.git`],
      ['ssh key refused', `ssh://user:${SECRET}@127.0.0.1:${closed}/r.git`],
    ]) {
      const store = openStore(`git:${remote}`, { cwd: os.tmpdir() });
      assert.equal(store.path.includes(SECRET), false);
      for (const [op, attempt] of [
        ['acquire', () => store.acquireLock({ env: 'preview', scope: 'pr-1', holder: 'h', ttlMs: 60_000 })],
        ['read', () => store.read({ env: 'preview', scope: 'pr-1' }, 'lock-read')],
        ['list', () => store.list('preview')],
        ['lease', () => withLease(store, { ...quiet, context: ctx('pr-1', 'x', 1) }, async () => assert.fail('ran'))],
      ]) {
        const e = await rejection(attempt());
        assert.equal(e.code, 'STORE_PERMISSION', `${what} ${op}: ${e.message}`);
        clean(e, `${what} ${op}`);
      }
      await store.close();
    }
  } finally {
    delete process.env.GIT_SSH_COMMAND;
    notFound.stop();
    unauthorized.stop();
  }
});

test('credentials never show on a rejected push, a fenced refusal, corrupt content or a bad ref prefix', async () => {
  const { root, bare, url, config } = credentialRemote();
  process.env.GIT_CONFIG_GLOBAL = config;
  try {
    const store = openStore(`git:${url}`, { cwd: root });
    const cell = { env: 'preview', scope: 'pr-1' };
    const { lock } = await store.acquireLock({ ...cell, holder: 'h', ttlMs: 3_600_000 });
    clean(await rejection(store.acquireLock({ ...cell, holder: 'other', ttlMs: 60_000 })), 'held');
    const stale = await rejection(store.transact(cell, 'ledger-record', { holder: 'h', epoch: 999, resource: { adapter: 'a', key: 'k', provider: {} }, id: '1' }));
    assert.equal(stale.code, 'LOCK_LOST');
    clean(stale, 'fenced');
    const hook = path.join(bare, 'hooks/pre-receive');
    writeFileSync(hook, `#!/bin/sh\necho 'denied for https://ci:${SECRET}@git.example.invalid' >&2\nexit 1\n`);
    chmodSync(hook, 0o755);
    const rejected = await rejection(store.transact(cell, 'ledger-record', { holder: 'h', epoch: lock.epoch, resource: { adapter: 'a', key: 'k', provider: {} }, id: '1' }));
    assert.equal(rejected.code, 'STORE_REJECTED', rejected.message);
    assert.match(rejected.message, /\[REDACTED\]/);
    clean(rejected, 'rejected');
    execFileSync('rm', [hook]);
    // Corrupt content on the ref.
    const git = (args, input) => execFileSync('git', ['--git-dir', bare, ...args], { input, encoding: 'utf8', env: { ...process.env, GIT_INDEX_FILE: path.join(root, 'idx') } }).trim();
    const ref = 'refs/heads/baton-receipts/preview/pr-1';
    const tip = git(['rev-parse', ref]);
    const blob = git(['hash-object', '-w', '--stdin'], `{"holder": "https://u:${SECRET}@x"`);
    git(['read-tree', tip]);
    git(['update-index', '--add', '--cacheinfo', `100644,${blob},preview/pr-1/lock.json`]);
    const commit = git(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit-tree', git(['write-tree']), '-p', tip, '-m', 'corrupt']);
    git(['update-ref', ref, commit]);
    const corrupt = await rejection(store.acquireLock({ ...cell, holder: 'x', ttlMs: 60_000 }));
    assert.equal(corrupt.code, 'LOCK_CORRUPT');
    clean(corrupt, 'corrupt');
    await store.close();
    process.env.BATON_GIT_PREFIX = 'bad..prefix';
    try {
      const bad = await rejection(Promise.resolve().then(() => openStore(`git:${url}`, { cwd: root })));
      assert.equal(bad.code, 'USAGE');
      clean(bad, 'prefix');
    } finally {
      delete process.env.BATON_GIT_PREFIX;
    }
  } finally {
    delete process.env.GIT_CONFIG_GLOBAL;
  }
});

test('production in any letter case is never locked or written without a named approver', async () => {
  const root = tmp('approval');
  const store = openStore(`dir:${path.join(root, 'store')}`);
  let n = 0;
  for (const env of ['production', 'Production', 'PRODUCTION']) {
    for (const approvedBy of [undefined, '', '   ', '\t\n']) {
      n += 1;
      const context = { ...ctx(`pr-${n}`, 'x', n), env };
      let ran = false;
      const e = await rejection(withLease(store, { ...quiet, context, approvedBy }, async () => (ran = true)));
      assert.equal(e.code, 'ENV_NOT_APPROVED', `${env} ${JSON.stringify(approvedBy)}: ${e.message}`);
      const d = await rejection(destroy(store, { ...quiet, context, approvedBy }, async () => (ran = true)));
      assert.equal(d.code, 'ENV_NOT_APPROVED');
      assert.equal(ran, false);
    }
  }
  // A plain lease (no receipts) is a production lock too.
  for (const approvedBy of [undefined, ' ']) {
    const e = await rejection(withLease(store, { ...quiet, env: 'Production', scope: 'main', approvedBy }, async () => assert.fail('ran')));
    assert.equal(e.code, 'ENV_NOT_APPROVED');
  }
  assert.equal(existsSync(path.join(root, 'store')), false, 'nothing was locked or written');
  await withLease(store, { ...quiet, env: 'production', scope: 'plain', approvedBy: 'bob' }, async () => {});
  assert.equal((await rejection(withLease(store, { ...quiet, env: 'preview', scope: 'p', approvedBy: 'bob' }, async () => {}))).code, 'USAGE');
  await withLease(store, { ...quiet, context: { ...ctx('main', 'main'), env: 'production' }, approvedBy: ' alice ' }, async () => {});
  assert.ok(existsSync(path.join(root, 'store/production/main/latest.json')));
});

test('a parent-object identity carrying a secret is refused without echoing it', async () => {
  const root = tmp('parent');
  const store = openStore(`dir:${path.join(root, 'store')}`);
  let ran = false;
  const e = await rejection(withObjectLease(store, `auth0:tenant:client:${SECRET}`, { ...quiet, secrets: [SECRET] }, async () => (ran = true)));
  assert.equal(e.code, 'USAGE');
  assert.match(e.message, /contains a secret value/);
  clean(e, 'parent');
  assert.equal(ran, false);
  assert.equal(existsSync(path.join(root, 'store')), false);
  await withObjectLease(store, 'auth0:tenant:client:abc', { ...quiet, secrets: [SECRET] }, async () => (ran = true));
  assert.equal(ran, true);
});
