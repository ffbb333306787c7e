/**
 * The baseline worker: what a Node user would pick today to guard the same append, the npm package
 * `proper-lockfile` with its defaults (no retries: the worker polls every 100 ms itself, as baton waits),
 * except `stale` when the plan sets one. Holding the lock, it appends `<scope>/<holder>/0/<seq>` entries to
 * the scope's receipt file by read-modify-write (temp file + rename, so no write is torn), and journals the
 * file after each write, as the test dir store journals its commits. Same log as node-worker.mjs.
 * Usage: node baseline-worker.mjs '<plan JSON>'
 */
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createRequire } from 'node:module';

const lockfile = createRequire(import.meta.url)('proper-lockfile');
const plan = JSON.parse(process.argv[2]);
const log = (event) => appendFileSync(plan.log, `${JSON.stringify(event)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const cell = `${plan.context.env}/${plan.context.scope}`;
const dir = path.join(plan.root, cell);
const file = path.join(dir, 'latest.json');
mkdirSync(dir, { recursive: true });
try {
  writeFileSync(file, JSON.stringify({ ledger: [] }), { flag: 'wx' });
} catch (e) {
  if (e.code !== 'EEXIST') throw e;
}
const holder = `pl-${randomBytes(4).toString('hex')}`;
const options = plan.staleMs ? { stale: plan.staleMs } : {};

const started = Date.now();
let release;
for (;;) {
  try {
    release = await lockfile.lock(file, options);
    break;
  } catch (e) {
    if (e.code !== 'ELOCKED' || Date.now() - started > plan.waitTimeoutMs) {
      log({ event: 'error', code: e.code, message: e.message });
      process.exit(3);
    }
    await sleep(100);
  }
}
log({ event: 'lease', holder, epoch: 0 });
for (let seq = 1; seq <= plan.writes; seq++) {
  const key = `${plan.context.scope}/${holder}/0/${seq}`;
  const receipt = JSON.parse(readFileSync(file, 'utf8'));
  receipt.ledger.push({ adapter: 'torture', key, id: 'x', createdBy: 'baton' });
  const text = JSON.stringify(receipt);
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  appendFileSync(plan.journal, `${JSON.stringify({ cell, pid: process.pid, atMs: Date.now(), files: { 'latest.json': text } })}\n`);
  log({ event: 'ack', key });
  await sleep(plan.gapMs);
}
await release();
log({ event: 'done' });
