/**
 * The history checker of the torture harness: reads what a store committed, in commit order per cell, and
 * reports every violation of baton's promises. Pure: it takes parsed histories and the workers' reports
 * and returns violations; `history.mjs` reads them from a store.
 *
 * A cell's history is a list of states, each the cell's files after one committed transaction:
 * `{ at, lock, epochFile, receipt }` (parsed `lock.json`, `epoch.json`'s number, parsed `latest.json`; null
 * when absent). The workers append ledger entries with adapter `torture` and key
 * `<scope>/<holder>/<epoch>/<seq>`: the scope, holder and epoch they wrote under, and a sequence number.
 *
 * Violations (kind: what it means):
 * - `two-writers-one-epoch`: entries of two holders accepted under one epoch of a cell, or two holders
 *   holding the lock at one epoch.
 * - `write-after-takeover`: an entry accepted under an epoch lower than a lock the cell had already granted,
 *   or (in `baseline` mode, which has no epochs) from a holder after another holder started writing.
 * - `unfenced-write`: an entry accepted while the lock in the same committed state was not its writer's.
 * - `epoch-not-increasing`: a new grant whose epoch is not above every earlier one, or `epoch.json` going
 *   back.
 * - `receipt-lost`: an entry that left a cell's receipt other than by a handover to the pull request, a
 *   write a worker was told succeeded that is in no final receipt, or a receipt that disappeared.
 * - `lock-left-behind`: a live lock at the end held by a worker that was neither stopped nor killed and was
 *   not told a release failed (whatever its exit code), or one that lives longer than its TTL after the last
 *   worker ended.
 * - `two-owners`: a resource that two scopes list as owned at the end, other than a pull request listing
 *   what it inherited from its head branch (pending its handover).
 */

/** The adapter of the entries the workers write. */
export const ADAPTER = 'torture';

/** Parses a worker's key `<scope>/<holder>/<epoch>/<seq>`; null for anything else. */
export function parseKey(key) {
  const parts = typeof key === 'string' ? key.split('/') : [];
  if (parts.length !== 4) return null;
  const [scope, holder, epoch, seq] = parts;
  const e = Number(epoch);
  if (!scope || !holder || !Number.isInteger(e)) return null;
  return { scope, holder, epoch: e, seq: Number(seq) };
}

/** The scope of a cell label `env/scope` (the dir store's cell directory, or the git store's). */
export function scopeOf(cell) {
  return cell.split('/').pop();
}

/** The worker entries of a receipt: key → entry. */
function entriesOf(receipt) {
  const out = new Map();
  for (const e of Array.isArray(receipt?.ledger) ? receipt.ledger : []) {
    if (e && e.adapter === ADAPTER && typeof e.key === 'string') out.set(e.key, e);
  }
  return out;
}

/** Whether an entry counts as owned (not relied on). */
function owned(entry) {
  return entry.createdBy === 'baton' || entry.createdBy === 'sponson' || entry.createdBy === 'intent';
}

/**
 * Checks a store's history.
 * @param {object} input
 * @param {Record<string, {at?: any, lock: any, epochFile: number|null, receipt: any}[]>} input.cells
 *   per cell label, its states in commit order
 * @param {{key: string, worker: string}[]} [input.acks] writes the workers were told succeeded
 * @param {{id: string, holders: string[], clean: boolean}[]} [input.workers] how each worker ended
 * @param {number} [input.endMs] when the last worker ended (wall clock)
 * @param {number} [input.ttlMs] the TTL every worker used
 * @param {Record<string, string>} [input.successors] branch scope → the pull request scope that inherits it
 * @param {'baton'|'baseline'} [input.mode] `baseline` skips what needs epochs and locks in the history
 * @returns {{kind: string, cell?: string, detail: string}[]}
 */
export function check({ cells, acks = [], workers = [], endMs = null, ttlMs = null, successors = {}, mode = 'baton' }) {
  const violations = [];
  const add = (kind, cell, detail) => violations.push({ kind, cell, detail });
  const finals = new Map();
  const everSeen = new Map(); // key -> cell it was first seen in
  for (const [cell, states] of Object.entries(cells).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const scope = scopeOf(cell);
    let maxEpoch = 0;
    let maxEpochFile = 0;
    let grant = null; // `${holder}@${epoch}` of the lock in the previous state
    const epochHolder = new Map(); // epoch -> holder (lock grants and entries)
    const firstWrite = []; // baseline: holders in the order they first wrote
    let prev = new Map();
    let hadReceipt = false;
    for (const [i, state] of states.entries()) {
      const where = `state #${i}${state.at !== undefined ? ` (${state.at})` : ''}`;
      const lock = state.lock;
      if (mode === 'baton') {
        if (typeof state.epochFile === 'number') {
          if (state.epochFile < maxEpochFile) {
            add('epoch-not-increasing', cell, `epoch.json went from ${maxEpochFile} back to ${state.epochFile} at ${where}`);
          }
          maxEpochFile = Math.max(maxEpochFile, state.epochFile);
        }
        if (lock && typeof lock.epoch === 'number') {
          const id = `${lock.holder}@${lock.epoch}`;
          if (id !== grant) {
            if (lock.epoch <= maxEpoch) {
              add('epoch-not-increasing', cell, `${lock.holder} was granted epoch ${lock.epoch} after epoch ${maxEpoch} at ${where}`);
            }
            const other = epochHolder.get(lock.epoch);
            if (other !== undefined && other !== lock.holder) {
              add('two-writers-one-epoch', cell, `${lock.holder} and ${other} both held epoch ${lock.epoch} (${where})`);
            }
            epochHolder.set(lock.epoch, lock.holder);
          }
          maxEpoch = Math.max(maxEpoch, lock.epoch);
          grant = id;
        } else {
          grant = null;
        }
      }
      if (state.receipt) hadReceipt = true;
      else if (hadReceipt) add('receipt-lost', cell, `the receipt disappeared at ${where}`);
      const now = entriesOf(state.receipt);
      for (const [key, entry] of now) {
        if (!everSeen.has(key)) everSeen.set(key, cell);
        if (prev.has(key)) continue;
        const k = parseKey(key);
        if (!k || k.scope !== scope || entry.inheritedFrom !== undefined) continue;
        // A new write of this cell's own scope.
        if (mode === 'baton') {
          const other = epochHolder.get(k.epoch);
          if (other !== undefined && other !== k.holder) {
            add('two-writers-one-epoch', cell, `${key} accepted under epoch ${k.epoch}, which ${other} held (${where})`);
          }
          if (!epochHolder.has(k.epoch)) epochHolder.set(k.epoch, k.holder);
          if (k.epoch < maxEpoch) {
            add('write-after-takeover', cell, `${key} accepted at ${where} after epoch ${maxEpoch} was granted`);
          }
          if (!lock || lock.holder !== k.holder || lock.epoch !== k.epoch) {
            const held = lock ? `${lock.holder} at epoch ${lock.epoch}` : 'nobody';
            add('unfenced-write', cell, `${key} accepted at ${where} while the lock was held by ${held}`);
          }
        } else {
          const at = firstWrite.indexOf(k.holder);
          if (at === -1) firstWrite.push(k.holder);
          else if (at < firstWrite.length - 1) {
            const later = firstWrite.slice(at + 1).join(', ');
            add('write-after-takeover', cell, `${key} accepted at ${where} after ${later} had taken over`);
          }
        }
      }
      for (const [key, entry] of prev) {
        // The baseline's journal is written after its file, not with it: order across writers is loose,
        // so only what no final state has counts as lost (below).
        if (now.has(key) || mode !== 'baton') continue;
        // Moved by a handover (checked at the end against the successor), or an inherited entry the
        // predecessor still lists: not lost here.
        if (successors[scope] !== undefined || entry.inheritedFrom !== undefined) continue;
        add('receipt-lost', cell, `${key} left the receipt at ${where}`);
      }
      prev = now;
    }
    finals.set(cell, { scope, entries: prev, lock: states.at(-1)?.lock ?? null });
  }

  // Everything ever written is owned at the end: by its scope, or by the successor it was handed to.
  const ownersOf = new Map();
  for (const { scope, entries } of finals.values()) {
    for (const [key, entry] of entries) {
      if (!owned(entry)) continue;
      if (!ownersOf.has(key)) ownersOf.set(key, []);
      ownersOf.get(key).push({ scope, entry });
    }
  }
  for (const [key, cell] of everSeen) {
    if (!ownersOf.has(key)) add('receipt-lost', cell, `${key} was accepted but no scope lists it at the end`);
  }
  for (const { key, worker } of acks) {
    if (!everSeen.has(key)) add('receipt-lost', null, `${worker} was told ${key} was written; no receipt ever had it`);
  }
  for (const [key, owners] of ownersOf) {
    if (owners.length < 2) continue;
    const own = owners.filter(({ entry }) => entry.inheritedFrom === undefined);
    const pending = owners.filter(({ scope, entry }) =>
      entry.inheritedFrom !== undefined && own.some((o) => successors[o.scope] === scope && entry.inheritedFrom === o.scope),
    );
    if (own.length > 1 || own.length + pending.length < owners.length) {
      add('two-owners', null, `${key} is owned by ${owners.map((o) => o.scope).join(' and ')}`);
    }
  }

  // Locks at the end.
  if (mode === 'baton' && endMs !== null) {
    const holderOf = new Map();
    for (const w of workers) for (const h of w.holders) holderOf.set(h, w);
    for (const [cell, { lock }] of finals) {
      if (!lock) continue;
      const expires = Date.parse(lock.expiresAt);
      const w = holderOf.get(lock.holder);
      if (w?.clean && expires > endMs) {
        add('lock-left-behind', cell, `${lock.holder} (${w.id}) ended unharmed but its lock lives until ${lock.expiresAt}`);
      }
      if (ttlMs !== null && expires > endMs + ttlMs) {
        add('lock-left-behind', cell, `${lock.holder}'s lock lives until ${lock.expiresAt}, over a TTL after the last worker ended`);
      }
    }
  }
  return violations;
}

/** Violations counted by kind, every kind present (0 when none). */
export function countByKind(violations) {
  const kinds = [
    'two-writers-one-epoch',
    'write-after-takeover',
    'unfenced-write',
    'epoch-not-increasing',
    'receipt-lost',
    'lock-left-behind',
    'two-owners',
  ];
  const counts = Object.fromEntries(kinds.map((k) => [k, 0]));
  for (const v of violations) counts[v.kind] = (counts[v.kind] ?? 0) + 1;
  return counts;
}
