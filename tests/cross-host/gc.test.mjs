// `baton gc`, `baton-lease gc`, gc() and the action's gc mode on one git store whose environment has the
// scopes of open, closed and merged pull requests, of a live branch, of a deleted branch and of a deleted
// branch a pull request succeeded: exactly the abandoned ones are listed (the same by every host), and
// --destroy destroys them and nothing else, skipping a scope whose lease is live.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { gitRepo, Job, pullRequestEvent, lockOf, bin, repoDir } from './action-runner.mjs';
import { openStore, gc } from '../../host-node/js/index.mjs';

const node = path.join(repoDir, 'host-node', 'bin', 'baton-lease.cjs');
const ABANDONED = ['branch-feat-gone', 'pr-2', 'pr-3', 'pr-4'];
const KEPT = ['branch-feat-live', 'branch-feat-merged', 'main', 'pr-1'];
let repo;
let store;
let openPrs;
let liveHolder;

/** Runs the CLI (or, with `useNode`, the npm command) in the workspace; {status, envelope, stdout, stderr}. */
function run(args, { useNode = false, input } = {}) {
  const [cmd, argv] = useNode ? [process.execPath, [node, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { cwd: repo.work, input, encoding: 'utf8', env: { ...process.env, PATH: `${path.dirname(bin)}:${process.env.PATH}`, CI: '' } });
  let envelope = null;
  try {
    envelope = JSON.parse(r.stdout);
  } catch {
    // human output
  }
  return { status: r.status, envelope, stdout: r.stdout, stderr: r.stderr };
}

/** A run of `scope` that records one resource. */
function deploy(scope, extra = []) {
  const r = run(['run', '--store', store, ...extra, '--json', '--', 'baton', 'ledger', 'record', '--adapter', 'neon', '--key', `db-${scope}`, '--id', `id-${scope}`]);
  assert.equal(r.status, 0, r.stderr);
  return r.envelope;
}

const ledger = (scope) => run(['ledger', 'list', '--store', store, '--scope', scope, '--json']).envelope;
const keys = (scope) => {
  const l = ledger(scope);
  return l.owns.map((e) => e.key);
};
const scopes = (list) => list.map((s) => s.scope);

before(() => {
  repo = gitRepo();
  store = `git:${repo.remote}`;
  repo.git(repo.work, 'push', '-q', 'origin', 'main:feat/live', 'main:feat/merged', 'main:feat/gone');
  for (const scope of ['pr-1', 'pr-2', 'pr-4', 'branch-feat-live', 'branch-feat-gone', 'main', 'branch-feat-merged']) deploy(scope, ['--scope', scope]);
  // Pull request 3 from feat/merged: it inherits the branch's resources and, once it succeeded, owns them.
  const pr3 = deploy('pr-3', ['--pr', '3', '--branch', 'feat/merged']);
  assert.equal(pr3.handedOver, 1, JSON.stringify(pr3));
  // Merged and closed: their branches are deleted; feat/live stays.
  repo.git(repo.work, 'push', '-q', 'origin', '--delete', 'feat/merged', 'feat/gone');
  openPrs = path.join(repo.dir, 'open-prs.json');
  writeFileSync(openPrs, JSON.stringify([{ number: 1 }, { number: 99 }]));
  const held = run(['lock', 'acquire', '--store', store, '--scope', 'pr-4', '--ttl', '10m', '--json']);
  assert.equal(held.status, 0, held.stderr);
  liveHolder = held.envelope.holder ?? held.envelope.lock.holder;
});

test('a dry run lists exactly the abandoned scopes, the same in the CLI, the npm command and gc()', async () => {
  const cli = run(['gc', '--store', store, '--open-prs', openPrs, '--json']);
  assert.equal(cli.status, 0, cli.stderr);
  assert.deepEqual(scopes(cli.envelope.abandoned), ABANDONED);
  assert.deepEqual(scopes(cli.envelope.kept), KEPT);
  assert.equal(cli.envelope.dryRun, true);
  assert.match(cli.envelope.kept.find((k) => k.scope === 'branch-feat-merged').reason, /succeeded by `pr-3`/);

  const fromStdin = run(['gc', '--store', store, '--open-prs', '-', '--json'], { useNode: true, input: '[1, 99]' });
  assert.equal(fromStdin.status, 0, fromStdin.stderr);
  assert.deepEqual(fromStdin.envelope, cli.envelope);

  const table = run(['gc', '--store', store, '--open-prs', openPrs]);
  assert.equal(table.status, 0);
  assert.deepEqual(table.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]), ABANDONED);
  assert.equal(run(['gc', '--store', store, '--open-prs', openPrs], { useNode: true }).stdout, table.stdout);

  const s = openStore(store, { cwd: repo.work });
  try {
    const found = await gc(s, { env: 'preview', openPrs: [1, 99], cwd: repo.work });
    assert.deepEqual(scopes(found.abandoned), ABANDONED);
    assert.deepEqual(scopes(found.kept), KEPT);
  } finally {
    await s.close();
  }
  // Without --open-prs and without gh: refused before anything, saying what to pass.
  const noGh = run(['gc', '--store', store, '--json']);
  assert.equal(noGh.status, 2);
  assert.equal(noGh.envelope.error.code, 'USAGE');
  assert.match(noGh.envelope.error.message, /--open-prs/);
});

test('--destroy destroys the abandoned scopes and nothing else; a live lease is skipped', () => {
  const log = path.join(repo.dir, 'deleted.log');
  // The destroy command reads the entries to delete on its stdin and reports each one deleted.
  const script = `node -e 'for (const e of JSON.parse(require("fs").readFileSync(0,"utf8"))) console.log(e.key)' | while read k; do echo "$BATON_SCOPE $k" >> ${log}; baton ledger forget --adapter neon --key "$k"; done`;
  const r = run(['gc', '--store', store, '--open-prs', openPrs, '--destroy', '--json', '--', 'bash', '-e', '-c', script]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.envelope.destroyed, ['branch-feat-gone', 'pr-2', 'pr-3']);
  assert.deepEqual(scopes(r.envelope.skipped), ['pr-4']);
  assert.equal(r.envelope.skipped[0].error.code, 'LOCK_HELD');
  assert.deepEqual(r.envelope.failed, []);
  const deleted = readFileSync(log, 'utf8').trim().split('\n').sort();
  assert.deepEqual(deleted, ['branch-feat-gone db-branch-feat-gone', 'pr-2 db-pr-2', 'pr-3 db-branch-feat-merged', 'pr-3 db-pr-3']);
  for (const scope of ['branch-feat-gone', 'pr-2', 'pr-3']) assert.deepEqual(keys(scope), [], scope);
  for (const scope of ['pr-1', 'pr-4', 'branch-feat-live', 'main']) assert.deepEqual(keys(scope), [`db-${scope}`], scope);
  assert.equal(lockOf(store, 'pr-4').holder, liveHolder);

  // Destroyed scopes are done with; only the skipped one is left.
  const again = run(['gc', '--store', store, '--open-prs', openPrs, '--json'], { useNode: true });
  assert.deepEqual(scopes(again.envelope.abandoned), ['pr-4']);
});

test('the action in gc mode destroys what is left once the lease is free', async () => {
  const released = run(['lock', 'release', '--store', store, '--scope', 'pr-4', '--holder', liveHolder, '--json']);
  assert.equal(released.status, 0, released.stderr);
  const vars = { ...pullRequestEvent(repo.dir, 1, repo.sha), GITHUB_EVENT_NAME: 'schedule', GITHUB_REF: 'refs/heads/main', GITHUB_REF_NAME: 'main', GITHUB_HEAD_REF: '', GITHUB_BASE_REF: '' };
  vars.PATH = `${path.dirname(bin)}:${process.env.PATH}`;
  const job = new Job({ cwd: repo.work, vars, inputs: { mode: 'gc', store, 'open-prs': openPrs } });
  const dry = await job.main();
  assert.equal(dry.status, 0, dry.stderr);
  assert.deepEqual(JSON.parse(job.outputs.abandoned), ['pr-4']);
  const marker = path.join(repo.dir, 'gc-ran');
  const done = await job.main({ destroy: `cat > /dev/null; for k in db-pr-4; do baton ledger forget --adapter neon --key "$k"; done; touch ${marker}` });
  assert.equal(done.status, 0, done.stderr);
  assert.ok(existsSync(marker));
  assert.deepEqual(keys('pr-4'), []);
  assert.equal(lockOf(store, 'pr-4'), null);
  assert.deepEqual(JSON.parse(execFileSync(bin, ['gc', '--store', store, '--open-prs', openPrs, '--json'], { cwd: repo.work, encoding: 'utf8' })).abandoned, []);
});

test('a destroy that fails fails gc with its code, the same in the CLI and the npm command', () => {
  deploy('pr-50', ['--scope', 'pr-50']);
  for (const useNode of [false, true]) {
    const r = run(['gc', '--store', store, '--open-prs', openPrs, '--destroy', '--json', '--', 'sh', '-c', 'cat > /dev/null; exit 1'], { useNode });
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.envelope.ok, false);
    assert.equal(r.envelope.error.code, 'COMMAND_FAILED');
    assert.match(r.envelope.error.message, /^1 of 1 abandoned scopes could not be destroyed \(pr-50\)/);
    assert.deepEqual(scopes(r.envelope.error.failed), ['pr-50']);
    assert.deepEqual(r.envelope.error.destroyed, []);
  }
  assert.deepEqual(keys('pr-50'), ['db-pr-50']);
});
