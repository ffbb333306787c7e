// ESM entry point: the CommonJS implementation's named exports.
import baton from './index.cjs';

export const {
  BatonError,
  invoke,
  errorCodes,
  scopeFor,
  detectContext,
  openStore,
  acquireLease,
  withLease,
  destroy,
  acquireObjectLease,
  withObjectLease,
  scopeStatus,
  gc,
} = baton;
