'use strict';
/**
 * Test-only store faults and the dir store's journal, for the torture harness (`torture/`) and the fault
 * tests: `withFaults(store)` wraps a store opened with the package's `openStore`. This file is not part of
 * the published package (package.json `files`), so nothing a user installs reads these variables. They are
 * the native host's (host-native/src/store/faults.rs, feature `test-faults`, which documents them):
 * - BATON_TEST_STORE_DELAY_MS=N: a dir store transaction sleeps a random 0..=N ms holding the cell mutex,
 *   between deciding and committing (a slow store);
 * - BATON_TEST_LOST_REPLY=P: after a transaction committed, the store rejects with probability P, as if
 *   its reply had been lost (the write happened; the caller does not know);
 * - BATON_TEST_JOURNAL=FILE: every committed dir store transaction appends one JSON line with the cell's
 *   state files after the commit, while the cell mutex is still held (the cell's history in commit order);
 *   a state the previous writer committed but did not journal (it died) is journaled, marked `gap`, by the
 *   next transaction on the cell;
 * - BATON_TEST_UNSAFE_NO_MUTEX=1: a dir store transaction decides on the cell as it was read before the
 *   mutex was taken, so the mutex protects nothing (the harness's negative control, `torture.mjs
 *   --sabotage`, must then find violations);
 * - BATON_TEST_FAULT_LOG=FILE: each injected lost reply appends a line `lost-reply <pid> <holder>` to FILE.
 */
const fs = require('node:fs/promises');
const path = require('node:path');
const { appendFileSync } = require('node:fs');
const { call, hostError } = require('../js/core.cjs');
const { transact } = require('../js/dir-store.cjs');

const env = process.env;
const delayMs = Math.max(0, Number(env.BATON_TEST_STORE_DELAY_MS) || 0);
const lostReply = (() => {
  const p = Number(env.BATON_TEST_LOST_REPLY);
  return Number.isFinite(p) && p >= 0 && p <= 1 ? p : 0;
})();
const journalFile = env.BATON_TEST_JOURNAL || null;
const faultLog = env.BATON_TEST_FAULT_LOG || null;
const unsafeNoMutex = env.BATON_TEST_UNSAFE_NO_MUTEX === '1';

/** Sleeps a random part of BATON_TEST_STORE_DELAY_MS. Called holding the cell mutex. */
async function slowStore() {
  if (delayMs > 0) await new Promise((r) => setTimeout(r, Math.floor(Math.random() * (delayMs + 1))));
}

/** The answer of a transaction, or (with probability BATON_TEST_LOST_REPLY, if it committed) a lost reply. */
function reply(answer) {
  const committed = Array.isArray(answer?.changes) && answer.changes.length > 0;
  if (!committed || lostReply <= 0 || Math.random() >= lostReply) return answer;
  if (faultLog) appendFileSync(faultLog, `lost-reply ${process.pid} ${answer?.lock?.holder ?? '-'}\n`, { mode: 0o600 });
  throw hostError(
    'INTERNAL',
    "the store's reply was lost after it committed (test fault BATON_TEST_LOST_REPLY); retry the operation",
    { testFault: 'lost-reply' },
  );
}

/** One journal line (the file created 0600), then the cell's `.journal-last`. */
async function writeLine(cell, cellDir, files, gap) {
  const line = { cell, pid: process.pid, atMs: Date.now(), files, ...(gap ? { gap: true } : {}) };
  await fs.appendFile(journalFile, `${JSON.stringify(line)}\n`, { mode: 0o600 });
  await fs.writeFile(path.join(cellDir, '.journal-last'), JSON.stringify(files), { mode: 0o600 });
}

/**
 * Journals the state a transaction loaded (`loaded`: name → text) if it is not the last state journaled
 * for the cell: its writer died between commit and journal line. Called holding the mutex, before deciding.
 */
async function journalLoaded(cell, cellDir, loaded, names) {
  const files = Object.fromEntries(names.map((n) => [n, loaded[n] ?? null]));
  const last = await fs.readFile(path.join(cellDir, '.journal-last'), 'utf8').catch(() => null);
  const empty = Object.values(files).every((v) => v === null);
  if (last === null ? !empty : !sameJson(JSON.parse(last), files)) await writeLine(cell, cellDir, files, true);
}

/** Whether two name → text maps are equal. */
function sameJson(a, b) {
  const keys = Object.keys(b);
  return Object.keys(a).length === keys.length && keys.every((k) => a[k] === b[k]);
}

/** Appends the cell's state files after a commit to BATON_TEST_JOURNAL. Called holding the cell mutex. */
async function journalCommitted(cell, cellDir, names) {
  const files = {};
  for (const name of names) {
    files[name] = await fs.readFile(path.join(cellDir, name), 'utf8').catch(() => null);
  }
  await writeLine(cell, cellDir, files, false);
}

/**
 * `store` with the BATON_TEST_* faults around it (the same object, its `transact` and, for a dir store,
 * `transactWith` replaced), or `store` untouched when none is set. Call once, right after `openStore`.
 * @template S
 * @param {S} store
 * @returns {S}
 */
function withFaults(store) {
  if (!(delayMs > 0 || lostReply > 0 || journalFile || unsafeNoMutex)) return store;
  if (store.kind === 'dir') {
    store.transactWith = async ({ env, scope }, decide) => {
      const cellDir = path.join(store.path, call('cell-path', { env, scope }).dir);
      const label = path.relative(store.path, cellDir);
      const names = call('cell-files', {});
      // The sabotage: every decision is made on what the cell held before the mutex was taken.
      const stale = unsafeNoMutex ? await store.readWith({ env, scope }, (cell) => ({ cell })).then((a) => a.cell) : null;
      const faulty = async (cell, nowMs) => {
        if (journalFile) await journalLoaded(label, cellDir, cell.files, names);
        const answer = decide(stale ?? cell, nowMs);
        await slowStore();
        return answer;
      };
      const committed = journalFile ? (dir) => journalCommitted(label, dir, names) : undefined;
      return transact(store.path, { env, scope, waitMs: store.mutexWaitMs }, faulty, committed);
    };
  }
  const inner = store.transact.bind(store);
  store.transact = (...args) => inner(...args).then(reply);
  return store;
}

module.exports = { withFaults };
