//! The host's error value: a core error code with a message and details, ready to be rendered.

use serde_json::{Map, Value};
use std::fmt;

/// A failure with a stable code (the core's spelling, e.g. `LOCK_HELD`), a message and details. Displays
/// as `CODE: message`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    /// The stable code.
    pub code: String,
    /// What happened and what to do.
    pub message: String,
    /// Structured facts for the JSON envelope.
    pub details: Map<String, Value>,
}

/// The POSIX name of an OS error number, for the core (a conversion of the number, not a decision).
fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ESTALE => "ESTALE",
        libc::EDQUOT => "EDQUOT",
        _ => return None,
    })
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

    /// An I/O failure on `what` with the OS error, with the error's POSIX name as detail `errno`. Its code
    /// and message are decided by the core (operation `io-error`: access denied or a read-only file system
    /// is `STORE_PERMISSION`, a full disk or quota `STORE_REJECTED`, a file where a directory should be
    /// `USAGE`, anything else `INTERNAL`), which needs a core: until [`crate::engine::CoreComponent::classify`] runs, the error is
    /// `INTERNAL` with the OS's words. The stores classify what they return, and so does every command's
    /// output.
    pub fn io(what: impl fmt::Display, e: &std::io::Error) -> Self {
        let err = Self::new("INTERNAL", format!("{what}: {e}."));
        match e.raw_os_error().and_then(errno_name) {
            Some(name) => err.with("errno", name),
            None => err,
        }
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
