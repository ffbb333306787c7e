// The Node runner of the conformance corpus (tests/scenarios/README.md): every scenario through the wasm
// core, with the cell threaded through the steps exactly as a store would thread it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { invoke, BatonError } from 'baton-lease';

const corpus = fileURLToPath(new URL('../../tests/scenarios/', import.meta.url));
const files = readdirSync(corpus).filter((f) => f.endsWith('.json')).sort();

/** Whether `op` works on a cell (`lock-*`, `fence-check`), so the runner supplies the current one. */
const takesCell = (op) => op.startsWith('lock-') || op === 'fence-check';

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
  let cell = scenario.cell ? { files: {}, ...structuredClone(scenario.cell) } : null;
  const transcript = [];
  scenario.steps.forEach((step, i) => {
    const label = `step ${i} (${step.op})`;
    assert.ok(('expect' in step) !== ('expectError' in step), `${label}: needs exactly one of expect / expectError`);
    const input = structuredClone(step.input ?? {});
    if (takesCell(step.op) && !('cell' in input) && cell) input.cell = cell;
    let answer;
    let error;
    try {
      answer = JSON.parse(invoke(step.op, JSON.stringify(input)));
    } catch (e) {
      if (!(e instanceof BatonError)) throw e;
      error = e;
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
  return transcript;
}

test('the corpus is not empty', () => {
  assert.ok(files.length > 0, `no scenario (*.json) in ${corpus}`);
});

for (const file of files) {
  test(`scenario ${file}`, () => {
    const scenario = JSON.parse(readFileSync(path.join(corpus, file), 'utf8'));
    const transcript = runScenario(scenario);
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
