//! The typed `stores` interface of the core component (`wit/stores.wit`): the store building blocks the
//! CLI's stores and commands call. Each method returns the component's answer in its generated WIT type;
//! a refusal is a [`HostError`] with the core's code and details.

use super::bindings::exports::baton::core::stores as ws;
use super::bindings::exports::baton::core::types::{Cell, CellFile, Change, Error, ErrorCode};
use super::{CoreComponent, from_wit, wasm_error};
use crate::error::HostError;
use serde_json::Value;

impl CoreComponent {
    /// Where the cell (`env`, `scope`) lives in a dir store and a git store; `USAGE` for a bad name.
    pub fn cell_path(&mut self, env: &str, scope: &str) -> Result<ws::CellLocation, HostError> {
        let s = self.core.baton_core_stores();
        s.call_cell_path(&mut self.store, env, scope).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The scope each directory (or ref segment) of an environment stands for (none: not a scope).
    pub fn scope_names(&mut self, dirs: &[String]) -> Result<Vec<Option<String>>, HostError> {
        self.core.baton_core_stores().call_scope_names(&mut self.store, dirs).map_err(wasm_error)
    }

    /// Where a store lists the cells of `env`, and which of `names` are cells; `USAGE` for a bad env.
    pub fn list_cells(
        &mut self,
        env: &str,
        spelling: ws::Spelling,
        names: &[String],
    ) -> Result<ws::Listing, HostError> {
        let s = self.core.baton_core_stores();
        s.call_list_cells(&mut self.store, env, spelling, names).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The text of `file` in the snapshot `cell` (none when absent).
    pub fn cell_file(&mut self, cell: &Cell, file: &str) -> Result<Option<String>, HostError> {
        self.core.baton_core_stores().call_cell_file(&mut self.store, cell, file).map_err(wasm_error)
    }

    /// `text` without credentials embedded in URLs.
    pub fn redact(&mut self, text: &str) -> Result<String, HostError> {
        self.core.baton_core_stores().call_redact(&mut self.store, text).map_err(wasm_error)
    }

    /// What a failed file operation of a store means (code and message).
    pub fn io_error(&mut self, errno: Option<&str>, what: &str, detail: &str) -> Result<ws::IoFailure, HostError> {
        self.core.baton_core_stores().call_io_error(&mut self.store, errno, what, detail).map_err(wasm_error)
    }

    /// The variables removed from and set in the environment of every store git.
    pub fn git_env(&mut self) -> Result<ws::GitEnvironment, HostError> {
        self.core.baton_core_stores().call_git_env(&mut self.store).map_err(wasm_error)
    }

    /// How long the next git process of a store operation may run (ms from `now_ms`; 0: stop now).
    pub fn store_deadline(
        &mut self,
        now_ms: u64,
        started_ms: u64,
        budget_ms: u64,
        deadline_ms: Option<u64>,
    ) -> Result<u64, HostError> {
        let s = self.core.baton_core_stores();
        s.call_store_deadline(&mut self.store, now_ms, started_ms, budget_ms, deadline_ms).map_err(wasm_error)
    }

    /// The directory name of a new private clone of a git store.
    pub fn git_clone_name(&mut self, request: &ws::CloneNameRequest) -> Result<String, HostError> {
        self.core.baton_core_stores().call_git_clone_name(&mut self.store, request).map_err(wasm_error)
    }

    /// Which private clones of this host belong to processes that are gone (first call without
    /// `processes`: the pids to look up).
    pub fn git_stale_clones(
        &mut self,
        names: &[String],
        host: &str,
        processes: Option<&[ws::ProcessFact]>,
    ) -> Result<ws::StaleClones, HostError> {
        let s = self.core.baton_core_stores();
        s.call_git_stale_clones(&mut self.store, names, host, processes).map_err(wasm_error)
    }

    /// What a git push with `exit_code` and `stderr` meant.
    pub fn git_push_outcome(&mut self, exit_code: i32, stderr: &str) -> Result<ws::PushClassified, HostError> {
        self.core.baton_core_stores().call_git_push_outcome(&mut self.store, exit_code, stderr).map_err(wasm_error)
    }

    /// Whether and when to retry a failed git store attempt; the giving-up error otherwise.
    pub fn git_retry(&mut self, request: &ws::RetryRequest) -> Result<ws::RetryDecision, HostError> {
        let s = self.core.baton_core_stores();
        s.call_git_retry(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The README of a cell ref.
    pub fn git_readme(&mut self, parent_object: bool, env: Option<&str>) -> Result<String, HostError> {
        self.core.baton_core_stores().call_git_readme(&mut self.store, parent_object, env).map_err(wasm_error)
    }

    /// The commit of a change set as a `git fast-import` stream.
    pub fn git_commit(&mut self, request: &ws::CommitRequest) -> Result<ws::CommitStream, HostError> {
        let s = self.core.baton_core_stores();
        s.call_git_commit(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// `git cat-file --batch` output (Latin-1 text) for `count` requests, parsed.
    pub fn git_cat_parse(&mut self, output: &str, count: u32) -> Result<Vec<Option<String>>, HostError> {
        let s = self.core.baton_core_stores();
        s.call_git_cat_parse(&mut self.store, output, count).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The content a host writes into a dir store cell mutex it takes.
    pub fn mutex_content(&mut self, owner: &ws::MutexOwner) -> Result<ws::MutexLine, HostError> {
        let s = self.core.baton_core_stores();
        s.call_mutex_content(&mut self.store, owner).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The verdict on a dir store mutex in the way, from the facts about its owner.
    pub fn mutex_verdict(
        &mut self,
        content: &str,
        host: &str,
        proc: bool,
        owner: Option<&ws::OwnerFacts>,
    ) -> Result<ws::MutexJudgement, HostError> {
        let s = self.core.baton_core_stores();
        s.call_mutex_verdict(&mut self.store, content, host, proc, owner).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Which scopes `baton gc` collects; `USAGE` for open pull requests it cannot read.
    pub fn gc_plan(&mut self, request: &ws::GcRequest) -> Result<ws::GcVerdicts, HostError> {
        let s = self.core.baton_core_stores();
        s.call_gc_plan(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// How `gc --destroy` ended, from each destroy's end in order.
    pub fn gc_outcome(&mut self, results: &[ws::DestroyResult]) -> Result<ws::GcSummary, HostError> {
        self.core.baton_core_stores().call_gc_outcome(&mut self.store, results).map_err(wasm_error)
    }

    /// The envelope and exit code of `command`'s outcome.
    pub fn render(&mut self, command: Option<&str>, outcome: &ws::CommandOutcome) -> Result<ws::Rendered, HostError> {
        let s = self.core.baton_core_stores();
        s.call_render(&mut self.store, command, outcome).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Detects the context of a command (at most two calls: the second with git facts).
    pub fn detect_context(&mut self, request: &ws::ContextRequest) -> Result<ws::Detection, HostError> {
        let s = self.core.baton_core_stores();
        s.call_detect_context(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }
}

/// The JSON spelling of an error code (`LOCK_HELD`), as [`HostError::code`] carries it.
pub fn code_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::LockHeld => "LOCK_HELD",
        ErrorCode::LockLost => "LOCK_LOST",
        ErrorCode::LockCorrupt => "LOCK_CORRUPT",
        ErrorCode::OwnedByOtherScope => "OWNED_BY_OTHER_SCOPE",
        ErrorCode::EnvNotApproved => "ENV_NOT_APPROVED",
        ErrorCode::CtxNull => "CTX_NULL",
        ErrorCode::Usage => "USAGE",
        ErrorCode::StoreContended => "STORE_CONTENDED",
        ErrorCode::StoreRejected => "STORE_REJECTED",
        ErrorCode::StorePermission => "STORE_PERMISSION",
        ErrorCode::ReceiptCorrupt => "RECEIPT_CORRUPT",
        ErrorCode::ReceiptVersion => "RECEIPT_VERSION",
        ErrorCode::IntentUnresolved => "INTENT_UNRESOLVED",
        ErrorCode::CommandFailed => "COMMAND_FAILED",
        ErrorCode::Interrupted => "INTERRUPTED",
        ErrorCode::Internal => "INTERNAL",
        ErrorCode::RandomUnavailable => "RANDOM_UNAVAILABLE",
    }
}

/// A cell snapshot as the CLI's stores load it (`{env, scope, files: {name: content}, label?}`, the core's
/// JSON spelling of a cell) in the component's type. Fields that are missing or not text are left empty:
/// the stores build these values themselves.
pub fn cell_of(cell: &Value) -> Cell {
    let text = |k: &str| cell.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let files = cell.get("files").and_then(Value::as_object).map_or_else(Vec::new, |files| {
        files
            .iter()
            .filter_map(|(name, v)| v.as_str().map(|content| CellFile { name: name.clone(), content: content.into() }))
            .collect()
    });
    Cell {
        env: text("env"),
        scope: text("scope"),
        files,
        label: cell.get("label").and_then(Value::as_str).map(Into::into),
    }
}

/// A change of a core answer (`{op: write, file, content}` or `{op: delete, file}`, the core's JSON
/// spelling) in the component's type; `INTERNAL` for anything else (the core never answers one).
pub fn change_of(change: &Value) -> Result<Change, HostError> {
    let text = |k: &str| change.get(k).and_then(Value::as_str).map(str::to_owned);
    match (change.get("op").and_then(Value::as_str), text("file"), text("content")) {
        (Some("write"), Some(name), Some(content)) => Ok(Change::Write(CellFile { name, content })),
        (Some("delete"), Some(name), _) => Ok(Change::Delete(name)),
        _ => Err(HostError::internal(format!("the core answered a change that is not one: {change}"))),
    }
}

/// The code named `name` (`LOCK_HELD`); `internal` for a name that is not one of the core's codes.
pub fn code_of(name: &str) -> ErrorCode {
    const ALL: [ErrorCode; 17] = [
        ErrorCode::LockHeld,
        ErrorCode::LockLost,
        ErrorCode::LockCorrupt,
        ErrorCode::OwnedByOtherScope,
        ErrorCode::EnvNotApproved,
        ErrorCode::CtxNull,
        ErrorCode::Usage,
        ErrorCode::StoreContended,
        ErrorCode::StoreRejected,
        ErrorCode::StorePermission,
        ErrorCode::ReceiptCorrupt,
        ErrorCode::ReceiptVersion,
        ErrorCode::IntentUnresolved,
        ErrorCode::CommandFailed,
        ErrorCode::Interrupted,
        ErrorCode::Internal,
        ErrorCode::RandomUnavailable,
    ];
    ALL.into_iter().find(|c| code_name(*c) == name).unwrap_or(ErrorCode::Internal)
}

/// A host error as the component's error record, for the functions that take one (`gc-outcome`): the
/// code, the message, the text facts, and the whole error object in `json` (which the core reads).
pub fn wit_error(e: &HostError) -> Error {
    let text = |k: &str| e.details.get(k).and_then(Value::as_str).map(str::to_owned);
    Error {
        code: code_of(&e.code),
        message: e.message.clone(),
        hint: None,
        lock: None,
        current: None,
        holder: text("holder"),
        epoch: e.details.get("epoch").and_then(Value::as_u64),
        owner: text("owner"),
        environment: text("environment"),
        scope: text("scope"),
        json: e.to_json().to_string(),
    }
}
