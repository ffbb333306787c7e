'use strict';
/**
 * The bridge to the wasm core. `call` passes the request and gets the answer as plain objects (no JSON text
 * across wasm-bindgen); `invoke` is the raw string-in, string-out surface of the package's export. Both
 * throw only BatonError.
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
 * The operations whose answers carry a whole receipt or ledger (thousands of objects): they cross as JSON
 * text (one string, parsed by V8's JSON.parse), because building the answer object by object from wasm
 * measured 1.5x-2.7x slower at 25,000-100,000 ledger entries (host-node/bench/bench.mjs, `ownershipObjects`
 * against `ownershipViaText` in the same run). Every other operation passes plain objects both ways.
 */
const TEXT_ANSWERS = new Set(['run-begin', 'run-finish', 'handover', 'receipt-parse', 'scope-status', 'destroy-plan']);

/**
 * Runs core operation `op` on the request object and returns the answer object: plain objects across
 * wasm-bindgen (the request read as `JSON.stringify` would write it: a key set to `undefined` is absent),
 * except for the receipt-sized answers of TEXT_ANSWERS.
 * @param {string} op
 * @param {object} [request]
 * @returns {any}
 */
function call(op, request) {
  if (TEXT_ANSWERS.has(op)) return JSON.parse(invoke(op, JSON.stringify(request ?? {})));
  try {
    return wasm.call(op, request ?? {});
  } catch (e) {
    throw fromThrown(e);
  }
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
  const hint = errorCodes().find((c) => c.code === code)?.hint ?? undefined;
  return new BatonError(code, message, { hint, details, cause });
}

module.exports = { invoke, call, errorCodes, hostError };
