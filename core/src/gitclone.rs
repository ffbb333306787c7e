//! The private working clones of the git store: how they are named, and which ones a later process may
//! remove. A clone lives in the temp directory while its process runs; a process killed with SIGKILL
//! cannot remove its own, so every store, when it creates its clone, sweeps the clones of processes that
//! no longer exist (the dir mutex's liveness rule: pid plus process start time, a zombie counts as gone;
//! like the mutex, only the clones of this host are judged: another host, or a container sharing the temp
//! dir, has other processes under the same pids).

use serde::Serialize;
use std::collections::BTreeMap;

/// Every clone name starts with this.
pub const PREFIX: &str = "baton-git-";

/// The directory name of a new clone:
/// `baton-git-<12 hex of sha256(remote)>-<8 hex of sha256(host)>-<pid>-<start>-<random hex>`. `start` is
/// the process start time (`/proc/<pid>/stat` field 22), `x` where the host has none; remote and host are
/// hashed so the name reveals neither. `random` keeps two clones of one process apart.
pub fn clone_name(remote: &str, host: &str, pid: u32, start: Option<&str>, random: &str) -> String {
    let hash = &crate::names::sha256_hex(remote.as_bytes())[..12];
    let start = start.filter(|s| is_digits(s)).unwrap_or("x");
    let random: String = random.chars().filter(char::is_ascii_hexdigit).take(16).collect();
    format!("{PREFIX}{hash}-{}-{pid}-{start}-{random}", host_hash(host))
}

fn host_hash(host: &str) -> String {
    crate::names::sha256_hex(host.as_bytes())[..8].to_owned()
}

/// The owner of a clone named by [`clone_name`]: `(host hash, pid, start)` (`None` for `x`); `None` for
/// anything else (another tool's directory, a clone of an older baton), which is never removed.
pub fn owner(name: &str) -> Option<(&str, u32, Option<&str>)> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.split('-');
    let (hash, host, pid, start, random) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: Option<usize>| {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit()) && n.is_none_or(|n| s.len() == n)
    };
    if parts.next().is_some() || !hex(hash, Some(12)) || !hex(host, Some(8)) || !hex(random, None) || !is_digits(pid) {
        return None;
    }
    let pid = pid.parse::<u32>().ok().filter(|p| *p > 0)?;
    match start {
        "x" => Some((host, pid, None)),
        s if is_digits(s) => Some((host, pid, Some(s))),
        _ => None,
    }
}

/// The sweep decision (op `git-stale-clones`) on `host`: only clones named on this host are judged. Without
/// `processes`: `{pids}`, the owners the host must look up. With `processes` (pid -> its current start time, or `null` when it no longer exists or is a zombie;
/// for an owner named without a start time, any string means alive): `{pids, stale}`, the names to remove:
/// those whose owner is gone or whose pid now belongs to a process started at another time. A pid the host
/// did not look up keeps its clones.
pub fn stale(names: &[String], host: &str, processes: Option<&BTreeMap<String, Option<String>>>) -> StaleClones {
    let here = host_hash(host);
    let owned: Vec<(&String, u32, Option<&str>)> = names
        .iter()
        .filter_map(|n| owner(n).filter(|(h, _, _)| *h == here).map(|(_, pid, start)| (n, pid, start)))
        .collect();
    let mut pids: Vec<u32> = owned.iter().map(|(_, pid, _)| *pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let Some(processes) = processes else { return StaleClones { pids, stale: None } };
    let stale: Vec<String> = owned
        .into_iter()
        .filter(|(_, pid, start)| match processes.get(&pid.to_string()) {
            None => false,
            Some(None) => true,
            Some(Some(now)) => start.is_some_and(|s| s != now),
        })
        .map(|(n, _, _)| n.clone())
        .collect();
    StaleClones { pids, stale: Some(stale) }
}

/// The answer of [`stale`]: the owners to look up, and (once they were) the clones to remove.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StaleClones {
    /// The pids owning clones of this host, sorted, each once.
    pub pids: Vec<u32>,
    /// The names of the clones whose owner is gone (only when the host passed `processes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<Vec<String>>,
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        let n = clone_name("https://u:p@h/r.git", "ci-1", 4242, Some("9876"), "00ff_zz12");
        assert!(n.starts_with("baton-git-") && !n.contains("h/r") && !n.contains("ci-1"), "{n}");
        assert!(n.ends_with("-4242-9876-00ff12"), "{n}");
        assert_eq!(owner(&n).map(|(_, p, s)| (p, s)), Some((4242, Some("9876"))));
        let n = clone_name("r", "ci-1", 7, None, "ab");
        assert_eq!(owner(&n).map(|(_, p, s)| (p, s)), Some((7, None)));
        for other in [
            "baton-git-abc",
            "baton-git-0123456789ab-01234567-Xz-1-ab",
            "baton-git-0123456789ab-01234567-0-1-ab",
            "tmp",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn only_clones_of_gone_processes_are_stale() {
        let names: Vec<String> = [
            clone_name("r", "h", 10, Some("100"), "a1"),     // alive, same start
            clone_name("r", "h", 11, Some("100"), "a2"),     // gone
            clone_name("r", "h", 12, Some("100"), "a3"),     // pid reused
            clone_name("r", "h", 13, None, "a4"),            // no start, alive
            clone_name("r", "h", 14, None, "a5"),            // no start, gone
            clone_name("r", "h", 15, Some("1"), "a6"),       // not looked up
            clone_name("r", "other", 11, Some("100"), "a7"), // another host's: never judged here
            "baton-git-0123456789ab-feed".to_owned(),        // an older baton's clone: never
        ]
        .into();
        assert_eq!(stale(&names, "h", None), StaleClones { pids: vec![10, 11, 12, 13, 14, 15], stale: None });
        let procs: BTreeMap<String, Option<String>> =
            [("10", Some("100")), ("11", None), ("12", Some("200")), ("13", Some("alive")), ("14", None)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.map(str::to_owned)))
                .collect();
        let got = stale(&names, "h", Some(&procs));
        assert_eq!(got.stale, Some(vec![names[1].clone(), names[2].clone(), names[4].clone()]));
    }
}
