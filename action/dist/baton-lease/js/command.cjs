'use strict';
/**
 * The `baton-lease` command (`bin/baton-lease.cjs`): `run -- CMD`, `destroy -- CMD` and `gc`, meaning what
 * `baton run`, `baton destroy` and `baton gc` mean. The core reads the command line (`command-line`: the
 * CLI's flags and durations), detects the context, drives the run (the run machine, through run-loop.cjs,
 * as host-native/src/driver.rs does), decides gc's scopes and renders the envelope and the exit code
 * (`render`); this file gathers the inputs and carries the actions out.
 */
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const { call } = require('./core.cjs');
const { errorObject } = require('./loop.cjs');
const { detectContext } = require('./context.cjs');
const { openStore } = require('./dir-store.cjs');
const { RunLoop } = require('./run-loop.cjs');
const { startWork } = require('./work.cjs');
const { gcPlan, openPrsText, lsRemote, sortOut } = require('./gc.cjs');
const { runChange, changeOp } = require('./claim.cjs');
const { predecessorOf } = require('./ownership.cjs');

const VARS = ['BATON_STORE', 'BATON_APPROVED_BY', 'BATON_CANCEL_GRACE', 'BATON_HOLDER', 'BATON_EPOCH'];

const USAGE = `Usage: baton-lease <run|destroy|gc> [FLAGS] [-- CMD]

  run -- CMD       run CMD under the scope's lease (as \`baton run\`)
  destroy -- CMD   destroy what the scope owns through CMD (as \`baton destroy\`)
  gc               list (or --destroy) the environment's abandoned scopes (as \`baton gc\`)
  ledger intend|record|forget --adapter A --key K   a fenced change of the ledger (as \`baton ledger\`)

\`baton-lease <command> --help\` shows the flags. Exit codes: 0 ok, 1 failed, 2 refused before doing
anything, 3 lock held or lost; \`run\` exits with CMD's code.
`;

/** `BATON_STORE` for the command: a method of the dir and git stores, a property of the etcd store. */
const exportSpecOf = (store) => (typeof store.exportSpec === 'function' ? store.exportSpec() : store.exportSpec);

const note = (text) => process.stderr.write(`baton: ${text}\n`);

/** The core's reading of the command line of `command` (throws USAGE). */
function commandLine(command, argv) {
  const vars = {};
  for (const k of VARS) if (typeof process.env[k] === 'string') vars[k] = process.env[k];
  return call('command-line', { command, argv, vars });
}

/**
 * Prints `outcome` (`{data}` or `{error}`) of `command` as `baton` does (one envelope on stdout with
 * `json`, else the error line on stderr) and returns the exit code (`exit` when the run machine chose one).
 */
function finish(command, json, outcome, exit) {
  const rendered = call('render', { command, ...outcome });
  if (json) process.stdout.write(`${JSON.stringify(rendered.envelope)}\n`);
  else if (rendered.text) process.stderr.write(`${rendered.text}\n`);
  return exit ?? rendered.exit;
}

/**
 * Runs the run machine made from `config` over `store` until it is done, running `work.cmd` when it says
 * so. Resolves with the verdict `{exit, ok, error?, fields}`. The process's SIGINT/SIGTERM go to the
 * machine (cancel.cjs exits 128 + n once it is done).
 */
function drive(store, config, work) {
  return new Promise((resolve) => {
    let running = null;
    const loop = new RunLoop(store, config, {
      startWork: (action) => {
        note(`running \`${work.shown}\` under ${action.label} (epoch ${action.epoch})`);
        const started = { cmd: work.cmd, json: work.json, storeSpec: exportSpecOf(store), env: action.env, deleteList: action.delete };
        running = startWork(started, (end) => {
          running = null;
          loop.command((r, now) => r.workEnded(end, now));
        });
      },
      signal: (signal) => running?.signal(signal),
      note,
      warning: note,
      done: resolve,
    });
    loop.start(true);
  });
}

/** The run machine's configuration of `job` for the command line `cl` in `context` over `store`. */
function runConfig(job, cl, context, store) {
  const config = { job, random: randomBytes(20).toString('hex'), ...cl.config, context, approvedBy: cl.approvedBy ?? null };
  if (Number.isSafeInteger(store.budgetMs) && store.budgetMs > 0) config.storeBudgetMs = store.budgetMs;
  return config;
}

/** `run` and `destroy` of scope `context.scope`: the verdict's outcome and exit code. */
async function scoped(job, cl, context, store) {
  const verdict = await drive(store, runConfig(job, cl, context, store), cl);
  const data = { environment: context.env, scope: context.scope, store: store.spec, ...verdict.fields };
  return { outcome: verdict.error ? { error: verdict.error } : { data }, exit: verdict.exit };
}

/** `gc`: the plan, printed (dry run) or carried out scope by scope. */
async function gc(cl) {
  const context = detectContext({ overrides: cl.overrides, envOnly: true });
  const store = openStore(cl.store ?? undefined);
  try {
    const text = await openPrsText(cl.openPrs ?? undefined, () => fs.readFileSync(0, 'utf8'));
    const plan = gcPlan(await store.list(context.env), text, await lsRemote(cl.remote ?? 'origin'), context.defaultBranch);
    const base = { environment: context.env, scope: context.scope ?? null, store: store.spec };
    const data = { ...base, abandoned: plan.abandoned, kept: plan.kept, openPrs: plan.openPrs, dryRun: !cl.destroy };
    if (!cl.destroy) {
      if (!cl.json) {
        process.stdout.write(plan.table);
        if (plan.abandoned.length > 0) note('dry run: pass --destroy -- CMD to destroy these scopes');
      }
      return { outcome: { data } };
    }
    const results = [];
    for (const { scope } of plan.abandoned) {
      note(`destroying ${context.env}/${scope}`);
      const scopeContext = detectContext({ overrides: { ...cl.overrides, env: context.env, scope } });
      const { outcome } = await scoped('destroy', cl, scopeContext, store);
      if (outcome.error?.code === 'LOCK_HELD') note(`skipped ${scope}: its lease is live (${outcome.error.message})`);
      else if (outcome.error) note(`could not destroy ${scope}: ${outcome.error.code} ${outcome.error.message}`);
      results.push({ scope, error: outcome.error });
    }
    const sorted = sortOut(results);
    Object.assign(data, { destroyed: sorted.destroyed, skipped: sorted.skipped, failed: sorted.failed });
    if (sorted.error === null) return { outcome: { data } };
    return { outcome: { error: { ...data, ...sorted.error } } };
  } finally {
    await store.close();
  }
}

/** `ledger intend|record|forget`: one fenced transaction on the scope's receipt, as `baton ledger`. */
async function ledger(line) {
  const context = detectContext({ overrides: line.overrides });
  const store = openStore(line.store ?? undefined);
  try {
    const { holder, epoch, resource, id } = line;
    // The claim first (intend, record), freed after a forget: the core's ownership change, as `baton
    // ledger` (js/claim.cjs). The marker an entry that becomes owned is written with (the core judges it):
    // docs/compatibility.md.
    const { predecessor } = predecessorOf(context);
    const config = { env: context.env, scope: context.scope, holder, epoch, predecessor, resource, op: changeOp(line.op, id), ownedMarker: process.env.BATON_CREATED_BY ?? null };
    const answer = await runChange(store, config);
    for (const w of answer.warnings) note(`warning: ${w}`);
    if (!line.json) note(`${line.op.replace('ledger-', '')}: ${resource.adapter}:${resource.key} in ${context.env}/${context.scope} (epoch ${epoch})`);
    const data = { environment: context.env, scope: context.scope, store: store.spec, resource, ledger: answer.receipt?.ledger ?? null };
    if (answer.forgotten != null) data.forgotten = answer.forgotten;
    return { outcome: { data } };
  } finally {
    await store.close();
  }
}

/**
 * Carries out the command line `argv` (the words after `baton-lease`) without printing its end: resolves
 * `{command, json, outcome: {data} | {error}, exit?}`, or `{usage, exit}` for help. The GitHub Action
 * uses it to read a run's envelope; `main` prints it.
 * @param {string[]} argv
 */
async function execute(argv) {
  const [first, ...rest] = argv;
  // `ledger record ...` is one command of two words.
  const [command, words] = first === 'ledger' && rest.length > 0 && !rest[0].startsWith('-') ? [`ledger ${rest[0]}`, rest.slice(1)] : [first, rest];
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    return { usage: USAGE, exit: command === undefined ? 2 : 0 };
  }
  if (command === '--version' || command === '-V') return { usage: `baton-lease ${require('../package.json').version}\n`, exit: 0 };
  const json = words.includes('--json') && !words.slice(0, words.indexOf('--json')).includes('--');
  let cl;
  try {
    cl = commandLine(command, words);
  } catch (e) {
    const known = ['run', 'destroy', 'gc', 'ledger intend', 'ledger record', 'ledger forget'].includes(command);
    return { command: known ? command : null, json, outcome: { error: errorObject(e) } };
  }
  if (cl.help) return { usage: cl.usage, exit: 0 };
  try {
    if (command === 'gc') return { command, json: cl.json, ...(await gc(cl)) };
    if (command.startsWith('ledger ')) return { command, json: cl.json, ...(await ledger(cl)) };
    const context = detectContext({ overrides: cl.overrides });
    const store = openStore(cl.store ?? undefined, { run: command === 'run' });
    try {
      return { command, json: cl.json, ...(await scoped(command, cl, context, store)) };
    } finally {
      // Not awaited: the end is printed first (after a cancel the process exits as soon as the run is
      // done, and a git store's clone is removed at exit then).
      store.close().catch(() => {});
    }
  } catch (e) {
    return { command, json: cl.json, outcome: { error: errorObject(e) } };
  }
}

/**
 * Runs the command line `argv` (the words after `baton-lease`) and prints its end as `baton` does;
 * resolves with the exit code.
 * @param {string[]} argv
 */
async function main(argv) {
  const end = await execute(argv);
  if (end.usage !== undefined) {
    (end.exit === 0 ? process.stdout : process.stderr).write(end.usage);
    return end.exit;
  }
  return finish(end.command, end.json, end.outcome, end.exit);
}

module.exports = { main, execute, finish };
