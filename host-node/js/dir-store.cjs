'use strict';
/**
 * The dir store (`dir:<path>`, docs/dir-store.md): one directory per cell, one mutex-protected transaction
 * per operation. The core makes every decision; this file loads snapshots and commits the changes.
 */
const fs = require('node:fs/promises');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { BatonError } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { takeMutex, releaseMutex, DEFAULT_WAIT_MS } = require('./mutex.cjs');
const { repoRoot } = require('./git.cjs');
const { CellStore } = require('./cell-store.cjs');
const faults = require('./faults.cjs');

/**
 * A BatonError for a failed file operation, classified as the native host does: access denied or a read-only
 * file system is STORE_PERMISSION, a full disk STORE_REJECTED, a file where a directory should be USAGE,
 * anything else INTERNAL. Every write is a temp file renamed over its target: a failed one replaces nothing.
 */
function ioError(e) {
  if (e instanceof BatonError) return e;
  const errno = e && e.code;
  const [code, fix] = ['EACCES', 'EPERM', 'EROFS'].includes(errno)
    ? ['STORE_PERMISSION', ' The store must be readable and writable by this user: fix its permissions or mount, or choose another store (BATON_STORE). Nothing was changed.']
    : ['ENOSPC', 'EDQUOT'].includes(errno)
      ? ['STORE_REJECTED', " The store's file system is full: free space there and re-run. No file was replaced; the previous content is intact."]
      : errno === 'ENOTDIR'
        ? ['USAGE', ' A path inside the store is a file, not a directory: point the store (BATON_STORE) at a directory, or move the file away.']
        : ['INTERNAL', ''];
  return hostError(code, `The dir store failed: ${e && e.message ? e.message : String(e)}.${fix}`, { errno, path: e && e.path }, e);
}

/**
 * Creates `dir` and its missing parents, owner only (0700). A recursive mkdir reports ENOENT where a parent
 * cannot be created (a read-only file system, no permission): the first missing parent is then created on
 * its own, which fails with the real reason (EROFS, EACCES) for the caller to classify.
 */
async function mkdirOwnerOnly(dir) {
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
    let missing = dir;
    while (path.dirname(missing) !== missing && !(await fs.stat(path.dirname(missing)).then(() => true, () => false))) {
      missing = path.dirname(missing);
    }
    await fs.mkdir(missing, { mode: 0o700 });
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  }
}

/** Reads the state files that exist, as UTF-8 (invalid bytes become U+FFFD, which the core reports). */
async function loadFiles(cellDir) {
  const files = {};
  for (const name of call('cell-files', {})) {
    try {
      files[name] = (await fs.readFile(path.join(cellDir, name))).toString('utf8');
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
  }
  return files;
}

/** Commits a change set in order (temp file, fsync, rename; unlink), then fsyncs the cell directory. */
async function applyChanges(cellDir, changes) {
  for (const change of changes) {
    if (typeof change.file !== 'string' || !/^[^/\\.][^/\\]*$/.test(change.file)) {
      throw new Error(`the core asked for a change outside the cell: ${JSON.stringify(change)}`);
    }
    const target = path.join(cellDir, change.file);
    if (change.op === 'write') {
      const tmp = `${target}.${process.pid}.${randomBytes(8).toString('hex')}.tmp`;
      try {
        // Owner only (0600), in owner-only directories (0700): receipts name what a scope owns.
        const fh = await fs.open(tmp, 'wx', 0o600);
        try {
          await fh.writeFile(change.content, 'utf8');
          await fh.sync();
        } finally {
          await fh.close();
        }
        await fs.rename(tmp, target);
      } catch (e) {
        await fs.unlink(tmp).catch(() => {});
        throw e;
      }
    } else if (change.op === 'delete') {
      await fs.unlink(target).catch((e) => {
        if (e.code !== 'ENOENT') throw e;
      });
    } else {
      throw new Error(`unknown change ${JSON.stringify(change)}`);
    }
  }
  if (changes.length > 0) {
    // Best effort, as in the native host: some file systems refuse to fsync a directory.
    const dir = await fs.open(cellDir, 'r').catch(() => null);
    await dir?.sync().catch(() => {});
    await dir?.close();
  }
}

/**
 * One transaction on the cell `env/scope` of the store at `root`: take the cell mutex, load the snapshot,
 * read the clock, ask `decide(cell, nowMs)` (a core call), commit the answer's `changes`, release the mutex
 * on every path. Returns the answer. Every cell operation, fenced writes included, goes through here.
 * @param {string} root
 * @param {{env: string, scope: string, waitMs?: number}} target
 * @param {(cell: {env: string, scope: string, files: Record<string, string>}, nowMs: number) => any} decide
 */
async function transact(root, { env, scope, waitMs }, decide) {
  const cellDir = path.join(root, call('cell-path', { env, scope }).dir);
  let mutex;
  try {
    await mkdirOwnerOnly(cellDir);
    if (!faults.unsafeNoMutex) mutex = await takeMutex(cellDir, { env, scope, waitMs });
    const cell = { env, scope, files: await loadFiles(cellDir) };
    // Test-only (BATON_TEST_JOURNAL): the cell's history, see faults.cjs.
    const journal = faults.journaling ? { label: path.relative(root, cellDir), names: call('cell-files', {}) } : null;
    if (journal) await faults.journalLoaded(journal.label, cellDir, cell.files, journal.names);
    const answer = decide(cell, Date.now());
    await faults.slowStore();
    const changes = answer.changes ?? [];
    await applyChanges(cellDir, changes);
    if (journal && changes.length > 0) await faults.journalCommitted(journal.label, cellDir, journal.names);
    return answer;
  } catch (e) {
    throw ioError(e);
  } finally {
    if (mutex) await releaseMutex(mutex).catch(() => {});
  }
}

/** The wait bound for a mutex: the option, else BATON_MUTEX_WAIT_MS, else 30 s. */
function waitBound(option) {
  if (option !== undefined) return option;
  const fromEnv = Number(process.env.BATON_MUTEX_WAIT_MS);
  return process.env.BATON_MUTEX_WAIT_MS && Number.isFinite(fromEnv) && fromEnv >= 0 ? fromEnv : DEFAULT_WAIT_MS;
}

/**
 * A dir store. Obtain one with `openStore`; every method is one transaction on one cell, and every method
 * goes through `transact`, so a wrapper that overrides `transact` (to add latency or failures in tests, or
 * logging) sees every transaction, the lease's included.
 */
class DirStore extends CellStore {
  constructor(root, waitMs) {
    super();
    /** The kind of store. */
    this.kind = 'dir';
    /** The store's root directory. */
    this.path = root;
    /** How long a transaction waits for a cell mutex held by a live process. */
    this.mutexWaitMs = waitMs;
  }

  /**
   * One transaction on the cell `{env, scope}`: takes the cell mutex, loads the cell, reads the wall clock,
   * calls core operation `op` with `request` plus `cell` and `nowMs`, commits the answer's `changes` and
   * releases the mutex. Resolves with the core's answer; rejects with its refusal (a BatonError).
   * @param {{env: string, scope: string}} target
   * @param {string} op a cell operation: lock-acquire, lock-renew, lock-release, lock-read, lock-break,
   *   fence-check, fenced-write, and the ownership ones (run-begin, run-finish, ledger-*, handover,
   *   destroy-plan, scope-status)
   * @param {object} [request] the request without `cell` and `nowMs`
   */
  transact({ env, scope }, op, request = {}) {
    return transact(this.path, { env, scope, waitMs: this.mutexWaitMs }, (cell, nowMs) =>
      call(op, { ...request, cell, nowMs }),
    ).then(faults.reply);
  }

  /**
   * A read-only operation on the cell without the mutex (every file is replaced by an atomic rename, so a
   * reader never sees half a file) and without creating its directory: loads the cell, adds `cell` and
   * `nowMs`, calls core operation `op`. For `scope-status` and the like; an answer with changes is refused.
   * @param {{env: string, scope: string}} target
   * @param {string} op
   * @param {object} [request]
   */
  async read({ env, scope }, op, request = {}) {
    const cellDir = path.join(this.path, call('cell-path', { env, scope }).dir);
    let files;
    try {
      files = await loadFiles(cellDir);
    } catch (e) {
      throw ioError(e);
    }
    const answer = call(op, { ...request, cell: { env, scope, files }, nowMs: Date.now() });
    if (Array.isArray(answer.changes) && answer.changes.length > 0) {
      throw hostError('INTERNAL', `\`${op}\` is not a read-only operation; use transact`, { op });
    }
    return answer;
  }

  /**
   * The scopes of environment `env` that have a cell in this store, sorted by scope, each with the text of
   * its `latest.json` (null when it has none): what the core's ownership operations take as `others`.
   * Directory names are decoded by the core (`scope-names`: `=hex` names, anything that is not a scope
   * skipped); `_locks` (parent-object locks) is never a scope. Reads without the mutex.
   * @param {string} env
   * @returns {Promise<{scope: string, text: string | null}[]>}
   */
  async list(env) {
    const envDir = path.join(this.path, call('cell-path', { env, scope: 'x' }).dir.split('/')[0]);
    let entries;
    try {
      entries = await fs.readdir(envDir, { withFileTypes: true });
    } catch (e) {
      if (e.code === 'ENOENT') return [];
      throw ioError(e);
    }
    const dirs = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
    const { scopes } = call('scope-names', { dirs });
    const listed = [];
    for (const [i, dir] of dirs.entries()) {
      const scope = scopes[i];
      if (typeof scope !== 'string' || scope === '_locks') continue;
      // Only the directory a transaction on that scope would use (not a second spelling of the same name).
      if (call('cell-path', { env, scope }).dir.split('/')[1] !== dir) continue;
      let text = null;
      try {
        text = (await fs.readFile(path.join(envDir, dir, 'latest.json'))).toString('utf8');
      } catch (e) {
        if (e.code !== 'ENOENT') throw ioError(e);
      }
      listed.push({ scope, text });
    }
    return listed.sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  }

  /** Nothing to free (a git store removes its working clone): here so that any store can be closed. */
  async close() {}
}

/**
 * Opens the store named by `spec` (`dir:<path>` or `git:<remote>`), else by BATON_STORE, else `.baton/` at
 * the git root of `cwd` (or in `cwd` outside a repository). Git is asked only when no store is named. A git
 * store takes its ref prefix from BATON_GIT_PREFIX and its time limit per operation from BATON_STORE_BUDGET_MS (the core
 * judges both). Throws USAGE for an unknown store.
 * @param {string} [spec]
 * @param {{cwd?: string, mutexWaitMs?: number}} [opts]
 */
function openStore(spec, opts = {}) {
  const cwd = path.resolve(opts.cwd ?? process.cwd());
  const named = [spec, process.env.BATON_STORE].find((s) => typeof s === 'string' && s.trim() !== '');
  const git = { prefix: process.env.BATON_GIT_PREFIX ?? null, budgetMs: process.env.BATON_STORE_BUDGET_MS ?? null };
  let answer = call('store-spec', { spec: named ?? null, repoRoot: null, cwd, ...git });
  if (answer.source === 'default') answer = call('store-spec', { spec: null, repoRoot: repoRoot(cwd), cwd, ...git });
  if (answer.kind === 'git') {
    // Required here, not at the top: git-store.cjs needs nothing of this file, and most users never load it.
    const { GitStore } = require('./git-store.cjs');
    return new GitStore(answer, { cwd });
  }
  if (answer.kind !== 'dir') throw hostError('USAGE', `this package cannot open a ${answer.kind} store`, { store: answer.label });
  return new DirStore(answer.path, waitBound(opts.mutexWaitMs));
}

module.exports = { openStore, transact, DirStore };
