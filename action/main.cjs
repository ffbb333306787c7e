'use strict';
/**
 * The action's main step. Three modes:
 * - `run: CMD`: CMD (run by bash) under the scope's lease, exactly `baton-lease run -- bash -e -c CMD`;
 * - no `run`: the lease for the rest of the job. A detached renewer process (renewer.cjs) acquires it and
 *   keeps it alive across later steps, which get BATON_ENV, BATON_SCOPE, BATON_HOLDER, BATON_EPOCH and
 *   BATON_STORE through GITHUB_ENV (and `baton-lease` on PATH, for `baton-lease ledger ...`); the post step (post.cjs, also after a failure or a cancel) stops the
 *   renewer and makes sure the lock is released;
 * - `mode: gc`: `baton-lease gc` on the environment (with `destroy: CMD`, `--destroy -- bash -e -c CMD`).
 * Outputs: scope, epoch, holder (gc: abandoned, a JSON list of scopes).
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { input, saveState, setOutput, exportVariable, addPath } = require('./runner.cjs');
const { pkg, leaseFlags } = require('./lease-inputs.cjs');

const { execute, finish } = pkg('js/command.cjs');

/** Where `baton-lease` is for the job's commands (`baton-lease ledger record ...` under the lease). */
const BIN = path.join(__dirname, 'bin');

/** Sets the outputs of a run's envelope (its data, or its error's details). */
function runOutputs(outcome) {
  const fields = outcome.data ?? outcome.error ?? {};
  const context = fields.context ?? {};
  const scope = fields.scope ?? context.scope;
  const epoch = fields.lock?.epoch ?? fields.epoch;
  if (scope !== undefined) setOutput('scope', scope);
  if (epoch !== undefined) setOutput('epoch', epoch);
  if (fields.holder !== undefined) setOutput('holder', fields.holder);
}

/** `run: CMD` and `mode: gc`: one `baton-lease` command line; returns its exit code. */
async function oneCommand(argv, gcMode) {
  const end = await execute(argv);
  if (gcMode) {
    const data = end.outcome.data ?? end.outcome.error ?? {};
    setOutput('abandoned', JSON.stringify((data.abandoned ?? []).map((a) => a.scope)));
  } else {
    runOutputs(end.outcome);
  }
  return finish(end.command, end.json, end.outcome, end.exit);
}

/** Without `run`: starts the renewer, waits for its grant, exports the lease; returns the exit code. */
function jobLease(flags) {
  const log = path.join(process.env.RUNNER_TEMP || os.tmpdir(), `baton-renewer-${process.pid}-${Date.now()}.log`);
  const fd = fs.openSync(log, 'a');
  const child = spawn(process.execPath, [path.join(__dirname, 'renewer.cjs')], {
    detached: true,
    stdio: ['ignore', fd, fd, 'ipc'],
    env: { ...process.env, BATON_ACTION_FLAGS: JSON.stringify(flags) },
  });
  fs.closeSync(fd);
  // Saved at once: the post step stops the renewer even if this step is cancelled while it waits.
  saveState('renewer', child.pid);
  saveState('renewer-log', log);
  const stop = (signal) => {
    process.stdout.write(`baton: ${signal} while acquiring; stopping the renewer\n`);
    child.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (code) => {
      if (settled) return;
      settled = true;
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      child.removeAllListeners();
      if (child.connected) child.disconnect();
      child.unref();
      resolve(code);
    };
    child.on('message', (m) => {
      if (m.type === 'note') process.stderr.write(`baton: ${m.text}\n`);
      else if (m.type === 'acquired') {
        for (const [k, v] of Object.entries({ holder: m.holder, epoch: m.epoch, env: m.env, scope: m.scope, store: m.store })) saveState(k, v);
        exportVariable('BATON_ENV', m.env);
        exportVariable('BATON_SCOPE', m.scope);
        exportVariable('BATON_HOLDER', m.holder);
        exportVariable('BATON_EPOCH', m.epoch);
        exportVariable('BATON_STORE', m.store);
        addPath(BIN);
        setOutput('scope', m.scope);
        setOutput('epoch', m.epoch);
        setOutput('holder', m.holder);
        process.stderr.write(`baton: ${m.env}/${m.scope} is held by ${m.holder} (epoch ${m.epoch}) for the rest of the job; the post step releases it\n`);
        settle(0);
      } else if (m.type === 'failed') {
        finish('lock acquire', false, { error: m.error });
        settle(m.exit);
      }
    });
    child.on('exit', (code, signal) => {
      process.stderr.write(`baton: the renewer ended (${signal ?? code}) before it held the lease; see ${log}\n`);
      settle(code === 0 || code === null ? 1 : code);
    });
  });
}

async function main() {
  // The command (and gc's destroy command) can call `baton-lease ledger ...`.
  process.env.PATH = `${BIN}${path.delimiter}${process.env.PATH ?? ''}`;
  const run = input('run');
  const mode = input('mode') || 'lease';
  if (mode === 'gc') {
    const argv = ['gc', ...leaseFlags({ withScope: false })];
    if (input('open-prs') !== '') argv.push('--open-prs', input('open-prs'));
    if (input('remote') !== '') argv.push('--remote', input('remote'));
    if (input('destroy') !== '') argv.push('--destroy', '--', 'bash', '-e', '-c', input('destroy'));
    if (!process.env.GH_TOKEN && input('github-token')) process.env.GH_TOKEN = input('github-token');
    return oneCommand(argv, true);
  }
  if (mode !== 'lease') {
    process.stderr.write(`error USAGE: input \`mode\` must be lease or gc, got \`${mode}\`\n`);
    return 2;
  }
  if (run !== '') return oneCommand(['run', ...leaseFlags(), '--', 'bash', '-e', '-c', run], false);
  return jobLease(leaseFlags());
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`error INTERNAL: the baton action failed: ${e && e.stack ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  },
);
