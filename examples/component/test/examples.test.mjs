// Runs the two worked examples of docs/component.md against the component that scripts/build-wasm.sh
// built, each in a host nobody here wrote: jco's transpiled JavaScript under Node, and the `wasmtime`
// package's component API under Python. Each example asserts the typed answers itself and exits non-zero
// on the first surprise; this test checks that it ran to its end. A third test lists, from the component's
// own types, what still takes JSON text. scripts/setup.sh installs both hosts (pinned by
// ../package-lock.json and ../python/requirements.txt) and links them here.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const dir = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const component = path.resolve(dir, '..', '..', 'target', 'baton-core.component.wasm');
const generated = path.join(dir, 'generated');

function run(command, args) {
  const r = spawnSync(command, args, { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  const output = `${r.stdout}${r.stderr}`;
  assert.equal(r.error, undefined, `${command} did not start: ${r.error}`);
  assert.equal(r.status, 0, `${command} ${args.join(' ')} exited ${r.status}:\n${output}`);
  return output;
}

function need(file, what) {
  assert.ok(existsSync(file), `${file} is missing: ${what}`);
}

test('jco transpile, then the Node example takes a lock, writes fenced and gets the typed refusals', () => {
  need(component, 'run scripts/build-wasm.sh first');
  const jco = path.join(dir, 'node_modules', '.bin', 'jco');
  need(jco, 'run scripts/setup.sh first (it installs jco)');
  rmSync(generated, { recursive: true, force: true });
  run(jco, ['transpile', component, '-o', generated, '--quiet']);
  const out = run(process.execPath, ['node/example.mjs', path.join(generated, 'baton-core.component.js')]);
  assert.match(out, /approval refused: env-not-approved: /);
  assert.match(out, /B refused: lock-held: /);
  assert.match(out, /A's stale write refused: lock-lost: /);
  assert.match(out, /node example: all assertions held/);
});

test("the Python example does the same through wasmtime's component API", () => {
  need(component, 'run scripts/build-wasm.sh first');
  const python = path.join(dir, '.venv', 'bin', 'python');
  need(python, 'run scripts/setup.sh first (it makes the venv with wasmtime)');
  const out = run(python, ['python/example.py', component]);
  assert.match(out, /approval refused: env-not-approved: /);
  assert.match(out, /B refused: lock-held: /);
  assert.match(out, /A's stale write refused: lock-lost: /);
  assert.match(out, /python example: all assertions held/);
});

test('the component imports nothing, and no function takes a JSON request (json_surface.py)', (t) => {
  need(component, 'run scripts/build-wasm.sh first');
  const python = path.join(dir, '.venv', 'bin', 'python');
  need(python, 'run scripts/setup.sh first (it makes the venv with wasmtime)');
  const out = run(python, ['python/json_surface.py', component]);
  for (const line of out.trim().split('\n')) t.diagnostic(line); // each interface, in the log
  assert.match(out, /json surface: no import; no function takes a JSON request/);
  assert.match(out, /^decisions: 3 functions$/m);
});
