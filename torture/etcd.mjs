/**
 * The torture harness's etcd column: a real etcd of the run's own (host-node/test-etcd.mjs: loopback ports of
 * its own, a temporary data directory, stopped by pid afterwards) and its history for the checker, read
 * from etcd's own revision history of the cell keys: a watch from revision 1 replays every put and delete
 * under the store's prefix in revision order; the keys one revision changed are one committed transaction,
 * and after each the changed cells' state files are handed to the checker, as the git column hands over
 * each commit.
 */
import { createRequire } from 'node:module';
import { startEtcd } from '../host-node/test-etcd.mjs';

// etcd3 is the Node package's own dependency (host-node/package.json), not the harness's.
const require = createRequire(new URL('../host-node/package.json', import.meta.url));
const { Etcd3 } = require('etcd3');

/** The key prefix the workers' stores use (the default, BATON_ETCD_PREFIX unset). */
export const PREFIX = '/baton/';

/** Starts a one-member etcd for a torture run: `{spec, endpoints, stop()}`. */
export function startTortureEtcd(label) {
  return startEtcd(`torture-${label}`);
}

/** Parses a JSON file's text; `{ corrupt: text }` when it is not JSON, null when absent. */
function parse(text) {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { corrupt: text };
  }
}

/**
 * Streams the history of the etcd store at `endpoints` under `prefix`: for every revision, in order, the
 * cells whose keys it changed, each as `onState(cell, state)` with the cell's state files after it.
 * @param {string} endpoints comma-separated client URLs
 * @param {(cell: string, state: object) => void} onState
 */
export async function streamEtcdHistory(endpoints, onState, prefix = PREFIX) {
  // A replay from revision 1 comes in large responses: no limit on what one may hold.
  const client = new Etcd3({ hosts: endpoints.split(','), grpcOptions: { 'grpc.max_receive_message_length': -1 } });
  try {
    const head = await client.get(`${prefix}\u0000`).exec();
    const last = Number(head.header.revision);
    /** key -> value now (as replayed). */
    const files = new Map();
    let pending = { revision: 0, cells: new Set() };
    const flush = () => {
      for (const cell of [...pending.cells].sort()) {
        const file = (name) => files.get(`${prefix}${cell}/${name}`) ?? null;
        const epoch = parse(file('epoch.json'));
        onState(cell, {
          at: `revision ${pending.revision}`,
          lock: parse(file('lock.json')),
          epochFile: typeof epoch?.epoch === 'number' ? epoch.epoch : null,
          receipt: parse(file('latest.json')),
        });
      }
      pending = { revision: 0, cells: new Set() };
    };
    if (last <= 1) return;
    await new Promise((resolve, reject) => {
      let done = false;
      const finish = (e) => {
        if (done) return;
        done = true;
        clearTimeout(stall);
        if (e) reject(e);
        else resolve();
      };
      // A replay that stops short of the last revision fails the run instead of hanging it.
      let seen = 0;
      let stall;
      const watch = () => {
        clearTimeout(stall);
        stall = setTimeout(() => finish(new Error(`the etcd history stopped at revision ${seen} of ${last}`)), 10_000);
      };
      watch();
      client
        .watch()
        .prefix(prefix)
        .startRevision('1')
        .create()
        .then((watcher) => {
          watcher.on('error', finish);
          watcher.on('data', (res) => {
            watch();
            for (const ev of res.events) {
              const key = ev.kv.key.toString('utf8');
              const revision = Number(ev.kv.mod_revision);
              if (revision !== pending.revision && pending.cells.size > 0) flush();
              pending.revision = revision;
              seen = revision;
              const rest = key.slice(prefix.length);
              const cut = rest.lastIndexOf('/');
              if (cut > 0) pending.cells.add(rest.slice(0, cut));
              if (ev.type === 'Delete') files.delete(key);
              else files.set(key, ev.kv.value.toString('utf8'));
            }
            // etcd never splits one revision's events across responses: the last one is complete here.
            if (pending.revision >= last) {
              flush();
              watcher.cancel().then(() => finish(), finish);
            }
          });
        }, finish);
    });
  } finally {
    client.close();
  }
}
