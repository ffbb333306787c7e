//! The host's error value: a core error code with a message and details, ready to be rendered.

use serde_json::{Map, Value};
use std::fmt;

/// A failure with a stable code (the core's spelling, e.g. `LOCK_HELD`), a message and details.
#[derive(Clone, Debug, PartialEq)]
pub struct HostError {
    /// The stable code.
    pub code: String,
    /// What happened and what to do.
    pub message: String,
    /// Structured facts for the JSON envelope.
    pub details: Map<String, Value>,
}

impl HostError {
    /// A failure with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into(), details: Map::new() }
    }

    /// `USAGE`: bad flags or arguments.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new("USAGE", message)
    }

    /// `INTERNAL`: a bug, or something unexpected around baton.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new("INTERNAL", message)
    }

    /// An I/O failure on `what` with the OS error, classified by what the user can do about it: access
    /// denied or a read-only file system is `STORE_PERMISSION`, a full disk or quota `STORE_REJECTED`, a file
    /// where a directory should be `USAGE`, anything else `INTERNAL`. Every write is a temp file renamed over
    /// its target, so a failed one leaves the file it would have replaced as it was.
    pub fn io(what: impl fmt::Display, e: &std::io::Error) -> Self {
        let errno = e.raw_os_error().unwrap_or(0);
        let (code, fix) = match errno {
            libc::EACCES | libc::EPERM | libc::EROFS => (
                "STORE_PERMISSION",
                " The store must be readable and writable by this user: fix its permissions or mount, or choose another store with --store (BATON_STORE). Nothing was changed.",
            ),
            libc::ENOSPC | libc::EDQUOT => (
                "STORE_REJECTED",
                " The store's file system is full: free space there and re-run. No file was replaced; the previous content is intact.",
            ),
            libc::ENOTDIR => (
                "USAGE",
                " A path inside the store is a file, not a directory: point --store (BATON_STORE) at a directory, or move the file away.",
            ),
            _ => ("INTERNAL", ""),
        };
        let err = Self::new(code, format!("{what}: {e}.{fix}"));
        if errno == 0 { err } else { err.with("errno", errno) }
    }

    /// Adds a detail field.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// Builds an error from a core error object `{"code","message","hint"?,...details}`.
    pub fn from_json(mut obj: Map<String, Value>) -> Self {
        let code = obj.remove("code").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| "INTERNAL".into());
        let message = obj.remove("message").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        obj.remove("hint");
        Self { code, message, details: obj }
    }

    /// The error object as the core's `render` operation takes it.
    pub fn to_json(&self) -> Value {
        let mut obj = self.details.clone();
        obj.insert("code".into(), self.code.clone().into());
        obj.insert("message".into(), self.message.clone().into());
        Value::Object(obj)
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for HostError {}
