// The Node runner of the conformance corpus (tests/scenarios/README.md): every scenario through the wasm
// core, with the cell threaded through the steps exactly as a store would thread it; run journeys through
// the `Run` class (../test-journeys.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { invoke, BatonError } from 'baton-lease';
import { isJourney, runJourney } from '../test-journeys.mjs';

// The wasm-bindgen module itself, for the `Lease` class the lease-* steps drive.
const wasm = createRequire(import.meta.url)('../pkg/baton_node.js');

const corpus = fileURLToPath(new URL('../../tests/scenarios/', import.meta.url));
const files = readdirSync(corpus).filter((f) => f.endsWith('.json')).sort();

/** The other ops whose request takes a cell (`succession`, `parent-cell`, `approval`, `receipt-parse`, `scope-names` take none). */
const CELL_OPS = [
  'fenced-write',
  'claim-take',
  'claim-free',
  'claim-move',
  'run-begin',
  'run-finish',
  'ledger-intend',
  'ledger-record',
  'ledger-forget',
  'ledger-check',
  'handover',
  'destroy-plan',
  'scope-status',
];

/** Whether `op` works on a cell (`lock-*`, `fence-check`, CELL_OPS), so the runner supplies the current one. */
const takesCell = (op) => op.startsWith('lock-') || op === 'fence-check' || CELL_OPS.includes(op);

/** Subset match of the README: objects by named keys, arrays by length and element, scalars by equality. */
function match(actual, expected, where = '$') {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${where}: array length`);
    expected.forEach((e, i) => match(actual[i], e, `${where}[${i}]`));
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object' && !Array.isArray(actual), `${where}: expected an object, got ${JSON.stringify(actual)}`);
    for (const [k, e] of Object.entries(expected)) {
      assert.ok(Object.hasOwn(actual, k), `${where}.${k}: missing`);
      match(actual[k], e, `${where}.${k}`);
    }
  } else {
    assert.equal(actual, expected, `${where}: value`);
  }
}

/** The code of what a call into the wasm module threw (a refusal carries `code`; anything else is a bug). */
function codeOf(e) {
  if (e instanceof BatonError || (e && typeof e.code === 'string' && typeof e.json === 'string')) return e.code;
  throw e;
}

/**
 * One `lease-*` step (README "Lease steps") on the scenario's lease `state.lease` (the wasm-bindgen `Lease`
 * class): `lease-new` answers `{}`, `lease-token` `{token}`, the others call the machine and drain it into
 * `{actions, timeout}`. Returns the answer, or throws `{code}` for a refusal, as `invoke` does.
 */
function leaseStep(state, op, input) {
  const fail = (code) => Object.assign(new Error(code), { code, json: JSON.stringify({ code, message: code }) });
  if (op === 'lease-new') {
    // The input is the configuration; a refused one leaves the previous lease in place.
    const lease = new wasm.Lease(JSON.stringify(input));
    state.lease?.free();
    state.lease = lease;
    return {};
  }
  const lease = state.lease;
  if (!lease) throw fail('INTERNAL');
  const now = input.now;
  switch (op) {
    case 'lease-token':
      return { token: lease.fencingToken(now) ?? null };
    case 'lease-acquire':
      lease.acquire(now);
      break;
    case 'lease-release':
      lease.release(now);
      break;
    case 'lease-timeout':
      lease.handleTimeout(now);
      break;
    case 'lease-result':
      lease.handleStoreResult(input.id, input.result, now);
      break;
    default:
      throw fail('INTERNAL');
  }
  const actions = [];
  for (let a = lease.pollAction(); a !== undefined; a = lease.pollAction()) actions.push(a);
  return { actions, timeout: lease.pollTimeout() ?? null };
}

/** Applies a change set to a cell snapshot, as a store commits it. */
function apply(cell, changes) {
  for (const c of changes) {
    if (c.op === 'write') cell.files[c.file] = c.content;
    else if (c.op === 'delete') delete cell.files[c.file];
    else assert.fail(`unknown change ${JSON.stringify(c)}`);
  }
}

/** Runs one scenario; returns its transcript (`[{op, ok} | {op, error}]`). */
function runScenario(scenario) {
  const cell = scenario.cell ? { files: {}, ...structuredClone(scenario.cell) } : null;
  const transcript = [];
  const state = { lease: null };
  try {
    runSteps(scenario, cell, state, transcript);
  } finally {
    state.lease?.free();
  }
  return transcript;
}

/** The steps of `scenario`, threading `cell` (replaced when null and a step commits) and the lease `state`. */
function runSteps(scenario, cell, state, transcript) {
  scenario.steps.forEach((step, i) => {
    const label = `step ${i} (${step.op})`;
    assert.ok(('expect' in step) !== ('expectError' in step), `${label}: needs exactly one of expect / expectError`);
    const input = structuredClone(step.input ?? {});
    if (takesCell(step.op) && !('cell' in input) && cell) input.cell = cell;
    let answer;
    let error;
    try {
      answer = step.op.startsWith('lease-') ? leaseStep(state, step.op, input) : JSON.parse(invoke(step.op, JSON.stringify(input)));
    } catch (e) {
      error = { code: codeOf(e), message: e.message };
    }
    transcript.push(error ? { op: step.op, error: error.code } : { op: step.op, ok: answer });
    if ('expectError' in step) {
      assert.equal(error?.code, step.expectError, `${label}: expected ${step.expectError}, got ${error ? error.code : JSON.stringify(answer)}`);
      return;
    }
    assert.ok(!error, `${label}: failed with ${error?.code}: ${error?.message}`);
    match(answer, step.expect, label);
    if (Array.isArray(answer.changes)) {
      cell ??= { env: input.cell?.env, scope: input.cell?.scope, files: {} };
      apply(cell, answer.changes);
    }
  });
}

test('the corpus is not empty', () => {
  assert.ok(files.length > 0, `no scenario (*.json) in ${corpus}`);
});

for (const file of files) {
  test(`scenario ${file}`, () => {
    const scenario = JSON.parse(readFileSync(path.join(corpus, file), 'utf8'));
    const transcript = isJourney(scenario) ? runJourney(scenario, match) : runScenario(scenario);
    const out = process.env.BATON_TRANSCRIPT_DIR;
    if (out) {
      mkdirSync(out, { recursive: true });
      writeFileSync(path.join(out, `${path.basename(file, '.json')}.node.json`), `${JSON.stringify(transcript, null, 2)}\n`);
    }
  });
}

test('the runner itself fails on a mismatch', () => {
  const scenario = (expect) => ({
    cell: { env: 'preview', scope: 'pr-1', files: {} },
    steps: [
      { op: 'lock-acquire', input: { holder: 'a', ttlMs: 1000, nowMs: 1791633600000 }, expect: { lock: { holder: 'a', epoch: 1 } } },
      { op: 'lock-acquire', input: { holder: 'b', ttlMs: 1000, nowMs: 1791633600001 }, ...expect },
    ],
  });
  assert.deepEqual(runScenario(scenario({ expectError: 'LOCK_HELD' })).map((t) => t.error ?? 'ok'), ['ok', 'LOCK_HELD']);
  assert.throws(() => runScenario(scenario({ expectError: 'LOCK_LOST' })), /expected LOCK_LOST/);
  assert.throws(() => runScenario(scenario({ expect: { lock: { holder: 'b' } } })), /failed with LOCK_HELD/);
  assert.throws(() => match({ a: [1, 2] }, { a: [1] }), /array length/);
  assert.throws(() => match({ a: 1 }, { b: null }), /missing/);
  assert.throws(() => match({ a: null }, { a: 0 }), /value/);
  match({ a: 1, extra: true, nested: { x: [{ y: 1, z: 2 }] } }, { a: 1, nested: { x: [{ y: 1 }] } });
});

test('the runner drives the lease machine and fails on a mismatch', () => {
  const scenario = (expect) => ({
    steps: [
      { op: 'lease-new', input: { env: 'preview', scope: 'pr-1', holder: 'a', ttlMs: 900 }, expect: {} },
      { op: 'lease-acquire', input: { now: 0 }, expect: { actions: [{ type: 'store', id: 1, op: 'lock-acquire' }], timeout: null } },
      { op: 'lease-result', input: { id: 1, now: 10, result: { ok: { lock: { holder: 'a', epoch: 1, expiresAt: '2026-10-10T12:00:00.900Z' }, preempted: null } } }, ...expect },
    ],
  });
  const transcript = runScenario(scenario({ expect: { actions: [{ event: { kind: 'acquired', epoch: 1 } }], timeout: 310 } }));
  assert.deepEqual(transcript[2].ok.timeout, 310);
  assert.throws(() => runScenario(scenario({ expect: { timeout: 311 } })), /timeout: value/);
  assert.throws(() => runScenario(scenario({ expect: { actions: [] } })), /array length/);
  assert.throws(() => runScenario(scenario({ expectError: 'INTERNAL' })), /expected INTERNAL/);
  const noLease = { steps: [{ op: 'lease-acquire', input: { now: 0 }, expectError: 'INTERNAL' }, { op: 'lease-new', input: { env: 'preview', scope: 'pr-1', holder: 'a', ttlMs: 0 }, expectError: 'USAGE' }] };
  assert.deepEqual(runScenario(noLease).map((t) => t.error), ['INTERNAL', 'USAGE']);
});

test('the journey runner fails on a mismatch, a wrong error and a malformed step', () => {
  const config = { job: 'run', context: { env: 'preview', scope: 'main', branch: 'main' }, random: '0123456789abcdef0123456789abcdef0123456789' };
  const journey = (...steps) => ({ name: 'self-test', journey: [{ do: 'create', config, expect: { holder: 'run-01234567' } }, ...steps] });
  const started = { do: 'start', expect: { actions: [{ type: 'note' }, { type: 'store', id: 1, op: 'cell-steps' }], timeout: null } };
  assert.equal(runJourney(journey(started, { do: 'store', expect: { actions: [{}, {}] } }, { do: 'work-ended', end: { kind: 'exited', code: 0 }, expect: {} }, { do: 'store', expect: {} }), match).length, 5);
  assert.throws(() => runJourney(journey({ do: 'start', expect: { actions: [] } }), match), /array length/);
  assert.throws(() => runJourney(journey(started, { do: 'store', expectError: 'LOCK_HELD' }), match), /expected LOCK_HELD/);
  assert.throws(() => runJourney(journey({ do: 'fly', expect: {} }), match), /`do` must be one of/);
  assert.throws(() => runJourney(journey(started), match), /the run is not done/);
});

test('the journey runner catches a machine that breaks the guarantees', () => {
  const work = { type: 'start-work', env: {}, epoch: 1, label: 'x' };
  const done = { type: 'done', verdict: { exit: 0, ok: true, fields: {} } };
  const cases = [
    [[work, { type: 'store', id: 1, op: 'lock-release', request: {} }], /the lock is released while the work may still run/],
    [[work, { type: 'store', id: 1, op: 'cell-steps', request: { steps: [{ op: 'run-finish' }, { op: 'lock-release' }] } }], /the lock is released while the work may still run/],
    [[{ type: 'signal', signal: 'kill' }], /a signal for work that is not running/],
    [[work, done], /the run is done while the work may still run/],
    [[done, { type: 'note', text: 'late' }], /an action after `done`/],
    [[work, work], /the work is started twice/],
  ];
  for (const [actions, want] of cases) {
    /** A machine that says what it is scripted to say when started. */
    class Scripted {
      queue = [];
      holder = 'scripted';
      start() {
        this.queue.push(...actions);
      }
      pollAction() {
        return this.queue.shift();
      }
      pollTimeout() {
        return undefined;
      }
      free() {}
    }
    const doc = { name: 'broken machine', journey: [{ do: 'create', config: { context: { env: 'preview', scope: 'main' } }, expect: {} }, { do: 'start', expect: {} }] };
    assert.throws(() => runJourney(doc, match, Scripted), want);
  }
});
