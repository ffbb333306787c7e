//! The original tool's legacy receipts branch (`sponson/receipts`, `reference/sponson-behaviour.md` §2.3),
//! read as the original reads it when this store shares the original's ref prefix (`sponson-receipts`): a
//! cell without a ref of its own is read from the branch's `<envDir>/<scopeDir>/` files (so a live lock
//! there is respected, and a receipt found only there is read), and the first commit of the cell's own ref
//! is seeded with them. The branch itself is never written.

use super::repo::Repo;
use crate::error::HostError;

/// The ref prefix the original tool uses; only a store with this prefix reads the legacy branch.
pub(super) const SHARED_PREFIX: &str = "sponson-receipts";
/// The legacy branch on the remote.
pub(super) const BRANCH: &str = "refs/heads/sponson/receipts";
/// Where the clone keeps its last fetch of it.
const LOCAL: &str = "refs/baton-legacy";

/// Fetches the legacy branch: `Ok(true)` when it exists (then at [`LOCAL`]), `Ok(false)` when the remote
/// has none, or the failed run for the caller to classify.
pub(super) fn fetch(repo: &Repo) -> Result<Result<bool, super::repo::Ran>, HostError> {
    let ran = repo.fetch(&[format!("+{BRANCH}:{LOCAL}")])?;
    if ran.ok {
        Ok(Ok(true))
    } else if ran.stderr.contains("couldn't find remote ref") {
        Ok(Ok(false))
    } else {
        Ok(Err(ran))
    }
}

/// The paths of the files under `dir/` on the fetched legacy branch, sorted (read their texts with
/// [`spec`] through the store's `cat`).
pub(super) fn paths(repo: &Repo, dir: &str) -> Result<Vec<String>, HostError> {
    let ran = repo.run(&["ls-tree", "-r", "-z", "--name-only", LOCAL, "--", &format!("{dir}/")], None)?;
    if !ran.ok {
        return Err(HostError::internal(format!("git ls-tree of the legacy branch failed: {}", ran.stderr.trim())));
    }
    let mut paths: Vec<String> = ran
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| p.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/')))
        .collect();
    paths.sort();
    Ok(paths)
}

/// The `cat-file` spec of tree path `path` on the fetched legacy branch.
pub(super) fn spec(path: &str) -> String {
    format!("{LOCAL}:{path}")
}

/// The scope directories of `env_dir/` on the fetched legacy branch.
pub(super) fn scope_dirs(repo: &Repo, env_dir: &str) -> Result<Vec<String>, HostError> {
    let ran = repo.run(&["ls-tree", "-z", "-d", "--name-only", &format!("{LOCAL}:{env_dir}")], None)?;
    if !ran.ok {
        return Ok(Vec::new()); // no such environment on the branch
    }
    Ok(ran
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The spec of `latest.json` of scope directory `dir` (`<envDir>/<scopeDir>`) on the fetched branch.
pub(super) fn latest_spec(dir: &str) -> String {
    format!("{LOCAL}:{dir}/latest.json")
}
