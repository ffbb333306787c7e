// The checker must find each violation it names in a history that has it, and nothing in a clean one:
// otherwise a torture run that reports zero proves nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { check, countByKind, parseKey } from './checker.mjs';

const T = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms) => new Date(ms).toISOString();
/** A lock of 2 s; by default epoch n is granted at T + 2(n-1) s, when the previous one expired. */
const lock = (holder, epoch, expiresMs = T + 2000 * epoch) => ({ holder, epoch, acquiredAt: iso(expiresMs - 2000), expiresAt: iso(expiresMs) });
const entry = (key, extra = {}) => ({ adapter: 'torture', key, id: 'x', createdBy: 'baton', ...extra });
const receipt = (...keys) => ({ version: 2, ledger: keys.map((k) => (typeof k === 'string' ? entry(k) : k)) });
const st = (l, r, epochFile = l?.epoch ?? null) => ({ lock: l, epochFile, receipt: r });

/** A clean history of one cell: a grants epoch 1 and writes, b takes over at epoch 2 and writes. */
function clean() {
  return {
    'preview/branch-t2': [
      st(lock('a', 1), null),
      st(lock('a', 1), receipt()),
      st(lock('a', 1), receipt('branch-t2/a/1/1')),
      st(lock('a', 1), receipt('branch-t2/a/1/1', 'branch-t2/a/1/2')),
      st(lock('b', 2), receipt('branch-t2/a/1/1', 'branch-t2/a/1/2')),
      st(lock('b', 2), receipt('branch-t2/a/1/1', 'branch-t2/a/1/2', 'branch-t2/b/2/1')),
      st(null, receipt('branch-t2/a/1/1', 'branch-t2/a/1/2', 'branch-t2/b/2/1'), 2),
    ],
  };
}

const kinds = (v) => Object.entries(countByKind(v)).filter(([, n]) => n > 0).map(([k]) => k);

test('a clean history has no violation', () => {
  assert.deepEqual(check({ cells: clean(), acks: [{ key: 'branch-t2/a/1/1', worker: 'w1' }], endMs: T + 5000, ttlMs: 2000 }), []);
});

test('a write from the old holder after a takeover is found', () => {
  const cells = clean();
  cells['preview/branch-t2'].splice(5, 0, st(lock('b', 2), receipt('branch-t2/a/1/1', 'branch-t2/a/1/2', 'branch-t2/a/1/3')));
  cells['preview/branch-t2'][6].receipt.ledger.splice(2, 0, entry('branch-t2/a/1/3'));
  cells['preview/branch-t2'][7].receipt.ledger.splice(2, 0, entry('branch-t2/a/1/3'));
  assert.deepEqual(kinds(check({ cells })), ['write-after-takeover', 'unfenced-write']);
});

test('two holders in one epoch are found (grant and write)', () => {
  const cells = clean();
  cells['preview/branch-t2'][4] = st(lock('b', 1), cells['preview/branch-t2'][4].receipt, 1);
  const v = check({ cells });
  assert.ok(kinds(v).includes('two-writers-one-epoch'), JSON.stringify(v));
  assert.ok(kinds(v).includes('epoch-not-increasing'), JSON.stringify(v));
});

test('epoch.json going back is found', () => {
  const cells = clean();
  cells['preview/branch-t2'][6].epochFile = 1;
  assert.deepEqual(kinds(check({ cells })), ['epoch-not-increasing']);
});

test('an entry that leaves a receipt, or an acknowledged write no receipt has, is lost', () => {
  const cells = clean();
  cells['preview/branch-t2'][6].receipt.ledger.shift();
  assert.deepEqual(kinds(check({ cells })), ['receipt-lost']);
  const v = check({ cells: clean(), acks: [{ key: 'branch-t2/c/3/1', worker: 'w9' }] });
  assert.deepEqual(kinds(v), ['receipt-lost']);
  assert.match(v[0].detail, /w9 was told/);
  const gone = clean();
  gone['preview/branch-t2'].push(st(null, null, 2));
  assert.ok(kinds(check({ cells: gone })).includes('receipt-lost'));
});

test('a grant over another holder\'s live lock is found', () => {
  const cells = clean();
  // b's grant at epoch 2 came at T, while a's lock lived until T + 2000.
  cells['preview/branch-t2'][4].lock.acquiredAt = iso(T + 1000);
  assert.deepEqual(kinds(check({ cells })), ['takeover-of-live-lock']);
  // Granted after it expired: fine.
  const later = clean();
  later['preview/branch-t2'][4].lock.acquiredAt = iso(T + 2000);
  assert.deepEqual(check({ cells: later }), []);
});

test('a lock left by a worker that exited cleanly, or outliving its TTL, is found', () => {
  const cells = clean();
  cells['preview/branch-t2'].push(st(lock('c', 3, T + 9000), cells['preview/branch-t2'][6].receipt));
  const workers = [{ id: 'w3', holders: ['c'], clean: true }];
  assert.deepEqual(kinds(check({ cells, workers, endMs: T + 5000, ttlMs: 60_000 })), ['lock-left-behind']);
  // Even once expired: an unharmed worker (an acquire whose reply was lost included) releases what it holds.
  assert.deepEqual(kinds(check({ cells, workers, endMs: T + 20_000, ttlMs: 60_000 })), ['lock-left-behind']);
  // A killed worker's lock expiring within a TTL is how leases end: no violation.
  const killed = [{ id: 'w3', holders: ['c'], clean: false }];
  assert.deepEqual(check({ cells, workers: killed, endMs: T + 5000, ttlMs: 60_000 }), []);
  assert.deepEqual(kinds(check({ cells, workers: killed, endMs: T + 5000, ttlMs: 2000 })), ['lock-left-behind']);
});

test('a handover moves entries to the pull request; leaving them in both is two owners', () => {
  const branch = (...k) => st(lock('a', 1), receipt(...k));
  const moved = {
    'preview/branch-t1': [branch('branch-t1/a/1/1'), st(lock('h', 2), receipt())],
    'preview/pr-1': [
      st(lock('p', 1), receipt(entry('branch-t1/a/1/1', { inheritedFrom: 'branch-t1' }))),
      st(lock('p', 1), receipt(entry('branch-t1/a/1/1', { inheritedFrom: 'branch-t1' }), 'pr-1/p/1/1')),
    ],
  };
  const successors = { 'branch-t1': 'pr-1' };
  assert.deepEqual(check({ cells: moved, successors }), []);
  // Pending: the PR lists what it inherited while the branch still owns it; allowed.
  const pending = structuredClone(moved);
  pending['preview/branch-t1'].pop();
  assert.deepEqual(check({ cells: pending, successors }), []);
  // The PR claims it as its own (no inheritedFrom) while the branch still lists it: two owners.
  const both = structuredClone(pending);
  delete both['preview/pr-1'][1].receipt.ledger[0].inheritedFrom;
  assert.deepEqual(kinds(check({ cells: both, successors })), ['two-owners']);
  // The handover took it out of the branch but the PR does not have it: lost.
  const lost = structuredClone(moved);
  lost['preview/pr-1'][1].receipt.ledger.shift();
  assert.deepEqual(kinds(check({ cells: lost, successors })), ['receipt-lost']);
});

test('baseline mode: interleaved holders are a write after a takeover', () => {
  const cells = {
    'preview/branch-t2': [
      st(null, receipt('branch-t2/x/0/1')),
      st(null, receipt('branch-t2/x/0/1', 'branch-t2/y/0/1')),
      st(null, receipt('branch-t2/x/0/1', 'branch-t2/y/0/1', 'branch-t2/x/0/2')),
    ],
  };
  assert.deepEqual(kinds(check({ cells, mode: 'baseline' })), ['write-after-takeover']);
});

test('keys parse into scope, holder, epoch and sequence', () => {
  assert.deepEqual(parseKey('pr-1/run-ab/3/7'), { scope: 'pr-1', holder: 'run-ab', epoch: 3, seq: 7 });
  assert.equal(parseKey('pr-1/run-ab/x/7'), null);
  assert.equal(parseKey('plain'), null);
});
