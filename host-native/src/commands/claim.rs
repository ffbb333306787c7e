//! Carrying out an ownership change (`baton ledger intend|record|forget|check`): the core's `change`
//! machine (`wit/ownership.wit`, `core/src/claims/machine.rs`) decides every step of the protocol; this
//! loop only loads, commits and lists what it asks for.

use crate::engine::CoreComponent;
use crate::engine::wit::ownership as wo;
use crate::engine::{ChangeRef, cell_of, change_json};
use crate::error::HostError;
use crate::store::Store;
use serde_json::{Value, json};

/// Runs the change `config` on `store` to its end: the answer, or the refusal (`OWNED_BY_OTHER_SCOPE`,
/// `LOCK_LOST`, `STORE_CONTENDED`, the store's error). A claim the change took is given back by the
/// machine before a refusal of its write comes back here.
pub fn change(
    core: &mut CoreComponent,
    store: &Store,
    config: &wo::ChangeConfig,
) -> Result<wo::ChangeAnswer, HostError> {
    let c = core.change_create(config)?;
    let answer = drive(core, store, &c);
    core.change_drop(c)?;
    answer
}

fn drive(core: &mut CoreComponent, store: &Store, c: &ChangeRef) -> Result<wo::ChangeAnswer, HostError> {
    loop {
        let Some(action) = core.change_poll(c)? else {
            return Err(HostError::internal("the ownership change stopped without an answer"));
        };
        match action {
            wo::ChangeAction::Done(answer) => return Ok(answer),
            wo::ChangeAction::Failed(e) => return Err(crate::engine::from_wit(e)),
            wo::ChangeAction::ListScopes(l) => {
                let listing = store.list(core, &l.env).map(|scopes| scopes.iter().map(listed).collect());
                core.change_listing(c, l.id, listing)?;
            }
            wo::ChangeAction::Load(l) => {
                let decide = |core: &mut CoreComponent, cell: Value, now: i64| {
                    let changes = core.change_apply(c, l.id, &cell_of(&cell), now)?;
                    Ok(json!({ "changes": changes.iter().map(change_json).collect::<Vec<_>>() }))
                };
                let outcome = if l.write {
                    store.transact(core, &l.env, &l.scope, decide).map(drop)
                } else {
                    store.read(core, &l.env, &l.scope, decide).map(drop)
                };
                core.change_outcome(c, l.id, outcome)?;
            }
        }
    }
}

/// A scope as the store listed it (`{scope, text}`).
fn listed(v: &Value) -> wo::ListedScope {
    wo::ListedScope {
        scope: v["scope"].as_str().unwrap_or_default().to_owned(),
        text: v["text"].as_str().map(str::to_owned),
    }
}
