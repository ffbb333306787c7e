//! The command line of `baton-lease ledger intend|record|forget` (the CLI's `baton ledger ...`): a resource
//! and the fence of the run changing the ledger, read as the CLI reads them, so a command under
//! `baton-lease run` (or a job-long lease of the GitHub Action) records what it creates without the CLI.

use super::words::{CONTEXT, ContextFlags, split_flag};
use crate::error::CoreError;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// What a ledger command line says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerLine {
    /// `--help` was given: print [`LedgerLine::usage`] and exit 0.
    pub help: bool,
    /// The usage text.
    pub usage: String,
    /// The core operation: `ledger-intend`, `ledger-record` or `ledger-forget`.
    pub op: LedgerOp,
    /// The context flags given (detect-context's `overrides`).
    pub overrides: ContextFlags,
    /// `--store`, else `BATON_STORE`.
    pub store: Option<String>,
    /// `--json`.
    pub json: bool,
    /// The resource as the ledger operations take it (none with `--help`).
    pub resource: Option<LedgerResource>,
    /// `--id` (the provider's id, for record).
    pub id: Option<String>,
    /// `--holder`, else `BATON_HOLDER`.
    pub holder: String,
    /// `--epoch`, else `BATON_EPOCH`.
    pub epoch: u64,
}

/// The ledger operation a ledger command line asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum LedgerOp {
    /// `ledger intend`.
    #[default]
    #[serde(rename = "ledger-intend")]
    Intend,
    /// `ledger record`.
    #[serde(rename = "ledger-record")]
    Record,
    /// `ledger forget`.
    #[serde(rename = "ledger-forget")]
    Forget,
}

impl LedgerOp {
    /// The operation of `verb` (`intend`, `record`, `forget`).
    pub fn from_verb(verb: &str) -> Option<Self> {
        match verb {
            "intend" => Some(Self::Intend),
            "record" => Some(Self::Record),
            "forget" => Some(Self::Forget),
            _ => None,
        }
    }

    /// The core operation's name (`ledger-intend`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Intend => "ledger-intend",
            Self::Record => "ledger-record",
            Self::Forget => "ledger-forget",
        }
    }
}

/// A resource as a ledger command line names it: `{adapter, key, provider, label, parent}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LedgerResource {
    /// `--adapter`.
    pub adapter: String,
    /// `--key`.
    pub key: String,
    /// `--provider`: a JSON value as given (the ledger operations refuse one that is not an object).
    pub provider: Value,
    /// `--label`.
    pub label: Option<String>,
    /// `--parent`.
    pub parent: Option<String>,
}

/// The usage text of `ledger VERB`.
pub fn usage(verb: &str) -> String {
    format!(
        "Usage: baton-lease ledger {verb} --adapter ADAPTER --key KEY [--provider JSON] [--id ID] [--label TEXT] [--parent IDENTITY]\n\n\
         A fenced change of the scope's ledger, as `baton ledger {verb}`: inside `baton-lease run` (or a job-long\n\
         lease of the GitHub Action) holder, epoch, scope and store come from BATON_HOLDER, BATON_EPOCH,\n\
         BATON_SCOPE and BATON_STORE; else pass --holder and --epoch. Also --env, --scope, --store, --json.\n"
    )
}

/// Parses `ledger VERB` words (`verb` is `intend`, `record` or `forget`); `USAGE` says which word was wrong.
pub fn parse(verb: &str, argv: &[String], vars: &BTreeMap<String, String>) -> Result<LedgerLine, CoreError> {
    let fail = |m: String| CoreError::usage(format!("{m} (`baton-lease ledger {verb} --help` lists the flags)"));
    let op = LedgerOp::from_verb(verb)
        .ok_or_else(|| CoreError::usage(format!("unknown ledger command `{verb}`: use intend, record or forget")))?;
    let mut out = LedgerLine { usage: usage(verb), op, ..LedgerLine::default() };
    let mut flags: BTreeMap<&str, String> = BTreeMap::new();
    let mut words = argv.iter();
    while let Some(word) = words.next() {
        let (flag, inline) = split_flag(word);
        match flag {
            "-h" | "--help" => out.help = true,
            "--json" if inline.is_none() => out.json = true,
            "--adapter" | "--key" | "--provider" | "--id" | "--label" | "--parent" | "--holder" | "--epoch"
            | "--store" => {
                let value = inline.or_else(|| words.next().cloned());
                let value =
                    value.ok_or_else(|| fail(format!("a value is required for `{flag}` but none was supplied")))?;
                flags.insert(flag, value);
            }
            _ => match CONTEXT.iter().find(|(f, _)| *f == flag) {
                Some((_, key)) => {
                    let value = inline.or_else(|| words.next().cloned());
                    let value =
                        value.ok_or_else(|| fail(format!("a value is required for `{flag}` but none was supplied")))?;
                    out.overrides.set(key, value);
                }
                None => return Err(fail(format!("unexpected argument `{word}`"))),
            },
        }
    }
    if out.help {
        return Ok(out);
    }
    let var = |k: &str| vars.get(k).filter(|v| !v.trim().is_empty()).cloned();
    let (Some(adapter), Some(key)) = (flags.remove("--adapter"), flags.remove("--key")) else {
        return Err(fail("the resource needs --adapter and --key".into()));
    };
    let provider_text = flags.remove("--provider").unwrap_or_else(|| "{}".into());
    let provider: Value = serde_json::from_str(&provider_text).map_err(|e| {
        CoreError::usage(format!("--provider must be a JSON object ({e}), e.g. '{{\"team\":\"web\"}}'"))
    })?;
    out.resource = Some(LedgerResource {
        adapter,
        key,
        provider,
        label: flags.remove("--label"),
        parent: flags.remove("--parent"),
    });
    out.id = flags.remove("--id");
    out.store = flags.remove("--store").or_else(|| var("BATON_STORE"));
    out.holder = flags.remove("--holder").or_else(|| var("BATON_HOLDER")).ok_or_else(|| {
        CoreError::usage(
            "changing the ledger needs the holder that acquired the lock: pass --holder (or set BATON_HOLDER)",
        )
    })?;
    let epoch = flags.remove("--epoch").or_else(|| var("BATON_EPOCH"));
    let epoch = epoch
        .ok_or_else(|| CoreError::usage("changing the ledger needs the epoch: pass --epoch (or set BATON_EPOCH)"))?;
    out.epoch = epoch
        .trim()
        .parse()
        .map_err(|_| CoreError::usage(format!("the epoch `{epoch}` is not a whole number (--epoch, BATON_EPOCH)")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_record_inside_a_run() {
        let vars: BTreeMap<String, String> =
            [("BATON_HOLDER", "run-1"), ("BATON_EPOCH", "3")].map(|(k, v)| (k.into(), v.into())).into();
        let l = parse("record", &words(&["--adapter", "neon", "--key=db-1", "--id", "x9", "--json"]), &vars).unwrap();
        assert_eq!((l.op.as_str(), l.holder.as_str(), l.epoch, l.json), ("ledger-record", "run-1", 3, true));
        assert_eq!(
            serde_json::to_value(&l.resource).unwrap(),
            serde_json::json!({"adapter": "neon", "key": "db-1", "provider": {}, "label": null, "parent": null})
        );
        assert_eq!(l.id.as_deref(), Some("x9"));
    }

    #[test]
    fn refusals() {
        let none = BTreeMap::new();
        for argv in [
            &["--key", "k", "--holder", "h", "--epoch", "1"][..],
            &["--adapter", "a", "--key", "k"],
            &["--adapter", "a", "--key", "k", "--holder", "h", "--epoch", "x"],
        ] {
            assert!(parse("forget", &words(argv), &none).is_err(), "{argv:?}");
        }
        let bad = parse(
            "intend",
            &words(&["--adapter", "a", "--key", "k", "--provider", "{", "--holder", "h", "--epoch", "1"]),
            &none,
        );
        assert!(bad.unwrap_err().message.contains("--provider must be a JSON object"));
    }
}
