//! The wall-time estimate a run shows before its first trial, from the pre-flight's timed server
//! starts, and the time left as its trials finish (docs/speed.md, "Estimate and ETA").

use std::time::Duration;

use super::Runner;
use crate::episode::Driver;

/// What a run's wall time is estimated from, before any trial has run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Trials this invocation runs (at most, for an adaptive design).
    pub trials: usize,
    /// Server processes its trials start: one per trial under `isolation = "trial"`, per task and
    /// side under `"task"`, per side under `"run"`; the pre-flight's two, which serve the first
    /// trials, are not counted.
    pub server_starts: usize,
    /// One server start as the pre-flight timed it (both sides' mean).
    pub server_start: Duration,
    /// Trials run at once (`--concurrency`).
    pub concurrency: usize,
    /// The machine's cores: a server start is mostly CPU (a Node or Python interpreter loading
    /// its modules), so no more starts than cores run at full speed at once.
    pub cores: usize,
    /// Whether the pool starts the next trial's server ahead while the trials run (`isolation =
    /// "trial"`): one start more than the concurrency then runs at once.
    pub started_ahead: bool,
    /// An adaptive design: trials stop once a task is settled, so `trials` is a ceiling.
    pub up_to: bool,
    /// Whether the model's own time is small enough to leave out (the simulated model, call
    /// tasks); a real model's is not known until trials finish, and is left out too.
    pub model_time_small: bool,
}

/// The estimate of a run's wall time and what it was made from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub plan: Plan,
    /// The wall time of the run's trials (a lower bound when a real model's time is left out).
    pub wall: Duration,
}

impl Estimate {
    /// The trials' server starts spread over as many at once as the concurrency (one more with
    /// servers started ahead) and the cores allow: `server_starts × server_start /
    /// min(concurrency + ahead, cores)`.
    pub fn of(plan: Plan) -> Self {
        let at_once = plan.concurrency + usize::from(plan.started_ahead);
        let parallel = at_once.min(plan.cores).max(1);
        let starts = plan.server_start.as_secs_f64() * plan.server_starts as f64;
        Self {
            plan,
            wall: Duration::from_secs_f64(starts / parallel as f64),
        }
    }

    /// The estimate as `run.json` records it, beside the wall time the trials `took`.
    pub fn record(&self, took: Duration) -> crate::rundir::EstimateRecord {
        let p = &self.plan;
        crate::rundir::EstimateRecord {
            estimate_s: self.wall.as_secs_f64(),
            actual_s: took.as_secs_f64(),
            up_to: p.up_to,
            model_time_small: p.model_time_small,
            trials: p.trials,
            server_starts: p.server_starts,
            server_start_s: p.server_start.as_secs_f64(),
            concurrency: p.concurrency,
            cores: p.cores,
        }
    }

    /// The line a console shows before the first trial, e.g. `estimate: ~5 min (544 trials, 542
    /// server starts of 0.55 s, concurrency 4)`.
    pub fn line(&self) -> String {
        let p = &self.plan;
        let up_to = if p.up_to { "up to " } else { "" };
        let cores = match p.cores < p.concurrency {
            true => format!(" on {} cores", p.cores),
            false => String::new(),
        };
        let model = match p.model_time_small {
            true => "",
            false => {
                " plus the model's time, which the progress line's ETA counts once trials finish"
            }
        };
        format!(
            "estimate: {up_to}{}{model} ({up_to}{} trials, {} server starts of {:.2} s, \
             concurrency {}{cores})",
            approx(self.wall),
            p.trials,
            p.server_starts,
            p.server_start.as_secs_f64(),
            p.concurrency,
        )
    }
}

/// The plan of `runner`'s `trials`, whose server processes start `starts` times after the
/// pre-flight's, `timed` as long as those took; `None` when no start was timed.
pub(super) fn plan(
    runner: &Runner,
    trials: usize,
    starts: usize,
    timed: &[Duration],
) -> Option<Plan> {
    let server_start = timed
        .iter()
        .sum::<Duration>()
        .checked_div(timed.len() as u32)?;
    let model_time_small = (runner.hosts.iter())
        .all(|h| h.driver.is_simulated() || matches!(h.driver, Driver::Direct));
    Some(Plan {
        trials,
        server_starts: starts,
        server_start,
        concurrency: runner.config.concurrency.max(1),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        started_ahead: runner.config.isolation == crate::config::Isolation::Trial,
        up_to: runner.policy.is_some(),
        model_time_small,
    })
}

/// The time left in a run: `elapsed` after it started, `done` of its trials finished and `left`
/// to run. Until as many trials as run at once have finished (the first of them end together),
/// the estimate's remainder when it covers the whole run; after, the finished trials' pace
/// (`elapsed / done`) over those left, which counts the model's time and any slow start as they
/// were. `None` when neither tells.
pub fn eta(
    estimate: Option<&Estimate>,
    elapsed: Duration,
    done: u64,
    left: u64,
    concurrency: usize,
) -> Option<Duration> {
    if left == 0 {
        return Some(Duration::ZERO);
    }
    let settled = done >= (concurrency.max(1) as u64).min(done + left);
    if done > 0 && settled {
        return Some(elapsed.mul_f64(left as f64 / done as f64));
    }
    let estimate = estimate.filter(|e| e.plan.model_time_small)?;
    estimate.wall.checked_sub(elapsed)
}

/// A duration as a person reads an estimate: `~8 s`, `~75 s`, `~5 min`, `~1 h 20 min` (seconds
/// up to two minutes, where a whole minute would be a coarse step).
pub fn approx(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0 => "~0 s".to_owned(),
        1..=119 => format!("~{s} s"),
        120..=3569 => format!("~{} min", (s + 30) / 60),
        _ => {
            let minutes = (s + 30) / 60;
            match minutes % 60 {
                0 => format!("~{} h", minutes / 60),
                m => format!("~{} h {m} min", minutes / 60),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            trials: 544,
            server_starts: 542,
            server_start: Duration::from_millis(550),
            concurrency: 4,
            cores: 8,
            started_ahead: false,
            up_to: false,
            model_time_small: true,
        }
    }

    fn secs(e: &Estimate) -> f64 {
        e.wall.as_secs_f64()
    }

    #[test]
    fn the_estimate_is_the_starts_over_the_concurrency() {
        let e = Estimate::of(plan());
        assert!((secs(&e) - 542.0 * 0.55 / 4.0).abs() < 1e-6, "{e:?}");
        assert_eq!(
            e.line(),
            "estimate: ~75 s (544 trials, 542 server starts of 0.55 s, concurrency 4)"
        );
    }

    #[test]
    fn no_more_starts_run_at_once_than_there_are_cores() {
        let e = Estimate::of(Plan { cores: 2, ..plan() });
        assert!((secs(&e) - 542.0 * 0.55 / 2.0).abs() < 1e-6, "{e:?}");
        assert!(
            e.line().contains("concurrency 4 on 2 cores)"),
            "{}",
            e.line()
        );
        // And one core, or a concurrency of one, runs them one after another.
        let one = Estimate::of(Plan {
            concurrency: 1,
            ..plan()
        });
        assert!((secs(&one) - 542.0 * 0.55).abs() < 1e-6);
        let zero = Estimate::of(Plan { cores: 0, ..plan() });
        assert!((secs(&zero) - 542.0 * 0.55).abs() < 1e-6);
    }

    #[test]
    fn a_server_started_ahead_runs_beside_the_trials_own() {
        // isolation = "trial": one trial at a time, and the next server starting meanwhile.
        let ahead = Plan {
            concurrency: 1,
            started_ahead: true,
            ..plan()
        };
        assert!((secs(&Estimate::of(ahead)) - 542.0 * 0.55 / 2.0).abs() < 1e-6);
        // Still no more than the cores.
        let one_core = Estimate::of(Plan { cores: 1, ..ahead });
        assert!((secs(&one_core) - 542.0 * 0.55).abs() < 1e-6);
        assert!(Estimate::of(ahead).line().ends_with("concurrency 1)"));
    }

    #[test]
    fn shared_servers_start_fewer_times() {
        // isolation = "task": one start per task and side (17 tasks, two sides, less the two
        // the pre-flight started).
        let task = Estimate::of(Plan {
            server_starts: 32,
            ..plan()
        });
        assert!((secs(&task) - 32.0 * 0.55 / 4.0).abs() < 1e-6);
        // isolation = "run": the pre-flight's two serve every trial.
        let run = Estimate::of(Plan {
            server_starts: 0,
            ..plan()
        });
        assert_eq!(run.wall, Duration::ZERO);
        assert!(run
            .line()
            .starts_with("estimate: ~0 s (544 trials, 0 server starts"));
    }

    #[test]
    fn an_adaptive_design_says_up_to() {
        let e = Estimate::of(Plan {
            up_to: true,
            ..plan()
        });
        assert_eq!(
            e.line(),
            "estimate: up to ~75 s (up to 544 trials, 542 server starts of 0.55 s, concurrency 4)"
        );
    }

    #[test]
    fn a_real_model_time_is_said_to_be_left_out() {
        let e = Estimate::of(Plan {
            model_time_small: false,
            ..plan()
        });
        assert!(
            e.line()
                .starts_with("estimate: ~75 s plus the model's time,"),
            "{}",
            e.line()
        );
    }

    #[test]
    fn the_eta_follows_the_estimate_until_a_round_of_trials_is_done() {
        let e = Estimate::of(plan());
        let at = |elapsed: f64, done: u64, left: u64| {
            eta(Some(&e), Duration::from_secs_f64(elapsed), done, left, 4)
        };
        // Nothing or fewer than four trials done: what is left of the estimate.
        let before = at(10.0, 0, 544).unwrap().as_secs_f64();
        assert!(
            (before - (542.0 * 0.55 / 4.0 - 10.0)).abs() < 1e-6,
            "{before}"
        );
        let three = at(10.0, 3, 541).unwrap().as_secs_f64();
        assert!((three - before).abs() < 1e-6);
        // Four done in 10 s: 2.5 s a trial, 540 left.
        let pace = at(10.0, 4, 540).unwrap().as_secs_f64();
        assert!((pace - 1350.0).abs() < 1e-6, "{pace}");
        // Past the estimate with no trial done: nothing honest to say.
        assert_eq!(at(100.0, 0, 544), None);
        assert_eq!(at(100.0, 544, 0), Some(Duration::ZERO));
    }

    #[test]
    fn one_trial_at_a_time_goes_by_its_pace_from_the_first() {
        let e = Estimate::of(Plan {
            concurrency: 1,
            ..plan()
        });
        let eta = eta(Some(&e), Duration::from_secs(3), 1, 543, 1).unwrap();
        assert_eq!(eta, Duration::from_secs(3 * 543));
    }

    #[test]
    fn without_the_model_time_the_eta_waits_for_the_trials() {
        let e = Estimate::of(Plan {
            model_time_small: false,
            ..plan()
        });
        assert_eq!(eta(Some(&e), Duration::from_secs(1), 0, 544, 4), None);
        assert_eq!(eta(None, Duration::from_secs(1), 0, 544, 4), None);
        let pace = eta(Some(&e), Duration::from_secs(8), 8, 536, 4).unwrap();
        assert_eq!(pace, Duration::from_secs(536));
    }

    #[test]
    fn durations_read_as_seconds_minutes_and_hours() {
        let read = |s: f64| approx(Duration::from_secs_f64(s));
        assert_eq!(read(0.2), "~0 s");
        assert_eq!(read(7.6), "~8 s");
        assert_eq!(read(59.6), "~60 s");
        assert_eq!(read(119.4), "~119 s");
        assert_eq!(read(119.6), "~2 min");
        assert_eq!(read(298.0), "~5 min");
        assert_eq!(read(3569.0), "~59 min");
        assert_eq!(read(3600.0), "~1 h");
        assert_eq!(read(4800.0), "~1 h 20 min");
    }
}
