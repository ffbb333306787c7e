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
mod ownership;
mod run;
mod stores;

use baton_core::{CoreError, ErrorCode as Code, api};
use convert::code;
use exports::baton::core::decisions::Guest;
use exports::baton::core::types::{Cell, Error, ErrorInfo};
use exports::baton::core::{leases, locks as wlocks, runs};

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

impl runs::Guest for Component {
    type Run = run::Run;
}

impl Guest for Component {
    fn scope_for(branch: String, pr: Option<u64>, default_branch: Option<String>) -> String {
        baton_core::scope::scope_for(&branch, pr, default_branch.as_deref())
    }
    fn run_begin(request: String) -> Result<String, Error> {
        call("run-begin", request)
    }
    fn run_finish(request: String) -> Result<String, Error> {
        call("run-finish", request)
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
    fn claim_move(request: String) -> Result<String, Error> {
        call("claim-move", request)
    }
    fn cell_steps(request: String) -> Result<String, Error> {
        call("cell-steps", request)
    }
}

export!(Component);
