// The npm package as a user gets it: `npm pack` in host-node/, installed from the tarball (offline) into a
// fresh project with no Rust toolchain on PATH, loaded with require, import and TypeScript, and its command
// `npx baton-lease run -- CMD` holding the lease: a second one gets LOCK_HELD (exit 3) and the native CLI
// sees the same lock on the same store, and refuses too.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, existsSync, realpathSync, readFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = fileURLToPath(new URL('../../host-node', import.meta.url));
const bin = process.env.BATON_BIN ?? fileURLToPath(new URL('../../target/debug/baton', import.meta.url));
const tsc = path.join(pkgDir, 'node_modules', 'typescript', 'bin', 'tsc');
const fresh = (tag) => realpathSync(mkdtempSync(path.join(os.tmpdir(), `baton-npm-${tag}-`)));
// No cargo, no rustc: the node binary's directory and the system's.
const PATH = [...new Set([path.dirname(process.execPath), '/usr/bin', '/bin'])].join(':');
const env = (extra = {}) => {
  const e = { PATH, HOME: process.env.HOME, npm_config_cache: process.env.npm_config_cache ?? path.join(os.homedir(), '.npm') };
  return { ...e, ...extra };
};

let project;

before(() => {
  const packs = fresh('pack');
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', packs], { cwd: pkgDir, encoding: 'utf8' }).trim().split('\n').pop();
  project = fresh('project');
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', version: '1.0.0', private: true }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', path.join(packs, name)], { cwd: project, env: env() });
});

/** Runs `npx baton-lease ARGS` in the project; `{child, done}` with done resolving {status, envelope, stderr}. */
function npx(args, opts = {}) {
  const child = spawn('npx', ['--offline', 'baton-lease', ...args], { cwd: project, env: env(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = once(child, 'exit').then(([status]) => ({ status, stdout: out, stderr: err, envelope: parse(out) }));
  return { child, done, stderr: () => err };
}

const parse = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};

async function until(what, f, ms = 20_000) {
  const start = Date.now();
  while (!(await f())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('the project has no Rust toolchain on the PATH the tests use', () => {
  assert.throws(() => execFileSync('cargo', ['--version'], { env: env(), stdio: 'ignore' }));
  assert.ok(existsSync(path.join(project, 'node_modules', 'baton-lease', 'pkg', 'baton_node_bg.wasm')));
});

test('the installed package works with require, import and TypeScript', () => {
  const cjs = execFileSync('node', ['-e', "const b = require('baton-lease'); console.log(b.scopeFor('feat/x'), typeof b.withLease, typeof b.gc)"], {
    cwd: project,
    env: env(),
    encoding: 'utf8',
  });
  assert.equal(cjs.trim(), 'branch-feat-x function function');
  const esm = execFileSync('node', ['--input-type=module', '-e', "import { scopeFor, gc } from 'baton-lease'; console.log(scopeFor('x', 4), typeof gc)"], {
    cwd: project,
    env: env(),
    encoding: 'utf8',
  });
  assert.equal(esm.trim(), 'pr-4 function');
  writeFileSync(
    path.join(project, 'check.mts'),
    [
      "import { openStore, withLease, gc, type GcResult, BatonError } from 'baton-lease';",
      "const store = openStore('dir:/tmp/x');",
      "const n: number = await withLease(store, { env: 'preview', scope: 'pr-1' }, async (lease) => lease.epoch);",
      "const r: GcResult = await gc(store, { env: 'preview', openPrs: [1] });",
      'const e: string = new BatonError("USAGE", "m").code;',
      'console.log(n, r.dryRun, e);',
      '',
    ].join('\n'),
  );
  execFileSync('node', [tsc, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', 'check.mts'], {
    cwd: project,
    env: env(),
  });
});

test('npx baton-lease run holds the lease: a second gets LOCK_HELD (exit 3), the CLI sees the same lock', async () => {
  const root = fresh('store');
  const store = ['--store', `dir:${root}`, '--scope', 'pr-7'];
  const flag = path.join(root, 'release-me');
  const holding = npx(['run', ...store, '--', 'sh', '-c', `echo "$BATON_SCOPE $BATON_EPOCH" > ${root}/held; while [ ! -e ${flag} ]; do sleep 0.05; done`]);
  await until('the first run to start its command', () => existsSync(path.join(root, 'held')));
  assert.equal(readFileSync(path.join(root, 'held'), 'utf8').trim(), 'pr-7 1');

  const second = await npx(['run', ...store, '--json', '--', 'true']).done;
  assert.equal(second.status, 3, second.stderr);
  assert.equal(second.envelope.ok, false);
  assert.equal(second.envelope.error.code, 'LOCK_HELD');
  const holder = second.envelope.error.lock.holder;

  const status = JSON.parse(execFileSync(bin, ['lock', 'status', '--store', `dir:${root}`, '--scope', 'pr-7', '--json'], { encoding: 'utf8' }));
  assert.equal(status.lock.holder, holder, JSON.stringify(status));
  assert.equal(status.lock.epoch, 1);
  const cli = spawn(bin, ['run', ...store, '--json', '--', 'true'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  cli.stdout.on('data', (d) => (out += d));
  const [cliStatus] = await once(cli, 'exit');
  assert.equal(cliStatus, 3);
  assert.equal(JSON.parse(out).error.lock.holder, holder);

  writeFileSync(flag, '');
  const first = await holding.done;
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stderr, /baton: running `sh -c .*` under preview\/pr-7 \(epoch 1\)/);
  const after = JSON.parse(execFileSync(bin, ['lock', 'status', '--store', `dir:${root}`, '--scope', 'pr-7', '--json'], { encoding: 'utf8' }));
  assert.equal(after.lock, null, JSON.stringify(after));
});

test('the command and the CLI print the same envelope and exit code for the same run', async () => {
  const root = fresh('same');
  const args = ['--store', `dir:${root}`, '--scope', 'pr-9', '--json', '--', 'sh', '-c', 'exit 4'];
  const node = await npx(['run', ...args]).done;
  const cli = spawn(bin, ['run', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  cli.stdout.on('data', (d) => (out += d));
  const [status] = await once(cli, 'exit');
  assert.equal(node.status, 4);
  assert.equal(status, 4);
  const strip = (e) => ({ ...e, error: { ...e.error, holder: null, lock: null, receipt: { ...e.error.receipt, runId: null } } });
  assert.deepEqual(strip(node.envelope), strip(JSON.parse(out)));
  // Flags mean the same: a duration without a unit is refused by both, exit 2.
  const bad = await npx(['run', '--ttl', '15', '--json', '--', 'true']).done;
  assert.equal(bad.status, 2);
  assert.equal(bad.envelope.error.code, 'USAGE');
  assert.match(bad.envelope.error.message, /`15` needs a unit/);
});

test('flags mean the same to npx baton-lease run and baton run: the same verdict for each command line', async () => {
  const root = fresh('flags');
  const cases = [
    [['--ttl', '90s', '--wait', '--wait-timeout=1s', '--poll-interval', '100ms'], {}, 0, null],
    [['--env', 'production'], {}, 2, 'ENV_NOT_APPROVED'],
    [['--env', 'production', '--approved-by', 'ann'], {}, 0, null],
    [['--env', 'production'], { BATON_APPROVED_BY: 'ann' }, 0, null],
    [['--ttl', '15'], {}, 2, 'USAGE'],
    [['--ttl', '5d'], {}, 2, 'USAGE'],
    [['--wait-timeout', 'soon'], {}, 2, 'USAGE'],
    [['--nope'], {}, 2, 'USAGE'],
    [[], { BATON_CANCEL_GRACE: 'later' }, 2, 'USAGE'],
    [['--cancel-grace', '1s', '--pr', '12'], {}, 0, null],
  ];
  for (const [flags, vars, exit, code] of cases) {
    const args = ['run', '--store', `dir:${root}`, '--scope', 'pr-3', ...flags, '--json', '--', 'true'];
    const node = await npx(args, { env: vars }).done;
    const cli = spawn(bin, args, { env: { ...process.env, ...vars }, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    cli.stdout.on('data', (d) => (out += d));
    const [status] = await once(cli, 'exit');
    const what = `${flags.join(' ')} ${JSON.stringify(vars)}`;
    assert.deepEqual([node.status, node.envelope?.error?.code ?? null], [exit, code], `npx: ${what}\n${node.stderr}`);
    assert.deepEqual([status, JSON.parse(out).error?.code ?? null], [exit, code], `baton: ${what}`);
  }
});

test('under npx baton-lease run, baton-lease ledger records and forgets as baton ledger does', async () => {
  const root = fresh('ledger');
  const out = (name) => path.join(root, name);
  const script = [
    `baton-lease ledger record --adapter neon --key db-a --id a1 --json > ${out('node.json')}`,
    `${bin} ledger record --adapter neon --key db-b --id b1 --json > ${out('cli.json')}`,
    `baton-lease ledger forget --adapter neon --key db-b --json > ${out('forget.json')}`,
    `baton-lease ledger record --adapter neon --key db-c --id c1 --epoch 99 --json > ${out('stale.json')} || echo $? > ${out('stale.status')}`,
  ].join(' && ');
  const r = await npx(['run', '--store', `dir:${root}`, '--scope', 'pr-5', '--', 'sh', '-c', script]).done;
  assert.equal(r.status, 0, r.stderr);
  const node = JSON.parse(readFileSync(out('node.json'), 'utf8'));
  const cli = JSON.parse(readFileSync(out('cli.json'), 'utf8'));
  assert.deepEqual(Object.keys(node), Object.keys(cli));
  assert.deepEqual({ ...node.resource, key: null }, { ...cli.resource, key: null });
  assert.deepEqual(cli.ledger.map((e) => e.key), ['db-a', 'db-b']);
  assert.equal(JSON.parse(readFileSync(out('forget.json'), 'utf8')).forgotten, true);
  // A stale epoch is refused by the store's fence: LOCK_LOST, exit 3.
  assert.equal(readFileSync(out('stale.status'), 'utf8').trim(), '3');
  assert.equal(JSON.parse(readFileSync(out('stale.json'), 'utf8')).error.code, 'LOCK_LOST');
  const list = JSON.parse(execFileSync(bin, ['ledger', 'list', '--store', `dir:${root}`, '--scope', 'pr-5', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(list.owns.map((e) => e.key), ['db-a']);
});
