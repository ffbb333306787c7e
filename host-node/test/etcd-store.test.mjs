// The Node etcd store on a real etcd of this file's own (test-etcd.mjs): endpoints that refuse or never
// answer end in STORE_CONTENDED naming the endpoint within the budget, a dead endpoint before a live one
// fails over, and a user and password work and never show (the last test turns authentication on).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { openStore } from '../js/index.mjs';
import { freePort, startEtcd } from '../test-etcd.mjs';

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

test('refused and silent endpoints end in STORE_CONTENDED naming the endpoint within the budget', async () => {
  const refused = `http://127.0.0.1:${await freePort()}`;
  // Accepts and never answers. Its sockets are destroyed at the end: grpc-js keeps a socket to a server that
  // never completed the HTTP/2 handshake open after the client closed (the process would not exit).
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
