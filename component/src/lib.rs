//! The baton core as a WebAssembly component (`wit/`, world `core`), with no imports.
//!
//! Type conversions only: every interface converts with [`convert`] (and its `wit_convert*` texts) and calls
//! the core's typed functions; no export takes JSON request text.

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

use baton_core::ErrorCode as Code;
use convert::code;
use exports::baton::core::decisions::Guest;
use exports::baton::core::types::{Cell, Error, ErrorInfo};
use exports::baton::core::{leases, locks as wlocks, runs};

struct Component;

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
}

export!(Component);
