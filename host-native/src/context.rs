//! Gathers what context detection needs (flags, the process environment, the GitHub event payload and,
//! only when the core asks, facts from local git) and lets the core decide.

use crate::engine::CoreComponent;
use crate::engine::wit::stores as ws;
use crate::error::HostError;
use clap::Args;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The flags every command that works on a scope shares. Flags beat variables, variables beat defaults.
#[derive(Args, Clone, Debug, Default)]
pub struct ContextArgs {
    /// Environment [default: BATON_CTX_ENV, then BATON_ENV, then preview]
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// Scope to use instead of deriving it from branch and pull request [default: BATON_SCOPE]
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    /// Branch [default: BATON_CTX_BRANCH, CI variables, then `git rev-parse`]
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// Commit [default: BATON_CTX_SHA, CI variables, then `git rev-parse`]
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
    /// Pull request number; an empty value means "not a pull request" [default: BATON_CTX_PR, CI variables]
    #[arg(long, value_name = "N")]
    pub pr: Option<String>,
    /// The repository's default branch, whose runs get the scope `main` [default: from the CI event]
    #[arg(long, value_name = "BRANCH")]
    pub default_branch: Option<String>,
}

/// The process environment as a sorted map (values that are not UTF-8 are converted lossily).
pub fn process_vars() -> BTreeMap<String, String> {
    std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())).collect()
}

/// Detects the context of this run through the core; see `baton_core::context` for the rules.
pub fn detect(core: &mut CoreComponent, args: &ContextArgs) -> Result<Value, HostError> {
    detect_with(core, args, false, false)
}

/// [`detect`] for `baton scope`, which needs the scope and nothing else: git is run only when no flag,
/// variable or CI source gives the branch (the commit is not looked up).
pub fn detect_scope(core: &mut CoreComponent, args: &ContextArgs) -> Result<Value, HostError> {
    detect_with(core, args, false, true)
}

/// [`detect`] for a command on a whole environment (`receipt list`): without a branch the context has
/// only its `env` (`scope` null) instead of failing with `CTX_NULL`.
pub fn detect_env(core: &mut CoreComponent, args: &ContextArgs) -> Result<Value, HostError> {
    detect_with(core, args, true, false)
}

fn detect_with(
    core: &mut CoreComponent,
    args: &ContextArgs,
    env_only: bool,
    scope_only: bool,
) -> Result<Value, HostError> {
    let vars = process_vars();
    // The event as its text, when it is JSON (an unreadable or broken file is as good as none).
    let event = vars
        .get("GITHUB_EVENT_PATH")
        .filter(|p| !p.trim().is_empty())
        .and_then(|p| std::fs::read_to_string(p.trim()).ok())
        .filter(|t| serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok());
    let overrides = ws::ContextOverrides {
        env: args.env.clone(),
        branch: args.branch.clone(),
        sha: args.sha.clone(),
        pr: args.pr.clone().map(ws::PrGiven::Text),
        default_branch: args.default_branch.clone(),
        scope: args.scope.clone(),
    };
    let mut request = ws::ContextRequest {
        overrides,
        vars: vars.into_iter().map(|(name, value)| ws::EnvVar { name, value }).collect(),
        event,
        git: None,
        env_only,
        scope_only,
    };
    let mut answer = core.detect_context(&request)?;
    if let ws::Detection::NeedsGit(ask_pr) = answer {
        request.git = Some(git_facts(ask_pr));
        answer = core.detect_context(&request)?;
    }
    match answer {
        ws::Detection::Detected(c) => Ok(json!({
            "env": c.env, "branch": c.branch, "sha": c.sha, "pr": c.pr, "defaultBranch": c.default_branch,
            "scope": c.scope,
        })),
        ws::Detection::NeedsGit(_) => Err(HostError::internal("detect-context asked for git facts twice")),
    }
}

/// `git rev-parse` facts, and `gh pr view` when `ask_pr`.
fn git_facts(ask_pr: bool) -> ws::GitFacts {
    let mut facts = ws::GitFacts { branch: None, sha: None, pr: None, error: None };
    match (git(&["rev-parse", "--abbrev-ref", "HEAD"]), git(&["rev-parse", "HEAD"])) {
        (Ok(branch), sha) => {
            facts.branch = Some(branch);
            facts.sha = sha.ok();
        }
        (Err(e), _) => facts.error = Some(e),
    }
    if ask_pr && facts.branch.is_some() {
        facts.pr = gh_pr_number().and_then(|n| i64::try_from(n).ok());
    }
    facts
}

/// Runs `git args` and returns its trimmed stdout, or why it failed.
pub fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// The pull request of the current branch according to `gh`, waiting at most 5 s.
fn gh_pr_number() -> Option<u64> {
    let mut child = Command::new("gh")
        .args(["pr", "view", "--json", "number", "-q", ".number"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env("GH_PROMPT_DISABLED", "1")
        .spawn()
        .ok()?;
    // The answer is read as it comes (no polling: `gh` answers in well under a second when it can).
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = tx.send(std::io::Read::read_to_string(&mut stdout, &mut out).map(|_| out));
    });
    // One bound for the whole call: the answer, then the exit (a `gh` may close its output and linger).
    let deadline = Instant::now() + Duration::from_secs(5);
    let out = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok().and_then(Result::ok);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    out.filter(|_| status.is_some_and(|s| s.success()))?.trim().parse::<u64>().ok().filter(|n| *n > 0)
}
