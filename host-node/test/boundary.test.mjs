// No panic crosses the wasm boundary of the npm module: the raw wasm-bindgen `invoke` (pkg/baton_node.js),
// called for every core operation with malformed requests, the fuzz corpus (fuzz/corpus/invoke_any, `op\n
// request`) and seeded mutations of it, returns JSON text or throws an Error carrying one of the core's
// `error-codes` as `code` and the whole error object as `json`. A panic in the module (panic = "abort") is a
// WebAssembly.RuntimeError with neither: the control test shows the classification reports it.
// BATON_BOUNDARY_CASES mutated requests (default 3000), from BATON_FUZZ_SEED (default 0).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const wasm = require('../pkg/baton_node.js');
const corpusDir = fileURLToPath(new URL('../../fuzz/corpus/invoke_any/', import.meta.url));
const codes = JSON.parse(wasm.invoke('error-codes', '{}')).map((c) => c.code);

/** The operations of the core, from the Rust source of truth (`OPS` in core/src/api.rs). */
const apiSource = readFileSync(fileURLToPath(new URL('../../core/src/api.rs', import.meta.url)), 'utf8');
const opsBlock = apiSource.slice(apiSource.indexOf('pub const OPS'), apiSource.indexOf('];', apiSource.indexOf('pub const OPS')));
const OPS = [...opsBlock.matchAll(/"([a-z-]+)"/g)].map((m) => m[1]);

/** What one call of `fn` did: `{answer}`, `{refused: {code, json}}` or `{trap}` (anything else thrown). */
function classify(fn) {
  try {
    return { answer: fn() };
  } catch (e) {
    if (e instanceof Error && !(e instanceof WebAssembly.RuntimeError) && typeof e.code === 'string' && typeof e.json === 'string') {
      return { refused: { code: e.code, message: e.message, json: e.json } };
    }
    return { trap: e };
  }
}

/** Asserts a valid envelope: JSON text, or an error of a known code whose `json` carries it. */
function assertEnvelope(op, request, outcome) {
  const where = `${op} ${JSON.stringify(request).slice(0, 200)}`;
  assert.equal(outcome.trap, undefined, `${where} threw something that is not a core error: ${outcome.trap}`);
  if ('answer' in outcome) {
    assert.equal(typeof outcome.answer, 'string', where);
    JSON.parse(outcome.answer);
  } else {
    const { code, message, json } = outcome.refused;
    assert.ok(codes.includes(code), `${where}: ${code} is one of error-codes`);
    const obj = JSON.parse(json);
    assert.equal(obj.code, code, where);
    assert.equal(obj.message, message, where);
  }
}

/** `op\nrequest` when the first line names an op, else the op the first byte picks (fuzz_bodies::op_request). */
function opRequest(bytes) {
  const text = Buffer.from(bytes).toString('utf8');
  const nl = text.indexOf('\n');
  if (nl > 0 && nl <= 40 && !text.slice(0, nl).includes('{')) return [text.slice(0, nl), text.slice(nl + 1)];
  if (bytes.length === 0) return ['scope-for', ''];
  return [OPS[bytes[0] % OPS.length], Buffer.from(bytes.subarray(1)).toString('utf8')];
}

/** mulberry32: a small seeded PRNG. */
function rng(seed) {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * n | 0;
  };
}

const TOKENS = ['"', '{', '}', '[', ']', ':', ',', 'null', '-1', '1e400', '18446744073709551616', '\\u0000', '\\ud800',
  '..', '/', '=', '@{', '.lock', '://u:p@', '"version":3', '\n', '\u00e9', '\uffff'].map((t) => Buffer.from(t));

/** A corpus input with 1-4 edits (bit flips, byte sets, tokens, deletions, splices, truncation) or random bytes. */
function mutate(next, corpus) {
  if (next(20) === 0) return Buffer.from(Array.from({ length: next(80) }, () => next(256)));
  let data = Buffer.from(corpus[next(corpus.length)]);
  for (let k = 1 + next(4); k > 0; k--) {
    const at = next(data.length + 1);
    switch (next(6)) {
      case 0: if (data.length) data[next(data.length)] ^= 1 << next(8); break;
      case 1: if (data.length) data[next(data.length)] = next(256); break;
      case 2: data = Buffer.concat([data.subarray(0, at), TOKENS[next(TOKENS.length)], data.subarray(at)]); break;
      case 3: data = Buffer.concat([data.subarray(0, at), data.subarray(Math.min(data.length, at + 1 + next(16)))]); break;
      case 4: { const o = corpus[next(corpus.length)]; data = Buffer.concat([data.subarray(0, at), o.subarray(next(o.length + 1))]); break; }
      default: data = data.subarray(0, at);
    }
  }
  return data;
}

const MALFORMED = ['', ' ', '{', '}', 'null', '[]', '{}', '"x"', '{"cell":1}',
  '{"cell":{"env":"..","scope":"/","files":{"lock.json":"{"}}}', '{"env":"\\u0000","scope":".."}',
  '{"text":"\\ud800","place":1}', '{"nowMs":1e400,"ttlMs":-1,"epoch":18446744073709551616}', '\ufeff{}', '\ud800'];

test('the operation list is read from the core and complete', () => {
  assert.ok(OPS.length >= 30 && OPS.includes('detect-context') && OPS.includes('receipt-parse'), OPS.join(','));
  assert.equal(classify(() => wasm.invoke('no-such-op', '{}')).refused.code, 'INTERNAL');
});

test('no request makes the wasm module panic', () => {
  const corpus = readdirSync(corpusDir).sort().map((f) => readFileSync(path.join(corpusDir, f)));
  assert.ok(corpus.length >= 50, 'the invoke_any corpus is there');
  let calls = 0;
  const check = (op, request) => {
    const first = classify(() => wasm.invoke(op, request));
    assertEnvelope(op, request, first);
    assert.deepEqual(classify(() => wasm.invoke(op, request)), first, `${op} answers deterministically`);
    calls++;
  };
  for (const op of [...OPS, 'no-such-op', '']) {
    for (const request of MALFORMED) check(op, request);
    for (const bytes of corpus) check(op, opRequest(bytes)[1]);
  }
  for (const bytes of corpus) check(...opRequest(bytes));
  const cases = Number(process.env.BATON_BOUNDARY_CASES ?? 3000);
  const next = rng(Number(process.env.BATON_FUZZ_SEED ?? 0));
  for (let i = 0; i < cases; i++) check(...opRequest(mutate(next, corpus)));
  assert.ok(calls > 5000, `${calls} calls`);
});

test('no configuration or store result makes a lease panic', () => {
  const configs = ['', '{', '{}', '{"env":"preview","scope":"pr-1","holder":"h","ttlMs":0}',
    '{"env":"preview","scope":"pr-1","holder":"h","ttlMs":18446744073709551615}',
    '{"env":"preview","scope":"pr-1","holder":"h","ttlMs":60000}'];
  for (const config of configs) {
    const created = classify(() => new wasm.Lease(config));
    assertEnvelope('lease', config, 'answer' in created ? { answer: '{}' } : created);
    if (!('answer' in created)) continue;
    const lease = created.answer;
    for (const call of [
      () => lease.acquire(0),
      () => lease.handleStoreResult(1, '{', 1),
      () => lease.handleStoreResult(1, '{"ok":[]}', 2),
      () => lease.handleStoreResult(-1, '{}', 2),
      () => lease.handleStoreResult(1, { ok: [] }, 2),
      () => lease.handleStoreResult(1, { ok: { lock: { holder: 1 } } }, 2),
      () => lease.handleStoreResult(1, { error: { code: 'NOPE' } }, 2),
      () => lease.handleStoreResult(1, { ok: { lock: { epoch: 2n ** 70n } } }, 2),
      () => lease.handleStoreResult(1, Symbol('x'), 2),
      () => lease.handleStoreResult(1, undefined, 2),
      () => lease.handleTimeout(Number.MAX_SAFE_INTEGER),
      () => lease.pollAction(),
      () => lease.fencingToken(1.5),
      () => lease.release(NaN),
    ]) {
      const outcome = classify(call);
      assert.equal(outcome.trap, undefined, `${call} on ${config}: ${outcome.trap}`);
      if (outcome.refused) assert.ok(codes.includes(outcome.refused.code));
    }
  }
});

test('control: a wasm trap is classified as a trap, not as an answer or a core error', () => {
  // (module (func (export "f") unreachable))
  const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 5, 1, 3, 0, 0, 11]);
  const { f } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  const outcome = classify(() => f());
  assert.ok(outcome.trap instanceof WebAssembly.RuntimeError, String(outcome.trap));
  assert.throws(() => assertEnvelope('control', '', outcome), /not a core error/);
});
