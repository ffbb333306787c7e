//! Human durations on the command line: `500ms`, `90s`, `15m`, `2h`. Hand-written rather than `humantime`:
//! humantime counts in nanoseconds and refuses what this accepts above 2^64 ns (`18446744073709551615ms`,
//! an unbounded `--wait-timeout`). Printing durations for people is the core's (`time::human_ms`, the
//! `expiresIn` of a lock read), so every host prints them alike.

/// Parses a duration into milliseconds. A unit is required, so `15` is never mistaken for seconds or
/// minutes.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a duration: write e.g. 500ms, 90s, 15m or 2h"))?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "" => return Err(format!("`{s}` needs a unit: write e.g. {s}s or {s}m")),
        _ => {
            return Err(format!("`{s}` has an unknown unit `{unit}`: use ms, s, m or h"));
        }
    };
    n.checked_mul(factor).ok_or_else(|| format!("`{s}` is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_refuses_bare_numbers() {
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("15m"), Ok(900_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert!(parse_duration("15").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("-5s").is_err());
    }

    /// `npx baton-lease` reads the same flags through the core (`command-line`): both read every duration
    /// alike, messages included.
    #[test]
    fn the_core_reads_durations_alike() {
        for s in ["500ms", "90s", "15m", "2h", " 7s ", "15", "m", "5d", "-5s", "", "99999999999999999999h", "1.5s"] {
            assert_eq!(parse_duration(s), baton_core::command_line::parse_duration(s), "{s:?}");
        }
    }
}
