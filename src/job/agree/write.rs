//! What `agree` says and writes: the lines of each pair (the terminal and the "Host agreement"
//! section), `agreement.csv`, and the section put into the first run's reports.

use std::path::Path;

use polars_core::prelude::*;

use super::pair::PairAgreement;
use crate::rundir::{col, write_csv};
use crate::stats::Agreement;

pub const AGREEMENT_CSV: &str = "agreement.csv";

/// `kappa 0.62 [0.31, 0.93] over 18 tasks, 16 agree`, or why kappa is undefined and the raw
/// agreement instead.
pub fn kappa_line(pair: &PairAgreement) -> String {
    let n = pair.tasks.len();
    let agree = pair.tasks.iter().filter(|t| t.agree()).count();
    match pair.kappa {
        Agreement::Kappa(k) => format!(
            "kappa {:.2} [{:.2}, {:.2}] over {n} tasks, {agree} agree",
            k.kappa, k.interval.low, k.interval.high
        ),
        Agreement::Undefined { .. } | Agreement::Empty => {
            let class = pair.tasks.first().map_or("–", |t| t.verdict_a.as_str());
            format!(
                "kappa undefined: every task is `{class}` on both hosts (chance agreement \
                 p_e = 1); raw agreement {agree} of {n} tasks ({:.0} %)",
                100.0 * agree as f64 / n.max(1) as f64
            )
        }
    }
}

/// One line per task the two hosts disagree on:
/// `closed-refunds-hermes: sim regression, sim(seed 4) neither`.
pub fn disagreements(pair: &PairAgreement) -> Vec<String> {
    (pair.tasks.iter())
        .filter(|t| !t.agree())
        .map(|t| {
            format!(
                "{}: {} {}, {} {}",
                t.task_id,
                pair.host_a,
                t.verdict_a.as_str(),
                pair.host_b,
                t.verdict_b.as_str()
            )
        })
        .collect()
}

/// Spearman's rho of the two hosts' success deltas, or why there is none.
pub fn spearman_line(pair: &PairAgreement) -> String {
    match (pair.spearman, pair.spearman_tasks) {
        (Some(rho), n) => format!("Spearman rho {rho:.2} of the success deltas over {n} tasks"),
        (None, 0) => "Spearman rho: no task has a success delta on both hosts".to_owned(),
        (None, n) => format!(
            "Spearman rho undefined: one host's success deltas are all equal over {n} tasks"
        ),
    }
}

/// The "Host agreement" section of the first run's reports.
pub fn section(pairs: &[PairAgreement], csv: &Path) -> String {
    let mut md = String::new();
    for pair in pairs {
        md.push_str(&format!(
            "**{}** vs **{}**: {}\n\n",
            pair.host_a,
            pair.host_b,
            kappa_line(pair)
        ));
        let disagree = disagreements(pair);
        for line in &disagree {
            md.push_str(&format!("- {line}\n"));
        }
        if !disagree.is_empty() {
            md.push('\n');
        }
        md.push_str(&format!("{}\n\n", spearman_line(pair)));
    }
    md.push_str(&format!(
        "Verdicts on success: regression, improvement, or neither (no_change, inconclusive). \
         `{}` has every task.\n",
        csv.display()
    ));
    md
}

/// Writes `agreement.csv` at `path`: one row per pair of hosts and task.
pub fn write_agreement(pairs: &[PairAgreement], path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_csv(&mut frame(pairs)?, path)
}

fn frame(pairs: &[PairAgreement]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&PairAgreement, &super::pair::TaskPair)> = (pairs.iter())
        .flat_map(|p| p.tasks.iter().map(move |t| (p, t)))
        .collect();
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("task_id", field!(|(_, t)| t.task_id.as_str())),
        col("host_a", field!(|(p, _)| p.host_a.as_str())),
        col("host_b", field!(|(p, _)| p.host_b.as_str())),
        col("verdict_a", field!(|(_, t)| t.verdict_a.as_str())),
        col("verdict_b", field!(|(_, t)| t.verdict_b.as_str())),
        col("diff_a", field!(|(_, t)| t.diff_a)),
        col("diff_b", field!(|(_, t)| t.diff_b)),
        col("agree", field!(|(_, t)| t.agree())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::agree::pair::TaskPair;
    use crate::job::agree::read::Class;

    fn pair(tasks: Vec<TaskPair>, kappa: Agreement) -> PairAgreement {
        PairAgreement {
            host_a: "sim".into(),
            host_b: "sim(seed 4)".into(),
            tasks,
            kappa,
            spearman: Some(0.931),
            spearman_tasks: 2,
        }
    }

    fn task(id: &str, a: Class, b: Class) -> TaskPair {
        TaskPair {
            task_id: id.into(),
            verdict_a: a,
            verdict_b: b,
            diff_a: Some(-0.8),
            diff_b: None,
        }
    }

    #[test]
    fn lines_say_kappa_the_disagreements_and_rho() {
        let k = crate::stats::cohens_kappa(&[[1, 0, 0], [0, 0, 0], [1, 0, 2]], 0.05).unwrap();
        let p = pair(
            vec![
                task("closed-refunds-hermes", Class::Regression, Class::Neither),
                task("delete-issue-4", Class::Regression, Class::Regression),
            ],
            k,
        );
        assert!(
            kappa_line(&p).starts_with("kappa 0.50 [")
                && kappa_line(&p).ends_with("over 2 tasks, 1 agree"),
            "{}",
            kappa_line(&p)
        );
        assert_eq!(
            disagreements(&p),
            ["closed-refunds-hermes: sim regression, sim(seed 4) neither"]
        );
        assert_eq!(
            spearman_line(&p),
            "Spearman rho 0.93 of the success deltas over 2 tasks"
        );
    }

    #[test]
    fn undefined_kappa_says_the_raw_agreement() {
        let p = pair(
            vec![task("a", Class::Neither, Class::Neither)],
            Agreement::Undefined { observed: 1.0 },
        );
        assert_eq!(
            kappa_line(&p),
            "kappa undefined: every task is `neither` on both hosts (chance agreement p_e = 1); \
             raw agreement 1 of 1 tasks (100 %)"
        );
    }

    #[test]
    fn the_csv_has_the_documented_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = pair(
            vec![task("a", Class::Improvement, Class::Neither)],
            Agreement::Empty,
        );
        let path = dir.path().join("out").join(AGREEMENT_CSV);
        write_agreement(&[p], &path).unwrap();
        let csv = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            csv,
            "task_id,host_a,host_b,verdict_a,verdict_b,diff_a,diff_b,agree\n\
             a,sim,sim(seed 4),improvement,neither,-0.8,,false\n"
        );
    }
}
