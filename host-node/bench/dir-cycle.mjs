// One round of the Node dir-store cycle for host-native/examples/bench.rs, which runs it between rounds of
// its own native cycle (interleaved, so that both see the same disk and load): `node dir-cycle.mjs <dir>
// <cycles>` prints `{"storeMs", "leaseMs"}`, the mean ms per cycle over `cycles` cycles (as the native
// rounds count theirs) of
//   storeMs  three store transactions (lock-acquire, fenced-write, lock-release through `store.transact`):
//            what the native bench times (three DirStore::transact)
//   leaseMs  acquireLease + one fenced write + release (the lease machine on top)
// on the dir store `dir:<dir>`, after a warm-up.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const baton = require('../js/index.cjs');

const [dir, cyclesText] = process.argv.slice(2);
const cycles = Number(cyclesText) || 30;
const store = baton.openStore(`dir:${dir}`);

async function meanMs(f) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < cycles; i++) await f(i);
  return Number(process.hrtime.bigint() - t) / 1e6 / cycles;
}

const storeCycle = async (i) => {
  const cell = { env: 'preview', scope: `pr-${i % 50}` };
  const holder = `run-${i}`;
  const { lock } = await store.transact(cell, 'lock-acquire', { holder, ttlMs: 60000 });
  await store.transact(cell, 'fenced-write', { holder, epoch: lock.epoch, file: 'state.json', content: '{}' });
  await store.transact(cell, 'lock-release', { holder, epoch: lock.epoch });
};
const leaseCycle = async (i) => {
  const lease = await baton.acquireLease(store, { env: 'preview', scope: `pr-${i % 50}`, ttlMs: 60000 });
  await lease.write('state.json', '{}');
  await lease.release();
};
for (let i = 0; i < 5; i++) await storeCycle(i); // warm-up: the wasm, the cells, the file system's caches
const storeMs = await meanMs(storeCycle);
const leaseMs = await meanMs(leaseCycle);
console.log(JSON.stringify({ storeMs, leaseMs }));
