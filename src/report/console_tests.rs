//! Unit tests of the console's verdict table: a row of every kind of end, each line within
//! [`WIDTH`] characters, a very long task id cut with `…`.

use super::*;
use crate::analysis::adaptive::Stopped;
use crate::analysis::Collector;
use crate::episode::Side;
use crate::suite::TaskKind;
use crate::test_support::episode;

const LONG: &str = "a-task-whose-id-goes-on-and-on-far-past-what-any-table-column-could-hold";

/// Tasks of 10 trials per side on `sim`, one for each way a row ends (`futile`, `settled`,
/// `budget`, `max`, `fixed` stopped as their names say), `never` failing every trial, `broke`
/// passing on the baseline only, and `LONG`.
fn comparison() -> Comparison {
    let mut collector = Collector::default();
    let tasks = [
        "futile", "settled", "budget", "max", "fixed", "never", "broke", LONG,
    ];
    for side in Side::BOTH {
        for trial in 0..10 {
            for task in tasks {
                let pass = match task {
                    "never" => false,
                    "broke" => side == Side::Baseline,
                    _ => true,
                };
                collector.add(side, &episode(task, TaskKind::Tool, side, trial, pass, 1));
            }
        }
    }
    let stats = crate::test_support::sample_info().config.stats;
    let mut c = collector.comparison(&stats, 1).unwrap();
    for r in c.rows.iter_mut().filter(|r| !r.is_suite()) {
        r.stopped = match r.task_id.as_str() {
            "futile" | "never" => Some(Stopped::Futility),
            "settled" => Some(Stopped::NoChange),
            "budget" => Some(Stopped::Budget),
            "max" => Some(Stopped::MaxTrials),
            _ => None,
        };
        r.trials_run = r.stopped.map(|_| 10);
    }
    c
}

fn line<'a>(table: &'a str, task: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(&format!("{task} ")))
        .unwrap_or_else(|| panic!("no line of {task} in\n{table}"))
}

#[test]
fn every_way_a_task_ends_reads_in_short_words() {
    let c = comparison();
    let table = verdict_table(&c, false);
    let ends = [
        ("futile", "inconclusive: futile at 10"),
        ("budget", "inconclusive: budget ran out at 10 trials"),
        ("max", "inconclusive: too few trials at max 10"),
        ("fixed", "inconclusive (success): too few trials to tell"),
        ("never", "inconclusive: never passed on either side"),
    ];
    for (task, words) in ends {
        let l = line(&table, task);
        assert!(l.ends_with(words), "{task}: {l}");
    }
    // Settled early: its verdict says so, whichever it is (no change, or inconclusive).
    assert!(line(&table, "settled").contains("settled at 10"), "{table}");
    assert!(line(&table, "broke").contains("10/10 → 0/10"), "{table}");
    // Only the rows more trials could help say "too few trials".
    for task in ["futile", "settled", "budget", "never", "broke"] {
        assert!(!line(&table, task).contains("too few"), "{table}");
    }
}

#[test]
fn every_line_fits_the_width_and_a_long_task_id_is_cut() {
    let c = comparison();
    let table = verdict_table(&c, false);
    for l in table.lines() {
        assert!(
            l.chars().count() <= WIDTH,
            "{} chars: {l}",
            l.chars().count()
        );
    }
    let cut_id = table
        .lines()
        .find(|l| l.starts_with("a-task-whose-id"))
        .unwrap();
    assert!(!cut_id.contains(LONG), "{cut_id}");
    assert!(cut_id.contains('…'), "{cut_id}");
    // Colours add escapes, not columns.
    let coloured = verdict_table(&c, true);
    assert!(coloured.contains('\u{1b}'));
    let plain = console::strip_ansi_codes(&coloured);
    assert_eq!(plain, table);
}

#[test]
fn cut_keeps_short_text_and_marks_what_it_cuts() {
    assert_eq!(cut("abc", 3), "abc");
    assert_eq!(cut("abcdef", 4), "abc…");
    assert_eq!(cut("→→→→", 2), "→…");
    assert_eq!(cut("abc", 0), "");
}
