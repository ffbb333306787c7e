// The core through plain objects (js/core.cjs `call`): the request is read as JSON.stringify would write it
// and the answer is what JSON.parse of the text answer gives, for the same operations and the same refusals
// as the text export `invoke`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { call, invoke } = require('../js/core.cjs');
const { BatonError } = require('../js/errors.cjs');

const viaText = (op, request) => JSON.parse(invoke(op, JSON.stringify(request)));

test('objects: the answers equal the text answers, for the lock decisions and the open-schema ones', () => {
  const lock = JSON.stringify({ holder: 'run-0', acquiredAt: '2026-10-10T12:00:00.000Z', expiresAt: '2020-01-01T00:15:00.000Z', epoch: 3, note: 'kept' });
  const cell = { env: 'preview', scope: 'pr-1', files: { 'lock.json': lock } };
  const requests = [
    ['scope-for', { branch: 'feat/Search', pr: 7 }],
    ['lock-acquire', { cell, holder: 'run-1', ttlMs: 900000, nowMs: 1791633600000 }],
    ['lock-read', { cell, nowMs: 1791633600000 }],
    ['lock-release', { cell, holder: 'run-0', epoch: 3 }],
    ['error-codes', {}],
  ];
  for (const [op, request] of requests) {
    assert.deepEqual(call(op, request), viaText(op, request), op);
  }
  // Fields the core does not know stay in the lock record, as on the text path.
  assert.equal(call('lock-read', requests[2][1]).lock.note, 'kept');
});

test('objects: a key set to undefined is absent, NaN is null, toJSON is used, as in JSON.stringify', () => {
  // detect-context tells an absent override from null: undefined must read as absent.
  const vars = { BATON_CTX_BRANCH: 'dev', BATON_CTX_SHA: 's1', GITHUB_REF: 'refs/pull/9/merge' };
  const withUndefined = { vars, overrides: { branch: 'a', pr: undefined } };
  assert.deepEqual(call('detect-context', withUndefined), viaText('detect-context', withUndefined));
  const withNull = { vars, overrides: { branch: 'a', pr: null } };
  assert.deepEqual(call('detect-context', withNull), viaText('detect-context', withNull));
  assert.notDeepEqual(viaText('detect-context', withUndefined), viaText('detect-context', withNull));
  // A Date reads as its toJSON string (here: a branch name the core slugs), NaN as null.
  const date = new Date(Date.UTC(2026, 0, 2));
  assert.deepEqual(call('scope-for', { branch: date }), viaText('scope-for', { branch: date }));
  assert.deepEqual(call('scope-for', { branch: 'main', pr: Number.NaN }), viaText('scope-for', { branch: 'main', pr: null }));
});

test('objects: refusals and bad requests throw BatonError with the code, as the text path does', () => {
  const held = {
    cell: { env: 'preview', scope: 'pr-1', files: { 'lock.json': JSON.stringify({ holder: 'run-0', expiresAt: '2999-01-01T00:00:00.000Z', epoch: 1 }) } },
    holder: 'run-1', ttlMs: 1000, nowMs: 0,
  };
  const fromObjects = (() => { try { call('lock-acquire', held); } catch (e) { return e; } })();
  const fromText = (() => { try { viaText('lock-acquire', held); } catch (e) { return e; } })();
  assert.ok(fromObjects instanceof BatonError);
  assert.equal(fromObjects.code, 'LOCK_HELD');
  assert.deepEqual({ ...fromObjects.details }, { ...fromText.details });
  assert.equal(fromObjects.message, fromText.message);
  for (const bad of [{ branch: 10n }, { branch: Symbol('x') }, { nope: 1 }]) {
    assert.throws(() => call('scope-for', bad), (e) => e instanceof BatonError && e.code === 'INTERNAL');
  }
  const cyclic = { branch: 'x' };
  cyclic.self = cyclic;
  assert.throws(() => call('scope-for', cyclic), (e) => e instanceof BatonError && e.code === 'INTERNAL');
});
