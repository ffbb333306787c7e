//! Printing a command's outcome: the core renders the envelope and decides the exit code; this prints it.

use crate::engine::CoreComponent;
use crate::engine::wit::stores::CommandOutcome;
use crate::error::HostError;
use serde_json::{Map, Value, json};

/// What a command produced: its envelope data, or its error.
pub type Outcome = Result<Map<String, Value>, HostError>;

/// Prints `outcome` of `command` (as one JSON envelope on stdout with `json`, else the error line on stderr)
/// and returns the exit code.
pub fn finish(core: Option<&mut CoreComponent>, command: Option<&str>, json: bool, outcome: Outcome) -> u8 {
    finish_with(core, command, json, outcome, None)
}

/// Like [`finish`], with an exit code that replaces the one the core derives from the error code (a failed
/// command's own exit code under `baton run`).
pub fn finish_with(
    core: Option<&mut CoreComponent>,
    command: Option<&str>,
    json: bool,
    outcome: Outcome,
    exit_override: Option<u8>,
) -> u8 {
    let mut core = core;
    // An I/O failure gets its code and message from the core (`io-error`) wherever it was raised.
    let outcome = match (outcome, core.as_deref_mut()) {
        (Err(e), Some(c)) => Err(c.classify(e)),
        (outcome, _) => outcome,
    };
    let request = match &outcome {
        Ok(data) => CommandOutcome::Data(Value::Object(data.clone()).to_string()),
        Err(e) => CommandOutcome::Failed(crate::engine::wit_error(e)),
    };
    let rendered =
        core.ok_or_else(|| HostError::internal("the core is not loaded")).and_then(|c| c.render(command, &request));
    let (envelope, exit, text) = match rendered {
        // The envelope is JSON text the core wrote: printed as it is.
        Ok(r) => (r.envelope, r.exit, r.text),
        // The core itself failed: print the minimal envelope by hand.
        Err(core_err) => {
            let err = outcome.err().unwrap_or(core_err);
            let text = format!("error {}: {}", err.code, err.message);
            (json!({ "ok": false, "command": command, "error": err.to_json() }).to_string(), 1, Some(text))
        }
    };
    if json {
        println!("{envelope}");
    } else if let Some(text) = text {
        eprintln!("{text}");
    }
    exit_override.unwrap_or(exit)
}

/// Prints a progress or warning line for people (stderr), prefixed with `baton:`.
pub fn note(line: impl std::fmt::Display) {
    eprintln!("baton: {line}");
}
