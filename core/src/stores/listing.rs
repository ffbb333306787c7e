//! Which entries of an environment a store's `list` shows: the directories of `<root>/<env dir>/` in a
//! dir store, the ref segments under `refs/heads/<prefix>/<env seg>/` in a git store.
//!
//! An entry is listed only when it is the spelling a transaction on its scope would use in that kind of
//! store: anything that does not decode to a valid scope (`.tmp`, `=41`, a non-canonical `=hex`) is not a
//! cell, and a second spelling of a scope (the directory `=782e6c6f636b`, which is the *ref* spelling of
//! `x.lock`, whose directory is `x.lock`) is never listed, so no scope appears twice or with another cell's
//! receipt. `_locks`, the name of the parent-object lock cells, is never a scope.

use crate::error::CoreError;
use crate::names::{decode_segment, path_segment, ref_segment};
use crate::ownership::PARENT_ENV;
use serde::{Deserialize, Serialize};

/// The two ways a store spells names.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Spelling {
    /// Directory names ([`path_segment`]).
    Dir,
    /// Git ref segments ([`ref_segment`]).
    Ref,
}

impl Spelling {
    fn of(self, name: &str) -> String {
        match self {
            Self::Dir => path_segment(name),
            Self::Ref => ref_segment(name),
        }
    }
}

/// One listed cell.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Listed {
    /// The entry as the host found it (directory name or ref segment).
    pub name: String,
    /// The scope it stands for.
    pub scope: String,
    /// The cell's directory, `<env dir>/<scope dir>` (in a git store: inside the ref's tree).
    pub dir: String,
}

/// The listing of `env`: `segment` is where the host looks (the env's directory or ref segment); `cells`
/// are the entries of `names` that are cells, sorted by scope. `USAGE` for an env that is not a valid name.
pub fn list_cells(env: &str, spelling: Spelling, names: &[String]) -> Result<(String, Vec<Listed>), CoreError> {
    crate::scope::validate_name("env", env)?;
    let mut cells: Vec<Listed> = names
        .iter()
        .filter_map(|name| {
            let scope = decode_segment(name)?;
            let canonical = crate::scope::validate_name("scope", &scope).is_ok()
                && scope != PARENT_ENV
                && spelling.of(&scope) == *name;
            canonical.then(|| Listed {
                name: name.clone(),
                dir: format!("{}/{}", path_segment(env), path_segment(&scope)),
                scope,
            })
        })
        .collect();
    cells.sort_by(|a, b| a.scope.cmp(&b.scope));
    cells.dedup_by(|a, b| a.scope == b.scope);
    Ok((spelling.of(env), cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_the_spelling_a_transaction_uses_is_listed() {
        let found = names(&["pr-2", "x.lock", "=782e6c6f636b", "_locks", "=70722d31", ".tmp", "=2e68", "pr-1"]);
        let (seg, dir) = list_cells("preview", Spelling::Dir, &found).unwrap();
        let scopes: Vec<&str> = dir.iter().map(|c| c.scope.as_str()).collect();
        assert_eq!((seg.as_str(), scopes), ("preview", vec![".h", "pr-1", "pr-2", "x.lock"]));
        assert_eq!(dir[3], Listed { name: "x.lock".into(), scope: "x.lock".into(), dir: "preview/x.lock".into() });
        let (_, refs) = list_cells("preview", Spelling::Ref, &found).unwrap();
        let listed: Vec<(&str, &str)> = refs.iter().map(|c| (c.name.as_str(), c.dir.as_str())).collect();
        assert_eq!(
            listed,
            vec![
                ("=2e68", "preview/=2e68"),
                ("pr-1", "preview/pr-1"),
                ("pr-2", "preview/pr-2"),
                ("=782e6c6f636b", "preview/x.lock")
            ]
        );
        assert_eq!(list_cells("..", Spelling::Ref, &[]).unwrap().0, "=2e2e");
        assert_eq!(list_cells("a/b", Spelling::Dir, &[]).unwrap_err().code, crate::ErrorCode::Usage);
    }
}
