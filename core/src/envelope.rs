//! The JSON envelope every CLI command prints with `--json`, and the matching exit code.
//!
//! `{"ok":true,"command":...,...data}` or `{"ok":false,"command":...,"error":{"code","message","hint"?,...}}`;
//! `ok` is true exactly when the exit code is 0.

use crate::error::{CoreError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a host hands over to be rendered: the command, and either its data or its error.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenderInput {
    /// The command (`"lock acquire"`), or `null` when the command word itself was not understood.
    pub command: Option<String>,
    /// The data of a successful command: its fields go next to `ok` and `command`.
    #[serde(default)]
    pub data: Option<Map<String, Value>>,
    /// The error of a failed command: `code`, `message` and detail fields.
    #[serde(default)]
    pub error: Option<Map<String, Value>>,
}

/// A rendered result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rendered {
    /// The envelope to print on stdout with `--json`.
    pub envelope: Value,
    /// The process exit code.
    pub exit: u8,
    /// The line to print on stderr without `--json` (errors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Turns an error object from a host (its `code` may be any string) into a [`CoreError`].
/// An unknown code becomes `INTERNAL`, keeping the original code as `details.reportedCode`.
pub fn error_from_json(mut obj: Map<String, Value>) -> CoreError {
    let raw_code = obj.remove("code").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let message = obj.remove("message").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    obj.remove("hint");
    let mut err = match ErrorCode::parse(&raw_code) {
        Some(code) => CoreError::new(code, message),
        None => CoreError::internal(message).with("reportedCode", raw_code),
    };
    err.details.extend(obj);
    err
}

/// Renders a command's outcome.
pub fn render(input: RenderInput) -> Rendered {
    let command = input.command.map_or(Value::Null, Value::from);
    let mut env = Map::new();
    match input.error {
        Some(error) => {
            let err = error_from_json(error);
            env.insert("ok".into(), false.into());
            env.insert("command".into(), command);
            env.insert("error".into(), err.to_json());
            let hint =
                err.code.hint().filter(|h| !err.message.contains(h)).map(|h| format!(" {h}")).unwrap_or_default();
            Rendered {
                envelope: Value::Object(env),
                exit: err.code.exit_code(),
                text: Some(format!("error {}: {}{hint}", err.code, err.message)),
            }
        }
        None => {
            env.insert("ok".into(), true.into());
            env.insert("command".into(), command);
            for (k, v) in input.data.unwrap_or_default() {
                if k != "ok" && k != "command" {
                    env.insert(k, v);
                }
            }
            Rendered { envelope: Value::Object(env), exit: 0, text: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> RenderInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn ok_iff_exit_zero() {
        let r = render(input(json!({"command": "scope", "data": {"context": {"scope": "main"}}})));
        assert_eq!(r.exit, 0);
        assert_eq!(r.envelope, json!({"ok": true, "command": "scope", "context": {"scope": "main"}}));
        let r = render(input(
            json!({"command": "lock acquire", "error": {"code": "LOCK_HELD", "message": "m", "lock": {"holder": "a"}}}),
        ));
        assert_eq!(r.exit, 3);
        assert_eq!(r.envelope["ok"], false);
        assert_eq!(r.envelope["error"]["lock"]["holder"], "a");
        assert_eq!(r.envelope["error"]["hint"], "Wait for it, or pass --wait.");
        assert_eq!(r.text.as_deref(), Some("error LOCK_HELD: m Wait for it, or pass --wait."));
    }

    #[test]
    fn unknown_codes_are_internal() {
        let r = render(input(json!({"command": null, "error": {"code": "EWHAT", "message": "m"}})));
        assert_eq!(r.exit, 1);
        assert_eq!(r.envelope["error"]["code"], "INTERNAL");
        assert_eq!(r.envelope["error"]["reportedCode"], "EWHAT");
    }
}
