//! Number formatting shared by the written reports and the console: rates, means, p-values.

pub use crate::analysis::{percent, points};
use crate::analysis::{Row, SideOutcome};
use crate::config::Metric;

/// A mean in the metric's own terms: rates to 3 decimals, counts to 1, tokens and latency whole.
pub fn value(metric: Metric, v: Option<f64>) -> String {
    let Some(v) = v else { return "–".into() };
    match metric {
        Metric::InputTokens
        | Metric::OutputTokens
        | Metric::TotalTokens
        | Metric::ReasoningTokens
        | Metric::LatencyMs => {
            format!("{v:.0}")
        }
        m if m.is_rate() => format!("{v:.3}"),
        _ => format!("{v:.2}"),
    }
}

/// A delta with its sign.
pub fn delta(metric: Metric, v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 0.0 => format!("+{}", value(metric, Some(v))),
        Some(v) => value(metric, Some(v)),
    }
}

/// `[low, high]`, or `–`.
pub fn interval(row: &Row) -> String {
    match (row.ci_low, row.ci_high) {
        (Some(l), Some(h)) => format!(
            "[{}, {}]",
            value(row.metric, Some(l)),
            value(row.metric, Some(h))
        ),
        _ => "–".into(),
    }
}

/// A row's `mde` in its own terms: `28 points` for a rate, `+0.45 (+35 %)` for a count; `–`
/// when no change could be flagged.
pub fn mde(row: &Row) -> String {
    let Some(d) = row.mde else {
        return "–".into();
    };
    if row.metric.is_rate() {
        return format!("{} points", points(d));
    }
    match row.baseline_mean.filter(|b| *b > 0.0) {
        Some(base) => format!("{} (+{})", delta(row.metric, Some(d)), percent(d / base)),
        None => delta(row.metric, Some(d)),
    }
}

/// What a row that reached no verdict of change could hide, in words: "a drop smaller than
/// 28 points could be hidden", or that at these trials no change could be flagged at all.
pub fn hidden(row: &Row) -> String {
    let direction = if row.metric.higher_is_better() {
        "drop"
    } else {
        "rise"
    };
    match row.mde {
        Some(_) => format!("a {direction} smaller than {} could be hidden", mde(row)),
        None if row.metric == Metric::Success => {
            "at these trials not even a drop to 0 % would be flagged".into()
        }
        None if !row.metric.is_rate() && row.baseline_mean == Some(0.0) => {
            "no estimate of what could be hidden (the baseline mean is 0)".into()
        }
        None => format!("at these trials no {direction} would be flagged"),
    }
}

/// A p-value: three decimals, or scientific notation below 0.001.
pub fn p(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v != 0.0 && v < 1e-3 => format!("{v:.1e}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// `7/10`, with the infrastructure errors left out said as such.
pub fn successes(side: &SideOutcome) -> String {
    if side.infra_errors > 0 {
        format!(
            "{}/{} (+{} infra)",
            side.successes, side.n, side.infra_errors
        )
    } else {
        format!("{}/{}", side.successes, side.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_metric() {
        assert_eq!(value(Metric::Success, Some(0.5)), "0.500");
        assert_eq!(value(Metric::TotalTokens, Some(812.4)), "812");
        assert_eq!(delta(Metric::ToolCalls, Some(1.0)), "+1.00");
        assert_eq!(delta(Metric::Success, Some(-0.25)), "-0.250");
        assert_eq!(p(Some(0.0000123)), "1.2e-5");
        assert_eq!(p(Some(0.5)), "0.500");
        assert_eq!(percent(0.1), "10 %");
        assert_eq!(percent(0.125), "12.5 %");
        assert_eq!(points(0.28), "28");
        assert_eq!(points(0.025), "2.5");
    }
}
