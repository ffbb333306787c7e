// Helpers shared by the package tests (outside test/, so the runner does not count it as a test file).
import assert from 'node:assert/strict';
import { BatonError } from 'baton-lease';

/** The BatonError the promise rejects with (fails the test when it resolves or rejects otherwise). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof BatonError, `not a BatonError: ${e && e.stack}`);
    return e;
  }
  assert.fail('expected a rejection');
}
