#!/usr/bin/env node
/**
 * The torture harness: many workers (`baton run` processes and Node processes, mixed) hold leases on the
 * same few scopes of one store and append (scope, holder, epoch, sequence) entries to the scopes' receipts
 * with fenced writes, while faults chosen from a seed hit them: SIGSTOP for longer than the TTL then
 * SIGCONT, SIGKILL mid-run (of the whole process group or of baton alone, orphaning its command), a slow
 * store (dir: BATON_TEST_STORE_DELAY_MS; git: a pre-receive hook that sleeps; etcd: the member paused in
 * short pulses), lost replies
 * (BATON_TEST_LOST_REPLY: the store committed, the worker hears an error). Afterwards the checker
 * (checker.mjs) reads the store's history (dir: the journal the test store keeps; git: each cell ref's
 * commits; etcd: the revision history of the cell keys, `etcd.mjs`, on an etcd of the run's own) and
 * reports violations. The same workload then runs against the baseline a Node user would
 * pick today (proper-lockfile), and both are reported side by side.
 *
 *   node torture/torture.mjs [--profile short|long] [--seed N] [--stores dir,git,etcd] [--no-baseline]
 *                            [--sabotage] [--seconds S] [--workers N] [--json FILE] [--keep]
 *
 * `--sabotage` adds the negative control: the dir store workload once more with the cell mutex switched
 * off (BATON_TEST_UNSAFE_NO_MUTEX), which the checker must catch.
 *
 * Exit 0 when baton shows no violation (whatever the baseline shows) and the sabotaged store (if run)
 * shows some, 1 otherwise, 2 on bad usage.
 * Needs the release CLI built with the test faults (`cargo build --release -p baton-native --features
 * test-faults`, then BATON_BIN=target/release/baton; scripts/test.sh keeps it as target/test-faults/baton, the
 * default here) and the Node package's wasm (scripts/build-wasm.sh). The Node workers add the faults with
 * host-node/test-support/faults.cjs: the published package has none.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HistoryChecker, countByKind } from './checker.mjs';
import { streamDirHistory, streamGitHistory } from './history.mjs';
import { startTortureEtcd, streamEtcdHistory } from './etcd.mjs';
import { rng } from './rng.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

/** The profiles: `short` runs in CI (about a minute and a half in all: the runs go side by side), `long` is for people. */
const PROFILES = {
  short: { seconds: 25, workers: 4, baselineSeconds: 20, baselineStaleMs: 2000 },
  long: { seconds: 300, workers: 6, baselineSeconds: 300, baselineStaleMs: null },
};
/**
 * How long workers use one generation of scopes before the next: receipts only grow (the workload never
 * deletes), so a fresh generation keeps each receipt, and the history that repeats it, small.
 */
const GENERATION_MS = 40_000;
/** The pool of resources every scope's workers try to create (`shared-<k>`): exactly one scope may own each. */
const SHARED_KEYS = 3;

/**
 * The scopes a worker of generation `g` picks from: a branch, its pull request (which inherits it), another
 * branch. Generation 0 is `branch-t1`, `pr-1`, `branch-t2`; later ones add `-g<g>` and PR numbers 1 + 10g.
 */
function contexts(g) {
  const suffix = g === 0 ? '' : `-g${g}`;
  const pr = 1 + 10 * g;
  return [
    { env: 'preview', scope: `branch-t1${suffix}`, branch: `t1${suffix}`, sha: 'a1', pr: null },
    { env: 'preview', scope: `pr-${pr}`, branch: `t1${suffix}`, sha: 'a1', pr },
    { env: 'preview', scope: `branch-t2${suffix}`, branch: `t2${suffix}`, sha: 'b2', pr: null },
  ];
}

/** Which pull request scope inherits which branch scope, over `generations`. */
function successors(generations) {
  const out = {};
  for (let g = 0; g < generations; g++) {
    const [branch, pr] = contexts(g);
    out[branch.scope] = pr.scope;
  }
  return out;
}

function usage(message) {
  process.stderr.write(`torture: ${message}\nUsage: node torture/torture.mjs [--profile short|long] [--seed N] [--stores dir,git,etcd] [--no-baseline] [--sabotage] [--seconds S] [--workers N] [--json FILE] [--keep]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { profile: 'short', seed: null, stores: ['dir', 'git', 'etcd'], baseline: true, sabotage: false, keep: false, seconds: null, workers: null, json: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => argv[++i] ?? usage(`${a} needs a value`);
    if (a === '--profile') opts.profile = value();
    else if (a === '--seed') opts.seed = Number(value());
    else if (a === '--stores') opts.stores = value().split(',').filter(Boolean);
    else if (a === '--no-baseline') opts.baseline = false;
    else if (a === '--sabotage') opts.sabotage = true;
    else if (a === '--keep') opts.keep = true;
    else if (a === '--seconds') opts.seconds = Number(value());
    else if (a === '--workers') opts.workers = Number(value());
    else if (a === '--json') opts.json = value();
    else if (a === '--help' || a === '-h') usage('help');
    else usage(`unknown argument ${a}`);
  }
  if (!PROFILES[opts.profile]) usage(`unknown profile ${opts.profile} (short or long)`);
  if (opts.stores.some((s) => !['dir', 'git', 'etcd'].includes(s))) usage('--stores takes a comma-separated list of dir, git and etcd');
  for (const k of ['seed', 'seconds', 'workers']) {
    if (opts[k] !== null && !(Number.isInteger(opts[k]) && opts[k] >= 0)) usage(`--${k} takes a whole number`);
  }
  return opts;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const note = (line) => process.stderr.write(`torture: ${line}\n`);

/** The events a worker logged (JSON lines), in order. */
function readLog(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

/**
 * Plans one worker from the seed: what runs it, which scope, how many writes, which faults.
 * @param {ReturnType<typeof rng>} r
 */
function planWorker(r, { kinds, ttlMs, store, generation }) {
  const fault = r.pick([
    ['none', 50],
    ['stop', 20],
    ['kill', 15],
    ['kill-leader', 5],
  ]);
  const writes = r.int(3, 12);
  return {
    kind: r.pickUniform(kinds),
    context: r.pickUniform(contexts(generation)),
    writes,
    // Overlapping creates: after some writes, a resource of a small pool every scope may try to create.
    shared: Array.from({ length: writes }, () => (r.chance(0.5) ? r.int(0, SHARED_KEYS - 1) : null)).map((k) => k ?? '-'),
    gapMs: r.int(20, 200),
    lostReply: r.chance(0.35) ? 0.05 : 0,
    delayMs: store === 'dir' && r.chance(0.3) ? 40 : 0,
    fault,
    faultAtMs: r.int(100, 2500),
    stopMs: ttlMs + r.int(300, 1500),
  };
}

/** Starts a worker process (its own process group) for `plan`; resolves its record when it has exited. */
function startWorker(id, plan, env) {
  const log = path.join(env.dir, 'logs', `${id}.log`);
  const stderr = path.join(env.dir, 'logs', `${id}.stderr`);
  const full = { ...plan, log, store: env.spec, ttlMs: env.ttlMs, waitTimeoutMs: 120_000, root: env.baselineRoot, journal: env.journal, staleMs: env.staleMs };
  let cmd;
  let args;
  if (plan.kind === 'cli') {
    const c = plan.context;
    cmd = env.bin;
    args = ['run', '--store', env.spec, '--env', c.env, '--branch', c.branch, '--pr', c.pr === null ? '' : String(c.pr), '--sha', c.sha,
      '--ttl', `${env.ttlMs}ms`, '--wait', '--poll-interval', '100ms', '--wait-timeout', '120s', '--',
      'sh', path.join(here, 'workers', 'cli-writes.sh'), String(plan.writes), String(plan.gapMs), log, plan.shared.join(' ')];
  } else {
    cmd = process.execPath;
    args = [path.join(here, 'workers', plan.kind === 'node' ? 'node-worker.mjs' : 'baseline-worker.mjs'), JSON.stringify(full)];
  }
  const childEnv = {
    ...process.env,
    BATON_BIN: env.bin,
    BATON_TEST_LOST_REPLY: String(plan.lostReply),
    BATON_TEST_STORE_DELAY_MS: String(plan.delayMs),
    BATON_TEST_JOURNAL: env.journal ?? '',
    BATON_TEST_FAULT_LOG: path.join(env.dir, 'faults.log'),
    BATON_TEST_UNSAFE_NO_MUTEX: env.unsafe ? '1' : '',
    BATON_MUTEX_WAIT_MS: '60000',
    TMPDIR: path.join(env.dir, 'tmp'),
    NODE_NO_WARNINGS: '1',
  };
  for (const k of ['BATON_STORE', 'BATON_SCOPE', 'BATON_HOLDER', 'BATON_EPOCH', 'BATON_ENV', 'BATON_CTX_ENV', 'GITHUB_ACTIONS', 'CI']) delete childEnv[k];
  const child = spawn(cmd, args, { env: childEnv, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  const errChunks = [];
  child.stderr.on('data', (c) => errChunks.push(c));
  const record = { id, kind: plan.kind, scope: plan.context.scope, fault: plan.fault, faulted: false, slow: plan.delayMs > 0, pid: child.pid };
  child.on('error', (e) => note(`${id}: cannot start ${cmd}: ${e.message}`));
  const kill = (target, sig) => {
    try {
      process.kill(target, sig);
      return true;
    } catch {
      return false;
    }
  };
  // `group`: the worker's process group and, for `baton run`, its command's own group (baton starts the
  // command as a group leader; cli-writes.sh logs that pgid first thing).
  const signal = (sig, group) => {
    if (!group) return kill(child.pid, sig);
    const cmdGroup = readLog(log).find((e) => e.event === 'pgid')?.pgid;
    const sent = kill(-child.pid, sig);
    if (cmdGroup) kill(-cmdGroup, sig);
    return sent;
  };
  // For the drain bound: kill whatever is left of a hung worker (not part of the report).
  Object.defineProperty(record, 'killAll', { value: () => signal('SIGKILL', true), enumerable: false });
  env.live.add(record);
  if (plan.fault !== 'none') {
    setTimeout(() => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (plan.fault === 'stop') {
        record.faulted = signal('SIGSTOP', true);
        setTimeout(() => signal('SIGCONT', true), plan.stopMs);
      } else if (plan.fault === 'kill') {
        record.faulted = signal('SIGKILL', true);
      } else {
        // The worker alone: `baton run`'s command (or nothing, for Node) is orphaned and goes on.
        record.faulted = signal('SIGKILL', false);
      }
    }, plan.faultAtMs);
  }
  return new Promise((resolve) => {
    child.on('close', (code, sig) => {
      const text = Buffer.concat(errChunks).toString('utf8');
      writeFileSync(stderr, text);
      const events = readLog(log);
      const releaseFailed = /Could not release/.test(text) || events.some((e) => e.event === 'warning' && /Could not release/.test(e.warning));
      const failed = events.find((e) => e.event === 'error');
      Object.assign(record, {
        why: failed ? `${failed.code}: ${failed.message}` : (text.split('\n').find((l) => /^baton: [A-Z_]+:/.test(l)) ?? text.split('\n').filter(Boolean).at(-1) ?? ''),
        exit: code,
        signal: sig,
        holders: [...new Set(events.filter((e) => e.event === 'lease').map((e) => e.holder))],
        acks: events.filter((e) => e.event === 'ack').map((e) => e.key),
        shared: events.filter((e) => e.event === 'shared').length,
        refused: events.filter((e) => e.event === 'refused').length,
        releaseFailed,
      });
      // Not stopped or killed, and not told that a release failed: whatever its exit code, it must not leave
      // a lock (an acquire whose reply was lost is released before the worker hears the failure).
      record.clean = !record.faulted && !releaseFailed && !record.hung;
      env.live.delete(record);
      resolve(record);
    });
  });
}

/** A bare remote whose pre-receive hook sleeps 0-400 ms on each push while the `slow` file exists. */
function makeRemote(dir) {
  const remote = path.join(dir, 'remote.git');
  execFileSync('git', ['init', '--quiet', '--bare', remote]);
  const hook = path.join(remote, 'hooks', 'pre-receive');
  writeFileSync(
    hook,
    `#!/bin/sh\ncat >/dev/null\nif [ -e "${dir}/slow" ]; then\n  n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')\n  echo slow >>"${dir}/slow.log"\n  sleep "$(awk "BEGIN{print ($n % 400) / 1000}")"\nfi\nexit 0\n`,
  );
  chmodSync(hook, 0o755);
  return remote;
}

/**
 * The etcd column's slow store (as the git column's hook that sleeps): while it is on (toggled every 1-4 s),
 * the member is paused (SIGSTOP) for 50-400 ms every 100-600 ms, so that requests wait, pile up and then
 * land together, as on a loaded or stalling server. Its own generator, so the workers' plans stay the
 * seed's. `stop()` ends it with the member running; `pauses()` counts them.
 */
function pulseEtcd(etcd, r) {
  let on = false;
  let pauses = 0;
  let stopped = false;
  const timers = { toggle: null, pulse: null };
  const toggle = () => {
    on = r.chance(0.5);
    timers.toggle = setTimeout(toggle, r.int(1000, 4000));
  };
  const pulse = () => {
    if (!on) {
      timers.pulse = setTimeout(pulse, r.int(100, 600));
      return;
    }
    etcd.pause(0);
    pauses += 1;
    timers.pulse = setTimeout(() => {
      etcd.resume(0);
      if (!stopped) timers.pulse = setTimeout(pulse, r.int(100, 600));
    }, r.int(50, 400));
  };
  toggle();
  pulse();
  return {
    pauses: () => pauses,
    stop() {
      stopped = true;
      clearTimeout(timers.toggle);
      clearTimeout(timers.pulse);
      if (etcd.members[0].paused) etcd.resume(0);
    },
  };
}

/**
 * Runs the workload against one store and checks its history.
 * @returns {Promise<object>} the store's report
 */
async function runStore(store, { seconds, workers, seed, bin, keep = false }) {
  const label = typeof store === 'string' ? store : store.sabotage ? 'dir-sabotaged' : 'proper-lockfile';
  const dir = mkdtempSync(path.join(tmpdir(), `baton-torture-${label}-`));
  for (const d of ['logs', 'tmp']) mkdirSync(path.join(dir, d));
  const r = rng(seed);
  const env = { dir, bin, ttlMs: store === 'git' ? 3000 : 2000, live: new Set() };
  let kinds = ['cli', 'node'];
  let remote = null;
  let etcd = null;
  if (store === 'etcd') {
    etcd = await startTortureEtcd(label);
    env.spec = etcd.spec;
  } else if (store === 'dir' || store.sabotage) {
    env.unsafe = Boolean(store.sabotage);
    env.spec = `dir:${path.join(dir, 'store')}`;
    env.journal = path.join(dir, 'journal.log');
  } else if (store === 'git') {
    remote = makeRemote(dir);
    env.spec = `git:file://${remote}`;
  } else if (!store.sabotage) {
    kinds = ['baseline'];
    env.baselineRoot = path.join(dir, 'store');
    env.journal = path.join(dir, 'journal.log');
    env.staleMs = store.staleMs;
    env.ttlMs = store.staleMs ?? 10_000;
  }
  note(`${label}: ${workers} workers at a time for ${seconds} s (seed ${seed}, TTL ${env.ttlMs} ms, in ${dir})`);
  const started = Date.now();
  const running = new Set();
  const records = [];
  let generations = 1;
  let n = 0;
  let slowToggle = null;
  if (remote) {
    const flip = () => {
      const slow = path.join(dir, 'slow');
      if (r.chance(0.5)) writeFileSync(slow, '');
      else rmSync(slow, { force: true });
      slowToggle = setTimeout(flip, r.int(1000, 4000));
    };
    flip();
  }
  const slowEtcd = etcd ? pulseEtcd(etcd, rng(seed + 7)) : null;
  const progress = setInterval(() => note(`${label}: ${records.length} workers done, ${running.size} running`), 10_000);
  while (Date.now() - started < seconds * 1000) {
    while (running.size < workers) {
      const id = `w${String(++n).padStart(4, '0')}`;
      const generation = Math.floor((Date.now() - started) / GENERATION_MS);
      generations = Math.max(generations, generation + 1);
      const plan = planWorker(r, { kinds, ttlMs: env.ttlMs, store, generation });
      // Without the mutex, races need two transactions in flight at once: widen every window.
      if (env.unsafe) plan.delayMs = 150;
      const p = startWorker(id, plan, env).then((rec) => {
        running.delete(p);
        records.push(rec);
      });
      running.add(p);
    }
    await Promise.race([...running, sleep(250)]);
  }
  clearTimeout(slowToggle);
  slowEtcd?.stop();
  // Every worker ends on its own well within this (its wait is bounded at 120 s): one still running after
  // it is hung, which the report counts as a failure, and is killed so that the harness ends.
  const drainNote = setTimeout(() => note(`${label}: still waiting for ${running.size} workers...`), 60_000);
  const drainBound = setTimeout(() => {
    for (const rec of env.live) {
      rec.hung = true;
      note(`${label}: ${rec.id} is hung; killing it`);
      rec.killAll();
    }
  }, 180_000);
  await Promise.all(running);
  clearTimeout(drainNote);
  clearTimeout(drainBound);
  clearInterval(progress);
  const endMs = Date.now();

  // A grant whose reply was lost names a holder its worker never heard of: attribute it by pid.
  const faultLog = existsSync(path.join(dir, 'faults.log')) ? readFileSync(path.join(dir, 'faults.log'), 'utf8') : '';
  for (const line of faultLog.split('\n')) {
    const [fault, pid, holder] = line.split(' ');
    const w = fault === 'lost-reply' && holder && holder !== '-' ? records.find((x) => x.pid === Number(pid)) : null;
    if (w && !w.holders.includes(holder)) w.holders.push(holder);
  }
  const acks = records.flatMap((w) => w.acks.map((key) => ({ key, worker: w.id })));
  const mode = kinds.includes('baseline') ? 'baseline' : 'baton';
  const checker = new HistoryChecker({ successors: successors(generations), mode });
  const grants = new Set();
  const observe = (cell, state) => {
    if (state.lock?.epoch) grants.add(`${cell} ${state.lock.holder}@${state.lock.epoch}`);
    checker.observe(cell, state);
  };
  if (remote) await streamGitHistory(remote, observe);
  else if (etcd) await streamEtcdHistory(etcd.endpoints, observe).finally(() => etcd.stop());
  else await streamDirHistory(env.journal, observe);
  const violations = checker.finish({ acks, workers: records, endMs, ttlMs: env.ttlMs });
  const report = {
    store: label,
    seed,
    seconds: Math.round((endMs - started) / 1000),
    workers: records.length,
    byKind: Object.fromEntries(kinds.map((k) => [k, records.filter((w) => w.kind === k).length])),
    faults: {
      stop: records.filter((w) => w.fault === 'stop' && w.faulted).length,
      kill: records.filter((w) => w.fault === 'kill' && w.faulted).length,
      killLeader: records.filter((w) => w.fault === 'kill-leader' && w.faulted).length,
      lostReply: faultLog.split('\n').filter((l) => l.startsWith('lost-reply')).length,
      // dir: workers whose store transactions were slowed; git: pushes the hook slowed; etcd: pauses.
      slowStore: remote
        ? (existsSync(path.join(dir, 'slow.log')) ? readFileSync(path.join(dir, 'slow.log'), 'utf8').split('\n').filter(Boolean).length : 0)
        : slowEtcd
          ? slowEtcd.pauses()
          : records.filter((w) => w.slow).length,
    },
    exits: records.reduce((acc, w) => {
      const k = w.signal ?? String(w.exit);
      acc[k] = (acc[k] ?? 0) + 1;
      return acc;
    }, {}),
    acked: acks.length,
    sharedCreated: records.reduce((n, w) => n + (w.shared ?? 0), 0),
    sharedRefused: records.reduce((n, w) => n + (w.refused ?? 0), 0),
    scopes: checker.cells.size,
    states: checker.states,
    grants: grants.size,
    violations: countByKind(violations),
    hung: records.filter((w) => w.hung).map((w) => w.id),
    total: violations.length,
    examples: violations.slice(0, 8),
    // Why workers that were not killed failed: the first `baton:` error line (CLI) or the error event (Node).
    failures: records
      .filter((w) => w.exit !== 0 && w.signal === null)
      .map((w) => ({ worker: w.id, kind: w.kind, exit: w.exit, fault: w.fault, why: w.why })),
    dir,
  };
  // Kept only when baton itself failed, to look into.
  if (!keep && (violations.length === 0 || mode !== 'baton' || env.unsafe)) rmSync(dir, { recursive: true, force: true });
  return report;
}

function printTable(reports) {
  const kinds = Object.keys(reports[0].violations);
  const rows = [
    ['', ...reports.map((r) => r.store)],
    ['workers run', ...reports.map((r) => String(r.workers))],
    ['SIGSTOP > TTL', ...reports.map((r) => String(r.faults.stop))],
    ['SIGKILL (group)', ...reports.map((r) => String(r.faults.kill))],
    ['SIGKILL (leader only)', ...reports.map((r) => String(r.faults.killLeader))],
    ['lost replies', ...reports.map((r) => String(r.faults.lostReply))],
    ['slow store (dir: workers, git: pushes, etcd: pauses)', ...reports.map((r) => String(r.faults.slowStore))],
    ['workers ended (exit code or signal: count)', ...reports.map((r) => Object.entries(r.exits).sort().map(([k, n]) => `${k.replace('SIG', '')}:${n}`).join(' '))],
    ['writes acknowledged', ...reports.map((r) => String(r.acked))],
    ['shared creates: owned / refused (another scope owns it)', ...reports.map((r) => `${r.sharedCreated} / ${r.sharedRefused}`)],
    ['scopes (cells)', ...reports.map((r) => String(r.scopes))],
    ['states checked', ...reports.map((r) => String(r.states))],
    ['lock grants seen', ...reports.map((r) => String(r.grants))],
    ...kinds.map((k) => [`violations: ${k}`, ...reports.map((r) => String(r.violations[k]))]),
    ['violations (total)', ...reports.map((r) => String(r.total))],
    ['workers hung (killed after the drain bound)', ...reports.map((r) => String(r.hung.length))],
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) process.stdout.write(`${row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}\n`);
}

/** Whether `bin` carries the test faults: one lock taken with BATON_TEST_JOURNAL set must be journaled. */
function hasTestFaults(bin) {
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-torture-probe-'));
  try {
    const journal = path.join(dir, 'journal.log');
    const env = { ...process.env, BATON_TEST_JOURNAL: journal, BATON_STORE: `dir:${path.join(dir, 'store')}` };
    for (const k of ['BATON_TEST_UNSAFE_NO_MUTEX', 'BATON_TEST_LOST_REPLY', 'BATON_TEST_STORE_DELAY_MS']) delete env[k];
    execFileSync(bin, ['lock', 'acquire', '--env', 'probe', '--scope', 'probe', '--holder', 'probe', '--json'], { env, stdio: 'ignore' });
    return existsSync(journal);
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const profile = PROFILES[opts.profile];
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
  const seconds = opts.seconds ?? profile.seconds;
  const workers = opts.workers ?? profile.workers;
  const bin = process.env.BATON_BIN ?? path.join(root, 'target', 'test-faults', 'baton');
  const build = '`cargo build --release -p baton-native --features test-faults` and set BATON_BIN=target/release/baton';
  if (!existsSync(bin)) usage(`no baton binary at ${bin}: run ${build}`);
  if (!hasTestFaults(bin)) usage(`${bin} was built without the test faults (it ignores BATON_TEST_JOURNAL): run ${build}`);
  if (!existsSync(path.join(root, 'host-node', 'pkg'))) usage('the Node package has no wasm: run `bash scripts/build-wasm.sh`');
  note(`profile ${opts.profile}, seed ${seed} (rerun the same plan with --seed ${seed})`);
  // The stores, the baseline and the sabotaged control run side by side: each has its own directory,
  // remote or etcd, and the workers mostly wait (on processes, git, etcd, their SIGSTOPs), so together they
  // take as long as the longest, not the sum. Load on the machine can only widen the races the harness
  // looks for; a violation is one whatever the load.
  const runs = opts.stores.map((store, i) => runStore(store, { seconds, workers, seed: seed + i, bin, keep: opts.keep }));
  if (opts.baseline) {
    if (!existsSync(path.join(here, 'node_modules', 'proper-lockfile'))) usage('the baseline needs `npm ci` in torture/');
    const baselineSeconds = opts.seconds ?? profile.baselineSeconds;
    runs.push(runStore({ staleMs: profile.baselineStaleMs }, { seconds: baselineSeconds, workers, seed: seed + 100, bin }));
  }
  if (opts.sabotage) {
    runs.push(runStore({ sabotage: true }, { seconds: Math.min(seconds, 10), workers: workers * 2, seed: seed + 200, bin }));
  }
  const reports = await Promise.all(runs);
  const baton = reports.filter((r) => ['dir', 'git', 'etcd'].includes(r.store));
  printTable(reports);
  for (const r of reports) {
    for (const v of r.examples) note(`${r.store}: ${v.kind}${v.cell ? ` in ${v.cell}` : ''}: ${v.detail}`);
    if (r.total > 0 && baton.includes(r)) note(`${r.store}: files kept in ${r.dir}`);
  }
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify({ profile: opts.profile, seed, reports }, null, 2)}\n`);
  const failed = baton.filter((r) => r.total > 0 || r.hung.length > 0);
  if (failed.length > 0) {
    note(`FAILED: baton violated its promises on ${failed.map((r) => r.store).join(', ')} (seed ${seed})`);
    process.exit(1);
  }
  note(`baton: no violation on ${baton.map((r) => r.store).join(', ')}`);
  const sabotaged = reports.find((r) => r.store === 'dir-sabotaged');
  if (sabotaged && sabotaged.total === 0) {
    note('FAILED: the sabotaged store (no cell mutex) showed no violation: the harness cannot see what it is for');
    process.exit(1);
  }
}

await main();
