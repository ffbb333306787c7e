//! The host's wall clock: the one place the native host reads the time of day. The core takes it as
//! `nowMs`; monotonic deadlines (`std::time::Instant`) stay with the code that waits.

/// Wall-clock milliseconds since the Unix epoch (0 if the clock is before it, `i64::MAX` past the range).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
