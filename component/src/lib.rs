//! The baton core as a WebAssembly component (`wit/baton.wit`, world `core`), with no imports.
//!
//! Type conversions only: every function forwards to [`baton_core::api::invoke`].

// The generated bindings declare the canonical-ABI exports, which needs `unsafe` and `export_name`.
#![allow(missing_docs, unreachable_pub, unsafe_code)]

wit_bindgen::generate!({ world: "core", path: "../wit" });

use baton_core::{CoreError, ErrorCode as Code, api};
use exports::baton::core::decisions::{Error, ErrorCode, ErrorInfo, Guest};

struct Component;

fn code(c: Code) -> ErrorCode {
    match c {
        Code::LockHeld => ErrorCode::LockHeld,
        Code::LockLost => ErrorCode::LockLost,
        Code::LockCorrupt => ErrorCode::LockCorrupt,
        Code::OwnedByOtherScope => ErrorCode::OwnedByOtherScope,
        Code::EnvNotApproved => ErrorCode::EnvNotApproved,
        Code::CtxNull => ErrorCode::CtxNull,
        Code::Usage => ErrorCode::Usage,
        Code::StoreContended => ErrorCode::StoreContended,
        Code::StoreRejected => ErrorCode::StoreRejected,
        Code::StorePermission => ErrorCode::StorePermission,
        Code::ReceiptCorrupt => ErrorCode::ReceiptCorrupt,
        Code::ReceiptVersion => ErrorCode::ReceiptVersion,
        Code::IntentUnresolved => ErrorCode::IntentUnresolved,
        Code::Internal => ErrorCode::Internal,
    }
}

fn error(e: CoreError) -> Error {
    Error { code: code(e.code), json: e.to_json().to_string(), message: e.message }
}

fn call(op: &str, request: String) -> Result<String, Error> {
    api::invoke(op, &request).map_err(error)
}

impl Guest for Component {
    fn scope_for(branch: String, pr: Option<u64>, default_branch: Option<String>) -> String {
        baton_core::scope::scope_for(&branch, pr, default_branch.as_deref())
    }
    fn store_spec(request: String) -> Result<String, Error> {
        call("store-spec", request)
    }
    fn cell_path(request: String) -> Result<String, Error> {
        call("cell-path", request)
    }
    fn detect_context(request: String) -> Result<String, Error> {
        call("detect-context", request)
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
    fn fence_check(request: String) -> Result<String, Error> {
        call("fence-check", request)
    }
    fn render(request: String) -> Result<String, Error> {
        call("render", request)
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
