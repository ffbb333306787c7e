//! The string-in, string-out surface every binding forwards to: one function per operation, each taking
//! its request as JSON text and returning its answer as JSON text.
//!
//! The WIT world and the npm module expose exactly these operations, so the three hosts decide with the
//! same code on the same bytes. The formats are documented on the request and answer types.

use crate::cell::{Cell, STATE_FILES};
use crate::claims;
use crate::context::{ContextInput, detect};
use crate::envelope::{RenderInput, render};
use crate::error::{CoreError, error_codes};
use crate::lock;
use crate::ownership;
use crate::scope::scope_for;
use crate::time::UnixMs;
use crate::typed::commands as tc;
use crate::typed::stores as st;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// Every operation [`invoke`] understands, in WIT order.
pub const OPS: [&str; 56] = [
    "scope-for",
    "store-spec",
    "cell-path",
    "scope-names",
    "detect-context",
    "lock-acquire",
    "lock-renew",
    "lock-release",
    "lock-read",
    "lock-break",
    "fence-check",
    "fenced-write",
    "succession",
    "parent-cell",
    "approval",
    "run-begin",
    "run-finish",
    "ledger-intend",
    "ledger-record",
    "ledger-forget",
    "ledger-check",
    "handover",
    "destroy-plan",
    "scope-status",
    "receipt-parse",
    "git-push-outcome",
    "git-retry",
    "git-readme",
    "redact",
    "render",
    "error-codes",
    "cell-files",
    "cell-file",
    "io-error",
    "list-cells",
    "git-env",
    "mutex-content",
    "mutex-verdict",
    "store-deadline",
    "git-clone-name",
    "git-stale-clones",
    "git-commit",
    "git-cat-parse",
    "claim-cell",
    "claim-take",
    "claim-facts",
    "claim-free",
    "claim-move",
    "command-line",
    "gc-plan",
    "gc-outcome",
    "etcd-keys",
    "etcd-txn",
    "etcd-list",
    "etcd-retry",
    "cell-steps",
];

/// Runs operation `op` on the JSON request `input` and returns the JSON answer.
///
/// A refusal (`LOCK_HELD`, ...) is an `Err` with its code; a request that does not parse is `INTERNAL`
/// (the host broke the contract). Never panics on any input.
pub fn invoke(op: &str, input: &str) -> Result<String, CoreError> {
    match op {
        "scope-for" => run(op, input, |r: ScopeForRequest| {
            Ok(json!({ "scope": scope_for(&r.branch, r.pr, r.default_branch.as_deref()) }))
        }),
        "store-spec" => run(op, input, |r: crate::stores::spec::StoreSpecRequest| crate::stores::spec::store_spec(&r)),
        "cell-path" => run(op, input, |r: st::CellPathRequest| st::cell_path(&r.env, &r.scope)),
        "scope-names" => run(op, input, |r: st::ScopeNamesRequest| Ok(st::scope_names(&r.dirs))),
        "detect-context" => run(op, input, |r: ContextInput| detect(&r)),
        "lock-acquire" => run(op, input, |r: AcquireRequest| {
            let cell = Cell { label: r.label.or(r.cell.label.clone()), ..r.cell };
            lock::acquire(&cell, &r.holder, r.ttl_ms, r.now_ms)
        }),
        "lock-renew" => run(op, input, |r: RenewRequest| lock::renew(&r.cell, &r.holder, r.epoch, r.ttl_ms, r.now_ms)),
        "lock-release" => run(op, input, |r: ReleaseRequest| Ok(lock::release(&r.cell, &r.holder, r.epoch))),
        "lock-read" => run(op, input, |r: ReadRequest| Ok(json!({ "lock": lock::read(&r.cell, r.now_ms)? }))),
        "lock-break" => {
            run(op, input, |r: BreakRequest| lock::break_lock(&r.cell, &r.holder, r.ttl_ms, r.now_ms, &r.reason))
        }
        "fence-check" => {
            run(op, input, |r: FenceRequest| Ok(json!({ "lock": lock::check_fence(&r.cell, &r.holder, r.epoch)? })))
        }
        "fenced-write" => {
            run(op, input, |r: FencedWriteRequest| lock::fenced_write(&r.cell, &r.holder, r.epoch, &r.file, &r.content))
        }
        "succession" => run(op, input, |r: tc::SuccessionRequest| Ok(tc::succession(&r))),
        "parent-cell" => run(op, input, |r: tc::ParentCellRequest| tc::parent_cell(&r)),
        "approval" => run(op, input, |r: tc::ApprovalRequest| ownership::approve(&r.env, r.approved_by.as_deref())),
        "run-begin" => run_written(op, input, |r: RunBeginRequest| {
            ownership::run_begin(
                &r.cell,
                &r.holder,
                r.epoch,
                r.now_ms,
                &r.context,
                &r.hash_key,
                r.lock_preempted.as_deref(),
                r.approved_by.as_deref(),
                r.destroy,
                r.predecessor.as_ref(),
            )
        }),
        "run-finish" => run_written(op, input, |r: RunFinishRequest| {
            ownership::run_finish(&r.cell, &r.holder, r.epoch, r.now_ms, r.succeeded, r.cancelled, r.sha.as_deref())
        }),
        "ledger-intend" => run_written(op, input, |r: LedgerRequest| {
            ownership::intend(&r.cell, &r.holder, r.epoch, r.now_ms, &r.resource)
        }),
        "ledger-record" => run_written(op, input, |r: LedgerRequest| {
            let id = r.id.as_deref().unwrap_or_default();
            ownership::record(&r.cell, &r.holder, r.epoch, r.now_ms, &r.resource, id, r.owned_marker.as_deref())
        }),
        "ledger-forget" => run_written(op, input, |r: LedgerRequest| {
            ownership::forget(&r.cell, &r.holder, r.epoch, r.now_ms, &r.resource)
        }),
        "ledger-check" => run(op, input, |r: CheckRequest| {
            let fence = r.holder.as_deref().zip(r.epoch);
            ownership::check(&r.cell, fence, r.now_ms, &r.resource, r.change, &r.others, r.predecessor.as_deref())
        }),
        "handover" => run_written(op, input, |r: HandoverRequest| {
            ownership::handover(&r.cell, &r.holder, r.epoch, r.now_ms, &r.successor, &r.successor_ledger)
        }),
        "destroy-plan" => {
            run_written(op, input, |r: FencedRequest| ownership::destroy_plan(&r.cell, &r.holder, r.epoch, r.now_ms))
        }
        "scope-status" => run(op, input, |r: tc::StatusRequest| {
            ownership::status(&r.cell, r.now_ms, &r.others, r.predecessor.as_deref())
        }),
        "receipt-parse" => run(op, input, |r: tc::ReceiptParseRequest| {
            let receipt = crate::receipt::parse_receipt(&r.text, &r.place)?;
            Ok(json!({ "receipt": receipt.to_value() }))
        }),
        "git-push-outcome" => {
            run(op, input, |r: st::PushOutcomeRequest| Ok(st::git_push_outcome(r.exit_code, &r.stderr)))
        }
        "git-retry" => run(op, input, |r: st::RetryRequest| st::git_retry(&r)),
        "git-readme" => {
            run(op, input, |r: st::ReadmeRequest| Ok(st::Text { text: Some(st::git_readme(&r).to_owned()) }))
        }
        "redact" => {
            run(op, input, |r: st::RedactRequest| Ok(st::Text { text: Some(crate::gitstore::redact(&r.text)) }))
        }
        "render" => run(op, input, |r: RenderInput| Ok(render(r))),
        "error-codes" => Ok(to_json(&error_codes())),
        "cell-files" => Ok(to_json(&STATE_FILES)),
        "cell-file" => {
            run(op, input, |r: st::CellFileRequest| Ok(st::Text { text: r.cell.file(&r.file).map(str::to_owned) }))
        }
        "io-error" => run(op, input, |r: st::IoErrorRequest| Ok(st::io_error(&r))),
        "list-cells" => run(op, input, |r: st::ListCellsRequest| st::list_cells(&r)),
        "git-env" => Ok(to_json(&st::git_env())),
        "mutex-content" => run(op, input, |r: crate::mutex::ContentRequest| crate::mutex::content(&r)),
        "mutex-verdict" => run(op, input, |r: crate::mutex::VerdictRequest| crate::mutex::verdict(&r)),
        "store-deadline" => run(op, input, |r: st::StoreDeadlineRequest| {
            let remaining_ms = crate::gitstore::remaining(r.now_ms, r.started_ms, r.budget_ms, r.deadline_ms);
            Ok(st::Remaining { remaining_ms })
        }),
        "git-clone-name" => run(op, input, |r: st::CloneNameRequest| {
            let name = crate::gitclone::clone_name(&r.remote, &r.host, r.pid, r.start.as_deref(), &r.random);
            Ok(st::Name { name })
        }),
        "git-commit" => run(op, input, |r: st::GitCommitRequest| st::git_commit(&r)),
        "git-cat-parse" => run(op, input, |r: st::CatParseRequest| {
            Ok(st::CatObjects { objects: crate::gitstream::parse_batch(&r.output, r.count)? })
        }),
        "git-stale-clones" => run(op, input, |r: st::StaleClonesRequest| {
            Ok(crate::gitclone::stale(&r.names, &r.host, r.processes.as_ref()))
        }),
        "claim-cell" => run(op, input, |r: ClaimCellRequest| {
            let (env, scope) = claims::claim_cell(&r.env, &r.resource.adapter, &r.resource.provider, &r.resource.key);
            Ok(json!({ "env": env, "scope": scope }))
        }),
        "claim-take" => run(op, input, |r: ClaimTakeRequest| claims::take(&r.cell, r.now_ms, &r.take)),
        "claim-facts" => run(op, input, |r: ClaimFactsRequest| {
            claims::facts(&r.cell, &r.resource, r.claim_epoch, r.pending.as_deref())
        }),
        "claim-free" => run(op, input, |r: ClaimFreeRequest| {
            claims::free(&r.cell, r.now_ms, &r.env, &r.scope, r.epoch, &r.resource, r.give_back)
        }),
        "claim-move" => run(op, input, |r: ClaimMoveRequest| {
            claims::moved(&r.cell, r.now_ms, &r.env, &r.from, &r.to, &r.holder, r.epoch, &r.resource)
        }),
        "command-line" => run(op, input, |r: crate::command_line::CommandLineRequest| crate::command_line::answer(&r)),
        "gc-plan" => run(op, input, |r: crate::gc::GcRequest| crate::gc::plan(&r)),
        "gc-outcome" => run(op, input, |r: crate::gc::OutcomeRequest| Ok(crate::gc::outcome(&r))),
        "etcd-keys" => {
            run(op, input, |r: EtcdKeysRequest| crate::stores::etcd::keys(&r.prefix, &r.env, r.scope.as_deref()))
        }
        "etcd-txn" => run(op, input, |r: EtcdTxnRequest| crate::stores::etcd::txn(&r.cell, &r.revisions, r.changes)),
        "etcd-list" => run(op, input, |r: EtcdListRequest| crate::stores::etcd::list(&r.env, &r.range, &r.kvs)),
        "etcd-retry" => run(op, input, |r: EtcdRetryRequest| {
            crate::stores::etcd::retry(
                &r.what,
                &r.endpoint,
                &r.endpoints,
                r.outcome,
                r.code,
                &r.detail,
                r.attempts,
                r.elapsed_ms,
                r.budget_ms,
                r.random,
            )
        }),
        "cell-steps" => run(op, input, |r| crate::cell_steps::run(r, invoke)),
        other => Err(CoreError::internal(format!("unknown operation `{other}`; known: {}", OPS.join(", ")))),
    }
}

/// [`crate::run::RunMachine::apply`] deciding with the core's operations: the changes of store or read
/// action `id` on `cell` (the snapshot the host loaded) at wall-clock `now_ms`.
pub fn run_apply(
    machine: &mut crate::run::RunMachine,
    id: u64,
    cell: &Cell,
    now_ms: UnixMs,
) -> Result<Vec<crate::cell::Change>, CoreError> {
    machine.apply(id, cell, now_ms, invoke)
}

/// Creates a lease machine from its JSON configuration (`LeaseConfig`); `USAGE` for bad timing, `INTERNAL`
/// for JSON that does not parse.
pub fn lease_new(config: &str) -> Result<crate::lease::LeaseMachine, CoreError> {
    let cfg =
        serde_json::from_str(config).map_err(|e| CoreError::internal(format!("invalid lease configuration: {e}")))?;
    crate::lease::LeaseMachine::new(cfg)
}

/// Feeds a store result given as JSON (`{"ok": answer}` or `{"error": {...}}`) to a lease machine.
pub fn lease_store_result(
    machine: &mut crate::lease::LeaseMachine,
    id: u64,
    result: &str,
    now: u64,
) -> Result<(), CoreError> {
    let result = serde_json::from_str(result).map_err(|e| CoreError::internal(format!("invalid store result: {e}")))?;
    machine.handle_store_result(id, lock_answer_checked(result), now)
}

/// [`lease_store_result`] with the result as a JSON value (a binding that converts objects, not text).
pub fn lease_store_value(
    machine: &mut crate::lease::LeaseMachine,
    id: u64,
    result: serde_json::Value,
    now: u64,
) -> Result<(), CoreError> {
    let result =
        serde_json::from_value(result).map_err(|e| CoreError::internal(format!("invalid store result: {e}")))?;
    machine.handle_store_result(id, lock_answer_checked(result), now)
}

/// `result` with an answer whose `lock` is not a lock record (the typed actions could not carry it) turned
/// into the `INTERNAL` failure it is: the machine then treats the outcome as unknown, as for any failure.
fn lock_answer_checked(result: crate::lease::StoreResult) -> crate::lease::StoreResult {
    use crate::lease::StoreResult;
    let StoreResult::Ok(answer) = &result else { return result };
    match answer.get("lock") {
        Some(lock) if !lock.is_null() => match serde_json::from_value::<crate::lock::LockRecord>(lock.clone()) {
            Ok(_) => result,
            Err(e) => StoreResult::from(&CoreError::internal(format!("the store's answer has no valid lock: {e}"))),
        },
        _ => result,
    }
}

/// The next action of a lease machine as JSON: the spelling of its typed form
/// ([`crate::typed::lease_poll_action`]), so every binding reports the same facts.
pub fn lease_poll_action(machine: &mut crate::lease::LeaseMachine) -> Option<String> {
    crate::typed::lease_poll_action(machine).map(|a| to_json(&a))
}

fn run<Req: DeserializeOwned, Ans: Serialize>(
    op: &str,
    input: &str,
    f: impl FnOnce(Req) -> Result<Ans, CoreError>,
) -> Result<String, CoreError> {
    let req = serde_json::from_str(input)
        .map_err(|e| CoreError::internal(format!("invalid request for `{op}`: {e}")).with("op", op))?;
    f(req).map(|a| to_json(&a))
}

/// [`run`] for the operations that answer a fenced write: the answer's text written directly
/// ([`ownership::Written::to_json_text`], the same bytes).
fn run_written<Req: DeserializeOwned>(
    op: &str,
    input: &str,
    f: impl FnOnce(Req) -> Result<ownership::Written, CoreError>,
) -> Result<String, CoreError> {
    let req = serde_json::from_str(input)
        .map_err(|e| CoreError::internal(format!("invalid request for `{op}`: {e}")).with("op", op))?;
    f(req).map(|w| w.to_json_text())
}

fn to_json<T: Serialize + ?Sized>(v: &T) -> String {
    // Serialising our own types (string keys, finite numbers) cannot fail.
    serde_json::to_string(v).unwrap_or_else(|e| format!("{{\"serializeError\":{:?}}}", e.to_string()))
}

/// `scope-for`: `{branch, pr?, defaultBranch?}` -> `{scope}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeForRequest {
    /// The branch of the run.
    pub branch: String,
    /// Its pull request, if any.
    #[serde(default)]
    pub pr: Option<u64>,
    /// The repository's default branch, when known.
    #[serde(default)]
    pub default_branch: Option<String>,
}

/// `lock-acquire`: `{cell, holder, ttlMs, nowMs}` -> `{changes, lock, preempted}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AcquireRequest {
    cell: Cell,
    holder: String,
    ttl_ms: u64,
    now_ms: UnixMs,
    /// How a refusal names the lock (`parent object <identity>`); default `env/scope`.
    #[serde(default)]
    label: Option<String>,
}

/// `lock-renew`: `{cell, holder, epoch, ttlMs, nowMs}` -> `{changes, lock, preempted: null}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RenewRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    ttl_ms: u64,
    now_ms: UnixMs,
}

/// `lock-release`: `{cell, holder, epoch?}` -> `{changes, released, current}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReleaseRequest {
    cell: Cell,
    holder: String,
    #[serde(default)]
    epoch: Option<u64>,
    /// Accepted (hosts add `nowMs` to every cell request) and not needed.
    #[serde(default, rename = "nowMs")]
    _now_ms: Option<UnixMs>,
}

/// `lock-read`: `{cell, nowMs}` -> `{lock: {..., expired} | null}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReadRequest {
    cell: Cell,
    now_ms: UnixMs,
}

/// `lock-break`: `{cell, holder, ttlMs, nowMs, reason}` -> `{changes, lock, preempted}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BreakRequest {
    cell: Cell,
    holder: String,
    ttl_ms: u64,
    now_ms: UnixMs,
    reason: String,
}

/// `fence-check`: `{cell, holder, epoch}` -> `{lock}` or `LOCK_LOST`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FenceRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    /// Accepted (hosts add `nowMs` to every cell request) and not needed.
    #[serde(default, rename = "nowMs")]
    _now_ms: Option<UnixMs>,
}

/// `fenced-write`: `{cell, holder, epoch, file, content}` -> `{changes, lock}` or `LOCK_LOST`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FencedWriteRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    file: String,
    content: String,
    /// Accepted (hosts add `nowMs` to every cell request) and not needed.
    #[serde(default, rename = "nowMs")]
    _now_ms: Option<UnixMs>,
}

/// `etcd-keys`: `{prefix, env, scope?}` -> `{env, cell?, keys?}` (see [`crate::stores::etcd::keys`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EtcdKeysRequest {
    prefix: String,
    env: String,
    #[serde(default)]
    scope: Option<String>,
}

/// `etcd-txn`: `{cell, revisions, changes}` -> `{compare, put, delete}` (see [`crate::stores::etcd::txn`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EtcdTxnRequest {
    cell: String,
    #[serde(default)]
    revisions: std::collections::BTreeMap<String, i64>,
    changes: Vec<crate::cell::Change>,
}

/// `etcd-list`: `{env, range, kvs: [{key, value}]}` -> `{cells: [{scope, text}]}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EtcdListRequest {
    env: String,
    range: String,
    kvs: Vec<crate::stores::etcd::Kv>,
}

/// `etcd-retry`: `{what, endpoint, endpoints, outcome, code?, detail?, attempts, elapsedMs, budgetMs,
/// random}` -> `{retry, delayMs, next}` or the error that ends the operation (see
/// [`crate::stores::etcd::retry`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EtcdRetryRequest {
    what: String,
    endpoint: String,
    endpoints: Vec<String>,
    outcome: crate::stores::etcd::Outcome,
    #[serde(default)]
    code: Option<u32>,
    #[serde(default)]
    detail: String,
    attempts: u32,
    elapsed_ms: u64,
    budget_ms: u64,
    random: f64,
}

/// `run-begin`: `{cell, holder, epoch, nowMs, context, hashKey, lockPreempted?, approvedBy?, destroy?,
/// predecessor?: {scope, text}}` -> `{changes, receipt, warnings, inherited, owned}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunBeginRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    now_ms: UnixMs,
    context: ownership::RunContext,
    #[serde(default)]
    hash_key: String,
    #[serde(default)]
    lock_preempted: Option<String>,
    #[serde(default)]
    approved_by: Option<String>,
    #[serde(default)]
    destroy: bool,
    #[serde(default)]
    predecessor: Option<ownership::OtherScope>,
}

/// `run-finish`: `{cell, holder, epoch, nowMs, succeeded, sha?}` -> `{changes, receipt, status, unresolved}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunFinishRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    now_ms: UnixMs,
    succeeded: bool,
    /// The run was cancelled by a signal: the receipt says `cancelled`.
    #[serde(default)]
    cancelled: bool,
    #[serde(default)]
    sha: Option<String>,
}

/// `ledger-intend|record|forget`: `{cell, holder, epoch, nowMs, resource: {adapter, key, provider?, op?,
/// label?, parent?}, id?}` -> `{changes, receipt, ...}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LedgerRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    now_ms: UnixMs,
    resource: ownership::Resource,
    #[serde(default)]
    id: Option<String>,
    /// `ledger-record` only: the marker an entry that becomes owned is written with (`BATON_CREATED_BY`).
    #[serde(default)]
    owned_marker: Option<String>,
}

/// `ledger-check`: `{cell, holder?, epoch?, nowMs, resource, change, others: [{scope, text}], predecessor?}`
/// -> `{relation, owner?, changes}` or `OWNED_BY_OTHER_SCOPE`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CheckRequest {
    cell: Cell,
    #[serde(default)]
    holder: Option<String>,
    #[serde(default)]
    epoch: Option<u64>,
    now_ms: UnixMs,
    resource: ownership::Resource,
    #[serde(default)]
    change: bool,
    #[serde(default)]
    others: Vec<ownership::OtherScope>,
    #[serde(default)]
    predecessor: Option<String>,
}

/// `handover`: `{cell (the predecessor's), holder, epoch, nowMs, successor, successorLedger: [identity or
/// ledger entry]}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HandoverRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    now_ms: UnixMs,
    successor: String,
    successor_ledger: Vec<ownership::EntryOrIdentity>,
}

/// `destroy-plan`: `{cell, holder, epoch, nowMs}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FencedRequest {
    cell: Cell,
    holder: String,
    epoch: u64,
    now_ms: UnixMs,
}

/// `claim-cell`: `{env, resource}` -> `{env: "_claims", scope}`: where the claim of a resource lives.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimCellRequest {
    env: String,
    resource: ownership::Resource,
}

/// `claim-take`: `{cell (the claim cell), nowMs, env, scope, holder, epoch, resource, predecessor?,
/// others?, facts?}` -> `{changes, outcome, claim}` or `{changes: [], need}`; `OWNED_BY_OTHER_SCOPE`.
/// See [`claims::take`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimTakeRequest {
    cell: Cell,
    now_ms: UnixMs,
    #[serde(flatten)]
    take: claims::TakeRequest,
}

/// `claim-facts`: `{cell (the claiming scope's), nowMs, resource, claimEpoch, pending?}` -> `{scope, claimEpoch,
/// lockEpoch, lists}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimFactsRequest {
    cell: Cell,
    #[allow(dead_code)]
    now_ms: UnixMs,
    resource: ownership::Resource,
    claim_epoch: u64,
    #[serde(default)]
    pending: Option<String>,
}

/// `claim-free`: `{cell, nowMs, env, scope, epoch, resource, giveBack?}` -> `{changes, freed}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimFreeRequest {
    cell: Cell,
    now_ms: UnixMs,
    env: String,
    scope: String,
    epoch: u64,
    resource: ownership::Resource,
    /// The call that took the claim gives it back (its write was refused): see [`claims::free`].
    #[serde(default)]
    give_back: bool,
}

/// `claim-move`: `{cell, nowMs, env, from, to, holder, epoch, resource}` -> `{changes, moved}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimMoveRequest {
    cell: Cell,
    now_ms: UnixMs,
    env: String,
    from: String,
    to: String,
    holder: String,
    epoch: u64,
    resource: ownership::Resource,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn every_op_answers_garbage_with_an_error_not_a_panic() {
        for op in OPS {
            for input in ["", "{", "null", "[]", "{\"cell\":1}"] {
                let _ = invoke(op, input);
            }
        }
        assert_eq!(invoke("nope", "{}").unwrap_err().code, ErrorCode::Internal);
        assert_eq!(invoke("lock-acquire", "{").unwrap_err().code, ErrorCode::Internal);
    }

    #[test]
    fn scope_for_round_trip() {
        assert_eq!(invoke("scope-for", r#"{"branch":"feat/x","pr":null}"#).unwrap(), r#"{"scope":"branch-feat-x"}"#);
    }
}
