//! Stores: the only I/O primitive. A store loads cell snapshots and commits the changes the core decided,
//! atomically with respect to every other transaction on the same cell. Stores know nothing about leases.
//!
//! [`Store`] is what commands hold; each variant implements the same four operations with the same
//! meaning, so everything above this module is store-agnostic.

pub mod dir;
pub mod etcd;
#[cfg(feature = "test-faults")]
pub mod faults;
pub mod git;
pub mod mutex;
pub mod process;

pub use dir::DirStore;
pub use etcd::EtcdStore;
pub use git::{GitEnv, GitStore};

use crate::engine::CoreComponent;
use crate::error::HostError;
use serde_json::Value;

/// A store named by `--store` / `BATON_STORE` (see the core's `store-spec`).
#[derive(Clone, Debug)]
pub enum Store {
    /// `dir:<path>`: one machine.
    Dir(DirStore),
    /// `git:<remote>`: one orphan ref per cell on a remote every runner can push to.
    Git(GitStore),
    /// `etcd:<endpoints>`: one etcd transaction per commit, comparing the cell's revisions.
    Etcd(EtcdStore),
    /// Another store with the test faults of the environment around it (`test-faults` builds only).
    #[cfg(feature = "test-faults")]
    Faulty(Box<Self>, faults::Faults),
}

impl Store {
    /// This store inside [`Self::Faulty`] when a `BATON_TEST_*` fault is set (`test-faults` builds only; see
    /// `faults`). Call once per opened store (`commands::open_spec` does).
    #[cfg(feature = "test-faults")]
    pub fn with_test_faults(self) -> Self {
        match faults::Faults::from_env() {
            Some(f) => Self::Faulty(Box::new(self), f),
            None => self,
        }
    }

    /// The spec that names this store (credentials redacted), as exported to `baton run`'s command.
    pub fn spec(&self) -> String {
        match self {
            Self::Dir(s) => s.spec(),
            Self::Git(s) => s.spec(),
            Self::Etcd(s) => s.spec(),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => s.spec(),
        }
    }

    /// The budget of one store operation (`BATON_STORE_BUDGET_MS`), for stores that have one (git, etcd).
    pub fn budget_ms(&self) -> Option<u64> {
        match self {
            Self::Dir(_) => None,
            Self::Git(s) => Some(s.budget_ms()),
            Self::Etcd(s) => Some(s.budget_ms()),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => s.budget_ms(),
        }
    }

    /// The spec a child process (`baton run`'s command) needs to open the same store: [`Self::spec`] with
    /// the credentials a git remote URL may carry.
    pub fn export_spec(&self) -> String {
        match self {
            Self::Dir(s) => s.spec(),
            Self::Git(s) => s.export_spec(),
            Self::Etcd(s) => s.export_spec(),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => s.export_spec(),
        }
    }

    /// One transaction on the cell `env/scope`: load the snapshot, read the wall clock, ask `decide` (which
    /// calls the core), commit the `changes` of its answer only if the cell did not change meanwhile.
    /// Bounded by the store budget (`BATON_STORE_BUDGET_MS`).
    pub fn transact(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        self.transact_until(core, env, scope, None, decide)
    }

    /// [`Self::transact`], ended by `deadline` at the latest (a lease's `store_deadline`): what still runs
    /// then is killed and the transaction fails with `STORE_CONTENDED`. The dir store's own bound is its
    /// mutex wait.
    pub fn transact_until(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        deadline: Option<std::time::Instant>,
        decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        match self {
            Self::Dir(s) => s.transact(core, env, scope, decide),
            Self::Git(s) => s.transact(core, env, scope, deadline, decide),
            Self::Etcd(s) => s.transact(core, env, scope, deadline, decide),
            #[cfg(feature = "test-faults")]
            Self::Faulty(inner, f) => {
                let answer = match &**inner {
                    Self::Dir(s) => f.transact_dir(s, core, env, scope, decide).map_err(|e| core.classify(e)),
                    other => other.transact_until(core, env, scope, deadline, decide),
                };
                return f.reply(answer);
            }
        }
        .map_err(|e| core.classify(e))
    }

    /// A read-only look at the cell `env/scope`.
    pub fn read<T>(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        decide: impl FnOnce(&mut CoreComponent, Value, i64) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        match self {
            Self::Dir(s) => s.read(core, env, scope, decide),
            Self::Git(s) => s.read(core, env, scope, decide),
            Self::Etcd(s) => s.read(core, env, scope, decide),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => return s.read(core, env, scope, decide),
        }
        .map_err(|e| core.classify(e))
    }

    /// The scopes of `env` with their `latest.json` text: `[{scope, text}]`, sorted by scope.
    pub fn list(&self, core: &mut CoreComponent, env: &str) -> Result<Vec<Value>, HostError> {
        match self {
            Self::Dir(s) => s.list(core, env),
            Self::Git(s) => s.list(core, env),
            Self::Etcd(s) => s.list(core, env),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => return s.list(core, env),
        }
        .map_err(|e| core.classify(e))
    }

    /// The text of one file of the cell (e.g. a run's receipt), if it exists.
    pub fn read_file(
        &self,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        file: &str,
    ) -> Result<Option<String>, HostError> {
        match self {
            Self::Dir(s) => s.read_file(core, env, scope, file),
            Self::Git(s) => s.read_file(core, env, scope, file),
            Self::Etcd(s) => s.read_file(core, env, scope, file),
            #[cfg(feature = "test-faults")]
            Self::Faulty(s, _) => return s.read_file(core, env, scope, file),
        }
        .map_err(|e| core.classify(e))
    }
}
