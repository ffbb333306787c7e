//! The git store (`git:<remote>`): every cell is an orphan ref `refs/heads/<prefix>/<env>/<scope>` of the
//! remote holding a README and the cell's files at `<envDir>/<scopeDir>/`. A transaction commits on the
//! tip it last knew and pushes with `--force-with-lease=<ref>:<tip>`, so the remote's atomic ref update is
//! the compare-and-swap; a refused push is a conflict, answered by a fresh fetch and a new decision.
//!
//! The holder commits on the tip it pushed itself and fetches only when a push is refused, on the first
//! use of a cell, or when a decision on the remembered tip refused or changed nothing (it may be stale).
//! On a tip it pushed itself it decides on the files it committed there, without reading them back.
//! Read-only operations always fetch. All operations of one process on one store run one at a time (the
//! handles share one mutex), so a renewal and a receipt write never interleave.
//!
//! A ref deleted by a human while a run holds its lock is a deleted lock: the holder's next push is refused
//! (the ref is no longer at the tip it expected), the fresh fetch shows an empty cell, the core answers
//! `LOCK_LOST` and nothing is re-asserted or written; the next run starts the ref afresh.
//!
//! Every operation has a deadline: the store budget (`BATON_STORE_BUDGET_MS`) from when it was asked for,
//! bounded by the caller's (a held lease's `store_deadline`), as the core's `store-deadline` decides. Each
//! git process gets what is left and is killed with its process group when it runs out; the core then ends
//! the operation (`git-retry`, outcome `timeout`: `STORE_CONTENDED`). Fetches are retried like pushes. The
//! commit text and the fast-import stream (`git-commit`) and cat-file parsing (`git-cat-parse`) are the
//! core's, as in the Node store.

mod legacy;
mod repo;

pub use repo::GitEnv;

use crate::engine::CoreComponent;
use crate::engine::wit::stores as ws;
use crate::error::HostError;
use repo::Repo;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A git store. Clones share one working clone and one mutex.
#[derive(Clone)]
pub struct GitStore {
    inner: Arc<Mutex<Inner>>,
    label: Arc<str>,
    remote: Arc<str>,
    budget_ms: u64,
}

impl std::fmt::Debug for GitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GitStore({})", self.label)
    }
}

struct Inner {
    remote: String,
    prefix: String,
    budget_ms: u64,
    git_env: GitEnv,
    repo: Option<Repo>,
    /// The last known tip of each cell ref (`None`: known absent). Missing: fetch first.
    tips: HashMap<String, Option<String>>,
    /// The state files of each cell ref at the tip this store pushed itself: a load of that tip reads them
    /// here instead of running `git cat-file` (the commit is immutable, so they cannot be stale).
    pushed: HashMap<String, (String, Map<String, Value>)>,
    /// Where unpushed receipts are kept (`<repo root or cwd>/.baton/unpushed`), found on first need.
    unpushed: Option<PathBuf>,
    /// The operation in progress.
    op: Op,
}

/// Where one cell lives.
struct CellRef {
    /// `<envDir>/<scopeDir>` inside the ref's tree.
    dir: String,
    /// `refs/heads/<prefix>/<envSeg>/<scopeSeg>`.
    full: String,
}

impl GitStore {
    /// A store on `remote` with refs under `prefix` and `budget_ms` per operation; `label` is the remote
    /// without credentials; every `git` it runs gets `git_env` (the core's `git-env`).
    pub fn new(remote: &str, prefix: &str, budget_ms: u64, label: &str, git_env: GitEnv) -> Self {
        let inner = Inner {
            remote: remote.to_owned(),
            prefix: prefix.trim_matches('/').to_owned(),
            budget_ms,
            git_env,
            repo: None,
            tips: HashMap::new(),
            pushed: HashMap::new(),
            unpushed: None,
            op: Op { started: Instant::now(), end: None },
        };
        Self { inner: Arc::new(Mutex::new(inner)), label: label.into(), remote: remote.into(), budget_ms }
    }

    /// The spec that names this store, without credentials (`git:<remote>`), for output.
    pub fn spec(&self) -> String {
        format!("git:{}", self.label)
    }

    /// The budget of one operation, in ms.
    pub fn budget_ms(&self) -> u64 {
        self.budget_ms
    }

    /// The spec a child process needs to open the same store (credentials included).
    pub fn export_spec(&self) -> String {
        format!("git:{}", self.remote)
    }

    /// The store, locked for one operation that must end by the budget from now, and by `deadline` when the
    /// caller has one (a held lease's; see the core's `store-deadline`). Waiting for the lock counts.
    fn begin(&self, core: &mut CoreComponent, deadline: Option<Instant>) -> MutexGuard<'_, Inner> {
        let asked = Instant::now();
        let mut g = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        g.begin(core, asked, deadline);
        g
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
        let mut g = self.begin(core, deadline);
        let result = (|| {
            let cell = g.cell_ref(core, env, scope)?;
            let mut kept = None;
            let result = g.transact(core, env, scope, &cell, &mut decide, &mut kept);
            match (&result, &kept) {
                (Ok(_), Some(path)) => remove_pruned(path),
                (Err(_), Some(path)) => {
                    return result.map_err(|mut e| {
                        e.message = format!("{} Receipt kept locally in {}.", e.message, path.display());
                        e.with("keptAt", path.display().to_string())
                    });
                }
                _ => {}
            }
            result
        })();
        result.map_err(|e| redacted(core, e))
    }

    /// A read-only look at the cell, always at the remote's current tip.
    pub fn read<T>(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnOnce(&mut CoreComponent, Value, i64) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let cell = {
            let mut g = self.begin(core, None);
            (|| {
                let cell = g.cell_ref(core, env, scope)?;
                let tip = g.fetch(core, &cell.full)?;
                g.load(core, env, scope, &cell, tip.as_deref())
            })()
            .map_err(|e| redacted(core, e))?
        };
        decide(core, cell, crate::clock::now_ms())
    }

    /// The text of one file of the cell at the remote's current tip.
    pub fn read_file(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        file: &str,
    ) -> Result<Option<String>, HostError> {
        let mut g = self.begin(core, None);
        (|| {
            let cell = g.cell_ref(core, env, scope)?;
            let Some(tip) = g.fetch(core, &cell.full)? else {
                let path = format!("{}/{file}", cell.dir);
                return Ok(g.legacy_files(core, &cell)?.into_iter().find(|(p, _)| *p == path).map(|(_, t)| t));
            };
            let got = g.cat(core, &[format!("{tip}:{}/{file}", cell.dir)], &cell.full)?;
            Ok(got.into_iter().next().flatten())
        })()
        .map_err(|e| redacted(core, e))
    }

    /// The scopes of `env` with their `latest.json` text, sorted by scope: one `ls-remote`, one fetch into
    /// position-named refs (scopes differing only by case stay apart), one `cat-file --batch`.
    pub fn list(&self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let mut g = self.begin(core, None);
        g.list(core, env).map_err(|e| redacted(core, e))
    }
}

/// How many cells' pushed files a store keeps (see [`Inner::remember_pushed`]).
const PUSHED_CELLS: usize = 4;

/// The time bounds of the operation in progress.
struct Op {
    started: Instant,
    /// When every git process of the operation must have finished.
    end: Option<Instant>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Inner {
    /// Starts an operation asked for at `asked`: its end is the core's `store-deadline` (the budget from
    /// `asked`, bounded by the caller's `deadline`).
    fn begin(&mut self, core: &mut CoreComponent, asked: Instant, deadline: Option<Instant>) {
        let deadline_ms = deadline.map(|d| ms(d.saturating_duration_since(asked)));
        let remaining = core.store_deadline(0, 0, self.budget_ms, deadline_ms).ok();
        let end = asked + Duration::from_millis(remaining.unwrap_or(self.budget_ms));
        self.op = Op { started: asked, end: Some(end) };
        if let Some(repo) = &self.repo {
            repo.set_deadline(Some(end));
        }
    }

    /// The operation's budget as the core's retry decisions see it: from its start to its end.
    fn budget(&self) -> u64 {
        self.op.end.map_or(self.budget_ms, |end| ms(end.saturating_duration_since(self.op.started)))
    }

    fn elapsed(&self) -> u64 {
        ms(self.op.started.elapsed())
    }

    fn repo(&mut self, core: &mut CoreComponent) -> Result<&Repo, HostError> {
        if self.repo.is_none() {
            if self.remote.starts_with('-') {
                return Err(HostError::usage("a git store remote cannot start with `-`"));
            }
            let host = super::process::hostname();
            repo::sweep(&mut |names, processes| core.git_stale_clones(names, &host, processes).ok());
            let (pid, start) = (std::process::id(), super::process::own_start());
            let remote = self.remote.clone();
            let mut name = |random: &str| {
                let request = ws::CloneNameRequest {
                    remote: remote.clone(),
                    host: host.clone(),
                    pid,
                    start: start.clone(),
                    random: random.to_owned(),
                };
                core.git_clone_name(&request)
            };
            let created =
                Repo::create(&mut name, &remote, &repo::inherited_auth_config(), self.git_env.clone(), self.op.end);
            self.repo = Some(self.local(core, "the working clone", "", created)?);
        }
        Ok(self.repo.as_ref().expect("created above"))
    }

    /// The `STORE_CONTENDED` of git killed at the operation's deadline (the core's `git-retry`, `timeout`).
    fn timed_out(&self, core: &mut CoreComponent, read: bool, what: &str, reference: &str) -> HostError {
        let request = self.retry_request(read, what, reference, ws::PushOutcome::Timeout, String::new(), 1, 0, 0.5);
        match core.git_retry(&request) {
            Err(e) => e,
            Ok(d) => HostError::internal(format!("git-retry answered {d:?} to a timeout")),
        }
    }

    /// The core's `git-retry` request for attempt `attempts` of this operation.
    #[allow(clippy::too_many_arguments)]
    fn retry_request(
        &self,
        read: bool,
        what: &str,
        reference: &str,
        outcome: ws::PushOutcome,
        detail: String,
        attempts: u32,
        rejections: u32,
        random: f64,
    ) -> ws::RetryRequest {
        ws::RetryRequest {
            read,
            what: what.to_owned(),
            git_ref: reference.to_owned(),
            remote: self.remote.clone(),
            outcome,
            detail,
            attempts,
            rejections,
            elapsed_ms: self.elapsed(),
            budget_ms: self.budget(),
            random,
        }
    }

    /// A local git step's result, its deadline failure as the core's timeout error.
    fn local<T>(
        &self,
        core: &mut CoreComponent,
        what: &str,
        reference: &str,
        result: Result<T, HostError>,
    ) -> Result<T, HostError> {
        result.map_err(|e| {
            if e.details.contains_key("timedOut") { self.timed_out(core, false, what, reference) } else { e }
        })
    }

    /// After a failed fetch or ls-remote (attempt `attempts`): sleeps and answers `Ok` when the core says to
    /// try again within the budget, else the error (`STORE_PERMISSION`, `STORE_CONTENDED`).
    fn read_failed(
        &self,
        core: &mut CoreComponent,
        what: &str,
        reference: &str,
        ran: &repo::Ran,
        attempts: u32,
    ) -> Result<(), HostError> {
        if ran.timed_out {
            return Err(self.timed_out(core, true, what, reference));
        }
        let outcome = core.git_push_outcome(ran.code.max(1), &ran.stderr)?;
        let random = crate::random::unit()?;
        let request = self.retry_request(true, what, reference, outcome.outcome, outcome.detail, attempts, 0, random);
        let retry = core.git_retry(&request)?;
        std::thread::sleep(Duration::from_millis(retry.delay_ms));
        Ok(())
    }

    fn cell_ref(&self, core: &mut CoreComponent, env: &str, scope: &str) -> Result<CellRef, HostError> {
        let path = core.cell_path(env, scope)?;
        Ok(CellRef { dir: path.dir, full: format!("refs/heads/{}/{}", self.prefix, path.git_ref) })
    }

    /// Fetches the cell ref: its tip, or `None` when the remote has no such ref. Remembers the tip. A
    /// failed fetch is retried within the budget (the core's `git-retry`).
    fn fetch(&mut self, core: &mut CoreComponent, full: &str) -> Result<Option<String>, HostError> {
        let mut attempts = 0;
        let tip = loop {
            attempts += 1;
            let ran = self.repo(core)?.fetch(&[full.to_owned()])?;
            if ran.ok {
                let head = self.repo(core)?.fetch_head();
                break Some(head.ok_or_else(|| HostError::internal("git fetch left no FETCH_HEAD"))?);
            } else if !ran.timed_out && ran.stderr.contains("couldn't find remote ref") {
                break None;
            }
            self.read_failed(core, "the cell", full, &ran, attempts)?;
        };
        self.tips.insert(full.to_owned(), tip.clone());
        Ok(tip)
    }

    /// Remembers the state files of `reference` at `commit`, which this store just pushed. A store keeps a
    /// few cells' files (a receipt may be large): a run works on its own cell and its predecessor's.
    fn remember_pushed(&mut self, reference: &str, commit: &str, files: Map<String, Value>) {
        if self.pushed.len() >= PUSHED_CELLS && !self.pushed.contains_key(reference) {
            self.pushed.clear();
        }
        self.pushed.insert(reference.to_owned(), (commit.to_owned(), files));
    }

    /// The texts of the blobs named `rev:path` (`None` for a missing one): one `git cat-file --batch`,
    /// parsed by the core (`git-cat-parse`).
    fn cat(
        &mut self,
        core: &mut CoreComponent,
        specs: &[String],
        reference: &str,
    ) -> Result<Vec<Option<String>>, HostError> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.repo(core)?.cat(specs);
        let out = self.local(core, "the cell", reference, out)?;
        // Latin-1: one character per byte, so that any bytes cross JSON and sizes stay byte counts.
        let output: String = out.iter().map(|&b| char::from(b)).collect();
        let count = u32::try_from(specs.len()).map_err(|_| HostError::internal("too many objects for one cat-file"))?;
        core.git_cat_parse(&output, count)
    }

    /// The cell snapshot at `tip` (`{env, scope, files}`, the files that exist).
    fn load(
        &mut self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        cell: &CellRef,
        tip: Option<&str>,
    ) -> Result<Value, HostError> {
        self.load_seeded(core, env, scope, cell, tip).map(|(snapshot, _)| snapshot)
    }

    /// [`Self::load`], and for a cell without a ref of its own the legacy branch's files of the cell (the
    /// snapshot is then read from them; empty unless the store shares the original's prefix).
    fn load_seeded(
        &mut self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        cell: &CellRef,
        tip: Option<&str>,
    ) -> Result<(Value, Vec<(String, String)>), HostError> {
        if let Some((_, files)) = self.pushed.get(&cell.full).filter(|(at, _)| Some(at.as_str()) == tip) {
            return Ok((json!({ "env": env, "scope": scope, "files": files }), Vec::new()));
        }
        let mut files = Map::new();
        let names = core.cell_files()?;
        let mut seed = Vec::new();
        if let Some(tip) = tip {
            let specs: Vec<String> = names.iter().map(|n| format!("{tip}:{}/{n}", cell.dir)).collect();
            for (name, got) in names.into_iter().zip(self.cat(core, &specs, &cell.full)?) {
                if let Some(text) = got {
                    files.insert(name, text.into());
                }
            }
        } else {
            seed = self.legacy_files(core, cell)?;
            for (path, text) in &seed {
                let name = path.strip_prefix(cell.dir.as_str()).and_then(|p| p.strip_prefix('/')).unwrap_or_default();
                if names.iter().any(|n| n == name) {
                    files.insert(name.to_owned(), text.clone().into());
                }
            }
        }
        Ok((json!({ "env": env, "scope": scope, "files": files }), seed))
    }

    /// The legacy branch's files of the cell (see `legacy`), when this store shares the original's prefix.
    fn legacy_files(&mut self, core: &mut CoreComponent, cell: &CellRef) -> Result<Vec<(String, String)>, HostError> {
        // Parent-object cells (`_locks/...`) were never on the legacy branch: the original seeds none.
        if self.prefix != legacy::SHARED_PREFIX || cell.dir.starts_with("_locks/") {
            return Ok(Vec::new());
        }
        if !self.legacy_fetch(core)? {
            return Ok(Vec::new());
        }
        let paths = legacy::paths(self.repo(core)?, &cell.dir)?;
        let specs: Vec<String> = paths.iter().map(|p| legacy::spec(p)).collect();
        let texts = self.cat(core, &specs, legacy::BRANCH)?;
        Ok(paths.into_iter().zip(texts).filter_map(|(p, t)| t.map(|t| (p, t))).collect())
    }

    /// Fetches the legacy branch (retried within the budget like every read): whether the remote has it.
    fn legacy_fetch(&mut self, core: &mut CoreComponent) -> Result<bool, HostError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match legacy::fetch(self.repo(core)?)? {
                Ok(found) => return Ok(found),
                Err(ran) => self.read_failed(core, "the legacy receipts branch", legacy::BRANCH, &ran, attempts)?,
            }
        }
    }

    fn transact(
        &mut self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        cell: &CellRef,
        decide: &mut dyn FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
        kept: &mut Option<PathBuf>,
    ) -> Result<Value, HostError> {
        let (mut attempts, mut rejections) = (0u32, 0u32);
        // The remote's last refusal, for an error after the deadline cut a later attempt short.
        let mut last_detail = String::new();
        loop {
            let (tip, fresh) = match self.tips.get(&cell.full) {
                Some(tip) => (tip.clone(), false),
                None => (self.fetch(core, &cell.full)?, true),
            };
            let (snapshot, seed) = self.load_seeded(core, env, scope, cell, tip.as_deref())?;
            let old_lock = snapshot["files"]["lock.json"].as_str().map(str::to_owned);
            let before = snapshot["files"].as_object().cloned().unwrap_or_default();
            let decided = decide(core, snapshot, crate::clock::now_ms());
            let changes = match &decided {
                Ok(answer) => answer.get("changes").and_then(Value::as_array).cloned().unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            if changes.is_empty() {
                // A refusal or a no-op on a remembered tip may be stale: decide again on the remote's tip.
                if fresh {
                    return decided;
                }
                self.tips.remove(&cell.full);
                continue;
            }
            let answer = decided?;
            let request = ws::CommitRequest {
                env: env.to_owned(),
                scope: scope.to_owned(),
                dir: cell.dir.clone(),
                tip: tip.clone(),
                changes: changes.iter().map(crate::engine::change_of).collect::<Result<_, _>>()?,
                old_lock,
                seed: seed.iter().map(|(path, text)| ws::SeedFile { path: path.clone(), text: text.clone() }).collect(),
            };
            let built = core.git_commit(&request)?;
            let what = built.what.as_str();
            if let Some(latest) = changes.iter().find(|c| c["op"] == "write" && c["file"] == "latest.json") {
                let unpushed = self.unpushed.get_or_insert_with(unpushed_dir).clone();
                *kept = Some(keep_locally(&unpushed, &cell.dir, latest["content"].as_str().unwrap_or_default())?);
            }
            // Asked before the push: after a push that landed, nothing may fail it.
            let names = core.cell_files()?;
            let commit = self.repo(core)?.commit(&built.fast_import);
            let commit = self.local(core, what, &cell.full, commit)?;
            let ran = self.repo(core)?.push(&commit, &cell.full, tip.as_deref())?;
            let outcome = if ran.timed_out {
                ws::PushClassified { outcome: ws::PushOutcome::Timeout, detail: last_detail.clone() }
            } else {
                core.git_push_outcome(ran.code, &ran.stderr)?
            };
            if outcome.outcome == ws::PushOutcome::Ok {
                self.remember_pushed(&cell.full, &commit, files_after(before, &changes, &names));
                self.tips.insert(cell.full.clone(), Some(commit));
                return Ok(answer);
            }
            self.tips.remove(&cell.full);
            attempts += 1;
            if outcome.outcome == ws::PushOutcome::Rejected {
                rejections += 1;
            }
            last_detail.clone_from(&outcome.detail);
            let random = crate::random::unit()?;
            let request = self.retry_request(
                false,
                what,
                &cell.full,
                outcome.outcome,
                outcome.detail,
                attempts,
                rejections,
                random,
            );
            let retry = core.git_retry(&request)?;
            std::thread::sleep(Duration::from_millis(retry.delay_ms));
        }
    }

    /// The scopes of `env` on the legacy branch that have no ref of their own (not in `own`), with the spec
    /// of their `latest.json` there, as the original lists them.
    fn legacy_list(
        &mut self,
        core: &mut CoreComponent,
        env: &str,
        own: &[(String, String)],
    ) -> Result<Vec<(String, String)>, HostError> {
        if !self.legacy_fetch(core)? {
            return Ok(Vec::new());
        }
        let probe = core.cell_path(env, "x")?;
        let env_dir = probe.dir.split('/').next().unwrap_or(env).to_owned();
        let dirs = legacy::scope_dirs(self.repo(core)?, &env_dir)?;
        let names = core.scope_names(&dirs)?;
        let mut found = Vec::new();
        for scope in names.into_iter().flatten() {
            if scope == "_locks" || own.iter().any(|(s, _)| *s == scope) {
                continue;
            }
            let Ok(path) = core.cell_path(env, &scope) else { continue };
            found.push((scope, legacy::latest_spec(&path.dir)));
        }
        Ok(found)
    }

    fn list(&mut self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let probe = core.list_cells(env, ws::Spelling::GitRef, &[])?;
        let env_seg = probe.segment;
        let base = format!("refs/heads/{}/{env_seg}/", self.prefix);
        let (mut attempt, mut failures) = (0, 0);
        loop {
            attempt += 1;
            let listed = match self.repo(core)?.ls_remote(&format!("{base}*"))? {
                Ok(refs) => refs,
                Err(ran) => {
                    failures += 1;
                    self.read_failed(core, "the list of scopes", &base, &ran, failures)?;
                    continue;
                }
            };
            let segs: Vec<String> = listed
                .iter()
                .filter_map(|(_, name)| name.strip_prefix(&base).filter(|s| !s.contains('/')).map(str::to_owned))
                .collect();
            // The core says which refs are cells (no second spelling of a scope, never `_locks`).
            let cells = core.list_cells(env, ws::Spelling::GitRef, &segs)?;
            let cells: Vec<(String, String, String)> =
                cells.cells.into_iter().map(|c| (c.name, c.scope, c.dir)).collect();
            let shared = self.prefix == legacy::SHARED_PREFIX;
            if cells.is_empty() && !shared {
                return Ok(Vec::new());
            }
            let specs: Vec<String> =
                cells.iter().enumerate().map(|(i, (seg, _, _))| format!("+{base}{seg}:refs/baton-list/{i}")).collect();
            let ran = if specs.is_empty() { None } else { Some(self.repo(core)?.fetch(&specs)?) };
            if let Some(ran) = ran.filter(|r| !r.ok) {
                if !ran.timed_out && ran.stderr.contains("couldn't find remote ref") && attempt < 3 {
                    continue; // a ref deleted between ls-remote and fetch
                }
                failures += 1;
                self.read_failed(core, "the list of scopes", &base, &ran, failures)?;
                continue;
            }
            // (scope, the spec of its latest.json): the cells' own refs, then (with the original's prefix)
            // the scopes found only on its legacy branch.
            let mut found: Vec<(String, String)> = cells
                .iter()
                .enumerate()
                .map(|(i, (_, scope, dir))| (scope.clone(), format!("refs/baton-list/{i}:{dir}/latest.json")))
                .collect();
            if shared {
                found.extend(self.legacy_list(core, env, &found)?);
            }
            let specs: Vec<String> = found.iter().map(|(_, s)| s.clone()).collect();
            let texts = self.cat(core, &specs, &base)?;
            let mut out: Vec<Value> = found
                .into_iter()
                .zip(texts)
                .map(|((scope, _), text)| json!({ "scope": scope, "text": text }))
                .collect();
            out.sort_by(|a, b| a["scope"].as_str().cmp(&b["scope"].as_str()));
            return Ok(out);
        }
    }
}

/// The state files (`names`, the core's `cell-files`) of a cell whose files were `before`, after `changes`
/// were committed: what a load of the new commit reads.
fn files_after(mut files: Map<String, Value>, changes: &[Value], names: &[String]) -> Map<String, Value> {
    for c in changes {
        let Some(file) = c["file"].as_str().filter(|f| names.iter().any(|n| n == f)) else { continue };
        if c["op"] == "write" {
            files.insert(file.to_owned(), c["content"].clone());
        } else {
            files.remove(file);
        }
    }
    files
}

/// `<repo root or cwd>/.baton/unpushed`.
fn unpushed_dir() -> PathBuf {
    let root = crate::context::git(&["rev-parse", "--show-toplevel"])
        .ok()
        .filter(|r| !r.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    root.join(".baton").join("unpushed")
}

/// Keeps a receipt in `<unpushed>/<cell dir>/<runId>.json` until it is pushed.
fn keep_locally(unpushed: &Path, dir: &str, content: &str) -> Result<PathBuf, HostError> {
    let run: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    let run: String = run["runId"]
        .as_str()
        .unwrap_or("receipt")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let folder = unpushed.join(dir);
    let path = folder.join(format!("{}.json", run.trim_start_matches('.')));
    // Another process may prune the empty folders between the two steps: try again then.
    let mut tries = 0;
    loop {
        // Owner only: a receipt names what a scope owns.
        let written = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder).and_then(|()| {
            let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
            std::io::Write::write_all(&mut f, content.as_bytes())
        });
        match written {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
            Err(e) => return Err(HostError::io(format!("cannot keep the receipt in {}", path.display()), &e)),
        }
    }
}

/// Removes a kept receipt after its push and prunes the directories it leaves empty, up to `unpushed/`.
fn remove_pruned(path: &Path) {
    let _ = std::fs::remove_file(path);
    let mut dir = path.parent();
    while let Some(d) = dir {
        if std::fs::remove_dir(d).is_err() || d.file_name().is_some_and(|n| n == "unpushed") {
            break;
        }
        dir = d.parent();
    }
}

fn redact_text(core: &mut CoreComponent, text: &str) -> String {
    core.redact(text).unwrap_or_else(|_| "[REDACTED]".to_owned())
}

/// Removes credentials from an error's message and every string detail (core op `redact`).
fn redacted(core: &mut CoreComponent, mut e: HostError) -> HostError {
    e.message = redact_text(core, &e.message);
    for value in e.details.values_mut() {
        if let Some(text) = value.as_str() {
            *value = redact_text(core, text).into();
        } else if !value.is_number() && !value.is_boolean() && !value.is_null() {
            *value = serde_json::from_str(&redact_text(core, &value.to_string())).unwrap_or(Value::Null);
        }
    }
    e
}
