//! The tool-choice shift: per task and host, the first tool each side's model called, paired by
//! trial (baseline tool × candidate tool), and whether its distribution moved (the
//! Fisher–Freeman–Halton test on the side × tool table, Holm across a host's tasks). Information,
//! not a gate: a shift is shown also where success held.

use std::collections::BTreeMap;

use crate::stats::{freeman_halton, p_adjusted, Adjustment, StatsError};

/// How an episode with no tool call is named in the tables.
pub const NO_CALL: &str = "(none)";

/// What the shift reads of one episode of a model's task.
#[derive(Debug, Clone, Copy)]
pub struct FirstCall<'a> {
    pub task_id: &'a str,
    pub host: &'a str,
    /// True for the baseline's episode.
    pub baseline: bool,
    pub trial: u32,
    /// `None`: the episode called no tool.
    pub first_tool: Option<&'a str>,
}

/// One task × host: its paired table and test.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskShift {
    pub task_id: String,
    pub host: String,
    /// (baseline's first tool, candidate's first tool) → paired trials; the diagonal included.
    pub pairs: BTreeMap<(String, String), u32>,
    pub p: f64,
    pub p_holm: f64,
    /// Significant after Holm at `alpha`.
    pub shifted: bool,
}

impl TaskShift {
    /// The move that took the most paired trials, in words: `find_issues took 10 of
    /// search_issues' 10 first calls`; from or to no call, `find_issues came first in 4 of the 10
    /// trials that called no tool`, `3 of get_issue's 3 first calls became no call`; `None` when
    /// no first call moved.
    pub fn words(&self) -> Option<String> {
        let ((from, to), n) = (self.pairs.iter())
            .filter(|((from, to), _)| from != to)
            .max_by_key(|(pair, n)| (**n, std::cmp::Reverse((*pair).clone())))?;
        let of_from: u32 = (self.pairs.iter())
            .filter(|((f, _), _)| f == from)
            .map(|(_, n)| n)
            .sum();
        let owner = match from.ends_with('s') {
            true => format!("{from}'"),
            false => format!("{from}'s"),
        };
        Some(match (from.as_str(), to.as_str()) {
            (NO_CALL, _) => {
                format!("{to} came first in {n} of the {of_from} trials that called no tool")
            }
            (_, NO_CALL) => format!("{n} of {owner} {of_from} first calls became no call"),
            _ => format!("{to} took {n} of {owner} {of_from} first calls"),
        })
    }
}

/// Every call one side's model made in a task's episodes, per tool: descriptive only, shown
/// beside the tested first call (a tool taken first may still be called later, or the other way).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTally {
    /// tool → (calls, the sum of their positions in their episodes: 0 for a first call).
    tools: BTreeMap<String, (u32, usize)>,
}

impl CallTally {
    /// Adds one episode's calls: `tools_called`, the tools in call order, comma-separated
    /// (empty: no call).
    pub fn add(&mut self, tools_called: &str) {
        let calls = tools_called.split(',').filter(|t| !t.is_empty());
        for (at, tool) in calls.enumerate() {
            let entry = self.tools.entry(tool.to_owned()).or_default();
            entry.0 += 1;
            entry.1 += at;
        }
    }

    /// Each tool with its calls, the most called first; on a tie the one called earlier in its
    /// episodes on average (`search_issues` before the `get_issue` that follows it), then by
    /// name. Empty when the side called no tool.
    pub fn ranked(&self) -> Vec<(&str, u32)> {
        let mut tools: Vec<(&String, &(u32, usize))> = self.tools.iter().collect();
        // Equal counts: the smaller sum of positions is the earlier mean position.
        tools.sort_by_key(|(name, (n, at))| (std::cmp::Reverse(*n), *at, *name));
        tools
            .into_iter()
            .map(|(t, (n, _))| (t.as_str(), *n))
            .collect()
    }
}

/// A comparison's tool choice: every task's tested shift of the first call, and each side's
/// calls of the task (all of them) beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolShiftFacts {
    pub shifts: Vec<TaskShift>,
    /// (task, host) → [baseline, candidate] calls, of every episode that counts (a model task's,
    /// not ended by an infrastructure error), paired or not.
    pub calls: BTreeMap<(String, String), [CallTally; 2]>,
}

impl ToolShiftFacts {
    /// The tasks whose first call shifted (significant after Holm), in the shifts' order.
    pub fn shifted(&self) -> impl Iterator<Item = &TaskShift> {
        self.shifts.iter().filter(|s| s.shifted)
    }

    /// Both sides' calls of `task` on `host`.
    pub fn calls_of(&self, task: &str, host: &str) -> Option<&[CallTally; 2]> {
        self.calls.get(&(task.to_owned(), host.to_owned()))
    }
}

/// The shift of every task × host with paired trials (both sides ran the trial), tested and
/// Holm-adjusted across each host's tasks at `alpha`. Sampled p-values (huge tables) draw from
/// `seed`.
pub fn tool_shift<'a>(
    calls: impl IntoIterator<Item = FirstCall<'a>>,
    alpha: f64,
    seed: u64,
) -> Result<Vec<TaskShift>, StatsError> {
    // (host, task) → trial → [baseline, candidate] first tool.
    type Sides<'a> = [Option<Option<&'a str>>; 2];
    let mut trials: BTreeMap<(&str, &str), BTreeMap<u32, Sides<'a>>> = BTreeMap::new();
    for c in calls {
        let slot = trials.entry((c.host, c.task_id)).or_default();
        slot.entry(c.trial).or_default()[usize::from(!c.baseline)] = Some(c.first_tool);
    }
    let mut out = Vec::new();
    for ((host, task), by_trial) in trials {
        let mut pairs: BTreeMap<(String, String), u32> = BTreeMap::new();
        for sides in by_trial.values() {
            if let [Some(b), Some(c)] = sides {
                let name = |t: &Option<&str>| t.unwrap_or(NO_CALL).to_owned();
                *pairs.entry((name(b), name(c))).or_default() += 1;
            }
        }
        if pairs.is_empty() {
            continue;
        }
        let p = freeman_halton(&side_by_tool(&pairs), seed).p;
        out.push(TaskShift {
            task_id: task.to_owned(),
            host: host.to_owned(),
            pairs,
            p,
            p_holm: p,
            shifted: false,
        });
    }
    holm_per_host(&mut out, alpha)?;
    Ok(out)
}

/// The side × tool table of the paired trials: one (baseline, candidate) count per tool.
fn side_by_tool(pairs: &BTreeMap<(String, String), u32>) -> Vec<(u64, u64)> {
    let mut tools: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for ((b, c), n) in pairs {
        tools.entry(b).or_default().0 += u64::from(*n);
        tools.entry(c).or_default().1 += u64::from(*n);
    }
    tools.into_values().collect()
}

fn holm_per_host(shifts: &mut [TaskShift], alpha: f64) -> Result<(), StatsError> {
    let hosts: Vec<String> = {
        let mut h: Vec<String> = shifts.iter().map(|s| s.host.clone()).collect();
        h.dedup();
        h
    };
    for host in hosts {
        let at: Vec<usize> = (0..shifts.len())
            .filter(|i| shifts[*i].host == host)
            .collect();
        let ps: Vec<Option<f64>> = at.iter().map(|i| Some(shifts[*i].p)).collect();
        let adjusted = p_adjusted(&ps, Adjustment::Holm)?;
        for (i, adjusted) in at.into_iter().zip(adjusted) {
            let s = &mut shifts[i];
            s.p_holm = adjusted.unwrap_or(s.p);
            s.shifted = s.p_holm <= alpha;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` paired trials of `task` from `from` to `to`, starting at trial `first`.
    fn moved<'a>(
        task: &'a str,
        from: Option<&'a str>,
        to: Option<&'a str>,
        first: u32,
        n: u32,
    ) -> Vec<FirstCall<'a>> {
        (first..first + n)
            .flat_map(|trial| {
                [(true, from), (false, to)].map(|(baseline, first_tool)| FirstCall {
                    task_id: task,
                    host: "sim",
                    baseline,
                    trial,
                    first_tool,
                })
            })
            .collect()
    }

    #[test]
    fn a_tool_that_takes_every_first_call_is_a_shift_and_a_steady_task_is_not() {
        let mut calls = moved("lookup", Some("search_issues"), Some("find_issues"), 0, 10);
        calls.extend(moved("show", Some("get_issue"), Some("get_issue"), 0, 10));
        calls.extend(moved(
            "refunds",
            Some("search_issues"),
            Some("list_projects"),
            0,
            9,
        ));
        calls.extend(moved(
            "refunds",
            Some("search_issues"),
            Some("search_issues"),
            9,
            1,
        ));
        calls.extend(moved("chat", None, None, 0, 10));
        let shifts = tool_shift(calls, 0.05, 1).unwrap();
        let by: BTreeMap<&str, &TaskShift> =
            shifts.iter().map(|s| (s.task_id.as_str(), s)).collect();
        let lookup = by["lookup"];
        // The side × tool table is 10/0 against 0/10: R's fisher.test gives 1.0825088224469028e-05.
        assert!(
            (lookup.p - 1.0825088224469028e-05).abs() < 1e-15,
            "{lookup:?}"
        );
        assert!(lookup.shifted);
        assert_eq!(
            lookup.words().unwrap(),
            "find_issues took 10 of search_issues' 10 first calls"
        );
        assert_eq!(
            by["refunds"].pairs[&("search_issues".into(), "list_projects".into())],
            9
        );
        assert!(by["refunds"].shifted, "{:?}", by["refunds"]);
        assert_eq!((by["show"].p, by["show"].shifted), (1.0, false));
        assert_eq!(by["show"].words(), None);
        assert_eq!(by["chat"].pairs[&(NO_CALL.into(), NO_CALL.into())], 10);
        // Holm over the host's four tasks: the smallest p times 4.
        assert!((lookup.p_holm - 4.0 * lookup.p).abs() < 1e-15);
    }

    #[test]
    fn calls_rank_by_count_then_by_how_early_they_were_called() {
        let mut tally = CallTally::default();
        for calls in [
            "search_issues,get_issue",
            "search_issues,get_issue",
            "",
            "get_issue",
        ] {
            tally.add(calls);
        }
        tally.add("list_projects,search_issues,search_issues,get_issue");
        assert_eq!(
            tally.ranked(),
            [("search_issues", 4), ("get_issue", 4), ("list_projects", 1)]
        );
        assert!(CallTally::default().ranked().is_empty());
    }

    #[test]
    fn only_paired_trials_count_and_a_move_from_or_to_no_call_says_so() {
        let mut calls = moved("t", Some("get_issue"), None, 0, 3);
        // A baseline trial without its candidate is left out.
        calls.push(FirstCall {
            task_id: "t",
            host: "sim",
            baseline: true,
            trial: 7,
            first_tool: Some("get_issue"),
        });
        let shifts = tool_shift(calls, 0.05, 1).unwrap();
        assert_eq!(shifts[0].pairs.values().sum::<u32>(), 3);
        assert_eq!(
            shifts[0].words().unwrap(),
            "3 of get_issue's 3 first calls became no call"
        );
        let back = tool_shift(moved("t", None, Some("find_issues"), 0, 4), 0.05, 1).unwrap();
        assert_eq!(
            back[0].words().unwrap(),
            "find_issues came first in 4 of the 4 trials that called no tool"
        );
    }
}
