'use strict';
/**
 * What every store of this package offers on top of its `transact`: the lock operations as methods. A
 * store class extends `CellStore` and implements `transact`, `read` and `list`; each method here is one
 * transaction through `this.transact`, so a wrapper that overrides `transact` sees them all.
 */
class CellStore {
  /** Acquires the lock of a cell (taking over an expired one, returned as `preempted`); LOCK_HELD if live. */
  async acquireLock({ env, scope, holder, ttlMs }) {
    const a = await this.transact({ env, scope }, 'lock-acquire', { holder, ttlMs });
    return { lock: a.lock, preempted: a.preempted };
  }

  /** Extends the holder's lease to now + ttlMs; LOCK_LOST if it is not held by `holder` at `epoch`. */
  async renewLock({ env, scope, holder, epoch, ttlMs }) {
    const a = await this.transact({ env, scope }, 'lock-renew', { holder, epoch, ttlMs });
    return { lock: a.lock };
  }

  /** Releases the lock if `holder` holds it (at `epoch` when given); otherwise reports what is there. */
  async releaseLock({ env, scope, holder, epoch }) {
    const a = await this.transact({ env, scope }, 'lock-release', { holder, epoch: epoch ?? null });
    return { released: a.released, current: a.current };
  }

  /** The lock of a cell with its `expired` flag, or null; LOCK_CORRUPT when it cannot be read. */
  async readLock({ env, scope }) {
    return (await this.transact({ env, scope }, 'lock-read', {})).lock;
  }

  /** Takes the lock over on purpose, whatever is there, recording `reason`; the old lock is `preempted`. */
  async breakLock({ env, scope, holder, ttlMs, reason }) {
    const a = await this.transact({ env, scope }, 'lock-break', { holder, ttlMs, reason });
    return { lock: a.lock, preempted: a.preempted };
  }

  /**
   * Writes data file `file` of the cell only if `holder` holds the lock at `epoch`, checked in the same
   * transaction (LOCK_LOST and nothing written otherwise). A lease's `write` is this with its own epoch.
   */
  async fencedWrite({ env, scope, holder, epoch, file, content }) {
    const a = await this.transact({ env, scope }, 'fenced-write', { holder, epoch, file, content });
    return { lock: a.lock };
  }
}

module.exports = { CellStore };
