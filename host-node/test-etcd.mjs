// A real etcd for the Node tests: `etcd` (Debian's etcd-server, installed by scripts/setup.sh) started on
// free loopback ports of its own (never 2379/2380), with a temporary data directory, and stopped by
// `stop()`: exactly the processes started here, by their pid. One member or three (fault tests). Outside
// test/, so the test runner does not count it as a test file. The Rust twin: host-native/tests/common/etcd.rs.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';

/** A loopback port nobody listens on right now (never 2379/2380). */
export async function freePort() {
  for (;;) {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address();
    server.close();
    await once(server, 'close');
    if (port !== 2379 && port !== 2380) return port;
  }
}

/** Runs etcdctl on `endpoints` (with `input`); `{status, stdout, stderr}`. */
export function etcdctl(endpoints, args, input) {
  const r = spawnSync('etcdctl', ['--endpoints', endpoints, '--command-timeout=3s', ...args], {
    input,
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  return { status: r.status, stdout: r.stdout?.toString('utf8') ?? '', stderr: r.stderr?.toString('utf8') ?? '' };
}

/**
 * Starts `n` members on loopback and waits for a leader: `{members, endpoints, spec, etcdctl(args, input),
 * kill(i), pause(i), resume(i), restart(i), leader(), healthy(ms), stop()}`.
 */
export async function startEtcd(name, n = 1) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-etcd-${name}-`));
  const members = [];
  for (let i = 0; i < n; i += 1) members.push({ name: `m${i}`, client: await freePort(), peer: await freePort(), child: null, paused: false });
  const initial = members.map((m) => `${m.name}=http://127.0.0.1:${m.peer}`).join(',');
  const url = (m) => `http://127.0.0.1:${m.client}`;
  const endpoints = members.map(url).join(',');
  const spawnMember = (m) => {
    const log = openSync(path.join(dir, `${m.name}.log`), 'a');
    const peer = `http://127.0.0.1:${m.peer}`;
    m.child = spawn(
      'etcd',
      [
        '--name', m.name, '--data-dir', path.join(dir, m.name),
        '--listen-client-urls', url(m), '--advertise-client-urls', url(m),
        '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
        '--initial-cluster', initial, '--initial-cluster-token', `baton-${name}-${process.pid}`, '--initial-cluster-state', 'new',
        '--heartbeat-interval', '100', '--election-timeout', '1000', '--logger', 'zap', '--log-level', 'warn',
      ],
      { stdio: ['ignore', 'ignore', log] },
    );
    m.paused = false;
  };
  const running = () => members.filter((m) => m.child !== null && !m.paused).map(url).join(',');
  const etcd = {
    members,
    endpoints,
    spec: `etcd:${endpoints}`,
    url,
    etcdctl: (args, input) => etcdctl(endpoints, args, input),
    async healthy(withinMs = 30_000) {
      const started = Date.now();
      while (etcdctl(running(), ['endpoint', 'health']).status !== 0) {
        if (Date.now() - started > withinMs) throw new Error(`etcd did not become healthy within ${withinMs} ms (logs in ${dir})`);
        await sleep(100);
      }
    },
    async kill(i) {
      const m = members[i];
      if (m.child === null) return;
      if (m.paused) m.child.kill('SIGCONT');
      const exited = m.child.exitCode === null && m.child.signalCode === null ? once(m.child, 'exit') : null;
      m.child.kill('SIGKILL');
      await exited;
      m.child = null;
    },
    pause(i) {
      members[i].child.kill('SIGSTOP');
      members[i].paused = true;
    },
    resume(i) {
      members[i].child.kill('SIGCONT');
      members[i].paused = false;
    },
    restart(i) {
      spawnMember(members[i]);
    },
    /**
     * How many KV requests the running members have answered so far, whatever their outcome, from each
     * member's own counters (`/metrics`: `grpc_server_handled_total`): `{txn, range}`. The difference over
     * some operations is their round trips, counted by the server.
     */
    async kvRequests() {
      const counts = { txn: 0, range: 0 };
      for (const m of members.filter((m) => m.child !== null && !m.paused)) {
        const text = await (await fetch(`${url(m)}/metrics`)).text();
        for (const line of text.split('\n')) {
          if (!line.startsWith('grpc_server_handled_total{') || !line.includes('etcdserverpb.KV')) continue;
          const n = Number(line.slice(line.lastIndexOf(' ') + 1));
          if (line.includes('grpc_method="Txn"')) counts.txn += n;
          if (line.includes('grpc_method="Range"')) counts.range += n;
        }
      }
      return counts;
    },
    /** The index of the leader, or null. */
    leader() {
      const r = etcdctl(running(), ['endpoint', 'status', '-w', 'json']);
      if (r.status !== 0) return null;
      const status = JSON.parse(r.stdout);
      const leader = status[0]?.Status?.leader;
      const entry = status.find((e) => e.Status?.header?.member_id === leader);
      return entry ? members.findIndex((m) => url(m) === entry.Endpoint) : null;
    },
    async stop() {
      for (let i = 0; i < members.length; i += 1) await etcd.kill(i);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  members.forEach(spawnMember);
  await etcd.healthy();
  return etcd;
}
