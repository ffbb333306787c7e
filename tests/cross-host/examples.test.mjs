// The examples users copy (examples/github-actions/, examples/gitlab-ci/), parsed and run against a local
// git remote: each workflow's steps in order as the runner runs them (the baton action's main and post
// steps through action-runner.mjs, `run:` steps with bash, `${{ }}` expressions from the step outputs and
// inputs), each GitLab job's script lines with GitLab's variables and `npx baton-lease` installed in the
// project. Where a step needs the forge (actions/checkout, the merge request API) the test stands in for it:
// the workspace is a checkout already, `gh` is a script printing the open pull requests, open-mrs.json is
// written by the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync, symlinkSync, cpSync, chmodSync, existsSync } from 'node:fs';
import { spawnSync, execFileSync } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Job, gitRepo, lockOf, bin, repoDir, fresh } from './action-runner.mjs';

const YAML = createRequire(path.join(repoDir, 'host-node', 'package.json'))('yaml');
const gh = path.join(repoDir, 'examples', 'github-actions');
const gl = path.join(repoDir, 'examples', 'gitlab-ci');
const load = (file) => YAML.parse(readFileSync(file, 'utf8'));

/** A checkout with the example's scripts, served as https://<server>/owner/repo.git (here: file://). */
function workspace(scripts) {
  const repo = gitRepo();
  const server = fresh('server');
  const remote = path.join(server, 'owner', 'repo.git');
  repo.git(repo.dir, 'clone', '-q', '--bare', repo.remote, remote);
  repo.git(repo.work, 'remote', 'set-url', 'origin', remote);
  cpSync(path.join(scripts, 'scripts'), path.join(repo.work, 'scripts'), { recursive: true });
  const tools = path.join(repo.dir, 'bin');
  mkdirSync(tools);
  const log = path.join(repo.dir, 'deploy.log');
  return { ...repo, server, remote, store: `git:${remote}`, tools, log };
}

/** The keys the scope owns, as the CLI lists them. */
const owned = (ws, scope) =>
  JSON.parse(execFileSync(bin, ['ledger', 'list', '--store', ws.store, '--scope', scope, '--json'], { encoding: 'utf8' })).owns.map((e) => e.key);

const logLines = (ws) => (existsSync(ws.log) ? readFileSync(ws.log, 'utf8').trim().split('\n') : []);

/** Replaces `${{ expr }}` with `values[expr]`; an expression the test does not know fails the test. */
function expand(text, values) {
  return String(text).replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expr) => {
    assert.ok(expr in values, `the example uses \`${expr}\`, which this test does not know`);
    return values[expr];
  });
}

/** Runs the workflow's job `name` as the runner would, then the post steps; resolves with the job. */
async function runWorkflow(ws, workflow, name, { vars, inputs = {}, expect = 0 }) {
  const job = new Job({ cwd: ws.work, vars: { GITHUB_SERVER_URL: `file://${ws.server}`, DEPLOY_LOG: ws.log, PATH: `${ws.tools}:${path.dirname(bin)}:${process.env.PATH}`, ...vars } });
  const values = { 'github.token': 'token' };
  for (const [k, v] of Object.entries(inputs)) values[`inputs.${k}`] = v;
  let failed = null;
  for (const step of workflow.jobs[name].steps) {
    if (step.uses?.startsWith('actions/')) continue; // the workspace is checked out already
    const result = step.uses
      ? await job.main(Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, expand(v, values)])))
      : await job.step(expand(step.run, values));
    if (step.uses && step.id) for (const [k, v] of Object.entries(job.outputs)) values[`steps.${step.id}.outputs.${k}`] = v;
    job.last = result;
    if (result.status !== 0) {
      failed = result;
      break;
    }
  }
  const post = await job.post();
  assert.equal(post.status, 0, post.stderr);
  assert.equal(failed?.status ?? 0, expect, failed?.stderr);
  return job;
}

function pullRequest(ws, pr) {
  const event = path.join(ws.dir, `pr-${pr}.json`);
  writeFileSync(event, JSON.stringify({ number: pr, pull_request: { number: pr, head: { ref: 'feat/x', sha: ws.sha }, base: { ref: 'main' } }, repository: { default_branch: 'main' } }));
  return { GITHUB_EVENT_NAME: 'pull_request', GITHUB_EVENT_PATH: event, GITHUB_REF: `refs/pull/${pr}/merge`, GITHUB_HEAD_REF: 'feat/x', GITHUB_BASE_REF: 'main', GITHUB_SHA: ws.sha };
}

function onMain(ws, name) {
  const event = path.join(ws.dir, `${name}.json`);
  writeFileSync(event, JSON.stringify({ repository: { default_branch: 'main' } }));
  return { GITHUB_EVENT_NAME: name, GITHUB_EVENT_PATH: event, GITHUB_REF: 'refs/heads/main', GITHUB_REF_NAME: 'main', GITHUB_SHA: ws.sha };
}

test('GitHub Actions: a preview per pull request, the scheduled gc, production with an approver', async () => {
  const preview = load(path.join(gh, 'preview.yml'));
  const gc = load(path.join(gh, 'gc.yml'));
  const production = load(path.join(gh, 'production.yml'));
  assert.deepEqual(Object.keys(preview.on), ['pull_request']);
  assert.ok(gc.on.schedule[0].cron);
  assert.ok(production.on.workflow_dispatch.inputs['approved-by'].required);
  for (const wf of [preview, gc, production]) {
    assert.ok(Object.values(wf.jobs).some((j) => j.steps.some((s) => /\/baton@v1$/.test(s.uses ?? ''))), 'each uses the action');
  }

  const ws = workspace(gh);
  // Two pull requests deploy their previews; the job's later steps run under the lease.
  const five = await runWorkflow(ws, preview, 'deploy', { vars: pullRequest(ws, 5) });
  assert.match(five.last.stdout, /preview pr-5 deployed at epoch 1/);
  await runWorkflow(ws, preview, 'deploy', { vars: pullRequest(ws, 6) });
  assert.deepEqual(logLines(ws), ['deploy preview pr-5 1', 'deploy preview pr-6 1']);
  assert.equal(lockOf(ws.store, 'pr-5'), null);
  assert.deepEqual(owned(ws, 'pr-5'), ['app-pr-5']);

  // The nightly gc: pull request 6 is still open (gh says so), 5 is not.
  writeFileSync(path.join(ws.tools, 'gh'), '#!/bin/sh\n[ "$1 $2" = "pr list" ] && echo \'[{"number":6}]\'\n');
  chmodSync(path.join(ws.tools, 'gh'), 0o755);
  const collected = await runWorkflow(ws, gc, 'gc', { vars: onMain(ws, 'schedule') });
  assert.deepEqual(JSON.parse(collected.outputs.abandoned), ['pr-5']);
  assert.match(collected.last.stdout, /collected \["pr-5"\]/);
  assert.deepEqual(logLines(ws).slice(2), ['destroy preview pr-5']);
  assert.deepEqual([owned(ws, 'pr-5'), owned(ws, 'pr-6')], [[], ['app-pr-6']]);

  // Production: refused without an approver, deployed with one (recorded in the receipt).
  await runWorkflow(ws, production, 'deploy', { vars: onMain(ws, 'workflow_dispatch'), inputs: { 'approved-by': '' }, expect: 2 });
  await runWorkflow(ws, production, 'deploy', { vars: onMain(ws, 'workflow_dispatch'), inputs: { 'approved-by': 'ann' } });
  assert.deepEqual(logLines(ws).slice(3), ['deploy production main 1']);
  const receipt = JSON.parse(execFileSync(bin, ['receipt', 'show', '--store', ws.store, '--env', 'production', '--scope', 'main', '--json'], { encoding: 'utf8' }));
  assert.match(JSON.stringify(receipt.receipt), /"ann"/);
});

test('GitLab CI: merge request previews, their stop job, the scheduled gc and production, with npx baton-lease', () => {
  const ci = load(path.join(gl, '.gitlab-ci.yml'));
  const ws = workspace(gl);
  // The project has baton-lease installed (what `npm ci` of the before_script gives).
  mkdirSync(path.join(ws.work, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(path.join(repoDir, 'host-node'), path.join(ws.work, 'node_modules', 'baton-lease'));
  symlinkSync('../baton-lease/bin/baton-lease.cjs', path.join(ws.work, 'node_modules', '.bin', 'baton-lease'));
  const base = { CI: 'true', GITLAB_CI: 'true', CI_DEFAULT_BRANCH: 'main', CI_COMMIT_SHA: ws.sha, GITLAB_USER_LOGIN: 'ann', DEPLOY_LOG: ws.log };

  function job(name, vars) {
    const spec = ci[name];
    assert.ok(spec, `no job ${name}`);
    const source = vars.CI_PIPELINE_SOURCE;
    assert.ok(spec.rules.some((r) => r.if.includes(source) || (source === 'push' && r.if.includes('CI_DEFAULT_BRANCH'))), `${name} runs on ${source}`);
    const env = { ...process.env, ...base, ...ci.variables, ...vars, BATON_STORE: ws.store, PATH: `${path.dirname(bin)}:${process.env.PATH}` };
    for (const line of [...ci.default.before_script, ...spec.script]) {
      if (line === 'npm ci') continue; // installed above
      if (line.startsWith('curl ')) continue; // the merge request API: open-mrs.json is the test's
      const r = spawnSync('bash', ['-e', '-c', line], { cwd: ws.work, env, encoding: 'utf8' });
      assert.equal(r.status, 0, `${name}: ${line}\n${r.stderr}`);
    }
  }

  const mr = (iid) => ({ CI_PIPELINE_SOURCE: 'merge_request_event', CI_MERGE_REQUEST_IID: String(iid), CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'feat/x', CI_COMMIT_REF_NAME: 'feat/x' });
  job('preview', mr(5));
  job('preview', mr(6));
  job('stop-preview', mr(6));
  assert.deepEqual(logLines(ws), ['deploy preview pr-5 1', 'deploy preview pr-6 1', 'destroy preview pr-6']);
  assert.deepEqual([owned(ws, 'pr-5'), owned(ws, 'pr-6')], [['app-pr-5'], []]);
  writeFileSync(path.join(ws.work, 'open-mrs.json'), '[]');
  job('preview-gc', { CI_PIPELINE_SOURCE: 'schedule', CI_COMMIT_BRANCH: 'main', CI_COMMIT_REF_NAME: 'main' });
  assert.deepEqual(logLines(ws).slice(3), ['destroy preview pr-5']);
  assert.deepEqual(owned(ws, 'pr-5'), []);
  job('production', { CI_PIPELINE_SOURCE: 'push', CI_COMMIT_BRANCH: 'main', CI_COMMIT_REF_NAME: 'main' });
  assert.deepEqual(logLines(ws).slice(4), ['deploy production main 1']);
});
