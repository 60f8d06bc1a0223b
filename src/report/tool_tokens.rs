//! The tool list's token cost beside the evaluation's token totals: what the list sent with
//! every model request cost on each side (`o200k_base`, as `run.json` records it), and per host
//! the input tokens split into requests and tokens per request, so that a rise caused by the
//! list can be told from one caused by more turns.

use crate::analysis::UsageTotal;
use crate::contract::token_diff::Counted;
use crate::rundir::RunInfo;

/// The lines under the "Tokens and cost" table; none when the run did not record the lists'
/// counts (runs from before they were recorded).
pub(super) fn lines(info: &RunInfo, usage: &[UsageTotal]) -> Vec<String> {
    let count = |tokens: &Option<std::collections::BTreeMap<String, u64>>| {
        tokens.as_ref()?.get("o200k_base").copied()
    };
    // The stale-list window's candidate trials were sent the baseline's list.
    let sent = match info.config.stale_list {
        true => &info.baseline.tool_tokens,
        false => &info.candidate.tool_tokens,
    };
    let (Some(before), Some(after)) = (count(&info.baseline.tool_tokens), count(sent)) else {
        return Vec::new();
    };
    let list = Counted::new(Some(before), Some(after));
    let window = match info.config.stale_list {
        true => " (the stale-list window: the candidate's trials were sent the baseline's list)",
        false => "",
    };
    let mut out = vec![format!(
        "Tool list sent with every model request (`o200k_base`, as the OpenAI chat `tools` \
         array): {before} → {after} tokens, {}{window}.",
        list.list_words()
    )];
    let hosts: Vec<&str> = {
        let mut h: Vec<&str> = usage.iter().map(|u| u.host.as_str()).collect();
        h.dedup();
        h
    };
    for host in hosts {
        let side = |name: &str| {
            (usage.iter()).find(|u| u.host == host && u.side.to_string() == name && u.requests > 0)
        };
        let (Some(b), Some(c)) = (side("baseline"), side("candidate")) else {
            continue;
        };
        let per = |u: &UsageTotal| u.input_tokens as f64 / u.requests as f64;
        let share = |b: f64, a: f64| match b > 0.0 {
            true => format!("{:+.1} %", (a - b) * 100.0 / b),
            false => "–".to_owned(),
        };
        let simulated = (info.hosts.iter()).any(|h| h.name == host && h.simulated);
        out.push(format!(
            "- `{host}`: input tokens {} ({} → {}); model requests {} → {} ({}); input tokens per \
             request {:.0} → {:.0} ({}){}",
            share(b.input_tokens as f64, c.input_tokens as f64),
            b.input_tokens,
            c.input_tokens,
            b.requests,
            c.requests,
            share(b.requests as f64, c.requests as f64),
            per(b),
            per(c),
            share(per(b), per(c)),
            match simulated {
                true => " (the simulated model counts its own tokens, not with `o200k_base`)",
                false => "",
            }
        ));
    }
    out
}
