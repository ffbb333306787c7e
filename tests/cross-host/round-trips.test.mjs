// What a run costs in round trips (issue 15): `baton run -- true` and the npm command's `baton-lease run --
// true` on a git store with a real bare remote push exactly twice (the grant with the checkpoint receipt,
// the final receipt with the release), fetch at most once and read the cell's files (`cat-file`) at most
// once (the second transaction decides on the files the store pushed itself); on a real etcd they commit exactly two
// transactions. The git count comes from a `git` wrapper first on PATH that logs each invocation's
// subcommand (the stores run `git` from PATH, never through a shell); the etcd count from the server's
// revision, which every committed write transaction moves by exactly one (reads never move it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { gitRepo, bin, repoDir, fresh } from './action-runner.mjs';
import { startEtcd } from '../../host-node/test-etcd.mjs';

const node = path.join(repoDir, 'host-node', 'bin', 'baton-lease.cjs');
const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
let etcd;

before(async () => {
  etcd = await startEtcd('round-trips');
});
after(async () => {
  await etcd?.stop();
});

/** A directory with a `git` that logs its subcommand to `log`, every argument to `log.args`, and runs the real one. */
function gitWrapper(log) {
  const dir = fresh('wrap');
  const wrapper = path.join(dir, 'git');
  // The subcommand is the first argument that is not an option (`-c k=v` takes the next one too).
  writeFileSync(
    wrapper,
    `#!/bin/sh\nsub=""\nskip=0\nfor a in "$@"; do\n  if [ $skip = 1 ]; then skip=0; continue; fi\n  case "$a" in\n    -c|-C|--git-dir|--work-tree|--namespace) skip=1 ;;\n    -*) ;;\n    *) sub="$a"; break ;;\n  esac\ndone\necho "$sub" >> '${log}'\nprintf '%s\\n' "$@" >> '${log}.args'\nexec '${realGit}' "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return dir;
}

/** Runs `run -- true` with the CLI or the npm command on `store`; the envelope. */
function runTrue(store, scope, { useNode = false, wrap } = {}) {
  const args = ['run', '--store', store, '--scope', scope, '--json', '--', 'true'];
  const [cmd, argv] = useNode ? [process.execPath, [node, ...args]] : [bin, args];
  const PATH = wrap ? `${wrap}:${process.env.PATH}` : process.env.PATH;
  const r = spawnSync(cmd, argv, { cwd: repoDir, encoding: 'utf8', env: { ...process.env, PATH, CI: '' } });
  assert.equal(r.status, 0, `${cmd} ${argv.join(' ')}: ${r.stderr}`);
  const envelope = JSON.parse(r.stdout);
  assert.equal(envelope.ok, true, r.stdout);
  return envelope;
}

/** How often each git subcommand ran, from the wrapper's log. */
function counts(log) {
  const c = {};
  if (!existsSync(log)) return c;
  for (const sub of readFileSync(log, 'utf8').split('\n').filter(Boolean)) c[sub] = (c[sub] ?? 0) + 1;
  return c;
}

for (const useNode of [false, true]) {
  const host = useNode ? 'the npm command' : 'the CLI';
  test(`${host}: run -- true on git pushes twice, fetches at most once and reads the cell once, first run and later runs`, () => {
    const repo = gitRepo();
    const store = `git:${repo.remote}`;
    const logs = fresh('logs');
    for (const [i, scope] of ['pr-7', 'pr-7', 'pr-8'].entries()) {
      const log = path.join(logs, `${i}.log`);
      const envelope = runTrue(store, scope, { useNode, wrap: gitWrapper(log) });
      assert.equal(envelope.released, true);
      const c = counts(log);
      if (process.env.BATON_TRACE_COUNTS) console.error(host, i, scope, JSON.stringify(c));
      assert.equal(c.push ?? 0, 2, `run ${i} of ${scope}: ${JSON.stringify(c)}`);
      assert.ok((c.fetch ?? 0) <= 1, `run ${i} of ${scope}: ${JSON.stringify(c)}`);
      // The scope's first run finds no ref (nothing to read); a later run reads what it fetched, once.
      assert.equal(c['cat-file'] ?? 0, i === 1 ? 1 : 0, `run ${i} of ${scope}: ${JSON.stringify(c)}`);
      // The remote (a URL may carry credentials) is in the working clone's config, on no command line,
      // where any user of the machine could read it.
      const args = readFileSync(`${log}.args`, 'utf8');
      assert.ok(args.includes('push') && !args.includes(repo.remote), `run ${i}: the remote is on a git command line:\n${args}`);
    }
    // The receipt is complete and the lock gone: the two pushes carried everything.
    const receipt = JSON.parse(repo.git(repo.dir, '--git-dir', repo.remote, 'show', 'refs/heads/baton-receipts/preview/pr-7:preview/pr-7/latest.json'));
    assert.equal(receipt.status, 'complete');
    assert.equal(receipt.epoch, 2);
    const tree = repo.git(repo.dir, '--git-dir', repo.remote, 'ls-tree', '-r', '--name-only', 'refs/heads/baton-receipts/preview/pr-7');
    assert.ok(tree.includes('preview/pr-7/epoch.json') && !tree.includes('lock.json'), tree);
  });

  test(`${host}: run -- true on etcd commits two transactions`, async () => {
    // Every committed write transaction moves the store's revision by exactly one, however many keys it
    // writes; reads never move it.
    const revision = () => {
      const r = etcd.etcdctl(['endpoint', 'status', '-w', 'json']);
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout)[0].Status.header.revision;
    };
    for (const scope of [`e-${useNode ? 'n' : 'c'}-1`, `e-${useNode ? 'n' : 'c'}-1`]) {
      const before = revision();
      const envelope = runTrue(etcd.spec, scope, { useNode });
      assert.equal(envelope.released, true);
      assert.equal(revision() - before, 2, `${host} on ${scope}`);
    }
  });
}
