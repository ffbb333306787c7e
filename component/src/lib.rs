//! The baton core as a WebAssembly component (`wit/`, world `core`), with no imports.
//!
//! Type conversions only: the typed interfaces (`locks`, `leases`, `stores`, `etcd`, `commands`) convert with [`convert`]
//! and call the core's typed functions; the JSON ones of `decisions` forward to [`baton_core::api::invoke`].

// The generated bindings declare the canonical-ABI exports, which needs `unsafe` and `export_name`.
#![allow(missing_docs, unreachable_pub, unsafe_code)]
// The generated traits fix every export's error type (the WIT `error` record, with its typed facts).
#![allow(clippy::result_large_err)]

wit_bindgen::generate!({ world: "core", path: "../wit" });

mod commands;
mod convert;
mod etcd;
mod locks;
mod stores;

use baton_core::run::json as run_json;
use baton_core::{CoreError, ErrorCode as Code, api};
use convert::code;
use exports::baton::core::decisions::{Guest, GuestRun, Run as RunHandle};
use exports::baton::core::types::{Cell, Error, ErrorInfo};
use exports::baton::core::{leases, locks as wlocks};
use std::cell::RefCell;

struct Component;

fn error(e: CoreError) -> Error {
    convert::error(e)
}

fn call(op: &str, request: String) -> Result<String, Error> {
    api::invoke(op, &request).map_err(error)
}

impl wlocks::Guest for Component {
    fn apply(cell: Cell, now_ms: i64, op: wlocks::LockOp) -> Result<wlocks::LockAnswer, Error> {
        locks::apply(cell, now_ms, op)
    }
}

impl leases::Guest for Component {
    type Lease = locks::Lease;
}

/// The `run` resource: a core run machine behind a `RefCell`.
struct Run(RefCell<baton_core::run::RunMachine>);

impl GuestRun for Run {
    fn create(config: String) -> Result<RunHandle, Error> {
        run_json::run_new(&config).map(|m| RunHandle::new(Self(RefCell::new(m)))).map_err(error)
    }
    fn holder(&self) -> String {
        self.0.borrow().holder().to_owned()
    }
    fn env(&self) -> String {
        self.0.borrow().env().to_owned()
    }
    fn scope(&self) -> String {
        self.0.borrow().scope().to_owned()
    }
    fn start(&self, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().start(now_ms).map_err(error)
    }
    fn work_ended(&self, end: String, now_ms: u64) -> Result<(), Error> {
        run_json::run_work_ended(&mut self.0.borrow_mut(), &end, now_ms).map_err(error)
    }
    fn signal(&self, signal: String, now_ms: u64) -> Result<(), Error> {
        run_json::run_signal(&mut self.0.borrow_mut(), &signal, now_ms).map_err(error)
    }
    fn finish(&self, succeeded: bool, now_ms: u64) -> Result<(), Error> {
        self.0.borrow_mut().finish(succeeded, now_ms).map_err(error)
    }
    fn release(&self, now_ms: u64) {
        self.0.borrow_mut().release(now_ms);
    }
    fn handle_timeout(&self, now_ms: u64) {
        self.0.borrow_mut().handle_timeout(now_ms);
    }
    fn handle_store_result(&self, id: u64, outcome: String, now_ms: u64) -> Result<(), Error> {
        run_json::run_store_result(&mut self.0.borrow_mut(), id, &outcome, now_ms).map_err(error)
    }
    fn poll_action(&self) -> Option<String> {
        run_json::run_poll_action(&mut self.0.borrow_mut())
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.0.borrow().poll_timeout()
    }
    fn fencing_token(&self, now_ms: u64) -> Option<u64> {
        self.0.borrow().fencing_token(now_ms)
    }
    fn is_finished(&self) -> bool {
        self.0.borrow().is_finished()
    }
    fn store_deadline(&self, now_ms: u64) -> u64 {
        self.0.borrow().store_deadline(now_ms)
    }
}

impl Guest for Component {
    type Run = Run;

    fn scope_for(branch: String, pr: Option<u64>, default_branch: Option<String>) -> String {
        baton_core::scope::scope_for(&branch, pr, default_branch.as_deref())
    }
    fn lock_acquire(request: String) -> Result<String, Error> {
        call("lock-acquire", request)
    }
    fn lock_renew(request: String) -> Result<String, Error> {
        call("lock-renew", request)
    }
    fn lock_release(request: String) -> Result<String, Error> {
        call("lock-release", request)
    }
    fn lock_read(request: String) -> Result<String, Error> {
        call("lock-read", request)
    }
    fn lock_break(request: String) -> Result<String, Error> {
        call("lock-break", request)
    }
    fn run_begin(request: String) -> Result<String, Error> {
        call("run-begin", request)
    }
    fn run_finish(request: String) -> Result<String, Error> {
        call("run-finish", request)
    }
    fn ledger_intend(request: String) -> Result<String, Error> {
        call("ledger-intend", request)
    }
    fn ledger_record(request: String) -> Result<String, Error> {
        call("ledger-record", request)
    }
    fn ledger_forget(request: String) -> Result<String, Error> {
        call("ledger-forget", request)
    }
    fn ledger_check(request: String) -> Result<String, Error> {
        call("ledger-check", request)
    }
    fn handover(request: String) -> Result<String, Error> {
        call("handover", request)
    }
    fn destroy_plan(request: String) -> Result<String, Error> {
        call("destroy-plan", request)
    }
    fn error_codes() -> Vec<ErrorInfo> {
        Code::ALL
            .into_iter()
            .map(|c| ErrorInfo {
                code: code(c),
                name: c.as_str().into(),
                exit: c.exit_code(),
                hint: c.hint().map(Into::into),
            })
            .collect()
    }
    fn cell_files() -> Vec<String> {
        baton_core::cell::STATE_FILES.iter().map(|f| (*f).to_owned()).collect()
    }
    fn claim_cell(request: String) -> Result<String, Error> {
        call("claim-cell", request)
    }
    fn claim_take(request: String) -> Result<String, Error> {
        call("claim-take", request)
    }
    fn claim_facts(request: String) -> Result<String, Error> {
        call("claim-facts", request)
    }
    fn claim_free(request: String) -> Result<String, Error> {
        call("claim-free", request)
    }
    fn claim_move(request: String) -> Result<String, Error> {
        call("claim-move", request)
    }
    fn cell_steps(request: String) -> Result<String, Error> {
        call("cell-steps", request)
    }
}

export!(Component);
