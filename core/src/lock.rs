//! The lock record (`lock.json`) and the cell transactions on it: acquire, renew, release, read, break
//! and the fence check of a write.
//!
//! Each transaction is a pure function of a [`Cell`] snapshot and the request; it returns either a refusal
//! or the [`Change`]s to commit. The host commits them only if the cell did not change since the snapshot.
//!
//! Epochs: every grant (first acquire, acquire after release, takeover, break) gets an epoch one greater
//! than the highest ever granted on the cell. The highest is kept in `epoch.json` as well as in the lock,
//! so it survives the release that deletes `lock.json`.

use crate::cell::{Cell, Change, EPOCH_FILE, LATEST_FILE, LOCK_FILE, to_file_json, validate_data_file};
use crate::error::{CoreError, ErrorCode};
use crate::time::{UnixMs, format_iso, parse_iso};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The lock format this baton understands (a lock without `version` is this one). A lock with another
/// `version` is `LOCK_CORRUPT`: never taken over or rewritten, only broken on purpose.
pub const LOCK_VERSION: u64 = 1;

/// The content of `lock.json`: the original's `{holder, acquiredAt, expiresAt}` plus `epoch`.
/// Fields baton does not know are kept on every rewrite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct LockRecord {
    /// Who holds the lock (`run-xxxxxxxx`, ...).
    pub holder: String,
    /// When the current holder acquired it (ISO-8601 UTC); kept on renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub acquired_at: Option<String>,
    /// When it expires unless renewed (ISO-8601 UTC), judged by other runs on their wall clocks.
    pub expires_at: String,
    /// The fencing token: strictly increasing per cell. 0 for locks written by the original tool.
    #[serde(default)]
    pub epoch: u64,
    /// Fields this version does not know, kept as they are (open schema).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LockRecord {
    /// Whether the lock has expired at `now` (`expiresAt <= now`).
    pub fn expired(&self, now: UnixMs) -> bool {
        self.expires_ms() <= now
    }

    fn expires_ms(&self) -> UnixMs {
        // INVARIANT: parse_lock only returns records whose expiresAt parses.
        parse_iso(&self.expires_at).unwrap_or(UnixMs::MIN)
    }

    /// The record as JSON (for error details and envelopes).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A lock as `lock read` reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LockView {
    /// The record.
    #[serde(flatten)]
    pub lock: LockRecord,
    /// Whether it had expired at the `now` of the read.
    pub expired: bool,
    /// Milliseconds from the `now` of the read until `expiresAt` (negative once expired).
    #[serde(rename = "expiresInMs")]
    pub expires_in_ms: i64,
    /// `expiresInMs` for people (`14m 59s`, `0ms` once expired), as every host prints it.
    #[serde(rename = "expiresIn")]
    pub expires_in: String,
}

/// A granted (or renewed) lock and the changes that record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// The changes to commit.
    #[serde(default)]
    pub changes: Vec<Change>,
    /// The lock as it will be stored.
    pub lock: LockRecord,
    /// The lock this grant replaced: an expired one (takeover) or, for `break`, whatever was there.
    pub preempted: Option<LockRecord>,
}

/// The outcome of a release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Release {
    /// The changes to commit (empty when there was nothing of ours to release).
    #[serde(default)]
    pub changes: Vec<Change>,
    /// Whether the lock was ours and is being removed.
    pub released: bool,
    /// The lock found when it was not ours (or `null`).
    pub current: Option<LockRecord>,
}

/// The lock of the cell: `Ok(None)` when there is none, `LOCK_CORRUPT` when `lock.json` cannot be read.
pub fn parse_lock(cell: &Cell) -> Result<Option<LockRecord>, CoreError> {
    let Some(text) = cell.file(LOCK_FILE) else {
        return Ok(None);
    };
    let corrupt = |why: String| {
        CoreError::new(
            ErrorCode::LockCorrupt,
            format!(
                "The lock of {} (lock.json) cannot be read: {why}. baton never takes over a lock it cannot read: make sure no run is active, then replace it with `baton lock break --env {} --scope {} --reason <why>`.",
                cell.label(),
                cell.env,
                cell.scope
            ),
        )
        .with("environment", cell.env.clone())
        .with("scope", cell.scope.clone())
        .with("reason", why)
    };
    let value: Value = serde_json::from_str(text).map_err(|e| corrupt(format!("not valid JSON ({e})")))?;
    let obj = value.as_object().ok_or_else(|| corrupt("not a JSON object".into()))?;
    // A lock from a newer tool (a `version` this baton does not know) may mean more than holder and expiry:
    // never judge it, take it over or rewrite it; only a deliberate `lock break` replaces it.
    if let Some(version) = obj.get("version").filter(|v| v.as_u64() != Some(LOCK_VERSION)) {
        return Err(CoreError::new(
            ErrorCode::LockCorrupt,
            format!(
                "The lock of {} (lock.json) is version {version}, written by a newer tool; this baton understands version {LOCK_VERSION} only, so it neither takes it over nor rewrites it. Upgrade baton; if no run is active and you cannot, replace it with `baton lock break --env {} --scope {} --reason <why>`.",
                cell.label(),
                cell.env,
                cell.scope
            ),
        )
        .with("environment", cell.env.clone())
        .with("scope", cell.scope.clone())
        .with("version", version.clone())
        .with("reason", format!("written by a newer tool (lock version {version})")));
    }
    if !obj.get("holder").is_some_and(Value::is_string) {
        return Err(corrupt("no string `holder`".into()));
    }
    match obj.get("expiresAt").and_then(Value::as_str) {
        Some(s) if parse_iso(s).is_some() => {}
        Some(s) => return Err(corrupt(format!("`expiresAt` is not a timestamp ({s:?})"))),
        None => return Err(corrupt("no string `expiresAt`".into())),
    }
    if obj.get("acquiredAt").is_some_and(|v| !v.is_string()) {
        return Err(corrupt("`acquiredAt` is not a string".into()));
    }
    if obj.get("epoch").is_some_and(|v| v.as_u64().is_none()) {
        return Err(corrupt("`epoch` is not a non-negative integer".into()));
    }
    serde_json::from_value(value).map(Some).map_err(|e| corrupt(e.to_string()))
}

/// The highest epoch ever granted on the cell.
fn last_epoch(cell: &Cell, lock: Option<&LockRecord>) -> Result<u64, CoreError> {
    let recorded = match cell.file(EPOCH_FILE) {
        None => 0,
        Some(text) => serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.get("epoch").and_then(Value::as_u64))
            .ok_or_else(|| {
                CoreError::new(
                    ErrorCode::LockCorrupt,
                    format!(
                        "The epoch record of {} (epoch.json) cannot be read, so a new epoch could repeat an old one. Make sure no run is active, then `baton lock break --env {} --scope {} --reason <why>`.",
                        cell.label(),
                        cell.env,
                        cell.scope
                    ),
                )
                .with("environment", cell.env.clone())
                .with("scope", cell.scope.clone())
            })?,
    };
    Ok(recorded.max(lock.map_or(0, |l| l.epoch)))
}

/// The epoch after `last`; an epoch at the end of the range means the cell's files were tampered with.
fn next_epoch(cell: &Cell, last: u64) -> Result<u64, CoreError> {
    last.checked_add(1).ok_or_else(|| {
        CoreError::new(
            ErrorCode::LockCorrupt,
            format!(
                "The epoch of {} is at the end of its range ({last}), so no greater epoch can be granted. Make sure no run is active, then delete epoch.json and lock.json by hand.",
                cell.label()
            ),
        )
        .with("environment", cell.env.clone())
        .with("scope", cell.scope.clone())
    })
}

/// Checks a holder name: 1-200 characters from `[A-Za-z0-9._@:+-]`, not starting with a dot. A holder is
/// also the run id that names the run's receipt file, so it must be a plain file name.
pub fn validate_holder(holder: &str) -> Result<(), CoreError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':' | '+');
    if holder.is_empty() || holder.len() > 200 || holder.starts_with('.') || !holder.chars().all(plain) {
        return Err(CoreError::usage(format!(
            "holder {holder:?} is not valid: use 1-200 characters from A-Z a-z 0-9 . _ - @ : + (it also names the run's receipt file)"
        )));
    }
    Ok(())
}

fn validate_ttl(ttl_ms: u64) -> Result<i64, CoreError> {
    if ttl_ms == 0 {
        return Err(CoreError::usage("the lock TTL must be greater than zero"));
    }
    i64::try_from(ttl_ms)
        .ok()
        .filter(|t| *t <= 366 * 86_400_000)
        .ok_or_else(|| CoreError::usage(format!("the lock TTL must be at most a year (got {ttl_ms} ms)")))
}

fn held_error(cell: &Cell, lock: &LockRecord) -> CoreError {
    CoreError::new(
        ErrorCode::LockHeld,
        format!("Another run ({}) holds the lock for {} until {}.", lock.holder, cell.label(), lock.expires_at),
    )
    .with("lock", lock.to_value())
}

/// The text of `epoch.json` recording `epoch`: what [`to_file_json`] makes of `{"epoch": epoch}`, written
/// directly (every grant writes it).
fn epoch_file(epoch: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let mut text = String::with_capacity(32);
    text.push_str("{\n  \"epoch\": ");
    text.push_str(digits.format(epoch));
    text.push_str("\n}\n");
    text
}

/// A fresh lock for `holder` at `epoch`, with the changes that store it and the new highest epoch.
fn grant(
    holder: &str,
    ttl_ms: u64,
    now: UnixMs,
    epoch: u64,
    extra: Map<String, Value>,
) -> Result<(LockRecord, Vec<Change>), CoreError> {
    let ttl = validate_ttl(ttl_ms)?;
    let lock = LockRecord {
        holder: holder.to_owned(),
        acquired_at: Some(format_iso(now)),
        expires_at: format_iso(now.saturating_add(ttl)),
        epoch,
        extra,
    };
    let changes = vec![
        Change::Write { file: EPOCH_FILE.into(), content: epoch_file(epoch) },
        Change::Write { file: LOCK_FILE.into(), content: to_file_json(&lock) },
    ];
    Ok((lock, changes))
}

/// Acquires the lock for `holder`: granted on an absent or expired lock (the expired one is returned as
/// `preempted`), `LOCK_HELD` on a live lock of anyone (the same holder included: there is no re-entry),
/// `LOCK_CORRUPT` on an unreadable one.
pub fn acquire(cell: &Cell, holder: &str, ttl_ms: u64, now: UnixMs) -> Result<Grant, CoreError> {
    validate_holder(holder)?;
    validate_ttl(ttl_ms)?;
    let current = parse_lock(cell)?;
    if let Some(lock) = &current
        && !lock.expired(now)
    {
        return Err(held_error(cell, lock));
    }
    let epoch = next_epoch(cell, last_epoch(cell, current.as_ref())?)?;
    let (lock, changes) = grant(holder, ttl_ms, now, epoch, Map::new())?;
    Ok(Grant { changes, lock, preempted: current })
}

/// Renews the lock of `holder` at `epoch`: same holder, `acquiredAt` and epoch, `expiresAt = now + ttl`.
/// Expiry is not checked (a lapsed lease nobody took still admits its holder). Anything else is `LOCK_LOST`.
pub fn renew(cell: &Cell, holder: &str, epoch: u64, ttl_ms: u64, now: UnixMs) -> Result<Grant, CoreError> {
    let ttl = validate_ttl(ttl_ms)?;
    let mut lock = check_fence(cell, holder, epoch)?;
    lock.expires_at = format_iso(now.saturating_add(ttl));
    let changes = vec![Change::Write { file: LOCK_FILE.into(), content: to_file_json(&lock) }];
    Ok(Grant { changes, lock, preempted: None })
}

/// Releases the lock if `holder` holds it (at `epoch`, when given). Anything else (another holder, no lock,
/// an unreadable lock) is a no-op that reports what it found.
pub fn release(cell: &Cell, holder: &str, epoch: Option<u64>) -> Release {
    match parse_lock(cell) {
        Ok(Some(lock)) if lock.holder == holder && epoch.is_none_or(|e| e == lock.epoch) => {
            Release { changes: vec![Change::Delete { file: LOCK_FILE.into() }], released: true, current: None }
        }
        Ok(current) => Release { changes: Vec::new(), released: false, current },
        Err(_) => Release { changes: Vec::new(), released: false, current: None },
    }
}

/// Reads the lock with its `expired` flag at `now`; `LOCK_CORRUPT` when it cannot be read.
pub fn read(cell: &Cell, now: UnixMs) -> Result<Option<LockView>, CoreError> {
    Ok(parse_lock(cell)?.map(|lock| {
        let expires_in_ms = lock.expires_ms().saturating_sub(now);
        LockView {
            expired: lock.expired(now),
            expires_in: crate::time::human_ms(u64::try_from(expires_in_ms).unwrap_or(0)),
            expires_in_ms,
            lock,
        }
    }))
}

/// Takes the lock over on purpose, whatever is there (live, expired, corrupt or nothing), and records who
/// broke what and why in the new lock (`broke`) and in the scope's receipt (`lockBreaks`). The old lock is
/// returned as `preempted`.
pub fn break_lock(cell: &Cell, holder: &str, ttl_ms: u64, now: UnixMs, reason: &str) -> Result<Grant, CoreError> {
    validate_holder(holder)?;
    validate_ttl(ttl_ms)?;
    if reason.trim().is_empty() {
        return Err(CoreError::usage("breaking a lock needs a reason (--reason): it is recorded for whoever held it"));
    }
    let (current, corrupt) = match parse_lock(cell) {
        Ok(lock) => (lock, None),
        Err(e) => (None, Some(e.message)),
    };
    // An unreadable epoch.json is exactly what a break repairs: fall back to what the lock says. A lock that
    // did not parse (a newer tool's) may still name its epoch: never grant one at or below it.
    let unparsed_epoch = cell
        .file(LOCK_FILE)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v.get("epoch").and_then(Value::as_u64))
        .unwrap_or(0);
    let last = last_epoch(cell, current.as_ref())
        .unwrap_or_else(|_| current.as_ref().map_or(0, |l| l.epoch))
        .max(unparsed_epoch);
    let epoch = next_epoch(cell, last)?;
    let mut broke = Map::new();
    broke.insert("at".into(), format_iso(now).into());
    broke.insert("reason".into(), reason.trim().into());
    broke.insert("previous".into(), current.as_ref().map_or(Value::Null, LockRecord::to_value));
    if let Some(why) = corrupt {
        broke.insert("corrupt".into(), why.into());
    }
    let mut record = broke.clone();
    record.insert("by".into(), holder.into());
    record.insert("epoch".into(), epoch.into());
    let mut extra = Map::new();
    extra.insert("broke".into(), Value::Object(broke));
    let (lock, mut changes) = grant(holder, ttl_ms, now, epoch, extra)?;
    // Recorded in the scope's receipt too (appended to `lockBreaks`), in the same transaction; an unreadable
    // receipt is left as it is.
    if let Ok(Some(mut receipt)) = crate::receipt::read_receipt(cell) {
        let mut breaks = receipt.doc.get("lockBreaks").and_then(Value::as_array).cloned().unwrap_or_default();
        breaks.push(Value::Object(record));
        receipt.set("lockBreaks", breaks);
        let content = crate::cell::to_file_json(&receipt.to_value());
        changes.push(Change::Write { file: LATEST_FILE.into(), content });
    }
    Ok(Grant { changes, lock, preempted: current })
}

/// The fence check of a write, made inside the same cell transaction as the write: the lock is held by
/// `holder` at `epoch`. Expiry is deliberately not checked. Anything else is `LOCK_LOST` naming the current
/// holder; the caller then commits nothing.
pub fn check_fence(cell: &Cell, holder: &str, epoch: u64) -> Result<LockRecord, CoreError> {
    let current = parse_lock(cell).ok().flatten();
    match current {
        Some(lock) if lock.holder == holder && lock.epoch == epoch => Ok(lock),
        other => {
            let now_held = match &other {
                Some(l) => format!("now {} at epoch {}", l.holder, l.epoch),
                None => "nobody holds it now".to_owned(),
            };
            Err(CoreError::new(
                ErrorCode::LockLost,
                format!(
                    "The lock for {} is no longer held by {holder} at epoch {epoch} ({now_held}). Nothing was written; the other run's receipt is authoritative.",
                    cell.label()
                ),
            )
            .with("holder", holder)
            .with("epoch", epoch)
            .with("current", other.as_ref().map_or(Value::Null, LockRecord::to_value)))
        }
    }
}

/// A fenced write of one data file of the cell: refused with `LOCK_LOST` (and nothing written) unless
/// `holder` holds the lock at `epoch`, checked in the same transaction as the write.
pub fn fenced_write(cell: &Cell, holder: &str, epoch: u64, file: &str, content: &str) -> Result<Grant, CoreError> {
    validate_data_file(file)?;
    let lock = check_fence(cell, holder, epoch)?;
    Ok(Grant { changes: vec![Change::Write { file: file.into(), content: content.into() }], lock, preempted: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_file_is_what_to_file_json_writes() {
        for epoch in [0, 1, 42, u64::MAX] {
            assert_eq!(epoch_file(epoch), to_file_json(&serde_json::json!({ "epoch": epoch })));
        }
    }

    const T0: UnixMs = 1_791_633_600_000;

    fn cell() -> Cell {
        Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() }
    }

    #[test]
    fn acquire_refuse_release_reacquire_with_growing_epochs() {
        let mut c = cell();
        let g = acquire(&c, "a", 1000, T0).unwrap();
        assert_eq!((g.lock.epoch, g.preempted.clone()), (1, None));
        c.apply(&g.changes);
        let e = acquire(&c, "b", 1000, T0 + 1).unwrap_err();
        assert_eq!(e.code, ErrorCode::LockHeld);
        assert_eq!(e.details["lock"]["holder"], "a");
        assert_eq!(acquire(&c, "a", 1000, T0 + 1).unwrap_err().code, ErrorCode::LockHeld);
        assert!(!release(&c, "b", None).released);
        let r = release(&c, "a", Some(1));
        assert!(r.released);
        c.apply(&r.changes);
        assert_eq!(read(&c, T0).unwrap(), None);
        let g = acquire(&c, "b", 1000, T0 + 2).unwrap();
        assert_eq!(g.lock.epoch, 2, "epoch survives the deleted lock file");
    }

    #[test]
    fn expired_lock_is_taken_over_and_reported() {
        let mut c = cell();
        c.apply(&acquire(&c, "crashed", 1000, T0).unwrap().changes);
        let g = acquire(&c, "b", 1000, T0 + 1000).unwrap();
        assert_eq!(g.preempted.unwrap().holder, "crashed");
        assert_eq!(g.lock.epoch, 2);
    }

    #[test]
    fn corrupt_lock_is_never_taken_over_but_can_be_broken() {
        let mut c = cell();
        for bad in [
            "{",
            "[]",
            "{\"holder\":\"x\"}",
            "{\"holder\":\"x\",\"expiresAt\":\"never\"}",
            "{\"holder\":\"x\",\"expiresAt\":\"2026-10-10T12:00:00Z\",\"epoch\":-1}",
        ] {
            c.files.insert(LOCK_FILE.into(), bad.into());
            assert_eq!(acquire(&c, "b", 1000, T0).unwrap_err().code, ErrorCode::LockCorrupt, "{bad}");
            assert_eq!(read(&c, T0).unwrap_err().code, ErrorCode::LockCorrupt);
            assert!(!release(&c, "x", None).released);
        }
        assert_eq!(break_lock(&c, "b", 1000, T0, " ").unwrap_err().code, ErrorCode::Usage);
        let g = break_lock(&c, "b", 1000, T0, "stuck since friday").unwrap();
        assert_eq!(g.lock.extra["broke"]["reason"], "stuck since friday");
        assert!(g.lock.extra["broke"]["corrupt"].is_string());
    }

    #[test]
    fn a_lock_from_a_newer_tool_is_never_judged_or_taken_over() {
        let mut c = cell();
        let newer = "{\"version\":2,\"holder\":\"x\",\"expiresAt\":\"2020-01-01T00:00:00.000Z\",\"epoch\":4}";
        c.files.insert(LOCK_FILE.into(), newer.into());
        let e = acquire(&c, "b", 1000, T0).unwrap_err();
        assert_eq!(e.code, ErrorCode::LockCorrupt, "expired or not, it is not taken over");
        assert!(e.message.contains("newer tool") && e.message.contains("Upgrade baton"), "{}", e.message);
        assert_eq!(read(&c, T0).unwrap_err().code, ErrorCode::LockCorrupt);
        assert_eq!(renew(&c, "x", 4, 1000, T0).unwrap_err().code, ErrorCode::LockLost, "not even by its holder");
        assert!(!release(&c, "x", Some(4)).released);
        let g = break_lock(&c, "b", 1000, T0, "upgrading").unwrap();
        assert_eq!(g.lock.epoch, 5, "breaking a newer lock never repeats the epoch it recorded");
        c.files.insert(LOCK_FILE.into(), newer.replace("\"version\":2,", "\"version\":1,"));
        assert_eq!(acquire(&c, "b", 1000, T0).unwrap().preempted.unwrap().holder, "x", "version 1 is this format");
    }

    #[test]
    fn renew_keeps_holder_epoch_and_acquired_at() {
        let mut c = cell();
        c.apply(&acquire(&c, "a", 1000, T0).unwrap().changes);
        let g = renew(&c, "a", 1, 5000, T0 + 900).unwrap();
        assert_eq!(g.lock.acquired_at.as_deref(), Some(format_iso(T0).as_str()));
        assert_eq!(g.lock.expires_at, format_iso(T0 + 5900));
        assert_eq!(renew(&c, "a", 2, 5000, T0).unwrap_err().code, ErrorCode::LockLost);
        assert_eq!(renew(&c, "b", 1, 5000, T0).unwrap_err().code, ErrorCode::LockLost);
    }

    #[test]
    fn fence_checks_holder_and_epoch_not_expiry() {
        let mut c = cell();
        c.apply(&acquire(&c, "a", 1000, T0).unwrap().changes);
        assert!(check_fence(&c, "a", 1).is_ok(), "a lapsed lease nobody took still admits its holder");
        c.apply(&acquire(&c, "b", 1000, T0 + 5000).unwrap().changes);
        let e = check_fence(&c, "a", 1).unwrap_err();
        assert_eq!(e.code, ErrorCode::LockLost);
        assert_eq!(e.details["current"]["holder"], "b");
    }

    #[test]
    fn fenced_writes_land_only_under_the_lock() {
        let mut c = cell();
        c.apply(&acquire(&c, "a", 1000, T0).unwrap().changes);
        let g = fenced_write(&c, "a", 1, "state.json", "{}").unwrap();
        assert_eq!(g.changes, vec![Change::Write { file: "state.json".into(), content: "{}".into() }]);
        assert_eq!(fenced_write(&c, "a", 2, "state.json", "{}").unwrap_err().code, ErrorCode::LockLost);
        for bad in ["lock.json", "epoch.json", ".x", "a/b", "", "x.tmp"] {
            assert_eq!(fenced_write(&c, "a", 1, bad, "{}").unwrap_err().code, ErrorCode::Usage, "{bad}");
        }
    }

    #[test]
    fn unknown_fields_survive_a_renewal() {
        let mut c = cell();
        c.files.insert(
            LOCK_FILE.into(),
            "{\"holder\":\"a\",\"acquiredAt\":\"2026-10-10T12:00:00.000Z\",\"expiresAt\":\"2026-10-10T12:15:00.000Z\",\"epoch\":3,\"note\":\"keep\"}".into(),
        );
        let g = renew(&c, "a", 3, 1000, T0).unwrap();
        assert_eq!(g.lock.extra["note"], "keep");
        let Change::Write { content, .. } = &g.changes[0] else { panic!() };
        assert!(content.contains("\"note\": \"keep\""));
    }
}
