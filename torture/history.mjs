/**
 * Streams a store's history to the checker: per cell, the state after each committed transaction, in
 * commit order, one state at a time. The dir store's comes from the journal the test build keeps
 * (BATON_TEST_JOURNAL, written while the cell mutex is held); the git store's from each cell ref's commit
 * history in the remote.
 */
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
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
 * Streams the history of a dir store from its journal (one JSON line per committed transaction): calls
 * `onState(cell, state)` for each line, in order, without holding the journal in memory.
 * @param {string} journal
 * @param {(cell: string, state: object) => void} onState
 */
export async function streamDirHistory(journal, onState) {
  if (!existsSync(journal)) return;
  const lines = createInterface({ input: createReadStream(journal, 'utf8'), crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) {
    n += 1;
    if (line.trim() === '') continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch (e) {
      throw new Error(`the journal ${journal} has a torn line ${n}: ${e.message}`);
    }
    onState(entry.cell, state(`journal line ${n}${entry.gap ? ', the state a dead writer committed' : ''}`, entry.files));
  }
}

/** Runs git in `repo` and returns stdout. */
function git(repo, args) {
  return execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
}

/**
 * Reads objects with one `git cat-file --batch`, calling `onObject(name, text or null)` for each in order
 * as its bytes arrive (the output is never held whole).
 */
async function catEach(repo, names, onObject) {
  if (names.length === 0) return;
  const child = spawn('git', ['-C', repo, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = Buffer.alloc(0);
  let next = 0;
  const parse = () => {
    for (;;) {
      if (next >= names.length) return;
      const eol = buf.indexOf(10);
      if (eol === -1) return;
      const header = buf.subarray(0, eol).toString('utf8');
      if (header.endsWith(' missing')) {
        onObject(names[next++], null);
        buf = buf.subarray(eol + 1);
        continue;
      }
      const size = Number(header.split(' ')[2]);
      if (buf.length < eol + 1 + size + 1) return;
      onObject(names[next++], buf.subarray(eol + 1, eol + 1 + size).toString('utf8'));
      buf = buf.subarray(eol + 1 + size + 1);
    }
  };
  child.stdout.on('data', (chunk) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    parse();
  });
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git cat-file exited ${code}`))));
  });
  child.stdin.on('error', () => {});
  for (const name of names) {
    if (!child.stdin.write(`${name}\n`)) await new Promise((r) => child.stdin.once('drain', r));
  }
  child.stdin.end();
  await done;
  if (next !== names.length) throw new Error(`git cat-file answered ${next} of ${names.length} objects`);
}

/**
 * Streams the history of a git store from a (bare) repository that holds its refs: every ref under
 * `prefix`, its commits oldest first (first parent), each commit's cell files, as `onState(cell, state)`.
 * @param {string} repo
 * @param {(cell: string, state: object) => void} onState
 * @param {string} [prefix]
 */
export async function streamGitHistory(repo, onState, prefix = 'refs/heads/baton-receipts/') {
  const refs = git(repo, ['for-each-ref', '--format=%(refname)', prefix]).split('\n').filter(Boolean);
  const names = ['lock.json', 'epoch.json', 'latest.json'];
  for (const ref of refs) {
    const commits = git(repo, ['rev-list', '--first-parent', '--reverse', ref]).split('\n').filter(Boolean);
    // The cell directory: where the tip keeps its state files.
    const paths = git(repo, ['ls-tree', '-r', '--name-only', commits.at(-1)]).split('\n').filter(Boolean);
    const stateFile = paths.find((p) => /(^|\/)(lock|epoch|latest)\.json$/.test(p));
    if (!stateFile) continue;
    const dir = stateFile.includes('/') ? stateFile.slice(0, stateFile.lastIndexOf('/')) : '';
    const cell = dir || ref;
    const wanted = commits.flatMap((c) => names.map((n) => `${c}:${dir ? `${dir}/` : ''}${n}`));
    let files = {};
    let i = 0;
    await catEach(repo, wanted, (_, text) => {
      files[names[i % names.length]] = text;
      i += 1;
      if (i % names.length === 0) {
        onState(cell, state(`commit ${commits[i / names.length - 1].slice(0, 10)}`, files));
        files = {};
      }
    });
  }
}
