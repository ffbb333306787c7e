//! The component's typed `ownership.change` resource, driven as a plugin host drives it (wit/ownership.wit):
//! one `intend` end to end on a dir store (the listing, the claim's compare-and-swap, the fenced intent),
//! then a second scope's intend refused with the typed owner, and nothing written for it.

mod common;

use baton_native::commands::open_store;
use baton_native::engine::wit::locks::{AcquireRequest, LockAnswer, LockOp};
use baton_native::engine::wit::ownership as wo;
use baton_native::engine::wit::types::ErrorCode;
use baton_native::engine::{CoreComponent, cell_of, change_json, from_wit};
use baton_native::store::Store;
use common::TempDir;
use serde_json::{Value, json};

/// `holder` takes the lock of `preview/<scope>`: its epoch.
fn lock(core: &mut CoreComponent, store: &Store, scope: &str, holder: &str) -> u64 {
    let op = LockOp::LockAcquire(AcquireRequest { holder: holder.into(), ttl_ms: 600_000, label: None });
    let answer = store
        .transact(core, "preview", scope, |core, cell, now| {
            let LockAnswer::Grant(g) = core.lock_apply(&cell_of(&cell), now, &op)?.map_err(from_wit)? else {
                panic!("a grant")
            };
            let changes: Vec<Value> = g.changes.iter().map(change_json).collect();
            Ok(json!({ "changes": changes, "epoch": g.lock.epoch }))
        })
        .expect("the lock is granted");
    answer["epoch"].as_u64().expect("an epoch")
}

fn intend(scope: &str, holder: &str, epoch: u64) -> wo::ChangeConfig {
    wo::ChangeConfig {
        env: "preview".into(),
        scope: scope.into(),
        holder: Some(holder.into()),
        epoch: Some(epoch),
        predecessor: None,
        resource: wo::Resource {
            adapter: "vercel".into(),
            key: "env:API_URL".into(),
            provider: r#"{"team":"web"}"#.into(),
            op: None,
            label: Some("API URL".into()),
            parent: None,
        },
        op: wo::ChangeOp::Intend,
        owned_marker: None,
    }
}

/// The plugin host's loop: every action the change hands out, carried out on `store`; the actions seen.
fn drive(
    core: &mut CoreComponent,
    store: &Store,
    config: &wo::ChangeConfig,
) -> (Result<wo::ChangeAnswer, wo::ChangeAction>, Vec<String>) {
    let c = core.change_create(config).expect("creates");
    let mut seen = Vec::new();
    let end = loop {
        let action = core.change_poll(&c).expect("polls").expect("an action until the end");
        match action {
            wo::ChangeAction::Done(a) => break Ok(a),
            failed @ wo::ChangeAction::Failed(_) => break Err(failed),
            wo::ChangeAction::ListScopes(l) => {
                seen.push(format!("list {}", l.env));
                let listing = store.list(core, &l.env).map(|scopes| {
                    scopes
                        .iter()
                        .map(|s| wo::ListedScope {
                            scope: s["scope"].as_str().unwrap_or_default().into(),
                            text: s["text"].as_str().map(Into::into),
                        })
                        .collect()
                });
                core.change_listing(&c, l.id, listing).expect("takes the listing");
            }
            wo::ChangeAction::Load(l) => {
                seen.push(format!("{} {}", if l.write { "write" } else { "read" }, l.env));
                let decide = |core: &mut CoreComponent, cell: Value, now: i64| {
                    let changes = core.change_apply(&c, l.id, &cell_of(&cell), now)?;
                    Ok(json!({ "changes": changes.iter().map(change_json).collect::<Vec<_>>() }))
                };
                let outcome = if l.write {
                    store.transact(core, &l.env, &l.scope, decide).map(drop)
                } else {
                    store.read(core, &l.env, &l.scope, decide).map(drop)
                };
                core.change_outcome(&c, l.id, outcome).expect("takes the outcome");
            }
        }
    };
    assert!(core.change_poll(&c).expect("polls").is_none(), "nothing after the end");
    core.change_drop(c).expect("drops");
    (end, seen)
}

#[test]
fn an_intend_through_the_typed_change_resource_claims_then_writes_and_a_second_scope_is_refused() {
    let dir = TempDir::new("ownership-component");
    let mut core = CoreComponent::load().expect("the component loads");
    let store = open_store(&mut core, Some(&dir.store()), false).expect("opens the store");
    let e1 = lock(&mut core, &store, "pr-1", "run-aaaa1111");

    let (answer, seen) = drive(&mut core, &store, &intend("pr-1", "run-aaaa1111", e1));
    let answer = answer.expect("the intend lands");
    assert_eq!(seen, ["write _claims", "list preview", "write _claims", "write preview"]);
    assert_eq!(answer.claim, Some(wo::ClaimOutcome::Taken));
    let receipt: Value = serde_json::from_str(answer.receipt.as_deref().expect("a receipt")).expect("JSON text");
    assert_eq!(receipt["ledger"][0]["createdBy"], "intent");
    assert_eq!(receipt["ledger"][0]["label"], "API URL");
    // On disk: the claim (format 2) and the intent in the scope's receipt.
    let claims = dir.0.join("store/_claims");
    let claim_dir = std::fs::read_dir(&claims).expect("the claims env").next().expect("one claim").expect("entry");
    let claim: Value = serde_json::from_str(&std::fs::read_to_string(claim_dir.path().join("claim.json")).unwrap())
        .expect("claim JSON");
    assert_eq!((claim["version"].as_u64(), claim["scope"].as_str()), (Some(2), Some("pr-1")));
    assert_eq!(claim["identity"], r#"vercel|{"team":"web"}|env:API_URL"#);

    // The same run again: the claim is held, the intent rewritten in place.
    let (again, _) = drive(&mut core, &store, &intend("pr-1", "run-aaaa1111", e1));
    assert_eq!(again.expect("lands").claim, Some(wo::ClaimOutcome::Held));

    // Another scope: refused before anything is written for it.
    let e2 = lock(&mut core, &store, "pr-2", "run-bbbb2222");
    let before = std::fs::read_to_string(dir.0.join("store/preview/pr-2/lock.json")).unwrap();
    let (refused, seen) = drive(&mut core, &store, &intend("pr-2", "run-bbbb2222", e2));
    let Err(wo::ChangeAction::Failed(e)) = refused else { panic!("refused: {refused:?}") };
    assert_eq!(e.code, ErrorCode::OwnedByOtherScope);
    assert_eq!(e.owner.as_deref(), Some("pr-1"));
    assert!(!seen.contains(&"write preview".to_owned()), "{seen:?}");
    assert!(!dir.0.join("store/preview/pr-2/latest.json").exists());
    assert_eq!(std::fs::read_to_string(dir.0.join("store/preview/pr-2/lock.json")).unwrap(), before);
}

#[test]
fn a_bad_provider_or_a_write_without_the_fence_is_refused_when_created() {
    let mut core = CoreComponent::load().expect("the component loads");
    let mut bad = intend("pr-1", "run-a", 1);
    bad.resource.provider = "[1".into();
    assert_eq!(core.change_create(&bad).unwrap_err().code, "USAGE");
    let mut unfenced = intend("pr-1", "run-a", 1);
    unfenced.holder = None;
    assert_eq!(core.change_create(&unfenced).unwrap_err().code, "USAGE");
}
