//! Unit tests of the words for every way a row ends: one row of each end, and a comparison's
//! tasks through `task_verdict_words` and the console's short words.

use super::*;
use crate::analysis::{Collector, Comparison};
use crate::episode::Side;
use crate::suite::TaskKind;
use crate::test_support::episode;

const LEVEL: f64 = 0.01;

/// A success task row of 10 trials per side, not significant, its mde 92 points.
fn success_row(base: f64, cand: f64, verdict: Verdict) -> Row {
    Row {
        task_id: "t".into(),
        host: "sim".into(),
        metric: Metric::Success,
        n_baseline: 10,
        n_candidate: 10,
        baseline_mean: Some(base),
        candidate_mean: Some(cand),
        delta: Some(cand - base),
        ci_low: Some(cand - base - 0.3),
        ci_high: Some(cand - base + 0.3),
        test: TestName::FisherExact,
        p_value: Some(1.0),
        p_adjusted: Some(1.0),
        verdict,
        gated: true,
        margin: Some(0.1),
        k: None,
        trials_needed: Some(146),
        scope: Scope::Task,
        relative_change: None,
        mde: Some(0.92),
        trials_run: None,
        stopped: None,
        turn: None,
    }
}

fn stopped(row: Row, at: u32, why: Stopped) -> Row {
    Row {
        trials_run: Some(at),
        stopped: Some(why),
        ..row
    }
}

/// Each end's full and short words, and whether it advises more trials.
#[test]
fn every_way_a_row_ends_has_its_words() {
    let flat = success_row(1.0, 1.0, Verdict::Inconclusive);
    let cases: Vec<(Row, End, &str, &str)> = vec![
        (
            stopped(flat.clone(), 10, Stopped::Futility),
            End::Futile(10),
            "no sign of a regression; stopped at 10 trials, where more would very unlikely show \
             one",
            "futile at 10",
        ),
        (
            stopped(flat.clone(), 15, Stopped::NoChange),
            End::Settled(15),
            "settled at 15 trials: the interval ruled out a change as large as the margin",
            "settled at 15",
        ),
        (
            stopped(flat.clone(), 5, Stopped::Budget),
            End::Budget(5),
            "budget ran out at 5 trials (would need a drop of ≥ 92 pts to see)",
            "budget ran out at 5 trials",
        ),
        (
            stopped(flat.clone(), 30, Stopped::MaxTrials),
            End::MaxTrials(30),
            "ran all 30 trials (max_trials) without settling: too few trials to tell (would \
             need a drop of ≥ 92 pts to see)",
            "too few trials at max 30",
        ),
        (
            flat.clone(),
            End::TooFew,
            "too few trials to tell (would need a drop of ≥ 92 pts to see)",
            "too few trials to tell",
        ),
        (
            stopped(
                success_row(0.0, 0.0, Verdict::Inconclusive),
                10,
                Stopped::Futility,
            ),
            End::NeverPassed { call: false },
            "never passed on either side: check the task or the host",
            "never passed on either side",
        ),
        (
            success_row(0.0, 0.3, Verdict::Inconclusive),
            End::BaselineNeverPassed,
            "the baseline passed no trial, so no drop can be seen: check the servers' setup",
            "the baseline never passed",
        ),
    ];
    for (row, want, full, short) in cases {
        let end = end(&row, LEVEL).unwrap();
        assert_eq!(end, want);
        assert_eq!(verdict_reason(&row, LEVEL).unwrap(), full);
        assert_eq!(end.words(&row, Length::Short), short);
        // Only the ends more trials can help say what more trials would see, and only those
        // (but the budget's) say "too few trials".
        assert_eq!(
            end.more_trials_help(),
            full.contains("would need"),
            "{full}"
        );
        let too_few = full.contains("too few trials");
        assert_eq!(too_few, end.more_trials_help() && want != End::Budget(5));
    }
    // A no change settled early says so; one that ran its course, or a fixed run's, does not.
    let same = success_row(1.0, 1.0, Verdict::NoChange);
    let early = stopped(same.clone(), 10, Stopped::Futility);
    assert_eq!(end(&early, LEVEL), Some(End::Settled(10)));
    assert_eq!(
        end(&stopped(same.clone(), 30, Stopped::MaxTrials), LEVEL),
        None
    );
    assert_eq!(end(&same, LEVEL), None);
    // A regression or an improvement needs no words, however it stopped.
    let broke = stopped(
        success_row(1.0, 0.0, Verdict::Regression),
        10,
        Stopped::Regression,
    );
    assert_eq!(end(&broke, LEVEL), None);
    assert_eq!(verdict_words(&broke, LEVEL), "regression");
}

/// A comparison of three tasks of 10 trials per side on `sim`: `ok` passes every trial on both
/// sides, `never` none, `call` (a call task, 1 trial) fails on both sides.
fn comparison() -> Comparison {
    let mut collector = Collector::default();
    for side in Side::BOTH {
        for trial in 0..10 {
            let ok = episode("ok", TaskKind::Tool, side, trial, true, 1);
            collector.add(side, &ok);
            let never = episode("never", TaskKind::Tool, side, trial, false, 1);
            collector.add(side, &never);
        }
        let mut call = episode("call", TaskKind::Call, side, 0, false, 1);
        call.host = crate::episode::DIRECT_HOST.into();
        collector.add(side, &call);
    }
    let stats = crate::test_support::sample_info().config.stats;
    collector.comparison(&stats, 1).unwrap()
}

fn task<'a>(c: &'a Comparison, id: &str) -> &'a crate::analysis::TaskOutcome {
    c.tasks.iter().find(|t| t.task_id == id).unwrap()
}

#[test]
fn a_task_that_never_passed_says_so_and_advises_no_trials() {
    let c = comparison();
    let never = task(&c, "never");
    assert!(never_passed(never));
    let words = task_verdict_words(&c, never);
    assert!(
        words.ends_with(": never passed on either side: check the task or the host"),
        "{words}"
    );
    assert!(!words.contains("too few trials"), "{words}");
    // Each of its rows, whatever the metric, ends so: none advises more trials.
    for r in c.task_rows("never", "sim").filter(|r| r.tested()) {
        assert!(!advises_trials(&c, r), "{r:?}");
        if r.verdict == Verdict::Inconclusive {
            let why = reason(&c, r, Length::Full).unwrap();
            assert!(why.starts_with("never passed on either side"), "{why}");
        }
    }
    let call = task(&c, "call");
    let words = task_verdict_words(&c, call);
    assert!(
        words.ends_with("never passed on either side: check the task or the servers"),
        "{words}"
    );
    // A task that passed everywhere in a fixed run: too few trials, which more trials help.
    let ok = task(&c, "ok");
    assert_eq!(
        task_verdict_short(&c, ok),
        "inconclusive (success): too few trials to tell"
    );
    let success = c
        .task_rows("ok", "sim")
        .find(|r| r.metric == Metric::Success)
        .unwrap();
    assert!(advises_trials(&c, success));
}

#[test]
fn a_futile_task_is_not_said_to_need_more_trials() {
    let mut c = comparison();
    for r in c.rows.iter_mut().filter(|r| r.task_id == "ok") {
        r.trials_run = Some(10);
        r.stopped = Some(Stopped::Futility);
    }
    let ok = task(&c, "ok").clone();
    assert_eq!(task_verdict_short(&c, &ok), "inconclusive: futile at 10");
    let words = task_verdict_words(&c, &ok);
    assert_eq!(
        words,
        "inconclusive (success): no sign of a regression; stopped at 10 trials, where more would \
         very unlikely show one"
    );
    let inconclusive: Vec<&Row> = (c.rows.iter())
        .filter(|r| r.gated && r.tested() && r.verdict == Verdict::Inconclusive)
        .filter(|r| !r.is_suite())
        .collect();
    assert!(inconclusive.iter().all(|r| !advises_trials(&c, r)));
    let kinds = Kinds::of(&c, inconclusive.iter().copied());
    assert!(kinds.futile >= 1 && kinds.never_passed >= 1, "{kinds:?}");
    assert_eq!(kinds.too_few, 0, "{kinds:?}");
    assert!(!kinds.fixed_only());
    assert!(
        kinds.words().contains("stopped as futile"),
        "{}",
        kinds.words()
    );
}
