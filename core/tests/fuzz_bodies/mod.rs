//! The bodies of baton's fuzz targets, written once and run two ways: by `cargo fuzz` (each
//! `fuzz/fuzz_targets/<target>.rs` includes this file and calls one body) and on stable Rust by
//! `core/tests/fuzz_corpus.rs` (every body over the committed corpus `fuzz/corpus/<target>/` plus seeded
//! mutations of it).
//!
//! Every body takes arbitrary bytes, never panics on its own account, and panics (an assertion) exactly when
//! a property of the parser under test is violated: a parse that does not round-trip, an error code outside
//! the documented set, an encoding that escapes its cell or is not a valid git ref, a change set that writes
//! outside the cell or overwrites a receipt baton cannot read, an answer that is not a valid envelope.
//!
//! A body that receives text decodes it lossily (`String::from_utf8_lossy`), as hosts pass files to the core.

#![allow(dead_code, unreachable_pub)] // each fuzz target uses one body; the items are this module's interface

use baton_core::api::{OPS, invoke};
use baton_core::cell::{Cell, Change, EPOCH_FILE, LOCK_FILE, to_file_json};
use baton_core::context::{ContextInput, Detection, GitFacts, detect};
use baton_core::error::{CoreError, ErrorCode, error_codes};
use baton_core::receipt::{LATEST_FILE, RECEIPT_VERSION, parse_receipt};
use baton_core::{gitstore, lock, names, scope};
use serde_json::{Map, Value, json};

#[path = "../../../host-native/src/duration.rs"]
mod duration;

/// A wall-clock time inside the range every test uses (2026-10-10T12:00:00Z).
const T0: i64 = 1_791_633_600_000;

/// The latest wall-clock time whose lock baton can write and read back (a year before the end of 9999, the
/// last year an ISO timestamp of four digits can name). Later clocks are broken hosts: they must not panic,
/// but what they write is not checked.
const LATE: i64 = 253_370_764_800_000;

/// One fuzz target: its name (the directory of its corpus and the cargo-fuzz binary) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, in a fixed order.
pub const TARGETS: [Target; 7] = [
    ("lock_json", lock_json),
    ("receipt_json", receipt_json),
    ("context", context),
    ("duration", duration),
    ("store_spec", store_spec),
    ("names", names),
    ("invoke_any", invoke_any),
];

// ---------------------------------------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------------------------------------

/// Why `name` is not a valid git refname (`git check-ref-format`, without `--allow-onelevel`), or `Ok`.
///
/// The rules of git's `check_refname_format`: at least two `/`-separated components, none empty, none
/// starting with `.` or ending with `.lock`; no `..`, no `@{`, no byte below 0x20 or 0x7f, none of
/// space `~ ^ : ? * [ \`; not ending with `.`; not `@`. Non-ASCII UTF-8 is allowed.
pub fn check_ref_format(name: &str) -> Result<(), &'static str> {
    if name == "@" {
        return Err("is `@`");
    }
    if name.ends_with('.') {
        return Err("ends with `.`");
    }
    if !name.contains('/') {
        return Err("has one level");
    }
    name.split('/').try_for_each(check_ref_component)
}

/// Why `c` cannot be one `/`-separated component of a git refname, or `Ok` (see [`check_ref_format`]).
pub fn check_ref_component(c: &str) -> Result<(), &'static str> {
    if c.is_empty() {
        return Err("has an empty component");
    }
    if c.starts_with('.') {
        return Err("has a component starting with `.`");
    }
    if c.ends_with(".lock") {
        return Err("has a component ending with `.lock`");
    }
    if c.contains("..") {
        return Err("contains `..`");
    }
    if c.contains("@{") {
        return Err("contains `@{`");
    }
    if c.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("contains a control character");
    }
    if c.chars().any(|ch| matches!(ch, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')) {
        return Err("contains one of space ~ ^ : ? * [ \\");
    }
    Ok(())
}

/// Asserts that `seg` can be one directory name inside a cell's parent: not empty, not `.` or `..`, no
/// separator (`/`, `\`), no NUL, not hidden.
pub fn assert_plain_dir(seg: &str, what: &str) {
    assert!(!seg.is_empty(), "{what}: empty directory name");
    assert!(seg != "." && seg != "..", "{what}: `{seg}` is a special directory");
    assert!(!seg.contains('/') && !seg.contains('\\'), "{what}: `{seg}` contains a separator");
    assert!(!seg.contains('\0'), "{what}: {seg:?} contains NUL");
    assert!(!seg.starts_with('.'), "{what}: `{seg}` is hidden");
}

/// The set of codes `error-codes` lists (what every host may print).
fn known_code(code: &str) -> bool {
    error_codes().iter().any(|c| c.code == code)
}

/// Asserts that an error is a valid envelope error: its JSON object carries its own code (one of
/// `error-codes`) and message, and survives a JSON round trip.
pub fn assert_error_envelope(e: &CoreError) {
    let j = e.to_json();
    assert_eq!(j["code"], e.code.as_str(), "the error object carries the error's code");
    assert!(known_code(e.code.as_str()), "code {} is listed by error-codes", e.code);
    assert_eq!(j["message"], e.message.as_str());
    assert!(!e.message.is_empty(), "an error says what happened");
    let back: Value = serde_json::from_str(&j.to_string()).expect("the error object is valid JSON");
    assert_eq!((&back["code"], &back["message"]), (&j["code"], &j["message"]));
}

/// Checks one answer of [`invoke`]: `Ok` is JSON (an object, or an array for the two list operations) whose
/// change set, if any, stays inside the cell; `Err` is a valid error envelope. Returns the parsed answer.
pub fn check_answer(op: &str, result: &Result<String, CoreError>) -> Option<Value> {
    match result {
        Ok(text) => {
            let v: Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("`{op}` answered invalid JSON ({e}): {text}"));
            if matches!(op, "error-codes" | "cell-files") {
                assert!(v.is_array(), "`{op}` answers a list");
            } else {
                assert!(v.is_object(), "`{op}` answers an object: {text}");
            }
            if let Some(changes) = v.get("changes") {
                let changes: Vec<Change> = serde_json::from_value(changes.clone())
                    .unwrap_or_else(|e| panic!("`{op}` answered changes that are not a change set ({e})"));
                for c in &changes {
                    let (Change::Write { file, .. } | Change::Delete { file }) = c;
                    assert_plain_dir(file, &format!("a file written by `{op}`"));
                }
            }
            Some(v)
        }
        Err(e) => {
            assert_error_envelope(e);
            None
        }
    }
}

/// [`invoke`], checked with [`check_answer`], and deterministic: a second call answers the same.
fn call(op: &str, request: &str) -> Result<Value, CoreError> {
    let first = invoke(op, request);
    let answer = check_answer(op, &first);
    assert_eq!(invoke(op, request), first, "`{op}` answers the same request the same way");
    match first {
        Ok(_) => Ok(answer.unwrap_or(Value::Null)),
        Err(e) => Err(e),
    }
}

/// The changes of an answer, applied to `cell`.
fn apply(cell: &mut Cell, answer: &Value) {
    if let Some(changes) = answer.get("changes") {
        let changes: Vec<Change> = serde_json::from_value(changes.clone()).unwrap_or_default();
        cell.apply(&changes);
    }
}

/// A cell of `preview/pr-1` with these files.
fn cell_with(files: &[(&str, &str)]) -> Cell {
    let mut cell = Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() };
    for (name, text) in files {
        cell.files.insert((*name).to_owned(), (*text).to_owned());
    }
    cell
}

/// The cell as a request field.
fn cell_json(cell: &Cell) -> Value {
    serde_json::to_value(cell).unwrap_or(Value::Null)
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

// ---------------------------------------------------------------------------------------------------------
// lock.json and epoch.json
// ---------------------------------------------------------------------------------------------------------

/// `lock.json` (and the same bytes as `epoch.json`): a readable lock round-trips through what baton writes,
/// admits its holder at its epoch, is released by its holder, is held until it expires and is taken over
/// with a greater epoch after; an unreadable lock is `LOCK_CORRUPT`, never taken over and always breakable.
pub fn lock_json(data: &[u8]) {
    let text = text(data);
    let cell = cell_with(&[(LOCK_FILE, &text)]);
    match lock::parse_lock(&cell) {
        Err(e) => {
            assert_eq!(e.code, ErrorCode::LockCorrupt);
            assert_error_envelope(&e);
            let refused = lock::acquire(&cell, "fuzz", 1000, T0).expect_err("an unreadable lock is never taken over");
            assert_eq!(refused.code, ErrorCode::LockCorrupt);
            assert!(!lock::release(&cell, "fuzz", None).released);
            assert_eq!(lock::check_fence(&cell, "fuzz", 1).map_err(|e| e.code), Err(ErrorCode::LockLost));
            let g = match lock::break_lock(&cell, "fuzz", 1000, T0, "fuzz") {
                Ok(g) => g,
                Err(e) => {
                    // Only a lock naming the last epoch cannot be broken: no greater epoch exists.
                    assert_eq!(e.code, ErrorCode::LockCorrupt);
                    assert!(text.contains(&u64::MAX.to_string()), "a break replaces an unreadable lock: {e}");
                    return;
                }
            };
            assert!(g.lock.epoch >= 1);
            assert!(g.lock.extra["broke"]["corrupt"].is_string(), "the break records why the lock was unreadable");
            let mut after = cell.clone();
            after.apply(&g.changes);
            assert_eq!(lock::parse_lock(&after).ok().flatten().as_ref(), Some(&g.lock), "the new lock reads back");
        }
        Ok(None) => panic!("a cell with a lock.json has a lock or a corrupt one"),
        Ok(Some(rec)) => {
            let written = cell_with(&[(LOCK_FILE, &to_file_json(&rec))]);
            assert_eq!(lock::parse_lock(&written).ok().flatten().as_ref(), Some(&rec), "lock.json round-trips");
            assert!(lock::check_fence(&cell, &rec.holder, rec.epoch).is_ok(), "the holder is admitted at its epoch");
            if let Some(other) = rec.epoch.checked_add(1) {
                let e = lock::check_fence(&cell, &rec.holder, other).expect_err("another epoch is refused");
                assert_eq!(e.code, ErrorCode::LockLost);
            }
            let r = lock::release(&cell, &rec.holder, Some(rec.epoch));
            assert!(r.released && r.changes == vec![Change::Delete { file: LOCK_FILE.into() }]);
            for now in [i64::MIN, 0, T0, LATE, i64::MAX] {
                let view = lock::read(&cell, now).expect("a readable lock reads").expect("and is there");
                assert_eq!(view.expired, view.expires_in_ms <= 0, "expired exactly when no time is left");
                match lock::acquire(&cell, "fuzz-b", 1000, now) {
                    Ok(g) => {
                        assert!(view.expired, "a live lock is never taken over");
                        assert!(g.lock.epoch > rec.epoch, "a takeover gets a greater epoch");
                        assert_eq!(g.preempted.as_ref(), Some(&rec), "a takeover reports what it replaced");
                        if (0..=LATE).contains(&now) {
                            let mut after = cell.clone();
                            after.apply(&g.changes);
                            assert_eq!(lock::parse_lock(&after).ok().flatten().as_ref(), Some(&g.lock), "at {now}");
                        }
                    }
                    Err(e) if e.code == ErrorCode::LockHeld => assert!(!view.expired, "an expired lock is taken over"),
                    Err(e) => assert_eq!((e.code, rec.epoch), (ErrorCode::LockCorrupt, u64::MAX), "{e}"),
                }
            }
        }
    }
    let answer = call("lock-read", &json!({ "cell": cell_json(&cell), "nowMs": T0 }).to_string());
    assert_eq!(answer.is_ok(), lock::parse_lock(&cell).is_ok(), "lock-read agrees with the parser");

    // The same bytes as epoch.json, without a lock: a grant is one above what it records, or LOCK_CORRUPT.
    let cell = cell_with(&[(EPOCH_FILE, &text)]);
    match lock::acquire(&cell, "fuzz", 1000, T0) {
        Ok(g) => {
            let recorded =
                serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get("epoch").and_then(Value::as_u64));
            assert_eq!(Some(g.lock.epoch), recorded.and_then(|r| r.checked_add(1)), "the grant follows epoch.json");
        }
        Err(e) => assert_eq!(e.code, ErrorCode::LockCorrupt),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Receipts
// ---------------------------------------------------------------------------------------------------------

/// A receipt (`latest.json` of a cell, another scope's, a predecessor's): it parses to version 2 and
/// round-trips (a version-1 migration is stable), or is `RECEIPT_CORRUPT` / `RECEIPT_VERSION`. Every
/// ownership operation over it either refuses with a documented code or writes a receipt that reads back, and
/// none ever writes over (or deletes) a receipt that cannot be read.
pub fn receipt_json(data: &[u8]) {
    let text = text(data);
    let parsed = parse_receipt(&text, "fuzz");
    match &parsed {
        Ok(r) => {
            assert_eq!(r.doc.get("version").and_then(Value::as_u64), Some(RECEIPT_VERSION), "read as version 2");
            let again = parse_receipt(&r.to_value().to_string(), "fuzz").expect("what baton writes, it reads");
            assert_eq!(&again, r, "a receipt round-trips");
            let pretty = parse_receipt(&to_file_json(&r.to_value()), "fuzz").expect("the file format reads too");
            assert_eq!(&pretty, r);
        }
        Err(e) => {
            assert!(matches!(e.code, ErrorCode::ReceiptCorrupt | ErrorCode::ReceiptVersion), "{e}");
            assert_eq!(e.details.get("where"), Some(&json!("fuzz")), "the refusal names the place");
            assert_error_envelope(e);
        }
    }
    let via_api = call("receipt-parse", &json!({ "text": text, "place": "fuzz" }).to_string());
    match (&parsed, &via_api) {
        (Ok(r), Ok(a)) => assert_eq!(a["receipt"], r.to_value()),
        (Err(e), Err(a)) => assert_eq!(e.code, a.code),
        _ => panic!("receipt-parse disagrees with parse_receipt"),
    }

    // The ownership operations, with this receipt as the cell's latest.json under a held lock.
    let lock_text = r#"{"holder":"run-f","acquiredAt":"2026-10-10T11:59:00.000Z","expiresAt":"2026-10-10T13:00:00.000Z","epoch":1}"#;
    let cell = cell_with(&[(LOCK_FILE, lock_text), (EPOCH_FILE, "{\"epoch\":1}"), (LATEST_FILE, &text)]);
    let fence = json!({ "cell": cell_json(&cell), "holder": "run-f", "epoch": 1, "nowMs": T0 });
    let with = |extra: Value| {
        let mut req = fence.clone();
        if let (Some(r), Value::Object(e)) = (req.as_object_mut(), extra) {
            r.extend(e);
        }
        req.to_string()
    };
    let resource = json!({ "adapter": "vercel", "key": "env:API_URL" });
    let context = json!({ "env": "preview", "scope": "pr-1", "branch": "feat/x", "sha": "abc", "pr": 1 });
    let requests = [
        ("run-begin", with(json!({ "context": context, "hashKey": "00000000000000000000000000000000" }))),
        ("run-finish", with(json!({ "succeeded": true, "sha": "def" }))),
        ("ledger-intend", with(json!({ "resource": resource }))),
        ("ledger-record", with(json!({ "resource": resource, "id": "v-1" }))),
        ("ledger-forget", with(json!({ "resource": resource }))),
        ("ledger-check", with(json!({ "resource": resource, "change": true }))),
        ("handover", with(json!({ "successor": "pr-2", "successorLedger": ["vercel|{}|env:API_URL"] }))),
        ("destroy-plan", with(json!({}))),
        ("scope-status", json!({ "cell": cell_json(&cell), "nowMs": T0 }).to_string()),
        (
            "lock-break",
            json!({ "cell": cell_json(&cell), "holder": "run-g", "ttlMs": 1000, "nowMs": T0, "reason": "fuzz" })
                .to_string(),
        ),
    ];
    for (op, request) in &requests {
        match call(op, request) {
            Ok(answer) => {
                let mut after = cell.clone();
                apply(&mut after, &answer);
                match (&parsed, after.file(LATEST_FILE)) {
                    (Err(_), latest) => {
                        assert_eq!(latest, Some(text.as_str()), "`{op}` never touches a receipt it cannot read")
                    }
                    (Ok(_), Some(latest)) => {
                        let r = parse_receipt(latest, "after")
                            .unwrap_or_else(|e| panic!("`{op}` wrote a receipt it cannot read: {e}"));
                        assert_eq!(r.doc.get("version").and_then(Value::as_u64), Some(RECEIPT_VERSION));
                    }
                    (Ok(_), None) => panic!("`{op}` deleted the receipt"),
                }
            }
            Err(e) => assert!(
                matches!(
                    e.code,
                    ErrorCode::ReceiptCorrupt
                        | ErrorCode::ReceiptVersion
                        | ErrorCode::IntentUnresolved
                        | ErrorCode::OwnedByOtherScope
                        | ErrorCode::Usage
                ),
                "`{op}` refused with {e}"
            ),
        }
    }

    // The same text as another scope's receipt and as the predecessor's: unreadable ones are skipped or
    // refused, never a panic, and the own cell's receipt is untouched by a read.
    let others = json!([{ "scope": "pr-9", "text": text }, { "scope": "branch-feat-x", "text": text }]);
    let fresh = cell_with(&[(LOCK_FILE, lock_text), (EPOCH_FILE, "{\"epoch\":1}")]);
    let status =
        json!({ "cell": cell_json(&fresh), "nowMs": T0, "others": others, "predecessor": "branch-feat-x" }).to_string();
    let _ = call("scope-status", &status);
    let check =
        json!({ "cell": cell_json(&fresh), "nowMs": T0, "resource": resource, "change": true, "others": others });
    let _ = call("ledger-check", &check.to_string());
    let begin = json!({
        "cell": cell_json(&fresh), "holder": "run-f", "epoch": 1, "nowMs": T0, "context": context,
        "hashKey": "00000000000000000000000000000000", "predecessor": { "scope": "branch-feat-x", "text": text },
    });
    if let Ok(answer) = call("run-begin", &begin.to_string()) {
        let mut after = fresh.clone();
        apply(&mut after, &answer);
        let latest = after.file(LATEST_FILE).expect("run-begin writes the checkpoint receipt");
        parse_receipt(latest, "after").expect("the checkpoint receipt reads back");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Context detection
// ---------------------------------------------------------------------------------------------------------

/// Every variable detection reads, for the line format of [`context_input`].
const CONTEXT_VARS: [&str; 28] = [
    "BATON_CTX_ENV",
    "BATON_ENV",
    "BATON_CTX_BRANCH",
    "BATON_CTX_SHA",
    "BATON_CTX_PR",
    "BATON_SCOPE",
    "GITHUB_ACTIONS",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "GITHUB_REF",
    "GITHUB_SHA",
    "GITLAB_CI",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_COMMIT_BRANCH",
    "CI_COMMIT_REF_NAME",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
    "CI_COMMIT_SHA",
    "CI_MERGE_REQUEST_IID",
    "CI_DEFAULT_BRANCH",
    "CIRCLECI",
    "CIRCLE_BRANCH",
    "CIRCLE_SHA1",
    "CIRCLE_PULL_REQUEST",
    "CIRCLE_PR_NUMBER",
    "BITBUCKET_BUILD_NUMBER",
    "BITBUCKET_BRANCH",
    "BITBUCKET_COMMIT",
    "BITBUCKET_PR_ID",
];

/// The detection request of a fuzz input. A JSON object is the `detect-context` request itself. Anything
/// else is read line by line: `@event <json>` (the event payload), `@git <field>=<value>` (`branch`, `sha`,
/// `pr`, `error`), `@o <field>=<value>` (an override: `env`, `branch`, `sha`, `pr`, `defaultBranch`,
/// `scope`), `NAME=value` (a variable; a NAME of digits picks the NAME-th variable detection reads), and any
/// other line sets the variable its first byte picks to the rest of the line.
pub fn context_input(data: &[u8]) -> Option<(ContextInput, String)> {
    let text = text(data);
    if text.trim_start().starts_with('{') {
        let input: ContextInput = serde_json::from_str(&text).ok()?;
        return Some((input, text));
    }
    let mut req = json!({ "overrides": {}, "vars": {} });
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("@event ") {
            req["event"] = serde_json::from_str(event).unwrap_or(Value::String(event.to_owned()));
        } else if let Some(fact) = line.strip_prefix("@git ") {
            let (k, v) = fact.split_once('=').unwrap_or((fact, ""));
            if req.get("git").is_none() {
                req["git"] = json!({});
            }
            let value = if k == "pr" { v.trim().parse::<i64>().map_or(Value::Null, Value::from) } else { json!(v) };
            if matches!(k, "branch" | "sha" | "pr" | "error") {
                req["git"][k] = value;
            }
        } else if let Some(o) = line.strip_prefix("@o ") {
            let (k, v) = o.split_once('=').unwrap_or((o, ""));
            if matches!(k, "env" | "branch" | "sha" | "pr" | "defaultBranch" | "scope") {
                req["overrides"][k] = if k == "pr" && v == "null" { Value::Null } else { json!(v) };
            }
        } else if let Some((k, v)) = line.split_once('=') {
            let name = match k.parse::<usize>() {
                Ok(i) => CONTEXT_VARS[i % CONTEXT_VARS.len()].to_owned(),
                Err(_) => k.to_owned(),
            };
            req["vars"][name] = json!(v);
        } else if let Some(first) = line.bytes().next() {
            let name = CONTEXT_VARS[usize::from(first) % CONTEXT_VARS.len()];
            req["vars"][name] = json!(line.get(1..).unwrap_or_default());
        }
    }
    let request = req.to_string();
    let input: ContextInput = serde_json::from_value(req).ok()?;
    Some((input, request))
}

fn named_scope(input: &ContextInput) -> bool {
    let blank = |v: Option<&String>| v.is_none_or(|s| s.trim().is_empty());
    !blank(input.overrides.scope.as_ref()) || !blank(input.vars.get("BATON_SCOPE"))
}

/// Context detection from overrides, variables, the event payload and git facts: deterministic, the same
/// through `detect-context`; refusals are `USAGE` or `CTX_NULL`; a detected context has a valid environment
/// (`preview` unless a source names one) and a valid scope with a cell (a long branch's too: a readable
/// prefix plus a hash), `pr-<n>` whenever a pull request is known and no scope is named; the two-call
/// protocol ends after the git facts.
pub fn context(data: &[u8]) {
    let Some((input, request)) = context_input(data) else {
        let answer = call("detect-context", &text(data));
        if let Err(e) = answer {
            assert_eq!(e.code, ErrorCode::Internal, "a request that does not parse is INTERNAL");
        }
        return;
    };
    let detected = detect(&input);
    let via_api = call("detect-context", &request);
    match (&detected, &via_api) {
        (Ok(d), Ok(a)) => assert_eq!(&serde_json::to_value(d).unwrap_or_default(), a),
        (Err(e), Err(a)) => assert_eq!(e, a),
        _ => panic!("detect-context disagrees with detect"),
    }
    match detected {
        Err(e) => assert!(matches!(e.code, ErrorCode::Usage | ErrorCode::CtxNull), "{e}"),
        Ok(Detection::NeedsGit { .. }) => {
            assert!(input.git.is_none(), "git is asked once");
            let mut again = input.clone();
            again.git = Some(GitFacts::default());
            assert!(!matches!(detect(&again), Ok(Detection::NeedsGit { .. })), "the second call decides");
            again.git =
                Some(GitFacts { branch: Some("feat/x".into()), sha: Some("abc".into()), ..GitFacts::default() });
            match detect(&again) {
                Ok(Detection::Detected { context }) => assert!(context.branch.is_some()),
                Ok(other) => panic!("asked for git twice: {other:?}"),
                Err(e) => assert!(matches!(e.code, ErrorCode::Usage | ErrorCode::CtxNull), "{e}"),
            }
        }
        Ok(Detection::Environment { context }) => {
            assert!(input.env_only, "only a command on a whole environment goes without a scope");
            assert!(context.scope.is_none() && context.branch.is_none(), "{context:?}");
            assert!(scope::validate_name("env", &context.env).is_ok(), "{context:?}");
        }
        Ok(Detection::Detected { context: c }) => {
            assert!(scope::validate_name("env", &c.env).is_ok(), "env {:?} is valid", c.env);
            let named_env =
                [input.overrides.env.as_ref(), input.vars.get("BATON_CTX_ENV"), input.vars.get("BATON_ENV")]
                    .into_iter()
                    .any(|v| v.is_some_and(|s| !s.trim().is_empty()));
            if !named_env {
                assert_eq!(c.env, "preview", "production is never inferred");
            }
            assert!(c.pr.is_none_or(|n| n > 0), "a pull request number is positive");
            if named_scope(&input) {
                assert!(scope::validate_name("scope", &c.scope).is_ok(), "a named scope is validated");
            } else {
                let branch = c.branch.as_deref().expect("a derived scope has a branch");
                assert_eq!(c.scope, scope::scope_for(branch, c.pr, c.default_branch.as_deref()));
                if let Some(n) = c.pr {
                    assert_eq!(c.scope, format!("pr-{n}"));
                }
                // Always valid: a branch too long for the original rule gets a readable prefix plus a hash.
                let refused = scope::validate_name("scope", &c.scope).err();
                assert!(refused.is_none(), "derived scope {:?} is valid: {refused:?}", c.scope);
            }
            let cell = call("cell-path", &json!({ "env": c.env, "scope": c.scope }).to_string());
            assert_eq!(cell.is_ok(), scope::validate_name("scope", &c.scope).is_ok(), "a valid context has a cell");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------------------------------------

/// `--ttl`, `--wait-timeout` and friends: a duration is digits and one of `ms s m h` (after trimming), its
/// value is the number times the unit, it prints back to the same value, and anything else is refused.
pub fn duration(data: &[u8]) {
    let s = text(data);
    let parsed = duration::parse_duration(&s);
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let factor = match unit {
        "ms" => Some(1u64),
        "s" => Some(1000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        _ => None,
    };
    let expected = factor.zip(num.parse::<u64>().ok()).and_then(|(f, n)| n.checked_mul(f));
    match parsed {
        Ok(ms) => {
            assert_eq!(Some(ms), expected, "{s:?}");
            assert_eq!(duration::parse_duration(&format!("{ms}ms")), Ok(ms), "a parsed duration prints back");
            assert!(!baton_core::time::human_ms(ms).is_empty());
        }
        Err(message) => {
            assert_eq!(expected, None, "{s:?} was refused: {message}");
            assert!(!message.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Store specs and redaction
// ---------------------------------------------------------------------------------------------------------

/// Asserts that `text` has no credentials left in a URL: every `://` authority containing `@` is
/// `[REDACTED]@host`.
pub fn assert_redacted(text: &str) {
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        rest = &rest[i + 3..];
        let end = rest.find(|c: char| c.is_whitespace() || c == '/' || c == '"' || c == '\'').unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.contains('@') {
            let host = authority.strip_prefix("[REDACTED]@").unwrap_or_else(|| panic!("{authority:?} in {text:?}"));
            assert!(!host.contains('@'), "{authority:?} in {text:?}");
        }
    }
}

/// The store-spec request of a fuzz input: a JSON object is the request itself; anything else is read line
/// by line as `field=value` (`spec`, `repoRoot`, `cwd`, `prefix`, `budgetMs`, `origin`; `run` and `ci` are
/// flags), the first line without `=` being the spec.
pub fn store_spec_request(data: &[u8]) -> String {
    let text = text(data);
    if text.trim_start().starts_with('{') {
        return text;
    }
    let mut req = Map::new();
    req.insert("cwd".into(), json!("/work/repo"));
    for line in text.lines() {
        match line.split_once('=') {
            Some((k @ ("spec" | "repoRoot" | "cwd" | "prefix" | "budgetMs" | "origin"), v)) => {
                req.insert(k.into(), json!(v));
            }
            _ if line == "run" || line == "ci" => {
                req.insert(line.into(), json!(true));
            }
            _ if !req.contains_key("spec") => {
                req.insert("spec".into(), json!(line));
            }
            _ => {}
        }
    }
    Value::Object(req).to_string()
}

/// `--store` / `BATON_STORE` with `BATON_GIT_PREFIX` and `BATON_STORE_BUDGET_MS`: refusals are `USAGE`; a
/// dir store has an absolute path when the working directory is absolute; a git store has a prefix that
/// makes valid git refs, a positive budget and a label without credentials; redaction is idempotent.
pub fn store_spec(data: &[u8]) {
    let request = store_spec_request(data);
    let req: Option<Value> = serde_json::from_str(&request).ok();
    match call("store-spec", &request) {
        Err(e) => {
            assert!(matches!(e.code, ErrorCode::Usage | ErrorCode::Internal), "{e}");
            if let Some(store) = e.details.get("store").and_then(Value::as_str) {
                assert_redacted(store);
                assert_redacted(&e.message);
            }
        }
        Ok(a) => {
            let label = a["label"].as_str().expect("a store has a label");
            assert!(a["notice"].is_null() || req.as_ref().is_some_and(|r| r["run"] == true), "a notice only for run");
            match a["kind"].as_str() {
                Some("dir") => {
                    let path = a["path"].as_str().expect("a dir store has a path");
                    assert_eq!(label, format!("dir:{path}"));
                    let cwd = req.as_ref().and_then(|r| r["cwd"].as_str()).unwrap_or_default();
                    let root = req.as_ref().and_then(|r| r["repoRoot"].as_str()).unwrap_or_default();
                    if cwd.starts_with('/') && (root.is_empty() || root.starts_with('/')) {
                        assert!(path.starts_with('/'), "{path:?} is absolute");
                    }
                }
                Some("git") => {
                    let remote = a["remote"].as_str().expect("a git store has a remote");
                    assert!(!remote.is_empty() && remote.trim() == remote);
                    assert_eq!(label, gitstore::redact(remote));
                    assert_redacted(label);
                    assert!(a["budgetMs"].as_u64().is_some_and(|b| b > 0));
                    let prefix = a["prefix"].as_str().expect("a git store has a prefix");
                    let full = format!("refs/heads/{prefix}/preview/pr-1");
                    assert_eq!(check_ref_format(&full), Ok(()), "{full:?}");
                }
                other => panic!("unknown store kind {other:?}"),
            }
        }
    }
    let t = text(data);
    let once = gitstore::redact(&t);
    assert_redacted(&once);
    assert_eq!(gitstore::redact(&once), once, "redaction is idempotent");
    let (outcome, detail) = gitstore::classify_push(1, &t);
    assert!(detail.chars().count() <= 300);
    let _ = outcome;
}

// ---------------------------------------------------------------------------------------------------------
// Names: path and ref segments, cell paths, scope names
// ---------------------------------------------------------------------------------------------------------

/// The names of a fuzz input: the whole text, and the two halves around its first `\n` (or its middle).
pub fn name_pair(data: &[u8]) -> (String, String) {
    let t = text(data);
    match t.split_once('\n') {
        Some((a, b)) => (a.to_owned(), b.to_owned()),
        None => {
            let mut mid = t.len() / 2;
            while !t.is_char_boundary(mid) {
                mid -= 1;
            }
            (t[..mid].to_owned(), t[mid..].to_owned())
        }
    }
}

/// Checks the encodings of one name: decoding inverts them, a ref segment is always a valid git ref
/// component, a path segment never escapes its parent, and for a valid name `cell-path` answers exactly
/// these segments and `scope-names` decodes them back.
pub fn check_name(n: &str) {
    let (p, r) = (names::path_segment(n), names::ref_segment(n));
    assert_eq!(names::decode_segment(&r).as_deref(), Some(n), "ref segment of {n:?} decodes back");
    assert_eq!(check_ref_component(&r), Ok(()), "ref segment {r:?} of {n:?}");
    assert!(!p.contains('/') && !p.contains('\\') && p != "." && p != ".." && !p.is_empty(), "{p:?}");
    if !n.starts_with('=') {
        assert_eq!(names::decode_segment(&p).as_deref(), Some(n), "path segment of {n:?} decodes back");
    }
    let valid = scope::validate_name("scope", n).is_ok();
    if valid {
        assert_plain_dir(&p, "a path segment");
        assert!(p.len() <= 1 + 2 * 200 && r.len() <= 1 + 2 * 200);
    }
    let cell = call("cell-path", &json!({ "env": "preview", "scope": n }).to_string());
    match cell {
        Ok(a) => {
            assert!(valid, "cell-path accepted the invalid name {n:?}");
            assert_eq!(a["dir"], format!("preview/{p}"));
            assert_eq!(a["ref"], format!("preview/{r}"));
            let full = format!("refs/heads/{}/preview/{r}", gitstore::DEFAULT_PREFIX);
            assert_eq!(check_ref_format(&full), Ok(()), "{full:?}");
        }
        Err(e) => assert!(!valid && e.code == ErrorCode::Usage, "{n:?}: {e}"),
    }
    let dirs = json!({ "dirs": [n, p, r] }).to_string();
    let scopes = call("scope-names", &dirs).expect("scope-names answers any directory list");
    let scopes = scopes["scopes"].as_array().cloned().unwrap_or_default();
    assert_eq!(scopes.len(), 3);
    for (dir, name) in [n, &p, &r].iter().zip(&scopes) {
        if let Some(name) = name.as_str() {
            assert!(scope::validate_name("scope", name).is_ok(), "{dir:?} decoded to the invalid {name:?}");
            assert!(
                names::path_segment(name) == **dir || names::ref_segment(name) == **dir,
                "{dir:?} decoded to {name:?}, which does not encode to it"
            );
        }
    }
    if valid {
        assert_eq!((&scopes[1], &scopes[2]), (&json!(n), &json!(n)), "the segments of {n:?} decode back");
    }
}

/// Checks that two distinct valid names never share a directory or a ref, in either encoding.
pub fn check_distinct(a: &str, b: &str) {
    if a == b || scope::validate_name("scope", a).is_err() || scope::validate_name("scope", b).is_err() {
        return;
    }
    let (pa, ra, pb, rb) =
        (names::path_segment(a), names::ref_segment(a), names::path_segment(b), names::ref_segment(b));
    assert_ne!(pa, pb, "{a:?} and {b:?} share a directory");
    assert_ne!(ra, rb, "{a:?} and {b:?} share a ref");
    assert_ne!(pa, rb, "{a:?} and {b:?} share a segment across encodings");
    assert_ne!(ra, pb, "{a:?} and {b:?} share a segment across encodings");
}

/// Path and ref segment encoding, `cell-path` and `scope-names` over arbitrary names and pairs of names, and
/// the derived scope of the input as a branch name.
pub fn names(data: &[u8]) {
    let whole = text(data);
    let (a, b) = name_pair(data);
    for n in [&whole, &a, &b] {
        check_name(n);
        let _ = names::decode_segment(n);
    }
    check_distinct(&a, &b);
    // env/scope pairs: distinct pairs, distinct cells.
    if let (Ok(x), Ok(y)) = (
        call("cell-path", &json!({ "env": a, "scope": b }).to_string()),
        call("cell-path", &json!({ "env": b, "scope": a }).to_string()),
    ) {
        assert_eq!(x["dir"] == y["dir"], a == b, "({a:?}, {b:?}) and its swap");
        assert_eq!(x["ref"] == y["ref"], a == b);
    }
    let derived = scope::scope_for(&whole, None, None);
    // `branch-` + at most 193 characters fits 200; a scope the stores hex-encode (`..`, a trailing `.lock`)
    // doubles, so up to 120 characters always fit 255 bytes, and longer ones may be refused as too long.
    if whole.len() <= 193 {
        match scope::validate_name("scope", &derived) {
            Ok(()) => {}
            Err(e) if whole.len() > 120 && e.message.contains("too long for the store once encoded") => {}
            Err(e) => panic!("the scope {derived:?} derived from a branch is refused: {}", e.message),
        }
    }
    assert_eq!(scope::safe_segment(&scope::safe_segment(&whole)), scope::safe_segment(&whole));
}

// ---------------------------------------------------------------------------------------------------------
// Any operation
// ---------------------------------------------------------------------------------------------------------

/// The operation and request of a fuzz input: `op\nrequest` when the first line is an operation (or any
/// short word: unknown operations are refused), else the operation the first byte picks and the rest.
pub fn op_request(data: &[u8]) -> (String, String) {
    let t = text(data);
    if let Some((op, request)) = t.split_once('\n')
        && !op.is_empty()
        && op.len() <= 40
        && !op.contains('{')
    {
        return (op.to_owned(), request.to_owned());
    }
    let Some(first) = data.first() else { return ("scope-for".to_owned(), String::new()) };
    let op = OPS[usize::from(*first) % OPS.len()];
    (op.to_owned(), text(&data[1..]))
}

/// Any operation name with any request through [`invoke`]: it returns (never panics), deterministically,
/// with valid JSON or a valid error envelope, and every change set stays inside the cell. The pseudo
/// operations `lease-new` (a lease configuration) and `lease-store-result` (a store result for a waiting
/// lease) feed the lease machine's two parsers; its actions are valid JSON.
pub fn invoke_any(data: &[u8]) {
    let (op, request) = op_request(data);
    match op.as_str() {
        "lease-new" => {
            if let Ok(mut m) = baton_core::api::lease_new(&request) {
                let _ = m.acquire(0);
                drain(&mut m);
                m.handle_timeout(1_000_000);
                drain(&mut m);
            }
        }
        "lease-store-result" => {
            let cfg = r#"{"env":"preview","scope":"pr-1","holder":"run-f","ttlMs":60000}"#;
            let mut m = baton_core::api::lease_new(cfg).expect("a valid lease configuration");
            m.acquire(0).expect("a new lease acquires");
            let ids = drain(&mut m);
            let id = ids.first().copied().unwrap_or(1);
            if let Err(e) = baton_core::api::lease_store_result(&mut m, id, &request, 10) {
                assert_error_envelope(&e);
            }
            drain(&mut m);
            let _ = m.fencing_token(20);
            m.release(30);
            drain(&mut m);
        }
        _ => {
            if let Err(e) = call(&op, &request)
                && !OPS.contains(&op.as_str())
            {
                assert_eq!(e.code, ErrorCode::Internal, "an unknown operation is INTERNAL");
            }
        }
    }
}

/// Polls every action of a lease machine, checking each is a JSON object; returns the ids of store requests.
fn drain(m: &mut baton_core::lease::LeaseMachine) -> Vec<u64> {
    let mut ids = Vec::new();
    for _ in 0..100 {
        let Some(action) = baton_core::api::lease_poll_action(m) else { return ids };
        let v: Value = serde_json::from_str(&action).expect("a lease action is JSON");
        assert!(v["type"].is_string(), "{action}");
        if let Some(id) = v["id"].as_u64() {
            ids.push(id);
        }
    }
    panic!("a lease machine kept producing actions");
}

/// Runs the body named `target` on `data`; `false` when there is no such target.
pub fn run(target: &str, data: &[u8]) -> bool {
    match TARGETS.iter().find(|(name, _)| *name == target) {
        Some((_, body)) => {
            body(data);
            true
        }
        None => false,
    }
}
