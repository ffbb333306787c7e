//! `baton ledger ...`, `baton receipt ...` and `baton status`: what a scope owns, and fenced changes to it.

use super::claim::{self, Claimer};
use super::lock::{Target, data, required_fence, target};
use crate::cli::{LedgerArgs, ReceiptShowArgs, StatusArgs, TargetArgs};
use crate::engine::CoreComponent;
use crate::engine::wit::commands::OtherScope;
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

/// `baton ledger intend|record|forget`: one fenced transaction on the scope's receipt.
pub fn change(core: &mut CoreComponent, args: &LedgerArgs, op: &str) -> Outcome {
    let (holder, epoch) = required_fence(&args.fence, "changing the ledger")?;
    let res = resource(args)?;
    let t = target(core, &args.target)?;
    let id = args.id.clone();
    // The claim first (intend, record): of two scopes creating one resource, exactly one gets past here.
    let pred = predecessor(core, &t)?;
    let who = Claimer {
        store: &t.store,
        env: &t.env,
        scope: &t.scope,
        holder: &holder,
        epoch,
        predecessor: &pred,
        resource: &res,
    };
    let taken = if op == "ledger-forget" { None } else { Some(claim::take(core, &who, false, None)?) };
    // The marker an entry that becomes owned is written with (the core judges it): docs/compatibility.md.
    let marker = std::env::var("BATON_CREATED_BY").ok();
    let answer = t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        core.invoke(
            op,
            &json!({ "cell": cell, "holder": holder, "epoch": epoch, "nowMs": now, "resource": res, "id": id, "ownedMarker": marker }),
        )
    });
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            // Refused (LOCK_LOST, RECEIPT_CORRUPT, ...): a claim this call took is given back, so a run that no
            // longer holds its lease leaves nothing behind (unless the write landed after all).
            if taken.as_ref().is_some_and(|c| c["outcome"] == "taken") {
                claim::give_back(core, &who, &e.code);
            }
            return Err(e);
        }
    };
    // The claim goes when the entry went (a claim left by a crash here is stale once the lock moves on).
    if op == "ledger-forget"
        && let Err(e) = claim::free(core, &who)
    {
        // The entry is gone; the claim goes stale by itself once this run's lock moves on.
        note(format!("warning: could not free the ownership claim of {}:{}: {}", args.adapter, args.key, e.message));
    }
    if !args.target.json {
        let verb = op.trim_start_matches("ledger-");
        note(format!("{verb}: {}:{} in {}/{} (epoch {epoch})", args.adapter, args.key, t.env, t.scope));
    }
    let mut fields = vec![("resource", res), ("ledger", answer["receipt"]["ledger"].clone())];
    if let Some(f) = answer.get("forgotten") {
        fields.push(("forgotten", f.clone()));
    }
    Ok(data(&t, fields))
}

fn predecessor(core: &mut CoreComponent, t: &Target) -> Result<Value, HostError> {
    let c = &t.context;
    let field = |k: &str| c[k].as_str();
    let inheritance = core.succession(field("scope").unwrap_or_default(), field("branch"), c["pr"].as_u64(), None)?;
    Ok(inheritance.predecessor.map_or(Value::Null, Value::from))
}

/// `baton ledger check`: relies on (or with `--change`, would change) a resource; `OWNED_BY_OTHER_SCOPE`
/// when another scope owns it. Relying on a foreign resource records it as adopted when a holder is given.
pub fn check(core: &mut CoreComponent, args: &LedgerArgs) -> Outcome {
    let res = resource(args)?;
    let t = target(core, &args.target)?;
    let others = t.store.list(core, &t.env)?;
    let pred = predecessor(core, &t)?;
    let holder = args.fence.holder.clone().filter(|h| !h.trim().is_empty());
    let epoch = args.fence.epoch;
    let request = |cell: Value, now: i64| json!({ "cell": cell, "holder": holder, "epoch": epoch, "nowMs": now, "resource": res, "change": args.change, "others": others, "predecessor": pred });
    let answer = if holder.is_some() && epoch.is_some() {
        t.store.transact(core, &t.env, &t.scope, |core, cell, now| core.invoke("ledger-check", &request(cell, now)))?
    } else {
        t.store.read(core, &t.env, &t.scope, |core, cell, now| core.invoke("ledger-check", &request(cell, now)))?
    };
    // A change must also get past the claim (read only here: `ledger intend` takes it).
    if args.change {
        let h = holder.clone().unwrap_or_default();
        let who = Claimer {
            store: &t.store,
            env: &t.env,
            scope: &t.scope,
            holder: &h,
            epoch: epoch.unwrap_or(0),
            predecessor: &pred,
            resource: &res,
        };
        claim::take(core, &who, true, Some(&others))?;
    }
    if !args.target.json {
        let owner = answer["owner"].as_str().map(|o| format!(" (owned by `{o}`)")).unwrap_or_default();
        note(format!(
            "{}:{} is {}{owner} for {}/{}",
            args.adapter,
            args.key,
            answer["relation"].as_str().unwrap_or("?"),
            t.env,
            t.scope
        ));
    }
    let mut fields =
        vec![("resource", res), ("relation", answer["relation"].clone()), ("owner", answer["owner"].clone())];
    fields.push(("adopted", answer.get("adopted").cloned().unwrap_or(false.into())));
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
