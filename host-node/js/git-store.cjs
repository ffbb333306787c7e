'use strict';
/**
 * The git store (`git:<remote>`): every cell lives on its own orphan ref of a remote,
 * `refs/heads/<prefix>/<env>/<scope>` (segments from the core's `cell-path`), holding a `README.md` at its
 * root and the cell's files in `<env dir>/<scope dir>/`. The remote's atomic ref update is the
 * compare-and-swap: a transaction commits the core's changes on the tip it last knew and pushes them with
 * `--force-with-lease=<ref>:<that tip>` (the remote moves the ref only if it is still there, so nothing is
 * ever overwritten); a refused push means another writer won, and the transaction starts again from a
 * fresh fetch, paced and bounded by the core (`git-retry`).
 *
 * The holder commits on the tip it pushed itself and fetches only when a push is refused, on the first use
 * of a cell, or when a decision on the remembered tip refused or changed nothing (it may be stale): a
 * renewal or a fenced write costs one push, decided on the files the store pushed there (no `cat-file`).
 * Read-only operations and `list` always ask the remote. A ref
 * deleted while a run holds its lock is a deleted lock: the holder's next push is refused, the fresh fetch
 * shows an empty cell, and the core answers LOCK_LOST.
 *
 * The core decides the ref names, what a push failure means, whether and when to retry (fetches too),
 * each operation's deadline (`store-deadline`: the budget, bounded by a held lease's), the commit text and
 * fast-import stream (`git-commit`), cat-file parsing (`git-cat-parse`), which working clones of gone
 * processes to remove, and what may be printed (`redact`); each git process gets what is left of the
 * deadline and is killed with its process group when it runs out. This file runs git, as the native store
 * (host-native/src/store/git.rs) does. Every operation of one store object runs in one working clone (a private bare repository in a temp
 * directory), one at a time.
 */
const fs = require('node:fs/promises');
const { rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { execFile } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { BatonError } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { repoRoot } = require('./git.cjs');
const { CellStore } = require('./cell-store.cjs');
const { git, REMOTE } = require('./git-run.cjs');
const legacy = require('./git-legacy.cjs');
const { startTime, ownStart } = require('./process.cjs');

/**
 * The blob texts of `git cat-file --batch` output for `count` requests (null for a missing one), parsed by
 * the core (`git-cat-parse`, as the native store). Latin-1: one character per byte, so any bytes cross JSON.
 */
const catParse = (stdout, count) => call('git-cat-parse', { output: stdout.toString('latin1'), count }).objects;

/** The host's monotonic clock in whole ms (the lease machine's clock: deadlines compare with it). */
const monotonicNow = () => Math.floor(performance.now());

/**
 * Removes the clones in the temp dir whose process no longer exists (the core's `git-stale-clones`: this
 * host's clones only, pid and start time, a zombie counts as gone). Clones of live processes, and directories the core does not
 * recognise as clones, stay. Best effort.
 */
async function sweepClones() {
  let names;
  try {
    names = (await fs.readdir(os.tmpdir())).filter((n) => n.startsWith('baton-git-'));
  } catch {
    return;
  }
  if (names.length === 0) return;
  const host = os.hostname();
  const { pids } = call('git-stale-clones', { names, host });
  const processes = {};
  for (const pid of pids) processes[String(pid)] = startTime(pid);
  const { stale } = call('git-stale-clones', { names, host, processes });
  for (const name of stale) await fs.rm(path.join(os.tmpdir(), name), { recursive: true, force: true }).catch(() => {});
}

const LATEST = 'latest.json';

/** `text` without credentials embedded in URLs (core `redact`). */
const redact = (text) => call('redact', { text: String(text) }).text;

/** The last non-blank line of a command's stderr, redacted. */
function lastLine(stderr) {
  const lines = String(stderr).split('\n').map((l) => l.trim()).filter((l) => l !== '');
  return redact(lines.length > 0 ? lines[lines.length - 1] : 'no output');
}

/**
 * `e` as a BatonError that names no credentials: message, stack and details redacted. Anything but a
 * BatonError becomes INTERNAL (its message redacted, the original not kept: it may name the remote).
 */
function scrub(e) {
  const detail = redact(e && e.message ? e.message : String(e));
  // A failed file operation (an OS error name such as EROFS) is classified by the core, as the native host does.
  const io = e && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) ? call('io-error', { errno: e.code, what: 'The git store failed', detail }) : null;
  const err =
    e instanceof BatonError
      ? e
      : io !== null
        ? hostError(io.code, io.message, { errno: e.code })
        : hostError('INTERNAL', `The git store failed: ${detail}`);
  err.message = redact(err.message);
  if (typeof err.stack === 'string') err.stack = redact(err.stack);
  if (typeof err.hint === 'string') err.hint = redact(err.hint);
  try {
    err.details = JSON.parse(redact(JSON.stringify(err.details ?? {})));
  } catch {
    err.details = {};
  }
  return err;
}

/** Working clones not removed yet: removed when the process exits, should nobody have closed their store. */
const liveClones = new Set();
let exitHook = false;
function track(dir) {
  liveClones.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const d of liveClones) {
        try {
          rmSync(d, { recursive: true, force: true });
        } catch {
          // best effort
        }
      }
    });
  }
}

/** `text` inside the double quotes of a git config value or subsection name (`\\` and `"` escaped). */
/**
 * Whether git reads `remote` as a local path (git's rule: no `://`, and no `:` before the first `/`, which
 * would make it `host:path`).
 * @param {string} remote
 */
function localPath(remote) {
  if (remote.includes('://')) return false;
  const colon = remote.indexOf(':');
  const slash = remote.indexOf('/');
  return colon === -1 || (slash !== -1 && slash < colon);
}

function configQuote(text) {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The `http.<url>.extraheader` settings of the repository at `cwd`, as git config text for the working
 * clone (empty when there are none, or no repository).
 */
function inheritedAuthConfig(cwd) {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['config', '--get-regexp', '^http\\..*\\.extraheader$'],
      { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0' }, encoding: 'utf8' },
      (error, stdout) => {
        let config = '';
        for (const line of (stdout ?? '').split('\n')) {
          const space = line.indexOf(' ');
          if (space < 0) continue;
          const key = line.slice(0, space);
          const value = line.slice(space + 1);
          const m = /^http\.(.*)\.extraheader$/.exec(key);
          if (!m) continue;
          config += `[http "${configQuote(m[1])}"]\n\textraheader = "${configQuote(value)}"\n`;
        }
        resolve(error && config === '' ? '' : config);
      },
    );
  });
}

/**
 * The state files (`names`, the core's `cell-files`) of a cell whose files were `before`, after `changes` were
 * committed: what a load of the new commit reads.
 */
function filesAfter(before, changes, names) {
  const files = { ...before };
  for (const c of changes) {
    if (!names.includes(c.file)) continue;
    if (c.op === 'write') files[c.file] = c.content;
    else delete files[c.file];
  }
  return files;
}

/**
 * A git store. Obtain one with `openStore('git:<remote>')`; the interface is the dir store's (`transact`,
 * `read`, `list`, the lock methods), plus `close()`, which removes the working clone.
 */
class GitStore extends CellStore {
  #remote;
  #cwd;
  /** The working clone, once created. */
  #clone = null;
  /** The tail of the queue every operation of this store runs through, one at a time. */
  #tail = Promise.resolve();
  /** `<repo root or cwd>/.baton/unpushed`, once asked for. */
  #fallback = null;
  #cellFiles = null;
  /** The last known tip of each cell ref (null: known absent); a ref not in it is fetched first. */
  #tips = new Map();
  /**
   * The state files of each cell ref at the tip this store pushed itself (`{tip, files}`): a load of that tip
   * reads them here instead of running `git cat-file` (a commit never changes, so they cannot be stale).
   */
  #pushed = new Map();
  /** The operation in progress: when it was asked for and when its git processes must have finished. */
  #op = { started: 0, end: Infinity };

  /**
   * @param {{remote: string, prefix: string, budgetMs: number, label: string}} spec the core's `store-spec`
   * @param {{cwd: string}} opts
   */
  constructor(spec, { cwd }) {
    super();
    /** The kind of store. */
    this.kind = 'git';
    /** The remote, credentials redacted. */
    this.path = spec.label;
    /** The ref prefix (`refs/heads/<prefix>/<env>/<scope>`; BATON_GIT_PREFIX). */
    this.prefix = spec.prefix;
    /** The time limit of one operation, retries included, in milliseconds (BATON_STORE_BUDGET_MS). */
    this.budgetMs = spec.budgetMs;
    if (spec.remote.includes('\0')) throw hostError('USAGE', 'a git store remote cannot contain a NUL character');
    this.#remote = spec.remote;
    this.#cwd = cwd;
  }

  /** The store as `baton` names it in its output: `git:<remote>`, credentials redacted. */
  get spec() {
    return `git:${this.path}`;
  }

  /** `BATON_STORE` for a command run under a lease of this store, credentials included (as `baton run`). */
  exportSpec() {
    return `git:${this.#remote}`;
  }

  /** The working clone's directory, or null before the first operation and after `close()`. */
  get workdir() {
    return this.#clone;
  }

  /**
   * Runs `fn` after every operation queued before it; errors leave the store usable and name no secret.
   * The operation ends by the budget from now (waiting in the queue counts), and by `deadline` (monotonic
   * ms, a held lease's) when given: the core's `store-deadline`.
   */
  #exclusive(fn, deadline) {
    const asked = monotonicNow();
    const run = this.#tail.then(() => {
      const { remainingMs } = call('store-deadline', {
        nowMs: asked,
        startedMs: asked,
        budgetMs: this.budgetMs,
        deadlineMs: typeof deadline === 'number' && Number.isFinite(deadline) ? Math.max(0, Math.floor(deadline)) : null,
      });
      this.#op = { started: asked, end: asked + remainingMs };
      return fn();
    });
    this.#tail = run.catch(() => {});
    return run.catch((e) => {
      throw scrub(e);
    });
  }

  /**
   * Creates the working clone on first use: a 0700 temp dir, a bare `git init`, the remote as `baton` in its config, and
   * the `http.<url>.extraheader` settings of the repository at `cwd` (how CI checkouts such as
   * actions/checkout authenticate), written to the clone's config, never on a command line.
   */
  async #workdir() {
    if (this.#clone !== null) return this.#clone;
    if (this.#remote.startsWith('-')) throw hostError('USAGE', 'a git store remote cannot start with `-`');
    await sweepClones();
    let dir;
    for (let tries = 0; ; tries += 1) {
      const { name } = call('git-clone-name', {
        remote: this.#remote,
        host: os.hostname(),
        pid: process.pid,
        start: ownStart(),
        random: randomBytes(4).toString('hex'),
      });
      dir = path.join(os.tmpdir(), name);
      try {
        await fs.mkdir(dir, { mode: 0o700 });
        break;
      } catch (e) {
        if (e && e.code === 'EEXIST' && tries < 16) continue;
        throw hostError('INTERNAL', `cannot create a working clone in ${os.tmpdir()}: ${e && e.message}`);
      }
    }
    track(dir);
    try {
      await fs.chmod(dir, 0o700);
      // No template: a throwaway clone needs none of the sample hooks `init` would copy.
      const r = await this.#git(dir, ['init', '-q', '--bare', '--template=', '.']);
      if (r.timedOut) throw this.#timedOut(false, 'the working clone', '');
      if (r.code !== 0) throw hostError('INTERNAL', `git init failed: ${lastLine(r.stderr)}`);
      // The remote is `baton` in the clone's own config (off git's command line; not `origin`, which a
      // user's global config may already name), written with the inherited authentication as `git remote
      // add` would write its URL, without a process of its own. git runs in the clone, so a local path is
      // made absolute against the store's directory first (the native store runs git there).
      const extra = await inheritedAuthConfig(this.#cwd);
      const url = configQuote(localPath(this.#remote) ? path.resolve(this.#cwd, this.#remote) : this.#remote);
      await fs.appendFile(path.join(dir, 'config'), `\n[remote "${REMOTE}"]\n\turl = "${url}"\n${extra}`);
    } catch (e) {
      liveClones.delete(dir);
      await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
      throw e;
    }
    this.#clone = dir;
    return dir;
  }

  /** Runs git in `clone` with what is left of the operation's deadline. */
  #git(clone, args, opts = {}) {
    const left = this.#op.end - monotonicNow();
    return git(clone, args, Number.isFinite(left) ? { ...opts, timeoutMs: left } : opts);
  }

  /** The STORE_CONTENDED of git killed at the operation's deadline (the core's `git-retry`, `timeout`). */
  #timedOut(read, what, ref) {
    try {
      call('git-retry', { read, what, ref, remote: this.#remote, outcome: 'timeout', attempts: 1, ...this.#clock(), random: 0.5 });
    } catch (e) {
      return e;
    }
    return hostError('INTERNAL', 'git-retry did not refuse a timeout');
  }

  /** `{elapsedMs, budgetMs}` of the operation in progress, as the core's retry decisions see them. */
  #clock() {
    const now = monotonicNow();
    const budgetMs = Number.isFinite(this.#op.end) ? this.#op.end - this.#op.started : this.budgetMs;
    return { elapsedMs: Math.max(0, now - this.#op.started), budgetMs: Math.max(0, budgetMs) };
  }

  /**
   * After a failed fetch or ls-remote (attempt `attempts`): waits and resolves when the core says to try
   * again within the budget; throws its error otherwise (STORE_PERMISSION, STORE_CONTENDED), as the native
   * store does.
   */
  async #readFailed(result, what, ref, attempts) {
    if (result.timedOut) throw this.#timedOut(true, what, ref);
    const { outcome, detail } = call('git-push-outcome', { exitCode: Math.max(result.code, 1), stderr: result.stderr });
    const { delayMs } = call('git-retry', { read: true, what, ref, remote: this.#remote, outcome, detail, attempts, ...this.#clock(), random: Math.random() });
    await sleep(delayMs);
  }

  /** Fetches the cell's ref: its tip, or null when the remote has no such ref. Remembers the tip. */
  async #fetch(clone, ref) {
    let tip;
    for (let attempts = 1; ; attempts += 1) {
      const r = await this.#git(clone, ['-c', 'gc.auto=0', 'fetch', '-q', '--no-tags', '--depth=1', REMOTE, ref]);
      if (r.code === 0 && !r.timedOut) {
        const head = await fs.readFile(path.join(clone, 'FETCH_HEAD'), 'utf8').catch(() => '');
        tip = head.split(/\s/)[0];
        if (!/^[0-9a-f]{40,64}$/.test(tip)) throw hostError('INTERNAL', 'git fetch left no FETCH_HEAD');
        break;
      }
      if (!r.timedOut && r.stderr.includes("couldn't find remote ref")) {
        tip = null;
        break;
      }
      // A failed fetch is retried within the budget, like a push (the core's `git-retry`).
      await this.#readFailed(r, 'the cell', ref, attempts);
    }
    this.#tips.set(ref, tip);
    return tip;
  }

  /** Fetches the legacy branch (retried within the budget like every read): whether the remote has it. */
  async #fetchLegacy(clone) {
    for (let attempts = 1; ; attempts += 1) {
      const fetched = await legacy.fetchLegacy(clone);
      if (fetched === true || fetched === false) return fetched;
      await this.#readFailed(fetched, 'the legacy receipts branch', legacy.BRANCH, attempts);
    }
  }

  /**
   * The legacy branch's files of the cell dir (git-legacy.cjs), when this store shares the original's prefix:
   * `[[tree path, text]]`.
   */
  async #legacyFiles(clone, dir) {
    // Parent-object cells (`_locks/...`) were never on the legacy branch: the original seeds none.
    if (this.prefix !== legacy.SHARED_PREFIX || dir.startsWith('_locks/')) return [];
    if (!(await this.#fetchLegacy(clone))) return [];
    return legacy.legacyFiles(clone, dir);
  }

  /**
   * The cell's state files at `tip`; without a tip, those of the legacy branch (none unless the store shares
   * the original's prefix), whose files of the cell are then added to `seed` for the cell's first commit.
   */
  async #load(clone, tip, dir, ref, seed = []) {
    const mine = this.#pushed.get(ref);
    if (tip !== null && mine !== undefined && mine.tip === tip) return { ...mine.files };
    const files = {};
    this.#cellFiles ??= call('cell-files', {});
    if (tip === null) {
      seed.push(...(await this.#legacyFiles(clone, dir)));
      for (const [p, text] of seed) {
        const name = p.slice(dir.length + 1);
        if (this.#cellFiles.includes(name)) files[name] = text;
      }
      return files;
    }
    const lines = this.#cellFiles.map((name) => `${tip}:${dir}/${name}`);
    const r = await this.#git(clone, ['cat-file', '--batch'], { input: `${lines.join('\n')}\n` });
    if (r.timedOut) throw this.#timedOut(false, 'the cell', dir);
    if (r.code !== 0) throw hostError('INTERNAL', `git cat-file failed: ${lastLine(r.stderr)}`);
    catParse(r.stdout, lines.length).forEach((text, i) => {
      // Invalid UTF-8 is U+FFFD, which the core reports as a corrupt file.
      if (text !== null) files[this.#cellFiles[i]] = text;
    });
    return files;
  }

  /**
   * Builds the commit the core wrote as a `git fast-import` stream (`git-commit`, as the native store).
   * Returns the new commit.
   */
  async #commit(clone, stream, dir) {
    const r = await this.#git(clone, ['fast-import', '--quiet', '--force', '--date-format=now'], { input: Buffer.from(stream, 'utf8') });
    if (r.timedOut) throw this.#timedOut(false, 'the commit', dir);
    const oid = r.stdout.toString('utf8').trim();
    if (r.code !== 0 || !/^[0-9a-f]{40,64}$/.test(oid)) throw hostError('INTERNAL', `git fast-import failed: ${lastLine(r.stderr)}`);
    return oid;
  }

  /**
   * Pushes `commit` to `ref` only if the remote ref is still `expected` (absent for null): the
   * compare-and-swap. Resolves the exit code and stdout + stderr together, for the core to classify.
   */
  async #push(clone, commit, ref, expected) {
    const lease = `--force-with-lease=${ref}:${expected ?? ''}`;
    const r = await this.#git(clone, ['push', '-q', '--no-verify', lease, REMOTE, `${commit}:${ref}`]);
    return { code: r.code, stderr: `${r.stdout.toString('utf8')}${r.stderr}`, timedOut: r.timedOut };
  }

  /** `<repo root of the store's cwd, or that cwd>/.baton/unpushed` (the native store: of the process's cwd). */
  #fallbackRoot() {
    this.#fallback ??= path.join(repoRoot(this.#cwd) ?? this.#cwd, '.baton', 'unpushed');
    return this.#fallback;
  }

  /**
   * Keeps the receipt of a change set locally before it is pushed: `<fallback>/<dir>/<runId>.json` (the run
   * id with anything but letters, digits, `.`, `_` and `-` replaced by `-`). Returns the path.
   */
  async #keep(dir, content) {
    let runId;
    try {
      runId = JSON.parse(content).runId;
    } catch {
      // no run id: "receipt"
    }
    const name = (typeof runId === 'string' ? runId : 'receipt').replace(/[^A-Za-z0-9._-]/g, '-').replace(/^\.+/, '');
    const folder = path.join(this.#fallbackRoot(), dir);
    const file = path.join(folder, `${name}.json`);
    // Another process may prune the empty folders between the two steps: try again then.
    for (let tries = 0; ; tries += 1) {
      try {
        await fs.mkdir(folder, { recursive: true, mode: 0o700 });
        await fs.writeFile(file, content, { encoding: 'utf8', mode: 0o600 });
        break;
      } catch (e) {
        if (e && e.code === 'ENOENT' && tries < 3) continue;
        const errno = e && typeof e.code === 'string' ? e.code : null;
        const io = call('io-error', { errno, what: `cannot keep the receipt in ${file}`, detail: e && e.message ? e.message : String(e) });
        throw hostError(io.code, io.message, { path: file, errno });
      }
    }
    return file;
  }

  /** Removes a kept receipt after its push landed, and the directories it leaves empty, up to `unpushed/`. */
  async #unkeep(file) {
    await fs.rm(file, { force: true }).catch(() => {});
    for (let d = path.dirname(file); d !== path.dirname(d); d = path.dirname(d)) {
      try {
        await fs.rmdir(d);
      } catch {
        break; // not empty (or gone): stop pruning
      }
      if (path.basename(d) === 'unpushed') break;
    }
  }

  /** One transaction (see the file comment), deciding with `decide(cell, nowMs)`. */
  async #transact({ env, scope }, decide) {
    const { dir, ref: cellRef } = call('cell-path', { env, scope });
    const ref = `refs/heads/${this.prefix}/${cellRef}`;
    let kept = null;
    try {
      const clone = await this.#workdir();
      let attempts = 0;
      let lastDetail = '';
      let rejections = 0;
      for (;;) {
        const fresh = !this.#tips.has(ref);
        const tip = fresh ? await this.#fetch(clone, ref) : this.#tips.get(ref);
        const seed = [];
        const files = await this.#load(clone, tip, dir, ref, seed);
        let answer;
        let refusal = null;
        try {
          // A copy: `files` is what the cache of the pushed tip is built from (a decide may change its cell).
          answer = decide({ env, scope, files: { ...files } }, Date.now());
        } catch (e) {
          refusal = e;
        }
        const changes = refusal === null ? (answer.changes ?? []) : [];
        if (changes.length === 0) {
          // A refusal or a no-op on a remembered tip may be stale: decide again on the remote's tip.
          if (!fresh) {
            this.#tips.delete(ref);
            continue;
          }
          if (refusal !== null) throw refusal;
          return answer;
        }
        // The commit (message and fast-import stream) is the core's, as in the native store.
        const { what, stream } = call('git-commit', {
          env,
          scope,
          dir,
          tip,
          changes,
          oldLock: files['lock.json'] ?? null,
          seed: seed.map(([p, text]) => ({ path: p, text })),
        });
        const latest = changes.find((c) => c.op === 'write' && c.file === LATEST);
        if (latest) kept = await this.#keep(dir, latest.content);
        const commit = await this.#commit(clone, stream, dir);
        const push = await this.#push(clone, commit, ref, tip);
        // After a timeout, the remote's last refusal (if any) is what the error names.
        const { outcome, detail } = push.timedOut
          ? { outcome: 'timeout', detail: lastDetail }
          : call('git-push-outcome', { exitCode: push.code, stderr: push.stderr });
        lastDetail = detail;
        if (outcome === 'ok') {
          // A few cells' files at most (a receipt may be large): a run works on its own cell and its predecessor's.
          if (this.#pushed.size >= 4 && !this.#pushed.has(ref)) this.#pushed.clear();
          this.#pushed.set(ref, { tip: commit, files: filesAfter(files, changes, (this.#cellFiles ??= call('cell-files', {}))) });
          this.#tips.set(ref, commit);
          if (kept !== null) await this.#unkeep(kept);
          return answer;
        }
        this.#tips.delete(ref);
        attempts += 1;
        if (outcome === 'rejected') rejections += 1;
        // Throws STORE_CONTENDED / STORE_REJECTED / STORE_PERMISSION / INTERNAL when it is time to give up.
        const { delayMs } = call('git-retry', {
          what,
          ref,
          remote: this.#remote,
          outcome,
          detail,
          attempts,
          rejections,
          ...this.#clock(),
          random: Math.random(),
        });
        await sleep(delayMs);
      }
    } catch (e) {
      const err = scrub(e);
      if (kept !== null) {
        err.message = `${err.message} Receipt kept locally in ${kept}.`;
        err.details.keptAt = kept;
      }
      throw err;
    }
  }

  /** A read-only decision, always on the remote's current tip; an answer with changes is refused. */
  async #read({ env, scope }, decide) {
    const { dir, ref: cellRef } = call('cell-path', { env, scope });
    const clone = await this.#workdir();
    const ref = `refs/heads/${this.prefix}/${cellRef}`;
    const tip = await this.#fetch(clone, ref);
    const answer = decide({ env, scope, files: await this.#load(clone, tip, dir, ref) }, Date.now());
    if (Array.isArray(answer.changes) && answer.changes.length > 0) {
      throw hostError('INTERNAL', 'a read-only operation answered changes; use transact', {});
    }
    return answer;
  }

  /**
   * One transaction on the cell `{env, scope}`: fetches its ref, calls core operation `op` with `request`
   * plus `cell` and `nowMs`, commits the answer's `changes` on the fetched tip and pushes them without
   * force, again from a fresh fetch while another writer wins the race (within the budget). Resolves with
   * the core's answer; rejects with its refusal or the store's failure (a BatonError).
   * @param {{env: string, scope: string}} target
   * @param {string} op
   * @param {object} [request] the request without `cell` and `nowMs`
   * @param {{deadline?: number}} [opts] `deadline`: the monotonic ms (`performance.now()`) by which to give
   *   up at the latest (a held lease's `storeDeadline`); without it the store budget from now bounds it
   */
  transact(target, op, request = {}, { deadline } = {}) {
    return this.transactWith(target, (cell, nowMs) => call(op, { ...request, cell, nowMs }), { deadline });
  }

  /**
   * The store primitive under `transact`: one transaction whose decision is `decide(cell, nowMs)` (it must
   * answer `{changes?, ...}` or throw a refusal), committed only on the snapshot it was made on; decided
   * again on a fresh fetch when the remote moved. For the store corpus (tests/stores) and operations of
   * one's own; everything else uses `transact`.
   * @param {{env: string, scope: string}} target
   * @param {(cell: {env: string, scope: string, files: Record<string, string>}, nowMs: number) => any} decide
   * @param {{deadline?: number}} [opts] as for `transact`
   */
  transactWith(target, decide, { deadline } = {}) {
    return this.#exclusive(() => this.#transact(target, decide), deadline);
  }

  /**
   * A read-only operation on the cell: fetches its ref, loads the cell, calls core operation `op`. Nothing is
   * pushed; an answer with changes is refused (INTERNAL).
   */
  read(target, op, request = {}, { deadline } = {}) {
    return this.readWith(target, (cell, nowMs) => call(op, { ...request, cell, nowMs }), { deadline });
  }

  /** `read` with the decision `decide(cell, nowMs)` (see `transactWith`). */
  readWith(target, decide, { deadline } = {}) {
    return this.#exclusive(() => this.#read(target, decide), deadline);
  }

  /**
   * The scopes of environment `env` that have a ref on the remote, sorted by scope, each with the text of
   * its `latest.json` (null when it has none): one `ls-remote`, one fetch into position-named refs, one
   * `cat-file --batch`. The core says which refs are cells (`list-cells`); `_locks` is never a scope.
   * @param {string} env
   * @returns {Promise<{scope: string, text: string | null}[]>}
   */
  list(env) {
    return this.#exclusive(() => this.#list(env));
  }

  async #list(env) {
    const envSeg = call('list-cells', { env, spelling: 'ref', names: [] }).segment;
    const base = `refs/heads/${this.prefix}/${envSeg}/`;
    const clone = await this.#workdir();
    let failures = 0;
    for (let attempt = 1; ; attempt += 1) {
      const r = await this.#git(clone, ['ls-remote', REMOTE, `${base}*`]);
      if (r.code !== 0 || r.timedOut) {
        failures += 1;
        await this.#readFailed(r, 'the list of scopes', base, failures);
        continue;
      }
      const names = r.stdout
        .toString('utf8')
        .split('\n')
        .map((line) => line.split('\t')[1])
        .filter((ref) => typeof ref === 'string' && ref.startsWith(base) && ref.length > base.length && !ref.slice(base.length).includes('/'))
        .map((ref) => ref.slice(base.length));
      // The core says which refs are cells (no second spelling of a scope, never `_locks`), sorted by scope.
      const { cells } = call('list-cells', { env, spelling: 'ref', names });
      const shared = this.prefix === legacy.SHARED_PREFIX;
      if (cells.length === 0 && !shared) return [];
      const refspecs = cells.map((c, i) => `+${base}${c.name}:refs/baton-list/${i}`);
      const f = refspecs.length === 0 ? { code: 0, timedOut: false } : await this.#git(clone, ['-c', 'gc.auto=0', 'fetch', '-q', '--no-tags', '--depth=1', REMOTE, ...refspecs]);
      if (f.code !== 0 || f.timedOut) {
        // A ref deleted between ls-remote and fetch: ask again (3 attempts in all).
        if (!f.timedOut && /couldn't find remote ref/i.test(f.stderr) && attempt < 3) continue;
        failures += 1;
        await this.#readFailed(f, 'the list of scopes', base, failures);
        continue;
      }
      const lines = cells.map((c, i) => `refs/baton-list/${i}:${c.dir}/${LATEST}`);
      // The original lists the legacy branch's scopes that have no ref of their own too.
      if (shared) lines.push(...(await this.#legacyList(clone, env, cells)));
      if (lines.length === 0) return [];
      const b = await this.#git(clone, ['cat-file', '--batch'], { input: `${lines.join('\n')}\n` });
      if (b.timedOut) throw this.#timedOut(false, 'the list of scopes', base);
      if (b.code !== 0) throw hostError('INTERNAL', `git cat-file failed: ${lastLine(b.stderr)}`);
      const texts = catParse(b.stdout, lines.length);
      const listed = cells.map((c, i) => ({ scope: c.scope, text: texts[i] }));
      return listed.sort((a, z) => (a.scope < z.scope ? -1 : a.scope > z.scope ? 1 : 0));
    }
  }

  /**
   * The `cat-file` specs of `latest.json` of the legacy branch's scopes of `env` without a ref of their own
   * (not in `cells`); each spec's scope is appended to `cells` (`{scope}`), in the same order.
   */
  async #legacyList(clone, env, cells) {
    if (!(await this.#fetchLegacy(clone))) return [];
    const envDir = call('cell-path', { env, scope: 'x' }).dir.split('/')[0];
    const dirs = await legacy.legacyScopeDirs(clone, envDir);
    const { scopes } = call('scope-names', { dirs });
    const own = new Set(cells.map((c) => c.scope));
    const specs = [];
    for (const scope of scopes) {
      if (typeof scope !== 'string' || scope === '_locks' || own.has(scope)) continue;
      cells.push({ scope });
      specs.push(`${legacy.LOCAL}:${call('cell-path', { env, scope }).dir}/${LATEST}`);
    }
    return specs;
  }

  /**
   * Removes the working clone (after the operations already queued). The store stays usable: the next
   * operation creates a fresh clone.
   */
  close() {
    return this.#exclusive(async () => {
      const dir = this.#clone;
      this.#clone = null;
      this.#tips.clear();
      this.#pushed.clear();
      if (dir === null) return;
      liveClones.delete(dir);
      await fs.rm(dir, { recursive: true, force: true });
    });
  }
}

module.exports = { GitStore };
