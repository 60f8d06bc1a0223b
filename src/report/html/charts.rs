//! The charts of `report.html`, drawn as inline SVG: per-task success rates with their Wilson
//! intervals, and per-task means (tool calls, tokens) of each side as paired bars.

use std::fmt::Write;

use super::text::{escape, shorten};
use crate::analysis::{Comparison, SideOutcome, TaskOutcome};
use crate::config::Metric;
use crate::report::format;
use crate::stats::{wilson_interval, Proportion};

const WIDTH: f64 = 860.0;
const ROW: f64 = 26.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 22.0;
const RIGHT: f64 = 110.0;
const LABEL_CHARS: usize = 34;
pub const BASELINE_COLOUR: &str = "#4e79a7";
pub const CANDIDATE_COLOUR: &str = "#e15759";

/// The label of a task row: its id, and its host when the run has several.
fn label(c: &Comparison, t: &TaskOutcome) -> String {
    let several = c.tasks.iter().any(|o| o.host != t.host);
    if several {
        format!("{} · {}", t.task_id, t.host)
    } else {
        t.task_id.clone()
    }
}

/// The frame every chart shares: width, label column, axis with ticks and a legend.
struct Frame {
    left: f64,
    height: f64,
    max: f64,
}

impl Frame {
    fn new(c: &Comparison, max: f64) -> Self {
        let longest = c
            .tasks
            .iter()
            .map(|t| label(c, t).chars().count().min(LABEL_CHARS))
            .max()
            .unwrap_or(4);
        Self {
            left: (longest as f64 * 7.0 + 16.0).clamp(80.0, 260.0),
            height: TOP + ROW * c.tasks.len() as f64 + BOTTOM,
            max,
        }
    }

    fn x(&self, v: f64) -> f64 {
        self.left + (v / self.max).clamp(0.0, 1.0) * (WIDTH - self.left - RIGHT)
    }

    fn open(&self, out: &mut String, title: &str, ticks: &[(f64, String)]) {
        let _ = writeln!(
            out,
            "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 {WIDTH} {h}\" width=\"{WIDTH}\" \
             height=\"{h}\"><title>{}</title>",
            escape(title),
            h = self.height
        );
        legend(out);
        let bottom = self.height - BOTTOM;
        for (v, text) in ticks {
            let x = self.x(*v);
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{bottom}\"/>\
                 <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                bottom + 15.0,
                escape(text)
            );
        }
    }

    fn row_label(&self, out: &mut String, y: f64, text: &str) {
        let _ = writeln!(
            out,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"><title>{}</title>{}\
             </text>",
            self.left - 8.0,
            y + ROW / 2.0 + 4.0,
            escape(text),
            escape(&shorten(text, LABEL_CHARS))
        );
    }
}

fn legend(out: &mut String) {
    for (i, (name, colour)) in [
        ("baseline", BASELINE_COLOUR),
        ("candidate", CANDIDATE_COLOUR),
    ]
    .iter()
    .enumerate()
    {
        let x = 10.0 + 110.0 * i as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"8\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text \
             class=\"tick\" x=\"{}\" y=\"18\">{name}</text>",
            x + 17.0
        );
    }
}

/// Per task: each side's success rate with its Wilson interval at the run's confidence level.
pub fn success(c: &Comparison) -> String {
    let frame = Frame::new(c, 1.0);
    let mut out = String::new();
    let level = format::percent(1.0 - c.stats.alpha);
    frame.open(
        &mut out,
        &format!("Success rate per task with {level} Wilson intervals"),
        &[0.0, 0.25, 0.5, 0.75, 1.0].map(|v| (v, format::percent(v))),
    );
    for (i, t) in c.tasks.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        frame.row_label(&mut out, y, &label(c, t));
        for (k, (name, side, colour)) in [
            ("baseline", &t.baseline, BASELINE_COLOUR),
            ("candidate", &t.candidate, CANDIDATE_COLOUR),
        ]
        .into_iter()
        .enumerate()
        {
            rate_mark(
                &mut out,
                &frame,
                y + 8.0 + 10.0 * k as f64,
                name,
                side,
                colour,
                c.stats.alpha,
            );
        }
        let _ = writeln!(
            out,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{} → {}</text>",
            WIDTH - RIGHT + 10.0,
            y + ROW / 2.0 + 4.0,
            escape(&format::successes(&t.baseline)),
            escape(&format::successes(&t.candidate))
        );
    }
    out.push_str("</svg>\n");
    out
}

fn rate_mark(
    out: &mut String,
    frame: &Frame,
    y: f64,
    name: &str,
    side: &SideOutcome,
    colour: &str,
    alpha: f64,
) {
    let p = Proportion::new(u64::from(side.successes), u64::from(side.n));
    let (Ok(rate), Ok(ci)) = (p.rate(), wilson_interval(p, alpha)) else {
        return; // No episodes on this side: nothing to draw.
    };
    let (lo, hi, at) = (frame.x(ci.low), frame.x(ci.high), frame.x(rate));
    let _ = writeln!(
        out,
        "<g><title>{name}: {} = {}, interval {} – {}</title><line x1=\"{lo:.1}\" y1=\"{y:.1}\" \
         x2=\"{hi:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><line \
         x1=\"{lo:.1}\" y1=\"{:.1}\" x2=\"{lo:.1}\" y2=\"{:.1}\" stroke=\"{colour}\"/><line \
         x1=\"{hi:.1}\" y1=\"{:.1}\" x2=\"{hi:.1}\" y2=\"{:.1}\" stroke=\"{colour}\"/><circle \
         cx=\"{at:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/></g>",
        escape(&format::successes(side)),
        format::percent(rate),
        format::percent(ci.low),
        format::percent(ci.high),
        y - 3.0,
        y + 3.0,
        y - 3.0,
        y + 3.0,
    );
}

/// Per task: each side's mean of `metric` as a pair of bars.
pub fn means(c: &Comparison, metric: Metric, title: &str) -> String {
    let mean = |t: &TaskOutcome| -> [Option<f64>; 2] {
        c.task_rows(&t.task_id, &t.host)
            .find(|r| r.metric == metric && r.k.is_none())
            .map_or([None, None], |r| [r.baseline_mean, r.candidate_mean])
    };
    let top = c
        .tasks
        .iter()
        .flat_map(mean)
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let max = nice_max(top);
    let frame = Frame::new(c, max);
    let mut out = String::new();
    let ticks: Vec<(f64, String)> = (0..=4)
        .map(|i| {
            let v = max * f64::from(i) / 4.0;
            (v, tick(v))
        })
        .collect();
    frame.open(&mut out, title, &ticks);
    for (i, t) in c.tasks.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        frame.row_label(&mut out, y, &label(c, t));
        for (k, (name, v)) in ["baseline", "candidate"].iter().zip(mean(t)).enumerate() {
            let colour = if k == 0 {
                BASELINE_COLOUR
            } else {
                CANDIDATE_COLOUR
            };
            let by = y + 3.0 + 10.0 * k as f64;
            let Some(v) = v.filter(|v| v.is_finite()) else {
                continue;
            };
            let end = frame.x(v);
            let text = format::value(metric, Some(v));
            let _ = writeln!(
                out,
                "<g><title>{name}: mean {text}</title><rect x=\"{:.1}\" y=\"{by:.1}\" \
                 width=\"{:.1}\" height=\"9\" fill=\"{colour}\"/><text class=\"value\" \
                 x=\"{:.1}\" y=\"{:.1}\">{text}</text></g>",
                frame.left,
                (end - frame.left).max(0.5),
                end + 4.0,
                by + 8.0
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The smallest of 1, 2, 2.5, 5 × 10^k that is at least `v` (an axis end with round ticks).
fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let base = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * base)
        .find(|m| *m >= v)
        .unwrap_or(10.0 * base)
}

fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(0.83), 1.0);
        assert_eq!(nice_max(1.7), 2.0);
        assert_eq!(nice_max(2301.0), 2500.0);
        assert_eq!(nice_max(2600.0), 5000.0);
        assert_eq!(nice_max(10.0), 10.0);
        assert_eq!(tick(625.0), "625");
        assert_eq!(tick(0.25), "0.25");
    }

    #[test]
    fn charts_draw_a_mark_per_task_and_side_and_escape_names() {
        let mut cmp = super::super::page::tests::sample_comparison();
        let bars = means(&cmp, Metric::ToolCalls, "Mean tool calls");
        assert_eq!(
            bars.matches("<rect").count(),
            2 + 2 * cmp.tasks.len(),
            "legend + bars"
        );
        cmp.tasks[0].task_id = "<script>x</script>".into();
        let svg = success(&cmp);
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(!svg.contains("<script>"), "{svg}");
        let sides = cmp.tasks.iter().filter(|t| t.baseline.n > 0).count()
            + cmp.tasks.iter().filter(|t| t.candidate.n > 0).count();
        assert_eq!(svg.matches("<circle").count(), sides);
    }
}
