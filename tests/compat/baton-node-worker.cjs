'use strict';
/**
 * A long-lived process running baton's Node package for the compatibility races: one JSON request a line
 * on stdin, `{id, root, env, scope, holder, ttlMs, at?, after?, jitterUs?}`; waits (busy) until wall-clock
 * ms `at` or until the path `after` exists, then `jitterUs` more, then `acquireLock` on the dir store at
 * `root`; answers `{id, ok: true, preempted}` or `{id, ok: false, code, holder}` on stdout.
 */
const fs = require('node:fs');
const path = require('node:path');
const { openStore } = require(path.join(__dirname, '../../host-node'));

const spinUntil = (cond, limitMs) => {
  const stop = Date.now() + limitMs;
  while (!cond() && Date.now() < stop);
};

const rl = require('node:readline').createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on('line', (line) => {
  const req = JSON.parse(line);
  queue = queue.then(async () => {
    if (req.at) spinUntil(() => Date.now() >= req.at, 5_000);
    if (req.after) spinUntil(() => fs.existsSync(req.after), 300);
    if (req.jitterUs) {
      const until = process.hrtime.bigint() + BigInt(req.jitterUs) * 1000n;
      while (process.hrtime.bigint() < until);
    }
    let answer;
    try {
      const g = await openStore(`dir:${req.root}`).acquireLock({ env: req.env, scope: req.scope, holder: req.holder, ttlMs: req.ttlMs });
      answer = { id: req.id, ok: true, preempted: g.preempted?.holder ?? null };
    } catch (e) {
      answer = { id: req.id, ok: false, code: e.code, holder: e.details?.lock?.holder ?? null, message: e.message };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  });
});
