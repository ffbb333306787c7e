'use strict';
/**
 * The original tool's legacy receipts branch (`sponson/receipts`, reference/sponson-behaviour.md §2.3), read
 * as the original reads it when a git store shares the original's ref prefix (`sponson-receipts`): a cell
 * without a ref of its own is read from the branch's `<envDir>/<scopeDir>/` files (a live lock there is
 * respected, a receipt found only there is read), and the first commit of the cell's own ref is seeded with
 * them. The branch itself is never written. The same as host-native/src/store/git/legacy.rs.
 */
const { git, REMOTE } = require('./git-run.cjs');
const { call } = require('./core.cjs');

/** The ref prefix the original tool uses; only a store with this prefix reads the legacy branch. */
const SHARED_PREFIX = 'sponson-receipts';
/** The legacy branch on the remote. */
const BRANCH = 'refs/heads/sponson/receipts';
/** Where the clone keeps its last fetch of it. */
const LOCAL = 'refs/baton-legacy';
/** The root commit message suffix of a cell ref started from the legacy branch. */

/**
 * Fetches the legacy branch into the clone: true when it exists, false when the remote has none; the failed
 * run otherwise (`{code, stderr}`), for the caller to classify.
 */
async function fetchLegacy(clone) {
  const r = await git(clone, ['-c', 'gc.auto=0', 'fetch', '-q', '--no-tags', '--depth=1', REMOTE, `+${BRANCH}:${LOCAL}`]);
  if (r.code === 0) return true;
  if (r.stderr.includes("couldn't find remote ref")) return false;
  return r;
}

/** The files under `dir/` on the fetched branch: `[[tree path, text]]`, sorted by path. */
async function legacyFiles(clone, dir) {
  const r = await git(clone, ['ls-tree', '-r', '-z', '--name-only', LOCAL, '--', `${dir}/`]);
  if (r.code !== 0) throw new Error(`git ls-tree of the legacy branch failed: ${r.stderr}`);
  const paths = r.stdout.toString('utf8').split('\0').filter((p) => p.startsWith(`${dir}/`)).sort();
  if (paths.length === 0) return [];
  const b = await git(clone, ['cat-file', '--batch'], { input: `${paths.map((p) => `${LOCAL}:${p}`).join('\n')}\n` });
  if (b.code !== 0) throw new Error(`git cat-file failed: ${b.stderr}`);
  // Parsed by the core (`git-cat-parse`, as the native store); Latin-1: one character per byte.
  const { objects } = call('git-cat-parse', { output: b.stdout.toString('latin1'), count: paths.length });
  return paths.flatMap((p, i) => (typeof objects[i] === 'string' ? [[p, objects[i]]] : []));
}

/** The scope directories of `envDir/` on the fetched branch. */
async function legacyScopeDirs(clone, envDir) {
  const r = await git(clone, ['ls-tree', '-z', '-d', '--name-only', `${LOCAL}:${envDir}`]);
  if (r.code !== 0) return []; // no such environment on the branch
  return r.stdout.toString('utf8').split('\0').filter((p) => p !== '');
}

module.exports = { SHARED_PREFIX, BRANCH, LOCAL, fetchLegacy, legacyFiles, legacyScopeDirs };
