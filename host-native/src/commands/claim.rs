//! Carrying out a claim (core/src/claims): the transaction on the resource's claim cell, with the needs the
//! core answers (the environment's listing, the claiming scope's facts) satisfied until it decides.

use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::store::Store;
use serde_json::{Value, json};

/// More rounds than this means the claim kept changing under us (each round is one store read at most).
const MAX_ROUNDS: usize = 8;

/// Whom a claim is for: the run's store, environment, scope, holder and epoch, its predecessor, the resource.
pub struct Claimer<'a> {
    /// The store.
    pub store: &'a Store,
    /// The environment.
    pub env: &'a str,
    /// The run's scope.
    pub scope: &'a str,
    /// The run's holder.
    pub holder: &'a str,
    /// The run's epoch.
    pub epoch: u64,
    /// The scope's predecessor (`succession`), or null.
    pub predecessor: &'a Value,
    /// The resource (`{adapter, key, provider, ...}`).
    pub resource: &'a Value,
}

/// `claim-take` on the resource's claim cell: the decision (`{outcome, claim}`) or `OWNED_BY_OTHER_SCOPE`.
/// With `dry`, a read that writes nothing (what `ledger check --change` would be told). `listed`: the
/// environment's listing when the caller already has it.
pub fn take(
    core: &mut CoreComponent,
    who: &Claimer<'_>,
    dry: bool,
    listed: Option<&[Value]>,
) -> Result<Value, HostError> {
    let store = who.store;
    let (env, scope) = cell_of(core, who.env, who.resource)?;
    let mut others = listed.map_or(Value::Null, |l| Value::Array(l.to_vec()));
    let mut facts = Value::Null;
    // The claim cell's generation the listing was read after (`need.generation`, see `claims::take`).
    let mut listed_at = Value::Null;
    for _ in 0..MAX_ROUNDS {
        let request = |cell: Value, now: i64| {
            json!({
                "cell": cell, "nowMs": now, "env": who.env, "scope": who.scope, "holder": who.holder, "epoch": who.epoch,
                "resource": who.resource, "predecessor": who.predecessor, "others": others, "listedAt": listed_at,
                "facts": facts, "dryRun": dry,
            })
        };
        let answer = if dry {
            store.read(core, &env, &scope, |core, cell, now| core.invoke("claim-take", &request(cell, now)))?
        } else {
            store.transact(core, &env, &scope, |core, cell, now| core.invoke("claim-take", &request(cell, now)))?
        };
        let need = &answer["need"];
        match need["type"].as_str() {
            Some("others") => {
                others = Value::Array(store.list(core, who.env)?);
                listed_at = need["generation"].clone();
            }
            Some("facts") => {
                let (e, s) = (need["cell"]["env"].as_str().unwrap_or_default(), need["cell"]["scope"].as_str());
                let mut req = need["request"].clone();
                facts = store.read(core, e, s.unwrap_or_default(), |core, cell, now| {
                    req["cell"] = cell;
                    req["nowMs"] = now.into();
                    core.invoke("claim-facts", &req)
                })?;
                // Listed again after the facts: a stale claim is judged on a listing at least as new as the
                // claimer's cell (one read before could miss a pull request's inherited copy written since).
                others = Value::Null;
                listed_at = Value::Null;
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
pub fn free(core: &mut CoreComponent, who: &Claimer<'_>) -> Result<Value, HostError> {
    free_claim(core, who, false)
}

/// `claim-free`; `give_back`: this call took the claim and its write was refused (a first claim is deleted,
/// leaving the store as it was: `claims::free`).
fn free_claim(core: &mut CoreComponent, who: &Claimer<'_>, give_back: bool) -> Result<Value, HostError> {
    let (env, scope) = cell_of(core, who.env, who.resource)?;
    who.store.transact(core, &env, &scope, |core, cell, now| {
        core.invoke(
            "claim-free",
            &json!({ "cell": cell, "nowMs": now, "env": who.env, "scope": who.scope, "epoch": who.epoch,
                     "resource": who.resource, "giveBack": give_back }),
        )
    })
}

/// Gives back a claim this call took when the fenced write that followed it failed, unless that write landed
/// after all (a reply lost after the commit, then a retry refused): the run's own receipt is read first and
/// the claim stays when it lists the resource. `code`: the write's error; a refusal decided on an unreadable
/// receipt (or a bad request) proves nothing landed. Best effort: a claim left is stale once the lock moves on.
pub fn give_back(core: &mut CoreComponent, who: &Claimer<'_>, code: &str) {
    if matches!(code, "RECEIPT_CORRUPT" | "RECEIPT_VERSION" | "USAGE") {
        let _ = free_claim(core, who, true);
        return;
    }
    let facts = who.store.read(core, who.env, who.scope, |core, cell, now| {
        core.invoke(
            "claim-facts",
            &json!({ "cell": cell, "nowMs": now, "resource": who.resource, "claimEpoch": who.epoch }),
        )
    });
    if facts.is_ok_and(|f| f["lists"] == false) {
        let _ = free_claim(core, who, true);
    }
}

fn cell_of(core: &mut CoreComponent, env: &str, resource: &Value) -> Result<(String, String), HostError> {
    let cell = core.invoke("claim-cell", &json!({ "env": env, "resource": resource }))?;
    let field = |k: &str| cell[k].as_str().unwrap_or_default().to_owned();
    Ok((field("env"), field("scope")))
}

fn describe(resource: &Value) -> String {
    format!("{} `{}`", resource["adapter"].as_str().unwrap_or("?"), resource["key"].as_str().unwrap_or("?"))
}
