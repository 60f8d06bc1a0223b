//! Why a run may have measured nothing, read from its comparison before its verdict is shown: a
//! baseline that failed every trial of a task, tasks that failed every trial on both sides, a
//! host that made no structured tool call or wrote its calls as text, a server that failed on one
//! side.

use super::{Comparison, TaskOutcome};

/// A task × host whose named side(s) failed every trial, with the first (most common) failure.
#[derive(Debug, Clone, PartialEq)]
pub struct NeverPassed {
    pub task_id: String,
    pub host: String,
    /// `0/8`-style counts of each side.
    pub baseline: (u32, u32),
    pub candidate: (u32, u32),
    /// The baseline's most common failure (error text or failed check).
    pub failure: String,
}

/// A model host whose trials of tool tasks made no structured tool call, or whose answers wrote
/// tool calls as text.
#[derive(Debug, Clone, PartialEq)]
pub struct SilentHost {
    pub host: String,
    /// Trials of `kind: tool` tasks that ran, and how many of them called a tool.
    pub tool_trials: u64,
    pub with_calls: u64,
    /// Trials whose answers carried a tool call written as text, and an excerpt of the first.
    pub text_calls: u64,
    pub excerpt: Option<String>,
    /// Tool calls made, and how many of them were written as text and made by the host
    /// (`recover_text_calls`).
    pub calls: u64,
    pub recovered: u64,
}

/// Trials of one side of one task × host whose own server failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFailures {
    pub task_id: String,
    pub host: String,
    pub side: crate::episode::Side,
    pub trials: u32,
    /// Of the trials the side ran (`n`).
    pub of: u32,
    /// The most common reason: "candidate server failed during tools/call `x`: …".
    pub error: String,
}

/// Infrastructure errors of one host and side (the model provider, the network, a server that
/// failed on both sides), left out of the statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct InfraErrors {
    pub host: String,
    pub side: crate::episode::Side,
    pub count: u64,
    /// The first one's text.
    pub first: String,
}

/// Tool calls of one host and side that a replay server answered without a recording of them
/// (by its `unmatched` policy): how much of the run was not replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayGaps {
    pub host: String,
    pub side: crate::episode::Side,
    pub unmatched: u64,
    /// Of the side's tool calls.
    pub calls: u64,
}

/// What a run's comparison says about whether it measured anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
    /// Tasks the baseline failed on every trial while the candidate passed some.
    pub baseline_failed: Vec<NeverPassed>,
    /// Tasks that failed every trial on both sides.
    pub both_failed: Vec<NeverPassed>,
    /// Task × host pairs that ran on the baseline (the denominator of "N of M tasks").
    pub tasks: usize,
    pub silent_hosts: Vec<SilentHost>,
    pub server_failures: Vec<ServerFailures>,
    pub infra: Vec<InfraErrors>,
    pub replay_gaps: Vec<ReplayGaps>,
}

impl Diagnosis {
    pub fn of(c: &Comparison) -> Self {
        let mut d = Diagnosis::default();
        for t in &c.tasks {
            if t.baseline.n == 0 {
                continue;
            }
            d.tasks += 1;
            if let Some(never) = never_passed(t) {
                match t.candidate.successes {
                    0 if t.candidate.n > 0 => d.both_failed.push(never),
                    _ => d.baseline_failed.push(never),
                }
            }
            for (side, outcome) in [
                (crate::episode::Side::Baseline, &t.baseline),
                (crate::episode::Side::Candidate, &t.candidate),
            ] {
                if outcome.server_errors == 0 {
                    continue;
                }
                let error = (outcome.failures.iter())
                    .find(|(why, _)| why.contains(" server failed during "))
                    .map(|(why, _)| why.clone())
                    .unwrap_or_default();
                d.server_failures.push(ServerFailures {
                    task_id: t.task_id.clone(),
                    host: t.host.clone(),
                    side,
                    trials: outcome.server_errors,
                    of: outcome.n,
                    error,
                });
            }
        }
        d.silent_hosts = silent_hosts(c);
        d.infra = (c.usage.iter())
            .filter(|u| u.infra_errors > 0)
            .map(|u| InfraErrors {
                host: u.host.clone(),
                side: u.side,
                count: u.infra_errors,
                first: u.infra_error.clone().unwrap_or_default(),
            })
            .collect();
        d.replay_gaps = (c.usage.iter())
            .filter(|u| u.replay_unmatched > 0)
            .map(|u| ReplayGaps {
                host: u.host.clone(),
                side: u.side,
                unmatched: u.replay_unmatched,
                calls: u.tool_calls,
            })
            .collect();
        d
    }

    /// Whether there is anything to say.
    pub fn is_empty(&self) -> bool {
        self.baseline_failed.is_empty()
            && self.both_failed.is_empty()
            && self.silent_hosts.is_empty()
            && self.server_failures.is_empty()
            && self.infra.is_empty()
            && self.replay_gaps.is_empty()
    }

    /// Whether the baseline failed every trial of this task × host (an "improvement" there says
    /// only that the candidate passed where the baseline could not).
    pub fn baseline_never_passed(t: &TaskOutcome) -> bool {
        t.baseline.n > 0 && t.baseline.successes == 0
    }
}

/// The task's baseline failed every trial: its most common failure.
fn never_passed(t: &TaskOutcome) -> Option<NeverPassed> {
    if !Diagnosis::baseline_never_passed(t) {
        return None;
    }
    let failure = (t.baseline.failures.first())
        .map(|(why, _)| why.clone())
        .unwrap_or_default();
    Some(NeverPassed {
        task_id: t.task_id.clone(),
        host: t.host.clone(),
        baseline: (t.baseline.successes, t.baseline.n),
        candidate: (t.candidate.successes, t.candidate.n),
        failure,
    })
}

/// Model hosts that ran tool tasks without a single structured tool call, or that wrote tool
/// calls as text, over both sides.
fn silent_hosts(c: &Comparison) -> Vec<SilentHost> {
    let mut hosts: Vec<SilentHost> = Vec::new();
    for u in &c.usage {
        let i = match hosts.iter().position(|h| h.host == u.host) {
            Some(i) => i,
            None => {
                hosts.push(SilentHost {
                    host: u.host.clone(),
                    tool_trials: 0,
                    with_calls: 0,
                    text_calls: 0,
                    excerpt: None,
                    calls: 0,
                    recovered: 0,
                });
                hosts.len() - 1
            }
        };
        let h = &mut hosts[i];
        h.tool_trials += u.tool_task_trials;
        h.with_calls += u.tool_task_trials_with_calls;
        h.text_calls += u.text_call_trials;
        h.calls += u.tool_calls;
        h.recovered += u.recovered_calls;
        if h.excerpt.is_none() {
            h.excerpt.clone_from(&u.text_call);
        }
    }
    hosts.retain(|h| (h.tool_trials > 0 && h.with_calls == 0) || h.text_calls > 0);
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Collector;
    use crate::episode::Side;
    use crate::test_support::{sample_episode, sample_info};

    fn comparison(episodes: &[crate::episode::Episode]) -> Comparison {
        let info = sample_info();
        let mut collector = Collector::default();
        for e in episodes {
            collector.add(e.side, e);
        }
        collector.comparison(&info.config.stats, 1).unwrap()
    }

    #[test]
    fn a_baseline_that_failed_every_trial_is_named_with_its_failure() {
        let mut eps = Vec::new();
        for trial in 0..3 {
            let mut b = sample_episode("read", Side::Baseline, false);
            b.trial = trial;
            b.grade.checks = vec![crate::grade::Check {
                grader: "is_error".into(),
                passed: false,
                explanation: "expected no error, got Error: Access denied".into(),
                turn: None,
            }];
            let mut c = sample_episode("read", Side::Candidate, true);
            c.trial = trial;
            eps.extend([b, c]);
            for side in Side::BOTH {
                let mut both = sample_episode("never", side, false);
                both.trial = trial;
                eps.push(both);
            }
        }
        let d = Diagnosis::of(&comparison(&eps));
        assert_eq!(d.tasks, 2);
        assert_eq!(d.baseline_failed.len(), 1);
        assert_eq!(d.baseline_failed[0].task_id, "read");
        assert_eq!(d.baseline_failed[0].baseline, (0, 3));
        assert_eq!(d.baseline_failed[0].candidate, (3, 3));
        assert!(
            d.baseline_failed[0].failure.contains("Access denied"),
            "{:?}",
            d.baseline_failed[0]
        );
        assert_eq!(d.both_failed.len(), 1);
        assert_eq!(d.both_failed[0].task_id, "never");
    }

    #[test]
    fn a_host_without_a_structured_call_and_with_text_calls_is_named() {
        let mut eps = Vec::new();
        for trial in 0..4 {
            for side in Side::BOTH {
                let mut e = sample_episode("list", side, false);
                e.trial = trial;
                e.tool_calls = 0;
                e.calls.clear();
                e.text_calls.count = 1;
                e.text_calls.first = Some(r#"{"name": "list_projects"}"#.into());
                eps.push(e);
            }
        }
        let d = Diagnosis::of(&comparison(&eps));
        assert_eq!(d.silent_hosts.len(), 1, "{d:?}");
        let h = &d.silent_hosts[0];
        assert_eq!((h.tool_trials, h.with_calls, h.text_calls), (8, 0, 8));
        assert!(h.excerpt.as_deref().unwrap().contains("list_projects"));
        // A host that calls tools and writes none as text says nothing.
        let fine: Vec<_> = (0..4)
            .flat_map(|trial| {
                Side::BOTH.map(|side| {
                    let mut e = sample_episode("list", side, true);
                    e.trial = trial;
                    e
                })
            })
            .collect();
        assert!(Diagnosis::of(&comparison(&fine)).is_empty());
    }

    #[test]
    fn a_server_failure_on_one_side_is_that_sides_failure() {
        let mut eps = Vec::new();
        for trial in 0..5 {
            let mut b = sample_episode("search", Side::Baseline, true);
            b.trial = trial;
            let mut c = sample_episode("search", Side::Candidate, false);
            c.trial = trial;
            c.server_error =
                Some("candidate server failed during tools/call `search`: Transport closed\n--- server stderr ---\nboom".into());
            eps.extend([b, c]);
        }
        let c = comparison(&eps);
        assert_eq!(c.infra_errors, 0);
        let t = &c.tasks[0];
        assert_eq!((t.candidate.n, t.candidate.successes), (5, 0));
        assert_eq!(t.candidate.server_errors, 5);
        let d = Diagnosis::of(&c);
        assert_eq!(d.server_failures.len(), 1);
        let f = &d.server_failures[0];
        assert_eq!((f.side, f.trials, f.of), (Side::Candidate, 5, 5));
        assert_eq!(
            f.error,
            "candidate server failed during tools/call `search`: Transport closed"
        );
        // The same failure on both sides: nobody's alone, left out as infrastructure errors.
        for e in eps.iter_mut().filter(|e| e.side == Side::Baseline) {
            e.success = false;
            e.server_error = Some("baseline server failed during start: gone".into());
        }
        let c = comparison(&eps);
        assert_eq!(c.infra_errors, 10);
        assert_eq!((c.tasks[0].baseline.n, c.tasks[0].candidate.n), (0, 0));
        assert!(Diagnosis::of(&c).server_failures.is_empty());
    }
}
