//! The `--schedule CRON` loop: sleep until the next fire time (UTC), run one job at a time, log
//! each, skip the fire times an overrunning job missed, go on after a failed job, and stop when
//! asked (at once while sleeping; after the job, while one runs).

use std::future::Future;
use std::time::Instant;

use chrono::{DateTime, SecondsFormat, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use tokio_util::sync::CancellationToken;

/// Why a schedule cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "invalid cron expression `{expr}`: {message} (5 fields: minute hour day-of-month month \
         day-of-week, e.g. \"0 3 * * *\"; or 6 with seconds first, e.g. \"*/30 * * * * *\")"
    )]
    Invalid { expr: String, message: String },
    #[error("cron expression `{expr}` has no fire time after {after}")]
    NoNext { expr: String, after: String },
}

impl crate::error::Coded for ScheduleError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Invalid { .. } | Self::NoNext { .. } => crate::error::Exit::Usage,
        }
    }
}

/// A parsed cron expression, evaluated in UTC.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    expr: String,
}

/// How a job ended, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    /// The exit code the same job would give as a one-off command.
    pub exit: u8,
    /// What it came to, in a few words (or the error).
    pub summary: String,
}

/// Fire times counted as missed at most (a job that overran for years says "10000").
const MAX_MISSED: usize = 10_000;

impl Schedule {
    /// Parses a 5-field (minute granularity) or 6-field (seconds first) cron expression.
    pub fn parse(expr: &str) -> Result<Self, ScheduleError> {
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| ScheduleError::Invalid {
                expr: expr.to_owned(),
                message: e.to_string(),
            })?;
        Ok(Self {
            cron,
            expr: expr.trim().to_owned(),
        })
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The first fire time strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Result<DateTime<Utc>, ScheduleError> {
        self.cron
            .find_next_occurrence(&t, false)
            .map_err(|_| ScheduleError::NoNext {
                expr: self.expr.clone(),
                after: stamp(t),
            })
    }

    /// How many fire times lie strictly after `after` and at or before `until`.
    pub fn missed(&self, after: DateTime<Utc>, until: DateTime<Utc>) -> usize {
        self.cron
            .iter_after(after)
            .take_while(|t| *t <= until)
            .take(MAX_MISSED)
            .count()
    }
}

/// `2026-11-30T03:00:00Z`.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Runs `job` at each fire time of `schedule` until `stop` is cancelled; returns how many jobs
/// ran. Jobs run one after another, so two never overlap. `job` gets its number and `stop`,
/// which it should watch to wind down early. Every event goes to `log`, one line each.
pub async fn run<F, Fut>(
    schedule: &Schedule,
    stop: &CancellationToken,
    mut job: F,
    log: impl Fn(&str),
) -> Result<u64, ScheduleError>
where
    F: FnMut(u64, CancellationToken) -> Fut,
    Fut: Future<Output = JobEnd>,
{
    let mut next = schedule.next_after(Utc::now())?;
    log(&format!(
        "schedule `{}` (UTC): first run at {}",
        schedule.expr(),
        stamp(next)
    ));
    let mut jobs = 0;
    loop {
        let wait = (next - Utc::now()).to_std().unwrap_or_default();
        tokio::select! {
            _ = stop.cancelled() => {
                log(&format!("stopping: no job was running ({jobs} run)"));
                return Ok(jobs);
            }
            _ = tokio::time::sleep(wait) => {}
        }
        jobs += 1;
        log(&format!("job {jobs} started (fire time {})", stamp(next)));
        let started = Instant::now();
        let end = job(jobs, stop.clone()).await;
        log(&format!(
            "job {jobs} finished in {:.1} s: exit {}: {}",
            started.elapsed().as_secs_f64(),
            end.exit,
            end.summary
        ));
        if stop.is_cancelled() {
            log(&format!("stopping after job {jobs}, as asked"));
            return Ok(jobs);
        }
        let now = Utc::now().max(next);
        let missed = schedule.missed(next, now);
        if missed > 0 {
            log(&format!(
                "job {jobs} overran: skipped {missed} fire time(s) between {} and {}",
                stamp(next),
                stamp(now)
            ));
        }
        next = schedule.next_after(now)?;
        log(&format!("next run at {}", stamp(next)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn five_and_six_field_expressions_give_their_next_fire_time() {
        let nightly = Schedule::parse("0 3 * * *").unwrap();
        assert_eq!(
            nightly.next_after(at("2026-11-30T02:59:59Z")).unwrap(),
            at("2026-11-30T03:00:00Z")
        );
        assert_eq!(
            nightly.next_after(at("2026-11-30T03:00:00Z")).unwrap(),
            at("2026-12-01T03:00:00Z")
        );
        let every_2s = Schedule::parse("*/2 * * * * *").unwrap();
        assert_eq!(
            every_2s.next_after(at("2026-11-30T00:00:01Z")).unwrap(),
            at("2026-11-30T00:00:02Z")
        );
        assert_eq!(
            every_2s.missed(at("2026-11-30T00:00:00Z"), at("2026-11-30T00:00:07Z")),
            3
        );
        assert_eq!(
            nightly.missed(at("2026-11-30T03:00:00Z"), at("2026-11-30T04:00:00Z")),
            0
        );
    }

    #[test]
    fn bad_expressions_are_errors_that_quote_them() {
        for bad in ["61 * * * *", "* * *", "0 0 3 * * * 2027", "", "every night"] {
            let err = Schedule::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("`{bad}`")) && err.contains("5 fields"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn jobs_run_in_turn_survive_failures_skip_missed_times_and_stop_when_asked() {
        let schedule = Schedule::parse("* * * * * *").unwrap();
        let stop = CancellationToken::new();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let running = Arc::new(Mutex::new(false));
        let log_lines = lines.clone();
        let jobs = run(
            &schedule,
            &stop,
            |n, stop| {
                let running = running.clone();
                async move {
                    assert!(!std::mem::replace(&mut *running.lock().unwrap(), true));
                    let end = match n {
                        // Overruns the next fire time.
                        1 => {
                            tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
                            JobEnd {
                                exit: 0,
                                summary: "slow".into(),
                            }
                        }
                        2 => JobEnd {
                            exit: 3,
                            summary: "failed: server would not start".into(),
                        },
                        _ => {
                            stop.cancel();
                            JobEnd {
                                exit: 0,
                                summary: "last".into(),
                            }
                        }
                    };
                    *running.lock().unwrap() = false;
                    end
                }
            },
            move |line| log_lines.lock().unwrap().push(line.to_owned()),
        )
        .await
        .unwrap();
        assert_eq!(jobs, 3);
        let log = lines.lock().unwrap().join("\n");
        assert!(log.contains("job 1 overran: skipped"), "{log}");
        assert!(
            log.contains("job 2 finished in") && log.contains("exit 3: failed"),
            "{log}"
        );
        assert!(log.contains("job 3 started"), "{log}");
        assert!(log.ends_with("stopping after job 3, as asked"), "{log}");
    }

    #[tokio::test]
    async fn a_stop_while_sleeping_returns_at_once() {
        let schedule = Schedule::parse("0 0 1 1 *").unwrap();
        let stop = CancellationToken::new();
        let canceller = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            canceller.cancel();
        });
        let started = Instant::now();
        let jobs = run(
            &schedule,
            &stop,
            |_, _| async {
                JobEnd {
                    exit: 9,
                    summary: "no fire time comes within the test".into(),
                }
            },
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(jobs, 0);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
