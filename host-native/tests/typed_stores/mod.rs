//! The conformance corpus's steps of the `stores` operations, through the component's typed interface: the
//! step's JSON request is read as the core's request type, converted to the WIT types with the shared
//! converters (`component/src/wit_convert_stores.rs`), passed to the CLI's typed engine method, and the WIT
//! answer converted back to the core's answer type and printed as JSON. So the transcript compares the typed
//! path against the native core's JSON byte for byte; a request the core's type refuses is `INTERNAL`, as
//! the JSON operation answers it.

use crate::convert;
use baton_core::typed::stores as st;
use baton_core::{gc, mutex};
use baton_native::engine::CoreComponent;
use baton_native::error::HostError;
use serde::Serialize;
use serde::de::DeserializeOwned;

type Answer = Result<String, HostError>;

/// The operations of `api::OPS` that the component exports typed from `stores`.
#[allow(dead_code)] // the boundary test uses it, the conformance test does not
pub(crate) const OPS: [&str; 21] = [
    "cell-path",
    "scope-names",
    "list-cells",
    "cell-file",
    "redact",
    "io-error",
    "git-env",
    "store-deadline",
    "git-clone-name",
    "git-stale-clones",
    "git-push-outcome",
    "git-retry",
    "git-readme",
    "git-commit",
    "git-cat-parse",
    "mutex-content",
    "mutex-verdict",
    "gc-plan",
    "gc-outcome",
    "render",
    "detect-context",
];

fn parse<T: DeserializeOwned>(input: &str) -> Result<T, HostError> {
    serde_json::from_str(input).map_err(|e| HostError::internal(format!("invalid request: {e}")))
}

fn print<T: Serialize>(answer: Result<T, HostError>) -> Answer {
    serde_json::to_string(&answer?).map_err(|e| HostError::internal(e.to_string()))
}

/// The answer of `stores` operation `op` to the JSON `input` (the JSON text, or the error code), or `None`
/// for an operation of another interface.
#[allow(dead_code)] // the store corpus takes the whole error (`answer`)
pub(crate) fn call(core: &mut CoreComponent, op: &str, input: &str) -> Option<Result<String, String>> {
    answer(core, op, input).map(|a| a.map_err(|e| e.code))
}

/// Core operations the component does not export as functions, so the component runners take them from
/// the native core (their corpus steps still run natively, and through the npm package's `api` operations):
/// - a ledger change with its claim is the `ownership.change` resource (`core/src/claims/machine.rs`), which
///   calls these very Rust functions (`core/src/claims/steps.rs`; `host-native/tests/ownership_component.rs`
///   drives it through the component);
/// - the run machine's receipt steps are decided inside `runs.run`'s `apply` (`core/src/run/`), which no host
///   calls one by one; `host-native/tests/run_journeys` drives them through the component's run resource, and
///   `boundary.rs` feeds that `apply` odd cells.
pub(crate) const NOT_COMPONENT_FUNCTIONS: [&str; 14] = [
    "claim-cell",
    "claim-take",
    "claim-facts",
    "claim-free",
    "ledger-intend",
    "ledger-record",
    "ledger-forget",
    "ledger-check",
    "run-begin",
    "run-finish",
    "handover",
    "destroy-plan",
    "claim-move",
    "cell-steps",
];

/// The native core's answer to `op`, for an operation in [`NOT_COMPONENT_FUNCTIONS`].
pub(crate) fn native(op: &str, input: &str) -> Answer {
    baton_core::api::invoke(op, input).map_err(|e| match e.to_json() {
        serde_json::Value::Object(obj) => HostError::from_json(obj),
        _ => HostError::internal(e.message),
    })
}

/// [`call`] with the whole error.
pub(crate) fn answer(core: &mut CoreComponent, op: &str, input: &str) -> Option<Answer> {
    if NOT_COMPONENT_FUNCTIONS.contains(&op) {
        return Some(native(op, input));
    }
    Some(match op {
        "cell-path" => parse(input).and_then(|r: st::CellPathRequest| {
            print(core.cell_path(&r.env, &r.scope).map(convert::cell_location_back))
        }),
        "scope-names" => parse(input).and_then(|r: st::ScopeNamesRequest| {
            print(core.scope_names(&r.dirs).map(|scopes| st::ScopeNames { scopes }))
        }),
        "list-cells" => parse(input).and_then(|r: st::ListCellsRequest| {
            print(core.list_cells(&r.env, convert::spelling_out(r.spelling), &r.names).map(convert::listing_back))
        }),
        "cell-file" => parse(input).and_then(|r: st::CellFileRequest| {
            print(core.cell_file(&convert::cell_out(r.cell), &r.file).map(|text| st::Text { text }))
        }),
        "redact" => parse(input)
            .and_then(|r: st::RedactRequest| print(core.redact(&r.text).map(|text| st::Text { text: Some(text) }))),
        "io-error" => parse(input).and_then(|r: st::IoErrorRequest| {
            print(core.io_error(r.errno.as_deref(), &r.what, &r.detail).map(convert::io_failure_back))
        }),
        "git-env" => print(core.git_env().map(convert::git_environment_back)),
        "store-deadline" => parse(input).and_then(|r: st::StoreDeadlineRequest| {
            let remaining = core.store_deadline(r.now_ms, r.started_ms, r.budget_ms, r.deadline_ms);
            print(remaining.map(|remaining_ms| st::Remaining { remaining_ms }))
        }),
        "git-clone-name" => parse(input).and_then(|r: st::CloneNameRequest| {
            print(core.git_clone_name(&convert::clone_name_request_out(r)).map(|name| st::Name { name }))
        }),
        "git-stale-clones" => parse(input).and_then(|r: st::StaleClonesRequest| {
            let processes = convert::processes_out(r.processes);
            print(core.git_stale_clones(&r.names, &r.host, processes.as_deref()).map(convert::stale_clones_back))
        }),
        "git-push-outcome" => parse(input).and_then(|r: st::PushOutcomeRequest| {
            print(core.git_push_outcome(r.exit_code, &r.stderr).map(convert::push_classified_back))
        }),
        "git-retry" => parse(input).and_then(|r: st::RetryRequest| {
            print(core.git_retry(&convert::retry_request_out(r)).map(convert::retry_decision_back))
        }),
        "git-readme" => parse(input).and_then(|r: st::ReadmeRequest| {
            print(core.git_readme(r.parent_object, r.env.as_deref()).map(|text| st::Text { text: Some(text) }))
        }),
        "git-commit" => parse(input).and_then(|r: st::GitCommitRequest| {
            print(core.git_commit(&convert::commit_request_out(r)).map(convert::commit_stream_back))
        }),
        "git-cat-parse" => parse(input).and_then(|r: st::CatParseRequest| {
            let count = u32::try_from(r.count).map_err(|_| HostError::internal("count"))?;
            print(core.git_cat_parse(&r.output, count).map(|objects| st::CatObjects { objects }))
        }),
        "mutex-content" => parse(input).and_then(|r: mutex::ContentRequest| {
            print(core.mutex_content(&convert::mutex_owner_out(r)).map(convert::mutex_line_back))
        }),
        "mutex-verdict" => parse(input).and_then(|r: mutex::VerdictRequest| {
            let owner = r.owner.map(convert::owner_facts_out);
            let verdict = core.mutex_verdict(&r.content, &r.host, r.proc, owner.as_ref());
            print(verdict.map(convert::mutex_judgement_back))
        }),
        "gc-plan" => parse(input).and_then(|r: gc::GcRequest| {
            print(core.gc_plan(&convert::gc_request_out(r)).map(convert::gc_verdicts_back))
        }),
        "gc-outcome" => parse(input).and_then(|r: gc::OutcomeRequest| {
            print(core.gc_outcome(&convert::destroy_results_out(r)).map(convert::gc_summary_back))
        }),
        "render" => parse(input).and_then(|r: baton_core::envelope::RenderInput| {
            let (command, outcome) = convert::render_input_out(r);
            print(core.render(command.as_deref(), &outcome).map(convert::rendered_back))
        }),
        "detect-context" => parse(input).and_then(|r: baton_core::context::ContextInput| {
            print(core.detect_context(&convert::context_request_out(r)).map(convert::detection_back))
        }),
        "lock-acquire" | "lock-renew" | "lock-release" | "lock-read" | "lock-break" => lock_step(core, op, input),
        _ => return None,
    })
}

/// A lock transaction through the typed `locks.apply`: the step's request (without `cell` and `nowMs`) read
/// as the core's `LockOp`, the answer printed as the core's `LockAnswer` (the JSON operation's spelling).
fn lock_step(core: &mut CoreComponent, op: &str, input: &str) -> Answer {
    let mut request: serde_json::Value = parse(input)?;
    let obj = request.as_object_mut().ok_or_else(|| HostError::internal("invalid request: not an object"))?;
    let cell: baton_core::cell::Cell = match obj.remove("cell") {
        Some(c) => serde_json::from_value(c).map_err(|e| HostError::internal(format!("invalid request: {e}")))?,
        None => return Err(HostError::internal("invalid request: missing field `cell`")),
    };
    let now = obj.remove("nowMs").and_then(|n| n.as_i64()).unwrap_or_default();
    let lock_op: baton_core::typed::LockOp = parse(&serde_json::json!({ "op": op, "request": request }).to_string())?;
    let answer = core.lock_apply(&convert::cell_out(cell), now, &convert::lock_op_out(lock_op))?;
    print(answer.map(convert::lock_answer_back).map_err(baton_native::engine::from_wit))
}
