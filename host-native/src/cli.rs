//! The command line: what each command and flag means. Parsing only; the work is in `commands/`.

use crate::context::ContextArgs;
use crate::duration::parse_duration;
use clap::{Args, Parser, Subcommand};

/// baton: a lease on your CI scope, and fenced writes of what it created.
///
/// Every run gets a scope (pr-<n> in a pull request, main on the default branch, branch-<name> otherwise)
/// and holds a lease on it while it works. Decisions are made by baton's core component; the store is a
/// directory (.baton/ at the repository root unless --store or BATON_STORE names another).
///
/// Stores: dir:<path> (one machine); git:<remote> (refs under BATON_GIT_PREFIX, default baton-receipts);
/// etcd:<endpoint>[,<endpoint>...], e.g. etcd:http://10.0.0.5:2379,http://10.0.0.6:2379 (keys under
/// BATON_ETCD_PREFIX, default /baton/; a user from BATON_ETCD_USER and BATON_ETCD_PASSWORD or
/// user:password@ in the endpoint; TLS files by path in BATON_ETCD_CA, BATON_ETCD_CERT, BATON_ETCD_KEY).
/// BATON_STORE_BUDGET_MS bounds every git or etcd operation (default 60000). Credentials are never printed.
///
/// Exit codes: 0 ok, 1 failed, 2 refused before doing anything (usage, context), 3 lock held or lost.
/// With --json every command prints exactly one JSON envelope on stdout: {"ok":true,"command",...} or
/// {"ok":false,"command","error":{"code","message","hint"?,...}}. Human text goes to stderr.
#[derive(Parser, Debug)]
#[command(name = "baton", version, max_term_width = 110)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the scope of this run (pr-<n>, main or branch-<name>)
    ///
    /// Detected from flags, BATON_CTX_* and CI variables (GitHub Actions,
    /// GitLab CI, CircleCI, Bitbucket Pipelines), then local git
    Scope(ScopeArgs),
    /// Acquire, release or inspect the lock (lease) of a scope
    #[command(subcommand)]
    Lock(LockCommand),
    /// Run a command under the scope's lease (the main job)
    ///
    /// Acquire the scope's lease (or wait), run CMD with BATON_ENV, BATON_SCOPE,
    /// BATON_HOLDER, BATON_EPOCH and BATON_STORE set, renew in the background, stop CMD (SIGTERM, then
    /// SIGKILL) before the lease could be taken over if renewals stop getting through or another run took
    /// it, and release it on every exit path. Exits with CMD's code, or 3 (LOCK_HELD, LOCK_LOST)
    #[command(after_long_help = RUN_HELP)]
    Run(RunArgs),
    /// Destroy what the scope owns, through CMD
    ///
    /// Acquire the scope's lease (or wait), give CMD the ledger entries to delete on
    /// stdin (a JSON array of {adapter, key, id, provider, createdBy}, newest first; adopted entries are only
    /// forgotten), let CMD report each deleted one with `baton ledger forget`, and write the destroy receipt
    /// when CMD exits. Intents left unresolved fail with INTENT_UNRESOLVED; nothing is dropped on a guess
    Destroy(RunArgs),
    /// Run a command under a lease on a shared parent object
    ///
    /// A lease on the object, not a scope: every writer of that object, in any
    /// scope or environment, is serialised. The identity names the object, e.g. auth0:tenant:client:abc
    LockObject(ObjectArgs),
    /// What the scope's ledger holds, and fenced changes to it (inside `baton run`, or with --holder/--epoch)
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Show the scope's receipt, or list the receipts of the environment
    #[command(subcommand)]
    Receipt(ReceiptCommand),
    /// The scope at a glance
    ///
    /// Its lock (live, expired or none), what it owns, what it inherited, and how many
    /// resources other scopes of its environment own
    Status(StatusArgs),
    /// Write one data file of the scope's cell, fenced (content from stdin)
    ///
    /// It lands only if the holder still holds the lease at
    /// that epoch, checked in the same atomic step (exit 3 with LOCK_LOST otherwise). Reads the content from
    /// stdin. Inside `baton run`, holder, epoch, scope and store come from the environment
    Write(WriteArgs),
    /// List (or destroy) the environment's scopes whose reason to exist is gone
    ///
    /// A pr-<n> whose pull request is not open (closed or merged), a branch-<name> whose branch is gone
    /// from the remote and that no pull request succeeded. Open pull requests come from --open-prs, else
    /// from `gh pr list`; branches from `git ls-remote --heads`. A dry run unless --destroy: then each
    /// abandoned scope is destroyed as `baton destroy -- CMD` would, under its own lease; scopes whose lease
    /// is live are skipped
    #[command(after_long_help = GC_HELP)]
    Gc(GcArgs),
}

const GC_HELP: &str = "\
Examples:
  baton gc --env preview
  gh pr list --state open --json number | baton gc --open-prs - --json
  baton gc --env preview --destroy -- ./destroy-preview.sh";

const RUN_HELP: &str = "\
Safety: only the run holding the lease at an epoch can write under that epoch; the store checks holder and
epoch in the same step as every fenced write, so a paused or partitioned run is refused once another run
took over, whatever the clocks say. The holder also stops itself at its own deadline: send time of the last
successful renewal + TTL - margin (TTL/5), measured on this machine's monotonic clock. Other runs judge
expiry from the lock's wall-clock expiresAt, so hosts' clocks must agree to within half the margin
(3 minutes at the default TTL of 15 minutes) for the holder to stop before anyone can take over.

Examples:
  baton run -- ./deploy.sh
  baton run --wait --wait-timeout 20m -- terraform apply -auto-approve
  baton run --json --scope pr-42 -- make preview";

/// `baton scope`.
#[derive(Args, Debug)]
pub struct ScopeArgs {
    /// How the context is detected.
    #[command(flatten)]
    pub ctx: ContextArgs,
    /// Print one JSON envelope with the whole context instead of the scope name
    #[arg(long)]
    pub json: bool,
}

/// `baton lock ...`.
#[derive(Subcommand, Debug)]
pub enum LockCommand {
    /// Take the lock of a scope; exit 3 with LOCK_HELD while another holder's lock is live. An expired lock
    /// is taken over and reported. Prints the holder on stdout
    Acquire(AcquireArgs),
    /// Release the lock if this holder (and epoch, if given) holds it; anything else is a no-op
    Release(ReleaseArgs),
    /// Show the lock of a scope: free, held (until when) or expired
    Status(TargetArgs),
    /// Extend the lock of a holder at an epoch by its TTL (exit 3 with LOCK_LOST if it is not held so)
    Renew(RenewArgs),
    /// Take the lock over on purpose, whatever holds it (a live, expired or unreadable lock); the reason and
    /// the previous lock are recorded in the new lock. Use only when you know the holder is gone
    Break(BreakArgs),
}

/// Which scope's lock, in which store, and how to print.
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// How the scope is detected when --scope is not given.
    #[command(flatten)]
    pub ctx: ContextArgs,
    /// Store: dir:<path>, git:<remote> or etcd:<endpoint>[,...] [default: BATON_STORE, then .baton/ at the
    /// repository root]
    #[arg(long, value_name = "SPEC", env = "BATON_STORE", hide_env_values = true)]
    pub store: Option<String>,
    /// Print one JSON envelope on stdout
    #[arg(long)]
    pub json: bool,
}

/// How a lease is held and waited for. Unset values take the core's defaults.
#[derive(Args, Debug, Clone)]
pub struct LeaseArgs {
    /// How long the lock lives unless renewed (500ms, 90s, 15m, 2h) [default: 15m]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<u64>,
    /// Wait while another run holds the lock, printing who holds it, instead of exiting 3 with LOCK_HELD
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits at most [default: 10m]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub wait_timeout: Option<u64>,
    /// Time between two attempts while waiting [default: 2s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub poll_interval: Option<u64>,
}

impl LeaseArgs {
    /// The lease configuration for the core (`baton_core::lease::LeaseConfig`).
    pub fn config(&self, env: &str, scope: &str, holder: &str) -> serde_json::Value {
        let mut c = serde_json::json!({ "env": env, "scope": scope, "holder": holder, "wait": self.wait });
        for (key, value) in [("ttlMs", self.ttl), ("waitTimeoutMs", self.wait_timeout), ("pollMs", self.poll_interval)]
        {
            if let Some(v) = value {
                c[key] = v.into();
            }
        }
        c
    }
}

/// The lease a fenced command writes under: holder and epoch, given by flag or exported by `baton run`.
#[derive(Args, Debug, Clone)]
pub struct FenceArgs {
    /// The holder of the lease [default: BATON_HOLDER]
    #[arg(long, value_name = "HOLDER", env = "BATON_HOLDER")]
    pub holder: Option<String>,
    /// The epoch of the lease [default: BATON_EPOCH]
    #[arg(long, value_name = "N", env = "BATON_EPOCH")]
    pub epoch: Option<u64>,
}

/// `baton lock acquire`.
#[derive(Args, Debug)]
pub struct AcquireArgs {
    /// Which lock.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Holder name, kept to release the lock later [default: BATON_HOLDER, else a new run-<8 hex>]
    #[arg(long, value_name = "HOLDER", env = "BATON_HOLDER")]
    pub holder: Option<String>,
    /// Who approved taking the lock; required when the environment is production [default: BATON_APPROVED_BY]
    #[arg(long, value_name = "NAME", env = "BATON_APPROVED_BY")]
    pub approved_by: Option<String>,
    /// TTL and waiting.
    #[command(flatten)]
    pub lease: LeaseArgs,
}

/// `baton lock renew`.
#[derive(Args, Debug)]
pub struct RenewArgs {
    /// Which lock.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The lease the change is fenced by.
    #[command(flatten)]
    pub fence: FenceArgs,
    /// The new lifetime from now
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub ttl: u64,
}

/// `baton lock break`.
#[derive(Args, Debug)]
pub struct BreakArgs {
    /// Which lock.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Why the lock is broken; recorded in the new lock for whoever held it
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Holder of the new lock [default: BATON_HOLDER, else a new break-<8 hex>]
    #[arg(long, value_name = "HOLDER", env = "BATON_HOLDER")]
    pub holder: Option<String>,
    /// Who approved breaking the lock; required when the environment is production [default: BATON_APPROVED_BY]
    #[arg(long, value_name = "NAME", env = "BATON_APPROVED_BY")]
    pub approved_by: Option<String>,
    /// Lifetime of the new lock
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub ttl: u64,
}

/// `baton run` and `baton destroy`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Which scope and store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// TTL and waiting.
    #[command(flatten)]
    pub lease: LeaseArgs,
    /// Who approved this run; required when the environment is production [default: BATON_APPROVED_BY]
    #[arg(long, value_name = "NAME", env = "BATON_APPROVED_BY")]
    pub approved_by: Option<String>,
    /// On cancel (SIGINT/SIGTERM), how long the command gets to stop before its process group is killed;
    /// then the receipt says `cancelled` and the lease is released. Keep it under the CI runner's own
    /// kill delay (GitHub Actions: 10 s after its first signal) [default: 5s]
    #[arg(long, value_name = "DURATION", env = "BATON_CANCEL_GRACE", value_parser = parse_duration)]
    pub cancel_grace: Option<u64>,
    /// The command to run and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// `baton lock-object`.
#[derive(Args, Debug)]
pub struct ObjectArgs {
    /// The identity of the shared object, e.g. auth0:tenant:client:abc
    #[arg(value_name = "IDENTITY")]
    pub identity: String,
    /// Store (as for scopes).
    #[arg(long, value_name = "SPEC", env = "BATON_STORE", hide_env_values = true)]
    pub store: Option<String>,
    /// Names of environment variables holding secrets the identity must not contain (repeatable)
    /// [default: BATON_SECRET_VARS, comma-separated]
    #[arg(long = "secret-env", value_name = "VAR")]
    pub secret_env: Vec<String>,
    /// TTL and waiting.
    #[command(flatten)]
    pub lease: LeaseArgs,
    /// Print one JSON envelope on stdout
    #[arg(long)]
    pub json: bool,
    /// On cancel (SIGINT/SIGTERM), how long the command gets to stop before its process group is killed;
    /// then the receipt says `cancelled` and the lease is released. Keep it under the CI runner's own
    /// kill delay (GitHub Actions: 10 s after its first signal) [default: 5s]
    #[arg(long, value_name = "DURATION", env = "BATON_CANCEL_GRACE", value_parser = parse_duration)]
    pub cancel_grace: Option<u64>,
    /// The command to run and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// `baton ledger ...`.
#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Record a write-ahead intent before creating a resource (a fenced checkpoint)
    Intend(LedgerArgs),
    /// Record that the resource exists (with its id) and this scope owns it
    Record(LedgerArgs),
    /// Forget the resource (it was deleted, or never created)
    Forget(LedgerArgs),
    /// May this scope rely on (or, with --change, create or change) the resource? Exit 1 with
    /// OWNED_BY_OTHER_SCOPE when another scope of the environment owns it; relying on it records it as adopted
    Check(LedgerArgs),
    /// List the scope's ledger
    List(TargetArgs),
}

/// A resource and the fence of the run changing the ledger.
#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// Which scope.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The adapter (provider kind), e.g. vercel
    #[arg(long, value_name = "ADAPTER")]
    pub adapter: String,
    /// The resource key within the adapter
    #[arg(long, value_name = "KEY")]
    pub key: String,
    /// The provider block, part of the identity (a JSON object)
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub provider: String,
    /// The provider's id (record)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// A label for people
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The parent object whose lock guards writes to the resource
    #[arg(long, value_name = "IDENTITY")]
    pub parent: Option<String>,
    /// check: the run would create or change the resource, not only rely on it
    #[arg(long)]
    pub change: bool,
    /// The lease the change is fenced by.
    #[command(flatten)]
    pub fence: FenceArgs,
}

/// `baton receipt ...`.
#[derive(Subcommand, Debug)]
pub enum ReceiptCommand {
    /// Print the scope's latest receipt (or run RUN's)
    Show(ReceiptShowArgs),
    /// List the scopes of the environment with their latest receipt's status
    List(TargetArgs),
}

/// `baton receipt show`.
#[derive(Args, Debug)]
pub struct ReceiptShowArgs {
    /// Which scope.
    #[command(flatten)]
    pub target: TargetArgs,
    /// A run id instead of the latest receipt
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
}

/// `baton status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Which scope.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `baton write`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The data file of the cell to write (letters, digits, . _ -)
    #[arg(value_name = "FILE")]
    pub file: String,
    /// Which cell.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The lease the change is fenced by.
    #[command(flatten)]
    pub fence: FenceArgs,
}

/// `baton lock release`.
#[derive(Args, Debug)]
pub struct ReleaseArgs {
    /// Which lock.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The lease the change is fenced by.
    #[command(flatten)]
    pub fence: FenceArgs,
}

/// `baton gc`.
#[derive(Args, Debug)]
pub struct GcArgs {
    /// Which environment and store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// TTL and waiting of each destroy's lease.
    #[command(flatten)]
    pub lease: LeaseArgs,
    /// The open pull requests: a file with a JSON list of numbers, or what `gh pr list --state open --json
    /// number` prints; `-` reads stdin [default: ask `gh` on PATH]
    #[arg(long, value_name = "FILE|-")]
    pub open_prs: Option<String>,
    /// The remote whose branches are listed (`git ls-remote --heads`): a remote name or URL
    #[arg(long, value_name = "NAME|URL", default_value = "origin")]
    pub remote: String,
    /// Destroy each abandoned scope through CMD (given after `--`), as `baton destroy` does
    #[arg(long, requires = "cmd")]
    pub destroy: bool,
    /// Who approved the destroys; required when the environment is production [default: BATON_APPROVED_BY]
    #[arg(long, value_name = "NAME", env = "BATON_APPROVED_BY")]
    pub approved_by: Option<String>,
    /// On cancel, how long CMD gets to stop before its process group is killed [default: 5s]
    #[arg(long, value_name = "DURATION", env = "BATON_CANCEL_GRACE", value_parser = parse_duration)]
    pub cancel_grace: Option<u64>,
    /// The destroy command and its arguments, after `--` (with --destroy)
    #[arg(last = true, value_name = "CMD", requires = "destroy")]
    pub cmd: Vec<String>,
}
