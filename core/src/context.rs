//! CI context detection: which environment, branch, commit and pull request a run belongs to.
//!
//! A pure function of explicit overrides, a map of environment variables, the GitHub event payload and,
//! only as a last resort, facts from local git. Sources are consulted in order and the first source that
//! answers a field wins: overrides > `BATON_CTX_*` > GitHub Actions > GitLab CI > CircleCI > Bitbucket
//! Pipelines > local git. Every value is trimmed and a blank value counts as unset. For the pull request,
//! "no pull request" (`null`) is an answer: later sources never override it.
//!
//! Detection runs in at most two calls. The first passes `git: null`; if the CI sources left the branch or
//! the commit unknown, the answer is [`Detection::NeedsGit`] and the host runs `git rev-parse` (and, when
//! `askPr` is set, `gh pr view`), then calls again with the facts it got.

use crate::error::{CoreError, ErrorCode};
use crate::scope::{scope_for, validate_name};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The environment when nothing names one. Production is never inferred.
pub const DEFAULT_ENV: &str = "preview";

/// What the caller of detection knows.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextInput {
    /// Explicit values (CLI flags, library arguments); they beat every other source.
    #[serde(default)]
    pub overrides: Overrides,
    /// The process environment.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// The parsed JSON of `GITHUB_EVENT_PATH`, if the host could read it.
    #[serde(default)]
    pub event: Option<Value>,
    /// Facts from local git, once [`Detection::NeedsGit`] asked for them.
    #[serde(default)]
    pub git: Option<GitFacts>,
    /// The command concerns a whole environment (`receipt list`, `gc`) and needs no scope: when no source
    /// (local git included) knows the branch and no scope is named, the answer is
    /// [`Detection::Environment`] instead of `CTX_NULL`.
    #[serde(default)]
    pub env_only: bool,
    /// The command needs only the scope (`baton scope`): local git is asked for a branch no other source
    /// gave, never for the commit alone, so explicit flags (`--branch x`) make detection run no process.
    /// The context's `sha` is then what the other sources say, or null.
    #[serde(default)]
    pub scope_only: bool,
}

/// Explicit values. For `pr`: absent means "not given", `null` or `""` means "no pull request", and
/// anything else must be a positive integer (number or decimal string).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Overrides {
    /// The environment.
    pub env: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// The commit.
    pub sha: Option<String>,
    /// The pull request number; see the type doc for absent vs `null`.
    #[serde(default, deserialize_with = "present")]
    pub pr: Option<Value>,
    /// The repository's default branch.
    pub default_branch: Option<String>,
    /// The scope itself (`--scope`), when the caller names it instead of deriving it. With a named scope
    /// the branch is not required and git is never asked.
    pub scope: Option<String>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What local git (and the `gh` CLI) said. Every field is optional: a host that cannot run git passes `{}`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitFacts {
    /// `git rev-parse --abbrev-ref HEAD` (`HEAD` when detached).
    pub branch: Option<String>,
    /// `git rev-parse HEAD`.
    pub sha: Option<String>,
    /// `gh pr view --json number -q .number`, when it answered with a number (non-positive: no PR).
    pub pr: Option<i64>,
    /// Why git could not answer, for the error message.
    pub error: Option<String>,
}

/// The detected context of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The environment (`preview` unless named).
    pub env: String,
    /// The branch; `null` only when the scope was named (`--scope`, `BATON_SCOPE`) and no source knew it.
    pub branch: Option<String>,
    /// The commit, when known.
    pub sha: Option<String>,
    /// The pull request number, or `null` for none.
    pub pr: Option<u64>,
    /// The repository's default branch, when a source knows it.
    pub default_branch: Option<String>,
    /// The scope derived from branch, pull request and default branch.
    pub scope: String,
}

/// The context of a command on a whole environment when no source knows a branch: [`Context`] without
/// branch and scope (both serialised as `null`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentContext {
    /// The environment (`preview` unless named).
    pub env: String,
    /// Always `None`: no source knew it.
    pub branch: Option<String>,
    /// The commit, when known.
    pub sha: Option<String>,
    /// The pull request number, or `null` for none.
    pub pr: Option<u64>,
    /// The repository's default branch, when a source knows it.
    pub default_branch: Option<String>,
    /// Always `None`: a command on a whole environment has no scope.
    pub scope: Option<String>,
}

/// The answer of one detection call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Detection {
    /// The context is complete.
    Detected {
        /// The context.
        context: Context,
    },
    /// Only the environment is known (a request with `envOnly`, no branch from any source, no named scope).
    /// Serialised like `Detected`, with `scope` and `branch` null.
    #[serde(rename = "detected")]
    Environment {
        /// `{env, branch: null, sha, pr, defaultBranch, scope: null}`.
        context: EnvironmentContext,
    },
    /// Call again with `git` facts. `askPr`: the pull request is still unknown and the branch will come
    /// from local git, so asking `gh pr view` is worth it.
    NeedsGit {
        /// Whether to ask `gh` for the pull request of the current branch.
        #[serde(rename = "askPr")]
        ask_pr: bool,
    },
}

#[derive(Default)]
struct Acc {
    env: Option<String>,
    branch: Option<String>,
    sha: Option<String>,
    /// `None`: unknown; `Some(None)`: no pull request; `Some(Some(n))`: pull request n.
    pr: Option<Option<u64>>,
    default_branch: Option<String>,
}

impl Acc {
    fn env(&mut self, v: Option<&str>) {
        fill(&mut self.env, v);
    }
    fn branch(&mut self, v: Option<&str>) {
        fill(&mut self.branch, v);
    }
    fn sha(&mut self, v: Option<&str>) {
        fill(&mut self.sha, v);
    }
    fn default_branch(&mut self, v: Option<&str>) {
        fill(&mut self.default_branch, v);
    }
    fn pr(&mut self, v: Option<Option<u64>>) {
        if self.pr.is_none() {
            self.pr = v;
        }
    }
}

fn fill(slot: &mut Option<String>, v: Option<&str>) {
    if slot.is_none() {
        *slot = v.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    }
}

struct Vars<'a>(&'a BTreeMap<String, String>);

impl<'a> Vars<'a> {
    /// The trimmed, non-blank value of `name`.
    fn get(&self, name: &str) -> Option<&'a str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }
    fn first(&self, names: &[&str]) -> Option<&'a str> {
        names.iter().find_map(|n| self.get(n))
    }
    fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// A trimmed decimal string greater than zero.
fn positive_int(v: Option<&str>) -> Option<u64> {
    let v = v?.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok().filter(|n| *n > 0)
}

/// Detects the context; see the module doc for the sources and the two-call protocol.
pub fn detect(input: &ContextInput) -> Result<Detection, CoreError> {
    let vars = Vars(&input.vars);
    let mut acc = Acc::default();

    // 1. Explicit overrides.
    let o = &input.overrides;
    acc.env(o.env.as_deref());
    acc.branch(o.branch.as_deref());
    acc.sha(o.sha.as_deref());
    acc.default_branch(o.default_branch.as_deref());
    if let Some(pr) = &o.pr {
        acc.pr(Some(parse_pr_override(pr)?));
    }

    // 2. BATON_CTX_* (and BATON_ENV, which `baton run` exports to its command).
    acc.env(vars.get("BATON_CTX_ENV"));
    acc.env(vars.get("BATON_ENV"));
    acc.branch(vars.get("BATON_CTX_BRANCH"));
    acc.sha(vars.get("BATON_CTX_SHA"));
    if acc.pr.is_none()
        && let Some(raw) = input.vars.get("BATON_CTX_PR")
    {
        let raw = raw.trim();
        if raw.is_empty() {
            acc.pr(Some(None));
        } else if let Some(n) = positive_int(Some(raw)) {
            acc.pr(Some(Some(n)));
        } else {
            return Err(CoreError::new(
                ErrorCode::CtxNull,
                format!("BATON_CTX_PR must be a positive integer or empty (got \"{raw}\")."),
            )
            .with("variable", "BATON_CTX_PR"));
        }
    }

    // 3. GitHub Actions: always consulted.
    github(&vars, input.event.as_ref(), &mut acc);
    // 4-6. Other CI systems, each only when its marker variable is set.
    if vars.is_set("GITLAB_CI") {
        acc.branch(vars.first(&["CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_BRANCH", "CI_COMMIT_REF_NAME"]));
        acc.sha(vars.first(&["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", "CI_COMMIT_SHA"]));
        acc.pr(Some(positive_int(vars.get("CI_MERGE_REQUEST_IID"))));
        acc.default_branch(vars.get("CI_DEFAULT_BRANCH"));
    }
    if vars.is_set("CIRCLECI") {
        acc.branch(vars.get("CIRCLE_BRANCH"));
        acc.sha(vars.get("CIRCLE_SHA1"));
        let from_url = vars.get("CIRCLE_PULL_REQUEST").and_then(trailing_number);
        acc.pr(Some(from_url.or_else(|| positive_int(vars.get("CIRCLE_PR_NUMBER")))));
    }
    if vars.is_set("BITBUCKET_BUILD_NUMBER") {
        acc.branch(vars.get("BITBUCKET_BRANCH"));
        acc.sha(vars.get("BITBUCKET_COMMIT"));
        acc.pr(Some(positive_int(vars.get("BITBUCKET_PR_ID"))));
    }

    // A bad environment is refused before anyone runs git for the rest.
    if let Some(env) = &acc.env {
        validate_name("env", env)?;
        if env == crate::ownership::PARENT_ENV || env == crate::claims::CLAIMS_ENV {
            return Err(CoreError::usage(format!(
                "env `{env}` is reserved for baton's own cells (the locks of parent objects, `baton lock-object`, and ownership claims): choose another environment name. Nothing was read or written."
            ))
            .with("env", env.as_str()));
        }
    }

    // A named scope (`--scope`, then `BATON_SCOPE`, which `baton run` exports) needs no branch.
    let named_scope = o.scope.as_deref().map(str::trim).filter(|s| !s.is_empty()).or_else(|| vars.get("BATON_SCOPE"));

    // 7. Local git, the last resort.
    if named_scope.is_none() && (acc.branch.is_none() || (acc.sha.is_none() && !input.scope_only)) {
        let Some(git) = &input.git else {
            return Ok(Detection::NeedsGit { ask_pr: acc.branch.is_none() && acc.pr.is_none() });
        };
        let branch_from_git = acc.branch.is_none();
        acc.branch(git.branch.as_deref());
        acc.sha(git.sha.as_deref());
        if branch_from_git && acc.branch.is_some() {
            acc.pr(Some(git.pr.and_then(|n| u64::try_from(n).ok()).filter(|n| *n > 0)));
        }
        if acc.branch.is_none() && input.env_only {
            // A command on a whole environment needs no scope.
            let env = acc.env.unwrap_or_else(|| DEFAULT_ENV.to_owned());
            validate_name("env", &env)?;
            let context = EnvironmentContext {
                env,
                branch: None,
                sha: acc.sha,
                pr: acc.pr.flatten(),
                default_branch: acc.default_branch,
                scope: None,
            };
            return Ok(Detection::Environment { context });
        }
        if acc.branch.is_none() {
            let why = git.error.as_deref().map(|e| format!(" (git: {})", e.trim())).unwrap_or_default();
            return Err(CoreError::new(
                ErrorCode::CtxNull,
                format!(
                    "Not in a git repository and no branch given{why}. Pass --branch (and --sha), or set BATON_CTX_BRANCH / BATON_CTX_SHA."
                ),
            ));
        }
    }

    let env = acc.env.unwrap_or_else(|| DEFAULT_ENV.to_owned());
    validate_name("env", &env)?;
    let pr = acc.pr.flatten();
    let scope = match named_scope {
        Some(s) => {
            validate_name("scope", s)?;
            s.to_owned()
        }
        None => scope_for(acc.branch.as_deref().unwrap_or_default(), pr, acc.default_branch.as_deref()),
    };
    Ok(Detection::Detected {
        context: Context { env, branch: acc.branch, sha: acc.sha, pr, default_branch: acc.default_branch, scope },
    })
}

fn github(vars: &Vars<'_>, event: Option<&Value>, acc: &mut Acc) {
    acc.branch(vars.first(&["GITHUB_HEAD_REF", "GITHUB_REF_NAME"]));
    acc.sha(vars.get("GITHUB_SHA"));
    let default_branch = event.and_then(|e| e.pointer("/repository/default_branch")).and_then(Value::as_str);
    acc.default_branch(default_branch);
    if acc.pr.is_some() {
        return;
    }
    if let Some(n) = vars.get("GITHUB_REF").and_then(pull_ref_number).filter(|n| *n > 0) {
        acc.pr(Some(Some(n)));
        return;
    }
    let from_event = event
        .and_then(|e| {
            e.pointer("/pull_request/number")
                .and_then(Value::as_u64)
                .or_else(|| e.get("number").and_then(Value::as_u64))
        })
        .filter(|n| *n > 0);
    if let Some(n) = from_event {
        acc.pr(Some(Some(n)));
    } else if vars.is_set("GITHUB_ACTIONS") {
        acc.pr(Some(None));
    }
}

/// `refs/pull/<n>/...` -> n.
fn pull_ref_number(r: &str) -> Option<u64> {
    let rest = r.strip_prefix("refs/pull/")?;
    let (digits, _) = rest.split_once('/')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The trailing number of a URL such as `https://github.com/o/r/pull/12` or `.../12/` (the original's
/// `/(\d+)/?$`: digits right after a `/`), when positive.
fn trailing_number(url: &str) -> Option<u64> {
    let s = url.strip_suffix('/').unwrap_or(url);
    let (_, digits) = s.rsplit_once('/')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

fn parse_pr_override(v: &Value) -> Result<Option<u64>, CoreError> {
    let bad =
        |got: &str| CoreError::usage(format!("--pr must be a positive integer (got {got})")).with("pr", v.clone());
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => positive_int(Some(s)).map(Some).ok_or_else(|| bad(&format!("\"{s}\""))),
        Value::Number(n) => n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| bad(&n.to_string())),
        other => Err(bad(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(input: Value) -> Result<Detection, CoreError> {
        detect(&serde_json::from_value(input).expect("valid input"))
    }

    fn ctx(input: Value) -> Context {
        match run(input).expect("detects") {
            Detection::Detected { context } => context,
            other => panic!("expected a context, got {other:?}"),
        }
    }

    #[test]
    fn overrides_beat_variables() {
        let c = ctx(
            json!({"overrides": {"branch": "a", "pr": "7"}, "vars": {"BATON_CTX_BRANCH": "b", "GITHUB_HEAD_REF": "c"}, "git": {}}),
        );
        assert_eq!((c.branch.as_deref(), c.pr, c.scope.as_str()), (Some("a"), Some(7), "pr-7"));
    }

    #[test]
    fn pr_null_is_final() {
        let c = ctx(
            json!({"overrides": {"branch": "x", "pr": null}, "vars": {"GITHUB_REF": "refs/pull/9/merge"}, "git": {}}),
        );
        assert_eq!(c.pr, None);
        let c = ctx(
            json!({"vars": {"BATON_CTX_BRANCH": "x", "BATON_CTX_PR": "  ", "GITHUB_REF": "refs/pull/9/merge"}, "git": {}}),
        );
        assert_eq!(c.pr, None);
    }

    #[test]
    fn asks_for_git_only_when_needed() {
        assert_eq!(run(json!({})).unwrap(), Detection::NeedsGit { ask_pr: true });
        assert_eq!(run(json!({"overrides": {"branch": "x"}})).unwrap(), Detection::NeedsGit { ask_pr: false });
        let c = ctx(json!({"overrides": {"branch": "x", "sha": "abc"}}));
        assert_eq!(c.scope, "branch-x");
        let c = ctx(json!({"overrides": {"branch": "x"}, "scopeOnly": true}));
        assert_eq!((c.scope.as_str(), c.sha), ("branch-x", None), "the scope alone needs no commit");
        assert_eq!(run(json!({"scopeOnly": true})).unwrap(), Detection::NeedsGit { ask_pr: true });
    }

    #[test]
    fn a_named_scope_needs_no_branch() {
        let c = ctx(json!({"overrides": {"scope": "pr-9"}, "vars": {"BATON_SCOPE": "pr-1", "BATON_ENV": "staging"}}));
        assert_eq!((c.scope.as_str(), c.branch, c.env.as_str()), ("pr-9", None, "staging"));
        let c = ctx(json!({"vars": {"BATON_SCOPE": "pr-1"}}));
        assert_eq!(c.scope, "pr-1");
        assert_eq!(run(json!({"overrides": {"scope": "a/b"}})).unwrap_err().code, ErrorCode::Usage);
    }

    #[test]
    fn a_command_on_a_whole_environment_needs_no_branch() {
        let input =
            json!({"envOnly": true, "vars": {"BATON_ENV": "staging"}, "git": {"error": "not a git repository"}});
        let Detection::Environment { context } = run(input).unwrap() else { panic!("environment only") };
        assert_eq!((context.env.as_str(), &context.scope), ("staging", &None));
        // With a branch it is a full context, as for any command.
        let c = ctx(json!({"envOnly": true, "git": {"branch": "x", "sha": "abc"}}));
        assert_eq!(c.scope, "branch-x");
    }

    #[test]
    fn missing_branch_is_ctx_null() {
        let e = run(json!({"git": {"error": "not a git repository"}})).unwrap_err();
        assert_eq!(e.code, ErrorCode::CtxNull);
        assert!(e.message.contains("--branch"), "{}", e.message);
    }

    #[test]
    fn bad_pr_values_are_refused() {
        assert_eq!(run(json!({"overrides": {"pr": "x"}})).unwrap_err().code, ErrorCode::Usage);
        assert_eq!(run(json!({"overrides": {"pr": 0}})).unwrap_err().code, ErrorCode::Usage);
        assert_eq!(run(json!({"vars": {"BATON_CTX_PR": "-1"}})).unwrap_err().code, ErrorCode::CtxNull);
    }

    #[test]
    fn circle_pr_from_url() {
        assert_eq!(trailing_number("https://github.com/o/r/pull/12"), Some(12));
        assert_eq!(trailing_number("https://github.com/o/r/pull/12/"), Some(12));
        assert_eq!(trailing_number("https://x/y"), None);
        assert_eq!(trailing_number("https://x/o/r/pull21"), None);
        assert_eq!(trailing_number("https://x/o/r/pull/0"), None);
    }
}
