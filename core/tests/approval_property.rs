//! Approval cannot be bypassed: a property test over random combinations of everything that decides the
//! environment (`--env`, `BATON_CTX_ENV`, `BATON_ENV`, CI variables, the scope) and everything that may
//! carry an approver (`--approved-by`, `BATON_APPROVED_BY`, resolved by the host with flags beating
//! variables), run through the core's own operations as every host runs them: `detect-context`, then
//! `approval` on the environment it detected, then `cell-path` and `lock-acquire` only if approved.
//!
//! Properties, for every combination:
//! - P1 a context whose environment is production in any letter case (the same directory on a
//!   case-insensitive file system) gets `ENV_NOT_APPROVED` unless a non-blank approver was given, and the
//!   approver it records is that name, trimmed;
//! - P2 no other environment needs or records an approver;
//! - P3 the environment the approval judged is the one the lock is taken in (the cell's path starts with
//!   it), so nothing reaches a production cell without the approval having seen production;
//! - P4 every refusal is `ENV_NOT_APPROVED` with exit code 2 or `USAGE` (an invalid name), never a lock.
//!
//! `BATON_APPROVAL_CASES` sets the number of cases (default 20000); a failure prints the case's seed.

use baton_core::api::invoke;
use serde_json::{Map, Value, json};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn maybe<'a>(&mut self, items: &[&'a str]) -> Option<&'a str> {
        if self.next().is_multiple_of(3) { None } else { Some(self.pick(items)) }
    }
}

const ENVS: [&str; 14] = [
    "production",
    "Production",
    "PRODUCTION",
    "pRoDuCtIoN",
    "production-eu",
    "prod",
    "preview",
    "staging",
    "",
    " production",
    "production ",
    "produc tion",
    "production/",
    "..",
];
const APPROVERS: [&str; 8] = ["", " ", "\t\n", "alice", "  bob  ", "release-bot", "\u{a0}", "x"];

fn protected(env: &str) -> bool {
    env.eq_ignore_ascii_case("production")
}

/// The approver the CLI hands the core: `--approved-by` if given (even blank), else `BATON_APPROVED_BY`.
fn resolved_approver<'a>(flag: Option<&'a str>, var: Option<&'a str>) -> Option<&'a str> {
    flag.or(var)
}

fn call(op: &str, request: &Value) -> Result<Value, baton_core::error::CoreError> {
    invoke(op, &request.to_string()).map(|s| serde_json::from_str(&s).expect("answers are JSON"))
}

/// Runs one case; answers which branch it took (for the coverage check).
fn one_case(seed: u64) -> &'static str {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let (flag_env, ctx_env, baton_env) = (rng.maybe(&ENVS), rng.maybe(&ENVS), rng.maybe(&ENVS));
    let (flag_by, var_by) = (rng.maybe(&APPROVERS), rng.maybe(&APPROVERS));
    let mut overrides = Map::new();
    if let Some(e) = flag_env {
        overrides.insert("env".into(), e.into());
    }
    overrides.insert("scope".into(), rng.pick(&["pr-1", "main", "branch-x"]).into());
    let mut vars = Map::new();
    for (k, v) in [("BATON_CTX_ENV", ctx_env), ("BATON_ENV", baton_env), ("BATON_APPROVED_BY", var_by)] {
        if let Some(v) = v {
            vars.insert(k.into(), v.into());
        }
    }
    if rng.next().is_multiple_of(2) {
        for (k, v) in [("GITHUB_ACTIONS", "true"), ("GITHUB_REF_NAME", "main"), ("GITHUB_SHA", "abc")] {
            vars.insert(k.into(), v.into());
        }
    }
    let case = format!(
        "seed {seed}: --env {flag_env:?} BATON_CTX_ENV {ctx_env:?} BATON_ENV {baton_env:?} --approved-by {flag_by:?} BATON_APPROVED_BY {var_by:?}"
    );
    let detected = match call("detect-context", &json!({ "overrides": overrides, "vars": vars })) {
        Ok(d) => d,
        Err(e) => {
            assert_eq!(e.code.as_str(), "USAGE", "P4 {case}: {e}");
            return "invalid";
        }
    };
    let Some(env) = detected["context"]["env"].as_str() else {
        assert_eq!(detected["status"], "needs-git", "{case}: {detected}");
        return "needs-git";
    };
    let approver = resolved_approver(flag_by, var_by);
    let approved = approver.is_some_and(|a| !a.trim().is_empty());
    match call("approval", &json!({ "env": env, "approvedBy": approver })) {
        Err(e) => {
            assert!(protected(env) && !approved, "P1/P2 {case}: refused {env:?}: {e}");
            assert_eq!((e.code.as_str(), e.code.exit_code()), ("ENV_NOT_APPROVED", 2), "P4 {case}");
            assert_eq!(e.details["environment"], env, "{case}");
            "refused"
        }
        Ok(a) => {
            assert!(!protected(env) || approved, "P1 {case}: {env:?} got through without an approver");
            if protected(env) {
                assert_eq!(a["approvedBy"].as_str(), approver.map(str::trim), "P1 {case}");
            } else {
                assert_eq!(a["approvedBy"], Value::Null, "P2 {case}");
            }
            // P3: the lock is taken in the cell of the environment the approval judged.
            let scope = detected["context"]["scope"].as_str().unwrap();
            let path = call("cell-path", &json!({ "env": env, "scope": scope })).unwrap();
            let env_dir = path["dir"].as_str().unwrap().split('/').next().unwrap().to_owned();
            assert_eq!(protected(&env_dir), protected(env), "P3 {case}: {path}");
            let cell = json!({ "env": env, "scope": scope, "files": {} });
            let lock = call("lock-acquire", &json!({ "cell": cell, "holder": "h", "ttlMs": 1000, "nowMs": 0 }));
            assert!(lock.is_ok(), "{case}: {lock:?}");
            if protected(env) { "approved" } else { "free" }
        }
    }
}

#[test]
fn approval_cannot_be_bypassed_by_any_combination_of_flags_and_variables() {
    let cases: u64 = std::env::var("BATON_APPROVAL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let mut seen = std::collections::BTreeMap::new();
    for seed in 0..cases {
        match std::panic::catch_unwind(|| one_case(seed)) {
            Ok(branch) => *seen.entry(branch).or_insert(0u64) += 1,
            Err(e) => {
                eprintln!("approval property failed for seed {seed} (BATON_APPROVAL_CASES={cases})");
                std::panic::resume_unwind(e);
            }
        }
    }
    // Every branch is exercised, so the properties were checked where they matter.
    if cases >= 2_000 {
        for branch in ["invalid", "refused", "approved", "free"] {
            assert!(seen.get(branch).copied().unwrap_or(0) >= cases / 100, "{branch} reached too rarely: {seen:?}");
        }
    }
}

#[test]
fn every_spelling_of_production_needs_a_named_approver() {
    for env in ["production", "Production", "PRODUCTION", "proDUCTION"] {
        for blank in [None, Some(""), Some("   "), Some("\t")] {
            let e = call("approval", &json!({ "env": env, "approvedBy": blank })).unwrap_err();
            assert_eq!(e.code.as_str(), "ENV_NOT_APPROVED", "{env} {blank:?}");
            assert!(e.message.contains("Nothing was locked or written"), "{}", e.message);
        }
        let a = call("approval", &json!({ "env": env, "approvedBy": " alice " })).unwrap();
        assert_eq!(a["approvedBy"], "alice");
    }
}
