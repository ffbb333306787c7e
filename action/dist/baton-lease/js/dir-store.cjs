'use strict';
/**
 * The dir store (`dir:<path>`, docs/dir-store.md): one directory per cell, one mutex-protected transaction
 * per operation. The core makes every decision; this file loads snapshots and commits the changes (a state
 * file the snapshot lacked is created with link(2), so a lock the original tool created meanwhile, without
 * the mutex, is never replaced).
 */
const fs = require('node:fs/promises');
const fsSync = require('node:fs');
const path = require('node:path');
const { BatonError } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { takeMutex, releaseMutex, unlinkQuietly, randomHex } = require('./mutex.cjs');
const { repoRoot, originUrl } = require('./git.cjs');
const { CellStore } = require('./cell-store.cjs');

/**
 * A BatonError for a failed file operation, classified by the core (`io-error`, as the native host does):
 * access denied or a read-only file system is STORE_PERMISSION, a full disk STORE_REJECTED, a file where a
 * directory should be USAGE, anything else INTERNAL, each with the core's fix-it text.
 */
function ioError(e) {
  if (e instanceof BatonError) return e;
  const errno = e && typeof e.code === 'string' ? e.code : null;
  const { code, message } = call('io-error', { errno, what: 'The dir store failed', detail: e && e.message ? e.message : String(e) });
  return hostError(code, message, { errno, path: e && e.path }, e);
}

/**
 * Creates `dir` and its missing parents, owner only (0700). A recursive mkdir reports ENOENT where a parent
 * cannot be created (a read-only file system, no permission): the first missing parent is then created on
 * its own, which fails with the real reason (EROFS, EACCES) for the caller to classify.
 */
async function mkdirOwnerOnly(dir) {
  try {
    fsSync.mkdirSync(dir, { recursive: true, mode: 0o700 });
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

let stateFiles;
/** The names of the state files a snapshot holds (the core's `cell-files`, the same in every call). */
function cellFiles() {
  stateFiles ??= call('cell-files', {});
  return stateFiles;
}

/**
 * Reads the state files that exist, as UTF-8 (invalid bytes become U+FFFD, which the core reports): one
 * directory listing says which exist (a missing file costs no thrown error), a file gone between the listing
 * and the read is missing, and so is every file of a cell directory that does not exist (a read without the
 * mutex). Synchronous, as every call of a transaction but the fsyncs: they are the local disk's page cache,
 * and each await of fs/promises costs a thread-pool round trip (the Node lease cycle took 2.2x as long).
 */
function loadFiles(cellDir) {
  const files = {};
  let listing;
  try {
    listing = fsSync.readdirSync(cellDir);
  } catch (e) {
    if (e.code === 'ENOENT') return files;
    throw e;
  }
  const present = new Set(listing);
  for (const name of cellFiles()) {
    if (!present.has(name)) continue;
    try {
      files[name] = fsSync.readFileSync(path.join(cellDir, name)).toString('utf8');
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
  }
  return files;
}

/**
 * Places the complete temp file `tmp` at `target` only if nothing is there (link(2); EEXIST otherwise);
 * where the file system has no hard links, with O_EXCL (`wx`) and `content`, as the original tool does.
 * Synchronous but for the fsync, as every step of a transaction (see `loadFiles`).
 */
async function createLinked(tmp, target, content) {
  try {
    fsSync.linkSync(tmp, target);
  } catch (e) {
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP'].includes(e.code)) throw e;
    const fd = fsSync.openSync(target, 'wx', 0o600);
    try {
      fsSync.writeFileSync(fd, content, 'utf8');
      await fsyncAsync(fd);
    } finally {
      fsSync.closeSync(fd);
    }
  }
}

/**
 * Commits a change set in order (temp file, fsync, rename; unlink), then fsyncs the cell directory. A write
 * of a file in `absent` (not in the snapshot) is created exclusively (`createLinked`): a file created
 * meanwhile (the original tool creates `lock.json` without the mutex) is never replaced; the answer is
 * then `false`, the changes before it committed (as a crash there would leave them), the rest not.
 *
 * Every write's temp file is written and fsynced before the first change is placed, the fsyncs side by
 * side (an acquire writes `epoch.json` and `lock.json`: one wait off the event loop instead of two, and
 * the file system may commit both in one journal flush). The changes are then placed strictly in order,
 * each from a temp file already on disk, so every prefix a crash can leave is one the sequential order
 * leaves too.
 * @returns {Promise<boolean>} whether every change was committed
 */
async function applyChanges(cellDir, changes, absent = []) {
  const steps = changes.map((change) => {
    if (typeof change.file !== 'string' || !/^[^/\\.][^/\\]*$/.test(change.file)) {
      throw new Error(`the core asked for a change outside the cell: ${JSON.stringify(change)}`);
    }
    if (change.op !== 'write' && change.op !== 'delete') throw new Error(`unknown change ${JSON.stringify(change)}`);
    return { change, target: path.join(cellDir, change.file), tmp: null };
  });
  try {
    // Owner only (0600), in owner-only directories (0700): receipts name what a scope owns.
    const fds = [];
    let failed = null;
    try {
      for (const step of steps) {
        if (step.change.op !== 'write') continue;
        step.tmp = `${step.target}.${process.pid}.${randomHex(8)}.tmp`;
        const fd = fsSync.openSync(step.tmp, 'wx', 0o600);
        fds.push(fd);
        fsSync.writeFileSync(fd, step.change.content, 'utf8');
      }
    } catch (e) {
      failed = e;
    }
    // Every fsync settles before its descriptor is closed, whichever fails.
    const synced = await Promise.allSettled(failed ? [] : fds.map(fsyncAsync));
    for (const fd of fds) fsSync.closeSync(fd);
    if (failed) throw failed;
    for (const s of synced) if (s.status === 'rejected') throw s.reason;
    for (const step of steps) {
      const { change, target, tmp } = step;
      if (change.op === 'delete') {
        try {
          fsSync.unlinkSync(target);
        } catch (e) {
          if (e.code !== 'ENOENT') throw e;
        }
        continue;
      }
      const exclusive = absent.includes(change.file);
      try {
        if (exclusive) {
          await createLinked(tmp, target, change.content);
        } else {
          fsSync.renameSync(tmp, target);
          step.tmp = null; // renamed away
        }
      } catch (e) {
        if (exclusive && e.code === 'EEXIST') return false;
        throw e;
      }
    }
  } finally {
    // Temp files not renamed away: linked ones, those of changes not reached, any after a failure.
    for (const step of steps) if (step.tmp !== null) unlinkQuietly(step.tmp);
  }
  if (changes.length > 0) {
    // Best effort, as in the native host: some file systems refuse to fsync a directory.
    let fd;
    try {
      fd = fsSync.openSync(cellDir, 'r');
      await fsyncAsync(fd);
    } catch {
      // Best effort (above).
    } finally {
      if (fd !== undefined) fsSync.closeSync(fd);
    }
  }
  return true;
}

/**
 * One transaction on the cell `env/scope` of the store at `root`: take the cell mutex, load the snapshot,
 * read the clock, ask `decide(cell, nowMs)` (a core call), commit the answer's `changes`, release the mutex
 * on every path. Returns the answer. Every cell operation, fenced writes included, goes through here. On a
 * cell that does not exist, `decide` is first asked about the empty cell: an answer that writes nothing is
 * returned without creating anything. `committed(cellDir, answer)`, if given, is awaited after the changes
 * of a decision landed and before the mutex is released (never for an answer that changed nothing): for an
 * observer that must see a cell's commits in their order, such as the test journal (test-support/faults.cjs).
 * @param {string} root
 * @param {{env: string, scope: string, waitMs?: number}} target
 * @param {(cell: {env: string, scope: string, files: Record<string, string>}, nowMs: number) => any} decide
 *   the decision (its answer, or a promise of it)
 * @param {(cellDir: string, answer: any) => Promise<void>} [committed]
 */
async function transact(root, { env, scope, waitMs }, decide, committed) {
  const cellDir = path.join(root, call('cell-path', { env, scope }).dir);
  let mutex;
  try {
    // A cell that does not exist is created only by a decision that writes to it: one that changes nothing
    // there (a refusal, a release of nothing) is answered on the empty cell, as it was when it was looked
    // at, and leaves no empty directory behind for `list` to show (a git store pushes nothing).
    const absent = lstatAbsent(cellDir);
    if (absent) {
      const answer = await decide({ env, scope, files: {} }, Date.now());
      if (!(Array.isArray(answer.changes) && answer.changes.length > 0)) return answer;
    }
    await mkdirOwnerOnly(cellDir);
    mutex = await takeMutex(cellDir, { env, scope, waitMs });
    // A state file the snapshot lacked is created exclusively; when one appeared meanwhile, decide again.
    for (let attempt = 0; attempt < CREATE_ATTEMPTS; attempt += 1) {
      const cell = { env, scope, files: loadFiles(cellDir) };
      const absent = cellFiles().filter((n) => !(n in cell.files));
      const answer = await decide(cell, Date.now());
      const changes = answer.changes ?? [];
      if (!(await applyChanges(cellDir, changes, absent))) continue;
      if (committed && changes.length > 0) await committed(cellDir, answer);
      return answer;
    }
    throw hostError(
      'STORE_CONTENDED',
      `Could not settle the cell ${env}/${scope} (${cellDir}): another tool kept creating its files meanwhile.`,
      { environment: env, scope },
    );
  } catch (e) {
    throw ioError(e);
  } finally {
    if (mutex) await releaseMutex(mutex).catch(() => {});
  }
}

/** fsync(2) of `fd` off the event loop (the one call here that can take long on a slow disk). */
function fsyncAsync(fd) {
  return new Promise((resolve, reject) => fsSync.fsync(fd, (e) => (e ? reject(e) : resolve())));
}

/** Whether `p` does not exist (lstat(2) says ENOENT). */
function lstatAbsent(p) {
  try {
    fsSync.lstatSync(p);
    return false;
  } catch (e) {
    if (e.code === 'ENOENT') return true;
    throw e;
  }
}

/** How often a transaction decides again when a file it creates appeared meanwhile (the original's bound). */
const CREATE_ATTEMPTS = 100;

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

  /** The store as `baton` names it in its output: `dir:<path>`. */
  get spec() {
    return `dir:${this.path}`;
  }

  /** `BATON_STORE` for a command run under a lease of this store (`baton run` exports the same). */
  exportSpec() {
    return this.spec;
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
    return this.transactWith({ env, scope }, (cell, nowMs) => call(op, { ...request, cell, nowMs }));
  }

  /**
   * The store primitive under `transact`: one transaction whose decision is `decide(cell, nowMs)` (it must
   * answer `{changes?, ...}` or throw a refusal), committed only on the snapshot it was made on. For the
   * store corpus (tests/stores) and operations of one's own; everything else uses `transact`.
   * @param {{env: string, scope: string}} target
   * @param {(cell: {env: string, scope: string, files: Record<string, string>}, nowMs: number) => any} decide
   */
  transactWith({ env, scope }, decide) {
    return transact(this.path, { env, scope, waitMs: this.mutexWaitMs }, decide);
  }

  /**
   * A read-only operation on the cell without the mutex (every file is replaced by an atomic rename, so a
   * reader never sees half a file) and without creating its directory: loads the cell, adds `cell` and
   * `nowMs`, calls core operation `op`. For `scope-status` and the like; an answer with changes is refused.
   * @param {{env: string, scope: string}} target
   * @param {string} op
   * @param {object} [request]
   */
  read({ env, scope }, op, request = {}) {
    return this.readWith({ env, scope }, (cell, nowMs) => call(op, { ...request, cell, nowMs }));
  }

  /**
   * `read` with the decision `decide(cell, nowMs)` (see `transactWith`); an answer with changes is refused.
   * @param {{env: string, scope: string}} target
   * @param {(cell: {env: string, scope: string, files: Record<string, string>}, nowMs: number) => any} decide
   */
  async readWith({ env, scope }, decide) {
    const cellDir = path.join(this.path, call('cell-path', { env, scope }).dir);
    let files;
    try {
      files = loadFiles(cellDir);
    } catch (e) {
      throw ioError(e);
    }
    const answer = decide({ env, scope, files }, Date.now());
    if (Array.isArray(answer.changes) && answer.changes.length > 0) {
      throw hostError('INTERNAL', 'a read-only operation answered changes; use transact', {});
    }
    return answer;
  }

  /**
   * The scopes of environment `env` that have a cell in this store, sorted by scope, each with the text of
   * its `latest.json` (null when it has none): what the core's ownership operations take as `others`.
   * The core says which directories are cells (`list-cells`: `=hex` names decoded, anything that is not a
   * scope skipped, no second spelling of a scope, never `_locks`). Reads without the mutex.
   * @param {string} env
   * @returns {Promise<{scope: string, text: string | null}[]>}
   */
  async list(env) {
    const envDir = path.join(this.path, call('list-cells', { env, spelling: 'dir', names: [] }).segment);
    let entries;
    try {
      entries = await fs.readdir(envDir, { withFileTypes: true });
    } catch (e) {
      if (e.code === 'ENOENT') return [];
      throw ioError(e);
    }
    const names = entries.filter((e) => e.isDirectory()).map((e) => e.name);
    const listed = [];
    for (const { name, scope } of call('list-cells', { env, spelling: 'dir', names }).cells) {
      let text = null;
      try {
        text = (await fs.readFile(path.join(envDir, name, 'latest.json'))).toString('utf8');
      } catch (e) {
        if (e.code !== 'ENOENT') throw ioError(e);
      }
      listed.push({ scope, text });
    }
    return listed;
  }

  /** Nothing to free (a git store removes its working clone): here so that any store can be closed. */
  async close() {}
}

/**
 * Opens the store named by `spec` (`dir:<path>`, `git:<remote>` or `etcd:<endpoint>[,...]`), else by BATON_STORE, else `.baton/` at
 * the git root of `cwd` (or in `cwd` outside a repository). Git is asked only when no store is named. A git
 * store takes its ref prefix from BATON_GIT_PREFIX and its time limit per operation from BATON_STORE_BUDGET_MS; a
 * dir store waits for a cell mutex `opts.mutexWaitMs`, else BATON_MUTEX_WAIT_MS (the core judges all three).
 * With `run` (a run's store, as for `baton run`), the default in CI (`CI` set) with an `origin` remote is
 * that remote, as the CLI chooses. An etcd store takes its key prefix from BATON_ETCD_PREFIX (default `/baton/`), a user from BATON_ETCD_USER and
 * BATON_ETCD_PASSWORD (or `user:password@` in the endpoint) and TLS files from BATON_ETCD_CA, BATON_ETCD_CERT and
 * BATON_ETCD_KEY. Throws USAGE for an unknown store or a variable that does not parse.
 * @param {string} [spec]
 * @param {{cwd?: string, mutexWaitMs?: number, run?: boolean}} [opts]
 */
function openStore(spec, opts = {}) {
  const cwd = path.resolve(opts.cwd ?? process.cwd());
  const named = [spec, process.env.BATON_STORE].find((s) => typeof s === 'string' && s.trim() !== '');
  const git = {
    prefix: process.env.BATON_GIT_PREFIX ?? null,
    budgetMs: process.env.BATON_STORE_BUDGET_MS ?? null,
    mutexWaitMs: process.env.BATON_MUTEX_WAIT_MS ?? null,
    // The BATON_ETCD_* variables as given, for an `etcd:` spec (the core judges them).
    etcd: {
      prefix: process.env.BATON_ETCD_PREFIX ?? null,
      user: process.env.BATON_ETCD_USER ?? null,
      password: process.env.BATON_ETCD_PASSWORD ?? null,
      ca: process.env.BATON_ETCD_CA ?? null,
      cert: process.env.BATON_ETCD_CERT ?? null,
      key: process.env.BATON_ETCD_KEY ?? null,
    },
  };
  let answer = call('store-spec', { spec: named ?? null, repoRoot: null, cwd, ...git });
  if (answer.source === 'default') {
    const ci = typeof process.env.CI === 'string' && process.env.CI.trim() !== '' && process.env.CI !== 'false';
    const run = opts.run === true ? { run: true, ci, origin: ci ? originUrl(cwd) : null } : {};
    answer = call('store-spec', { spec: null, repoRoot: repoRoot(cwd), cwd, ...git, ...run });
    if (opts.run === true && typeof answer.notice === 'string') process.stderr.write(`baton: ${answer.notice}\n`);
  }
  if (answer.kind === 'git') {
    // Required here, not at the top: git-store.cjs needs nothing of this file, and most users never load it.
    const { GitStore } = require('./git-store.cjs');
    return new GitStore(answer, { cwd });
  }
  if (answer.kind === 'etcd') {
    // Required here: etcd3 (and gRPC) load only for an etcd store.
    const { EtcdStore } = require('./etcd-store.cjs');
    return new EtcdStore(answer);
  }
  if (answer.kind !== 'dir') throw hostError('USAGE', `this package cannot open a ${answer.kind} store`, { store: answer.label });
  // The option beats BATON_MUTEX_WAIT_MS, which the core parsed (`mutexWaitMs`, default 30 s).
  return new DirStore(answer.path, opts.mutexWaitMs ?? answer.mutexWaitMs);
}

module.exports = { openStore, transact, DirStore };
