//! The stale-list window in numbers (`run --stale-list`): per task and host, the candidate's
//! calls to tools it no longer lists (the model was offered the baseline's list), how the
//! candidate answered them, and the trials that failed on each side.

use std::collections::{BTreeMap, BTreeSet};

use crate::episode::{Episode, Side};

/// JSON-RPC's "invalid params", which MCP servers answer a call to an unknown tool with.
pub const INVALID_PARAMS: i64 = -32602;

/// How the candidate answered the calls to one tool it no longer lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GoneCalls {
    pub calls: u32,
    /// Answered with `-32602` (invalid params: the unknown tool).
    pub invalid_params: u32,
    /// Answered with another JSON-RPC error.
    pub other_codes: u32,
    /// Failed otherwise: an `isError` result, no answer in time, a server that failed.
    pub failed: u32,
    /// Answered as a tool result that is not an error: the candidate still serves the name.
    pub served: u32,
}

impl GoneCalls {
    fn add(&mut self, error_code: Option<i64>, is_error: bool) {
        self.calls += 1;
        match error_code {
            Some(INVALID_PARAMS) => self.invalid_params += 1,
            Some(_) => self.other_codes += 1,
            None if is_error => self.failed += 1,
            None => self.served += 1,
        }
    }

    fn merge(&mut self, other: &GoneCalls) {
        self.calls += other.calls;
        self.invalid_params += other.invalid_params;
        self.other_codes += other.other_codes;
        self.failed += other.failed;
        self.served += other.served;
    }
}

/// Trials of one side that ran (no infrastructure error), and how many of them failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trials {
    pub ran: u32,
    pub failed: u32,
}

/// One task on one host in the window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskWindow {
    pub task_id: String,
    pub host: String,
    /// The candidate's calls to tools it does not list, by tool.
    pub gone: BTreeMap<String, GoneCalls>,
    pub baseline: Trials,
    pub candidate: Trials,
}

impl TaskWindow {
    /// The calls to every gone tool, summed.
    pub fn gone_total(&self) -> GoneCalls {
        let mut total = GoneCalls::default();
        for calls in self.gone.values() {
            total.merge(calls);
        }
        total
    }
}

/// The window's counts over a run's model episodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StaleWindow {
    /// The tools the candidate lists: a call to any other name went to a gone tool.
    candidate_tools: BTreeSet<String>,
    tasks: BTreeMap<(String, String), TaskWindow>,
}

impl StaleWindow {
    /// An empty count against the candidate's tool names (run.json's `candidate.tools`).
    pub fn new(candidate_tools: impl IntoIterator<Item = String>) -> Self {
        Self {
            candidate_tools: candidate_tools.into_iter().collect(),
            tasks: BTreeMap::new(),
        }
    }

    /// Counts one episode of `side`'s (the side is the caller's to say: with `compare
    /// --against`, the baseline's come from another run). Call tasks and trials that ended in an
    /// infrastructure error say nothing of the window and are left out.
    pub fn add(&mut self, side: Side, e: &Episode) {
        if !e.kind.has_model() || e.infra_error.is_some() {
            return;
        }
        let task = (self.tasks)
            .entry((e.task_id.clone(), e.host.clone()))
            .or_insert_with(|| TaskWindow {
                task_id: e.task_id.clone(),
                host: e.host.clone(),
                ..TaskWindow::default()
            });
        let trials = match side {
            Side::Baseline => &mut task.baseline,
            Side::Candidate => &mut task.candidate,
        };
        trials.ran += 1;
        trials.failed += u32::from(!e.success);
        if side == Side::Baseline {
            return;
        }
        // The agent loop sends a server only names the model was offered (the baseline's): any
        // the candidate does not list is one it removed or renamed.
        let gone = (e.calls.iter()).filter(|c| !self.candidate_tools.contains(&c.tool));
        for call in gone {
            let calls = task.gone.entry(call.tool.clone()).or_default();
            calls.add(call.error_code, call.is_error);
        }
    }

    /// The tasks (with their hosts) whose candidate trials called a gone tool, in task order.
    pub fn hit(&self) -> impl Iterator<Item = &TaskWindow> {
        self.tasks.values().filter(|t| !t.gone.is_empty())
    }

    /// How many tasks × hosts made no call to a gone tool.
    pub fn untouched(&self) -> usize {
        self.tasks.values().filter(|t| t.gone.is_empty()).count()
    }

    /// Whether the episodes came from more than one host (the lines then name it).
    pub fn hosts(&self) -> usize {
        let hosts: BTreeSet<&str> = self.tasks.keys().map(|(_, h)| h.as_str()).collect();
        hosts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::ToolCallRecord;
    use crate::test_support::sample_episode;

    fn call(tool: &str, error_code: Option<i64>, is_error: bool) -> ToolCallRecord {
        ToolCallRecord {
            is_error,
            error_code,
            ..ToolCallRecord::made(0, tool, "{}")
        }
    }

    fn episode(task: &str, side: Side, success: bool, calls: Vec<ToolCallRecord>) -> Episode {
        let mut e = sample_episode(task, side, success);
        e.calls = calls;
        e
    }

    fn window() -> StaleWindow {
        StaleWindow::new(["fetch_issue", "list_projects"].map(String::from))
    }

    #[test]
    fn calls_to_names_the_candidate_no_longer_lists_are_counted_with_its_answers() {
        let mut w = window();
        let refused = || call("get_issue", Some(INVALID_PARAMS), true);
        for _ in 0..3 {
            w.add(Side::Baseline, &episode("t", Side::Baseline, true, vec![]));
            let calls = vec![refused(), call("list_projects", None, false), refused()];
            w.add(
                Side::Candidate,
                &episode("t", Side::Candidate, false, calls),
            );
        }
        let calls = vec![
            call("add_comment", Some(-32601), true),
            call("add_comment", None, true),
            call("add_comment", None, false),
        ];
        w.add(Side::Candidate, &episode("t", Side::Candidate, true, calls));
        let hit: Vec<&TaskWindow> = w.hit().collect();
        assert_eq!(hit.len(), 1);
        let t = hit[0];
        assert_eq!(
            t.gone["get_issue"],
            GoneCalls {
                calls: 6,
                invalid_params: 6,
                ..GoneCalls::default()
            }
        );
        assert_eq!(
            t.gone["add_comment"],
            GoneCalls {
                calls: 3,
                other_codes: 1,
                failed: 1,
                served: 1,
                ..GoneCalls::default()
            }
        );
        assert!(!t.gone.contains_key("list_projects"), "still listed");
        assert_eq!(
            (t.gone_total().calls, t.gone_total().invalid_params),
            (9, 6)
        );
        assert_eq!(t.candidate, Trials { ran: 4, failed: 3 });
        assert_eq!(t.baseline, Trials { ran: 3, failed: 0 });
    }

    #[test]
    fn infrastructure_errors_and_tasks_without_gone_calls_are_kept_apart() {
        let mut w = window();
        let mut broken = episode("t", Side::Candidate, false, vec![]);
        broken.calls = vec![call("get_issue", Some(INVALID_PARAMS), true)];
        broken.infra_error = Some("model down".into());
        w.add(Side::Candidate, &broken);
        let fine = vec![call("fetch_issue", None, false)];
        w.add(Side::Candidate, &episode("u", Side::Candidate, true, fine));
        assert_eq!(w.hit().count(), 0);
        assert_eq!(w.untouched(), 1, "the infrastructure error counted nothing");
        assert_eq!(w.hosts(), 1);
    }
}
