//! The command line of `baton run`, `baton destroy` and `baton gc` as data, for hosts that have no
//! argument parser of their own (the npm package's `baton-lease` command): the same flags, the same
//! durations, the same precedence (flags beat variables, variables beat defaults), so
//! `npx baton-lease run -- CMD` means what `baton run -- CMD` means.
//!
//! Call [`parse`] with the words after the command and the variables the flags fall back to; it answers
//! what the host needs to gather the context, open the store and configure the run machine, or `USAGE`.

pub mod ledger;
mod words;

pub use words::ContextFlags;
use words::{CONTEXT, split_flag};

use crate::error::CoreError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `command-line`: `{command, argv, vars}` (see [`answer`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandLineRequest {
    /// `run`, `destroy`, `gc`, or `ledger intend|record|forget`.
    pub command: String,
    /// The words after the command word.
    pub argv: Vec<String>,
    /// `BATON_STORE`, `BATON_APPROVED_BY`, `BATON_CANCEL_GRACE` (and for the ledger `BATON_HOLDER`,
    /// `BATON_EPOCH`) as the process has them; others are ignored.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

/// What the command line says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandLine {
    /// `--help` was given: print [`CommandLine::usage`] and exit 0.
    pub help: bool,
    /// The usage text of the command.
    pub usage: String,
    /// The context flags given (`env`, `scope`, `branch`, `sha`, `pr`, `defaultBranch`): detect-context's
    /// `overrides`.
    pub overrides: ContextFlags,
    /// `--store`, else `BATON_STORE`.
    pub store: Option<String>,
    /// `--json`.
    pub json: bool,
    /// The run machine's timing (`wait`, and `ttlMs`, `waitTimeoutMs`, `pollMs`, `cancelGraceMs` when given).
    pub config: RunTiming,
    /// `--approved-by`, else `BATON_APPROVED_BY`.
    pub approved_by: Option<String>,
    /// The command after `--`.
    pub cmd: Vec<String>,
    /// The command as `baton run` shows it to people ([`shown`]).
    pub shown: String,
    /// `gc`: `--open-prs FILE|-`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_prs: Option<String>,
    /// `gc`: `--remote NAME|URL` (default `origin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// `gc`: `--destroy`.
    pub destroy: bool,
}

/// The run machine's timing a command line gives: the part of its configuration the flags set. JSON: `wait`
/// and the durations given (ms).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTiming {
    /// `--ttl`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `--wait-timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_timeout_ms: Option<u64>,
    /// `--poll-interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_ms: Option<u64>,
    /// `--wait`.
    pub wait: bool,
    /// `--cancel-grace`, else `BATON_CANCEL_GRACE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_grace_ms: Option<u64>,
}

impl RunTiming {
    fn set(&mut self, key: &str, ms: u64) {
        let slot = match key {
            "ttlMs" => &mut self.ttl_ms,
            "waitTimeoutMs" => &mut self.wait_timeout_ms,
            "pollMs" => &mut self.poll_ms,
            _ => &mut self.cancel_grace_ms,
        };
        *slot = Some(ms);
    }
}

/// The answer of `command-line`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CommandLineAnswer {
    /// `run`, `destroy`, `gc`.
    Run(CommandLine),
    /// `ledger intend|record|forget`.
    Ledger(ledger::LedgerLine),
}

const DURATIONS: [(&str, &str); 4] = [
    ("--ttl", "ttlMs"),
    ("--wait-timeout", "waitTimeoutMs"),
    ("--poll-interval", "pollMs"),
    ("--cancel-grace", "cancelGraceMs"),
];

const COMMON: &str = "  --env ENV              environment [default: BATON_CTX_ENV, then BATON_ENV, then preview]
  --scope SCOPE          scope instead of the one derived from branch and pull request
  --branch, --sha, --pr N, --default-branch BRANCH   the context [default: CI variables, then git]
  --store SPEC           dir:<path> or git:<remote> [default: BATON_STORE, then .baton/ at the repository root]
  --json                 print one JSON envelope on stdout
  --ttl DURATION         how long the lock lives unless renewed (500ms, 90s, 15m, 2h) [default: 15m]
  --wait                 wait while another run holds the lock instead of exiting 3 with LOCK_HELD
  --wait-timeout DURATION, --poll-interval DURATION   [default: 10m, 2s]
  --approved-by NAME     who approved; required in production [default: BATON_APPROVED_BY]
  --cancel-grace DURATION   on SIGINT/SIGTERM, how long CMD gets before its group is killed [default: 5s]
";

/// The usage text of `command`.
pub fn usage(command: &str) -> String {
    let (line, what, extra) = match command {
        "destroy" => {
            ("destroy [FLAGS] -- CMD", "Destroy what the scope owns through CMD (the entries on its stdin).", "")
        }
        "gc" => (
            "gc [FLAGS] [--destroy -- CMD]",
            "List the environment's scopes whose pull request is not open or whose branch is gone.",
            "  --open-prs FILE|-      the open pull requests (JSON numbers, or `gh pr list --state open --json number`)\n                         [default: ask `gh`]\n  --remote NAME|URL      where branches are listed (`git ls-remote --heads`) [default: origin]\n  --destroy              destroy each abandoned scope through CMD, under its lease; live leases are skipped\n",
        ),
        _ => ("run [FLAGS] -- CMD", "Run CMD under the scope's lease (exits with CMD's code, or 3 for LOCK_HELD).", ""),
    };
    format!("Usage: baton-lease {line}\n\n{what}\n\n{COMMON}{extra}")
}

/// Parses a duration into milliseconds: `500ms`, `90s`, `15m`, `2h` (a unit is required, so `15` is never
/// mistaken for seconds or minutes). The messages are the CLI's.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a duration: write e.g. 500ms, 90s, 15m or 2h"))?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "" => return Err(format!("`{s}` needs a unit: write e.g. {s}s or {s}m")),
        _ => return Err(format!("`{s}` has an unknown unit `{unit}`: use ms, s, m or h")),
    };
    n.checked_mul(factor).ok_or_else(|| format!("`{s}` is too long"))
}

/// The answer of `command-line`: a run's, destroy's or gc's [`CommandLine`], or a ledger command's
/// [`ledger::LedgerLine`] (commands `ledger intend`, `ledger record`, `ledger forget`).
pub fn answer(r: &CommandLineRequest) -> Result<CommandLineAnswer, CoreError> {
    match r.command.strip_prefix("ledger ") {
        Some(verb @ ("intend" | "record" | "forget")) => {
            Ok(CommandLineAnswer::Ledger(ledger::parse(verb, &r.argv, &r.vars)?))
        }
        Some(other) => Err(CoreError::usage(format!("unknown ledger command `{other}`: use intend, record or forget"))),
        None => Ok(CommandLineAnswer::Run(parse(r)?)),
    }
}

/// Parses the command line (see the module doc). `USAGE` says which word was wrong.
pub fn parse(r: &CommandLineRequest) -> Result<CommandLine, CoreError> {
    let gc = match r.command.as_str() {
        "run" | "destroy" => false,
        "gc" => true,
        other => {
            return Err(CoreError::usage(format!(
                "unknown command `{other}`: use run, destroy, gc or ledger intend|record|forget"
            )));
        }
    };
    let fail = |m: String| CoreError::usage(format!("{m} (`baton-lease {} --help` lists the flags)", r.command));
    let mut out = CommandLine { usage: usage(&r.command), ..CommandLine::default() };
    let mut words = r.argv.iter();
    let mut wait = false;
    while let Some(word) = words.next() {
        if word == "--" {
            out.cmd = words.by_ref().cloned().collect();
            break;
        }
        let (flag, inline) = split_flag(word);
        let mut value = |name: &str| -> Result<String, CoreError> {
            match inline.clone().or_else(|| words.next().cloned()) {
                Some(v) => Ok(v),
                None => Err(fail(format!("a value is required for `{name}` but none was supplied"))),
            }
        };
        let no_value = |name: &str| match &inline {
            Some(_) => Err(fail(format!("`{name}` takes no value"))),
            None => Ok(()),
        };
        match flag {
            "-h" | "--help" => out.help = true,
            "--json" => {
                no_value(flag)?;
                out.json = true;
            }
            "--wait" => {
                no_value(flag)?;
                wait = true;
            }
            "--destroy" if gc => {
                no_value(flag)?;
                out.destroy = true;
            }
            "--store" => out.store = Some(value(flag)?),
            "--approved-by" => out.approved_by = Some(value(flag)?),
            "--open-prs" if gc => out.open_prs = Some(value(flag)?),
            "--remote" if gc => out.remote = Some(value(flag)?),
            _ => {
                if let Some((_, key)) = CONTEXT.iter().find(|(f, _)| *f == flag) {
                    out.overrides.set(key, value(flag)?);
                } else if let Some((_, key)) = DURATIONS.iter().find(|(f, _)| *f == flag) {
                    let v = value(flag)?;
                    let ms = parse_duration(&v).map_err(|e| fail(format!("invalid value '{v}' for '{flag}': {e}")))?;
                    out.config.set(key, ms);
                } else {
                    return Err(fail(format!("unexpected argument `{word}`")));
                }
            }
        }
    }
    out.config.wait = wait;
    let var = |k: &str| r.vars.get(k).filter(|v| !v.trim().is_empty()).cloned();
    out.store = out.store.or_else(|| var("BATON_STORE"));
    out.approved_by = out.approved_by.or_else(|| var("BATON_APPROVED_BY"));
    if out.config.cancel_grace_ms.is_none()
        && let Some(v) = var("BATON_CANCEL_GRACE")
    {
        let ms = parse_duration(&v).map_err(|e| fail(format!("invalid value '{v}' for BATON_CANCEL_GRACE: {e}")))?;
        out.config.cancel_grace_ms = Some(ms);
    }
    out.shown = shown(&out.cmd);
    let needs_cmd = !gc || out.destroy;
    if !out.help && needs_cmd && out.cmd.is_empty() {
        let what = if gc { "--destroy needs the destroy command" } else { "the command to run is required" };
        return Err(fail(format!("{what}: put it after `--`, e.g. -- ./deploy.sh")));
    }
    if !out.help && !needs_cmd && !out.cmd.is_empty() {
        return Err(fail("a command after `--` is only run with --destroy".into()));
    }
    Ok(out)
}

/// The line for people when the command starts: whitespace runs (newlines of a script included) collapsed,
/// at most 80 characters, as `baton run` prints it.
pub fn shown(cmd: &[String]) -> String {
    let joined = cmd.join(" ");
    let flat = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 { format!("{} ...", flat.chars().take(80).collect::<String>()) } else { flat }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_words(command: &str, words: &[&str], vars: &[(&str, &str)]) -> Result<CommandLine, CoreError> {
        parse(&CommandLineRequest {
            command: command.into(),
            argv: words.iter().map(|w| (*w).to_owned()).collect(),
            vars: vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        })
    }

    #[test]
    fn the_common_path() {
        let c = parse_words(
            "run",
            &["--wait", "--ttl=90s", "--wait-timeout", "20m", "--scope", "pr-4", "--json", "--", "./d.sh", "--x"],
            &[("BATON_APPROVED_BY", "ann"), ("BATON_CANCEL_GRACE", "2s")],
        )
        .unwrap();
        assert_eq!(c.cmd, ["./d.sh", "--x"]);
        assert!(c.json);
        assert_eq!(
            serde_json::to_value(&c.config).unwrap(),
            json!({"wait": true, "ttlMs": 90000, "waitTimeoutMs": 1200000, "cancelGraceMs": 2000})
        );
        assert_eq!(serde_json::to_value(&c.overrides).unwrap(), json!({"scope": "pr-4"}));
        assert_eq!(c.approved_by.as_deref(), Some("ann"));
    }

    #[test]
    fn flags_beat_variables() {
        let c = parse_words(
            "run",
            &["--store", "dir:/a", "--cancel-grace", "1s", "--", "x"],
            &[("BATON_STORE", "dir:/b"), ("BATON_CANCEL_GRACE", "9s")],
        )
        .unwrap();
        assert_eq!(c.store.as_deref(), Some("dir:/a"));
        assert_eq!(c.config.cancel_grace_ms, Some(1000));
    }

    #[test]
    fn refusals_are_usage() {
        for words in
            [&["--ttl", "15", "--", "x"][..], &["--nope", "--", "x"], &["--ttl"], &[], &["--json=1", "--", "x"]]
        {
            let e = parse_words("run", words, &[]).unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::Usage, "{words:?}");
        }
        assert!(parse_words("run", &["--ttl", "15", "--", "x"], &[]).unwrap_err().message.contains("needs a unit"));
        assert!(parse_words("gc", &["--", "x"], &[]).is_err());
        assert!(parse_words("gc", &["--destroy"], &[]).is_err());
        assert!(parse_words("run", &["--open-prs", "f", "--", "x"], &[]).is_err());
    }

    #[test]
    fn gc_flags() {
        let c = parse_words("gc", &["--open-prs", "-", "--remote", "up", "--destroy", "--", "./rm.sh"], &[]).unwrap();
        assert_eq!((c.open_prs.as_deref(), c.remote.as_deref(), c.destroy), (Some("-"), Some("up"), true));
        assert!(parse_words("gc", &["--help"], &[]).unwrap().help);
    }

    #[test]
    fn durations_and_shown() {
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert!(parse_duration("5d").is_err());
        assert_eq!(shown(&["bash".into(), "-c".into(), "a\n  b".into()]), "bash -c a b");
    }
}
