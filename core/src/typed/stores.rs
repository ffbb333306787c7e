//! The stores' building blocks and the small pure helpers, typed: what the WIT interface `stores`
//! (`wit/stores.wit`) carries, as Rust types, and the functions that answer them.
//!
//! Each request is the serde type `api::invoke` reads (the same JSON spelling) and each answer serialises to
//! exactly the JSON the operation answered before it was typed, so the JSON operations, the conformance
//! corpus and the typed calls cannot drift. Hosts call these through their binding (the component's
//! `stores` interface, the npm module's JSON operations).

use crate::cell::{Cell, Change};
use crate::error::{CoreError, ErrorCode};
use crate::gitstore::PushOutcome;
use crate::names::{path_segment, ref_segment};
use crate::stores::listing::{Listed, Spelling};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `cell-path`: `{env, scope}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellPathRequest {
    /// The environment.
    pub env: String,
    /// The scope.
    pub scope: String,
}

/// Where a cell lives: `{dir, ref}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CellPath {
    /// Its directory in a dir store (`env/scope`, segments encoded by [`path_segment`]).
    pub dir: String,
    /// Its ref suffix in a git store (segments encoded by [`ref_segment`]).
    #[serde(rename = "ref")]
    pub git_ref: String,
}

/// Where the cell (`env`, `scope`) lives in a dir store and in a git store. `USAGE` for a name that is not
/// valid, before any host touches a file.
pub fn cell_path(env: &str, scope: &str) -> Result<CellPath, CoreError> {
    crate::scope::validate_name("env", env)?;
    crate::scope::validate_name("scope", scope)?;
    Ok(CellPath {
        dir: format!("{}/{}", path_segment(env), path_segment(scope)),
        git_ref: format!("{}/{}", ref_segment(env), ref_segment(scope)),
    })
}

/// `scope-names`: `{dirs}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeNamesRequest {
    /// Directory names (or ref segments) found in an environment.
    pub dirs: Vec<String>,
}

/// `{scopes}`: the scope each entry stands for, `null` for one that is not a scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScopeNames {
    /// One entry per directory, in order.
    pub scopes: Vec<Option<String>>,
}

/// The scope each directory (or ref segment) stands for: only what an encoding (dir or git ref) produces
/// (`.tmp` or `=41` are not scope directories).
pub fn scope_names(dirs: &[String]) -> ScopeNames {
    let scopes = dirs
        .iter()
        .map(|d| {
            crate::names::decode_segment(d).filter(|n| {
                crate::scope::validate_name("scope", n).is_ok() && (path_segment(n) == *d || ref_segment(n) == *d)
            })
        })
        .collect();
    ScopeNames { scopes }
}

/// `list-cells`: `{env, spelling: "dir"|"ref", names}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListCellsRequest {
    /// The environment listed.
    pub env: String,
    /// How the store spells names.
    pub spelling: Spelling,
    /// The entries the store found (none: only ask where to look).
    #[serde(default)]
    pub names: Vec<String>,
}

/// `{segment, cells}`: where a store lists the cells of an environment, and which entries are cells.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// The environment's directory or ref segment.
    pub segment: String,
    /// The entries that are cells, sorted by scope.
    pub cells: Vec<Listed>,
}

/// See [`crate::stores::listing::list_cells`]; `USAGE` for an invalid env.
pub fn list_cells(r: &ListCellsRequest) -> Result<Listing, CoreError> {
    let (segment, cells) = crate::stores::listing::list_cells(&r.env, r.spelling, &r.names)?;
    Ok(Listing { segment, cells })
}

/// `cell-file`: `{cell, nowMs?, file}`: one file of a snapshot, for a read-only look at another cell (the
/// run machine reads its predecessor's `latest.json` this way).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellFileRequest {
    /// The snapshot.
    pub cell: Cell,
    /// Accepted (hosts add it to every transaction) and not needed.
    #[serde(default)]
    pub now_ms: Option<UnixMs>,
    /// The file's name.
    pub file: String,
}

/// `{text}`: a text, or `null` for a file that does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Text {
    /// The text.
    pub text: Option<String>,
}

/// `redact`: `{text}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedactRequest {
    /// Anything that may be printed.
    pub text: String,
}

/// `io-error`: `{errno?, what, detail}`. `errno` is the POSIX name of the OS error (`EROFS`), `what` the
/// operation and its path (`cannot write /s/lock.json`), `detail` the OS's own words.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IoErrorRequest {
    /// The POSIX name of the OS error.
    #[serde(default)]
    pub errno: Option<String>,
    /// The operation and its path.
    pub what: String,
    /// The OS's own words.
    #[serde(default)]
    pub detail: String,
}

/// `{code, message, errno}`: what a failed file operation of a store means. The host raises it as its
/// error, with `errno` (and the path) as details.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct IoFailure {
    /// `STORE_PERMISSION`, `STORE_REJECTED`, `USAGE` or `INTERNAL`.
    #[serde(serialize_with = "code_name")]
    #[cfg_attr(feature = "ts", ts(type = "ErrorCode"))]
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
    /// The errno asked about.
    pub errno: Option<String>,
}

fn code_name<S: serde::Serializer>(code: &ErrorCode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(code.as_str())
}

/// What the failed file operation `r` of a store means (see [`crate::stores::errno`]).
pub fn io_error(r: &IoErrorRequest) -> IoFailure {
    let errno = r.errno.as_deref();
    IoFailure {
        code: crate::stores::errno::classify(errno).0,
        message: crate::stores::errno::message(errno, &r.what, &r.detail),
        errno: r.errno.clone(),
    }
}

/// `{remove, set}`: the environment of every git the stores run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GitEnv {
    /// The variables removed from it.
    pub remove: Vec<String>,
    /// The variables set in it.
    pub set: BTreeMap<String, String>,
}

/// The variables removed from and set in the environment of every store git (`crate::stores::git_env`).
pub fn git_env() -> GitEnv {
    GitEnv {
        remove: crate::stores::git_env::REMOVE.iter().map(|v| (*v).to_owned()).collect(),
        set: crate::stores::git_env::SET.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    }
}

/// `store-deadline`: `{nowMs, startedMs, budgetMs, deadlineMs?}`, host monotonic ms.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreDeadlineRequest {
    /// Now.
    pub now_ms: u64,
    /// When the store operation started.
    pub started_ms: u64,
    /// The operation's budget.
    pub budget_ms: u64,
    /// The caller's own deadline (a held lease's), if it has one.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// `{remainingMs}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Remaining {
    /// How long the next git process may run (0: stop now).
    pub remaining_ms: u64,
}

/// `git-clone-name`: `{remote, host, pid, start?, random}` (see [`crate::gitclone::clone_name`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloneNameRequest {
    /// The store's remote.
    pub remote: String,
    /// This machine's name.
    pub host: String,
    /// This process's pid.
    pub pid: u32,
    /// This process's start time (`/proc/self/stat` field 22), if the host has one.
    #[serde(default)]
    pub start: Option<String>,
    /// Random hex from the host.
    pub random: String,
}

/// `{name}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Name {
    /// The name.
    pub name: String,
}

/// `git-stale-clones`: `{names, host, processes?}` (see [`crate::gitclone::stale`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaleClonesRequest {
    /// The entries of the temp directory.
    pub names: Vec<String>,
    /// This machine's name.
    pub host: String,
    /// Pid (decimal) -> its current start time, `null` when gone or a zombie; none on the first call.
    #[serde(default)]
    pub processes: Option<BTreeMap<String, Option<String>>>,
}

/// `git-push-outcome`: `{exitCode, stderr}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushOutcomeRequest {
    /// git's exit code.
    pub exit_code: i32,
    /// git's stderr.
    pub stderr: String,
}

/// `{outcome, detail}`: what a git push meant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PushClassified {
    /// What it meant.
    pub outcome: PushOutcome,
    /// The remote's own words (redacted, at most 300 characters).
    pub detail: String,
}

/// What a git push with `exit_code` and `stderr` meant (see [`crate::gitstore::classify_push`]).
pub fn git_push_outcome(exit_code: i32, stderr: &str) -> PushClassified {
    let (outcome, detail) = crate::gitstore::classify_push(exit_code, stderr);
    PushClassified { outcome, detail: crate::gitstore::redact(&detail) }
}

/// `git-retry`: `{read?, what, ref, remote, outcome, detail, attempts, rejections, elapsedMs, budgetMs,
/// random}` (`outcome` may also be `timeout`: git was killed at the deadline).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryRequest {
    /// A fetch or ls-remote rather than a push (default false).
    #[serde(default)]
    pub read: bool,
    /// What was written or read, for messages (`the lock`).
    pub what: String,
    /// The ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The remote (redacted in messages).
    pub remote: String,
    /// What the last attempt meant.
    pub outcome: PushOutcome,
    /// Its detail.
    #[serde(default)]
    pub detail: String,
    /// The attempts so far.
    pub attempts: u32,
    /// The rejections so far.
    #[serde(default)]
    pub rejections: u32,
    /// Since the operation started.
    pub elapsed_ms: u64,
    /// The operation's budget.
    pub budget_ms: u64,
    /// In `[0, 1)`, from the host.
    pub random: f64,
}

/// Whether and when to retry (see [`crate::gitstore::retry`]).
pub fn git_retry(r: &RetryRequest) -> Result<crate::gitstore::RetryDecision, CoreError> {
    crate::gitstore::retry(
        r.read,
        &r.what,
        &r.reference,
        &r.remote,
        r.outcome,
        &r.detail,
        r.attempts,
        r.rejections,
        r.elapsed_ms,
        r.budget_ms,
        r.random,
    )
}

/// `git-readme`: `{parentObject?, env?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadmeRequest {
    /// The cell is a parent object's lock cell.
    #[serde(default)]
    pub parent_object: bool,
    /// The environment of the cell (`_claims` cells get their own README); overrides `parentObject`.
    #[serde(default)]
    pub env: Option<String>,
}

/// The README committed at the root of each cell ref.
pub fn git_readme(r: &ReadmeRequest) -> &'static str {
    match &r.env {
        Some(env) => crate::gitstore::readme_for(env),
        None => crate::gitstore::readme(r.parent_object),
    }
}

/// `git-commit`: `{env, scope, dir, tip?, changes, oldLock?, seed?}` (see [`crate::gitstream::commit`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitCommitRequest {
    /// The cell's environment.
    pub env: String,
    /// The cell's scope.
    pub scope: String,
    /// The cell's directory in the ref's tree.
    pub dir: String,
    /// The commit to build on; none for a new cell ref.
    #[serde(default)]
    pub tip: Option<String>,
    /// The change set.
    pub changes: Vec<Change>,
    /// The cell's `lock.json` text before the change.
    #[serde(default)]
    pub old_lock: Option<String>,
    /// Files a new cell ref starts with (the legacy branch's).
    #[serde(default)]
    pub seed: Vec<SeedFile>,
}

/// A seed file of `git-commit`: its path in the ref's tree and its text.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedFile {
    /// The path in the ref's tree.
    pub path: String,
    /// The text.
    pub text: String,
}

/// The commit of a change set as a `git fast-import` stream.
pub fn git_commit(r: &GitCommitRequest) -> Result<crate::gitstream::CommitStream, CoreError> {
    let seed: Vec<(String, String)> = r.seed.iter().map(|f| (f.path.clone(), f.text.clone())).collect();
    crate::gitstream::commit(&r.env, &r.scope, &r.dir, r.tip.as_deref(), &r.changes, r.old_lock.as_deref(), &seed)
}

/// `git-cat-parse`: `{output, count}`: `git cat-file --batch` output as Latin-1 text.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatParseRequest {
    /// The output, one character per byte.
    pub output: String,
    /// How many objects were asked for.
    pub count: usize,
}

/// `{objects}`: one entry per request, the blob's text or `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatObjects {
    /// The blobs' texts.
    pub objects: Vec<Option<String>>,
}
