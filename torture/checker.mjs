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
 * - `lock-left-behind`: a lock at the end held by a worker that was neither stopped nor killed and was not
 *   told a release failed (whatever its exit code: an acquire whose reply was lost must be released too), or
 *   one that lives longer than its TTL after the last worker ended.
 * - `takeover-of-live-lock`: a grant that replaced another holder's lock before that lock expired (all
 *   workers share one clock here, so no skew excuses it).
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
 * The checker, fed one committed state at a time so that a long history need not fit in memory: call
 * `observe(cell, state)` for each state of each cell in commit order (cells may interleave), then
 * `finish(...)` once. Keeps per cell only the previous state's entries, and every key seen.
 */
export class HistoryChecker {
  /**
   * @param {object} [options]
   * @param {Record<string, string>} [options.successors] branch scope → the pull request scope that inherits it
   * @param {'baton'|'baseline'} [options.mode] `baseline` skips what needs epochs and locks in the history
   */
  constructor({ successors = {}, mode = 'baton' } = {}) {
    this.successors = successors;
    this.mode = mode;
    this.violations = [];
    this.cells = new Map();
    this.everSeen = new Map(); // key -> cell it was first seen in
    this.states = 0;
  }

  #add(kind, cell, detail) {
    this.violations.push({ kind, cell, detail });
  }

  /** One committed state of `cell` (`{at, lock, epochFile, receipt}`), after the previous one of that cell. */
  observe(cell, state) {
    const add = (kind, detail) => this.#add(kind, cell, detail);
    let c = this.cells.get(cell);
    if (!c) {
      c = { scope: scopeOf(cell), i: 0, maxEpoch: 0, maxEpochFile: 0, grant: null, epochHolder: new Map(), firstWrite: [], prev: new Map(), hadReceipt: false, lock: null };
      this.cells.set(cell, c);
    }
    const { scope } = c;
    const where = `state #${c.i}${state.at !== undefined ? ` (${state.at})` : ''}`;
    c.i += 1;
    this.states += 1;
    const lock = state.lock;
    c.prevLock = c.lock;
    c.lock = lock ?? null;
    if (this.mode === 'baton') {
      if (typeof state.epochFile === 'number') {
        if (state.epochFile < c.maxEpochFile) {
          add('epoch-not-increasing', `epoch.json went from ${c.maxEpochFile} back to ${state.epochFile} at ${where}`);
        }
        c.maxEpochFile = Math.max(c.maxEpochFile, state.epochFile);
      }
      if (lock && typeof lock.epoch === 'number') {
        const id = `${lock.holder}@${lock.epoch}`;
        if (id !== c.grant) {
          const before = c.prevLock;
          if (before && before.holder !== lock.holder && Date.parse(before.expiresAt) > Date.parse(lock.acquiredAt)) {
            add('takeover-of-live-lock', `${lock.holder} was granted epoch ${lock.epoch} at ${lock.acquiredAt} over ${before.holder}'s lock, live until ${before.expiresAt} (${where})`);
          }
          if (lock.epoch <= c.maxEpoch) {
            add('epoch-not-increasing', `${lock.holder} was granted epoch ${lock.epoch} after epoch ${c.maxEpoch} at ${where}`);
          }
          const other = c.epochHolder.get(lock.epoch);
          if (other !== undefined && other !== lock.holder) {
            add('two-writers-one-epoch', `${lock.holder} and ${other} both held epoch ${lock.epoch} (${where})`);
          }
          c.epochHolder.set(lock.epoch, lock.holder);
        }
        c.maxEpoch = Math.max(c.maxEpoch, lock.epoch);
        c.grant = id;
      } else {
        c.grant = null;
      }
    }
    if (state.receipt) c.hadReceipt = true;
    else if (c.hadReceipt) add('receipt-lost', `the receipt disappeared at ${where}`);
    const now = entriesOf(state.receipt);
    for (const [key, entry] of now) {
      if (!this.everSeen.has(key)) this.everSeen.set(key, cell);
      if (c.prev.has(key)) continue;
      const k = parseKey(key);
      if (!k || k.scope !== scope || entry.inheritedFrom !== undefined) continue;
      // A new write of this cell's own scope.
      if (this.mode === 'baton') {
        const other = c.epochHolder.get(k.epoch);
        if (other !== undefined && other !== k.holder) {
          add('two-writers-one-epoch', `${key} accepted under epoch ${k.epoch}, which ${other} held (${where})`);
        }
        if (!c.epochHolder.has(k.epoch)) c.epochHolder.set(k.epoch, k.holder);
        if (k.epoch < c.maxEpoch) {
          add('write-after-takeover', `${key} accepted at ${where} after epoch ${c.maxEpoch} was granted`);
        }
        if (!lock || lock.holder !== k.holder || lock.epoch !== k.epoch) {
          const held = lock ? `${lock.holder} at epoch ${lock.epoch}` : 'nobody';
          add('unfenced-write', `${key} accepted at ${where} while the lock was held by ${held}`);
        }
      } else {
        const at = c.firstWrite.indexOf(k.holder);
        if (at === -1) c.firstWrite.push(k.holder);
        else if (at < c.firstWrite.length - 1) {
          const later = c.firstWrite.slice(at + 1).join(', ');
          add('write-after-takeover', `${key} accepted at ${where} after ${later} had taken over`);
        }
      }
    }
    for (const [key, entry] of c.prev) {
      // The baseline's journal is written after its file, not with it: order across writers is loose,
      // so only what no final state has counts as lost (below).
      if (now.has(key) || this.mode !== 'baton') continue;
      // Moved by a handover (checked at the end against the successor), or an inherited entry the
      // predecessor still lists: not lost here.
      if (this.successors[scope] !== undefined || entry.inheritedFrom !== undefined) continue;
      add('receipt-lost', `${key} left the receipt at ${where}`);
    }
    c.prev = now;
  }

  /**
   * The violations, once every state was observed.
   * @param {object} [end]
   * @param {{key: string, worker: string}[]} [end.acks] writes the workers were told succeeded
   * @param {{id: string, holders: string[], clean: boolean}[]} [end.workers] how each worker ended
   * @param {number} [end.endMs] when the last worker ended (wall clock)
   * @param {number} [end.ttlMs] the TTL every worker used
   * @returns {{kind: string, cell?: string, detail: string}[]}
   */
  finish({ acks = [], workers = [], endMs = null, ttlMs = null } = {}) {
    const add = (kind, cell, detail) => this.#add(kind, cell, detail);
    // Everything ever written is owned at the end: by its scope, or by the successor it was handed to.
    const ownersOf = new Map();
    for (const { scope, prev } of this.cells.values()) {
      for (const [key, entry] of prev) {
        if (!owned(entry)) continue;
        if (!ownersOf.has(key)) ownersOf.set(key, []);
        ownersOf.get(key).push({ scope, entry });
      }
    }
    for (const [key, cell] of this.everSeen) {
      if (!ownersOf.has(key)) add('receipt-lost', cell, `${key} was accepted but no scope lists it at the end`);
    }
    for (const { key, worker } of acks) {
      if (!this.everSeen.has(key)) add('receipt-lost', null, `${worker} was told ${key} was written; no receipt ever had it`);
    }
    for (const [key, owners] of ownersOf) {
      if (owners.length < 2) continue;
      const own = owners.filter(({ entry }) => entry.inheritedFrom === undefined);
      const pending = owners.filter(
        ({ scope, entry }) =>
          entry.inheritedFrom !== undefined && own.some((o) => this.successors[o.scope] === scope && entry.inheritedFrom === o.scope),
      );
      if (own.length > 1 || own.length + pending.length < owners.length) {
        add('two-owners', null, `${key} is owned by ${owners.map((o) => o.scope).join(' and ')}`);
      }
    }

    // Locks at the end.
    if (this.mode === 'baton' && endMs !== null) {
      const holderOf = new Map();
      for (const w of workers) for (const h of w.holders) holderOf.set(h, w);
      for (const [cell, { lock }] of [...this.cells].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        if (!lock) continue;
        const expires = Date.parse(lock.expiresAt);
        const w = holderOf.get(lock.holder);
        if (w?.clean) {
          add('lock-left-behind', cell, `${lock.holder} (${w.id}) ended unharmed but left its lock (until ${lock.expiresAt})`);
        }
        if (ttlMs !== null && expires > endMs + ttlMs) {
          add('lock-left-behind', cell, `${lock.holder}'s lock lives until ${lock.expiresAt}, over a TTL after the last worker ended`);
        }
      }
    }
    return this.violations;
  }
}

/**
 * Checks a whole history held in memory (see `HistoryChecker` for the options and what is checked).
 * @param {object} input
 * @param {Record<string, {at?: any, lock: any, epochFile: number|null, receipt: any}[]>} input.cells
 *   per cell label, its states in commit order
 */
export function check({ cells, acks = [], workers = [], endMs = null, ttlMs = null, successors = {}, mode = 'baton' }) {
  const checker = new HistoryChecker({ successors, mode });
  for (const [cell, states] of Object.entries(cells).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    for (const state of states) checker.observe(cell, state);
  }
  return checker.finish({ acks, workers, endMs, ttlMs });
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
    'takeover-of-live-lock',
  ];
  const counts = Object.fromEntries(kinds.map((k) => [k, 0]));
  for (const v of violations) counts[v.kind] = (counts[v.kind] ?? 0) + 1;
  return counts;
}
