//! The claim transactions: take (with its needs), the facts read from a claiming scope's cell, free and
//! move. Each runs on the claim cell ([`super::claim_cell`]) except [`facts`], a read of the claimer's cell.

use super::record::{CLAIM_FILE, CLAIM_VERSION, ClaimRecord, ClaimState, FreeRecord, claim_cell, read_claim_state};
use crate::cell::{Cell, Change};
use crate::error::{CoreError, ErrorCode};
use crate::lock::parse_lock;
use crate::ownership::{OtherScope, Resource, owned_by_other};
use crate::receipt::{CreatedBy, Receipt, read_receipt};
use crate::time::{UnixMs, format_iso};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `claim-take`: the run (`scope`, `holder`, `epoch`) of environment `env` claims `resource` before its
/// intent (or record).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TakeRequest {
    /// The environment of the resource.
    pub env: String,
    /// The claiming scope.
    pub scope: String,
    /// Its holder.
    pub holder: String,
    /// Its epoch.
    pub epoch: u64,
    /// The resource.
    pub resource: Resource,
    /// The scope's predecessor (`succession`), whose resources it inherits.
    #[serde(default)]
    pub predecessor: Option<String>,
    /// The environment's scopes with their `latest.json`, once the host has listed them (a need).
    #[serde(default)]
    pub others: Option<Vec<OtherScope>>,
    /// The claim cell's generation the `others` need named, the host listing after it: the listing is
    /// used only while the claim cell is still at that generation (see [`take`]).
    #[serde(default)]
    pub listed_at: Option<u64>,
    /// The claiming scope's facts, once the host has read them (a need).
    #[serde(default)]
    pub facts: Option<ClaimFacts>,
    /// Only ask (`ledger check --change`): the same decision, no changes (a read-only transaction).
    #[serde(default)]
    pub dry_run: bool,
}

/// What a claim's scope says about it, read in one snapshot of that scope's cell ([`facts`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimFacts {
    /// The claiming scope.
    pub scope: String,
    /// The claim epoch these facts were read for.
    pub claim_epoch: u64,
    /// The epoch of that scope's lock now (`None`: no lock).
    pub lock_epoch: Option<u64>,
    /// Whether its ledger lists the identity as owned or as an intent (an unreadable receipt counts as yes).
    pub lists: bool,
}

/// Whether `receipt` lists `identity` as owned or as an intent (adopted entries own nothing). An entry a
/// pull request inherited from `pending` (a scope that still lists it: the handover is pending) is that
/// scope's, not the pull request's.
pub(crate) fn lists(receipt: &Receipt, identity: &str, pending: Option<&str>) -> bool {
    receipt.ledger.iter().any(|e| {
        e.identity() == identity
            && e.created_by() != CreatedBy::Adopted
            && (pending.is_none() || e.extra.get("inheritedFrom").and_then(Value::as_str) != pending)
    })
}

fn check_cell(cell: &Cell, env: &str, res: &Resource) -> Result<(), CoreError> {
    let (claims_env, scope) = claim_cell(env, &res.adapter, &res.provider, &res.key);
    if cell.env != claims_env || cell.scope != scope {
        return Err(CoreError::internal(format!(
            "claim transaction on {}/{}, but the claim cell of {} `{}` in `{env}` is {claims_env}/{scope} (claim-cell)",
            cell.env, cell.scope, res.adapter, res.key
        )));
    }
    Ok(())
}

/// What a take asks the host to read before it can decide ([`take_typed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TakeNeed {
    /// The environment's listing, read after the claim cell was at `generation`: the host lists and asks
    /// again with `listed_at` = `generation`.
    Others {
        /// The claim cell's generation when the need was answered.
        generation: u64,
    },
    /// The claiming scope's facts ([`facts`] on cell (`env`, `scope`) for this claim epoch); the host
    /// reads them, then asks again *without* its listing.
    Facts {
        /// The claiming scope (its cell is in the run's environment).
        scope: String,
        /// The claim's epoch.
        claim_epoch: u64,
        /// The taker's scope when it lists the identity itself (see [`facts`]).
        pending: Option<String>,
    },
}

/// A take's answer, typed: a need, or the decision with the change that stores it.
#[derive(Clone, Debug, PartialEq)]
pub enum TakeAnswer {
    /// Read this first, then ask again.
    Need(TakeNeed),
    /// Decided: `held`, `taken`, `restamped` or `inherited`, with the changes to commit (none for `held`
    /// and for a dry run) and the claim as it stands after them.
    Decided {
        /// `held`, `taken`, `restamped` or `inherited`.
        outcome: &'static str,
        /// The changes to commit in the same compare-and-swap.
        changes: Vec<Change>,
        /// The claim.
        claim: Box<ClaimRecord>,
    },
}

impl TakeAnswer {
    /// The `claim-take` answer (JSON, `core/src/api.rs`) of a take by `r`.
    pub fn to_json(&self, r: &TakeRequest) -> Value {
        match self {
            Self::Need(TakeNeed::Others { generation }) => {
                json!({ "changes": [], "need": { "type": "others", "generation": generation } })
            }
            Self::Need(TakeNeed::Facts { scope, claim_epoch, pending }) => json!({ "changes": [], "need": {
                "type": "facts",
                "cell": { "env": r.env, "scope": scope },
                "request": { "resource": r.resource.to_value(), "claimEpoch": claim_epoch, "pending": pending },
            } }),
            Self::Decided { outcome, changes, claim } => {
                json!({ "changes": changes, "outcome": outcome, "claim": claim })
            }
        }
    }
}

fn need(need: TakeNeed) -> TakeAnswer {
    TakeAnswer::Need(need)
}

fn decided(outcome: &'static str, changes: Vec<Change>, claim: &ClaimRecord) -> TakeAnswer {
    TakeAnswer::Decided { outcome, changes, claim: Box::new(claim.clone()) }
}

/// `claim-take`: answers `{changes, outcome: held|taken|restamped|inherited, claim}`, or
/// `{changes: [], need: {type: "others"} | {type: "facts", cell: {env, scope}, request}}` when it needs the
/// listing of the environment or a read of the claiming scope's cell (`claim-facts` with `request`) first;
/// `OWNED_BY_OTHER_SCOPE` (with `owner`) when another scope owns the identity (the rule: [`super`]).
/// The JSON form of [`take_typed`].
pub fn take(cell: &Cell, now: UnixMs, r: &TakeRequest) -> Result<Value, CoreError> {
    Ok(take_typed(cell, now, r)?.to_json(r))
}

/// [`take`], typed: what the ownership change machine ([`super::ChangeMachine`]) calls.
///
/// The listing must be newer than everything the decision relies on, or a pull request's inherited copy
/// written in between is missed and the take makes a second owner (simulation seeds 33496 and 198062):
/// - the `others` need names the claim cell's `generation`; the host lists, then asks again with
///   `listedAt` set to it. A claim is written on a listing only while the cell is still at that generation
///   (a take and a free in between, even ending where it started, moved it on), or on a listing the caller
///   already had (`listedAt` absent) for a cell nothing was ever claimed in; a refusal may rest on any;
/// - a host answers `facts` by reading them and then asking again without `others`, so the listing that
///   judges a claim stale is read after the claimer's cell.
pub fn take_typed(cell: &Cell, now: UnixMs, r: &TakeRequest) -> Result<TakeAnswer, CoreError> {
    let mut answer = decide(cell, now, r)?;
    if r.dry_run
        && let TakeAnswer::Decided { changes, .. } = &mut answer
    {
        changes.clear();
    }
    Ok(answer)
}

fn decide(cell: &Cell, now: UnixMs, r: &TakeRequest) -> Result<TakeAnswer, CoreError> {
    r.resource.validate()?;
    check_cell(cell, &r.env, &r.resource)?;
    let identity = r.resource.identity();
    let state = read_claim_state(cell)?;
    let generation = state.generation();
    let claim = state.claim().cloned();
    if let Some(c) = &claim
        && c.scope == r.scope
        && c.epoch == r.epoch
        && c.holder == r.holder
    {
        return Ok(decided("held", Vec::new(), c));
    }
    let ask_others = || need(TakeNeed::Others { generation });
    let Some(others) = &r.others else {
        return Ok(ask_others());
    };
    // A refusal may rest on any listing (a scope that listed it then may have let go since: asking again
    // is the caller's choice); a claim is written only on a listing newer than the cell's last write.
    let fresh = match r.listed_at {
        Some(at) => at == generation,
        None => state == ClaimState::Never,
    };
    let grant = |outcome: &'static str, record: ClaimRecord| {
        if fresh { decided(outcome, vec![record.change()], &record) } else { ask_others() }
    };
    // While this scope lists it, a pull request's inherited copy of it is this scope's (handover pending).
    let own_lists = others.iter().find(|o| o.scope == r.scope).and_then(OtherScope::receipt);
    // The predecessor the host named, else the one this scope's run recorded (`run-begin`), as `ledger-check`.
    let recorded = own_lists.as_ref().map(|rc| rc.str("predecessor").to_owned()).filter(|p| !p.is_empty());
    let pred = r.predecessor.as_deref().or(recorded.as_deref());
    let pending = own_lists.is_some_and(|rc| lists(&rc, &identity, None)).then_some(r.scope.as_str());
    let listers: Vec<&str> = others
        .iter()
        .filter(|o| o.scope != r.scope)
        .filter(|o| o.receipt().is_some_and(|rc| lists(&rc, &identity, pending)))
        .map(|o| o.scope.as_str())
        .collect();
    let foreign: Vec<&str> = listers.iter().copied().filter(|s| Some(*s) != pred).collect();
    if let Some(first) = foreign.first() {
        // Rule 1: another scope's ledger lists it. The claim's scope, if it is one of them, is named.
        let owner = claim.as_ref().map(|c| c.scope.as_str()).filter(|s| foreign.contains(s)).unwrap_or(first);
        let mut e = owned_by_other(&r.resource, owner);
        if foreign.len() > 1 {
            e = e.with("owners", foreign.clone());
        }
        return Err(e);
    }
    let mine = |taken_from: Option<Value>| ClaimRecord {
        version: CLAIM_VERSION,
        environment: r.env.clone(),
        identity: identity.clone(),
        scope: r.scope.clone(),
        epoch: r.epoch,
        holder: r.holder.clone(),
        at: format_iso(now),
        taken_from,
        generation: generation + 1,
        extra: Map::new(),
    };
    let pred_lists = listers.iter().any(|s| Some(*s) == pred);
    let Some(c) = claim else {
        // The predecessor lists it and never claimed it (written before claims), or nobody does.
        let (outcome, record) =
            if pred_lists { ("inherited", mine(pred.map(|p| json!({ "scope": p })))) } else { ("taken", mine(None)) };
        return Ok(grant(outcome, record));
    };
    if c.scope == r.scope {
        // Only asking, without a fence (`ledger check --change` outside a run): the scope's own claim is its own.
        if r.dry_run && r.holder.is_empty() {
            return Ok(decided("held", Vec::new(), &c));
        }
        if r.epoch < c.epoch {
            // A newer run of this scope claimed it: this run's lease was taken over (its writes are fenced out).
            return Err(CoreError::new(
                ErrorCode::LockLost,
                format!(
                    "{} `{}` was claimed for scope `{}` at epoch {}, after this run's epoch {}: a newer run of this scope holds the lease. Nothing was written.",
                    r.resource.adapter, r.resource.key, r.scope, c.epoch, r.epoch
                ),
            )
            .with("epoch", r.epoch)
            .with("claimEpoch", c.epoch));
        }
        let record = ClaimRecord { extra: c.extra.clone(), ..mine(None) };
        return Ok(grant("restamped", record));
    }
    if Some(c.scope.as_str()) == pred && pred_lists {
        // The predecessor owns it and this pull request inherits it: the pull request, which is about to change
        // it, holds the claim from now on, so the branch cannot forget and re-create it meanwhile (while the
        // branch lists it, it stays the branch's: rule 1 reads the pull request's inherited copy as the
        // branch's, and the branch's own later claim judges this one on the pull request's cell).
        let record = mine(Some(json!({ "scope": c.scope, "epoch": c.epoch })));
        return Ok(grant("inherited", record));
    }
    // Rule 2/3: live or stale, judged on the claimer's own cell, read for this very claim.
    let facts = r.facts.as_ref().filter(|f| f.scope == c.scope && f.claim_epoch == c.epoch);
    let Some(f) = facts else {
        let pending = pending.map(str::to_owned);
        return Ok(need(TakeNeed::Facts { scope: c.scope.clone(), claim_epoch: c.epoch, pending }));
    };
    if f.lists || f.lock_epoch == Some(c.epoch) {
        let e = owned_by_other(&r.resource, &c.scope).with("claimEpoch", c.epoch);
        let e = if f.lists {
            e
        } else {
            let message = format!(
                "{} A run of `{}` claimed it at epoch {} and still holds that scope's lock at that epoch (it may be about to create it); when that run is gone for good, the claim is freed by the scope's next run or by `baton lock break --env {} --scope {}`.",
                e.message, c.scope, c.epoch, r.env, c.scope
            );
            crate::error::CoreError { message, ..e }
        };
        return Err(e);
    }
    let record = mine(Some(json!({ "scope": c.scope, "epoch": c.epoch })));
    Ok(grant("taken", record))
}

/// `claim-facts`: read (no lock, nothing written) on the claiming scope's cell: `{scope, claimEpoch,
/// lockEpoch, lists}` for [`take`]. `pending`: the taker's scope when it lists the identity itself, so a
/// pull request's inherited copy of it does not count as the claimer listing it.
pub fn facts(cell: &Cell, res: &Resource, claim_epoch: u64, pending: Option<&str>) -> Result<ClaimFacts, CoreError> {
    res.validate()?;
    // A corrupt lock counts as none: it fences out its holder too (its writes are refused), so a claim whose
    // scope's lock is corrupt cannot be completed by that claimer.
    let lock_epoch = parse_lock(cell).ok().flatten().map(|l| l.epoch);
    // An unreadable receipt cannot tell what it owns: counted as listing it (the claim stays live).
    let lists = match read_receipt(cell) {
        Ok(Some(rc)) => lists(&rc, &res.identity(), pending),
        Ok(None) => false,
        Err(_) => true,
    };
    Ok(ClaimFacts { scope: cell.scope.clone(), claim_epoch, lock_epoch, lists })
}

/// `claim-free`: after `ledger-forget` landed, replaces the claim with a free record if it is `scope`'s at
/// `epoch` or before. Answers `{changes, freed}`.
///
/// `give_back`: the call that took the claim gives it back because its write was refused. A claim that was
/// the cell's first write ever (generation 1: nothing was claimed there before) is then deleted, so a refused
/// command leaves the store as it found it; no ledger ever listed the identity in between (the write was
/// refused), so no listing can have missed anything. Otherwise a free record.
pub fn free_typed(
    cell: &Cell,
    now: UnixMs,
    env: &str,
    scope: &str,
    epoch: u64,
    res: &Resource,
    give_back: bool,
) -> Result<Freed, CoreError> {
    res.validate()?;
    check_cell(cell, env, res)?;
    let state = read_claim_state(cell)?;
    let Some(c) = state.claim().filter(|c| c.scope == scope && c.epoch <= epoch) else {
        return Ok(Freed { changes: Vec::new(), freed: false });
    };
    if give_back && c.epoch == epoch && c.generation == 1 {
        return Ok(Freed { changes: vec![Change::Delete { file: CLAIM_FILE.into() }], freed: true });
    }
    // A free record, not a delete: the generation goes on counting (see [`take`]).
    let record = FreeRecord {
        version: CLAIM_VERSION,
        environment: env.to_owned(),
        identity: res.identity(),
        free: true,
        freed_from: json!({ "scope": c.scope, "epoch": c.epoch }),
        at: format_iso(now),
        generation: state.generation() + 1,
    };
    Ok(Freed { changes: vec![record.change()], freed: true })
}

/// What [`free_typed`] decided: the changes (none when there is nothing of this run's to free) and whether
/// a claim goes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Freed {
    /// The changes to commit.
    pub changes: Vec<Change>,
    /// Whether the claim is freed (or deleted).
    pub freed: bool,
}

/// `claim-free` as JSON (`{changes, freed}`): [`free_typed`].
pub fn free(
    cell: &Cell,
    now: UnixMs,
    env: &str,
    scope: &str,
    epoch: u64,
    res: &Resource,
    give_back: bool,
) -> Result<Value, CoreError> {
    let freed = free_typed(cell, now, env, scope, epoch, res, give_back)?;
    Ok(json!({ "changes": freed.changes, "freed": freed.freed }))
}

/// `claim-move`: the handover gives `from`'s claim (or a missing one) to the successor `to` at `epoch`.
/// A claim of any third scope is left as it is. Answers `{changes, moved}`.
#[allow(clippy::too_many_arguments)]
pub fn moved(
    cell: &Cell,
    now: UnixMs,
    env: &str,
    from: &str,
    to: &str,
    holder: &str,
    epoch: u64,
    res: &Resource,
) -> Result<Value, CoreError> {
    res.validate()?;
    check_cell(cell, env, res)?;
    let state = read_claim_state(cell)?;
    let claim = state.claim().cloned();
    if claim.as_ref().is_some_and(|c| c.scope == to) {
        // The successor claimed it already (it changed what it inherited).
        return Ok(json!({ "changes": [], "moved": true }));
    }
    if claim.as_ref().is_some_and(|c| c.scope != from) {
        return Ok(json!({ "changes": [], "moved": false }));
    }
    let record = ClaimRecord {
        version: CLAIM_VERSION,
        environment: env.to_owned(),
        identity: res.identity(),
        scope: to.to_owned(),
        epoch,
        holder: holder.to_owned(),
        at: format_iso(now),
        taken_from: claim.map(|c| json!({ "scope": c.scope, "epoch": c.epoch })),
        generation: state.generation() + 1,
        extra: Map::new(),
    };
    Ok(json!({ "changes": [record.change()], "moved": true }))
}
