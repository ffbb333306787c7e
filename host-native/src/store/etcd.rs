//! The etcd store (`etcd:<endpoint>[,<endpoint>...]`): the file `f` of the cell `env/scope` is the key
//! `<prefix><env dir>/<scope dir>/f` (prefix `BATON_ETCD_PREFIX`, default `/baton/`). A transaction reads
//! the cell's state files and their `mod_revision`s in one read-only etcd transaction, asks the core, and
//! commits the answer's changes in ONE etcd transaction that compares every state file's `mod_revision`
//! with what it read (the core's `etcd.txn`); a refused compare is a conflict, answered by the cell as the
//! same transaction read it (its failure branch) and a new decision. A cell this store committed itself is
//! decided on as it left it, without the read: the response's revision is the `mod_revision` of every key
//! it put, and the compare refuses the decision if anyone changed the cell since, so a lease cycle is one
//! round trip per operation. A list is one range read of the environment (`etcd.list`). Layout, the
//! compare-and-swap and the retry rules are the core's (`core/src/stores/etcd.rs`, through its typed `etcd`
//! interface, `wit/etcd.wit`: records, no JSON text), as in the Node store (which calls their JSON twins).
//!
//! Every operation has a deadline: the store budget (`BATON_STORE_BUDGET_MS`) from when it was asked for,
//! bounded by the caller's (a held lease's `store_deadline`), as the core's `store-deadline` decides. One
//! request to one endpoint may take the core's `attemptMs` at most; a failed or silent endpoint passes the
//! operation to the next endpoint, and the core's `etcd.retry` says when to stop (`STORE_PERMISSION` for
//! refused credentials, `STORE_CONTENDED` naming the endpoints when none answered in time).

mod conn;

use crate::engine::CoreComponent;
use crate::engine::wit::commands as wc;
use crate::engine::wit::etcd as we;
use crate::engine::wit::types::{CellFile, Change};
use crate::error::HostError;
use conn::{Conns, Failure, TlsFiles};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An etcd store. Clones share the connections.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EtcdStore({})", self.inner.label)
    }
}

struct Inner {
    conns: Conns,
    prefix: String,
    budget_ms: u64,
    attempt_ms: u64,
    label: String,
    export_spec: String,
    /// The endpoint requests go to first: the last one that answered.
    current: AtomicUsize,
    /// Each cell as this store last committed it (by its key range): the next transaction decides on it
    /// without a read, and its compare refuses it if anyone changed the cell since.
    cells: Mutex<HashMap<String, Loaded>>,
    /// The core's `store-deadline` answer for an operation without a deadline of its own (the budget
    /// alone decides it, so it is asked once).
    unbounded_ms: std::sync::OnceLock<u64>,
    /// The core's `etcd.keys` answers for cells, by env and scope (pure, so asked once per cell).
    cell_keys: Mutex<HashMap<String, HashMap<String, Arc<CellKeys>>>>,
    /// The core's `etcd.keys` answers for environments: the key range of each.
    env_ranges: Mutex<HashMap<String, String>>,
}

/// Where one cell lives (the core's `etcd.keys`): its key range, and each state file's key, in the core's
/// `cell-files` order, with the gets that read them (a load, and a commit's failure branch).
struct CellKeys {
    /// The cell's key range: every key of the cell starts with it.
    cell: String,
    /// `(file, key)` of each state file.
    files: Vec<(String, String)>,
    /// One get per state file, in the same order.
    gets: Vec<TxnOp>,
}

/// What an operation works on, named in its errors (formatted only when one is made).
#[derive(Clone, Copy)]
enum What<'a> {
    Cell(&'a str, &'a str),
    File(&'a str, &'a str, &'a str),
    List(&'a str),
}

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cell(env, scope) => write!(f, "the cell {env}/{scope}"),
            Self::File(file, env, scope) => write!(f, "{file} of {env}/{scope}"),
            Self::List(env) => write!(f, "the list of {env}"),
        }
    }
}

/// The time bounds of one operation.
struct Op {
    started: Instant,
    end: Instant,
    attempts: u32,
    /// The last failure, for the error when the deadline then cuts the operation short.
    last: (usize, String),
}

impl Op {
    fn elapsed_ms(&self) -> u64 {
        ms(self.started.elapsed())
    }

    fn budget_ms(&self) -> u64 {
        ms(self.end.saturating_duration_since(self.started))
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A cell as loaded: the snapshot's files and each state file's `mod_revision`.
#[derive(Clone)]
struct Loaded {
    files: Map<String, Value>,
    revisions: BTreeMap<String, i64>,
}

impl Loaded {
    /// The state files of `names` from the answers of their gets (`(value, mod_revision)` or `None`).
    fn from_gets(names: &[(String, String)], got: impl IntoIterator<Item = Option<(String, i64)>>) -> Self {
        let mut loaded = Self { files: Map::new(), revisions: BTreeMap::new() };
        for ((file, _), found) in names.iter().zip(got) {
            if let Some((text, revision)) = found {
                loaded.files.insert(file.clone(), text.into());
                loaded.revisions.insert(file.clone(), revision);
            }
        }
        loaded
    }

    /// The cell after `changes` committed at `revision`: its state files (`names`) only, as a load reads.
    fn after(mut self, names: &[(String, String)], changes: &[Value], revision: i64) -> Self {
        for c in changes {
            let Some(file) = c["file"].as_str() else { continue };
            if !names.iter().any(|(f, _)| f == file) {
                continue;
            }
            if c["op"] == "write" {
                self.files.insert(file.to_owned(), c["content"].clone());
                self.revisions.insert(file.to_owned(), revision);
            } else {
                self.files.remove(file);
                self.revisions.remove(file);
            }
        }
        self
    }
}

/// The first key of each get of a transaction's answer: `(value, mod_revision)`, or `None`.
fn gets_of(answer: &etcd_client::TxnResponse) -> Vec<Option<(String, i64)>> {
    answer
        .op_responses()
        .into_iter()
        .filter_map(|r| match r {
            TxnOpResponse::Get(g) => {
                Some(g.kvs().first().map(|kv| (String::from_utf8_lossy(kv.value()).into_owned(), kv.mod_revision())))
            }
            _ => None,
        })
        .collect()
}

impl EtcdStore {
    /// The store the core's `store-spec` answered (`etcd`): endpoints, prefix, budget, attempt time,
    /// credentials and TLS paths, named `label` in output. Connects on first use.
    pub fn open(spec: &wc::EtcdStore, label: &str) -> Result<Self, HostError> {
        if spec.endpoints.is_empty() {
            return Err(HostError::internal("store-spec answered an etcd store without endpoints"));
        }
        let auth = spec.auth.as_ref().map(|a| (a.user.clone(), a.password.clone()));
        let tls = spec.tls.as_ref().map(TlsFiles::read).transpose()?;
        let attempt_ms = spec.attempt_ms.max(1);
        let conns = Conns::new(spec.endpoints.clone(), auth, tls.as_ref(), Duration::from_millis(attempt_ms))?;
        let inner = Inner {
            conns,
            prefix: spec.prefix.clone(),
            budget_ms: spec.budget_ms,
            attempt_ms,
            label: label.to_owned(),
            export_spec: spec.export_spec.clone(),
            current: AtomicUsize::new(0),
            cells: Mutex::new(HashMap::new()),
            unbounded_ms: std::sync::OnceLock::new(),
            cell_keys: Mutex::new(HashMap::new()),
            env_ranges: Mutex::new(HashMap::new()),
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The spec that names this store, without credentials, for output.
    pub fn spec(&self) -> String {
        self.inner.label.clone()
    }

    /// The budget of one operation, in ms.
    pub fn budget_ms(&self) -> u64 {
        self.inner.budget_ms
    }

    /// The spec a child process needs to open the same store (credentials of the URL included).
    pub fn export_spec(&self) -> String {
        self.inner.export_spec.clone()
    }

    /// One transaction on the cell `env/scope` (see the module documentation), ended by `deadline` at the
    /// latest (else by the budget).
    pub fn transact(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        deadline: Option<Instant>,
        mut decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        let mut op = self.begin(core, deadline);
        let keys = self.cell_keys(core, env, scope)?;
        let what = What::Cell(env, scope);
        // The cell as this store last committed it, if it did: decided on without reading it first.
        let mut known = self.cached(&keys.cell).map(|l| (l, false));
        loop {
            let (loaded, fresh) = match known.take() {
                Some(k) => k,
                None => (self.load(core, &mut op, what, &keys)?, true),
            };
            let snapshot = json!({ "env": env, "scope": scope, "files": loaded.files });
            let decided = decide(core, snapshot, crate::clock::now_ms());
            let changes = match &decided {
                Ok(answer) => answer.get("changes").and_then(Value::as_array).filter(|c| !c.is_empty()),
                Err(_) => None,
            };
            let Some(changes) = changes else {
                // A refusal or a no-op on the remembered cell may be stale: decide again on what is there.
                if !fresh {
                    self.forget_cell(&keys.cell);
                    continue;
                }
                return decided;
            };
            let request = we::TxnRequest {
                cell: keys.cell.clone(),
                revisions: loaded
                    .revisions
                    .iter()
                    .map(|(file, rev)| we::FileRevision { file: file.clone(), mod_revision: *rev })
                    .collect(),
                changes: changes.iter().map(change_of).collect::<Result<_, _>>()?,
            };
            // A refused compare answers the cell as it is now, in the same round trip.
            let txn = txn_of(core.etcd_txn(&request)?).or_else(keys.gets.clone());
            let outcome = self.attempt(core, &mut op, what, move |mut c| async move {
                let r = c.txn(txn).await?;
                let revision = r.header().map_or(0, |h| h.revision());
                Ok((r.succeeded(), revision, gets_of(&r)))
            });
            let (succeeded, revision, now) = match outcome {
                Ok(o) => o,
                Err(e) => {
                    self.forget_cell(&keys.cell);
                    return Err(e);
                }
            };
            if succeeded {
                self.remember(&keys.cell, loaded.after(&keys.files, changes, revision));
                return decided;
            }
            self.forget_cell(&keys.cell);
            if fresh {
                // Another writer moved the cell since it was read: back off, then decide on the cell now.
                self.retry(core, &mut op, what, we::Outcome::Conflict, None, "")?;
            }
            known = Some((Loaded::from_gets(&keys.files, now), true));
        }
    }

    /// A read-only look at the cell.
    pub fn read<T>(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnOnce(&mut CoreComponent, Value, i64) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let mut op = self.begin(core, None);
        let keys = self.cell_keys(core, env, scope)?;
        let loaded = self.load(core, &mut op, What::Cell(env, scope), &keys)?;
        decide(core, json!({ "env": env, "scope": scope, "files": loaded.files }), crate::clock::now_ms())
    }

    /// The text of one file of the cell, if it exists.
    pub fn read_file(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        file: &str,
    ) -> Result<Option<String>, HostError> {
        let mut op = self.begin(core, None);
        let key = format!("{}{file}", self.cell_keys(core, env, scope)?.cell);
        self.attempt(core, &mut op, What::File(file, env, scope), move |mut c| async move {
            let got = c.get(key, None).await?;
            Ok(got.kvs().first().map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
        })
    }

    /// The scopes of `env` with their `latest.json` text, sorted by scope: one range read (`etcd.list`).
    pub fn list(&self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let mut op = self.begin(core, None);
        let range = self.env_range(core, env)?;
        let prefix = range.clone();
        let kvs = self.attempt(core, &mut op, What::List(env), move |mut c| async move {
            let got = c.get(prefix, Some(GetOptions::new().with_prefix())).await?;
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            Ok(got.kvs().iter().map(|kv| we::Kv { key: text(kv.key()), value: Some(text(kv.value())) }).collect())
        })?;
        let listed = core.etcd_list(&we::ListRequest { env: env.to_owned(), range, kvs })?;
        Ok(listed.into_iter().map(|c| json!({ "scope": c.scope, "text": c.text })).collect())
    }

    /// Starts an operation: its end is the core's `store-deadline` (the budget from now, bounded by
    /// `deadline`). Without a deadline the answer depends on the budget alone and is asked once.
    fn begin(&self, core: &mut CoreComponent, deadline: Option<Instant>) -> Op {
        let started = Instant::now();
        let mut ask = |deadline_ms: Option<u64>| core.store_deadline(0, 0, self.inner.budget_ms, deadline_ms).ok();
        let remaining = match deadline {
            Some(d) => ask(Some(ms(d.saturating_duration_since(started)))),
            None => match self.inner.unbounded_ms.get() {
                Some(ms) => Some(*ms),
                None => ask(None).inspect(|ms| {
                    let _ = self.inner.unbounded_ms.set(*ms);
                }),
            },
        };
        Op {
            started,
            end: started + Duration::from_millis(remaining.unwrap_or(self.inner.budget_ms)),
            attempts: 0,
            last: (0, String::new()),
        }
    }

    /// The core's `etcd.keys` for the cell `env/scope`, remembered per cell: a pure answer.
    fn cell_keys(&self, core: &mut CoreComponent, env: &str, scope: &str) -> Result<Arc<CellKeys>, HostError> {
        let lock = || self.inner.cell_keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(keys) = lock().get(env).and_then(|scopes| scopes.get(scope)) {
            return Ok(Arc::clone(keys));
        }
        let request =
            we::KeysRequest { prefix: self.inner.prefix.clone(), env: env.to_owned(), scope: Some(scope.to_owned()) };
        let answer = core.etcd_keys(&request)?;
        let cell = answer.cell.ok_or_else(|| HostError::internal("etcd-keys answered no cell range"))?;
        let files: Vec<(String, String)> = answer.keys.into_iter().map(|k| (k.file, k.key)).collect();
        let gets = files.iter().map(|(_, key)| TxnOp::get(key.as_str(), None)).collect();
        let keys = Arc::new(CellKeys { cell, files, gets });
        lock().entry(env.to_owned()).or_default().insert(scope.to_owned(), Arc::clone(&keys));
        Ok(keys)
    }

    /// The core's `etcd.keys` for the environment `env`: its key range (what a list reads), remembered.
    fn env_range(&self, core: &mut CoreComponent, env: &str) -> Result<String, HostError> {
        let lock = || self.inner.env_ranges.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(range) = lock().get(env) {
            return Ok(range.clone());
        }
        let request = we::KeysRequest { prefix: self.inner.prefix.clone(), env: env.to_owned(), scope: None };
        let range = core.etcd_keys(&request)?.env;
        lock().insert(env.to_owned(), range.clone());
        Ok(range)
    }

    /// The cell's state files and their revisions, in one read-only transaction.
    fn load(
        &self,
        core: &mut CoreComponent,
        op: &mut Op,
        what: What<'_>,
        keys: &CellKeys,
    ) -> Result<Loaded, HostError> {
        let gets = keys.gets.clone();
        let got =
            self.attempt(
                core,
                op,
                what,
                move |mut c| async move { Ok(gets_of(&c.txn(Txn::new().and_then(gets)).await?)) },
            )?;
        Ok(Loaded::from_gets(&keys.files, got))
    }

    fn cached(&self, cell: &str) -> Option<Loaded> {
        self.inner.cells.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(cell).cloned()
    }

    fn remember(&self, cell: &str, loaded: Loaded) {
        self.inner.cells.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(cell.to_owned(), loaded);
    }

    fn forget_cell(&self, cell: &str) {
        self.inner.cells.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(cell);
    }

    /// One request, tried on the endpoints in turn until one answers, the core's `etcd.retry` says to stop,
    /// or the operation's deadline passes.
    fn attempt<T, F, Fut>(
        &self,
        core: &mut CoreComponent,
        op: &mut Op,
        what: What<'_>,
        request: F,
    ) -> Result<T, HostError>
    where
        T: Send + 'static,
        F: FnOnce(etcd_client::KvClient) -> Fut + Send + Clone + 'static,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        loop {
            let left = op.end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let (index, detail) = op.last.clone();
                return Err(self
                    .retry_at(core, op, what, index, we::Outcome::Timeout, None, &detail)
                    .unwrap_err_or_internal());
            }
            let index = self.inner.current.load(Ordering::Relaxed) % self.inner.conns.endpoints().len().max(1);
            let timeout = left.min(Duration::from_millis(self.inner.attempt_ms));
            match self.inner.conns.call(index, timeout, request.clone()) {
                Ok(v) => return Ok(v),
                Err(Failure { code, detail }) => {
                    self.inner.conns.forget(index);
                    op.last = (index, detail.clone());
                    let next = self.retry_at(core, op, what, index, we::Outcome::Failed, code, &detail)?;
                    if next {
                        self.inner.current.store(index + 1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Asks the core whether to try again after an outcome at the current endpoint; sleeps its delay.
    fn retry(
        &self,
        core: &mut CoreComponent,
        op: &mut Op,
        what: What<'_>,
        outcome: we::Outcome,
        code: Option<u32>,
        detail: &str,
    ) -> Result<bool, HostError> {
        let index = self.inner.current.load(Ordering::Relaxed) % self.inner.conns.endpoints().len().max(1);
        self.retry_at(core, op, what, index, outcome, code, detail)
    }

    #[allow(clippy::too_many_arguments)]
    fn retry_at(
        &self,
        core: &mut CoreComponent,
        op: &mut Op,
        what: What<'_>,
        index: usize,
        outcome: we::Outcome,
        code: Option<u32>,
        detail: &str,
    ) -> Result<bool, HostError> {
        op.attempts += 1;
        let endpoints = self.inner.conns.endpoints();
        let answer = core.etcd_retry(&we::RetryRequest {
            what: what.to_string(),
            endpoint: endpoints.get(index).cloned().unwrap_or_default(),
            endpoints: endpoints.to_vec(),
            outcome,
            code,
            detail: detail.to_owned(),
            attempts: op.attempts,
            elapsed_ms: op.elapsed_ms(),
            budget_ms: op.budget_ms(),
            random: crate::random::unit()?,
        })?;
        let delay = Duration::from_millis(answer.delay_ms);
        std::thread::sleep(delay.min(op.end.saturating_duration_since(Instant::now())));
        Ok(answer.next)
    }
}

/// The `etcd_client` transaction of the core's `etcd.txn` answer (its texts moved, not copied).
fn txn_of(plan: we::Transaction) -> Txn {
    let compares: Vec<Compare> =
        plan.compare.into_iter().map(|c| Compare::mod_revision(c.key, CompareOp::Equal, c.mod_revision)).collect();
    let mut ops: Vec<TxnOp> = plan.put.into_iter().map(|p| TxnOp::put(p.key, p.value, None)).collect();
    ops.extend(plan.delete.into_iter().map(|k| TxnOp::delete(k, None)));
    Txn::new().when(compares).and_then(ops)
}

/// A change of a cell operation's JSON answer as the WIT change it spells (`{op: write, file, content}` or
/// `{op: delete, file}`); `INTERNAL` for anything else.
fn change_of(c: &Value) -> Result<Change, HostError> {
    let text = |k: &str| c[k].as_str().map(str::to_owned);
    match (c["op"].as_str(), text("file"), text("content")) {
        (Some("write"), Some(name), Some(content)) => Ok(Change::Write(CellFile { name, content })),
        (Some("delete"), Some(file), _) => Ok(Change::Delete(file)),
        _ => Err(HostError::internal(format!("the core answered a change the etcd store cannot commit: {c}"))),
    }
}

/// A retry decision that must be a refusal (a timeout always is).
trait RefusalExt {
    fn unwrap_err_or_internal(self) -> HostError;
}

impl RefusalExt for Result<bool, HostError> {
    fn unwrap_err_or_internal(self) -> HostError {
        self.err().unwrap_or_else(|| HostError::internal("etcd-retry did not refuse a timeout"))
    }
}
