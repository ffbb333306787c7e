'use strict';
/**
 * The one error type of the package. Every refusal of the core (`LOCK_HELD`, ...) and every host-side
 * failure (`STORE_CONTENDED`, `INTERNAL`, ...) reaches callers as a `BatonError`.
 */

/** A failure with the core's stable `code`, its standing `hint` and structured `details`. */
class BatonError extends Error {
  /**
   * @param {string} code stable code, e.g. "LOCK_HELD"
   * @param {string} message what happened and what to do
   * @param {{hint?: string, details?: object, cause?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'BatonError';
    this.code = code;
    this.hint = extra.hint ?? undefined;
    this.details = extra.details ?? {};
  }
}

/** Builds a BatonError from the core's error JSON object (`{code, message, hint?, ...details}`). */
function fromErrorJson(json) {
  const { code, message, hint, ...details } = json;
  return new BatonError(code, message, { hint: hint ?? undefined, details });
}

/**
 * Converts what the wasm `invoke` threw into a BatonError: a core refusal carries `.code` and `.json`;
 * anything else (a trap, a bug in the binding) becomes INTERNAL with the original as `cause`.
 */
function fromThrown(e) {
  if (e instanceof BatonError) return e;
  if (e && typeof e.json === 'string') {
    try {
      return fromErrorJson(JSON.parse(e.json));
    } catch {
      // fall through: the binding broke its contract
    }
  }
  return new BatonError('INTERNAL', `the baton core failed: ${e && e.message ? e.message : String(e)}`, { cause: e });
}

module.exports = { BatonError, fromErrorJson, fromThrown };
