//! One file per command group. Each returns the envelope data (or the error) for `output::finish`.

pub mod ledger;
pub mod lock;
pub mod run;
pub mod scope;
pub mod write;

use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::store::DirStore;
use serde_json::json;

/// Opens the store named by `spec` (`--store` / `BATON_STORE`), or the default `.baton/` at the repository
/// root. The core decides; git is asked for the repository root only when no store is named.
pub fn open_store(core: &mut CoreComponent, spec: Option<&str>) -> Result<DirStore, HostError> {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let cwd = std::env::current_dir().map_err(|e| HostError::io("cannot read the current directory", &e))?;
    let repo_root = if spec.is_none() { crate::context::git(&["rev-parse", "--show-toplevel"]).ok() } else { None };
    let answer =
        core.invoke("store-spec", &json!({ "spec": spec, "repoRoot": repo_root, "cwd": cwd.display().to_string() }))?;
    let path = answer["path"].as_str().ok_or_else(|| HostError::internal(format!("store-spec answered {answer}")))?;
    Ok(DirStore::new(path))
}
