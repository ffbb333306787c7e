//! Relations between scopes: the predecessor, the foreign map, and parent-object cells.

use crate::error::CoreError;
use crate::receipt::{Receipt, parse_receipt};
use crate::scope::scope_for;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Another scope of the same environment, as the host listed it: its name and its `latest.json` text.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OtherScope {
    /// The scope name.
    pub scope: String,
    /// Its `latest.json`, if it has one.
    #[serde(default)]
    pub text: Option<String>,
}

impl OtherScope {
    /// Its receipt; an unreadable one is skipped (it cannot tell what it owns), as the original's list does.
    pub fn receipt(&self) -> Option<Receipt> {
        self.text.as_deref().and_then(|t| parse_receipt(t, &self.scope).ok())
    }
}

/// The longest a handover holds the predecessor's lock: it takes three transactions, so a run that dies
/// in between blocks the branch for at most this long (or the run's own TTL, when that is shorter).
pub const HANDOVER_TTL_MS: u64 = 60_000;

/// The TTL of the handover's lock on the predecessor, for a run whose lease has `run_ttl_ms` (the lease
/// default when not given): never longer than the run's own lease, so a crash mid-handover is recovered
/// as fast as a crashed run.
pub fn handover_ttl_ms(run_ttl_ms: Option<u64>) -> u64 {
    HANDOVER_TTL_MS.min(run_ttl_ms.unwrap_or(crate::lease::DEFAULT_TTL_MS))
}

/// The scope a pull request scope inherits from: `branch-<head branch>`, only for `pr-` scopes on a branch
/// whose own scope is a `branch-` scope (a PR from `main` inherits nothing).
pub fn predecessor_of(scope: &str, branch: Option<&str>, pr: Option<u64>) -> Option<String> {
    let branch = branch.filter(|b| !b.is_empty())?;
    if pr.is_none() || !scope.starts_with("pr-") {
        return None;
    }
    Some(scope_for(branch, None, None)).filter(|p| p.starts_with("branch-"))
}

/// identity -> owning scope, over every entry of every other scope (intents included) except `own` and
/// `predecessor`. Scopes are visited in name order; when several hold an identity, the last one wins.
pub fn foreign_map(own: &str, predecessor: Option<&str>, others: &[OtherScope]) -> BTreeMap<String, String> {
    let mut sorted: Vec<&OtherScope> =
        others.iter().filter(|o| o.scope != own && Some(o.scope.as_str()) != predecessor).collect();
    sorted.sort_by(|a, b| a.scope.cmp(&b.scope));
    let mut map = BTreeMap::new();
    for other in sorted {
        for entry in other.receipt().map(|r| r.ledger).unwrap_or_default() {
            map.insert(entry.identity(), other.scope.clone());
        }
    }
    map
}

/// The environment of parent-object lock cells; reserved, never a run's environment.
pub const PARENT_ENV: &str = "_locks";

/// The cell of a parent object: environment `_locks`, scope = the first 32 hex digits of sha256(identity).
/// An identity that contains one of `secrets` (values of at least 4 characters) is refused: it would be
/// written to the lock and to receipts.
pub fn parent_cell(identity: &str, secrets: &[String]) -> Result<(String, String), CoreError> {
    if identity.trim().is_empty() {
        return Err(CoreError::usage("a parent object needs a non-empty identity, e.g. auth0:tenant:client:abc"));
    }
    if secrets.iter().any(|s| s.chars().count() >= 4 && identity.contains(s.as_str())) {
        return Err(CoreError::usage(
            "the parent-object identity contains a secret value; an identity is written to locks and receipts, so it must name the object, not carry a credential",
        ));
    }
    let digest = crate::names::sha256_hex(identity.as_bytes());
    Ok((PARENT_ENV.into(), digest[..32].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_branch_scopes_are_predecessors() {
        assert_eq!(predecessor_of("pr-42", Some("feat/search"), Some(42)).as_deref(), Some("branch-feat-search"));
        assert_eq!(predecessor_of("pr-42", Some("main"), Some(42)), None);
        assert_eq!(predecessor_of("branch-x", Some("x"), None), None);
        assert_eq!(predecessor_of("pr-1", None, Some(1)), None);
    }

    #[test]
    fn parent_cells_hash_the_identity_and_refuse_secrets() {
        let (env, scope) = parent_cell("fake:list:callbacks", &[]).unwrap();
        assert_eq!(env, "_locks");
        assert_eq!(scope.len(), 32);
        assert_eq!(scope, crate::names::sha256_hex(b"fake:list:callbacks")[..32]);
        assert!(parent_cell("http://user:hunter22@x/list", &["hunter22".into()]).is_err());
    }
}
