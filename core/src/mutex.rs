//! The dir store's cell mutex (`lock.mutex`, `docs/dir-store.md`): what a host writes when it takes one,
//! and the verdict on one that is in its way, decided from the facts the host gathered about its owner.
//!
//! Both hosts (and the original tool, which shares the file during a migration) meet on the same bytes, so
//! the content and the verdict are decided here, once. The host only reads `/proc/<pid>/stat`, asks
//! `kill(pid, 0)` and knows its own host name.

use crate::error::CoreError;
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How often a holder rewrites the `at` of its mutex while it holds it. The original tool breaks a mutex
/// whose `at` is more than 10 s old, owner alive or not; a fifth of that keeps a held mutex fresh to it
/// even when a refresh is late.
pub const REFRESH_MS: u64 = 2_000;

/// `mutex-content`: `{pid, stat, host, token, nowMs}` -> `{content, refreshMs}`.
///
/// `stat` is the text of the host's own `/proc/self/stat` (`null` where `/proc` does not exist).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContentRequest {
    /// The host's own pid.
    pub pid: u32,
    /// The text of `/proc/self/stat`, none where `/proc` does not exist.
    #[serde(default)]
    pub stat: Option<String>,
    /// This machine's name.
    pub host: String,
    /// The holder's random token (hex).
    pub token: String,
    /// Wall-clock ms since the epoch.
    pub now_ms: UnixMs,
}

/// The mutex content a host writes: one JSON line `{pid, start, host, token, at}`. `start` tells a reused
/// pid from the owner; `at` (ms since the epoch, rewritten every [`REFRESH_MS`] while held) is what the
/// original tool needs to see the mutex as live. The host refreshes by replacing `at` in place.
pub fn content(r: &ContentRequest) -> Result<MutexContent, CoreError> {
    if r.token.is_empty() || !r.token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CoreError::internal("a mutex token must be hex"));
    }
    let start = r.stat.as_deref().and_then(stat_start);
    let line = json!({ "pid": r.pid, "start": start, "host": r.host, "token": r.token, "at": r.now_ms });
    Ok(MutexContent { content: format!("{line}\n"), refresh_ms: REFRESH_MS })
}

/// What [`content`] answers: the line to write, and how often to refresh its `at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MutexContent {
    /// The whole content of `lock.mutex`, newline included.
    pub content: String,
    /// Rewrite `at` this often while holding the mutex ([`REFRESH_MS`]).
    pub refresh_ms: u64,
}

/// What to do about a mutex in the way (see [`verdict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Its owner exists, or cannot be checked from here: wait.
    Live,
    /// Not this protocol's, or its owner is gone: break it.
    Stale,
    /// Its owner exited and is not reaped yet: break it.
    Zombie,
}

/// The answer of [`verdict`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MutexVerdict {
    /// Wait or break.
    pub verdict: Verdict,
    /// The owner the content names (none when it names no valid pid).
    pub pid: Option<u64>,
    /// Why, for messages.
    pub reason: String,
    /// The file a breaker creates exclusively before removing this content.
    pub claim: String,
}

/// `mutex-verdict`: `{content, host, proc, owner}` -> `{verdict, pid, reason, claim}`.
///
/// `content` is the text found in `lock.mutex` (or in a break claim); `host` is this machine's name;
/// `proc` whether `/proc` exists here; `owner` the facts about the pid the content names (`null` when it
/// names none): `{pid, stat, alive}`, `stat` the text of `/proc/<pid>/stat` or `null`, `alive` whether
/// `kill(pid, 0)` did not fail with `ESRCH`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerdictRequest {
    /// The text found in `lock.mutex` (or in a break claim).
    pub content: String,
    /// This machine's name.
    pub host: String,
    /// Whether `/proc` exists here.
    pub proc: bool,
    /// The facts about the pid the content names (none when it names none).
    #[serde(default)]
    pub owner: Option<OwnerFacts>,
}

/// What a host found out about a mutex owner's pid.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerFacts {
    /// The pid looked up.
    pub pid: u64,
    /// The text of `/proc/<pid>/stat`, none when it cannot be read.
    #[serde(default)]
    pub stat: Option<String>,
    /// Whether `kill(pid, 0)` did not fail with `ESRCH`.
    pub alive: bool,
}

/// The verdict on a mutex (or break claim) in the way:
/// - `live`: its owner exists (perhaps paused), or is on another host where it cannot be checked: wait;
/// - `stale`: not written by this protocol (not JSON, no positive integer `pid`), or its owner is gone (no
///   `/proc` entry, another start time: the pid was reused; without a `start`, `kill` says `ESRCH`): break;
/// - `zombie`: its owner has exited and is not reaped yet (state `Z` or `X`; forever where PID 1 reaps
///   nothing): break.
///
/// Never by age: a paused owner still holds. `claim` is the file a breaker must create exclusively before
/// it may remove this content (`lock.mutex.<16 hex of sha256(content)>.break`): one breaker per stale
/// content, whatever the number of contenders (see `docs/dir-store.md`).
pub fn verdict(r: &VerdictRequest) -> Result<MutexVerdict, CoreError> {
    let claim = format!("lock.mutex.{}.break", &crate::names::sha256_hex(r.content.as_bytes())[..16]);
    let answer = |verdict: Verdict, pid: Option<u64>, reason: &str| MutexVerdict {
        verdict,
        pid,
        reason: reason.to_owned(),
        claim: claim.clone(),
    };
    let parsed: Option<Value> = serde_json::from_str(&r.content).ok();
    let Some(pid) = owner_pid(parsed.as_ref()) else {
        return Ok(answer(Verdict::Stale, None, "not written by this protocol (no JSON with a positive integer pid)"));
    };
    let v = parsed.unwrap_or(Value::Null);
    if v.get("host").and_then(Value::as_str).is_some_and(|h| h != r.host) {
        return Ok(answer(Verdict::Live, Some(pid), "owned on another host, which cannot be checked from here"));
    }
    let Some(owner) = r.owner.as_ref().filter(|o| o.pid == pid) else {
        return Err(CoreError::internal(format!("mutex-verdict needs the facts about pid {pid}")));
    };
    let state = owner.stat.as_deref().and_then(stat_state);
    if matches!(state, Some("Z" | "X")) {
        return Ok(answer(Verdict::Zombie, Some(pid), "its owner has exited (a zombie not reaped yet)"));
    }
    match v.get("start").and_then(Value::as_str) {
        Some(start) if r.proc => match owner.stat.as_deref().and_then(stat_start) {
            None => Ok(answer(Verdict::Stale, Some(pid), "its owner no longer exists")),
            Some(s) if s != start => Ok(answer(Verdict::Stale, Some(pid), "its pid now belongs to another process")),
            Some(_) => Ok(answer(Verdict::Live, Some(pid), "its owner is alive")),
        },
        _ if owner.alive => Ok(answer(Verdict::Live, Some(pid), "its owner is alive")),
        _ => Ok(answer(Verdict::Stale, Some(pid), "its owner no longer exists")),
    }
}

fn owner_pid(v: Option<&Value>) -> Option<u64> {
    v?.get("pid")?.as_u64().filter(|p| *p > 0 && *p <= u64::from(u32::MAX))
}

/// The fields of a `/proc/<pid>/stat` line after the command name (which may hold spaces and parentheses).
fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat.get(stat.rfind(')')? + 1..)?.split_whitespace())
}

/// Field 3: the process state.
fn stat_state(stat: &str) -> Option<&str> {
    stat_fields(stat)?.next()
}

/// Field 22: the start time in clock ticks since boot; `None` for an exited process (`Z`, `X`).
fn stat_start(stat: &str) -> Option<String> {
    let mut fields = stat_fields(stat)?;
    if matches!(fields.next(), Some("Z" | "X") | None) {
        return None;
    }
    fields.nth(18).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1 2";

    fn verdict_of(content: &str, owner: Option<(u64, Option<&str>, bool)>) -> (String, String) {
        let owner = owner.map(|(pid, stat, alive)| OwnerFacts { pid, stat: stat.map(str::to_owned), alive });
        let r = VerdictRequest { content: content.into(), host: "here".into(), proc: true, owner };
        let v = verdict(&r).unwrap();
        let verdict = serde_json::to_value(v.verdict).unwrap().as_str().unwrap().to_owned();
        (verdict, v.claim)
    }

    #[test]
    fn content_names_the_owner_and_says_when() {
        let r =
            ContentRequest { pid: 4242, stat: Some(STAT.into()), host: "here".into(), token: "ab12".into(), now_ms: 7 };
        let c = content(&r).unwrap();
        assert_eq!(c.content, "{\"pid\":4242,\"start\":\"987654\",\"host\":\"here\",\"token\":\"ab12\",\"at\":7}\n");
        let no_proc = ContentRequest { stat: None, ..r };
        assert!(content(&no_proc).unwrap().content.contains("\"start\":null"));
    }

    #[test]
    fn verdicts_from_the_facts() {
        let ours = "{\"pid\":4242,\"start\":\"987654\",\"host\":\"here\",\"token\":\"ab\",\"at\":1}\n";
        assert_eq!(verdict_of(ours, Some((4242, Some(STAT), true))).0, "live");
        assert_eq!(verdict_of(ours, Some((4242, None, false))).0, "stale");
        let reused = STAT.replace("987654", "5");
        assert_eq!(verdict_of(ours, Some((4242, Some(&reused), true))).0, "stale");
        let zombie = STAT.replace(") S ", ") Z ");
        assert_eq!(verdict_of(ours, Some((4242, Some(&zombie), true))).0, "zombie");
        // Never by age: an `at` of 1 ms after the epoch with a live owner is live.
        let elsewhere = ours.replace("here", "there");
        assert_eq!(verdict_of(&elsewhere, None).0, "live");
        // The original's mutex has no start: kill(pid, 0) decides.
        let original = "{\"pid\":4242,\"token\":\"00ff\",\"at\":1}";
        assert_eq!(verdict_of(original, Some((4242, None, true))).0, "live");
        assert_eq!(verdict_of(original, Some((4242, None, false))).0, "stale");
        assert_eq!(verdict_of("garbage", None).0, "stale");
        assert_eq!(verdict_of("{\"pid\":0}", None).0, "stale");
        assert_eq!(verdict_of("{\"pid\":-3}", None).0, "stale");
    }

    #[test]
    fn one_claim_per_content() {
        let (_, a) = verdict_of("garbage", None);
        let (_, b) = verdict_of("garbage!", None);
        assert!(a.starts_with("lock.mutex.") && a.ends_with(".break") && a.len() == "lock.mutex..break".len() + 16);
        assert_ne!(a, b);
        assert_eq!(a, verdict_of("garbage", None).1);
    }

    #[test]
    fn missing_facts_are_the_hosts_bug() {
        let r = VerdictRequest { content: "{\"pid\":9}".into(), host: "h".into(), proc: true, owner: None };
        assert!(verdict(&r).is_err());
    }
}
