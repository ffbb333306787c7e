//! The TypeScript declarations of what the core returns to JS (`host-node/types.d.ts`), generated from
//! the Rust types (`ts_rs::TS`, baton-core's `ts` feature). This test fails when the committed file is
//! stale; `BATON_WRITE_TYPES=1 cargo test -p baton-node --test ts_types` rewrites it.

use baton_core::cell::{Cell, Change};
use baton_core::lock::{Grant, LockRecord, LockView, Release};
use baton_core::typed::stores as st;
use baton_core::typed::{LeaseAction, LeaseEvent, LockAnswer, LockOp, StoreRequest};
use std::path::Path;
use ts_rs::TS;

/// The generated file: a header, the error types (the code union from the core's code list), then every
/// typed declaration, each exported.
fn declarations() -> String {
    // u64 fields are numbers in JS: the binding converts with serde-wasm-bindgen's json_compatible
    // serializer (integers as numbers, never BigInt).
    let cfg = ts_rs::Config::new().with_large_int("number");
    let mut out = String::from(
        "// Generated from the Rust types of baton-core by host-node/tests/ts_types.rs (ts-rs). Do not edit:\n\
         // BATON_WRITE_TYPES=1 cargo test -p baton-node --test ts_types\n\n",
    );
    let codes: Vec<String> = baton_core::error::error_codes().iter().map(|c| format!("{:?}", c.code)).collect();
    out.push_str(&format!("/** A stable error code. */\nexport type ErrorCode = {};\n\n", codes.join(" | ")));
    out.push_str(
        "/** A refusal or failure of the core, as its JSON: the code, what happened and what to do, and the\n \
         * details of the failure beside them. */\n\
         export type CoreError = { code: ErrorCode; message: string; hint?: string; [detail: string]: unknown };\n",
    );
    for decl in [
        serde_json::Value::decl(&cfg),
        Cell::decl(&cfg),
        Change::decl(&cfg),
        LockRecord::decl(&cfg),
        LockView::decl(&cfg),
        Grant::decl(&cfg),
        Release::decl(&cfg),
        LockOp::decl(&cfg),
        LockAnswer::decl(&cfg),
        StoreRequest::decl(&cfg),
        LeaseEvent::decl(&cfg),
        LeaseAction::decl(&cfg),
        // The store building blocks' answers (the JS stores read them).
        st::CellPath::decl(&cfg),
        st::ScopeNames::decl(&cfg),
        st::Text::decl(&cfg),
        st::IoFailure::decl(&cfg),
        st::GitEnv::decl(&cfg),
        st::Remaining::decl(&cfg),
        st::Name::decl(&cfg),
        st::CatObjects::decl(&cfg),
    ] {
        out.push_str(&format!("\nexport {decl}\n"));
    }
    out
}

#[test]
fn types_d_ts_is_generated_from_the_rust_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("types.d.ts");
    let want = declarations();
    if std::env::var_os("BATON_WRITE_TYPES").is_some() {
        std::fs::write(&path, &want).expect("types.d.ts is writable");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "host-node/types.d.ts is stale (the Rust types changed): run `BATON_WRITE_TYPES=1 cargo test -p baton-node \
         --test ts_types` and commit it"
    );
}
