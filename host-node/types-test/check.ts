// Compile-only check of the public types: `npm run typecheck`.
import {
  BatonError,
  acquireLease,
  acquireObjectLease,
  destroy,
  scopeStatus,
  withObjectLease,
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
  type DirStore,
  type GitStore,
  type EtcdStore,
  type CellStore,
  type CheckResult,
  type CreatedBy,
  type DestroyResult,
  type RunVerdict,
  type FinishResult,
  type LedgerEntry,
  type ListedScope,
  type OwnershipStore,
  type Receipt,
  type RecordedContext,
  type Resource,
  type ResourceRef,
  type RunContext,
  type RunLeaseOptions,
  type ScopeStatus,
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
  const raw = await store.transactWith(cell, (snapshot, nowMs) => ({ changes: [], seen: Object.keys(snapshot.files).length + nowMs }));
  const seen: number = raw.seen;
  const files: Record<string, string> = await store.readWith(cell, (snapshot) => snapshot.files);
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

async function ownership(store: Store): Promise<void> {
  const context: Context = detectContext();
  const run: RunContext = context;
  const listed: ListedScope[] = await store.list('preview');
  const text: string | null = listed[0].text;
  const db: Resource = { adapter: 'neon', key: 'db', provider: { project: 'p' }, op: 'branch', label: 'db', parent: 'neon:p' };

  const lease: Lease = await acquireLease(store, { context, approvedBy: 'alice', wait: true, onWarning: () => {} });
  const recorded: RecordedContext | null = lease.context;
  const predecessor: string | null = lease.predecessor;
  const receipt: Receipt | null = lease.receipt;
  const entries: LedgerEntry[] = receipt ? receipt.ledger : [];
  const inheritedFrom: string | undefined = entries[0]?.inheritedFrom;
  await lease.intend(db);
  await lease.record(db, 'br_1');
  const forgotten: boolean = (await lease.forget(db)).forgotten;
  const checked: CheckResult = await lease.check(db, { change: true });
  const relation: 'own' | 'inherited' | 'foreign' | 'none' = checked.relation;
  const owner: string | undefined = checked.owner;
  await lease.check(db);
  const finished: FinishResult = await lease.finish('complete');
  const status: 'complete' | 'failed' = finished.status;
  const handed: number = finished.handedOver;
  const unresolved: ResourceRef[] = finished.unresolved;
  await lease.release();
  void [run, text, recorded, predecessor, inheritedFrom, forgotten, relation, owner, status, handed, unresolved];

  const options: RunLeaseOptions = { env: 'preview', scope: 'pr-1', ownership: true };
  await acquireLease(store, options);
  const n: number = await withLease(store, { context: run, holder: 'run-x' }, async (l) => {
    await l.record({ adapter: 'vercel', key: 'API_URL' }, 'env_1');
    return l.epoch;
  });
  // Cancellation: the process's signals, the grace, progress lines; the verdict once over.
  await withLease(store, { context: run, handleSignals: false, cancelGraceMs: 2000, onNote: (t: string) => void t }, async (l) => {
    const v: RunVerdict | null | undefined = l.verdict;
    void v;
  });
  // @ts-expect-error a plain lease has no run to cancel
  await withLease(store, { env: 'preview', scope: 'pr-1', handleSignals: false }, async () => {});

  const result: DestroyResult = await destroy(store, { context, approvedBy: 'bob', wait: true }, async (resources, l) => {
    for (const r of resources) {
      const by: CreatedBy = r.createdBy;
      const id: string = r.id;
      void [by, id];
      await l.forget(r);
    }
  });
  const destroyed: 'complete' = result.status;

  const objectLease: Lease = await acquireObjectLease(store, 'auth0:tenant:client:abc', { secrets: ['s3cret'], wait: true });
  await objectLease.release();
  await acquireObjectLease(store, 'fake:list:x');
  const items: string[] = await withObjectLease(store, 'fake:list:x', { holder: 'run-x' }, async () => ['a']);

  const st: ScopeStatus = await scopeStatus(store, { env: 'preview', scope: 'pr-1', branch: 'x', pr: 1 });
  const state: 'none' | 'expired' | 'live' = st.lockState;
  const owns: ResourceRef[] = st.owns;
  const pending: boolean = st.handoverPending;
  void [n, destroyed, items, state, owns, pending];

  // A wrapper with list is an ownership store; one without it carries plain leases only.
  const wrapped: OwnershipStore = { transact: store.transact.bind(store), list: (env) => store.list(env) };
  await acquireLease(wrapped, { context });
  const bare: TransactionalStore = { transact: store.transact.bind(store) };
  // @ts-expect-error a run needs a store that can list scopes
  await acquireLease(bare, { context });
  // @ts-expect-error destroy needs the context
  await destroy(store, { env: 'preview', scope: 'pr-1' }, async () => {});
  // A plain lease on production names its approver too (not recorded; USAGE elsewhere).
  await acquireLease(store, { env: 'production', scope: 'main', approvedBy: 'alice' });
  // @ts-expect-error the finish status is complete or failed
  await lease.finish('done');
  // @ts-expect-error record needs the provider id
  await lease.record(db);
  // @ts-expect-error a resource needs a key
  await lease.intend({ adapter: 'neon' });
  // @ts-expect-error an object lease is not on a scope
  await acquireObjectLease(store, 'x', { scope: 'pr-1' });
  // @ts-expect-error the receipt is read-only
  lease.receipt = null;
}

async function git(): Promise<void> {
  const store: GitStore = openStore('git:https://x-access-token:t@github.com/o/r.git', { cwd: '/tmp' });
  const etcd: EtcdStore = openStore('etcd:http://127.0.0.1:2379,http://127.0.0.1:22379');
  const etcdPrefix: string = etcd.prefix;
  void etcdPrefix;
  const kind: 'git' = store.kind;
  const label: string = store.path;
  const prefix: string = store.prefix;
  const budget: number = store.budgetMs;
  const clone: string | null = store.workdir;
  const cell = { env: 'preview', scope: 'pr-1' };
  const grant: Grant = await store.acquireLock({ ...cell, holder: 'run-1', ttlMs: 60_000 });
  await store.fencedWrite({ ...cell, holder: 'run-1', epoch: grant.lock.epoch, file: 'x', content: 'y' });
  const listed: ListedScope[] = await store.list('preview');
  await withLease(store, { ...cell }, async (lease) => lease.epoch);
  await acquireLease(store, { context: { env: 'preview', scope: 'pr-1', branch: 'b', sha: null, pr: 1 } });
  await scopeStatus(store, { env: 'preview', scope: 'pr-1' });
  await store.close();
  // @ts-expect-error a git store has no mutex
  void store.mutexWaitMs;

  // Whatever BATON_STORE names: the kind tells them apart, and every store can be closed.
  const any: Store = openStore();
  const common: CellStore = any;
  if (any.kind === 'git') {
    const p: string = any.prefix;
    void p;
  } else if (any.kind === 'etcd') {
    const e: EtcdStore = any;
    void e;
  } else {
    const dir: DirStore = any;
    const wait: number = dir.mutexWaitMs;
    void wait;
  }
  await common.close();
  const spec: string | undefined = undefined as string | undefined;
  const named: Store = openStore(spec);
  void [kind, label, prefix, budget, clone, listed, named];
}

// @ts-expect-error pr is a number or null, not a string
scopeFor('main', '7');
// @ts-expect-error not a core operation
invoke('no-such-op', '{}');
// @ts-expect-error detectContext is synchronous
detectContext().then(() => {});

void [scope, pr, sha, codes, exit, standing, answer, use, lease, ownership, git];

// gc: a dry run, and a destroy of each abandoned scope.
async function gcTypes(store: import('baton-lease').OwnershipStore): Promise<void> {
  const { gc } = await import('baton-lease');
  const dry = await gc(store, { env: 'preview', openPrs: [1, 2], remote: 'origin' });
  const names: string[] = dry.abandoned.map((s) => `${s.scope}: ${s.reason}`);
  const done = await gc(store, { env: 'preview', openPrs: '[{"number": 1}]', destroy: async (resources, lease) => {
    for (const r of resources) await lease.forget(r);
  } });
  const skipped: string[] = (done.skipped ?? []).map((s) => s.error.code);
  void names;
  void skipped;
}
void gcTypes;

// The generated declarations (types.d.ts) reach users through index.d.ts.
import type { CoreError, LeaseAction, LockAnswer } from 'baton-lease';
function describeAction(a: LeaseAction): string {
  if (a.type === 'event') return a.event.kind === 'lost' ? `lost: ${a.event.error.code}` : a.event.kind;
  return `${a.op} by ${a.deadlineMs}`;
}
const refusal: CoreError = { code: 'LOCK_HELD', message: 'held', holder: 'run-2' };
const readAnswer: LockAnswer = { lock: null };
// @ts-expect-error: not an error code
const wrong: CoreError = { code: 'NOT_A_CODE', message: '' };
void wrong;
void describeAction;
void refusal;
void readAnswer;
