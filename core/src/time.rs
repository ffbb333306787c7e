//! Wall-clock timestamps as the store writes them: ISO-8601 UTC with milliseconds.
//!
//! The core never reads a clock. Hosts pass `now` as milliseconds since the Unix epoch; the core formats
//! and parses the `acquiredAt` / `expiresAt` strings of `lock.json` with these two functions.
//!
//! Hand-written rather than a date-time crate (measured against `jiff` 1, which keeps the core pure with
//! `default-features = false`): jiff formats nothing from 9999-12-30 on (this covers every `i64`, with
//! `toISOString`'s `+YYYYYY` years), reads timestamps this refuses as corrupt (`23:59:60`, `12:00Z` without
//! seconds, `+0200`, `[UTC]` suffixes), and adds about 280 KB to a wasm32 module (this: 27 KB).

/// Milliseconds since 1970-01-01T00:00:00Z (negative before).
pub type UnixMs = i64;

/// Formats `ms` as `YYYY-MM-DDTHH:MM:SS.sssZ`, the form `Date.prototype.toISOString` gives (years outside
/// 0-9999 as `+YYYYYY`/`-YYYYYY`).
///
/// Every lock grant and renewal writes two of these, so the digits are written straight into the string:
/// `format!`'s machinery cost more than the rest of an acquire decision in WebAssembly.
pub fn format_iso(ms: UnixMs) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    let mut out = String::with_capacity(27);
    if (0..=9999).contains(&y) {
        push_padded(&mut out, y.unsigned_abs(), 4);
    } else {
        out.push(if y < 0 { '-' } else { '+' });
        push_padded(&mut out, y.unsigned_abs(), 6);
    }
    for (sep, value, width) in [('-', m, 2), ('-', d, 2), ('T', h, 2), (':', min, 2), (':', s, 2), ('.', milli, 3)] {
        out.push(sep);
        push_padded(&mut out, value.unsigned_abs(), width);
    }
    out.push('Z');
    out
}

/// Appends `n` in decimal, zero-padded to `width` digits (more digits when it needs them, as `{:0width$}`).
fn push_padded(out: &mut String, n: u64, width: usize) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(n);
    for _ in text.len()..width {
        out.push('0');
    }
    out.push_str(text);
}

/// Formats a duration for people: `850ms`, `12s`, `14m 59s`, `2h 5m` (the form every host prints).
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{}s", ms / 1000),
        60_000..3_600_000 => format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000),
        _ => format!("{}h {}m", ms / 3_600_000, (ms % 3_600_000) / 60_000),
    }
}

/// Parses an RFC 3339 timestamp (`2026-10-10T12:00:00Z`, `...:00.5+02:00`, fractions of any length).
///
/// Returns `None` for anything else, so a lock whose `expiresAt` cannot be read is reported as corrupt
/// instead of never expiring.
pub fn parse_iso(s: &str) -> Option<UnixMs> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) { part.parse().ok() } else { None }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let mut i = 19;
    let mut milli = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                milli = milli * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            milli *= 10;
        }
    }
    let offset_min = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 60 + om;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + se * 1000 + milli)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_to_iso_string() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_iso(1_791_633_600_123), "2026-10-10T12:00:00.123Z");
        assert_eq!(format_iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_iso(-1), "1969-12-31T23:59:59.999Z");
        // Outside 0-9999, the expanded years of `toISOString`.
        assert_eq!(format_iso(253_402_300_800_000), "+010000-01-01T00:00:00.000Z");
        assert_eq!(format_iso(-62_167_219_200_001), "-000001-12-31T23:59:59.999Z");
        assert_eq!(format_iso(-62_167_219_200_000), "0000-01-01T00:00:00.000Z");
    }

    #[test]
    fn formats_as_the_format_macro_would_across_the_range() {
        // The digits written by hand against `format!`'s padding, from far past to far future.
        let by_format = |ms: UnixMs| {
            let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
            let t = ms.rem_euclid(86_400_000);
            let (h, min, s, milli) = (t / 3_600_000, t / 60_000 % 60, t / 1000 % 60, t % 1000);
            let year = if (0..=9999).contains(&y) {
                format!("{y:04}")
            } else {
                format!("{}{:06}", if y < 0 { '-' } else { '+' }, y.abs())
            };
            format!("{year}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
        };
        let mut ms: UnixMs = -8_640_000_000_000_000;
        while ms < 8_640_000_000_000_000 {
            assert_eq!(format_iso(ms), by_format(ms), "{ms}");
            ms += 7_777_777_777_777;
        }
        for ms in [i64::MIN / 2, i64::MAX / 2, -1, 0, 999, 1_000, 86_399_999] {
            assert_eq!(format_iso(ms), by_format(ms), "{ms}");
        }
    }

    #[test]
    fn formats_durations_for_people() {
        assert_eq!(human_ms(850), "850ms");
        assert_eq!(human_ms(12_500), "12s");
        assert_eq!(human_ms(899_000), "14m 59s");
        assert_eq!(human_ms(7_500_000), "2h 5m");
    }

    #[test]
    fn parses_what_it_formats_and_common_variants() {
        for ms in [0, 1, 999, 1_791_633_600_123, 951_782_400_000, -1, 4_102_444_800_000] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms), "{ms}");
        }
        assert_eq!(parse_iso("2026-10-10T12:00:00Z"), Some(1_791_633_600_000));
        assert_eq!(parse_iso("2026-10-10T14:00:00.5+02:00"), Some(1_791_633_600_500));
        assert_eq!(parse_iso("2026-10-10T12:00:00.123456Z"), Some(1_791_633_600_123));
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        for s in [
            "",
            "soon",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-10-10T12:00:00",
            "2026-10-10T12:00:00.Z",
            "2026-10-10T25:00:00Z",
            "2026-10-10T12:00:00Zjunk",
        ] {
            assert_eq!(parse_iso(s), None, "{s}");
        }
    }
}
