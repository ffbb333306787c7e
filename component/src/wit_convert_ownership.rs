// Conversions between the ownership change machine's types (`baton_core::claims`) and the generated WIT
// types of interface `ownership` (`wo`), both ways where a host needs them. Nothing is decided here.
//
// `include!`d next to `wit_convert.rs` (whose `error`, `error_back`, `cell`, `change` it uses), where the
// generated types are in scope as `t` (interface `types`) and `wo` (`ownership`).

use baton_core::claims::{ChangeAction, ChangeAnswer, ChangeConfig, ChangeOp, Load};
use baton_core::ownership::Resource;

/// A resource as the core takes it; `USAGE` for a provider block that is not JSON.
pub fn resource(r: wo::Resource) -> Result<Resource, CoreError> {
    let provider: Value = if r.provider.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(&r.provider).map_err(|e| {
            CoreError::usage(format!("the provider block must be a JSON object ({e}), e.g. '{{\"team\":\"web\"}}'"))
        })?
    };
    Ok(Resource { adapter: r.adapter, key: r.key, provider, op: r.op, label: r.label, parent: r.parent })
}

/// The change's configuration as the core takes it.
pub fn change_config(c: wo::ChangeConfig) -> Result<ChangeConfig, CoreError> {
    let op = match c.op {
        wo::ChangeOp::Intend => ChangeOp::Intend,
        wo::ChangeOp::Record(id) => ChangeOp::Record { id },
        wo::ChangeOp::Forget => ChangeOp::Forget,
        wo::ChangeOp::Check(change) => ChangeOp::Check { change },
    };
    Ok(ChangeConfig {
        env: c.env,
        scope: c.scope,
        holder: c.holder,
        epoch: c.epoch,
        predecessor: c.predecessor,
        resource: resource(c.resource)?,
        op,
        owned_marker: c.owned_marker,
    })
}

/// The next action as the WIT variant.
pub fn change_action(a: ChangeAction) -> wo::ChangeAction {
    match a {
        ChangeAction::Load(Load { id, env, scope, write }) => wo::ChangeAction::Load(wo::Load { id, env, scope, write }),
        ChangeAction::List { id, env } => wo::ChangeAction::ListScopes(wo::ListRequest { id, env }),
        ChangeAction::Done(answer) => wo::ChangeAction::Done(change_answer(answer)),
        ChangeAction::Failed(e) => wo::ChangeAction::Failed(error(e)),
    }
}

/// The change's answer as the WIT record (the receipt as JSON text: open schema).
pub fn change_answer(a: ChangeAnswer) -> wo::ChangeAnswer {
    let claim = a.claim.as_deref().and_then(|c| match c {
        "held" => Some(wo::ClaimOutcome::Held),
        "taken" => Some(wo::ClaimOutcome::Taken),
        "restamped" => Some(wo::ClaimOutcome::Restamped),
        "inherited" => Some(wo::ClaimOutcome::Inherited),
        _ => None,
    });
    let relation = a.relation.as_deref().and_then(|r| match r {
        "own" => Some(wo::Relation::Own),
        "inherited" => Some(wo::Relation::Inherited),
        "foreign" => Some(wo::Relation::Foreign),
        "none" => Some(wo::Relation::None),
        _ => None,
    });
    wo::ChangeAnswer {
        claim,
        receipt: a.receipt.map(|r| r.to_string()),
        forgotten: a.forgotten,
        relation,
        owner: a.owner,
        created_by: a.created_by,
        adopted: a.adopted,
        warnings: a.warnings,
    }
}

/// A listing as the core takes it.
pub fn listed_scopes(scopes: Vec<wo::ListedScope>) -> Vec<baton_core::ownership::OtherScope> {
    scopes.into_iter().map(|s| baton_core::ownership::OtherScope { scope: s.scope, text: s.text }).collect()
}
