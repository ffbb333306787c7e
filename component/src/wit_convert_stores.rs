// Conversions between the core's store building blocks (`baton_core::typed::stores` and the answer types of
// `gitstore`, `gitclone`, `gitstream`, `mutex`, `stores::listing`) and the generated WIT types of interface
// `stores` (`wit/stores.wit`), both ways. Nothing is decided here.
//
// `include!`d next to `wit_convert.rs` (whose `code`, `code_name`, `cell`, `change` and `change_back` it
// uses), where the generated types are in scope as `t` (interface `types`) and `ws` (`stores`): by the
// component (wit-bindgen's types, `convert.rs`) and by the CLI's conformance test (wasmtime's `bindgen!`
// types, `host-native/tests/scenarios.rs`). Both generators give the same names and shapes.

use baton_core::gitstore::{PushOutcome, RetryDecision};
use baton_core::stores::listing::{Listed, Spelling};
use baton_core::typed::stores as st;
use baton_core::{context, envelope, gc, gitclone, gitstream, mutex};
use std::collections::BTreeMap;

pub fn code_back(c: t::ErrorCode) -> Code {
    Code::parse(code_name(c)).unwrap_or(Code::Internal)
}

pub fn cell_location(p: st::CellPath) -> ws::CellLocation {
    ws::CellLocation { dir: p.dir, git_ref: p.git_ref }
}

pub fn cell_location_back(p: ws::CellLocation) -> st::CellPath {
    st::CellPath { dir: p.dir, git_ref: p.git_ref }
}

pub fn spelling(s: ws::Spelling) -> Spelling {
    match s {
        ws::Spelling::Dir => Spelling::Dir,
        ws::Spelling::GitRef => Spelling::Ref,
    }
}

pub fn spelling_out(s: Spelling) -> ws::Spelling {
    match s {
        Spelling::Dir => ws::Spelling::Dir,
        Spelling::Ref => ws::Spelling::GitRef,
    }
}

pub fn listing(l: st::Listing) -> ws::Listing {
    ws::Listing {
        segment: l.segment,
        cells: l.cells.into_iter().map(|c| ws::ListedCell { name: c.name, scope: c.scope, dir: c.dir }).collect(),
    }
}

pub fn listing_back(l: ws::Listing) -> st::Listing {
    st::Listing {
        segment: l.segment,
        cells: l.cells.into_iter().map(|c| Listed { name: c.name, scope: c.scope, dir: c.dir }).collect(),
    }
}

pub fn io_failure(f: st::IoFailure) -> ws::IoFailure {
    ws::IoFailure { code: code(f.code), message: f.message, errno: f.errno }
}

pub fn io_failure_back(f: ws::IoFailure) -> st::IoFailure {
    st::IoFailure { code: code_back(f.code), message: f.message, errno: f.errno }
}

pub fn git_environment(e: st::GitEnv) -> ws::GitEnvironment {
    ws::GitEnvironment {
        remove: e.remove,
        set: e.set.into_iter().map(|(name, value)| ws::EnvVar { name, value }).collect(),
    }
}

pub fn git_environment_back(e: ws::GitEnvironment) -> st::GitEnv {
    st::GitEnv { remove: e.remove, set: e.set.into_iter().map(|v| (v.name, v.value)).collect() }
}

pub fn clone_name_request(r: ws::CloneNameRequest) -> st::CloneNameRequest {
    st::CloneNameRequest { remote: r.remote, host: r.host, pid: r.pid, start: r.start, random: r.random }
}

pub fn clone_name_request_out(r: st::CloneNameRequest) -> ws::CloneNameRequest {
    ws::CloneNameRequest { remote: r.remote, host: r.host, pid: r.pid, start: r.start, random: r.random }
}

/// The facts as the core keys them: by the pid's decimal text.
pub fn processes(p: Option<Vec<ws::ProcessFact>>) -> Option<BTreeMap<String, Option<String>>> {
    p.map(|list| list.into_iter().map(|f| (f.pid.to_string(), f.start)).collect())
}

/// The facts of pids the core can ask about (a key that is not a pid's decimal text matches no owner, so
/// leaving it out changes nothing).
pub fn processes_out(p: Option<BTreeMap<String, Option<String>>>) -> Option<Vec<ws::ProcessFact>> {
    p.map(|map| {
        map.into_iter()
            .filter_map(|(k, start)| k.parse::<u32>().ok().filter(|pid| pid.to_string() == k).map(|pid| (pid, start)))
            .map(|(pid, start)| ws::ProcessFact { pid, start })
            .collect()
    })
}

pub fn stale_clones(s: gitclone::StaleClones) -> ws::StaleClones {
    ws::StaleClones { pids: s.pids, stale: s.stale }
}

pub fn stale_clones_back(s: ws::StaleClones) -> gitclone::StaleClones {
    gitclone::StaleClones { pids: s.pids, stale: s.stale }
}

pub fn push_outcome(o: PushOutcome) -> ws::PushOutcome {
    match o {
        PushOutcome::Ok => ws::PushOutcome::Ok,
        PushOutcome::Race => ws::PushOutcome::Race,
        PushOutcome::Permission => ws::PushOutcome::Permission,
        PushOutcome::Rejected => ws::PushOutcome::Rejected,
        PushOutcome::Other => ws::PushOutcome::Other,
        PushOutcome::Timeout => ws::PushOutcome::Timeout,
    }
}

pub fn push_outcome_back(o: ws::PushOutcome) -> PushOutcome {
    match o {
        ws::PushOutcome::Ok => PushOutcome::Ok,
        ws::PushOutcome::Race => PushOutcome::Race,
        ws::PushOutcome::Permission => PushOutcome::Permission,
        ws::PushOutcome::Rejected => PushOutcome::Rejected,
        ws::PushOutcome::Other => PushOutcome::Other,
        ws::PushOutcome::Timeout => PushOutcome::Timeout,
    }
}

pub fn push_classified(p: st::PushClassified) -> ws::PushClassified {
    ws::PushClassified { outcome: push_outcome(p.outcome), detail: p.detail }
}

pub fn push_classified_back(p: ws::PushClassified) -> st::PushClassified {
    st::PushClassified { outcome: push_outcome_back(p.outcome), detail: p.detail }
}

pub fn retry_request(r: ws::RetryRequest) -> st::RetryRequest {
    st::RetryRequest {
        read: r.read,
        what: r.what,
        reference: r.git_ref,
        remote: r.remote,
        outcome: push_outcome_back(r.outcome),
        detail: r.detail,
        attempts: r.attempts,
        rejections: r.rejections,
        elapsed_ms: r.elapsed_ms,
        budget_ms: r.budget_ms,
        random: r.random,
    }
}

pub fn retry_request_out(r: st::RetryRequest) -> ws::RetryRequest {
    ws::RetryRequest {
        read: r.read,
        what: r.what,
        git_ref: r.reference,
        remote: r.remote,
        outcome: push_outcome(r.outcome),
        detail: r.detail,
        attempts: r.attempts,
        rejections: r.rejections,
        elapsed_ms: r.elapsed_ms,
        budget_ms: r.budget_ms,
        random: r.random,
    }
}

pub fn retry_decision(d: RetryDecision) -> ws::RetryDecision {
    ws::RetryDecision { retry: d.retry, delay_ms: d.delay_ms }
}

pub fn retry_decision_back(d: ws::RetryDecision) -> RetryDecision {
    RetryDecision { retry: d.retry, delay_ms: d.delay_ms }
}

pub fn commit_request(r: ws::CommitRequest) -> st::GitCommitRequest {
    st::GitCommitRequest {
        env: r.env,
        scope: r.scope,
        dir: r.dir,
        tip: r.tip,
        changes: r.changes.into_iter().map(change_back).collect(),
        old_lock: r.old_lock,
        seed: r.seed.into_iter().map(|f| st::SeedFile { path: f.path, text: f.text }).collect(),
    }
}

pub fn commit_request_out(r: st::GitCommitRequest) -> ws::CommitRequest {
    ws::CommitRequest {
        env: r.env,
        scope: r.scope,
        dir: r.dir,
        tip: r.tip,
        changes: r.changes.into_iter().map(change).collect(),
        old_lock: r.old_lock,
        seed: r.seed.into_iter().map(|f| ws::SeedFile { path: f.path, text: f.text }).collect(),
    }
}

pub fn commit_stream(c: gitstream::CommitStream) -> ws::CommitStream {
    ws::CommitStream { message: c.message, what: c.what, fast_import: c.stream }
}

pub fn commit_stream_back(c: ws::CommitStream) -> gitstream::CommitStream {
    gitstream::CommitStream { message: c.message, what: c.what, stream: c.fast_import }
}

pub fn mutex_owner(o: ws::MutexOwner) -> mutex::ContentRequest {
    mutex::ContentRequest { pid: o.pid, stat: o.stat, host: o.host, token: o.token, now_ms: o.now_ms }
}

pub fn mutex_owner_out(o: mutex::ContentRequest) -> ws::MutexOwner {
    ws::MutexOwner { pid: o.pid, stat: o.stat, host: o.host, token: o.token, now_ms: o.now_ms }
}

pub fn mutex_line(m: mutex::MutexContent) -> ws::MutexLine {
    ws::MutexLine { content: m.content, refresh_ms: m.refresh_ms }
}

pub fn mutex_line_back(m: ws::MutexLine) -> mutex::MutexContent {
    mutex::MutexContent { content: m.content, refresh_ms: m.refresh_ms }
}

pub fn owner_facts(o: ws::OwnerFacts) -> mutex::OwnerFacts {
    mutex::OwnerFacts { pid: o.pid, stat: o.stat, alive: o.alive }
}

pub fn owner_facts_out(o: mutex::OwnerFacts) -> ws::OwnerFacts {
    ws::OwnerFacts { pid: o.pid, stat: o.stat, alive: o.alive }
}

pub fn mutex_judgement(v: mutex::MutexVerdict) -> ws::MutexJudgement {
    let verdict = match v.verdict {
        mutex::Verdict::Live => ws::Verdict::Live,
        mutex::Verdict::Stale => ws::Verdict::Stale,
        mutex::Verdict::Zombie => ws::Verdict::Zombie,
    };
    ws::MutexJudgement { verdict, pid: v.pid, reason: v.reason, claim: v.claim }
}

pub fn mutex_judgement_back(v: ws::MutexJudgement) -> mutex::MutexVerdict {
    let verdict = match v.verdict {
        ws::Verdict::Live => mutex::Verdict::Live,
        ws::Verdict::Stale => mutex::Verdict::Stale,
        ws::Verdict::Zombie => mutex::Verdict::Zombie,
    };
    mutex::MutexVerdict { verdict, pid: v.pid, reason: v.reason, claim: v.claim }
}

pub fn gc_request(r: ws::GcRequest) -> gc::GcRequest {
    gc::GcRequest {
        scopes: r.scopes.into_iter().map(|s| gc::ListedScope { scope: s.scope, text: s.text }).collect(),
        open_prs: r.open_prs,
        ls_remote: r.ls_remote,
        default_branch: r.default_branch,
    }
}

pub fn gc_request_out(r: gc::GcRequest) -> ws::GcRequest {
    ws::GcRequest {
        scopes: r.scopes.into_iter().map(|s| ws::ListedScope { scope: s.scope, text: s.text }).collect(),
        open_prs: r.open_prs,
        ls_remote: r.ls_remote,
        default_branch: r.default_branch,
    }
}

fn judged(j: gc::Judged) -> ws::JudgedScope {
    ws::JudgedScope { scope: j.scope, reason: j.reason, pr: j.pr }
}

fn judged_back(j: ws::JudgedScope) -> gc::Judged {
    gc::Judged { scope: j.scope, reason: j.reason, pr: j.pr }
}

pub fn gc_verdicts(p: gc::GcPlan) -> ws::GcVerdicts {
    ws::GcVerdicts {
        abandoned: p.abandoned.into_iter().map(judged).collect(),
        kept: p.kept.into_iter().map(judged).collect(),
        open_prs: p.open_prs,
        table: p.table,
    }
}

pub fn gc_verdicts_back(p: ws::GcVerdicts) -> gc::GcPlan {
    gc::GcPlan {
        abandoned: p.abandoned.into_iter().map(judged_back).collect(),
        kept: p.kept.into_iter().map(judged_back).collect(),
        open_prs: p.open_prs,
        table: p.table,
    }
}

/// An error object a host reported (`{code, message, ...}`) as the WIT error: the typed facts, and the
/// object itself, as it was, in `json`.
pub fn error_object(obj: Map<String, Value>) -> t::Error {
    let json = Value::Object(obj.clone()).to_string();
    t::Error { json, ..error(CoreError::from_json(obj)) }
}

/// The error object a WIT error stands for: its `json` as it was (a code the core does not know included),
/// with the typed code and message where it has none.
pub fn error_object_back(e: t::Error) -> Map<String, Value> {
    let mut obj = match serde_json::from_str::<Value>(&e.json) {
        Ok(Value::Object(obj)) => obj,
        _ => Map::new(),
    };
    if !obj.contains_key("code") {
        obj.insert("code".into(), code_name(e.code).into());
    }
    if !obj.contains_key("message") {
        obj.insert("message".into(), e.message.into());
    }
    obj
}

pub fn destroy_results(results: Vec<ws::DestroyResult>) -> gc::OutcomeRequest {
    let results =
        results.into_iter().map(|r| gc::DestroyResult { scope: r.scope, error: r.error.map(error_object_back) });
    gc::OutcomeRequest { results: results.collect() }
}

pub fn destroy_results_out(r: gc::OutcomeRequest) -> Vec<ws::DestroyResult> {
    r.results.into_iter().map(|r| ws::DestroyResult { scope: r.scope, error: r.error.map(error_object) }).collect()
}

fn failed_destroy(f: gc::FailedDestroy) -> ws::FailedDestroy {
    ws::FailedDestroy { scope: f.scope, error: error_object(f.error) }
}

fn failed_destroy_back(f: ws::FailedDestroy) -> gc::FailedDestroy {
    gc::FailedDestroy { scope: f.scope, error: error_object_back(f.error) }
}

pub fn gc_summary(o: gc::GcOutcome) -> ws::GcSummary {
    ws::GcSummary {
        destroyed: o.destroyed,
        skipped: o.skipped.into_iter().map(failed_destroy).collect(),
        failed: o.failed.into_iter().map(failed_destroy).collect(),
        error: o.error.map(|e| ws::GcFailure {
            code: code(Code::parse(&e.code).unwrap_or(Code::Internal)),
            message: e.message,
        }),
    }
}

pub fn gc_summary_back(o: ws::GcSummary) -> gc::GcOutcome {
    gc::GcOutcome {
        destroyed: o.destroyed,
        skipped: o.skipped.into_iter().map(failed_destroy_back).collect(),
        failed: o.failed.into_iter().map(failed_destroy_back).collect(),
        error: o.error.map(|e| gc::GcError { code: code_name(e.code).to_owned(), message: e.message }),
    }
}

/// The render input of a command outcome; `INTERNAL` for data that is not a JSON object.
pub fn render_input(command: Option<String>, outcome: ws::CommandOutcome) -> Result<envelope::RenderInput, CoreError> {
    let (data, error) = match outcome {
        ws::CommandOutcome::Data(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(data)) => (Some(data), None),
            _ => return Err(CoreError::internal("a command's data must be a JSON object")),
        },
        ws::CommandOutcome::Failed(e) => (None, Some(error_object_back(e))),
    };
    Ok(envelope::RenderInput { command, data, error })
}

/// A render input as the component's arguments (an error wins over data, as `render` reads it).
pub fn render_input_out(r: envelope::RenderInput) -> (Option<String>, ws::CommandOutcome) {
    let outcome = match (r.error, r.data) {
        (Some(e), _) => ws::CommandOutcome::Failed(error_object(e)),
        (None, data) => ws::CommandOutcome::Data(Value::Object(data.unwrap_or_default()).to_string()),
    };
    (r.command, outcome)
}

pub fn rendered(r: envelope::Rendered) -> ws::Rendered {
    ws::Rendered { envelope: r.envelope.to_string(), exit: r.exit, text: r.text }
}

pub fn rendered_back(r: ws::Rendered) -> envelope::Rendered {
    envelope::Rendered { envelope: serde_json::from_str(&r.envelope).unwrap_or(Value::Null), exit: r.exit, text: r.text }
}

fn pr_given(p: ws::PrGiven) -> Value {
    match p {
        ws::PrGiven::None => Value::Null,
        ws::PrGiven::Number(n) => n.into(),
        ws::PrGiven::Text(s) => s.into(),
        ws::PrGiven::Invalid(json) => serde_json::from_str(&json).unwrap_or(Value::String(json)),
    }
}

fn pr_given_out(v: Value) -> ws::PrGiven {
    match v {
        Value::Null => ws::PrGiven::None,
        Value::String(s) => ws::PrGiven::Text(s),
        Value::Number(n) if n.as_u64().is_some() => ws::PrGiven::Number(n.as_u64().unwrap_or_default()),
        other => ws::PrGiven::Invalid(other.to_string()),
    }
}

/// The detection input; `INTERNAL` for an event that is not JSON.
pub fn context_request(r: ws::ContextRequest) -> Result<context::ContextInput, CoreError> {
    let event = match r.event {
        None => None,
        Some(text) => Some(
            serde_json::from_str(&text).map_err(|e| CoreError::internal(format!("the event is not JSON: {e}")))?,
        ),
    };
    let o = r.overrides;
    Ok(context::ContextInput {
        overrides: context::Overrides {
            env: o.env,
            branch: o.branch,
            sha: o.sha,
            pr: o.pr.map(pr_given),
            default_branch: o.default_branch,
            scope: o.scope,
        },
        vars: r.vars.into_iter().map(|v| (v.name, v.value)).collect(),
        event,
        git: r.git.map(|g| context::GitFacts { branch: g.branch, sha: g.sha, pr: g.pr, error: g.error }),
        env_only: r.env_only,
        scope_only: r.scope_only,
    })
}

pub fn context_request_out(r: context::ContextInput) -> ws::ContextRequest {
    let o = r.overrides;
    ws::ContextRequest {
        overrides: ws::ContextOverrides {
            env: o.env,
            branch: o.branch,
            sha: o.sha,
            pr: o.pr.map(pr_given_out),
            default_branch: o.default_branch,
            scope: o.scope,
        },
        vars: r.vars.into_iter().map(|(name, value)| ws::EnvVar { name, value }).collect(),
        event: r.event.map(|e| e.to_string()),
        git: r.git.map(|g| ws::GitFacts { branch: g.branch, sha: g.sha, pr: g.pr, error: g.error }),
        env_only: r.env_only,
        scope_only: r.scope_only,
    }
}

pub fn detection(d: context::Detection) -> ws::Detection {
    match d {
        context::Detection::Detected { context: c } => ws::Detection::Detected(ws::RunContext {
            env: c.env,
            branch: c.branch,
            sha: c.sha,
            pr: c.pr,
            default_branch: c.default_branch,
            scope: Some(c.scope),
        }),
        context::Detection::Environment { context: c } => ws::Detection::Detected(ws::RunContext {
            env: c.env,
            branch: c.branch,
            sha: c.sha,
            pr: c.pr,
            default_branch: c.default_branch,
            scope: c.scope,
        }),
        context::Detection::NeedsGit { ask_pr } => ws::Detection::NeedsGit(ask_pr),
    }
}

pub fn detection_back(d: ws::Detection) -> context::Detection {
    match d {
        ws::Detection::Detected(c) => match c.scope {
            Some(scope) => context::Detection::Detected {
                context: context::Context {
                    env: c.env,
                    branch: c.branch,
                    sha: c.sha,
                    pr: c.pr,
                    default_branch: c.default_branch,
                    scope,
                },
            },
            None => context::Detection::Environment {
                context: context::EnvironmentContext {
                    env: c.env,
                    branch: c.branch,
                    sha: c.sha,
                    pr: c.pr,
                    default_branch: c.default_branch,
                    scope: None,
                },
            },
        },
        ws::Detection::NeedsGit(ask_pr) => context::Detection::NeedsGit { ask_pr },
    }
}
