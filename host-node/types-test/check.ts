// Compile-only check of the public types: `npm run typecheck`.
import {
  BatonError,
  acquireLease,
  withLease,
  detectContext,
  errorCodes,
  invoke,
  openStore,
  scopeFor,
  type Context,
  type ErrorCode,
  type Grant,
  type Lease,
  type LeaseEvent,
  type LeaseEventKind,
  type LeaseOptions,
  type LeaseRelease,
  type Lock,
  type TransactionalStore,
  type WaitInfo,
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

async function lease(store: Store): Promise<void> {
  const kinds: LeaseEventKind[] = [];
  const options: LeaseOptions = {
    env: 'preview',
    scope: 'pr-1',
    holder: 'run-1',
    label: 'preview/pr-1',
    ttlMs: 60_000,
    marginMs: 12_000,
    renewEveryMs: 20_000,
    wait: true,
    waitTimeoutMs: 600_000,
    pollMs: 2000,
    onWait: (w: WaitInfo) => console.log(w.holder, w.expiresAt, w.waitedMs, w.remainingMs),
    onEvent: (e: LeaseEvent) => {
      kinds.push(e.kind);
      if (e.kind === 'acquired') {
        const epoch: number = e.epoch;
        const warning: string | undefined = e.warning;
        void [epoch, warning];
      } else if (e.kind === 'must-stop' || e.kind === 'lost') {
        const grace: number = e.graceMs;
        const code: ErrorCode = e.error.code;
        void [grace, code];
      } else if (e.kind === 'released') {
        const released: boolean = e.released;
        void released;
      }
    },
    onWarning: (message: string) => console.warn(message),
  };
  const l: Lease = await acquireLease(store, options);
  const epoch: number = l.epoch;
  const holder: string = l.holder;
  const lock: Lock = l.lock;
  const preempted: Lock | null = l.preempted;
  const warnings: readonly string[] = l.warnings;
  const signal: AbortSignal = l.signal;
  const token: number = l.assertHeld();
  const written: Lock = (await l.write('out.json', '{}')).lock;
  const released: LeaseRelease = await l.release();
  const warning: string | undefined = released.warning;
  if (signal.aborted && signal.reason instanceof BatonError) {
    const code: ErrorCode = signal.reason.code;
    void code;
  }
  void [epoch, holder, lock, preempted, warnings, token, written, warning];

  const n: number = await withLease(store, { env: 'preview', scope: 'pr-1' }, async (lease) => {
    await lease.write('a.txt', 'a');
    return lease.epoch;
  });
  const s: string = await withLease(store, { env: 'preview', scope: 'pr-1' }, () => 'sync');
  void [n, s];

  // Any object with `transact` is a store for a lease (wrappers adding latency, logging, ...).
  const wrapped: TransactionalStore = {
    transact: async (cell, op, request) => {
      const answer = await store.transact(cell, op, request);
      return answer;
    },
  };
  await acquireLease(wrapped, { env: 'preview', scope: 'pr-1' });
  await store.fencedWrite({ env: 'preview', scope: 'pr-1', holder: 'run-1', epoch: 1, file: 'x', content: 'y' });

  // @ts-expect-error env and scope are required
  await acquireLease(store, { ttlMs: 1000 });
  // @ts-expect-error unknown option
  await acquireLease(store, { env: 'preview', scope: 'pr-1', ttl: 1000 });
  // @ts-expect-error epoch is read-only
  l.epoch = 2;
  // @ts-expect-error content is a string
  await l.write('a.txt', 1);
  // @ts-expect-error withLease takes the store first
  await withLease({ env: 'preview', scope: 'pr-1' }, async () => 1);
  // @ts-expect-error not a cell operation
  await store.transact({ env: 'preview', scope: 'pr-1' }, 'render', {});
}

// @ts-expect-error pr is a number or null, not a string
scopeFor('main', '7');
// @ts-expect-error not a core operation
invoke('no-such-op', '{}');
// @ts-expect-error detectContext is synchronous
detectContext().then(() => {});

void [scope, pr, sha, codes, exit, standing, answer, use, lease];
