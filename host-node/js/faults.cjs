'use strict';
/**
 * Test-only store faults and the dir store's journal, for the torture harness (`torture/`), read from the
 * same environment variables as the native host (host-native/src/store/faults.rs). Each is off unless set,
 * and none changes what a store decides or commits:
 * - BATON_TEST_STORE_DELAY_MS=N: a dir store transaction sleeps a random 0..=N ms holding the cell mutex,
 *   between loading the cell and committing (a slow store);
 * - BATON_TEST_LOST_REPLY=P: after a transaction committed, the store rejects with probability P, as if
 *   its reply had been lost (the write happened; the caller does not know);
 * - BATON_TEST_JOURNAL=FILE: every committed dir store transaction appends one JSON line with the cell's
 *   state files after the commit, while the cell mutex is still held (the cell's history in commit order);
 * - BATON_TEST_UNSAFE_NO_MUTEX=1: the dir store skips its cell mutex, breaking it on purpose (the harness's
 *   negative control, `torture.mjs --sabotage`, must then find violations);
 * - BATON_TEST_FAULT_LOG=FILE: each injected lost reply appends a line `lost-reply <pid>` to FILE.
 */
const fs = require('node:fs/promises');
const path = require('node:path');
const { appendFileSync } = require('node:fs');
const { hostError } = require('./core.cjs');

const delayMs = Math.max(0, Number(process.env.BATON_TEST_STORE_DELAY_MS) || 0);
const lostReply = (() => {
  const p = Number(process.env.BATON_TEST_LOST_REPLY);
  return Number.isFinite(p) && p >= 0 && p <= 1 ? p : 0;
})();
const journalFile = process.env.BATON_TEST_JOURNAL || null;

/** Sleeps a random part of BATON_TEST_STORE_DELAY_MS. Call holding the cell mutex. */
async function slowStore() {
  if (delayMs > 0) await new Promise((r) => setTimeout(r, Math.floor(Math.random() * (delayMs + 1))));
}

/** The answer of a transaction, or (with probability BATON_TEST_LOST_REPLY, if it committed) a lost reply. */
function reply(answer) {
  const committed = Array.isArray(answer?.changes) && answer.changes.length > 0;
  if (committed && lostReply > 0 && Math.random() < lostReply) {
    if (process.env.BATON_TEST_FAULT_LOG) appendFileSync(process.env.BATON_TEST_FAULT_LOG, `lost-reply ${process.pid}\n`);
    throw hostError(
      'INTERNAL',
      "the store's reply was lost after it committed (test fault BATON_TEST_LOST_REPLY); retry the operation",
      { testFault: 'lost-reply' },
    );
  }
  return answer;
}

/** Appends the cell's state files after a commit to BATON_TEST_JOURNAL. Call holding the cell mutex. */
async function journal(cell, cellDir, names) {
  if (!journalFile) return;
  const files = {};
  for (const name of names) {
    files[name] = await fs.readFile(path.join(cellDir, name), 'utf8').catch(() => null);
  }
  await fs.appendFile(journalFile, `${JSON.stringify({ cell, pid: process.pid, atMs: Date.now(), files })}\n`);
}

const unsafeNoMutex = process.env.BATON_TEST_UNSAFE_NO_MUTEX === '1';

module.exports = { slowStore, reply, journal, unsafeNoMutex };
