// The backends of the store corpus (tests/stores) for the Node runner, and what the runner does to them
// behind every handle's back (put, remove, peek, mutex, block-env): plain files for the dir store, plumbing
// on the bare remote for the git stores (a local directory for both file:// and git daemon), etcdctl for the
// etcd store (each case under a key prefix of its own on one etcd). Outside test/,
// so the test runner does not count it as a test file. The Rust runner's twin: host-native/tests/store_corpus/backend.rs.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import { etcdctl } from './test-etcd.mjs';

const PREFIX = 'refs/heads/baton-receipts';
const IDENT = ['-c', 'user.name=corpus', '-c', 'user.email=corpus@localhost', '-c', 'commit.gpgsign=false'];

/** Runs git on the bare repository `gitDir`; throws unless it succeeds; its stdout as text. */
function git(gitDir, args, { input, env } = {}) {
  return execFileSync('git', [...IDENT, '--git-dir', gitDir, ...args], {
    input,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  }).toString('utf8');
}

/** The tip of `ref` in `gitDir`, or null. */
function tip(gitDir, ref) {
  const r = spawnSync('git', ['--git-dir', gitDir, 'rev-parse', '--verify', '-q', ref]);
  return r.status === 0 ? r.stdout.toString('utf8').trim() : null;
}

/** The family a case's `skip` names. */
export const family = (kind) => (kind === 'dir' || kind === 'etcd' ? kind : 'git');

/**
 * A fresh store for case number `n` under `base`: `{kind, spec, path}` (the dir store's root or the bare
 * remote). With `port`, the git remote is served by a git daemon on 127.0.0.1.
 */
export function location(kind, base, n, port) {
  if (kind === 'etcd') {
    // `port` is the etcd's client port; the case's keys live under a prefix of its own.
    const endpoint = `http://127.0.0.1:${port}`;
    return { kind, spec: `etcd:${endpoint}`, path: base, endpoint, prefix: `/corpus-node-${process.pid}-${n}/` };
  }
  if (kind === 'dir') {
    const root = path.join(base, `case-${n}`, 'store');
    return { kind, spec: `dir:${root}`, path: root };
  }
  const name = `remote-${n}.git`;
  const remote = path.join(base, name);
  execFileSync('git', ['init', '-q', '--bare', remote]);
  return { kind, spec: port ? `git:git://127.0.0.1:${port}/${name}` : `git:file://${remote}`, path: remote };
}

/**
 * Where a cell lives: `{dir, ref}` from the core's `cell-path` answer `paths` (of `env/scope`, or of `env/x`
 * with `raw`: the entry `raw`, taken as both the directory name and the ref segment, in env).
 */
export function place(paths, raw) {
  if (raw === undefined) return { dir: paths.dir, ref: `${PREFIX}/${paths.ref}` };
  return { dir: `${paths.dir.split('/')[0]}/${raw}`, ref: `${PREFIX}/${paths.ref.split('/')[0]}/${raw}` };
}

/** Writes `files` (`[name, Buffer]`) into the cell at `at`. */
export function put(loc, at, files) {
  if (loc.kind === 'etcd') {
    for (const [name, bytes] of files) etcdOk(loc, ['put', `${loc.prefix}${at.dir}/${name}`], bytes);
    return;
  }
  if (loc.kind === 'dir') {
    const dir = path.join(loc.path, at.dir);
    mkdirSync(dir, { recursive: true });
    for (const [name, bytes] of files) writeFileSync(path.join(dir, name), bytes);
    return;
  }
  const env = { GIT_INDEX_FILE: path.join(loc.path, 'corpus.index') };
  const parent = tip(loc.path, at.ref);
  git(loc.path, parent ? ['read-tree', parent] : ['read-tree', '--empty'], { env });
  for (const [name, bytes] of files) {
    const blob = git(loc.path, ['hash-object', '-w', '--stdin'], { input: bytes }).trim();
    git(loc.path, ['update-index', '--add', '--cacheinfo', `100644,${blob},${at.dir}/${name}`], { env });
  }
  const tree = git(loc.path, ['write-tree'], { env }).trim();
  const commit = git(loc.path, ['commit-tree', tree, '-m', 'store corpus: put', ...(parent ? ['-p', parent] : [])]).trim();
  git(loc.path, ['update-ref', at.ref, commit]);
  rmSync(env.GIT_INDEX_FILE, { force: true });
}

/** Deletes the cell at `at` (a dir store's directory, a git store's ref). */
export function remove(loc, at) {
  if (loc.kind === 'etcd') return void etcdOk(loc, ['del', '--prefix', `${loc.prefix}${at.dir}/`]);
  if (loc.kind === 'dir') rmSync(path.join(loc.path, at.dir), { recursive: true });
  else git(loc.path, ['update-ref', '-d', at.ref]);
}

/** The text of `file` of the cell at `at`, or null. */
export function peek(loc, at, file) {
  if (loc.kind === 'etcd') {
    // etcdctl prints the value and a newline; nothing for an absent key.
    const out = etcdOk(loc, ['get', `${loc.prefix}${at.dir}/${file}`, '--print-value-only']);
    return out.endsWith('\n') ? out.slice(0, -1) : null;
  }
  if (loc.kind === 'dir') {
    const p = path.join(loc.path, at.dir, file);
    return existsSync(p) ? readFileSync(p).toString('utf8') : null;
  }
  const t = tip(loc.path, at.ref);
  if (t === null) return null;
  const r = spawnSync('git', ['--git-dir', loc.path, 'cat-file', 'blob', `${t}:${at.dir}/${file}`]);
  return r.status === 0 ? r.stdout.toString('utf8') : null;
}

/** Runs etcdctl on the case's etcd; throws unless it succeeds; its stdout. */
function etcdOk(loc, args, input) {
  const r = etcdctl(loc.endpoint, args, input);
  if (r.status !== 0) throw new Error(`etcdctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Dir stores: a plain file where the directory of the env of `at` should be. */
export function blockEnv(loc, at) {
  mkdirSync(loc.path, { recursive: true });
  writeFileSync(path.join(loc.path, at.dir.split('/')[0]), 'not a directory\n');
}

/** Field 22 of /proc/<pid>/stat, or '1' for a process that is gone. */
function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[19];
  } catch {
    return '1';
  }
}

/** A lock.mutex (docs/dir-store.md) of a process that has exited, of this process, or not JSON at all. */
export function mutexContent(owner) {
  if (owner === 'garbage') return 'left by something else\n';
  if (owner !== 'live' && owner !== 'dead') throw new Error(`unknown mutex owner ${owner}`);
  const pid = owner === 'live' ? process.pid : spawnSync('true').pid;
  return `${JSON.stringify({ pid, start: startTime(pid), host: os.hostname(), token: '00c0ffee00c0ffee' })}\n`;
}

/** A git daemon serving `base` on a loopback port of its own: `{port, stop()}`. */
export async function startDaemon(base) {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  const child = spawn(
    'git',
    ['daemon', '--export-all', '--enable=receive-pack', '--reuseaddr', '--listen=127.0.0.1', `--base-path=${base}`, `--port=${port}`],
    { stdio: 'ignore' },
  );
  const started = Date.now();
  for (;;) {
    const up = await new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() - started > 10_000) {
      child.kill();
      throw new Error('git daemon did not start');
    }
    await sleep(20);
  }
  return {
    port,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill();
        await once(child, 'exit');
      }
    },
  };
}
