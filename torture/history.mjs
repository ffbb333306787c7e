/**
 * Reads a store's history for the checker: per cell, the state after each committed transaction, in commit
 * order. The dir store's comes from the journal the test build keeps (BATON_TEST_JOURNAL, written while the
 * cell mutex is held); the git store's from each cell ref's commit history in the remote.
 */
import { readFile } from 'node:fs/promises';
import { execFileSync, spawn } from 'node:child_process';

/** Parses a JSON file's text; `{ corrupt: text }` when it is not JSON, null when absent. */
function parse(text) {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { corrupt: text };
  }
}

/** A state from the texts of a cell's files. */
function state(at, files) {
  const epoch = parse(files['epoch.json']);
  return {
    at,
    lock: parse(files['lock.json']),
    epochFile: typeof epoch?.epoch === 'number' ? epoch.epoch : null,
    receipt: parse(files['latest.json']),
  };
}

/**
 * The history of a dir store from its journal (one JSON line per committed transaction).
 * @param {string} journal
 * @returns {Promise<Record<string, object[]>>}
 */
export async function dirHistory(journal) {
  const text = await readFile(journal, 'utf8').catch((e) => (e.code === 'ENOENT' ? '' : Promise.reject(e)));
  const cells = {};
  for (const [n, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const entry = JSON.parse(line);
    (cells[entry.cell] ??= []).push(state(`journal line ${n + 1}`, entry.files));
  }
  return cells;
}

/** Runs git in `repo` and returns stdout. */
function git(repo, args) {
  return execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
}

/** Reads many objects with one `git cat-file --batch`: name → text, or null when missing. */
async function catMany(repo, names) {
  if (names.length === 0) return new Map();
  const child = spawn('git', ['-C', repo, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const chunks = [];
  child.stdout.on('data', (c) => chunks.push(c));
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git cat-file exited ${code}`))));
  });
  child.stdin.end(names.map((n) => `${n}\n`).join(''));
  await done;
  const out = Buffer.concat(chunks);
  const result = new Map();
  let pos = 0;
  for (const name of names) {
    const eol = out.indexOf(10, pos);
    const header = out.subarray(pos, eol).toString('utf8');
    pos = eol + 1;
    if (header.endsWith(' missing')) {
      result.set(name, null);
      continue;
    }
    const size = Number(header.split(' ')[2]);
    result.set(name, out.subarray(pos, pos + size).toString('utf8'));
    pos += size + 1;
  }
  return result;
}

/**
 * The history of a git store from a (bare) repository that holds its refs: every ref under `prefix`, its
 * commits oldest first (first parent), each commit's cell files.
 * @param {string} repo
 * @param {string} [prefix]
 * @returns {Promise<Record<string, object[]>>}
 */
export async function gitHistory(repo, prefix = 'refs/heads/baton-receipts/') {
  const refs = git(repo, ['for-each-ref', '--format=%(refname)', prefix]).split('\n').filter(Boolean);
  const cells = {};
  for (const ref of refs) {
    const commits = git(repo, ['rev-list', '--first-parent', '--reverse', ref]).split('\n').filter(Boolean);
    const tip = commits.at(-1);
    // The cell directory: where the tip (or any commit) keeps its state files.
    const paths = git(repo, ['ls-tree', '-r', '--name-only', tip]).split('\n').filter(Boolean);
    const stateFile = paths.find((p) => /(^|\/)(lock|epoch|latest)\.json$/.test(p));
    if (!stateFile) continue;
    const dir = stateFile.includes('/') ? stateFile.slice(0, stateFile.lastIndexOf('/')) : '';
    const names = ['lock.json', 'epoch.json', 'latest.json'];
    const wanted = commits.flatMap((c) => names.map((n) => `${c}:${dir ? `${dir}/` : ''}${n}`));
    const texts = await catMany(repo, wanted);
    cells[dir || ref] = commits.map((c) =>
      state(
        `commit ${c.slice(0, 10)}`,
        Object.fromEntries(names.map((n) => [n, texts.get(`${c}:${dir ? `${dir}/` : ''}${n}`)])),
      ),
    );
  }
  return cells;
}
