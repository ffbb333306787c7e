//! `baton gc`: which scopes of an environment have lost their reason to exist. Pure: the hosts gather the
//! facts (the environment's scopes with their receipts, the forge's open pull requests, the remote's branches)
//! and ask [`plan`]; the destroy flow that follows is `baton destroy`'s, under each scope's own lease.
//!
//! The rules:
//! - `pr-<n>` is abandoned when pull request `n` is not open (closed or merged);
//! - `branch-<name>` is abandoned when no branch of the remote has that scope and no pull request succeeded
//!   it (its receipt has no `supersededBy`: a handed-over branch scope owns nothing any more);
//! - a scope whose last receipt is a complete destroy that left nothing is done with (kept, not listed again);
//! - `main`, any other scope, and a scope whose receipt cannot be read are kept (nothing is destroyed on a
//!   guess).
//!
//! Reconciling against the forge's state, instead of reacting to "closed" events, also collects the scopes of
//! pull requests that closed while no workflow ran.

use crate::error::CoreError;
use crate::scope::scope_for;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// `gc-plan`: `{scopes: [{scope, text?}], openPrs, lsRemote, defaultBranch?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GcRequest {
    /// The environment's scopes as the store lists them: `{scope, text}` (`text`: `latest.json`, or null).
    pub scopes: Vec<ListedScope>,
    /// The open pull requests as text: a JSON list of numbers, or of objects with `number` (what
    /// `gh pr list --state open --json number` prints).
    pub open_prs: String,
    /// What `git ls-remote --heads <remote>` printed: `<sha>\trefs/heads/<name>` lines.
    pub ls_remote: String,
    /// The repository's default branch, whose scope is `main` (never collected).
    #[serde(default)]
    pub default_branch: Option<String>,
}

/// One scope of the environment, as a store's `list` answers it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedScope {
    /// The scope name.
    pub scope: String,
    /// Its `latest.json`, if it has one.
    #[serde(default)]
    pub text: Option<String>,
}

/// The verdict on one scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    /// The scope name.
    pub scope: String,
    /// Why it is abandoned or kept, for people.
    pub reason: String,
    /// The pull request of a `pr-<n>` scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<u64>,
}

/// `gc-plan`'s answer: the abandoned scopes (to destroy) and the kept ones, each sorted by scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcPlan {
    /// Scopes whose reason to exist is gone.
    pub abandoned: Vec<Judged>,
    /// Every other scope, with the reason it stays.
    pub kept: Vec<Judged>,
    /// The open pull requests understood, ascending.
    pub open_prs: Vec<u64>,
    /// The abandoned scopes as the dry run prints them for people: `SCOPE  REASON` lines, or a line
    /// saying there are none.
    pub table: String,
}

/// Parses the open pull requests (see [`GcRequest::open_prs`]); `USAGE` names what was wrong.
pub fn parse_open_prs(text: &str) -> Result<BTreeSet<u64>, CoreError> {
    let bad = |why: &str| {
        CoreError::usage(format!(
            "the open pull requests are not understood ({why}): give a JSON list of numbers, e.g. [12, 15], \
             or what `gh pr list --state open --json number` prints"
        ))
    };
    let value: Value = serde_json::from_str(text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let Value::Array(items) = value else { return Err(bad("not a list")) };
    items
        .iter()
        .map(|item| {
            let n = match item {
                Value::Object(o) => o.get("number").and_then(Value::as_u64),
                other => other.as_u64(),
            };
            n.ok_or_else(|| bad(&format!("`{item}` is not a pull request number")))
        })
        .collect()
}

/// The branch names in `git ls-remote --heads` output (lines `<sha>\trefs/heads/<name>`; others ignored).
pub fn remote_branches(ls_remote: &str) -> BTreeSet<String> {
    ls_remote
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter_map(|(_, name)| name.trim_end().strip_prefix("refs/heads/"))
        .map(str::to_owned)
        .collect()
}

/// Decides which scopes are abandoned (see the module doc).
pub fn plan(r: &GcRequest) -> Result<GcPlan, CoreError> {
    let open = parse_open_prs(&r.open_prs)?;
    let branches = remote_branches(&r.ls_remote);
    let branch_scopes: BTreeSet<String> =
        branches.iter().map(|b| scope_for(b, None, r.default_branch.as_deref())).collect();
    let mut scopes: Vec<&ListedScope> = r.scopes.iter().collect();
    scopes.sort_by(|a, b| a.scope.cmp(&b.scope));
    scopes.dedup_by(|a, b| a.scope == b.scope);
    let (mut abandoned, mut kept) = (Vec::new(), Vec::new());
    for s in scopes {
        let (gone, judged) = judge(s, &open, &branch_scopes);
        if gone { abandoned.push(judged) } else { kept.push(judged) }
    }
    let table = table(&abandoned);
    Ok(GcPlan { abandoned, kept, open_prs: open.into_iter().collect(), table })
}

fn table(abandoned: &[Judged]) -> String {
    if abandoned.is_empty() {
        return "no abandoned scopes\n".into();
    }
    let width = abandoned.iter().map(|j| j.scope.chars().count()).max().unwrap_or(0).max("SCOPE".len());
    let mut out = format!("{:width$}  REASON\n", "SCOPE");
    for j in abandoned {
        out.push_str(&format!("{:width$}  {}\n", j.scope, j.reason));
    }
    out
}

fn judge(s: &ListedScope, open: &BTreeSet<u64>, branch_scopes: &BTreeSet<String>) -> (bool, Judged) {
    let judged = |reason: String, pr: Option<u64>| Judged { scope: s.scope.clone(), reason, pr };
    let receipt = match s.text.as_deref().map(|t| crate::receipt::parse_receipt(t, &s.scope)).transpose() {
        Ok(r) => r.map(|r| r.to_value()),
        Err(e) => return (false, judged(format!("its receipt cannot be read ({}): {}", e.code, e.message), None)),
    };
    let destroyed = receipt.as_ref().is_some_and(|r| {
        r.get("destroy") == Some(&Value::Bool(true))
            && r.get("status").and_then(Value::as_str) == Some("complete")
            && r.get("ledger").and_then(Value::as_array).is_some_and(Vec::is_empty)
    });
    if destroyed {
        return (false, judged("destroyed already: it owns nothing".into(), None));
    }
    if let Some(n) = s.scope.strip_prefix("pr-").and_then(|n| n.parse::<u64>().ok()) {
        return if open.contains(&n) {
            (false, judged(format!("pull request #{n} is open"), Some(n)))
        } else {
            (true, judged(format!("pull request #{n} is not open (closed or merged)"), Some(n)))
        };
    }
    if s.scope == "main" {
        return (false, judged("the default branch's scope".into(), None));
    }
    if s.scope.starts_with("branch-") {
        if branch_scopes.contains(&s.scope) {
            return (false, judged("its branch exists on the remote".into(), None));
        }
        let successor = receipt.as_ref().and_then(|r| r.get("supersededBy")).and_then(Value::as_str);
        return match successor {
            Some(next) => (false, judged(format!("succeeded by `{next}`, which owns its resources"), None)),
            None => (true, judged("its branch is gone from the remote and no pull request succeeded it".into(), None)),
        };
    }
    (false, judged("not a pr-<n> or branch-<name> scope".into(), None))
}

/// `gc-outcome`: `{results: [{scope, error?}]}`, one per abandoned scope in the order they were destroyed.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeRequest {
    /// What each destroy ended with: no `error` when it succeeded.
    pub results: Vec<DestroyResult>,
}

/// One destroy's end.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DestroyResult {
    /// The scope.
    pub scope: String,
    /// Its error object (`{code, message, ...}`), if it failed.
    #[serde(default)]
    pub error: Option<serde_json::Map<String, Value>>,
}

/// How `gc --destroy` ended ([`outcome`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GcOutcome {
    /// The scopes destroyed.
    pub destroyed: Vec<String>,
    /// The scopes skipped: a live lease (`LOCK_HELD`), which the next gc tries again.
    pub skipped: Vec<FailedDestroy>,
    /// The scopes whose destroy failed otherwise.
    pub failed: Vec<FailedDestroy>,
    /// The error gc ends with when one failed.
    pub error: Option<GcError>,
}

/// A destroy that did not happen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedDestroy {
    /// The scope.
    pub scope: String,
    /// Its error object, as the host gave it.
    pub error: serde_json::Map<String, Value>,
}

/// The error `gc --destroy` ends with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GcError {
    /// The first failure's code.
    pub code: String,
    /// A message naming every failed scope.
    pub message: String,
}

/// Sorts the destroys of `gc --destroy`: `destroyed` (scope names), `skipped` (live leases: `LOCK_HELD`),
/// `failed` (any other error), and the `error` gc ends with when one failed: the first failure's code and
/// a message naming them all (a live lease is no failure: the next gc tries again).
pub fn outcome(r: &OutcomeRequest) -> GcOutcome {
    let (mut destroyed, mut skipped, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for d in &r.results {
        match &d.error {
            None => destroyed.push(d.scope.clone()),
            Some(e) => {
                let entry = FailedDestroy { scope: d.scope.clone(), error: e.clone() };
                if e.get("code").and_then(Value::as_str) == Some("LOCK_HELD") {
                    skipped.push(entry);
                } else {
                    failed.push(entry);
                }
            }
        }
    }
    let error = failed.first().map(|first| {
        let names: Vec<&str> = failed.iter().map(|f| f.scope.as_str()).collect();
        GcError {
            code: first.error.get("code").and_then(Value::as_str).unwrap_or("INTERNAL").to_owned(),
            message: format!(
                "{} of {} abandoned scopes could not be destroyed ({}); see `failed`, fix the cause and run gc again",
                failed.len(),
                r.results.len(),
                names.join(", ")
            ),
        }
    });
    GcOutcome { destroyed, skipped, failed, error }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn receipt(extra: Value) -> String {
        let mut r = json!({
            "version": 2, "scope": "x", "environment": "preview", "status": "complete",
            "lines": {}, "history": [], "hashKey": "k", "ledger": []
        });
        if let (Some(r), Value::Object(extra)) = (r.as_object_mut(), extra) {
            r.extend(extra);
        }
        r.to_string()
    }

    fn request(scopes: &[(&str, Option<String>)], open: &str, remote: &str) -> GcRequest {
        GcRequest {
            scopes: scopes.iter().map(|(s, t)| ListedScope { scope: (*s).into(), text: t.clone() }).collect(),
            open_prs: open.into(),
            ls_remote: remote.into(),
            default_branch: Some("main".into()),
        }
    }

    fn names(list: &[Judged]) -> Vec<&str> {
        list.iter().map(|j| j.scope.as_str()).collect()
    }

    #[test]
    fn exactly_the_abandoned_scopes_are_listed() {
        let remote = "aaa\trefs/heads/main\nbbb\trefs/heads/feat/live\nccc\trefs/heads/baton-receipts/preview/pr-1\n";
        let plan = plan(&request(
            &[
                ("pr-2", None),
                ("pr-1", Some(receipt(json!({})))),
                ("pr-3", None),
                ("branch-feat-live", None),
                ("branch-feat-gone", None),
                ("branch-feat-handed", Some(receipt(json!({"supersededBy": "pr-2"})))),
                ("main", None),
                ("nightly", None),
                ("pr-9", Some(receipt(json!({"destroy": true})))),
            ],
            r#"[{"number": 1}, {"number": 7}]"#,
            remote,
        ))
        .unwrap();
        assert_eq!(names(&plan.abandoned), ["branch-feat-gone", "pr-2", "pr-3"]);
        assert_eq!(names(&plan.kept), ["branch-feat-handed", "branch-feat-live", "main", "nightly", "pr-1", "pr-9"]);
        assert_eq!(plan.open_prs, [1, 7]);
        assert_eq!(plan.abandoned[1].pr, Some(2));
        assert!(
            plan.table.starts_with("SCOPE             REASON\nbranch-feat-gone  its branch is gone"),
            "{}",
            plan.table
        );
    }

    #[test]
    fn destroys_are_sorted_and_a_failure_fails_gc() {
        let r: OutcomeRequest = serde_json::from_value(json!({"results": [
            {"scope": "pr-1"},
            {"scope": "pr-2", "error": {"code": "LOCK_HELD", "message": "held"}},
            {"scope": "pr-3", "error": {"code": "INTENT_UNRESOLVED", "message": "m"}}
        ]}))
        .unwrap();
        let o = outcome(&r);
        assert_eq!(o.destroyed, ["pr-1"]);
        assert_eq!(o.skipped[0].scope, "pr-2");
        let error = o.error.expect("gc fails");
        assert_eq!(error.code, "INTENT_UNRESOLVED");
        assert!(error.message.starts_with("1 of 3 abandoned scopes could not be destroyed (pr-3)"));
        let ok = outcome(&serde_json::from_value(json!({"results": [{"scope": "pr-1"}]})).unwrap());
        assert_eq!(ok.error, None);
    }

    #[test]
    fn an_unreadable_receipt_is_kept() {
        let plan = plan(&request(&[("branch-x", Some("{not json".into()))], "[]", "")).unwrap();
        assert!(plan.abandoned.is_empty());
        assert!(plan.kept[0].reason.contains("RECEIPT_CORRUPT"), "{:?}", plan.kept);
    }

    #[test]
    fn open_prs_in_both_shapes_and_refusals() {
        assert_eq!(parse_open_prs("[3, 1]").unwrap().into_iter().collect::<Vec<_>>(), [1, 3]);
        assert_eq!(parse_open_prs(r#"[{"number":4}]"#).unwrap().len(), 1);
        for bad in ["{}", "[\"x\"]", "[-1]", "nope", "[{\"id\": 3}]"] {
            let e = parse_open_prs(bad).unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::Usage, "{bad}");
        }
    }

    #[test]
    fn long_branch_names_match_their_scope() {
        let long = "feature/".to_owned() + &"x".repeat(200);
        let scope = scope_for(&long, None, None);
        let plan = plan(&request(&[(scope.as_str(), None)], "[]", &format!("a\trefs/heads/{long}\n"))).unwrap();
        assert!(plan.abandoned.is_empty(), "{plan:?}");
    }
}
