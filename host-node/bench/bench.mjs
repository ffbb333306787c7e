// Node figures for scripts/bench.sh, printed as one JSON object on stdout:
//   scopeForUs, acquireUs       per-call cost of the decisions through the npm package's wasm, as the
//                               package's JS layer calls them: `scopeFor` (strings in, the scope out), the
//                               acquire through `call` (plain objects in and out)
//   scopeForTextUs, acquireTextUs  the same through the raw text export (`invoke`) with JSON.stringify and
//                               JSON.parse around it (the JS layer's path before objects), same run
//   objectsFloorUs              JSON.stringify of the acquire's request and JSON.parse of its answer's text,
//                               with no wasm call: what carrying those objects across costs at the least
//   leaseCycleMs                acquireLease + one fenced write + release on a dir store
//   properLockfileMs            proper-lockfile lock + unlock of one file (the baseline)
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const baton = require('../js/index.cjs');
const { call } = require('../js/core.cjs');
const lockfile = require('proper-lockfile');

function perCall(calls, f) {
  const samples = [];
  for (let r = 0; r < 7; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) f();
    samples.push(Number(process.hrtime.bigint() - t) / 1e3 / calls);
  }
  return samples.sort((a, b) => a - b)[3];
}

async function perAsync(runs, f) {
  const samples = [];
  for (let r = 0; r < runs; r++) {
    const t = process.hrtime.bigint();
    await f(r);
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return samples.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

const scopeReq = { branch: 'feat/search', pr: null };
const acquireReq = {
  cell: { env: 'preview', scope: 'pr-1', files: {} }, holder: 'run-1', ttlMs: 900000, nowMs: 1791633600000,
};
const viaText = (op, req) => JSON.parse(baton.invoke(op, JSON.stringify(req)));
const scopeForUs = perCall(20000, () => baton.scopeFor(scopeReq.branch, scopeReq.pr)); // names in, scope out
const acquireUs = perCall(20000, () => call('lock-acquire', acquireReq));
const scopeForTextUs = perCall(20000, () => viaText('scope-for', scopeReq));
const acquireTextUs = perCall(20000, () => viaText('lock-acquire', acquireReq));
const answerText = baton.invoke('lock-acquire', JSON.stringify(acquireReq));
const objectsFloorUs = perCall(20000, () => JSON.stringify(acquireReq).length + JSON.parse(answerText).lock.epoch);

const dir = mkdtempSync(join(tmpdir(), 'baton-bench-node-'));
const store = baton.openStore(`dir:${join(dir, 'store')}`);
const leaseCycleMs = await perAsync(101, async (i) => {
  const lease = await baton.acquireLease(store, { env: 'preview', scope: `pr-${i % 50}`, ttlMs: 60000 });
  await lease.write('state.json', '{}');
  await lease.release();
});
const file = join(dir, 'plf');
writeFileSync(file, '');
const properLockfileMs = await perAsync(101, async () => {
  const release = await lockfile.lock(file);
  await release();
});
rmSync(dir, { recursive: true, force: true });

// Ownership at scale: the same requests as host-native/examples/bench_ownership.rs.
function receipt(scope, n) {
  const ledger = [];
  for (let i = 0; i < n; i++) {
    ledger.push({ adapter: 'vercel', op: 'env', provider: { team: 'web' }, key: `${scope}/var-${i}`, id: `id-${i}`, hash: '', createdBy: 'baton', line: '' });
  }
  return JSON.stringify({ version: 2, runId: 'run-1', environment: 'preview', scope, status: 'complete', startedAt: '', finishedAt: '',
    plan: { hash: '' }, ctx: null, lines: {}, ledger, history: [], hashKey: '' });
}
const ownership = {};
const ownershipViaText = {};
for (const total of [25000, 50000, 100000]) {
  const per = total / 1000;
  const others = [];
  for (let i = 0; i < 1000; i++) others.push({ scope: `pr-${i}`, text: receipt(`pr-${i}`, per) });
  const lock = JSON.stringify({ holder: 'run-x', acquiredAt: '2026-10-10T12:00:00.000Z', expiresAt: '2999-01-01T00:00:00.000Z', epoch: 1 });
  const own = { env: 'preview', scope: 'pr-x', files: { 'lock.json': lock } };
  const predText = receipt('branch-big', total);
  const predCell = { env: 'preview', scope: 'branch-big', files: { 'lock.json': lock, 'latest.json': predText } };
  const calls = {
    inherit: ['run-begin', { cell: own, holder: 'run-x', epoch: 1, nowMs: 0, context: { env: 'preview', scope: 'pr-x' }, predecessor: { scope: 'branch-big', text: predText } }],
    handover: ['handover', { cell: predCell, holder: 'run-x', epoch: 1, nowMs: 0, successor: 'pr-x', successorLedger: JSON.parse(predText).ledger }],
    'foreign map': ['ledger-check', { cell: own, nowMs: 0, resource: { adapter: 'vercel', key: 'pr-999/var-0', provider: { team: 'web' } }, others }],
  };
  for (const [name, [op, request]] of Object.entries(calls)) {
    // Through the text export from a ready string (`ownership`, the figure bench_ownership compares), and
    // as the JS layer calls it, with JSON.stringify/parse around it (`ownershipViaText`), same run.
    const text = JSON.stringify(request);
    const median = (f) => {
      const samples = [];
      for (let r = 0; r < 5; r++) {
        const t = process.hrtime.bigint();
        f();
        samples.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
      return samples.sort((a, b) => a - b)[2];
    };
    ownership[`${name}@${total}`] = median(() => baton.invoke(op, text));
    ownershipViaText[`${name}@${total}`] = median(() => viaText(op, request));
  }
}
console.log(JSON.stringify({
  scopeForUs, acquireUs, scopeForTextUs, acquireTextUs, objectsFloorUs, leaseCycleMs, properLockfileMs, ownership,
  ownershipViaText,
}));
