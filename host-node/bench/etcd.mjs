// The Node etcd store for scripts/bench.sh, printed as ratios against baselines measured in the same run
// (never asserted), on an etcd of its own (../test-etcd.mjs: free loopback ports, a temp data dir, stopped
// at the end): the lease cycle in process (`openStore('etcd:...')`, then acquireLease + one fenced write +
// release, and the same three store transactions without the lease machine) against the floor of three
// raw etcd transactions (compare a revision, put) made with the same client package (`etcd3`, configured
// as the store configures it), and against three raw transactions shaped as baton's (a compare on each of
// the four state files, a lock record and an epoch written, the failure branch's gets). Interleaved, one
// sample of each in turn, so that the machine's drift hits all alike.
//
// Alone: `node host-node/bench/etcd.mjs` (after scripts/build-wasm.sh).
import { createRequire } from 'node:module';
import { startEtcd } from '../test-etcd.mjs';

const require = createRequire(import.meta.url);
const baton = require('../js/index.cjs');
const { Etcd3 } = require('etcd3');

const CYCLES = 61;
const median = (s) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)];
const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6;

const etcd = await startEtcd('bench-node');
const url = etcd.url(etcd.members[0]);
try {
  // The same client configuration as the store's (js/etcd-store.cjs): one host, each call tried once.
  const once = { execute: (fn) => Promise.resolve().then(() => fn({ signal: new AbortController().signal, attempt: 0 })) };
  const client = new Etcd3({ hosts: [url], dialTimeout: 2000, faultHandling: { host: () => once, global: once } });
  const key = (k) => Buffer.from(k, 'utf8');

  let floorRevision = '0';
  const rawTxn = async () => {
    const r = await client.kv.txn({
      compare: [{ key: key('/bench/floor'), target: 'Mod', result: 'Equal', mod_revision: floorRevision }],
      success: [{ request_put: { key: key('/bench/floor'), value: key('x') } }],
      failure: [],
    });
    if (!r.succeeded) throw new Error("the floor's compare did not hold");
    floorRevision = r.header.revision;
  };

  const shapedKeys = ['lock.json', 'epoch.json', 'latest.json', 'claim.json'].map((f) => `/bench/shaped/${f}`);
  const lockRecord =
    '{\n  "holder": "node-1",\n  "acquiredAt": "2026-01-01T00:00:00.000Z",\n  "expiresAt": "2026-01-01T00:01:00.000Z",\n  "epoch": 1\n}\n';
  let shapedRevisions = ['0', '0', '0', '0'];
  const shapedTxn = async () => {
    const r = await client.kv.txn({
      compare: shapedKeys.map((k, i) => ({ key: key(k), target: 'Mod', result: 'Equal', mod_revision: shapedRevisions[i] })),
      success: [
        { request_put: { key: key(shapedKeys[0]), value: key(lockRecord) } },
        { request_put: { key: key(shapedKeys[1]), value: key('{\n  "epoch": 1\n}\n') } },
      ],
      failure: shapedKeys.map((k) => ({ request_range: { key: key(k) } })),
    });
    if (!r.succeeded) throw new Error("the shaped compare did not hold");
    shapedRevisions = [r.header.revision, r.header.revision, '0', '0'];
  };

  const store = baton.openStore(`etcd:${url}`);
  let n = 0;
  const leaseCycle = async () => {
    const lease = await baton.acquireLease(store, { env: 'preview', scope: 'pr-lease', ttlMs: 60_000 });
    await lease.write('state.json', '{}');
    await lease.release();
  };
  const storeCycle = async () => {
    n += 1;
    const target = { env: 'preview', scope: 'pr-store' };
    const holder = `node-${n}`;
    const { lock } = await store.transact(target, 'lock-acquire', { holder, ttlMs: 60_000 });
    await store.transact(target, 'fenced-write', { holder, epoch: lock.epoch, file: 'state.json', content: '{}' });
    await store.transact(target, 'lock-release', { holder, epoch: lock.epoch });
  };
  const three = (f) => async () => {
    await f();
    await f();
    await f();
  };
  const runs = { floor: three(rawTxn), shaped: three(shapedTxn), lease: leaseCycle, store: storeCycle };
  const samples = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  for (const f of Object.values(runs)) await f(); // warm up: connections, the wasm core, the JIT
  for (let i = 0; i < CYCLES; i += 1) {
    for (const [name, f] of Object.entries(runs)) {
      const t = process.hrtime.bigint();
      await f();
      samples[name].push(ms(t));
    }
  }
  const m = Object.fromEntries(Object.entries(samples).map(([k, s]) => [k, median(s)]));
  await store.close();
  client.close();

  const row = (label, v, note = '') => console.log(`  ${label.padEnd(56)} ${v.toFixed(2).padStart(8)} ms${note}`);
  console.log(`lease cycle on the etcd store from Node, one local etcd member (median of ${CYCLES}, interleaved)`);
  row('Node in-process, acquireLease + write + release', m.lease, ' per cycle');
  row('Node in-process, 3 store transactions (no lease machine)', m.store, ' per cycle');
  row('3 raw etcd transactions (etcd3, compare + put)', m.floor);
  row("3 raw etcd transactions shaped as baton's (4 compares)", m.shaped);
  console.log(
    `  ratio lease cycle / raw txns: ${(m.lease / m.floor).toFixed(2)}x (/ shaped ${(m.lease / m.shaped).toFixed(2)}x)   store transactions / raw txns: ${(m.store / m.floor).toFixed(2)}x (/ shaped ${(m.store / m.shaped).toFixed(2)}x)`,
  );
} finally {
  await etcd.stop();
}
