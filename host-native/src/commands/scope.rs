//! `baton scope`: print the scope (or the whole context with `--json`).

use crate::cli::ScopeArgs;
use crate::engine::CoreComponent;
use crate::output::Outcome;
use serde_json::Map;

/// Detects the context (the commit only where a CI source gives it: no `git rev-parse` for it); prints
/// the scope name on stdout unless `--json`.
pub fn run(core: &mut CoreComponent, args: &ScopeArgs) -> Outcome {
    let context = crate::context::detect_scope(core, &args.ctx)?;
    if !args.json {
        println!("{}", context["scope"].as_str().unwrap_or_default());
    }
    let mut data = Map::new();
    data.insert("context".into(), context);
    Ok(data)
}
