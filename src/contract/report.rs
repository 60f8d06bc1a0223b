//! A diff as the user sees it: both sides labelled, and a table with breaking changes first.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use super::model::{Change, Diff, Side, Snapshot};

/// Diffs two snapshots and labels the sides (`label`, else the server's version).
pub fn diff_snapshots(
    baseline: &Snapshot,
    candidate: &Snapshot,
    (base_dir, base_label): (&Path, Option<&str>),
    (cand_dir, cand_label): (&Path, Option<&str>),
) -> Diff {
    let side = |s: &Snapshot, dir: &Path, label: Option<&str>| {
        let info = s.server.get("serverInfo").cloned().unwrap_or(Value::Null);
        let version = info.get("version").and_then(Value::as_str).unwrap_or("?");
        Side {
            label: label.unwrap_or(version).to_owned(),
            snapshot: dir.display().to_string(),
            server_info: info,
        }
    };
    Diff {
        baseline: side(baseline, base_dir, base_label),
        candidate: side(candidate, cand_dir, cand_label),
        changes: super::diff::diff(baseline, candidate),
    }
}

/// The table: breaking changes first (the diff's order), then the rest; one line each.
pub fn diff_table(diff: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "contract diff {} → {}: {} change(s), {} breaking clients, {} affecting models",
        diff.baseline.label,
        diff.candidate.label,
        diff.changes.len(),
        diff.changes.iter().filter(|c| c.breaks_clients).count(),
        diff.changes.iter().filter(|c| c.affects_models).count(),
    );
    if diff.changes.is_empty() {
        return out;
    }
    let rows: Vec<[String; 4]> = diff.changes.iter().map(row).collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0).max(8), width(1).max(4), width(2).max(6));
    let _ = writeln!(
        out,
        "{:w0$}  {:w1$}  {:w2$}  what",
        "breaks", "kind", "where"
    );
    for r in &rows {
        let _ = writeln!(out, "{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    out
}

fn row(c: &Change) -> [String; 4] {
    let flags = match (c.breaks_clients, c.affects_models) {
        (true, true) => "BREAKING+model",
        (true, false) => "BREAKING",
        (false, true) => "model",
        (false, false) => "-",
    };
    let kind = c.kind.as_str();
    let place = match &c.path {
        Some(path) => format!("{} {} {path}", c.list, c.name),
        None => format!("{} {}", c.list, c.name),
    };
    let what = c.note.clone().unwrap_or_else(|| values(c));
    [flags.to_owned(), kind, place, what]
}

/// `before → after`, shortened.
fn values(c: &Change) -> String {
    let show = |v: &Option<Value>| match v {
        None => "–".to_owned(),
        Some(Value::String(s)) => short(s),
        Some(other) => short(&other.to_string()),
    };
    if c.before.is_none() && c.after.is_none() {
        return String::new();
    }
    format!("{} → {}", show(&c.before), show(&c.after))
}

fn short(s: &str) -> String {
    let one_line = s.replace('\n', " ");
    match one_line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}
