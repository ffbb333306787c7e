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

/// The context flags given (`--env`, `--scope`, `--branch`, `--sha`, `--pr`, `--default-branch`), each as
/// written: `detect-context`'s `overrides`. JSON: only the flags given.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextFlags {
    /// `--env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// `--scope`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `--branch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `--sha`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// `--pr`, as written (detection judges it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// `--default-branch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
}

impl ContextFlags {
    /// Sets the override `key` (the second of a [`CONTEXT`] pair); the last value given wins.
    pub(crate) fn set(&mut self, key: &str, value: String) {
        let slot = match key {
            "env" => &mut self.env,
            "scope" => &mut self.scope,
            "branch" => &mut self.branch,
            "sha" => &mut self.sha,
            "pr" => &mut self.pr,
            _ => &mut self.default_branch,
        };
        *slot = Some(value);
    }
}
