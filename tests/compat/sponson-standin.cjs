'use strict';
/**
 * A scripted stand-in for the original tool's (Sponson's) local store lock protocol, exactly as
 * /work/shared/reference/sponson-behaviour.md §2.2 and §3.3 document it (`LocalReceiptStore`, `local.ts`),
 * so baton's compatibility tests race baton against the protocol a migrating team still runs:
 *
 * - acquire, at most 100 attempts: create `lock.json` exclusively (temp file + link(2)) WITHOUT the mutex;
 *   on EEXIST read it: live -> held; expired or unreadable -> under the mutex: re-read (gone: retry), live ->
 *   held, else rename it to a tomb, unlink the tomb, exclusive-create the fresh lock (failure: retry);
 * - the mutex `lock.mutex`: link(2) of `{pid, token, at}`; broken when `at` is more than 10 s old or the
 *   content unreadable (rename to a tomb, put back if the moved content is not the one judged stale);
 *   waiting bounded by 30 s; removed on exit only if still ours;
 * - release: read; not ours -> no-op; else under the mutex re-read and remove via a tomb if still ours.
 *
 * Locks are `{holder, acquiredAt, expiresAt}` pretty-printed with a trailing newline, no epoch.
 * Run as a worker (`node sponson-standin.cjs worker`) it reads JSON lines on stdin and answers on stdout.
 */
const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const MUTEX_STALE_MS = 10_000;
const MUTEX_WAIT_MS = 30_000;

class LockHeld extends Error {
  constructor(lock) {
    super(`held by ${lock.holder}`);
    this.lock = lock;
  }
}

const serialize = (v) => `${JSON.stringify(v, null, 2)}\n`;
const sleepSync = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function parseLock(text) {
  try {
    const v = JSON.parse(text);
    return v && typeof v.holder === 'string' && typeof v.expiresAt === 'string' ? v : null;
  } catch {
    return null;
  }
}

function readOrNull(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

/** Exclusive create: temp file then link(2); false when the target exists. */
function createExclusive(target, content) {
  const tmp = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, content);
  try {
    fs.linkSync(tmp, target);
    return true;
  } catch (e) {
    if (e.code === 'EEXIST') return false;
    throw e;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

function removeViaTomb(file) {
  const tomb = `${file}.${randomBytes(6).toString('hex')}.tomb`;
  try {
    fs.renameSync(file, tomb);
  } catch (e) {
    if (e.code === 'ENOENT') return;
    throw e;
  }
  fs.rmSync(tomb, { force: true });
}

/** The original's mutex: stale by `at` age (or unreadable content), never by process liveness. */
function withMutex(dir, fn) {
  const file = path.join(dir, 'lock.mutex');
  const content = JSON.stringify({ pid: process.pid, token: randomBytes(8).toString('hex'), at: Date.now() });
  const started = Date.now();
  for (let spins = 0; ; spins += 1) {
    if (createExclusive(file, content)) break;
    const seen = readOrNull(file);
    if (seen === null) continue;
    let at;
    try {
      at = JSON.parse(seen).at;
    } catch {
      at = undefined;
    }
    if (typeof at !== 'number' || Date.now() - at > MUTEX_STALE_MS) {
      const tomb = `${file}.${randomBytes(6).toString('hex')}.tomb`;
      try {
        fs.renameSync(file, tomb);
        const moved = readOrNull(tomb);
        if (moved !== null && moved !== seen) {
          try {
            fs.linkSync(tomb, file);
          } catch {}
        }
        fs.rmSync(tomb, { force: true });
      } catch (e) {
        if (e.code !== 'ENOENT') throw e;
      }
      continue;
    }
    if (Date.now() - started > MUTEX_WAIT_MS) throw new Error(`Timed out waiting for the receipts mutex (${file}).`);
    sleepSync(Math.min(2 + spins, 25) * (0.5 + Math.random()));
  }
  try {
    return fn();
  } finally {
    if (readOrNull(file) === content) fs.rmSync(file, { force: true });
  }
}

/**
 * The original's `acquire(holder, ttl)` on the cell directory `dir`: `{preempted}` (the expired lock it
 * replaced, or null) or throws LockHeld naming the live lock.
 */
function acquire(dir, holder, ttlMs) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'lock.json');
  const fresh = () => {
    const now = Date.now();
    return serialize({ holder, acquiredAt: new Date(now).toISOString(), expiresAt: new Date(now + ttlMs).toISOString() });
  };
  const live = (lock) => lock !== null && Date.parse(lock.expiresAt) > Date.now();
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (createExclusive(file, fresh())) return { preempted: null };
    const text = readOrNull(file);
    if (text === null) continue;
    const cur = parseLock(text);
    if (live(cur)) throw new LockHeld(cur);
    const outcome = withMutex(dir, () => {
      const again = readOrNull(file);
      if (again === null) return 'retry';
      const lock = parseLock(again);
      if (live(lock)) throw new LockHeld(lock);
      removeViaTomb(file);
      return createExclusive(file, fresh()) ? { preempted: lock } : 'retry';
    });
    if (outcome !== 'retry') return outcome;
  }
  throw new Error('Could not settle the lock: too many concurrent contenders.');
}

/** The original's `release(holder)`: a no-op unless the lock is ours. */
function release(dir, holder) {
  const file = path.join(dir, 'lock.json');
  if (parseLock(readOrNull(file) ?? '')?.holder !== holder) return;
  withMutex(dir, () => {
    if (parseLock(readOrNull(file) ?? '')?.holder === holder) removeViaTomb(file);
  });
}

module.exports = { acquire, release, withMutex, LockHeld, MUTEX_STALE_MS };

/**
 * Worker mode: one JSON request a line, `{id, op: "acquire", dir, holder, ttlMs, at?, after?, jitterUs?}`;
 * waits (busy) until wall-clock ms `at`, or until the path `after` exists, then `jitterUs` more, then
 * answers `{id, ok: true, preempted}` or `{id, ok: false, code: "LOCK_HELD", holder}`.
 */
if (require.main === module && process.argv[2] === 'worker') {
  const rl = require('node:readline').createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    const req = JSON.parse(line);
    const spinUntil = (cond, limitMs) => {
      const stop = Date.now() + limitMs;
      while (!cond() && Date.now() < stop);
    };
    const t0 = Date.now();
    if (req.at) spinUntil(() => Date.now() >= req.at, 5_000);
    if (req.after) spinUntil(() => fs.existsSync(req.after), 300);
    if (req.jitterUs) {
      const until = process.hrtime.bigint() + BigInt(req.jitterUs) * 1000n;
      while (process.hrtime.bigint() < until);
    }
    let answer;
    try {
      const { preempted } = acquire(req.dir, req.holder, req.ttlMs);
      answer = { id: req.id, ok: true, preempted: preempted?.holder ?? null, waitedMs: Date.now() - t0 };
    } catch (e) {
      if (!(e instanceof LockHeld)) answer = { id: req.id, ok: false, code: 'ERROR', message: e.message };
      else answer = { id: req.id, ok: false, code: 'LOCK_HELD', holder: e.lock.holder, waitedMs: Date.now() - t0 };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  });
}
