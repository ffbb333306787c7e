//! The conformance corpus's steps of the `commands` operations (and of the fence check and the fenced
//! write, which the component exports as `locks.apply` ops), through the component's typed interfaces: the
//! step's JSON request is read as the core's request type, converted to the WIT types with the shared
//! converters (`component/src/wit_convert_commands.rs`), passed to the CLI's typed engine method, and the
//! WIT answer converted back to the core's answer type and printed as JSON. So the transcript compares the
//! typed path against the native core's JSON; a request the core's type refuses is `INTERNAL`, as the JSON
//! operation answers it.

use crate::convert;
use baton_core::cell::Cell;
use baton_core::command_line::CommandLineRequest;
use baton_core::stores::spec::StoreSpecRequest;
use baton_core::time::UnixMs;
use baton_core::typed::commands as tc;
use baton_core::typed::{LockAnswer, LockOp};
use baton_native::engine::CoreComponent;
use baton_native::error::HostError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

type Answer = Result<String, HostError>;

/// The operations of `api::OPS` that the component exports typed from `commands`, and the two lock ops
/// that left `decisions` for `locks.apply`.
#[allow(dead_code)] // the boundary test uses it, the conformance test does not
pub(crate) const OPS: [&str; 9] = [
    "store-spec",
    "command-line",
    "succession",
    "parent-cell",
    "approval",
    "scope-status",
    "receipt-parse",
    "fence-check",
    "fenced-write",
];

/// `fence-check` (`{cell, holder, epoch, nowMs?}`) and `fenced-write` (with `file`, `content`) as
/// `api::invoke` reads them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FenceRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    now_ms: Option<UnixMs>,
}

fn parse<T: DeserializeOwned>(input: &str) -> Result<T, HostError> {
    serde_json::from_str(input).map_err(|e| HostError::internal(format!("invalid request: {e}")))
}

fn print<T: Serialize>(answer: Result<T, HostError>) -> Answer {
    serde_json::to_string(&answer?).map_err(|e| HostError::internal(e.to_string()))
}

/// The component's error record as the host error it stands for (its `json`, every fact).
fn host_error(e: baton_native::engine::wit::types::Error) -> HostError {
    match convert::error_back(e).to_json() {
        serde_json::Value::Object(obj) => HostError::from_json(obj),
        other => HostError::internal(other.to_string()),
    }
}

/// A fence check or a fenced write through `locks.apply`, answered as the JSON operation answers it.
fn lock(core: &mut CoreComponent, op: &str, input: &str) -> Answer {
    let r: FenceRequest = parse(input)?;
    let lock_op = match (op, r.file, r.content) {
        ("fence-check", None, None) => LockOp::FenceCheck { holder: r.holder, epoch: r.epoch },
        ("fenced-write", Some(file), Some(content)) => {
            LockOp::FencedWrite { holder: r.holder, epoch: r.epoch, file, content }
        }
        _ => return Err(HostError::internal("invalid request")),
    };
    let cell = convert::cell_out(r.cell);
    let answer = core.lock_apply(&cell, r.now_ms.unwrap_or(0), &convert::lock_op_out(lock_op))?;
    print(answer.map_err(host_error).map(convert::lock_answer_back).map(|a| match a {
        LockAnswer::Fence { lock } => serde_json::json!({ "lock": lock }),
        other => serde_json::to_value(other).unwrap_or_default(),
    }))
}

/// The answer of `commands` operation `op` to the JSON `input` (the JSON text, or the error code), or
/// `None` for an operation of another interface.
pub(crate) fn call(core: &mut CoreComponent, op: &str, input: &str) -> Option<Result<String, String>> {
    answer(core, op, input).map(|a| a.map_err(|e| e.code))
}

/// [`call`] with the whole error.
pub(crate) fn answer(core: &mut CoreComponent, op: &str, input: &str) -> Option<Answer> {
    Some(match op {
        "store-spec" => parse(input).and_then(|r: StoreSpecRequest| {
            print(core.store_spec(&convert::store_request_out(r)).map(convert::store_choice_back))
        }),
        "command-line" => parse(input).and_then(|r: CommandLineRequest| {
            let vars = convert::variables_out(r.vars);
            print(core.command_line(&r.command, &r.argv, &vars).map(convert::command_line_answer_back))
        }),
        "succession" => parse(input).and_then(|r: tc::SuccessionRequest| {
            let answer = core.succession(&r.scope, r.branch.as_deref(), r.pr, r.ttl_ms);
            print(answer.map(convert::inheritance_back))
        }),
        "parent-cell" => parse(input).and_then(|r: tc::ParentCellRequest| {
            print(core.parent_cell(&r.identity, &r.secrets).map(convert::parent_object_cell_back))
        }),
        "approval" => parse(input).and_then(|r: tc::ApprovalRequest| {
            print(core.approval(&r.env, r.approved_by.as_deref()).map(convert::approval_verdict_back))
        }),
        "scope-status" => parse(input).and_then(|r: tc::StatusRequest| {
            let others = convert::other_scopes_out(r.others);
            let report = core.scope_status(&convert::cell_out(r.cell), r.now_ms, &others, r.predecessor.as_deref());
            print(report.map(convert::scope_report_back))
        }),
        "receipt-parse" => parse(input).and_then(|r: tc::ReceiptParseRequest| {
            let receipt = core.receipt_parse(&r.text, &r.place).and_then(|text| {
                serde_json::from_str::<serde_json::Value>(&text).map_err(|e| HostError::internal(e.to_string()))
            });
            print(receipt.map(|receipt| serde_json::json!({ "receipt": receipt })))
        }),
        "fence-check" | "fenced-write" => lock(core, op, input),
        // `decisions`: the scope of a branch, the error codes, the cell files (typed, no request text).
        "scope-for" => parse(input).and_then(|r: baton_core::api::ScopeForRequest| {
            let scope = core.scope_for(&r.branch, r.pr, r.default_branch.as_deref());
            print(scope.map(|scope| serde_json::json!({ "scope": scope })))
        }),
        "error-codes" => print(core.error_codes().map(|codes| {
            let list = codes.into_iter().map(|c| serde_json::json!({ "code": c.name, "exit": c.exit, "hint": c.hint }));
            serde_json::Value::Array(list.collect())
        })),
        "cell-files" => print(core.cell_files()),
        _ => return None,
    })
}
