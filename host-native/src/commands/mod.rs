//! One file per command group. Each returns the envelope data (or the error) for `output::finish`.

pub mod claim;
pub mod gc;
pub mod ledger;
pub mod lock;
pub mod run;
pub mod scope;
pub mod write;

use crate::engine::CoreComponent;
use crate::engine::wit::commands as wc;
use crate::engine::wit::runs::{Job, RunConfig};
use crate::error::HostError;
use crate::store::{DirStore, EtcdStore, GitEnv, GitStore, Store};

/// Opens the store named by `spec` (`--store` / `BATON_STORE`), or the default: `.baton/` at the repository
/// root, or for `baton run` in CI (`CI` set, as every CI system does) with an `origin` remote, that remote.
/// The core decides; git is asked only when no store is named.
pub fn open_store(core: &mut CoreComponent, spec: Option<&str>, run: bool) -> Result<Store, HostError> {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let cwd = std::env::current_dir().map_err(|e| HostError::io("cannot read the current directory", &e))?;
    let git = |args: &[&str]| if spec.is_none() { crate::context::git(args).ok() } else { None };
    let repo_root = git(&["rev-parse", "--show-toplevel"]);
    let ci = std::env::var("CI").is_ok_and(|v| !v.trim().is_empty() && v != "false");
    let origin = if run && ci { git(&["remote", "get-url", "origin"]) } else { None };
    let request = wc::StoreRequest {
        spec: spec.map(str::to_owned),
        repo_root,
        cwd: cwd.display().to_string(),
        prefix: std::env::var("BATON_GIT_PREFIX").ok(),
        budget_ms: std::env::var("BATON_STORE_BUDGET_MS").ok(),
        mutex_wait_ms: std::env::var("BATON_MUTEX_WAIT_MS").ok(),
        run,
        ci,
        origin,
        etcd: Some(etcd_vars()),
    };
    open_spec(core, &request)
}

/// The `BATON_ETCD_*` variables as given, for the core's `store-spec` (it judges them).
pub fn etcd_vars() -> wc::EtcdVars {
    let var = |k: &str| std::env::var(k).ok();
    wc::EtcdVars {
        prefix: var("BATON_ETCD_PREFIX"),
        user: var("BATON_ETCD_USER"),
        password: var("BATON_ETCD_PASSWORD"),
        ca: var("BATON_ETCD_CA"),
        cert: var("BATON_ETCD_CERT"),
        key: var("BATON_ETCD_KEY"),
    }
}

/// Opens the store the core's `store-spec` chooses for `request` (every variable as given): what
/// [`open_store`] does once it has gathered the request, and what the store corpus opens its handles with.
pub fn open_spec(core: &mut CoreComponent, request: &wc::StoreRequest) -> Result<Store, HostError> {
    let store = open_answered(core, request)?;
    // Test builds only (`--features test-faults`): the BATON_TEST_* faults around the store.
    #[cfg(feature = "test-faults")]
    let store = store.with_test_faults();
    Ok(store)
}

fn open_answered(core: &mut CoreComponent, request: &wc::StoreRequest) -> Result<Store, HostError> {
    let choice = core.store_spec(request)?;
    if let Some(notice) = &choice.notice {
        crate::output::note(notice);
    }
    match choice.kind {
        wc::StoreKind::Dir(d) => {
            check_dir_store(&d.path)?;
            Ok(Store::Dir(DirStore::new(&d.path, std::time::Duration::from_millis(d.mutex_wait_ms))))
        }
        wc::StoreKind::Git(g) => {
            let env = GitEnv::from_core(core)?;
            Ok(Store::Git(GitStore::new(&g.remote, &g.prefix, g.budget_ms, &choice.label, env)))
        }
        wc::StoreKind::Etcd(e) => Ok(Store::Etcd(EtcdStore::open(&e, &choice.label)?)),
    }
}

/// The run machine's configuration for `job`: the lease options
/// given, fresh randomness, the grace.
pub(crate) fn run_config(
    job: Job,
    lease: &crate::cli::LeaseArgs,
    cancel_grace: Option<u64>,
) -> Result<RunConfig, HostError> {
    let mut config = crate::engine::run_config(job, crate::random::hex(20)?, lease.wait);
    config.ttl_ms = lease.ttl;
    config.wait_timeout_ms = lease.wait_timeout;
    config.poll_ms = lease.poll_interval;
    config.cancel_grace_ms = cancel_grace;
    Ok(config)
}

/// Refuses (`USAGE`) a dir store whose path, or the nearest part of it that exists, is not a directory:
/// nothing could be read or written there, and saying so names the fix.
fn check_dir_store(path: &str) -> Result<(), HostError> {
    let mut at = Some(std::path::Path::new(path));
    while let Some(p) = at {
        match std::fs::metadata(p) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(HostError::usage(format!(
                    "The store dir:{path} cannot be used: {} is a file, not a directory. Point --store (or BATON_STORE) at a directory, or move the file away. Nothing was read or written.",
                    p.display()
                ))
                .with("path", p.display().to_string()));
            }
            Err(_) => at = p.parent().filter(|q| !q.as_os_str().is_empty()),
        }
    }
    Ok(())
}
