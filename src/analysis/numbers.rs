//! Numbers as the verdicts and plans say them: points of a rate, shares as percentages.

/// A number of points (a rate's change × 100) with up to one decimal: `28`, `2.5`.
pub fn points(v: f64) -> String {
    let s = format!("{:.1}", v * 100.0);
    s.strip_suffix(".0").unwrap_or(&s).to_owned()
}

/// A share as a percentage with up to one decimal.
pub fn percent(v: f64) -> String {
    let s = format!("{:.1}", v * 100.0);
    format!("{} %", s.strip_suffix(".0").unwrap_or(&s))
}
