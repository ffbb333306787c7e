//! The lease configuration and its validation.

use crate::error::CoreError;
use crate::lock::validate_holder;
use crate::scope::validate_name;
use serde::Deserialize;

/// Default TTL: 15 minutes.
pub const DEFAULT_TTL_MS: u64 = 900_000;
/// Default wait timeout: 10 minutes.
pub const DEFAULT_WAIT_TIMEOUT_MS: u64 = 600_000;
/// Default wait poll: 2 seconds.
pub const DEFAULT_POLL_MS: u64 = 2_000;
/// Delays before the release retries.
pub const RELEASE_RETRY_MS: [u64; 3] = [200, 400, 800];

/// How a lease is held, as hosts pass it (JSON, camelCase). Only `env`, `scope` and `holder` are required.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseConfig {
    /// The environment of the cell.
    pub env: String,
    /// The scope of the cell (for a parent object: the 32-hex cell name).
    pub scope: String,
    /// The holder name written into the lock.
    pub holder: String,
    /// How to name the lock in messages; default `env/scope`.
    #[serde(default)]
    pub label: Option<String>,
    /// Lifetime of the lock unless renewed. Default 15 min.
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// How long before the lock could expire the holder stops on its own. Default TTL/5. It bounds the clock
    /// skew between hosts that the lease tolerates.
    #[serde(default)]
    pub margin_ms: Option<u64>,
    /// Time between one renewal settling and the next being sent. Default TTL/3.
    #[serde(default)]
    pub renew_every_ms: Option<u64>,
    /// Whether to wait for a held lock instead of failing with `LOCK_HELD`.
    #[serde(default)]
    pub wait: bool,
    /// How long to wait at most. Default 10 min.
    #[serde(default = "default_wait_timeout")]
    pub wait_timeout_ms: u64,
    /// Time between two attempts while waiting. Default 2 s.
    #[serde(default = "default_poll")]
    pub poll_ms: u64,
    /// Whether the host made `holder` up for this lease alone (at random), so that a lock under that name can
    /// only be this lease's. Only then does an acquire whose reply was lost end with a release by holder name
    /// (the grant's epoch is unknown); a name chosen by people may be shared by two leases. Default false.
    #[serde(default)]
    pub unique_holder: bool,
    /// How long one store operation may take at most (`BATON_STORE_BUDGET_MS`); default 60 s. Bounds every
    /// store request of the lease (see [`crate::lease::LeaseMachine::store_deadline`]).
    #[serde(default)]
    pub store_budget_ms: Option<u64>,
}

fn default_ttl() -> u64 {
    DEFAULT_TTL_MS
}
/// The default time limit of one store operation, retries included (`BATON_STORE_BUDGET_MS`).
pub const DEFAULT_BUDGET_MS: u64 = 60_000;

fn default_wait_timeout() -> u64 {
    DEFAULT_WAIT_TIMEOUT_MS
}
fn default_poll() -> u64 {
    DEFAULT_POLL_MS
}

/// The validated timing of a lease, all in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// TTL.
    pub ttl: u64,
    /// Safety margin before expiry.
    pub margin: u64,
    /// Renewal period (after the previous renewal settled).
    pub renew_every: u64,
    /// Wait timeout, when waiting.
    pub wait_timeout: Option<u64>,
    /// Poll period while waiting.
    pub poll: u64,
}

impl LeaseConfig {
    /// A configuration with every default.
    pub fn new(env: &str, scope: &str, holder: &str) -> Self {
        Self {
            env: env.into(),
            scope: scope.into(),
            holder: holder.into(),
            label: None,
            ttl_ms: DEFAULT_TTL_MS,
            margin_ms: None,
            renew_every_ms: None,
            wait: false,
            wait_timeout_ms: DEFAULT_WAIT_TIMEOUT_MS,
            poll_ms: DEFAULT_POLL_MS,
            unique_holder: false,
            store_budget_ms: None,
        }
    }

    /// The store budget of one operation, in ms.
    pub fn store_budget(&self) -> u64 {
        self.store_budget_ms.filter(|b| *b > 0).unwrap_or(DEFAULT_BUDGET_MS)
    }

    /// `env/scope`, or the label given.
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| format!("{}/{}", self.env, self.scope))
    }

    /// Checks names and timing: TTL > 0, margin < TTL, renewal period < TTL - margin, poll > 0 (`USAGE`).
    pub fn validate(&self) -> Result<Timing, CoreError> {
        validate_name("env", &self.env)?;
        validate_name("scope", &self.scope)?;
        validate_holder(&self.holder)?;
        let ttl = self.ttl_ms;
        if ttl == 0 {
            return Err(CoreError::usage("the lease TTL must be greater than zero (--ttl)"));
        }
        if ttl > 366 * 86_400_000 {
            return Err(CoreError::usage(format!("the lease TTL must be at most a year (got {ttl} ms)")));
        }
        let margin = self.margin_ms.unwrap_or(ttl / 5);
        if margin >= ttl {
            return Err(CoreError::usage(format!(
                "the safety margin ({margin} ms) must be shorter than the TTL ({ttl} ms)"
            )));
        }
        let renew_every = self.renew_every_ms.unwrap_or((ttl / 3).max(1));
        if renew_every == 0 || renew_every >= ttl - margin {
            return Err(CoreError::usage(format!(
                "the renewal period ({renew_every} ms) must be positive and shorter than TTL - margin ({} ms), or the holder would stop before renewing",
                ttl - margin
            )));
        }
        if self.poll_ms == 0 {
            return Err(CoreError::usage("the wait poll period must be greater than zero"));
        }
        if self.wait && self.wait_timeout_ms == 0 {
            return Err(CoreError::usage("the wait timeout must be greater than zero (--wait-timeout)"));
        }
        Ok(Timing {
            ttl,
            margin,
            renew_every,
            wait_timeout: self.wait.then_some(self.wait_timeout_ms),
            poll: self.poll_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn defaults_follow_the_design() {
        let t = LeaseConfig::new("preview", "pr-1", "run-1").validate().unwrap();
        assert_eq!((t.ttl, t.margin, t.renew_every, t.wait_timeout, t.poll), (900_000, 180_000, 300_000, None, 2_000));
    }

    #[test]
    fn bad_timing_is_usage() {
        let base = LeaseConfig::new("preview", "pr-1", "run-1");
        let cases = [
            LeaseConfig { ttl_ms: 0, ..base.clone() },
            LeaseConfig { margin_ms: Some(900_000), ..base.clone() },
            LeaseConfig { renew_every_ms: Some(720_000), ..base.clone() },
            LeaseConfig { poll_ms: 0, ..base.clone() },
            LeaseConfig { wait: true, wait_timeout_ms: 0, ..base.clone() },
            LeaseConfig { scope: "a/b".into(), ..base.clone() },
            LeaseConfig { holder: " ".into(), ..base },
        ];
        for c in cases {
            assert_eq!(c.validate().unwrap_err().code, ErrorCode::Usage, "{c:?}");
        }
    }
}
