// Issue 12: the npm package as users get it ignores every BATON_TEST_* variable. The package is packed
// (`npm pack`) and installed into a fresh temporary project; there, with every fault variable set to a value
// that breaks the store in the test build (every committed reply lost, a journal, a slow store, the cell
// mutex sabotaged), a lock is taken as without them, nothing is journaled, and two holders racing for one
// scope still exclude each other. The control runs the same race through the repository's test support
// (test-support/faults.cjs), where the variables do break it, so the race would see a fault that leaked
// into the package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, existsSync, rmSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const fresh = (name) => realpathSync(mkdtempSync(path.join(os.tmpdir(), `baton-${name}-`)));
const npm = (args, cwd) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' });

/** One acquire per process: prints `{ok, code?}`. `faulty` wraps the store with the test support. */
const acquireScript = (entry, faulty) => `
const { openStore } = require(${JSON.stringify(entry)});
${faulty ? `const { withFaults } = require(${JSON.stringify(path.join(pkgDir, 'test-support', 'faults.cjs'))});` : 'const withFaults = (s) => s;'}
const [store, scope, holder] = process.argv.slice(2);
withFaults(openStore(store)).acquireLock({ env: 'preview', scope, holder, ttlMs: 60000 })
  .then(() => console.log(JSON.stringify({ ok: true })), (e) => console.log(JSON.stringify({ ok: false, code: e.code })));
`;

/** Every fault variable, set to break things (files in `dir`). */
const faultEnv = (dir, lostReplies) => ({
  ...process.env,
  BATON_TEST_LOST_REPLY: lostReplies ? '1' : '',
  BATON_TEST_JOURNAL: path.join(dir, 'journal.log'),
  BATON_TEST_FAULT_LOG: path.join(dir, 'faults.log'),
  BATON_TEST_STORE_DELAY_MS: '300',
  BATON_TEST_UNSAFE_NO_MUTEX: '1',
});

function run(script, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolve({ ...JSON.parse(out), stderr: err });
      } catch {
        reject(new Error(`no answer from ${script}: ${out}${err}`));
      }
    });
  });
}

/** Races two holders for fresh scopes of `store`, `rounds` times; returns how many rounds both got the lock. */
async function bothHeld(script, store, env, rounds) {
  let both = 0;
  for (let r = 0; r < rounds; r++) {
    const answers = await Promise.all(['a', 'b'].map((h) => run(script, [store, `race-${r}`, `holder-${h}`], env)));
    for (const a of answers) if (!a.ok) assert.equal(a.code, 'LOCK_HELD', JSON.stringify(a));
    if (answers.every((a) => a.ok)) both += 1;
  }
  return both;
}

test('the packed package ignores every BATON_TEST_* variable', { timeout: 120_000 }, async () => {
  const dir = fresh('packed');
  try {
    const [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], pkgDir));
    const files = packed.files.map((f) => f.path);
    assert.ok(files.includes('js/index.cjs'), files.join(' '));
    assert.deepEqual(files.filter((f) => /fault|test-support/.test(f)), [], 'test faults are in the package');
    const project = path.join(dir, 'project');
    execFileSync('mkdir', [project]);
    writeFileSync(path.join(project, 'package.json'), '{"name":"probe","private":true}\n');
    npm(['install', '--offline', path.join(dir, packed.filename)], project);
    const script = path.join(project, 'acquire.cjs');
    writeFileSync(script, acquireScript('baton-lease', false));
    const store = `dir:${path.join(dir, 'store')}`;
    const env = faultEnv(dir, true);
    // A lost reply is certain in the test build: this acquire would fail although it committed.
    const one = await run(script, [store, 'one', 'me'], env);
    assert.deepEqual({ ok: one.ok, code: one.code }, { ok: true, code: undefined }, one.stderr);
    assert.doesNotMatch(one.stderr, /BatonTestFault|test-only/);
    for (const f of ['journal.log', 'faults.log', 'store/preview/one/.journal-last']) {
      assert.equal(existsSync(path.join(dir, f)), false, `${f} was written: the package reads BATON_TEST_*`);
    }
    assert.equal(await bothHeld(script, store, env, 6), 0, 'two holders held one scope at once');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('control: the same variables break the store through the test support', { timeout: 120_000 }, async () => {
  const dir = fresh('faulty');
  try {
    const script = path.join(dir, 'acquire.cjs');
    writeFileSync(script, acquireScript(path.join(pkgDir, 'js', 'index.cjs'), true));
    const both = await bothHeld(script, `dir:${path.join(dir, 'store')}`, faultEnv(dir, false), 6);
    assert.ok(both > 0, 'the sabotaged store never let two holders in: the race cannot see it');
    assert.ok(existsSync(path.join(dir, 'journal.log')), 'the test support journaled nothing');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
