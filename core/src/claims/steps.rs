//! The ownership change machine's ledger steps, and its JSON form for hosts whose stores run core
//! operations by name: the request of each step and the step's answer read back.

use super::change::{ChangeAnswer, ChangeConfig, ChangeOp, resource_json};
use super::step::{Settled, Step};
use super::take::{ClaimFacts, TakeNeed, TakeRequest};
use crate::cell::{Cell, Change};
use crate::error::CoreError;
use crate::ownership::{self, OtherScope, Written};
use crate::time::UnixMs;
use serde_json::{Value, json};

/// The run's fence (holder and epoch), when both are given.
pub(crate) fn fence(c: &ChangeConfig) -> Option<(&str, u64)> {
    c.holder.as_deref().filter(|h| !h.trim().is_empty()).zip(c.epoch)
}

/// The fenced ledger write, or the check, on the run's cell.
pub(crate) fn ledger(
    c: &ChangeConfig,
    others: Option<&[OtherScope]>,
    step: &Step,
    cell: &Cell,
    now: UnixMs,
) -> Result<(Vec<Change>, Settled), CoreError> {
    let res = &c.resource;
    let (holder, epoch) = (c.holder.as_deref().unwrap_or_default(), c.epoch.unwrap_or(0));
    let written = match (&c.op, step) {
        (ChangeOp::Check { change }, Step::Check) => {
            let others = others.unwrap_or_default();
            let mut v = ownership::check(cell, fence(c), now, res, *change, others, c.predecessor.as_deref())?;
            let changes: Vec<Change> = serde_json::from_value(v["changes"].take())
                .map_err(|e| CoreError::internal(format!("ledger-check answered changes that are not: {e}")))?;
            return Ok((changes, Settled::Answer(answer_of(&v))));
        }
        (ChangeOp::Intend, Step::Write) => ownership::intend(cell, holder, epoch, now, res)?,
        (ChangeOp::Record { id }, Step::Write) => {
            ownership::record(cell, holder, epoch, now, res, id, c.owned_marker.as_deref())?
        }
        (ChangeOp::Forget, Step::Write) => ownership::forget(cell, holder, epoch, now, res)?,
        (op, step) => return Err(CoreError::internal(format!("ownership change: no {step:?} for {op:?}"))),
    };
    Ok((written.changes.clone(), Settled::Answer(written_answer(&written))))
}

fn written_answer(w: &Written) -> ChangeAnswer {
    ChangeAnswer {
        receipt: Some(w.receipt_value()),
        forgotten: w.facts.get("forgotten").and_then(Value::as_bool),
        warnings: w.warnings.clone(),
        ..ChangeAnswer::default()
    }
}

/// A ledger write's or check's answer (JSON) as the change answers it.
fn answer_of(v: &Value) -> ChangeAnswer {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let warnings = v
        .get("warnings")
        .and_then(Value::as_array)
        .map_or_else(Vec::new, |w| w.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    ChangeAnswer {
        claim: None,
        receipt: v.get("receipt").filter(|r| !r.is_null()).cloned(),
        forgotten: v.get("forgotten").and_then(Value::as_bool),
        relation: text("relation"),
        owner: text("owner"),
        created_by: text("createdBy"),
        adopted: v.get("adopted") == Some(&Value::Bool(true)),
        warnings,
    }
}

/// The core operation and its request (without `cell`, `nowMs`) that decide `step` as `apply` does.
/// `take`: the take's request as the machine would decide it (asked for only for a take).
pub(crate) fn json_request(
    c: &ChangeConfig,
    others: Option<&[OtherScope]>,
    take: impl FnOnce() -> TakeRequest,
    step: &Step,
) -> Result<(&'static str, Value), CoreError> {
    let res = resource_json(&c.resource);
    let epoch = c.epoch.unwrap_or(0);
    Ok(match step {
        Step::Take => {
            let t = take();
            let others: Option<Vec<Value>> = t
                .others
                .as_ref()
                .map(|list| list.iter().map(|o| json!({ "scope": o.scope, "text": o.text })).collect());
            let request = json!({
                "env": t.env, "scope": t.scope, "holder": t.holder, "epoch": t.epoch, "resource": res,
                "predecessor": t.predecessor, "others": others, "listedAt": t.listed_at, "facts": t.facts,
                "dryRun": t.dry_run,
            });
            ("claim-take", request)
        }
        Step::TakeFacts { claim_epoch, pending, .. } => {
            ("claim-facts", json!({ "resource": res, "claimEpoch": claim_epoch, "pending": pending }))
        }
        Step::OwnFacts => ("claim-facts", json!({ "resource": res, "claimEpoch": epoch })),
        Step::Free { give_back } => (
            "claim-free",
            json!({ "env": c.env, "scope": c.scope, "epoch": epoch, "resource": res, "giveBack": give_back }),
        ),
        Step::Write => {
            let id = match &c.op {
                ChangeOp::Record { id } => Some(id.as_str()),
                _ => None,
            };
            let request =
                json!({ "holder": c.holder, "epoch": epoch, "resource": res, "id": id, "ownedMarker": c.owned_marker });
            (c.op.ledger_op(), request)
        }
        Step::Check => {
            let change = c.op == (ChangeOp::Check { change: true });
            let others: Vec<Value> =
                others.into_iter().flatten().map(|o| json!({ "scope": o.scope, "text": o.text })).collect();
            let (holder, epoch) = fence(c).map_or((None, None), |(h, e)| (Some(h), Some(e)));
            let request = json!({ "holder": holder, "epoch": epoch, "resource": res, "change": change, "others": others, "predecessor": c.predecessor });
            ("ledger-check", request)
        }
        Step::TakeList | Step::CheckList => {
            return Err(CoreError::internal("ownership change: a listing has no core operation"));
        }
    })
}

/// The answer of [`json_request`]'s operation, read back as `apply` would have decided.
pub(crate) fn parse_answer(step: &Step, v: &Value) -> Result<Settled, CoreError> {
    let bad = |what: &str| CoreError::internal(format!("ownership change: the {what} answer does not parse: {v}"));
    match step {
        Step::Take => {
            if let Some(need) = v.get("need").filter(|n| !n.is_null()) {
                let need = match need.get("type").and_then(Value::as_str) {
                    Some("others") => TakeNeed::Others {
                        generation: need.get("generation").and_then(Value::as_u64).ok_or_else(|| bad("claim-take"))?,
                    },
                    Some("facts") => TakeNeed::Facts {
                        scope: need["cell"]["scope"].as_str().ok_or_else(|| bad("claim-take"))?.to_owned(),
                        claim_epoch: need["request"]["claimEpoch"].as_u64().ok_or_else(|| bad("claim-take"))?,
                        pending: need["request"]["pending"].as_str().map(str::to_owned),
                    },
                    _ => return Err(bad("claim-take")),
                };
                return Ok(Settled::Take(Err(need)));
            }
            let outcome = match v.get("outcome").and_then(Value::as_str) {
                Some("held") => "held",
                Some("taken") => "taken",
                Some("restamped") => "restamped",
                Some("inherited") => "inherited",
                _ => return Err(bad("claim-take")),
            };
            Ok(Settled::Take(Ok(outcome)))
        }
        Step::TakeFacts { .. } | Step::OwnFacts => {
            let facts = ClaimFacts {
                scope: v.get("scope").and_then(Value::as_str).ok_or_else(|| bad("claim-facts"))?.to_owned(),
                claim_epoch: v.get("claimEpoch").and_then(Value::as_u64).ok_or_else(|| bad("claim-facts"))?,
                lock_epoch: v.get("lockEpoch").and_then(Value::as_u64),
                lists: v.get("lists").and_then(Value::as_bool).ok_or_else(|| bad("claim-facts"))?,
            };
            Ok(Settled::Facts(facts))
        }
        Step::Free { .. } => Ok(Settled::Freed),
        Step::Write | Step::Check => Ok(Settled::Answer(answer_of(v))),
        Step::TakeList | Step::CheckList => Err(bad("listing")),
    }
}
