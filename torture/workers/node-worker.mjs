/**
 * A torture worker on the Node package: holds the scope's lease (waiting for it), appends its
 * (scope, holder, epoch, sequence) entries to the scope's receipt with fenced ledger writes, finishes the
 * run (a pull request hands its branch's resources over) and releases. Reports to the log file named in its
 * plan, one JSON line per event: `lease` (holder, epoch), `ack` (a write the store confirmed), `shared`/`refused`
 * (a create of a resource every scope tries: it owns it now / another scope does), `released`.
 * Usage: node node-worker.mjs '<plan JSON>'
 */
import { appendFileSync } from 'node:fs';
import { openStore, withLease } from '../../host-node/js/index.mjs';
import { withFaults } from '../../host-node/test-support/faults.cjs';

const plan = JSON.parse(process.argv[2]);
const log = (event) => appendFileSync(plan.log, `${JSON.stringify(event)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A ledger record, retried while the store's answer is lost (the write is idempotent); LOCK_LOST ends. */
async function record(lease, key) {
  for (let attempt = 0; ; attempt++) {
    try {
      await lease.record({ adapter: 'torture', key }, 'x');
      return;
    } catch (e) {
      if (e.code === 'LOCK_LOST' || attempt >= 3) throw e;
    }
  }
}

/**
 * Creates a resource every scope may try to create at once: intend, then record (retried while the store's
 * answer is lost); OWNED_BY_OTHER_SCOPE (another scope owns it) is logged as `refused`.
 */
async function createShared(lease, key) {
  for (let attempt = 0; ; attempt++) {
    try {
      await lease.intend({ adapter: 'torture', key });
      await lease.record({ adapter: 'torture', key }, lease.scope);
      log({ event: 'shared', key });
      return;
    } catch (e) {
      if (e.code === 'OWNED_BY_OTHER_SCOPE') return log({ event: 'refused', key, owner: e.details?.owner });
      if (e.code === 'LOCK_LOST' || attempt >= 3) throw e;
    }
  }
}

// The harness's faults (BATON_TEST_*): the published package has none.
const store = withFaults(openStore(plan.store));
try {
  await withLease(
    store,
    {
      context: plan.context,
      ttlMs: plan.ttlMs,
      wait: true,
      pollMs: 100,
      waitTimeoutMs: plan.waitTimeoutMs,
      onWarning: (w) => log({ event: 'warning', warning: w }),
    },
    async (lease) => {
      log({ event: 'lease', holder: lease.holder, epoch: lease.epoch });
      for (let seq = 1; seq <= plan.writes; seq++) {
        const key = `${lease.scope}/${lease.holder}/${lease.epoch}/${seq}`;
        await record(lease, key);
        log({ event: 'ack', key });
        const k = plan.shared?.[seq - 1];
        if (k !== undefined && k !== '-') await createShared(lease, `shared-${k}`);
        await sleep(plan.gapMs);
      }
    },
  );
  log({ event: 'done' });
} catch (e) {
  log({ event: 'error', code: e.code ?? 'UNKNOWN', message: String(e.message) });
  process.exitCode = e.code === 'LOCK_LOST' || e.code === 'LOCK_HELD' ? 3 : 1;
} finally {
  await store.close();
}
