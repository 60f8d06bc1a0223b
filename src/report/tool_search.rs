//! Tool search in words (`tool_search`): per task and host, the trials whose search ranked one
//! of the task's expected tools within k (found@k), on each side, with the row's verdict, for
//! summary.md. A drop is a description that no longer leads a search to its tool: the model
//! cannot call what it never finds.

use std::fmt::Write;

use crate::analysis::{Comparison, SideOutcome};
use crate::config::Metric;

/// `found/n` of a side, `–` where it recorded none.
fn found(side: &SideOutcome) -> String {
    match side.found_at_k {
        Some((found, n)) => format!("{found}/{n}"),
        None => "–".to_owned(),
    }
}

/// The summary's section (nothing for a run without tool search).
pub fn markdown(out: &mut String, c: &Comparison) {
    let tasks: Vec<_> = (c.tasks.iter())
        .filter(|t| t.baseline.found_at_k.or(t.candidate.found_at_k).is_some())
        .collect();
    if tasks.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Tool search\n\nThe models searched for the tools they needed (`tool_search`): \
         found@k counts the trials whose search ranked one of the task's expected tools within k \
         (`found_at_k`). A drop means the candidate's names, titles or descriptions no longer \
         lead a search to the tool; it is gated like success.\n\n\
         | task | host | found@k baseline | found@k candidate | verdict |\n\
         | --- | --- | --- | --- | --- |"
    );
    for t in tasks {
        let row = (c.task_rows(&t.task_id, &t.host)).find(|r| r.metric == Metric::FoundAtK);
        let verdict = row.map_or("inconclusive", |r| r.verdict.as_str());
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {verdict} |",
            t.task_id,
            t.host,
            found(&t.baseline),
            found(&t.candidate)
        );
    }
    let _ = writeln!(out);
}
