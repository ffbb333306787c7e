// The Node runner of the run journeys (tests/scenarios/README.md "Run journeys"): the wasm-bindgen `Run`
// class driven step by step by a host that keeps an in-memory store and a virtual clock, as
// core/tests/runner/journey.rs drives the native machine and the component. Outside test/, so that the test
// runner does not count it as a test file; test/scenarios.test.mjs runs it.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const wasm = createRequire(import.meta.url)('./pkg/baton_node.js');

/** The wall clock (Unix ms) at monotonic time 0: the `nowMs` of a transaction is this plus the clock. */
export const WALL0 = 1791633600000;

/** Step kinds and the keys each may carry besides `do`, `why`, `expect` and `expectError`. */
const STEPS = {
  create: ['config'],
  start: [],
  store: ['hold', 'fail'],
  advance: ['to'],
  'work-ended': ['end'],
  signal: ['signal'],
  outside: ['cell', 'op', 'input'],
};

/** Whether `doc` is a run journey (it has `journey` where a scenario has `steps`). */
export const isJourney = (doc) => 'journey' in doc;

/** A refusal by the binding: its code, compared with `expectError`. */
class Refusal extends Error {
  constructor(code) {
    super(code);
    this.code = code;
  }
}

/** Calls into the wasm module; a core refusal (it carries `code` and `json`) becomes a Refusal. */
function binding(f) {
  try {
    return f();
  } catch (e) {
    if (e && typeof e.code === 'string' && typeof e.json === 'string') throw new Refusal(e.code);
    throw e;
  }
}

/** One core operation for the store: `{ok: answer}` or `{error: {code, message, ...details}}` (no hint). */
function transact(op, request) {
  try {
    return { ok: JSON.parse(wasm.invoke(op, JSON.stringify(request))) };
  } catch (e) {
    if (!(e && typeof e.json === 'string')) throw e;
    const { hint, ...error } = JSON.parse(e.json);
    return { error };
  }
}

/** The host: the store (`env/scope` -> file -> content), the clock, and what it knows of the current run. */
/** How a journey names a store action: its op, or for a `cell-steps` batch its steps' ops joined by `+`. */
function nameOf(a) {
  return a.op === 'cell-steps' ? (a.request?.steps ?? []).map((s) => s.op).join('+') : a.op;
}

class Host {
  constructor(Run) {
    this.Run = Run;
  }

  cells = new Map();
  now = 0;
  run = null;
  own = null;
  pending = [];
  work = 'idle';
  done = false;

  step(kind, step) {
    const actions = [];
    let results;
    switch (kind) {
      case 'create':
        return this.create(step.config);
      case 'outside':
        return this.outside(step);
      case 'start':
        binding(() => this.need().start(this.now));
        break;
      case 'store':
        results = this.carryOut(step, actions);
        break;
      case 'advance':
        this.advance(step.to, actions);
        break;
      case 'work-ended':
        this.need();
        assert.equal(this.work, 'running', 'work-ended, but no work is running');
        binding(() => this.run.workEnded(step.end ?? null, this.now));
        this.work = 'ended';
        break;
      case 'signal':
        binding(() => this.need().signal(step.signal ?? '', this.now));
        break;
      default:
        assert.fail(`no step kind ${kind}`);
    }
    this.drain(actions);
    const answer = { actions, timeout: this.run.pollTimeout() ?? null };
    if (results) answer.results = results;
    answer.cells = this.snapshot();
    return answer;
  }

  need() {
    assert.ok(this.run, 'no run was created');
    return this.run;
  }

  create(config) {
    assert.ok(!this.run || this.done, 'a run is created while the previous one is not done');
    this.assertFinished();
    const run = binding(() => new this.Run(config ?? null));
    this.run?.free();
    this.run = run;
    if (config.object) {
      const cell = transact('parent-cell', config.object);
      assert.ok(cell.ok, `parent-cell: ${JSON.stringify(cell.error)}`);
      this.own = { env: cell.ok.env, scope: cell.ok.scope };
    } else {
      this.own = { env: config.context?.env ?? '', scope: config.context?.scope ?? '' };
    }
    this.work = 'idle';
    this.done = false;
    return { holder: run.holder };
  }

  outside(step) {
    const [env, scope, ...rest] = (step.cell ?? '').split('/');
    assert.ok(env !== undefined && scope !== undefined && rest.length === 0, `cell must be "env/scope", got ${step.cell}`);
    const outcome = this.transaction(env, scope, step.op, structuredClone(step.input ?? {}), true);
    if (outcome.error) throw new Refusal(outcome.error.code);
    const { changes, ...answer } = outcome.ok;
    return { answer, cells: this.snapshot() };
  }

  /** One transaction on `env/scope` with the cell and `nowMs` added; the changes committed when `write`. */
  transaction(env, scope, op, request, write) {
    const key = `${env}/${scope}`;
    const files = { ...(this.cells.get(key) ?? {}) };
    const outcome = transact(op, { ...request, cell: { env, scope, files }, nowMs: WALL0 + this.now });
    if (write && outcome.ok) {
      for (const c of outcome.ok.changes ?? []) {
        if (c.op === 'write') files[c.file] = c.content;
        else if (c.op === 'delete') delete files[c.file];
      }
      if (Object.keys(files).length > 0) this.cells.set(key, files);
      else this.cells.delete(key);
    }
    return outcome;
  }

  carryOut(step, actions) {
    this.need();
    const hold = step.hold ?? [];
    const fail = step.fail ?? {};
    const named = (a, n) => (typeof n === 'string' ? nameOf(a) === n : a.id === n);
    const results = [];
    for (;;) {
      const pos = this.pending.findIndex((a) => !hold.some((h) => named(a, h)));
      if (pos < 0) break;
      const [action] = this.pending.splice(pos, 1);
      const failure = fail[nameOf(action)] ?? fail[String(action.id)];
      let outcome;
      if (failure) outcome = { error: failure };
      else {
        const cell = action.cell ?? this.own;
        outcome = this.transaction(cell.env, cell.scope, action.op, action.request ?? {}, action.type === 'store');
      }
      const op = nameOf(action);
      results.push(outcome.error ? { id: action.id, op, error: outcome.error.code } : { id: action.id, op });
      binding(() => this.run.handleStoreResult(action.id, outcome, this.now));
      this.drain(actions);
    }
    assert.ok(results.length > 0, 'nothing to carry out: no store or read action is pending (or all are held)');
    return results;
  }

  advance(to, actions) {
    this.need();
    assert.ok(Number.isInteger(to) && to >= this.now, `the clock must go forward from ${this.now}, got ${to}`);
    for (let i = 0; i < 10000; i++) {
      const at = this.run.pollTimeout();
      if (at === undefined || at > to) {
        this.now = to;
        return;
      }
      this.now = Math.max(this.now, at);
      this.run.handleTimeout(this.now);
      this.drain(actions);
    }
    assert.fail(`the machine keeps asking to be woken before ${to} (at ${this.now})`);
  }

  /** Polls every action, checking what a host can check, and keeps the store and read actions pending. */
  drain(actions) {
    for (let a = this.run.pollAction(); a !== undefined; a = this.run.pollAction()) {
      const where = `: ${JSON.stringify(a)}`;
      assert.ok(!this.done, `an action after \`done\`${where}`);
      const running = this.work === 'running';
      if (a.type === 'store' || a.type === 'read') {
        assert.ok(!(running && !a.cell && nameOf(a).split('+').includes('lock-release')), `the lock is released while the work may still run${where}`);
        this.pending.push(a);
      } else if (a.type === 'start-work') {
        assert.equal(this.work, 'idle', `the work is started twice${where}`);
        this.work = 'running';
      } else if (a.type === 'signal') {
        assert.ok(running, `a signal for work that is not running${where}`);
      } else if (a.type === 'done') {
        assert.ok(!running, `the run is done while the work may still run${where}`);
        this.done = true;
      }
      actions.push(a);
    }
  }

  assertFinished() {
    assert.ok(!this.run || this.done, 'the run is not done (a journey ends with `done`)');
    assert.equal(this.pending.length, 0, `${this.pending.length} store action(s) still pending`);
  }

  /** Every cell with files: `env/scope` -> file -> content (parsed when it is JSON), keys sorted. */
  snapshot() {
    const out = {};
    for (const key of [...this.cells.keys()].sort()) {
      const files = this.cells.get(key);
      out[key] = {};
      for (const f of Object.keys(files).sort()) {
        try {
          out[key][f] = JSON.parse(files[f]);
        } catch {
          out[key][f] = files[f];
        }
      }
    }
    return out;
  }
}

/** A copy of `answer` with null for every cell or file `want.cells` expects as null and the store does not have. */
function withAbsentFiles(want, answer) {
  if (!want?.cells || !answer?.cells) return answer;
  const got = structuredClone(answer);
  for (const [cell, files] of Object.entries(want.cells)) {
    if (files === null) got.cells[cell] ??= null;
    else if (got.cells[cell]) for (const [f, v] of Object.entries(files)) if (v === null) got.cells[cell][f] ??= null;
  }
  return got;
}

/**
 * Runs a journey; returns its transcript (`[{do, ok} | {do, error}]`). Throws on the first failure:
 * a step whose answer does not `match` (the corpus's subset match), a wrong or missing error, a broken
 * guarantee, or a journey that does not end with the run done and nothing pending. `Run` is the class
 * driven (the wasm-bindgen one; the runner's own tests pass a scripted one).
 */
export function runJourney(doc, match, Run = wasm.Run) {
  for (const k of Object.keys(doc)) assert.ok(['name', 'description', 'journey'].includes(k), `unknown key ${k}`);
  assert.ok(Array.isArray(doc.journey) && doc.journey.length > 0, '`journey` must be a non-empty array');
  const host = new Host(Run);
  const transcript = [];
  try {
    doc.journey.forEach((step, i) => {
      const label = `step ${i} (${step.do})`;
      const keys = STEPS[step.do];
      assert.ok(keys, `${label}: \`do\` must be one of ${Object.keys(STEPS)}`);
      for (const k of Object.keys(step)) assert.ok(['do', 'why', 'expect', 'expectError', ...keys].includes(k), `${label}: unknown key ${k}`);
      assert.ok(('expect' in step) !== ('expectError' in step), `${label}: needs exactly one of expect / expectError`);
      let answer;
      let code;
      try {
        answer = host.step(step.do, step);
      } catch (e) {
        if (!(e instanceof Refusal)) throw Object.assign(e, { message: `${label}: ${e.message}` });
        code = e.code;
      }
      transcript.push(code === undefined ? { do: step.do, ok: answer } : { do: step.do, error: code });
      if ('expectError' in step) {
        assert.equal(code, step.expectError, `${label}: expected ${step.expectError}, got ${code ?? JSON.stringify(answer)}`);
        return;
      }
      assert.equal(code, undefined, `${label}: failed with ${code}`);
      match(withAbsentFiles(step.expect, answer), step.expect, label);
    });
    host.assertFinished();
  } finally {
    host.run?.free();
  }
  return transcript;
}
