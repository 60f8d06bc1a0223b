//! The trend that `mcpeval history` prints: history rows filtered by task, host and metric,
//! grouped per task × host × metric, oldest first within each group.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::table::{HistoryRow, DRIFT};
use crate::config::Metric;

/// Which rows to show; `None` shows every value.
#[derive(Debug, Clone, Default)]
pub struct TrendFilter {
    pub task: Option<String>,
    pub host: Option<String>,
    pub metric: Option<String>,
}

impl TrendFilter {
    fn keeps(&self, r: &HistoryRow) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        is(&self.task, &r.task_id) && is(&self.host, &r.host) && is(&self.metric, &r.metric)
    }
}

/// A mean or delta in the metric's terms: rates to 3 decimals, tokens and latency whole, other
/// counts to 2.
pub fn value(metric: &str, v: Option<f64>) -> String {
    let Some(v) = v else { return "–".into() };
    match metric.parse::<Metric>() {
        Ok(
            Metric::InputTokens
            | Metric::OutputTokens
            | Metric::TotalTokens
            | Metric::ReasoningTokens
            | Metric::LatencyMs,
        ) => {
            format!("{v:.0}")
        }
        Ok(m) if m.is_rate() => format!("{v:.3}"),
        _ => format!("{v:.2}"),
    }
}

fn signed(metric: &str, v: Option<f64>) -> String {
    match v {
        Some(d) if d >= 0.0 => format!("+{}", value(metric, Some(d))),
        other => value(metric, other),
    }
}

/// The rows the filter keeps, grouped by (task, host, metric) in that order, each group in
/// history order (oldest first).
pub fn select<'a>(
    rows: &'a [HistoryRow],
    filter: &TrendFilter,
) -> BTreeMap<(String, String, String), Vec<&'a HistoryRow>> {
    let mut groups: BTreeMap<(String, String, String), Vec<&HistoryRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| filter.keeps(r)) {
        groups
            .entry((r.task_id.clone(), r.host.clone(), r.metric.clone()))
            .or_default()
            .push(r);
    }
    groups
}

/// The trend as text: a header per task × host × metric, then one line per run and comparison.
/// Drift rows say which earlier run they compare with, and mark a baseline that moved.
pub fn table(groups: &BTreeMap<(String, String, String), Vec<&HistoryRow>>) -> String {
    let lines: Vec<[String; 7]> = groups
        .values()
        .flatten()
        .map(|r| {
            let metric = r.metric.as_str();
            let versions = if r.comparison == DRIFT {
                format!("{} (A/A)", r.baseline_version)
            } else {
                format!("{} → {}", r.baseline_version, r.candidate_version)
            };
            [
                r.date.clone(),
                r.run_id.clone(),
                r.comparison.clone(),
                versions,
                format!(
                    "{} → {}",
                    value(metric, r.baseline_mean),
                    value(metric, r.candidate_mean)
                ),
                signed(metric, r.delta),
                r.verdict.clone(),
            ]
        })
        .collect();
    const HEADER: [&str; 7] = [
        "date",
        "run",
        "comparison",
        "versions",
        "baseline → candidate",
        "delta",
        "verdict",
    ];
    let mut widths = HEADER.map(|h| h.chars().count());
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let render = |cells: [&str; 7]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            // Numbers read best right-aligned.
            if i == 5 {
                let _ = write!(s, "  {}{cell}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {cell}{}", " ".repeat(pad));
            }
        }
        s.trim_end().to_owned()
    };
    let mut out = String::new();
    let mut line_iter = lines.iter();
    for ((task, host, metric), rows) in groups {
        let task = if task == crate::analysis::SUITE {
            "* (suite)"
        } else {
            task
        };
        let _ = writeln!(out, "task {task} · host {host} · {metric}");
        let _ = writeln!(out, "{}", render(HEADER));
        for r in rows {
            let cells = line_iter.next().expect("one line per row");
            let mut line = render(cells.each_ref().map(String::as_str));
            if r.comparison == DRIFT {
                if let Some(reference) = &r.reference_run_id {
                    let _ = write!(line, "  vs run {reference}");
                }
                if r.moved() {
                    line.push_str("  ← baseline moved");
                }
            }
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::table::tests::sample;
    use super::super::table::CANDIDATE;
    use super::*;

    #[test]
    fn the_trend_groups_by_task_keeps_history_order_and_marks_drift() {
        let mut tokens = sample("a", CANDIDATE, "t", "no_change");
        tokens.metric = "total_tokens".into();
        tokens.baseline_mean = Some(2565.4);
        tokens.candidate_mean = Some(2689.0);
        tokens.delta = Some(124.0);
        let rows = vec![
            sample("a", CANDIDATE, "t", "regression"),
            sample("a", CANDIDATE, "u", "no_change"),
            tokens,
            sample("bb", CANDIDATE, "t", "no_change"),
            sample("bb", DRIFT, "t", "regression"),
        ];
        let filter = TrendFilter {
            task: Some("t".into()),
            metric: Some("success".into()),
            host: None,
        };
        let groups = select(&rows, &filter);
        assert_eq!(groups.len(), 1);
        let text = table(&groups);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "task t · host sim · success");
        assert!(lines[1].contains("date") && lines[1].contains("verdict"));
        assert!(lines[2].contains(" a ") && lines[2].ends_with("regression"));
        assert!(lines[3].contains(" bb ") && lines[3].contains("1.4.0 → 1.5.0"));
        assert!(lines[4].contains("drift") && lines[4].contains("1.4.0 (A/A)"));
        assert!(lines[4].contains("-0.500"), "{}", lines[4]);
        assert!(
            lines[4].ends_with("vs run earlier  ← baseline moved"),
            "{text}"
        );
        let all = select(&rows, &TrendFilter::default());
        assert_eq!(all.len(), 3);
        assert!(table(&all).contains("2565 → 2689"));
        assert_eq!(value("total_tokens", Some(2565.4)), "2565");
        assert_eq!(signed("tool_calls", Some(0.25)), "+0.25");
    }
}
