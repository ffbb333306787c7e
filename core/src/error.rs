//! Stable error codes and the error value every host prints.
//!
//! One code per failure, spelled the same in Rust, WIT, JS (`error.code`) and JSON output.

use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;

/// A stable error code. The string form (`LOCK_HELD`, ...) never changes once released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// Another holder has a live lock on the cell.
    LockHeld,
    /// This holder no longer holds the lock it wrote under (taken over, released, or its own deadline passed).
    LockLost,
    /// `lock.json` exists but cannot be read; baton never takes such a lock over on its own.
    LockCorrupt,
    /// A resource belongs to another scope of the same environment.
    OwnedByOtherScope,
    /// A production run without a named approver.
    EnvNotApproved,
    /// The CI context is missing something a scope needs (the branch).
    CtxNull,
    /// Invalid flags, arguments or configuration.
    Usage,
    /// The store kept losing compare-and-swap races, or did not answer, until the budget of the operation ran out.
    StoreContended,
    /// The store rejected the write: a git remote's hook or branch protection, or a dir store whose disk is
    /// full (the file being replaced keeps its previous content).
    StoreRejected,
    /// The store cannot be read or written with the credentials given.
    StorePermission,
    /// A receipt cannot be parsed; it is kept, never overwritten.
    ReceiptCorrupt,
    /// A receipt was written by a newer baton.
    ReceiptVersion,
    /// A write-ahead intent could not be resolved to a resource or its absence.
    IntentUnresolved,
    /// The command run under the lease (`baton run -- CMD`) failed; the CLI exits with its exit code.
    CommandFailed,
    /// A signal stopped the run: before the command started (nothing ran), or a cancel (SIGINT/SIGTERM)
    /// while it ran (the command was stopped, the receipt says `cancelled`, the lease is released).
    Interrupted,
    /// Anything unexpected: a bug, or a host that broke the contract.
    Internal,
    /// The operating system gave the host no random bytes, so it cannot make a mutex token, a holder name or
    /// a backoff jitter it could trust (the native host never falls back to the time or the pid).
    RandomUnavailable,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [Self; 17] = [
        Self::LockHeld,
        Self::LockLost,
        Self::LockCorrupt,
        Self::OwnedByOtherScope,
        Self::EnvNotApproved,
        Self::CtxNull,
        Self::Usage,
        Self::StoreContended,
        Self::StoreRejected,
        Self::StorePermission,
        Self::ReceiptCorrupt,
        Self::ReceiptVersion,
        Self::IntentUnresolved,
        Self::CommandFailed,
        Self::Interrupted,
        Self::Internal,
        Self::RandomUnavailable,
    ];

    /// The stable string form, e.g. `"LOCK_HELD"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::LockHeld => "LOCK_HELD",
            Self::LockLost => "LOCK_LOST",
            Self::LockCorrupt => "LOCK_CORRUPT",
            Self::OwnedByOtherScope => "OWNED_BY_OTHER_SCOPE",
            Self::EnvNotApproved => "ENV_NOT_APPROVED",
            Self::CtxNull => "CTX_NULL",
            Self::Usage => "USAGE",
            Self::StoreContended => "STORE_CONTENDED",
            Self::StoreRejected => "STORE_REJECTED",
            Self::StorePermission => "STORE_PERMISSION",
            Self::ReceiptCorrupt => "RECEIPT_CORRUPT",
            Self::ReceiptVersion => "RECEIPT_VERSION",
            Self::IntentUnresolved => "INTENT_UNRESOLVED",
            Self::CommandFailed => "COMMAND_FAILED",
            Self::Interrupted => "INTERRUPTED",
            Self::Internal => "INTERNAL",
            Self::RandomUnavailable => "RANDOM_UNAVAILABLE",
        }
    }

    /// Parses the string form; `None` for an unknown code.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The process exit code a CLI uses for this failure:
    /// 1 failed, 2 refused before doing anything, 3 lock held or lost.
    pub const fn exit_code(self) -> u8 {
        match self {
            Self::LockHeld | Self::LockLost => 3,
            Self::EnvNotApproved | Self::CtxNull | Self::Usage => 2,
            _ => 1,
        }
    }

    /// The standing advice printed with this code, where there is one.
    pub const fn hint(self) -> Option<&'static str> {
        match self {
            Self::LockHeld => Some("Wait for it, or pass --wait."),
            Self::LockLost => Some(
                "Nothing more was written under this lease; the receipt in the store is authoritative. Re-run to continue from there.",
            ),
            Self::LockCorrupt => {
                Some("Inspect the lock file; if no run is active, `baton lock break --reason ...` replaces it.")
            }
            Self::EnvNotApproved => {
                Some("Pass --approved-by <who> or set BATON_APPROVED_BY from an approval workflow.")
            }
            Self::CtxNull => Some("Pass --branch (and --sha), or set BATON_CTX_BRANCH / BATON_CTX_SHA."),
            Self::Usage => Some("See `baton --help`."),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure with its stable code, a message saying what happened and what to do, and structured details.
///
/// Serialises as `{"code","message","hint"?, ...details}`, the `error` object of the JSON envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreError {
    /// The stable code.
    pub code: ErrorCode,
    /// What happened and what to do, in one or two sentences.
    pub message: String,
    /// Structured facts (the lock that is held, the variable that was wrong, ...).
    pub details: Map<String, Value>,
}

impl CoreError {
    /// Creates an error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), details: Map::new() }
    }

    /// Adds one detail field.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// A `USAGE` error.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Usage, message)
    }

    /// An `INTERNAL` error: a host broke the contract or baton has a bug.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The error a JSON `error` object stands for (the inverse of [`Self::to_json`]): `hint` is the code's
    /// own and dropped, every other key but `code` and `message` is a detail. An unknown or missing code is
    /// `INTERNAL`, keeping the object's `code` as the detail `reportedCode`.
    pub fn from_json(mut obj: Map<String, Value>) -> Self {
        let reported = obj.remove("code");
        let message = match obj.remove("message") {
            Some(Value::String(m)) => m,
            _ => String::new(),
        };
        obj.remove("hint");
        let code = reported.as_ref().and_then(Value::as_str).and_then(ErrorCode::parse);
        let mut e = Self { code: code.unwrap_or(ErrorCode::Internal), message, details: obj };
        if code.is_none() {
            e.details.insert("reportedCode".into(), reported.unwrap_or(Value::Null));
        }
        e
    }

    /// The JSON `error` object: details first, then `code`, `message` and `hint` (which win on a clash).
    pub fn to_json(&self) -> Value {
        let mut obj = self.details.clone();
        obj.insert("code".into(), Value::from(self.code.as_str()));
        obj.insert("message".into(), Value::from(self.message.clone()));
        if let Some(hint) = self.code.hint() {
            obj.insert("hint".into(), Value::from(hint));
        }
        Value::Object(obj)
    }
}

impl Serialize for CoreError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for CoreError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(Self::from_json)
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for CoreError {}

/// The description of one code, as listed by `error-codes`.
#[derive(Clone, Debug, Serialize)]
pub struct CodeInfo {
    /// The stable string form.
    pub code: &'static str,
    /// The CLI exit code.
    pub exit: u8,
    /// The standing hint, or `null`.
    pub hint: Option<&'static str>,
}

/// Every error code with its exit code and hint, in declaration order.
pub fn error_codes() -> Vec<CodeInfo> {
    ErrorCode::ALL.into_iter().map(|c| CodeInfo { code: c.as_str(), exit: c.exit_code(), hint: c.hint() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn exit_codes_follow_the_design() {
        assert_eq!(ErrorCode::LockHeld.exit_code(), 3);
        assert_eq!(ErrorCode::LockLost.exit_code(), 3);
        assert_eq!(ErrorCode::CtxNull.exit_code(), 2);
        assert_eq!(ErrorCode::Usage.exit_code(), 2);
        assert_eq!(ErrorCode::EnvNotApproved.exit_code(), 2);
        assert_eq!(ErrorCode::LockCorrupt.exit_code(), 1);
        assert_eq!(ErrorCode::OwnedByOtherScope.exit_code(), 1);
    }

    #[test]
    fn error_json_puts_code_and_message_over_details() {
        let e = CoreError::new(ErrorCode::LockHeld, "held").with("code", "spoof").with("lock", 1);
        let j = e.to_json();
        assert_eq!(j["code"], "LOCK_HELD");
        assert_eq!(j["message"], "held");
        assert_eq!(j["lock"], 1);
        assert_eq!(j["hint"], "Wait for it, or pass --wait.");
    }
}
