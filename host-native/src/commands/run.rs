//! `baton run -- CMD` (the main job), `baton destroy -- CMD` and `baton lock-object ID -- CMD`: the core's
//! run machine decides everything (approval, the lease, receipts, inheritance, stopping CMD in time,
//! cancellation, the handover, the verdict); this file only gathers the configuration and renders the end.

use super::lock::{data, target_for};
use super::run_config;
use crate::cli::{ObjectArgs, RunArgs};
use crate::driver::{Verdict, drive};
use crate::engine::CoreComponent;
use crate::engine::wit::runs::{Job, ObjectTarget};
use crate::output::Outcome;
use crate::work::Work;
use serde_json::Value;

/// What `baton run` ended with: the outcome to render, and the exit code when it is not the error code's
/// (CMD's own code, 127 when it could not start, or 128 + signal).
pub struct RunEnd {
    /// Data or error for the envelope.
    pub outcome: Outcome,
    /// The exit code to use instead of the one the core derives from the error code.
    pub exit: Option<u8>,
}

/// `baton run`.
pub async fn run(core: CoreComponent, args: &RunArgs) -> (CoreComponent, RunEnd) {
    scoped(core, args, Job::Run).await
}

/// `baton destroy`.
pub async fn destroy(core: CoreComponent, args: &RunArgs) -> (CoreComponent, RunEnd) {
    scoped(core, args, Job::Destroy).await
}

async fn scoped(mut core: CoreComponent, args: &RunArgs, job: Job) -> (CoreComponent, RunEnd) {
    let t = match target_for(&mut core, &args.target, job == Job::Run) {
        Ok(t) => t,
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    let mut config = match run_config(job, &args.lease, args.cancel_grace) {
        Ok(c) => c,
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    config.context = Some(crate::engine::run_context(&t.context));
    config.approved_by.clone_from(&args.approved_by);
    let work = Work { cmd: args.cmd.clone(), json: args.target.json, store_spec: t.store.export_spec() };
    let (core, verdict) = drive(core, t.store.clone(), config, Some(work)).await;
    let end = end_of(verdict, |fields| {
        let mut d = data(&t, []);
        d.extend(fields);
        d
    });
    (core, end)
}

/// `baton lock-object`.
pub async fn lock_object(core: CoreComponent, args: &ObjectArgs) -> (CoreComponent, RunEnd) {
    let mut core = core;
    let mut names: Vec<String> = args.secret_env.clone();
    if let Ok(list) = std::env::var("BATON_SECRET_VARS") {
        names.extend(list.split(',').map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()));
    }
    let secrets: Vec<String> = names.iter().filter_map(|n| std::env::var(n).ok()).collect();
    let store = match super::open_store(&mut core, args.store.as_deref(), false) {
        Ok(s) => s,
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    let mut config = match run_config(Job::Object, &args.lease, args.cancel_grace) {
        Ok(c) => c,
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    config.object = Some(ObjectTarget { identity: args.identity.clone(), secrets });
    let work = Work { cmd: args.cmd.clone(), json: args.json, store_spec: store.export_spec() };
    let spec = store.spec();
    let (core, verdict) = drive(core, store.clone(), config, Some(work)).await;
    let end = end_of(verdict, |fields| {
        let ctx = fields.get("context").cloned().unwrap_or(Value::Null);
        let mut data = serde_json::Map::new();
        data.insert("environment".into(), ctx["env"].clone());
        data.insert("scope".into(), ctx["scope"].clone());
        data.insert("store".into(), spec.clone().into());
        data.extend(fields);
        data
    });
    (core, end)
}

/// The envelope of a verdict: its error (with the exit code the machine chose), or its fields as data.
pub(crate) fn end_of(
    verdict: Verdict,
    data: impl FnOnce(serde_json::Map<String, Value>) -> serde_json::Map<String, Value>,
) -> RunEnd {
    match verdict.error {
        Some(e) => RunEnd { outcome: Err(e), exit: verdict.exit },
        None => RunEnd { outcome: Ok(data(verdict.fields)), exit: verdict.exit },
    }
}
