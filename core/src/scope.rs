//! Scope derivation: which scope a run belongs to, and which names may name an env or a scope.

use crate::error::CoreError;

/// Returns the scope of a run on `branch`, in pull request `pr` if any.
///
/// The original rule, in order: `pr-<n>` whenever a PR number is known (even on `main`); `main` for
/// `main`, `master` or the repository's default branch; otherwise `branch-` plus the branch name with every
/// run of characters outside `[A-Za-z0-9._-]` replaced by one `-` (case kept, nothing trimmed).
pub fn scope_for(branch: &str, pr: Option<u64>, default_branch: Option<&str>) -> String {
    if let Some(n) = pr {
        return format!("pr-{n}");
    }
    if branch == "main" || branch == "master" || default_branch.is_some_and(|d| d == branch) {
        return "main".to_owned();
    }
    format!("branch-{}", safe_segment(branch))
}

/// Replaces every run of characters outside `[A-Za-z0-9._-]` with one `-`.
pub fn safe_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for c in s.chars() {
        if is_safe_char(c) {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out
}

fn is_safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Checks that `name` can name an environment or a scope: non-empty, at most 200 characters, only
/// `[A-Za-z0-9._-]`. Every derived scope passes; the check keeps hand-written `--scope`/`--env` values from
/// colliding with derived ones or escaping the store (see [`crate::names`]).
pub fn validate_name(what: &str, name: &str) -> Result<(), CoreError> {
    if name.is_empty() || name.len() > 200 || !name.chars().all(is_safe_char) {
        let source = match what {
            "env" => " (set by --env, BATON_CTX_ENV or BATON_ENV)",
            "scope" => " (set by --scope or BATON_SCOPE)",
            _ => "",
        };
        return Err(CoreError::usage(format!(
            "{what} `{name}` is not a valid name{source}: use 1-200 characters from A-Z a-z 0-9 . _ - (derived scopes always are). Nothing was read or written."
        ))
        .with(what, name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_original_rule() {
        assert_eq!(scope_for("main", Some(42), None), "pr-42");
        assert_eq!(scope_for("main", None, None), "main");
        assert_eq!(scope_for("master", None, None), "main");
        assert_eq!(scope_for("trunk", None, Some("trunk")), "main");
        assert_eq!(scope_for("trunk", None, None), "branch-trunk");
        assert_eq!(scope_for("feat/search", None, None), "branch-feat-search");
        assert_eq!(scope_for("feat/x y", None, None), "branch-feat-x-y");
        assert_eq!(scope_for("feat//x", None, None), "branch-feat-x");
        assert_eq!(scope_for("é", None, None), "branch--");
        assert_eq!(scope_for("Feature", None, None), "branch-Feature");
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_name("scope", "pr-1").is_ok());
        assert!(validate_name("scope", "branch-a.b_c").is_ok());
        assert!(validate_name("scope", "").is_err());
        assert!(validate_name("scope", "a/b").is_err());
        assert!(validate_name("env", "pré").is_err());
    }
}
