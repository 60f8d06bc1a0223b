//! Which hosts `agree` compares, their tasks matched by `task_id`, and what one pair comes to:
//! each task's two verdicts, Cohen's kappa over the tasks, Spearman's rho of the deltas.

use std::collections::BTreeMap;

use super::read::{Class, RunRows, SuccessRow};
use super::AgreeError;
use crate::stats::{cohens_kappa, spearman, Agreement};

/// One host of a pair: the run it comes from, its name there, and how `agree` labels it.
#[derive(Debug, Clone)]
pub struct Rater<'a> {
    pub run: &'a RunRows,
    pub host: String,
    pub label: String,
}

/// One task as two hosts judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPair {
    pub task_id: String,
    pub verdict_a: Class,
    pub verdict_b: Class,
    pub diff_a: Option<f64>,
    pub diff_b: Option<f64>,
}

impl TaskPair {
    pub fn agree(&self) -> bool {
        self.verdict_a == self.verdict_b
    }
}

/// What one pair of hosts comes to.
#[derive(Debug, Clone)]
pub struct PairAgreement {
    pub host_a: String,
    pub host_b: String,
    /// The tasks both judged, by `task_id`.
    pub tasks: Vec<TaskPair>,
    pub kappa: Agreement,
    /// Spearman's rho of the deltas over the tasks where both have one, and their number.
    pub spearman: Option<f64>,
    pub spearman_tasks: usize,
}

/// The pairs to compare. One run: every pair of its hosts. Two runs: each host with the host of
/// the same name in the other run, or, when they share no name, every host of the first with
/// every host of the second. A host named alike in both runs is labelled by the second run's
/// seed (`sim(seed 4)`), or its run id when the seeds are the same.
pub fn raters<'a>(
    a: &'a RunRows,
    b: Option<&'a RunRows>,
) -> Result<Vec<(Rater<'a>, Rater<'a>)>, AgreeError> {
    let plain = |run: &'a RunRows, host: &str| Rater {
        run,
        host: host.to_owned(),
        label: host.to_owned(),
    };
    let Some(b) = b else {
        if a.hosts.len() < 2 {
            return Err(AgreeError::OneHost {
                dir: a.dir.clone(),
                host: a.hosts.join(", "),
            });
        }
        let mut pairs = Vec::new();
        for (i, x) in a.hosts.iter().enumerate() {
            for y in &a.hosts[i + 1..] {
                pairs.push((plain(a, x), plain(a, y)));
            }
        }
        return Ok(pairs);
    };
    let shared: Vec<&String> = (a.hosts.iter()).filter(|h| b.hosts.contains(h)).collect();
    let host_pairs: Vec<(&String, &String)> = match shared.is_empty() {
        false => shared.iter().map(|h| (*h, *h)).collect(),
        true => (a.hosts.iter())
            .flat_map(|x| b.hosts.iter().map(move |y| (x, y)))
            .collect(),
    };
    let second = |host: &str| match (a.hosts.iter().any(|h| h == host), a.seed != b.seed) {
        (false, _) => host.to_owned(),
        (true, true) => format!("{host}(seed {})", b.seed),
        (true, false) => format!("{host}({})", b.run_id),
    };
    Ok((host_pairs.into_iter())
        .map(|(x, y)| {
            let mut rb = plain(b, y);
            rb.label = second(y);
            (plain(a, x), rb)
        })
        .collect())
}

/// The rows of `rater`'s host, by task.
fn rows_of<'a>(rater: &Rater<'a>) -> BTreeMap<&'a str, &'a SuccessRow> {
    (rater.run.rows.iter())
        .filter(|r| r.host == rater.host)
        .map(|r| (r.task_id.as_str(), r))
        .collect()
}

/// Compares the two hosts of a pair over the tasks both judged; kappa's interval at 95 %.
pub fn compare(a: &Rater<'_>, b: &Rater<'_>) -> Result<PairAgreement, AgreeError> {
    let (rows_a, rows_b) = (rows_of(a), rows_of(b));
    let tasks: Vec<TaskPair> = (rows_a.iter())
        .filter_map(|(task, ra)| {
            let rb = rows_b.get(task)?;
            Some(TaskPair {
                task_id: (*task).to_owned(),
                verdict_a: ra.class,
                verdict_b: rb.class,
                diff_a: ra.delta,
                diff_b: rb.delta,
            })
        })
        .collect();
    if tasks.is_empty() {
        return Err(AgreeError::NoSharedTasks {
            a: format!("{} of `{}`", a.label, a.run.dir.display()),
            b: format!("{} of `{}`", b.label, b.run.dir.display()),
        });
    }
    let mut table = [[0u64; 3]; 3];
    for t in &tasks {
        table[t.verdict_a.index()][t.verdict_b.index()] += 1;
    }
    let deltas: Vec<(f64, f64)> = (tasks.iter())
        .filter_map(|t| Some((t.diff_a?, t.diff_b?)))
        .collect();
    let rho = match deltas.is_empty() {
        true => None,
        false => spearman(&deltas)?,
    };
    Ok(PairAgreement {
        host_a: a.label.clone(),
        host_b: b.label.clone(),
        kappa: cohens_kappa(&table, 0.05)?,
        spearman: rho,
        spearman_tasks: deltas.len(),
        tasks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, rows: &[(&str, &str, Class, f64)]) -> RunRows {
        let mut hosts: Vec<String> = Vec::new();
        for (_, h, _, _) in rows {
            if !hosts.iter().any(|x| x == h) {
                hosts.push((*h).to_owned());
            }
        }
        RunRows {
            dir: format!("run-{seed}").into(),
            run_id: format!("id-{seed}"),
            seed,
            hosts,
            rows: (rows.iter())
                .map(|(t, h, class, d)| SuccessRow {
                    task_id: (*t).to_owned(),
                    host: (*h).to_owned(),
                    class: *class,
                    delta: Some(*d),
                })
                .collect(),
        }
    }

    use Class::{Improvement as I, Neither as N, Regression as R};

    #[test]
    fn two_runs_of_one_host_pair_it_with_itself_labelled_by_the_seed() {
        let a = run(3, &[("t1", "sim", R, -1.0), ("t2", "sim", N, 0.0)]);
        let b = run(
            4,
            &[
                ("t2", "sim", N, 0.1),
                ("t1", "sim", N, -0.1),
                ("t3", "sim", R, -1.0),
            ],
        );
        let pairs = raters(&a, Some(&b)).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!(
            (pairs[0].0.label.as_str(), pairs[0].1.label.as_str()),
            ("sim", "sim(seed 4)")
        );
        let found = compare(&pairs[0].0, &pairs[0].1).unwrap();
        let disagree: Vec<&str> = (found.tasks.iter())
            .filter(|t| !t.agree())
            .map(|t| t.task_id.as_str())
            .collect();
        assert_eq!((found.tasks.len(), disagree), (2, vec!["t1"]));
        assert_eq!(found.spearman_tasks, 2);
        assert_eq!(found.spearman, Some(1.0));
    }

    #[test]
    fn one_run_compares_every_pair_of_its_hosts_and_one_host_alone_is_refused() {
        let rows = [
            ("t1", "a", R, -1.0),
            ("t1", "b", R, -0.9),
            ("t1", "c", I, 0.5),
            ("t2", "a", N, 0.0),
            ("t2", "b", N, 0.0),
            ("t2", "c", N, 0.1),
        ];
        let three = run(1, &rows);
        let pairs = raters(&three, None).unwrap();
        let names: Vec<(&str, &str)> = (pairs.iter())
            .map(|(x, y)| (x.label.as_str(), y.label.as_str()))
            .collect();
        assert_eq!(names, [("a", "b"), ("a", "c"), ("b", "c")]);
        let ab = compare(&pairs[0].0, &pairs[0].1).unwrap();
        let Agreement::Kappa(k) = ab.kappa else {
            panic!("{:?}", ab.kappa)
        };
        assert_eq!((k.kappa, k.observed), (1.0, 1.0));
        let one = run(1, &rows[..1]);
        assert!(matches!(
            raters(&one, None),
            Err(AgreeError::OneHost { .. })
        ));
    }

    #[test]
    fn different_hosts_in_two_runs_pair_across_and_need_a_shared_task() {
        let a = run(1, &[("t1", "sim", N, 0.0)]);
        let b = run(1, &[("t2", "gpt", N, 0.0)]);
        let pairs = raters(&a, Some(&b)).unwrap();
        assert_eq!(pairs[0].1.label, "gpt");
        let err = compare(&pairs[0].0, &pairs[0].1).unwrap_err();
        assert!(matches!(err, AgreeError::NoSharedTasks { .. }), "{err}");
    }

    #[test]
    fn every_task_neither_on_both_leaves_kappa_undefined() {
        let a = run(
            1,
            &[
                ("t1", "x", N, 0.0),
                ("t2", "x", N, 0.0),
                ("t1", "y", N, 0.0),
                ("t2", "y", N, 0.0),
            ],
        );
        let pairs = raters(&a, None).unwrap();
        let found = compare(&pairs[0].0, &pairs[0].1).unwrap();
        assert_eq!(found.kappa, Agreement::Undefined { observed: 1.0 });
        assert_eq!(
            found.spearman, None,
            "constant deltas have no rank correlation"
        );
    }
}
