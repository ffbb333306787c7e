// Compile-only check of the public types: `npm run typecheck`.
import {
  BatonError,
  detectContext,
  errorCodes,
  invoke,
  openStore,
  scopeFor,
  type Context,
  type ErrorCode,
  type Grant,
  type Lock,
  type LockView,
  type Release,
  type Store,
} from 'baton-lease';

const scope: string = scopeFor('feat/x');
scopeFor('main', 7, 'main');
scopeFor('main', null, null);

const ctx: Context = detectContext({
  env: { GITHUB_ACTIONS: 'true', MAYBE: undefined },
  overrides: { branch: 'x', sha: 'abc', pr: null, defaultBranch: 'main', env: 'preview' },
  cwd: '/tmp',
});
detectContext({ overrides: { pr: '12' } });
detectContext();
const pr: number | null = ctx.pr;
const sha: string | null = ctx.sha;

const codes: ErrorCode[] = errorCodes().map((c) => c.code);
const exit: number = errorCodes()[0].exit;
const standing: string | null = errorCodes()[0].hint;
const answer: string = invoke('scope-for', JSON.stringify({ branch: 'main' }));

async function use(): Promise<void> {
  const store: Store = openStore('dir:.baton', { cwd: '/tmp', mutexWaitMs: 1000 });
  openStore();
  const kind: 'dir' = store.kind;
  const root: string = store.path;
  const cell = { env: ctx.env, scope: ctx.scope };
  const grant: Grant = await store.acquireLock({ ...cell, holder: 'run-1', ttlMs: 60_000 });
  const epoch: number = grant.lock.epoch;
  const old: Lock | null = grant.preempted;
  const renewed: Lock = (await store.renewLock({ ...cell, holder: 'run-1', epoch, ttlMs: 60_000 })).lock;
  const view: LockView | null = await store.readLock(cell);
  const expired: boolean | undefined = view?.expired;
  const remaining: number | undefined = view?.expiresInMs;
  const release: Release = await store.releaseLock({ ...cell, holder: 'run-1', epoch });
  await store.releaseLock({ ...cell, holder: 'run-1' });
  const broken = await store.breakLock({ ...cell, holder: 'ops', ttlMs: 1000, reason: 'stuck' });
  const reason: string | undefined = broken.lock.broke?.reason;
  void [kind, root, old, renewed, expired, remaining, release, reason];

  try {
    await store.acquireLock({ ...cell, holder: 'run-2', ttlMs: 1000 });
  } catch (e) {
    if (e instanceof BatonError) {
      const code: ErrorCode = e.code;
      const hint: string | undefined = e.hint;
      const details: Record<string, unknown> = e.details;
      const err: Error = e;
      void [code, hint, details, err];
    }
  }

  // @ts-expect-error ttlMs is required
  await store.acquireLock({ ...cell, holder: 'run-3' });
  // @ts-expect-error epoch is a number
  await store.renewLock({ ...cell, holder: 'run-1', epoch: '1', ttlMs: 1 });
}

// @ts-expect-error pr is a number or null, not a string
scopeFor('main', '7');
// @ts-expect-error not a core operation
invoke('no-such-op', '{}');
// @ts-expect-error detectContext is synchronous
detectContext().then(() => {});

void [scope, pr, sha, codes, exit, standing, answer, use];
