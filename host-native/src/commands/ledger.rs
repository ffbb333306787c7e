//! `baton ledger ...`, `baton receipt ...` and `baton status`: what a scope owns, and fenced changes to it.

use super::claim;
use super::lock::{Target, data, required_fence, target};
use crate::cli::{LedgerArgs, ReceiptShowArgs, StatusArgs, TargetArgs};
use crate::engine::CoreComponent;
use crate::engine::wit::commands::OtherScope;
use crate::engine::wit::ownership as wo;
use crate::error::HostError;
use crate::output::{Outcome, note};
use serde_json::{Value, json};

/// The resource named by the flags, as the core's ledger operations take it.
fn resource(args: &LedgerArgs) -> Result<Value, HostError> {
    let provider: Value = serde_json::from_str(&args.provider).map_err(|e| {
        HostError::usage(format!("--provider must be a JSON object ({e}), e.g. '{{\"team\":\"web\"}}'"))
    })?;
    Ok(
        json!({ "adapter": args.adapter, "key": args.key, "provider": provider, "label": args.label, "parent": args.parent }),
    )
}

/// `baton ledger intend|record|forget`: one ownership change (the core's `change` machine: the claim first
/// for intend and record, the fenced write, the claim given back on a refusal, freed after a forget).
pub fn change(core: &mut CoreComponent, args: &LedgerArgs, op: &str) -> Outcome {
    let (holder, epoch) = required_fence(&args.fence, "changing the ledger")?;
    let res = resource(args)?;
    let t = target(core, &args.target)?;
    let change_op = match op {
        "ledger-intend" => wo::ChangeOp::Intend,
        "ledger-record" => wo::ChangeOp::Record(args.id.clone().unwrap_or_default()),
        _ => wo::ChangeOp::Forget,
    };
    let pred = predecessor(core, &t)?;
    let mut config = change_config(args, &t, &res, pred, change_op);
    (config.holder, config.epoch) = (Some(holder), Some(epoch));
    // The marker an entry that becomes owned is written with (the core judges it): docs/compatibility.md.
    config.owned_marker = std::env::var("BATON_CREATED_BY").ok();
    let answer = claim::change(core, &t.store, &config)?;
    for w in &answer.warnings {
        note(format!("warning: {w}"));
    }
    if !args.target.json {
        let verb = op.trim_start_matches("ledger-");
        note(format!("{verb}: {}:{} in {}/{} (epoch {epoch})", args.adapter, args.key, t.env, t.scope));
    }
    let receipt: Value = answer.receipt.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or(Value::Null);
    let mut fields = vec![("resource", res), ("ledger", receipt["ledger"].clone())];
    if let Some(f) = answer.forgotten {
        fields.push(("forgotten", f.into()));
    }
    Ok(data(&t, fields))
}

/// The change of the resource named by the flags (`res`, as [`resource`] read it), without a fence.
fn change_config(args: &LedgerArgs, t: &Target, res: &Value, pred: Value, op: wo::ChangeOp) -> wo::ChangeConfig {
    wo::ChangeConfig {
        env: t.env.clone(),
        scope: t.scope.clone(),
        holder: None,
        epoch: None,
        predecessor: pred.as_str().map(str::to_owned),
        resource: wo::Resource {
            adapter: args.adapter.clone(),
            key: args.key.clone(),
            provider: res["provider"].to_string(),
            op: None,
            label: args.label.clone(),
            parent: args.parent.clone(),
        },
        op,
        owned_marker: None,
    }
}

fn predecessor(core: &mut CoreComponent, t: &Target) -> Result<Value, HostError> {
    let c = &t.context;
    let field = |k: &str| c[k].as_str();
    let inheritance = core.succession(field("scope").unwrap_or_default(), field("branch"), c["pr"].as_u64(), None)?;
    Ok(inheritance.predecessor.map_or(Value::Null, Value::from))
}

/// `baton ledger check`: relies on (or with `--change`, would change) a resource; `OWNED_BY_OTHER_SCOPE`
/// when another scope owns it. Relying on a foreign resource records it as adopted when a holder is given.
/// The core's `change` machine: the listing, the ledger check, and with `--change` a read-only take.
pub fn check(core: &mut CoreComponent, args: &LedgerArgs) -> Outcome {
    let res = resource(args)?;
    let t = target(core, &args.target)?;
    let pred = predecessor(core, &t)?;
    let mut config = change_config(args, &t, &res, pred, wo::ChangeOp::Check(args.change));
    config.holder = args.fence.holder.clone().filter(|h| !h.trim().is_empty());
    config.epoch = args.fence.epoch;
    let answer = claim::change(core, &t.store, &config)?;
    let relation = match answer.relation {
        Some(wo::Relation::Own) => "own",
        Some(wo::Relation::Inherited) => "inherited",
        Some(wo::Relation::Foreign) => "foreign",
        Some(wo::Relation::None) | None => "none",
    };
    if !args.target.json {
        let owner = answer.owner.as_ref().map(|o| format!(" (owned by `{o}`)")).unwrap_or_default();
        note(format!("{}:{} is {relation}{owner} for {}/{}", args.adapter, args.key, t.env, t.scope));
    }
    let owner = answer.owner.map_or(Value::Null, Value::String);
    let fields =
        vec![("resource", res), ("relation", relation.into()), ("owner", owner), ("adopted", answer.adopted.into())];
    Ok(data(&t, fields))
}

/// `baton ledger list`.
pub fn list(core: &mut CoreComponent, args: &TargetArgs) -> Outcome {
    let t = target(core, args)?;
    let status = scope_status(core, &t)?;
    if !args.json {
        for (what, list) in [("owns", &status["owns"]), ("inherited", &status["inherited"])] {
            for r in list.as_array().into_iter().flatten() {
                println!(
                    "{what}\t{}\t{}\t{}\t{}",
                    r["createdBy"].as_str().unwrap_or(""),
                    r["adapter"].as_str().unwrap_or(""),
                    r["key"].as_str().unwrap_or(""),
                    r["id"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(data(&t, [("owns", status["owns"].clone()), ("inherited", status["inherited"].clone())]))
}

fn scope_status(core: &mut CoreComponent, t: &Target) -> Result<Value, HostError> {
    let others = t.store.list(core, &t.env)?;
    let pred = predecessor(core, t)?;
    let others: Vec<OtherScope> = others
        .iter()
        .map(|o| OtherScope {
            scope: o["scope"].as_str().unwrap_or_default().to_owned(),
            text: o["text"].as_str().map(str::to_owned),
        })
        .collect();
    let report = t.store.read(core, &t.env, &t.scope, |core, cell, now| {
        core.scope_status(&crate::engine::cell_of(&cell), now, &others, pred.as_str())
    })?;
    Ok(crate::engine::scope_report_json(&report))
}

/// `baton status`.
pub fn status(core: &mut CoreComponent, args: &StatusArgs) -> Outcome {
    let t = target(core, &args.target)?;
    let s = scope_status(core, &t)?;
    if !args.target.json {
        let lock = &s["lock"];
        let lock_line = match s["lockState"].as_str() {
            Some("live") => format!(
                "held by {} (epoch {}) until {}",
                lock["holder"].as_str().unwrap_or("?"),
                lock["epoch"],
                lock["expiresAt"].as_str().unwrap_or("?")
            ),
            Some("expired") => format!(
                "expired at {} (was {}, epoch {})",
                lock["expiresAt"].as_str().unwrap_or("?"),
                lock["holder"].as_str().unwrap_or("?"),
                lock["epoch"]
            ),
            _ => "free".into(),
        };
        note(format!("{}/{}: lock {lock_line}", t.env, t.scope));
        let count = |k: &str| s[k].as_array().map_or(0, Vec::len);
        note(format!(
            "owns {} resource(s), inherited {}, {} owned by other scopes of {}",
            count("owns"),
            count("inherited"),
            s["foreignCount"],
            t.env
        ));
        for w in s["warnings"].as_array().into_iter().flatten() {
            note(w.as_str().unwrap_or_default());
        }
    }
    let mut fields: Vec<(&str, Value)> = Vec::new();
    for k in [
        "lock",
        "lockState",
        "receipt",
        "owns",
        "inherited",
        "predecessor",
        "handoverPending",
        "foreignCount",
        "conflicts",
        "warnings",
    ] {
        fields.push((k, s[k].clone()));
    }
    Ok(data(&t, fields))
}

/// `baton receipt show`.
pub fn show(core: &mut CoreComponent, args: &ReceiptShowArgs) -> Outcome {
    let t = target(core, &args.target)?;
    let file = args.run.as_ref().map_or_else(|| "latest.json".to_owned(), |r| format!("{r}.json"));
    let Some(text) = t.store.read_file(core, &t.env, &t.scope, &file)? else {
        if !args.target.json {
            note(format!("{}/{} has no receipt {file}", t.env, t.scope));
        }
        return Ok(data(&t, [("receipt", Value::Null)]));
    };
    let place = format!("{}/{}/{file}", t.env, t.scope);
    let receipt = receipt_value(&core.receipt_parse(&text, &place)?)?;
    if !args.target.json {
        println!("{}", serde_json::to_string_pretty(&receipt).unwrap_or_default());
    }
    Ok(data(&t, [("receipt", receipt)]))
}

/// A receipt's body as `receipt-parse` answers it (JSON text: open by design), for output.
fn receipt_value(text: &str) -> Result<Value, HostError> {
    serde_json::from_str(text)
        .map_err(|e| HostError::internal(format!("the core answered a receipt that is not JSON: {e}")))
}

/// `baton receipt list`.
pub fn list_receipts(core: &mut CoreComponent, args: &TargetArgs) -> Outcome {
    let t = super::lock::env_target(core, args)?;
    let mut rows = Vec::new();
    for other in t.store.list(core, &t.env)? {
        let Some(text) = other["text"].as_str() else { continue };
        let place = other["scope"].as_str().unwrap_or_default();
        let row = match core.receipt_parse(text, place).and_then(|t| receipt_value(&t)) {
            Ok(r) => {
                json!({ "scope": other["scope"], "runId": r["runId"], "status": r["status"], "finishedAt": r["finishedAt"],
                        "resources": r["ledger"].as_array().map_or(0, Vec::len), "supersededBy": r["supersededBy"] })
            }
            Err(e) => json!({ "scope": other["scope"], "error": e.to_json() }),
        };
        if !args.json {
            println!(
                "{}\t{}\t{}\t{}",
                row["scope"].as_str().unwrap_or(""),
                row["status"].as_str().unwrap_or("unreadable"),
                row["resources"],
                row["runId"].as_str().unwrap_or("")
            );
        }
        rows.push(row);
    }
    Ok(data(&t, [("receipts", Value::Array(rows))]))
}
