// Beside the original tool during a migration (issue 18): the original's dir store lock protocol (a scripted
// stand-in, tests/compat/sponson-standin.cjs, following reference/sponson-behaviour.md §3.3) raced in separate
// processes against `baton lock acquire` and against the Node package's `acquireLock`, on free scopes and on
// scopes whose lock expired. Never two holders: exactly one side wins each round, the loser is told LOCK_HELD
// naming the winner, and lock.json names the winner.
//
// Rounds: BATON_COMPAT_ROUNDS (default 1000 per opponent), run in BATON_COMPAT_LANES parallel lanes (default 2),
// each lane with its own processes and scopes. The stand-in starts its attempt when baton's mutex (or cell
// directory) appears, plus a random 0-1.5 ms, so it lands inside baton's transaction window; every other
// pair of CLI rounds also widens baton's window between load and commit by a random 0-2 ms
// (BATON_TEST_STORE_DELAY_MS, a fault of the `test-faults` build that scripts/test.sh runs here as BATON_BIN; it
// changes nothing baton decides or commits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, realpathSync, existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const standin = fileURLToPath(new URL('../compat/sponson-standin.cjs', import.meta.url));
const nodeWorker = fileURLToPath(new URL('../compat/baton-node-worker.cjs', import.meta.url));
const ROUNDS = Number(process.env.BATON_COMPAT_ROUNDS ?? 1000);
// A CLI round spawns a process (≈ 20 ms here when the machine is idle: 1,000 rounds take about 20 s in CI;
// 100 ms and more when it is loaded): BATON_COMPAT_CLI_ROUNDS=250 runs fewer.
const CLI_ROUNDS = Number(process.env.BATON_COMPAT_CLI_ROUNDS ?? 1000);
const LANES = Number(process.env.BATON_COMPAT_LANES ?? 2);
const fresh = () => realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-compat-')));
const rand = (n) => Math.floor(Math.random() * n);

/** A long-lived worker process answering one JSON line per request (matched by `id`). */
function worker(script, args = []) {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const answer = JSON.parse(line);
    waiting.get(answer.id)?.(answer);
    waiting.delete(answer.id);
  });
  let next = 0;
  return {
    ask(req) {
      const id = ++next;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        child.stdin.write(`${JSON.stringify({ ...req, id })}\n`);
      });
    },
    close: () => child.stdin.end(),
  };
}

/** `baton lock acquire` as its own process: `{ok, preempted}` or `{ok: false, code, holder}`. */
async function cliAcquire(root, scope, holder, env) {
  const child = spawn(bin, ['lock', 'acquire', '--store', `dir:${root}`, '--env', 'preview', '--scope', scope, '--holder', holder, '--ttl', '60s', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const [status, signal] = await once(child, 'close');
  let e;
  try {
    e = JSON.parse(out);
  } catch {
    throw new Error(`baton lock acquire exited ${status ?? signal} without an envelope: ${out} ${err}`);
  }
  return e.ok ? { ok: true, preempted: e.preempted?.holder ?? null } : { ok: false, code: e.error.code, holder: e.error.lock?.holder ?? null };
}

/** Leaves an expired lock in the cell, written as the original writes it (no epoch) or as baton does. */
function expire(cellDir, asOriginal) {
  mkdirSync(cellDir, { recursive: true });
  const past = Date.now() - 60_000;
  const lock = { holder: 'crashed', acquiredAt: new Date(past).toISOString(), expiresAt: new Date(past + 1000).toISOString() };
  if (!asOriginal) {
    lock.epoch = 1;
    writeFileSync(path.join(cellDir, 'epoch.json'), `${JSON.stringify({ epoch: 1 }, null, 2)}\n`);
  }
  writeFileSync(path.join(cellDir, 'lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
}

/** Checks one round: exactly one winner, the loser told LOCK_HELD naming it, lock.json naming it. */
function judgeRound(cellDir, sides, expired) {
  const winners = Object.entries(sides).filter(([, o]) => o.ok);
  const lock = JSON.parse(readFileSync(path.join(cellDir, 'lock.json'), 'utf8'));
  const problems = [];
  if (winners.length !== 1) problems.push(`${winners.length} holders`);
  for (const [name, o] of Object.entries(sides)) {
    if (o.ok && o.holder !== lock.holder) problems.push(`${name} believes it holds, lock.json names ${lock.holder}`);
    if (!o.ok && (o.code !== 'LOCK_HELD' || o.holder !== lock.holder)) problems.push(`${name} refused ${o.code} naming ${o.holder}`);
    if (o.ok && expired && o.preempted !== 'crashed') problems.push(`${name} took over without naming the expired holder`);
  }
  return problems;
}

/** Runs `rounds` rounds in lanes; `round(lane, i)` returns its problems. Returns the failed rounds. */
async function race(rounds, makeLane, round) {
  const failed = [];
  const per = Math.ceil(rounds / LANES);
  await Promise.all(
    Array.from({ length: LANES }, async (_, l) => {
      const lane = makeLane(l);
      try {
        for (let i = l * per; i < Math.min(rounds, (l + 1) * per); i += 1) {
          const problems = await round(lane, i);
          if (problems.length > 0) {
            failed.push({ round: i, problems });
            console.log(`# round ${i}: ${problems.join('; ')}`);
          }
        }
      } finally {
        lane.close();
      }
    }),
  );
  return failed;
}

test('the native CLI exists', () => assert.ok(existsSync(bin), `no native CLI at ${bin}: run cargo build -p baton-native or set BATON_BIN`));

test(`the original's protocol against \`baton lock acquire\`: ${CLI_ROUNDS} rounds on free and expired scopes, never two holders`, { timeout: 600_000 }, async () => {
  const root = fresh();
  const started = performance.now();
  const failed = await race(
    CLI_ROUNDS,
    () => {
      const s = worker(standin, ['worker']);
      return { s, close: s.close };
    },
    async ({ s }, i) => {
      const scope = `c${i}`;
      const cellDir = path.join(root, 'preview', scope);
      const expired = i % 2 === 1;
      if (expired) expire(cellDir, i % 4 === 1);
      const after = i % 3 === 0 && !expired ? cellDir : path.join(cellDir, 'lock.mutex');
      const delay = i % 4 >= 2 ? { BATON_TEST_STORE_DELAY_MS: '2' } : {};
      const [original, baton] = await Promise.all([
        s.ask({ op: 'acquire', dir: cellDir, holder: `sponson-${i}`, ttlMs: 60_000, after, jitterUs: rand(1500) }),
        cliAcquire(root, scope, `cli-${i}`, delay),
      ]);
      if (process.env.BATON_COMPAT_TRACE) console.log(`# ${i} ${JSON.stringify({ original, baton })}`);
      return judgeRound(cellDir, { original: { ...original, holder: original.ok ? `sponson-${i}` : original.holder }, baton: { ...baton, holder: baton.ok ? `cli-${i}` : baton.holder } }, expired);
    },
  );
  console.log(`# ${CLI_ROUNDS} CLI rounds in ${Math.round(performance.now() - started)} ms`);
  assert.deepEqual(failed.slice(0, 10), [], `${failed.length} of ${CLI_ROUNDS} rounds had a problem`);
});

test(`the original's protocol against the Node package's acquireLock: ${ROUNDS} rounds on free and expired scopes, never two holders`, { timeout: 600_000 }, async () => {
  const root = fresh();
  const started = performance.now();
  const failed = await race(
    ROUNDS,
    () => {
      const s = worker(standin, ['worker']);
      const b = worker(nodeWorker);
      return { s, b, close: () => (s.close(), b.close()) };
    },
    async ({ s, b }, i) => {
      const scope = `n${i}`;
      const cellDir = path.join(root, 'preview', scope);
      const expired = i % 2 === 1;
      if (expired) expire(cellDir, i % 4 === 1);
      const at = Date.now() + 8;
      // Half the rounds start both at one instant; the others start the original when baton holds its mutex.
      const trigger = i % 4 < 2 ? { at, jitterUs: rand(1500) } : { after: path.join(cellDir, 'lock.mutex'), jitterUs: rand(1500) };
      const [original, baton] = await Promise.all([
        s.ask({ op: 'acquire', dir: cellDir, holder: `sponson-${i}`, ttlMs: 60_000, ...trigger }),
        b.ask({ root, env: 'preview', scope, holder: `node-${i}`, ttlMs: 60_000, at, jitterUs: rand(300) }),
      ]);
      return judgeRound(cellDir, { original: { ...original, holder: original.ok ? `sponson-${i}` : original.holder }, baton: { ...baton, holder: baton.ok ? `node-${i}` : baton.holder } }, expired);
    },
  );
  console.log(`# ${ROUNDS} Node rounds in ${Math.round(performance.now() - started)} ms`);
  assert.deepEqual(failed.slice(0, 10), [], `${failed.length} of ${ROUNDS} rounds had a problem`);
});
