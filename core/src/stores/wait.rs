//! How long a dir store transaction waits for a cell mutex held by a live process before it gives up with
//! `STORE_CONTENDED`: `BATON_MUTEX_WAIT_MS` as given, else 30 s.

use crate::error::CoreError;

/// The wait bound when `BATON_MUTEX_WAIT_MS` is not set (or blank).
pub const DEFAULT_MUTEX_WAIT_MS: u64 = 30_000;

/// The largest bound accepted: every host must hold it exactly (JavaScript numbers are exact to 2^53 - 1).
const MAX_MUTEX_WAIT_MS: u64 = (1 << 53) - 1;

/// The mutex wait bound from the text of `BATON_MUTEX_WAIT_MS`: blank or absent is the default; a whole
/// number of milliseconds (0: do not wait), surrounding white space allowed; anything else is `USAGE`.
pub fn mutex_wait_ms(text: Option<&str>) -> Result<u64, CoreError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(DEFAULT_MUTEX_WAIT_MS);
    };
    let parsed = if text.bytes().all(|b| b.is_ascii_digit()) { text.parse::<u64>().ok() } else { None };
    parsed.filter(|ms| *ms <= MAX_MUTEX_WAIT_MS).ok_or_else(|| {
        CoreError::usage(format!(
            "BATON_MUTEX_WAIT_MS must be a whole number of milliseconds, 0 or more (got {text:?}): set it like BATON_MUTEX_WAIT_MS=30000, or unset it for the default of 30 s"
        ))
        .with("variable", "BATON_MUTEX_WAIT_MS")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_or_usage() {
        assert_eq!(mutex_wait_ms(None).unwrap(), 30_000);
        assert_eq!(mutex_wait_ms(Some("  ")).unwrap(), 30_000);
        assert_eq!(mutex_wait_ms(Some(" 250 ")).unwrap(), 250);
        assert_eq!(mutex_wait_ms(Some("0")).unwrap(), 0);
        assert_eq!(mutex_wait_ms(Some("9007199254740991")).unwrap(), MAX_MUTEX_WAIT_MS);
        // What the two hosts once read differently: Number() took these, parse::<u64>() fell back to 30 s.
        for bad in ["1e3", "0x10", "1.5", "-1", "+5", "ten", "9007199254740992", "99999999999999999999"] {
            assert_eq!(mutex_wait_ms(Some(bad)).unwrap_err().code, crate::ErrorCode::Usage, "{bad}");
        }
    }
}
