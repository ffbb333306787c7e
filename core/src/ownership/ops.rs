//! The ownership transactions. Each takes the cell snapshot (with `latest.json`) and answers the changes to
//! commit; the writing ones are fenced by holder and epoch.

use super::scopes::{OtherScope, foreign_map};
use crate::cell::{Cell, Change};
use crate::error::{CoreError, ErrorCode};
use crate::lock::check_fence;
use crate::receipt::{CreatedBy, LedgerEntry, RECEIPT_VERSION, ReadEntry, Receipt, ResourceRef, read_receipt};
use crate::time::{UnixMs, format_iso};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A resource as a command names it: adapter, key and (optional) provider block.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    /// The adapter.
    pub adapter: String,
    /// The key.
    pub key: String,
    /// The provider block (`{}` when absent).
    #[serde(default = "empty")]
    pub provider: Value,
    /// The operation (informational).
    #[serde(default)]
    pub op: Option<String>,
    /// A label.
    #[serde(default)]
    pub label: Option<String>,
    /// The parent object whose lock guards writes to it.
    #[serde(default)]
    pub parent: Option<String>,
}

fn empty() -> Value {
    Value::Object(Map::new())
}

impl Resource {
    /// The identity (`adapter|provider|key`) ledgers and claims key it by.
    pub fn identity(&self) -> String {
        crate::receipt::identity(&self.adapter, &self.provider, &self.key)
    }

    /// The resource as requests carry it: `{adapter, key, provider}`.
    pub fn to_value(&self) -> Value {
        json!({ "adapter": self.adapter, "key": self.key, "provider": self.provider })
    }

    /// `USAGE` for an empty adapter or key, or a provider that is not an object.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.adapter.trim().is_empty() || self.key.trim().is_empty() {
            return Err(CoreError::usage("a resource needs a non-empty adapter and key (--adapter, --key)"));
        }
        if !self.provider.is_object() {
            return Err(CoreError::usage("the provider block must be a JSON object (--provider '{\"team\":\"x\"}')"));
        }
        Ok(())
    }

    fn entry(&self, created_by: CreatedBy, id: &str) -> LedgerEntry {
        LedgerEntry {
            adapter: self.adapter.clone(),
            op: self.op.clone().unwrap_or_default(),
            provider: self.provider.clone(),
            key: self.key.clone(),
            id: id.to_owned(),
            hash: String::new(),
            label: self.label.clone(),
            created_by: created_by.as_str().to_owned(),
            line: String::new(),
            parent: self.parent.clone(),
            extra: Map::new(),
        }
    }
}

/// The run's context as the receipt records it (`ctx`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunContext {
    /// Environment.
    pub env: String,
    /// Scope.
    pub scope: String,
    /// Branch.
    #[serde(default)]
    pub branch: Option<String>,
    /// Commit.
    #[serde(default)]
    pub sha: Option<String>,
    /// Pull request.
    #[serde(default)]
    pub pr: Option<u64>,
}

impl RunContext {
    fn to_ctx(&self) -> Value {
        let short = self.sha.as_deref().map(|s| s.chars().take(7).collect::<String>());
        json!({
            "env": self.env,
            "git": { "branch": self.branch, "sha": self.sha, "short_sha": short },
            "pr": { "number": self.pr },
            "scope": self.scope,
        })
    }
}

/// A fenced write of this run's receipt: the answer of every writing operation.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    /// The changes to commit.
    pub changes: Vec<Change>,
    /// The receipt as it will be stored (`null` when nothing is written), as compact JSON text written once
    /// from the parsed receipt (by serde_json, so it is not parsed again to check it).
    #[serde(serialize_with = "raw_json")]
    pub receipt: String,
    /// What to tell people.
    pub warnings: Vec<String>,
    /// Operation-specific facts.
    #[serde(flatten)]
    pub facts: Map<String, Value>,
}

fn written(receipt: &Receipt, warnings: Vec<String>, facts: Map<String, Value>) -> Result<Written, CoreError> {
    // Serialised once, as stored (pretty); the answer's compact copy is that text without the whitespace
    // between tokens, which is all that tells serde_json's two formats apart.
    let changes = receipt.changes()?;
    let stored = changes.iter().find_map(|c| match c {
        Change::Write { content, .. } => Some(content.as_str()),
        Change::Delete { .. } => None,
    });
    let text = match stored {
        Some(pretty) => crate::cell::compact_json(pretty),
        None => serde_json::to_string(receipt).map_err(|e| CoreError::internal(e.to_string()))?,
    };
    Ok(Written { changes, receipt: text, warnings, facts })
}

/// Serialises JSON text as the value it is (the derived `Serialize` of [`Written`]; its own answers are
/// written by [`Written::to_json_text`]).
fn raw_json<S: serde::Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    serde_json::value::RawValue::from_string(text.to_owned()).map_err(serde::ser::Error::custom)?.serialize(s)
}

impl Written {
    /// The answer as JSON text: byte for byte what `serde_json::to_string` writes of it, faster where it
    /// counts (a change's content is a whole receipt, and the receipt and its run's file are the same
    /// text: it is escaped once).
    pub fn to_json_text(&self) -> String {
        let contents: usize =
            self.changes.iter().map(|c| if let Change::Write { content, .. } = c { content.len() } else { 0 }).sum();
        let mut out: Vec<u8> = Vec::with_capacity(contents + contents / 4 + self.receipt.len() + 256);
        out.extend_from_slice(b"{\"changes\":[");
        // The last content escaped, and where in `out` its JSON string is.
        let mut escaped: Option<(&str, std::ops::Range<usize>)> = None;
        for (i, change) in self.changes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match change {
                Change::Write { file, content } => {
                    out.extend_from_slice(b"{\"op\":\"write\",\"file\":");
                    push_json_string(&mut out, file);
                    out.extend_from_slice(b",\"content\":");
                    match &escaped {
                        Some((text, json)) if *text == content.as_str() => out.extend_from_within(json.clone()),
                        _ => {
                            let start = out.len();
                            push_json_string(&mut out, content);
                            escaped = Some((content, start..out.len()));
                        }
                    }
                    out.push(b'}');
                }
                Change::Delete { file } => {
                    out.extend_from_slice(b"{\"op\":\"delete\",\"file\":");
                    push_json_string(&mut out, file);
                    out.push(b'}');
                }
            }
        }
        out.extend_from_slice(b"],\"receipt\":");
        out.extend_from_slice(self.receipt.as_bytes());
        out.extend_from_slice(b",\"warnings\":[");
        for (i, w) in self.warnings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_json_string(&mut out, w);
        }
        out.push(b']');
        for (k, v) in &self.facts {
            out.push(b',');
            push_json_string(&mut out, k);
            out.push(b':');
            let mark = out.len();
            if serde_json::to_writer(&mut out, v).is_err() {
                // A `Value` always serialises; never half of one.
                out.truncate(mark);
                out.extend_from_slice(b"null");
            }
        }
        out.push(b'}');
        // Valid UTF-8: the strings' bytes are copied whole, only ASCII is added.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// The receipt as a JSON value (`null` when nothing is written).
    pub fn receipt_value(&self) -> Value {
        serde_json::from_str(&self.receipt).unwrap_or(Value::Null)
    }
}

/// Appends `s` as a JSON string exactly as `serde_json` writes it: `"` and `\\` escaped, the control
/// characters as `\b \t \n \f \r` or `\u00xx`, every other byte as it is. A byte at a time: in a
/// pretty-printed receipt every few bytes need escaping.
fn push_json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &b in s.as_bytes() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            out.push(b);
            continue;
        }
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]),
        }
    }
    out.push(b'"');
}

/// A fresh receipt for run `run_id`, carrying the ledger, history and hash key of `previous`.
fn new_run_receipt(cell: &Cell, run_id: &str, epoch: u64, now: UnixMs, previous: Option<&Receipt>) -> Receipt {
    let mut doc = Map::new();
    doc.insert("version".into(), json!(RECEIPT_VERSION));
    doc.insert("runId".into(), json!(run_id));
    doc.insert("environment".into(), json!(cell.env));
    doc.insert("scope".into(), json!(cell.scope));
    doc.insert("status".into(), json!("failed"));
    doc.insert("inProgress".into(), json!(true));
    doc.insert("startedAt".into(), json!(format_iso(now)));
    doc.insert("finishedAt".into(), json!(""));
    doc.insert("plan".into(), json!({ "hash": "" }));
    let ctx = previous.and_then(|p| p.doc.get("ctx").cloned()).unwrap_or(Value::Null);
    doc.insert("ctx".into(), ctx);
    doc.insert("lines".into(), json!({}));
    doc.insert("ledger".into(), Value::Null);
    let history = previous.and_then(|p| p.doc.get("history").cloned()).unwrap_or_else(|| json!([]));
    doc.insert("history".into(), history);
    let key = previous.map(|p| p.str("hashKey").to_owned()).unwrap_or_default();
    doc.insert("hashKey".into(), json!(key));
    doc.insert("epoch".into(), json!(epoch));
    // Who took this scope's resources over, and deliberate lock breaks, stay on record across later runs.
    for key in ["supersededBy", "lockBreaks"] {
        if let Some(v) = previous.and_then(|p| p.doc.get(key)) {
            doc.insert(key.into(), v.clone());
        }
    }
    Receipt { doc, ledger: previous.map(|p| p.ledger.clone()).unwrap_or_default() }
}

/// The receipt this holder's run writes to: the stored one when it is already this run's, else a new run
/// receipt carrying the stored ledger. Fenced first.
fn run_receipt(cell: &Cell, holder: &str, epoch: u64, now: UnixMs) -> Result<Receipt, CoreError> {
    check_fence(cell, holder, epoch)?;
    let stored = read_receipt(cell)?;
    match stored {
        Some(r) if r.str("runId") == holder => Ok(r),
        other => Ok(new_run_receipt(cell, holder, epoch, now, other.as_ref())),
    }
}

/// `run-begin`: starts a run's receipt (fenced): carries the scope's ledger, inherits the predecessor's
/// entries (marked `inheritedFrom`), records context, epoch, `lockPreempted` and `approvedBy`, and writes it
/// as a checkpoint (`status: failed`, `inProgress: true`), so a crash leaves a correct record.
#[allow(clippy::too_many_arguments)]
pub fn run_begin(
    cell: &Cell,
    holder: &str,
    epoch: u64,
    now: UnixMs,
    ctx: &RunContext,
    hash_key: &str,
    lock_preempted: Option<&str>,
    approved_by: Option<&str>,
    destroy: bool,
    predecessor: Option<&OtherScope>,
) -> Result<Written, CoreError> {
    check_fence(cell, holder, epoch)?;
    let previous = read_receipt(cell)?;
    let mut r = new_run_receipt(cell, holder, epoch, now, previous.as_ref());
    r.set("ctx", ctx.to_ctx());
    if r.str("hashKey").is_empty() && previous.is_none() {
        r.set("hashKey", hash_key);
    }
    if let Some(p) = lock_preempted {
        r.set("lockPreempted", p);
    }
    if let Some(a) = approved_by {
        r.set("approvedBy", a);
    }
    if destroy {
        r.set("destroy", true);
    }
    let mut warnings = Vec::new();
    let mut inherited = 0usize;
    if let Some(pred) = predecessor {
        // Later checks in this run (`ledger-check` from the command) read the predecessor from here.
        r.set("predecessor", pred.scope.clone());
    }
    if let Some(pred) = predecessor
        && !destroy
        && let Some(pr) = pred.receipt()
    {
        let mut known: BTreeSet<String> = r.ledger.iter().map(LedgerEntry::identity).collect();
        for entry in pr.ledger {
            if known.insert(entry.identity()) {
                let mut e = entry;
                e.hash = String::new();
                e.extra.insert("inheritedFrom".into(), json!(pred.scope));
                r.ledger.push(e);
                inherited += 1;
            }
        }
        if inherited > 0 {
            let noun = if inherited == 1 { "resource" } else { "resources" };
            warnings.push(format!(
                "Inherited {inherited} {noun} from scope `{}` (this pull request's head branch). Destroying this scope removes them.",
                pred.scope
            ));
        }
    }
    let mut facts = Map::new();
    facts.insert("inherited".into(), json!(inherited));
    facts.insert("owned".into(), json!(r.ledger.iter().filter(|e| e.created_by() != CreatedBy::Adopted).count()));
    written(&r, warnings, facts)
}

/// `ledger-intend`: records a write-ahead intent before a create (fenced checkpoint). An entry with the same
/// identity is replaced in place (a create makes a new object).
pub fn intend(cell: &Cell, holder: &str, epoch: u64, now: UnixMs, res: &Resource) -> Result<Written, CoreError> {
    res.validate()?;
    let mut r = run_receipt(cell, holder, epoch, now)?;
    let mut entry = res.entry(CreatedBy::Intent, "");
    match r.position(&res.identity()) {
        // A create makes a new object; what the entry says about where it came from (`inheritedFrom`) and
        // fields this version does not know stay, as `record` keeps them.
        Some(i) => {
            entry.extra = std::mem::take(&mut r.ledger[i].extra);
            r.ledger[i] = entry;
        }
        None => r.ledger.push(entry),
    }
    written(&r, Vec::new(), Map::new())
}

/// `ledger-record`: the resource exists with `id` and this scope owns it (an intent becomes owned; an
/// unknown resource is added). Recording an inherited entry keeps its position and drops nothing.
///
/// An entry that becomes owned is written with `marker` (`baton`, the default, or the original tool's
/// `sponson`, for stores shared with it: [`crate::receipt::owned_marker`]); an entry already owned keeps the
/// marker it was written with.
pub fn record(
    cell: &Cell,
    holder: &str,
    epoch: u64,
    now: UnixMs,
    res: &Resource,
    id: &str,
    marker: Option<&str>,
) -> Result<Written, CoreError> {
    res.validate()?;
    let marker = crate::receipt::owned_marker(marker)?;
    if id.trim().is_empty() {
        return Err(CoreError::usage("recording a resource needs its provider id (--id)"));
    }
    let mut r = run_receipt(cell, holder, epoch, now)?;
    match r.position(&res.identity()) {
        Some(i) => {
            let e = &mut r.ledger[i];
            e.id = id.to_owned();
            if e.created_by() != CreatedBy::Owned {
                e.created_by = marker.into();
            }
            if res.label.is_some() {
                e.label.clone_from(&res.label);
            }
            if res.parent.is_some() {
                e.parent.clone_from(&res.parent);
            }
        }
        None => {
            let mut entry = res.entry(CreatedBy::Owned, id);
            entry.created_by = marker.into();
            r.ledger.push(entry);
        }
    }
    written(&r, Vec::new(), Map::new())
}

/// `ledger-forget`: removes the entry (it was deleted, or was never created).
pub fn forget(cell: &Cell, holder: &str, epoch: u64, now: UnixMs, res: &Resource) -> Result<Written, CoreError> {
    res.validate()?;
    let mut r = run_receipt(cell, holder, epoch, now)?;
    let before = r.ledger.len();
    let identity = res.identity();
    r.ledger.retain(|e| e.identity() != identity);
    let mut facts = Map::new();
    facts.insert("forgotten".into(), json!(before != r.ledger.len()));
    written(&r, Vec::new(), facts)
}

/// `ledger-check`: may this scope create or change (`change`) the resource, or rely on it? Foreign and
/// changed: `OWNED_BY_OTHER_SCOPE`. Foreign and relied on: recorded as `adopted` (a fenced write when a
/// holder is given). Answers `{relation: own|inherited|foreign|none, owner?, changes}`.
#[allow(clippy::too_many_arguments)]
pub fn check(
    cell: &Cell,
    fence: Option<(&str, u64)>,
    now: UnixMs,
    res: &Resource,
    change: bool,
    others: &[OtherScope],
    predecessor: Option<&str>,
) -> Result<Value, CoreError> {
    res.validate()?;
    let identity = res.identity();
    let own = read_receipt(cell)?;
    let recorded = own.as_ref().map(|r| r.str("predecessor").to_owned()).filter(|p| !p.is_empty());
    let predecessor = predecessor.or(recorded.as_deref());
    if let Some(e) = own.as_ref().and_then(|r| r.position(&identity).map(|i| &r.ledger[i])) {
        let inherited =
            e.extra.contains_key("inheritedFrom") && pending_handover(predecessor, others).contains(&identity);
        let relation = if inherited { "inherited" } else { "own" };
        if !(change && e.created_by() == CreatedBy::Adopted) {
            return Ok(json!({ "relation": relation, "createdBy": e.created_by().as_str(), "changes": [] }));
        }
    }
    let foreign = foreign_map(&cell.scope, predecessor, others);
    let Some(owner) = foreign.get(&identity) else {
        return Ok(json!({ "relation": "none", "changes": [] }));
    };
    if change {
        return Err(owned_by_other(res, owner));
    }
    let mut facts = Map::new();
    facts.insert("relation".into(), json!("foreign"));
    facts.insert("owner".into(), json!(owner));
    let Some((holder, epoch)) = fence else {
        facts.insert("changes".into(), json!([]));
        return Ok(Value::Object(facts));
    };
    let mut r = run_receipt(cell, holder, epoch, now)?;
    if r.position(&identity).is_none() {
        r.ledger.push(res.entry(CreatedBy::Adopted, ""));
    }
    facts.insert("adopted".into(), json!(true));
    serde_json::to_value(written(&r, Vec::new(), facts)?).map_err(|e| CoreError::internal(e.to_string()))
}

/// `OWNED_BY_OTHER_SCOPE`: `res` belongs to scope `owner` of the environment (details `owner`, `resource`).
pub fn owned_by_other(res: &Resource, owner: &str) -> CoreError {
    CoreError::new(
        ErrorCode::OwnedByOtherScope,
        format!(
            "{} `{}` is managed by scope `{owner}` in this environment; this scope may not create or change it. It may rely on it unchanged.",
            res.adapter, res.key
        ),
    )
    .with("owner", owner)
    .with("resource", res.to_value())
}

/// `run-finish`: the run's final receipt (fenced): `status` (`complete`, `failed`, or `cancelled` after a
/// cancel signal), `finishedAt`, the commit moved to the end of
/// `history`. A destroy run is `complete` only when nothing it owns is left; intents left over are named in
/// `unresolved` (the host reports `INTENT_UNRESOLVED` after the receipt landed).
pub fn run_finish(
    cell: &Cell,
    holder: &str,
    epoch: u64,
    now: UnixMs,
    succeeded: bool,
    cancelled: bool,
    sha: Option<&str>,
) -> Result<Written, CoreError> {
    let mut r = run_receipt(cell, holder, epoch, now)?;
    let destroy = r.doc.get("destroy") == Some(&json!(true));
    let left: Vec<&LedgerEntry> = r.ledger.iter().filter(|e| e.created_by() != CreatedBy::Adopted).collect();
    let unresolved: Vec<ResourceRef> =
        left.iter().filter(|e| e.created_by() == CreatedBy::Intent).map(|e| e.to_ref()).collect();
    let complete = succeeded && !cancelled && (!destroy || left.is_empty());
    let status = match (complete, cancelled) {
        (true, _) => "complete",
        (false, true) => "cancelled",
        (false, false) => "failed",
    };
    r.set("status", status);
    r.doc.shift_remove("inProgress");
    r.set("finishedAt", format_iso(now));
    if let Some(sha) = sha.filter(|s| !s.is_empty()) {
        let mut history: Vec<Value> = r.doc.get("history").and_then(Value::as_array).cloned().unwrap_or_default();
        history.retain(|h| h.get("sha").and_then(Value::as_str) != Some(sha));
        history.push(json!({ "sha": sha, "at": format_iso(now) }));
        r.set("history", history);
    }
    let mut facts = Map::new();
    facts.insert("status".into(), json!(status));
    facts.insert("unresolved".into(), serde_json::to_value(&unresolved).unwrap_or_default());
    written(&r, Vec::new(), facts)
}

/// `handover`: under the predecessor's lock (held by `holder` at `epoch`), rewrites the predecessor's
/// receipt as read now (never a stale snapshot) without the entries the successor owns, with `supersededBy`.
pub fn handover(
    cell: &Cell,
    holder: &str,
    epoch: u64,
    now: UnixMs,
    successor: &str,
    successor_ledger: &[EntryOrIdentity],
) -> Result<Written, CoreError> {
    check_fence(cell, holder, epoch)?;
    let successor_ledger: BTreeSet<String> =
        successor_ledger.iter().filter_map(EntryOrIdentity::owned_identity).collect();
    let Some(mut r) = read_receipt(cell)? else {
        return written_nothing("moved");
    };
    let (gone, kept): (Vec<LedgerEntry>, Vec<LedgerEntry>) =
        std::mem::take(&mut r.ledger).into_iter().partition(|e| successor_ledger.contains(&e.identity()));
    r.ledger = kept;
    let moved = gone.len();
    if moved == 0 {
        return written_nothing("moved");
    }
    r.set("runId", holder);
    r.set("epoch", epoch);
    r.set("finishedAt", format_iso(now));
    r.set("supersededBy", successor);
    let mut facts = Map::new();
    facts.insert("moved".into(), json!(moved));
    // Their claims move next (`claim-move`, core/src/claims), while this lock is still held.
    let resources: Vec<Value> = gone
        .into_iter()
        .map(|e| {
            let mut m = Map::with_capacity(3);
            m.insert("adapter".into(), Value::String(e.adapter));
            m.insert("key".into(), Value::String(e.key));
            m.insert("provider".into(), e.provider);
            Value::Object(m)
        })
        .collect();
    facts.insert("movedResources".into(), json!(resources));
    written(&r, Vec::new(), facts)
}

/// A successor's ledger entry, or just its identity string.
///
/// Read as `#[serde(untagged)]` reads it (a string, else a ledger entry as its derived `Deserialize`
/// reads it, else the untagged enum's error), in one pass without buffering each element.
#[derive(Clone, Debug)]
pub enum EntryOrIdentity {
    /// An identity (`adapter|provider|key`).
    Identity(String),
    /// A ledger entry.
    Entry(Box<LedgerEntry>),
}

impl<'de> Deserialize<'de> for EntryOrIdentity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // The error is raised here, after the element was read, where the untagged enum raises it (the
        // same text, at the same position).
        let no_match = || serde::de::Error::custom("data did not match any variant of untagged enum EntryOrIdentity");
        match ReadEntry::deserialize(d)? {
            ReadEntry::Text(s) => Ok(Self::Identity(s)),
            ReadEntry::Fields(f) if !f.duplicate => {
                LedgerEntry::from_fields(f).map(|e| Self::Entry(Box::new(e))).map_err(|_| no_match())
            }
            _ => Err(no_match()),
        }
    }
}

impl EntryOrIdentity {
    /// The identity the successor owns: `None` for an entry it only adopted (relying on a resource does not
    /// take it over: the predecessor keeps owning it).
    fn owned_identity(&self) -> Option<String> {
        match self {
            Self::Identity(i) => Some(i.clone()),
            Self::Entry(e) if e.created_by() == CreatedBy::Adopted => None,
            Self::Entry(e) => Some(e.identity()),
        }
    }
}

fn written_nothing(fact: &str) -> Result<Written, CoreError> {
    let mut facts = Map::new();
    facts.insert(fact.into(), json!(0));
    Ok(Written { changes: Vec::new(), receipt: "null".to_owned(), warnings: Vec::new(), facts })
}

/// `destroy-plan`: what a destroy run deletes: owned entries and intents, newest first (intents are marked;
/// the command must resolve each: delete it if it exists, then forget it). Adopted entries are only
/// forgotten, in this same fenced write.
pub fn destroy_plan(cell: &Cell, holder: &str, epoch: u64, now: UnixMs) -> Result<Written, CoreError> {
    let mut r = run_receipt(cell, holder, epoch, now)?;
    let adopted = r.ledger.iter().filter(|e| e.created_by() == CreatedBy::Adopted).count();
    r.ledger.retain(|e| e.created_by() != CreatedBy::Adopted);
    let delete: Vec<ResourceRef> = r.ledger.iter().rev().map(LedgerEntry::to_ref).collect();
    let mut facts = Map::new();
    facts.insert("delete".into(), serde_json::to_value(delete).unwrap_or_default());
    facts.insert("adoptedForgotten".into(), json!(adopted));
    written(&r, Vec::new(), facts)
}

/// The identities the predecessor still lists: inherited entries whose handover is pending.
pub(super) fn pending_handover(predecessor: Option<&str>, others: &[OtherScope]) -> BTreeSet<String> {
    predecessor
        .and_then(|p| others.iter().find(|o| o.scope == p))
        .and_then(OtherScope::receipt)
        .map(|r| r.ledger.iter().map(LedgerEntry::identity).collect())
        .unwrap_or_default()
}

/// Whether `env` is production, in any letter case: on a case-insensitive file system (macOS, Windows)
/// `Production/` is the same directory as `production/`, so no spelling of it may skip the approval.
pub fn protected_env(env: &str) -> bool {
    env.eq_ignore_ascii_case("production")
}

/// What `approval` decided: whether the environment needs an approver, and the one to record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The environment is production (any letter case).
    pub required: bool,
    /// The approver to record (trimmed), only when required.
    pub approved_by: Option<String>,
}

/// `approval`: a run writing to `production` (any letter case, see [`protected_env`]) needs a named approver
/// (trimmed, non-blank), refused with `ENV_NOT_APPROVED` before any lock is taken. Answers the approver to
/// record (only when required).
pub fn approve(env: &str, approved_by: Option<&str>) -> Result<Approval, CoreError> {
    let name = approved_by.map(str::trim).filter(|s| !s.is_empty());
    if !protected_env(env) {
        return Ok(Approval { required: false, approved_by: None });
    }
    match name {
        Some(n) => Ok(Approval { required: true, approved_by: Some(n.to_owned()) }),
        None => Err(CoreError::new(
            ErrorCode::EnvNotApproved,
            format!(
                "This run applies to {}: approval is required (approvedBy). Nothing was locked or written.",
                if env == "production" { "production".to_owned() } else { format!("production (spelled `{env}`)") }
            ),
        )
        .with("environment", env)),
    }
}

/// [`approve`] as JSON (`{required, approvedBy}`), for the run machine's configuration.
pub fn approval(env: &str, approved_by: Option<&str>) -> Result<Value, CoreError> {
    approve(env, approved_by).map(|a| serde_json::to_value(a).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The successor's ledger as `#[serde(untagged)]` read it before.
    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    enum UntaggedReference {
        Identity(String),
        Entry(Box<LedgerEntry>),
    }

    #[test]
    fn a_successor_ledger_reads_as_the_untagged_enum_did() {
        let e = r#"{"adapter":"a","key":"k","createdBy":"baton"}"#;
        let cases = [
            format!(r#"["a|{{}}|k",{e},"x"]"#),
            r#"[{"z":1,"adapter":"v","provider":{"t":1},"key":"k","id":"i","hash":"h","label":"l","createdBy":"adopted","line":"x","parent":"p","inheritedFrom":"b","a":[1],"a":2}]"#.to_owned(),
            r#"[{"adapter":"a","key":"k","createdBy":"baton","label":null,"parent":null,"provider":null}]"#.to_owned(),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","adapter":"b"}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","id":1}}, "x"]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k"}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","op":null}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","label":2}}]"#),
            format!(r#"[{e},null]"#),
            format!(r#"[{e},1]"#),
            format!(r#"[{e},[{e}]]"#),
            format!(r#"[{e},{}{}]"#, "[".repeat(140), "]".repeat(140)),
            format!(r#"[{e},"\ud800"]"#),
            format!(r#"[{e},]"#),
            format!(r#"[{e}"#),
            "{}".to_owned(),
        ];
        for text in &cases {
            let new = serde_json::from_str::<Vec<EntryOrIdentity>>(text).map_err(|e| e.to_string());
            let old = serde_json::from_str::<Vec<UntaggedReference>>(text)
                .map_err(|e| e.to_string().replace("UntaggedReference", "EntryOrIdentity"));
            match (new, old) {
                (Ok(new), Ok(old)) => {
                    assert_eq!(new.len(), old.len(), "{text}");
                    for (n, o) in new.iter().zip(&old) {
                        match (n, o) {
                            (EntryOrIdentity::Identity(a), UntaggedReference::Identity(b)) => assert_eq!(a, b),
                            (EntryOrIdentity::Entry(a), UntaggedReference::Entry(b)) => assert_eq!(a, b),
                            _ => panic!("{text}: {n:?} / {o:?}"),
                        }
                    }
                }
                (new, old) => assert_eq!(new.err(), old.err(), "{text}"),
            }
        }
    }

    #[test]
    fn the_answer_text_is_what_serde_json_writes() {
        let odd = "q\"b\\s\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f} é 𝄞 end";
        let receipt = |t: &str| t.to_owned();
        let mut facts = Map::new();
        facts.insert("moved".into(), json!(2));
        facts.insert(odd.into(), json!([{ "a": odd, "b": null, "c": 1.5 }]));
        let cases = [
            Written { changes: Vec::new(), receipt: receipt("null"), warnings: Vec::new(), facts: Map::new() },
            Written {
                changes: vec![
                    Change::Write { file: "run-1.json".into(), content: format!("{{\n  \"k\": \"{odd}\"\n}}\n") },
                    Change::Write { file: "latest.json".into(), content: format!("{{\n  \"k\": \"{odd}\"\n}}\n") },
                    Change::Write { file: odd.into(), content: String::new() },
                    Change::Delete { file: "x.json".into() },
                    Change::Write { file: "y".into(), content: odd.into() },
                ],
                receipt: receipt(r#"{"a":[1,2],"b":"\u0001"}"#),
                warnings: vec![odd.into(), String::new()],
                facts,
            },
        ];
        for w in cases {
            assert_eq!(w.to_json_text(), serde_json::to_string(&w).unwrap());
        }
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        let mut out = Vec::new();
        push_json_string(&mut out, &every_byte);
        assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&every_byte).unwrap());
    }
}
