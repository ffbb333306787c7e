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
    /// Print the scope of this run, detected from flags, BATON_CTX_* and CI variables (GitHub Actions,
    /// GitLab CI, CircleCI, Bitbucket Pipelines), then local git
    Scope(ScopeArgs),
    /// Acquire, release or inspect the lock (lease) of a scope
    #[command(subcommand)]
    Lock(LockCommand),
}

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
}

/// Which scope's lock, in which store, and how to print.
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// How the scope is detected when --scope is not given.
    #[command(flatten)]
    pub ctx: ContextArgs,
    /// Store, e.g. dir:/srv/baton [default: BATON_STORE, then .baton/ at the repository root]
    #[arg(long, value_name = "SPEC", env = "BATON_STORE", hide_env_values = true)]
    pub store: Option<String>,
    /// Print one JSON envelope on stdout
    #[arg(long)]
    pub json: bool,
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
    /// How long the lock lives unless renewed (500ms, 90s, 15m, 2h)
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub ttl: u64,
}

/// `baton lock release`.
#[derive(Args, Debug)]
pub struct ReleaseArgs {
    /// Which lock.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The holder that acquired the lock [default: BATON_HOLDER]
    #[arg(long, value_name = "HOLDER", env = "BATON_HOLDER")]
    pub holder: Option<String>,
    /// Release only if the lock is still at this epoch [default: BATON_EPOCH]
    #[arg(long, value_name = "N", env = "BATON_EPOCH")]
    pub epoch: Option<u64>,
}
