//! What a run is asked to do, as hosts pass it (JSON, camelCase), and the checks made before it starts.

use crate::error::CoreError;
use crate::lease::{DEFAULT_POLL_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_TIMEOUT_MS, LeaseConfig};
use crate::ownership::{PARENT_ENV, RunContext, parent_cell};
use serde::{Deserialize, Serialize};

/// Default time a cancelled command gets between the first cancel signal and SIGKILL: 5 s, so that the
/// whole sequence (kill, final receipt, release) ends well inside a CI runner's 10 s before its own SIGKILL.
pub const DEFAULT_CANCEL_GRACE_MS: u64 = 5_000;

/// Which job the lease guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Job {
    /// `baton run` / `withLease`: the checkpoint receipt, inheritance, the work, the final receipt, the
    /// handover after success.
    Run,
    /// `baton destroy` / `destroy`: a run whose work gets the delete list; `complete` only when nothing
    /// owned is left.
    Destroy,
    /// `baton lock-object` / object leases: a parent object's lock held while the work runs; no receipts.
    Object,
    /// `baton lock acquire`: acquire (waiting if asked) and end with the lock held; no work, no receipts.
    Acquire,
}

impl Job {
    /// Whether the job keeps a receipt.
    pub(crate) fn has_receipt(self) -> bool {
        matches!(self, Self::Run | Self::Destroy)
    }

    fn holder_prefix(self) -> &'static str {
        if self == Self::Destroy { "destroy" } else { "run" }
    }
}

/// The parent object of an [`Job::Object`] run.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectTarget {
    /// The object's identity, e.g. `auth0:tenant:client:abc`.
    pub identity: String,
    /// Secret values of the run: an identity containing one is refused (it would be written to the lock).
    #[serde(default)]
    pub secrets: Vec<String>,
}

/// A run's configuration. `job` and `random` are always required; `context` for a run or destroy (and for
/// acquire), `object` for an object lease.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunConfig {
    /// The job.
    pub job: Job,
    /// The detected context (env, scope, branch, sha, pr); other fields the host passes are ignored.
    #[serde(default)]
    pub context: Option<RunContext>,
    /// The parent object, for [`Job::Object`].
    #[serde(default)]
    pub object: Option<ObjectTarget>,
    /// A holder name people chose (flag, variable, option). Without one the run names itself
    /// `run-<8 hex>` (`destroy-<8 hex>` for a destroy) from `random`, and that name is this run's alone.
    #[serde(default)]
    pub holder: Option<String>,
    /// Fresh randomness from the host, as at least 40 hex digits: 8 name the holder, 32 are the receipt's
    /// hash key for a scope that has none yet.
    pub random: String,
    /// The approver (required for production, any letter case).
    #[serde(default)]
    pub approved_by: Option<String>,
    /// Lifetime of the lock unless renewed. Default 15 min.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// Safety margin before expiry. Default TTL/5.
    #[serde(default)]
    pub margin_ms: Option<u64>,
    /// Renewal period. Default TTL/3.
    #[serde(default)]
    pub renew_every_ms: Option<u64>,
    /// Wait for a held lock instead of failing with `LOCK_HELD`.
    #[serde(default)]
    pub wait: bool,
    /// How long to wait at most. Default 10 min.
    #[serde(default)]
    pub wait_timeout_ms: Option<u64>,
    /// Time between two attempts while waiting. Default 2 s.
    #[serde(default)]
    pub poll_ms: Option<u64>,
    /// How long one store operation may take at most (`BATON_STORE_BUDGET_MS`). Default 60 s.
    #[serde(default)]
    pub store_budget_ms: Option<u64>,
    /// Time from the first cancel signal to SIGKILL of the work. Default 5 s.
    #[serde(default)]
    pub cancel_grace_ms: Option<u64>,
}

/// A configuration that passed every check: the lease's configuration and what the run needs besides.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) job: Job,
    pub(crate) lease: LeaseConfig,
    pub(crate) context: RunContext,
    /// The object's identity, for an object lease.
    pub(crate) object: Option<String>,
    pub(crate) hash_key: String,
    pub(crate) approved_by: Option<String>,
    pub(crate) cancel_grace_ms: u64,
    /// Whether the TTL was given (the handover's bound follows it).
    pub(crate) ttl_given: Option<u64>,
}

impl RunConfig {
    /// Checks everything that can be checked before any lock: the names, the timing, the randomness, and
    /// approval for production (`ENV_NOT_APPROVED`). Errors are `USAGE` unless said otherwise.
    pub(crate) fn check(self) -> Result<Checked, CoreError> {
        let random: String = self.random.chars().filter(char::is_ascii_hexdigit).collect();
        if random.len() < 40 || random.len() != self.random.len() {
            return Err(CoreError::internal("a run needs at least 40 hex digits of fresh randomness from its host"));
        }
        let (context, object, label) = match self.job {
            Job::Object => {
                let target =
                    self.object.ok_or_else(|| CoreError::usage("an object lease needs the identity of the object"))?;
                let (env, scope) = parent_cell(&target.identity, &target.secrets)?;
                let label = format!("parent object {}", target.identity);
                (RunContext { env, scope, ..RunContext::default() }, Some(target.identity), Some(label))
            }
            _ => {
                let context = self.context.ok_or_else(|| CoreError::usage("a run needs its context (env, scope)"))?;
                if context.env == PARENT_ENV || context.env == crate::claims::CLAIMS_ENV {
                    return Err(CoreError::usage(format!(
                        "the environment `{}` is reserved for baton's own cells (parent-object locks, ownership claims); choose another --env",
                        context.env
                    )));
                }
                (context, None, None)
            }
        };
        let approved_by = if self.job == Job::Object {
            None
        } else {
            let answer = crate::ownership::approval(&context.env, self.approved_by.as_deref())?;
            answer.get("approvedBy").and_then(|a| a.as_str()).map(str::to_owned)
        };
        let named = self.holder.filter(|h| !h.trim().is_empty());
        let unique_holder = named.is_none();
        let holder = named.unwrap_or_else(|| format!("{}-{}", self.job.holder_prefix(), &random[..8]));
        let lease = LeaseConfig {
            env: context.env.clone(),
            scope: context.scope.clone(),
            holder,
            label,
            ttl_ms: self.ttl_ms.unwrap_or(DEFAULT_TTL_MS),
            margin_ms: self.margin_ms,
            renew_every_ms: self.renew_every_ms,
            wait: self.wait,
            wait_timeout_ms: self.wait_timeout_ms.unwrap_or(DEFAULT_WAIT_TIMEOUT_MS),
            poll_ms: self.poll_ms.unwrap_or(DEFAULT_POLL_MS),
            unique_holder,
            store_budget_ms: self.store_budget_ms,
        };
        lease.validate()?;
        let cancel_grace_ms = self.cancel_grace_ms.unwrap_or(DEFAULT_CANCEL_GRACE_MS);
        Ok(Checked {
            job: self.job,
            lease,
            context,
            object,
            hash_key: random[8..40].to_owned(),
            approved_by,
            cancel_grace_ms,
            ttl_given: self.ttl_ms,
        })
    }
}
