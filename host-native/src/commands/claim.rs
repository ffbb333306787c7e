//! Carrying out a claim (core/src/claims): the transaction on the resource's claim cell, with the needs the
//! core answers (the environment's listing, the claiming scope's facts) satisfied until it decides.

use super::lock::Target;
use crate::engine::CoreComponent;
use crate::error::HostError;
use serde_json::{Value, json};

/// More rounds than this means the claim kept changing under us (each round is one store read at most).
const MAX_ROUNDS: usize = 8;

/// Whom a claim is for: the run's holder and epoch, its predecessor, the resource.
pub(crate) struct Claimer<'a> {
    pub(crate) holder: &'a str,
    pub(crate) epoch: u64,
    pub(crate) predecessor: &'a Value,
    pub(crate) resource: &'a Value,
}

/// `claim-take` on the resource's claim cell: the decision (`{outcome, claim}`) or `OWNED_BY_OTHER_SCOPE`.
/// With `dry`, a read that writes nothing (what `ledger check --change` would be told). `listed`: the
/// environment's listing when the caller already has it.
pub(crate) fn take(
    core: &mut CoreComponent,
    t: &Target,
    who: &Claimer<'_>,
    dry: bool,
    listed: Option<&[Value]>,
) -> Result<Value, HostError> {
    let (env, scope) = cell_of(core, t, who.resource)?;
    let mut others = listed.map_or(Value::Null, |l| Value::Array(l.to_vec()));
    let mut facts = Value::Null;
    for _ in 0..MAX_ROUNDS {
        let request = |cell: Value, now: i64| {
            json!({
                "cell": cell, "nowMs": now, "env": t.env, "scope": t.scope, "holder": who.holder, "epoch": who.epoch,
                "resource": who.resource, "predecessor": who.predecessor, "others": others, "facts": facts, "dryRun": dry,
            })
        };
        let answer = if dry {
            t.store.read(core, &env, &scope, |core, cell, now| core.invoke("claim-take", &request(cell, now)))?
        } else {
            t.store.transact(core, &env, &scope, |core, cell, now| core.invoke("claim-take", &request(cell, now)))?
        };
        let need = &answer["need"];
        match need["type"].as_str() {
            Some("others") => others = Value::Array(t.store.list(core, &t.env)?),
            Some("facts") => {
                let (e, s) = (need["cell"]["env"].as_str().unwrap_or_default(), need["cell"]["scope"].as_str());
                let mut req = need["request"].clone();
                facts = t.store.read(core, e, s.unwrap_or_default(), |core, cell, now| {
                    req["cell"] = cell;
                    req["nowMs"] = now.into();
                    core.invoke("claim-facts", &req)
                })?;
            }
            _ => return Ok(answer),
        }
    }
    Err(HostError::new(
        "STORE_CONTENDED",
        format!("the ownership claim of {} kept changing while it was read; try again", describe(who.resource)),
    ))
}

/// `claim-free` after a forget landed.
pub(crate) fn free(core: &mut CoreComponent, t: &Target, epoch: u64, resource: &Value) -> Result<Value, HostError> {
    let (env, scope) = cell_of(core, t, resource)?;
    t.store.transact(core, &env, &scope, |core, cell, now| {
        core.invoke(
            "claim-free",
            &json!({ "cell": cell, "nowMs": now, "env": t.env, "scope": t.scope, "epoch": epoch, "resource": resource }),
        )
    })
}

fn cell_of(core: &mut CoreComponent, t: &Target, resource: &Value) -> Result<(String, String), HostError> {
    let cell = core.invoke("claim-cell", &json!({ "env": t.env, "resource": resource }))?;
    let field = |k: &str| cell[k].as_str().unwrap_or_default().to_owned();
    Ok((field("env"), field("scope")))
}

fn describe(resource: &Value) -> String {
    format!("{} `{}`", resource["adapter"].as_str().unwrap_or("?"), resource["key"].as_str().unwrap_or("?"))
}
