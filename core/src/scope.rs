//! Scope derivation: which scope a run belongs to, and which names may name an env or a scope.

use crate::error::CoreError;

/// Returns the scope of a run on `branch`, in pull request `pr` if any.
///
/// The original rule, in order: `pr-<n>` whenever a PR number is known (even on `main`); `main` for
/// `main`, `master` or the repository's default branch; otherwise `branch-` plus the branch name with every
/// run of characters outside `[A-Za-z0-9._-]` replaced by one `-` (case kept, nothing trimmed).
///
/// baton's addition, for branch names too long for that (the result would fail [`validate_name`]: over
/// 193 characters, or over 120 once a `..` or a trailing `.lock` makes the stores hex-encode it): the scope
/// is `branch-` plus the first [`LONG_PREFIX`] characters of the safe name, `-`, and the first 16 hex digits
/// of the SHA-256 of the whole branch name ([`long_scope`]). Such a scope is valid on every store (at most
/// 120 characters, so even hex-encoded it fits a file name and a ref component) and different for every
/// long branch; every name the original rule made valid keeps the scope it had.
pub fn scope_for(branch: &str, pr: Option<u64>, default_branch: Option<&str>) -> String {
    if let Some(n) = pr {
        return format!("pr-{n}");
    }
    if branch == "main" || branch == "master" || default_branch.is_some_and(|d| d == branch) {
        return "main".to_owned();
    }
    let mut scope = String::with_capacity("branch-".len() + branch.len());
    scope.push_str("branch-");
    push_safe_segment(&mut scope, branch);
    if validate_name("scope", &scope).is_ok() { scope } else { long_scope(branch) }
}

/// How many characters of a long branch's safe name its scope keeps (see [`scope_for`]).
pub const LONG_PREFIX: usize = 96;

/// The scope of a branch whose `branch-<safe name>` is not a valid name: `branch-<first 96 characters of
/// the safe name>-<16 hex of sha256(branch)>`.
pub fn long_scope(branch: &str) -> String {
    let safe = safe_segment(branch);
    // The safe name is ASCII: characters are bytes.
    let readable = &safe[..safe.len().min(LONG_PREFIX)];
    let hash = crate::names::sha256_hex(branch.as_bytes());
    format!("branch-{readable}-{}", &hash[..16])
}

/// Replaces every run of characters outside `[A-Za-z0-9._-]` with one `-`.
pub fn safe_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_safe_segment(&mut out, s);
    out
}

/// Appends [`safe_segment`] of `s` to `out`.
fn push_safe_segment(out: &mut String, s: &str) {
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
}

fn is_safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Checks that `name` can name an environment or a scope: non-empty, at most 200 characters, only
/// `[A-Za-z0-9._-]`, and at most 255 bytes once the stores encode it (see [`crate::names`]). A derived
/// scope passes unless its branch name is very long (over 193 characters, or over 120 with `..` or a
/// trailing `.lock`); the check keeps hand-written `--scope`/`--env` values from colliding with derived ones
/// or escaping the store.
pub fn validate_name(what: &str, name: &str) -> Result<(), CoreError> {
    if name.is_empty() || name.len() > 200 || !name.chars().all(is_safe_char) {
        let source = match what {
            "env" => " (set by --env, BATON_CTX_ENV or BATON_ENV)",
            "scope" => " (set by --scope or BATON_SCOPE)",
            _ => "",
        };
        return Err(CoreError::usage(format!(
            "{what} `{name}` is not a valid name{source}: use 1-200 characters from A-Z a-z 0-9 . _ - (as scopes derived from a branch are). Nothing was read or written."
        ))
        .with(what, name));
    }
    // A name the store must hex-encode (a leading or trailing `.`, `..`, a trailing `.lock`) doubles: it must
    // still fit a file name and a ref component (255 bytes), or the store would fail with an I/O error.
    let encoded = crate::names::longest_segment_len(name);
    if encoded > MAX_SEGMENT_BYTES {
        return Err(CoreError::usage(format!(
            "{what} `{name}` is too long for the store once encoded ({encoded} bytes, at most {MAX_SEGMENT_BYTES}): a name that starts or ends with `.`, contains `..` or ends in `.lock` is stored hex-encoded, so it may have at most 127 characters. Nothing was read or written."
        ))
        .with(what, name));
    }
    Ok(())
}

/// The longest cell directory name or ref component a store can take (file systems' NAME_MAX).
const MAX_SEGMENT_BYTES: usize = 255;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_too_long_once_encoded_are_usage() {
        // 127 characters hex-encode to `=` + 254 hex digits: 255 bytes, which fits; 128 do not.
        let fits = format!(".{}", "a".repeat(126));
        assert!(validate_name("scope", &fits).is_ok());
        let long = format!(".{}", "a".repeat(127));
        let e = validate_name("scope", &long).unwrap_err();
        assert_eq!(e.code, crate::error::ErrorCode::Usage);
        assert!(e.message.contains("too long for the store once encoded"), "{}", e.message);
        // Plain names map to themselves: 200 characters are fine.
        assert!(validate_name("scope", &"a".repeat(200)).is_ok());
    }

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
    fn long_branches_get_a_readable_prefix_and_a_hash() {
        // The longest branch the original rule keeps: 193 characters.
        let kept = "b".repeat(193);
        assert_eq!(scope_for(&kept, None, None), format!("branch-{kept}"));
        let long = format!("feature/{}", "x".repeat(292));
        let scope = scope_for(&long, None, None);
        assert!(scope.starts_with("branch-feature-xxx"), "{scope}");
        assert_eq!(scope.len(), 7 + LONG_PREFIX + 1 + 16);
        assert!(validate_name("scope", &scope).is_ok());
        // Distinct even when the readable part is the same; stable.
        let other = format!("feature/{}y", "x".repeat(291));
        assert_ne!(scope_for(&other, None, None), scope);
        assert_eq!(scope_for(&long, None, None), scope);
        // A `..` makes the stores hex-encode a name: the long rule starts at 121 characters then.
        let dots = format!("a..{}", "c".repeat(150));
        let scope = scope_for(&dots, None, None);
        assert!(scope.starts_with("branch-a..ccc") && validate_name("scope", &scope).is_ok(), "{scope}");
        assert_eq!(scope_for("a..b", None, None), "branch-a..b");
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
