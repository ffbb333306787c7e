//! `baton lock acquire|renew|break|release|status`: the run machine (acquire) and typed lock transactions.

use crate::cli::{AcquireArgs, BreakArgs, FenceArgs, ReleaseArgs, RenewArgs, TargetArgs};
use crate::engine::wit::locks::{self, LockAnswer, LockOp};
use crate::engine::{CoreComponent, changes_answer, lock_json, lock_json_or_null, lock_view_json};
use crate::error::HostError;
use crate::output::{Outcome, note};
use crate::store::Store;
use serde_json::{Map, Value};

/// The cell a lock command works on.
pub(crate) struct Target {
    pub(crate) store: Store,
    pub(crate) env: String,
    pub(crate) scope: String,
    pub(crate) context: Value,
}

pub(crate) fn target(core: &mut CoreComponent, args: &TargetArgs) -> Result<Target, HostError> {
    target_for(core, args, false)
}

/// The environment and store of a command on a whole environment (`receipt list`): `scope` is empty when
/// no branch is known (printed as null).
pub(crate) fn env_target(core: &mut CoreComponent, args: &TargetArgs) -> Result<Target, HostError> {
    let context = crate::context::detect_env(core, &args.ctx)?;
    let store = super::open_store(core, args.store.as_deref(), false)?;
    let field = |k: &str| context[k].as_str().unwrap_or_default().to_owned();
    Ok(Target { store, env: field("env"), scope: field("scope"), context })
}

/// The scope and store of a command; `run` lets `baton run` default to the CI remote (see `open_store`).
pub(crate) fn target_for(core: &mut CoreComponent, args: &TargetArgs, run: bool) -> Result<Target, HostError> {
    let context = crate::context::detect(core, &args.ctx)?;
    let store = super::open_store(core, args.store.as_deref(), run)?;
    let field = |k: &str| context[k].as_str().unwrap_or_default().to_owned();
    Ok(Target { store, env: field("env"), scope: field("scope"), context })
}

pub(crate) fn data(t: &Target, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("environment".into(), t.env.clone().into());
    data.insert("scope".into(), if t.scope.is_empty() { Value::Null } else { t.scope.clone().into() });
    data.insert("store".into(), t.store.spec().into());
    for (k, v) in fields {
        data.insert(k.into(), v);
    }
    data
}

/// The holder given by flag or `BATON_HOLDER`, or `USAGE` saying which flag to pass.
pub(crate) fn required_holder(fence: &FenceArgs, what: &str) -> Result<String, HostError> {
    fence.holder.clone().filter(|h| !h.trim().is_empty()).ok_or_else(|| {
        HostError::usage(format!("{what} needs the holder that acquired the lock: pass --holder (or set BATON_HOLDER)"))
    })
}

/// Holder and epoch given by flags or exported by `baton run`, or `USAGE` saying which flag to pass.
pub(crate) fn required_fence(fence: &FenceArgs, what: &str) -> Result<(String, u64), HostError> {
    let holder = required_holder(fence, what)?;
    let epoch = fence
        .epoch
        .ok_or_else(|| HostError::usage(format!("{what} needs the epoch: pass --epoch (or set BATON_EPOCH)")))?;
    Ok((holder, epoch))
}

/// `baton lock acquire`: one acquisition through the core's run machine (job `acquire`, which also does the
/// waiting and the approval); the lock then stays held until released, renewed or expired.
pub async fn acquire(core: CoreComponent, args: &AcquireArgs) -> (CoreComponent, Outcome) {
    let mut core = core;
    let t = match target(&mut core, &args.target) {
        Ok(t) => t,
        Err(e) => return (core, Err(e)),
    };
    let mut config = match super::run_config(crate::engine::wit::runs::Job::Acquire, &args.lease, None) {
        Ok(c) => c,
        Err(e) => return (core, Err(e)),
    };
    config.context = Some(crate::engine::run_context(&t.context));
    config.approved_by.clone_from(&args.approved_by);
    config.holder.clone_from(&args.holder);
    let (core, verdict) = crate::driver::drive(core, t.store.clone(), config, None).await;
    let outcome = match verdict.error {
        Some(e) => Err(e),
        None => {
            let fields = verdict.fields;
            let holder = fields.get("holder").and_then(Value::as_str).unwrap_or_default().to_owned();
            if !args.target.json {
                let lock = fields.get("lock").cloned().unwrap_or(Value::Null);
                note(format!(
                    "acquired {}/{} as {holder} (epoch {}) until {}",
                    t.env,
                    t.scope,
                    lock["epoch"],
                    lock["expiresAt"].as_str().unwrap_or("?")
                ));
                println!("{holder}");
            }
            let field = |k: &str| fields.get(k).cloned().unwrap_or(Value::Null);
            Ok(data(&t, [("lock", field("lock")), ("preempted", field("preempted"))]))
        }
    };
    (core, outcome)
}

/// `baton lock renew`.
pub fn renew(core: &mut CoreComponent, args: &RenewArgs) -> Outcome {
    let (holder, epoch) = required_fence(&args.fence, "renewing")?;
    let t = target(core, &args.target)?;
    let op = LockOp::LockRenew(locks::RenewRequest { holder: holder.clone(), epoch, ttl_ms: args.ttl });
    let mut lock = Value::Null;
    t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        let grant = grant_of(core.lock_decide(&cell, now, &op)?)?;
        lock = lock_json(&grant.lock);
        Ok(changes_answer(&grant.changes))
    })?;
    if !args.target.json {
        let until = lock["expiresAt"].as_str().unwrap_or("?");
        note(format!("renewed {}/{} ({holder}, epoch {epoch}) until {until}", t.env, t.scope));
    }
    Ok(data(&t, [("lock", lock)]))
}

/// The grant of an acquire, renew or break (the core answers nothing else to them).
fn grant_of(answer: LockAnswer) -> Result<locks::Grant, HostError> {
    match answer {
        LockAnswer::Grant(g) => Ok(g),
        _ => Err(HostError::internal("the core answered a lock transaction with something other than a grant")),
    }
}

/// `baton lock break`.
pub fn break_lock(core: &mut CoreComponent, args: &BreakArgs) -> Outcome {
    let t = target(core, &args.target)?;
    // Breaking takes the lock: production needs an approver here too.
    core.approval(&t.env, args.approved_by.as_deref())?;
    let holder = match args.holder.clone().filter(|h| !h.trim().is_empty()) {
        Some(h) => h,
        None => format!("break-{}", crate::random::hex(4)?),
    };
    let op = LockOp::LockBreak(locks::BreakRequest {
        holder: holder.clone(),
        ttl_ms: args.ttl,
        reason: args.reason.clone(),
    });
    let (mut lock, mut preempted) = (Value::Null, Value::Null);
    t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        let grant = grant_of(core.lock_decide(&cell, now, &op)?)?;
        lock = lock_json(&grant.lock);
        preempted = lock_json_or_null(grant.preempted.as_ref());
        Ok(changes_answer(&grant.changes))
    })?;
    if !args.target.json {
        let previous = preempted["holder"].as_str().unwrap_or("nobody");
        note(format!(
            "broke the lock of {}/{} (held by {previous}); {holder} holds it now (epoch {})",
            t.env, t.scope, lock["epoch"]
        ));
        println!("{holder}");
    }
    Ok(data(&t, [("lock", lock), ("preempted", preempted)]))
}

/// `baton lock release`.
pub fn release(core: &mut CoreComponent, args: &ReleaseArgs) -> Outcome {
    let holder = required_holder(&args.fence, "releasing")?;
    let t = target(core, &args.target)?;
    let op = LockOp::LockRelease(locks::ReleaseRequest { holder: holder.clone(), epoch: args.fence.epoch });
    let (mut released, mut current) = (false, Value::Null);
    t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        let LockAnswer::Release(outcome) = core.lock_decide(&cell, now, &op)? else {
            return Err(HostError::internal("the core answered a release with something other than its outcome"));
        };
        released = outcome.released;
        current = lock_json_or_null(outcome.current.as_ref());
        Ok(changes_answer(&outcome.changes))
    })?;
    if !args.target.json {
        match (&current, released) {
            (_, true) => note(format!("released {}/{} ({holder})", t.env, t.scope)),
            (Value::Null, false) => {
                note(format!("nothing to release: {}/{} is not locked by {holder}", t.env, t.scope))
            }
            (cur, false) => note(format!(
                "nothing to release: {}/{} is held by {} (epoch {}), not by {holder}",
                t.env,
                t.scope,
                cur["holder"].as_str().unwrap_or("?"),
                cur["epoch"]
            )),
        }
    }
    Ok(data(&t, [("released", released.into()), ("current", current)]))
}

/// `baton lock status`.
pub fn status(core: &mut CoreComponent, args: &TargetArgs) -> Outcome {
    let t = target(core, args)?;
    let lock = t.store.read(core, &t.env, &t.scope, |core, cell, now| {
        match core.lock_decide(&cell, now, &LockOp::LockRead)? {
            LockAnswer::Read(view) => Ok(view.as_ref().map_or(Value::Null, lock_view_json)),
            _ => Err(HostError::internal("the core answered a read with something other than the lock")),
        }
    })?;
    if !args.json {
        if lock.is_null() {
            note(format!("{}/{} is free", t.env, t.scope));
        } else {
            let expires = lock["expiresAt"].as_str().unwrap_or("?");
            let state = if lock["expired"] == true {
                format!("expired at {expires} (anyone may take it over)")
            } else {
                format!("live until {expires} ({} left)", lock["expiresIn"].as_str().unwrap_or("?"))
            };
            note(format!(
                "{}/{} is held by {} (epoch {}), {state}",
                t.env,
                t.scope,
                lock["holder"].as_str().unwrap_or("?"),
                lock["epoch"]
            ));
        }
    }
    Ok(data(&t, [("lock", lock)]))
}
