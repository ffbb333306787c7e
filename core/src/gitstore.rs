//! Decisions of the git store (`git:<remote>`), which keeps every cell on its own orphan ref of a remote
//! and uses the remote's atomic ref update as the compare-and-swap. The host runs `git`; the core decides
//! the ref name, what a push failure means, whether and when to retry, and what may be printed.

use crate::error::{CoreError, ErrorCode};
use serde::{Deserialize, Serialize};

/// The default ref prefix (`refs/heads/<prefix>/<env>/<scope>`).
pub const DEFAULT_PREFIX: &str = "baton-receipts";
pub use crate::lease::DEFAULT_BUDGET_MS;
/// At most this many rejections (hooks, protected refs) before giving up.
pub const MAX_REJECTIONS: u32 = 4;

/// The README committed at the root of the cell ref of environment `env`.
pub fn readme_for(env: &str) -> &'static str {
    if env == crate::claims::CLAIMS_ENV {
        return "# baton ownership claim\n\nThis orphan branch is written by `baton`. It holds one claim (`_claims/<hash>/claim.json`): which scope\nowns one resource of one environment, so that two scopes never both create it.\n\nDo not merge it. Deleting it while the owning scope's receipt lists the resource is safe (the receipt still\nsays who owns it); deleting it while a run is creating that resource is not.\n";
    }
    readme(env == crate::ownership::PARENT_ENV)
}

/// The README committed at the root of every cell ref.
pub fn readme(parent_object: bool) -> &'static str {
    if parent_object {
        "# baton parent-object lock\n\nThis orphan branch is written by `baton`. It holds no receipts: only the lock (`_locks/<hash>/lock.json`)\nthat serialises writes to one shared provider object across every scope and environment.\n\nDo not merge it. Deleting it is safe when no run is active.\n"
    } else {
        "# baton receipts\n\nThis orphan branch is written by `baton run`. It holds one environment/scope's receipts, ledger and lock\n(the lease of the run that is active, if any), in `<env>/<scope>/`.\n\nDo not merge it. Deleting it is safe only when no run is active, and it makes baton forget what this scope\ncreated: those resources become unmanaged. It is recreated on the next run.\n"
    }
}

/// What a failed `git push` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushOutcome {
    /// It landed.
    Ok,
    /// Someone else moved the ref first: fetch and decide again.
    Race,
    /// The credentials cannot write (or see) the remote.
    Permission,
    /// The remote refused it (a hook, a protected ref).
    Rejected,
    /// Anything else.
    Other,
    /// The host stopped the git process (and its process tree) when the operation's deadline
    /// ([`op_deadline`]) passed: the remote did not answer in time. Never retried.
    Timeout,
}

/// Classifies a push by its exit code and stderr (the original's `pushOutcome`). `detail` is the
/// remote's own lines (`remote: ...`), at most 300 characters, else the last line.
pub fn classify_push(exit_code: i32, stderr: &str) -> (PushOutcome, String) {
    if exit_code == 0 {
        return (PushOutcome::Ok, String::new());
    }
    let s = stderr.to_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| s.contains(n));
    let outcome = if any(&[
        "(fetch first)",
        "non-fast-forward",
        "stale info",
        "cannot lock ref",
        "failed to update ref",
        "incorrect old value",
        "failed to lock",
        "unable to update local ref",
    ]) {
        PushOutcome::Race
    } else if (s.contains("fatal: repository '") && s.contains("' not found")) // git's words for an HTTP 404
        || any(&[
        " 401",
        " 403",
        " 404",
        "permission to",
        "access denied",
        "not permitted",
        "authentication failed",
        "could not read username",
        "terminal prompts disabled",
        "repository not found",
        "unable to access",
        "unable to connect",
        "connection refused",
        "permission denied",
        "could not resolve host",
        "does not appear to be a git repository",
    ]) {
        PushOutcome::Permission
    } else if any(&["remote rejected", "hook declined", "[rejected]", "rejected"]) {
        PushOutcome::Rejected
    } else {
        PushOutcome::Other
    };
    let remote: Vec<&str> = stderr.lines().filter(|l| l.trim_start().starts_with("remote:")).map(str::trim).collect();
    // Without the remote's own lines, git's first `fatal:` line says what went wrong (the last line may be
    // the tail of its advice: "and the repository exists.").
    let detail = if remote.is_empty() {
        let fatal = stderr.lines().find(|l| l.trim_start().starts_with("fatal:"));
        fatal.or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty())).unwrap_or("").trim().to_owned()
    } else {
        remote.join(" ")
    };
    (outcome, detail.chars().take(300).collect())
}

/// How long the next git process of one store operation may run, in ms from `now_ms` (0: stop now): what is
/// left of the operation's budget (`started_ms + budget_ms`), and never past `deadline_ms` when the caller
/// has one (a held lease's own deadline, [`crate::lease::LeaseMachine::store_deadline`]). The host kills the
/// process with its whole process tree when this runs out and reports [`PushOutcome::Timeout`].
pub fn remaining(now_ms: u64, started_ms: u64, budget_ms: u64, deadline_ms: Option<u64>) -> u64 {
    let end = started_ms.saturating_add(budget_ms);
    let end = deadline_ms.map_or(end, |d| d.min(end));
    end.saturating_sub(now_ms)
}

/// Removes credentials from anything that may be printed: `//user:token@host` becomes `//[REDACTED]@host`.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let end = rest.find(|c: char| c.is_whitespace() || c == '/' || c == '"' || c == '\'').unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            out.push_str("[REDACTED]");
            rest = &rest[at..];
        }
    }
    out.push_str(rest);
    out
}

/// What [`retry`] decided: whether to try again, and after how many milliseconds (`0` with `retry: false`
/// for an attempt that landed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryDecision {
    /// Try the operation again (after `delay_ms`).
    pub retry: bool,
    /// How long to wait first.
    pub delay_ms: u64,
}

/// The retry decision after a failed attempt of one store operation: retry after `delayMs`, or give up with
/// `STORE_CONTENDED` (races) / `STORE_REJECTED` (rejections) / `STORE_PERMISSION` at once. Full-jitter
/// backoff: `12.5 + random * min(2000, 25 * 2^min(attempts, 16))` ms, within `budget_ms` and at most
/// [`MAX_REJECTIONS`] rejections. `random` is in `[0, 1)`, supplied by the host.
///
/// A `read` (a fetch or `ls-remote`) is retried like a push: a failure git does not explain (`Other`: a
/// connection reset, an early EOF) is retried within the budget, a permission failure is not. A
/// [`PushOutcome::Timeout`] (the host killed git at the deadline) ends the operation at once with
/// `STORE_CONTENDED`: the budget is spent.
#[allow(clippy::too_many_arguments)]
pub fn retry(
    read: bool,
    what: &str,
    reference: &str,
    remote: &str,
    outcome: PushOutcome,
    detail: &str,
    attempts: u32,
    rejections: u32,
    elapsed_ms: u64,
    budget_ms: u64,
    random: f64,
) -> Result<RetryDecision, CoreError> {
    let remote = redact(remote);
    let details = |e: CoreError| {
        e.with("ref", reference)
            .with("remote", remote.clone())
            .with("attempts", attempts)
            .with("elapsedMs", elapsed_ms)
            .with("budgetMs", budget_ms)
    };
    let verb = if read { "Fetch" } else { "Push" };
    match outcome {
        PushOutcome::Ok => return Ok(RetryDecision { retry: false, delay_ms: 0 }),
        PushOutcome::Timeout if rejections > 0 => {
            // The remote answered before, with a refusal: that is what the user must fix.
            return Err(details(CoreError::new(
                ErrorCode::StoreRejected,
                format!(
                    "Could not push {what} to {reference} at {remote}: the remote rejected the push ({}) {rejections} times, and the budget ran out while trying again (budget {budget_ms} ms, BATON_STORE_BUDGET_MS).",
                    redact(detail)
                ),
            ))
            .with("timedOut", true));
        }
        PushOutcome::Timeout => {
            return Err(details(CoreError::new(
                ErrorCode::StoreContended,
                format!(
                    "The store remote {remote} did not answer ({verb} of {what}, {reference}) within {elapsed_ms} ms: git was stopped at the operation's deadline (budget {budget_ms} ms, BATON_STORE_BUDGET_MS, and the lease's own deadline while a lock is held). Check that the remote is reachable and answering, then run again."
                ),
            ))
            .with("timedOut", true));
        }
        PushOutcome::Permission if read => {
            return Err(details(CoreError::new(
                ErrorCode::StorePermission,
                format!(
                    "Cannot read the store remote {remote} ({what}, {reference}): it does not exist, is unreachable, or these credentials cannot read it. Grant them read and write access to the repository (in GitHub Actions: `permissions: {{ contents: write }}`). ({})",
                    redact(detail)
                ),
            )));
        }
        PushOutcome::Permission => {
            return Err(details(CoreError::new(
                ErrorCode::StorePermission,
                format!(
                    "Push of {what} to {reference} at {remote} was denied. Grant these credentials write access to the repository (in GitHub Actions: `permissions: {{ contents: write }}`). ({})",
                    redact(detail)
                ),
            )));
        }
        PushOutcome::Other if !read => {
            return Err(details(CoreError::internal(format!(
                "git failed writing {what} to {reference} at {remote}: {}",
                redact(detail)
            ))));
        }
        PushOutcome::Race | PushOutcome::Rejected | PushOutcome::Other => {}
    }
    let random = if random.is_finite() { random.clamp(0.0, 1.0) } else { 0.5 };
    let cap = (25.0 * f64::from(1u32 << attempts.min(16))).min(2000.0);
    let delay = (12.5 + random * cap).round() as u64;
    let give_up = rejections >= MAX_REJECTIONS || elapsed_ms.saturating_add(delay) > budget_ms;
    if !give_up {
        return Ok(RetryDecision { retry: true, delay_ms: delay });
    }
    Err(details(if read {
        CoreError::new(
            ErrorCode::StoreContended,
            format!(
                "Could not fetch {what} ({reference}) from {remote}: {attempts} attempts failed in {elapsed_ms} ms (budget {budget_ms} ms, BATON_STORE_BUDGET_MS). Last: {}",
                redact(detail)
            ),
        )
    } else if outcome == PushOutcome::Rejected {
        CoreError::new(
            ErrorCode::StoreRejected,
            format!(
                "Could not push {what} to {reference} at {remote}: the remote rejected the push ({}).",
                redact(detail)
            ),
        )
    } else {
        CoreError::new(
            ErrorCode::StoreContended,
            format!(
                "Could not push {what} to {reference} at {remote}: lost the race for the ref {attempts} times in {elapsed_ms} ms (budget {budget_ms} ms, BATON_STORE_BUDGET_MS)."
            ),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_push_failures() {
        assert_eq!(classify_push(0, "").0, PushOutcome::Ok);
        assert_eq!(
            classify_push(1, " ! [rejected] HEAD -> x (fetch first)\nerror: failed to push").0,
            PushOutcome::Race
        );
        assert_eq!(classify_push(1, " ! [rejected] HEAD -> x (non-fast-forward)").0, PushOutcome::Race);
        assert_eq!(
            classify_push(128, "fatal: unable to access 'https://x/': The requested URL returned error: 403").0,
            PushOutcome::Permission
        );
        let (o, d) = classify_push(
            1,
            "remote: no pushes on fridays\n ! [remote rejected] HEAD -> x (pre-receive hook declined)",
        );
        assert_eq!((o, d.as_str()), (PushOutcome::Rejected, "remote: no pushes on fridays"));
        assert_eq!(classify_push(1, "fatal: something odd").0, PushOutcome::Other);
        let (o, d) = classify_push(
            128,
            "fatal: '/srv/r.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.",
        );
        assert_eq!(
            (o, d.as_str()),
            (PushOutcome::Permission, "fatal: '/srv/r.git' does not appear to be a git repository")
        );
        assert_eq!(classify_push(128, "fatal: unable to connect to 127.0.0.1:").0, PushOutcome::Permission);
        assert_eq!(classify_push(128, "fatal: repository 'http://h/r.git/' not found").0, PushOutcome::Permission);
    }

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact("https://x-access-token:ghs_123@github.com/o/r.git"),
            "https://[REDACTED]@github.com/o/r.git"
        );
        assert_eq!(
            redact("fatal: 'https://u:p@h/r' and file:///tmp/x"),
            "fatal: 'https://[REDACTED]@h/r' and file:///tmp/x"
        );
        assert_eq!(redact("no url here"), "no url here");
    }

    #[test]
    fn retries_with_full_jitter_within_the_budget() {
        let r =
            retry(false, "the lock", "refs/heads/b", "file:///r", PushOutcome::Race, "", 1, 0, 0, 60_000, 0.0).unwrap();
        assert_eq!(r.delay_ms, 13);
        let r = retry(false, "the lock", "refs/heads/b", "file:///r", PushOutcome::Race, "", 20, 0, 0, 60_000, 1.0)
            .unwrap();
        assert_eq!(r.delay_ms, 2013, "capped at 2 s");
        let e = retry(
            false,
            "the lock",
            "refs/heads/b",
            "https://u:p@h/r",
            PushOutcome::Race,
            "",
            9,
            0,
            59_990,
            60_000,
            0.5,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreContended);
        assert_eq!(e.details["remote"], "https://[REDACTED]@h/r");
        let e =
            retry(false, "a receipt", "refs/heads/b", "r", PushOutcome::Rejected, "remote: no", 4, 4, 10, 60_000, 0.5)
                .unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreRejected);
        let e = retry(false, "a receipt", "refs/heads/b", "r", PushOutcome::Permission, "403", 1, 0, 10, 60_000, 0.5)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StorePermission);
    }

    #[test]
    fn fetches_are_retried_and_timeouts_end_the_operation() {
        let r = retry(true, "the cell", "refs/heads/b", "r", PushOutcome::Other, "early EOF", 1, 0, 5, 60_000, 0.0);
        assert!(r.unwrap().retry);
        let e =
            retry(true, "the cell", "refs/heads/b", "r", PushOutcome::Other, "early EOF", 9, 0, 59_999, 60_000, 0.5)
                .unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreContended);
        assert!(e.message.contains("Could not fetch"), "{}", e.message);
        let e = retry(true, "the cell", "refs/heads/b", "r", PushOutcome::Permission, "403", 1, 0, 5, 60_000, 0.5)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StorePermission);
        let e =
            retry(false, "the lock", "refs/heads/b", "git://u:p@h/x", PushOutcome::Timeout, "", 1, 0, 5000, 5000, 0.5)
                .unwrap_err();
        assert_eq!((e.code, &e.details["timedOut"]), (ErrorCode::StoreContended, &serde_json::json!(true)));
        assert!(e.message.contains("git://[REDACTED]@h/x") && !e.message.contains("u:p"), "{}", e.message);
        // After rejections, running out of time is still the remote's refusal.
        let e =
            retry(false, "a receipt", "refs/heads/b", "r", PushOutcome::Timeout, "remote: no", 3, 2, 3000, 3000, 0.5)
                .unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreRejected);
        assert!(e.message.contains("remote: no"), "{}", e.message);
    }

    #[test]
    fn the_deadline_is_the_budget_bounded_by_the_lease() {
        assert_eq!(remaining(1_000, 0, 5_000, None), 4_000);
        assert_eq!(remaining(1_000, 0, 5_000, Some(2_500)), 1_500);
        assert_eq!(remaining(6_000, 0, 5_000, None), 0);
        assert_eq!(remaining(3_000, 0, 5_000, Some(2_000)), 0);
    }
}
