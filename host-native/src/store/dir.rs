//! The dir store (`dir:<path>`): cells are directories, a transaction holds the cell mutex from load to
//! commit, and every file write is a temp file + fsync + rename, or + link(2) for a state file the snapshot
//! did not have (the original tool creates `lock.json` without the mutex: it is never replaced). Protocol:
//! `docs/dir-store.md`.

use super::mutex::CellMutex;
use crate::clock::now_ms;
use crate::engine::CoreComponent;
use crate::engine::wit::stores::Spelling;
use crate::error::HostError;
use serde_json::{Map, Value, json};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A dir store rooted at `root`.
#[derive(Clone, Debug)]
pub struct DirStore {
    root: PathBuf,
    mutex_wait: Duration,
}

impl DirStore {
    /// A store rooted at `root` (created on first write) whose transactions wait up to `mutex_wait` for a
    /// cell mutex held by a live process (the core's `store-spec` answers it as `mutexWaitMs`).
    pub fn new(root: impl Into<PathBuf>, mutex_wait: Duration) -> Self {
        Self { root: root.into(), mutex_wait }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The spec that names this store (`dir:<root>`), as exported to `baton run`'s command.
    pub fn spec(&self) -> String {
        format!("dir:{}", self.root.display())
    }

    /// The directory of the cell `env/scope` (the core's `cell-path` under the root), whether it exists or not.
    pub fn cell_dir(&self, core: &mut CoreComponent, env: &str, scope: &str) -> Result<PathBuf, HostError> {
        Ok(self.root.join(core.cell_path(env, scope)?.dir))
    }

    fn load(&self, core: &mut CoreComponent, dir: &Path, env: &str, scope: &str) -> Result<Value, HostError> {
        let mut files = Map::new();
        for name in core.cell_files()? {
            let path = dir.join(&name);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    files.insert(name, String::from_utf8_lossy(&bytes).into_owned().into());
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(HostError::io(format!("cannot read {}", path.display()), &e)),
            }
        }
        Ok(json!({ "env": env, "scope": scope, "files": files }))
    }

    /// The text of `file` in the cell `env/scope`, if it exists.
    pub fn read_file(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        file: &str,
    ) -> Result<Option<String>, HostError> {
        let path = self.cell_dir(core, env, scope)?.join(file);
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HostError::io(format!("cannot read {}", path.display()), &e)),
        }
    }

    /// The scopes of environment `env` with their `latest.json` text (or `null`), sorted by scope:
    /// `[{scope, text}]`, as the core's ownership operations take them (`others`). The core says which
    /// directories are cells (`list-cells`: no second spelling of a scope, never `_locks`).
    pub fn list(&self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        let dir = self.root.join(core.list_cells(env, Spelling::Dir, &[])?.segment);
        let names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(HostError::io(format!("cannot list {}", dir.display()), &e)),
        };
        let listed = core.list_cells(env, Spelling::Dir, &names)?;
        let mut out = Vec::new();
        for cell in listed.cells {
            let (name, scope) = (cell.name, cell.scope);
            let path = dir.join(name).join("latest.json");
            let text = match std::fs::read(&path) {
                Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(HostError::io(format!("cannot read {}", path.display()), &e)),
            };
            out.push(json!({ "scope": scope, "text": text }));
        }
        Ok(out)
    }

    /// Reads the cell without taking the mutex (every file is replaced atomically, so a read never sees a
    /// half-written file) and asks `decide` about it. For read-only operations.
    pub fn read<T>(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnOnce(&mut CoreComponent, Value, i64) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let dir = self.cell_dir(core, env, scope)?;
        let cell = self.load(core, &dir, env, scope)?;
        decide(core, cell, now_ms())
    }

    /// Runs one transaction on the cell `env/scope`: takes the cell mutex, loads the snapshot, reads the
    /// clock, asks `decide` (which calls the core) and commits the `changes` of its answer before releasing
    /// the mutex. A refusal from `decide` commits nothing. On a cell that does not exist, `decide` is first
    /// asked about the empty cell: an answer that writes nothing is returned without creating anything.
    pub fn transact(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        self.transact_observed(core, env, scope, decide, |_, _| {})
    }

    /// [`Self::transact`], calling `committed(dir, answer)` after the changes of a decision landed in the
    /// cell directory `dir` and before the cell mutex is released (never for an answer that changed
    /// nothing). For an observer that must see a cell's commits in their order, such as the test journal of
    /// the `test-faults` build (`store/faults.rs`).
    pub fn transact_observed(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        mut decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
        mut committed: impl FnMut(&Path, &Value),
    ) -> Result<Value, HostError> {
        let dir = self.cell_dir(core, env, scope)?;
        // A cell that does not exist is created only by a decision that writes to it: one that changes
        // nothing there (a refusal, a release of nothing) is answered on the empty cell, as it was when it
        // was looked at, and leaves no empty directory behind for `list` to show (a git store pushes nothing).
        if std::fs::symlink_metadata(&dir).is_err_and(|e| e.kind() == ErrorKind::NotFound) {
            let answer = decide(core, json!({ "env": env, "scope": scope, "files": {} }), now_ms());
            let writes = answer.as_ref().is_ok_and(|a| a["changes"].as_array().is_some_and(|c| !c.is_empty()));
            if !writes {
                return answer;
            }
        }
        // Owner only (0700), like every file in it (0600): receipts name what a scope owns.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| HostError::io(format!("cannot create {}", dir.display()), &e))?;
        let _mutex = CellMutex::take(core, &dir.join("lock.mutex"), env, scope, self.mutex_wait)?;
        // A state file the snapshot did not have is created exclusively: the original tool creates
        // `lock.json` with link(2) without taking the mutex, so it may appear meanwhile; then decide again.
        for _ in 0..CREATE_ATTEMPTS {
            let cell = self.load(core, &dir, env, scope)?;
            let absent: Vec<String> =
                core.cell_files()?.into_iter().filter(|n| cell["files"].get(n.as_str()).is_none()).collect();
            let answer = decide(core, cell, now_ms())?;
            if let Some(changes) = answer.get("changes").and_then(Value::as_array) {
                if let Applied::AppearedMeanwhile = apply(&dir, changes, &absent)? {
                    continue;
                }
                if !changes.is_empty() {
                    committed(&dir, &answer);
                }
            }
            return Ok(answer);
        }
        Err(HostError::new(
            "STORE_CONTENDED",
            format!(
                "Could not settle the cell {env}/{scope} ({}): another tool kept creating its files meanwhile.",
                dir.display()
            ),
        )
        .with("environment", env)
        .with("scope", scope))
    }
}

/// How often a transaction decides again when a file it creates appeared meanwhile (the original tool's
/// bound for its own acquire).
const CREATE_ATTEMPTS: u32 = 100;

/// How a change set went.
enum Applied {
    /// Every change committed.
    Done,
    /// A file to be created exclusively exists now: the changes before it were committed (as a crash there
    /// would leave them), the rest not.
    AppearedMeanwhile,
}

/// Applies a change set in order, each write atomic (temp file, fsync, rename), then fsyncs the directory.
/// A write of a file in `absent` (not in the snapshot) is created exclusively: the temp file is linked
/// (`link(2)`), so a file created meanwhile is never replaced.
fn apply(dir: &Path, changes: &[Value], absent: &[String]) -> Result<Applied, HostError> {
    for change in changes {
        let file = change["file"].as_str().filter(|f| !f.contains('/') && !f.starts_with('.') && !f.is_empty());
        let Some(file) = file else {
            return Err(HostError::internal(format!("the core asked for a change outside the cell: {change}")));
        };
        let path = dir.join(file);
        match change["op"].as_str() {
            Some("write") => {
                let content = change["content"].as_str().unwrap_or_default();
                let tmp = dir.join(format!("{file}.{}.{}.tmp", std::process::id(), crate::random::hex(4)?));
                let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp);
                let written = created.and_then(|mut f| {
                    f.write_all(content.as_bytes())?;
                    f.sync_all()
                });
                let exclusive = absent.iter().any(|a| a == file);
                let placed = written.and_then(|()| {
                    if exclusive { create_linked(&tmp, &path, content) } else { std::fs::rename(&tmp, &path) }
                });
                let _ = std::fs::remove_file(&tmp);
                match placed {
                    Ok(()) => {}
                    Err(e) if exclusive && e.kind() == ErrorKind::AlreadyExists => {
                        return Ok(Applied::AppearedMeanwhile);
                    }
                    Err(e) => return Err(HostError::io(format!("cannot write {}", path.display()), &e)),
                }
            }
            Some("delete") => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(HostError::io(format!("cannot delete {}", path.display()), &e));
                }
            },
            _ => {
                return Err(HostError::internal(format!("unknown change from the core: {change}")));
            }
        }
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(Applied::Done)
}

/// Creates `path` from the complete temp file `tmp` with `link(2)` (`AlreadyExists` if it exists); where
/// the file system has no hard links, with `O_EXCL` and `content`, as the original tool does.
fn create_linked(tmp: &Path, path: &Path, content: &str) -> std::io::Result<()> {
    match std::fs::hard_link(tmp, path) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOTSUP)) => {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
            f.write_all(content.as_bytes())?;
            f.sync_all()
        }
        other => other,
    }
}
