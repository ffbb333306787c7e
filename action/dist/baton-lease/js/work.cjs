'use strict';
/**
 * The command a run of the `baton-lease` command guards (`run -- CMD`, `destroy -- CMD`): started in a
 * process group of its own, signalled as the run machine says, reaped. Process plumbing only, as
 * host-native/src/work.rs is for `baton run`: when to start, signal or kill is the machine's call.
 */
const { spawn } = require('node:child_process');
const { constants } = require('node:os');

const SIGNALS = { interrupt: 'SIGINT', terminate: 'SIGTERM', kill: 'SIGKILL' };

/**
 * Starts `cmd` with the run's variables (`env`) and `BATON_STORE` exported; a destroy's `deleteList` goes
 * to its stdin as one JSON line. With `json` its stdout goes to stderr (stdout carries one envelope).
 * `ended` is called once with the machine's work-ended input: `{kind: 'exited', code}`,
 * `{kind: 'signalled', signal}` or `{kind: 'not-started', message}`.
 * @param {{cmd: string[], json: boolean, storeSpec: string, env: Record<string, string>, deleteList?: object[]}} work
 * @param {(end: object) => void} ended
 * @returns {{signal: (name: 'interrupt' | 'terminate' | 'kill') => void}}
 */
function startWork({ cmd, json, storeSpec, env, deleteList }, ended) {
  let done = false;
  const end = (value) => {
    if (done) return;
    done = true;
    ended(value);
  };
  const [program, ...rest] = cmd;
  const child = spawn(program, rest, {
    env: { ...process.env, ...env, BATON_STORE: storeSpec },
    // Its own process group (and session), so stopping it reaches everything it started.
    detached: true,
    stdio: [deleteList === undefined ? 'inherit' : 'pipe', json ? process.stderr : 'inherit', 'inherit'],
  });
  child.on('error', (e) => end({ kind: 'not-started', message: `cannot start \`${program}\`: ${e.message}` }));
  child.on('exit', (code, signal) => {
    if (code !== null) end({ kind: 'exited', code });
    else end({ kind: 'signalled', signal: constants.signals[signal] ?? 9 });
  });
  if (child.stdin) {
    // A command that does not read its stdin is fine: the write fails and is ignored.
    child.stdin.on('error', () => {});
    child.stdin.end(`${JSON.stringify(deleteList)}\n`);
  }
  return {
    signal(name) {
      if (done || child.pid === undefined) return;
      try {
        process.kill(-child.pid, SIGNALS[name] ?? 'SIGKILL');
      } catch {
        // the group is gone already: its exit is on its way
      }
    },
  };
}

module.exports = { startWork };
