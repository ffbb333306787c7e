// The Node etcd store on a real etcd of this file's own (test-etcd.mjs): a lease cycle is three round trips
// and a stale remembered cell is refused by the compare and decided again on the cell as it is, endpoints
// that refuse or never answer end in STORE_CONTENDED naming the endpoint within the budget, a dead endpoint
// before a live one fails over, a closed store leaves no socket to a silent endpoint open and its process exits by itself (with
// credentials too), and a user and password work and never show (the last test turns authentication on).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { openStore } from '../js/index.mjs';
import { freePort, startEtcd } from '../test-etcd.mjs';

const { call } = createRequire(import.meta.url)('../js/core.cjs');

let etcd;
before(async () => {
  etcd = await startEtcd('node-store');
});
after(async () => {
  await etcd?.stop();
});

/** Runs `fn(store)` on a store opened with `env` set (restored after), then closes the store. */
async function withStore(spec, env, fn) {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  let store;
  try {
    store = openStore(spec);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `op` with `request` on the cell `preview/cached` of `store`; every snapshot it decided on goes to `seen`. */
function decide(store, op, request, seen) {
  return store.transactWith({ env: 'preview', scope: 'cached' }, (cell, nowMs) => {
    seen.push(cell.files);
    return call(op, { ...request, cell, nowMs });
  });
}

/** Acquire, one fenced write, release: the lease cycle of the bench. Resolves with the epoch granted. */
async function cycle(store, holder, seen) {
  const { lock } = await decide(store, 'lock-acquire', { holder, ttlMs: 60_000 }, seen);
  await decide(store, 'fenced-write', { holder, epoch: lock.epoch, file: 'state.json', content: holder }, seen);
  await decide(store, 'lock-release', { holder, epoch: lock.epoch }, seen);
  return lock.epoch;
}

const delta = (before, after) => ({ txn: after.txn - before.txn, range: after.range - before.range });

test('a cycle is three round trips, and a stale remembered cell is refused and decided again as it is', async () => {
  const [a, b] = [openStore(etcd.spec), openStore(etcd.spec)];
  try {
    const seen = [];
    assert.equal(await cycle(a, 'a1', seen), 1);
    let before = await etcd.kvRequests();
    assert.equal(await cycle(a, 'a2', seen), 2);
    assert.deepEqual(delta(before, await etcd.kvRequests()), { txn: 3, range: 0 }, 'a cycle on the remembered cell');

    // Behind a's back, b takes the lock and releases it: epoch 3 was granted, the cell is free again.
    assert.equal(await cycle(b, 'b', seen), 3);
    seen.length = 0;
    before = await etcd.kvRequests();
    const { lock } = await decide(a, 'lock-acquire', { holder: 'a3', ttlMs: 60_000 }, seen);
    const after = await etcd.kvRequests();
    assert.deepEqual(seen.map((files) => JSON.parse(files['epoch.json']).epoch), [2, 3], 'remembered, then as it is');
    assert.equal(lock.epoch, 4, 'granted above b\'s epoch, not again at 3');
    assert.deepEqual(delta(before, after), { txn: 2, range: 0 }, 'the refused compare answered the cell');

    // b holds the lock now: a's remembered cell (its own release) is refused, and the cell as it is refuses a.
    await decide(a, 'lock-release', { holder: 'a3', epoch: 4 }, seen);
    await decide(b, 'lock-acquire', { holder: 'b', ttlMs: 60_000 }, seen);
    seen.length = 0;
    const e = await decide(a, 'lock-acquire', { holder: 'a4', ttlMs: 60_000 }, seen).catch((err) => err);
    assert.equal(e.code, 'LOCK_HELD', e.message);
    assert.equal(e.details.lock?.holder, 'b');
    assert.equal(seen.length, 2, 'the refusal was decided on the cell as it is');
  } finally {
    await a.close();
    await b.close();
  }
});

test('refused and silent endpoints end in STORE_CONTENDED naming the endpoint within the budget', async () => {
  const refused = `http://127.0.0.1:${await freePort()}`;
  // Accepts and never answers. Its sockets are destroyed at the end, whatever the client did (that a closed
  // store closes them is the next test's).
  const accepted = new Set();
  const silent = createServer((socket) => accepted.add(socket));
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const silentUrl = `http://127.0.0.1:${silent.address().port}`;
  try {
    for (const endpoint of [refused, silentUrl]) {
      const started = performance.now();
      const e = await withStore(`etcd:${endpoint}`, { BATON_STORE_BUDGET_MS: '2000' }, (s) =>
        s.acquireLock({ env: 'preview', scope: 'unreachable', holder: 'a', ttlMs: 60_000 }),
      ).catch((err) => err);
      const took = performance.now() - started;
      assert.equal(e.code, 'STORE_CONTENDED', `${endpoint}: ${e.message}`);
      assert.ok(e.message.includes(endpoint), `names the endpoint: ${e.message}`);
      assert.ok(took < 15_000, `${endpoint}: bounded by the budget, took ${took} ms`);
    }
    const lock = await withStore(`etcd:${refused},${etcd.url(etcd.members[0])}`, {}, (s) =>
      s.acquireLock({ env: 'preview', scope: 'failover', holder: 'a', ttlMs: 60_000 }),
    );
    assert.equal(lock.lock.epoch, 1, 'a dead endpoint before a live one fails over');
  } finally {
    for (const socket of accepted) socket.destroy();
    silent.close();
  }
});

/**
 * Runs a child process that opens a store on an endpoint that accepts, reads what the client sends (so that
 * it sees the client close) and never answers, fails one operation there (one attempt within the budget),
 * closes the store and says so; then it has nothing left to do once its stdin ends. Answers how many of the
 * child's sockets were still open once the store was closed (with `waitForClose`, waiting up to 10 s while
 * the child runs) and how the child ended after its stdin did (killed after 20 s if it had not).
 */
async function closeOnSilentEndpoint(env, { waitForClose }) {
  const sockets = [];
  const silent = createServer((socket) => {
    const entry = { socket, open: true };
    sockets.push(entry);
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => {
      entry.open = false;
    });
  });
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const spec = `etcd:http://127.0.0.1:${silent.address().port}`;
  const index = fileURLToPath(new URL('../js/index.cjs', import.meta.url));
  const code = `
    const { openStore } = require(${JSON.stringify(index)});
    (async () => {
      const store = openStore(${JSON.stringify(spec)});
      const e = await store.acquireLock({ env: 'preview', scope: 'silent', holder: 'a', ttlMs: 60000 }).catch((e) => e);
      await store.close();
      process.stdout.write(JSON.stringify({ code: e.code }) + '\\n');
      process.stdin.resume();
    })();`;
  const child = spawn(process.execPath, ['-e', code], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, BATON_STORE_BUDGET_MS: '1500', ...env },
  });
  const exited = once(child, 'exit');
  try {
    const [line] = await Promise.race([
      once(child.stdout, 'data'),
      exited.then(() => assert.fail('the child ended before it closed the store')),
    ]);
    const { code: failure } = JSON.parse(line.toString('utf8'));
    for (let waited = 0; waitForClose && waited < 10_000 && sockets.some((s) => s.open); waited += 50) await sleep(50);
    const result = { failure, sockets: sockets.length, open: sockets.filter((s) => s.open).length };
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [status, signal] = await exited;
    clearTimeout(timer);
    return { ...result, status, signal };
  } finally {
    child.kill('SIGKILL');
    for (const { socket } of sockets) socket.destroy();
    silent.close();
  }
}

test('a closed store leaves no socket to a silent endpoint open, and its process exits by itself', async () => {
  // grpc-js waits for the server's HTTP/2 SETTINGS without a timeout, and closing its channel did not end
  // that wait: the socket stayed open until the process exited.
  const r = await closeOnSilentEndpoint({}, { waitForClose: true });
  assert.equal(r.failure, 'STORE_CONTENDED');
  assert.ok(r.sockets > 0, 'the client connected to the silent endpoint');
  assert.equal(r.open, 0, `sockets still open after close(): ${r.open} of ${r.sockets}`);
  assert.deepEqual({ status: r.status, signal: r.signal }, { status: 0, signal: null }, 'the child exits by itself');
});

test('with a user and password too, a closed store on a silent endpoint lets its process exit', async () => {
  // etcd3's authentication call had no deadline: it waited for ever, and grpc-js keeps the process alive
  // while a call waits. (etcd3 never closes the channel it authenticates on: that socket is not asserted.)
  const r = await closeOnSilentEndpoint({ BATON_ETCD_USER: 'ci', BATON_ETCD_PASSWORD: 'pw' }, { waitForClose: false });
  assert.equal(r.failure, 'STORE_CONTENDED');
  assert.ok(r.sockets > 0, 'the client connected to the silent endpoint');
  assert.deepEqual({ status: r.status, signal: r.signal }, { status: 0, signal: null }, 'the child exits by itself');
});

test('a user and password work, refused ones are STORE_PERMISSION, and neither shows', async () => {
  for (const args of [
    ['user', 'add', 'root:rootpw'],
    ['user', 'add', 'ci:s3cret-pw'],
    ['role', 'add', 'baton'],
    ['role', 'grant-permission', 'baton', '--prefix=true', 'readwrite', '/baton/'],
    ['user', 'grant-role', 'ci', 'baton'],
    ['auth', 'enable'],
  ]) {
    const r = etcd.etcdctl(args);
    assert.equal(r.status, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  }
  const url = etcd.url(etcd.members[0]);
  const target = { env: 'preview', scope: 'auth', holder: 'a', ttlMs: 60_000 };
  const ok = await withStore(`etcd:${url}`, { BATON_ETCD_USER: 'ci', BATON_ETCD_PASSWORD: 's3cret-pw' }, (s) => s.acquireLock(target));
  assert.equal(ok.lock.holder, 'a');
  await withStore(`etcd:http://ci:s3cret-pw@127.0.0.1:${etcd.members[0].client}`, {}, async (s) => {
    assert.equal(s.path, `etcd:${url}`, 'the label has no credentials');
    assert.equal((await s.readLock(target)).holder, 'a');
  });
  const wrong = await withStore(`etcd:${url}`, { BATON_ETCD_USER: 'ci', BATON_ETCD_PASSWORD: 'wrong-pw', BATON_STORE_BUDGET_MS: '5000' }, (s) =>
    s.readLock(target),
  ).catch((e) => e);
  assert.equal(wrong.code, 'STORE_PERMISSION', wrong.message);
  assert.match(wrong.message, /BATON_ETCD_USER/);
  assert.ok(!JSON.stringify({ m: wrong.message, d: wrong.details }).includes('wrong-pw'), wrong.message);
});
