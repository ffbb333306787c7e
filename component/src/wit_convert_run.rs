// Conversions between the core's run types and the generated WIT types of `runs` (alias `wr`), both ways.
// `include!`d beside `wit_convert.rs` (see there), so the component and the CLI's tests share one text.

use baton_core::run as core_run;
use baton_core::typed::{RunAction as TypedRunAction, StartWork, StoreAction, verdict_error};

pub fn run_config(c: wr::RunConfig) -> core_run::RunConfig {
    core_run::RunConfig {
        job: match c.job {
            wr::Job::Run => core_run::Job::Run,
            wr::Job::Destroy => core_run::Job::Destroy,
            wr::Job::Object => core_run::Job::Object,
            wr::Job::Acquire => core_run::Job::Acquire,
        },
        context: c.context.map(|x| baton_core::ownership::RunContext {
            env: x.env,
            scope: x.scope,
            branch: x.branch,
            sha: x.sha,
            pr: x.pr,
        }),
        object: c.object.map(|o| core_run::ObjectTarget { identity: o.identity, secrets: o.secrets }),
        holder: c.holder,
        random: c.random,
        approved_by: c.approved_by,
        ttl_ms: c.ttl_ms,
        margin_ms: c.margin_ms,
        renew_every_ms: c.renew_every_ms,
        wait: c.wait,
        wait_timeout_ms: c.wait_timeout_ms,
        poll_ms: c.poll_ms,
        store_budget_ms: c.store_budget_ms,
        cancel_grace_ms: c.cancel_grace_ms,
    }
}

pub fn work_end(e: wr::WorkEnd) -> core_run::WorkEnd {
    match e {
        wr::WorkEnd::Exited(code) => core_run::WorkEnd::Exited { code },
        wr::WorkEnd::Signalled(signal) => core_run::WorkEnd::Signalled { signal },
        wr::WorkEnd::NotStarted(message) => core_run::WorkEnd::NotStarted { message },
    }
}

pub fn host_signal(s: wr::HostSignal) -> core_run::HostSignal {
    match s {
        wr::HostSignal::Interrupt => core_run::HostSignal::Interrupt,
        wr::HostSignal::Terminate => core_run::HostSignal::Terminate,
    }
}

fn work_signal(s: core_run::WorkSignal) -> wr::WorkSignal {
    match s {
        core_run::WorkSignal::Interrupt => wr::WorkSignal::Interrupt,
        core_run::WorkSignal::Terminate => wr::WorkSignal::Terminate,
        core_run::WorkSignal::Kill => wr::WorkSignal::Kill,
    }
}

pub fn verdict(v: core_run::Verdict) -> wr::Verdict {
    wr::Verdict {
        exit: v.exit,
        ok: v.ok,
        error: verdict_error(&v).map(error),
        fields: Value::Object(v.fields).to_string(),
    }
}

pub fn run_action(a: TypedRunAction) -> wr::RunAction {
    match a {
        TypedRunAction::Store(StoreAction { id, env, scope, read, deadline_ms }) => {
            wr::RunAction::Store(wr::StoreAction { id, env, scope, read, deadline_ms })
        }
        TypedRunAction::StartWork(StartWork { env, epoch, delete, label }) => {
            wr::RunAction::StartWork(wr::StartWork {
                env: env.into_iter().collect(),
                epoch,
                delete: delete.map(|d| d.iter().map(Value::to_string).collect()),
                label,
            })
        }
        TypedRunAction::Signal(s) => wr::RunAction::Signal(work_signal(s)),
        TypedRunAction::Note(text) => wr::RunAction::Note(text),
        TypedRunAction::Warning(text) => wr::RunAction::Warning(text),
        TypedRunAction::Lease(event) => wr::RunAction::Lease(lease_event(event)),
        TypedRunAction::Finished(outcome) => wr::RunAction::Finished(Value::Object(outcome).to_string()),
        TypedRunAction::Done(v) => wr::RunAction::Done(verdict(v)),
    }
}

pub fn run_config_out(c: core_run::RunConfig) -> wr::RunConfig {
    wr::RunConfig {
        job: match c.job {
            core_run::Job::Run => wr::Job::Run,
            core_run::Job::Destroy => wr::Job::Destroy,
            core_run::Job::Object => wr::Job::Object,
            core_run::Job::Acquire => wr::Job::Acquire,
        },
        context: c.context.map(|x| wr::RunContext { env: x.env, scope: x.scope, branch: x.branch, sha: x.sha, pr: x.pr }),
        object: c.object.map(|o| wr::ObjectTarget { identity: o.identity, secrets: o.secrets }),
        holder: c.holder,
        random: c.random,
        approved_by: c.approved_by,
        ttl_ms: c.ttl_ms,
        margin_ms: c.margin_ms,
        renew_every_ms: c.renew_every_ms,
        wait: c.wait,
        wait_timeout_ms: c.wait_timeout_ms,
        poll_ms: c.poll_ms,
        store_budget_ms: c.store_budget_ms,
        cancel_grace_ms: c.cancel_grace_ms,
    }
}

pub fn work_end_out(e: core_run::WorkEnd) -> wr::WorkEnd {
    match e {
        core_run::WorkEnd::Exited { code } => wr::WorkEnd::Exited(code),
        core_run::WorkEnd::Signalled { signal } => wr::WorkEnd::Signalled(signal),
        core_run::WorkEnd::NotStarted { message } => wr::WorkEnd::NotStarted(message),
    }
}
