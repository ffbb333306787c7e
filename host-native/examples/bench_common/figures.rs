//! The figures of a benchmark as data: each is a value and the baseline it is compared with, measured in the
//! same run. When `BATON_BENCH_JSON` names a file, [`record`] appends one JSON line per figure to it;
//! `scripts/bench-chart.mjs` turns the lines into `figures.json` and one SVG chart. Nothing is asserted.

use std::io::Write;

/// Appends one figure: `value` (in `unit`) against the baseline `baseline` measured at `baseline_value`
/// (same unit), in chart group `group`. `target` is the ratio the project aims to stay under, if any.
pub(crate) fn record(
    group: &str,
    name: &str,
    value: f64,
    unit: &str,
    baseline: &str,
    baseline_value: f64,
    target: Option<f64>,
) {
    let Some(path) = std::env::var_os("BATON_BENCH_JSON") else { return };
    let line = serde_json::json!({
        "group": group,
        "name": name,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "baselineValue": baseline_value,
        "ratio": value / baseline_value,
        "target": target,
    });
    let written =
        std::fs::OpenOptions::new().create(true).append(true).open(&path).and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!("cannot append a figure to {}: {e}", path.to_string_lossy());
    }
}
