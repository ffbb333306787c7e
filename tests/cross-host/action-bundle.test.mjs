// The GitHub Action runs the committed bundle action/dist/baton-lease/ (the runner has no network and runs
// no build): it must be exactly what scripts/build-action.sh makes from host-node/ now (the npm package as
// `npm pack` gives it, the WebAssembly core included). If this fails: bash scripts/build-wasm.sh &&
// bash scripts/build-action.sh, then commit action/dist/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const committed = path.join(repo, 'action', 'dist', 'baton-lease');

function files(dir, prefix = '') {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  ).sort();
}

test('the committed action bundle is the npm package as built now', () => {
  const fresh = path.join(mkdtempSync(path.join(os.tmpdir(), 'baton-bundle-')), 'baton-lease');
  execFileSync('bash', [path.join(repo, 'scripts', 'build-action.sh'), fresh], { stdio: 'pipe' });
  const hint = 'the action bundle is stale: run `bash scripts/build-wasm.sh && bash scripts/build-action.sh` and commit action/dist/';
  assert.deepEqual(files(committed), files(fresh), hint);
  for (const f of files(fresh)) {
    assert.ok(readFileSync(path.join(committed, f)).equals(readFileSync(path.join(fresh, f))), `${f} differs: ${hint}`);
  }
});
