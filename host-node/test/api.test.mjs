// The package surface: scopes, context detection from explicit environment maps, errors, and loading the
// package both as CommonJS and as ESM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync, readFileSync, existsSync, realpathSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatonError, detectContext, errorCodes, invoke, openStore, scopeFor } from 'baton-lease';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const tmp = (prefix) => realpathSync(mkdtempSync(path.join(os.tmpdir(), `baton-${prefix}-`)));
/** The BatonError `fn` throws. */
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected a throw');
}

test('scopeFor follows the original rule', () => {
  assert.equal(scopeFor('feat/search'), 'branch-feat-search');
  assert.equal(scopeFor('feat//x y'), 'branch-feat-x-y');
  assert.equal(scopeFor('main', 42), 'pr-42');
  assert.equal(scopeFor('main'), 'main');
  assert.equal(scopeFor('master', null), 'main');
  assert.equal(scopeFor('trunk', null, 'trunk'), 'main');
  assert.equal(scopeFor('trunk'), 'branch-trunk');
});

test('detectContext: GitHub pull request ref', () => {
  const env = { GITHUB_ACTIONS: 'true', GITHUB_REF: 'refs/pull/17/merge', GITHUB_HEAD_REF: 'feat/x', GITHUB_REF_NAME: '17/merge', GITHUB_SHA: 'abc' };
  assert.deepEqual(detectContext({ env }), { env: 'preview', branch: 'feat/x', sha: 'abc', pr: 17, defaultBranch: null, scope: 'pr-17' });
});

test('detectContext: GitHub push is "no pull request"', () => {
  const env = { GITHUB_ACTIONS: 'true', GITHUB_REF: 'refs/heads/feat/y', GITHUB_REF_NAME: 'feat/y', GITHUB_SHA: 'def', GITHUB_HEAD_REF: '' };
  const ctx = detectContext({ env });
  assert.equal(ctx.pr, null);
  assert.equal(ctx.scope, 'branch-feat-y');
});

test('detectContext: GitLab merge request', () => {
  const env = { GITLAB_CI: 'true', CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'feature', CI_COMMIT_BRANCH: 'other', CI_COMMIT_SHA: '123', CI_MERGE_REQUEST_IID: '5', CI_DEFAULT_BRANCH: 'develop' };
  assert.deepEqual(detectContext({ env }), { env: 'preview', branch: 'feature', sha: '123', pr: 5, defaultBranch: 'develop', scope: 'pr-5' });
});

test('detectContext: CircleCI pull request URL', () => {
  const env = { CIRCLECI: 'true', CIRCLE_BRANCH: 'fix', CIRCLE_SHA1: 'c1', CIRCLE_PULL_REQUEST: 'https://github.com/o/r/pull/12' };
  const ctx = detectContext({ env });
  assert.equal(ctx.pr, 12);
  assert.equal(ctx.scope, 'pr-12');
});

test('detectContext: Bitbucket Pipelines', () => {
  const env = { BITBUCKET_BUILD_NUMBER: '9', BITBUCKET_BRANCH: 'bb', BITBUCKET_COMMIT: 'b1', BITBUCKET_PR_ID: '3' };
  assert.deepEqual(detectContext({ env }), { env: 'preview', branch: 'bb', sha: 'b1', pr: 3, defaultBranch: null, scope: 'pr-3' });
  const push = detectContext({ env: { ...env, BITBUCKET_PR_ID: undefined } });
  assert.equal(push.scope, 'branch-bb');
});

test('detectContext: BATON_CTX_* beat CI variables; an empty BATON_CTX_PR is final', () => {
  const env = { BATON_CTX_ENV: 'staging', BATON_CTX_BRANCH: 'dev', BATON_CTX_SHA: 's1', BATON_CTX_PR: '', GITHUB_ACTIONS: 'true', GITHUB_REF: 'refs/pull/9/merge', GITHUB_HEAD_REF: 'gh' };
  assert.deepEqual(detectContext({ env }), { env: 'staging', branch: 'dev', sha: 's1', pr: null, defaultBranch: null, scope: 'branch-dev' });
  const bad = thrown(() => detectContext({ env: { ...env, BATON_CTX_PR: '-1' } }));
  assert.equal(bad.code, 'CTX_NULL');
});

test('detectContext: overrides beat variables; overrides.pr absent vs null', () => {
  const env = { BATON_CTX_BRANCH: 'dev', BATON_CTX_SHA: 's1', GITHUB_REF: 'refs/pull/9/merge', BATON_ENV: 'qa' };
  const ctx = detectContext({ env, overrides: { env: 'prod-like', branch: 'a', sha: 'o', pr: '7' } });
  assert.deepEqual(ctx, { env: 'prod-like', branch: 'a', sha: 'o', pr: 7, defaultBranch: null, scope: 'pr-7' });
  assert.equal(detectContext({ env, overrides: { branch: 'a' } }).pr, 9, 'absent: detected from GITHUB_REF');
  assert.equal(detectContext({ env, overrides: { branch: 'a', pr: undefined } }).pr, 9, 'undefined counts as absent');
  assert.equal(detectContext({ env, overrides: { branch: 'a', pr: null } }).pr, null, 'null: no pull request');
  assert.equal(detectContext({ env, overrides: { scope: 'pr-100' } }).scope, 'pr-100');
});

test('detectContext: default branch from the GITHUB_EVENT_PATH file; unreadable files are ignored', () => {
  const dir = tmp('event');
  const file = path.join(dir, 'event.json');
  writeFileSync(file, JSON.stringify({ repository: { default_branch: 'trunk' } }));
  const env = { GITHUB_ACTIONS: 'true', GITHUB_REF_NAME: 'trunk', GITHUB_SHA: 'a1', GITHUB_EVENT_PATH: file };
  const ctx = detectContext({ env });
  assert.equal(ctx.defaultBranch, 'trunk');
  assert.equal(ctx.scope, 'main');
  assert.equal(detectContext({ env: { ...env, GITHUB_EVENT_PATH: path.join(dir, 'missing.json') } }).scope, 'branch-trunk');
  writeFileSync(file, '{not json');
  assert.equal(detectContext({ env }).defaultBranch, null);
  writeFileSync(file, JSON.stringify({ pull_request: { number: 33 } }));
  assert.equal(detectContext({ env: { ...env, GITHUB_ACTIONS: undefined } }).pr, 33, 'the event names the pull request');
});

test('detectContext: CTX_NULL outside git with no branch', () => {
  const e = thrown(() => detectContext({ env: {}, cwd: tmp('nogit') }));
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, 'CTX_NULL');
  assert.match(e.message, /git/);
  assert.match(e.hint, /BATON_CTX_BRANCH/);
});

test('detectContext: local git and gh are asked only when the variables leave a gap', () => {
  // Fake `git` and `gh` that log their calls, run in a child process whose PATH finds them first.
  const dir = tmp('fakegit');
  const bin = path.join(dir, 'bin');
  const log = path.join(dir, 'calls.log');
  mkdirSync(bin);
  for (const [name, out] of [['git', 'case "$*" in *abbrev-ref*) echo feat/local;; *) echo 0123abc;; esac'], ['gh', 'echo 42']]) {
    writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >> '${log}'\n${out}\n`);
    chmodSync(path.join(bin, name), 0o755);
  }
  const detect = (env) => {
    const script = `const {detectContext}=require(${JSON.stringify(pkgDir)});console.log(JSON.stringify(detectContext({env:${JSON.stringify(env)}})))`;
    const out = execFileSync(process.execPath, ['-e', script], { cwd: dir, env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
    return JSON.parse(out);
  };
  assert.equal(detect({ BATON_CTX_BRANCH: 'b', BATON_CTX_SHA: 's' }).scope, 'branch-b');
  assert.equal(existsSync(log), false, 'git was asked although the variables sufficed');
  assert.deepEqual(detect({}), { env: 'preview', branch: 'feat/local', sha: '0123abc', pr: 42, defaultBranch: null, scope: 'pr-42' });
  assert.match(readFileSync(log, 'utf8'), /git rev-parse --abbrev-ref HEAD\ngit rev-parse HEAD\ngh pr view --json number -q .number\n/);
  assert.deepEqual(detect({ BATON_CTX_BRANCH: 'b' }), { env: 'preview', branch: 'b', sha: '0123abc', pr: null, defaultBranch: null, scope: 'branch-b' });
  assert.equal(readFileSync(log, 'utf8').match(/^gh /gm).length, 1, 'gh is not asked when the branch is known');
});

test('BatonError carries code, hint and details', () => {
  const e = thrown(() => detectContext({ env: {}, overrides: { branch: 'a', sha: 'b', pr: 'x' } }));
  assert.ok(e instanceof Error);
  assert.ok(e instanceof BatonError);
  assert.equal(e.name, 'BatonError');
  assert.equal(e.code, 'USAGE');
  assert.equal(e.hint, 'See `baton --help`.');
  assert.deepEqual(e.details, { pr: 'x' });
  assert.match(e.message, /--pr must be a positive integer/);
  const own = new BatonError('LOCK_HELD', 'held', { details: { lock: null } });
  assert.equal(own.code, 'LOCK_HELD');
  assert.equal(own.hint, undefined);
});

test('invoke and errorCodes reach the core directly', () => {
  assert.deepEqual(JSON.parse(invoke('scope-for', JSON.stringify({ branch: 'main', pr: 3 }))), { scope: 'pr-3' });
  const e = thrown(() => invoke('no-such-op', '{}'));
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, 'INTERNAL');
  const codes = errorCodes();
  assert.ok(codes.length >= 14);
  assert.deepEqual(codes.find((c) => c.code === 'LOCK_HELD').exit, 3);
  assert.equal(codes.find((c) => c.code === 'STORE_CONTENDED').hint, null);
  assert.equal(codes.find((c) => c.code === 'USAGE').hint, 'See `baton --help`.');
});

test('openStore resolves dir specs, BATON_STORE and the default', () => {
  const dir = tmp('spec');
  const saved = process.env.BATON_STORE;
  try {
    delete process.env.BATON_STORE;
    assert.equal(openStore('dir:rel/store', { cwd: dir }).path, `${dir}/rel/store`);
    assert.equal(openStore('dir:/abs', { cwd: dir }).kind, 'dir');
    assert.equal(openStore(undefined, { cwd: dir }).path, `${dir}/.baton`, 'outside git: in cwd');
    execFileSync('git', ['init', '-q', dir]);
    mkdirSync(path.join(dir, 'sub'));
    assert.equal(openStore(undefined, { cwd: path.join(dir, 'sub') }).path, `${dir}/.baton`, 'in git: at the root');
    process.env.BATON_STORE = 'dir:from-env';
    assert.equal(openStore(undefined, { cwd: dir }).path, `${dir}/from-env`);
    assert.equal(openStore('dir:flag', { cwd: dir }).path, `${dir}/flag`, 'the argument beats BATON_STORE');
    const e = thrown(() => openStore('s3:bucket', { cwd: dir }));
    assert.equal(e.code, 'USAGE');
  } finally {
    if (saved === undefined) delete process.env.BATON_STORE;
    else process.env.BATON_STORE = saved;
  }
});

test('the package loads with require() and with import, sharing one implementation', async () => {
  const names = [
    'BatonError',
    'acquireLease',
    'acquireObjectLease',
    'destroy',
    'detectContext',
    'errorCodes',
    'gc',
    'invoke',
    'openStore',
    'scopeFor',
    'scopeStatus',
    'withLease',
    'withObjectLease',
  ];
  const cjs = execFileSync(process.execPath, ['-e', `const b=require(${JSON.stringify(pkgDir)});console.log(Object.keys(b).sort().join(), b.scopeFor('x'))`], { encoding: 'utf8' });
  assert.equal(cjs.trim(), `${names.join()} branch-x`);
  const esm = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `import * as b from 'baton-lease'; console.log(Object.keys(b).sort().join(), b.scopeFor('x', 2))`],
    { cwd: pkgDir, encoding: 'utf8' },
  );
  assert.equal(esm.trim(), `${names.join()} pr-2`);
  const require = createRequire(import.meta.url);
  assert.equal(require('baton-lease').BatonError, BatonError, 'ESM and CommonJS share the BatonError class');
  const viaPath = await import(new URL('../js/index.mjs', import.meta.url));
  assert.equal(viaPath.openStore, openStore);
});
