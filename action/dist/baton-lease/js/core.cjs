'use strict';
/**
 * The bridge to the wasm core. `call` takes the request and gives the answer as plain objects (JSON text
 * only inside, across wasm-bindgen: measured faster, see `call`); `invoke` is the raw string-in,
 * string-out surface of the package's export. Both throw only BatonError.
 */
const wasm = require('../pkg/baton_node.js');
const { BatonError, fromThrown } = require('./errors.cjs');

/**
 * Runs core operation `op` on the JSON text `requestJson` and returns the JSON answer text.
 * Use it for operations this package has no wrapper for (`render`, `fence-check`, ...).
 * @param {string} op
 * @param {string} requestJson
 * @returns {string}
 */
function invoke(op, requestJson) {
  try {
    return wasm.invoke(op, requestJson);
  } catch (e) {
    throw fromThrown(e);
  }
}

/**
 * Runs core operation `op` on the request object and returns the answer object. JS passes and gets plain
 * objects; across wasm-bindgen they travel as JSON text (`JSON.stringify`, the raw `invoke`, `JSON.parse`),
 * because V8's JSON is faster than building objects field by field across the boundary: in one run of
 * host-node/bench/bench.mjs's per-call loop, a lock acquire took 7.3 us as text against 18.5 us through the
 * wasm `call` export (serde-wasm-bindgen, objects both ways), scope-for 2.0 against 3.8, cell-path 2.3 against
 * 4.8; receipt-sized answers 1.5x-2.7x (`ownershipObjects` against `ownershipViaText`). `JSON.stringify`'s
 * rules are the request's rules (a key set to `undefined` is absent, a `Date` is its `toJSON()`).
 * @param {string} op
 * @param {object} [request]
 * @returns {any}
 */
function call(op, request) {
  let text;
  try {
    text = JSON.stringify(request ?? {});
  } catch (e) {
    // A BigInt, a cycle, a throwing toJSON: the host broke the contract, as a request that does not parse.
    throw hostError('INTERNAL', `invalid request for \`${op}\`: ${e && e.message ? e.message : String(e)}`, { op }, e);
  }
  return JSON.parse(invoke(op, text));
}

let codes;
/** Every stable error code with its CLI exit code and hint (core `error-codes`). */
function errorCodes() {
  codes ??= call('error-codes', {});
  return codes.map((c) => ({ ...c }));
}

/**
 * A BatonError raised by the host itself (not by a core refusal), carrying the core's standing hint for
 * `code` so host errors look exactly like core errors.
 * @param {string} code
 * @param {string} message
 * @param {object} [details]
 * @param {unknown} [cause]
 */
function hostError(code, message, details = {}, cause = undefined) {
  codes ??= call('error-codes', {});
  const hint = codes.find((c) => c.code === code)?.hint ?? undefined;
  return new BatonError(code, message, { hint, details, cause });
}

module.exports = { invoke, call, errorCodes, hostError };
