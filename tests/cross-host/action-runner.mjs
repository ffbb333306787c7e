// A stand-in for the GitHub Actions runner, for the action's tests: it runs the action's entry points as
// the runner does (node24 there, this Node here) with INPUT_* variables, a real GITHUB_EVENT_PATH payload,
// fresh GITHUB_STATE / GITHUB_OUTPUT / GITHUB_ENV / GITHUB_PATH files per step read back after it (the file-command
// format, `name<<delimiter` blocks and `name=value` lines), STATE_* for the post step, and the variables
// GITHUB_ENV exported to every later step. Cancellation is the runner's: SIGINT, SIGTERM 7.5 s later.
import { mkdtempSync, writeFileSync, readFileSync, realpathSync } from 'node:fs';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoDir = fileURLToPath(new URL('../..', import.meta.url));
export const bin = process.env.BATON_BIN ?? path.join(repoDir, 'target/debug/baton');
export const fresh = (tag) => realpathSync(mkdtempSync(path.join(os.tmpdir(), `baton-action-${tag}-`)));

/** Parses a file-command file into {name: value}. */
export function parseFileCommands(text) {
  const out = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, name, delimiter] = heredoc;
      const value = [];
      for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i]);
      out[name] = value.join('\n');
    } else if (line.includes('=')) {
      out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
    }
  }
  return out;
}

/** A bare remote with a `main` and a `feat/x` branch, and a checkout of it (the job's workspace). */
export function gitRepo() {
  const dir = fresh('repo');
  const remote = path.join(dir, 'remote.git');
  const work = path.join(dir, 'work');
  const git = (cwd, ...args) => execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
  git(dir, 'init', '-q', '--bare', remote);
  git(dir, 'init', '-q', '-b', 'main', work);
  git(work, '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '--allow-empty', '-m', 'init');
  git(work, 'remote', 'add', 'origin', remote);
  git(work, 'push', '-q', 'origin', 'main', 'main:feat/x');
  return { dir, remote, work, sha: git(work, 'rev-parse', 'HEAD'), git };
}

/** The event payload and variables of a `pull_request` run for PR `pr` from `feat/x` into `main`. */
export function pullRequestEvent(dir, pr, sha) {
  const event = path.join(dir, `event-${pr}.json`);
  writeFileSync(
    event,
    JSON.stringify({
      action: 'synchronize',
      number: pr,
      pull_request: { number: pr, head: { ref: 'feat/x', sha }, base: { ref: 'main', repo: { default_branch: 'main' } } },
      repository: { default_branch: 'main', full_name: 'owner/repo' },
    }),
  );
  return {
    GITHUB_EVENT_NAME: 'pull_request',
    GITHUB_EVENT_PATH: event,
    GITHUB_REF: `refs/pull/${pr}/merge`,
    GITHUB_REF_NAME: `${pr}/merge`,
    GITHUB_HEAD_REF: 'feat/x',
    GITHUB_BASE_REF: 'main',
    GITHUB_SHA: sha,
  };
}

/** One job: its steps share the workspace, the exported variables and the action's state. */
export class Job {
  #n = 0;
  constructor({ cwd, vars = {}, inputs = {} }) {
    this.cwd = cwd;
    this.dir = fresh('job');
    this.base = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      GITHUB_REPOSITORY: 'owner/repo',
      GITHUB_SERVER_URL: 'https://github.invalid',
      GITHUB_WORKSPACE: cwd,
      RUNNER_TEMP: this.dir,
      ...vars,
    };
    this.inputs = inputs;
    /** GITHUB_ENV of the steps so far. */
    this.env = {};
    /** The action's saved state. */
    this.state = {};
    /** The outputs of the action's main step. */
    this.outputs = {};
    /** GITHUB_PATH of the steps so far (prepended to PATH, the latest first). */
    this.paths = [];
  }

  #files() {
    this.#n += 1;
    const files = {};
    for (const name of ['GITHUB_STATE', 'GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH']) {
      files[name] = path.join(this.dir, `${name.toLowerCase()}-${this.#n}`);
      writeFileSync(files[name], '');
    }
    return files;
  }

  #spawn(cmd, args, extra) {
    const files = this.#files();
    const env = { ...this.base, ...this.env, ...extra, ...files };
    if (this.paths.length > 0) env.PATH = [...this.paths, env.PATH].join(path.delimiter);
    const child = spawn(cmd, args, { cwd: this.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const done = once(child, 'exit').then(([status, signal]) => {
      const read = (k) => parseFileCommands(readFileSync(files[k], 'utf8'));
      const paths = readFileSync(files.GITHUB_PATH, 'utf8').split('\n').filter(Boolean);
      return { status, signal, stdout, stderr, state: read('GITHUB_STATE'), outputs: read('GITHUB_OUTPUT'), env: read('GITHUB_ENV'), paths };
    });
    return { child, done, stderr: () => stderr };
  }

  /** Starts the action's main step with the job's inputs and `inputs`; `{child, done}`. */
  startMain(inputs = {}) {
    const vars = {};
    for (const [k, v] of Object.entries({ ...this.inputs, ...inputs })) vars[`INPUT_${k.replace(/ /g, '_').toUpperCase()}`] = v;
    const step = this.#spawn(process.execPath, [path.join(repoDir, 'action/main.cjs')], vars);
    const done = step.done.then((r) => {
      Object.assign(this.state, r.state);
      Object.assign(this.outputs, r.outputs);
      Object.assign(this.env, r.env);
      this.paths.unshift(...r.paths.reverse());
      return r;
    });
    return { ...step, done };
  }

  /** Runs the action's main step to its end. */
  main(inputs = {}) {
    return this.startMain(inputs).done;
  }

  /** Starts a later `run:` step of the job (bash -e), with what GITHUB_ENV exported. */
  startStep(script) {
    return this.#spawn('bash', ['-e', '-c', script], {});
  }

  step(script) {
    return this.startStep(script).done;
  }

  /** The action's post step, with STATE_* from the main step. */
  post() {
    const vars = {};
    for (const [k, v] of Object.entries(this.state)) vars[`STATE_${k}`] = v;
    for (const [k, v] of Object.entries(this.inputs)) vars[`INPUT_${k.toUpperCase()}`] = v;
    return this.#spawn(process.execPath, [path.join(repoDir, 'action/post.cjs')], vars).done;
  }
}

/** Cancels a step as the runner does: SIGINT, then SIGTERM 7.5 s later if it is still running. */
export function cancel(child) {
  child.kill('SIGINT');
  const t = setTimeout(() => child.kill('SIGTERM'), 7500);
  child.once('exit', () => clearTimeout(t));
}

/** `baton lock status --json` of `scope` on `store`: the lock or null. */
export function lockOf(store, scope, env = 'preview') {
  const out = execFileSync(bin, ['lock', 'status', '--store', store, '--env', env, '--scope', scope, '--json'], { encoding: 'utf8' });
  return JSON.parse(out).lock;
}

export async function until(what, f, ms = 20_000) {
  const start = Date.now();
  while (!(await f())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
