//! `baton lock acquire|release|status`.

use crate::cli::{AcquireArgs, ReleaseArgs, TargetArgs};
use crate::duration::human;
use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::output::{Outcome, note};
use crate::store::DirStore;
use crate::store::mutex::random_hex;
use serde_json::{Map, Value, json};

/// The cell a lock command works on.
struct Target {
    store: DirStore,
    env: String,
    scope: String,
}

fn target(core: &mut CoreComponent, args: &TargetArgs) -> Result<Target, HostError> {
    let context = crate::context::detect(core, &args.ctx)?;
    let store = super::open_store(core, args.store.as_deref())?;
    let field = |k: &str| context[k].as_str().unwrap_or_default().to_owned();
    Ok(Target { store, env: field("env"), scope: field("scope") })
}

fn data(t: &Target, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("environment".into(), t.env.clone().into());
    data.insert("scope".into(), t.scope.clone().into());
    data.insert("store".into(), t.store.spec().into());
    for (k, v) in fields {
        data.insert(k.into(), v);
    }
    data
}

/// `baton lock acquire`.
pub fn acquire(core: &mut CoreComponent, args: &AcquireArgs) -> Outcome {
    let t = target(core, &args.target)?;
    let holder =
        args.holder.clone().filter(|h| !h.trim().is_empty()).unwrap_or_else(|| format!("run-{}", random_hex(4)));
    let ttl = args.ttl;
    let answer = t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        core.invoke("lock-acquire", &json!({ "cell": cell, "holder": holder, "ttlMs": ttl, "nowMs": now }))
    })?;
    let lock = answer["lock"].clone();
    let preempted = answer["preempted"].clone();
    if !preempted.is_null() {
        note(format!(
            "took over an expired lock held by {} since {}",
            preempted["holder"].as_str().unwrap_or("?"),
            preempted["acquiredAt"].as_str().unwrap_or("?")
        ));
    }
    if !args.target.json {
        note(format!(
            "acquired {}/{} as {} (epoch {}) until {}",
            t.env,
            t.scope,
            holder,
            lock["epoch"],
            lock["expiresAt"].as_str().unwrap_or("?")
        ));
        println!("{holder}");
    }
    Ok(data(&t, [("lock", lock), ("preempted", preempted)]))
}

/// `baton lock release`.
pub fn release(core: &mut CoreComponent, args: &ReleaseArgs) -> Outcome {
    let Some(holder) = args.holder.clone().filter(|h| !h.trim().is_empty()) else {
        return Err(HostError::usage(
            "releasing needs the holder that acquired the lock: pass --holder (or set BATON_HOLDER)",
        ));
    };
    let t = target(core, &args.target)?;
    let answer = t.store.transact(core, &t.env, &t.scope, |core, cell, _now| {
        core.invoke("lock-release", &json!({ "cell": cell, "holder": holder, "epoch": args.epoch }))
    })?;
    let released = answer["released"].as_bool().unwrap_or(false);
    if !args.target.json {
        match (&answer["current"], released) {
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
    Ok(data(&t, [("released", released.into()), ("current", answer["current"].clone())]))
}

/// `baton lock status`.
pub fn status(core: &mut CoreComponent, args: &TargetArgs) -> Outcome {
    let t = target(core, args)?;
    let answer = t.store.read(core, &t.env, &t.scope, |core, cell, now| {
        core.invoke("lock-read", &json!({ "cell": cell, "nowMs": now }))
    })?;
    let lock = answer["lock"].clone();
    if !args.json {
        if lock.is_null() {
            note(format!("{}/{} is free", t.env, t.scope));
        } else {
            let expires = lock["expiresAt"].as_str().unwrap_or("?");
            let state = if lock["expired"] == true {
                format!("expired at {expires} (anyone may take it over)")
            } else {
                format!("live until {expires} ({} left)", human(lock["expiresInMs"].as_i64().unwrap_or(0)))
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
