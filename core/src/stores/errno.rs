//! What a failed file operation of a store means for the user, decided from the POSIX name of the OS error
//! (`EROFS`, `ENOSPC`, ...) the host saw. Every write of a store is a temp file renamed over its target, so
//! a failed one leaves the file it would have replaced as it was; the fix-it texts say so.

use crate::error::ErrorCode;

/// The fix-it text for access denied or a read-only file system.
const PERMISSION_FIX: &str = "The store must be readable and writable by this user: fix its permissions or mount, or choose another store (--store or BATON_STORE). Nothing was changed.";
/// The fix-it text for a full disk or an exhausted quota.
const FULL_FIX: &str = "The store's file system is full: free space there and re-run. No file was replaced; the previous content is intact.";
/// The fix-it text for a file where a directory should be.
const NOT_DIR_FIX: &str = "A path inside the store is a file, not a directory: point the store (--store or BATON_STORE) at a directory, or move the file away.";

/// The code of an OS error named `errno` and the sentence that says what to do about it: access denied or
/// a read-only file system is `STORE_PERMISSION`, a full disk or quota `STORE_REJECTED`, a file where a
/// directory should be `USAGE`, anything else (or no name) `INTERNAL` without a fix-it text.
pub fn classify(errno: Option<&str>) -> (ErrorCode, Option<&'static str>) {
    match errno {
        Some("EACCES" | "EPERM" | "EROFS") => (ErrorCode::StorePermission, Some(PERMISSION_FIX)),
        Some("ENOSPC" | "EDQUOT") => (ErrorCode::StoreRejected, Some(FULL_FIX)),
        Some("ENOTDIR") => (ErrorCode::Usage, Some(NOT_DIR_FIX)),
        _ => (ErrorCode::Internal, None),
    }
}

/// The message of a failed operation: `<what>: <detail>.` and the fix-it text when there is one. `what`
/// names the operation and its path (`cannot write /x/lock.json`), `detail` is the OS's own words.
pub fn message(errno: Option<&str>, what: &str, detail: &str) -> String {
    let detail = detail.trim().trim_end_matches('.');
    let head = if detail.is_empty() { format!("{what}.") } else { format!("{what}: {detail}.") };
    match classify(errno).1 {
        Some(fix) => format!("{head} {fix}"),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_errno_gets_its_code_and_one_fix_text() {
        for (errno, code) in [
            ("EACCES", ErrorCode::StorePermission),
            ("EPERM", ErrorCode::StorePermission),
            ("EROFS", ErrorCode::StorePermission),
            ("ENOSPC", ErrorCode::StoreRejected),
            ("EDQUOT", ErrorCode::StoreRejected),
            ("ENOTDIR", ErrorCode::Usage),
            ("EIO", ErrorCode::Internal),
        ] {
            assert_eq!(classify(Some(errno)).0, code, "{errno}");
        }
        assert_eq!(classify(None), (ErrorCode::Internal, None));
        assert_eq!(
            message(Some("EROFS"), "cannot write /s/lock.json", "Read-only file system (os error 30)"),
            format!("cannot write /s/lock.json: Read-only file system (os error 30). {PERMISSION_FIX}")
        );
        assert_eq!(message(Some("EIO"), "cannot read /s/x", "I/O error."), "cannot read /s/x: I/O error.");
        assert_eq!(message(None, "cannot read /s/x", ""), "cannot read /s/x.");
    }
}
