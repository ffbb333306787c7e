//! `store-spec`: which store a command uses, from `--store` / `BATON_STORE` and the variables that tune it,
//! as a typed answer ([`StoreSpec`]) every host opens its store from.
//!
//! `spec` is `--store` or else `BATON_STORE` (the first non-blank): `dir:<path>`, `git:<remote>` or
//! `etcd:<endpoint>[,<endpoint>...]` (answered by [`crate::stores::etcd::spec`] with `etcd`, the
//! `BATON_ETCD_*` variables). Without one, `baton run` in CI (`ci`) in a repository with an `origin` remote
//! uses `git:<origin>`; everything else uses `.baton` at the repository root (or in `cwd` outside a
//! repository). `prefix` is `BATON_GIT_PREFIX` (default `baton-receipts`; `sponson-receipts` shares the
//! original tool's store); `budgetMs` is `BATON_STORE_BUDGET_MS` as given (default 60000; anything but a
//! positive integer is USAGE); `mutexWaitMs` is `BATON_MUTEX_WAIT_MS` as given (default 30000; anything but
//! a whole number is USAGE, see [`crate::stores::wait`]), answered for a dir store as the number its
//! transactions wait for a cell mutex.

use crate::error::CoreError;
use crate::stores::etcd::{EtcdSpec, EtcdVars};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// `store-spec`: `{spec?, repoRoot?, cwd, prefix?, budgetMs?, mutexWaitMs?, run?, ci?, origin?, etcd?}`,
/// every variable as the process has it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreSpecRequest {
    /// `--store`, else `BATON_STORE`.
    #[serde(default)]
    pub spec: Option<String>,
    /// The repository root, when the command runs inside one.
    #[serde(default)]
    pub repo_root: Option<String>,
    /// The working directory (relative `dir:` paths are resolved against it).
    pub cwd: String,
    /// `BATON_GIT_PREFIX` as given.
    #[serde(default)]
    pub prefix: Option<String>,
    /// `BATON_STORE_BUDGET_MS` as given.
    #[serde(default)]
    pub budget_ms: Option<String>,
    /// `BATON_MUTEX_WAIT_MS` as given.
    #[serde(default)]
    pub mutex_wait_ms: Option<String>,
    /// The command is `baton run` (a default store outside CI gets a notice).
    #[serde(default)]
    pub run: bool,
    /// The command runs in CI.
    #[serde(default)]
    pub ci: bool,
    /// The repository's `origin` remote, when it has one.
    #[serde(default)]
    pub origin: Option<String>,
    /// The `BATON_ETCD_*` variables as given (prefix, user, password, TLS paths), for an `etcd:` spec.
    #[serde(default)]
    pub etcd: Option<EtcdVars>,
}

/// Where the store came from: named (`--store`, `BATON_STORE`) or chosen by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpecSource {
    /// `--store` or `BATON_STORE`.
    Spec,
    /// Nothing named a store.
    Default,
}

/// Which kind of store, with what opening it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// `dir:<path>`: one machine.
    Dir {
        /// The store's directory (absolute when `cwd` was).
        path: String,
        /// How long a transaction waits for a cell mutex held by a live process.
        mutex_wait_ms: u64,
    },
    /// `git:<remote>`.
    Git {
        /// The remote as given (it may carry credentials: print `label` instead).
        remote: String,
        /// The ref prefix.
        prefix: String,
        /// The budget of one store operation, retries included.
        budget_ms: u64,
    },
    /// `etcd:<endpoints>`.
    Etcd(EtcdSpec),
}

/// The answer of `store-spec`. JSON: `{kind: "dir", path, source, label, notice (default only),
/// mutexWaitMs}`, `{kind: "git", remote, prefix, budgetMs, source, label}` or `{kind: "etcd", endpoints,
/// prefix, budgetMs, attemptMs, auth, tls, label, exportSpec, source}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreSpec {
    /// The store.
    pub kind: StoreKind,
    /// Named or default.
    pub source: SpecSource,
    /// How output names the store: credentials never appear in it.
    pub label: String,
    /// For people, when `baton run` outside CI falls back to the embedded dir store.
    pub notice: Option<String>,
}

impl Serialize for StoreSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match &self.kind {
            StoreKind::Dir { path, mutex_wait_ms } => {
                m.serialize_entry("kind", "dir")?;
                m.serialize_entry("path", path)?;
                m.serialize_entry("source", &self.source)?;
                m.serialize_entry("label", &self.label)?;
                if self.source == SpecSource::Default {
                    m.serialize_entry("notice", &self.notice)?;
                }
                m.serialize_entry("mutexWaitMs", mutex_wait_ms)?;
            }
            StoreKind::Git { remote, prefix, budget_ms } => {
                m.serialize_entry("kind", "git")?;
                m.serialize_entry("remote", remote)?;
                m.serialize_entry("prefix", prefix)?;
                m.serialize_entry("budgetMs", budget_ms)?;
                m.serialize_entry("source", &self.source)?;
                m.serialize_entry("label", &self.label)?;
            }
            StoreKind::Etcd(e) => {
                m.serialize_entry("kind", "etcd")?;
                m.serialize_entry("endpoints", &e.endpoints)?;
                m.serialize_entry("prefix", &e.prefix)?;
                m.serialize_entry("budgetMs", &e.budget_ms)?;
                m.serialize_entry("attemptMs", &e.attempt_ms)?;
                m.serialize_entry("auth", &e.auth)?;
                m.serialize_entry("tls", &e.tls)?;
                m.serialize_entry("label", &self.label)?;
                m.serialize_entry("exportSpec", &e.export_spec)?;
                m.serialize_entry("source", &self.source)?;
            }
        }
        m.end()
    }
}

/// The store `r` names (see the module doc). `USAGE` for an unknown spec, a bad prefix, budget or wait.
pub fn store_spec(r: &StoreSpecRequest) -> Result<StoreSpec, CoreError> {
    let nonblank = |v: &Option<String>| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let prefix = nonblank(&r.prefix).unwrap_or_else(|| crate::gitstore::DEFAULT_PREFIX.to_owned());
    if prefix.split('/').any(|seg| crate::names::ref_segment(seg) != seg) {
        return Err(CoreError::usage(format!(
            "BATON_GIT_PREFIX `{prefix}` is not a valid ref prefix: use letters, digits, . _ - and /"
        )));
    }
    let budget = match nonblank(&r.budget_ms) {
        None => crate::gitstore::DEFAULT_BUDGET_MS,
        Some(b) => b.parse::<u64>().ok().filter(|b| *b > 0).ok_or_else(|| {
            CoreError::usage(format!("BATON_STORE_BUDGET_MS must be a positive number of milliseconds (got {b:?})"))
        })?,
    };
    let wait = crate::stores::wait::mutex_wait_ms(r.mutex_wait_ms.as_deref())?;
    let git = |remote: &str, source| StoreSpec {
        kind: StoreKind::Git { remote: remote.to_owned(), prefix: prefix.clone(), budget_ms: budget },
        source,
        label: crate::gitstore::redact(remote),
        notice: None,
    };
    let dir = |path: String, source, notice| StoreSpec {
        label: format!("dir:{path}"),
        kind: StoreKind::Dir { path, mutex_wait_ms: wait },
        source,
        notice,
    };
    let Some(spec) = nonblank(&r.spec) else {
        let base = r.repo_root.as_deref().filter(|s| !s.is_empty()).unwrap_or(&r.cwd);
        let path = format!("{}/.baton", base.trim_end_matches('/'));
        if r.run
            && r.ci
            && let Some(origin) = nonblank(&r.origin)
        {
            return Ok(git(&origin, SpecSource::Default));
        }
        let notice = r.run.then(|| {
            format!("using the embedded store {path} (this machine only); pass --store git:<remote> or set BATON_STORE to share it")
        });
        return Ok(dir(path, SpecSource::Default, notice));
    };
    match spec.split_once(':') {
        Some(("dir", path)) if !path.trim().is_empty() => {
            let path = path.trim();
            let path = if path.starts_with('/') { path.to_owned() } else { format!("{}/{}", r.cwd.trim_end_matches('/'), path) };
            Ok(dir(path, SpecSource::Spec, None))
        }
        Some(("git", remote)) if !remote.trim().is_empty() => Ok(git(remote.trim(), SpecSource::Spec)),
        Some(("etcd", list)) => {
            let (etcd, label) = crate::stores::etcd::spec(list.trim(), &r.etcd.clone().unwrap_or_default(), budget)?;
            Ok(StoreSpec { kind: StoreKind::Etcd(etcd), source: SpecSource::Spec, label, notice: None })
        }
        _ => Err(CoreError::usage(format!(
            "unknown store `{}`: use dir:<path> (a directory on this machine), git:<remote> (a git remote every runner can push to) or etcd:<endpoint>[,<endpoint>...] (an etcd cluster)",
            crate::gitstore::redact(&spec)
        ))
        .with("store", crate::gitstore::redact(&spec))),
    }
}
