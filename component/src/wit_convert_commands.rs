// Conversions between the core's answers to the commands' small decisions (`baton_core::typed::commands`,
// `stores::spec`, `ownership::ScopeStatus`, `command_line`) and the generated WIT types of interface
// `commands` (`wit/commands.wit`), both ways. Nothing is decided here.
//
// `include!`d next to `wit_convert.rs` (whose `code`, `cell`, `lock_record` and `lock_record_back` it uses),
// where the generated types are in scope as `t` (interface `types`) and `wc` (`commands`): by the component
// (wit-bindgen's types, `convert.rs`) and by the CLI's conformance test (wasmtime's `bindgen!` types,
// `host-native/tests/scenarios.rs`). Both generators give the same names and shapes.

use baton_core::command_line::ledger::{LedgerLine, LedgerOp, LedgerResource};
use baton_core::command_line::{CommandLine, CommandLineAnswer, ContextFlags, RunTiming};
use baton_core::ownership::{Approval, LockState, OtherScope, ScopeStatus, StatusLock};
use baton_core::receipt::ResourceRef;
use baton_core::stores::etcd::{EtcdAuth, EtcdSpec, EtcdVars, Tls};
use baton_core::stores::spec::{SpecSource, StoreKind, StoreSpec, StoreSpecRequest};
use baton_core::typed::commands as tc;

/// JSON text of an open-schema value (a provider block, a receipt's body).
fn json_text(v: &Value) -> String {
    v.to_string()
}

/// An open-schema value from its JSON text; text that is not JSON is kept as a JSON string (the core
/// refuses it where it needs an object), so nothing is lost and nothing panics.
fn json_value(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

pub fn etcd_vars(v: wc::EtcdVars) -> EtcdVars {
    EtcdVars { prefix: v.prefix, user: v.user, password: v.password, ca: v.ca, cert: v.cert, key: v.key }
}

pub fn etcd_vars_out(v: EtcdVars) -> wc::EtcdVars {
    wc::EtcdVars { prefix: v.prefix, user: v.user, password: v.password, ca: v.ca, cert: v.cert, key: v.key }
}

pub fn store_request(r: wc::StoreRequest) -> StoreSpecRequest {
    StoreSpecRequest {
        spec: r.spec,
        repo_root: r.repo_root,
        cwd: r.cwd,
        prefix: r.prefix,
        budget_ms: r.budget_ms,
        mutex_wait_ms: r.mutex_wait_ms,
        run: r.run,
        ci: r.ci,
        origin: r.origin,
        etcd: r.etcd.map(etcd_vars),
    }
}

pub fn store_request_out(r: StoreSpecRequest) -> wc::StoreRequest {
    wc::StoreRequest {
        spec: r.spec,
        repo_root: r.repo_root,
        cwd: r.cwd,
        prefix: r.prefix,
        budget_ms: r.budget_ms,
        mutex_wait_ms: r.mutex_wait_ms,
        run: r.run,
        ci: r.ci,
        origin: r.origin,
        etcd: r.etcd.map(etcd_vars_out),
    }
}

pub fn store_choice(s: StoreSpec) -> wc::StoreChoice {
    let kind = match s.kind {
        StoreKind::Dir { path, mutex_wait_ms } => wc::StoreKind::Dir(wc::DirStore { path, mutex_wait_ms }),
        StoreKind::Git { remote, prefix, budget_ms } => wc::StoreKind::Git(wc::GitStore { remote, prefix, budget_ms }),
        StoreKind::Etcd(e) => wc::StoreKind::Etcd(wc::EtcdStore {
            endpoints: e.endpoints,
            prefix: e.prefix,
            budget_ms: e.budget_ms,
            attempt_ms: e.attempt_ms,
            auth: e.auth.map(|a| wc::EtcdAuth { user: a.user, password: a.password }),
            tls: e.tls.map(|t| wc::EtcdTls { ca: t.ca, cert: t.cert, key: t.key }),
            export_spec: e.export_spec,
        }),
    };
    let source = match s.source {
        SpecSource::Spec => wc::SpecSource::Spec,
        SpecSource::Default => wc::SpecSource::Default,
    };
    wc::StoreChoice { kind, source, label: s.label, notice: s.notice }
}

pub fn store_choice_back(s: wc::StoreChoice) -> StoreSpec {
    let kind = match s.kind {
        wc::StoreKind::Dir(d) => StoreKind::Dir { path: d.path, mutex_wait_ms: d.mutex_wait_ms },
        wc::StoreKind::Git(g) => StoreKind::Git { remote: g.remote, prefix: g.prefix, budget_ms: g.budget_ms },
        wc::StoreKind::Etcd(e) => StoreKind::Etcd(EtcdSpec {
            endpoints: e.endpoints,
            prefix: e.prefix,
            budget_ms: e.budget_ms,
            attempt_ms: e.attempt_ms,
            auth: e.auth.map(|a| EtcdAuth { user: a.user, password: a.password }),
            tls: e.tls.map(|t| Tls { ca: t.ca, cert: t.cert, key: t.key }),
            export_spec: e.export_spec,
        }),
    };
    let source = match s.source {
        wc::SpecSource::Spec => SpecSource::Spec,
        wc::SpecSource::Default => SpecSource::Default,
    };
    StoreSpec { kind, source, label: s.label, notice: s.notice }
}

pub fn variables(vars: Vec<wc::Variable>) -> std::collections::BTreeMap<String, String> {
    vars.into_iter().map(|v| (v.name, v.value)).collect()
}

pub fn variables_out(vars: std::collections::BTreeMap<String, String>) -> Vec<wc::Variable> {
    vars.into_iter().map(|(name, value)| wc::Variable { name, value }).collect()
}

fn context_flags(f: ContextFlags) -> wc::ContextFlags {
    wc::ContextFlags {
        env: f.env,
        scope: f.scope,
        branch: f.branch,
        sha: f.sha,
        pr: f.pr,
        default_branch: f.default_branch,
    }
}

fn context_flags_back(f: wc::ContextFlags) -> ContextFlags {
    ContextFlags { env: f.env, scope: f.scope, branch: f.branch, sha: f.sha, pr: f.pr, default_branch: f.default_branch }
}

pub fn command_line_answer(a: CommandLineAnswer) -> wc::CommandLineAnswer {
    match a {
        CommandLineAnswer::Run(c) => wc::CommandLineAnswer::Run(wc::RunLine {
            help: c.help,
            usage: c.usage,
            overrides: context_flags(c.overrides),
            store: c.store,
            json: c.json,
            config: wc::RunTiming {
                ttl_ms: c.config.ttl_ms,
                wait_timeout_ms: c.config.wait_timeout_ms,
                poll_ms: c.config.poll_ms,
                wait: c.config.wait,
                cancel_grace_ms: c.config.cancel_grace_ms,
            },
            approved_by: c.approved_by,
            cmd: c.cmd,
            shown: c.shown,
            open_prs: c.open_prs,
            remote: c.remote,
            destroy: c.destroy,
        }),
        CommandLineAnswer::Ledger(l) => wc::CommandLineAnswer::Ledger(wc::LedgerLine {
            help: l.help,
            usage: l.usage,
            verb: match l.op {
                LedgerOp::Intend => wc::LedgerVerb::Intend,
                LedgerOp::Record => wc::LedgerVerb::Record,
                LedgerOp::Forget => wc::LedgerVerb::Forget,
            },
            overrides: context_flags(l.overrides),
            store: l.store,
            json: l.json,
            resource: l.resource.map(|r| wc::LedgerResource {
                adapter: r.adapter,
                key: r.key,
                provider: json_text(&r.provider),
                label: r.label,
                parent: r.parent,
            }),
            id: l.id,
            holder: l.holder,
            epoch: l.epoch,
        }),
    }
}

pub fn command_line_answer_back(a: wc::CommandLineAnswer) -> CommandLineAnswer {
    match a {
        wc::CommandLineAnswer::Run(c) => CommandLineAnswer::Run(CommandLine {
            help: c.help,
            usage: c.usage,
            overrides: context_flags_back(c.overrides),
            store: c.store,
            json: c.json,
            config: RunTiming {
                ttl_ms: c.config.ttl_ms,
                wait_timeout_ms: c.config.wait_timeout_ms,
                poll_ms: c.config.poll_ms,
                wait: c.config.wait,
                cancel_grace_ms: c.config.cancel_grace_ms,
            },
            approved_by: c.approved_by,
            cmd: c.cmd,
            shown: c.shown,
            open_prs: c.open_prs,
            remote: c.remote,
            destroy: c.destroy,
        }),
        wc::CommandLineAnswer::Ledger(l) => CommandLineAnswer::Ledger(LedgerLine {
            help: l.help,
            usage: l.usage,
            op: match l.verb {
                wc::LedgerVerb::Intend => LedgerOp::Intend,
                wc::LedgerVerb::Record => LedgerOp::Record,
                wc::LedgerVerb::Forget => LedgerOp::Forget,
            },
            overrides: context_flags_back(l.overrides),
            store: l.store,
            json: l.json,
            resource: l.resource.map(|r| LedgerResource {
                adapter: r.adapter,
                key: r.key,
                provider: json_value(r.provider),
                label: r.label,
                parent: r.parent,
            }),
            id: l.id,
            holder: l.holder,
            epoch: l.epoch,
        }),
    }
}

pub fn inheritance(s: tc::Succession) -> wc::Inheritance {
    wc::Inheritance { predecessor: s.predecessor, handover_ttl_ms: s.handover_ttl_ms }
}

pub fn inheritance_back(s: wc::Inheritance) -> tc::Succession {
    tc::Succession { predecessor: s.predecessor, handover_ttl_ms: s.handover_ttl_ms }
}

pub fn parent_object_cell(p: tc::ParentCell) -> wc::ParentObjectCell {
    wc::ParentObjectCell { env: p.env, scope: p.scope, label: p.label }
}

pub fn parent_object_cell_back(p: wc::ParentObjectCell) -> tc::ParentCell {
    tc::ParentCell { env: p.env, scope: p.scope, label: p.label }
}

pub fn approval_verdict(a: Approval) -> wc::ApprovalVerdict {
    wc::ApprovalVerdict { required: a.required, approved_by: a.approved_by }
}

pub fn approval_verdict_back(a: wc::ApprovalVerdict) -> Approval {
    Approval { required: a.required, approved_by: a.approved_by }
}

pub fn other_scopes(others: Vec<wc::OtherScope>) -> Vec<OtherScope> {
    others.into_iter().map(|o| OtherScope { scope: o.scope, text: o.text }).collect()
}

pub fn other_scopes_out(others: Vec<OtherScope>) -> Vec<wc::OtherScope> {
    others.into_iter().map(|o| wc::OtherScope { scope: o.scope, text: o.text }).collect()
}

fn resource_ref(r: ResourceRef) -> wc::ResourceRef {
    wc::ResourceRef {
        adapter: r.adapter,
        key: r.key,
        provider: json_text(&r.provider),
        id: r.id,
        created_by: r.created_by,
    }
}

fn resource_ref_back(r: wc::ResourceRef) -> ResourceRef {
    ResourceRef {
        adapter: r.adapter,
        key: r.key,
        provider: json_value(r.provider),
        id: r.id,
        created_by: r.created_by,
    }
}

pub fn scope_report(s: ScopeStatus) -> wc::ScopeReport {
    wc::ScopeReport {
        lock: s.lock.map(|l| wc::StatusLock { lock: lock_record(l.lock), expired: l.expired }),
        lock_state: match s.lock_state {
            LockState::None => wc::LockState::None,
            LockState::Expired => wc::LockState::Expired,
            LockState::Live => wc::LockState::Live,
        },
        receipt: s.receipt.as_ref().map(json_text),
        owns: s.owns.into_iter().map(resource_ref).collect(),
        inherited: s.inherited.into_iter().map(resource_ref).collect(),
        predecessor: s.predecessor,
        handover_pending: s.handover_pending,
        foreign_count: u32::try_from(s.foreign_count).unwrap_or(u32::MAX),
        conflicts: s
            .conflicts
            .into_iter()
            .map(|c| wc::Conflict { resource: resource_ref(c.resource), scopes: c.scopes })
            .collect(),
        warnings: s.warnings,
    }
}

pub fn scope_report_back(s: wc::ScopeReport) -> ScopeStatus {
    ScopeStatus {
        lock: s.lock.map(|l| StatusLock { lock: lock_record_back(l.lock), expired: l.expired }),
        lock_state: match s.lock_state {
            wc::LockState::None => LockState::None,
            wc::LockState::Expired => LockState::Expired,
            wc::LockState::Live => LockState::Live,
        },
        receipt: s.receipt.map(json_value),
        owns: s.owns.into_iter().map(resource_ref_back).collect(),
        inherited: s.inherited.into_iter().map(resource_ref_back).collect(),
        predecessor: s.predecessor,
        handover_pending: s.handover_pending,
        foreign_count: usize::try_from(s.foreign_count).unwrap_or(usize::MAX),
        conflicts: s
            .conflicts
            .into_iter()
            .map(|c| baton_core::claims::Conflict { resource: resource_ref_back(c.resource), scopes: c.scopes })
            .collect(),
        warnings: s.warnings,
    }
}
