//! The console's closing table: per task and host, baseline against candidate.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::episode::{Episode, Side};

#[derive(Default)]
struct SideStats {
    n: u32,
    successes: u32,
    infra: u32,
    tool_calls: u64,
    tokens: u64,
}

impl SideStats {
    fn add(&mut self, e: &Episode) {
        if e.infra_error.is_some() {
            self.infra += 1;
            return;
        }
        self.n += 1;
        self.successes += e.success as u32;
        self.tool_calls += e.tool_calls as u64;
        self.tokens += e.total_tokens;
    }

    fn success(&self) -> String {
        let infra = if self.infra > 0 {
            format!(" (+{} infra)", self.infra)
        } else {
            String::new()
        };
        format!("{}/{}{infra}", self.successes, self.n)
    }

    fn mean(&self, total: u64) -> String {
        if self.n == 0 {
            "-".into()
        } else {
            format!("{:.1}", total as f64 / self.n as f64)
        }
    }
}

/// A plain-text table: task, host, success (b → c), mean tool calls (b → c), mean tokens (b → c).
/// Rows whose success differs between the sides are marked with `*`.
pub fn summary_table(episodes: &[Episode]) -> String {
    let mut rows: BTreeMap<(&str, &str), [SideStats; 2]> = BTreeMap::new();
    for e in episodes {
        let stats = rows.entry((&e.task_id, &e.host)).or_default();
        stats[matches!(e.side, Side::Candidate) as usize].add(e);
    }
    let task_w = rows.keys().map(|(t, _)| t.len()).max().unwrap_or(4).max(4);
    let host_w = rows.keys().map(|(_, h)| h.len()).max().unwrap_or(4).max(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  {:task_w$}  {:host_w$}  {:>21}  {:>13}  {:>17}",
        "task", "host", "success  base → cand", "calls  b → c", "tokens  b → c"
    );
    for ((task, host), [b, c]) in &rows {
        let moved = b.n > 0 && c.n > 0 && b.successes * c.n != c.successes * b.n;
        let _ = writeln!(
            out,
            "{} {:task_w$}  {:host_w$}  {:>10} → {:<8}  {:>5} → {:<5}  {:>7} → {:<7}",
            if moved { '*' } else { ' ' },
            task,
            host,
            b.success(),
            c.success(),
            b.mean(b.tool_calls),
            c.mean(c.tool_calls),
            b.mean(b.tokens),
            c.mean(c.tokens),
        );
    }
    out
}
