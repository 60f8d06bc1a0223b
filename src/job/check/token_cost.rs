//! The contract stage's token lines: what the candidate's tool list costs against the
//! baseline's (list, instructions, per tool), its costliest tools, and the case that fails when
//! the list grew past `max_tool_tokens_increase`.

use super::Outcome;
use crate::config::TokenIncrease;
use crate::contract::token_diff::TokenDiff;
use crate::contract::tokens::{Encoding, TokenCounts};
use crate::contract::{Diff, Snapshot};
use crate::rundir::Case;

/// Tools shown among the costliest and among the largest changes.
const TOP: usize = 5;

/// What the token lines came to: the list's change in words (`tool list +39 tokens (+6.6 %)`,
/// with the limit when it was passed) and whether it failed the threshold.
pub(super) struct Cost {
    pub words: String,
    pub failed: bool,
}

/// Adds the token lines of one profile's diff to the stage, and the threshold's case when one
/// is set.
pub(super) fn report(
    diff: &Diff,
    cand: &Snapshot,
    label: &str,
    limit: Option<TokenIncrease>,
    out: &mut Outcome,
) -> Option<Cost> {
    let tokens = diff.tokens.as_ref()?;
    let lines = tokens.lines(0);
    out.line(format!("- {label}: {}", lines.first()?));
    for line in lines
        .iter()
        .skip(1)
        .filter(|l| !l.starts_with("tools whose"))
    {
        out.line(format!("  - {line}"));
    }
    out.line(format!(
        "  - costliest tools (o200k_base): {}",
        costliest(cand)
    ));
    if !tokens.tools.is_empty() {
        out.line(format!(
            "  - largest changes (o200k_base): {}",
            largest(tokens)
        ));
    }
    let failed = limit.is_some_and(|limit| threshold(tokens, label, limit, out));
    let mut words = tokens.list_words(Encoding::O200k)?;
    if let (true, Some(limit)) = (failed, limit) {
        words.push_str(&format!(", past max_tool_tokens_increase {limit}"));
    }
    Some(Cost { words, failed })
}

fn costliest(cand: &Snapshot) -> String {
    let counts = TokenCounts::of(cand);
    let mut tools: Vec<(&str, u64)> = (counts.tools.iter())
        .map(|t| {
            (
                t.name.as_str(),
                counts.tool(&t.name, Encoding::O200k).unwrap_or(0),
            )
        })
        .collect();
    if tools.is_empty() {
        return "none (no tools)".to_owned();
    }
    tools.sort_by_key(|(name, n)| (std::cmp::Reverse(*n), *name));
    let shown: Vec<String> = (tools.iter().take(TOP))
        .map(|(name, n)| format!("`{name}` {n}"))
        .collect();
    format!(
        "{} of {} in the list",
        shown.join(", "),
        counts.list_in(Encoding::O200k)
    )
}

fn largest(tokens: &TokenDiff) -> String {
    let shown: Vec<String> = (tokens.tools.iter().take(TOP))
        .filter_map(|t| {
            Some(format!(
                "`{}` {}",
                t.name,
                t.tokens.get("o200k_base")?.words()
            ))
        })
        .collect();
    match tokens.tools.len().saturating_sub(TOP) {
        0 => shown.join("; "),
        n => format!("{}; {n} more in diff.json", shown.join("; ")),
    }
}

/// The threshold's case; true when it failed.
fn threshold(tokens: &TokenDiff, label: &str, limit: TokenIncrease, out: &mut Outcome) -> bool {
    let Some(list) = tokens.list_in(Encoding::O200k) else {
        return false;
    };
    let (before, after) = (list.before.unwrap_or(0), list.after.unwrap_or(0));
    let name = format!("{label}: tool list tokens within max_tool_tokens_increase {limit}");
    if !limit.exceeded(before, after) {
        out.case(Case::passed(name));
        return false;
    }
    let share = list
        .percent
        .map_or(String::new(), |p| format!(", {p:+.1} %"));
    let why = format!(
        "the tool list grew by {} o200k_base tokens ({before} → {after}{share}), past \
         max_tool_tokens_increase {limit}",
        list.change
    );
    out.line(format!("  - **{why}**"));
    out.case(Case::failed(name, why));
    true
}
