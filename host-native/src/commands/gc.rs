//! `baton gc`: gathers the facts (the environment's scopes, the open pull requests, the remote's branches),
//! lets the core decide which scopes are abandoned (`gc-plan`), prints them, and with `--destroy` runs
//! `baton destroy`'s flow for each under its own lease (a live lease is `LOCK_HELD`: skipped).

use super::lock::{data, env_target};
use crate::cli::{GcArgs, RunArgs, TargetArgs};
use crate::context::ContextArgs;
use crate::engine::CoreComponent;
use crate::engine::wit::stores as ws;
use crate::error::HostError;
use crate::output::{Outcome, note};
use serde_json::{Value, json};
use std::time::Duration;

/// How long `gh pr list` and `git ls-remote` may take before gc gives up (every wait has a bound).
const ASK_TIMEOUT: Duration = Duration::from_secs(60);

/// `baton gc`.
pub async fn run(core: CoreComponent, args: &GcArgs) -> (CoreComponent, Outcome) {
    let mut core = core;
    let planned = plan(&mut core, args).await;
    let (t, plan) = match planned {
        Ok(p) => p,
        Err(e) => return (core, Err(e)),
    };
    let abandoned: Vec<String> = plan.abandoned.iter().map(|j| j.scope.clone()).collect();
    let mut fields = vec![
        ("abandoned", judged_json(&plan.abandoned)),
        ("kept", judged_json(&plan.kept)),
        ("openPrs", plan.open_prs.clone().into()),
        ("dryRun", (!args.destroy).into()),
    ];
    if !args.destroy {
        if !args.target.json {
            print!("{}", plan.table);
            if !abandoned.is_empty() {
                note("dry run: pass --destroy -- CMD to destroy these scopes");
            }
        }
        return (core, Ok(data(&t, fields)));
    }
    let mut results = Vec::new();
    for scope in &abandoned {
        note(format!("destroying {}/{scope}", t.env));
        let run_args = destroy_args(args, &t.env, scope);
        let (c, end) = super::run::destroy(core, &run_args).await;
        core = c;
        match end.outcome {
            Ok(_) => results.push(ws::DestroyResult { scope: scope.clone(), error: None }),
            Err(e) => {
                if e.code == "LOCK_HELD" {
                    note(format!("skipped {scope}: its lease is live ({})", e.message));
                } else {
                    note(format!("could not destroy {scope}: {} {}", e.code, e.message));
                }
                results.push(ws::DestroyResult { scope: scope.clone(), error: Some(crate::engine::wit_error(&e)) });
            }
        }
    }
    let sorted = match core.gc_outcome(&results) {
        Ok(s) => s,
        Err(e) => return (core, Err(e)),
    };
    fields.push(("destroyed", sorted.destroyed.into()));
    fields.push(("skipped", failed_json(&sorted.skipped)));
    fields.push(("failed", failed_json(&sorted.failed)));
    match sorted.error {
        Some(error) => {
            let mut err = HostError::new(crate::engine::code_name(error.code), error.message);
            for (k, v) in data(&t, fields) {
                err = err.with(&k, v);
            }
            (core, Err(err))
        }
        None => (core, Ok(data(&t, fields))),
    }
}

/// The environment's target and the core's plan.
async fn plan(core: &mut CoreComponent, args: &GcArgs) -> Result<(super::lock::Target, ws::GcVerdicts), HostError> {
    let t = env_target(core, &args.target)?;
    let scopes = t.store.list(core, &t.env)?;
    let open_prs = open_prs(args.open_prs.as_deref()).await?;
    let ls_remote = match ask("git", &["ls-remote", "--heads", &args.remote], "list the remote's branches").await {
        Ok(text) => text,
        Err(e) => {
            return Err(HostError::new(&e.code, core.redact(&e.message)?));
        }
    };
    let default_branch = t.context["defaultBranch"].as_str().map(str::to_owned);
    let scopes = scopes
        .iter()
        .map(|s| ws::ListedScope {
            scope: s["scope"].as_str().unwrap_or_default().to_owned(),
            text: s["text"].as_str().map(str::to_owned),
        })
        .collect();
    let request = ws::GcRequest { scopes, open_prs, ls_remote, default_branch };
    let plan = core.gc_plan(&request)?;
    Ok((t, plan))
}

/// The verdicts as the command's output prints them: `[{scope, reason, pr?}]`.
fn judged_json(list: &[ws::JudgedScope]) -> Value {
    let row = |j: &ws::JudgedScope| {
        let mut row = json!({ "scope": j.scope, "reason": j.reason });
        if let Some(pr) = j.pr {
            row["pr"] = pr.into();
        }
        row
    };
    Value::Array(list.iter().map(row).collect())
}

/// The destroys that did not happen as the output prints them: `[{scope, error}]`, each error the object
/// its destroy ended with.
fn failed_json(list: &[ws::FailedDestroy]) -> Value {
    let row = |f: &ws::FailedDestroy| {
        let error = serde_json::from_str::<Value>(&f.error.json).unwrap_or(Value::Null);
        json!({ "scope": f.scope, "error": error })
    };
    Value::Array(list.iter().map(row).collect())
}

/// The text of `--open-prs` (a file, or stdin for `-`), else what `gh pr list` prints.
async fn open_prs(source: Option<&str>) -> Result<String, HostError> {
    match source {
        Some("-") => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| HostError::io("cannot read the open pull requests from stdin", &e))?;
            Ok(text)
        }
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| HostError::io(format!("cannot read the open pull requests from {path}"), &e)),
        None => ask(
            "gh",
            &["pr", "list", "--state", "open", "--json", "number", "--limit", "1000"],
            "list the open pull requests",
        )
        .await
        .map_err(|e| {
            HostError::usage(format!(
                "{} Pass --open-prs FILE (a JSON list of numbers), or `--open-prs -` with them on stdin.",
                e.message
            ))
        }),
    }
}

/// Runs `program args` (at most [`ASK_TIMEOUT`]) and returns its stdout; an error says what failed.
async fn ask(program: &str, args: &[&str], what: &str) -> Result<String, HostError> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env("GIT_TERMINAL_PROMPT", "0").stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = match tokio::time::timeout(ASK_TIMEOUT, cmd.output()).await {
        Err(_) => return Err(HostError::new("STORE_CONTENDED", format!("`{program}` did not {what} within 60 s"))),
        Ok(Err(e)) => return Err(HostError::io(format!("cannot run `{program}` to {what}"), &e)),
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let first = args.first().copied().unwrap_or_default();
        return Err(HostError::new("INTERNAL", format!("`{program} {first}` could not {what}: {stderr}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `baton destroy --env ENV --scope SCOPE -- CMD` with gc's store, lease and approval flags.
fn destroy_args(args: &GcArgs, env: &str, scope: &str) -> RunArgs {
    let ctx = ContextArgs { env: Some(env.to_owned()), scope: Some(scope.to_owned()), ..args.target.ctx.clone() };
    RunArgs {
        target: TargetArgs { ctx, store: args.target.store.clone(), json: args.target.json },
        lease: args.lease.clone(),
        approved_by: args.approved_by.clone(),
        cancel_grace: args.cancel_grace,
        cmd: args.cmd.clone(),
    }
}
