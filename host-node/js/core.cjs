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
 * Runs core operation `op` on the request object and returns the answer object, converted by
 * serde-wasm-bindgen on both sides (a key set to `undefined` reads as `null`).
 * @param {string} op
 * @param {object} [request]
 * @returns {any}
 */
function call(op, request) {
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
