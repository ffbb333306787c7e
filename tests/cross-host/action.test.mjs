// The GitHub Action (action.yml, action/*.cjs over the committed bundle action/dist/) run as the runner runs
// it (see action-runner.mjs) against a local bare git remote: a job-long lease held across later steps and
// released by post, also after a failed step and after a cancellation; a second job of the same scope
// fails or waits as configured; `run:` holds the lease for one command; the default store is the
// repository's remote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Job, gitRepo, pullRequestEvent, lockOf, cancel, until, bin, repoDir, fresh } from './action-runner.mjs';

function setup(pr = 7, inputs = {}) {
  const repo = gitRepo();
  const store = `git:${repo.remote}`;
  const vars = { ...pullRequestEvent(repo.dir, pr, repo.sha), BATON_BIN: bin, PATH: `${path.dirname(bin)}:${process.env.PATH}` };
  const job = () => new Job({ cwd: repo.work, vars, inputs: { store, ...inputs } });
  return { repo, store, job };
}

test('action.yml is a node24 action with a post step that always runs', () => {
  const yml = readFileSync(path.join(repoDir, 'action.yml'), 'utf8');
  assert.match(yml, /^runs:\n {2}using: node24\n {2}main: action\/main\.cjs\n {2}post: action\/post\.cjs\n {2}post-if: always\(\)$/m);
  for (const input of ['run', 'env', 'store', 'ttl', 'wait', 'wait-timeout', 'approved-by']) assert.match(yml, new RegExp(`^ {2}${input}:$`, 'm'));
  for (const output of ['scope', 'epoch', 'holder']) assert.match(yml, new RegExp(`^outputs:[\\s\\S]*^ {2}${output}:$`, 'm'));
});

test('without run: the lease is held across two later steps (renewed past its TTL) and released by post', async () => {
  const { store, job } = setup(7, { ttl: '3s' });
  const j = job();
  const main = await j.main();
  assert.equal(main.status, 0, main.stderr);
  assert.deepEqual([j.outputs.scope, j.outputs.epoch], ['pr-7', '1']);
  assert.equal(j.env.BATON_SCOPE, 'pr-7');
  assert.equal(j.env.BATON_EPOCH, '1');
  assert.equal(j.env.BATON_HOLDER, j.outputs.holder);
  assert.equal(j.env.BATON_STORE, store);

  // Step 1: the lock is this job's; it outlives its 3 s TTL because the renewer renews it.
  const one = await j.step('baton lock status --json > "$RUNNER_TEMP/one.json"; sleep 4');
  assert.equal(one.status, 0, one.stderr);
  const seen = JSON.parse(readFileSync(path.join(j.dir, 'one.json'), 'utf8'));
  assert.equal(seen.lock.holder, j.outputs.holder);
  // Step 2: still held at the same epoch, and a fenced write under it lands.
  const two = await j.step('echo \'{"url":"https://pr-7.example"}\' | baton write deployed.json --json');
  assert.equal(two.status, 0, two.stderr);
  const lock = lockOf(store, 'pr-7');
  assert.equal(lock.holder, j.outputs.holder);
  assert.equal(lock.epoch, 1);
  assert.equal(lock.expired, false);

  const post = await j.post();
  assert.equal(post.status, 0, post.stderr);
  assert.equal(lockOf(store, 'pr-7'), null);
  assert.match(post.stdout, /released pr-7|acquired preview\/pr-7/);
});

test('released by post after a failed step', async () => {
  const { store, job } = setup(8);
  const j = job();
  assert.equal((await j.main()).status, 0);
  const failed = await j.step('exit 1');
  assert.equal(failed.status, 1);
  assert.equal(lockOf(store, 'pr-8').holder, j.outputs.holder);
  assert.equal((await j.post()).status, 0);
  assert.equal(lockOf(store, 'pr-8'), null);
});

test('released by post after a cancelled step, and after a renewer that was killed', async () => {
  const { store, job } = setup(9);
  const j = job();
  assert.equal((await j.main()).status, 0);
  const step = j.startStep('sleep 30');
  await new Promise((r) => setTimeout(r, 200));
  cancel(step.child);
  const ended = await step.done;
  assert.notEqual(ended.status, 0);
  assert.equal(lockOf(store, 'pr-9').holder, j.outputs.holder);
  assert.equal((await j.post()).status, 0);
  assert.equal(lockOf(store, 'pr-9'), null);

  // The runner's SIGKILL of the renewer: post releases the lock itself (holder and epoch from the state).
  const k = job();
  assert.equal((await k.main()).status, 0);
  process.kill(Number(k.state.renewer), 'SIGKILL');
  const post = await k.post();
  assert.equal(post.status, 0, post.stderr);
  assert.match(post.stderr, /released preview\/pr-9/);
  assert.equal(lockOf(store, 'pr-9'), null);
});

test('run: holds the lease for the command, and a cancel ends it INTERRUPTED with the lock free', async () => {
  const { store, job } = setup(10);
  const j = job();
  const r = await j.main({ run: 'echo "$BATON_SCOPE $BATON_EPOCH" > "$RUNNER_TEMP/ran"; baton lock status --json > "$RUNNER_TEMP/lock.json"' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(path.join(j.dir, 'ran'), 'utf8').trim(), 'pr-10 1');
  assert.equal(JSON.parse(readFileSync(path.join(j.dir, 'lock.json'), 'utf8')).lock.holder, j.outputs.holder);
  assert.deepEqual([j.outputs.scope, j.outputs.epoch], ['pr-10', '1']);
  assert.equal(lockOf(store, 'pr-10'), null);
  assert.equal((await j.post()).status, 0);

  const c = job();
  const step = c.startMain({ run: `touch "$RUNNER_TEMP/started"; sleep 30` });
  await until('the command to start', () => {
    try {
      readFileSync(path.join(c.dir, 'started'));
      return true;
    } catch {
      return false;
    }
  });
  cancel(step.child);
  const ended = await step.done;
  assert.equal(ended.status, 130, ended.stderr);
  assert.match(ended.stderr, /error INTERRUPTED: /);
  assert.equal(lockOf(store, 'pr-10'), null);
});

test('a second job of the same scope fails with LOCK_HELD, or waits for the first one\'s post', async () => {
  const { store, job } = setup(11);
  const first = job();
  assert.equal((await first.main()).status, 0);

  const refused = job();
  const r = await refused.main();
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /LOCK_HELD/);
  assert.equal(refused.env.BATON_HOLDER, undefined);
  assert.equal((await refused.post()).status, 0);
  assert.equal(lockOf(store, 'pr-11').holder, first.outputs.holder);

  const waiting = job();
  const w = waiting.startMain({ wait: 'true', 'wait-timeout': '60s' });
  await until('the second job to wait', () => /waiting for preview\/pr-11: held by/.test(w.stderr()));
  assert.equal((await first.post()).status, 0);
  const got = await w.done;
  assert.equal(got.status, 0, got.stderr);
  assert.equal(waiting.outputs.epoch, '2');
  assert.equal(lockOf(store, 'pr-11').holder, waiting.outputs.holder);
  assert.equal((await waiting.post()).status, 0);
  assert.equal(lockOf(store, 'pr-11'), null);
});

test('a job cancelled while it waits stops its renewer; the holder keeps the lock', async () => {
  const { store, job } = setup(12);
  const first = job();
  assert.equal((await first.main()).status, 0);
  const waiting = job();
  const w = waiting.startMain({ wait: 'true' });
  await until('the second job to wait', () => /waiting for preview\/pr-12/.test(w.stderr()));
  cancel(w.child);
  const ended = await w.done;
  assert.notEqual(ended.status, 0);
  assert.equal((await waiting.post()).status, 0);
  assert.equal(lockOf(store, 'pr-12').holder, first.outputs.holder);
  assert.equal((await first.post()).status, 0);
  assert.equal(lockOf(store, 'pr-12'), null);
});

test('the default store is the repository\'s own remote', async () => {
  const repo = gitRepo();
  const server = fresh('server');
  repo.git(repo.dir, 'clone', '-q', '--bare', repo.remote, path.join(server, 'owner', 'repo.git'));
  const vars = { ...pullRequestEvent(repo.dir, 13, repo.sha), GITHUB_SERVER_URL: `file://${server}` };
  const j = new Job({ cwd: repo.work, vars, inputs: { 'github-token': 'tok' } });
  assert.equal((await j.main()).status, 0);
  assert.equal(j.env.BATON_STORE, `git:file://${server}/owner/repo.git`);
  assert.equal(lockOf(j.env.BATON_STORE, 'pr-13').holder, j.outputs.holder);
  assert.equal((await j.post()).status, 0);
  assert.equal(lockOf(j.env.BATON_STORE, 'pr-13'), null);
});

test('a job-long lease in production needs approved-by (ENV_NOT_APPROVED, nothing locked) and is held with it', async () => {
  const { store, job } = setup(14, { env: 'production' });
  const refused = job();
  const r = await refused.main();
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /ENV_NOT_APPROVED/);
  assert.equal(lockOf(store, 'pr-14', 'production'), null);
  assert.equal((await refused.post()).status, 0);
  const approved = job();
  assert.equal((await approved.main({ 'approved-by': 'ann' })).status, 0);
  assert.equal(lockOf(store, 'pr-14', 'production').holder, approved.outputs.holder);
  assert.equal((await approved.post()).status, 0);
  assert.equal(lockOf(store, 'pr-14', 'production'), null);
});
