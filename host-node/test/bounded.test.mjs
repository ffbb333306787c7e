// Bounded everywhere (issue 17), in the npm package: a git remote that accepts connections and never
// answers ends `readLock` in a store error within the budget; a lease whose remote goes silent stops
// (must-stop) before its lease deadline and its release gives up within the budget; the next store removes
// the working clones of processes killed with SIGKILL, and only those.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, existsSync, mkdirSync, rmSync, realpathSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { acquireLease, detectContext, openStore } from 'baton-lease';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
/** What a bound may exceed the budget by on this shared, noisy machine. */
const SLACK_MS = 8000;

/** A server on 127.0.0.1 that accepts every connection and never answers. Resolves its port and `close`. */
async function silentServer() {
  const held = [];
  const server = net.createServer((socket) => held.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    close: () => {
      for (const s of held) s.destroy();
      server.close();
    },
  };
}

/**
 * A proxy on 127.0.0.1 to `upstream` that forwards until `silence()`, then forwards nothing more and
 * answers no new connection (everything stays open).
 */
async function proxy(upstream) {
  let silent = false;
  const sockets = [];
  const server = net.createServer((client) => {
    sockets.push(client);
    if (silent) return;
    const remote = net.connect(upstream, '127.0.0.1');
    sockets.push(remote);
    const pipe = (from, to) =>
      from.on('data', (chunk) => {
        if (!silent) to.write(chunk);
      });
    pipe(client, remote);
    pipe(remote, client);
    client.on('error', () => {});
    remote.on('error', () => {});
    client.on('end', () => !silent && remote.end());
    remote.on('end', () => !silent && client.end());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    silence: () => {
      silent = true;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** A `git daemon` serving the bare repositories under `base`; resolves its port and `stop`. */
async function daemon(base) {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = probe.address().port;
  probe.close();
  const child = spawn('git', ['daemon', '--export-all', '--enable=receive-pack', '--reuseaddr', '--listen=127.0.0.1', `--base-path=${base}`, `--port=${port}`], {
    stdio: 'ignore',
  });
  for (let i = 0; i < 200; i += 1) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s.end() && true));
      s.on('error', () => resolve(false));
    });
    if (up) break;
    await sleep(50);
  }
  return { port, stop: () => child.kill() };
}

/** Runs `fn` with BATON_STORE_BUDGET_MS set to `ms`. */
async function withBudget(ms, fn) {
  const before = process.env.BATON_STORE_BUDGET_MS;
  process.env.BATON_STORE_BUDGET_MS = String(ms);
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.BATON_STORE_BUDGET_MS;
    else process.env.BATON_STORE_BUDGET_MS = before;
  }
}

test('readLock on a remote that never answers fails with STORE_CONTENDED within the budget, redacted', async () => {
  const server = await silentServer();
  const budget = 2500;
  try {
    for (const remote of [`git://127.0.0.1:${server.port}/x.git`, `http://user:s3cret@127.0.0.1:${server.port}/x.git`]) {
      await withBudget(budget, async () => {
        const store = openStore(`git:${remote}`);
        const started = performance.now();
        const err = await store.readLock({ env: 'preview', scope: 'pr-1' }).then(
          () => null,
          (e) => e,
        );
        const took = performance.now() - started;
        await store.close();
        assert.equal(err?.code, 'STORE_CONTENDED', String(err?.message));
        assert.ok(took < budget + SLACK_MS, `readLock took ${took} ms (budget ${budget})`);
        assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${server.port}.*did not answer`));
        assert.equal(err.details.timedOut, true);
        assert.ok(!JSON.stringify({ m: err.message, d: err.details, s: err.stack }).includes('s3cret'), 'credentials printed');
      });
    }
  } finally {
    server.close();
  }
});

test('a lease whose remote goes silent stops before its deadline and its release ends within the budget', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-bounded-')));
  execFileSync('git', ['init', '-q', '--bare', path.join(root, 'remote.git')]);
  const d = await daemon(root);
  const p = await proxy(d.port);
  const budget = 2000;
  const ttlMs = 6000;
  try {
    await withBudget(budget, async () => {
      const store = openStore(`git:git://127.0.0.1:${p.port}/remote.git`, { cwd: root });
      const asked = performance.now();
      const lease = await acquireLease(store, { env: 'preview', scope: 'silent', ttlMs, onWarning: () => {} });
      const stop = new Promise((resolve) => {
        lease.signal.addEventListener('abort', () => resolve(performance.now()), { once: true });
      });
      p.silence();
      const stoppedAt = await stop;
      assert.ok(stoppedAt - asked < ttlMs, `stopped ${stoppedAt - asked} ms after asking (TTL ${ttlMs})`);
      const released = performance.now();
      const result = await lease.release();
      const took = performance.now() - released;
      assert.ok(took < budget + SLACK_MS, `the release took ${took} ms (budget ${budget})`);
      assert.equal(result.released, false);
      assert.match(result.warning, /stays held until about/);
      await store.close();
    });
  } finally {
    p.close();
    d.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

/** The working clones of process `pid` in the temp dir. */
function clonesOf(pid) {
  return readdirSync(os.tmpdir()).filter((n) => n.startsWith('baton-git-') && n.includes(`-${pid}-`));
}

test('the next store removes the clones of processes killed with SIGKILL, and only those', async () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-clones-')));
  const bare = path.join(root, 'remote.git');
  execFileSync('git', ['init', '-q', '--bare', bare]);
  const script = `
    const { openStore } = require(${JSON.stringify(path.join(pkgDir, 'js', 'index.cjs'))});
    const store = openStore(${JSON.stringify(`git:file://${bare}`)});
    store.readLock({ env: 'preview', scope: 'pr-1' }).then(() => { console.log('ready'); setInterval(() => {}, 1000); });
  `;
  const start = async () => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    while (!out.includes('ready')) {
      assert.equal(child.exitCode, null, 'the child exited early');
      await sleep(20);
    }
    return child;
  };
  const killed = await Promise.all([start(), start(), start()]);
  const alive = await start();
  const foreign = path.join(os.tmpdir(), `baton-git-foreign-${process.pid}`);
  mkdirSync(foreign, { recursive: true });
  try {
    const stale = [];
    for (const child of killed) {
      const clones = clonesOf(child.pid);
      assert.equal(clones.length, 1, `each process has its clone: ${clones}`);
      stale.push(...clones);
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    for (const name of stale) assert.ok(existsSync(path.join(os.tmpdir(), name)), `SIGKILL left ${name} behind`);
    const live = clonesOf(alive.pid);
    assert.equal(live.length, 1);
    const store = openStore(`git:file://${bare}`);
    await store.readLock({ env: 'preview', scope: 'pr-2' });
    await store.close();
    for (const name of stale) assert.ok(!existsSync(path.join(os.tmpdir(), name)), `${name} of a killed process stayed`);
    assert.ok(existsSync(path.join(os.tmpdir(), live[0])), 'the live process keeps its clone');
    assert.ok(existsSync(foreign), 'a directory that is no clone stays');
  } finally {
    alive.kill('SIGTERM');
    rmSync(foreign, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
});

test('work on a whole environment needs no scope: detectContext({envOnly}) outside a repository', () => {
  const cwd = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-envonly-')));
  try {
    const ctx = detectContext({ envOnly: true, env: { BATON_ENV: 'staging' }, cwd });
    assert.deepEqual([ctx.env, ctx.scope, ctx.branch], ['staging', null, null]);
    assert.throws(() => detectContext({ env: {}, cwd }), (e) => e.code === 'CTX_NULL');
    // With a branch it is the full context.
    assert.equal(detectContext({ envOnly: true, env: { BATON_CTX_BRANCH: 'feat/x', BATON_CTX_SHA: 'abc' }, cwd }).scope, 'branch-feat-x');
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
