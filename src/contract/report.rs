//! A diff as the user sees it: both sides labelled, the changes counted per kind, and a table
//! of the changes grouped (breaking first), one line per group.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use super::group::{counts_line, group, Group};
use super::model::{Diff, Side, Snapshot};
use super::token_diff::TokenDiff;
use super::tokens::TokenCounts;
use super::versions::{identity, labelled, shown, sides};

/// Diffs two snapshots and labels the sides (`label`, else the server's version, with what was
/// snapshotted beside it when the specs recorded in `server.json` differ, since an old Python
/// server reports its SDK's version; when both report the same version, with the spec or else
/// the snapshot directory beside it).
pub fn diff_snapshots(
    baseline: &Snapshot,
    candidate: &Snapshot,
    (base_dir, base_label): (&Path, Option<&str>),
    (cand_dir, cand_label): (&Path, Option<&str>),
) -> Diff {
    let info = |s: &Snapshot| s.server.get("serverInfo").cloned().unwrap_or(Value::Null);
    let version = |info: &Value| {
        let v = info.get("version").and_then(Value::as_str).unwrap_or("?");
        v.to_owned()
    };
    let recorded = |s: &Snapshot| s.server.get("spec").and_then(Value::as_str).map(identity);
    let spec = |s: &Snapshot, dir: &Path| recorded(s).unwrap_or_else(|| dir.display().to_string());
    let specs_differ = matches!(
        (recorded(baseline), recorded(candidate)),
        (Some(b), Some(c)) if b != c
    );
    let (base_info, cand_info) = (info(baseline), info(candidate));
    let base = (version(&base_info), spec(baseline, base_dir));
    let cand = (version(&cand_info), spec(candidate, cand_dir));
    let label = |given: Option<&str>, own: &(String, String), other: &(String, String)| match given
    {
        Some(label) => label.to_owned(),
        None if own.0 == "?" => own.0.clone(),
        None if specs_differ => format!("{} ({})", own.0, shown(&own.1, &other.1)),
        None => labelled(&own.0, &own.1, &other.0, &other.1),
    };
    let (base_counts, base_from) = TokenCounts::stored_or_computed(base_dir, baseline);
    let (cand_counts, cand_from) = TokenCounts::stored_or_computed(cand_dir, candidate);
    Diff {
        baseline: Side {
            label: label(base_label, &base, &cand),
            snapshot: base_dir.display().to_string(),
            server_info: base_info,
        },
        candidate: Side {
            label: label(cand_label, &cand, &base),
            snapshot: cand_dir.display().to_string(),
            server_info: cand_info,
        },
        changes: super::diff::diff(baseline, candidate),
        tokens: Some(TokenDiff::of(
            (&base_counts, base_from),
            (&cand_counts, cand_from),
        )),
    }
}

/// The header line, the counts per kind, and the table: one line per group of changes
/// (breaking first, the diff's order); then the token cost of the tool list on both sides.
pub fn diff_table(diff: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "contract diff {}: {} change(s), {} breaking clients, {} affecting models",
        sides(diff),
        diff.changes.len(),
        diff.changes.iter().filter(|c| c.breaks_clients).count(),
        diff.changes.iter().filter(|c| c.affects_models).count(),
    );
    if diff.changes.is_empty() {
        tokens(diff, &mut out);
        return out;
    }
    let _ = writeln!(out, "per kind: {}", counts_line(&diff.changes));
    let rows: Vec<[String; 4]> = group(&diff.changes).iter().map(row).collect();
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
    tokens(diff, &mut out);
    out
}

/// Per-tool changes shown under the table; `diff.json` has them all.
const TOOLS_SHOWN: usize = 5;

fn tokens(diff: &Diff, out: &mut String) {
    for line in diff.tokens.iter().flat_map(|t| t.lines(TOOLS_SHOWN)) {
        let _ = writeln!(out, "{line}");
    }
}

/// `BREAKING+model`, `BREAKING`, `model` or `-`.
pub fn flags(breaks_clients: bool, affects_models: bool) -> &'static str {
    match (breaks_clients, affects_models) {
        (true, true) => "BREAKING+model",
        (true, false) => "BREAKING",
        (false, true) => "model",
        (false, false) => "-",
    }
}

fn row(g: &Group) -> [String; 4] {
    let kind = format!("{}{}", g.times(), g.kind.as_str());
    let place = match &g.path {
        Some(path) => format!("{} {} {path}", g.list, g.name),
        None => format!("{} {}", g.list, g.name),
    };
    let flags = flags(g.breaks_clients, g.affects_models).to_owned();
    [flags, kind, place, g.what()]
}
