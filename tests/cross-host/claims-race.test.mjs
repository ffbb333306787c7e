// Two scopes create the same resource at the same instant: exactly one owns it, the other is refused with
// OWNED_BY_OTHER_SCOPE before it creates anything (issue 11, core/src/claims). Each round starts two runs
// in two scopes of one environment, holds both at a barrier (a file) right before `ledger check --change`,
// then lets them go together: check, intend, (the create), record. 20 rounds of two `baton run`s and 20
// of a `baton run` against a Node `withLease`, on the dir store, on a git remote (`file://` bare repo) and on
// a real etcd (started once for this file on loopback ports of its own; a fresh key prefix per round).
// Needs the CLI (BATON_BIN, built by scripts/test.sh); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, realpathSync, readdirSync } from 'node:fs';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEtcd } from '../../host-node/test-etcd.mjs';

const pkgDir = fileURLToPath(new URL('../../host-node', import.meta.url));
const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const ROUNDS = 20;
const fresh = () => realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-claims-')));

test('the native CLI exists', () => assert.ok(existsSync(bin), `no native CLI at ${bin}: run cargo build -p baton-native or set BATON_BIN`));

/** The command of a run: wait for the barrier, then check, intend, create (a marker file), record. */
function adapterScript(dir, scope) {
  const made = path.join(dir, `created-${scope}`);
  return [
    `touch ${dir}/ready-${scope}`,
    `while [ ! -e ${dir}/go ]; do sleep 0.002; done`,
    'baton ledger check --change --adapter fake --key shared',
    'baton ledger intend --adapter fake --key shared',
    `touch ${made}`,
    'baton ledger record --adapter fake --key shared --id made-by-$BATON_SCOPE',
  ].join(' && ');
}

/** `baton run` in `scope`; resolves `{who, status, stderr}`. */
function cliRun(store, dir, scope) {
  const env = { ...process.env, ...store.env, PATH: `${path.dirname(bin)}:${process.env.PATH}`, BATON_STORE: store.spec };
  const child = spawn(bin, ['run', '--env', 'preview', '--scope', scope, '--', 'sh', '-c', adapterScript(dir, scope)], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return once(child, 'close').then(([status]) => ({ who: scope, status, stderr }));
}

/** A Node process running `withLease` in `scope` with the same steps; resolves `{who, status, stderr}`. */
function nodeRun(store, dir, scope) {
  const script = `
    const fs = require('node:fs');
    const { openStore, withLease } = require(${JSON.stringify(pkgDir)});
    const res = { adapter: 'fake', key: 'shared' };
    const context = { env: 'preview', scope: ${JSON.stringify(scope)}, branch: null, sha: null, pr: null };
    const gate = () => new Promise((r) => { const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(`${dir}/go`)})) { clearInterval(t); r(); } }, 2); });
    withLease(openStore(${JSON.stringify(store.spec)}), { env: 'preview', scope: ${JSON.stringify(scope)}, context, handleSignals: false }, async (lease) => {
      fs.writeFileSync(${JSON.stringify(dir)} + '/ready-' + ${JSON.stringify(scope)}, '');
      await gate();
      await lease.check(res, { change: true });
      await lease.intend(res);
      fs.writeFileSync(${JSON.stringify(path.join(dir, `created-${scope}`))}, '');
      await lease.record(res, 'made-by-${scope}');
    }).then(() => process.exit(0), (e) => { console.error('error ' + e.code + ': ' + e.message); process.exit(1); });`;
  const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, ...store.env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return once(child, 'close').then(([status]) => ({ who: scope, status, stderr }));
}

/** The ledger of `scope` as `baton ledger list` prints it (`owns<TAB>createdBy<TAB>adapter<TAB>key<TAB>id`). */
function owned(store, scope) {
  const out = execFileSync(bin, ['ledger', 'list', '--env', 'preview', '--scope', scope, '--store', store.spec, '--json'], {
    encoding: 'utf8',
    env: { ...process.env, ...store.env },
  });
  return JSON.parse(out).owns.filter((r) => r.createdBy !== 'adopted').map((r) => `${r.key}:${r.id}`);
}

/** Resolves once both runs hold their leases and wait at the barrier. */
async function bothReady(dir) {
  while (!['pr-11', 'pr-12'].every((s) => existsSync(path.join(dir, `ready-${s}`)))) await new Promise((r) => setTimeout(r, 5));
}

/** Runs the rounds: `left` and `right` start a run each; exactly one owns `shared`, the other was refused. */
async function race(label, makeStore, left, right) {
  const winners = { 'pr-11': 0, 'pr-12': 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const dir = fresh();
    const store = makeStore(dir);
    const runs = [left(store, dir, 'pr-11'), right(store, dir, 'pr-12')];
    // Both hold their leases and wait at the barrier; then they go at once.
    await Promise.race([bothReady(dir), Promise.all(runs)]);
    writeFileSync(path.join(dir, 'go'), '');
    const results = await Promise.all(runs);
    const ok = results.filter((r) => r.status === 0);
    const refused = results.filter((r) => r.status !== 0);
    const where = `${label} round ${round}: ${JSON.stringify(results.map((r) => ({ who: r.who, status: r.status, stderr: r.stderr.slice(-600) })))}`;
    assert.equal(ok.length, 1, `exactly one run succeeds (${where})`);
    assert.equal(refused.length, 1, where);
    const [winner, loser] = [ok[0].who, refused[0].who];
    assert.match(refused[0].stderr, new RegExp(`OWNED_BY_OTHER_SCOPE[^\\n]*scope \`${winner}\``), where);
    // The loser created nothing and owns nothing; the winner owns it, with its own id.
    assert.ok(existsSync(path.join(dir, `created-${winner}`)), where);
    assert.ok(!existsSync(path.join(dir, `created-${loser}`)), `the refused run created nothing (${where})`);
    assert.deepEqual(owned(store, winner), [`shared:made-by-${winner}`], where);
    assert.deepEqual(owned(store, loser), [], where);
    winners[winner] += 1;
  }
  return winners;
}

const dirStore = (dir) => ({ spec: `dir:${dir}/store`, env: {} });
function gitStore(dir) {
  const remote = path.join(dir, 'remote.git');
  execFileSync('git', ['init', '--bare', '--quiet', remote]);
  return { spec: `git:file://${remote}`, env: {} };
}
let etcd = null;
const etcdStore = (dir) => ({ spec: etcd.spec, env: { BATON_ETCD_PREFIX: `/baton-race/${path.basename(dir)}/` } });

test(`two baton runs in two scopes create one resource at once, ${ROUNDS} times (dir store): one owner`, async () => {
  const winners = await race('cli/cli dir', dirStore, cliRun, cliRun);
  console.log(`# cli vs cli on dir: wins ${JSON.stringify(winners)}`);
});

test(`a baton run and a Node withLease create one resource at once, ${ROUNDS} times (dir store): one owner`, async () => {
  const winners = await race('cli/node dir', dirStore, cliRun, nodeRun);
  console.log(`# cli vs node on dir: wins ${JSON.stringify(winners)}`);
});

test(`two baton runs create one resource at once, ${ROUNDS} times (git remote): one owner`, async () => {
  const winners = await race('cli/cli git', gitStore, cliRun, cliRun);
  console.log(`# cli vs cli on git: wins ${JSON.stringify(winners)}`);
});

test(`a baton run and a Node withLease create one resource at once, ${ROUNDS} times (git remote): one owner`, async () => {
  const winners = await race('cli/node git', gitStore, cliRun, nodeRun);
  console.log(`# cli vs node on git: wins ${JSON.stringify(winners)}`);
});

test(`a baton run and a Node withLease, then two baton runs, create one resource at once, ${ROUNDS} times each (etcd): one owner`, async (t) => {
  etcd = await startEtcd('claims-race');
  t.after(() => etcd.stop());
  const winners = await race('cli/node etcd', etcdStore, cliRun, nodeRun);
  console.log(`# cli vs node on etcd: wins ${JSON.stringify(winners)}`);
  const both = await race('cli/cli etcd', etcdStore, cliRun, cliRun);
  console.log(`# cli vs cli on etcd: wins ${JSON.stringify(both)}`);
});

test('the claim names the owner, and its cell is where the core says (dir store)', async () => {
  const dir = fresh();
  const store = dirStore(dir);
  const runs = [cliRun(store, dir, 'pr-11'), nodeRun(store, dir, 'pr-12')];
  await Promise.race([bothReady(dir), Promise.all(runs)]);
  writeFileSync(path.join(dir, 'go'), '');
  const results = await Promise.all(runs);
  const winner = results.find((r) => r.status === 0).who;
  const claims = path.join(dir, 'store', '_claims');
  const cells = readdirSync(claims);
  assert.equal(cells.length, 1);
  const claim = JSON.parse(readFileSync(path.join(claims, cells[0], 'claim.json'), 'utf8'));
  assert.equal(claim.scope, winner);
  assert.equal(claim.environment, 'preview');
  assert.equal(claim.identity, 'fake|{}|shared');
});
