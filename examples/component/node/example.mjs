// A plugin host for the baton core component, in plain Node: the component transpiled by `jco transpile`,
// an in-memory cell store with a compare-and-swap, a lease taken through the `lease` resource's loop, a
// fenced write, and the typed refusals a second holder gets. docs/component.md explains every step.
//
//   npx jco transpile target/baton-core.component.wasm -o examples/component/generated
//   node examples/component/node/example.mjs [examples/component/generated/baton-core.component.js]
//
// Both clocks are driven by hand so that the run is deterministic: a real host passes `Date.now()` as the
// wall clock of `locks.apply` and `performance.now()` (or any other monotonic clock) to the lease.
// Every step asserts the typed answer it gets; the script exits non-zero on the first surprise.

import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const here = path.dirname(new URL(import.meta.url).pathname);
const modulePath = process.argv[2] ?? path.join(here, '..', 'generated', 'baton-core.component.js');
const { locks, leases, decisions, stores, commands } = await import(pathToFileURL(path.resolve(modulePath)).href);

// The state files the core decides on (lock.json, epoch.json, ...): a snapshot holds those that exist.
// The cell's other files (data files such as the fenced write's) are the host's to read.
const STATE_FILES = new Set(decisions.cellFiles());

// A host that lays cells out as paths takes them from `stores.cellPath`, which refuses a bad name with the
// typed USAGE error before anything is built from it.
assert.deepEqual(stores.cellPath('preview', 'pr-7'), { dir: 'preview/pr-7', gitRef: 'preview/pr-7' });
assert.throws(() => stores.cellPath('preview', '../x'), (e) => e.payload?.code === 'usage');

// The commands' small decisions are typed too: production needs a named approver before anything is locked
// (in any letter case), and a pull request's scope inherits from its branch's.
assert.deepEqual(commands.approval('production', ' ann '), { required: true, approvedBy: 'ann' });
const refusal = (() => {
  try {
    commands.approval('Production', undefined);
  } catch (e) {
    return e.payload; // jco throws a ComponentError whose payload is the `error` record
  }
})();
assert.equal(refusal?.code, 'env-not-approved');
console.log(`approval refused: ${refusal.code}: ${refusal.message}`);
assert.deepEqual(commands.succession('pr-7', 'feat/x', 7n, undefined), { predecessor: 'branch-feat-x', handoverTtlMs: 60_000n });

/** The store a host provides: cells of named files, each cell with a version for the compare-and-swap. */
class MemoryStore {
  #cells = new Map();

  /** The snapshot the core decides on: the cell's state files that exist, and the version read. */
  load(env, scope) {
    const cell = this.#cells.get(`${env}/${scope}`) ?? { version: 0, files: new Map() };
    const files = [...cell.files]
      .filter(([name]) => STATE_FILES.has(name))
      .map(([name, content]) => ({ name, content }));
    return { version: cell.version, snapshot: { env, scope, files } };
  }

  /** Applies `changes` in order, all of them only if the cell is still at `version`. */
  commit(env, scope, version, changes) {
    const key = `${env}/${scope}`;
    const cell = this.#cells.get(key) ?? { version: 0, files: new Map() };
    if (cell.version !== version) return false;
    const files = new Map(cell.files);
    for (const change of changes) {
      if (change.tag === 'write') files.set(change.val.name, change.val.content);
      else files.delete(change.val);
    }
    this.#cells.set(key, { version: version + 1, files });
    return true;
  }

  file(env, scope, name) {
    return this.#cells.get(`${env}/${scope}`)?.files.get(name);
  }
}

/**
 * One lock transaction: load, decide, commit with a compare-and-swap, and on a conflict load and decide
 * again. Returns the WIT `result<lock-answer, error>` as jco spells it, ready for `handleStoreResult`.
 */
function transact(store, env, scope, wallMs, op) {
  for (let attempt = 0; attempt < 10; attempt++) {
    const { version, snapshot } = store.load(env, scope);
    let answer;
    try {
      answer = locks.apply(snapshot, wallMs, op);
    } catch (e) {
      // jco throws a `result`'s error as a ComponentError whose `payload` is the typed `error` record.
      if (e.payload === undefined) throw e;
      return { tag: 'err', val: e.payload };
    }
    const changes = answer.val?.changes ?? []; // a read and a fence check have nothing to commit
    if (changes.length === 0 || store.commit(env, scope, version, changes)) return { tag: 'ok', val: answer };
  }
  throw new Error('the cell kept changing under us'); // a real host reports STORE_CONTENDED
}

/**
 * An error the host itself reports to the core. The core reads the code, the message and the facts in
 * `json`; the other typed fields repeat facts of the core's own errors and are not read back.
 */
function hostError(code, message) {
  return { code, message, json: '{}' };
}

/**
 * The lease loop, after one call into the lease: drain `pollAction` until it is empty, carry out each
 * store action (synchronously here, so by its deadline), and collect the events.
 */
function drain(lease, store, cfg, monoMs, wallMs) {
  const events = [];
  for (let action = lease.pollAction(); action !== undefined; action = lease.pollAction()) {
    if (action.tag === 'store') {
      const { id, op, deadlineMs } = action.val;
      // The deadline bounds the whole operation, retries included; one already past is not started.
      const outcome =
        deadlineMs > monoMs
          ? transact(store, cfg.env, cfg.scope, wallMs, op)
          : { tag: 'err', val: hostError('store-contended', `the ${op.tag} was due by ${deadlineMs} ms`) };
      lease.handleStoreResult(id, outcome, monoMs);
    } else {
      events.push(action.val);
    }
  }
  return events;
}

const store = new MemoryStore();
const env = 'prod';
const scope = 'web';
const wall0 = BigInt(Date.parse('2026-01-01T00:00:00.000Z'));
const ttlMs = 60_000n;

// 1. Holder A takes the lock through the lease resource: create, acquire, drain.
const configA = { env, scope, holder: 'run-a', ttlMs, wait: false, uniqueHolder: true };
const leaseA = leases.Lease.create(configA);
leaseA.acquire(0n);
const [acquired] = drain(leaseA, store, configA, 0n, wall0);
assert.equal(acquired.tag, 'acquired');
assert.equal(acquired.val.lock.holder, 'run-a');
assert.equal(acquired.val.lock.expiresAt, '2026-01-01T00:01:00.000Z');
assert.equal(acquired.val.preempted, undefined);
const epochA = acquired.val.epoch;
assert.equal(epochA, 1n);
assert.equal(leaseA.fencingToken(0n), epochA);
const wake = leaseA.pollTimeout(); // the next renewal: arm one timer for it
assert.equal(wake, 20_000n);
console.log(`A holds ${env}/${scope} at epoch ${epochA}; renewal due at monotonic ${wake} ms`);

// 2. A makes a fenced write: the data file is committed in the same compare-and-swap as the fence check.
const write = transact(store, env, scope, wall0 + 1_000n, {
  tag: 'fenced-write',
  val: { holder: 'run-a', epoch: epochA, file: 'resources.json', content: '{"bucket":"b-1"}' },
});
assert.equal(write.tag, 'ok');
assert.equal(write.val.tag, 'grant');
assert.equal(write.val.val.lock.epoch, epochA);
assert.equal(store.file(env, scope, 'resources.json'), '{"bucket":"b-1"}');
console.log('A wrote resources.json, fenced at its epoch');

// 3. Holder B tries through its own lease (no wait): the typed LOCK_HELD refusal names A's live lock.
const configB = { env, scope, holder: 'run-b', ttlMs, wait: false, uniqueHolder: true };
const leaseB = leases.Lease.create(configB);
leaseB.acquire(0n);
const eventsB = drain(leaseB, store, configB, 0n, wall0 + 2_000n);
const failed = eventsB.find((e) => e.tag === 'acquire-failed');
assert.ok(failed, `B's lease ends in acquire-failed (got ${eventsB.map((e) => e.tag)})`);
assert.equal(failed.val.code, 'lock-held');
assert.equal(failed.val.lock.holder, 'run-a');
assert.equal(failed.val.lock.epoch, epochA);
assert.equal(JSON.parse(failed.val.json).code, 'LOCK_HELD'); // the same error as the JSON envelope spells it
assert.equal(leaseB.fencingToken(0n), undefined);
leaseB[Symbol.dispose]();
console.log(`B refused: ${failed.val.code}: ${failed.val.message}`);

// 4. A is paused past its lock's expiry; B takes the expired lock over with locks.apply: a new epoch.
const later = wall0 + ttlMs + 1_000n;
const takeover = transact(store, env, scope, later, { tag: 'lock-acquire', val: { holder: 'run-b', ttlMs } });
assert.equal(takeover.tag, 'ok');
const grantB = takeover.val.val;
assert.equal(grantB.lock.holder, 'run-b');
assert.equal(grantB.lock.epoch, epochA + 1n);
assert.equal(grantB.preempted.holder, 'run-a');
console.log(`B took over the expired lock at epoch ${grantB.lock.epoch}`);

// 5. A wakes and writes at its stale epoch: the typed LOCK_LOST refusal, and nothing is written.
const stale = transact(store, env, scope, later, {
  tag: 'fenced-write',
  val: { holder: 'run-a', epoch: epochA, file: 'resources.json', content: '{"bucket":"b-2"}' },
});
assert.equal(stale.tag, 'err');
assert.equal(stale.val.code, 'lock-lost');
assert.equal(stale.val.holder, 'run-a');
assert.equal(stale.val.epoch, epochA);
assert.equal(stale.val.current.holder, 'run-b');
assert.equal(stale.val.current.epoch, epochA + 1n);
assert.equal(store.file(env, scope, 'resources.json'), '{"bucket":"b-1"}');
console.log(`A's stale write refused: ${stale.val.code}: ${stale.val.message}`);

// 6. A's lease wakes on its monotonic clock long past its own deadline: it tells A to stop, and its
//    release leaves B's lock alone.
leaseA.handleTimeout(ttlMs + 1_000n);
const stopEvents = drain(leaseA, store, configA, ttlMs + 1_000n, later);
const stop = stopEvents.find((e) => e.tag === 'must-stop');
assert.ok(stop, `A's lease says must-stop (got ${stopEvents.map((e) => e.tag)})`);
assert.equal(stop.val.error.code, 'lock-lost');
assert.equal(leaseA.fencingToken(ttlMs + 1_000n), undefined);
leaseA.release(ttlMs + 1_000n);
const released = drain(leaseA, store, configA, ttlMs + 1_000n, later).find((e) => e.tag === 'released');
assert.deepEqual(released, { tag: 'released', val: false });
assert.equal(leaseA.isFinished(), true);
leaseA[Symbol.dispose]();
console.log(`A's lease: ${stopEvents.map((e) => e.tag).join(', ')}, then released without touching B's lock`);

// 7. B releases; the epoch outlives the lock, so the next grant gets epoch 3.
const release = transact(store, env, scope, later, { tag: 'lock-release', val: { holder: 'run-b' } });
assert.equal(release.val.tag, 'release');
assert.equal(release.val.val.released, true);
const read = transact(store, env, scope, later, { tag: 'lock-read' });
assert.deepEqual(read.val, { tag: 'read', val: undefined });
assert.ok(store.file(env, scope, 'epoch.json') !== undefined);
console.log('B released; the cell has no lock and keeps its epoch');
console.log('node example: all assertions held');
