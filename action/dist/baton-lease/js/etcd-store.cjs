'use strict';
/**
 * The etcd store (`etcd:<endpoint>[,<endpoint>...]`), over the npm package `etcd3` (gRPC to a real server):
 * the file `f` of the cell `env/scope` is the key `<prefix><env dir>/<scope dir>/f` (prefix
 * BATON_ETCD_PREFIX, default `/baton/`). A transaction reads the cell's state files and their
 * `mod_revision`s in one read-only etcd transaction, asks the core, and commits the answer's changes in ONE
 * etcd transaction comparing every state file's `mod_revision` with what it read (the core's `etcd-txn`); a
 * refused compare is a conflict, answered by a fresh read and a new decision. A list is one range read of
 * the environment (`etcd-list`).
 *
 * The core decides the layout, the transaction, what a failure means and when to try again (`etcd-retry`),
 * and each operation's deadline (`store-deadline`: the budget, bounded by a held lease's); one request to
 * one endpoint takes the core's `attemptMs` at most, and a failed or silent endpoint passes the operation to
 * the next. This file carries that out, as the native store (host-native/src/store/etcd.rs) does. etcd3's
 * own retries and circuit breakers are off: one client per endpoint, each request tried once.
 *
 * A transaction decides on the cell as this store last committed it (a renewal or a fenced write is one
 * round trip); a decision there that refuses or changes nothing is made again on a fresh read, and a refused
 * compare returns the cell as it is now in the same round trip (the transaction's `failure` branch).
 */
const fs = require('node:fs');
const { setTimeout: sleep } = require('node:timers/promises');
const { BatonError } = require('./errors.cjs');
const { call, hostError } = require('./core.cjs');
const { CellStore } = require('./cell-store.cjs');
const { Sockets, grpcOf } = require('./etcd-sockets.cjs');

/** The host's monotonic clock in whole ms (the lease machine's clock: deadlines compare with it). */
const monotonicNow = () => Math.floor(performance.now());

/** A fault-handling policy that runs each call once (etcd3's defaults retry and break circuits). */
const once = { execute: (fn) => Promise.resolve().then(() => fn({ signal: new AbortController().signal, attempt: 0 })) };

/** The gRPC status code an etcd3 error stands for (etcd3 turns statuses into classes), or null. */
function grpcCode(etcd3, e) {
  const byClass = [
    ['GRPCCancelledError', 1], ['GRPCUnknownError', 2], ['GRPCInvalidArgumentError', 3],
    ['GRPCDeadlineExceededError', 4], ['GRPCNotFoundError', 5], ['GRPCAlreadyExistsError', 6],
    ['EtcdPermissionDeniedError', 7], ['GRPCResourceExhastedError', 8], ['GRPCFailedPreconditionError', 9],
    ['GRPCAbortedError', 10], ['GRPCOutOfRangeError', 11], ['GRPCNotImplementedError', 12],
    ['GRPCInternalError', 13], ['GRPCUnavailableError', 14], ['GRPCDataLossError', 15],
    ['GRPCUnauthenticatedError', 16], ['EtcdAuthenticationFailedError', 16], ['EtcdInvalidAuthTokenError', 16],
  ];
  for (const [name, code] of byClass) {
    if (typeof etcd3[name] === 'function' && e instanceof etcd3[name]) return code;
  }
  return e && typeof e.code === 'number' ? e.code : null;
}

/** The end of the key range of every key starting with `prefix`. */
function rangeEnd(prefix) {
  const end = Buffer.from(prefix, 'utf8');
  for (let i = end.length - 1; i >= 0; i -= 1) {
    if (end[i] < 0xff) {
      end[i] += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** Reads a TLS file named by the core's `store-spec`; USAGE naming its variable when it cannot be read. */
function readTls(path, variable) {
  if (typeof path !== 'string') return undefined;
  try {
    return fs.readFileSync(path);
  } catch (e) {
    throw hostError('USAGE', `cannot read ${variable} ${path}: ${e.message}. Point ${variable} at a readable PEM file.`, { variable, path });
  }
}

/**
 * Where a cell lives, as the core's `etcd-keys` answered (`{env, cell, keys}`), with what every transaction
 * on it needs built once: the state files (`state`), each state key as bytes (`bytes`, by key), and the gets
 * that read them (`gets`: a load, and a commit's failure branch). The core's answer is pure.
 */
function cellKeys(answer) {
  const bytes = new Map(answer.keys.map((k) => [k.key, Buffer.from(k.key, 'utf8')]));
  return {
    ...answer,
    state: new Set(answer.keys.map((k) => k.file)),
    bytes,
    gets: answer.keys.map((k) => ({ request_range: { key: bytes.get(k.key) } })),
  };
}

/** The state files (`{files, revisions}`) in the answers of a transaction's gets, one per `keys.keys`. */
function fromGets(keys, responses) {
  const files = {};
  const revisions = {};
  keys.keys.forEach((k, i) => {
    const kv = responses[i]?.response_range?.kvs?.[0];
    if (kv) {
      files[k.file] = kv.value.toString('utf8');
      revisions[k.file] = Number(kv.mod_revision);
    }
  });
  return { files, revisions };
}

/** The cell after `changes` committed at `revision`: its state files only, as a load reads. */
function after(keys, loaded, changes, revision) {
  const files = { ...loaded.files };
  const revisions = { ...loaded.revisions };
  for (const c of changes) {
    if (!keys.state.has(c.file)) continue;
    if (c.op === 'write') {
      files[c.file] = c.content;
      revisions[c.file] = revision;
    } else {
      delete files[c.file];
      delete revisions[c.file];
    }
  }
  return { files, revisions };
}

/**
 * The `etcd3` client, an optional peer dependency: only an etcd store needs it, so the package installs (and
 * the GitHub Action runs) without it. USAGE, naming the fix, when it is missing.
 */
function loadEtcd3() {
  try {
    return require('etcd3');
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND') throw e;
    throw hostError('USAGE', 'the etcd store needs the npm package `etcd3` beside baton-lease: run `npm install etcd3@^1.1.2`, then try again');
  }
}

class EtcdStore extends CellStore {
  #etcd3 = loadEtcd3();
  #grpc = grpcOf();
  #endpoints;
  #auth;
  #tls;
  #attemptMs;
  #exportSpec;
  /** One client per endpoint (`{etcd, sockets}`), created on first use; null after a failure there. */
  #clients;
  /** The endpoint requests go to first: the last one that answered. */
  #current = 0;
  /** The core's `etcd-keys` answers (pure), by env and scope. */
  #keys = new Map();
  /** The core's `store-deadline` answer for an operation without a deadline (the budget alone decides it). */
  #unboundedMs = null;
  /** The tail of the queue every operation of this store runs through, one at a time. */
  #tail = Promise.resolve();
  /**
   * Each cell as this store last committed it (by its key range): the next transaction decides on it without
   * a read, and its compare refuses it if anyone changed the cell since.
   */
  #cells = new Map();

  /** @param {object} spec the core's `store-spec` answer (`kind: "etcd"`) */
  constructor(spec) {
    super();
    /** The kind of store. */
    this.kind = 'etcd';
    /** The store, credentials redacted (`etcd:<endpoints>`). */
    this.path = spec.label;
    /** The key prefix (BATON_ETCD_PREFIX). */
    this.prefix = spec.prefix;
    /** The time limit of one operation, retries included, in milliseconds (BATON_STORE_BUDGET_MS). */
    this.budgetMs = spec.budgetMs;
    this.#endpoints = spec.endpoints;
    this.#auth = spec.auth ? { username: spec.auth.user, password: spec.auth.password } : undefined;
    this.#tls = spec.tls
      ? {
          rootCertificate: readTls(spec.tls.ca, 'BATON_ETCD_CA'),
          certChain: readTls(spec.tls.cert, 'BATON_ETCD_CERT'),
          privateKey: readTls(spec.tls.key, 'BATON_ETCD_KEY'),
        }
      : undefined;
    this.#attemptMs = spec.attemptMs;
    this.#exportSpec = spec.exportSpec;
    this.#clients = spec.endpoints.map(() => null);
  }

  /** The spec a child process opens the same store with (credentials of the URL included). */
  get exportSpec() {
    return this.#exportSpec;
  }

  #client(index) {
    if (this.#clients[index] === null) {
      const { Etcd3 } = this.#etcd3;
      const sockets = new Sockets(this.#grpc);
      const etcd = new Etcd3({
        hosts: [this.#endpoints[index]],
        // etcd3 sends the authentication call with these options: without a deadline, that call waits for a
        // silent endpoint for ever, and grpc-js keeps the process alive while a call waits. etcd3 never
        // closes the channel it authenticates on, so that channel's socket to a silent endpoint stays open
        // (unref'd) until the server or the process ends it.
        auth: this.#auth && { ...this.#auth, callOptions: () => ({ deadline: new Date(Date.now() + this.#attemptMs) }) },
        credentials: this.#tls,
        dialTimeout: this.#attemptMs,
        faultHandling: { host: () => once, global: once },
        grpcOptions: sockets.grpcOptions(),
      });
      this.#clients[index] = { etcd, sockets };
    }
    return this.#clients[index].etcd;
  }

  /** Closes the client of endpoint `index` and its sockets (after a failure there, or on close). */
  #forget(index) {
    const client = this.#clients[index];
    this.#clients[index] = null;
    if (client !== null) {
      client.etcd.close();
      client.sockets.destroy();
    }
  }

  /**
   * The core's `etcd-keys` for `env` (and `scope`), remembered: `{env}`, or for a cell `{env, cell, keys}`
   * with what its transactions need built once (`cellKeys`).
   */
  #keysOf(env, scope) {
    const name = scope === undefined ? `${env}/` : `${env}/${scope}`;
    let keys = this.#keys.get(name);
    if (keys === undefined) {
      const answer = call('etcd-keys', { prefix: this.prefix, env, scope });
      keys = scope === undefined ? answer : cellKeys(answer);
      this.#keys.set(name, keys);
    }
    return keys;
  }

  /**
   * Runs `fn(op)` after every operation queued before it, with the operation's deadline (`store-deadline`;
   * without a deadline of its own the answer depends on the budget alone and is asked once).
   */
  #exclusive(fn, deadline) {
    const asked = monotonicNow();
    const run = this.#tail.then(() => {
      const bounded = typeof deadline === 'number' && Number.isFinite(deadline);
      const ask = () =>
        call('store-deadline', {
          nowMs: asked,
          startedMs: asked,
          budgetMs: this.budgetMs,
          deadlineMs: bounded ? Math.max(0, Math.floor(deadline)) : null,
        }).remainingMs;
      let remainingMs;
      if (bounded) remainingMs = ask();
      else remainingMs = this.#unboundedMs ??= ask();
      return fn({ started: asked, end: asked + remainingMs, attempts: 0, last: { index: 0, detail: '' } });
    });
    this.#tail = run.catch(() => {});
    return run;
  }

  /**
   * Asks the core (`etcd-retry`) whether to try again after `outcome` at endpoint `index`; sleeps its delay
   * and answers whether to move to the next endpoint, or throws the error that ends the operation.
   */
  async #retry(op, what, index, outcome, code, detail) {
    op.attempts += 1;
    const now = monotonicNow();
    const { delayMs, next } = call('etcd-retry', {
      what,
      endpoint: this.#endpoints[index],
      endpoints: this.#endpoints,
      outcome,
      code,
      detail,
      attempts: op.attempts,
      elapsedMs: Math.max(0, now - op.started),
      budgetMs: Math.max(0, op.end - op.started),
      random: Math.random(),
    });
    await sleep(Math.max(0, Math.min(delayMs, op.end - monotonicNow())));
    return next;
  }

  /**
   * One request `fn(client, callOptions)`, tried on the endpoints in turn until one answers, the core says
   * to stop, or the operation's deadline passes.
   */
  async #attempt(op, what, fn) {
    const n = Math.max(1, this.#endpoints.length);
    for (;;) {
      const left = op.end - monotonicNow();
      if (left <= 0) {
        await this.#retry(op, what, op.last.index, 'timeout', null, op.last.detail);
        throw hostError('INTERNAL', 'etcd-retry did not refuse a timeout');
      }
      const index = this.#current % n;
      const timeout = Math.min(left, this.#attemptMs);
      let timer;
      try {
        const silent = new Promise((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${timeout} ms`), { silent: true })), timeout);
        });
        const request = fn(this.#client(index), { deadline: new Date(Date.now() + timeout) });
        request.catch(() => {});
        return await Promise.race([request, silent]);
      } catch (e) {
        if (e instanceof BatonError) throw e;
        this.#forget(index);
        const detail = e && e.message ? e.message : String(e);
        op.last = { index, detail };
        if (await this.#retry(op, what, index, 'failed', e && e.silent ? null : grpcCode(this.#etcd3, e), detail)) {
          this.#current = index + 1;
        }
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** The cell's state files and their revisions (`{files, revisions}`), in one read-only transaction. */
  async #load(op, what, keys) {
    const answer = await this.#attempt(op, what, (c, options) => c.kv.txn({ compare: [], success: keys.gets, failure: [] }, options));
    return fromGets(keys, answer.responses);
  }

  async #transact({ env, scope }, decide, op) {
    const keys = this.#keysOf(env, scope);
    const what = `the cell ${env}/${scope}`;
    const key = (k) => keys.bytes.get(k) ?? Buffer.from(k, 'utf8');
    // The cell as this store last committed it, if it did: decided on without reading it first.
    let known = this.#cells.has(keys.cell) ? { loaded: this.#cells.get(keys.cell), fresh: false } : null;
    for (;;) {
      const { loaded, fresh } = known ?? { loaded: await this.#load(op, what, keys), fresh: true };
      known = null;
      let answer;
      let refusal = null;
      try {
        answer = decide({ env, scope, files: { ...loaded.files } }, Date.now());
      } catch (e) {
        refusal = e;
      }
      const changes = refusal === null ? (answer.changes ?? []) : [];
      if (changes.length === 0) {
        // A refusal or a no-op on the remembered cell may be stale: decide again on what is there.
        if (!fresh) {
          this.#cells.delete(keys.cell);
          continue;
        }
        if (refusal !== null) throw refusal;
        return answer;
      }
      const plan = call('etcd-txn', { cell: keys.cell, revisions: loaded.revisions, changes });
      const txn = {
        compare: plan.compare.map((c) => ({ key: key(c.key), target: 'Mod', result: 'Equal', mod_revision: String(c.modRevision) })),
        success: [
          ...plan.put.map((p) => ({ request_put: { key: key(p.key), value: Buffer.from(p.value, 'utf8') } })),
          ...plan.delete.map((k) => ({ request_delete_range: { key: key(k) } })),
        ],
        // A refused compare answers the cell as it is now, in the same round trip.
        failure: keys.gets,
      };
      let committed;
      try {
        committed = await this.#attempt(op, what, (c, options) => c.kv.txn(txn, options));
      } catch (e) {
        this.#cells.delete(keys.cell);
        throw e;
      }
      if (committed.succeeded) {
        this.#cells.set(keys.cell, after(keys, loaded, changes, Number(committed.header.revision)));
        return answer;
      }
      this.#cells.delete(keys.cell);
      // Another writer moved the cell since it was read: back off, then decide on the cell now.
      if (fresh) await this.#retry(op, what, this.#current % Math.max(1, this.#endpoints.length), 'conflict', null, '');
      known = { loaded: fromGets(keys, committed.responses), fresh: true };
    }
  }

  /**
   * One transaction on the cell `{env, scope}`: reads its state files, calls core operation `op` with
   * `request` plus `cell` and `nowMs`, and commits the answer's `changes` only if no state file changed
   * meanwhile (again from a fresh read while another writer wins, within the budget). Resolves with the
   * core's answer; rejects with its refusal or the store's failure (a BatonError).
   * @param {{env: string, scope: string}} target
   * @param {string} op
   * @param {object} [request] the request without `cell` and `nowMs`
   * @param {{deadline?: number}} [opts] `deadline`: the monotonic ms (`performance.now()`) by which to give
   *   up at the latest (a held lease's `storeDeadline`); without it the store budget from now bounds it
   */
  transact(target, op, request = {}, { deadline } = {}) {
    return this.transactWith(target, (cell, nowMs) => call(op, { ...request, cell, nowMs }), { deadline });
  }

  /** The store primitive under `transact`, deciding with `decide(cell, nowMs)` (see the git store's). */
  transactWith(target, decide, { deadline } = {}) {
    return this.#exclusive((op) => this.#transact(target, decide, op), deadline);
  }

  /** A read-only operation on the cell; an answer with changes is refused (INTERNAL). */
  read(target, op, request = {}, { deadline } = {}) {
    return this.readWith(target, (cell, nowMs) => call(op, { ...request, cell, nowMs }), { deadline });
  }

  /** `read` with the decision `decide(cell, nowMs)`. */
  readWith({ env, scope }, decide, { deadline } = {}) {
    return this.#exclusive(async (op) => {
      const keys = this.#keysOf(env, scope);
      const { files } = await this.#load(op, `the cell ${env}/${scope}`, keys);
      const answer = decide({ env, scope, files }, Date.now());
      if (Array.isArray(answer.changes) && answer.changes.length > 0) {
        throw hostError('INTERNAL', 'a read-only operation answered changes; use transact', {});
      }
      return answer;
    }, deadline);
  }

  /**
   * The scopes of environment `env`, sorted by scope, each with the text of its `latest.json` (null when it
   * has none): one range read of the environment's keys; the core says which are cells (`etcd-list`).
   * @param {string} env
   * @returns {Promise<{scope: string, text: string | null}[]>}
   */
  list(env) {
    return this.#exclusive(async (op) => {
      const range = this.#keysOf(env).env;
      const got = await this.#attempt(op, `the list of ${env}`, (c, options) =>
        c.kv.range({ key: Buffer.from(range, 'utf8'), range_end: rangeEnd(range) }, options),
      );
      const kvs = (got.kvs ?? []).map((kv) => ({ key: kv.key.toString('utf8'), value: kv.value.toString('utf8') }));
      return call('etcd-list', { env, range, kvs }).cells;
    });
  }

  /** Closes the connections (after the operations already queued); the store stays usable. */
  close() {
    return this.#exclusive(async () => {
      this.#cells.clear();
      this.#clients.forEach((_, i) => this.#forget(i));
    });
  }
}

module.exports = { EtcdStore };
