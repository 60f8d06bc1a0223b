//! Drift: tonight's baseline episodes against those of the last stored baseline run of the same
//! server version (an A/A comparison across nights), and the summary's "Baseline drift" section.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::table::{HistoryRow, CANDIDATE};
use super::trend::value;
use crate::analysis::{Collector, Comparison, Row, SUITE};
use crate::config::StatsConfig;
use crate::contract::versions::bare;
use crate::episode::{Episode, Side};
use crate::rundir::{EpisodeSource, RunInfo};

/// An earlier run that may serve as the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub run_id: String,
    pub run_dir: PathBuf,
}

/// The earlier runs of the history whose baseline was `version` and the same server, newest
/// first (the history is in the order runs were appended), `tonight` left out. The version
/// alone is not trusted: two releases may report the same `serverInfo.version` (both releases
/// of server-filesystem report `0.2.0`), so where `identity` is given (the package and version
/// the baseline's spec names, else its spec) a run whose run.json names another baseline is
/// left out. A run whose run.json cannot be read is kept: its episodes are looked for next.
pub fn references(
    history: &[HistoryRow],
    version: &str,
    identity: Option<&str>,
    tonight: &str,
) -> Vec<Reference> {
    let mut seen = HashSet::new();
    history
        .iter()
        .rev()
        .filter(|r| r.comparison == CANDIDATE && bare(&r.baseline_version) == bare(version))
        .filter(|r| r.run_id != tonight)
        .filter(|r| seen.insert(r.run_id.clone()))
        .filter(|r| identity.is_none_or(|own| same_server(&r.run_dir, own)))
        .map(|r| Reference {
            run_id: r.run_id.clone(),
            run_dir: PathBuf::from(&r.run_dir),
        })
        .collect()
}

/// Whether the run in `run_dir` had the baseline `identity` (true when its run.json is gone).
fn same_server(run_dir: &str, identity: &str) -> bool {
    match RunInfo::read(std::path::Path::new(run_dir)) {
        Ok(info) => crate::contract::versions::identity(&info.baseline.spec) == identity,
        Err(_) => true,
    }
}

/// Compares the reference run's baseline episodes (as the baseline) with tonight's (as the
/// candidate), with the same function `mcpeval compare` uses, over the task × host pairs both
/// have. `None` when they have none in common. Each source is read twice (the pairs, then the
/// episodes of the common pairs) and no episode is held.
pub fn compare_baselines(
    reference: &dyn EpisodeSource,
    tonight: &dyn EpisodeSource,
    stats: &StatsConfig,
    seed: u64,
) -> anyhow::Result<Option<Comparison>> {
    let key = |e: &Episode| (e.task_id.clone(), e.host.clone());
    let baseline_pairs = |source: &dyn EpisodeSource| -> anyhow::Result<_> {
        let mut pairs = HashSet::new();
        source.each_episode(&mut |e| {
            if e.side == Side::Baseline {
                pairs.insert(key(&e));
            }
        })?;
        Ok(pairs)
    };
    let common: HashSet<(String, String)> = baseline_pairs(reference)?
        .intersection(&baseline_pairs(tonight)?)
        .cloned()
        .collect();
    if common.is_empty() {
        return Ok(None);
    }
    let mut collector = Collector::default();
    for (source, as_side) in [(reference, Side::Baseline), (tonight, Side::Candidate)] {
        source.each_episode(&mut |e| {
            if e.side == Side::Baseline && common.contains(&key(&e)) {
                collector.add(as_side, &e);
            }
        })?;
    }
    Ok(Some(collector.comparison(stats, seed)?))
}

/// What tonight's drift check came to.
#[derive(Debug, Clone)]
pub enum DriftOutcome {
    /// Compared with `reference`; `moved` are its gated rows with a regression or improvement.
    Compared {
        reference: Reference,
        version: String,
        tasks: usize,
        moved: Vec<Row>,
    },
    /// No earlier run of this baseline version whose episodes are still on disk.
    NoReference {
        version: String,
        missing: Vec<Reference>,
    },
    /// The reference run shares no task × host with tonight's.
    NothingInCommon { reference: Reference },
}

/// The gated rows of a drift comparison whose verdict is a regression or an improvement.
pub fn moved_rows(comparison: &Comparison) -> Vec<Row> {
    use crate::analysis::Verdict;
    comparison
        .rows
        .iter()
        .filter(|r| r.gated && matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
        .cloned()
        .collect()
}

/// The tasks (task, host) whose baseline moved, without the suite rows.
pub fn moved_tasks(moved: &[Row]) -> Vec<(String, String)> {
    let mut tasks: Vec<(String, String)> = moved
        .iter()
        .filter(|r| r.task_id != SUITE)
        .map(|r| (r.task_id.clone(), r.host.clone()))
        .collect();
    tasks.sort();
    tasks.dedup();
    tasks
}

/// The sentence the summary and the log give for a task whose baseline moved.
pub const MAY_BE_THE_MODEL: &str = "a candidate regression on such a task may be the model's, \
not the server's: the same baseline server behaved differently than on an earlier night";

/// The "Baseline drift" section of summary.md. `candidate_regressed` names the (task, host)
/// pairs whose candidate regressed tonight.
pub fn section(outcome: &DriftOutcome, candidate_regressed: &HashSet<(String, String)>) -> String {
    let mut out = String::from("\n## Baseline drift\n\n");
    match outcome {
        DriftOutcome::NoReference { version, missing } => {
            let _ = writeln!(
                out,
                "No earlier run with baseline `{version}` in the history{}: tonight's baseline \
                 episodes are the reference for the next night.",
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(
                        " whose run directory is still there ({} gone)",
                        missing
                            .iter()
                            .map(|r| format!("`{}`", r.run_dir.display()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
        }
        DriftOutcome::NothingInCommon { reference } => {
            let _ = writeln!(
                out,
                "Run `{}`, the last with the same baseline version, has no task in common with \
                 tonight's run: no drift check.",
                reference.run_id
            );
        }
        DriftOutcome::Compared {
            reference,
            version,
            tasks,
            moved,
        } => {
            let _ = writeln!(
                out,
                "Tonight's baseline episodes (`{version}`) against those of run `{}`, the last \
                 run with the same baseline version, over the {tasks} task × host pair(s) both \
                 ran: an A/A comparison across nights with the tests of `mcpeval compare`. The \
                 server did not change, so a difference is the model's or the host's.\n",
                reference.run_id
            );
            if moved.is_empty() {
                out.push_str("No task's baseline moved on a gated metric.\n");
                return out;
            }
            let tasks = moved_tasks(moved);
            let _ = writeln!(
                out,
                "**The baseline moved on {} task(s)**: {MAY_BE_THE_MODEL}.\n",
                tasks.len()
            );
            out.push_str(
                "| task | host | metric | earlier night | tonight | Δ | p (adjusted) | drift | candidate tonight |\n\
                 | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n",
            );
            for r in moved {
                let key = (r.task_id.clone(), r.host.clone());
                let _ = writeln!(
                    out,
                    "| `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} |",
                    r.task_id,
                    r.host,
                    r.metric.as_str(),
                    value(r.metric.as_str(), r.baseline_mean),
                    value(r.metric.as_str(), r.candidate_mean),
                    value(r.metric.as_str(), r.delta),
                    r.p_adjusted.map_or("–".into(), |p| format!("{p:.3}")),
                    r.verdict.as_str(),
                    if candidate_regressed.contains(&key) {
                        "regressed: may be the model's"
                    } else {
                        "–"
                    }
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::table::tests::sample;
    use super::super::table::DRIFT;
    use super::*;

    #[test]
    fn references_are_the_earlier_runs_of_the_same_baseline_version_newest_first() {
        let mut other_version = sample("c", CANDIDATE, "t", "no_change");
        other_version.baseline_version = "1.3.0".into();
        let history = vec![
            sample("a", CANDIDATE, "t", "no_change"),
            sample("a", CANDIDATE, "u", "no_change"),
            sample("b", CANDIDATE, "t", "no_change"),
            sample("b", DRIFT, "t", "no_change"),
            other_version,
            sample("tonight", CANDIDATE, "t", "no_change"),
        ];
        let ids: Vec<String> = references(&history, "1.4.0", None, "tonight")
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(ids, ["b", "a"]);
        assert!(references(&history, "9.9.9", None, "tonight").is_empty());
    }

    #[test]
    fn a_reference_must_have_had_the_same_baseline_server_not_only_its_version() {
        let root = tempfile::tempdir().unwrap();
        let night = |id: &str, spec: &str| {
            let dir = root.path().join(id);
            std::fs::create_dir_all(&dir).unwrap();
            let mut info = crate::test_support::sample_info();
            info.baseline.spec = spec.into();
            info.write(&dir).unwrap();
            let mut row = sample(id, CANDIDATE, "t", "no_change");
            row.baseline_version = "0.2.0 (x)".into();
            row.run_dir = dir.display().to_string();
            row
        };
        let old = "npx -y @modelcontextprotocol/server-filesystem@2025.3.28 /tmp/a";
        let new = "npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /tmp/b";
        let history = vec![night("a", old), night("b", new), night("c", old)];
        let own = crate::contract::versions::identity(&old.replace("/tmp/a", "/tmp/c"));
        let ids: Vec<String> = references(&history, "0.2.0", Some(&own), "tonight")
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(
            ids,
            ["c", "a"],
            "run b reported 0.2.0 too, from another release"
        );
        assert_eq!(references(&history, "0.2.0", None, "tonight").len(), 3);
    }

    #[test]
    fn identical_baselines_do_not_drift_and_a_collapsed_one_does() {
        use crate::test_support::sample_episode;
        let night = |successes: u32, n: u32| -> Vec<Episode> {
            (0..n)
                .map(|i| {
                    let mut e = sample_episode("t", Side::Baseline, i < successes);
                    e.trial = i;
                    e.seed = u64::from(i);
                    e
                })
                .collect()
        };
        let stats = StatsConfig::default();
        let same = compare_baselines(&night(20, 20), &night(20, 20), &stats, 1)
            .unwrap()
            .unwrap();
        assert!(moved_rows(&same).is_empty());
        let collapsed = compare_baselines(&night(20, 20), &night(2, 20), &stats, 1)
            .unwrap()
            .unwrap();
        let moved = moved_rows(&collapsed);
        assert!(
            moved.iter().any(|r| r.task_id == "t"
                && r.metric == crate::config::Metric::Success
                && r.verdict == crate::analysis::Verdict::Regression),
            "{moved:?}"
        );
        let text = section(
            &DriftOutcome::Compared {
                reference: Reference {
                    run_id: "a".into(),
                    run_dir: "/r/a".into(),
                },
                version: "1.4.0".into(),
                tasks: 1,
                moved,
            },
            &HashSet::from([("t".to_owned(), "sim".to_owned())]),
        );
        assert!(text.contains("## Baseline drift"), "{text}");
        assert!(text.contains(MAY_BE_THE_MODEL), "{text}");
        assert!(
            text.contains("| `t` | `sim` | success | 1.000 | 0.100 |"),
            "{text}"
        );
        assert!(text.contains("regressed: may be the model's"), "{text}");
    }

    #[test]
    fn runs_with_no_task_in_common_are_not_compared() {
        use crate::test_support::sample_episode;
        let a = vec![sample_episode("t", Side::Baseline, true)];
        let b = vec![sample_episode("u", Side::Baseline, true)];
        let stats = StatsConfig::default();
        assert!(compare_baselines(&a, &b, &stats, 1).unwrap().is_none());
    }
}
