'use strict';
/**
 * The renewer of a job-long lease (the action without `run`): a detached process the main step starts. It
 * acquires the scope's lease as the flags say (BATON_ACTION_FLAGS: the action's inputs as the
 * `baton-lease` command line), tells the main step over IPC (`acquired` or `failed`), and then keeps the
 * lease alive (the core's lease machine renews it) until SIGTERM, from the post step: it releases and exits
 * 0. A lost lease (another run took it over after renewals failed) ends it with 3. It never decides
 * anything: the core reads the flags, checks approval and runs the lease.
 */
const { pkg } = require('./lease-inputs.cjs');

const { call } = pkg('js/core.cjs');
const { errorObject } = pkg('js/loop.cjs');
const { detectContext } = pkg('js/context.cjs');
const { openStore } = pkg('js/dir-store.cjs');
const { acquireLease } = pkg('js/lease.cjs');

const send = (message) => {
  if (process.connected) process.send(message);
};
const log = (text) => process.stderr.write(`${new Date().toISOString()} ${text}\n`);

let cancelled = false;
let lease = null;
let store = null;

/** Releases (when held) and exits with `code`. */
async function stop(code, why) {
  log(why);
  if (lease !== null) {
    const released = await lease.release();
    log(released.released ? `released ${lease.holder}` : `release: ${released.warning ?? 'not held any more'}`);
  }
  await store?.close();
  process.exit(code);
}

process.on('SIGTERM', () => {
  cancelled = true;
  if (lease !== null) stop(0, 'SIGTERM: releasing');
});
process.on('SIGINT', () => {
  cancelled = true;
  if (lease !== null) stop(0, 'SIGINT: releasing');
});
// The job's steps come and go; this process outlives the step that started it.
process.on('SIGHUP', () => {});

async function main() {
  const flags = JSON.parse(process.env.BATON_ACTION_FLAGS ?? '[]');
  const vars = {};
  for (const k of ['BATON_STORE', 'BATON_APPROVED_BY']) if (typeof process.env[k] === 'string') vars[k] = process.env[k];
  const cl = call('command-line', { command: 'run', argv: [...flags, '--', 'job'], vars });
  const context = detectContext({ overrides: cl.overrides });
  store = openStore(cl.store ?? undefined, { run: true });
  const options = { env: context.env, scope: context.scope, ...cl.config };
  delete options.cancelGraceMs;
  // Production needs an approver (ENV_NOT_APPROVED before anything is locked); elsewhere none is recorded.
  if (call('approval', { env: context.env, approvedBy: cl.approvedBy ?? null }).required) options.approvedBy = cl.approvedBy;
  options.onWait = ({ holder, expiresAt, remainingMs }) => {
    if (cancelled) throw new Error('cancelled while waiting');
    send({ type: 'note', text: `waiting for ${context.env}/${context.scope}: held by ${holder} until ${expiresAt} (${Math.round(remainingMs / 1000)} s left to wait)` });
  };
  options.onWarning = (text) => send({ type: 'note', text });
  const held = await acquireLease(store, options);
  lease = held;
  log(`acquired ${context.env}/${context.scope} as ${held.holder} (epoch ${held.epoch})`);
  send({ type: 'acquired', env: context.env, scope: context.scope, holder: held.holder, epoch: held.epoch, store: typeof store.exportSpec === 'function' ? store.exportSpec() : store.exportSpec });
  if (process.connected) process.disconnect();
  if (cancelled) return stop(0, 'cancelled while acquiring: releasing');
  held.signal.addEventListener('abort', () => {
    lease = null;
    stop(3, `the lease is lost: ${held.signal.reason?.message ?? 'renewals did not get through'}`);
  });
  // The lease's timers do not keep Node alive by themselves: this does, until SIGTERM.
  setInterval(() => {}, 2 ** 30);
}

main().catch((e) => {
  const error = errorObject(e);
  const exit = call('render', { command: 'lock acquire', error }).exit;
  send({ type: 'failed', error, exit });
  log(`failed: ${error.code} ${error.message}`);
  Promise.resolve(store?.close()).finally(() => process.exit(exit));
});
