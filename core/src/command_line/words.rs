//! The words both command lines share (`command_line` for run, destroy and gc; `ledger` for the ledger
//! commands): the context flags and how `--flag=value` splits. A module of its own so that neither of
//! the two depends on the other.

/// The context flags and the `detect-context` override each one sets.
pub(crate) const CONTEXT: [(&str, &str); 6] = [
    ("--env", "env"),
    ("--scope", "scope"),
    ("--branch", "branch"),
    ("--sha", "sha"),
    ("--pr", "pr"),
    ("--default-branch", "defaultBranch"),
];

/// `--flag=value` as (`--flag`, Some(`value`)); any other word as itself and None.
pub(crate) fn split_flag(word: &str) -> (&str, Option<String>) {
    match word.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
        _ => (word, None),
    }
}
