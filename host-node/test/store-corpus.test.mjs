// The store corpus (tests/stores/*.json, format in the README there) on every Node store: the dir store,
// the git store on a file:// bare remote, the etcd store on a real etcd of its own, and the git store through a git daemon on a loopback port of its
// own. Each handle is its own store object (a git store: its own working clone and remembered tips), opened
// through openStore with BATON_MUTEX_WAIT_MS as the case gives it. The Rust runner
// (host-native/tests/store_corpus.rs) runs the same files on the native stores.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blockEnv, family, location, mutexContent, peek, place, put, remove, startDaemon } from '../test-store-backend.mjs';
import { startEtcd } from '../test-etcd.mjs';

const require = createRequire(import.meta.url);
const { openStore } = require('../js/dir-store.cjs');
const { call } = require('../js/core.cjs');

const corpusDir = fileURLToPath(new URL('../../tests/stores/', import.meta.url));
const cases = readdirSync(corpusDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ file, ...JSON.parse(readFileSync(path.join(corpusDir, file), 'utf8')) }));

const base = mkdtempSync(path.join(os.tmpdir(), 'baton-store-corpus-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** The version of a snapshot: its state files, canonically ordered. */
const version = (files) => JSON.stringify(Object.keys(files).sort().map((k) => [k, files[k]]));

/** `files` after `changes` (the core's change format). */
function applied(files, changes) {
  const out = { ...files };
  for (const c of changes) {
    if (c.op === 'write') out[c.file] = c.content;
    else delete out[c.file];
  }
  return out;
}

/** `expected` matches `actual`: named keys only for objects, element by element for arrays. */
function matches(expected, actual) {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    return actual !== null && typeof actual === 'object' && Object.entries(expected).every(([k, v]) => matches(v, actual[k] ?? null));
  }
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.length === actual.length && expected.every((e, i) => matches(e, actual[i]));
  return expected === actual;
}

/**
 * Opens a store on `spec` through openStore, with BATON_MUTEX_WAIT_MS set to `wait` and BATON_ETCD_PREFIX to
 * `prefix` (each unset when undefined).
 */
function open(spec, cwd, wait, prefix) {
  const saved = { BATON_MUTEX_WAIT_MS: process.env.BATON_MUTEX_WAIT_MS, BATON_ETCD_PREFIX: process.env.BATON_ETCD_PREFIX };
  const set = (k, v) => (v === undefined ? delete process.env[k] : (process.env[k] = v));
  set('BATON_MUTEX_WAIT_MS', wait);
  set('BATON_ETCD_PREFIX', prefix);
  try {
    return openStore(spec, { cwd });
  } finally {
    for (const [k, v] of Object.entries(saved)) set(k, v);
  }
}

/** Settles `promise` as `{ok: answer}` or `{error}`. */
const settle = (promise) => promise.then((ok) => ({ ok }), (error) => ({ error }));

/** A commit of `changes` if the snapshot is version `on` (any without): `{committed: version}`, `{conflict}` or `{error}`. */
async function commit(store, target, on, changes) {
  let after = null;
  const r = await settle(
    store.transactWith(target, (cell) => {
      if (on !== undefined && version(cell.files) !== on) {
        after = null;
        return { changes: [] };
      }
      after = version(applied(cell.files, changes));
      return { changes };
    }),
  );
  if (r.error) return r;
  return after === null ? { conflict: true } : { committed: after };
}

/** One core cell operation through the store (`readOnly`: its read path). */
function op(store, target, { op: name, input = {}, readOnly }) {
  return settle(readOnly ? store.read(target, name, input) : store.transact(target, name, input));
}

/**
 * Runs one case on `loc`, its handles made by `opener(spec, cwd, wait)`; returns the number of steps, or
 * throws with the step that did not match.
 */
async function runCase(c, loc, cwd, opener = open) {
  const handles = new Map();
  const versions = new Map();
  const named = (v) => {
    assert.ok(versions.has(v), `no version named ${v}`);
    return versions.get(v);
  };
  const handle = (name) => {
    if (!handles.has(name)) handles.set(name, opener(loc.spec, cwd, undefined, loc.prefix));
    return handles.get(name);
  };
  const cellOf = (step) => ({ env: step.env ?? c.cell?.env ?? 'preview', scope: step.scope ?? c.cell?.scope ?? 'pr-1' });
  const where = (step) => {
    const { env, scope } = cellOf(step);
    return place(call('cell-path', { env, scope: step.raw === undefined ? scope : 'x' }), step.raw);
  };
  const check = (step, r) => {
    if (step.expectError !== undefined) {
      assert.ok(r.error, `expected ${step.expectError}, got ${JSON.stringify(r)}`);
      assert.equal(r.error.code, step.expectError, r.error.message);
      if (step.expectMessage !== undefined) assert.ok(r.error.message.includes(step.expectMessage), r.error.message);
      return;
    }
    if (r.error) throw r.error;
    if (step.do === 'commit') {
      assert.equal(r.committed !== undefined ? 'committed' : 'conflict', step.expect);
      if (step.as !== undefined) versions.set(step.as, r.committed);
    } else if (step.do === 'list') {
      assert.deepEqual(r.ok, step.expect);
    } else if (step.expect !== undefined) {
      assert.ok(matches(step.expect, r.ok), `answered ${JSON.stringify(r.ok)}`);
    }
  };
  try {
    for (const [i, step] of c.steps.entries()) {
      const target = cellOf(step);
      const name = step.handle ?? 'a';
      try {
        switch (step.do) {
          case 'open': {
            let r;
            try {
              handles.set(name, opener(loc.spec, cwd, step.mutexWaitMs, loc.prefix));
              r = { ok: {} };
            } catch (error) {
              r = { error };
            }
            check(step, r);
            break;
          }
          case 'load': {
            const files = await handle(name).readWith(target, (cell) => cell.files);
            const want = step.expect?.files;
            if (want !== undefined) {
              assert.deepEqual(Object.keys(files).sort(), Object.keys(want).sort(), JSON.stringify(files));
              for (const [k, v] of Object.entries(want)) if (v !== null) assert.equal(files[k], v, k);
            }
            const v = version(files);
            const expectVersion = step.expect?.version ?? {};
            if (expectVersion.sameAs !== undefined) assert.equal(v, named(expectVersion.sameAs), `not ${expectVersion.sameAs}`);
            if (expectVersion.changedFrom !== undefined) assert.notEqual(v, named(expectVersion.changedFrom));
            if (step.as !== undefined) versions.set(step.as, v);
            break;
          }
          case 'commit':
            check(step, await commit(handle(name), target, step.on === undefined ? undefined : named(step.on), step.changes));
            break;
          case 'race': {
            const racers = Object.entries(step.writers ?? step.ops);
            const on = step.on === undefined ? undefined : named(step.on);
            const outcomes = await Promise.all(
              racers.map(([h, what]) => (step.writers ? commit(handle(h), target, on, what) : op(handle(h), target, what))),
            );
            const counts = {};
            for (const o of outcomes) {
              const key = o.error ? o.error.code : o.committed !== undefined ? 'committed' : o.conflict ? 'conflict' : 'ok';
              counts[key] = (counts[key] ?? 0) + 1;
              if (o.committed !== undefined && step.as !== undefined) versions.set(step.as, o.committed);
            }
            assert.deepEqual(counts, step.expect);
            break;
          }
          case 'op':
            check(step, await op(handle(name), target, step));
            break;
          case 'list':
            check(step, await settle(handle(name).list(step.env ?? target.env)));
            break;
          case 'put': {
            const files = Object.entries(step.files).map(([k, v]) => [k, typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v.hex, 'hex')]);
            put(loc, where(step), files);
            break;
          }
          case 'remove':
            remove(loc, where(step));
            break;
          case 'peek':
            assert.equal(peek(loc, where(step), step.file), step.expect);
            break;
          case 'mutex':
            put(loc, where(step), [['lock.mutex', Buffer.from(mutexContent(step.owner), 'utf8')]]);
            break;
          case 'block-env':
            blockEnv(loc, where(step));
            break;
          default:
            throw new Error(`unknown step ${step.do}`);
        }
      } catch (e) {
        e.message = `${c.file} step ${i} (${JSON.stringify(step)}): ${e.message}`;
        throw e;
      }
    }
  } finally {
    for (const h of handles.values()) await h.close();
  }
  return c.steps.length;
}

/** Runs every case on one kind of backend, each case on a fresh store under `dir`; reports the counts. */
async function runCorpus(t, kind, { port, dir = mkdtempSync(path.join(base, `${kind}-`)) } = {}) {
  let [ran, steps] = [0, 0];
  const skipped = [];
  for (const [n, c] of cases.entries()) {
    const reason = c.skip?.[family(kind)];
    if (reason !== undefined) {
      skipped.push(`${c.file} (${reason})`);
      continue;
    }
    const cwd = path.join(dir, `cwd-${n}`);
    mkdirSync(cwd, { recursive: true });
    steps += await runCase(c, location(kind, dir, n, port), cwd);
    ran += 1;
  }
  t.diagnostic(`store corpus, Node ${kind}: ${ran} cases, ${steps} steps; skipped: ${JSON.stringify(skipped)}`);
  assert.ok(ran >= 7, 'the corpus was not found');
}

test('the Node dir store keeps the store contract', (t) => runCorpus(t, 'dir'));

test('the Node git store keeps the store contract over file://', (t) => runCorpus(t, 'git-file'));

test('the Node git store keeps the store contract over git daemon', async (t) => {
  const daemonBase = mkdtempSync(path.join(base, 'daemon-'));
  const daemon = await startDaemon(daemonBase);
  try {
    // The daemon serves the case remotes, which the run creates under its base path.
    await runCorpus(t, 'git-daemon', { port: daemon.port, dir: daemonBase });
  } finally {
    await daemon.stop();
  }
});

test('the Node etcd store keeps the store contract on a real etcd', async (t) => {
  const etcd = await startEtcd('corpus-node');
  try {
    await runCorpus(t, 'etcd', { port: etcd.members[0].client });
    // The control on etcd too: without its compare-and-swap the corpus fails where it must.
    const c = cases.find((x) => x.file === 'conflicts.json');
    const e = await runCase(c, location('etcd', base, 999, etcd.members[0].client), base, withoutCompareAndSwap).then(
      () => assert.fail('etcd: the corpus passed a store without compare-and-swap'),
      (err) => err,
    );
    assert.match(e.message, /^conflicts\.json step 3 /, `etcd: ${e.message}`);
  } finally {
    await etcd.stop();
  }
});

test('the Node dir store raises I/O failures as the core classifies them', async () => {
  const { transact } = require('../js/dir-store.cjs');
  const root = mkdtempSync(path.join(base, 'errno-'));
  for (const [errno, code] of [
    ['EACCES', 'STORE_PERMISSION'],
    ['EPERM', 'STORE_PERMISSION'],
    ['EROFS', 'STORE_PERMISSION'],
    ['ENOSPC', 'STORE_REJECTED'],
    ['EDQUOT', 'STORE_REJECTED'],
    ['ENOTDIR', 'USAGE'],
    ['EIO', 'INTERNAL'],
  ]) {
    const detail = `${errno}: failed, open '/s/lock.json'`;
    const failing = () => {
      throw Object.assign(new Error(detail), { code: errno, path: '/s/lock.json' });
    };
    const e = await transact(root, { env: 'preview', scope: 'pr-1' }, failing).then(() => assert.fail('resolved'), (err) => err);
    const want = call('io-error', { errno, what: 'The dir store failed', detail });
    assert.deepEqual([e.code, e.message, e.details.errno], [code, want.message, errno]);
  }
});

test('the Node git store runs git without the caller repository variables the core names', async () => {
  const { gitEnv } = require('../js/git-run.cjs');
  const { remove, set } = call('git-env', {});
  const saved = { ...process.env };
  Object.assign(process.env, Object.fromEntries(remove.map((n) => [n, `/nonexistent/${n}`])), { LC_ALL: 'fr_FR.UTF-8' });
  try {
    const env = gitEnv();
    for (const name of remove) assert.equal(env[name], undefined, name);
    for (const [k, v] of Object.entries(set)) assert.equal(env[k], v, k);
    // And a store works from such an environment (a script run by a git hook, or in a worktree).
    const remote = path.join(mkdtempSync(path.join(base, 'scrub-')), 'remote.git');
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['init', '-q', '--bare', remote], { env: saved });
    const store = openStore(`git:file://${remote}`, { cwd: base });
    try {
      const { lock } = await store.acquireLock({ env: 'preview', scope: 'scrub', holder: 'a', ttlMs: 60_000 });
      assert.equal(lock.holder, 'a');
    } finally {
      await store.close();
    }
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
});

/**
 * A store without compare-and-swap, for the control below: it decides on the snapshot it loaded last (as a
 * store that commits "on the version it saw" without checking would) and commits whatever that decided.
 */
function withoutCompareAndSwap(spec, cwd, wait, prefix) {
  const store = open(spec, cwd, wait, prefix);
  const seen = new Map();
  const key = ({ env, scope }) => `${env}/${scope}`;
  const readWith = store.readWith.bind(store);
  const transactWith = store.transactWith.bind(store);
  store.readWith = (target, decide) =>
    readWith(target, (cell, nowMs) => {
      seen.set(key(target), cell);
      return decide(cell, nowMs);
    });
  store.transactWith = (target, decide) => {
    const stale = seen.get(key(target));
    return transactWith(target, (cell, nowMs) => {
      const answer = decide(stale ?? cell, nowMs);
      return answer;
    });
  };
  return store;
}

test('control: the corpus fails a store that commits without compare-and-swap', async () => {
  const c = cases.find((x) => x.file === 'conflicts.json');
  for (const kind of ['dir', 'git-file']) {
    const dir = mkdtempSync(path.join(base, `control-${kind}-`));
    const e = await runCase(c, location(kind, dir, 0), dir, withoutCompareAndSwap).then(
      () => assert.fail(`${kind}: the corpus passed a store without compare-and-swap`),
      (err) => err,
    );
    assert.match(e.message, /^conflicts\.json step 3 /, `${kind}: ${e.message}`);
  }
});
