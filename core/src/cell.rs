//! Cells: the unit of atomic change in every store.
//!
//! A host loads a cell snapshot (the files named in [`STATE_FILES`] that exist), asks the core for a
//! decision, and commits the returned [`Change`]s only if the cell is unchanged since the load (a per-cell
//! mutex in the dir store, a compare-and-swap on a ref in git). On a conflict it reloads and asks again.

use crate::error::CoreError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The lock record of the cell.
pub const LOCK_FILE: &str = "lock.json";
/// The highest epoch ever granted on the cell; survives the release that deletes `lock.json`.
pub const EPOCH_FILE: &str = "epoch.json";
/// The scope's receipt: the last run's, or the checkpoint of the run in progress (`receipt`).
pub const LATEST_FILE: &str = "latest.json";
/// A claim cell's record of who owns a resource identity (`claims`).
pub const CLAIM_FILE: &str = "claim.json";
/// The files a host loads into a snapshot (the ones that exist).
pub const STATE_FILES: [&str; 4] = [LOCK_FILE, EPOCH_FILE, LATEST_FILE, CLAIM_FILE];

/// A snapshot of one cell as the host loaded it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cell {
    /// The environment (`preview`, `production`, `_locks` for parent objects).
    pub env: String,
    /// The scope within the environment.
    pub scope: String,
    /// File name -> UTF-8 content, for the files that exist. A file that is not valid UTF-8 is passed
    /// lossily converted; it then fails to parse and is reported as corrupt.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// How messages name the cell instead of `env/scope` (e.g. `parent object <identity>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub label: Option<String>,
}

impl Cell {
    /// `env/scope`, as messages name the cell.
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| format!("{}/{}", self.env, self.scope))
    }

    /// Applies a change set to this snapshot, as a store commits it (fakes, simulations, tests).
    pub fn apply(&mut self, changes: &[Change]) {
        self.apply_owned(changes.to_vec());
    }

    /// [`Self::apply`], moving the contents in instead of copying them.
    pub fn apply_owned(&mut self, changes: Vec<Change>) {
        for change in changes {
            match change {
                Change::Write { file, content } => {
                    self.files.insert(file, content);
                }
                Change::Delete { file } => {
                    self.files.remove(&file);
                }
            }
        }
    }

    /// The content of `file`, if it exists.
    pub fn file(&self, file: &str) -> Option<&str> {
        self.files.get(file).map(String::as_str)
    }
}

/// One change to a cell file. A change set is applied in order; hosts make each write atomic
/// (temp file + rename) and the whole set atomic with respect to other transactions on the cell.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Change {
    /// Replace (or create) `file` with `content`.
    Write {
        /// File name within the cell.
        file: String,
        /// New content.
        content: String,
    },
    /// Delete `file` if it exists.
    Delete {
        /// File name within the cell.
        file: String,
    },
}

/// Serialises a JSON document the way the original tool does: two-space indent and a trailing newline.
pub fn to_file_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|_| String::from("null"));
    s.push('\n');
    s
}

/// The compact JSON (`serde_json::to_string`) of the value whose pretty JSON (`to_string_pretty`, or
/// [`to_file_json`]) is `pretty`: the same text without the whitespace between tokens (the two formats
/// differ in nothing else), much faster than serialising the value again (a receipt may hold 100,000
/// ledger entries).
pub fn compact_json(pretty: &str) -> String {
    let bytes = pretty.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    // Between strings, keep everything but the whitespace; a string is copied whole, found by its closing
    // quote (memchr: most of a receipt's bytes are inside strings).
    while at < bytes.len() {
        let Some(quote) = memchr::memchr(b'"', &bytes[at..]).map(|q| at + q) else {
            out.extend(bytes[at..].iter().filter(|b| !matches!(b, b' ' | b'\n')));
            break;
        };
        out.extend(bytes[at..quote].iter().filter(|b| !matches!(b, b' ' | b'\n')));
        let mut end = quote + 1;
        loop {
            let Some(found) = memchr::memchr2(b'"', b'\\', bytes.get(end..).unwrap_or_default()) else {
                end = bytes.len(); // not closed (never so in serde_json's output): the rest is the string
                break;
            };
            end += found;
            if bytes[end] == b'"' {
                end += 1;
                break;
            }
            end += 2; // a backslash and the character it escapes
        }
        let end = end.min(bytes.len());
        out.extend_from_slice(&bytes[quote..end]);
        at = end;
    }
    // Only ASCII whitespace was left out: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A data file name: 1-100 characters from `[A-Za-z0-9._-]`, not hidden, not one of the cell's own files
/// (`lock.json`, `epoch.json`, `latest.json`, `claim.json`, `lock.mutex`) and not a temp or tomb name.
pub fn validate_data_file(file: &str) -> Result<(), CoreError> {
    let plain = !file.is_empty()
        && file.len() <= 100
        && !file.starts_with('.')
        && file.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':' | '+'));
    let reserved = [LOCK_FILE, EPOCH_FILE, LATEST_FILE, "lock.mutex", CLAIM_FILE].contains(&file)
        || file.ends_with(".tmp")
        || file.ends_with(".tomb");
    if !plain || reserved {
        return Err(CoreError::usage(format!(
            "`{file}` cannot be written: use 1-100 characters from A-Z a-z 0-9 . _ - @ : +, not starting with a dot, and not one of baton's own files (lock.json, epoch.json, latest.json, claim.json, lock.mutex, *.tmp, *.tomb)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_compact_json_of_pretty_json_is_what_serde_json_writes_compact() {
        let odd = "q\"b\\s\\\" \\\\\" \u{1}\n\r\t : , { } [ ] é 𝄞 \u{7f}  end ";
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({ "a": [], "b": {}, "c": [[], {}, [1, 2.5, -3e300, true, null]], odd: { odd: [odd, " ", "\\"] } }),
            json!([{ "k": "v" }, " x ", "\\", "\"", 0, 1e-7]),
            json!("  \n "),
        ];
        for v in values {
            assert_eq!(compact_json(&to_file_json(&v)), serde_json::to_string(&v).unwrap(), "{v}");
            assert_eq!(compact_json(&serde_json::to_string_pretty(&v).unwrap()), serde_json::to_string(&v).unwrap());
        }
        // Not JSON at all (never so here): whatever it is, no panic, and a string left open is kept whole.
        assert_eq!(compact_json("[ \"a b"), "[\"a b");
        assert_eq!(compact_json("[ \"a \\"), "[\"a \\");
        assert_eq!(compact_json("\"\\\" x\" , 1"), "\"\\\" x\",1");
    }
}
