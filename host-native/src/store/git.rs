//! The git store (`git:<remote>`): every cell is an orphan ref `refs/heads/<prefix>/<env>/<scope>` of the
//! remote holding a README and the cell's files at `<envDir>/<scopeDir>/`. A transaction commits on the
//! tip it last knew and pushes with `--force-with-lease=<ref>:<tip>`, so the remote's atomic ref update is
//! the compare-and-swap; a refused push is a conflict, answered by a fresh fetch and a new decision.
//!
//! The holder commits on the tip it pushed itself and fetches only when a push is refused, on the first
//! use of a cell, or when a decision on the remembered tip refused or changed nothing (it may be stale).
//! Read-only operations always fetch. All operations of one process on one store run one at a time (the
//! handles share one mutex), so a renewal and a receipt write never interleave.
//!
//! A ref deleted by a human while a run holds its lock is a deleted lock: the holder's next push is refused
//! (the ref is no longer at the tip it expected), the fresh fetch shows an empty cell, the core answers
//! `LOCK_LOST` and nothing is re-asserted or written; the next run starts the ref afresh.

mod legacy;
mod repo;

pub use repo::GitEnv;

use crate::engine::CoreComponent;
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
    /// Where unpushed receipts are kept (`<repo root or cwd>/.baton/unpushed`), found on first need.
    unpushed: Option<PathBuf>,
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
            unpushed: None,
        };
        Self { inner: Arc::new(Mutex::new(inner)), label: label.into(), remote: remote.into() }
    }

    /// The spec that names this store, without credentials (`git:<remote>`), for output.
    pub fn spec(&self) -> String {
        format!("git:{}", self.label)
    }

    /// The spec a child process needs to open the same store (credentials included).
    pub fn export_spec(&self) -> String {
        format!("git:{}", self.remote)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One transaction on the cell `env/scope` (see the module documentation).
    pub fn transact(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        mut decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        let mut g = self.lock();
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
            let mut g = self.lock();
            (|| {
                let cell = g.cell_ref(core, env, scope)?;
                let tip = g.fetch(core, &cell.full)?;
                g.load(core, env, scope, &cell, tip.as_deref())
            })()
            .map_err(|e| redacted(core, e))?
        };
        decide(core, cell, super::dir::now_ms())
    }

    /// The text of one file of the cell at the remote's current tip.
    pub fn read_file(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        file: &str,
    ) -> Result<Option<String>, HostError> {
        let mut g = self.lock();
        (|| {
            let cell = g.cell_ref(core, env, scope)?;
            let Some(tip) = g.fetch(core, &cell.full)? else {
                let path = format!("{}/{file}", cell.dir);
                return Ok(g.legacy_files(core, &cell)?.into_iter().find(|(p, _)| *p == path).map(|(_, t)| t));
            };
            let got = g.repo()?.cat(&[format!("{tip}:{}/{file}", cell.dir)])?;
            Ok(got.into_iter().next().flatten().map(|b| String::from_utf8_lossy(&b).into_owned()))
        })()
        .map_err(|e| redacted(core, e))
    }

    /// The scopes of `env` with their `latest.json` text, sorted by scope: one `ls-remote`, one fetch into
    /// position-named refs (scopes differing only by case stay apart), one `cat-file --batch`.
    pub fn list(&self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let mut g = self.lock();
        g.list(core, env).map_err(|e| redacted(core, e))
    }
}

impl Inner {
    fn repo(&mut self) -> Result<&Repo, HostError> {
        if self.repo.is_none() {
            if self.remote.starts_with('-') {
                return Err(HostError::usage("a git store remote cannot start with `-`"));
            }
            self.repo = Some(Repo::create(&self.remote, &repo::inherited_auth_config(), self.git_env.clone())?);
        }
        Ok(self.repo.as_ref().expect("created above"))
    }

    fn cell_ref(&self, core: &mut CoreComponent, env: &str, scope: &str) -> Result<CellRef, HostError> {
        let path = core.invoke("cell-path", &json!({ "env": env, "scope": scope }))?;
        let (Some(dir), Some(seg)) = (path["dir"].as_str(), path["ref"].as_str()) else {
            return Err(HostError::internal(format!("cell-path answered {path}")));
        };
        Ok(CellRef { dir: dir.to_owned(), full: format!("refs/heads/{}/{seg}", self.prefix) })
    }

    /// Fetches the cell ref: its tip, or `None` when the remote has no such ref. Remembers the tip.
    fn fetch(&mut self, core: &mut CoreComponent, full: &str) -> Result<Option<String>, HostError> {
        let remote = self.remote.clone();
        let repo = self.repo()?;
        let ran = repo.fetch(&remote, &[full.to_owned()])?;
        let tip = if ran.ok {
            Some(repo.fetch_head().ok_or_else(|| HostError::internal("git fetch left no FETCH_HEAD"))?)
        } else if ran.stderr.contains("couldn't find remote ref") {
            None
        } else {
            return Err(read_error(core, &remote, full, &ran));
        };
        self.tips.insert(full.to_owned(), tip.clone());
        Ok(tip)
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
        let mut files = Map::new();
        let names = core.cell_files()?;
        let mut seed = Vec::new();
        if let Some(tip) = tip {
            let specs: Vec<String> = names.iter().map(|n| format!("{tip}:{}/{n}", cell.dir)).collect();
            for (name, got) in names.into_iter().zip(self.repo()?.cat(&specs)?) {
                if let Some(bytes) = got {
                    files.insert(name, String::from_utf8_lossy(&bytes).into_owned().into());
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
        let remote = self.remote.clone();
        match legacy::fetch(self.repo()?, &remote)? {
            Ok(true) => legacy::files(self.repo()?, &cell.dir),
            Ok(false) => Ok(Vec::new()),
            Err(ran) => Err(read_error(core, &remote, legacy::BRANCH, &ran)),
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
        let started = Instant::now();
        let (mut attempts, mut rejections) = (0u32, 0u32);
        let readme = core.invoke("git-readme", &json!({ "parentObject": env == "_locks" }))?;
        let readme = readme["text"].as_str().unwrap_or_default().to_owned();
        loop {
            let (tip, fresh) = match self.tips.get(&cell.full) {
                Some(tip) => (tip.clone(), false),
                None => (self.fetch(core, &cell.full)?, true),
            };
            let (snapshot, seed) = self.load_seeded(core, env, scope, cell, tip.as_deref())?;
            let old_lock = snapshot["files"]["lock.json"].as_str().map(str::to_owned);
            let decided = decide(core, snapshot, super::dir::now_ms());
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
            let mut files = cell_changes(&cell.dir, &changes)?;
            let (message, what) = describe(env, scope, &changes, old_lock.as_deref());
            if let Some(latest) = changes.iter().find(|c| c["op"] == "write" && c["file"] == "latest.json") {
                let unpushed = self.unpushed.get_or_insert_with(unpushed_dir).clone();
                *kept = Some(keep_locally(&unpushed, &cell.dir, latest["content"].as_str().unwrap_or_default())?);
            }
            let mut root_message = format!("Start receipts for {env}/{scope}");
            if !seed.is_empty() {
                // The cell's own ref starts with what the legacy branch held for it (never written itself).
                let changed: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
                let kept = seed.into_iter().filter(|(p, _)| !changed.contains(p)).map(|(p, t)| (p, Some(t)));
                files = kept.chain(files).collect();
                root_message.push_str(legacy::FROM);
            }
            let remote = self.remote.clone();
            let repo = self.repo()?;
            let commit = repo.commit(tip.as_deref(), &readme, &root_message, &files, &message)?;
            let ran = repo.push(&remote, &commit, &cell.full, tip.as_deref())?;
            let outcome = core.invoke("git-push-outcome", &json!({ "exitCode": ran.code, "stderr": ran.stderr }))?;
            if outcome["outcome"] == "ok" {
                self.tips.insert(cell.full.clone(), Some(commit));
                return Ok(answer);
            }
            self.tips.remove(&cell.full);
            attempts += 1;
            if outcome["outcome"] == "rejected" {
                rejections += 1;
            }
            let retry = core.invoke(
                "git-retry",
                &json!({
                    "what": what, "ref": cell.full, "remote": remote, "outcome": outcome["outcome"],
                    "detail": outcome["detail"], "attempts": attempts, "rejections": rejections,
                    "elapsedMs": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    "budgetMs": self.budget_ms, "random": random_unit(),
                }),
            )?;
            std::thread::sleep(Duration::from_millis(retry["delayMs"].as_u64().unwrap_or(0)));
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
        let remote = self.remote.clone();
        match legacy::fetch(self.repo()?, &remote)? {
            Ok(true) => {}
            Ok(false) => return Ok(Vec::new()),
            Err(ran) => return Err(read_error(core, &remote, legacy::BRANCH, &ran)),
        }
        let probe = core.invoke("cell-path", &json!({ "env": env, "scope": "x" }))?;
        let env_dir = probe["dir"].as_str().and_then(|d| d.split('/').next()).unwrap_or(env).to_owned();
        let dirs = legacy::scope_dirs(self.repo()?, &env_dir)?;
        let names = core.invoke("scope-names", &json!({ "dirs": dirs }))?;
        let mut found = Vec::new();
        for name in names["scopes"].as_array().cloned().unwrap_or_default() {
            let Some(scope) = name.as_str().filter(|s| *s != "_locks") else { continue };
            if own.iter().any(|(s, _)| s == scope) {
                continue;
            }
            let Ok(path) = core.invoke("cell-path", &json!({ "env": env, "scope": scope })) else { continue };
            found.push((scope.to_owned(), legacy::latest_spec(path["dir"].as_str().unwrap_or_default())));
        }
        Ok(found)
    }

    fn list(&mut self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let probe = core.invoke("list-cells", &json!({ "env": env, "spelling": "ref", "names": [] }))?;
        let env_seg =
            probe["segment"].as_str().ok_or_else(|| HostError::internal("list-cells answered without `segment`"))?;
        let base = format!("refs/heads/{}/{env_seg}/", self.prefix);
        let remote = self.remote.clone();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let listed = match self.repo()?.ls_remote(&remote, &format!("{base}*"))? {
                Ok(refs) => refs,
                Err(ran) => return Err(read_error(core, &remote, &base, &ran)),
            };
            let segs: Vec<String> = listed
                .iter()
                .filter_map(|(_, name)| name.strip_prefix(&base).filter(|s| !s.contains('/')).map(str::to_owned))
                .collect();
            // The core says which refs are cells (no second spelling of a scope, never `_locks`).
            let cells = core.invoke("list-cells", &json!({ "env": env, "spelling": "ref", "names": segs }))?;
            let cells: Vec<(String, String, String)> = cells["cells"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    Some((
                        c["name"].as_str()?.to_owned(),
                        c["scope"].as_str()?.to_owned(),
                        c["dir"].as_str()?.to_owned(),
                    ))
                })
                .collect();
            let shared = self.prefix == legacy::SHARED_PREFIX;
            if cells.is_empty() && !shared {
                return Ok(Vec::new());
            }
            let specs: Vec<String> =
                cells.iter().enumerate().map(|(i, (seg, _, _))| format!("+{base}{seg}:refs/baton-list/{i}")).collect();
            let ran = if specs.is_empty() { None } else { Some(self.repo()?.fetch(&remote, &specs)?) };
            if let Some(ran) = ran.filter(|r| !r.ok) {
                if ran.stderr.contains("couldn't find remote ref") && attempt < 3 {
                    continue; // a ref deleted between ls-remote and fetch
                }
                return Err(read_error(core, &remote, &base, &ran));
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
            let texts = self.repo()?.cat(&specs)?;
            return Ok(found
                .into_iter()
                .zip(texts)
                .map(|((scope, _), text)| {
                    json!({ "scope": scope, "text": text.map(|b| String::from_utf8_lossy(&b).into_owned()) })
                })
                .collect());
        }
    }
}

/// The files of a change set as paths in the ref's tree; refuses anything outside the cell.
fn cell_changes(dir: &str, changes: &[Value]) -> Result<Vec<(String, Option<String>)>, HostError> {
    changes
        .iter()
        .map(|change| {
            let file = change["file"]
                .as_str()
                .filter(|f| !f.is_empty() && !f.contains('/') && !f.starts_with('.') && !f.contains(['\n', '"', '\\']));
            let Some(file) = file else {
                return Err(HostError::internal(format!("the core asked for a change outside the cell: {change}")));
            };
            match change["op"].as_str() {
                Some("write") => {
                    Ok((format!("{dir}/{file}"), Some(change["content"].as_str().unwrap_or_default().into())))
                }
                Some("delete") => Ok((format!("{dir}/{file}"), None)),
                _ => Err(HostError::internal(format!("unknown change from the core: {change}"))),
            }
        })
        .collect()
}

/// The commit message of a change set and what it is, for messages (`lock`, `renew`, `receipt`, `unlock`).
fn describe(env: &str, scope: &str, changes: &[Value], old_lock: Option<&str>) -> (String, &'static str) {
    let parse = |text: Option<&str>| text.and_then(|t| serde_json::from_str::<Value>(t).ok()).unwrap_or(Value::Null);
    let find = |file: &str| changes.iter().find(|c| c["file"] == file);
    let old = parse(old_lock);
    if let Some(latest) = find("latest.json").filter(|c| c["op"] == "write") {
        let r = parse(latest["content"].as_str());
        let (run, status) = (r["runId"].as_str().unwrap_or("?"), r["status"].as_str().unwrap_or("?"));
        return (format!("receipt {env}/{scope} {run} ({status})"), "a receipt");
    }
    match find("lock.json") {
        Some(c) if c["op"] == "delete" => {
            (format!("unlock {env}/{scope} {}", old["holder"].as_str().unwrap_or("?")), "the unlock")
        }
        Some(c) => {
            let new = parse(c["content"].as_str());
            let (holder, epoch) = (new["holder"].as_str().unwrap_or("?"), &new["epoch"]);
            if old["holder"] == new["holder"] && old["epoch"] == new["epoch"] {
                (format!("renew {env}/{scope} {holder}"), "the renewal")
            } else {
                (format!("lock {env}/{scope} {holder} (epoch {epoch})"), "the lock")
            }
        }
        None => (format!("update {env}/{scope}"), "the change"),
    }
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

/// A failed fetch or ls-remote: `STORE_PERMISSION` when the credentials cannot see the remote (or it is
/// unreachable), else `INTERNAL` with git's last line.
fn read_error(core: &mut CoreComponent, remote: &str, what: &str, ran: &repo::Ran) -> HostError {
    let classified = core.invoke("git-push-outcome", &json!({ "exitCode": ran.code.max(1), "stderr": ran.stderr }));
    let (outcome, detail) = match &classified {
        Ok(v) => (v["outcome"].as_str().unwrap_or("other"), v["detail"].as_str().unwrap_or_default()),
        Err(_) => ("other", ""),
    };
    let label = redact_text(core, remote);
    let err = if outcome == "permission" {
        HostError::new(
            "STORE_PERMISSION",
            format!(
                "Cannot read the store remote {label} ({what}): it does not exist, is unreachable, or these credentials cannot read it. Grant them read and write access to the repository (in GitHub Actions: `permissions: {{ contents: write }}`). ({detail})"
            ),
        )
    } else {
        HostError::internal(format!("git could not read {what} from {label}: {detail}"))
    };
    err.with("ref", what).with("remote", label)
}

fn redact_text(core: &mut CoreComponent, text: &str) -> String {
    core.invoke("redact", &json!({ "text": text }))
        .ok()
        .and_then(|v| v["text"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "[REDACTED]".to_owned())
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

/// A random number in `[0, 1)` for the core's full-jitter backoff.
fn random_unit() -> f64 {
    let hex = super::mutex::random_hex(6);
    let n = u64::from_str_radix(&hex, 16).unwrap_or(0);
    n as f64 / (1u64 << 48) as f64
}
